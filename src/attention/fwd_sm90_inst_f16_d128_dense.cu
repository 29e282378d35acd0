// Instance: attention forward, sm_90a, f16, head dims up to 128, the DenseOnly twin of
// fwd_f16_d128 (dense calls only: fwd_sm90_config.hpp).
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_f16_d128_dense, cutlass::half_t, 128,
                                     DenseOnly<FwdTile<128>>)
