#include "core/validate.hpp"

#include <cstdio>

namespace deepwell::detail {

Status arg_error(std::string_view op, std::string_view arg, std::string_view expected,
                 std::string_view got, StatusCode code) {
  std::string msg;
  msg.reserve(op.size() + arg.size() + expected.size() + got.size() + 40);
  msg.append(op).append(": argument '").append(arg).append("': expected ");
  msg.append(expected).append(", got ").append(got);
  return Status(code, std::move(msg));
}

// Messages are built with std::string and snprintf only: iostreams have crashed inside a Python
// process whose libstdc++ differed from the one the library was built against.
std::string shape_string(const TensorView& t) {
  std::string s = "[";
  for (int i = 0; i < t.ndim && i < kMaxDims; ++i) {
    if (i) s += ", ";
    s += std::to_string(t.shape[i]);
  }
  return s + "]";
}

Status check_view(std::string_view op, std::string_view name, const TensorView& t) {
  if (t.ndim < 0 || t.ndim > kMaxDims) {
    return arg_error(op, name, "a tensor with 0 to 8 dimensions",
                     std::to_string(t.ndim) + " dimensions");
  }
  if (!dtype_is_valid(static_cast<int32_t>(t.dtype))) {
    return arg_error(op, name, "a known dtype code (0..9)",
                     "code " + std::to_string(static_cast<int32_t>(t.dtype)),
                     StatusCode::kInvalidDType);
  }
  if (t.device.type != DeviceType::kCPU && t.device.type != DeviceType::kCUDA) {
    return arg_error(op, name, "a CPU or CUDA tensor",
                     "device type " + std::to_string(static_cast<int32_t>(t.device.type)));
  }
  if (t.device.index < 0) {
    return arg_error(op, name, "a non-negative device index", std::to_string(t.device.index));
  }
  // Sizes non-negative; the farthest element, in bytes, must fit in int64.
  int64_t max_offset = 0;
  bool empty = false;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0) {
      return arg_error(op, name, "non-negative sizes",
                       "size " + std::to_string(t.shape[i]) + " in dimension " + std::to_string(i));
    }
    if (t.strides[i] < 0) {
      return arg_error(op, name, "non-negative strides",
                       "stride " + std::to_string(t.strides[i]) + " in dimension " +
                           std::to_string(i));
    }
    if (t.shape[i] == 0) empty = true;
  }
  if (empty) return Status::Ok();
  for (int i = 0; i < t.ndim; ++i) {
    int64_t term = 0;
    if (__builtin_mul_overflow(t.shape[i] - 1, t.strides[i], &term) ||
        __builtin_add_overflow(max_offset, term, &max_offset)) {
      return arg_error(op, name, "sizes and strides whose extent fits in 64 bits",
                       "shape " + shape_string(t) + " overflowing it");
    }
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(max_offset + 1, static_cast<int64_t>(dtype_bits(t.dtype)), &bytes)) {
    return arg_error(op, name, "sizes and strides whose extent in bytes fits in 64 bits",
                     "shape " + shape_string(t) + " overflowing it");
  }
  if (t.data == nullptr) {
    return arg_error(op, name, "a non-null data pointer for a non-empty tensor",
                     "null for " + t.describe());
  }
  return Status::Ok();
}

Status check_rank(std::string_view op, std::string_view name, const TensorView& t,
                  std::initializer_list<int> ranks) {
  for (int r : ranks) {
    if (t.ndim == r) return Status::Ok();
  }
  std::string expected = "a ";
  int i = 0;
  for (int r : ranks) {
    if (i++) expected += (i == static_cast<int>(ranks.size())) ? " or " : ", ";
    expected += std::to_string(r) + "-D";
  }
  expected += " tensor";
  return arg_error(op, name, expected, std::to_string(t.ndim) + "-D tensor " + t.describe());
}

Status check_dtype(std::string_view op, std::string_view name, const TensorView& t,
                   std::initializer_list<DType> allowed) {
  for (DType d : allowed) {
    if (t.dtype == d) return Status::Ok();
  }
  std::string expected = "dtype ";
  int i = 0;
  for (DType d : allowed) {
    if (i++) expected += (i == static_cast<int>(allowed.size())) ? " or " : ", ";
    expected += dtype_name(d);
  }
  return arg_error(op, name, expected, std::string(dtype_name(t.dtype)),
                   StatusCode::kInvalidDType);
}

