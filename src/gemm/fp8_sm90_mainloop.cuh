// Main loop of the fp8 GEMM kernel (fp8_sm90_kernel.cuh): the TMA producer and the math
// warpgroups' k-loop with fp32 promotion outside the tensor cores every 128 of K.
//
// Pipeline: kStages shared-memory stages, each one k-block (128 of K) of the A tile (128 x 128
// e4m3), of the B tile (kBlockN x 128) and, for block scaling, the 128 A scales of that k-block.
// Per stage a `full` mbarrier (one producer arrival + the TMA bytes) and an `empty` mbarrier (one
// arrival per math warp: 8). One elected producer thread runs ahead of the math warpgroups across
// tile boundaries, so the next tile's first stages load while the current tile's epilogue runs.
//
// Math: each of the two math warpgroups owns 64 rows of the 128-row tile. Per k-block it issues
// 4 x wgmma m64nNk32 into a temporary accumulator, waits for them, releases the stage and adds
// `temp * scale` into the fp32 main accumulator (scale = sa[row] * sb for 1x128 x 128x128 block
// scaling, 1 for tensor / row scaling, whose scales the epilogue applies). The temporary restarts
// from zero every k-block (wgmma scale-d = 0), so at most 128 products ever sit in the tensor
// core's reduced-precision accumulator; that is what keeps K = 16384 results at the bf16 level.
// The compiled rows split this per column half (PromoteHalves) so that a warpgroup never drains.
// The two warpgroups wait on the same stages but are otherwise independent: while one promotes
// (FP32 pipe), the other's wgmma keeps the tensor cores busy -- the overlap CUTLASS's cooperative
// FP8 kernels lose by draining both warpgroups before every promotion.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "cute/arch/mma_sm90_gmma.hpp"
#include "gemm/fp8_sm90_ptx.cuh"
#include "gemm/fp8_sm90_scheduler.cuh"

