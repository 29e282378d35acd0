// Instance: attention forward, sm_90a, f16, head dims up to 256, seqlen_k >= 2048 (80-key tiles;
// compiled with CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED, see src/kernel_instances.cmake).
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_f16_d256_long, cutlass::half_t, 256, FwdTileD256Long)
