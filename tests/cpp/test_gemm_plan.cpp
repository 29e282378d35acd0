// The sm_90a GEMM shape rules (choose_plan / plan_for in src/gemm/gemm_sm90_table.hpp) on the
// shapes they were measured on (docs/perf-notes.md, "GEMM"). Pure host code: runs without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <utility>

#include "gemm/gemm_sm90_table.hpp"

namespace {

using namespace deepwell;
using namespace deepwell::matmul::sm90;

constexpr KernelSpec spec(const char* name, int tm, int tn, Schedule sched, bool sk) {
  return KernelSpec{name, Operands::kBF16, DType::kBF16, true, true, Scaling::kNone, tm, tn, 64,
                    1, 1, sched, sk, nullptr, nullptr};
}
constexpr KernelSpec kBig = spec("128x256", 128, 256, Schedule::kCooperative, true);
constexpr KernelSpec kSmall = spec("128x128", 128, 128, Schedule::kCooperative, true);
constexpr KernelSpec kNarrow = spec("128x64", 128, 64, Schedule::kCooperative, true);
constexpr KernelSpec kPingpong = spec("pp_128x128", 128, 128, Schedule::kPingpong, false);
constexpr const KernelSpec* kBf16Group[] = {&kBig, &kSmall, &kNarrow, &kPingpong};
constexpr int kSms = 132;

Plan bf16(int64_t m, int64_t n, int64_t k) { return choose_plan(kBf16Group, 4, m, n, k, 1, kSms); }

// The 64x64 ping-pong row (2x1 clusters) at small M, where its CTAs fill the SMs in one or two
// waves.
TEST(GemmPlan, SmallMUsesPingpong64x64WhereItsWavesFillTheSMs) {
  constexpr KernelSpec tiny = spec("pp_64x64", 64, 64, Schedule::kPingpong, false);
  const KernelSpec* group[] = {&kBig, &kSmall, &kNarrow, &kPingpong, &tiny};
  auto pick = [&](int64_t m, int64_t n, int64_t k) {
    return choose_plan(group, 5, m, n, k, 1, kSms);
  };
  // one wave or less (2 row tiles x 64 column tiles = 128 CTAs)
  EXPECT_EQ(pick(128, 4096, 4096).kernel, &tiny);
  EXPECT_EQ(pick(128, 4096, 4096).decomposition, Decomposition::kDataParallel);
  EXPECT_EQ(pick(100, 4096, 4096).kernel, &tiny);
  EXPECT_EQ(pick(128, 4096, 14336).kernel, &tiny);  // 128 CTAs: no split-K needed
  // two waves, the second >= 75 % full (256 CTAs: 124 of 132), at K <= 8192
  EXPECT_EQ(pick(256, 4096, 4096).kernel, &tiny);
  // the same at long K, many waves (896 CTAs), ragged waves (192: 60 in the last; 320: 56):
  // the older rules
  EXPECT_EQ(pick(128, 8192, 28672).kernel, &kSmall);
  EXPECT_EQ(pick(128, 8192, 28672).decomposition, Decomposition::kSplitK);
  EXPECT_EQ(pick(128, 28672, 4096).kernel, &kSmall);
  EXPECT_EQ(pick(128, 6144, 4096).kernel, &kNarrow);
  EXPECT_EQ(pick(128, 10240, 8192).kernel, &kSmall);
  // M <= 64 (the cluster's second row tile is empty): always, however ragged
  EXPECT_EQ(pick(16, 6144, 4096).kernel, &tiny);
  EXPECT_EQ(pick(64, 4096, 4096).kernel, &tiny);
  // few CTAs and a long K: split-K of 128x64 (2 x 32 = 64 CTAs <= 66)
  Plan p = pick(128, 2048, 16384);
  EXPECT_EQ(p.kernel, &kNarrow);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitK);
  // beyond 256 rows: the older rules
  EXPECT_EQ(pick(257, 4096, 4096).kernel, &kPingpong);
  EXPECT_EQ(pick(1024, 4096, 4096).kernel, &kPingpong);
}

// Of several 64-row ping-pong tiles, the one with the fewest wave-columns (waves x width).
TEST(GemmPlan, SmallMPicksThe64RowTileWithTheFewestWaveColumns) {
  constexpr KernelSpec t64 = spec("pp_64x64", 64, 64, Schedule::kPingpong, false);
  constexpr KernelSpec t96 = spec("pp_64x96", 64, 96, Schedule::kPingpong, false);
  constexpr KernelSpec t160 = spec("pp_64x160", 64, 160, Schedule::kPingpong, false);
  const KernelSpec* group[] = {&kBig, &kSmall, &kNarrow, &kPingpong, &t64, &t96, &t160};
  auto pick = [&](int64_t m, int64_t n, int64_t k) {
    return choose_plan(group, 7, m, n, k, 1, kSms).kernel;
  };
  EXPECT_EQ(pick(128, 4096, 4096), &t64);     // 1 x 64 against 1 x 96 (86 CTAs), 1 x 160
  EXPECT_EQ(pick(128, 3072, 4096), &t64);
  EXPECT_EQ(pick(128, 6144, 4096), &t96);     // 2 x 64 against 1 x 96 (128 CTAs)
  EXPECT_EQ(pick(16, 6144, 4096), &t96);
  EXPECT_EQ(pick(128, 10240, 8192), &t160);   // 3 x 64, 2 x 96, 1 x 160 (128 CTAs)
  EXPECT_EQ(pick(128, 4096, 14336), &t64);
  // the chosen tile still has to fill the SMs: 896 CTAs of 64x64 (7 x 64 wave-columns, the
  // fewest) at 128x28672 -> the 128x128 rule; 256 at long K -> 128x128 split-K
  EXPECT_EQ(pick(128, 28672, 4096), &kSmall);
  EXPECT_EQ(pick(128, 8192, 28672), &kSmall);
  // the tie at 256x6144 (3 x 64 = 2 x 96) keeps 64x64, whose 384 CTAs then fail the fill rule
  EXPECT_EQ(pick(256, 6144, 4096), &kSmall);
}

TEST(GemmPlan, SmallMAndNUses128x64) {
  Plan p = bf16(128, 6144, 4096);  // 96 tiles: data-parallel
  EXPECT_EQ(p.kernel, &kNarrow);
  EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
  p = bf16(128, 4096, 4096);  // 64 tiles, 2 splits would fit, but K < 8192: data-parallel
  EXPECT_EQ(p.kernel, &kNarrow);
  EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
  p = bf16(128, 4096, 14336);  // long K, 64 tiles: split-K 2
  EXPECT_EQ(p.kernel, &kNarrow);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitK);
  EXPECT_EQ(p.splits, 2);
  p = bf16(128, 2048, 28672);  // 32 tiles: split-K 4 (at most 4)
  EXPECT_EQ(p.kernel, &kNarrow);
  EXPECT_EQ(p.splits, 4);
  p = bf16(32, 1024, 16384);  // 16 tiles: 8 would fit, capped at 4
  EXPECT_EQ(p.splits, 4);
}