namespace deepwell::matmul::sm90::fp8 {

// ------------------------------------------------------------------------------ scale policies

// Tensor scales (1 element each) and row / column scales (one per row of A, one per column of B):
// applied once per output element in the epilogue; the main loop promotes with scale 1.
struct ScaleTensorRow {
  static constexpr bool kMainloopScales = false;
  static constexpr const char* kName = "tensor_row";
};
// DeepSeek blocks: one fp32 scale per 1 x 128 (row, k-block) of A and per 128 x 128 block of B,
// multiplied into each k-block's partial sums before they join the fp32 accumulator.
struct ScaleBlock1x128x128 {
  static constexpr bool kMainloopScales = true;
  static constexpr const char* kName = "block1x128_128x128";
};

// --------------------------------------------------------------------------- promotion policies

// After each k-block's wgmmas: wait for them, then promote (one temporary accumulator). The other
// math warpgroup's wgmma is what keeps the tensor cores busy during the promotion.
struct PromoteSerial {
  static constexpr int kTemporaries = 1;
};
// One promotion per 128 of K, as PromoteSerial, without the drain: the temporary is split by
// columns into two halves, each its own wgmma group (m64 n kBlockN/2). While one half's group runs
// on the tensor cores the warpgroup promotes the other half, then issues the next k-block's
// wgmmas for it, so each warpgroup always has a group in flight (wgmma wait 1). Same registers as
// PromoteSerial (two half temporaries); the A tile is read from shared memory twice per k-block.
// Every compiled fp8 row uses it (session 37, H100, x torch._scaled_mm: tensor 8192^3 0.97 ->
// 0.99 against one promotion per 256 of K (branch fp8-promote2, less accurate: 1.37x bf16
// rounding on all-positive K = 16384 products, against 1.04x), K = 32768 0.99 -> 1.01, K = 2048
// 0.96 -> 0.93; block 1030 -> 1080 TFLOP/s at 8192^3, 945 -> 1070 at 16384x8192x8192).
struct PromoteHalves {
  static constexpr int kTemporaries = 1;
};
template <class P>
inline constexpr bool kIsHalves = std::is_same_v<P, PromoteHalves>;
// Issue k-block kb + 1's wgmmas into a second temporary before promoting k-block kb (wgmma wait 1
// instead of 0), so each warpgroup keeps a wgmma batch in flight while it promotes. Costs a second
// kBlockN / 2 temporary registers per thread (192 accumulator registers at kBlockN = 128).
struct PromoteOverlapped {
  static constexpr int kTemporaries = 2;
};

// No temporary: each k-block's wgmmas accumulate straight into the main accumulator, one batch
// kept in flight (wgmma wait 1); for bf16 operands, whose tensor-core sums are fp32 already.
struct PromoteNone {
  static constexpr int kTemporaries = 0;
};

// ------------------------------------------------------------------------------ tile schedules

// Each tile: its k-loop, then its epilogue. Both math warpgroups finish a tile's k-loop together,
// so the tensor cores idle while they run the epilogue.
struct TilesSerial {
  static constexpr bool kOverlapEpilogue = false;
  static constexpr bool kPlainOnly = false;
};
// TilesSerial compiled for plain calls only: no activation, no source operand (no c, no
// residual) and no split tail; row / column scales and bias vectors are kept. The general kernel
// compiles twenty epilogue store variants (five activations x source x column vectors) and the
// split tail: 51648 SASS instructions for the e4m3 tensor / row 128x192 kernel, 2632 for its
// twin, which the host picks for such calls (Fp8Launcher::plain_call). Same bits; H200, session
// 55: bf16 1024x6144x4096 +3.6 %, row 8192x8192x2048 +2.8 %, the large shapes within noise
// (perf-notes "GEMM", session 55). Code that never runs costs: the attention forward's DenseOnly
// twins found the same (attention item 63).
struct TilesSerialPlain {
  static constexpr bool kOverlapEpilogue = false;
  static constexpr bool kPlainOnly = true;
};
// The next tile's first k-block of wgmmas is issued before the finished tile's epilogue, which
// then runs while the tensor cores work on it (into the temporary accumulator, which the
// epilogue does not touch: PromoteSerial only). Hides up to one k-block of MMA time (~0.4 us at
// 128 x 192 per CTA on an H100) of each epilogue.
struct TilesOverlapEpilogue {
  static constexpr bool kOverlapEpilogue = true;
  static constexpr bool kPlainOnly = false;
};

// ---------------------------------------------------------------------------- input policies

// The operands' element type: fp8 (the kernel's first use; e4m3 or e5m2 B per kE5M2B) or a 16-bit
// type, bf16 or fp16 (the same pipeline with 16-bit wgmma and no promotion: PromoteNone). A
// k-block is one 128-byte row of each operand either way (128 fp8 or 64 16-bit elements), so the
// shared-memory stages, swizzle and wgmma descriptors are the same; 4 wgmmas of 32 bytes of K per
// k-block.
struct InFp8 {
  static constexpr int kBytes = 1;
  static constexpr bool k16Bit = false, kF16 = false;
};
struct InBf16 {
  static constexpr int kBytes = 2;
  static constexpr bool k16Bit = true, kF16 = false;
};
struct InF16 {
  static constexpr int kBytes = 2;
  static constexpr bool k16Bit = true, kF16 = true;
};

// ------------------------------------------------------------------------------- wgmma shapes

template <int kN, bool kE5M2B>
struct WgmmaOp;
template <>
struct WgmmaOp<128, false> {
  using Op = cute::SM90::GMMA::MMA_64x128x32_F32E4M3E4M3_SS_TN<>;
};
template <>
struct WgmmaOp<128, true> {
  using Op = cute::SM90::GMMA::MMA_64x128x32_F32E4M3E5M2_SS_TN<>;
};
template <>
struct WgmmaOp<192, false> {
  using Op = cute::SM90::GMMA::MMA_64x192x32_F32E4M3E4M3_SS_TN<>;
};
template <>
struct WgmmaOp<192, true> {
  using Op = cute::SM90::GMMA::MMA_64x192x32_F32E4M3E5M2_SS_TN<>;
};

template <>
struct WgmmaOp<64, false> {  // PromoteHalves of 128-column tiles (block scaling)
  using Op = cute::SM90::GMMA::MMA_64x64x32_F32E4M3E4M3_SS_TN<>;
};
template <>
struct WgmmaOp<96, false> {  // PromoteHalves of 192-column tiles
  using Op = cute::SM90::GMMA::MMA_64x96x32_F32E4M3E4M3_SS_TN<>;
};
template <>
struct WgmmaOp<96, true> {
  using Op = cute::SM90::GMMA::MMA_64x96x32_F32E4M3E5M2_SS_TN<>;
};

// 16-bit operands, both K-major (the compiled 16-bit rows are 128x256, and bf16 128x192).
template <int kN, bool kF16>
struct WgmmaOp16;
template <>
struct WgmmaOp16<256, false> {
  using Op = cute::SM90::GMMA::MMA_64x256x16_F32BF16BF16_SS<cute::SM90::GMMA::Major::K,
                                                             cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaOp16<256, true> {
  using Op = cute::SM90::GMMA::MMA_64x256x16_F32F16F16_SS<cute::SM90::GMMA::Major::K,
                                                           cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaOp16<192, false> {  // bf16 128x192
  using Op = cute::SM90::GMMA::MMA_64x192x16_F32BF16BF16_SS<cute::SM90::GMMA::Major::K,
                                                             cute::SM90::GMMA::Major::K>;
};
template <class In, int kN, bool kE5M2B>
using WgmmaOpFor = typename std::conditional_t<In::k16Bit, WgmmaOp16<kN, In::kF16>,
                                               WgmmaOp<kN, kE5M2B>>::Op;

// d[0..kRegs) += A(64 x 32) * B(32 x N)^T, or = when `accumulate` is false.
template <class Op, int kRegs, size_t... I>
__device__ __forceinline__ void wgmma_call(uint64_t da, uint64_t db, float (&d)[kRegs],
                                           bool accumulate, std::index_sequence<I...>) {
  Op::fma(da, db, d[I]...,
          accumulate ? cute::SM90::GMMA::ScaleOut::One : cute::SM90::GMMA::ScaleOut::Zero);
}

// ----------------------------------------------------------------------------- shared memory

template <int kBlockM, int kBlockN, int kRowBytes, int kStages, bool kScalesA, int kDBytes>
struct SharedLayout {
  static constexpr int kABytes = kBlockM * kRowBytes;  // one 128-byte row of K per tile row
  static constexpr int kBBytes = kBlockN * kRowBytes;
  static constexpr int kSfaBytes = kScalesA ? kBlockM * 4 : 0;
  // Each stage's A and B tile starts on a 1024-byte boundary (128B-swizzle atoms; wgmma
  // descriptors with base offset 0); the scale vector on a 128-byte one (TMA destination).
  static_assert(kABytes % 1024 == 0 && kBBytes % 1024 == 0, "tiles of whole swizzle atoms");
  static constexpr int kAOffset = 0;
  static constexpr int kBOffset = kAOffset + kStages * kABytes;
  // The epilogue's bf16 D tile (StoreTma: one 64 x kBlockN buffer per math warpgroup, TMA's
  // 128-byte swizzle, so on a 1024-byte boundary too; 0 bytes for StoreRegisters).
  static constexpr int kDOffset = kBOffset + kStages * kBBytes;
  static_assert(kDBytes % 2048 == 0, "two D buffers of whole swizzle atoms");
  static constexpr int kSfaOffset = kDOffset + kDBytes;
  // Epilogue column vectors (scale_n, bias_n of the tile), one buffer per math warpgroup.
  static constexpr int kColsOffset = kSfaOffset + kStages * kSfaBytes;
  static constexpr int kColsBytes = 2 * kBlockN * 4;
  static_assert(kColsOffset % 8 == 0 && kColsBytes % 8 == 0, "float2 reads of the columns");
  static constexpr int kBarOffset = kColsOffset + 2 * kColsBytes;
  static constexpr int kBytes = kBarOffset + 2 * kStages * 8;
  // TMA traffic per stage (out-of-bounds boxes are zero-filled and still count in full).
  static constexpr uint32_t kStageTxBytes = kABytes + kBBytes + kSfaBytes;

  uint8_t* base;
  __device__ uint8_t* a(uint32_t s) const { return base + kAOffset + s * kABytes; }
  __device__ uint8_t* b(uint32_t s) const { return base + kBOffset + s * kBBytes; }
  __device__ uint8_t* d(int wg) const { return base + kDOffset + wg * (kDBytes / 2); }
  __device__ float* sfa(uint32_t s) const {
    return reinterpret_cast<float*>(base + kSfaOffset + s * kSfaBytes);
  }
  __device__ float* cols(int wg) const {
    return reinterpret_cast<float*>(base + kColsOffset + wg * kColsBytes);
  }
  __device__ uint64_t* full(uint32_t s) const {
    return reinterpret_cast<uint64_t*>(base + kBarOffset) + s;
  }
  __device__ uint64_t* empty(uint32_t s) const {
    return reinterpret_cast<uint64_t*>(base + kBarOffset) + kStages + s;
  }
};

// Position in the ring of stages, carried across tiles by producer and consumers alike.
template <int kStages>
struct PipelineState {
  uint32_t stage = 0, phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// ------------------------------------------------------------------------------------ producer

// Runs on one thread: loads the k-blocks of every work unit this CTA owns.
template <class K, class Params>
__device__ __forceinline__ void produce(const Params& p, const typename K::Smem& sm,
                                        const typename K::Scheduler& sched) {
  PipelineState<K::kStages> st;
  // With a cluster, this CTA loads rows [rank * kBRows, + kBRows) of the B tile for every CTA of
  // the cluster (multicast); its empty barriers count the math warps of all of them.
  constexpr int kBRows = K::kBlockN / K::kClusterM;
  const int32_t b_row0 = sched.rank * kBRows;
  for (int32_t u = sched.first; u < sched.units; u += sched.stride) {
    const WorkUnit w = sched.unit(u);
    const TileCoord& c = w.c;
    const int32_t m0 = c.m_block * K::kBlockM, n0 = c.n_block * K::kBlockN;
    // A cluster's CTA past the last m-block only loads its share of B for its peers (its math
    // warpgroups compute on stale A data and store nothing).
    const bool load_a = K::kClusterM == 1 || c.m_block < p.m_blocks;
    const uint32_t tx = load_a ? K::Smem::kStageTxBytes
                               : K::Smem::kStageTxBytes - K::Smem::kABytes - K::Smem::kSfaBytes;
    for (int32_t kb = w.kb_begin; kb < w.kb_end; ++kb) {
      mbar_wait(sm.empty(st.stage), st.phase ^ 1);  // the first round passes at once
      uint64_t* full = sm.full(st.stage);
      mbar_arrive_expect_tx(full, tx);
      if (load_a) tma_load_3d(&p.tma_a, full, sm.a(st.stage), kb * K::kBlockK, m0, c.batch);
      if constexpr (K::kClusterM == 1) {
        tma_load_3d(&p.tma_b, full, sm.b(st.stage), kb * K::kBlockK, n0, c.batch);
      } else {
        tma_load_3d_multicast(&p.tma_b, full, sm.b(st.stage) + b_row0 * K::kRowBytes,
                              kb * K::kBlockK, n0 + b_row0, c.batch,
                              static_cast<uint16_t>((1u << K::kClusterM) - 1));
      }
      if (K::Scale::kMainloopScales && load_a) {
        tma_load_2d(&p.tma_sfa, full, sm.sfa(st.stage), m0, kb);
      }
      st.advance();
    }
  }
}

// --------------------------------------------------------------------------------- math k-loop

// Scales of one k-block as the promotion needs them (1 for tensor / row scaling). The B scales
// are loaded (global memory, L1 hits) before the stage wait; the A scales come with the stage and
// are read by with_a_scales() only after a wgmma wait, just before the stage's release. Read
// before the wgmma issue (until session 39), ptxas placed the scale products, which wait for
// those shared-memory loads, between the k-block's wgmmas: the issue stalled there (block 8192^3
// 0.90 -> 0.97x torch._scaled_mm with the reads moved; docs/perf-notes.md).
struct KBlockScales {
  float a0, a1;  // A scales of accumulator rows `row` and `row + 8` (after with_a_scales)
  float b0, b1;  // B scales of the tile's first and (kBlockN > 128) second 128-column block
  uint32_t stage;  // the stage that holds the A scales
};

// Per-k-block pieces of the math loop of warpgroup `wg`; `row` is the thread's first accumulator
// row within the warpgroup's 64 (the second is row + 8).
template <class K, class Params>
struct MathKBlock {
  static constexpr int kRegs = K::kAccRegs;
  const Params& p;
  const typename K::Smem& sm;
  int wg, row, lane;
  const float* sfb;  // this tile's row of B scales (block scaling)
  const float* sfb2;  // the next row (kBlockN > 128: the tile's columns past the first B block)
  int32_t first_chunks;  // kBlockN > 128: 8-column chunks of the tile in its first B block

  // Waits for the stage and loads its B scales (A scales: with_a_scales; 1 for tensor / row).
  __device__ __forceinline__ KBlockScales wait_stage(uint32_t stage, uint32_t phase,
                                                     int32_t kb) const {
    float sb = 1.0f, sb2 = 1.0f;
    if constexpr (K::Scale::kMainloopScales) {
      sb = __ldg(sfb + kb);  // L1 hits after the tile's first k-blocks
      if constexpr (K::kTwoBScales) sb2 = __ldg(sfb2 + kb);
    }
    mbar_wait(sm.full(stage), phase);
    return KBlockScales{1.0f, 1.0f, sb, sb2, stage};
  }

  // The k-block's A scales, read from its stage after a wgmma wait and before the release.
  __device__ __forceinline__ KBlockScales with_a_scales(KBlockScales sc) const {
    if constexpr (K::Scale::kMainloopScales) {
      const float* sfa = sm.sfa(sc.stage) + wg * 64 + row;
      sc.a0 = sfa[0];
      sc.a1 = sfa[8];
    }
    return sc;
  }

  // The 4 wgmmas (32 bytes of K each: fp8 k32, 16-bit k16; descriptors count 16-byte units) of a
  // waited-for stage into `tmp`: this warpgroup's 64 rows of A times kN columns of B from row
  // `b_row0`, committed as one group, not waited for. (`accumulate`: the first wgmma adds to tmp
  // too: PromoteNone's main accumulator.)
  template <int kN, int kCount>
  __device__ __forceinline__ void issue_group(uint32_t stage, int b_row0, float (&tmp)[kCount],
                                              bool accumulate) const {
    using GroupOp = WgmmaOpFor<typename K::In, kN, K::kE5M2B>;
#pragma unroll
    for (int i = 0; i < kCount; ++i) fence_operand(tmp[i]);
    wgmma_fence();
    const uint64_t da = smem_desc_k_sw128(sm.a(stage) + wg * 64 * K::kRowBytes);
    const uint64_t db = smem_desc_k_sw128(sm.b(stage) + b_row0 * K::kRowBytes);
#pragma unroll
    for (int k = 0; k < K::kRowBytes / 32; ++k) {
      wgmma_call<GroupOp>(da + 2 * k, db + 2 * k, tmp, accumulate || k > 0,
                          std::make_index_sequence<kCount>{});
    }
    wgmma_commit();
#pragma unroll
    for (int i = 0; i < kCount; ++i) fence_operand(tmp[i]);
  }

  // Waits for the stage, reads its scales, issues its wgmmas over the whole tile into `tmp`.
  __device__ __forceinline__ KBlockScales issue(uint32_t stage, uint32_t phase, int32_t kb,
                                                float (&tmp)[kRegs],
                                                bool accumulate = false) const {
    const KBlockScales sc = wait_stage(stage, phase, kb);
    issue_group<K::kBlockN>(stage, 0, tmp, accumulate);
    return sc;
  }

  // PromoteHalves: the wgmmas of columns [kHalf * kBlockN / 2, + kBlockN / 2) of a waited-for
  // stage into `tmp`.
  static constexpr int kHalfRegs = kRegs / 2;
  template <int kHalf>
  __device__ __forceinline__ void issue_half(uint32_t stage, float (&tmp)[kHalfRegs]) const {
    issue_group<K::kBlockN / 2>(stage, kHalf * (K::kBlockN / 2), tmp, false);
  }

  // acc[kOff, kOff + kCount) += tmp * scale: the k-block's partial sums of those accumulators
  // (scale = sa[row] * sb for block scaling, 1 for tensor / row scaling).
  template <int kOff, int kCount>
  __device__ __forceinline__ void promote_range(float (&acc)[kRegs], const float (&tmp)[kCount],
                                                KBlockScales sc) const {
    if constexpr (K::Scale::kMainloopScales) {
      // The four products once per k-block; which one a chunk takes is fixed at compile time
      // except in the band that depends on the tile's column offset, where one select per
      // k-block decides, so the per-element work is one FFMA and the loop has no branch. (A
      // per-chunk run-time select compiled to FSEL + FMUL per chunk plus predicate logic: ~300
      // instructions per k-block and warp; a compile-time promotion per offset behind a uniform
      // branch, both copies in the loop: 292 in the loop, ~230 run; tensor scaling 187.)
      const float s0 = sc.a0 * sc.b0, s1 = sc.a1 * sc.b0;
      if constexpr (!K::kTwoBScales) {
        promote_span<kRegs / 4, kRegs / 4, kOff>(acc, tmp, s0, s1, s0, s1, s0, s1);
      } else {
        static_assert(K::kBlockN == 192, "two B scale blocks: 192-column tiles");
        const float t0 = sc.a0 * sc.b1, t1 = sc.a1 * sc.b1;
        // A 192-column tile starts at column 0 or 64 of its first 128-column B block: chunks
        // 0-7 lie in that block, 16-23 in the next, 8-15 in the first where the tile starts at
        // column 0 (16 chunks in the first block), else in the next.
        const bool band_first = first_chunks == 16;
        const float m0 = band_first ? s0 : t0, m1 = band_first ? s1 : t1;
        promote_span<8, 16, kOff>(acc, tmp, s0, s1, m0, m1, t0, t1);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kCount; ++i) acc[kOff + i] += tmp[i];
    }
  }
  __device__ __forceinline__ void promote(float (&acc)[kRegs], const float (&tmp)[kRegs],
                                          KBlockScales sc) const {
    promote_range<0, kRegs>(acc, tmp, sc);
  }
  template <int kHalf>
  __device__ __forceinline__ void promote_half(float (&acc)[kRegs], const float (&tmp)[kHalfRegs],
                                               KBlockScales sc) const {
    promote_range<kHalf * kHalfRegs, kHalfRegs>(acc, tmp, sc);
  }

  // acc[kOff + i] += tmp[i] * scale, where the tile's chunk c = (kOff + i) / 4 (accumulators
  // 4c .. 4c + 3: columns 8c .. 8c + 7, rows `row` and `row + 8`) takes (r0, r1) for c < kLo,
  // (m0, m1) for kLo <= c < kHi, else (u0, u1).
  template <int kLo, int kHi, int kOff, int kCount>
  __device__ __forceinline__ static void promote_span(float (&acc)[kRegs],
                                                      const float (&tmp)[kCount], float r0,
                                                      float r1, float m0, float m1, float u0,
                                                      float u1) {
#pragma unroll
    for (int i = 0; i < kCount; i += 4) {
      const int c = (kOff + i) / 4;
      const float x0 = c < kLo ? r0 : (c < kHi ? m0 : u0);
      const float x1 = c < kLo ? r1 : (c < kHi ? m1 : u1);
      acc[kOff + i + 0] = fmaf(tmp[i + 0], x0, acc[kOff + i + 0]);
      acc[kOff + i + 1] = fmaf(tmp[i + 1], x0, acc[kOff + i + 1]);
      acc[kOff + i + 2] = fmaf(tmp[i + 2], x1, acc[kOff + i + 2]);
      acc[kOff + i + 3] = fmaf(tmp[i + 3], x1, acc[kOff + i + 3]);
    }
  }

  // The stage's tiles and A scales are no longer read by this warp: hand it back (to every CTA
  // of the cluster: each one's producer wrote part of the B tile here).
  __device__ __forceinline__ void release(uint32_t stage) const {
    if constexpr (K::kClusterM == 1) {
      mbar_arrive_if(sm.empty(stage), lane == 0);
    } else {
      mbar_arrive_cluster_if(sm.empty(stage), static_cast<uint32_t>(lane), lane < K::kClusterM);
    }
  }
};

// The per-k-block math of tile `c` for math warpgroup `wg` (rows wg * 64 .. + 63 of the tile),
// from k-block kb0 on: the k-block indices it is given count from kb0 (so a split's loop is the
// whole tile's loop, its scale addresses strength-reduced the same way).
template <class K, class Params>
__device__ __forceinline__ MathKBlock<K, Params> tile_math(const Params& p,
                                                           const typename K::Smem& sm,
                                                           const TileCoord& c, int32_t kb0,
                                                           int wg, int row, int lane) {
  const float* sfb = nullptr;
  const float* sfb2 = nullptr;
  int32_t first_chunks = K::kBlockN / 8;
  if constexpr (K::Scale::kMainloopScales) {
    // B scale blocks are 128 columns wide; a wider tile starts in block n0 / 128 and ends in the
    // next one (clamped to the last block: its columns past N are never stored).
    const int32_t n0 = c.n_block * K::kBlockN, nb = n0 / 128;
    sfb = p.sfb + static_cast<int64_t>(nb) * p.sfb_ld;
    sfb2 = (nb + 1 < p.n_scale_blocks ? sfb + p.sfb_ld : sfb) + kb0;
    sfb += kb0;
    first_chunks = ((nb + 1) * 128 - n0) / 8;
  }
  return MathKBlock<K, Params>{p, sm, wg, row, lane, sfb, sfb2, first_chunks};
}

// k-blocks kb0 .. n - 1 (of mk's), serial promotion into `acc`.
template <class K, class Params>
__device__ __forceinline__ void kloop_serial(const MathKBlock<K, Params>& mk,
                                             PipelineState<K::kStages>& st, int32_t kb0,
                                             int32_t n, float (&acc)[K::kAccRegs]) {
  for (int32_t kb = kb0; kb < n; ++kb) {
    float tmp[K::kAccRegs];
    const KBlockScales sc = mk.issue(st.stage, st.phase, kb, tmp);
    wgmma_wait<0>();
    const KBlockScales sca = mk.with_a_scales(sc);
    mk.release(st.stage);
    mk.promote(acc, tmp, sca);
    st.advance();
  }
}

// k-blocks 0 .. n - 1 (of mk's) with PromoteHalves: each k-block's two column halves are
// separate wgmma groups; a half is promoted while the other half's group runs, then reissued for
// the next k-block. Groups complete in order, so wait 1 always means "the older half is done".
template <class K, class Params>
__device__ __forceinline__ void kloop_halves(const MathKBlock<K, Params>& mk,
                                             PipelineState<K::kStages>& st, int32_t n,
                                             float (&acc)[K::kAccRegs]) {
  constexpr int kHalfRegs = K::kAccRegs / 2;
  static_assert(kHalfRegs % 4 == 0, "each half: whole 8-column chunks");
  if (n <= 0) return;
  float t0[kHalfRegs], t1[kHalfRegs];
  KBlockScales sc = mk.wait_stage(st.stage, st.phase, 0);
  mk.template issue_half<0>(st.stage, t0);
  mk.template issue_half<1>(st.stage, t1);
  for (int32_t kb = 0; kb + 1 < n; ++kb) {  // the last k-block after the loop: no branches
    wgmma_wait<1>();  // half 0 of k-block kb
    sc = mk.with_a_scales(sc);
    mk.template promote_half<0>(acc, t0, sc);
    PipelineState<K::kStages> nx = st;
    nx.advance();
    const KBlockScales sc_next = mk.wait_stage(nx.stage, nx.phase, kb + 1);
    mk.template issue_half<0>(nx.stage, t0);
    wgmma_wait<1>();  // half 1 of k-block kb
    mk.release(st.stage);
    mk.template promote_half<1>(acc, t1, sc);
    st = nx;
    mk.template issue_half<1>(st.stage, t1);
    sc = sc_next;
  }
  wgmma_wait<1>();
  sc = mk.with_a_scales(sc);
  mk.template promote_half<0>(acc, t0, sc);
  wgmma_wait<0>();
  mk.release(st.stage);
  mk.template promote_half<1>(acc, t1, sc);
  st.advance();
}

// One work unit's k-loop for math warpgroup `wg` (rows wg * 64 .. + 63 of the tile): acc = the
// fp32 sums of the tile over k-blocks kb_begin .. kb_end - 1, promoted every k-block.
template <class K, class Params>
__device__ __forceinline__ void mainloop_tile(const Params& p, const typename K::Smem& sm,
                                              PipelineState<K::kStages>& st, const TileCoord& c,
                                              int32_t kb_begin, int32_t kb_end, int wg, int row,
                                              int lane, float (&acc)[K::kAccRegs]) {
  constexpr int kRegs = K::kAccRegs;
  // The loops below count the unit's n k-blocks from 0 (mk's indices are relative to kb_begin).
  const MathKBlock<K, Params> mk = tile_math<K>(p, sm, c, kb_begin, wg, row, lane);
  const int32_t n = kb_end - kb_begin;
#pragma unroll
  for (int i = 0; i < kRegs; ++i) acc[i] = 0.0f;

  if constexpr (K::Promotion::kTemporaries == 0) {
    // k-block kb + 1 is issued before k-block kb's stage is released (wait 1).
    if (n <= 0) return;  // acc stays 0 (the producer loads nothing)
    PipelineState<K::kStages> nx = st;
    mk.issue(nx.stage, nx.phase, 0, acc, false);
    nx.advance();
    for (int32_t kb = 1; kb < n; ++kb) {
      mk.issue(nx.stage, nx.phase, kb, acc, true);
      nx.advance();
      wgmma_wait<1>();
      mk.release(st.stage);
      st.advance();
    }
    wgmma_wait<0>();
    mk.release(st.stage);
    st.advance();
  } else if constexpr (kIsHalves<typename K::Promotion>) {
    kloop_halves<K>(mk, st, n, acc);
  } else if constexpr (K::Promotion::kTemporaries == 1) {
    kloop_serial<K>(mk, st, 0, n, acc);
  } else {
    // Two temporaries in turn: t0 holds even k-blocks, t1 odd ones; k-block kb + 1 is issued
    // before k-block kb is promoted. `nx` is the stage of the next k-block to issue. The loop is
    // written out for both halves so each temporary stays a fixed set of registers (an indexed
    // pair of arrays would go to local memory).
    float t0[kRegs], t1[kRegs];
    PipelineState<K::kStages> nx = st;
    if (n <= 0) return;
    KBlockScales sc0 = mk.issue(nx.stage, nx.phase, 0, t0), sc1{};
    nx.advance();
    for (int32_t kb = 0; kb < n; kb += 2) {
      if (kb + 1 < n) {
        sc1 = mk.issue(nx.stage, nx.phase, kb + 1, t1);
        nx.advance();
        wgmma_wait<1>();
      } else {
        wgmma_wait<0>();
      }
      sc0 = mk.with_a_scales(sc0);
      mk.release(st.stage);
      st.advance();
      mk.promote(acc, t0, sc0);
      if (kb + 1 >= n) break;
      if (kb + 2 < n) {
        sc0 = mk.issue(nx.stage, nx.phase, kb + 2, t0);
        nx.advance();
        wgmma_wait<1>();
      } else {
        wgmma_wait<0>();
      }
      sc1 = mk.with_a_scales(sc1);
      mk.release(st.stage);
      st.advance();
      mk.promote(acc, t1, sc1);
    }
  }
}

// TilesOverlapEpilogue: every tile of this CTA, with `epilogue(c, acc)` (the finished tile's) run
// between the issue of the next tile's first k-block and the wait for it. Whole tiles only (the
// launcher runs no split tail with it).
template <class K, class Params, class Epilogue>
__device__ __forceinline__ void tiles_overlapped(const Params& p, const typename K::Smem& sm,
                                                 const typename K::Scheduler& sched, int wg,
                                                 int row, int lane, Epilogue&& epilogue) {
  static_assert(K::Promotion::kTemporaries == 1 && !kIsHalves<typename K::Promotion>,
                "the overlap needs PromoteSerial");
  constexpr int kRegs = K::kAccRegs;
  PipelineState<K::kStages> st;
  float acc[kRegs];
  int32_t t = sched.first;
  if (t >= sched.tiles) return;
  TileCoord c = sched.coord(t);
  mainloop_tile<K>(p, sm, st, c, 0, p.k_blocks, wg, row, lane, acc);
  for (t += sched.stride; t < sched.tiles; t += sched.stride) {
    const TileCoord done = c;
    c = sched.coord(t);
    const MathKBlock<K, Params> mk = tile_math<K>(p, sm, c, 0, wg, row, lane);
    float tmp[kRegs];
    const KBlockScales sc0 = mk.issue(st.stage, st.phase, 0, tmp);
    epilogue(done, acc);  // the tensor cores run the wgmmas just issued meanwhile
    wgmma_wait<0>();
    const KBlockScales sc = mk.with_a_scales(sc0);
    mk.release(st.stage);
#pragma unroll
    for (int i = 0; i < kRegs; ++i) acc[i] = 0.0f;
    mk.promote(acc, tmp, sc);
    st.advance();
    kloop_serial<K>(mk, st, 1, p.k_blocks, acc);
  }
  epilogue(c, acc);
}

}  // namespace deepwell::matmul::sm90::fp8