Status check_same_dtype(std::string_view op, std::string_view name, const TensorView& t,
                        std::string_view ref_name, const TensorView& ref) {
  if (t.dtype == ref.dtype) return Status::Ok();
  std::string expected = "dtype " + std::string(dtype_name(ref.dtype)) + " (the dtype of '" +
                         std::string(ref_name) + "')";
  return arg_error(op, name, expected, std::string(dtype_name(t.dtype)),
                   StatusCode::kInvalidDType);
}

Status check_device(std::string_view op, std::string_view name, const TensorView& t,
                    std::string_view ref_name, Device ref) {
  if (t.device == ref) return Status::Ok();
  return arg_error(op, name,
                   "a tensor on " + device_name(ref) + " (the device of '" + std::string(ref_name) +
                       "')",
                   "a tensor on " + device_name(t.device));
}

Status check_dim(std::string_view op, std::string_view name, const TensorView& t, int dim,
                 int64_t expected, std::string_view meaning) {
  if (t.shape[dim] == expected) return Status::Ok();
  return arg_error(op, name,
                   "size " + std::to_string(expected) + " in dimension " + std::to_string(dim) +
                       " (" + std::string(meaning) + ")",
                   "shape " + shape_string(t));
}

Status check_last_dim_contiguous(std::string_view op, std::string_view name, const TensorView& t) {
  if (t.ndim == 0 || t.shape[t.ndim - 1] <= 1 || t.strides[t.ndim - 1] == 1) return Status::Ok();
  return arg_error(op, name, "a contiguous last dimension (stride 1)",
                   "stride " + std::to_string(t.strides[t.ndim - 1]) + " in " + t.describe());
}

Status check_contiguous(std::string_view op, std::string_view name, const TensorView& t) {
  if (t.is_contiguous()) return Status::Ok();
  return arg_error(op, name, "a contiguous (row-major, dense) tensor", t.describe());
}

Status check_alignment(std::string_view op, std::string_view name, const TensorView& t,
                       int bytes) {
  uintptr_t p = reinterpret_cast<uintptr_t>(t.data);
  if (p % bytes != 0) {
    char address[32];
    std::snprintf(address, sizeof address, "address 0x%llx", static_cast<unsigned long long>(p));
    return arg_error(op, name, "a data pointer aligned to " + std::to_string(bytes) + " bytes",
                     address);
  }
  int64_t bits = dtype_bits(t.dtype);
  for (int i = 0; i + 1 < t.ndim; ++i) {
    if (t.shape[i] <= 1) continue;
    if ((t.strides[i] * bits) % (8 * bytes) != 0) {
      return arg_error(op, name,
                       "strides that are multiples of " + std::to_string(bytes) +
                           " bytes (all but the last dimension)",
                       "stride " + std::to_string(t.strides[i]) + " elements in dimension " +
                           std::to_string(i) + " of " + t.describe());
    }
  }
  return Status::Ok();
}

void byte_extent(const TensorView& t, uintptr_t* begin, uintptr_t* end) {
  uintptr_t b = reinterpret_cast<uintptr_t>(t.data);
  int64_t last = 0;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] == 0) {
      *begin = *end = b;
      return;
    }
    last += (t.shape[i] - 1) * t.strides[i];
  }
  *begin = b;
  *end = b + static_cast<uintptr_t>(((last + 1) * dtype_bits(t.dtype) + 7) / 8);
}

bool overlaps(const TensorView& a, const TensorView& b) {
  uintptr_t a0, a1, b0, b1;
  byte_extent(a, &a0, &a1);
  byte_extent(b, &b0, &b1);
  return a0 < b1 && b0 < a1;
}

Status check_no_internal_overlap(std::string_view op, std::string_view name, const TensorView& t) {
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] > 1 && t.strides[i] == 0) {
      return arg_error(op, name, "an output without repeated (stride-0) dimensions",
                       "stride 0 in dimension " + std::to_string(i) + " of " + t.describe());
    }
  }
  return Status::Ok();
}

}  // namespace deepwell::detail
