// deepwell's own sm_90a FP8 GEMM (e4m3 x e4m3 / e5m2 -> bf16 or fp16, A and B K-major; also
// bf16 / fp16 x @ w.t() on the same pipeline, InBf16 / InF16), warp-specialized like DeepGEMM's:
// plain CUDA around a POD parameter struct, with TMA, mbarriers and wgmma as the only sm_90
// pieces (fp8_sm90_ptx.cuh, CuTe's wgmma structs).
//
//   CTA = 3 warpgroups: WG 0 and 1 do the math (64 rows of the 128-row tile each, setmaxnreg 232),
//   WG 2 is the producer (one elected thread issues all TMA loads, setmaxnreg 40).
//   Tile 128 x kBlockN x 128 fp8 / 64 bf16 (one 128-byte k-block per stage), kStages stages
//   (fp8_sm90_mainloop.cuh).
//   Persistent grid of min(tiles, SMs) CTAs, grouped tile order (fp8_sm90_scheduler.cuh); with
//   Decomposition::kSplitTail the tiles past the last whole round are cut along K, their
//   partial sums added through the workspace (store_partial / add_partials below);
//   optionally 2-CTA clusters along M sharing B by TMA multicast (kClusterM; no split tail).
//   Epilogue (fp8_sm90_epilogue.cuh) from registers to global memory (StoreRegisters) or through a
//   shared-memory tile and TMA stores (StoreTma); optionally overlapped with the next tile's first
//   k-block of wgmmas (TilesOverlapEpilogue, fp8_sm90_mainloop.cuh).
//
// Scale policies (fp8_sm90_mainloop.cuh): ScaleTensorRow (scales in the epilogue), and
// ScaleBlock1x128x128 (DeepSeek blocks promoted in the main loop).
//
// Compiled today (src/kernel_instances.cmake, rows of gemm_sm90_table.hpp): PromoteHalves,
// 128x192 tiles, 4 stages, no cluster, StoreTma, TilesSerial, for e4m3 x e4m3 and e4m3 x e5m2
// with tensor / row scales (bf16 or fp16 out) and for e4m3 block scales (bf16 or fp16 out); and
// 128x160 tiles with 5 stages for e4m3 x e4m3 and e4m3 x e5m2 -> bf16 tensor / row (ragged last
// waves only). And bf16 / fp16 x @ w.t() (InBf16 / InF16 operands, PromoteNone, 128x256,
// 3 stages, StoreTma), where choose_plan would run CUTLASS's 128x256 data-parallel. The 128x192
// tensor / row e4m3 -> bf16 instance and the two bf16 ones also compile a TilesSerialPlain twin for
// calls with no activation, no source and no split tail (DW_SM90_FP8_INSTANCE_WITH_PLAIN).
// PromoteSerial, PromoteOverlapped, kClusterM = 2, StoreRegisters and TilesOverlapEpilogue passed
// the GPU tests (forced) but measured slower than, or no faster than, what is compiled
// (docs/perf-notes.md, "GEMM: deepwell's fp8 main loop", sessions 9, 13 and 37), so no instance
// uses them.
//
// Include only from fp8_sm90_inst_*.cu files; each instantiates one configuration with
// DW_SM90_FP8_INSTANCE (or it and its plain twin with DW_SM90_FP8_INSTANCE_WITH_PLAIN; bottom of
// this file) as one row of gemm_sm90_table.hpp.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "core/cuda_driver.hpp"
#include "core/cuda_utils.hpp"
#include "core/validate.hpp"
#include "gemm/fp8_sm90_epilogue.cuh"
#include "gemm/fp8_sm90_mainloop.cuh"
#include "gemm/fp8_sm90_scheduler.cuh"
#include "gemm/gemm_sm90_table.hpp"
#include "gemm/sm90_launch.hpp"

