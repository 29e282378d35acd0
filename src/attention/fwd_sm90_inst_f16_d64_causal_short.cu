// Instance: attention forward, sm_90a, f16, head dims up to 64, keys bounded on the right (causal
// or a right window), seqlen_q and seqlen_k <= 1024: 64-row tiles, three CTAs per SM
// (fwd_sm90_config.hpp).
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_f16_d64_causal_short, cutlass::half_t, 64,
                                     FwdTileD64CausalShort)
