// deepwell._torch: the host fast path of deepwell.gemm, deepwell.gemm_fp8, deepwell.attention and
// deepwell.quantize for torch CUDA tensors.
//
// deepwell._C reads a torch tensor through Python attribute calls (six per tensor) and the Python
// layer allocates the output with new_empty: at M = 128 a bf16 GEMM's kernel runs ~16 us while
// that glue cost ~10 us of host time, and the call is host-bound (docs/perf-notes.md, session 45);
// small attention calls alike (session 50: (8,16,512,128) runs a 36 us kernel).
// This module reads at::Tensor directly, allocates with at::empty and takes the current stream
// from c10, the way torch's own operators do. It is built only where torch is importable at
// configure time (cmake/python.cmake) and used only under the torch version it was built for
// (python/deepwell/ops.py). Anything it does not handle (a non-tensor argument, a tensor off CUDA,
// an unknown dtype) returns NotImplemented, and the general path answers, with its errors; the
// library's own validation errors raise here as in _C (ValueError, TypeError, ...).
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/python_variable.h>

#include <exception>
#include <string>
#include <vector>

#include "deepwell/deepwell.hpp"
#include "py_status.hpp"

namespace {

using deepwell::DType;
using deepwell::Status;
using deepwell::TensorView;

// The Python exception of a library status, as deepwell._C raises it.
PyObject* raise(const Status& s) {
  PyErr_SetString(deepwell::python::exception_type(s.code()), s.message().c_str());
  return nullptr;
}

bool dtype_of(c10::ScalarType t, DType* out) {
  switch (t) {
    case c10::ScalarType::Float: *out = DType::kF32; return true;
    case c10::ScalarType::Half: *out = DType::kF16; return true;
    case c10::ScalarType::BFloat16: *out = DType::kBF16; return true;
    case c10::ScalarType::Float8_e4m3fn: *out = DType::kE4M3; return true;
    case c10::ScalarType::Float8_e5m2: *out = DType::kE5M2; return true;
    case c10::ScalarType::Float8_e8m0fnu: *out = DType::kUE8M0; return true;
    case c10::ScalarType::Int: *out = DType::kI32; return true;
    case c10::ScalarType::Byte: *out = DType::kU8; return true;
    default: return false;
  }
}

// The output dtype of a DW_DTYPE_* code (deepwell.h); false for codes gemm cannot write.
bool scalar_type_of(long code, c10::ScalarType* out) {
  switch (code) {
    case 0: *out = c10::ScalarType::Float; return true;
    case 1: *out = c10::ScalarType::Half; return true;
    case 2: *out = c10::ScalarType::BFloat16; return true;
    default: return false;
  }
}

// A CUDA tensor's view; false when the general path should take the call.
bool view_of(const at::Tensor& t, TensorView* v) {
  if (!t.defined() || !t.is_cuda() || t.dim() > deepwell::kMaxDims) return false;
  if (!dtype_of(t.scalar_type(), &v->dtype)) return false;
  v->data = const_cast<void*>(t.const_data_ptr());
  v->device = {deepwell::DeviceType::kCUDA, static_cast<int32_t>(t.get_device())};
  v->ndim = static_cast<int32_t>(t.dim());
  for (int i = 0; i < v->ndim; ++i) {
    v->shape[i] = t.size(i);
    v->strides[i] = t.stride(i);
  }
  return true;
}

// An optional tensor argument: None, or a CUDA tensor (else the general path takes the call).
struct Arg {
  TensorView view;
  bool present = false;
  bool ok = true;
  explicit Arg(PyObject* o) {
    if (o == Py_None) return;
    ok = THPVariable_Check(o) && view_of(THPVariable_Unpack(o), &view);
    present = ok;
  }
  const TensorView* get() const { return present ? &view : nullptr; }
};

// Workspace from torch's caching allocator on the current stream, alive until the call returns
// (freed in stream order, as the Python path's torch.empty workspace).
struct Workspace {
  at::Tensor tensor;
  c10::Device device;
  std::string error;
  static void* allocate(size_t bytes, void* user) {
    auto* self = static_cast<Workspace*>(user);
    try {
      self->tensor = at::empty({static_cast<int64_t>(bytes)},
                               at::TensorOptions().dtype(at::kByte).device(self->device));
      return self->tensor.data_ptr();
    } catch (const std::exception& e) {
      self->error = e.what();
      return nullptr;
    }
  }
};

// D of a gemm / gemm_fp8 call: the given `out` tensor, or for None a new one of
// ops._gemm_out_shape's shape on a's device, of dtype `st`. False: the general path takes the call
// (another rank, an out off CUDA, ...), whose errors name the argument.
bool output_of(PyObject* out_obj, const at::Tensor& a, const at::Tensor& b, c10::ScalarType st,
               at::Tensor* fresh, TensorView* d) {
  if (out_obj != Py_None) {
    return THPVariable_Check(out_obj) && view_of(THPVariable_Unpack(out_obj), d);
  }
  const int64_t an = a.dim(), bn = b.dim();
  if (an < 2 || an > 3 || bn < 2 || bn > 3) return false;
  const at::TensorOptions opts = a.options().dtype(st);
  if (an == 2 && bn == 2) {
    *fresh = at::empty({a.size(0), b.size(1)}, opts);
  } else {
    const int64_t batch = std::max<int64_t>(an == 3 ? a.size(0) : 1, bn == 3 ? b.size(0) : 1);
    *fresh = at::empty({batch, a.size(-2), b.size(-1)}, opts);
  }
  return view_of(*fresh, d);
}

// The epilogue operands and scalars shared by GemmArgs and GemmFp8Args.
template <class G>
void set_epilogue(G* g, const Arg& c, const Arg& bias, const Arg& residual, double alpha,
                  double beta, long activation) {
  g->c = c.get();
  g->bias = bias.get();
  g->residual = residual.get();
  g->alpha = static_cast<float>(alpha);
  g->beta = static_cast<float>(beta);
  g->activation = static_cast<deepwell::Activation>(activation);
}

// Runs `call(ctx)` on like's device's current stream, with workspace from torch's caching
// allocator. True when it succeeded; else the Python error is set (MemoryError for the workspace,
// the status's exception otherwise).
template <class Call>
bool run_on_current_stream(const char* op, const at::Tensor& like, Call&& call) {
  Workspace ws{at::Tensor(), like.device(), {}};
  deepwell::Context ctx;
  ctx.stream = c10::cuda::getCurrentCUDAStream(like.get_device()).stream();
  ctx.allocate_workspace = &Workspace::allocate;
  ctx.allocator_user = &ws;
  const Status s = call(ctx);
  if (!ws.error.empty()) {
    PyErr_SetString(PyExc_MemoryError,
                    (std::string(op) + ": workspace allocation failed: " + ws.error).c_str());
    return false;
  }
  if (!s.ok()) {
    raise(s);
    return false;
  }
  return true;
}

// The call's result: the given out, or the tensor allocated for it.
PyObject* result_of(PyObject* out_obj, at::Tensor&& fresh) {
  if (fresh.defined()) return THPVariable_Wrap(std::move(fresh));
  Py_INCREF(out_obj);
  return out_obj;
}

// gemm(a, b, out, c, bias, residual, alpha, beta, activation, out_dtype_code) -> out, or
// NotImplemented. out may be None (allocated here, like a's, of dtype out_dtype_code or a's
// dtype when that is -1).
PyObject* gemm(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 10) {
    PyErr_SetString(PyExc_TypeError, "deepwell._torch.gemm: expected 10 arguments");
    return nullptr;
  }
  if (!THPVariable_Check(args[0]) || !THPVariable_Check(args[1])) Py_RETURN_NOTIMPLEMENTED;
  const double alpha = PyFloat_AsDouble(args[6]);
  const double beta = PyFloat_AsDouble(args[7]);
  const long activation = PyLong_AsLong(args[8]);
  const long out_code = PyLong_AsLong(args[9]);
  if (PyErr_Occurred()) return nullptr;
  try {
    const at::Tensor& a = THPVariable_Unpack(args[0]);
    const at::Tensor& b = THPVariable_Unpack(args[1]);
    deepwell::GemmArgs g;
    if (!view_of(a, &g.a) || !view_of(b, &g.b)) Py_RETURN_NOTIMPLEMENTED;
    Arg c(args[3]), bias(args[4]), residual(args[5]);
    if (!c.ok || !bias.ok || !residual.ok) Py_RETURN_NOTIMPLEMENTED;
    c10::ScalarType st = a.scalar_type();
    if (out_code != -1 && !scalar_type_of(out_code, &st)) Py_RETURN_NOTIMPLEMENTED;
    at::Tensor fresh;
    if (!output_of(args[2], a, b, st, &fresh, &g.d)) Py_RETURN_NOTIMPLEMENTED;
    set_epilogue(&g, c, bias, residual, alpha, beta, activation);
    if (!run_on_current_stream("gemm", a, [&](const deepwell::Context& ctx) {
          return deepwell::gemm(g, ctx);
        })) {
      return nullptr;
    }
    return result_of(args[2], std::move(fresh));
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

// gemm_fp8(a, b, scale_a, scale_b, scaling, out, c, bias, residual, alpha, beta, activation,
// out_dtype_code) -> out, or NotImplemented. out may be None (allocated here with a's device, of
// dtype out_dtype_code or bf16 when that is -1). scaling is a deepwell::Fp8Scaling code; MX scales
// may be uint8 or float8_e8m0fnu (both read as ue8m0, as ops._scale_descriptor does).
PyObject* gemm_fp8(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 13) {
    PyErr_SetString(PyExc_TypeError, "deepwell._torch.gemm_fp8: expected 13 arguments");
    return nullptr;
  }
  for (int i = 0; i < 4; ++i) {
    if (!THPVariable_Check(args[i])) Py_RETURN_NOTIMPLEMENTED;
  }
  const long scaling = PyLong_AsLong(args[4]);
  const double alpha = PyFloat_AsDouble(args[9]);
  const double beta = PyFloat_AsDouble(args[10]);
  const long activation = PyLong_AsLong(args[11]);
  const long out_code = PyLong_AsLong(args[12]);
  if (PyErr_Occurred()) return nullptr;
  try {
    const at::Tensor& a = THPVariable_Unpack(args[0]);
    const at::Tensor& b = THPVariable_Unpack(args[1]);
    deepwell::GemmFp8Args g;
    if (!view_of(a, &g.a) || !view_of(b, &g.b) ||
        !view_of(THPVariable_Unpack(args[2]), &g.scale_a) ||
        !view_of(THPVariable_Unpack(args[3]), &g.scale_b)) {
      Py_RETURN_NOTIMPLEMENTED;
    }
    g.scaling = static_cast<deepwell::Fp8Scaling>(scaling);
    if (g.scaling == deepwell::Fp8Scaling::kMx) {
      if (g.scale_a.dtype == DType::kU8) g.scale_a.dtype = DType::kUE8M0;
      if (g.scale_b.dtype == DType::kU8) g.scale_b.dtype = DType::kUE8M0;
    }
    Arg c(args[6]), bias(args[7]), residual(args[8]);
    if (!c.ok || !bias.ok || !residual.ok) Py_RETURN_NOTIMPLEMENTED;
    c10::ScalarType st = c10::ScalarType::BFloat16;
    if (out_code != -1 && !scalar_type_of(out_code, &st)) Py_RETURN_NOTIMPLEMENTED;
    at::Tensor fresh;
    if (!output_of(args[5], a, b, st, &fresh, &g.d)) Py_RETURN_NOTIMPLEMENTED;
    set_epilogue(&g, c, bias, residual, alpha, beta, activation);
    if (!run_on_current_stream("gemm_fp8", a, [&](const deepwell::Context& ctx) {
          return deepwell::gemm_fp8(g, ctx);
        })) {
      return nullptr;
    }
    return result_of(args[5], std::move(fresh));
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

// attention(q, k, v, causal, window_left, window_right, scale, return_lse) -> out, (out, lse), or
// NotImplemented: deepwell.attention's dense call (no cu_seqlens, no bias, no out=) on 4-D (B, S,
// H, D) CUDA tensors. out is allocated like q (contiguous, q's dtype), lse fp32 (B, Hq, Sq); scale
// NaN means 1/sqrt(D) and a window side < 0 unbounded, as in deepwell::AttentionForwardArgs.
PyObject* attention(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 8) {
    PyErr_SetString(PyExc_TypeError, "deepwell._torch.attention: expected 8 arguments");
    return nullptr;
  }
  if (!THPVariable_Check(args[0]) || !THPVariable_Check(args[1]) || !THPVariable_Check(args[2])) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  const int causal = PyObject_IsTrue(args[3]);
  const long long window_left = PyLong_AsLongLong(args[4]);
  const long long window_right = PyLong_AsLongLong(args[5]);
  const double scale = PyFloat_AsDouble(args[6]);
  const int return_lse = PyObject_IsTrue(args[7]);
  if (causal < 0 || return_lse < 0 || PyErr_Occurred()) return nullptr;
  try {
    const at::Tensor& q = THPVariable_Unpack(args[0]);
    deepwell::AttentionForwardArgs a;
    // Other ranks (packed varlen, or wrong) take the general path, whose errors name them.
    if (q.dim() != 4 || !view_of(q, &a.q) || !view_of(THPVariable_Unpack(args[1]), &a.k) ||
        !view_of(THPVariable_Unpack(args[2]), &a.v)) {
      Py_RETURN_NOTIMPLEMENTED;
    }
    at::Tensor out = at::empty(q.sizes(), q.options());
    if (!view_of(out, &a.out)) Py_RETURN_NOTIMPLEMENTED;
    at::Tensor lse;
    TensorView lse_view;
    if (return_lse) {
      lse = at::empty({q.size(0), q.size(2), q.size(1)}, q.options().dtype(at::kFloat));
      if (!view_of(lse, &lse_view)) Py_RETURN_NOTIMPLEMENTED;
      a.lse = &lse_view;
    }
    a.softmax_scale = static_cast<float>(scale);
    a.mask = {causal != 0, window_left, window_right};
    // Workspace: split-KV's partial results, when the plan splits.
    if (!run_on_current_stream("attention", q, [&](const deepwell::Context& ctx) {
          return deepwell::attention_forward(a, ctx);
        })) {
      return nullptr;
    }
    PyObject* out_obj = THPVariable_Wrap(std::move(out));
    if (!return_lse || out_obj == nullptr) return out_obj;
    PyObject* lse_obj = THPVariable_Wrap(std::move(lse));
    if (lse_obj == nullptr) {
      Py_DECREF(out_obj);
      return nullptr;
    }
    PyObject* pair = PyTuple_Pack(2, out_obj, lse_obj);
    Py_DECREF(out_obj);
    Py_DECREF(lse_obj);
    return pair;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

// A new contiguous tensor for `shape` of dtype code `code` on x's device, and its view: packed
// e2m1 (two codes per byte) as uint8 of half the last dim, described in elements like
// quant._alloc / fresh do; FP8 codes as torch's fp8 dtypes (UE4M3 as float8_e4m3fn).
bool quant_output(const at::Tensor& x, const deepwell::Shape& shape, DType code, at::Tensor* t,
                  TensorView* v) {
  c10::ScalarType st;
  switch (code) {
    case DType::kF32: st = c10::ScalarType::Float; break;
    case DType::kE4M3:
    case DType::kUE4M3: st = c10::ScalarType::Float8_e4m3fn; break;
    case DType::kE5M2: st = c10::ScalarType::Float8_e5m2; break;
    case DType::kUE8M0: st = c10::ScalarType::Float8_e8m0fnu; break;
    case DType::kE2M1: st = c10::ScalarType::Byte; break;
    default: return false;
  }
  std::vector<int64_t> dims(shape.dims, shape.dims + shape.ndim);
  if (code == DType::kE2M1 && !dims.empty()) dims.back() = (dims.back() + 1) / 2;
  *t = at::empty(dims, x.options().dtype(st));
  v->data = t->data_ptr();
  v->dtype = code;
  v->device = {deepwell::DeviceType::kCUDA, static_cast<int32_t>(x.get_device())};
  v->ndim = shape.ndim;
  int64_t stride = 1;
  for (int i = shape.ndim - 1; i >= 0; --i) {  // contiguous, in elements
    v->shape[i] = shape.dims[i];
    v->strides[i] = stride;
    stride *= shape.dims[i];
  }
  return true;
}

// quantize(x, format, rule, elem, transpose, swizzle, pow2_scales, amax) -> the tuple
// deepwell.quantize returns, or NotImplemented: x a CUDA tensor, amax None or a CUDA tensor (0-d
// or (1)); format / rule / elem are the codes quant.py checked (QuantFormat, ScaleRule, the data's
// DType). Outputs are allocated as quant.quantize allocates them, FP8 data_t with rows padded to
// a multiple of 32 codes when R is not one. Shapes the library rejects take the general path,
// whose error names the caller's argument.
PyObject* quantize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 8) {
    PyErr_SetString(PyExc_TypeError, "deepwell._torch.quantize: expected 8 arguments");
    return nullptr;
  }
  if (!THPVariable_Check(args[0])) Py_RETURN_NOTIMPLEMENTED;
  const long format = PyLong_AsLong(args[1]);
  const long rule = PyLong_AsLong(args[2]);
  const long elem = PyLong_AsLong(args[3]);
  const int transpose = PyObject_IsTrue(args[4]);
  const int swizzle = PyObject_IsTrue(args[5]);
  const int pow2_scales = PyObject_IsTrue(args[6]);
  if (transpose < 0 || swizzle < 0 || pow2_scales < 0 || PyErr_Occurred()) return nullptr;
  try {
    const at::Tensor& x = THPVariable_Unpack(args[0]);
    deepwell::QuantizeArgs q;
    if (x.dim() == 0 || !view_of(x, &q.x)) Py_RETURN_NOTIMPLEMENTED;
    TensorView amax_view;
    if (args[7] != Py_None) {
      if (!THPVariable_Check(args[7])) Py_RETURN_NOTIMPLEMENTED;
      const at::Tensor& amax = THPVariable_Unpack(args[7]);
      if (amax.dim() == 0) {  // torch.amax's 0-d result, described as (1) like quant.py does
        if (!view_of(amax.reshape({1}), &amax_view)) Py_RETURN_NOTIMPLEMENTED;
      } else if (!view_of(amax, &amax_view)) {
        Py_RETURN_NOTIMPLEMENTED;
      }
      q.amax = &amax_view;
    }
    q.config.format = static_cast<deepwell::QuantFormat>(format);
    q.config.rule = static_cast<deepwell::ScaleRule>(rule);
    q.config.pow2_scales = pow2_scales != 0;
    q.config.swizzle = swizzle != 0;
    // Shapes from format and swizzle only, as quant._shapes asks for them.
    deepwell::QuantConfig shape_config;
    shape_config.format = q.config.format;
    shape_config.swizzle = q.config.swizzle;
    deepwell::Shape xs;
    xs.ndim = q.x.ndim;
    for (int i = 0; i < xs.ndim; ++i) xs.dims[i] = q.x.shape[i];
    deepwell::QuantShapes shapes;
    if (!deepwell::quantize_shapes(shape_config, xs, transpose != 0, &shapes).ok()) {
      Py_RETURN_NOTIMPLEMENTED;
    }
    const DType elem_code = static_cast<DType>(elem);
    at::Tensor data, scales, ts, data_t, scales_t;
    TensorView ts_view, data_t_view, scales_t_view;
    if (!quant_output(x, shapes.data, elem_code, &data, &q.data) ||
        !quant_output(x, shapes.scales, shapes.scale_dtype, &scales, &q.scales)) {
      Py_RETURN_NOTIMPLEMENTED;
    }
    if (shapes.has_tensor_scale) {
      deepwell::Shape one;
      one.ndim = 1;
      one.dims[0] = 1;
      if (!quant_output(x, one, DType::kF32, &ts, &ts_view)) Py_RETURN_NOTIMPLEMENTED;
      q.tensor_scale = &ts_view;
    }
    if (transpose) {
      const int64_t r = shapes.data_t.dims[1];
      if (elem_code != DType::kE2M1 && r % 32 != 0) {
        // FP8 codes (K, R) with rows on 32-byte boundaries (quant.alloc_padded_rows).
        const int64_t ld = (r + 31) / 32 * 32;
        deepwell::Shape padded = shapes.data_t;
        padded.dims[1] = ld;
        at::Tensor full;
        if (!quant_output(x, padded, elem_code, &full, &data_t_view)) Py_RETURN_NOTIMPLEMENTED;
        data_t = full.narrow(1, 0, r);
        data_t_view.shape[1] = r;
        data_t_view.strides[0] = ld;
      } else if (!quant_output(x, shapes.data_t, elem_code, &data_t, &data_t_view)) {
        Py_RETURN_NOTIMPLEMENTED;
      }
      q.data_t = &data_t_view;
      if (shapes.scales_t.ndim > 0) {
        if (!quant_output(x, shapes.scales_t, shapes.scale_dtype, &scales_t, &scales_t_view)) {
          Py_RETURN_NOTIMPLEMENTED;
        }
        q.scales_t = &scales_t_view;
      }
    }
    if (!run_on_current_stream("quantize", x, [&](const deepwell::Context& ctx) {
          return deepwell::quantize(q, ctx);
        })) {
      return nullptr;
    }
    // (data, scales[, tensor_scale][, data_t[, scales_t]]), as quant.quantize returns them.
    at::Tensor* outs[] = {&data, &scales, &ts, &data_t, &scales_t};
    Py_ssize_t n = 0;
    for (at::Tensor* t : outs) n += t->defined() ? 1 : 0;
    PyObject* tuple = PyTuple_New(n);
    if (tuple == nullptr) return nullptr;
    Py_ssize_t i = 0;
    for (at::Tensor* t : outs) {
      if (!t->defined()) continue;
      PyObject* o = THPVariable_Wrap(std::move(*t));
      if (o == nullptr) {
        Py_DECREF(tuple);
        return nullptr;
      }
      PyTuple_SET_ITEM(tuple, i++, o);
    }
    return tuple;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyMethodDef methods[] = {
    {"gemm", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&gemm)), METH_FASTCALL,
     "gemm(a, b, out, c, bias, residual, alpha, beta, activation, out_dtype_code) -> out or "
     "NotImplemented"},
    {"gemm_fp8", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&gemm_fp8)),
     METH_FASTCALL,
     "gemm_fp8(a, b, scale_a, scale_b, scaling, out, c, bias, residual, alpha, beta, activation, "
     "out_dtype_code) -> out or NotImplemented"},
    {"attention", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&attention)),
     METH_FASTCALL,
     "attention(q, k, v, causal, window_left, window_right, scale, return_lse) -> out, (out, lse) "
     "or NotImplemented"},
    {"quantize", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&quantize)),
     METH_FASTCALL,
     "quantize(x, format, rule, elem, transpose, swizzle, pow2_scales, amax) -> deepwell.quantize's "
     "tuple or NotImplemented"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_torch",
                      "deepwell's host fast path for torch CUDA tensors (gemm, gemm_fp8, "
                      "attention, quantize)",
                      -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__torch() {
  PyObject* m = PyModule_Create(&module);
  if (m != nullptr && PyModule_AddStringConstant(m, "built_for", DEEPWELL_TORCH_VERSION) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
