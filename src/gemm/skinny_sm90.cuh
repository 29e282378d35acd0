// deepwell's fp8 GEMM for few rows of A (decode-time x @ w.t(): M of 1 to 16), sm_90a.
//
// At such M the GEMM is a stream of the weight B (N x K fp8) through the SMs; the tile kernels
// (CUTLASS's 64x64 ping-pong, the own 128-row loop) run 64- or 128-row MMAs of which 1-16 rows
// are real, one tile per CTA, and wait for every k-block's wgmmas before promoting them, so a
// CTA streams its weight slice at a fraction of its share of the DRAM bandwidth. This kernel
// turns the problem around (swap-AB): weight rows go on the MMA's M side (m16), A's rows on its
// N side (n8), and each CTA splits its slice's K over its warps:
//
//   CTA   = 32 weight rows (a strip) x up to 16 rows of A (an m-block) x one batch;
//           8 warps, warp w takes k-blocks w, w + 8, ... (128 of K each), so the CTA's loads
//           walk 8 consecutive k-blocks of its 32 rows at a time
//   warp  = 2 m16 tiles (32 weight rows) x kNTiles n8 tiles (8 or 16 rows of A), per k-block 4
//           mma.sync.m16n8k32 steps; with 1x128 / 128x128 block scales into a temporary that is
//           promoted with the k-block's scales, else straight into the fp32 accumulator (sm_90
//           runs fp8 mma.sync as an exact fp8 -> fp16 conversion and fp16 HMMA with fp32
//           accumulation, not wgmma's reduced-precision fp8 sums); loads of the warp's next
//           k-block are issued before the current one's mma (two register buffers) or, where
//           that packs the grid into one wave, two CTAs share an SM with one buffer each
//   end   = the 8 warps' accumulators added in shared memory in warp order (the same bits on
//           every run), then the epilogue of every deepwell GEMM on 512 outputs (2 per thread)
//
// No shared-memory staging, TMA or wgmma: every operand byte goes from global memory to the
// registers that feed the mma (16-byte loads; the weight's evict-first, read once). mma.sync
// wants, per thread, 4 consecutive k of a row for each of two k-quads 16 apart; the loads want 16
// contiguous bytes. Any permutation of k applied to both operands leaves the dot products
// unchanged, so each 128-byte k-block is read as: thread t (lane % 4) of a row loads bytes
// [h 64 + 16 t, + 16) for h = 0, 1, and mma step s (0..3) takes words 2 (s & 1) and 2 (s & 1) + 1
// of half h = s >> 1 as its two k-quads, for the weight (A fragment) and for A's row (B fragment)
// alike. Four threads of a row then cover 64 contiguous bytes per load instruction.
//
// Rows past N and M read zeros; the bytes of a k-block past K are zeroed in the registers (the
// last 16-byte piece of a row is read byte by byte when K is not a multiple of 16, so no read
// passes the end of a row). Any M runs (m-blocks along the grid's y), but past 16 rows the
// weight is read once per m-block: the shape rules pick the kernel at M <= 16 only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda_utils.hpp"
#include "gemm/fp8_sm90_epilogue.cuh"  // activate<>, OutBf16, OutF16, EpilogueArgs
#include "gemm/gemm_sm90_table.hpp"
#include "gemm/sm90_launch.hpp"