namespace deepwell::matmul::sm90::fp8 {

// Whether the instances with a TilesSerialPlain twin (DW_SM90_FP8_INSTANCE_WITH_PLAIN) run it for
// the calls it admits. DEEPWELL_GEMM_PLAIN=0 keeps them on the general kernel (tests, A/B); read
// per call, like DEEPWELL_ATTN_DENSE.
inline bool plain_twins_enabled() {
  const char* env = std::getenv("DEEPWELL_GEMM_PLAIN");
  return env == nullptr || std::atoi(env) != 0;
}

// Everything the kernel reads, filled on the host from a Launch (sm90_launch.hpp).
struct Params {
  CUtensorMap tma_a;    // A (K, M, batch) bytes, box 128 x 128 x 1, 128B swizzle
  CUtensorMap tma_b;    // B (K, N, batch) bytes, box 128 x kBlockN x 1, 128B swizzle
  CUtensorMap tma_sfa;  // block scaling: A scales (round_up(M, 4), K blocks) f32, box 128 x 1
  CUtensorMap tma_d;    // StoreTma: D (N, M, batch) bf16 / fp16, box 64 x 64 x 1, 128B swizzle
  int32_t m_blocks, n_blocks, k_blocks, batch;
  const float* sfb;  // block scaling: (N blocks, K blocks), unit stride along K
  int64_t sfb_ld;
  int32_t n_scale_blocks;  // ceil(N / 128)
  const float* scale_a_tensor;  // null = 1
  const float* scale_b_tensor;
  int32_t activation;
  EpilogueArgs epi;
  // Split tail (fp8_sm90_scheduler.cuh): the last `tail_tiles` tiles run as `splits` units each
  // (1: none); partial sums and their counters in the workspace.
  int32_t tail_tiles, splits;
  float* partials;  // (tail_tiles, splits - 1, 2 warpgroups, kAccRegs, 128 threads)
  int32_t* flags;   // (tail_tiles, 2 warpgroups): partial sums landed, zeroed before the launch
};

template <bool kE5M2B_, class Scale_, int kBlockN_, int kStages_,
          class Promotion_ = PromoteSerial, int kClusterM_ = 1, class Store_ = StoreRegisters,
          class Tiles_ = TilesSerial, class Out_ = OutBf16, class In_ = InFp8>
struct Fp8Kernel {
  using In = In_;    // the operands' element: InFp8, InBf16 or InF16 (fp8_sm90_mainloop.cuh)
  using Out = Out_;  // D's element: OutBf16 or OutF16 (fp8_sm90_epilogue.cuh)
  using Scale = Scale_;
  using Promotion = Promotion_;
  using Store = Store_;
  using Tiles = Tiles_;
  static constexpr bool kE5M2B = kE5M2B_;
  // One 128-byte row of K per stage: kBlockK = 128 fp8 or 64 bf16 elements.
  static constexpr int kRowBytes = 128, kBlockK = kRowBytes / In::kBytes;
  static constexpr int kBlockM = 128, kBlockN = kBlockN_, kStages = kStages_;
  static constexpr int kMathThreads = 256, kThreads = kMathThreads + 128;
  static constexpr int kAccRegs = kBlockN / 2;  // fp32 accumulators per thread (64 x N per WG)
  // setmaxnreg split: 2 x 128 x 232 + 128 x 40 = 64512 <= 65536 registers per SM.
  static constexpr int kMathRegs = 232, kProducerRegs = 40;
  // CTAs per cluster along M, sharing each B tile through TMA multicast (1: no cluster).
  static constexpr int kClusterM = kClusterM_;
  static constexpr int kGroupM = 8 / kClusterM;  // group of 8 m-blocks either way
  // StoreTma: a 64 x kBlockN 16-bit buffer per math warpgroup (48 KB at kBlockN = 192).
  static constexpr int kDBytes = Store::kTma ? kBlockM * kBlockN * 2 : 0;
  using Smem = SharedLayout<kBlockM, kBlockN, kRowBytes, kStages, Scale::kMainloopScales, kDBytes>;
  using Scheduler = GroupedTileScheduler<kGroupM, kClusterM>;
  static_assert(kClusterM == 1 || kClusterM == 2, "clusters of 1 or 2 CTAs");
  // Each CTA's share of the B tile starts on a swizzle-atom boundary (8 rows of 128 bytes).
  static_assert(kBlockN % (8 * kClusterM) == 0, "B tile rows per CTA: whole 8-row atoms");
  // + 1024: the dynamic shared memory base is aligned up to a 1024-byte boundary in the kernel.
  static constexpr int kSmemBytes = Smem::kBytes + 1024;

