// CUDA dispatch of attention_forward: device checks, then the instance for (dtype, head-dim bucket).
#include <string>

#include "attention/fwd_sm90.hpp"
#include "attention/fwd_sm90_config.hpp"
#include "attention/problem.hpp"
#include "core/cuda_utils.hpp"

namespace deepwell::attention {

Status forward_cuda(const Problem& p, const Context& ctx) {
  constexpr std::string_view kOp = "attention_forward";
  detail::DeviceGuard guard(p.device.index);
  DW_TRY(guard.status());
  DW_TRY(detail::require_sm90(kOp, p.device.index));
  const bool bf16 = p.dtype == DType::kBF16;
  switch (sm90::head_dim_bucket(p.head_dim)) {
    case 64:
      if (p.window_right >= 0 && p.seqlen_q <= sm90::kD64CausalShortTileMaxSeqlen &&
          p.seqlen_k <= sm90::kD64CausalShortTileMaxSeqlen) {
        return bf16 ? sm90::fwd_bf16_d64_causal_short(p, ctx)
                    : sm90::fwd_f16_d64_causal_short(p, ctx);
      }
      if (p.window_right >= 0 && p.seqlen_q <= sm90::kD64CausalTileMaxSeqlenQ) {
        return bf16 ? sm90::fwd_bf16_d64_causal(p, ctx) : sm90::fwd_f16_d64_causal(p, ctx);
      }
      return bf16 ? sm90::fwd_bf16_d64(p, ctx) : sm90::fwd_f16_d64(p, ctx);
    case 128: return bf16 ? sm90::fwd_bf16_d128(p, ctx) : sm90::fwd_f16_d128(p, ctx);
    case 256:
      if (p.seqlen_k >= (p.window_right >= 0 ? sm90::kD256CausalLongTileMinSeqlenK
                                             : sm90::kD256LongTileMinSeqlenK)) {
        return bf16 ? sm90::fwd_bf16_d256_long(p, ctx) : sm90::fwd_f16_d256_long(p, ctx);
      }
      return bf16 ? sm90::fwd_bf16_d256(p, ctx) : sm90::fwd_f16_d256(p, ctx);
    default: break;
  }
  return Status(StatusCode::kNotSupported,
                std::string(kOp) + ": head dim " + std::to_string(p.head_dim) +
                    " is not supported on CUDA (multiples of 8 up to 256)");
}

}  // namespace deepwell::attention
