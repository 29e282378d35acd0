// Instance: attention forward, sm_90a, bf16, head dims 136-256, at most 64 query rows (decoding
// steps): 64-row tiles of 64 keys, one consumer warpgroup (fwd_sm90_config.hpp).
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_bf16_d256_short, cutlass::bfloat16_t, 256, FwdTileD256Short)
