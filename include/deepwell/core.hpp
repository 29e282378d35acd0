// deepwell core types: dtypes, devices, non-owning tensor views, status, execution context.
//
// Nothing here needs CUDA headers: a stream is carried as an opaque pointer (cudaStream_t is a
// pointer type), so C++ users without the CUDA toolkit can include the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#if defined(_WIN32)
#define DEEPWELL_API __declspec(dllexport)
#else
#define DEEPWELL_API __attribute__((visibility("default")))
#endif

namespace deepwell {

// Element types. The numeric values are part of the C ABI (deepwell.h, DW_DTYPE_*).
enum class DType : int32_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kE4M3 = 3,   // fp8 e4m3fn: bias 7, max 448, no inf
  kE5M2 = 4,   // fp8 e5m2: IEEE-like, max 57344
  kE2M1 = 5,   // fp4: two elements per byte, lower index in the low nibble
  kUE8M0 = 6,  // unsigned power-of-two scale, 0xFF = NaN
  kUE4M3 = 7,  // NVFP4 block scale (e4m3 with the sign bit unused)
  kI32 = 8,
  kU8 = 9,     // raw bytes
};

DEEPWELL_API std::string_view dtype_name(DType dt);
// Storage size in bits of one element (4 for e2m1).
DEEPWELL_API int dtype_bits(DType dt);
DEEPWELL_API bool dtype_is_valid(int32_t code);

// Device kinds use DLPack's codes.
enum class DeviceType : int32_t { kCPU = 1, kCUDA = 2 };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int32_t index = 0;
  friend bool operator==(const Device& a, const Device& b) {
    return a.type == b.type && a.index == b.index;
  }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};

DEEPWELL_API std::string device_name(Device d);

constexpr int kMaxDims = 8;

// A non-owning view: data pointer, shape, strides in elements, dtype, device.
// For e2m1 the strides count elements (nibbles); the innermost dimension must then be
// contiguous and even, so that two elements share each byte.
struct DEEPWELL_API TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Device device{};
  int32_t ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  int64_t size(int i) const { return shape[i < 0 ? i + ndim : i]; }
  int64_t stride(int i) const { return strides[i < 0 ? i + ndim : i]; }
  int64_t numel() const;
  bool is_contiguous() const;  // row-major, dense
  std::string describe() const;  // e.g. "bf16[2, 128, 8, 64] on cuda:0"

  // Builds a contiguous row-major view.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               Device device = {});
  static TensorView strided(void* data, DType dtype, std::initializer_list<int64_t> shape,
                            std::initializer_list<int64_t> strides, Device device = {});
};

// Status codes; the numeric values are part of the C ABI (deepwell.h, DW_STATUS_*).
enum class StatusCode : int32_t {
  kOk = 0,
  kInvalidArgument = 1,  // a shape, stride, size, alignment or value is wrong (Python: ValueError)
  kInvalidDType = 2,     // an argument has the wrong element type (Python: TypeError)
  kNotSupported = 3,     // valid, but this build or this device cannot run it (Python: NotImplementedError)
  kCudaError = 4,        // a CUDA runtime call failed (Python: RuntimeError)
  kOutOfMemory = 5,
  kInternal = 6,
};

// The result of every public entry point. The library never throws across its API and never aborts.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Where and how an op runs. GPU ops launch only on `stream` (a cudaStream_t; null = the legacy
// default stream), never synchronize it, and take scratch memory only from `workspace`; an op that
// needs scratch reports its size through its *_workspace_size function.
//
// Instead of a workspace, a caller with a stream-ordered allocator (PyTorch's caching allocator,
// cudaMallocAsync) may pass `allocate_workspace`: when `workspace` is null, an op that can use
// scratch calls it once, on the calling thread, with the bytes its chosen plan uses and
// `allocator_user`, and runs in the memory returned (at least 256-byte aligned, usable by work
// enqueued on `stream`; the caller frees it after the call returns, in stream order). This saves
// the separate size query. A null return fails the call with kOutOfMemory.
using WorkspaceAllocator = void* (*)(size_t bytes, void* user);

struct Context {
  void* stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_size = 0;
  WorkspaceAllocator allocate_workspace = nullptr;
  void* allocator_user = nullptr;
};

// Library version, e.g. "0.1.0".
DEEPWELL_API const char* version();
// True when this build contains the CUDA kernels (they still need an sm_90 GPU to run).
DEEPWELL_API bool built_with_cuda();

}  // namespace deepwell
