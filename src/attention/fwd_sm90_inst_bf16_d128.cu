// Instance: attention forward, sm_90a, bf16, head dims up to 128.
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_bf16_d128, cutlass::bfloat16_t, 128, FwdTile<128>)