  static_assert(In::k16Bit || kBlockK == 128,
                "one promotion per 128 of K: the 1x128 / 128x128 scale blocks");
  static_assert(!In::k16Bit || (Promotion::kTemporaries == 0 && !Scale::kMainloopScales && !kE5M2B),
                "16-bit operands: no promotion, no block scales");
  // Block scaling: a tile's columns lie in one 128-column B scale block (kBlockN = 128) or in two
  // (kBlockN = 192: tiles start at column 0 or 64 modulo 128); each 8-column wgmma chunk in one.
  static_assert(!Scale::kMainloopScales || kBlockN == 128 || kBlockN == 192,
                "block scaling: tiles of 128 or 192 columns");
  static constexpr bool kTwoBScales = Scale::kMainloopScales && kBlockN > 128;
  static_assert(kBlockN % 16 == 0 && kBlockN <= 256, "wgmma N and TMA box rows");
  // Temporary + main accumulator, plus addresses and scales, must fit the math register budget.
  static_assert((1 + Promotion::kTemporaries) * kAccRegs + 24 <= kMathRegs,
                "accumulators exceed the register budget");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90");
  static_assert(!Tiles::kOverlapEpilogue || Promotion::kTemporaries == 1,
                "the epilogue overlaps the next tile's first k-block only with PromoteSerial");
};

// ---------------------------------------------------------------- split tail: partial sums

// A split tile's partial sums of math warpgroup `wg` from split `piece + 1` (split 0 keeps its own
// in registers): kAccRegs x 128 floats, register-major, so a warp's store of one register is 128
// contiguous bytes.
template <class K>
__device__ __forceinline__ float* partial_slot(const Params& p, int32_t tail, int32_t piece,
                                               int wg) {
  const int64_t slot = (int64_t{tail} * (p.splits - 1) + piece) * 2 + wg;
  return p.partials + slot * (K::kAccRegs * 128) + threadIdx.x % 128;
}

// A split other than 0: stores the warpgroup's partial sums (L2 only) and counts them in.
template <class K>
__device__ __forceinline__ void store_partial(const Params& p, const WorkUnit& w, int wg,
                                              const float (&acc)[K::kAccRegs]) {
  float* dst = partial_slot<K>(p, w.tail, w.split - 1, wg);
#pragma unroll
  for (int i = 0; i < K::kAccRegs; ++i) __stcg(dst + i * 128, acc[i]);
  warpgroup_barrier(3 + wg);  // the warpgroup's stores precede thread 0's release
  if (threadIdx.x % 128 == 0) red_release_add(p.flags + w.tail * 2 + wg, 1);
}

// Split 0: waits for the other splits' partial sums and adds them to its own, always in the same
// order (split 1, 2, ...), so the result is the same bits on every run.
template <class K>
__device__ __forceinline__ void add_partials(const Params& p, const WorkUnit& w, int wg,
                                             float (&acc)[K::kAccRegs]) {
  wait_flag_geq(p.flags + w.tail * 2 + wg, p.splits - 1);  // every thread: no divergent branch
  for (int32_t piece = 0; piece + 1 < p.splits; ++piece) {
    const float* src = partial_slot<K>(p, w.tail, piece, wg);
#pragma unroll
    for (int i = 0; i < K::kAccRegs; ++i) acc[i] += __ldcg(src + i * 128);
  }
}

template <class K>
__global__ void __launch_bounds__(K::kThreads, 1) fp8_gemm_kernel(const __grid_constant__ Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ uint8_t smem_raw[];
  typename K::Smem sm;
  sm.base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) &
                                       ~uintptr_t{1023});
  // Broadcast from lane 0 so the compiler knows it is warp-uniform: the wgmma descriptors that
  // depend on it are then computed in uniform registers.
  const int warpgroup = __shfl_sync(0xffffffff, static_cast<int>(threadIdx.x / 128), 0);
  const int lane = threadIdx.x % 32;

  if (threadIdx.x == K::kMathThreads) {
    tma_prefetch_descriptor(&p.tma_a);
    tma_prefetch_descriptor(&p.tma_b);
    if constexpr (K::Scale::kMainloopScales) tma_prefetch_descriptor(&p.tma_sfa);
    if constexpr (K::Store::kTma) tma_prefetch_descriptor(&p.tma_d);
#pragma unroll 1
    for (int s = 0; s < K::kStages; ++s) {
      mbar_init(sm.full(s), 1);                  // the producer's arrive_expect_tx (+ TMA bytes)
      mbar_init(sm.empty(s), 8 * K::kClusterM);  // one arrival per math warp of the cluster
    }
    fence_barrier_init();
  }
  // A peer's multicast or release may target this CTA's barriers only once they exist.
  if constexpr (K::kClusterM > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }

  const typename K::Scheduler sched(p.m_blocks, p.n_blocks, p.batch,
                                    K::kClusterM > 1 ? static_cast<int32_t>(cluster_cta_rank()) : 0,
                                    p.k_blocks, p.tail_tiles, p.splits);
  if (warpgroup == 2) {
    warpgroup_reg_dealloc<K::kProducerRegs>();
    if (threadIdx.x == K::kMathThreads) produce<K>(p, sm, sched);
    // A CTA may leave only when its peers no longer multicast into its shared memory nor arrive
    // on its barriers: the whole cluster meets once more at the end.
    if constexpr (K::kClusterM > 1) {
      __syncwarp();
      cluster_sync();
    }
    return;
  }

  warpgroup_reg_alloc<K::kMathRegs>();
  const int row = (threadIdx.x % 128) / 32 * 16 + lane / 4;  // first accumulator row in the WG
  EpilogueArgs e = p.epi;
  if (p.scale_a_tensor) e.alpha *= __ldg(p.scale_a_tensor);
  if (p.scale_b_tensor) e.alpha *= __ldg(p.scale_b_tensor);
  auto tile_epilogue = [&](const TileCoord& c, const float (&acc)[K::kAccRegs]) {
    epilogue<typename K::Store, K::kBlockN, typename K::Out, K::Tiles::kPlainOnly>(
        e, &p.tma_d, p.activation, sm.cols(warpgroup), sm.d(warpgroup), acc, c.batch,
        c.m_block * K::kBlockM, c.n_block * K::kBlockN, warpgroup, threadIdx.x % 128);
  };
  if constexpr (K::Tiles::kOverlapEpilogue) {
    tiles_overlapped<K>(p, sm, sched, warpgroup, row, lane, tile_epilogue);
  } else {
    PipelineState<K::kStages> st;
    float acc[K::kAccRegs];
    for (int32_t u = sched.first; u < sched.units; u += sched.stride) {
      const WorkUnit w = sched.unit(u);
      mainloop_tile<K>(p, sm, st, w.c, w.kb_begin, w.kb_end, warpgroup, row, lane, acc);
      if constexpr (!K::Tiles::kPlainOnly) {  // (the plain twin runs no split tail)
        if (w.tail >= 0) {
          if (!w.reduces()) {
            store_partial<K>(p, w, warpgroup, acc);
            continue;
          }
          add_partials<K>(p, w, warpgroup, acc);
        }
      }
      tile_epilogue(w.c, acc);
    }
  }
  // The shared-memory D buffers must stay allocated until the last TMA stores have read them.
  if constexpr (K::Store::kTma) bulk_wait_group_all();
  if constexpr (K::kClusterM > 1) cluster_sync();
