// deepwell._C: thin nanobind bindings over the C++ API.
//
// Tensors arrive as descriptor tuples (data_ptr, dtype_code, device_type, device_index, shape,
// strides) built by python/deepwell/_tensors.py from torch tensors, numpy arrays or any DLPack
// producer; reading a tuple costs far less than a DLPack round trip, which matters for small
// attention calls. No torch headers are involved. Errors map to Python exceptions by status code:
// invalid argument -> ValueError, wrong dtype -> TypeError, not supported -> NotImplementedError,
// anything else -> RuntimeError, each carrying the library's message.
#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <string>
#include <utility>
#include <vector>

#include "deepwell/deepwell.hpp"
#include "py_status.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using deepwell::Status;
using deepwell::StatusCode;
using deepwell::TensorView;

namespace {

[[noreturn]] void raise(const Status& s) {
  PyErr_SetString(deepwell::python::exception_type(s.code()), s.message().c_str());
  throw nb::python_error();
}

void check(const Status& s) {
  if (!s.ok()) raise(s);
}

[[noreturn]] void type_error(const char* name, const char* what) {
  raise(Status(StatusCode::kInvalidDType,
               std::string("argument '") + name + "': expected " + what));
}

int64_t as_i64(PyObject* o, const char* name) {
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    type_error(name, "a tensor descriptor with integer fields");
  }
  return v;
}

// shape and strides (tuples of one length, at most kMaxDims) into v.
void read_dims(TensorView* v, PyObject* shape, PyObject* strides, const char* name,
               const char* mismatch) {
  if (!PyTuple_Check(shape) || !PyTuple_Check(strides) ||
      PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides)) {
    type_error(name, mismatch);
  }
  const Py_ssize_t nd = PyTuple_GET_SIZE(shape);
  if (nd > deepwell::kMaxDims) {
    raise(Status(StatusCode::kInvalidArgument,
                 std::string("argument '") + name + "': expected at most 8 dimensions, got " +
                     std::to_string(nd)));
  }
  v->ndim = static_cast<int32_t>(nd);
  for (Py_ssize_t i = 0; i < nd; ++i) {
    v->shape[i] = as_i64(PyTuple_GET_ITEM(shape, i), name);
    v->strides[i] = as_i64(PyTuple_GET_ITEM(strides, i), name);
  }
}

// torch tensors are read here directly (python/deepwell/_tensors.py passes them through instead
// of building a descriptor tuple: ~0.5 us less per tensor in Python, which adds up on the
// host-bound calls of small GEMMs and attention). No torch headers: the Python layer registers
// torch.Tensor and its dtype -> code table once (register_torch), and the attributes are read
// through the Python C API.
struct TorchTypes {
  PyTypeObject* tensor = nullptr;                 // torch.Tensor (subclasses accepted)
  std::vector<std::pair<PyObject*, int>> dtypes;  // (torch dtype object, DW_DTYPE_* code)
  PyObject *s_is_cuda, *s_is_cpu, *s_get_device, *s_dtype, *s_data_ptr, *s_shape, *s_stride,
      *s_device;  // interned attribute names
};
TorchTypes* g_torch = nullptr;  // set once by register_torch; lives as long as the process

void register_torch(nb::handle tensor_type, nb::dict dtypes) {
  if (!PyType_Check(tensor_type.ptr())) type_error("tensor_type", "a type");
  auto* t = new TorchTypes;
  t->tensor = reinterpret_cast<PyTypeObject*>(tensor_type.inc_ref().ptr());
  for (auto [k, v] : dtypes) t->dtypes.emplace_back(k.inc_ref().ptr(), nb::cast<int>(v));
  t->s_is_cuda = PyUnicode_InternFromString("is_cuda");
  t->s_is_cpu = PyUnicode_InternFromString("is_cpu");
  t->s_get_device = PyUnicode_InternFromString("get_device");
  t->s_dtype = PyUnicode_InternFromString("dtype");
  t->s_data_ptr = PyUnicode_InternFromString("data_ptr");
  t->s_shape = PyUnicode_InternFromString("shape");
  t->s_stride = PyUnicode_InternFromString("stride");
  t->s_device = PyUnicode_InternFromString("device");
  g_torch = t;
}

