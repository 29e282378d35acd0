// Public quantization entry points: argument validation, normalization into a Problem, dispatch to
// the CPU reference or the CUDA kernels.
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "core/validate.hpp"
#include "deepwell/gemm.hpp"
#include "quant/problem.hpp"

namespace deepwell {

std::string_view quant_format_name(QuantFormat f) {
  switch (f) {
    case QuantFormat::kFp8Tensor: return "fp8_tensor";
    case QuantFormat::kFp8Row: return "fp8_row";
    case QuantFormat::kFp8Block1x128: return "fp8_block1x128";
    case QuantFormat::kFp8Block128x128: return "fp8_block128x128";
    case QuantFormat::kMxfp8: return "mxfp8";
    case QuantFormat::kMxfp4: return "mxfp4";
    case QuantFormat::kNvfp4: return "nvfp4";
  }
  return "unknown";
}

namespace {

using detail::arg_error;
using detail::shape_string;
using quant::FormatTraits;

constexpr std::string_view kQuantize = "quantize";
constexpr std::string_view kDequantize = "dequantize";

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (int i = 0; i < s.ndim; ++i) out += (i ? ", " : "") + std::to_string(s.dims[i]);
  return out + "]";
}

Shape shape_of(const TensorView& t) {
  Shape s;
  s.ndim = t.ndim;
  for (int i = 0; i < t.ndim; ++i) s.dims[i] = t.shape[i];
  return s;
}

bool is_mx(QuantFormat f) { return f == QuantFormat::kMxfp8 || f == QuantFormat::kMxfp4; }

Status check_config(std::string_view op, const QuantConfig& c, bool for_quantize) {
  const auto f = static_cast<int32_t>(c.format);
  if (f < 0 || f > static_cast<int32_t>(QuantFormat::kNvfp4)) {
    return arg_error(op, "format",
                     "one of fp8_tensor, fp8_row, fp8_block1x128, fp8_block128x128, mxfp8, mxfp4, "
                     "nvfp4 (0..6)",
                     std::to_string(f));
  }
  const std::string name(quant_format_name(c.format));
  const FormatTraits t = quant::format_traits(c.format);
  if (c.swizzle && !t.byte_scales) {
    return arg_error(op, "swizzle", "false for " + name + " (only MX and NVFP4 scales are swizzled)",
                     "true");
  }
  if (!for_quantize) return Status::Ok();
  const auto r = static_cast<int32_t>(c.rule);
  if (r != 0 && r != 1) return arg_error(op, "rule", "floor or rceil (0 or 1)", std::to_string(r));
  if (c.rule == ScaleRule::kRceil && !is_mx(c.format)) {
    return arg_error(op, "rule", "floor for " + name + " (the rule picks MX scales only)", "rceil");
  }
  if (c.pow2_scales && t.byte_scales) {
    return arg_error(op, "pow2_scales",
                     "false for " + name + " (its scales are not FP32; they are powers of two "
                     "or e4m3 already)", "true");
  }
  return Status::Ok();
}

// Shapes of the outputs; errors name `xname` (the argument that carries the input shape).
Status compute_shapes(std::string_view op, std::string_view xname, const QuantConfig& c,
                      const Shape& x, bool transpose, QuantShapes* out) {
  DW_TRY(check_config(op, c, false));
  const std::string name(quant_format_name(c.format));
  const FormatTraits t = quant::format_traits(c.format);
  const int min_rank = c.format == QuantFormat::kFp8Block128x128 ? 2 : 1;
  if (x.ndim < min_rank || x.ndim > kMaxDims) {
    return arg_error(op, xname,
                     std::string("a tensor with ") + (min_rank == 2 ? "2" : "1") +
                         " to 8 dimensions for " + name,
                     std::to_string(x.ndim) + " dimensions");
  }
  for (int i = 0; i < x.ndim; ++i) {
    if (x.dims[i] < 0) return arg_error(op, xname, "non-negative sizes", shape_string(x));
  }
  const int64_t K = x.dims[x.ndim - 1];
  int64_t R = 1;
  for (int i = 0; i + 1 < x.ndim; ++i) R *= x.dims[i];
  if (t.block != 0 && t.byte_scales && K % t.block != 0) {
    return arg_error(op, xname,
                     "a last dimension (K) that is a multiple of " + std::to_string(t.block) +
                         " for " + name,
                     "shape " + shape_string(x));
  }
  *out = QuantShapes{};
  out->data = x;
  out->scale_dtype = t.scale_dtype;
  out->has_tensor_scale = c.format == QuantFormat::kNvfp4;
  // Scales of a (rows, cols) matrix whose rows unravel over `lead` dims.
  auto scales_of = [&](const int64_t* lead, int lead_ndim, int64_t rows, int64_t cols) {
    Shape s;
    const int64_t C = quant::scale_cols(t, cols);
    if (c.format == QuantFormat::kFp8Tensor) {
      s.ndim = 1;
      s.dims[0] = 1;
    } else if (c.swizzle) {
      s.ndim = 4;
      s.dims[0] = (rows + 127) / 128;
      s.dims[1] = (C + 3) / 4;
      s.dims[2] = 32;
      s.dims[3] = 16;
    } else if (c.format == QuantFormat::kFp8Block128x128) {
      for (int i = 0; i + 1 < lead_ndim; ++i) s.dims[s.ndim++] = lead[i];
      s.dims[s.ndim++] = (lead[lead_ndim - 1] + 127) / 128;
      s.dims[s.ndim++] = C;
    } else {
      for (int i = 0; i < lead_ndim; ++i) s.dims[s.ndim++] = lead[i];
      s.dims[s.ndim++] = C;
    }
    return s;
  };
  out->scales = scales_of(x.dims, x.ndim - 1, R, K);
  if (transpose) {
    if (x.ndim != 2) {
      return arg_error(op, xname, "a 2-D tensor (R, K) when the transposed copy is requested",
                       std::to_string(x.ndim) + "-D shape " + shape_string(x));
    }
    if (t.block != 0 && t.byte_scales && R % t.block != 0) {
      return arg_error(op, xname,
                       "a first dimension (R) that is a multiple of " + std::to_string(t.block) +
                           " for the transposed copy in " + name,
                       "shape " + shape_string(x));
    }
    out->data_t.ndim = 2;
    out->data_t.dims[0] = K;
    out->data_t.dims[1] = R;
    if (c.format != QuantFormat::kFp8Tensor) out->scales_t = scales_of(&K, 1, K, R);
  }
  return Status::Ok();
}

// An output or packed input: view, dtype, device, exact shape, contiguous (unless `any_strides`:
// the caller checks the layout).
Status check_tensor(std::string_view op, std::string_view name, const TensorView& t,
                    std::initializer_list<DType> dtypes, Device device, const Shape& shape,
                    std::string_view meaning, bool any_strides = false) {
  DW_TRY(detail::check_view(op, name, t));
  DW_TRY(detail::check_dtype(op, name, t, dtypes));
  if (t.device != device) {
    return arg_error(op, name, "a tensor on " + device_name(device) + " (the device of the input)",
                     "a tensor on " + device_name(t.device));
  }
  bool same = t.ndim == shape.ndim;
  for (int i = 0; same && i < t.ndim; ++i) same = t.shape[i] == shape.dims[i];
  if (!same) {
    return arg_error(op, name, "shape " + shape_string(shape) + " (" + std::string(meaning) + ")",
                     shape_string(t));
  }
  if (any_strides) return Status::Ok();
  return detail::check_contiguous(op, name, t);
}

// The row stride, in codes, of a code tensor (..., cols): cols when it is contiguous; fp8 codes
// may also come as a 2-D (rows, cols) view whose rows lie further apart (unit stride along a
// row), e.g. the transposed copy's rows padded to 32 bytes so that a GEMM's TMA loads can read
// them. fp4 codes pack two per byte and must be contiguous.
Status code_rows(std::string_view op, std::string_view name, const TensorView& t, bool fp4,
                 int64_t* ld) {
  const int64_t cols = t.ndim == 0 ? 1 : t.shape[t.ndim - 1];
  if (t.is_contiguous()) {
    *ld = cols;
    return Status::Ok();
  }
  if (!fp4 && t.ndim == 2 && (cols <= 1 || t.strides[1] == 1) && t.strides[0] >= cols) {
    *ld = t.strides[0];
    return Status::Ok();
  }
  if (fp4) {
    return arg_error(op, name, "a contiguous tensor (fp4 codes pack two per byte)", t.describe());
  }
  return arg_error(op, name,
                   "a contiguous tensor, or a 2-D one with unit stride along its rows and rows "
                   "at least " + std::to_string(cols) + " codes apart (padded rows)",
                   t.describe());
}

quant::Matrix matrix_of(const TensorView& x) {
  quant::Matrix m;
  m.data = x.data;
  m.dtype = x.dtype;
  m.cols = x.shape[x.ndim - 1];
  m.col_stride = x.strides[x.ndim - 1];
  m.rows = 1;
  m.lead_ndim = x.ndim - 1;
  for (int i = 0; i + 1 < x.ndim; ++i) {
    m.lead_shape[i] = x.shape[i];
    m.lead_strides[i] = x.strides[i];
    m.rows *= x.shape[i];
  }
  return m;
}

std::initializer_list<DType> elem_dtypes(const FormatTraits& t) {
  static constexpr std::initializer_list<DType> kFp8 = {DType::kE4M3, DType::kE5M2};
  static constexpr std::initializer_list<DType> kFp4 = {DType::kE2M1};
  return t.fp4 ? kFp4 : kFp8;
}

std::initializer_list<DType> scale_dtypes(const FormatTraits& t) {
  // Raw bytes are accepted for 1-byte scales: most frameworks have no ue8m0 / ue4m3 dtype.
  static constexpr std::initializer_list<DType> kF32 = {DType::kF32};
  static constexpr std::initializer_list<DType> kUE8 = {DType::kUE8M0, DType::kU8};
  static constexpr std::initializer_list<DType> kUE4 = {DType::kUE4M3, DType::kU8};
  if (!t.byte_scales) return kF32;
  return t.scale_dtype == DType::kUE8M0 ? kUE8 : kUE4;
}

Shape one_element() {
  Shape s;
  s.ndim = 1;
  s.dims[0] = 1;
  return s;
}

Status check_tensor_scale(std::string_view op, const TensorView* ts, QuantFormat f, Device dev) {
  if (f != QuantFormat::kNvfp4) {
    if (ts != nullptr) {
      return arg_error(op, "tensor_scale", "none for " + std::string(quant_format_name(f)) +
                                               " (only nvfp4 has a separate tensor scale)",
                       "a tensor");
    }
    return Status::Ok();
  }
  if (ts == nullptr) return arg_error(op, "tensor_scale", "an f32 (1) tensor for nvfp4", "none");
  return check_tensor(op, "tensor_scale", *ts, {DType::kF32}, dev, one_element(),
                      "the nvfp4 tensor scale");
}

// The optional caller amax: kFp8Tensor and kNvfp4 only, f32 (1) on x's device.
Status check_amax(std::string_view op, const TensorView* amax, QuantFormat f, Device dev) {
  if (amax == nullptr) return Status::Ok();
  if (f != QuantFormat::kFp8Tensor && f != QuantFormat::kNvfp4) {
    return arg_error(op, "amax", "none for " + std::string(quant_format_name(f)) +
                                     " (only fp8_tensor and nvfp4 scale by a tensor amax)",
                     "a tensor");
  }
  return check_tensor(op, "amax", *amax, {DType::kF32}, dev, one_element(), "the tensor amax");
}

Status check_disjoint(std::string_view op, const std::vector<std::pair<const char*, const TensorView*>>& outs,
                      const TensorView& input, std::string_view input_name) {
  for (size_t i = 0; i < outs.size(); ++i) {
    if (detail::overlaps(*outs[i].second, input)) {
      return arg_error(op, outs[i].first, "memory disjoint from '" + std::string(input_name) + "'",
                       "an overlap");
    }
    for (size_t j = 0; j < i; ++j) {
      if (detail::overlaps(*outs[i].second, *outs[j].second)) {
        return arg_error(op, outs[i].first,
                         "memory disjoint from '" + std::string(outs[j].first) + "'", "an overlap");
      }
    }
  }
  return Status::Ok();
}

Status quantize_impl(const QuantizeArgs& a, const Context& ctx) {
  const std::string_view op = kQuantize;
  DW_TRY(detail::check_view(op, "x", a.x));
  DW_TRY(detail::check_dtype(op, "x", a.x, {DType::kF32, DType::kF16, DType::kBF16}));
  DW_TRY(check_config(op, a.config, true));
  if (a.scales_t != nullptr && a.data_t == nullptr) {
    return arg_error(op, "scales_t", "none when 'data_t' is not given", "a tensor");
  }
  const bool transpose = a.data_t != nullptr;
  int64_t ld_t = 0;  // data_t's row stride in codes
  QuantShapes shapes;
  DW_TRY(compute_shapes(op, "x", a.config, shape_of(a.x), transpose, &shapes));
  const FormatTraits t = quant::format_traits(a.config.format);
  const Device dev = a.x.device;
  const bool cuda = dev.type == DeviceType::kCUDA;
  if (cuda) DW_TRY(detail::check_contiguous(op, "x", a.x));

  DW_TRY(check_tensor(op, "data", a.data, elem_dtypes(t), dev, shapes.data, "x's shape"));
  DW_TRY(check_tensor(op, "scales", a.scales, scale_dtypes(t), dev, shapes.scales,
                      std::string(quant_format_name(a.config.format)) + " scales"));
  DW_TRY(check_tensor_scale(op, a.tensor_scale, a.config.format, dev));
  std::vector<std::pair<const char*, const TensorView*>> outs = {{"data", &a.data},
                                                                 {"scales", &a.scales}};
  if (a.tensor_scale) outs.push_back({"tensor_scale", a.tensor_scale});
  if (transpose) {
    DW_TRY(check_tensor(op, "data_t", *a.data_t, {a.data.dtype}, dev, shapes.data_t,
                        "(K, R), with the dtype of 'data'", true));
    DW_TRY(code_rows(op, "data_t", *a.data_t, t.fp4, &ld_t));
    outs.push_back({"data_t", a.data_t});
    if (a.config.format == QuantFormat::kFp8Tensor) {
      if (a.scales_t != nullptr) {
        return arg_error(op, "scales_t", "none for fp8_tensor (the transposed copy shares 'scales')",
                         "a tensor");
      }
    } else {
      if (a.scales_t == nullptr) {
        return arg_error(op, "scales_t", "a tensor for the scales of 'data_t'", "none");
      }
      DW_TRY(check_tensor(op, "scales_t", *a.scales_t, {a.scales.dtype}, dev, shapes.scales_t,
                          "the scales of the transposed copy, with the dtype of 'scales'"));
      outs.push_back({"scales_t", a.scales_t});
    }
  }
  DW_TRY(check_amax(op, a.amax, a.config.format, dev));
  DW_TRY(check_disjoint(op, outs, a.x, "x"));
  if (a.amax) DW_TRY(check_disjoint(op, outs, *a.amax, "amax"));

  quant::Problem p;
  p.device = dev;
  p.format = a.config.format;
  p.rule = a.config.rule;
  p.pow2 = a.config.pow2_scales;
  p.swizzle = a.config.swizzle;
  p.elem = quant::elem_of(a.data.dtype);
  p.traits = t;
  p.main.x = matrix_of(a.x);
  p.main.rows2 = a.x.ndim >= 2 ? a.x.shape[a.x.ndim - 2] : 1;
  if (a.config.format != QuantFormat::kFp8Block128x128) p.main.rows2 = p.main.x.rows;
  p.main.data = static_cast<uint8_t*>(a.data.data);
  p.main.ld = p.main.x.cols;
  p.main.scales = a.scales.data;
  if (p.format == QuantFormat::kFp8Tensor) p.tensor_scale = static_cast<float*>(a.scales.data);
  if (p.format == QuantFormat::kNvfp4) p.tensor_scale = static_cast<float*>(a.tensor_scale->data);
  if (a.amax) p.given_amax = static_cast<const float*>(a.amax->data);
  if (transpose) {
    p.has_transposed = true;
    quant::Matrix& xt = p.transposed.x;
    xt.data = a.x.data;
    xt.dtype = a.x.dtype;
    xt.rows = a.x.shape[1];
    xt.cols = a.x.shape[0];
    xt.lead_ndim = 1;
    xt.lead_shape[0] = a.x.shape[1];
    xt.lead_strides[0] = a.x.strides[1];
    xt.col_stride = a.x.strides[0];
    p.transposed.rows2 = xt.rows;
    p.transposed.data = static_cast<uint8_t*>(a.data_t->data);
    p.transposed.ld = ld_t;
    p.transposed.scales = a.scales_t ? a.scales_t->data : nullptr;
  }
  if (cuda) return quant::quantize_cuda(p, ctx);
  return quant::quantize_cpu(p);
}

// Validates a quantized operand against the shape of its decoded form; fills the problem.
Status build_dequant(std::string_view op, const std::string& prefix, const TensorView& data,
                     const TensorView& scales, const TensorView* tensor_scale,
                     const QuantConfig& config, quant::DequantProblem* p) {
  const std::string dname = prefix + "data", sname = prefix + "scales";
  DW_TRY(check_config(op, config, false));
  DW_TRY(detail::check_view(op, dname, data));
  const FormatTraits t = quant::format_traits(config.format);
  DW_TRY(detail::check_dtype(op, dname, data, elem_dtypes(t)));
  QuantShapes shapes;
  DW_TRY(compute_shapes(op, dname, config, shape_of(data), false, &shapes));
  DW_TRY(code_rows(op, dname, data, t.fp4, &p->ld));
  const Device dev = data.device;
  DW_TRY(check_tensor(op, sname, scales, scale_dtypes(t), dev, shapes.scales,
                      std::string(quant_format_name(config.format)) + " scales"));
  if (config.format == QuantFormat::kNvfp4 && tensor_scale == nullptr) {
    return arg_error(op, prefix + "tensor_scale", "an f32 (1) tensor for nvfp4", "none");
  }
  if (config.format != QuantFormat::kNvfp4 && tensor_scale != nullptr) {
    return arg_error(op, prefix + "tensor_scale", "none (only nvfp4 has a tensor scale)", "a tensor");
  }
  if (tensor_scale) {
    DW_TRY(check_tensor(op, prefix + "tensor_scale", *tensor_scale, {DType::kF32}, dev,
                        one_element(), "the nvfp4 tensor scale"));
  }
  p->device = dev;
  p->format = config.format;
  p->swizzle = config.swizzle;
  p->elem = quant::elem_of(data.dtype);
  p->traits = t;
  p->cols = data.shape[data.ndim - 1];
  p->rows = 1;
  for (int i = 0; i + 1 < data.ndim; ++i) p->rows *= data.shape[i];
  p->rows2 = config.format == QuantFormat::kFp8Block128x128 ? data.shape[data.ndim - 2] : p->rows;
  p->data = static_cast<const uint8_t*>(data.data);
  p->scales = scales.data;
  p->tensor_scale = tensor_scale ? static_cast<const float*>(tensor_scale->data) : nullptr;
  return Status::Ok();
}

Status dequantize_impl(const DequantizeArgs& a, const Context& ctx) {
  const std::string_view op = kDequantize;
  quant::DequantProblem p;
  DW_TRY(build_dequant(op, "", a.data, a.scales, a.tensor_scale, a.config, &p));
  DW_TRY(check_tensor(op, "out", a.out, {DType::kF32, DType::kF16, DType::kBF16}, p.device,
                      shape_of(a.data), "the shape of 'data'"));
  std::vector<std::pair<const char*, const TensorView*>> outs = {{"out", &a.out}};
  DW_TRY(check_disjoint(op, outs, a.data, "data"));
  DW_TRY(check_disjoint(op, outs, a.scales, "scales"));
  if (a.tensor_scale) DW_TRY(check_disjoint(op, outs, *a.tensor_scale, "tensor_scale"));
  p.out = a.out.data;
  p.out_dtype = a.out.dtype;
  if (p.rows == 0 || p.cols == 0) return Status::Ok();
  if (p.device.type == DeviceType::kCUDA) return quant::dequantize_cuda(p, ctx);
  return quant::dequantize_cpu(p);
}

Status swizzle_impl(std::string_view op, const TensorView& in, const TensorView& out,
                    bool to_swizzled, const Context& ctx) {
  const char* rm_name = to_swizzled ? "scales" : "out";
  const char* sw_name = to_swizzled ? "out" : "swizzled";
  const TensorView& rm = to_swizzled ? in : out;
  const TensorView& sw = to_swizzled ? out : in;
  static constexpr auto kBytes = {DType::kUE8M0, DType::kUE4M3, DType::kE4M3, DType::kU8};
  DW_TRY(detail::check_view(op, rm_name, rm));
  DW_TRY(detail::check_view(op, sw_name, sw));
  DW_TRY(detail::check_dtype(op, rm_name, rm, kBytes));
  DW_TRY(detail::check_same_dtype(op, sw_name, sw, rm_name, rm));
  if (rm.ndim < 1) {
    return arg_error(op, rm_name, "a tensor with at least 1 dimension (..., C)", "a 0-D tensor");
  }
  DW_TRY(detail::check_contiguous(op, rm_name, rm));
  const int64_t C = rm.shape[rm.ndim - 1];
  int64_t R = 1;
  for (int i = 0; i + 1 < rm.ndim; ++i) R *= rm.shape[i];
  Shape swz;
  swz.ndim = 4;
  swz.dims[0] = (R + 127) / 128;
  swz.dims[1] = (C + 3) / 4;
  swz.dims[2] = 32;
  swz.dims[3] = 16;
  DW_TRY(check_tensor(op, sw_name, sw, {rm.dtype}, rm.device, swz,
                      "(ceil(R/128), ceil(C/4), 32, 16) for row-major scales " + shape_string(rm)));
  if (detail::overlaps(in, out)) {
    return arg_error(op, "out", "memory disjoint from the input", "an overlap");
  }
  auto* src = static_cast<const uint8_t*>(in.data);
  auto* dst = static_cast<uint8_t*>(out.data);
  if (rm.device.type == DeviceType::kCUDA) {
    return quant::swizzle_cuda(src, dst, R, C, to_swizzled, rm.device, ctx);
  }
  quant::swizzle_cpu(src, dst, R, C, to_swizzled);
  return Status::Ok();
}

Status scaled_gemm_impl(const ScaledGemmArgs& g, const Context& ctx) {
  constexpr std::string_view op = "scaled_gemm_reference";
  quant::DequantProblem pa, pb;
  DW_TRY(build_dequant(op, "a.", g.a.data, g.a.scales, g.a.tensor_scale, g.a.config, &pa));
  DW_TRY(build_dequant(op, "b.", g.b.data, g.b.scales, g.b.tensor_scale, g.b.config, &pb));
  DW_TRY(detail::check_rank(op, "a.data", g.a.data, {2}));
  DW_TRY(detail::check_rank(op, "b.data", g.b.data, {2}));
  if (pa.device.type != DeviceType::kCPU || pb.device.type != DeviceType::kCPU) {
    return Status(StatusCode::kNotSupported,
                  std::string(op) + ": the block-scaled GEMM reference runs on CPU tensors only");
  }
  if (pb.cols != pa.cols) {
    return arg_error(op, "b.data",
                     "K = " + std::to_string(pa.cols) + " columns (those of 'a.data', both K-major)",
                     shape_string(g.b.data));
  }
  const int64_t M = pa.rows, N = pb.rows, K = pa.cols;
  std::vector<float> abuf(static_cast<size_t>(M * K)), bbuf(static_cast<size_t>(N * K));
  pa.out = abuf.data();
  pb.out = bbuf.data();
  if (M * K > 0) DW_TRY(quant::dequantize_cpu(pa));
  if (N * K > 0) DW_TRY(quant::dequantize_cpu(pb));
  GemmArgs ga;
  ga.a = TensorView::contiguous(abuf.data(), DType::kF32, {M, K});
  ga.b = TensorView::strided(bbuf.data(), DType::kF32, {K, N}, {1, K});  // B^T, no copy
  ga.d = g.d;
  ga.alpha = g.alpha;
  // gemm() rejects a null data pointer only for non-empty tensors; an empty side is fine.
  Status s = gemm(ga, ctx);
  if (!s.ok()) {
    // Rename gemm's arguments to this op's: 'd' keeps its name; a and b are internal buffers.
    return Status(s.code(), std::string(op) + " (via gemm): " + s.message());
  }
  return s;
}

}  // namespace

