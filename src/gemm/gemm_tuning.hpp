// Optional overrides of the kernel table's shape rules (gemm_sm90_table.hpp), for tuning runs and
// for deployments that have measured their shapes:
//
//   DEEPWELL_GEMM_TUNING=<file>   a tuning cache, one entry per line ('#' starts a comment):
//       <group> <M> <N> <K> <batch>  <kernel> <decomposition> <splits> <raster> <swizzle>
//     group: <operands>:<out>:<layout>:<scaling> as printed by group_name(), e.g. bf16:bf16:kk:none
//     (the problem as the kernels see it: after D^T = B^T A^T and any transposed operand copy);
//     kernel: a row name of the table; decomposition: dp | splitk | streamk | tail (the own
//     fp8-loop kernels: split tail); raster: h | m | n;
//     swizzle: 1, 2, 4 or 8.
//   DEEPWELL_GEMM_FORCE=<kernel>[,<decomposition>[,<splits>[,<raster>[,<swizzle>]]]]
//     forces that kernel (and plan) on every call it can run; for benchmark sweeps. A value with
//     a field that does not parse (an unknown kernel, splits < 1 or not a whole number, a swizzle
//     other than 1, 2, 4, 8, more than 5 fields) is ignored as a whole; set_gemm_plan_override
//     reports the same problems as an error naming the field.
//
// Entries that name a kernel unable to run the call are ignored. Both variables are read once.
// deepwell::set_gemm_plan_override (include/deepwell/gemm.hpp) sets a forced plan at run time,
// which takes precedence over both: in-process sweeps time every plan interleaved with the
// baseline (run-to-run spread across processes reached 13 %, docs/perf-notes.md, session 18).
#pragma once

#include <cstdint>
#include <string>

#include "gemm/gemm_sm90_table.hpp"

namespace deepwell::matmul::sm90 {

std::string group_name(Operands ops, DType out, bool a_k_major, bool b_k_major, Scaling scaling);

// The override for this call, if any. `usable(kernel)` says whether a kernel can run the call.
bool tuned_plan(const std::string& group, int64_t m, int64_t n, int64_t k, int64_t batch,
                bool (*usable)(const KernelSpec&, const void*), const void* ctx, Plan* plan);

}  // namespace deepwell::matmul::sm90