// A new reference from a Python call; a Python error raised there propagates unchanged.
nb::object checked(PyObject* o) {
  if (o == nullptr) throw nb::python_error();
  return nb::steal(o);
}

std::string str_of(PyObject* o) {
  nb::object s = nb::steal(PyObject_Str(o));
  if (!s.is_valid()) {
    PyErr_Clear();
    return "?";
  }
  return nb::cast<std::string>(s);
}

TensorView parse_torch(PyObject* t, const char* name) {
  const TorchTypes& tt = *g_torch;
  TensorView v;
  if (checked(PyObject_GetAttr(t, tt.s_is_cuda)).ptr() == Py_True) {
    nb::object dev = checked(PyObject_CallMethodNoArgs(t, tt.s_get_device));
    v.device = {deepwell::DeviceType::kCUDA, static_cast<int32_t>(PyLong_AsLong(dev.ptr()))};
  } else if (checked(PyObject_GetAttr(t, tt.s_is_cpu)).ptr() == Py_True) {
    v.device = {deepwell::DeviceType::kCPU, 0};
  } else {
    nb::object dev = checked(PyObject_GetAttr(t, tt.s_device));
    raise(Status(StatusCode::kInvalidArgument,
                 std::string("argument '") + name + "': expected a CPU or CUDA tensor, got a tensor on " +
                     str_of(dev.ptr())));
  }
  nb::object dtype = checked(PyObject_GetAttr(t, tt.s_dtype));
  int code = -1;
  for (const auto& [obj, c] : tt.dtypes) {
    if (obj == dtype.ptr()) {
      code = c;
      break;
    }
  }
  if (code < 0) {
    type_error(name, ("a tensor of float32, float16, bfloat16, fp8, int32 or uint8, got " +
                      str_of(dtype.ptr()))
                         .c_str());
  }
  v.dtype = static_cast<deepwell::DType>(code);
  nb::object ptr = checked(PyObject_CallMethodNoArgs(t, tt.s_data_ptr));
  v.data = reinterpret_cast<void*>(static_cast<uintptr_t>(PyLong_AsUnsignedLongLongMask(ptr.ptr())));
  nb::object shape = checked(PyObject_GetAttr(t, tt.s_shape));  // torch.Size: a tuple
  nb::object strides = checked(PyObject_CallMethodNoArgs(t, tt.s_stride));
  read_dims(&v, shape.ptr(), strides.ptr(), name,
            "a tensor whose shape and stride() are tuples of one length");
  return v;
}

// A torch tensor, or the descriptor tuple (data_ptr, dtype, device_type, device_index, shape,
// strides) of anything else -> TensorView
TensorView parse(nb::handle h, const char* name) {
  PyObject* t = h.ptr();
  if (t == Py_None) type_error(name, "a tensor, got None");
  if (g_torch != nullptr && PyObject_TypeCheck(t, g_torch->tensor)) return parse_torch(t, name);
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 6) {
    type_error(name, "a tensor (internal descriptor tuple of 6 fields)");
  }
  TensorView v;
  v.data = reinterpret_cast<void*>(static_cast<uintptr_t>(as_i64(PyTuple_GET_ITEM(t, 0), name)));
  v.dtype = static_cast<deepwell::DType>(as_i64(PyTuple_GET_ITEM(t, 1), name));
  v.device = {static_cast<deepwell::DeviceType>(as_i64(PyTuple_GET_ITEM(t, 2), name)),
              static_cast<int32_t>(as_i64(PyTuple_GET_ITEM(t, 3), name))};
  read_dims(&v, PyTuple_GET_ITEM(t, 4), PyTuple_GET_ITEM(t, 5), name,
            "a tensor descriptor with matching shape and strides tuples");
  return v;
}