TEST(GemmPlan, SmallMUses128x128WithAtMostThreeSplits) {
  Plan p = bf16(128, 8192, 28672);  // 64 tiles: split-K 2
  EXPECT_EQ(p.kernel, &kSmall);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitK);
  EXPECT_EQ(p.splits, 2);
  p = bf16(200, 2048, 14336);  // 32 tiles: 4 would fit, capped at 3
  EXPECT_EQ(p.kernel, &kSmall);
  EXPECT_EQ(p.splits, 3);
  p = bf16(128, 10240, 8192);  // 80 tiles: one split fits -> data-parallel, not stream-K
  EXPECT_EQ(p.kernel, &kSmall);
  EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
  p = bf16(128, 57344, 8192);  // 448 tiles
  EXPECT_EQ(p.kernel, &kSmall);
  EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
}

TEST(GemmPlan, MidSizeUsesPingpong) {
  EXPECT_EQ(bf16(1024, 6144, 4096).kernel, &kPingpong);
  EXPECT_EQ(bf16(4096, 4096, 4096).kernel, &kPingpong);
  EXPECT_EQ(bf16(1024, 10240, 8192).kernel, &kPingpong);
  // short K up to 2^26 outputs, however many tiles
  EXPECT_EQ(bf16(8192, 4096, 4096).kernel, &kPingpong);
  EXPECT_EQ(bf16(16384, 4096, 4096).kernel, &kPingpong);
  EXPECT_EQ(bf16(4096, 14336, 4096).kernel, &kPingpong);
  // up to 2^27 where M <= 4096 or N <= 8192
  EXPECT_EQ(bf16(16384, 6144, 4096).kernel, &kPingpong);
  EXPECT_EQ(bf16(4096, 28672, 4096).kernel, &kPingpong);
  EXPECT_EQ(bf16(16384, 8192, 4096).kernel, &kPingpong);  // exactly 2^27
  EXPECT_EQ(bf16(8192, 14336, 4096).kernel, &kBig);       // M > 4096 and N > 8192
  EXPECT_EQ(bf16(16384, 8193, 4096).kernel, &kBig);       // beyond 2^27 outputs
  EXPECT_EQ(bf16(4096, 32769, 4096).kernel, &kBig);
  EXPECT_EQ(bf16(16384, 14336, 4096).kernel, &kBig);
  EXPECT_EQ(bf16(4096, 28672, 4097).kernel, &kBig);  // K > 4096 with N > 16384
  // K <= 8192 where M <= 4096 and N <= 16384 and the strips pad nothing (70B qkv at M = 4096)
  const std::pair<std::array<int64_t, 3>, const KernelSpec*> mid_k[] = {
      {{4096, 10240, 8192}, &kPingpong}, {{4096, 16384, 8192}, &kPingpong},
      {{4000, 10240, 8192}, &kPingpong},  // 32 tile rows, 80 columns: no padding
      {{3200, 10240, 8192}, &kBig},       // 25 tile rows: strips would pad them
      {{4097, 10240, 8192}, &kBig},       {{4096, 16385, 8192}, &kBig},
      {{4096, 10240, 8193}, &kBig},       {{2048, 8192, 16384}, &kBig},
      {{4096, 8192, 28672}, &kBig}};
  for (const auto& [s, want] : mid_k) {
    EXPECT_EQ(bf16(s[0], s[1], s[2]).kernel, want) << s[0] << "x" << s[1] << "x" << s[2];
  }
  EXPECT_EQ(bf16(8192, 8192, 8192).kernel, &kBig);    // K = 8192
  // long K stays on the large tile: 128 tiles < 132 SMs, one split -> data-parallel
  Plan p = bf16(1024, 4096, 14336);
  EXPECT_EQ(p.kernel, &kBig);
  EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
}

TEST(GemmPlan, PingpongRunsAlongNInStripsOfFourTileRows) {
  for (const Plan& p : {bf16(1024, 4096, 4096), bf16(16384, 6144, 4096), bf16(1024, 10240, 8192)}) {
    EXPECT_EQ(p.kernel, &kPingpong);
    EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
    EXPECT_EQ(p.raster, 2);
    EXPECT_EQ(p.swizzle, 4);
  }
}

TEST(GemmPlan, LargeUses128x256SwizzledForWideN) {
  Plan p = bf16(8192, 8192, 12288);  // 2048 tiles, last wave 68 / 132
  EXPECT_EQ(p.kernel, &kBig);
  EXPECT_EQ(p.decomposition, Decomposition::kStreamK);
  EXPECT_EQ(p.swizzle, 1);
  p = bf16(16384, 28672, 4096);  // 14336 tiles, last wave 80 / 132: data-parallel
  EXPECT_EQ(p.kernel, &kBig);
  EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
  EXPECT_EQ(p.swizzle, 2);
}

TEST(GemmPlan, LargeRunsStreamKWhereAFewWavesEndUnderSixtyPercent) {
  struct Case {
    int64_t m, n, k;
    Decomposition want;
  };
  const Case cases[] = {
      {8192, 8192, 8192, Decomposition::kStreamK},        // 2048 tiles, last 68 / 132
      {8192, 14336, 4096, Decomposition::kStreamK},       // 3584 tiles, last 20
      {6144, 16384, 4096, Decomposition::kStreamK},       // 3072 tiles, last 36
      {4096, 57344, 8192, Decomposition::kStreamK},       // 7168 tiles, last 40
      {1024, 57344, 8192, Decomposition::kStreamK},       // 1792 tiles, last 76 (57.6 %)
      {16384, 28672, 4096, Decomposition::kDataParallel}, // 14336 tiles, last 80 (60.6 %)
      {1024, 8192, 28672, Decomposition::kDataParallel},  // 256 tiles, last 124
      {16384, 10240, 8192, Decomposition::kDataParallel}, // 5120 tiles, last 104
      {8448, 8192, 8192, Decomposition::kDataParallel},   // 2112 tiles, 16 full waves
      {16384, 16384, 192, Decomposition::kDataParallel},  // last 8 / 132, but 3 K tiles
      {16384, 57344, 8192, Decomposition::kDataParallel}, // last 28, but 217 waves
      {12288, 28672, 4096, Decomposition::kDataParallel}, // last 60, but 81 waves
  };
  for (const Case& c : cases) {
    const Plan p = bf16(c.m, c.n, c.k);
    EXPECT_EQ(p.kernel, &kBig) << c.m << "x" << c.n << "x" << c.k;
    EXPECT_EQ(p.decomposition, c.want) << c.m << "x" << c.n << "x" << c.k;
  }
  // fp8 groups keep data-parallel CUTLASS plans (the own main loop replaces them)
  KernelSpec fp8 = kBig;
  fp8.operands = Operands::kE4M3;
  fp8.scaling = Scaling::kTensorRow;
  const KernelSpec* only[] = {&fp8};
  EXPECT_EQ(choose_plan(only, 1, 8192, 8192, 8192, 1, kSms).decomposition,
            Decomposition::kDataParallel);
}

