// Epilogue of the fp8 GEMM kernel (fp8_sm90_kernel.cuh): the fused operation of every deepwell
// GEMM (same formula as sm90_gemm.cuh's CUTLASS epilogue tree),
//
//   D = gamma * S + act(beta * S + alpha * sa_t * sb_t * scale_m[m] * scale_n[n] * acc
//                       + bias_n[n] + bias_m[m])
//
// applied to the fp32 accumulator registers; the output element (D, S and the biases: bf16 or
// fp16) is a policy (OutBf16, OutF16), and so is where the tile goes (StoreRegisters, StoreTma).
// Every operand but the accumulator is optional (null pointer / zero scalar); the activation and
// the presence of S are template parameters of the store loop, chosen once per tile by a uniform
// switch, so no transcendental or source code sits in the plain path.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gemm/fp8_sm90_ptx.cuh"
#include "gemm/fp8_sm90_scheduler.cuh"
#include "gemm/sm90_launch.hpp"

namespace deepwell::matmul::sm90::fp8 {

// deepwell::Activation values (include/deepwell/gemm.hpp)
enum : int32_t { kActNone = 0, kActReLU = 1, kActGeluErf = 2, kActGeluTanh = 3, kActSiLU = 4 };

template <int32_t kAct>
__device__ __forceinline__ float activate(float x) {
  if constexpr (kAct == kActReLU) {
    return x > 0.0f ? x : 0.0f;
  } else if constexpr (kAct == kActGeluErf) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  } else if constexpr (kAct == kActGeluTanh) {
    const float k0 = 0.7978845608028654f, k1 = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(k0 * (x + k1 * x * x * x)));
  } else if constexpr (kAct == kActSiLU) {
    return x / (1.0f + __expf(-x));
  } else {
    return x;
  }
}

// ---------------------------------------------------------------------------- output elements

// D's element type, which S and the biases share (the CUDA dispatcher requires that). Both are
// 2 bytes, so the shared-memory D tile and its TMA boxes are the same for either.
struct OutBf16 {
  using T = __nv_bfloat16;
  using T2 = __nv_bfloat162;
  static constexpr bool kIsF16 = false;
  static constexpr DType kDType = DType::kBF16;
  static __device__ __forceinline__ float to_float(T x) { return __bfloat162float(x); }
  static __device__ __forceinline__ T from_float(float x) { return __float2bfloat16_rn(x); }
  static __device__ __forceinline__ float2 to_float2(T2 x) { return __bfloat1622float2(x); }
  static __device__ __forceinline__ T2 pack(float a, float b) { return __floats2bfloat162_rn(a, b); }
};
// fp16: round to nearest even, overflow to +-inf (IEEE; what the CPU reference's conversion does).
struct OutF16 {
  using T = __half;
  using T2 = __half2;
  static constexpr bool kIsF16 = true;
  static constexpr DType kDType = DType::kF16;
  static __device__ __forceinline__ float to_float(T x) { return __half2float(x); }
  static __device__ __forceinline__ T from_float(float x) { return __float2half_rn(x); }
  static __device__ __forceinline__ float2 to_float2(T2 x) { return __half22float2(x); }
  static __device__ __forceinline__ T2 pack(float a, float b) { return __floats2half2_rn(a, b); }
};

// ----------------------------------------------------------------------------- store policies

// Output pairs from registers straight to global memory (4-byte stores, each quad of lanes 16
// contiguous bytes of a row; rows and columns past M, N skipped). Both math warpgroups finish a
// tile together, so the tensor cores idle for the whole store loop (the stores themselves are
// fire-and-forget).
struct StoreRegisters {
  static constexpr bool kTma = false;
  static constexpr const char* kName = "registers";
};
// Output pairs into a shared-memory tile (one 64 x kBlockN buffer per math warpgroup, in chunks
// of 64 rows x one TMA box width with TMA's swizzle: the 8 rows a warp writes per store hit 8
// different bank groups, no bank conflicts), then TMA stores of 64-row boxes issued by one thread
// of the warpgroup (elements past M, N are clipped by TMA, not written). Boxes are 64 columns
// (128 bytes, 128-byte swizzle) when kBlockN is a multiple of 64, else 32 (64 bytes, 64-byte
// swizzle; e.g. kBlockN = 160). The warpgroup goes on to its next tile as soon as the stores are
// issued; it waits for them to have read the buffer only at the start of its next epilogue, a tile
// later. Needs D 16-byte aligned with 16-byte row and batch strides, which the CUDA dispatcher
// requires of every output anyway.
struct StoreTma {
  static constexpr bool kTma = true;
  static constexpr const char* kName = "tma";
  static constexpr int kBoxRows = 64;  // one math warpgroup's rows
  template <int kBlockN>
  struct Box {
    static constexpr int kCols = kBlockN % 64 == 0 ? 64 : 32;  // 2-byte elements
    static constexpr int kRowBytes = kCols * 2;                 // = the swizzle span
    static constexpr int kUnits = kRowBytes / 16;               // 16-byte units per row: 8 or 4
    static constexpr int kChunkBytes = kRowBytes * kBoxRows;
    static_assert(kBlockN % kCols == 0, "D tile columns: whole TMA boxes");
    // The 16-byte unit `unit` of a row whose index is `row8` modulo 8 lands at unit
    // unit ^ (row8 >> 0) (128-byte swizzle, 8 units) or unit ^ (row8 >> 1) (64-byte, 4 units):
    // the swizzle XORs address bits [4, 4 + log2 units) with the bits 3 places above them.
    static __device__ __forceinline__ uint32_t swizzled(int unit, int row8) {
      return static_cast<uint32_t>(unit ^ (kUnits == 8 ? row8 : row8 >> 1));
    }
  };
};

