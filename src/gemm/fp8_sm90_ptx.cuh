// The few sm_90a instructions the fp8 GEMM kernel (fp8_sm90_kernel.cuh) is built from, as thin
// inline-PTX wrappers: mbarriers, TMA tile loads and stores, bulk async-groups, wgmma
// shared-memory descriptors and fences, and the warpgroup register split. The wgmma
// instructions themselves come from CuTe's cute/arch/mma_sm90_gmma.hpp (one struct per shape and
// type pair).
#pragma once

#include <cstdint>

#include "core/flags_sm90.cuh"

namespace deepwell::matmul::sm90::fp8 {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ------------------------------------------------------------------------------------- mbarriers

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
}

// Makes the initialized barriers visible to the async proxy (TMA) and to the other threads.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// Arrives once and announces `bytes` of TMA traffic that must land before the phase completes.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

// Waits until the phase with parity `parity` of `bar` has completed. The polling loop lives inside
// one asm block: a C++ loop around try_wait is a potentially divergent branch to ptxas, which then
// serializes every wgmma in flight across it (C7518). A pipeline bug would hang the GPU; a wait
// that has not completed after 4 s of the global timer (legitimate waits take microseconds) traps
// instead, which the caller sees as a launch error.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      ".reg .u64 start, now;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@done bra DONE;\n"
      "mov.u64 start, %%globaltimer;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@done bra DONE;\n"
      "mov.u64 now, %%globaltimer;\n"
      "sub.u64 now, now, start;\n"
      "setp.lt.u64 done, now, 4000000000;\n"
      "@done bra WAIT;\n"
      "trap;\n"
      "DONE:\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

// mbar_arrive by the threads with `pred` set, predicated inside the asm (no C++ branch: see
// mbar_wait on why).
__device__ __forceinline__ void mbar_arrive_if(uint64_t* bar, bool pred) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %1, 0;\n"
      "@p mbarrier.arrive.shared::cta.b64 _, [%0];\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(static_cast<uint32_t>(pred))
      : "memory");
}

// Arrives on the mbarrier at the same shared-memory offset as `bar` in CTA `cta` of the cluster
// (own CTA included), by the threads with `pred` set: the arriving warp's wgmma reads of the stage
// are complete (its wgmma wait returned), so the peer's TMA may overwrite it. The arrive keeps the
// default .release.cta semantics, as CUTLASS's ClusterBarrier does: `.release.cluster` compiles to
// a MEMBAR.ALL.GPU ahead of every arrive, which made the 2-CTA kernel twice as slow (session 13).
__device__ __forceinline__ void mbar_arrive_cluster_if(uint64_t* bar, uint32_t cta, bool pred) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      ".reg .b32 remote;\n"
      "setp.ne.b32 p, %2, 0;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "@p mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(cta), "r"(static_cast<uint32_t>(pred))
      : "memory");
}

// ------------------------------------------------------------- flags between CTAs (split tail)

using detail::red_release_add;  // core/flags_sm90.cuh
using detail::wait_flag_geq;


// ------------------------------------------------------------------------------------- clusters

__device__ __forceinline__ uint32_t cluster_cta_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// All threads of all CTAs of the cluster (every thread must call it).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

// ------------------------------------------------------------------------------------------- TMA

__device__ __forceinline__ void tma_prefetch_descriptor(const void* desc) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(desc)) : "memory");
}

// One box of a 3-D tensor map into shared memory; completion is signalled on `bar` (complete_tx).
__device__ __forceinline__ void tma_load_3d(const void* desc, uint64_t* bar, void* dst, int32_t c0,
                                            int32_t c1, int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// The same box written to the same shared-memory offset of every CTA in `cta_mask` (cluster
// multicast); each destination CTA's mbarrier at `bar`'s offset receives the complete_tx.
__device__ __forceinline__ void tma_load_3d_multicast(const void* desc, uint64_t* bar, void* dst,
                                                      int32_t c0, int32_t c1, int32_t c2,
                                                      uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2),
      "h"(cta_mask)
      : "memory");
}

__device__ __forceinline__ void tma_load_2d(const void* desc, uint64_t* bar, void* dst, int32_t c0,
                                            int32_t c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(desc)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

// One box of shared memory to a 3-D tensor map in global memory (TMA store; elements past the
// tensor's bounds are not written), issued by the threads with `pred` set (predicated inside the
// asm: a C++ branch here would be a divergent branch with wgmmas in flight, see mbar_wait), then
// committed as one bulk async-group of that thread.
__device__ __forceinline__ void tma_store_3d_if(const void* desc, const void* src, int32_t c0,
                                                int32_t c1, int32_t c2, bool pred) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %5, 0;\n"
      "@p cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n"
      "}\n" ::"l"(reinterpret_cast<uint64_t>(desc)),
      "r"(smem_u32(src)), "r"(c0), "r"(c1), "r"(c2), "r"(static_cast<uint32_t>(pred))
      : "memory");
}
__device__ __forceinline__ void bulk_commit_group_if(bool pred) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %0, 0;\n"
      "@p cp.async.bulk.commit_group;\n"
      "}\n" ::"r"(static_cast<uint32_t>(pred))
      : "memory");
}
// Until this thread's bulk groups have finished reading their shared-memory source (the buffer
// may be written again); a thread without pending groups passes at once.
__device__ __forceinline__ void bulk_wait_group_read_all() {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
// Until this thread's bulk groups have completed (their global writes done): before the CTA exits.
__device__ __forceinline__ void bulk_wait_group_all() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
// Makes this thread's generic-proxy shared-memory writes visible to the async proxy (TMA).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v));
}
// A shared-memory load that stays in program order with st_shared_b32 (both volatile), so the
// epilogue's column loads can be placed ahead of the stores they must not wait behind.
__device__ __forceinline__ float2 ld_shared_f32x2(uint32_t addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(addr));
  return v;
}

// ----------------------------------------------------------------------------------------- wgmma

// Shared-memory matrix descriptor of a K-major operand tile written by TMA with 128-byte swizzling:
// rows of 128 bytes (128 fp8 of K), 8-row swizzle atoms of 1024 bytes (stride byte offset), the
// leading byte offset unused for swizzled K-major layouts, layout type 1 = 128B swizzle. The tile
// must start on a 1024-byte boundary (base offset 0). Advancing K by 32 elements inside the atom
// adds 32 bytes to the start address (2 in the >> 4 encoded field): the hardware applies the
// swizzle to the final address, as TMA did when writing.
__device__ __forceinline__ uint64_t smem_desc_k_sw128(const void* tile) {
  const uint64_t addr = smem_u32(tile);
  return ((addr & 0x3FFFF) >> 4) | (uint64_t{1024 >> 4} << 32) | (uint64_t{1} << 62);
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses of an accumulator register across the async wgmma.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// --------------------------------------------------------------------------- register split

template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void warpgroup_reg_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

}  // namespace deepwell::matmul::sm90::fp8