namespace deepwell::matmul::sm90::skinny {

using fp8::activate;
using fp8::epilogue_args;
using fp8::EpilogueArgs;
using fp8::OutBf16;
using fp8::OutF16;

struct OutF32 {
  using T = float;
  static constexpr DType kDType = DType::kF32;
  static __device__ __forceinline__ float to_float(T x) { return x; }
  static __device__ __forceinline__ T from_float(float x) { return x; }
};

constexpr int kWarps = 8, kThreads = 32 * kWarps;
constexpr int kStripRows = 32;  // weight rows per CTA: two m16 tiles per warp
constexpr int kBlockK = 128;    // one promotion (and one block scale) per 128 of K

struct Params {
  const uint8_t* a;  // (M, K) fp8, K-major, leading dimension lda bytes
  const uint8_t* b;  // (N, K) fp8, K-major
  int64_t lda, ldb, batch_a, batch_b;
  int32_t m, n, k;
  int32_t k_blocks;
  // block scaling: sfa (M, K blocks), strides sfa_rs along M and sfa_ld along K (the caller's
  // scales, read in place); sfb (N blocks, K blocks) unit stride along K
  const float* sfa;
  int64_t sfa_ld, sfa_rs;
  const float* sfb;
  int64_t sfb_ld;
  const float* scale_a_tensor;  // null = 1
  const float* scale_b_tensor;
  int32_t activation;
  EpilogueArgs epi;
};

// ----------------------------------------------------------------------------------- loads

// 16 bytes of an operand row at byte `col` (a multiple of 16) of a row of `len` bytes: zeros past
// the row. kTail (the k-block that reaches past K): the piece that straddles the row's end is read
// byte by byte; other k-blocks lie within the rows.
template <bool kStream, bool kTail>
__device__ __forceinline__ uint4 load16(const uint8_t* row, int32_t col, int32_t len,
                                        bool row_ok) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (!row_ok || (kTail && col >= len)) return v;
  if (!kTail || col + 16 <= len) {
    if constexpr (kStream) {
      return __ldcs(reinterpret_cast<const uint4*>(row + col));  // read once: evict first
    } else {
      return __ldg(reinterpret_cast<const uint4*>(row + col));
    }
  }
  uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
  for (int i = 0; i < 16; ++i) {  // unrolled: w stays in registers
    if (i < len - col) w[i / 4] |= uint32_t{__ldg(row + col + i)} << (8 * (i % 4));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// D (16 x 8, f32) += A (16 x 32 fp8, row) * B (32 x 8 fp8, col). A is the weight (e4m3 or e5m2),
// B the rows of the GEMM's A (e4m3).
template <bool kE5M2W>
__device__ __forceinline__ void mma_fp8(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                        uint32_t a3, uint32_t b0, uint32_t b1) {
  if constexpr (kE5M2W) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

// ---------------------------------------------------------------------------------- epilogue

// Output (row `m` of A, weight row `n`) of the fused epilogue (fp8_sm90_epilogue.cuh's formula;
// `alpha` holds the tensor scales).
template <class Out, int32_t kAct>
__device__ __forceinline__ void store_one(const EpilogueArgs& e, int32_t batch, int32_t m,
                                          int32_t n, float acc) {
  using T = typename Out::T;
  float x = acc * e.alpha;
  if (e.scale_m) x *= __ldg(e.scale_m + m);
  if (e.scale_n) x *= __ldg(e.scale_n + n);
  if (e.bias_n) x += Out::to_float(__ldg(static_cast<const T*>(e.bias_n) + n));
  if (e.bias_m) x += Out::to_float(__ldg(static_cast<const T*>(e.bias_m) + m));
  float v;
  if (e.s) {
    const float src =
        Out::to_float(__ldg(static_cast<const T*>(e.s) + batch * e.batch_s + m * e.lds + n));
    v = e.gamma * src + activate<kAct>(e.beta * src + x);
  } else {
    v = activate<kAct>(x);
  }
  static_cast<T*>(e.d)[batch * e.batch_d + m * e.ldd + n] = Out::from_float(v);
}

template <class Out, int32_t kAct, int kNTiles>
__device__ __forceinline__ void store_all(const EpilogueArgs& e, const float* red, int32_t batch,
                                          int32_t n0, int32_t m0) {
  constexpr int kValues = 2 * kNTiles * 4 * 32;  // per warp: (m tile, n tile, register, lane)
  for (int idx = threadIdx.x; idx < kValues; idx += kThreads) {
    float acc = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) acc += red[w * kValues + idx];  // fixed order
    const int lane = idx % 32, r = (idx / 32) % 4, nt = (idx / 128) % kNTiles,
              mt = idx / (128 * kNTiles);
    // mma C fragment: c0, c1 at (row lane / 4, columns 2 (lane % 4) + 0, 1); c2, c3 8 rows down
    const int32_t n = n0 + 16 * mt + lane / 4 + 8 * (r / 2);
    const int32_t m = m0 + 8 * nt + 2 * (lane % 4) + r % 2;
    if (n < e.n && m < e.m) store_one<Out, kAct>(e, batch, m, n, acc);
  }
}

// ------------------------------------------------------------------------------------ kernel

// kNTiles n8 tiles of A's rows per CTA (m-blocks of 8 or 16 rows); kBlock: 1x128 / 128x128 block
// scales promoted per k-block, else tensor / row scales in the epilogue.
// kPrefetch: each warp loads its next k-block before computing the current one (two register
// buffers, up to 255 registers: one CTA per SM); else one buffer at <= 128 registers, two CTAs
// per SM (the launcher picks by grid size).
template <bool kE5M2W, bool kBlock, class Out, int kNTiles, bool kPrefetch>
__global__ void __launch_bounds__(kThreads, kPrefetch ? 1 : 2)
    skinny_fp8_kernel(const __grid_constant__ Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  __shared__ float red[kWarps * 2 * kNTiles * 4 * 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int32_t n0 = blockIdx.x * kStripRows, m0 = blockIdx.y * (8 * kNTiles);
  const int32_t batch = blockIdx.z;
  const uint8_t* b_base = p.b + batch * p.batch_b;
  const uint8_t* a_base = p.a + batch * p.batch_a;

  // This thread's weight rows (g, g + 8, g + 16, g + 24 of the strip) and rows of A (g of each
  // n8 tile); rows out of range read zeros.
  // (Row pointers are formed per load from one base and an 8-row step: four 64-bit pointers
  // held across the loop cost the two-CTA variant its last registers.)
  const int32_t w_first = n0 + g, a_first = m0 + g;
  const uint8_t* wrow0 = b_base + int64_t{min(w_first, p.n - 1)} * p.ldb;
  const uint8_t* arow0 = a_base + int64_t{min(a_first, p.m - 1)} * p.lda;
  const int64_t w_step = 8 * p.ldb, a_step = 8 * p.lda;
  // block scaling: A's scales at this thread's accumulator columns (rows of A), clamped
  int32_t sm_rows[kNTiles][2];
#pragma unroll
  for (int j = 0; j < kNTiles; ++j) {
#pragma unroll
    for (int c = 0; c < 2; ++c) sm_rows[j][c] = min(m0 + 8 * j + 2 * t + c, p.m - 1);
  }
  const float* sfb_row = kBlock ? p.sfb + int64_t{min(n0, p.n - 1) / 128} * p.sfb_ld : nullptr;

  // (m16 tile, n8 tile, mma C register)
  auto zero = [](float (&x)[2][kNTiles][4]) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < kNTiles; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) x[i][j][r] = 0.0f;
  };
  float acc[2][kNTiles][4];
  zero(acc);

  // One k-block's operand bytes for this thread: weight rows g + 8 i, rows of A g + 8 j, two
  // 16-byte halves each.
  struct Frag {
    uint4 w[4][2], x[kNTiles][2];
  };
  auto load_tile = [&](Frag& f, int32_t kb, auto tail) {
    constexpr bool kTail = decltype(tail)::value;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int32_t col = kb * kBlockK + 64 * h + 16 * t;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        f.w[i][h] = load16<true, kTail>(wrow0 + i * w_step, col, p.k, w_first + 8 * i < p.n);
      }
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        f.x[j][h] = load16<false, kTail>(arow0 + j * a_step, col, p.k, a_first + 8 * j < p.m);
      }
    }
  };
  auto load = [&](Frag& f, int32_t kb) {
    if ((kb + 1) * kBlockK <= p.k) {
      load_tile(f, kb, std::false_type{});
    } else {
      load_tile(f, kb, std::true_type{});  // the k-block that reaches past K
    }
  };
  // 4 mma steps per (m16, n8) tile pair. Block scaling: into a temporary, then promoted with the
  // k-block's scales. Tensor / row scaling: straight into the accumulator, as the mma's fp32
  // accumulation is not the reduced-precision one of fp8 wgmma (sm_90 runs fp8 mma.sync as fp16
  // HMMA with fp32 accumulation after an exact fp8 -> fp16 conversion: F2FP + HMMA.16816.F32 in
  // the SASS); test_fp8_own_kernel_promotion_accuracy checks it at K = 16384.
  auto compute = [&](const Frag& f, int32_t kb) {
    float part[2][kNTiles][4];
    float (&sum)[2][kNTiles][4] = kBlock ? part : acc;
    if constexpr (kBlock) zero(part);
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int h = s >> 1, q = 2 * (s & 1);
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        // m16 tile i: rows g (a0, a2) and g + 8 (a1, a3) of its 16, i.e. strip rows 16 i + g, + 8
        const uint32_t a0 = word(f.w[2 * i][h], q), a2 = word(f.w[2 * i][h], q + 1);
        const uint32_t a1 = word(f.w[2 * i + 1][h], q), a3 = word(f.w[2 * i + 1][h], q + 1);
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) {
          mma_fp8<kE5M2W>(sum[i][j], a0, a1, a2, a3, word(f.x[j][h], q), word(f.x[j][h], q + 1));
        }
      }
    }
    if constexpr (kBlock) {
      const float sb = __ldg(sfb_row + kb);
      const float* sfa_kb = p.sfa + kb * p.sfa_ld;
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        const float s0 = sb * __ldg(sfa_kb + sm_rows[j][0] * p.sfa_rs);
        const float s1 = sb * __ldg(sfa_kb + sm_rows[j][1] * p.sfa_rs);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          acc[i][j][0] += part[i][j][0] * s0;
          acc[i][j][1] += part[i][j][1] * s1;
          acc[i][j][2] += part[i][j][2] * s0;
          acc[i][j][3] += part[i][j][3] * s1;
        }
      }
    }
  };
  if constexpr (kPrefetch) {
    // The warp's k-blocks warp, warp + 8, ..., each one's loads issued before the previous one's
    // mma (two register buffers): a warp keeps a k-block in flight while it computes.
    Frag f0, f1;
    int32_t kb = warp;
    if (kb < p.k_blocks) load(f0, kb);
#pragma unroll 1
    for (; kb < p.k_blocks; kb += 2 * kWarps) {
      if (kb + kWarps < p.k_blocks) load(f1, kb + kWarps);
      compute(f0, kb);
      if (kb + kWarps >= p.k_blocks) break;
      if (kb + 2 * kWarps < p.k_blocks) load(f0, kb + 2 * kWarps);
      compute(f1, kb + kWarps);
    }
  } else {
    Frag f;
#pragma unroll 1
    for (int32_t kb = warp; kb < p.k_blocks; kb += kWarps) {
      load(f, kb);
      compute(f, kb);
    }
  }

  // The warps' sums into shared memory, (warp, m tile, n tile, register, lane): a warp's store of
  // one register is 128 contiguous bytes.
  constexpr int kValues = 2 * kNTiles * 4 * 32;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < kNTiles; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) red[warp * kValues + ((i * kNTiles + j) * 4 + r) * 32 + lane] =
          acc[i][j][r];
  __syncthreads();

  EpilogueArgs e = p.epi;
  if (p.scale_a_tensor) e.alpha *= __ldg(p.scale_a_tensor);
  if (p.scale_b_tensor) e.alpha *= __ldg(p.scale_b_tensor);
  switch (p.activation) {
    case fp8::kActReLU: store_all<Out, fp8::kActReLU, kNTiles>(e, red, batch, n0, m0); break;
    case fp8::kActGeluErf: store_all<Out, fp8::kActGeluErf, kNTiles>(e, red, batch, n0, m0); break;
    case fp8::kActGeluTanh: store_all<Out, fp8::kActGeluTanh, kNTiles>(e, red, batch, n0, m0); break;
    case fp8::kActSiLU: store_all<Out, fp8::kActSiLU, kNTiles>(e, red, batch, n0, m0); break;
    default: store_all<Out, fp8::kActNone, kNTiles>(e, red, batch, n0, m0); break;
  }