// Optional tensor: None -> not present.
struct Opt {
  TensorView view;
  bool present = false;
  Opt(nb::handle h, const char* name) {
    if (!h.is_none()) {
      view = parse(h, name);
      present = true;
    }
  }
  const TensorView* get() const { return present ? &view : nullptr; }
};

deepwell::Context context(uintptr_t stream) {
  return {reinterpret_cast<void*>(stream), nullptr, 0};
}

// Long CPU computations run without the GIL; GPU launches are quick and keep it.
template <class Fn>
Status run(bool cpu, Fn&& fn) {
  if (!cpu) return fn();
  nb::gil_scoped_release release;
  return fn();
}

void attention_backward(nb::handle q, nb::handle k, nb::handle v, nb::handle out, nb::handle dout,
                        nb::handle lse, nb::handle dq, nb::handle dk, nb::handle dv,
                        nb::handle cu_q, nb::handle cu_k, int64_t max_q, int64_t max_k,
                        nb::handle bias, float scale, bool causal, int64_t window_left,
                        int64_t window_right, uintptr_t stream) {
  deepwell::AttentionBackwardArgs a;
  a.q = parse(q, "q");
  a.k = parse(k, "k");
  a.v = parse(v, "v");
  a.out = parse(out, "out");
  a.dout = parse(dout, "dout");
  a.lse = parse(lse, "lse");
  a.dq = parse(dq, "dq");
  a.dk = parse(dk, "dk");
  a.dv = parse(dv, "dv");
  Opt ocq(cu_q, "cu_seqlens_q"), ock(cu_k, "cu_seqlens_k"), ob(bias, "bias");
  a.cu_seqlens_q = ocq.get();
  a.cu_seqlens_k = ock.get();
  a.bias = ob.get();
  a.max_seqlen_q = max_q;
  a.max_seqlen_k = max_k;
  a.softmax_scale = scale;
  a.mask = {causal, window_left, window_right};
  const bool cpu = a.q.device.type == deepwell::DeviceType::kCPU;
  check(run(cpu, [&] { return deepwell::attention_backward(a, context(stream)); }));
}

// A uint8 workspace tensor (or None) joins the stream in the Context.
deepwell::Context context(uintptr_t stream, nb::handle workspace) {
  deepwell::Context ctx = context(stream);
  if (!workspace.is_none()) {
    const TensorView w = parse(workspace, "workspace");
    ctx.workspace = w.data;
    ctx.workspace_size = static_cast<size_t>(w.numel()) * deepwell::dtype_bits(w.dtype) / 8;
  }
  return ctx;
}

// Context::allocate_workspace over a Python callable alloc(nbytes, device_index) -> a tensor
// (torch.empty of uint8 on the current stream's caching allocator). The tensor is kept alive until
// the binding returns; a Python exception raised by the callable is re-raised after the call.
struct PyWorkspace {
  nb::handle fn;
  int device = 0;
  nb::object tensor;
  bool failed = false;

  static void* allocate(size_t bytes, void* user) {
    auto* self = static_cast<PyWorkspace*>(user);
    try {
      self->tensor = self->fn(bytes, self->device);
      return reinterpret_cast<void*>(nb::cast<uintptr_t>(self->tensor.attr("data_ptr")()));
    } catch (nb::python_error& e) {
      e.restore();  // re-raised by finish()
      self->failed = true;
    } catch (const std::exception&) {
      PyErr_SetString(PyExc_TypeError,
                      "workspace allocator: expected a tensor with data_ptr() from alloc(n, device)");
      self->failed = true;
    }
    return nullptr;
  }
  // Installs the allocator in `ctx` when a callable was given and no workspace tensor.
  void install(deepwell::Context* ctx, nb::handle alloc, int device_index) {
    if (alloc.is_none() || ctx->workspace != nullptr) return;
    fn = alloc;
    device = device_index;
    ctx->allocate_workspace = &PyWorkspace::allocate;
    ctx->allocator_user = this;
  }
  void finish(const Status& s) {
    if (failed) throw nb::python_error();
    check(s);
  }
};

