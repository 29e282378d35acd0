// Tile configuration of the sm_90 attention forward kernel, per head-dimension bucket.
//
// This small table is the one place where tile sizes live. The kernel is instantiated once per
// (dtype, bucket) in src/attention/fwd_sm90_inst_*.cu; head dims below a bucket's size run on
// that bucket with the extra columns zero-filled by TMA (so d = 96 runs on the 128 kernel).
//
// Why these numbers (docs/perf-notes.md has the measurements):
//  - kBlockM = 64 rows per consumer warpgroup (one wgmma M), so kBlockM / 64 consumer warpgroups.
//  - kBlockN: the widest key tile whose S accumulator, P, O and the next S fit in the consumer's
//    register budget (240 registers with 2 consumer warpgroups, 160 with 3), and whose K/V stages
//    fit in shared memory next to Q.
#pragma once

namespace deepwell::attention::sm90 {

template <int kHeadDim>
struct FwdTile;

template <>
struct FwdTile<64> {
  static constexpr int kBlockM = 192;  // 3 consumer warpgroups
  static constexpr int kBlockN = 128;
  static constexpr int kStages = 2;
};

template <>
struct FwdTile<128> {
  static constexpr int kBlockM = 128;  // 2 consumer warpgroups
  static constexpr int kBlockN = 128;
  static constexpr int kStages = 2;
};

template <>
struct FwdTile<256> {
  static constexpr int kBlockM = 128;  // 2 consumer warpgroups
  static constexpr int kBlockN = 64;
  static constexpr int kStages = 2;
};

// The bucket a head dimension runs on (0: not supported on CUDA).
constexpr int head_dim_bucket(long long d) {
  return d <= 0 || d % 8 != 0 ? 0 : d <= 64 ? 64 : d <= 128 ? 128 : d <= 256 ? 256 : 0;
}

}  // namespace deepwell::attention::sm90
