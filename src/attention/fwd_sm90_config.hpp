// Tile configuration of the sm_90 attention forward kernel, per head-dimension bucket.
//
// This small table is the one place where tile sizes live. The kernel is instantiated once per
// (dtype, bucket, tile) in src/attention/fwd_sm90_inst_*.cu; head dims below a bucket's size run on
// that bucket with the extra columns zero-filled by TMA (so d = 96 runs on the 128 kernel).
//
// Why these numbers (docs/perf-notes.md has the measurements):
//  - kBlockM = 64 rows per consumer warpgroup (one wgmma M), so kBlockM / 64 consumer warpgroups.
//  - kBlockN: the widest key tile whose S accumulator, P, O and the next S fit in the consumer's
//    register budget (240 registers with 2 consumer warpgroups, 160 with 3), and whose K/V stages
//    fit in shared memory next to Q.
//  - kStages: 2 K/V stages leave room for O's own buffer (d <= 128); 3 helped only d = 64 (+1%).
#pragma once

namespace deepwell::attention::sm90 {

// A tile policy: query rows per CTA tile (kBlockM, 64 per consumer warpgroup), keys per step of
// the mainloop (kBlockN), K/V pipeline depth (kStages) and CTAs resident per SM (kCtasPerSm: the
// CTAs split the SM's registers and shared memory; the persistent grid has kCtasPerSm per SM).
template <int kBlockM_, int kBlockN_, int kStages_, int kCtasPerSm_ = 1>
struct TilePolicy {
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kStages = kStages_;
  static constexpr int kCtasPerSm = kCtasPerSm_;
};

// The tile of each head-dimension bucket when no mask bounds the keys on the right.
template <int kHeadDim>
struct FwdTile;
template <> struct FwdTile<64> : TilePolicy<192, 128, 3> {};   // 3 consumer warpgroups
template <> struct FwdTile<128> : TilePolicy<128, 128, 2> {};  // 2 consumer warpgroups
template <> struct FwdTile<256> : TilePolicy<128, 64, 2> {};   // 2 consumer warpgroups

// Causal (and right-bounded window) d = 64 with short queries (seqlen_q <= 1024) and longer keys
// runs 128-row tiles: on the diagonal a 192-row tile computes more masked scores, and at short S
// that waste and the per-tile cost dominate (H100 A/B x cuDNN, 128x128 -> 192x96: S=512 0.82 ->
// 0.75, 1k 0.87 -> 0.83).
struct FwdTileD64Causal : TilePolicy<128, 128, 2> {};
constexpr long long kD64CausalTileMaxSeqlenQ = 1024;
// With short keys too (seqlen_q and seqlen_k <= 1408), 64-row tiles of 64 keys, three CTAs per SM
// (one consumer warpgroup each, 136 registers): tiles average ~2.5 key blocks at S = 512, so a CTA
// spends most of its time in the per-tile latency (Q wait, the first Q K^T and softmax alone, the
// epilogue) that other CTAs on the SM now fill (H200 A/B x cuDNN, 128x128 -> this: S=512 0.869 ->
// 1.025, 1k 0.903 -> 0.994; two CTAs of 64x128 gained 3 %; non-causal it loses 4-16 %; H100:
// S=512 0.871 -> 1.012-1.017, 1k 0.904 -> 0.970-0.978). Against the 3-warpgroup tile (H100, session
// 26): S=1152 0.932-0.936 (192x96) -> 0.946-0.952, 1280 0.832-0.834 -> 0.948-0.958, 1408 0.913-0.920
// (192x128) -> 0.942-0.961; from 1472 the 192x128 tile wins (1472 0.981 -> 1.002, 1536 0.941-0.954
// -> 0.991-0.994, 2k 0.918-0.926 -> 0.993-0.994).
struct FwdTileD64CausalShort : TilePolicy<64, 64, 3, 3> {};
constexpr long long kD64CausalShortTileMaxSeqlen = 1408;
// The same tile, whatever the mask, for at most 64 query rows (decoding steps): a 192- or 128-row
// tile would compute 191 or 127 idle rows per query row, and d = 64 has so little memory traffic
// per score that this work, not the K/V reads, would set the time (H100, split-KV, B=1 Sq=1
// Sk=16k H=16: 36.7 us on the 192x128 tile against cuDNN's 27.8; perf-notes attention item 48).
constexpr long long kShortQueryTileMaxSeqlenQ = 64;
// d = 128 and d = 256 with at most 64 query rows (decoding steps, packed GQA groups, short
// speculative chunks): one 64-row consumer warpgroup instead of two, so a one-row unit computes 63
// idle rows instead of 127 (H100 A/B, CUDA-graph time, 128-row tile -> this: MHA one-row steps
// d = 128 +2-4 %, packed GQA Hkv = 8 +2-19 % (B=1 Sk=2k 12.0 -> 10.1 us, 8k 22.9 -> 21.0), d = 256
// B=1 Sk=16k H=8 62.1 -> 55.8 us, the unsplit B=8 Sq=1 d = 128 step +0.5 %; perf-notes attention
// item 49). Two K/V stages, so Q is double-buffered: three stages (Q single-buffered) measured
// 1-3 % slower than two, and 1.4 % slower than the 128-row tile on that unsplit step.
struct FwdTileD128Short : TilePolicy<64, 128, 2> {};
struct FwdTileD256Short : TilePolicy<64, 64, 2> {};

// d = 128 with long keys (seqlen_k >= kNoPingpongMinSeqlenK, where its warpgroups do not take
// turns): FwdTile<128>'s shape and policies with the P V wait pinned (kPinPvWait), a separate
// instance because pinned with turns, below 2k keys, it loses 0.5-1.9 % (perf-notes item 53).
struct FwdTileD128Long : TilePolicy<128, 128, 2> {};
// From 8k keys (per sequence: a packed batch's average) with no mask but the ragged last block
// (not causal, no window), 144-key tiles with the P V wait pinned: one softmax hand-off and
// barrier round per 144 keys instead of 128 (H200 A/B x cuDNN, three runs, 128 -> 144 keys: 8k
// +1.5-2.0 %, 16k +3.0-3.7 %; perf-notes item 60). Below 8k the ragged last block costs too much
// (2k: 2160 keys computed for 2048, 1.017 -> 0.939; 4k 1.027 -> 1.014), and causal masks cut at
// 144 keys mask more blocks (causal 2k 1.110 -> 0.998, 8k 1.151 -> 1.144). The widest key tile
// without spill in this key loop (ptxas: 144 keys 0 bytes, 160 keys 64 / 104 stored / loaded, 176
// keys 108 / 132; both measured slower); wgmma N = 144 needs CuTe's extended shape list
// (src/kernel_instances.cmake).
struct FwdTileD128Wide : TilePolicy<128, 144, 2> {};
constexpr long long kD128WideTileMinSeqlenK = 8192;

// Longer queries run the unmasked tile, FwdTile<64> (192x128, the conditional rescale and the
// tree softmax), masked: since those two policies it beats the 192x96 tile that causal d = 64 ran
// from session 8 to 26 (no spill, but a third more softmax steps per key; H100 A/B x cuDNN,
// 192x96 -> 192x128: S=2k 0.973-0.978 -> 0.993-0.994, 3k 1.052-1.058 -> 1.080-1.081, 4k
// 1.048-1.051 -> 1.100-1.101, 8k 1.084 -> 1.141-1.142, 16k 1.101-1.109 -> 1.172-1.182; 1536
// 0.995-0.997 -> 0.991-0.994; perf-notes item 41).

// d = 256 runs its 64-key tile at every length. From session 5 to 32 it ran FA3's 80-key tile from
// 2k keys (non-causal; causal from 6k): one softmax pass per 80 keys paid then (H200, 64 -> 80
// keys: non-causal 8k 0.96 -> 1.03x cuDNN, causal 16k 1.10 -> 1.19). Since the 64-key tile pins
// its P V wait and takes turns at every length (items 53-54) it wins or ties everywhere (H100 A/B
// x cuDNN, 80 rep, 80 -> 64 keys: non-causal 2k 1.085 -> 1.135, 4k 1.114 -> 1.152, 8k 1.137 ->
// 1.161, 16k 1.167 -> 1.165; causal 2k 1.055 -> 1.131, 6k 1.248 -> 1.283, 16k 1.318 -> 1.330),
// and it has room for O's staging buffer at half width, which the 80-key tile did not.

// Ping-pong (the consumer warpgroups take turns issuing their wgmma batches, WarpGroupTurns in
// fwd_sm90_mainloop.cuh) pays where the softmax is a large share of a key step: d = 64, short keys,
// and d = 256 since its P V wait is pinned after the softmax (kPinPvWait). At d = 128 with long
// keys the warpgroups issue faster in whatever order they become ready (H100 A/B x cuDNN, bf16,
// turns -> no turns: d=128 S=2k-16k 0.989-0.992 -> 0.998-1.004 non-causal, 1.077-1.121 ->
// 1.077-1.135 causal; but d=64 S=4k 1.045 -> 1.013, d=128 causal S=512 0.950 -> 0.932, d=256
// S=512-1k 0.88-0.94 -> 0.86-0.93). d = 256 from 2k keys, pinned (session 32, two runs, no turns
// -> turns): non-causal 8k 1.140-1.142 -> 1.148-1.149, 16k 1.156-1.157 -> 1.165-1.170, causal 2k
// 1.118-1.121 -> 1.131-1.142, 4k 1.190-1.208 -> 1.210-1.223; 1k and non-causal 2k-4k within
// +-0.4 % (perf-notes item 53).
constexpr long long kNoPingpongMinSeqlenK = 2048;
constexpr bool use_pingpong(int head_dim_bucket, long long seqlen_k) {
  return head_dim_bucket != 128 || seqlen_k < kNoPingpongMinSeqlenK;
}
static_assert(use_pingpong(64, 1 << 20) && use_pingpong(128, 2047) && !use_pingpong(128, 2048) &&
              use_pingpong(256, 1 << 20));

// Conditional O rescale (OnlineSoftmax in fwd_sm90_softmax.cuh): the subtracted row max moves only
// past kRescaleLog2, and a warp none of whose rows moved skips O *= rescale. Measured per tile
// against the same tile without it (the previous kernel; perf-notes items 26-27):
//  - d = 256 (128 FMULs per thread and key block against 32 scores): H200 x cuDNN, non-causal
//    S=512-8k 0.940-1.060 -> 0.975-1.100, causal 0.932-1.209 -> 0.944-1.232.
//  - d = 64 unmasked 192x128: S=2k-16k 1.021-1.091 -> 1.039-1.110 (S <= 1k equal).
//  - the short d = 64 causal tile (64x64, three CTAs per SM; session 26, H100 x cuDNN, two runs):
//    S=768 0.985-0.991 -> 0.998-1.009, 1k 0.928-0.973 -> 0.988-1.000, 1280 0.972-0.977 ->
//    0.990-0.998, 512 0.999 -> 1.016 (the tree softmax on top: 0.5-1 % slower).
//  - not d = 128 (non-causal 1-1.5 % slower, causal equal) nor the d = 64 128x128 / 192x96 causal
//    tiles of session 23 (3-5 % slower at every S): there the vote and branch cost more than the
//    FMULs they skip.
template <class Tile>
constexpr bool kConditionalRescale = false;
template <>
constexpr bool kConditionalRescale<FwdTile<64>> = true;
template <>
constexpr bool kConditionalRescale<FwdTileD64CausalShort> = true;
template <>
constexpr bool kConditionalRescale<FwdTile<256>> = true;

// Causal masks tested against their upper bound only where there is no left window (apply_mask):
// the short-query d = 64 causal tile, whose diagonal blocks are ~40 % of its key steps at S = 512
// (H200 A/B x cuDNN, two bounds -> one: S=512 0.822 -> 0.852, 1k 0.877 -> 0.896, 2k 0.978 ->
// 0.995), and d = 128 (session 27, H100 A/B x cuDNN, four runs, causal: S=512 0.955-0.971 ->
// 0.968-0.986, 2k 1.085-1.098 -> 1.095-1.109, 8k 1.151-1.164 -> 1.163-1.170, 16k 1.140-1.149 ->
// 1.152-1.156; non-causal equal or +0.2 %; no spill either way; perf-notes item 43). The other
// tiles keep one mask code path: a second costs code size in the key loop (d = 256 -0.5 to -1.5 %
// non-causal, causal +-0.5 %; the unmasked d = 64 tile -4 to -9 %, it spills less but runs slower).
template <class Tile>
constexpr bool kOneBoundMask = false;
template <>
constexpr bool kOneBoundMask<FwdTile<128>> = true;
template <>
constexpr bool kOneBoundMask<FwdTileD128Long> = true;
template <>
constexpr bool kOneBoundMask<FwdTileD128Wide> = true;
template <>
constexpr bool kOneBoundMask<FwdTileD64Causal> = true;
template <>
constexpr bool kOneBoundMask<FwdTileD64CausalShort> = true;  // as measured (perf-notes item 34)

// Softmax with short dependency chains (OnlineSoftmax::step_tree in fwd_sm90_softmax.cuh: each
// row's max and sum over four partial results, all rows' phases side by side). Measured per tile
// against the same tile without it (H200 x cuDNN, perf-notes item 28): the unmasked d = 64 tile
// gains at every S (512 / 1k / 2k / 16k 0.946 / 0.954 / 1.040 / 1.108 -> 0.979 / 0.997 / 1.094 /
// 1.157); d = 128 non-causal and the d = 64 causal tiles of that session (128x128, 192x96) lose
// 1-2 %, d = 128 causal and d = 256 move within +-1 %. Why only that tile gains is not
// established (it is the one with the 136-byte spill and the conditional rescale).
template <class Tile>
constexpr bool kTreeSoftmax = false;
template <>
constexpr bool kTreeSoftmax<FwdTile<64>> = true;

// Where a consumer waits for V[n+1] (fwd_sm90_mainloop.cuh): after issuing S = Q K[n]^T, just
// before P V[n+1] needs it (FlashAttention-3's order), not before both. Measured per tile against
// the same tile waiting first (H200 x cuDNN, perf-notes item 29): d = 128 +1.5-2 % non-causal
// (512 0.977 -> 0.997, 16k 1.001 -> 1.022) and +1-3 % causal, d = 256 +1-2 %, d = 64 +0.2-1 %
// (the 192x96 causal tile of that session, since retired, 0.3-1 % slower).
template <class Tile>
constexpr bool kLateVWait = true;

// O *= rescale between the next S and P V issues (while Q K^T runs) instead of after the P V
// wait (FlashAttention-3's RescaleOBeforeGemm, which it uses above d = 128). Measured per tile on
// top of the late V wait (perf-notes item 29): d = 256 +1-3 % (64 keys: non-causal 1k 1.011 ->
// 1.037, causal 512 0.960 -> 0.971; 80 keys: 16k 1.135 -> 1.153, causal 8k 1.268 -> 1.293), the
// short d = 64 causal tile +2 % at S = 512; d = 128 1.5-2 % slower at S <= 1k non-causal (and the
// retired 192x96 d = 64 causal tile 1-2 %), so it keeps the rescale after the wait.
template <class Tile>
constexpr bool kRescaleBeforePV = false;
template <>
constexpr bool kRescaleBeforePV<FwdTile<256>> = true;
template <>
constexpr bool kRescaleBeforePV<FwdTileD64Causal> = true;
template <>
constexpr bool kRescaleBeforePV<FwdTileD64CausalShort> = true;  // as measured (item 34)

// The key step's P V wait pinned after the softmax (pin_after_softmax in fwd_sm90_mainloop.cuh),
// so that a warpgroup's softmax of the next scores overlaps its own P V; without the pin ptxas
// places the wait before the row max. Measured per tile against the same tile unpinned (H100 A/B
// x cuDNN, suite regime, two runs, perf-notes item 53): d = 256 gains from S = 1k on, most where
// the 64-key tile runs without turns (non-causal 1k 1.070-1.071 -> 1.110, 2k 1.075 -> 1.088-1.091,
// 16k 1.143 -> 1.159-1.160; causal 4k 1.154-1.157 -> 1.181-1.187), S = 512 +-1 % (non-causal
// 1.043-1.048 -> 1.052-1.062, causal 0.947 -> 0.942); d = 128 moves -1.5 to +0.7 % (512 0.963 ->
// 0.947-0.950, 16k 1.021-1.022 -> 1.028-1.031): pinned without turns it gains 0.6-1.0 % from 2k
// keys non-causal (+0.1-0.5 % causal), with turns it loses below 2k, so only its long-key tile
// (FwdTileD128Long) is pinned; the d = 64 tiles lose 2-6 %
// (192x128 non-causal 2k 1.087 -> 1.036, causal 8k 1.113 -> 1.074). The 64-row tiles of d = 128
// and 256 (one consumer warpgroup, so no other warpgroup's GEMMs cover its softmax) gain at each
// of 19 decoding shapes (CUDA-graph time, one run): 0.1-1 % at one query row on long keys, packed
// GQA 1 x 2k keys 9.8 -> 9.6 us, MQA 32k 17.6 -> 16.9, d = 256 GQA 8k 21.8 -> 21.5, 4 x 64 rows
// GQA 2k 24.9 -> 23.2. The d = 64 64x64 tile loses as the other d = 64 tiles do (causal S = 1k
// 0.969 -> 0.948, decoding -0.2 to -1.1 %).
template <class Tile>
constexpr bool kPinPvWait = false;
template <>
constexpr bool kPinPvWait<FwdTile<256>> = true;
template <>
constexpr bool kPinPvWait<FwdTileD128Long> = true;
template <>
constexpr bool kPinPvWait<FwdTileD128Wide> = true;
template <>
constexpr bool kPinPvWait<FwdTileD128Short> = true;
template <>
constexpr bool kPinPvWait<FwdTileD256Short> = true;

// Split-KV (fwd_combine.hpp): when a call has tiles for less than 80 % of the SMs (a decoding
// step: a few query rows against long keys, few heads), each tile's key blocks are cut into
// ranges that run as separate units, one unit per SM (also for the tiles that run three CTAs
// per SM: such a call is bound by K/V reads, and each range more costs the combine a read; H200,
// B=1 Sq=1 Sk=16k H=16 d=64: 8 ranges 23.8 us, 24 ranges 25.3, 4 ranges 37.3), with at least
// kMinKeyBlocksPerSplit blocks each (short keys: more units beat longer ones down to one block,
// H100, packed GQA B=1 Hq=32 Hkv=8 d=128: Sk=2k 4 / 8 / 16 ranges 15.3 / 12.9 / 12.4 us, 4k 8 / 16
// 16.1 / 14.9; two blocks keep the small prefill calls of attention_small unsplit) and at most
// kMaxSplits ranges.
constexpr int kMaxSplits = 32;
constexpr long long kMinKeyBlocksPerSplit = 2;
constexpr int choose_splits(long long tiles, long long sms, long long key_blocks) {
  if (tiles <= 0 || tiles * 5 >= sms * 4) return 1;
  long long s = sms / tiles;
  if (s > key_blocks / kMinKeyBlocksPerSplit) s = key_blocks / kMinKeyBlocksPerSplit;
  if (s > kMaxSplits) s = kMaxSplits;
  return s < 2 ? 1 : static_cast<int>(s);
}
static_assert(choose_splits(32, 132, 64) == 4 && choose_splits(106, 132, 64) == 1 &&
              choose_splits(8, 132, 64) == 16 && choose_splits(1, 132, 4096) == 32 &&
              choose_splits(8, 132, 16) == 8 && choose_splits(32, 132, 3) == 1);

// Split tail (SplitTail, fwd_combine.hpp): with no mask and fixed lengths every tile runs the same
// key blocks, so when `tiles` is not a multiple of the persistent grid the last round keeps only
// tiles % grid CTAs busy (the FA3 sweep idles ~3 % of the SM-time this way; perf-notes item 61).
// Splitting those tiles' keys s ways runs them as ceil(t s / grid) rounds of units of ~1/s of a
// tile, and split 0 merges the others' fp32 partials (fwd_sm90_tail.cuh). Cost model in
// hundredths of a key block, fitted to the first A/B (H200, perf-notes item 62): a unit costs its
// range, kTailUnitCost (Q load, first Q K^T, epilogue), and in the round of its split 0 the merge,
// (s - 1) x kTailMergeCost / kBlockN: one split's 128 x d partials read by one SM (~50 GB/s)
// take about the time of 110 keys of that tile's compute. s is the cheapest count of at most
// kMaxTailSplits with at least kMinKeyBlocksPerTailSplit blocks per range and no empty range,
// taken when it saves at least 1/8 of the unsplit tail and the tile has kMinTailKeyBlocks blocks
// (below, the scratch counters' memset, ~1-2 us, costs what the tail saves: d = 64 S = 512 -0.5 %).
// 1 means no tail.
constexpr int kMaxTailSplits = 8;
constexpr long long kMinKeyBlocksPerTailSplit = 2;
constexpr long long kMinTailKeyBlocks = 16;
constexpr long long kTailUnitCost = 100;
constexpr long long kTailMergeCost = 11000;
constexpr long long tail_cost(long long tail_tiles, long long grid, long long key_blocks,
                              long long block_n, long long s) {
  const long long per = (key_blocks + s - 1) / s;
  const long long unit = per * 100 + kTailUnitCost + (s - 1) * kTailMergeCost / block_n;
  return (tail_tiles * s + grid - 1) / grid * unit;
}
constexpr int choose_tail_splits(long long tiles, long long grid, long long key_blocks,
                                 long long block_n) {
  if (grid <= 0 || tiles <= grid || tiles % grid == 0 || key_blocks < kMinTailKeyBlocks) return 1;
  const long long t = tiles % grid;
  const long long unsplit = key_blocks * 100 + kTailUnitCost;
  long long best = 1, best_cost = unsplit;
  for (long long s = 2; s <= kMaxTailSplits && s * kMinKeyBlocksPerTailSplit <= key_blocks; ++s) {
    const long long per = (key_blocks + s - 1) / s;
    if ((s - 1) * per >= key_blocks) continue;  // an empty range
    const long long c = tail_cost(t, grid, key_blocks, block_n, s);
    if (c < best_cost) best = s, best_cost = c;
  }
  return best_cost * 8 <= unsplit * 7 ? static_cast<int>(best) : 1;
}
// The FA3 sweep's grids on 132 SMs (tiles, key blocks, keys per block), whether or not their tile
// compiles the tail (kSplitTail, below: only d = 128 from 8k keys does): d = 64 S = 512 / 1k
// (3072, 4 / 8, 128) none, 2k (2816, 16) 3 ways, 4k (2816, 32) 3, 8k (2752, 64) none; d = 128 2k
// (2048, 16, 128) none, 4k (2048, 32) 3, 8k (2048, 57, 144) 3, 16k (2048, 114, 144) 3; d = 256
// 4k (1024, 64, 64) and 16k (1024, 256) none; one whole round or less, none.
static_assert(choose_tail_splits(3072, 132, 4, 128) == 1 &&
              choose_tail_splits(3072, 132, 8, 128) == 1 &&
              choose_tail_splits(2816, 132, 16, 128) == 3 &&
              choose_tail_splits(2816, 132, 32, 128) == 3 &&
              choose_tail_splits(2752, 132, 64, 128) == 1 &&
              choose_tail_splits(2048, 132, 16, 128) == 1 &&
              choose_tail_splits(2048, 132, 32, 128) == 3 &&
              choose_tail_splits(2048, 132, 57, 144) == 3 &&
              choose_tail_splits(2048, 132, 114, 144) == 3 &&
              choose_tail_splits(1024, 132, 64, 64) == 1 &&
              choose_tail_splits(1024, 132, 256, 64) == 1 &&
              choose_tail_splits(132, 132, 64, 128) == 1 &&
              choose_tail_splits(100, 132, 64, 128) == 1 &&
              choose_tail_splits(264, 132, 64, 128) == 1);

// The tiles that compile the split tail's code (fwd_sm90_tail.cuh): only the 144-key d = 128 tile.
// In d = 64's unmasked tile and d = 128's long-key tile the code alone, with no tail taken, cost
// 1-4 % (H200 A/B against twins without it: d = 64 non-causal 512 0.990 -> 0.948, 8k -2.6 %,
// causal 2k -3.6 %; d = 128 causal 2k -3.5 %), more than the tail gained there (d = 64 2k / 4k
// +1.3-2.3 %); in the wide tile it costs nothing measurable (8k / 16k +0.7 / +0.2 %) and the tail
// gains +0.8-1.9 % at 8k, +1.7-2.0 % at 16k (perf-notes item 62). The other tiles compile as
// before the tail.
template <class Tile>
constexpr bool kSplitTail = false;
template <>
constexpr bool kSplitTail<FwdTileD128Wide> = true;

// Dense calls (fixed lengths, no mask or window, keys a multiple of kBlockN, no split-KV or split
// tail) run DenseOnly twins of the unmasked d = 64 and d = 128 tiles: the same tile and policies,
// compiled without the code such calls never run (variable lengths, masks and windows, split-KV,
// by-row stores, empty tiles). That code, never entered, still cost: the twins' key loops are 454
// instructions against 705 (d = 64) and 472 against 901 (d = 128 long keys), the kernels 2288
// against 4024 and 2632 against 4608 (H200 A/B x cuDNN, one process, plain -> twin: d = 64
// non-causal 512 0.991 -> 1.034, 1k 1.011 -> 1.045, 2k 1.107 -> 1.130, 4k 1.119 -> 1.130, 8k /
// 16k within +-0.7 %; d = 128 512 0.996 -> 1.045, 1k 1.008 -> 1.059, 2k 1.020 -> 1.032, 4k 1.025
// -> 1.034; perf-notes attention item 63). The dispatcher picks a twin by dense_only_applies, and
// the launcher refuses one planned for a call that breaks it.
template <class Tile>
struct DenseOnly : Tile {};

// The DenseOnly twins whose consumers run their tiles back to back (Mainloop::compute_tiles_cross
// in fwd_sm90_mainloop.cuh): each tile's last P V is issued with the next tile's first Q K^T, and
// the next tile's first softmax runs while that P V does, instead of every warpgroup starting
// each tile from an empty pipe after its epilogue. In a dense call every tile runs the same key
// blocks, so a tile boundary is one more key step. The per-tile cost this hides was ~1.3 key
// steps of d = 128's long-key tile (the sweep's rate from 2k to 4k keys, 648 -> 673 TFLOP/s:
// 7 % of a 2k-key tile). Measured (H200 A/B x cuDNN, bench/ab.py --regime sweep, the twin
// compiled with and without it; perf-notes attention item 67): FwdTileD128Long non-causal 2k
// 1.030 -> 1.069, 4k 1.029 -> 1.063; FwdTile<128> 512 1.044 -> 1.105, 1k 1.053 -> 1.107;
// FwdTile<64> 512 1.037 -> 1.062, 1k 1.041 -> 1.058, 2k 1.134 -> 1.147. The FixedLength twin of
// FwdTileD128Long (causal) with the same boundary (first blocks masked, empty tiles stored on the
// way) measured within -0.9 / +0.4 % at 2k-16k and keeps compute().
template <class Tile>
constexpr bool kCrossTile = false;
template <>
constexpr bool kCrossTile<FwdTile<64>> = true;
template <>
constexpr bool kCrossTile<FwdTile<128>> = true;
template <>
constexpr bool kCrossTile<FwdTileD128Long> = true;
// Whether a call may run a DenseOnly twin of a tile of block_n keys: fixed lengths, no mask or
// window, keys a multiple of block_n, no split-KV (splits == 1) and no split tail.
constexpr bool dense_only_applies(bool varlen, long long window_left, long long window_right,
                                  long long seqlen_k, int block_n, int splits, int tail_tiles) {
  return !varlen && window_left < 0 && window_right < 0 && seqlen_k > 0 &&
         seqlen_k % block_n == 0 && splits == 1 && tail_tiles == 0;
}
static_assert(dense_only_applies(false, -1, -1, 512, 128, 1, 0) &&
              !dense_only_applies(false, -1, -1, 1000, 128, 1, 0) &&
              !dense_only_applies(false, -1, 0, 512, 128, 1, 0) &&
              !dense_only_applies(false, 64, -1, 512, 128, 1, 0) &&
              !dense_only_applies(true, -1, -1, 512, 128, 1, 0) &&
              !dense_only_applies(false, -1, -1, 512, 128, 4, 0) &&
              !dense_only_applies(false, -1, -1, 8640, 144, 1, 20) &&
              !dense_only_applies(false, -1, -1, 0, 128, 1, 0));

// Fixed-length calls that the DenseOnly twins do not take (a causal mask above all, a window, keys
// not a multiple of the key tile, any d = 256 call) run FixedLength twins of FwdTile<128>,
// FwdTileD128Long and FwdTile<256>: the same tile and policies, masks, windows and empty tiles
// kept, compiled without the variable-length, split-KV, split-tail, by-row store and shifted-tile
// (SeqInfo::q_pad) code. Measured (H200 A/B x cuDNN, one process, general kernel -> twin;
// perf-notes attention item 66): causal d = 128 512 / 2k / 16k 0.994 / 1.103 / 1.103 -> 1.023 /
// 1.121 / 1.114, causal d = 256 512 / 2k / 16k 1.007 / 1.159 / 1.318 -> 1.043 / 1.179 / 1.327,
// non-causal d = 256 512 / 16k 1.081 / 1.140 -> 1.107 / 1.145; d = 64 gained nothing past 512 in
// item 64's experiment, so it has none. Dense d = 64 / d = 128 calls keep their DenseOnly twins,
// which leave out the masks too and gain more. The dispatcher picks a twin by
// fixed_length_applies, and the launcher refuses one planned for a call that breaks it.
template <class Tile>
struct FixedLength : Tile {};
// The rows a right-bounded mask shifts into the first tile (SeqInfo::q_pad, fwd_sm90_scheduler.cuh).
constexpr long long shifted_rows(long long seqlen_q, int block_m, int block_n) {
  const long long idle = (block_m - seqlen_q % block_m) % block_m;
  return idle - idle % block_n;
}
// Whether a call may run a FixedLength twin of a block_m x block_n tile: fixed lengths, no
// split-KV (splits == 1), no split tail, and no shifted rows under a right-bounded mask.
constexpr bool fixed_length_applies(bool varlen, long long window_right, long long seqlen_q,
                                    int block_m, int block_n, int splits, int tail_tiles) {
  return !varlen && splits == 1 && tail_tiles == 0 &&
         (window_right < 0 || shifted_rows(seqlen_q, block_m, block_n) == 0);
}
static_assert(fixed_length_applies(false, 0, 1000, 128, 128, 1, 0) &&
              fixed_length_applies(false, 0, 1000, 128, 64, 1, 0) &&    // 24 idle rows
              !fixed_length_applies(false, 0, 900, 128, 64, 1, 0) &&    // 124 idle: 64 shifted
              fixed_length_applies(false, -1, 900, 128, 64, 1, 0) &&    // no right bound, no shift
              !fixed_length_applies(true, 0, 1024, 128, 128, 1, 0) &&
              !fixed_length_applies(false, 0, 1024, 128, 128, 3, 0) &&
              !fixed_length_applies(false, -1, 8192, 128, 144, 1, 20));

// The tile policy behind a twin, and what the twin leaves out: DenseOnly everything a dense call
// never runs; FixedLength (and DenseOnly) the variable-length, split and shifted-tile code.
template <class Tile>
struct UnwrapTile {
  using type = Tile;
  static constexpr bool kDenseOnly = false;
  static constexpr bool kFixedLength = false;
};
template <class Tile>
struct UnwrapTile<DenseOnly<Tile>> {
  using type = Tile;
  static constexpr bool kDenseOnly = true;
  static constexpr bool kFixedLength = true;
};
template <class Tile>
struct UnwrapTile<FixedLength<Tile>> {
  using type = Tile;
  static constexpr bool kDenseOnly = false;
  static constexpr bool kFixedLength = true;
};

// The bucket a head dimension runs on (0: not supported on CUDA).
constexpr int head_dim_bucket(long long d) {
  return d <= 0 || d % 8 != 0 ? 0 : d <= 64 ? 64 : d <= 128 ? 128 : d <= 256 ? 256 : 0;
}

}  // namespace deepwell::attention::sm90