void attention_forward(nb::handle q, nb::handle k, nb::handle v, nb::handle out, nb::handle lse,
                       nb::handle cu_q, nb::handle cu_k, int64_t max_q, int64_t max_k,
                       nb::handle bias, float scale, bool causal, int64_t window_left,
                       int64_t window_right, uintptr_t stream, nb::handle alloc) {
  deepwell::AttentionForwardArgs a;
  a.q = parse(q, "q");
  a.k = parse(k, "k");
  a.v = parse(v, "v");
  a.out = parse(out, "out");
  Opt olse(lse, "lse"), ocq(cu_q, "cu_seqlens_q"), ock(cu_k, "cu_seqlens_k"), ob(bias, "bias");
  a.lse = olse.get();
  a.cu_seqlens_q = ocq.get();
  a.cu_seqlens_k = ock.get();
  a.bias = ob.get();
  a.max_seqlen_q = max_q;
  a.max_seqlen_k = max_k;
  a.softmax_scale = scale;
  a.mask = {causal, window_left, window_right};
  const bool cpu = a.q.device.type == deepwell::DeviceType::kCPU;
  deepwell::Context ctx = context(stream);
  PyWorkspace ws;  // split-KV's partial buffers (fwd_combine.hpp), when the plan splits
  if (!cpu) ws.install(&ctx, alloc, a.q.device.index);
  ws.finish(run(cpu, [&] { return deepwell::attention_forward(a, ctx); }));
}

struct GemmViews {
  deepwell::GemmArgs g;
  Opt c, bias, residual;
  GemmViews(nb::handle a_, nb::handle b_, nb::handle d_, nb::handle c_, nb::handle bias_,
            nb::handle residual_, float alpha, float beta, int32_t activation)
      : c(c_, "c"), bias(bias_, "bias"), residual(residual_, "residual") {
    g.a = parse(a_, "a");
    g.b = parse(b_, "b");
    g.d = parse(d_, "out");
    g.c = c.get();
    g.bias = bias.get();
    g.residual = residual.get();
    g.alpha = alpha;
    g.beta = beta;
    g.activation = static_cast<deepwell::Activation>(activation);
  }
};

void gemm(nb::handle a_, nb::handle b_, nb::handle d_, nb::handle c_, nb::handle bias_,
          nb::handle residual_, float alpha, float beta, int32_t activation, uintptr_t stream,
          nb::handle workspace, nb::handle alloc) {
  GemmViews v(a_, b_, d_, c_, bias_, residual_, alpha, beta, activation);
  const bool cpu = v.g.a.device.type == deepwell::DeviceType::kCPU;
  deepwell::Context ctx = context(stream, workspace);
  PyWorkspace ws;
  if (!cpu) ws.install(&ctx, alloc, v.g.a.device.index);
  ws.finish(run(cpu, [&] { return deepwell::gemm(v.g, ctx); }));
}

size_t gemm_workspace_size(nb::handle a_, nb::handle b_, nb::handle d_, nb::handle c_,
                           nb::handle bias_, nb::handle residual_, float alpha, float beta,
                           int32_t activation) {
  GemmViews v(a_, b_, d_, c_, bias_, residual_, alpha, beta, activation);
  size_t bytes = 0;
  check(deepwell::gemm_workspace_size(v.g, &bytes));
  return bytes;
}

