// Argument checks shared by every public entry point.
//
// Each check returns a Status whose message reads
//   "<op>: argument '<name>': expected <what>, got <what came>"
// so that a user sees which argument is wrong, what was expected and what was passed.
#pragma once

#include <exception>
#include <initializer_list>
#include <new>
#include <string>
#include <string_view>

#include "deepwell/core.hpp"

namespace deepwell::detail {

#define DW_TRY(expr)                        \
  do {                                      \
    ::deepwell::Status dw_status_ = (expr); \
    if (!dw_status_.ok()) return dw_status_; \
  } while (0)

Status arg_error(std::string_view op, std::string_view arg, std::string_view expected,
                 std::string_view got, StatusCode code = StatusCode::kInvalidArgument);

std::string shape_string(const TensorView& t);

// Structural sanity of a view: ndim in [0, 8], known dtype and device, non-negative sizes, the
// largest element offset representable in int64 bytes, non-negative strides, and a non-null data
// pointer when the tensor is not empty.
Status check_view(std::string_view op, std::string_view name, const TensorView& t);

Status check_rank(std::string_view op, std::string_view name, const TensorView& t,
                  std::initializer_list<int> ranks);
Status check_dtype(std::string_view op, std::string_view name, const TensorView& t,
                   std::initializer_list<DType> allowed);
Status check_same_dtype(std::string_view op, std::string_view name, const TensorView& t,
                        std::string_view ref_name, const TensorView& ref);
Status check_device(std::string_view op, std::string_view name, const TensorView& t,
                    std::string_view ref_name, Device ref);
// Size of dimension `dim` must equal `expected`; `meaning` names it in the message ("head_dim").
Status check_dim(std::string_view op, std::string_view name, const TensorView& t, int dim,
                 int64_t expected, std::string_view meaning);
Status check_last_dim_contiguous(std::string_view op, std::string_view name, const TensorView& t);
Status check_contiguous(std::string_view op, std::string_view name, const TensorView& t);
// Data pointer aligned to `bytes`, and every stride but the innermost a multiple of `bytes`.
Status check_alignment(std::string_view op, std::string_view name, const TensorView& t, int bytes);
// Output tensors may not overlap inputs in memory or contain self-overlapping (stride-0) dims.
Status check_no_internal_overlap(std::string_view op, std::string_view name, const TensorView& t);

// Byte extent [begin, end) covered by a view (for overlap checks and bound checks).
void byte_extent(const TensorView& t, uintptr_t* begin, uintptr_t* end);

// Do the byte extents of two views intersect? (Conservative for interleaved strided views.)
bool overlaps(const TensorView& a, const TensorView& b);

// Runs an entry point's body, turning any exception (allocation failure included) into a Status:
// nothing thrown ever crosses the public API.
template <class Fn>
Status guarded(std::string_view op, Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, std::string(op) + ": out of host memory");
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal, std::string(op) + ": internal error: " + e.what());
  } catch (...) {
    return Status(StatusCode::kInternal, std::string(op) + ": internal error");
  }
}

}  // namespace deepwell::detail