#endif
}

// ------------------------------------------------------------------------------------------ host

// cuTensorMapEncodeTiled of the driver, resolved once (core/cuda_driver.hpp); nullptr when absent.
using deepwell::detail::driver_encode_tiled;

// A K-major fp8 operand (rows, K) per batch with leading dimension `ld` and batch stride `bs`
// (elements = bytes), read in boxes of 128 (K) x `box_rows` with 128-byte swizzling. Rows and K
// past the ends are zero-filled by TMA, so any M, N, K works (the dispatcher checks the 16-byte
// alignment of base, ld and bs).
// (16-bit operands: elem_bytes 2, boxes of 64 elements of K, the same 128 bytes; described as
// bf16 for bf16 and fp16 alike: TMA only copies them, and fills past the ends with zero bits.)
inline Status encode_operand(CUtensorMap* map, const void* base, int64_t rows, int64_t k,
                             int64_t ld, int64_t bs, int64_t batch, uint32_t box_rows,
                             int elem_bytes = 1) {
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(ld) * elem_bytes,
                                 static_cast<cuuint64_t>(bs) * elem_bytes};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(128 / elem_bytes), box_rows, 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = driver_encode_tiled()(
      map, elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8, 3,
      const_cast<void*>(base), dims, strides, box,
      elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    return Status(StatusCode::kInternal,
                  "gemm_fp8: cuTensorMapEncodeTiled failed for an operand (" + std::to_string(r) + ")");
  }
  return Status::Ok();
}

