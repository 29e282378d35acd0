// The C ABI (include/deepwell/deepwell.h): converts dw_tensor descriptors into TensorViews, calls
// the C++ API, and records failures in a thread-local last-error string.
#include <cmath>
#include <cstddef>
#include <exception>
#include <string>

#include "core/validate.hpp"
#include "deepwell/deepwell.h"
#include "deepwell/deepwell.hpp"

namespace {

using deepwell::Status;
using deepwell::StatusCode;
using deepwell::TensorView;

thread_local std::string g_last_error;

dw_status finish(const Status& s) {
  if (s.ok()) {
    g_last_error.clear();
    return DW_STATUS_OK;
  }
  g_last_error = s.message();
  return static_cast<dw_status>(s.code());
}

// Converts a descriptor; `required` makes NULL an error.
Status to_view(const char* op, const char* name, const dw_tensor* t, bool required,
               TensorView* out, bool* present) {
  *present = t != nullptr;
  if (t == nullptr) {
    if (required) return deepwell::detail::arg_error(op, name, "a tensor descriptor", "NULL");
    return Status::Ok();
  }
  if (t->ndim < 0 || t->ndim > deepwell::kMaxDims) {
    return deepwell::detail::arg_error(op, name, "ndim between 0 and 8",
                                       std::to_string(t->ndim));
  }
  if (t->ndim > 0 && t->shape == nullptr) {
    return deepwell::detail::arg_error(op, name, "a non-NULL shape array", "NULL");
  }
  if (!deepwell::dtype_is_valid(t->dtype)) {
    return deepwell::detail::arg_error(op, name, "a DW_DTYPE_* code",
                                       std::to_string(t->dtype), StatusCode::kInvalidDType);
  }
  out->data = t->data;
  out->dtype = static_cast<deepwell::DType>(t->dtype);
  out->device = {static_cast<deepwell::DeviceType>(t->device_type), t->device_id};
  out->ndim = t->ndim;
  int64_t stride = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    out->shape[i] = t->shape[i];
    out->strides[i] = t->strides ? t->strides[i] : stride;
    stride *= t->shape[i] > 0 ? t->shape[i] : 1;
  }
  return deepwell::detail::check_view(op, name, *out);
}

template <class Fn>
dw_status guarded(Fn&& fn) {
  try {
    return finish(fn());
  } catch (const std::exception& e) {
    return finish(Status(StatusCode::kInternal, std::string("internal error: ") + e.what()));
  } catch (...) {
    return finish(Status(StatusCode::kInternal, "internal error"));
  }
}

Status check_struct(const char* op, const void* args, size_t given, size_t minimum) {
  if (args == nullptr) return deepwell::detail::arg_error(op, "args", "an argument struct", "NULL");
  if (given < minimum) {
    return deepwell::detail::arg_error(op, "args->struct_size",
                                       "at least " + std::to_string(minimum) +
                                           " (sizeof the struct of ABI version " +
                                           std::to_string(DW_ABI_VERSION) + ")",
                                       std::to_string(given));
  }
  return Status::Ok();
}

}  // namespace

