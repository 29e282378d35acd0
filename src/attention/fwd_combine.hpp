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

#include "attention/problem.hpp"

namespace deepwell::attention {

// Partial buffers of a split launch: O_part (splits, batches, rows, heads, head_dim) in the output
// dtype and LSE_part (splits, batches, heads, rows) fp32, contiguous; batches = 1 and rows =
// total_q for varlen, else batch and seqlen_q.
// The combine kernel keeps one split per lane of a warp.
constexpr int kMaxCombineSplits = 32;

struct SplitPlan {
  int splits = 1;
  void* o_part = nullptr;
  float* lse_part = nullptr;
};

// Bytes of the partial buffers for `splits` (O_part first, LSE_part at its 256-byte aligned end).
size_t split_workspace_bytes(const Problem& p, int splits);
// The plan's buffers carved out of `workspace` (split_workspace_bytes(p, splits) bytes).
SplitPlan split_plan_in(const Problem& p, int splits, void* workspace);

// Merges the partial buffers into p.out (and p.lse when given) on `stream`.
Status combine_splits(const Problem& p, const SplitPlan& plan, void* stream);

}  // namespace deepwell::attention