#endif
}

// ------------------------------------------------------------------------------------ launch

template <bool kE5M2W, bool kBlock, class Out>
struct SkinnyLauncher {
  // Does this configuration implement the kernel table's row `k`?
  static constexpr bool matches(const KernelSpec& k) {
    return k.operands == (kE5M2W ? Operands::kE4M3xE5M2 : Operands::kE4M3) && k.out == Out::kDType &&
           k.a_k_major && k.b_k_major &&
           k.scaling == (kBlock ? Scaling::kBlock : Scaling::kTensorRow) && k.tile_m == 16 &&
           k.tile_n == kStripRows && k.tile_k == kBlockK && k.cluster_m == 1 &&
           k.cluster_n == 1 && k.schedule == Schedule::kSkinny && !k.stream_k;
  }

  static size_t workspace(const Launch&) { return 0; }

  template <int kNTiles>
  static cudaError_t run(const Params& p, const Launch& l, int sms) {
    const dim3 grid((l.n + kStripRows - 1) / kStripRows, (l.m + 8 * kNTiles - 1) / (8 * kNTiles),
                    l.batch);
    // Two buffers (one CTA per SM) where the grid fits one wave of them or fills several; one
    // buffer (two CTAs per SM) where it would leave a second wave of one-CTA SMs partly empty but
    // fits one wave of two. H100, session 42, CUDA-graph us, weights from DRAM, two buffers / one:
    // 1x4096x4096 (128 CTAs) 9.6 / 10.2, 1x1024x8192 (32) 9.1 / 11.6, 1x6144x4096 (192) 14.4 /
    // 12.0, 16x6144x4096 15.3 / 17.0, 16x28672x4096 (896) 54.9 / 57.1, 1x57344x8192 190 / 193.
    // Only with 8-row m-blocks: at 16 rows the one-buffer variant does not fit 128 registers
    // (ptxas spills 28 bytes), so M = 9-16 runs two buffers everywhere.
    const int64_t ctas = int64_t{grid.x} * grid.y * grid.z;
    if (kNTiles == 1 && ctas > sms && ctas <= 2 * sms) {
      skinny_fp8_kernel<kE5M2W, kBlock, Out, 1, false>
          <<<grid, kThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(p);
    } else {
      skinny_fp8_kernel<kE5M2W, kBlock, Out, kNTiles, true>
          <<<grid, kThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(p);
    }
    return cudaGetLastError();
  }