// What the epilogue reads besides the accumulator; `alpha` already holds the tensor scales.
// D, S and the biases hold the kernel's output element (Out::T).
struct EpilogueArgs {
  void* d;
  int64_t ldd, batch_d;
  const void* s;  // null: no source (beta = gamma = 0)
  int64_t lds, batch_s;
  const void* bias_n;
  const void* bias_m;
  const float* scale_m;
  const float* scale_n;
  float alpha, beta, gamma;
  int32_t m, n;
};

// The epilogue operands of launch `l` (host side; `alpha` without the tensor scales, which the
// kernels read from device memory). No source: beta = gamma = 0.
inline EpilogueArgs epilogue_args(const Launch& l) {
  EpilogueArgs e{};
  e.d = l.d;
  e.ldd = l.ldd;
  e.batch_d = l.batch_d;
  e.s = l.s;
  e.lds = l.lds;
  e.batch_s = l.batch_s;
  e.bias_n = l.bias_n;
  e.bias_m = l.bias_m;
  e.scale_m = l.scale_m;
  e.scale_n = l.scale_n;
  e.alpha = l.alpha;
  e.beta = l.s ? l.beta : 0.0f;
  e.gamma = l.s ? l.gamma : 0.0f;
  e.m = l.m;
  e.n = l.n;
  return e;
}

// The SMs the fp8 launchers plan their grids for (host side): the dispatcher's count, else the
// current device's.
inline int launch_sms(const Launch& l) {
  if (l.sm_count > 0) return l.sm_count;
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return sms;
}

__device__ __forceinline__ void warpgroup_barrier(int id) {
  asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}

// The tile's column vectors (scale_n, bias_n; 1 and 0 when absent) into the warpgroup's shared
// buffer `cols` (2 kBlockN floats), read back by store_tile. Staging them costs two warpgroup
// barriers per tile; loading them per element between the stores made row scaling 10-16 %
// slower than tensor scaling (each load after a store of unknown aliasing waits for a memory
// round trip; measured, H200), and holding them in registers spills at kBlockN = 192.
// StoreTma: the first barrier also publishes that the previous tile's TMA stores (issued by
// thread 0, which waits for them here) have read the warpgroup's D buffer.
template <class Store, int kBlockN, class Out>
__device__ __forceinline__ void stage_columns(const EpilogueArgs& e, float* cols, int32_t n0,
                                              int wg_thread, int barrier_id) {
  if constexpr (Store::kTma) bulk_wait_group_read_all();  // no-op for threads 1..127
  warpgroup_barrier(barrier_id);  // the previous tile's reads are done
#pragma unroll
  for (int i = 0; i < (kBlockN + 127) / 128; ++i) {
    // Clamped column, both stores unconditional for c < kBlockN: no divergent branch (which,
    // with the next tile's wgmmas in flight, would make ptxas serialize them).
    const int c = min(wg_thread + 128 * i, kBlockN - 1);
    const int32_t col = min(n0 + c, e.n - 1);  // clamped: loads stay in bounds
    const float sn = e.scale_n ? __ldg(e.scale_n + col) : 1.0f;
    const float bn =
        e.bias_n ? Out::to_float(__ldg(static_cast<const typename Out::T*>(e.bias_n) + col)) : 0.0f;
    cols[c] = sn;  // threads clamped to the same c write the same values
    cols[kBlockN + c] = bn;
  }
  warpgroup_barrier(barrier_id);
}