struct GemmFp8Views {
  deepwell::GemmFp8Args g;
  Opt c, bias, residual;
  GemmFp8Views(nb::handle a_, nb::handle b_, nb::handle sa, nb::handle sb, int32_t scaling,
               nb::handle d_, nb::handle c_, nb::handle bias_, nb::handle residual_, float alpha,
               float beta, int32_t activation)
      : c(c_, "c"), bias(bias_, "bias"), residual(residual_, "residual") {
    g.a = parse(a_, "a");
    g.b = parse(b_, "b");
    g.scale_a = parse(sa, "scale_a");
    g.scale_b = parse(sb, "scale_b");
    g.scaling = static_cast<deepwell::Fp8Scaling>(scaling);
    g.d = parse(d_, "out");
    g.c = c.get();
    g.bias = bias.get();
    g.residual = residual.get();
    g.alpha = alpha;
    g.beta = beta;
    g.activation = static_cast<deepwell::Activation>(activation);
  }
};

void gemm_fp8(nb::handle a_, nb::handle b_, nb::handle sa, nb::handle sb, int32_t scaling,
              nb::handle d_, nb::handle c_, nb::handle bias_, nb::handle residual_, float alpha,
              float beta, int32_t activation, uintptr_t stream, nb::handle workspace,
              nb::handle alloc) {
  GemmFp8Views v(a_, b_, sa, sb, scaling, d_, c_, bias_, residual_, alpha, beta, activation);
  const bool cpu = v.g.a.device.type == deepwell::DeviceType::kCPU;
  deepwell::Context ctx = context(stream, workspace);
  PyWorkspace ws;
  if (!cpu) ws.install(&ctx, alloc, v.g.a.device.index);
  ws.finish(run(cpu, [&] { return deepwell::gemm_fp8(v.g, ctx); }));
}

size_t gemm_fp8_workspace_size(nb::handle a_, nb::handle b_, nb::handle sa, nb::handle sb,
                               int32_t scaling, nb::handle d_, nb::handle c_, nb::handle bias_,
                               nb::handle residual_, float alpha, float beta, int32_t activation) {
  GemmFp8Views v(a_, b_, sa, sb, scaling, d_, c_, bias_, residual_, alpha, beta, activation);
  size_t bytes = 0;
  check(deepwell::gemm_fp8_workspace_size(v.g, &bytes));
  return bytes;
}

// ---- quantization (python/deepwell/quant.py allocates the outputs and builds the descriptors)

void quantize(nb::handle x, nb::handle data, nb::handle scales, nb::handle tensor_scale,
              nb::handle data_t, nb::handle scales_t, nb::handle amax, int32_t format,
              int32_t rule, bool pow2, bool swizzle, uintptr_t stream) {
  deepwell::QuantizeArgs a;
  a.x = parse(x, "x");
  a.data = parse(data, "data");
  a.scales = parse(scales, "scales");
  Opt ots(tensor_scale, "tensor_scale"), odt(data_t, "data_t"), ost(scales_t, "scales_t"),
      oam(amax, "amax");
  a.tensor_scale = ots.get();
  a.amax = oam.get();
  a.data_t = odt.get();
  a.scales_t = ost.get();
  a.config = {static_cast<deepwell::QuantFormat>(format), static_cast<deepwell::ScaleRule>(rule),
              pow2, swizzle};
  const bool cpu = a.x.device.type == deepwell::DeviceType::kCPU;
  check(run(cpu, [&] { return deepwell::quantize(a, context(stream)); }));
}

void dequantize(nb::handle data, nb::handle scales, nb::handle tensor_scale, nb::handle out,
                int32_t format, bool swizzle, uintptr_t stream) {
  deepwell::DequantizeArgs a;
  a.data = parse(data, "data");
  a.scales = parse(scales, "scales");
  Opt ots(tensor_scale, "tensor_scale");
  a.tensor_scale = ots.get();
  a.out = parse(out, "out");
  a.config.format = static_cast<deepwell::QuantFormat>(format);
  a.config.swizzle = swizzle;
  const bool cpu = a.data.device.type == deepwell::DeviceType::kCPU;
  check(run(cpu, [&] { return deepwell::dequantize(a, context(stream)); }));
}