TEST(GemmPlan, SingleKernelGroupKeepsTheSplitKRule) {
  const KernelSpec* only[] = {&kBig};
  Plan p = choose_plan(only, 1, 128, 6144, 4096, 1, kSms);  // 24 tiles: min(132/24, 64/4) = 5
  EXPECT_EQ(p.kernel, &kBig);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitK);
  EXPECT_EQ(p.splits, 5);
  // 200 tiles, last wave 68/132 < 60 %: stream-K
  p = choose_plan(only, 1, 128 * 50, 256 * 4, 4096, 1, kSms);
  EXPECT_EQ(p.decomposition, Decomposition::kStreamK);
}

TEST(GemmPlan, SmallMRuleNeedsASmallerTile) {
  // a group whose kernels are all 128x128 (fp32 output, fp8) keeps the split-K rule of the first
  constexpr KernelSpec other = spec("128x128 b", 128, 128, Schedule::kCooperative, true);
  const KernelSpec* group[] = {&kSmall, &other};
  Plan p = choose_plan(group, 2, 128, 6144, 4096, 1, kSms);  // 48 tiles: min(132/48, 64/4) = 2
  EXPECT_EQ(p.kernel, &kSmall);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitK);
  p = choose_plan(group, 2, 128, 4096, 14336, 1, kSms);  // 32 tiles: 4 splits, not capped at 3
  EXPECT_EQ(p.splits, 4);
}

TEST(GemmPlan, OwnFp8MainLoopWhereCutlassWouldRunDataParallel) {
  constexpr KernelSpec cutlass = spec("fp8 cutlass", 128, 128, Schedule::kCooperative, true);
  constexpr KernelSpec own = spec("fp8 own", 128, 128, Schedule::kFp8Promoted, false);
  for (const auto& group : {std::array<const KernelSpec*, 2>{&cutlass, &own},
                            std::array<const KernelSpec*, 2>{&own, &cutlass}}) {
    // 8192^3: 4096 tiles, data-parallel -> the own kernel (31 rounds and 4 tiles: those split,
    // at most 16 ways)
    Plan p = choose_plan(group.data(), 2, 8192, 8192, 8192, 1, kSms);
    EXPECT_EQ(p.kernel, &own);
    EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
    EXPECT_EQ(p.splits, 16);
    EXPECT_EQ(p.swizzle, 1);
    // 8448 x 8192: 4224 tiles, 32 whole rounds
    p = choose_plan(group.data(), 2, 8448, 8192, 8192, 1, kSms);
    EXPECT_EQ(p.kernel, &own);
    EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
    // M = 128: split-K on CUTLASS
    p = choose_plan(group.data(), 2, 128, 6144, 4096, 1, kSms);
    EXPECT_EQ(p.kernel, &cutlass);
    EXPECT_EQ(p.decomposition, Decomposition::kSplitK);
    // 200 tiles, ragged last wave: stream-K on CUTLASS
    p = choose_plan(group.data(), 2, 128 * 50, 128 * 4, 4096, 1, kSms);
    EXPECT_EQ(p.kernel, &cutlass);
    EXPECT_EQ(p.decomposition, Decomposition::kStreamK);
  }
  // a group of the own kernel alone: its plan (small problems with a short K whole; 32 tiles
  // with a long K: 4 splits each; 48 tiles, more than a third of the SMs: whole)
  const KernelSpec* only[] = {&own};
  Plan p = choose_plan(only, 1, 128, 4096, 4096, 1, kSms);
  EXPECT_EQ(p.kernel, &own);
  EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
  p = choose_plan(only, 1, 128, 4096, 262144, 1, kSms);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(p.splits, 4);
  p = choose_plan(only, 1, 128, 6144, 262144, 1, kSms);
  EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
}

TEST(GemmPlan, OwnKernelsSplitALastRoundAtMostAThirdFull) {
  constexpr KernelSpec own = spec("fp8 own", 128, 192, Schedule::kFp8Promoted, false);
  const KernelSpec* only[] = {&own};
  auto pick = [&](int64_t m, int64_t n, int64_t k, int sms = kSms) {
    return choose_plan(only, 1, m, n, k, 1, sms);
  };
  // 4096x7168: 1216 tiles = 9 rounds + 28: 132 / 28 = 4 splits
  Plan p = pick(4096, 7168, 16384);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(p.splits, 4);
  // the same on 114 SMs: 10 rounds + 76 (more than half): data-parallel
  EXPECT_EQ(pick(4096, 7168, 16384, 114).decomposition, Decomposition::kDataParallel);
  // fuller last rounds stay whole: 8192x7168 (2432 tiles = 18 rounds + 56), 3072x7168 (+ 60)
  EXPECT_EQ(pick(8192, 7168, 16384).decomposition, Decomposition::kDataParallel);
  EXPECT_EQ(pick(3072, 7168, 16384).decomposition, Decomposition::kDataParallel);
  // 2048x57344 at 128x192: 4784 tiles = 36 rounds + 32: 4 splits
  EXPECT_EQ(pick(2048, 57344, 8192).splits, 4);
  // at least 4 k-blocks (of 64 here) per split: 16384x4608 (3072 tiles = 23 rounds + 36) at
  // K = 512 (8 k-blocks) takes 2 of the 3
  p = pick(16384, 4608, 512);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(p.splits, 2);
  // one round of a few tiles with a long K: up to 16 splits
  p = pick(128, 192 * 4, 1 << 20);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(p.splits, 16);
  // below M N K = 2^35 (the call's host time matters more): whole, unless K >= 12288
  EXPECT_EQ(pick(1024, 4096, 4096).decomposition, Decomposition::kDataParallel);
  EXPECT_EQ(pick(16, 8192, 8192).decomposition, Decomposition::kDataParallel);
  p = pick(128, 4096, 14336);  // 22 tiles: 6 splits
  EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(p.splits, 6);
  // whole rounds: nothing to split
  EXPECT_EQ(pick(128 * 12, 192 * 11, 8192).decomposition, Decomposition::kDataParallel);
}