// Computes and stores warpgroup rows row0 and row0 + 8 (global rows; `wg_row` is row0's row
// within the warpgroup's 64) x the tile's kBlockN columns held by this thread:
// acc[4 i + 2 h + j] is row row0 + 8 h, column n0 + 8 i + 2 (lane % 4) + j.
// StoreRegisters: to global memory, rows and columns past M, N skipped. StoreTma: every element
// to the warpgroup's shared-memory buffer `dtile` (TMA clips what lies past M, N); operand loads
// of rows / columns past M, N are skipped (clamped addresses, selected away), without branches.
// The source is read with __ldg (read-only for the kernel), so its loads can move ahead of the
// stores.
// kCols: the tile has column vectors (scale_n or bias_n) staged at shared address `cols`; without
// them the loop reads nothing but the accumulators. Each column pair's vectors are loaded once
// for both rows, one pair ahead: read right before their use (as generic loads, behind the
// previous pair's store), they put a load latency on every pair, ~2 us per 128x256 tile (session
// 36: the per-tile fixed cost that held the own bf16 kernel at 90 % tensor duty).
template <class Store, int kBlockN, class Out, int32_t kAct, bool kSource, bool kCols>
__device__ __forceinline__ void store_tile(const EpilogueArgs& e, uint32_t cols,
                                           const float (&acc)[kBlockN / 2], int32_t batch,
                                           int32_t row0, int32_t n0, int lane, uint32_t dtile,
                                           int wg_row) {
  using T = typename Out::T;
  using T2 = typename Out::T2;
  const int32_t t0 = 2 * (lane % 4);
  // per row h: in range, the row factor alpha * scale_m, bias_m, D and S rows
  bool row_in[2];
  float rs[2], bm[2];
  T* drow[2];
  const T* srow[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int32_t row = row0 + 8 * h;
    row_in[h] = row < e.m;
    const int32_t row_c = min(row, e.m - 1);  // clamped: loads stay in bounds
    rs[h] = e.alpha * (e.scale_m ? __ldg(e.scale_m + row_c) : 1.0f);
    bm[h] = e.bias_m ? Out::to_float(__ldg(static_cast<const T*>(e.bias_m) + row_c)) : 0.0f;
    drow[h] = static_cast<T*>(e.d) + batch * e.batch_d + row * e.ldd;
    srow[h] = kSource ? static_cast<const T*>(e.s) + batch * e.batch_s + row_c * e.lds : nullptr;
  }
  // StoreTma: this thread's bytes of shared-memory row wg_row (+ 8 for h = 1) of a chunk; its
  // 16-byte unit i % kUnits is swizzled by the row's index modulo 8, which is lane / 4.
  using Box = StoreTma::Box<kBlockN>;
  const uint32_t drow_smem = dtile + wg_row * Box::kRowBytes + 2 * t0;
  constexpr int kPairs = kBlockN / 8;
  auto load_cols = [&](int i, float2& cs, float2& cb) {
    if constexpr (kCols) {
      cs = ld_shared_f32x2(cols + 4 * (8 * i + t0));            // scale_n
      cb = ld_shared_f32x2(cols + 4 * (kBlockN + 8 * i + t0));  // bias_n
    } else {
      cs = make_float2(1.0f, 1.0f);
      cb = make_float2(0.0f, 0.0f);
    }
  };
  float2 cs_next, cb_next;
  load_cols(0, cs_next, cb_next);
#pragma unroll
  for (int i = 0; i < kPairs; ++i) {
    const float2 cs = cs_next, cb = cb_next;
    if (i + 1 < kPairs) load_cols(i + 1, cs_next, cb_next);
    const int32_t c = 8 * i + t0, col = n0 + c;
    if constexpr (!Store::kTma) {
      if (col >= e.n) continue;
    }
    const bool pair = col + 1 < e.n;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if constexpr (!Store::kTma) {
        if (!row_in[h]) continue;
      }
      float src[2] = {0.0f, 0.0f};
      if constexpr (kSource) {
        // StoreTma: rows / columns past M, N read nothing and take 0 (the register path skipped
        // them above). Branch-free loads at clamped columns instead had the compiler hoist all
        // 192 of them: 0.4-1.3 KB of spills; so did folding `row_in` into the conditions below
        // (12 bytes with TilesOverlapEpilogue), hence the empty first branch.
        if (Store::kTma && !row_in[h]) {
        } else if (pair) {
          const float2 s2 =
              Out::to_float2(__ldg(reinterpret_cast<const T2*>(srow[h] + col)));
          src[0] = s2.x;
          src[1] = s2.y;
        } else if (!Store::kTma || col < e.n) {
          src[0] = Out::to_float(__ldg(srow[h] + col));
        }
      }
      float v[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const float x =
            acc[4 * i + 2 * h + j] * rs[h] * (j ? cs.y : cs.x) + (j ? cb.y : cb.x) + bm[h];
        if constexpr (kSource) {
          v[j] = e.gamma * src[j] + activate<kAct>(e.beta * src[j] + x);
        } else {
          v[j] = activate<kAct>(x);
        }
      }
      const T2 out = Out::pack(v[0], v[1]);
      if constexpr (Store::kTma) {
        const uint32_t unit = Box::swizzled(i % Box::kUnits, lane / 4);
        st_shared_b32(drow_smem + 8 * h * Box::kRowBytes + (i / Box::kUnits) * Box::kChunkBytes +
                          (unit << 4),
                      *reinterpret_cast<const uint32_t*>(&out));
      } else if (pair) {
        *reinterpret_cast<T2*>(drow[h] + col) = out;
      } else {
        drow[h][col] = out.x;
      }
    }
  }
}

