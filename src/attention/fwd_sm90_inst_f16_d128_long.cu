// Instance: attention forward, sm_90a, f16, head dims up to 128, seqlen_k >= 2048 (the P V wait
// pinned; fwd_sm90_config.hpp, FwdTileD128Long).
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_f16_d128_long, cutlass::half_t, 128, FwdTileD128Long)
