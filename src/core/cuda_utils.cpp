#include "core/cuda_utils.hpp"

#include <array>
#include <mutex>

#include "core/validate.hpp"

namespace deepwell::detail {

Status device_info(int device, const DeviceInfo** out) {
  constexpr int kMaxDevices = 64;
  static std::array<DeviceInfo, kMaxDevices> cache;
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<cudaError_t, kMaxDevices> errors;
  if (device < 0 || device >= kMaxDevices) {
    return Status(StatusCode::kInvalidArgument,
                  "CUDA device index " + std::to_string(device) + " is out of range");
  }
  std::call_once(once[device], [&] {
    cudaDeviceProp prop{};
    errors[device] = cudaGetDeviceProperties(&prop, device);
    if (errors[device] == cudaSuccess) {
      cache[device] = {prop.multiProcessorCount, prop.major, prop.minor,
                       prop.sharedMemPerBlockOptin, static_cast<size_t>(prop.l2CacheSize)};
    }
  });
  DW_TRY(cuda_status(errors[device], "device_info", "cudaGetDeviceProperties"));
  *out = &cache[device];
  return Status::Ok();
}

Status require_sm90(std::string_view op, int device) {
  const DeviceInfo* info = nullptr;
  DW_TRY(device_info(device, &info));
  if (info->cc_major != 9 || info->cc_minor != 0) {
    return Status(StatusCode::kNotSupported,
                  std::string(op) + ": this build has kernels for sm_90a (H100/H200) only; cuda:" +
                      std::to_string(device) + " is sm_" + std::to_string(info->cc_major) +
                      std::to_string(info->cc_minor));
  }
  return Status::Ok();
}

DeviceGuard::DeviceGuard(int device) {
  cudaError_t err = cudaGetDevice(&previous_);
  if (err == cudaSuccess && previous_ != device) {
    err = cudaSetDevice(device);
    switched_ = err == cudaSuccess;
  }
  status_ = cuda_status(err, "device guard", "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
  if (switched_) cudaSetDevice(previous_);
}

}  // namespace deepwell::detail