template <class K>
struct Fp8Launcher {
  // Does this configuration implement the kernel table's row `k`?
  static constexpr bool matches(const KernelSpec& k) {
    return k.operands == (K::In::kF16     ? Operands::kF16
                          : K::In::k16Bit ? Operands::kBF16
                          : K::kE5M2B     ? Operands::kE4M3xE5M2
                                          : Operands::kE4M3) &&
           k.out == (K::Out::kIsF16 ? DType::kF16 : DType::kBF16) && k.a_k_major && k.b_k_major &&
           k.scaling == (K::In::k16Bit              ? Scaling::kNone
                         : K::Scale::kMainloopScales ? Scaling::kBlock
                                                     : Scaling::kTensorRow) &&
           k.tile_m == K::kBlockM && k.tile_n == K::kBlockN && k.tile_k == K::kBlockK &&
           k.cluster_m == K::kClusterM && k.cluster_n == 1 &&
           k.schedule == Schedule::kFp8Promoted &&
           !k.stream_k;
  }

  // The split tail of launch `l` on a grid of at most `resident` CTAs: the tiles past the last
  // whole round (all of them when they fill less than one), each cut into up to l.splits units
  // (at most one unit per CTA and one k-block per unit). None where the plan asks for none, the
  // rounds are whole, or fewer than 2 splits fit.
  struct SplitTail {
    int32_t tail_tiles = 0, splits = 1;
    size_t partial_bytes() const {
      return static_cast<size_t>(tail_tiles) * (splits - 1) * K::kBlockM * K::kBlockN * 4;
    }
    size_t bytes() const {
      return tail_tiles == 0 ? 0 : partial_bytes() + static_cast<size_t>(tail_tiles) * 2 * 4;
    }
  };
  static SplitTail split_tail(const Launch& l, int64_t resident) {
    SplitTail s;
    if (l.decomposition != Decomposition::kSplitTail || K::kClusterM != 1 ||
        K::Tiles::kOverlapEpilogue || resident <= 0) {
      return s;
    }
    const int64_t tiles = int64_t{(l.m + K::kBlockM - 1) / K::kBlockM} *
                          ((l.n + K::kBlockN - 1) / K::kBlockN) * l.batch;
    const int64_t k_blocks = (int64_t{l.k} + K::kBlockK - 1) / K::kBlockK;
    const int64_t tail = tiles % resident;
    if (tail == 0) return s;
    int64_t splits = l.splits;
    if (splits > resident / tail) splits = resident / tail;
    if (splits > k_blocks) splits = k_blocks;
    if (splits < 2) return s;
    s.tail_tiles = static_cast<int32_t>(tail);
    s.splits = static_cast<int32_t>(splits);
    return s;
  }

  // CTAs of the persistent grid on `sm_count` SMs (without a cluster: one per SM).
  static int64_t resident_for(const Launch& l) {
    if (K::kClusterM != 1) return 0;
    return launch_sms(l);
  }

  static size_t workspace(const Launch& l) { return split_tail(l, resident_for(l)).bytes(); }