// Block-scaled e4m3 rows: CUTLASS's 128x128 (stream-K capable), the own 128x192 and 128x128.
constexpr KernelSpec block_spec(const char* name, int tn, Schedule sched, bool sk) {
  KernelSpec k = spec(name, 128, tn, sched, sk);
  k.operands = Operands::kE4M3;
  k.scaling = Scaling::kBlock;
  return k;
}
constexpr KernelSpec kBlockCutlass = block_spec("block cutlass", 128, Schedule::kCooperative, true);
constexpr KernelSpec kBlockOwn = block_spec("block own", 192, Schedule::kFp8Promoted, false);
constexpr KernelSpec kBlockOwn128 = block_spec("block own 128", 128, Schedule::kFp8Promoted, false);

TEST(GemmPlan, OwnBlockScaledKernelOnlyWhereItsGridIsNotMuchEmptier) {
  const KernelSpec &cutlass = kBlockCutlass, &own = kBlockOwn;
  const KernelSpec* group[] = {&cutlass, &own};
  auto pick = [&](int64_t m, int64_t n, int64_t k) {
    return choose_plan(group, 2, m, n, k, 1, kSms).kernel;
  };
  // SM rounds x tile area of the own 128x192 grid against CUTLASS's 128x128 one (columns of 128
  // rows), own / CUTLASS measured (H100, session 38)
  EXPECT_EQ(pick(8192, 8192, 8192), &own);       // 21 x 192 vs 32 x 128: 0.98, 1.25x
  EXPECT_EQ(pick(16384, 8192, 8192), &own);      // 42 x 192 vs 63 x 128: 1.00, 1.26x
  EXPECT_EQ(pick(16384, 7168, 2048), &own);      // 37 x 192 vs 55 x 128: 1.01, 1.33x
  EXPECT_EQ(pick(8192, 4096, 14336), &own);      // 11 x 192 vs 16 x 128: 1.03, 1.08x
  EXPECT_EQ(pick(4096, 7168, 16384), &own);      // 10 x 192 vs 14 x 128: 1.07, 1.05x
  EXPECT_EQ(pick(2048, 7168, 16384), &own);      // 5 x 192 vs 7 x 128: 1.07, 1.04x
  EXPECT_EQ(pick(4096, 4096, 4096), &own);       // 6 x 192 vs 8 x 128: 1.125, 1.07x
  EXPECT_EQ(pick(1024, 7168, 4096), &own);       // 3 x 192 vs 4 x 128: 1.125, 1.08x
  // one own round and a bit against CUTLASS's two: 1.5, CUTLASS; with the own split tail
  // (its last round counted 100 / splits + 25 hundredths) 1.06 and 1.19
  EXPECT_EQ(pick(512, 7168, 16384), &own);       // 1 + 20 tiles, 6 splits
  EXPECT_EQ(pick(1024, 4096, 4096), &cutlass);   // 1 + 44 tiles, 3 splits
  EXPECT_EQ(pick(2048, 2048, 8192), &cutlass);   // 1 + 44 tiles, 3 splits
  // a full last wave: 132 x 192 columns, 128 rows
  EXPECT_EQ(pick(128 * 2, 192 * 132, 4096), &own);
}

