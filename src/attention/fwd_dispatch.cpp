// CUDA dispatch for attention_forward (placeholder until the sm_90 kernels land).
#include "attention/problem.hpp"

namespace deepwell::attention {

Status forward_cuda(const Problem&, const Context&) {
  return Status(StatusCode::kNotSupported, "attention_forward: CUDA kernels not built yet");
}

}  // namespace deepwell::attention