  // Whether launch `l`, whose split tail is `tail`, is one the TilesSerialPlain twin of this kernel
  // runs: no activation, no source operand and no split tail (the twin compiles none of them).
  static bool plain_call(const Launch& l, const SplitTail& tail) {
    return l.activation == kActNone && l.s == nullptr && tail.tail_tiles == 0;
  }
  static bool plain_call(const Launch& l) { return plain_call(l, split_tail(l, resident_for(l))); }

  // The launch of `grid` CTAs of this kernel: block size, shared memory and, for clusters, the
  // cluster-dimension attribute (kept in *attr, which must outlive the returned config).
  static cudaLaunchConfig_t launch_config(int grid, cudaStream_t stream,
                                          cudaLaunchAttribute* attr) {
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = K::kClusterM;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(grid);
    config.blockDim = dim3(K::kThreads);
    config.dynamicSmemBytes = K::kSmemBytes;
    config.stream = stream;
    config.attrs = attr;
    config.numAttrs = K::kClusterM > 1 ? 1 : 0;
    return config;
  }

  // Once per device: the shared-memory opt-in, then how many CTAs of the persistent grid can be
  // resident at once (clusters: the occupancy query, as a cluster needs its CTAs in one GPC; a
  // grid larger than that would leave whole clusters waiting for a wave). 0: the set-up failed.
  static int device_setup(int device, int sm_count) {
    constexpr int kMaxDevices = 64;
    static std::atomic<int> cache[kMaxDevices] = {};  // 0: not yet, -1: failed, else CTAs
    if (device < 0 || device >= kMaxDevices) return 0;
    int v = cache[device].load(std::memory_order_acquire);
    if (v == 0) {
      cudaError_t err = cudaFuncSetAttribute(
          fp8_gemm_kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmemBytes);
      v = err == cudaSuccess ? sm_count : -1;
      if (err == cudaSuccess && K::kClusterM > 1) {
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t config =
            launch_config(K::kClusterM * (sm_count / K::kClusterM), nullptr, &attr);
        int clusters = 0;
        err = cudaOccupancyMaxActiveClusters(&clusters, fp8_gemm_kernel<K>, &config);
        v = err == cudaSuccess && clusters > 0 ? clusters * K::kClusterM : -1;
      }
      if (err != cudaSuccess) cudaGetLastError();
      cache[device].store(v, std::memory_order_release);
    }
    return v > 0 ? v : 0;
  }