extern "C" {

const char* dw_version(void) { return deepwell::version(); }
int32_t dw_abi_version(void) { return DW_ABI_VERSION; }
int32_t dw_built_with_cuda(void) { return deepwell::built_with_cuda() ? 1 : 0; }
const char* dw_last_error(void) { return g_last_error.c_str(); }

// AttentionForwardArgs from a dw_attention_fwd_args (views in *views), and the Context's workspace
// fields: dw_attention_fwd_args grew them in 0.3, older callers pass the shorter struct_size.
struct AttentionFwdViews {
  TensorView lse, cuq, cuk, bias;
};
Status attention_fwd_args(const char* op, const dw_attention_fwd_args* a,
                          deepwell::AttentionForwardArgs* args, AttentionFwdViews* v,
                          deepwell::Context* ctx, void* stream) {
  DW_TRY(check_struct(op, a, a ? a->struct_size : 0, offsetof(dw_attention_fwd_args, workspace)));
  bool has_lse, has_cuq, has_cuk, has_bias, present;
  DW_TRY(to_view(op, "q", a->q, true, &args->q, &present));
  DW_TRY(to_view(op, "k", a->k, true, &args->k, &present));
  DW_TRY(to_view(op, "v", a->v, true, &args->v, &present));
  DW_TRY(to_view(op, "out", a->out, true, &args->out, &present));
  DW_TRY(to_view(op, "lse", a->lse, false, &v->lse, &has_lse));
  DW_TRY(to_view(op, "cu_seqlens_q", a->cu_seqlens_q, false, &v->cuq, &has_cuq));
  DW_TRY(to_view(op, "cu_seqlens_k", a->cu_seqlens_k, false, &v->cuk, &has_cuk));
  DW_TRY(to_view(op, "bias", a->bias, false, &v->bias, &has_bias));
  args->lse = has_lse ? &v->lse : nullptr;
  args->cu_seqlens_q = has_cuq ? &v->cuq : nullptr;
  args->cu_seqlens_k = has_cuk ? &v->cuk : nullptr;
  args->bias = has_bias ? &v->bias : nullptr;
  args->max_seqlen_q = a->max_seqlen_q;
  args->max_seqlen_k = a->max_seqlen_k;
  args->softmax_scale = a->softmax_scale > 0.0f ? a->softmax_scale : NAN;
  args->mask = {a->causal != 0, a->window_left, a->window_right};
  *ctx = {stream, nullptr, 0};
  if (a->struct_size >= sizeof(dw_attention_fwd_args)) {
    *ctx = {stream, a->workspace, a->workspace_size};
  }
  return Status::Ok();
}

dw_status dw_attention_fwd(const dw_attention_fwd_args* a, void* stream) {
  return guarded([&]() -> Status {
    deepwell::AttentionForwardArgs args;
    AttentionFwdViews v;
    deepwell::Context ctx;
    DW_TRY(attention_fwd_args("attention_forward", a, &args, &v, &ctx, stream));
    return deepwell::attention_forward(args, ctx);
  });
}

dw_status dw_attention_fwd_workspace_size(const dw_attention_fwd_args* a, size_t* bytes) {
  return guarded([&]() -> Status {
    deepwell::AttentionForwardArgs args;
    AttentionFwdViews v;
    deepwell::Context ctx;
    DW_TRY(attention_fwd_args("attention_forward_workspace_size", a, &args, &v, &ctx, nullptr));
    return deepwell::attention_forward_workspace_size(args, bytes);
  });
}

dw_status dw_attention_bwd(const dw_attention_bwd_args* a, void* stream) {
  return guarded([&]() -> Status {
    const char* op = "attention_backward";
    DW_TRY(check_struct(op, a, a ? a->struct_size : 0, sizeof(dw_attention_bwd_args)));
    deepwell::AttentionBackwardArgs args;
    TensorView cuq, cuk, bias;
    bool has_cuq, has_cuk, has_bias, present;
    DW_TRY(to_view(op, "q", a->q, true, &args.q, &present));
    DW_TRY(to_view(op, "k", a->k, true, &args.k, &present));
    DW_TRY(to_view(op, "v", a->v, true, &args.v, &present));
    DW_TRY(to_view(op, "out", a->out, true, &args.out, &present));
    DW_TRY(to_view(op, "dout", a->dout, true, &args.dout, &present));
    DW_TRY(to_view(op, "lse", a->lse, true, &args.lse, &present));
    DW_TRY(to_view(op, "dq", a->dq, true, &args.dq, &present));
    DW_TRY(to_view(op, "dk", a->dk, true, &args.dk, &present));
    DW_TRY(to_view(op, "dv", a->dv, true, &args.dv, &present));
    DW_TRY(to_view(op, "cu_seqlens_q", a->cu_seqlens_q, false, &cuq, &has_cuq));
    DW_TRY(to_view(op, "cu_seqlens_k", a->cu_seqlens_k, false, &cuk, &has_cuk));
    DW_TRY(to_view(op, "bias", a->bias, false, &bias, &has_bias));
    args.cu_seqlens_q = has_cuq ? &cuq : nullptr;
    args.cu_seqlens_k = has_cuk ? &cuk : nullptr;
    args.bias = has_bias ? &bias : nullptr;
    args.max_seqlen_q = a->max_seqlen_q;
    args.max_seqlen_k = a->max_seqlen_k;
    args.softmax_scale = a->softmax_scale > 0.0f ? a->softmax_scale : NAN;
    args.mask = {a->causal != 0, a->window_left, a->window_right};
    return deepwell::attention_backward(args, {stream, nullptr, 0});
  });
}

dw_status dw_fmha_forward(const void* q, const void* k, const void* v, void* o, dw_dtype dtype,
                          int32_t device_type, int64_t batch, int64_t heads, int64_t seqlen_q,
                          int64_t seqlen_k, int64_t head_dim, int32_t layout, int32_t causal,
                          void* stream) {
  return guarded([&]() -> Status {
    const char* op = "dw_fmha_forward";
    if (layout != 0 && layout != 1) {
      return deepwell::detail::arg_error(op, "layout", "0 (BHSD) or 1 (BSHD)",
                                         std::to_string(layout));
    }
    if (!deepwell::dtype_is_valid(dtype)) {
      return deepwell::detail::arg_error(op, "dtype", "a DW_DTYPE_* code", std::to_string(dtype),
                                         StatusCode::kInvalidDType);
    }
    const int64_t sizes[5] = {batch, heads, seqlen_q, seqlen_k, head_dim};
    const char* names[5] = {"batch", "heads", "seqlen_q", "seqlen_k", "head_dim"};
    for (int i = 0; i < 5; ++i) {
      if (sizes[i] < 0) {
        return deepwell::detail::arg_error(op, names[i], "a non-negative size",
                                           std::to_string(sizes[i]));
      }
    }
    const auto dt = static_cast<deepwell::DType>(dtype);
    const deepwell::Device dev{static_cast<deepwell::DeviceType>(device_type), 0};
    // BSHD views of the four tensors; BHSD is the same memory with seq and head strides swapped.
    auto view = [&](const void* p, int64_t s) {
      int64_t H = heads, D = head_dim;
      if (layout == 1) {
        return TensorView::strided(const_cast<void*>(p), dt, {batch, s, H, D},
                                   {s * H * D, H * D, D, 1}, dev);
      }
      return TensorView::strided(const_cast<void*>(p), dt, {batch, s, H, D},
                                 {H * s * D, D, s * D, 1}, dev);
    };
    deepwell::AttentionForwardArgs args;
    args.q = view(q, seqlen_q);
    args.k = view(k, seqlen_k);
    args.v = view(v, seqlen_k);
    args.out = view(o, seqlen_q);
    args.mask.causal = causal != 0;
    return deepwell::attention_forward(args, {stream, nullptr, 0});
  });
}

// dw_gemm_args / dw_gemm_fp8_args -> the C++ argument structs; the epilogue tensors live in a
// GemmViews. dw_gemm_args grew the workspace fields in 0.2: older callers pass the shorter
// struct_size and get no workspace.
extern "C++" {
namespace {
struct GemmViews {
  TensorView c, bias, residual;
};

template <class CArgs, class Args>
Status gemm_epilogue_views(const char* op, const CArgs* a, Args* args, GemmViews* v) {
  bool has_c, has_bias, has_res;
  DW_TRY(to_view(op, "c", a->c, false, &v->c, &has_c));
  DW_TRY(to_view(op, "bias", a->bias, false, &v->bias, &has_bias));
  DW_TRY(to_view(op, "residual", a->residual, false, &v->residual, &has_res));
  args->c = has_c ? &v->c : nullptr;
  args->bias = has_bias ? &v->bias : nullptr;
  args->residual = has_res ? &v->residual : nullptr;
  args->alpha = a->alpha;
  args->beta = a->beta;
  args->activation = static_cast<deepwell::Activation>(a->activation);
  return Status::Ok();
}

Status gemm_args(const char* op, const dw_gemm_args* a, deepwell::GemmArgs* args, GemmViews* v,
                 deepwell::Context* ctx, void* stream) {
  DW_TRY(check_struct(op, a, a ? a->struct_size : 0, offsetof(dw_gemm_args, workspace)));
  bool present;
  DW_TRY(to_view(op, "a", a->a, true, &args->a, &present));
  DW_TRY(to_view(op, "b", a->b, true, &args->b, &present));
  DW_TRY(to_view(op, "d", a->d, true, &args->d, &present));
  DW_TRY(gemm_epilogue_views(op, a, args, v));
  *ctx = {stream, nullptr, 0};
  if (a->struct_size >= sizeof(dw_gemm_args)) *ctx = {stream, a->workspace, a->workspace_size};
  return Status::Ok();
}

Status gemm_fp8_args(const char* op, const dw_gemm_fp8_args* a, deepwell::GemmFp8Args* args,
                     GemmViews* v, deepwell::Context* ctx, void* stream) {
  DW_TRY(check_struct(op, a, a ? a->struct_size : 0, sizeof(dw_gemm_fp8_args)));
  bool present;
  DW_TRY(to_view(op, "a", a->a, true, &args->a, &present));
  DW_TRY(to_view(op, "b", a->b, true, &args->b, &present));
  DW_TRY(to_view(op, "scale_a", a->scale_a, true, &args->scale_a, &present));
  DW_TRY(to_view(op, "scale_b", a->scale_b, true, &args->scale_b, &present));
  DW_TRY(to_view(op, "d", a->d, true, &args->d, &present));
  DW_TRY(gemm_epilogue_views(op, a, args, v));
  args->scaling = static_cast<deepwell::Fp8Scaling>(a->scaling);
  *ctx = {stream, a->workspace, a->workspace_size};
  return Status::Ok();
}
}  // namespace
}  // extern "C++"

dw_status dw_gemm(const dw_gemm_args* a, void* stream) {
  return guarded([&]() -> Status {
    deepwell::GemmArgs args;
    GemmViews v;
    deepwell::Context ctx;
    DW_TRY(gemm_args("gemm", a, &args, &v, &ctx, stream));
    return deepwell::gemm(args, ctx);
  });
}

dw_status dw_gemm_workspace_size(const dw_gemm_args* a, size_t* bytes) {
  return guarded([&]() -> Status {
    deepwell::GemmArgs args;
    GemmViews v;
    deepwell::Context ctx;
    DW_TRY(gemm_args("gemm_workspace_size", a, &args, &v, &ctx, nullptr));
    return deepwell::gemm_workspace_size(args, bytes);
  });
}

dw_status dw_gemm_set_plan_override(const char* spec) {
  return guarded([&]() -> Status {
    return deepwell::set_gemm_plan_override(spec != nullptr ? spec : "");
  });
}

dw_status dw_gemm_fp8(const dw_gemm_fp8_args* a, void* stream) {
  return guarded([&]() -> Status {
    deepwell::GemmFp8Args args;
    GemmViews v;
    deepwell::Context ctx;
    DW_TRY(gemm_fp8_args("gemm_fp8", a, &args, &v, &ctx, stream));
    return deepwell::gemm_fp8(args, ctx);
  });
}

dw_status dw_gemm_fp8_workspace_size(const dw_gemm_fp8_args* a, size_t* bytes) {
  return guarded([&]() -> Status {
    deepwell::GemmFp8Args args;
    GemmViews v;
    deepwell::Context ctx;
    DW_TRY(gemm_fp8_args("gemm_fp8_workspace_size", a, &args, &v, &ctx, nullptr));
    return deepwell::gemm_fp8_workspace_size(args, bytes);
  });
}

dw_status dw_quantize(const dw_quantize_args* a, void* stream) {
  return guarded([&]() -> Status {
    const char* op = "quantize";
    // `amax` was appended: callers passing the older, shorter struct_size get none.
    DW_TRY(check_struct(op, a, a ? a->struct_size : 0, offsetof(dw_quantize_args, amax)));
    deepwell::QuantizeArgs args;
    TensorView ts, dt, st, am;
    bool has_ts, has_dt, has_st, has_am = false, present;
    DW_TRY(to_view(op, "x", a->x, true, &args.x, &present));
    DW_TRY(to_view(op, "data", a->data, true, &args.data, &present));
    DW_TRY(to_view(op, "scales", a->scales, true, &args.scales, &present));
    DW_TRY(to_view(op, "tensor_scale", a->tensor_scale, false, &ts, &has_ts));
    DW_TRY(to_view(op, "data_t", a->data_t, false, &dt, &has_dt));
    DW_TRY(to_view(op, "scales_t", a->scales_t, false, &st, &has_st));
    args.tensor_scale = has_ts ? &ts : nullptr;
    args.data_t = has_dt ? &dt : nullptr;
    args.scales_t = has_st ? &st : nullptr;
    if (a->struct_size >= sizeof(dw_quantize_args)) {
      DW_TRY(to_view(op, "amax", a->amax, false, &am, &has_am));
    }
    args.amax = has_am ? &am : nullptr;
    args.config = {static_cast<deepwell::QuantFormat>(a->format),
                   static_cast<deepwell::ScaleRule>(a->rule), a->pow2_scales != 0, a->swizzle != 0};
    return deepwell::quantize(args, {stream, nullptr, 0});
  });
}

dw_status dw_dequantize(const dw_dequantize_args* a, void* stream) {
  return guarded([&]() -> Status {
    const char* op = "dequantize";
    DW_TRY(check_struct(op, a, a ? a->struct_size : 0, sizeof(dw_dequantize_args)));
    deepwell::DequantizeArgs args;
    TensorView ts;
    bool has_ts, present;
    DW_TRY(to_view(op, "data", a->data, true, &args.data, &present));
    DW_TRY(to_view(op, "scales", a->scales, true, &args.scales, &present));
    DW_TRY(to_view(op, "tensor_scale", a->tensor_scale, false, &ts, &has_ts));
    DW_TRY(to_view(op, "out", a->out, true, &args.out, &present));
    args.tensor_scale = has_ts ? &ts : nullptr;
    args.config.format = static_cast<deepwell::QuantFormat>(a->format);
    args.config.swizzle = a->swizzle != 0;
    return deepwell::dequantize(args, {stream, nullptr, 0});
  });
}

dw_status dw_quantize_shapes(int32_t format, int32_t swizzle, int32_t transpose,
                             const int64_t* x_shape, int32_t x_ndim, dw_quant_shapes* out) {
  return guarded([&]() -> Status {
    const char* op = "quantize_shapes";
    DW_TRY(check_struct(op, out, out ? out->struct_size : 0, sizeof(dw_quant_shapes)));
    if (x_ndim < 0 || x_ndim > deepwell::kMaxDims) {
      return deepwell::detail::arg_error(op, "x_ndim", "between 0 and 8", std::to_string(x_ndim));
    }
    if (x_ndim > 0 && x_shape == nullptr) {
      return deepwell::detail::arg_error(op, "x_shape", "a non-NULL shape array", "NULL");
    }
    deepwell::Shape xs;
    xs.ndim = x_ndim;
    for (int i = 0; i < x_ndim; ++i) xs.dims[i] = x_shape[i];
    deepwell::QuantConfig cfg;
    cfg.format = static_cast<deepwell::QuantFormat>(format);
    cfg.swizzle = swizzle != 0;
    deepwell::QuantShapes s;
    DW_TRY(deepwell::quantize_shapes(cfg, xs, transpose != 0, &s));
    const size_t size = out->struct_size;
    *out = dw_quant_shapes{};
    out->struct_size = size;
    auto copy = [](const deepwell::Shape& from, int32_t* ndim, int64_t* dims) {
      *ndim = from.ndim;
      for (int i = 0; i < from.ndim; ++i) dims[i] = from.dims[i];
    };
    copy(s.data, &out->data_ndim, out->data);
    copy(s.scales, &out->scales_ndim, out->scales);
    copy(s.data_t, &out->data_t_ndim, out->data_t);
    copy(s.scales_t, &out->scales_t_ndim, out->scales_t);
    out->scale_dtype = static_cast<dw_dtype>(s.scale_dtype);
    out->has_tensor_scale = s.has_tensor_scale ? 1 : 0;
    return Status::Ok();
  });
}

}  // extern "C"
