// Stand-ins for the CUDA dispatchers in a build without CUDA: every GPU call says so clearly.
#include <string>

#include "attention/problem.hpp"
#include "deepwell/gemm.hpp"
#include "gemm/problem.hpp"
#include "quant/problem.hpp"

namespace deepwell {
namespace {
Status no_cuda(const char* op) {
  return Status(StatusCode::kNotSupported,
                std::string(op) + ": this build of deepwell has no CUDA kernels (configured with "
                                  "DEEPWELL_CUDA=OFF or without nvcc); use CPU tensors");
}
}  // namespace

Status attention::forward_cuda(const Problem&, const Context&) { return no_cuda("attention_forward"); }
Status attention::forward_workspace_cuda(const Problem&, size_t*) {
  return no_cuda("attention_forward_workspace_size");
}
Status matmul::gemm_cuda(const Problem&, const Context&) { return no_cuda("gemm"); }
Status set_gemm_plan_override(std::string_view spec) {
  return spec.empty() ? Status::Ok() : no_cuda("set_gemm_plan_override");
}
Status quant::quantize_cuda(const Problem&, const Context&) { return no_cuda("quantize"); }
Status quant::dequantize_cuda(const DequantProblem&, const Context&) {
  return no_cuda("dequantize");
}
Status quant::swizzle_cuda(const uint8_t*, uint8_t*, int64_t, int64_t, bool, Device,
                           const Context&) {
  return no_cuda("swizzle_scales");
}

}  // namespace deepwell