  static Status launch(const Launch& l) {
    if (l.decomposition != Decomposition::kDataParallel) {
      return Status(StatusCode::kInternal, "gemm_fp8: the skinny kernel runs data-parallel plans "
                                           "only");
    }
    if (l.m == 0 || l.n == 0) return Status::Ok();
    if ((l.m + 15) / 16 > 65535 || l.batch > 65535) {
      return Status(StatusCode::kNotSupported,
                    "gemm_fp8: the skinny kernel's grid takes at most 2^20 rows of A and 65535 "
                    "batches");
    }
    if constexpr (kBlock) {
      if (l.batch != 1 || l.sfa == nullptr || l.sfb == nullptr) {
        return Status(StatusCode::kInternal, "gemm_fp8: block scaling needs one batch and scales");
      }
    }
    const int sms = fp8::launch_sms(l);
    Params p{};
    p.a = static_cast<const uint8_t*>(l.a);
    p.b = static_cast<const uint8_t*>(l.b);
    p.lda = l.lda;
    p.ldb = l.ldb;
    p.batch_a = l.batch_a;
    p.batch_b = l.batch_b;
    p.m = l.m;
    p.n = l.n;
    p.k = l.k;
    p.k_blocks = (l.k + kBlockK - 1) / kBlockK;
    p.sfa = l.sfa;
    p.sfa_ld = l.sfa_ld;
    p.sfa_rs = l.sfa_rs;
    p.sfb = l.sfb;
    p.sfb_ld = l.sfb_ld;
    p.scale_a_tensor = l.scale_a_tensor;
    p.scale_b_tensor = l.scale_b_tensor;
    p.activation = l.activation;
    p.epi = epilogue_args(l);
    // 8-row m-blocks where A has at most 8 rows (half the mma work and registers), else 16
    return detail::cuda_status(l.m <= 8 ? run<1>(p, l, sms) : run<2>(p, l, sms), "gemm_fp8",
                               "skinny kernel launch");
  }
};

}  // namespace deepwell::matmul::sm90::skinny

// Defines `name`_launch / `name`_workspace (declared by gemm_sm90_table.hpp) for the skinny
// configuration (W e5m2, block scaling, output element) and checks that it is the table's row.
#define DW_SM90_SKINNY_INSTANCE(name, e5m2_w, block, Out)                                      \
  namespace deepwell::matmul::sm90 {                                                           \
  using name##_config = skinny::SkinnyLauncher<e5m2_w, block, skinny::Out>;                   \
  static_assert(find_kernel(#name) != nullptr, "no row " #name " in gemm_sm90_table.hpp");     \
  static_assert(name##_config::matches(*find_kernel(#name)),                                   \
                #name ": the instance differs from its row in gemm_sm90_table.hpp");           \
  Status name##_launch(const Launch& l) { return name##_config::launch(l); }                   \
  size_t name##_workspace(const Launch& l) { return name##_config::workspace(l); }             \
  }