nb::object shape_tuple(const deepwell::Shape& s) {
  nb::list l;
  for (int i = 0; i < s.ndim; ++i) l.append(s.dims[i]);
  return nb::tuple(l);
}

// (data, scales, scale_dtype_code, has_tensor_scale, data_t | None, scales_t | None)
nb::tuple quantize_shapes(int32_t format, bool swizzle, bool transpose, nb::handle shape) {
  deepwell::Shape s;
  PyObject* t = shape.ptr();
  if (!PyTuple_Check(t)) type_error("x_shape", "a tuple of ints");
  s.ndim = static_cast<int32_t>(PyTuple_GET_SIZE(t));
  if (s.ndim > deepwell::kMaxDims) {
    raise(Status(StatusCode::kInvalidArgument,
                 "argument 'x': expected at most 8 dimensions, got " + std::to_string(s.ndim)));
  }
  for (int i = 0; i < s.ndim; ++i) s.dims[i] = as_i64(PyTuple_GET_ITEM(t, i), "x_shape");
  deepwell::QuantConfig cfg;
  cfg.format = static_cast<deepwell::QuantFormat>(format);
  cfg.swizzle = swizzle;
  deepwell::QuantShapes out;
  check(deepwell::quantize_shapes(cfg, s, transpose, &out));
  return nb::make_tuple(shape_tuple(out.data), shape_tuple(out.scales),
                        static_cast<int>(out.scale_dtype), out.has_tensor_scale,
                        transpose ? shape_tuple(out.data_t) : nb::none(),
                        transpose && out.scales_t.ndim ? shape_tuple(out.scales_t) : nb::none());
}

void swizzle_scales(nb::handle in, nb::handle out, bool to_swizzled, uintptr_t stream) {
  const TensorView i = parse(in, to_swizzled ? "scales" : "swizzled");
  const TensorView o = parse(out, "out");
  check(to_swizzled ? deepwell::swizzle_scales(i, o, context(stream))
                    : deepwell::unswizzle_scales(i, o, context(stream)));
}

