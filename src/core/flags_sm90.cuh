// Counters between the CTAs of one persistent grid, for split tails (the fp8 GEMM's and the
// attention forward's): a CTA publishes partial results and counts them in; the CTA that merges
// them waits for the count. Inline PTX, sm_90.
#pragma once

#include <cstdint>

namespace deepwell::detail {

// Adds `v` to the global counter `flag` after a release fence at GPU scope: every store this
// thread made, and those it saw by a preceding barrier, is visible to a CTA that reads the new
// count with wait_flag_geq (CUTLASS's GenericBarrier publishes stream-K partials the same way).
__device__ __forceinline__ void red_release_add(int32_t* flag, int32_t v) {
  asm volatile("fence.acq_rel.gpu;\nred.relaxed.gpu.global.add.s32 [%0], %1;" ::"l"(flag), "r"(v)
               : "memory");
}

// Waits until the global counter `flag` is >= `target` (acquire loads at GPU scope). The loop is
// inside the asm, so ptxas sees no divergent branch; the counted stores come from other CTAs of
// the same persistent grid, which are resident, so a wait that has not ended after 10 s of the
// global timer traps.
__device__ __forceinline__ void wait_flag_geq(const int32_t* flag, int32_t target) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      ".reg .b32 v;\n"
      ".reg .u64 start, now;\n"
      "mov.u64 start, %%globaltimer;\n"
      "WAIT:\n"
      "ld.acquire.gpu.global.b32 v, [%0];\n"
      "setp.ge.s32 done, v, %1;\n"
      "@done bra DONE;\n"
      "mov.u64 now, %%globaltimer;\n"
      "sub.u64 now, now, start;\n"
      "setp.lt.u64 done, now, 10000000000;\n"
      "@done bra WAIT;\n"
      "trap;\n"
      "DONE:\n"
      "}\n" ::"l"(flag),
      "r"(target)
      : "memory");
}

}  // namespace deepwell::detail
