// Core types: dtype and device names, tensor view helpers, version.

#include "deepwell/core.hpp"
#include "deepwell/deepwell.h"

namespace deepwell {

std::string_view dtype_name(DType dt) {
  switch (dt) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kE4M3: return "e4m3";
    case DType::kE5M2: return "e5m2";
    case DType::kE2M1: return "e2m1";
    case DType::kUE8M0: return "ue8m0";
    case DType::kUE4M3: return "ue4m3";
    case DType::kI32: return "i32";
    case DType::kU8: return "u8";
  }
  return "unknown";
}

int dtype_bits(DType dt) {
  switch (dt) {
    case DType::kF32: case DType::kI32: return 32;
    case DType::kF16: case DType::kBF16: return 16;
    case DType::kE2M1: return 4;
    default: return 8;
  }
}

bool dtype_is_valid(int32_t code) { return code >= 0 && code <= static_cast<int32_t>(DType::kU8); }

std::string device_name(Device d) {
  if (d.type == DeviceType::kCPU) return "cpu";
  if (d.type == DeviceType::kCUDA) return "cuda:" + std::to_string(d.index);
  return "device(" + std::to_string(static_cast<int>(d.type)) + ")";
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

bool TensorView::is_contiguous() const {
  const int n = ndim > kMaxDims ? kMaxDims : ndim;
  // An empty tensor has no element out of place: torch calls every empty tensor contiguous, and
  // hands out ones like a (4, 0) with strides (1, 1).
  for (int i = 0; i < n; ++i) {
    if (shape[i] == 0) return true;
  }
  int64_t expected = 1;
  for (int i = n - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string TensorView::describe() const {
  const int n = ndim < 0 ? 0 : ndim > kMaxDims ? kMaxDims : ndim;
  auto list = [n](const int64_t* v) {
    std::string s;
    for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s;
  };
  std::string s = std::string(dtype_name(dtype)) + "[" + list(shape) + "]";
  if (!is_contiguous()) s += " strides (" + list(strides) + ")";
  return s + " on " + device_name(device);
}

TensorView TensorView::contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                                  Device device) {
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.ndim = static_cast<int32_t>(shape.size());
  int i = 0;
  for (int64_t s : shape) t.shape[i++] = s;
  int64_t stride = 1;
  for (int j = t.ndim - 1; j >= 0; --j) {
    t.strides[j] = stride;
    stride *= t.shape[j];
  }
  return t;
}

TensorView TensorView::strided(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               std::initializer_list<int64_t> strides, Device device) {
  TensorView t = contiguous(data, dtype, shape, device);
  int i = 0;
  for (int64_t s : strides) t.strides[i++] = s;
  return t;
}

const char* version() { return "0.1.0"; }

bool built_with_cuda() {
#ifdef DEEPWELL_WITH_CUDA
  return true;
#else
  return false;
#endif
}


}  // namespace deepwell
