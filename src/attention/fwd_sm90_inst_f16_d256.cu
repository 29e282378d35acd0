// Instance: attention forward, sm_90a, f16, head dims up to 256.
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_f16_d256, cutlass::half_t, 256, FwdTile<256>)
