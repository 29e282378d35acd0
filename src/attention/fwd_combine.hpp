// Split-KV for the sm_90 attention forward: the plan (how many key ranges per tile, and the partial
// buffers) and the kernel that merges the ranges' partial results. Plain C++ header.
//
// With split-KV every tile's key blocks are cut into `splits` ranges that run as separate work
// units (fwd_sm90_scheduler.cuh), so a call with fewer tiles than the GPU has CTA slots (decoding:
// a few query rows against long keys) still fills the GPU. Each unit writes its rows' O, normalized
// over its own keys, in the output dtype, and their LSE into the partial buffers; the combine
// kernel then writes, per row,
//   lse = log(sum_s exp(lse_s)),   O = sum_s exp(lse_s - lse) O_s
// (a range no key of which the row sees has lse_s = -inf and weight 0; a row that sees no key at
// all gets O = 0 and lse = -inf, as without splits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "attention/problem.hpp"

namespace deepwell::attention {

// The combine kernel keeps one split per lane of a warp.
constexpr int kMaxCombineSplits = 32;

// Partial buffers of a split launch, contiguous: O_part (splits, batches, rows, heads, head_dim)
// in the output dtype, then at the next 256-byte boundary LSE_part (splits, batches, heads, rows)
// fp32; batches = 1 and rows = total_q for varlen, else batch and seqlen_q. The one description
// of that layout: the workspace size, the attention launcher (where the units write) and the
// combine kernel (where it reads) all take it from here.
struct SplitLayout {
  int64_t batches = 0, rows = 0;
  int64_t o_row = 0, o_batch = 0, o_split = 0;  // O_part strides in elements (head: head_dim)
  int64_t l_head = 0, l_batch = 0, l_split = 0;  // LSE_part strides in elements (row: 1)
  size_t o_bytes = 0;                            // O_part, rounded up to 256 bytes
  size_t bytes = 0;                              // both buffers
};

inline SplitLayout split_layout(const Problem& p, int splits) {
  SplitLayout l;
  l.batches = p.varlen ? 1 : p.batch;
  l.rows = p.varlen ? p.total_q : p.seqlen_q;
  l.o_row = p.heads_q * p.head_dim;
  l.o_batch = l.rows * l.o_row;
  l.o_split = l.batches * l.o_batch;
  l.l_head = l.rows;
  l.l_batch = p.heads_q * l.rows;
  l.l_split = l.batches * l.l_batch;
  const size_t rows_all = size_t(splits) * size_t(l.batches) * size_t(l.rows) * size_t(p.heads_q);
  l.o_bytes = (rows_all * size_t(p.head_dim) * 2 + 255) / 256 * 256;  // 16-bit outputs only
  l.bytes = l.o_bytes + rows_all * sizeof(float);
  return l;
}

// The persistent grid's cap set by DEEPWELL_ATTN_MAX_GRID=<n> (tests: a small problem runs many
// tiles per CTA), 0 without one. The launcher and the split tail's plan both read it here, so
// they agree on the grid.
inline int max_grid_override() {
  const char* env = std::getenv("DEEPWELL_ATTN_MAX_GRID");
  const int n = env != nullptr ? std::atoi(env) : 0;
  return n > 0 ? n : 0;
}

// Split tail (without split-KV): where the tiles do not fill the persistent grid's last round,
// the last `tiles` tiles (from tile `first`) run as `splits` units each, key ranges as split-KV's.
// Split 0 of a tile waits for the others' partial results in the kernel itself and merges them
// before its epilogue (fwd_sm90_tail.cuh), so no combine launch. Scratch: per tail tile, split
// 1.. and consumer warpgroup a slot of 128 threads x (head_dim / 2 + 2) floats (O, normalized over
// the split's keys, and the two rows' LSE), then one counter per tail tile and warpgroup, zeroed
// before the launch.
struct SplitTail {
  int first = 0, tiles = 0, splits = 1;  // tiles == 0: no tail
  int warpgroups = 0, head_dim = 0;      // of the instance: consumer warpgroups, head-dim bucket
  float* part = nullptr;
  int32_t* flags = nullptr;

  size_t slot_floats() const { return size_t(head_dim / 2 + 2) * 128; }
  size_t part_bytes() const {
    return (size_t(tiles) * size_t(splits - 1) * size_t(warpgroups) * slot_floats() * 4 + 255) /
           256 * 256;
  }
  size_t flag_count() const { return size_t(tiles) * size_t(warpgroups); }
  size_t bytes() const { return tiles == 0 ? 0 : part_bytes() + flag_count() * 4; }
  void carve(void* workspace) {
    part = static_cast<float*>(workspace);
    flags = reinterpret_cast<int32_t*>(static_cast<char*>(workspace) + part_bytes());
  }
};

struct SplitPlan {
  int splits = 1;
  void* o_part = nullptr;
  float* lse_part = nullptr;
  SplitLayout layout;
  SplitTail tail;  // only with splits == 1
};

// Bytes of the partial buffers for `splits`.
inline size_t split_workspace_bytes(const Problem& p, int splits) {
  return split_layout(p, splits).bytes;
}
// The plan's buffers carved out of `workspace` (split_workspace_bytes(p, splits) bytes).
inline SplitPlan split_plan_in(const Problem& p, int splits, void* workspace) {
  SplitPlan plan;
  plan.splits = splits;
  plan.layout = split_layout(p, splits);
  plan.o_part = workspace;
  plan.lse_part = reinterpret_cast<float*>(static_cast<char*>(workspace) + plan.layout.o_bytes);
  return plan;
}

// Merges the partial buffers into p.out (and p.lse when given) on `stream`, as a programmatic
// dependent of the attention kernel just launched there.
Status combine_splits(const Problem& p, const SplitPlan& plan, void* stream);

}  // namespace deepwell::attention
