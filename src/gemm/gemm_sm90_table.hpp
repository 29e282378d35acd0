// THE table of the sm_90a GEMM kernels: every compiled configuration, and how a problem picks one.
//
// Each row of DW_SM90_GEMM_KERNELS is one file src/gemm/gemm_inst_<name>.cu (listed in
// src/kernel_instances.cmake), which instantiates Sm90Gemm<...> with exactly the row's parameters
// (a static_assert in DW_SM90_GEMM_INSTANCE checks it). Everything else is a run-time parameter of
// these few kernels: alpha, beta, the source, bias vectors, the activation, the fp8 scales, the
// work decomposition (data-parallel / split-K / stream-K), rasterization and swizzle.
//
// Layouts are named by which dimension has unit stride, in the kernels' orientation (D row-major):
// "kk" = A K-major and B K-major (x @ w.T with w (N, K) row-major: torch's Linear), "kn" = A K-major
// and B N-major (x @ w with w (K, N) row-major). The dispatcher (dispatch_cuda.cpp) reaches these
// from any layout by computing D^T = B^T A^T when D is column-major and, failing that, by a
// transposed copy of an operand in the workspace. docs/perf-notes.md ("GEMM") says what each row is
// for and what it is expected to reach.
#pragma once

#include <cstdint>
#include <string_view>

#include "gemm/sm90_launch.hpp"