Status quantize_shapes(const QuantConfig& config, const Shape& x_shape, bool transpose,
                       QuantShapes* out) {
  if (out == nullptr) return arg_error("quantize_shapes", "out", "a QuantShapes pointer", "null");
  return detail::guarded("quantize_shapes", [&] {
    return compute_shapes("quantize_shapes", "x_shape", config, x_shape, transpose, out);
  });
}

Status quantize(const QuantizeArgs& args, const Context& ctx) {
  return detail::guarded(kQuantize, [&] { return quantize_impl(args, ctx); });
}

Status dequantize(const DequantizeArgs& args, const Context& ctx) {
  return detail::guarded(kDequantize, [&] { return dequantize_impl(args, ctx); });
}

Status swizzle_scales(const TensorView& scales, const TensorView& out, const Context& ctx) {
  return detail::guarded("swizzle_scales",
                 [&] { return swizzle_impl("swizzle_scales", scales, out, true, ctx); });
}

Status unswizzle_scales(const TensorView& swizzled, const TensorView& out, const Context& ctx) {
  return detail::guarded("unswizzle_scales",
                 [&] { return swizzle_impl("unswizzle_scales", swizzled, out, false, ctx); });
}

Status scaled_gemm_reference(const ScaledGemmArgs& args, const Context& ctx) {
  return detail::guarded("scaled_gemm_reference", [&] { return scaled_gemm_impl(args, ctx); });
}

}  // namespace deepwell