TEST(GemmPlan, OwnBlockScaled128x128WhereTheWideGridIsMuchEmptier) {
  const KernelSpec &cutlass = kBlockCutlass, &own = kBlockOwn, &own128 = kBlockOwn128;
  const KernelSpec* group[] = {&cutlass, &own, &own128};
  auto pick = [&](int64_t m, int64_t n, int64_t k) {
    return choose_plan(group, 3, m, n, k, 1, kSms);
  };
  // the wide tile where its grid is at most 15 % emptier (never the narrow-tile rule of
  // tensor scaling: 4096^3 has 11 % fewer wave-columns at 128, but the wide tile wins there)
  EXPECT_EQ(pick(8192, 8192, 8192).kernel, &own);
  EXPECT_EQ(pick(4096, 7168, 16384).kernel, &own);
  EXPECT_EQ(pick(4096, 4096, 4096).kernel, &own);
  EXPECT_EQ(pick(1024, 7168, 4096).kernel, &own);
  EXPECT_EQ(pick(512, 7168, 16384).kernel, &own);  // with a split tail
  EXPECT_EQ(pick(512, 7168, 16384).decomposition, Decomposition::kSplitTail);
  // at M <= 256 the split round counts whole: 128x28672 (own 150 tiles, 7 splits) stays on the
  // own 128x128 (224 tiles: 0.975 against 0.930 with the split tail, H100)
  EXPECT_EQ(pick(128, 28672, 8192).kernel, &own128);
  EXPECT_EQ(pick(512, 28672, 8192).kernel, &own);
  // past that the own 128x128 where CUTLASS would run data-parallel
  EXPECT_EQ(pick(1024, 4096, 4096).kernel, &own128);
  EXPECT_EQ(pick(2048, 2048, 8192).kernel, &own128);
  EXPECT_EQ(pick(2048, 2048, 8192).decomposition, Decomposition::kDataParallel);
  // where CUTLASS would split K (fewer tiles than SMs): the own 128x128, whole up to K = 4096
  // and with 2 splits below K = 12288, split where K > 4096 with 3 or more splits, and from
  // K = 12288 with 2 or more
  EXPECT_EQ(pick(256, 4096, 8192).kernel, &own128);  // 64 tiles: 2 splits
  EXPECT_EQ(pick(256, 4096, 8192).decomposition, Decomposition::kDataParallel);
  EXPECT_EQ(pick(128, 4096, 4096).kernel, &own128);  // 32 tiles, 8 k-blocks a split, K = 4096
  EXPECT_EQ(pick(128, 4096, 4096).decomposition, Decomposition::kDataParallel);
  EXPECT_EQ(pick(128, 4096, 8192).kernel, &own128);  // 32 tiles: 4 splits
  EXPECT_EQ(pick(128, 4096, 8192).decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(pick(128, 4096, 8192).splits, 4);
  EXPECT_EQ(pick(256, 4096, 16384).kernel, &own128);
  EXPECT_EQ(pick(256, 4096, 16384).decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(pick(256, 7168, 16384).kernel, &own128);  // 112 tiles: no split, data-parallel
  // CUTLASS's stream-K (a ragged second wave) by the same measure, its rounds counted as
  // tiles / SMs: 1280x2048 (CUTLASS 160 tiles, 1.21 rounds; own 110 tiles, one round: 1.24x)
  // stays; 768x4096 (CUTLASS 192 tiles, 1.45 rounds; own 132, one round: 1.03x) moves
  EXPECT_EQ(pick(1280, 2048, 8192).kernel, &cutlass);
  EXPECT_EQ(pick(1280, 2048, 8192).decomposition, Decomposition::kStreamK);
  EXPECT_EQ(pick(768, 4096, 7168).kernel, &own);
  EXPECT_EQ(pick(768, 4096, 7168).decomposition, Decomposition::kDataParallel);
}

constexpr KernelSpec fp8_spec(const char* name, int tn, Schedule sched, bool sk) {
  KernelSpec k = spec(name, 128, tn, sched, sk);
  k.operands = Operands::kE4M3;
  k.scaling = Scaling::kTensorRow;
  k.tile_k = 128;
  return k;
}

// CUTLASS's fp8 64x64 ping-pong row (2x1 clusters)
constexpr KernelSpec fp8_pingpong_64x64() {
  KernelSpec t = fp8_spec("pp_64x64", 64, Schedule::kPingpong, false);
  t.tile_m = 64;
  t.cluster_m = 2;
  return t;
}

// The e4m3 -> bf16 tensor / row group's rows as the fp8 tests below use them: CUTLASS's 128x128,
// the own 128x192 and 128x160, the 2x1 64x64 ping-pong.
constexpr KernelSpec kFp8Cutlass = fp8_spec("fp8 cutlass", 128, Schedule::kCooperative, true);
constexpr KernelSpec kFp8Own192 = fp8_spec("own 128x192", 192, Schedule::kFp8Promoted, false);
constexpr KernelSpec kFp8Own160 = fp8_spec("own 128x160", 160, Schedule::kFp8Promoted, false);
constexpr KernelSpec kFp8Tiny = fp8_pingpong_64x64();

// A row in 1x4 clusters along N (A multicast).
constexpr KernelSpec in_1x4_clusters(KernelSpec k) {
  k.cluster_m = 1;
  k.cluster_n = 4;
  return k;
}

// fp8 with a 64-row ping-pong tile (e4m3 x e4m3, tensor / row scaling): that tile wherever its
// CTAs (2x1 clusters) fit one wave, past K = 8192 only if they fill more than half of it; two
// waves, ragged or not, M > 256 and few CTAs with a long K go to the own kernel's rules.
TEST(GemmPlan, Fp8SmallMUsesThe64RowTileInOneWave) {
  const KernelSpec* group[] = {&kFp8Cutlass, &kFp8Own192, &kFp8Own160, &kFp8Tiny};
  auto pick = [&](int64_t m, int64_t n, int64_t k) {
    return choose_plan(group, 4, m, n, k, 1, kSms);
  };
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 4096, 4096}, {128, 4096, 4096},
                         {128, 4096, 14336}, {1, 1024, 8192}, {256, 2048, 8192},
                         {16, 4096, 7168}, {1, 64, 8192}, {1, 64, 4096}}) {
    const Plan p = pick(m, n, k);
    EXPECT_EQ(p.kernel, &kFp8Tiny) << m << "x" << n << "x" << k;
    EXPECT_EQ(p.decomposition, Decomposition::kDataParallel) << m << "x" << n << "x" << k;
  }
  // two waves (256 CTAs), even or not, and many: the own 128x160
  EXPECT_EQ(pick(256, 4096, 4096).kernel, &kFp8Own160);
  EXPECT_EQ(pick(1, 8192, 8192).kernel, &kFp8Own160);
  EXPECT_EQ(pick(64, 6144, 4096).kernel, &kFp8Own160);
  EXPECT_EQ(pick(1, 14336, 4096).kernel, &kFp8Own160);
  EXPECT_EQ(pick(512, 1024, 4096).kernel, &kFp8Own160);  // M > 256
  // half a wave or less past K = 8192: the own split tail (1x1024: 7 tiles of 128x160, 16 splits)
  EXPECT_EQ(pick(1, 1024, 16384).kernel, &kFp8Own160);
  EXPECT_EQ(pick(1, 1024, 16384).decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(pick(1, 1024, 16384).splits, 16);
  EXPECT_EQ(pick(32, 4096, 14336).kernel, &kFp8Tiny);  // 128 CTAs
}

// fp8 with at most 16 rows of A (one m-block of the skinny kernel): the skinny kernel, in every
// fp8 group that has one (tensor / row and block scaling alike), whatever N, K and batch; 17 rows
// and more go to the tile rules.
TEST(GemmPlan, Fp8SkinnyKernelUpTo16Rows) {
  KernelSpec sk = fp8_spec("skinny", 32, Schedule::kSkinny, false);
  sk.tile_m = 16;
  const KernelSpec skinny = sk;
  const KernelSpec* group[] = {&kFp8Cutlass, &kFp8Own192, &kFp8Own160, &kFp8Tiny, &skinny};
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 4096, 4096}, {16, 4096, 4096},
                         {8, 57344, 8192}, {1, 7, 1}, {16, 1024, 65536}, {3, 28672, 4096}}) {
    const Plan p = choose_plan(group, 5, m, n, k, 1, kSms);
    EXPECT_EQ(p.kernel, &skinny) << m << "x" << n << "x" << k;
    EXPECT_EQ(p.decomposition, Decomposition::kDataParallel) << m << "x" << n << "x" << k;
  }
  EXPECT_EQ(choose_plan(group, 5, 4, 4096, 4096, 8, kSms).kernel, &skinny);  // batched
  EXPECT_NE(choose_plan(group, 5, 4, 64, 64, 65536, kSms).kernel, &skinny);  // grid z: 65535
  EXPECT_EQ(choose_plan(group, 5, 17, 4096, 4096, 1, kSms).kernel, &kFp8Tiny);
  EXPECT_EQ(choose_plan(group, 5, 17, 8192, 8192, 1, kSms).kernel, &kFp8Own160);
  // without a skinny row the tile rules as before
  EXPECT_EQ(choose_plan(group, 4, 1, 4096, 4096, 1, kSms).kernel, &kFp8Tiny);
  // block scaling (own 128x192 / 128x128 and CUTLASS 128x128 besides)
  KernelSpec bsk = sk;
  bsk.scaling = Scaling::kBlock;
  const KernelSpec block_skinny = bsk;
  const KernelSpec* block[] = {&kBlockCutlass, &kBlockOwn, &kBlockOwn128, &block_skinny};
  EXPECT_EQ(choose_plan(block, 4, 16, 4096, 14336, 1, kSms).kernel, &block_skinny);
  EXPECT_EQ(choose_plan(block, 4, 17, 4096, 14336, 1, kSms).kernel, &kBlockOwn128);
}