  static Status launch(const Launch& l) {
    if (driver_encode_tiled() == nullptr) {
      return Status(StatusCode::kCudaError,
                    "gemm_fp8: the driver does not provide cuTensorMapEncodeTiled");
    }
    if (l.decomposition != Decomposition::kDataParallel &&
        (l.decomposition != Decomposition::kSplitTail || K::kClusterM != 1 ||
         K::Tiles::kOverlapEpilogue)) {
      return Status(StatusCode::kInternal,
                    "gemm_fp8: this kernel runs data-parallel plans (and, without a cluster or "
                    "the overlapped epilogue, split tails) only");
    }
    int device = 0;
    cudaGetDevice(&device);
    const int sms = launch_sms(l);
    const int resident = device_setup(device, sms);
    if (resident <= 0) {
      return Status(StatusCode::kCudaError,
                    "gemm_fp8: could not set up the kernel (shared-memory limit, cluster "
                    "occupancy) on device " + std::to_string(device));
    }
    Params p{};
    DW_TRY(encode_operand(&p.tma_a, l.a, l.m, l.k, l.lda, l.batch_a, l.batch, K::kBlockM,
                          K::In::kBytes));
    DW_TRY(encode_operand(&p.tma_b, l.b, l.n, l.k, l.ldb, l.batch_b, l.batch,
                          K::kBlockN / K::kClusterM, K::In::kBytes));
    p.m_blocks = (l.m + K::kBlockM - 1) / K::kBlockM;
    p.n_blocks = (l.n + K::kBlockN - 1) / K::kBlockN;
    p.k_blocks = (l.k + K::kBlockK - 1) / K::kBlockK;
    p.batch = l.batch;
    if constexpr (K::Scale::kMainloopScales) {
      if (l.batch != 1 || l.sfa == nullptr || l.sfb == nullptr) {
        return Status(StatusCode::kInternal, "gemm_fp8: block scaling needs one batch and scales");
      }
      // (round_up(M, 4), K blocks) f32 with leading dimension sfa_ld (a multiple of 4 elements,
      // dispatcher); rows past M scale rows of A that TMA zero-filled and are never stored.
      const cuuint64_t dims[2] = {static_cast<cuuint64_t>((l.m + 3) / 4 * 4),
                                  static_cast<cuuint64_t>(p.k_blocks)};
      const cuuint64_t strides[1] = {static_cast<cuuint64_t>(l.sfa_ld) * 4};
      const cuuint32_t box[2] = {128, 1};
      const cuuint32_t elem_strides[2] = {1, 1};
      const CUresult r = driver_encode_tiled()(
          &p.tma_sfa, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(l.sfa), dims,
          strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
          CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) {
        return Status(StatusCode::kInternal, "gemm_fp8: cuTensorMapEncodeTiled failed for the A "
                                             "scales (" + std::to_string(r) + ")");
      }
      p.sfb = l.sfb;
      p.sfb_ld = l.sfb_ld;
      p.n_scale_blocks = (l.n + 127) / 128;
    }
    if constexpr (K::Store::kTma) {
      // 16-bit D (N, M, batch), boxes of 64 (or 32) columns, 128 (64) bytes: the swizzle span,
      // x 64 rows. The dispatcher guarantees what TMA needs: a 16-byte aligned D with row and
      // batch strides of multiples of 16 bytes (batch stride = ldd for one batch).
      using Box = StoreTma::Box<K::kBlockN>;
      const cuuint64_t dims[3] = {static_cast<cuuint64_t>(l.n), static_cast<cuuint64_t>(l.m),
                                  static_cast<cuuint64_t>(l.batch)};
      const cuuint64_t strides[2] = {static_cast<cuuint64_t>(l.ldd) * 2,
                                     static_cast<cuuint64_t>(l.batch_d) * 2};
      const cuuint32_t box[3] = {Box::kCols, StoreTma::kBoxRows, 1};
      const cuuint32_t elem_strides[3] = {1, 1, 1};
      const CUresult r = driver_encode_tiled()(
          &p.tma_d, K::Out::kIsF16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
          3, l.d, dims, strides, box, elem_strides,
          CU_TENSOR_MAP_INTERLEAVE_NONE,
          Box::kCols == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
          CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) {
        return Status(StatusCode::kInternal, "gemm_fp8: cuTensorMapEncodeTiled failed for d "
                                             "(ldd " + std::to_string(l.ldd) + ", batch stride " +
                                             std::to_string(l.batch_d) + "; " +
                                             std::to_string(r) + ")");
      }
    }
    p.scale_a_tensor = l.scale_a_tensor;
    p.scale_b_tensor = l.scale_b_tensor;
    p.activation = l.activation;
    p.epi = epilogue_args(l);

    // Cluster tiles (kClusterM m-blocks x 1 n-block) over all batches.
    const int64_t tiles = int64_t{(p.m_blocks + K::kClusterM - 1) / K::kClusterM} * p.n_blocks *
                          p.batch;
    if (tiles * K::kClusterM > 0x7fffffff) {
      return Status(StatusCode::kNotSupported, "gemm_fp8: more than 2^31 output tiles");
    }
    const int64_t clusters = resident / K::kClusterM;
    int grid = static_cast<int>((tiles < clusters ? tiles : clusters) * K::kClusterM);
    if (grid == 0) return Status::Ok();
    const SplitTail tail = split_tail(l, resident);
    if constexpr (K::Tiles::kPlainOnly) {
      if (!plain_call(l, tail)) {
        return Status(StatusCode::kInternal,
                      "gemm_fp8: a plain-only instance launched for a call with an activation, a "
                      "source operand or a split tail");
      }
    }
    p.tail_tiles = tail.tail_tiles;
    p.splits = tail.splits;
    if (tail.tail_tiles > 0) {
      if (l.workspace == nullptr || l.workspace_size < tail.bytes()) {
        return Status(StatusCode::kInternal, "gemm_fp8: the split tail needs " +
                                                 std::to_string(tail.bytes()) +
                                                 " bytes of workspace");
      }
      p.partials = static_cast<float*>(l.workspace);
      p.flags = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(l.workspace) +
                                           tail.partial_bytes());
      const int64_t units = tiles - tail.tail_tiles + int64_t{tail.tail_tiles} * tail.splits;
      grid = static_cast<int>(units < resident ? units : resident);
      const cudaError_t err = cudaMemsetAsync(p.flags, 0, size_t{4} * 2 * tail.tail_tiles,
                                              static_cast<cudaStream_t>(l.stream));
      if (err != cudaSuccess) {
        cudaGetLastError();
        return Status(StatusCode::kCudaError, std::string("gemm_fp8: clearing the split-tail "
                                                          "counters failed: ") +
                                                  cudaGetErrorString(err));
      }
    }
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t config =
        launch_config(grid, static_cast<cudaStream_t>(l.stream), &attr);
    cudaError_t err = cudaLaunchKernelEx(&config, fp8_gemm_kernel<K>, p);
    if (err == cudaSuccess) err = cudaGetLastError();
    return detail::cuda_status(err, "gemm_fp8", "kernel launch");
  }
};

}  // namespace deepwell::matmul::sm90::fp8

