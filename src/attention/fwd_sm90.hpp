// Entry points of the compiled sm_90 attention forward instances, one per (dtype, head-dim
// bucket, tile). Each is defined in its own fwd_sm90_inst_*.cu file; src/kernel_instances.cmake lists
// them. This header needs no CUDA or CUTLASS includes, so the dispatcher stays plain C++.
#pragma once

#include "attention/fwd_combine.hpp"
#include "attention/problem.hpp"

namespace deepwell::attention::sm90 {

Status fwd_bf16_d64(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_bf16_d128(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_bf16_d256(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d64(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d128(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d256(const Problem& p, const Context& ctx, const SplitPlan& split);
// Keys bounded on the right (causal, right window).
Status fwd_bf16_d64_causal_short(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d64_causal_short(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_bf16_d64_causal(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d64_causal(const Problem& p, const Context& ctx, const SplitPlan& split);
// d = 128 and d = 256 with at most 64 query rows (64-row tiles).
Status fwd_bf16_d128_short(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d128_short(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_bf16_d256_short(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d256_short(const Problem& p, const Context& ctx, const SplitPlan& split);
// d = 128 with long keys (the P V wait pinned).
Status fwd_bf16_d128_long(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d128_long(const Problem& p, const Context& ctx, const SplitPlan& split);
// d = 128, unmasked, long keys: 144-key tiles.
Status fwd_bf16_d128_wide(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d128_wide(const Problem& p, const Context& ctx, const SplitPlan& split);
// Dense calls only (DenseOnly twins of fwd_*_d64, fwd_*_d128, fwd_*_d128_long).
Status fwd_bf16_d64_dense(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d64_dense(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_bf16_d128_dense(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d128_dense(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_bf16_d128_long_dense(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d128_long_dense(const Problem& p, const Context& ctx, const SplitPlan& split);
// Fixed-length calls with a mask or window (FixedLength twins of fwd_*_d128, fwd_*_d128_long,
// fwd_*_d256).
Status fwd_bf16_d128_fixed(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d128_fixed(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_bf16_d128_long_fixed(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d128_long_fixed(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_bf16_d256_fixed(const Problem& p, const Context& ctx, const SplitPlan& split);
Status fwd_f16_d256_fixed(const Problem& p, const Context& ctx, const SplitPlan& split);

}  // namespace deepwell::attention::sm90