// fp8 with one 64-row tile of A (17 <= M <= 64): the 64x64 ping-pong tile in 1x4 clusters where
// its clusters (30 at once on 132 SMs) fit one wave or fill their last one at least half.
TEST(GemmPlan, Fp8FourClusterTileForOne64RowTile) {
  constexpr KernelSpec n4 = in_1x4_clusters(fp8_pingpong_64x64());
  const KernelSpec* group[] = {&kFp8Cutlass, &kFp8Own192, &kFp8Own160, &kFp8Tiny, &n4};
  // one wave (<= 30 clusters of 4 CTAs), a last wave >= half full, whole waves
  for (auto [m, n, k] : {std::array<int64_t, 3>{64, 6144, 4096}, {17, 6144, 4096},
                         {64, 7680, 8192}, {33, 4096, 14336}, {64, 12288, 8192},
                         {64, 28672, 4096}, {64, 15360, 4096}, {64, 64, 100}}) {
    EXPECT_EQ(choose_plan(group, 5, m, n, k, 1, kSms).kernel, &n4) << m << "x" << n << "x" << k;
  }
  EXPECT_EQ(choose_plan(group, 5, 64, 3840, 4096, 2, kSms).kernel, &n4);   // 2 x 15 clusters
  EXPECT_NE(choose_plan(group, 5, 64, 4096, 4096, 4, kSms).kernel, &n4);   // 4 x 16: 64
  // many waves with a last one under half full: fp8 keeps the own tile (measured even)
  EXPECT_NE(choose_plan(group, 5, 64, 57344, 8192, 1, kSms).kernel, &n4);
  // just past a whole wave: the rules of before
  for (auto [m, n, k] : {std::array<int64_t, 3>{64, 8192, 8192}, {64, 9216, 4096},
                         {64, 16384, 4096}, {128, 4096, 4096}, {65, 6144, 4096},
                         {64, 2048, 16384}}) {
    EXPECT_NE(choose_plan(group, 5, m, n, k, 1, kSms).kernel, &n4) << m << "x" << n << "x" << k;
  }
  // without the row, the plans of before
  EXPECT_NE(choose_plan(group, 4, 64, 6144, 4096, 1, kSms).kernel, &n4);
}

// fp8 with one 128-row tile of A (65 <= M <= 128) where the 2x1 64x64 tile does not fit one wave:
// the cooperative 128x64 tile in 1x4 clusters where they fit one wave.
TEST(GemmPlan, Fp8FourClusterTileForOne128RowTile) {
  constexpr KernelSpec n4 =
      in_1x4_clusters(fp8_spec("128x64 1x4", 64, Schedule::kCooperative, false));
  const KernelSpec* group[] = {&kFp8Cutlass, &kFp8Own192, &kFp8Own160, &kFp8Tiny, &n4};
  for (auto [m, n, k] : {std::array<int64_t, 3>{128, 6144, 4096}, {96, 6144, 4096},
                         {65, 6144, 4096}, {128, 7680, 8192}, {80, 6144, 8192},
                         {128, 5120, 14336}}) {
    EXPECT_EQ(choose_plan(group, 5, m, n, k, 1, kSms).kernel, &n4) << m << "x" << n << "x" << k;
  }
  // the 2x1 64x64 tile fits one wave; more than one wave of clusters; two row tiles
  EXPECT_EQ(choose_plan(group, 5, 128, 4096, 4096, 1, kSms).kernel, &kFp8Tiny);
  EXPECT_EQ(choose_plan(group, 5, 128, 4096, 14336, 1, kSms).kernel, &kFp8Tiny);
  for (auto [m, n, k] : {std::array<int64_t, 3>{128, 8192, 8192}, {128, 12288, 4096},
                         {128, 28672, 4096}, {128, 14336, 8192}, {256, 6144, 4096},
                         {64, 6144, 4096}, {16, 6144, 4096}}) {
    EXPECT_NE(choose_plan(group, 5, m, n, k, 1, kSms).kernel, &n4) << m << "x" << n << "x" << k;
  }
}

TEST(GemmPlan, OwnNarrowTileWhereCutlassWouldSplitK) {
  const KernelSpec* group[] = {&kFp8Cutlass, &kFp8Own192, &kFp8Own160};
  auto pick = [&](int64_t m, int64_t n, int64_t k) {
    return choose_plan(group, 3, m, n, k, 1, kSms);
  };
  // 128x4096x14336: CUTLASS 32 tiles split-K; the own 128x160, 26 tiles x 5 splits
  Plan p = pick(128, 4096, 14336);
  EXPECT_EQ(p.kernel, &kFp8Own160);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(p.splits, 5);
  EXPECT_EQ(pick(256, 4096, 14336).splits, 2);  // 52 tiles
  // K > 4096: split where that makes 3 or more (26 tiles: 5; 7 tiles: 16, the most)
  p = pick(128, 4096, 8192);
  EXPECT_EQ(p.kernel, &kFp8Own160);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(p.splits, 5);
  EXPECT_EQ(pick(1, 1024, 8192).splits, 16);
  // ... else whole: 52 tiles at K = 8192 (2 splits), and up to K = 4096 however few the tiles
  for (auto [m, n, k] : {std::array<int64_t, 3>{128, 8192, 8192}, {256, 4096, 8192},
                         {128, 4096, 4096}, {1, 1024, 4096}, {64, 4096, 1024}}) {
    p = pick(m, n, k);
    EXPECT_EQ(p.kernel, &kFp8Own160) << m << "x" << n << "x" << k;
    EXPECT_EQ(p.decomposition, Decomposition::kDataParallel) << m << "x" << n << "x" << k;
  }
  // K too short for CUTLASS to split (fewer than 8 k-tiles): its plan, data-parallel, which the
  // own kernel replaces as anywhere else
  EXPECT_EQ(pick(128, 4096, 512).decomposition, Decomposition::kDataParallel);
  // 16-bit operands keep CUTLASS's split-K below K = 12288 (bf16 group: 128x256 tiles of
  // CUTLASS and its own, 512x4096x10240 reaches the split-K rule with 64 tiles)
  constexpr KernelSpec own16 = spec("own 128x256", 128, 256, Schedule::kFp8Promoted, false);
  const KernelSpec* bf16_group[] = {&kBig, &kSmall, &kNarrow, &kPingpong, &own16};
  p = choose_plan(bf16_group, 5, 512, 4096, 10240, 1, kSms);
  EXPECT_EQ(p.kernel, &kBig);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitK);
  p = choose_plan(bf16_group, 5, 512, 4096, 16384, 1, kSms);
  EXPECT_EQ(p.kernel, &own16);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
  // block scaling: the own 128x128
  const KernelSpec* block[] = {&kBlockCutlass, &kBlockOwn, &kBlockOwn128};
  p = choose_plan(block, 3, 128, 4096, 14336, 1, kSms);
  EXPECT_EQ(p.kernel, &kBlockOwn128);
  EXPECT_EQ(p.decomposition, Decomposition::kSplitTail);
  EXPECT_EQ(p.splits, 4);
}

