// Instance: attention forward, sm_90a, bf16, head dims up to 128, the FixedLength twin of
// fwd_bf16_d128 (fixed-length calls with a mask or window: fwd_sm90_config.hpp).
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_bf16_d128_fixed, cutlass::bfloat16_t, 128,
                                     FixedLength<FwdTile<128>>)