namespace deepwell::matmul::sm90 {

enum class Operands : int32_t { kBF16, kF16, kE4M3, kE4M3xE5M2 };  // A x B element types
enum class Scaling : int32_t {
  kNone,       // 16-bit operands
  kTensorRow,  // fp8; tensor and row/column scales in the epilogue, two-level accumulation
  kBlock,      // fp8; 1x128 (A) x 128x128 (B) scales promoted in the main loop
};
enum class Schedule : int32_t {
  kCooperative,  // CUTLASS: two consumer warpgroups share one tile
  kPingpong,     // CUTLASS: each consumer warpgroup owns a tile
  kFp8Promoted,  // deepwell's fp8 main loop (fp8_sm90_kernel.cuh): 2 math warpgroups promoting
                 // every 128 of K without lockstep, persistent data-parallel grid (no split-K)
  kSkinny,       // deepwell's fp8 kernel for few rows of A (skinny_sm90.cuh): weight rows on
                 // mma.sync's M side, K split over the warps of a CTA; tile M = rows of A per CTA
};

struct KernelSpec {
  std::string_view name;
  Operands operands;
  DType out;
  bool a_k_major, b_k_major;
  Scaling scaling;
  int tile_m, tile_n, tile_k;
  int cluster_m, cluster_n;
  Schedule schedule;
  bool stream_k;  // built with CUTLASS's stream-K tile scheduler: any Decomposition at run time
  LaunchFn launch;
  WorkspaceFn workspace;
};

// fp8 operands (e4m3 x e4m3 or e4m3 x e5m2), as opposed to 16-bit ones.
constexpr bool fp8_operands(const KernelSpec& k) {
  return k.operands == Operands::kE4M3 || k.operands == Operands::kE4M3xE5M2;
}

// clang-format off
#define DW_SM90_GEMM_KERNELS(X)                                                                        \
  /* name                  operands     out    A K-major B K-major scaling    tile M,N,K     cluster sched        stream-K */ \
  X(bf16_kk_bf16_128x256,  kBF16,       kBF16, true,     true,     kNone,     128, 256,  64, 2, 1, kCooperative, true)  \
  X(bf16_kk_bf16_128x128,  kBF16,       kBF16, true,     true,     kNone,     128, 128,  64, 1, 2, kCooperative, true)  \
  X(bf16_kk_bf16_128x64,   kBF16,       kBF16, true,     true,     kNone,     128,  64,  64, 1, 1, kCooperative, true)  \
  X(bf16_kk_bf16_pp_128x128, kBF16,     kBF16, true,     true,     kNone,     128, 128,  64, 2, 1, kPingpong,    false) \
  X(bf16_kk_bf16_pp_64x64, kBF16,       kBF16, true,     true,     kNone,      64,  64,  64, 2, 1, kPingpong,    false) \
  X(bf16_kk_bf16_pp_64x96, kBF16,       kBF16, true,     true,     kNone,      64,  96,  64, 2, 1, kPingpong,    false) \
  X(bf16_kk_bf16_pp_64x160, kBF16,      kBF16, true,     true,     kNone,      64, 160,  64, 2, 1, kPingpong,    false) \
  X(bf16_kk_bf16_128x64_n4, kBF16,      kBF16, true,     true,     kNone,     128,  64,  64, 1, 4, kCooperative, false) \
  X(bf16_kk_bf16_pp_64x64_n4, kBF16,    kBF16, true,     true,     kNone,      64,  64,  64, 1, 4, kPingpong,    false) \
  X(bf16_kn_bf16_128x256,  kBF16,       kBF16, true,     false,    kNone,     128, 256,  64, 2, 1, kCooperative, true)  \
  X(bf16_kn_bf16_128x128,  kBF16,       kBF16, true,     false,    kNone,     128, 128,  64, 1, 2, kCooperative, true)  \
  X(bf16_kn_bf16_128x64,   kBF16,       kBF16, true,     false,    kNone,     128,  64,  64, 1, 1, kCooperative, true)  \
  X(bf16_kn_bf16_pp_128x128, kBF16,     kBF16, true,     false,    kNone,     128, 128,  64, 2, 1, kPingpong,    false) \
  X(bf16_kn_bf16_pp_64x64, kBF16,       kBF16, true,     false,    kNone,      64,  64,  64, 2, 1, kPingpong,    false) \
  X(f16_kk_f16_128x256,    kF16,        kF16,  true,     true,     kNone,     128, 256,  64, 2, 1, kCooperative, true)  \
  X(f16_kk_f16_128x128,    kF16,        kF16,  true,     true,     kNone,     128, 128,  64, 1, 2, kCooperative, true)  \
  X(f16_kk_f16_128x64,     kF16,        kF16,  true,     true,     kNone,     128,  64,  64, 1, 1, kCooperative, true)  \
  X(f16_kk_f16_pp_128x128, kF16,       kF16,  true,     true,     kNone,     128, 128,  64, 2, 1, kPingpong,    false) \
  X(f16_kk_f16_pp_64x64,   kF16,        kF16,  true,     true,     kNone,      64,  64,  64, 2, 1, kPingpong,    false) \
  X(f16_kn_f16_128x256,    kF16,        kF16,  true,     false,    kNone,     128, 256,  64, 2, 1, kCooperative, true)  \
  X(f16_kn_f16_128x128,    kF16,        kF16,  true,     false,    kNone,     128, 128,  64, 1, 2, kCooperative, true)  \
  X(f16_kn_f16_128x64,     kF16,        kF16,  true,     false,    kNone,     128,  64,  64, 1, 1, kCooperative, true)  \
  X(f16_kn_f16_pp_128x128, kF16,       kF16,  true,     false,    kNone,     128, 128,  64, 2, 1, kPingpong,    false) \
  X(f16_kn_f16_pp_64x64,   kF16,        kF16,  true,     false,    kNone,      64,  64,  64, 2, 1, kPingpong,    false) \
  X(bf16_kk_f32_128x128,   kBF16,       kF32,  true,     true,     kNone,     128, 128,  64, 1, 2, kCooperative, true)  \
  X(f16_kk_f32_128x128,    kF16,        kF32,  true,     true,     kNone,     128, 128,  64, 1, 2, kCooperative, true)  \
  X(bf16_kk_f16_128x128,   kBF16,       kF16,  true,     true,     kNone,     128, 128,  64, 1, 2, kCooperative, true)  \
  X(e4m3_kk_bf16_128x128,  kE4M3,       kBF16, true,     true,     kTensorRow,128, 128, 128, 1, 2, kCooperative, true)  \
  X(e4m3e5m2_kk_bf16_128x128, kE4M3xE5M2, kBF16, true,   true,     kTensorRow,128, 128, 128, 1, 2, kCooperative, true)  \
  X(e4m3_kk_bf16_pp_64x64, kE4M3,       kBF16, true,     true,     kTensorRow, 64,  64, 128, 2, 1, kPingpong,    false) \
  X(e4m3_kk_bf16_pp_64x64_n4, kE4M3,    kBF16, true,     true,     kTensorRow, 64,  64, 128, 1, 4, kPingpong,    false) \
  X(e4m3_kk_bf16_128x64_n4, kE4M3,      kBF16, true,     true,     kTensorRow,128,  64, 128, 1, 4, kCooperative, false) \
  X(e4m3_kk_bf16_block_128x128, kE4M3,  kBF16, true,     true,     kBlock,    128, 128, 128, 1, 2, kCooperative, true)  \
  X(e4m3_kk_f32_128x128,   kE4M3,       kF32,  true,     true,     kTensorRow,128, 128, 128, 1, 2, kCooperative, true)  \
  X(e4m3_kk_f32_block_128x128, kE4M3,   kF32,  true,     true,     kBlock,    128, 128, 128, 1, 2, kCooperative, true)  \
  X(e4m3e5m2_kk_f32_128x128, kE4M3xE5M2, kF32, true,     true,     kTensorRow,128, 128, 128, 1, 2, kCooperative, true)  \
  X(bf16_kk_bf16_ws_128x256, kBF16,     kBF16, true,     true,     kNone,     128, 256,  64, 1, 1, kFp8Promoted, false)  \
  X(bf16_kk_bf16_ws_128x192, kBF16,     kBF16, true,     true,     kNone,     128, 192,  64, 1, 1, kFp8Promoted, false)  \
  X(f16_kk_f16_ws_128x256, kF16,        kF16,  true,     true,     kNone,     128, 256,  64, 1, 1, kFp8Promoted, false)  \
  X(e4m3_kk_bf16_ws_128x192, kE4M3,     kBF16, true,     true,     kTensorRow,128, 192, 128, 1, 1, kFp8Promoted, false)  \
  X(e4m3_kk_f16_ws_128x192, kE4M3,      kF16,  true,     true,     kTensorRow,128, 192, 128, 1, 1, kFp8Promoted, false)  \
  X(e4m3e5m2_kk_bf16_ws_128x192, kE4M3xE5M2, kBF16, true, true,   kTensorRow,128, 192, 128, 1, 1, kFp8Promoted, false)  \
  X(e4m3e5m2_kk_f16_ws_128x192, kE4M3xE5M2, kF16, true,  true,     kTensorRow,128, 192, 128, 1, 1, kFp8Promoted, false)  \
  X(e4m3_kk_bf16_block_ws_128x192, kE4M3, kBF16, true,   true,     kBlock,    128, 192, 128, 1, 1, kFp8Promoted, false)  \
  X(e4m3_kk_bf16_block_ws_128x128, kE4M3, kBF16, true,   true,     kBlock,    128, 128, 128, 1, 1, kFp8Promoted, false)  \
  X(e4m3_kk_f16_block_ws_128x192, kE4M3, kF16, true,     true,     kBlock,    128, 192, 128, 1, 1, kFp8Promoted, false)  \
  X(e4m3_kk_bf16_ws_128x160, kE4M3,     kBF16, true,     true,     kTensorRow,128, 160, 128, 1, 1, kFp8Promoted, false)  \
  X(e4m3e5m2_kk_bf16_ws_128x160, kE4M3xE5M2, kBF16, true, true,   kTensorRow,128, 160, 128, 1, 1, kFp8Promoted, false) \
  X(e4m3_kk_bf16_skinny,   kE4M3,       kBF16, true,     true,     kTensorRow, 16,  32, 128, 1, 1, kSkinny,      false) \
  X(e4m3_kk_f16_skinny,    kE4M3,       kF16,  true,     true,     kTensorRow, 16,  32, 128, 1, 1, kSkinny,      false) \
  X(e4m3_kk_f32_skinny,    kE4M3,       kF32,  true,     true,     kTensorRow, 16,  32, 128, 1, 1, kSkinny,      false) \
  X(e4m3e5m2_kk_bf16_skinny, kE4M3xE5M2, kBF16, true,    true,     kTensorRow, 16,  32, 128, 1, 1, kSkinny,      false) \
  X(e4m3e5m2_kk_f16_skinny, kE4M3xE5M2, kF16,  true,     true,     kTensorRow, 16,  32, 128, 1, 1, kSkinny,      false) \
  X(e4m3e5m2_kk_f32_skinny, kE4M3xE5M2, kF32,  true,     true,     kTensorRow, 16,  32, 128, 1, 1, kSkinny,      false) \
  X(e4m3_kk_bf16_block_skinny, kE4M3,   kBF16, true,     true,     kBlock,     16,  32, 128, 1, 1, kSkinny,      false) \
  X(e4m3_kk_f16_block_skinny, kE4M3,    kF16,  true,     true,     kBlock,     16,  32, 128, 1, 1, kSkinny,      false) \
  X(e4m3_kk_f32_block_skinny, kE4M3,    kF32,  true,     true,     kBlock,     16,  32, 128, 1, 1, kSkinny,      false)
// clang-format on

#define DW_SM90_DECLARE_KERNEL(name, ...) \
  Status name##_launch(const Launch& l);  \
  size_t name##_workspace(const Launch& l);
DW_SM90_GEMM_KERNELS(DW_SM90_DECLARE_KERNEL)
#undef DW_SM90_DECLARE_KERNEL

#define DW_SM90_KERNEL_ROW(name, ops, out, ak, bk, sc, tm, tn, tk, cm, cn, sched, sk)              \
  KernelSpec{#name, Operands::ops, DType::out, ak, bk, Scaling::sc, tm, tn, tk, cm, cn,             \
             Schedule::sched, sk, &name##_launch, &name##_workspace},
inline constexpr KernelSpec kKernels[] = {DW_SM90_GEMM_KERNELS(DW_SM90_KERNEL_ROW)};
#undef DW_SM90_KERNEL_ROW

constexpr const KernelSpec* find_kernel(std::string_view name) {
  for (const KernelSpec& k : kKernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

// ----------------------------------------------------------------------------- the shape rules
//
// Within a problem's group (operands, out, layouts, scaling) the kernel is chosen by shape, from
// the measured sweep in docs/perf-notes.md ("GEMM", H200):
//
//   fp8 with M <= 16 (one m-block) -> the skinny kernel (Schedule::kSkinny), data-parallel
//   M <= 64 (one 64-row tile) and a ping-pong 64x64 kernel in 1x4 clusters (fp8 -> bf16, bf16
//       x @ w.t()): that one where its clusters (sms / 4 - 3 at once) fit one wave or fill their
//       last one at least half, or, 16-bit, leave <= 10 % of all cluster slots idle (past K = 8192
//       only with CTAs on at least a quarter of the SMs; 16-bit not with few CTAs at K >= 8192)
//   M <= 256 and a ping-pong 64xN kernel exists (2x1 clusters; of several, the one with the
//       fewest waves x N), its CTAs fill the SMs in one wave (or two, the second >= 75 % full, at
//       K <= 8192) or M <= 64, and not (at most half the SMs busy and K >= 8192); fp8 (e4m3 x
//       e4m3 tensor / row: 64x64): one wave only, past K = 8192 only above half a wave
//       -> that ping-pong 64xN kernel, data-parallel
//   65 <= M <= 128 and a cooperative 128x64 kernel in 1x4 clusters: fp8 where its clusters fit
//       one wave (past K = 8192 with CTAs on a quarter of the SMs), 16-bit from 4 waves of them
//   M <= 128, N <= 6144 and a cooperative 128x64 kernel exists
//       -> 128x64 (four times the CTAs of 128x256); split-K 2 when K >= 8192 and 2 T <= S, else
//          data-parallel
//   16-bit x @ w.t() (the own 128x256 kernel), 2048 <= K <= 8192, its tiles one round >= 5/6
//       full, or (M > 256) two rounds with the second >= 5/6 full; else the same for the own
//       128x192 (bf16) -> that own tile, data-parallel
//   M <= 256 (one or two 128-row tiles) and a cooperative 128x128 kernel smaller than the largest
//       -> 128x128 (twice the CTAs of 128x256 over a weight-bandwidth-bound problem);
//          split-K over min(S / T, K tiles / 4, 3) when that is >= 2, else data-parallel
//   otherwise a ping-pong kernel exists, and T(largest tile) < 4 S with K <= 8192, or K <= 4096
//       with M N batch <= 2^26 (2^27 where M <= 4096 or N <= 8192), or K <= 8192 with M <= 4096
//       and N <= 16384
//       -> ping-pong 128x128, data-parallel, tiles along N in strips of 4 tile rows (where that
//          pads the tile grid by <= 3 %: CUTLASS runs padding tiles, scheduled_tiles below)
//   otherwise the largest tile, with the decomposition below; swizzle 2 when N > 8192, M >= 4096
//       (and it pads the grid by <= 3 %)
//   fp8 groups with deepwell's own main loop (Schedule::kFp8Promoted; e4m3 x e4m3 and e4m3 x e5m2
//       tensor / row scaling): that kernel wherever the CUTLASS kernel's plan is data-parallel (it has no
//       split-K / stream-K; measured 0.88-0.89x torch._scaled_mm vs CUTLASS's 0.72-0.76x, H200);
//       block scaling: the same, and only where its grid's SM rounds x tile area is at most
//       15 % above the CUTLASS block kernel's; past that, where CUTLASS would run data-parallel,
//       the own 128x128 block tile (bf16 out);
//       the group's narrower own tile (e4m3 x e4m3 / e5m2 -> bf16: 128x160) where it needs >= 8 % fewer
//       wave-columns (waves x tile width) than the first row's;
//       where CUTLASS's plan is split-K: the narrower own tile (block: 128x128), its tiles split
//       along K (split tail) where K >= 12288 (16-bit groups too) or K > 4096 with >= 3 splits,
//       else data-parallel
//   own kernels' data-parallel grids split a last round at most a third full (split tail) from
//       M N K = 2^35 or K = 12288 (with_split_tail below)
//
// Decomposition of the largest tile (T output tiles over all batches, S SMs):
//
//   T >= 2 S, or the last wave >= 60 % full     any          data-parallel
//   S <= T < 2 S, last wave < 60 % full         >= 4         stream-K (balances the partial wave)
//   (16-bit 128x256 tiles: stream-K also for 2 S <= T < 64 S, last wave < 60 % full, K tiles >= 4)
//   T < S                                       >= 8         split-K, splits = min(S / T, K tiles / 4, 16)
//                                                            (data-parallel when that gives < 2 splits)
//   anything else                                            data-parallel
//
// Split-K and stream-K need workspace (partial tiles); without enough, data-parallel runs instead.
// A tuning cache (gemm_tuning.cpp; DEEPWELL_GEMM_TUNING=<file>) can override the choice per shape.
struct Plan {
  const KernelSpec* kernel = nullptr;
  Decomposition decomposition = Decomposition::kDataParallel;
  int32_t splits = 1;
  int32_t raster = 0;
  int32_t swizzle = 1;
};

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Tiles CUTLASS's persistent scheduler runs for kernel `k` with swizzle `swizzle`: it rounds the
// tile grid up to whole swizzle strips in both dimensions (times the cluster shape) and runs the
// padding tiles' main loops on zero-filled operands (cutlass/gemm/kernel/
// tile_scheduler_params.h, get_log_swizzle_size / initialize). Ping-pong 128x128 (2x1 clusters)
// with swizzle 4 rounds M up to 8 tile rows and N to 4 tile columns: 1024x4096x4096 ran 0.96x
// torch.matmul, the same with swizzle 8 (M rounded to 16 tile rows, half the tiles empty) 0.38x.
constexpr int64_t scheduled_tiles(const KernelSpec& k, int64_t m, int64_t n, int64_t batch,
                                  int swizzle) {
  const int64_t cm = k.cluster_m, cn = k.cluster_n;
  const int64_t tm = ceil_div(ceil_div(m, k.tile_m), cm) * cm;
  const int64_t tn = ceil_div(ceil_div(n, k.tile_n), cn) * cn;
  const int64_t least = tm < tn ? tm : tn;
  const int64_t strip = swizzle >= 8 && least >= 6   ? 8
                        : swizzle >= 4 && least >= 3 ? 4
                        : swizzle >= 2 && least >= 2 ? 2
                                                     : 1;
  return ceil_div(tm, strip * cm) * strip * cm * ceil_div(tn, strip * cn) * strip * cn * batch;
}

// Whether swizzle `swizzle` adds at most 3 % of padding tiles to kernel `k`'s grid.
constexpr bool swizzle_pads_little(const KernelSpec& k, int64_t m, int64_t n, int64_t batch,
                                   int swizzle) {
  return 100 * scheduled_tiles(k, m, n, batch, swizzle) <=
         103 * scheduled_tiles(k, m, n, batch, 1);
}

// The decomposition for kernel `k`; split-K uses at most `max_splits`.
constexpr Plan plan_for(const KernelSpec& k, int64_t m, int64_t n, int64_t kdim, int64_t batch,
                        int sm_count, int64_t max_splits = 16) {
  Plan p;
  p.kernel = &k;
  const int64_t tiles = ceil_div(m, k.tile_m) * ceil_div(n, k.tile_n) * batch;
  const int64_t k_tiles = ceil_div(kdim, k.tile_k);
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  if (!k.stream_k) return p;
  if (tiles >= sms) {
    const int64_t last = tiles % sms;
    const bool ragged = last != 0 && last * 10 < sms * 6;
    if (tiles < 2 * sms && ragged && k_tiles >= 4) p.decomposition = Decomposition::kStreamK;
    return p;
  }
  if (k_tiles >= 8) {
    int64_t splits = sms / tiles;
    if (splits > k_tiles / 4) splits = k_tiles / 4;
    if (splits > max_splits) splits = max_splits;
    if (splits >= 2) {
      p.decomposition = Decomposition::kSplitK;
      p.splits = static_cast<int32_t>(splits);
    }
  }
  return p;
}

// deepwell's own fp8-loop kernels (data-parallel plans, no cluster): where the grid's last round
// of tiles is at most a third full, each of its tiles is split along K over up to sms / tail
// CTAs (Decomposition::kSplitTail; at least 4 k-blocks per split, at most 16 splits), so that
// round takes about 1 / splits of a tile's time (plus the partial sums' trip through L2) instead
// of a whole one. H100, session 40, one process, split tail / data-parallel: block 128x192
// 4096x7168x16384 (9 rounds + 28 tiles, 4 splits) 0.955 / 0.901x torch._scaled_mm,
// 4096x7168x4096 0.922 / 0.898; bf16 128x256 4096x57344x8192 (+ 40, 3 splits) 1.013 / 0.997x
// torch.matmul, 2048x57344x8192 (+ 20, 6) 1.004 / 0.980. Two splits measured even (block
// 3072x7168x16384, + 60: 1.031 / 1.028), so a fuller last round stays whole. Only from
// M N K = 2^35 (69 GFLOP, ~60 us) or K = 12288: the split costs the caller a workspace and a
// memset of its counters, which calls bound by host time pay in full (fp16 out, Python, events
// around one call: 1024x4096x4096 64.7 -> 76.4 us, 1x4096x4096 42.3 -> 55.9; block
// 256x14336x4096 0.830 -> 0.696x torch._scaled_mm), while 128x57344x8192 (2^35.9) gained (block
// 0.928 -> 1.007), and so do few tiles with a long K, which the tail gives more CTAs to stream
// the weight with (fp16 out, CUDA-graph time, data-parallel -> split: 128x4096x14336 tensor
// 55.1 -> 39.8 us, block 58.8 -> 39.6; 128x8192x28672 111.5 -> 95.8, 116.7 -> 95.2; eager
// 128x4096x14336 82.5 -> 79.0 us, where 16x8192x8192's 3 splits gained 1-3 % in the graph and
// lost 13 us eager).
// Splits of each of `tail` tiles of kernel `k` over `sms` CTAs: one unit per CTA, at least 4
// k-blocks per unit, at most 16 units per tile (< 2: no split).
constexpr int64_t tail_splits(const KernelSpec& k, int64_t tail, int64_t kdim, int64_t sms) {
  int64_t splits = sms / tail;
  if (splits > ceil_div(kdim, k.tile_k) / 4) splits = ceil_div(kdim, k.tile_k) / 4;
  return splits > 16 ? 16 : splits;
}

constexpr Plan with_split_tail(Plan p, int64_t m, int64_t n, int64_t kdim, int64_t batch,
                               int sm_count) {
  const KernelSpec& k = *p.kernel;
  if (k.schedule != Schedule::kFp8Promoted || k.cluster_m != 1 ||
      p.decomposition != Decomposition::kDataParallel) {
    return p;
  }
  if (m * n * kdim * batch < (int64_t{1} << 35) && kdim < 12288) return p;
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  const int64_t tiles = ceil_div(m, k.tile_m) * ceil_div(n, k.tile_n) * batch;
  const int64_t tail = tiles % sms;
  if (tail == 0 || 3 * tail > sms) return p;
  const int64_t splits = tail_splits(k, tail, kdim, sms);
  if (splits >= 2) {
    p.decomposition = Decomposition::kSplitTail;
    p.splits = static_cast<int32_t>(splits);
  }
  return p;
}

// The kernel and decomposition among a group's kernels `cands[0..count)` (the rules above).
constexpr Plan choose_plan(const KernelSpec* const* cands, size_t count, int64_t m, int64_t n,
                           int64_t kdim, int64_t batch, int sm_count) {
  const KernelSpec* own = nullptr;  // deepwell's own main loop (data-parallel only)
  const KernelSpec* own_narrow = nullptr;  // a narrower tile of it, for ragged last waves
  const KernelSpec* own_block_small = nullptr;  // block scaling: its 128x128 tile
  const KernelSpec* largest = nullptr;
  const KernelSpec* skinny = nullptr;  // fp8 for few rows of A (mma.sync, swap-AB)
  for (size_t i = 0; i < count; ++i) {
    if (cands[i]->schedule == Schedule::kSkinny) {
      if (skinny == nullptr) skinny = cands[i];
    } else if (cands[i]->schedule == Schedule::kFp8Promoted) {
      if (own == nullptr) {
        own = cands[i];  // the first of the table's rows
      } else if (own->scaling == Scaling::kBlock) {
        if (own_block_small == nullptr && cands[i]->tile_n < own->tile_n) {
          own_block_small = cands[i];
        }
      } else if (own_narrow == nullptr && cands[i]->tile_n < own->tile_n) {
        own_narrow = cands[i];
      }
    } else if (largest == nullptr) {
      largest = cands[i];
    }
  }
  // At most one m-block of rows of A (M <= 16): the skinny kernel, which streams the weight
  // through the SMs with K split over its warps instead of running 64- or 128-row MMAs that are
  // mostly padding, one k-block at a time. H100, session 42, CUDA-graph us per call, weights from
  // DRAM, e4m3 -> bf16 tensor scaling, the plan before (64x64 ping-pong or own 128x160) ->
  // skinny: 1x4096x4096 15.0 -> 9.6, 1x6144x4096 19.7 -> 12.0, 1x4096x14336 38.3 -> 28.5,
  // 1x1024x8192 18.0 -> 9.1, 1x28672x4096 56.1 -> 52.4, 16x4096x4096 12.7 -> 10.4,
  // 16x4096x14336 33.7 -> 27.5; block: 8x4096x14336 48.8 -> 29.6 (own 128x128 split 4: 34.7).
  // The one loss measured: 16x57344x8192 (470 MB of weight) 186.6 on the own 128x160, 196.8.
  // At M = 32 it reads the weight twice and loses everywhere (32x4096x4096 19.8 against 13.1).
  // (Its grid runs batches along z: at most 65535.)
  if (skinny != nullptr && m <= skinny->tile_m && batch <= 65535) {
    return plan_for(*skinny, m, n, kdim, batch, sm_count);
  }
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  // The own kernel's tile: the narrower one only where it needs at least 8 % fewer wave-columns
  // (waves x tile width, the time of the whole grid for a fixed tile height and K), as ragged
  // last waves make it: 4096x7168 (192 columns: 1216 tiles, 10 waves x 192; 160 columns: 1440
  // tiles, 11 x 160, -8.3 %) measured 0.92 -> 0.95x torch._scaled_mm (H100). Its tiles are 5-15 %
  // slower per flop (8192^3: 0.80x vs 0.95x), so a near tie keeps the wide tile.
  auto own_tile = [&]() -> const KernelSpec* {
    if (own_narrow == nullptr || !fp8_operands(*own)) return own;  // 16-bit: the rule below
    auto wave_columns = [&](const KernelSpec& k) {
      return ceil_div(ceil_div(m, k.tile_m) * ceil_div(n, k.tile_n) * batch, sms) * k.tile_n;
    };
    return 100 * wave_columns(*own_narrow) <= 92 * wave_columns(*own) ? own_narrow : own;
  };
  // The own kernel's plan: its tile's grid, with a split tail where the last round is ragged.
  auto own_plan = [&](const KernelSpec& k) {
    return with_split_tail(plan_for(k, m, n, kdim, batch, sm_count), m, n, kdim, batch, sm_count);
  };
  if (largest == nullptr) return own_plan(*own_tile());
  const KernelSpec* small = nullptr;     // cooperative 128x128 with the stream-K scheduler
  const KernelSpec* pingpong = nullptr;  // ping-pong 128x128
  const KernelSpec* narrow = nullptr;    // cooperative 128x64 with the stream-K scheduler
  const KernelSpec* tiny = nullptr;      // ping-pong 64xN in 2x1 clusters (N = 64, 96, 160)
  const KernelSpec* tiny_n4 = nullptr;    // ping-pong 64x64 in 1x4 clusters (A multicast)
  const KernelSpec* narrow_n4 = nullptr;  // cooperative 128x64 in 1x4 clusters (A multicast)
  // CTAs of a 64-row tile in 2x1 clusters (M tiles padded to pairs), and its wave-columns
  // (waves x tile width: the grid's time for a fixed tile height and K)
  auto tiny_ctas = [&](const KernelSpec& k) {
    return ceil_div(ceil_div(m, 64), 2) * 2 * ceil_div(n, k.tile_n) * batch;
  };
  auto tiny_wave_columns = [&](const KernelSpec& k) {
    return ceil_div(tiny_ctas(k), sms) * k.tile_n;
  };
  for (size_t i = 0; i < count; ++i) {
    const KernelSpec* k = cands[i];
    if (k->schedule == Schedule::kFp8Promoted || k->schedule == Schedule::kSkinny) continue;
    if (k->cluster_n == 4) {  // the 1x4-cluster rows: only the rules below pick them
      if (k->tile_m == 64 && k->schedule == Schedule::kPingpong) tiny_n4 = k;
      if (k->tile_m == 128 && k->tile_n == 64 && k->schedule == Schedule::kCooperative) {
        narrow_n4 = k;
      }
      continue;
    }
    if (int64_t{k->tile_m} * k->tile_n > int64_t{largest->tile_m} * largest->tile_n ||
        (int64_t{k->tile_m} * k->tile_n == int64_t{largest->tile_m} * largest->tile_n &&
         k->schedule == Schedule::kCooperative && largest->schedule != Schedule::kCooperative)) {
      largest = k;
    }
    if (k->tile_m == 128 && k->tile_n == 128 && k->stream_k && k->schedule == Schedule::kCooperative)
      small = k;
    if (k->tile_m == 128 && k->tile_n == 128 && k->schedule == Schedule::kPingpong) pingpong = k;
    if (k->tile_m == 128 && k->tile_n == 64 && k->stream_k && k->schedule == Schedule::kCooperative)
      narrow = k;
    // the 64-row tile with the fewest wave-columns (a tie keeps the narrower tile): 128x6144
    // takes 64x96 (128 CTAs), 128x10240 64x160 (128 CTAs)
    if (k->tile_m == 64 && k->schedule == Schedule::kPingpong &&
        (tiny == nullptr || tiny_wave_columns(*k) < tiny_wave_columns(*tiny) ||
         (tiny_wave_columns(*k) == tiny_wave_columns(*tiny) && k->tile_n < tiny->tile_n))) {
      tiny = k;
    }
  }
  // Clusters of 4 CTAs need 4 free SMs of one GPC: the H100's 132 SMs hold 30 such clusters at
  // once (measured: 120 CTAs run as one wave, 128 as two), sms / 4 - 3 in general.
  const int64_t n4_at_once = sms / 4 - 3 > 0 ? sms / 4 - 3 : 1;
  const int64_t n4_ctas = ceil_div(n, 64) * batch;  // one row tile of 64 or 128 (M <= 128)
  const int64_t n4_clusters = ceil_div(ceil_div(n, 64), 4) * batch;
  // whether the clusters fit one wave, fill their last one at least half or (16-bit operands)
  // leave at most a tenth of all their waves' slots idle, and, past K = 8192, put CTAs on at
  // least a quarter of the SMs. The tenth: bf16 x @ w.t(), H100, session 44, graph us, the 2x1
  // 64x64 tile (its best 2x1 tile) -> 1x4: 64x57344x8192 (224 clusters, 8 waves) 425 (pp 64x160
  // 346) -> 330 (torch.matmul 339), 64x49152x4096 (192; 64x160: 153) -> 147 (150). fp8 operands
  // measured even there (64x57344x8192: own 128x160 176.8, the 1x4 178.2 us), so they keep
  // their plans.
  const bool sixteen_bit_group = !fp8_operands(*largest);
  const int64_t n4_rounds = ceil_div(n4_clusters, n4_at_once);
  const int64_t n4_idle = n4_rounds * n4_at_once - n4_clusters;
  const bool n4_long_k_fits = kdim <= 8192 || 4 * n4_ctas >= sms;
  const bool n4_waves_fit =
      (n4_rounds == 1 || 2 * n4_idle <= n4_at_once ||
       (sixteen_bit_group && 10 * n4_idle <= n4_rounds * n4_at_once)) &&
      n4_long_k_fits;
  // 16-bit operands keep their split-K for few CTAs with a long K (the 2x1 rule's few_long_k)
  const bool n4_few_long_k = sixteen_bit_group && 2 * n4_ctas <= sms && kdim >= 8192;
  if (tiny_n4 != nullptr && m <= 64 && n4_waves_fit && !n4_few_long_k) {
    // One 64-row tile of A (17 <= M <= 64; fewer rows run the skinny kernel): 64x64 ping-pong
    // tiles in clusters of 4 along N, which load each k-block of A once per cluster (TMA
    // multicast), as cuBLAS's nvjet 72x64 4x1 kernel at these shapes (the 2x1 64-row tiles
    // below pair row tiles, so at M <= 64 half their CTAs hold no rows). It wins where the
    // clusters fill their last wave at least half and loses just past a whole one (the rule
    // n4_waves_fit above). H100, session 43, CUDA-graph us per call,
    // weights from DRAM, e4m3 -> bf16 tensor scaling, this plan before (own 128x160 or the 2x1
    // 64x64) -> 1x4 (torch._scaled_mm): 64x6144x4096 18.5 -> 14.9 (12.3), 17x6144x4096 18.9 ->
    // 14.9, 64x4096x4096 12.7 -> 11.7 (9.9), 64x5120x8192 29.6 -> 20.6 (19.5), 64x7680x8192
    // 36.0 -> 28.1 (29.5), 64x12288x8192 48.2 -> 42.8 (45.7), 64x14336x4096 29.5 -> 27.5
    // (26.0), 64x28672x4096 59.5 -> 48.8 (54.4), 64x4096x14336 33.7 -> 28.4 (28.3); losses just
    // past a wave: 64x8192x8192 (32 clusters) 37.4 -> 40.4, 64x9216x4096 (36) 22.2 -> 23.0,
    // 64x16384x4096 (64) 31.5 -> 35.6. Two 64-row tiles (M = 128) double the clusters: 128x4096
    // x4096 12.3 -> 17.9, so the 2x1 rules below keep M > 64. Under a quarter of the SMs past
    // K = 8192 keeps the own tile's split tail, which spreads a long K over the SMs (64x2048x16384,
    // 32 CTAs: 31.3 split 10, 31.0 on this tile; shorter tails not measured).
    // bf16 x @ w.t() (session 44, H100, graph us, the plan before (2x1 64x64, 64x96 or 64x160)
    // -> 1x4 (torch.matmul)): 1x4096x4096 26.4 -> 16.1 (16.8), 8x12288x8192 94.7 -> 77.8
    // (77.7), 32x14336x4096 56.2 -> 47.3 (45.9), 64x4096x4096 18.9 -> 16.5 (15.4), 64x6144x4096
    // 23.8 -> 23.4 (21.3), 64x7680x8192 62.8 -> 48.6 (47.5), 64x28672x4096 106.2 -> 87.9 (88.4);
    // about even at 16x6144x4096 (24.2 / 24.0) and 64x4096x14336 (56.7 / 57.9).
    return plan_for(*tiny_n4, m, n, kdim, batch, sm_count);
  }
  if (tiny != nullptr && m <= 256) {
    // Small M: 64x64 tiles give 128x64's CTA count at half the rows (M = 128, N = 4096: 128 CTAs
    // instead of 64, cuBLAS's choice too), and 2x1 clusters read each B tile once per pair. The
    // grid has no split-K and little operand reuse, so it wins where its CTAs fill the SMs in one
    // wave or two even ones at moderate K (H100, graph time, against the rules below:
    // 128x4096x4096 20.2 -> 16.6 us, 128x4096x14336 52.0 -> 46.8, 256x4096x4096 26.6-26.9 ->
    // 24.0-24.7) and loses on ragged waves (128x6144x4096, 192 CTAs: 23.8 -> 25.3), on many
    // waves (128x28672x4096, 896 CTAs: x @ w 91.8 -> 95.1, x @ w.t() even) and at long K
    // (128x8192x28672, 256 CTAs: 179.7 -> 185.0 against 128x128 split-K 2). At M <= 64 it wins
    // at every shape measured (128-row tiles run half empty there: 64x4096x4096 30.0 -> 18.4,
    // 16x6144x4096 35.1 -> 29.9). Few CTAs with a long K stay on the split-K rule below.
    // bf16 x @ w.t() also has 64x96 and 64x160 tiles, for N that 64 columns split into a ragged
    // second wave: 128x6144x4096 23.8 -> 23.4 us, 128x10240x8192 66.7 -> 64.1, 64x6144x4096
    // 28.2 -> 23.5, 16x6144x4096 30.3 -> 22.8 (where 64x64 fits they lose: 128x4096x4096 16.5 ->
    // 17.4 / 21.1).
    const int64_t ctas = tiny_ctas(*tiny);
    const int64_t last = ctas % sms;
    const bool even_waves =
        ctas <= sms || (ctas <= 2 * sms && 4 * last >= 3 * sms && kdim <= 8192);
    const bool few_long_k = 2 * ctas <= sms && kdim >= 8192;
    // fp8 (e4m3 x e4m3, tensor / row scaling: CUTLASS's 64x64x128 ping-pong) wherever its CTAs
    // fit one wave, but for at most half a wave past K = 8192, and nowhere else: the own
    // kernel's 128-row tiles keep two waves and ragged ones, and its split tail few CTAs with a
    // long K (the 64x64 tile's time grows ~0.21 us per 128 of K and CTA: 10.9 us at K = 4096,
    // 17.0 at 8192, 29.5 at 14336; a split tail spreads that over the SMs). H100, session 41,
    // CUDA-graph us per call / eager x torch._scaled_mm, own 128x160 (its best plan: whole or
    // split) -> 64x64: 128x4096x4096 16.0 -> 10.9 us / 0.831 -> 0.934, 64x2048x4096 15.6 ->
    // 10.9 / 0.827 -> 0.898, 128x4096x14336 37.1 -> 29.5 / 0.768 -> 0.964, 1x1024x8192 (32
    // CTAs) 23.7 -> 17.0 / 0.742 -> 0.946, 128x2048x8192 20.3 -> 17.6 / 0.683 -> 0.812,
    // 16x4096x7168 23.5 -> 23.6 / 1.031 -> 1.085 (K = 1024: 1x4096x1024 7.3 -> 7.2 / 1.431 ->
    // 1.267, the one loss); two waves lose: 256x4096x4096 16.1 -> 18.4 / 0.896 -> 0.806,
    // 256x4096x8192 24.1 -> 32.0, 1x14336x4096 (448 CTAs) 33.3 -> 46.1 / 0.999 -> 0.699,
    // 64x8192x2048 10.6 -> 11.8.
    if (fp8_operands(*tiny) ? ctas <= sms && (kdim <= 8192 || 2 * ctas > sms)
                            : !few_long_k && (even_waves || m <= 64)) {
      return plan_for(*tiny, m, n, kdim, batch, sm_count);
    }
  }
  if (narrow_n4 != nullptr && m > 64 && m <= 128) {
    // One 128-row tile of A (65 <= M <= 128) where the 64-row tiles above did not fit: 128x64
    // cooperative tiles in 1x4 clusters (A multicast). fp8 where its clusters fit one wave. H100,
    // session 44, CUDA-graph us per call, weights from DRAM, e4m3 -> bf16 tensor scaling, the
    // plan before (own 128x160, whole or split tail) -> 1x4 (torch._scaled_mm): 128x6144x4096
    // 18.0 -> 15.4 (12.8), 100x6144x4096 17.9 -> 15.3 (13.4), 80x6144x8192 29.8 -> 24.6 (22.7),
    // 128x7680x8192 34.0 -> 29.9 (28.5), 128x5120x14336 41.5 -> 40.2 (33.1); row scaling
    // 128x6144x4096 19.2 -> 16.1 (15.0). Past one wave it loses: 128x12288x4096 (48 clusters)
    // 24.5 -> 29.9, 128x20480x4096 (80) 36.8 -> 45.2, 128x14336x8192 (56) 48.0 -> 56.6,
    // 112x28672x4096 (112) 54.5 -> 58.4; the 1x4 was timed first in those rows, which reads up
    // to 10-17 % slow at large shapes, so the last loss may be within that (an earlier run: even).
    // bf16 x @ w.t() only with many waves of clusters, where it is a little faster than the
    // 128x128 tile: 128x57344x8192 (224 clusters) 349 -> 344 us (torch.matmul 351), and in the
    // benchmark suite (interleaved eager calls) 339 -> 344 TFLOP/s (torch 347); fewer clusters
    // lose (128x10240x8192, 40: 65.2 -> 73.7; 128x8192x8192, 32: 53.7 -> 69.3).
    // Where the group has the own 128x256 (16-bit x @ w.t()) and K is 4096-8192, it streams the
    // weight faster than the 1x4 tile. H200, session 49, eager x torch.matmul in one process (two
    // rounds, bench/gemm_sweep.py): 128x57344x8192 (224 tiles, two rounds) 1x4 0.954 / own
    // 128x256 1.023 / ping-pong 64x160 1.000 / 128x128 0.953 (the suite's cell: 0.94-0.95x on the
    // 1x4 in two runs). K = 4096 was not measured (the own tile's range); nor was the H100.
    if (fp8_operands(*narrow_n4) ? n4_rounds == 1 && n4_long_k_fits
                                 : n4_clusters >= 4 * n4_at_once) {
      if (!fp8_operands(*narrow_n4) && own != nullptr && own->tile_n == 256 && kdim >= 4096 &&
          kdim <= 8192) {
        return own_plan(*own);
      }
      return plan_for(*narrow_n4, m, n, kdim, batch, sm_count);
    }
  }
  if (narrow != nullptr && narrow != largest && m <= 128 && n <= 6144) {
    // Up to 4 splits: with 32 tiles (N = 2048) 4 splits beat 2 by 18-35% (K = 16k-28k, H100).
    Plan p = plan_for(*narrow, m, n, kdim, batch, sm_count, 4);
    if (p.decomposition == Decomposition::kSplitK && kdim < 8192) {
      p.decomposition = Decomposition::kDataParallel;
      p.splits = 1;
    }
    return p;
  }
  // One wave of the own 128x256 tile (16-bit x @ w.t()), at least 5/6 full, K = 2048-8192:
  // its tiles run at cuBLAS's rate (session 36) where the 128x128 tiles below (cooperative or
  // ping-pong) need 1.7-2 waves. H100, session 45, CUDA-graph us per call, weights from DRAM, the
  // plan before -> own 128x256 (torch.matmul): 128x28672x4096 (112 tiles) 93.6 (128x128) ->
  // 90.6 (90.6), 1024x4096x4096 (128) 51.0 (ping-pong) -> 47.3 (45.5). Fewer tiles lose
  // (128x10240x8192, 40: 65.6 -> 89.1), and so does a wave and a half (1024x6144x4096, 192
  // tiles: 74.7 -> 88.2). Shorter K, where the ping-pong tile hides more of each epilogue, was
  // not measured and keeps its plans.
  // Likewise two rounds, the second at least 5/6 full, of the own 128x256 or else of the group's
  // own 128x192 (bf16), which turns 128x256's wave and a half into two whole rounds. H200,
  // session 46, CUDA-graph us per call, ping-pong (the plan before) / own 128x256 / own 128x192
  // (torch.matmul): 2048x4096x4096 (256 / 352 tiles) 102.7 / 95.2 / 115.0 (89.9); 1536x4096x4096
  // (192 / 264) 74.1 / 87.1 / 69.9 (68.5); 1024x6144x4096 (192 / 256) 72.4 / 87.8 / 69.4
  // (69.8); 1024x6144x8192 140.3 / 166.6 / 134.1 (135.7). Three rounds lose to ping-pong
  // (4096x6144x4096, 384 / 512 tiles: 281 / 305 / 298). Two rounds at M <= 256 (bound by the
  // weight's bandwidth) were not measured and keep their plans.
  if (own != nullptr && own->tile_n == 256 && kdim >= 2048 && kdim <= 8192) {
    for (const KernelSpec* k : {own, own_narrow}) {
      if (k == nullptr) continue;
      const int64_t own_tiles = ceil_div(m, k->tile_m) * ceil_div(n, k->tile_n) * batch;
      const int64_t rounds = ceil_div(own_tiles, sms);
      if ((rounds == 1 || (rounds == 2 && m > 256)) && 6 * own_tiles >= (6 * rounds - 1) * sms) {
        return own_plan(*k);
      }
    }
  }
  if (small != nullptr &&
      int64_t{small->tile_m} * small->tile_n < int64_t{largest->tile_m} * largest->tile_n &&
      m <= 256) {
    return plan_for(*small, m, n, kdim, batch, sm_count, 3);
  }
  const int64_t tiles = ceil_div(m, largest->tile_m) * ceil_div(n, largest->tile_n) * batch;
  // Ping-pong overlaps each tile's epilogue with the other warpgroup's main loop: it wins where
  // the epilogue is a large share of a tile (short K) and where 128x256 tiles leave partial
  // waves; at M*N beyond 2^26 outputs or K >= 8192 the 128x256 tile's operand reuse wins
  // (H100: 8192x4096x4096 673 vs 607 TFLOP/s, 16384x14336x4096 602 vs 626, 8192^3 600 vs 656).
  // Its tiles run along N in strips of 4 tile rows (session 18, H100, x torch.matmul, against the
  // heuristic order: 2048x4096x4096 0.92 -> 0.99, 4096x6144x4096 0.98-0.99 -> 1.01, 16384x6144
  // x4096 0.94-0.97 -> 0.99), which carries it to 2^27 outputs where M <= 4096 or N <= 8192:
  // 16384x6144x4096 0.90 on 128x256 -> 0.99, 4096x28672x4096 0.91 -> 1.00-1.01 (but 8192x14336
  // x4096 0.90 -> 0.84, and 16384x28672x4096, 2^28.8, 0.92 -> 0.87: those stay on 128x256).
  const int64_t outputs = m * n * batch;
  const bool short_k_mid_size =
      kdim <= 4096 && (outputs <= (int64_t{1} << 26) ||
                       (outputs <= (int64_t{1} << 27) && (m <= 4096 || n <= 8192)));
  // And at K <= 8192 for M <= 4096, N <= 16384 where its tiles run in strips of 4 (session 19,
  // H100, one process, x 128x256's plan: 4096x10240x8192 1.036 / 1.049, x torch.matmul 0.96 ->
  // 1.02; 4096x14336x8192 1.009); outside it ping-pong loses: 2048x8192x16384 0.96,
  // 16384x4096x8192 0.97, 8192x10240x8192 0.93, 1024x57344x8192 0.98, 4096x8192x28672 0.71.
  // Strips of 4 only where their padding is small (M a multiple of 1024 rows and N of 512
  // columns pad nothing; 1152x4096 would run 16 tile rows for 9); else the order of before.
  const bool strips = pingpong != nullptr && swizzle_pads_little(*pingpong, m, n, batch, 4);
  const bool mid_k_mid_size = strips && kdim <= 8192 && m <= 4096 && n <= 16384;
  if (pingpong != nullptr && pingpong != largest &&
      ((tiles < 4 * sms && kdim <= 8192) || short_k_mid_size || mid_k_mid_size)) {
    Plan p = plan_for(*pingpong, m, n, kdim, batch, sm_count);
    if (strips) {
      p.raster = 2;  // along N
      p.swizzle = 4;
    }
    return p;
  }
  Plan p = plan_for(*largest, m, n, kdim, batch, sm_count);
  // 16-bit 128x256 tiles: stream-K also from two waves up to 64 where the last is less than
  // 60 % full (CUTLASS runs the full waves data-parallel and spreads the rest over every SM).
  // H100, x torch.matmul in one process, 128x256 data-parallel -> stream-K: 8192^3 (15.5 waves)
  // 0.98 -> 0.99, 16384x4096x14336 (15.5) 1.00 -> 1.02, 6144x16384x4096 (23.3) 0.91 -> 0.93,
  // 2048x57344x8192 (27.2) 0.95 -> 0.97, 16384x8192x28672 (31.0) 1.01 -> 1.05, 1024x57344x8192
  // (13.6) 0.95 -> 0.97, 4096x57344x8192 (54.3) 0.97 -> 0.98 (bf16 x @ w and fp16 alike).
  // Fuller last waves lose (16384x28672x4096, 61 %: 0.93 -> 0.90; 1024x8192x28672, 94 %:
  // 0.98 -> 0.90), and so do many waves, where a last wave is a small share of the time
  // (16384x57344x8192, 217 waves: 0.96 -> 0.95; 12288x28672x4096, 81: even).
  const bool sixteen_bit =
      largest->operands == Operands::kBF16 || largest->operands == Operands::kF16;
  // Where the group has the own 128x256 kernel (16-bit x @ w.t()), its data-parallel grid beats
  // stream-K up to K = 8192 since its epilogue lost the column loads (session 36, H100, one
  // process, x torch.matmul, CUTLASS stream-K -> own: 8192^3 0.990 -> 1.017, 4096x57344x8192
  // 0.974 -> 1.001; 16384x4096x14336 1.018 / 1.021 even; 16384x8192x28672 1.060 -> 1.018 stays).
  const bool own_wide = own != nullptr && own->tile_n == 256;
  if (sixteen_bit && largest->stream_k && largest->tile_n == 256 &&
      p.decomposition == Decomposition::kDataParallel && tiles >= 2 * sms && tiles < 64 * sms &&
      ceil_div(kdim, largest->tile_k) >= 4 && !(own_wide && kdim <= 8192)) {
    const int64_t last = tiles % sms;
    if (last != 0 && last * 10 < sms * 6) p.decomposition = Decomposition::kStreamK;
  }
  // deepwell's own main loop replaces the CUTLASS kernel wherever that one would run
  // data-parallel (its split-K plans: the rule above); stream-K plans (ragged waves) stay on
  // CUTLASS but for block scaling (below). For
  // bf16 x @ w.t() that is the 128x256 tile past every rule above (H100, one process, x
  // torch.matmul, CUTLASS -> own: 16384x28672x4096 0.925 -> 0.951 before the own epilogue's fix,
  // 0.992 after it; docs/perf-notes.md, GEMM session 36); ping-pong keeps its shapes
  // (16384x4096x4096 and 1024x28672x4096 swung either way between runs). With
  // block scaling only where its grid is not much emptier than CUTLASS's: it has no split of a
  // ragged last wave, and CUTLASS's block kernel has finer 128x128 tiles. The measure is SM
  // rounds x tile area (the grid's time for a fixed K if both ran a tile-round equally fast);
  // the own kernel runs its tile-rounds faster, so it takes grids up to 15 % larger. H100,
  // session 38, one process, own / CUTLASS by the grids' area ratio: 0.98-1.03 (8192^3,
  // 8192x8192x16384, 16384x8192x8192, 16384x7168x2048, 8192x4096x14336) 1.08-1.33x; 1.07
  // (4096x7168x16384, 2048x7168x16384) 1.04-1.05x; 1.125 (4096^3, 1024x7168x4096,
  // 4096x2048x7168, 2048x4096x7168) 1.01-1.08x; 1.5 (one own round and a bit: 512x7168x16384,
  // 1024x4096x4096, 2048x2048x8192) 0.76-0.95x.
  // Rounds are counted in hundredths since the split tail (session 40): a last round the own
  // kernel splits counts 100 / splits + 25 (H100, one process, x torch._scaled_mm, own 128x192
  // split tail / data-parallel / own 128x128: 4096x7168x16384 (9 rounds + 28 tiles, 4 splits)
  // 0.955 / 0.901 / 0.848; 512x7168x16384 (1 + 20, 6 splits: 1.06x CUTLASS's area) 0.839 /
  // 0.598 / 0.771; 1024x4096x4096 and 2048x2048x8192 (1 + 44, 3 splits: 1.19x) 0.736 / 0.642 /
  // 0.787 and 0.820 / 0.664 / 0.828). And block scaling also replaces CUTLASS's stream-K plans
  // by that measure, CUTLASS's rounds counted as tiles / SMs (stream-K evens them out):
  // 768x4096x7168, one own round against 1.45 of CUTLASS's 128x128 (area 1.03x), ran 0.719 on
  // CUTLASS's stream-K and 0.958 on the own 128x192 (session 39; 0.729 / 0.997 in session 40).
  // Not at M <= 256 (one or two tile rows, bound by the weight's bandwidth), where the split
  // round is counted whole: 128x28672x8192 ran 0.930 on the own 128x192 with 7 splits, 0.975 on
  // the own 128x128 (data-parallel, 224 tiles).
  const bool own_block = own != nullptr && own->scaling == Scaling::kBlock;
  // Fewer tiles than SMs, where CUTLASS would split K: the own kernel's narrower tile (block:
  // 128x128, else 128x160 where the group has it), with all its tiles split over sms / tiles
  // CTAs (>= 4 k-blocks each, <= 16) where K >= 12288 (2 splits or more); for fp8 operands also
  // below that: split where K > 4096 with 3 splits or more, else data-parallel (16-bit
  // operands keep CUTLASS's split-K below K = 12288: not measured, and their 128x256 tile would
  // leave most SMs idle). CUTLASS's split-K costs a workspace, a memset and its fix-up in
  // every call: H100, session 41, one process, 40 shapes M 1-256, N 1024-8192, K 1024-8192 (bf16
  // out; eager x torch._scaled_mm / CUDA-graph us per call), CUTLASS split-K -> own: tensor
  // 128x4096x4096 0.617 -> 0.815 / 19.5 -> 16.1 us, 64x2048x4096 0.803 -> 1.162 / 26.1 -> 15.9,
  // 1x4096x1024 1.025 -> 1.383 / 14.8 -> 7.6, 128x2048x8192 (10 splits) 0.598 -> 0.763 / 27.0
  // -> 21.1, 1x1024x8192 (16) 0.783 -> 1.066 / 41.8 -> 23.8, 256x4096x8192 (2 splits: whole)
  // 0.745 -> 0.855 / 29.0 -> 29.2; block 128x4096x4096 0.891 -> 1.118 / 18.9 -> 14.8,
  // 128x4096x8192 (4 splits) 0.763 -> 0.872 / 22.9 -> 18.3, 256x2048x8192 (8) 0.635 -> 0.768 /
  // 22.2 -> 16.8. A split costs ~5 us of host time (workspace, memset) and its reduction, so
  // up to K = 4096 the whole tiles win both ways (tensor 1x4096x4096 split 5: 19.1 us against
  // 16.6 whole), and two splits only pay at a long K (128x8192x8192: 37.3 against 34.0 us).
  // Session 40, K >= 12288, CUTLASS split-K -> own split (eager): tensor 128x4096x14336 0.822 ->
  // 0.926, 128x8192x28672 0.894 -> 0.941, 256x4096x14336 0.970 -> 1.024; block 128x4096x14336
  // 1.026 -> 1.134, 256x4096x14336 0.939 -> 1.033.
  const bool own_fp8 = own != nullptr && fp8_operands(*own);
  if (own != nullptr && p.decomposition == Decomposition::kSplitK &&
      (own_fp8 || kdim >= 12288)) {
    const KernelSpec* k = own_block ? own_block_small : own_fp8 ? own_narrow : nullptr;
    if (k == nullptr) k = own;
    Plan q = plan_for(*k, m, n, kdim, batch, sm_count);  // own kernels: data-parallel
    const int64_t k_tiles = ceil_div(m, k->tile_m) * ceil_div(n, k->tile_n) * batch;
    const int64_t splits = k_tiles < sms ? tail_splits(*k, k_tiles, kdim, sms) : 0;
    if ((kdim >= 12288 && splits >= 2) || (kdim > 4096 && splits >= 3)) {
      q.decomposition = Decomposition::kSplitTail;
      q.splits = static_cast<int32_t>(splits);
      return q;
    }
    if (own_fp8) return q;
  }
  if (own != nullptr && (p.decomposition == Decomposition::kDataParallel ||
                         (own_block && p.decomposition == Decomposition::kStreamK))) {
    if (!own_block) return own_plan(*own_tile());
    const Plan mine = own_plan(*own);
    const int64_t own_tiles = ceil_div(m, own->tile_m) * ceil_div(n, own->tile_n) * batch;
    int64_t own_rounds = own_tiles / sms * 100;
    if (own_tiles % sms != 0) {
      own_rounds += mine.decomposition == Decomposition::kSplitTail && m > 256
                        ? 100 / mine.splits + 25
                        : 100;
    }
    const int64_t cutlass_rounds = p.decomposition == Decomposition::kStreamK
                                       ? tiles * 100 / sms
                                       : ceil_div(tiles, sms) * 100;
    if (own_rounds * own->tile_m * own->tile_n * 100 <=
        cutlass_rounds * largest->tile_m * largest->tile_n * 115) {
      return mine;
    }
    // Past that, the own 128x128 tile: CUTLASS's grid, the own loop (H100, session 39, one
    // process, x torch._scaled_mm, own 128x128 / CUTLASS: 1024x4096x4096 0.800 / 0.716,
    // 2048x2048x8192 0.820 / 0.800, 512x7168x16384 0.748 / 0.744; where the wide tile is
    // chosen it beats the 128x128 one: 4096^3 0.866 / 0.829, 1024x7168x4096 0.773 / 0.754).
    if (own_block_small != nullptr && p.decomposition == Decomposition::kDataParallel) {
      return own_plan(*own_block_small);
    }
  }
  if (p.decomposition == Decomposition::kDataParallel && n > 8192 && m >= 4096 &&
      swizzle_pads_little(*largest, m, n, batch, 2)) {
    p.swizzle = 2;
  }
  return p;
}

}  // namespace deepwell::matmul::sm90