// Generic DLPack import for producers other than torch and numpy: returns the descriptor tuple.
// The caller keeps the source object alive for the duration of the op.
nb::tuple dlpack_descriptor(nb::ndarray<nb::ro> a) {
  const auto dt = a.dtype();
  int code = -1;
  using nb::dlpack::dtype_code;
  if (dt.lanes == 1) {
    if (dt.code == static_cast<uint8_t>(dtype_code::Float) && dt.bits == 32) code = 0;
    if (dt.code == static_cast<uint8_t>(dtype_code::Float) && dt.bits == 16) code = 1;
    if (dt.code == static_cast<uint8_t>(dtype_code::Bfloat) && dt.bits == 16) code = 2;
    if (dt.code == static_cast<uint8_t>(dtype_code::Int) && dt.bits == 32) code = 8;
    if (dt.code == static_cast<uint8_t>(dtype_code::UInt) && dt.bits == 8) code = 9;
  }
  if (code < 0) {
    type_error("tensor", "a DLPack tensor of float32, float16, bfloat16, int32 or uint8");
  }
  nb::list shape, strides;
  for (size_t i = 0; i < a.ndim(); ++i) {
    shape.append(static_cast<int64_t>(a.shape(i)));
    strides.append(static_cast<int64_t>(a.stride(i)));
  }
  const int dev = a.device_type() == nb::device::cuda::value ? 2
                  : a.device_type() == nb::device::cpu::value ? 1 : a.device_type();
  return nb::make_tuple(reinterpret_cast<uintptr_t>(a.data()), code, dev, a.device_id(),
                        nb::tuple(shape), nb::tuple(strides));
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "deepwell native bindings (internal; use the deepwell package)";
  m.def("version", [] { return std::string(deepwell::version()); });
  m.def("built_with_cuda", [] { return deepwell::built_with_cuda(); });
  // Tensor arguments accept None (optional tensors); the library reports a missing required one.
  m.def("attention_forward", &attention_forward, "q"_a.none(), "k"_a.none(), "v"_a.none(),
        "out"_a.none(), "lse"_a.none(), "cu_seqlens_q"_a.none(), "cu_seqlens_k"_a.none(),
        "max_seqlen_q"_a, "max_seqlen_k"_a, "bias"_a.none(), "scale"_a, "causal"_a,
        "window_left"_a, "window_right"_a, "stream"_a, "alloc"_a.none() = nb::none());
  m.def("attention_backward", &attention_backward, "q"_a.none(), "k"_a.none(), "v"_a.none(),
        "out"_a.none(), "dout"_a.none(), "lse"_a.none(), "dq"_a.none(), "dk"_a.none(),
        "dv"_a.none(), "cu_seqlens_q"_a.none(), "cu_seqlens_k"_a.none(), "max_seqlen_q"_a,
        "max_seqlen_k"_a, "bias"_a.none(), "scale"_a, "causal"_a, "window_left"_a,
        "window_right"_a, "stream"_a);
  m.def("gemm", &gemm, "a"_a.none(), "b"_a.none(), "d"_a.none(), "c"_a.none(), "bias"_a.none(),
        "residual"_a.none(), "alpha"_a, "beta"_a, "activation"_a, "stream"_a,
        "workspace"_a.none() = nb::none(), "alloc"_a.none() = nb::none());
  m.def("gemm_workspace_size", &gemm_workspace_size, "a"_a.none(), "b"_a.none(), "d"_a.none(),
        "c"_a.none(), "bias"_a.none(), "residual"_a.none(), "alpha"_a, "beta"_a, "activation"_a);
  m.def("gemm_fp8", &gemm_fp8, "a"_a.none(), "b"_a.none(), "scale_a"_a.none(),
        "scale_b"_a.none(), "scaling"_a, "d"_a.none(), "c"_a.none(), "bias"_a.none(),
        "residual"_a.none(), "alpha"_a, "beta"_a, "activation"_a, "stream"_a,
        "workspace"_a.none() = nb::none(), "alloc"_a.none() = nb::none());
  m.def("gemm_fp8_workspace_size", &gemm_fp8_workspace_size, "a"_a.none(), "b"_a.none(),
        "scale_a"_a.none(), "scale_b"_a.none(), "scaling"_a, "d"_a.none(), "c"_a.none(),
        "bias"_a.none(), "residual"_a.none(), "alpha"_a, "beta"_a, "activation"_a);
  m.def("quantize", &quantize, "x"_a.none(), "data"_a.none(), "scales"_a.none(),
        "tensor_scale"_a.none(), "data_t"_a.none(), "scales_t"_a.none(), "amax"_a.none(),
        "format"_a, "rule"_a, "pow2_scales"_a, "swizzle"_a, "stream"_a);
  m.def("dequantize", &dequantize, "data"_a.none(), "scales"_a.none(), "tensor_scale"_a.none(),
        "out"_a.none(), "format"_a, "swizzle"_a, "stream"_a);
  m.def("quantize_shapes", &quantize_shapes, "format"_a, "swizzle"_a, "transpose"_a, "shape"_a);
  m.def("swizzle_scales", &swizzle_scales, "scales"_a.none(), "out"_a.none(), "to_swizzled"_a,
        "stream"_a);
  m.def("set_gemm_plan_override",
        [](const std::string& spec) { check(deepwell::set_gemm_plan_override(spec)); }, "spec"_a);
  m.def("dlpack_descriptor", &dlpack_descriptor);
  m.def("register_torch", &register_torch, "tensor_type"_a, "dtypes"_a);
}
