// Instance: attention forward, sm_90a, bf16, head dims up to 128, no mask and seqlen_k >= 8192
// (144-key tiles, the P V wait pinned; fwd_sm90_config.hpp, FwdTileD128Wide).
#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_kernel.cuh"

DEEPWELL_ATTENTION_FWD_SM90_INSTANCE(fwd_bf16_d128_wide, cutlass::bfloat16_t, 128, FwdTileD128Wide)
