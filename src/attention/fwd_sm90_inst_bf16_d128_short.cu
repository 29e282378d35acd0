// Instance: attention forward, sm_90a, bf16, head dims 72-128, at most 64 query rows (decoding
// steps): 64-row tiles of 128 keys, one consumer warpgroup, two K/V stages
// (fwd_sm90_config.hpp).
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_bf16_d128_short, cutlass::bfloat16_t, 128, FwdTileD128Short)