TEST(GemmPlan, OwnNarrowTileOnlyWhereItCutsTheWaveColumns) {
  constexpr KernelSpec cutlass = spec("fp8 cutlass", 128, 128, Schedule::kCooperative, true);
  // fp8 operands: 16-bit groups pick their narrower own tile by the two-round rule instead
  constexpr auto fp8 = [](KernelSpec k) {
    k.operands = Operands::kE4M3;
    return k;
  };
  constexpr KernelSpec wide = fp8(spec("own 128x192", 128, 192, Schedule::kFp8Promoted, false));
  constexpr KernelSpec narrow = fp8(spec("own 128x160", 128, 160, Schedule::kFp8Promoted, false));
  // table order: the wide row first
  for (const auto& group : {std::array<const KernelSpec*, 3>{&cutlass, &wide, &narrow},
                            std::array<const KernelSpec*, 3>{&wide, &narrow, &cutlass}}) {
    auto pick = [&](int64_t m, int64_t n, int64_t k) {
      return choose_plan(group.data(), 3, m, n, k, 1, kSms).kernel;
    };
    // 4096x7168: 10 waves x 192 = 1920 against 11 x 160 = 1760 (-8.3 %): the narrow tile
    EXPECT_EQ(pick(4096, 7168, 16384), &narrow);
    // near ties and wins of the wide tile (measured slower on 160 columns, H100)
    EXPECT_EQ(pick(8192, 8192, 8192), &wide);     // 21 x 192 vs 26 x 160
    EXPECT_EQ(pick(2048, 7168, 16384), &wide);    // 5 x 192 vs 6 x 160
    EXPECT_EQ(pick(8192, 4096, 14336), &wide);    // 11 x 192 vs 13 x 160
    EXPECT_EQ(pick(16384, 7168, 2048), &wide);    // 37 x 192 vs 44 x 160
    EXPECT_EQ(pick(4096, 4096, 4096), &wide);     // 6 x 192 vs 7 x 160
    // M = 128: fp8 leaves CUTLASS's split-K for the narrower own tile (session 41)
    EXPECT_EQ(pick(128, 6144, 4096), &narrow);
  }
  // the own kernels alone (no CUTLASS row): the same choice
  const KernelSpec* own_only[] = {&wide, &narrow};
  EXPECT_EQ(choose_plan(own_only, 2, 4096, 7168, 16384, 1, kSms).kernel, &narrow);
  EXPECT_EQ(choose_plan(own_only, 2, 8192, 8192, 8192, 1, kSms).kernel, &wide);
}


// The rows of the compiled table without their launch functions (which exist only in CUDA
// builds), so this runs in every build.
#define DW_TEST_ROW(name, ops, out, ak, bk, sc, tm, tn, tk, cm, cn, sched, sk)                     \
  KernelSpec{#name, Operands::ops, DType::out, ak, bk, Scaling::sc, tm, tn, tk, cm, cn,             \
             Schedule::sched, sk, nullptr, nullptr},
constexpr KernelSpec kTableRows[] = {DW_SM90_GEMM_KERNELS(DW_TEST_ROW)};
#undef DW_TEST_ROW

// Every 16-bit group of the compiled table (bf16 / fp16, x @ w.t() and x @ w, same-type output)
// holds the same five rows, so the shape rules make the same choice for each: 128x256, 128x128
// and 128x64 cooperative with stream-K, and the 128x128 and 64x64 ping-pong rows; x @ w.t() (bf16
// and fp16) also has the own main loop's 128x256, and bf16 x @ w.t() 64x96 and 64x160 ping-pong
// rows.
TEST(GemmPlan, Every16BitGroupHasTheSameTiles) {
  struct Group {
    Operands ops;
    DType out;
    bool b_k_major;
  };
  for (Group g : {Group{Operands::kBF16, DType::kBF16, true},
                  Group{Operands::kBF16, DType::kBF16, false},
                  Group{Operands::kF16, DType::kF16, true},
                  Group{Operands::kF16, DType::kF16, false}}) {
    const bool wide_tiny = g.ops == Operands::kBF16 && g.b_k_major;
    const bool own = g.b_k_major;  // x @ w.t(): the own main loop's 128x256 row too
    std::array<const KernelSpec*, 12> group{};
    size_t count = 0;
    for (const KernelSpec& k : kTableRows) {
      if (k.operands == g.ops && k.out == g.out && k.a_k_major && k.b_k_major == g.b_k_major &&
          count < group.size()) {
        group[count++] = &k;
      }
    }
    SCOPED_TRACE(std::string(group[0] != nullptr ? group[0]->name : "empty group"));
    // x @ w.t() also has the own main loop's 128x256 row, bf16 two more ping-pong tiles and
    // two 1x4-cluster ones
    // (bf16 x @ w.t() also the own 128x192)
    ASSERT_EQ(count, 5u + (own ? 1u : 0u) + (wide_tiny ? 5u : 0u));
    auto pick = [&](int64_t m, int64_t n, int64_t k) {
      const KernelSpec* s = choose_plan(group.data(), count, m, n, k, 1, kSms).kernel;
      return std::make_pair(std::make_pair(s->tile_m, s->tile_n), s->schedule);
    };
    using P = std::pair<std::pair<int, int>, Schedule>;
    EXPECT_EQ(pick(128, 4096, 4096), P({64, 64}, Schedule::kPingpong));
    // bf16 x @ w.t(): the 1x4-cluster tiles at one 64-row tile in a wave that fits, and at one
    // 128-row tile with many waves of clusters
    auto cluster_n = [&](int64_t m, int64_t n, int64_t k) {
      return choose_plan(group.data(), count, m, n, k, 1, kSms).kernel->cluster_n;
    };
    EXPECT_EQ(cluster_n(64, 4096, 4096) == 4, wide_tiny);
    EXPECT_EQ(cluster_n(64, 6144, 4096) == 4, wide_tiny);
    EXPECT_NE(cluster_n(64, 8192, 8192), 4);
    EXPECT_EQ(cluster_n(64, 57344, 8192) == 4, wide_tiny);  // 8 waves, 7 % of slots idle
    // (at K = 4096-8192 the own 128x256 where the group has it)
    EXPECT_EQ(cluster_n(128, 57344, 8192) == 4, wide_tiny && !own);
    EXPECT_EQ(cluster_n(128, 57344, 16384) == 4, wide_tiny);
    if (wide_tiny) {
      EXPECT_EQ(pick(128, 57344, 8192), own ? P({128, 256}, Schedule::kFp8Promoted)
                                            : P({128, 64}, Schedule::kCooperative));
      EXPECT_EQ(pick(128, 57344, 16384), P({128, 64}, Schedule::kCooperative));
    }
    EXPECT_NE(cluster_n(128, 10240, 8192), 4);
    EXPECT_NE(cluster_n(128, 28672, 4096), 4);
    EXPECT_EQ(pick(128, 6144, 4096),
              wide_tiny ? P({64, 96}, Schedule::kPingpong) : P({128, 64}, Schedule::kCooperative));
    EXPECT_EQ(pick(128, 10240, 8192), wide_tiny ? P({64, 160}, Schedule::kPingpong)
                                                : P({128, 128}, Schedule::kCooperative));
    // one wave of the own 128x256 tile, at least 5/6 full, where the group has it
    EXPECT_EQ(pick(1024, 4096, 4096), own ? P({128, 256}, Schedule::kFp8Promoted)
                                          : P({128, 128}, Schedule::kPingpong));
    EXPECT_EQ(pick(128, 28672, 4096), own ? P({128, 256}, Schedule::kFp8Promoted)
                                          : P({128, 128}, Schedule::kCooperative));
    // two rounds, the second >= 5/6 full: the own 128x256 (2048x4096: 256 tiles), else the
    // own 128x192 (bf16 only; 1024x6144: 192 tiles of 128x256, 256 of 128x192)
    EXPECT_EQ(pick(2048, 4096, 4096), own ? P({128, 256}, Schedule::kFp8Promoted)
                                          : P({128, 128}, Schedule::kPingpong));
    EXPECT_EQ(pick(1024, 6144, 4096), wide_tiny ? P({128, 192}, Schedule::kFp8Promoted)
                                                : P({128, 128}, Schedule::kPingpong));
    EXPECT_EQ(pick(1536, 4096, 4096), wide_tiny ? P({128, 192}, Schedule::kFp8Promoted)
                                                : P({128, 128}, Schedule::kPingpong));
    EXPECT_EQ(pick(256, 28672, 4096).second, Schedule::kCooperative);  // M <= 256: not measured
    EXPECT_EQ(pick(4096, 4096, 4096), P({128, 128}, Schedule::kPingpong));
    // stream-K on CUTLASS's 128x256, but the own 128x256 data-parallel up to K = 8192
    EXPECT_EQ(pick(8192, 8192, 8192), own ? P({128, 256}, Schedule::kFp8Promoted)
                                          : P({128, 256}, Schedule::kCooperative));
    EXPECT_EQ(pick(16384, 8192, 28672), P({128, 256}, Schedule::kCooperative));
    // data-parallel 128x256: the own main loop where the group has it
    EXPECT_EQ(pick(16384, 28672, 4096), own ? P({128, 256}, Schedule::kFp8Promoted)
                                            : P({128, 256}, Schedule::kCooperative));
    EXPECT_EQ(pick(4096, 4096, 14336), own ? P({128, 256}, Schedule::kFp8Promoted)
                                           : P({128, 256}, Schedule::kCooperative));
  }
}