// kMaySource = false compiles no source operand (the TilesSerialPlain twin).
template <class Store, int kBlockN, class Out, int32_t kAct, bool kMaySource = true>
__device__ __forceinline__ void store_tile_source(const EpilogueArgs& e, uint32_t cols,
                                                  const float (&acc)[kBlockN / 2], int32_t batch,
                                                  int32_t row0, int32_t n0, int lane,
                                                  uint32_t dtile, int wg_row) {
  const bool has_cols = e.scale_n != nullptr || e.bias_n != nullptr;
  if constexpr (kMaySource) {
    if (e.s) {
      if (has_cols) {
        store_tile<Store, kBlockN, Out, kAct, true, true>(e, cols, acc, batch, row0, n0, lane,
                                                          dtile, wg_row);
      } else {
        store_tile<Store, kBlockN, Out, kAct, true, false>(e, cols, acc, batch, row0, n0, lane,
                                                           dtile, wg_row);
      }
      return;
    }
  }
  if (has_cols) {
    store_tile<Store, kBlockN, Out, kAct, false, true>(e, cols, acc, batch, row0, n0, lane, dtile,
                                                       wg_row);
  } else {
    store_tile<Store, kBlockN, Out, kAct, false, false>(e, cols, acc, batch, row0, n0, lane, dtile,
                                                        wg_row);
  }
}

// The epilogue of one tile for math warpgroup `wg` (tile rows wg * 64 .. + 63 from `m0`, columns
// n0 .. + kBlockN - 1). `tma_d`, `dtile`: the D tensor map and the warpgroup's shared-memory D
// buffer (StoreTma only). kPlainOnly: the TilesSerialPlain twin, which compiles no activation and
// no source operand.
template <class Store, int kBlockN, class Out, bool kPlainOnly>
__device__ __forceinline__ void epilogue(const EpilogueArgs& e, const void* tma_d,
                                         int32_t activation, float* cols, uint8_t* dtile,
                                         const float (&acc)[kBlockN / 2], int32_t batch,
                                         int32_t m0, int32_t n0, int wg, int wg_thread) {
  stage_columns<Store, kBlockN, Out>(e, cols, n0, wg_thread, 1 + wg);
  const int lane = wg_thread % 32;
  const int wg_row = wg_thread / 32 * 16 + lane / 4;
  const int32_t row0 = m0 + wg * 64 + wg_row;
  const uint32_t dt = Store::kTma ? smem_u32(dtile) : 0u;
  const uint32_t cols_s = smem_u32(cols);
  if constexpr (kPlainOnly) {
    store_tile_source<Store, kBlockN, Out, kActNone, /*may source*/ false>(
        e, cols_s, acc, batch, row0, n0, lane, dt, wg_row);
  } else {
    switch (activation) {
#define DW_FP8_STORE(act) store_tile_source<Store, kBlockN, Out, act>(e, cols_s, acc, batch, row0, n0, lane, dt, wg_row)
      case kActReLU: DW_FP8_STORE(kActReLU); break;
      case kActGeluErf: DW_FP8_STORE(kActGeluErf); break;
      case kActGeluTanh: DW_FP8_STORE(kActGeluTanh); break;
      case kActSiLU: DW_FP8_STORE(kActSiLU); break;
      default: DW_FP8_STORE(kActNone); break;
#undef DW_FP8_STORE
    }
  }
  if constexpr (Store::kTma) {
    using Box = StoreTma::Box<kBlockN>;
    // Every thread's shared-memory writes are made visible to the async proxy, then the whole
    // warpgroup's; thread 0 issues the boxes (clipped at M, N by TMA) as one bulk group.
    fence_proxy_async_shared();
    warpgroup_barrier(1 + wg);
    const bool leader = wg_thread == 0;
#pragma unroll
    for (int j = 0; j < kBlockN / Box::kCols; ++j) {
      tma_store_3d_if(tma_d, dtile + j * Box::kChunkBytes, n0 + j * Box::kCols,
                      m0 + wg * 64, batch, leader);
    }
    bulk_commit_group_if(leader);
  }
}

}  // namespace deepwell::matmul::sm90::fp8
