// Public GEMM entry point: validation, normalization into a Problem, dispatch.
#include <cmath>
#include <exception>
#include <new>
#include <string>

#include "core/validate.hpp"
#include "gemm/problem.hpp"

namespace deepwell {

std::string_view activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kReLU: return "relu";
    case Activation::kGeluErf: return "gelu";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kSiLU: return "silu";
  }
  return "unknown";
}

namespace {

using detail::arg_error;
using detail::shape_string;
constexpr std::string_view kOp = "gemm";
constexpr auto kFloatTypes = {DType::kF32, DType::kF16, DType::kBF16};

// A (rows, cols) or (batch, rows, cols) operand against the expected sizes; batch may be absent or
// 1 (broadcast) unless `exact_batch`.
Status check_matrix(std::string_view name, const TensorView& t, int64_t batch, int64_t rows,
                    int64_t cols, const char* rows_name, const char* cols_name,
                    matmul::Matrix* out) {
  DW_TRY(detail::check_view(kOp, name, t));
  DW_TRY(detail::check_rank(kOp, name, t, {2, 3}));
  DW_TRY(detail::check_dtype(kOp, name, t, kFloatTypes));
  const int r = t.ndim - 2;
  const int64_t tb = t.ndim == 3 ? t.shape[0] : 1;
  if (t.shape[r] != rows || t.shape[r + 1] != cols || (tb != batch && tb != 1)) {
    std::string expected = "shape (" + std::string(rows_name) + ", " + cols_name + ") = (" +
                           std::to_string(rows) + ", " + std::to_string(cols) + ")";
    if (batch != 1) expected += ", with an optional batch of " + std::to_string(batch) + " or 1";
    return arg_error(kOp, name, expected, shape_string(t));
  }
  out->data = t.data;
  out->dtype = t.dtype;
  out->batch_stride = (t.ndim == 3 && tb != 1) ? t.strides[0] : 0;
  out->row_stride = t.strides[r];
  out->col_stride = t.strides[r + 1];
  return Status::Ok();
}

bool same_layout(const matmul::Matrix& x, const matmul::Matrix& y) {
  return x.data == y.data && x.batch_stride == y.batch_stride && x.row_stride == y.row_stride &&
         x.col_stride == y.col_stride && x.dtype == y.dtype;
}

bool overlaps(const TensorView& a, const TensorView& b) {
  uintptr_t a0, a1, b0, b1;
  detail::byte_extent(a, &a0, &a1);
  detail::byte_extent(b, &b0, &b1);
  return a0 < b1 && b0 < a1;
}

Status gemm_impl(const GemmArgs& g, const Context& ctx) {
  matmul::Problem p;
  DW_TRY(detail::check_view(kOp, "a", g.a));
  DW_TRY(detail::check_view(kOp, "b", g.b));
  DW_TRY(detail::check_view(kOp, "d", g.d));
  DW_TRY(detail::check_rank(kOp, "a", g.a, {2, 3}));
  DW_TRY(detail::check_rank(kOp, "b", g.b, {2, 3}));
  DW_TRY(detail::check_rank(kOp, "d", g.d, {2, 3}));
  DW_TRY(detail::check_dtype(kOp, "a", g.a, kFloatTypes));
  DW_TRY(detail::check_same_dtype(kOp, "b", g.b, "a", g.a));
  DW_TRY(detail::check_dtype(kOp, "d", g.d, kFloatTypes));
  p.device = g.a.device;
  DW_TRY(detail::check_device(kOp, "b", g.b, "a", p.device));
  DW_TRY(detail::check_device(kOp, "d", g.d, "a", p.device));

  p.m = g.a.shape[g.a.ndim - 2];
  p.k = g.a.shape[g.a.ndim - 1];
  p.n = g.b.shape[g.b.ndim - 1];
  if (g.b.shape[g.b.ndim - 2] != p.k) {
    return arg_error(kOp, "b",
                     "K = " + std::to_string(p.k) + " rows (the columns of 'a' " +
                         shape_string(g.a) + ")",
                     shape_string(g.b));
  }
  if (g.d.ndim == 3) {
    p.batch = g.d.shape[0];
  } else if (g.a.ndim == 3 || g.b.ndim == 3) {
    return arg_error(kOp, "d", "a 3-D (batch, M, N) output when 'a' or 'b' is batched",
                     shape_string(g.d));
  }
  DW_TRY(check_matrix("a", g.a, p.batch, p.m, p.k, "M", "K", &p.a));
  DW_TRY(check_matrix("b", g.b, p.batch, p.k, p.n, "K", "N", &p.b));
  DW_TRY(check_matrix("d", g.d, p.batch, p.m, p.n, "M", "N", &p.d));
  DW_TRY(detail::check_no_internal_overlap(kOp, "d", g.d));
  if (overlaps(g.d, g.a)) return arg_error(kOp, "d", "memory disjoint from 'a'", "an overlap");
  if (overlaps(g.d, g.b)) return arg_error(kOp, "d", "memory disjoint from 'b'", "an overlap");

  if (!std::isfinite(g.alpha)) {
    return arg_error(kOp, "alpha", "a finite value", std::to_string(g.alpha));
  }
  if (!std::isfinite(g.beta)) {
    return arg_error(kOp, "beta", "a finite value", std::to_string(g.beta));
  }
  p.alpha = g.alpha;
  p.beta = g.beta;
  switch (g.activation) {
    case Activation::kNone: case Activation::kReLU: case Activation::kGeluErf:
    case Activation::kGeluTanh: case Activation::kSiLU: break;
    default:
      return arg_error(kOp, "activation", "one of none, relu, gelu, gelu_tanh, silu (0..4)",
                       std::to_string(static_cast<int32_t>(g.activation)));
  }
  p.activation = g.activation;

  // Epilogue operands shaped like d may alias d exactly (in-place update), or be disjoint.
  auto epilogue_operand = [&](const char* name, const TensorView* t, matmul::Matrix* storage,
                              const matmul::Matrix** slot) -> Status {
    if (t == nullptr) return Status::Ok();
    DW_TRY(detail::check_device(kOp, name, *t, "a", p.device));
    DW_TRY(check_matrix(name, *t, p.batch, p.m, p.n, "M", "N", storage));
    if (overlaps(*t, g.d) && !same_layout(*storage, p.d)) {
      return arg_error(kOp, name, "either exactly 'd' (in place) or memory disjoint from it",
                       "a partial overlap");
    }
    *slot = storage;
    return Status::Ok();
  };
  DW_TRY(epilogue_operand("c", g.c, &p.c_storage, &p.c));
  DW_TRY(epilogue_operand("residual", g.residual, &p.residual_storage, &p.residual));
  if (g.bias != nullptr) {
    const TensorView& b = *g.bias;
    DW_TRY(detail::check_view(kOp, "bias", b));
    DW_TRY(detail::check_rank(kOp, "bias", b, {1}));
    DW_TRY(detail::check_dtype(kOp, "bias", b, kFloatTypes));
    DW_TRY(detail::check_device(kOp, "bias", b, "a", p.device));
    DW_TRY(detail::check_dim(kOp, "bias", b, 0, p.n, "N"));
    p.bias = b.data;
    p.bias_dtype = b.dtype;
    p.bias_stride = b.strides[0];
  }
  if (p.batch == 0 || p.m == 0 || p.n == 0) return Status::Ok();
  if (p.device.type == DeviceType::kCUDA) return matmul::gemm_cuda(p, ctx);
  return matmul::gemm_cpu(p);
}

}  // namespace

Status gemm(const GemmArgs& args, const Context& ctx) {
  try {
    return gemm_impl(args, ctx);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "gemm: out of host memory");
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal, std::string("gemm: internal error: ") + e.what());
  }
}

}  // namespace deepwell