// Defines `name`_launch / `name`_workspace (declared by gemm_sm90_table.hpp) for the kernel
// configuration `Config` (an Fp8Kernel<...> in deepwell::matmul::sm90::fp8) and checks that it is
// the table's row `name`.
#define DW_SM90_FP8_INSTANCE(name, Config)                                                     \
  namespace deepwell::matmul::sm90 {                                                           \
  static_assert(find_kernel(#name) != nullptr, "no row " #name " in gemm_sm90_table.hpp");     \
  static_assert(fp8::Fp8Launcher<fp8::Config>::matches(*find_kernel(#name)),                   \
                #name ": the instance differs from its row in gemm_sm90_table.hpp");           \
  Status name##_launch(const Launch& l) { return fp8::Fp8Launcher<fp8::Config>::launch(l); }   \
  size_t name##_workspace(const Launch& l) { return fp8::Fp8Launcher<fp8::Config>::workspace(l); } \
  }

// DW_SM90_FP8_INSTANCE with a TilesSerialPlain twin `PlainConfig` of `Config` (the same kernel
// but for its tile schedule), which runs the calls Fp8Launcher::plain_call admits unless
// DEEPWELL_GEMM_PLAIN=0 (tests, A/B). Both report the table's row `name`.
#define DW_SM90_FP8_INSTANCE_WITH_PLAIN(name, Config, PlainConfig)                              \
  namespace deepwell::matmul::sm90 {                                                           \
  static_assert(find_kernel(#name) != nullptr, "no row " #name " in gemm_sm90_table.hpp");     \
  static_assert(fp8::Fp8Launcher<fp8::Config>::matches(*find_kernel(#name)) &&                 \
                    fp8::Fp8Launcher<fp8::PlainConfig>::matches(*find_kernel(#name)),          \
                #name ": the instance differs from its row in gemm_sm90_table.hpp");           \
  static_assert(!fp8::Config::Tiles::kPlainOnly && fp8::PlainConfig::Tiles::kPlainOnly,        \
                #name ": PlainConfig must be Config's TilesSerialPlain twin");                 \
  Status name##_launch(const Launch& l) {                                                      \
    if (fp8::plain_twins_enabled() && fp8::Fp8Launcher<fp8::Config>::plain_call(l)) {          \
      return fp8::Fp8Launcher<fp8::PlainConfig>::launch(l);                                    \
    }                                                                                          \
    return fp8::Fp8Launcher<fp8::Config>::launch(l);                                           \
  }                                                                                            \
  size_t name##_workspace(const Launch& l) { return fp8::Fp8Launcher<fp8::Config>::workspace(l); } \
  }
