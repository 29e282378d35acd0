// Public GEMM entry points (gemm, gemm_fp8 and their workspace queries): validation,
// normalization into a Problem, dispatch to the CPU reference or the CUDA kernels.
#include <cmath>
#include <exception>
#include <initializer_list>
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

std::string_view fp8_scaling_name(Fp8Scaling s) {
  switch (s) {
    case Fp8Scaling::kTensor: return "tensor";
    case Fp8Scaling::kRow: return "row";
    case Fp8Scaling::kBlock: return "block";
    case Fp8Scaling::kMx: return "mx";
  }
  return "unknown";
}

namespace {

using detail::arg_error;
using detail::shape_string;
constexpr auto kFloatTypes = {DType::kF32, DType::kF16, DType::kBF16};
constexpr auto kFp8Types = {DType::kE4M3, DType::kE5M2};

// The arguments gemm and gemm_fp8 share.
struct Common {
  std::string_view op;
  const TensorView& a;
  const TensorView& b;
  const TensorView& d;
  const TensorView* c;
  const TensorView* bias;
  const TensorView* residual;
  float alpha, beta;
  Activation activation;
  std::initializer_list<DType> input_types;
  bool same_input_dtype;
};

// A (rows, cols) or (batch, rows, cols) operand against the expected sizes; batch may be absent or
// 1 (broadcast).
Status check_matrix(std::string_view op, std::string_view name, const TensorView& t,
                    std::initializer_list<DType> types, int64_t batch, int64_t rows, int64_t cols,
                    const char* rows_name, const char* cols_name, matmul::Matrix* out) {
  DW_TRY(detail::check_view(op, name, t));
  DW_TRY(detail::check_rank(op, name, t, {2, 3}));
  DW_TRY(detail::check_dtype(op, name, t, types));
  const int r = t.ndim - 2;
  const int64_t tb = t.ndim == 3 ? t.shape[0] : 1;
  if (t.shape[r] != rows || t.shape[r + 1] != cols || (tb != batch && tb != 1)) {
    std::string expected = "shape (" + std::string(rows_name) + ", " + cols_name + ") = (" +
                           std::to_string(rows) + ", " + std::to_string(cols) + ")";
    if (batch != 1) expected += ", with an optional batch of " + std::to_string(batch) + " or 1";
    return arg_error(op, name, expected, shape_string(t));
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

Status build_problem(const Common& g, matmul::Problem* pp) {
  matmul::Problem& p = *pp;
  const std::string_view op = g.op;
  DW_TRY(detail::check_view(op, "a", g.a));
  DW_TRY(detail::check_view(op, "b", g.b));
  DW_TRY(detail::check_view(op, "d", g.d));
  DW_TRY(detail::check_rank(op, "a", g.a, {2, 3}));
  DW_TRY(detail::check_rank(op, "b", g.b, {2, 3}));
  DW_TRY(detail::check_rank(op, "d", g.d, {2, 3}));
  DW_TRY(detail::check_dtype(op, "a", g.a, g.input_types));
  if (g.same_input_dtype) {
    DW_TRY(detail::check_same_dtype(op, "b", g.b, "a", g.a));
  } else {
    DW_TRY(detail::check_dtype(op, "b", g.b, g.input_types));
  }
  DW_TRY(detail::check_dtype(op, "d", g.d, kFloatTypes));
  p.device = g.a.device;
  DW_TRY(detail::check_device(op, "b", g.b, "a", p.device));
  DW_TRY(detail::check_device(op, "d", g.d, "a", p.device));

  p.m = g.a.shape[g.a.ndim - 2];
  p.k = g.a.shape[g.a.ndim - 1];
  p.n = g.b.shape[g.b.ndim - 1];
  if (g.b.shape[g.b.ndim - 2] != p.k) {
    return arg_error(op, "b",
                     "K = " + std::to_string(p.k) + " rows (the columns of 'a' " +
                         shape_string(g.a) + ")",
                     shape_string(g.b));
  }
  if (g.d.ndim == 3) {
    p.batch = g.d.shape[0];
  } else if (g.a.ndim == 3 || g.b.ndim == 3) {
    return arg_error(op, "d", "a 3-D (batch, M, N) output when 'a' or 'b' is batched",
                     shape_string(g.d));
  }
  DW_TRY(check_matrix(op, "a", g.a, g.input_types, p.batch, p.m, p.k, "M", "K", &p.a));
  DW_TRY(check_matrix(op, "b", g.b, g.input_types, p.batch, p.k, p.n, "K", "N", &p.b));
  DW_TRY(check_matrix(op, "d", g.d, kFloatTypes, p.batch, p.m, p.n, "M", "N", &p.d));
  DW_TRY(detail::check_no_internal_overlap(op, "d", g.d));
  if (detail::overlaps(g.d, g.a)) return arg_error(op, "d", "memory disjoint from 'a'", "an overlap");
  if (detail::overlaps(g.d, g.b)) return arg_error(op, "d", "memory disjoint from 'b'", "an overlap");

  if (!std::isfinite(g.alpha)) {
    return arg_error(op, "alpha", "a finite value", std::to_string(g.alpha));
  }
  if (!std::isfinite(g.beta)) {
    return arg_error(op, "beta", "a finite value", std::to_string(g.beta));
  }
  p.alpha = g.alpha;
  p.beta = g.beta;
  switch (g.activation) {
    case Activation::kNone: case Activation::kReLU: case Activation::kGeluErf:
    case Activation::kGeluTanh: case Activation::kSiLU: break;
    default:
      return arg_error(op, "activation", "one of none, relu, gelu, gelu_tanh, silu (0..4)",
                       std::to_string(static_cast<int32_t>(g.activation)));
  }
  p.activation = g.activation;

  // Epilogue operands shaped like d may alias d exactly (in-place update), or be disjoint.
  auto epilogue_operand = [&](const char* name, const TensorView* t, matmul::Matrix* storage,
                              const matmul::Matrix** slot) -> Status {
    if (t == nullptr) return Status::Ok();
    DW_TRY(detail::check_device(op, name, *t, "a", p.device));
    DW_TRY(check_matrix(op, name, *t, kFloatTypes, p.batch, p.m, p.n, "M", "N", storage));
    if (detail::overlaps(*t, g.d) && !same_layout(*storage, p.d)) {
      return arg_error(op, name, "either exactly 'd' (in place) or memory disjoint from it",
                       "a partial overlap");
    }
    *slot = storage;
    return Status::Ok();
  };
  DW_TRY(epilogue_operand("c", g.c, &p.c_storage, &p.c));
  DW_TRY(epilogue_operand("residual", g.residual, &p.residual_storage, &p.residual));
  if (g.bias != nullptr) {
    const TensorView& b = *g.bias;
    DW_TRY(detail::check_view(op, "bias", b));
    DW_TRY(detail::check_rank(op, "bias", b, {1}));
    DW_TRY(detail::check_dtype(op, "bias", b, kFloatTypes));
    DW_TRY(detail::check_device(op, "bias", b, "a", p.device));
    DW_TRY(detail::check_dim(op, "bias", b, 0, p.n, "N"));
    p.bias = b.data;
    p.bias_dtype = b.dtype;
    p.bias_stride = b.strides[0];
  }
  return Status::Ok();
}

Common common(const GemmArgs& g) {
  return {"gemm", g.a, g.b, g.d, g.c, g.bias, g.residual, g.alpha, g.beta, g.activation,
          kFloatTypes, true};
}

Common common(const GemmFp8Args& g) {
  return {"gemm_fp8", g.a, g.b, g.d, g.c, g.bias, g.residual, g.alpha, g.beta, g.activation,
          kFp8Types, false};
}

// One fp8 scale tensor against the shape its granularity asks for; fills a 2-D Matrix view.
Status check_scale(const char* name, const TensorView& t, Fp8Scaling scaling, bool is_a,
                   const matmul::Problem& p, matmul::Matrix* out) {
  constexpr std::string_view op = "gemm_fp8";
  DW_TRY(detail::check_view(op, name, t));
  if (scaling == Fp8Scaling::kMx) {
    DW_TRY(detail::check_dtype(op, name, t, {DType::kUE8M0}));
  } else {
    DW_TRY(detail::check_dtype(op, name, t, {DType::kF32}));
  }
  DW_TRY(detail::check_device(op, name, t, "a", p.device));
  out->data = t.data;
  out->dtype = t.dtype;
  out->batch_stride = 0;
  const int64_t k128 = (p.k + 127) / 128, k32 = (p.k + 31) / 32;
  int64_t rows = 1, cols = 1;
  std::string expected;
  switch (scaling) {
    case Fp8Scaling::kTensor:
      if (t.numel() == 1 && t.ndim <= 2) {
        out->row_stride = out->col_stride = 0;
        return Status::Ok();
      }
      return arg_error(op, name, "one fp32 scale (shape (1) or ()) for scaling 'tensor'",
                       shape_string(t));
    case Fp8Scaling::kRow: {
      const int64_t len = is_a ? p.m : p.n;
      const bool vec = t.ndim == 1 && t.shape[0] == len;
      const bool mat = t.ndim == 2 && (is_a ? (t.shape[0] == len && t.shape[1] == 1)
                                            : (t.shape[0] == 1 && t.shape[1] == len));
      if (!vec && !mat) {
        return arg_error(op, name,
                         is_a ? "shape (M) or (M, 1) = (" + std::to_string(p.m) +
                                    ") for scaling 'row'"
                              : "shape (N) or (1, N) = (" + std::to_string(p.n) +
                                    ") for scaling 'row'",
                         shape_string(t));
      }
      const int64_t s = vec ? t.strides[0] : (is_a ? t.strides[0] : t.strides[1]);
      out->row_stride = is_a ? s : 0;
      out->col_stride = is_a ? 0 : s;
      return Status::Ok();
    }
    case Fp8Scaling::kBlock:
      rows = is_a ? p.m : (p.n + 127) / 128;
      cols = k128;
      expected = is_a ? "shape (M, ceil(K/128)) = (" : "shape (ceil(N/128), ceil(K/128)) = (";
      break;
    case Fp8Scaling::kMx:
      rows = is_a ? p.m : p.n;
      cols = k32;
      expected = is_a ? "shape (M, ceil(K/32)) = (" : "shape (N, ceil(K/32)) = (";
      break;
    default:
      return arg_error(op, "scaling", "one of tensor, row, block, mx (0..3)",
                       std::to_string(static_cast<int32_t>(scaling)));
  }
  if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != cols) {
    return arg_error(op, name,
                     expected + std::to_string(rows) + ", " + std::to_string(cols) +
                         ") for scaling '" + std::string(fp8_scaling_name(scaling)) + "'",
                     shape_string(t));
  }
  out->row_stride = t.strides[0];
  out->col_stride = t.strides[1];
  return Status::Ok();
}

Status build_fp8_problem(const GemmFp8Args& g, matmul::Fp8Problem* f) {
  DW_TRY(build_problem(common(g), &f->p));
  switch (g.scaling) {
    case Fp8Scaling::kTensor: case Fp8Scaling::kRow: case Fp8Scaling::kBlock:
    case Fp8Scaling::kMx: break;
    default:
      return arg_error("gemm_fp8", "scaling", "one of tensor, row, block, mx (0..3)",
                       std::to_string(static_cast<int32_t>(g.scaling)));
  }
  f->scaling = g.scaling;
  DW_TRY(check_scale("scale_a", g.scale_a, g.scaling, true, f->p, &f->scale_a));
  DW_TRY(check_scale("scale_b", g.scale_b, g.scaling, false, f->p, &f->scale_b));
  return Status::Ok();
}

bool nothing_to_do(const matmul::Problem& p) { return p.batch == 0 || p.m == 0 || p.n == 0; }

Status gemm_impl(const GemmArgs& g, const Context& ctx) {
  matmul::Problem p;
  DW_TRY(build_problem(common(g), &p));
  if (nothing_to_do(p)) return Status::Ok();
  if (p.device.type == DeviceType::kCUDA) return matmul::gemm_cuda(p, ctx);
  return matmul::gemm_cpu(p);
}

#if !defined(DEEPWELL_WITH_CUDA)
Status no_cuda(std::string_view op) {
  return Status(StatusCode::kNotSupported,
                std::string(op) + ": this build of deepwell has no CUDA kernels (configured with "
                                  "DEEPWELL_CUDA=OFF or without nvcc); use CPU tensors");
}
#endif

Status gemm_fp8_impl(const GemmFp8Args& g, const Context& ctx) {
  matmul::Fp8Problem f;
  DW_TRY(build_fp8_problem(g, &f));
  if (nothing_to_do(f.p)) return Status::Ok();
  if (f.p.device.type == DeviceType::kCUDA) {
#if defined(DEEPWELL_WITH_CUDA)
    return matmul::gemm_fp8_cuda(f, ctx);
#else
    (void)ctx;
    return no_cuda("gemm_fp8");
#endif
  }
  return matmul::gemm_fp8_cpu(f);
}

Status gemm_workspace_impl(const GemmArgs& g, [[maybe_unused]] size_t* bytes) {
  matmul::Problem p;
  DW_TRY(build_problem(common(g), &p));
  if (nothing_to_do(p) || p.device.type != DeviceType::kCUDA) return Status::Ok();
#if defined(DEEPWELL_WITH_CUDA)
  return matmul::gemm_cuda_workspace(p, bytes);
#else
  return Status::Ok();
#endif
}

Status gemm_fp8_workspace_impl(const GemmFp8Args& g, [[maybe_unused]] size_t* bytes) {
  matmul::Fp8Problem f;
  DW_TRY(build_fp8_problem(g, &f));
  if (nothing_to_do(f.p) || f.p.device.type != DeviceType::kCUDA) return Status::Ok();
#if defined(DEEPWELL_WITH_CUDA)
  return matmul::gemm_fp8_cuda_workspace(f, bytes);
#else
  return Status::Ok();
#endif
}

Status null_output(std::string_view op) {
  return arg_error(op, "bytes", "a non-null pointer for the result", "NULL");
}

}  // namespace

Status gemm(const GemmArgs& args, const Context& ctx) {
  return detail::guarded("gemm", [&] { return gemm_impl(args, ctx); });
}

Status gemm_fp8(const GemmFp8Args& args, const Context& ctx) {
  return detail::guarded("gemm_fp8", [&] { return gemm_fp8_impl(args, ctx); });
}

Status gemm_workspace_size(const GemmArgs& args, size_t* bytes) {
  if (bytes == nullptr) return null_output("gemm_workspace_size");
  *bytes = 0;
  return detail::guarded("gemm", [&] { return gemm_workspace_impl(args, bytes); });
}

Status gemm_fp8_workspace_size(const GemmFp8Args& args, size_t* bytes) {
  if (bytes == nullptr) return null_output("gemm_fp8_workspace_size");
  *bytes = 0;
  return detail::guarded("gemm_fp8", [&] { return gemm_fp8_workspace_impl(args, bytes); });
}

}  // namespace deepwell
