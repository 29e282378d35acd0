// Host-side CUDA helpers for the GPU dispatchers: error translation, device queries, device guard.
// Only compiled in CUDA builds.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/validate.hpp"
#include "deepwell/core.hpp"

namespace deepwell::detail {

// Converts a CUDA runtime error into a Status naming the op and the call that failed.
inline Status cuda_status(cudaError_t err, std::string_view op, std::string_view what) {
  if (err == cudaSuccess) return Status::Ok();
  StatusCode code = err == cudaErrorMemoryAllocation ? StatusCode::kOutOfMemory
                                                     : StatusCode::kCudaError;
  return Status(code, std::string(op) + ": " + std::string(what) + " failed: " +
                          cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

#define DW_CUDA_TRY(op, expr) DW_TRY(::deepwell::detail::cuda_status((expr), (op), #expr))

struct DeviceInfo {
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  size_t smem_per_block_optin = 0;
  size_t l2_bytes = 0;
};

// Properties of `device`, queried once and cached (thread-safe).
Status device_info(int device, const DeviceInfo** out);

// Checks that `device` is an sm_90 GPU (the only target compiled in this build).
Status require_sm90(std::string_view op, int device);

// Makes `device` current for the scope and restores the previous device afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  Status status() const { return status_; }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
  Status status_;
};

// The launch error of the last kernel, if any, as a Status.
inline Status last_launch_status(std::string_view op) {
  return cuda_status(cudaGetLastError(), op, "kernel launch");
}

}  // namespace deepwell::detail
