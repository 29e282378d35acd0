// Instance: attention forward, sm_90a, f16, head dims up to 64.
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_f16_d64, cutlass::half_t, 64, FwdTile<64>)
