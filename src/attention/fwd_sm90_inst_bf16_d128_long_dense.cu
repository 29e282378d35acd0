// Instance: attention forward, sm_90a, bf16, head dims up to 128, the DenseOnly twin of
// fwd_bf16_d128_long (dense calls only: fwd_sm90_config.hpp).
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_bf16_d128_long_dense, cutlass::bfloat16_t, 128,
                                     DenseOnly<FwdTileD128Long>)