// CUTLASS's scheduler runs whole swizzle strips (padding tiles included), so the tile orders that
// swizzle are only chosen where they pad the grid little; measured on the compiled rows (2x1
// clusters): 1024x4096x4096 ping-pong with swizzle 8 ran 0.38x torch.matmul, with 4 0.96x.
// (The CUTLASS rows of bf16 x @ w.t(): with the own 128x256 row in the group, that one takes the
// data-parallel 128x256 plans, and its scheduler has no padding.)
TEST(GemmPlan, SwizzledOrdersOnlyWhereTheyPadLittle) {
  std::array<const KernelSpec*, 10> group{};
  size_t count = 0;
  const KernelSpec* pingpong = nullptr;
  const KernelSpec* big = nullptr;
  for (const KernelSpec& k : kTableRows) {
    if (k.operands == Operands::kBF16 && k.out == DType::kBF16 && k.a_k_major && k.b_k_major &&
        k.schedule != Schedule::kFp8Promoted && count < group.size()) {
      group[count++] = &k;
      if (k.name == "bf16_kk_bf16_pp_128x128") pingpong = &k;
      if (k.name == "bf16_kk_bf16_128x256") big = &k;
    }
  }
  ASSERT_NE(pingpong, nullptr);
  ASSERT_NE(big, nullptr);
  ASSERT_EQ(pingpong->cluster_m, 2);
  EXPECT_EQ(scheduled_tiles(*pingpong, 1024, 4096, 1, 1), 8 * 32);
  EXPECT_EQ(scheduled_tiles(*pingpong, 1024, 4096, 1, 4), 8 * 32);
  EXPECT_EQ(scheduled_tiles(*pingpong, 1024, 4096, 1, 8), 16 * 32);   // half of them padding
  EXPECT_EQ(scheduled_tiles(*pingpong, 1152, 4096, 1, 1), 10 * 32);   // 9 rows, cluster pairs
  EXPECT_EQ(scheduled_tiles(*pingpong, 1152, 4096, 1, 4), 16 * 32);
  EXPECT_EQ(scheduled_tiles(*pingpong, 1000, 1104, 3, 4), 8 * 12 * 3);
  EXPECT_EQ(scheduled_tiles(*pingpong, 200, 4096, 1, 4), 4 * 32);     // 2 rows: strips of 2
  auto plan = [&](int64_t m, int64_t n, int64_t k) {
    return choose_plan(group.data(), count, m, n, k, 1, kSms);
  };
  struct Case {
    int64_t m, n, k;
    const KernelSpec* kernel;
    int32_t raster, swizzle;
  };
  const Case cases[] = {
      {1024, 4096, 4096, pingpong, 2, 4},  // 8 x 32 tiles: no padding
      {3000, 4096, 4096, pingpong, 2, 4},  // 24 x 32
      {1152, 4096, 4096, pingpong, 0, 1},  // 9 rows would run as 16
      {1000, 1104, 520, pingpong, 0, 1},   // 9 columns would run as 12
      {4100, 4096, 4096, pingpong, 0, 1},  // 33 rows (34 in cluster pairs) would run as 40
      {5120, 28672, 4096, big, 0, 2},      // 40 x 112 tiles of 128x256, data-parallel
      {4352, 28672, 8192, big, 0, 1},      // 34 rows would run as 36 (+5.9 %)
  };
  for (const Case& c : cases) {
    const Plan p = plan(c.m, c.n, c.k);
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
    EXPECT_EQ(p.kernel, c.kernel);
    EXPECT_EQ(p.decomposition, Decomposition::kDataParallel);
    EXPECT_EQ(p.raster, c.raster);
    EXPECT_EQ(p.swizzle, c.swizzle);
  }
}

}  // namespace
