// One-pass quantization with a reduced per-tensor amax (kFp8Tensor and kNvfp4 along rows, no
// transposed copy, 16-bit inputs), sm_90a: x is read once from DRAM for the share of it that fits
// on chip.
//
// The two-kernel path (quantize_sm90.cu: amax_kernel, then quantize_groups_kernel) reads x twice,
// which bounds these formats to about (in + out) / (2 in + out) of copy bandwidth (0.57-0.62 on
// the H100, perf-notes "Quantization kernels"). Here one cooperative launch, one CTA of 1024
// threads per SM, does both passes around a grid-wide barrier. x is contiguous and its rows are a
// whole number of 16-element chunks, so it is a flat array of chunks, cut into units of 1024
// chunks (32 KB of bf16), one chunk per thread; unit u belongs to CTA u % grid, so at every step
// the grid sweeps one contiguous window of x, as a grid-stride loop does.
//  1. A CTA loads its units in order and reduces their amax; its first `held_units` units (192 KB)
//     are also stored to shared memory (from registers: cp.async and bulk TMA copies into shared
//     memory measured 2x slower here, perf-notes). The CTA's amax goes into the zeroed
//     tensor-scale slot with atomicMax (the bits of a non-negative float, as amax_kernel).
//  2. grid.sync(); every CTA reads the tensor amax.
//  3. A CTA encodes its other units backwards (the ones it read last first: the likeliest to be
//     still in L2), then the held units from shared memory.
// Bytes from DRAM: x + (x - shared memory share - L2 hits) + codes, instead of 2 x + codes.
// Scales and codes come from the same helpers as quantize_groups_kernel (kernels.cuh), so the
// output is bit-identical to it and to the CPU reference.
#include <cooperative_groups.h>

#include <atomic>
#include <type_traits>

#include "core/validate.hpp"
#include "quant/kernels.cuh"

namespace deepwell::quant {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 1024;
constexpr int kUnit = kThreads;   // chunks per unit
constexpr int kAmaxUnroll = 4;    // units per thread in flight in the amax pass
constexpr int kEncodeUnroll = 2;  // units per thread in flight in the encoding pass

struct OnePassParams {
  const void* x;          // contiguous, 16-byte aligned, rows a multiple of 16 elements
  int32_t chunks;         // 16-element chunks of x (< 2^31 - 2^20: the index arithmetic is 32-bit)
  int32_t units;          // ceil(chunks / kUnit)
  int32_t held_units;     // units per CTA staged in shared memory
  int32_t keep_units;     // the last keep_units unheld units of a CTA load evict-normal in the
                          // amax pass (the encoder reads them first), earlier ones evict-first
  uint8_t* data;          // (rows, cols) codes
  uint8_t* scales;        // kNvfp4: the block scales
  uint32_t* amax;         // the zeroed tensor-scale slot: the reduced amax bits
  int64_t C;              // kNvfp4: scale columns (= chunks) per row
  FastDiv chunks_per_row;
  bool pow2, swizzle;
};

// A chunk's two 16-byte halves as RowChunk words (16-bit inputs: 8 words).
template <class In>
__device__ __forceinline__ void to_row_chunk(const uint4& a, const uint4& b, RowChunk<In>& c) {
  c.w[0] = a.x, c.w[1] = a.y, c.w[2] = a.z, c.w[3] = a.w;
  c.w[4] = b.x, c.w[5] = b.y, c.w[6] = b.z, c.w[7] = b.w;
}

// Block-wide (kThreads) max; every thread gets the result.
__device__ __forceinline__ uint32_t block_max(uint32_t v, uint32_t* partial) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  v = partial[threadIdx.x & 31];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The scale of one chunk (its own block scale for kNvfp4, written out) and its codes.
template <class In, Elem E, QuantFormat F>
__device__ __forceinline__ void encode_store(const OnePassParams& p, int32_t c,
                                             const RowChunk<In>& x, float s, const Fp32Divider& by6,
                                             const Fp32Divider& by_st) {
  ChunkScale cs{ChunkScale::kFp32, s, 0};
  if constexpr (F == QuantFormat::kNvfp4) {
    cs = {ChunkScale::kNvfp4, s, nvfp4_block_scale_hoisted(x.amax(), s, by6, by_st)};
    const uint32_t r = p.chunks_per_row.div(static_cast<uint32_t>(c));
    const int64_t g = c - int64_t{r} * p.C;
    p.scales[group_scale_offset(p.swizzle, p.C, r, g)] = cs.sb;
  }
  uint32_t w[4];
  encode_row_chunk<In, E>(x, cs, w);
  store_chunk<E>(p.data, int64_t{c} * kChunk, kChunk, w);
}

// One CTA per SM (1024 threads, <= 64 registers); launched cooperatively (grid.sync()).
template <class In, Elem E, QuantFormat F>
__global__ void __launch_bounds__(kThreads, 1) quantize_onepass_kernel(const OnePassParams p) {
  static_assert(sizeof(In) == 2, "16-bit inputs: a chunk is two 16-byte vectors");
  static_assert(F == QuantFormat::kFp8Tensor || F == QuantFormat::kNvfp4, "per-tensor amax formats");
  // Held unit k, half h of the chunk of thread t: held_smem[(2 k + h) * kUnit + t] (a warp's
  // 16-byte accesses are contiguous: no bank conflicts).
  extern __shared__ __align__(128) uint4 held_smem[];
  __shared__ uint32_t partial[kThreads / 32];

  const int tid = static_cast<int>(threadIdx.x);
  const int32_t grid = static_cast<int32_t>(gridDim.x), cta = static_cast<int32_t>(blockIdx.x);
  const int32_t my_units = cta < p.units ? (p.units - 1 - cta) / grid + 1 : 0;
  const int32_t held = min(p.held_units, my_units);
  const uint4* x = static_cast<const uint4*>(p.x);  // chunk c: x[2 c], x[2 c + 1]
  auto chunk_of = [&](int32_t k) { return (cta + k * grid) * kUnit + tid; };  // of unit k

  // 1. The amax of every unit; the held ones stored to shared memory on the way. Packed 16-bit
  //    maxima of |x| (their bits order like the values).
  const uint64_t evict_first = l2_policy(true), evict_normal = l2_policy(false);
  const int32_t keep_from = max(held, my_units - p.keep_units);
  uint32_t m = 0;
  for (int32_t k0 = 0; k0 < my_units; k0 += kAmaxUnroll) {
    uint4 u[kAmaxUnroll][2];
#pragma unroll
    for (int j = 0; j < kAmaxUnroll; ++j) {
      const int32_t k = k0 + j, c = chunk_of(k);
      if (k < my_units && c < p.chunks) {
        const uint64_t policy = k >= keep_from ? evict_normal : evict_first;
        u[j][0] = ldg16(x + 2 * c, policy);
        u[j][1] = ldg16(x + 2 * c + 1, policy);
      } else {
        u[j][0] = u[j][1] = make_uint4(0, 0, 0, 0);  // zeros change no amax
      }
    }
#pragma unroll
    for (int j = 0; j < kAmaxUnroll; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t w[4] = {u[j][h].x, u[j][h].y, u[j][h].z, u[j][h].w};
        m = __vmaxu2(m, pair_abs_max(w));
        if (k0 + j < held) held_smem[(2 * (k0 + j) + h) * kUnit + tid] = u[j][h];
      }
    }
  }
  m = block_max(abs16_to_f32_bits<In>(max(m & 0xffffu, m >> 16)), partial);
  if (tid == 0 && m != 0) atomicMax(p.amax, m);

  // 2. Every CTA's amax is in the slot after the grid-wide barrier (it orders memory too).
  cg::this_grid().sync();
  const uint32_t amax = __ldcg(p.amax) & 0x7fffffffu;
  const float s = F == QuantFormat::kNvfp4 ? nvfp4_tensor_scale(amax)
                                           : fp32_scale(amax, elem_info(E), p.pow2);
  const Fp32Divider by6(6.0f), by_st(s);  // kNvfp4's block-scale divisions, hoisted

  // 3. The unheld units backwards, then the held ones (each thread's own chunks: the shared
  //    memory it reads is what it wrote). f16 NVFP4 takes one unit at a time: with two it spills
  //    8 bytes at 64 registers (ptxas, CUDA 13.0).
  constexpr int kUnroll = F == QuantFormat::kNvfp4 && std::is_same_v<In, __half> ? 1 : kEncodeUnroll;
  for (int32_t k0 = my_units - 1; k0 >= held; k0 -= kUnroll) {
    RowChunk<In> c[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const int32_t k = k0 - j, ck = chunk_of(k);
      if (k >= held && ck < p.chunks) {
        to_row_chunk(ldg16(x + 2 * ck, evict_first), ldg16(x + 2 * ck + 1, evict_first), c[j]);
      }
    }
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const int32_t k = k0 - j, ck = chunk_of(k);
      if (k >= held && ck < p.chunks) encode_store<In, E, F>(p, ck, c[j], s, by6, by_st);
    }
  }
  for (int32_t k = 0; k < held; ++k) {
    const int32_t ck = chunk_of(k);
    if (ck >= p.chunks) continue;
    RowChunk<In> c;
    to_row_chunk(held_smem[2 * k * kUnit + tid], held_smem[(2 * k + 1) * kUnit + tid], c);
    encode_store<In, E, F>(p, ck, c, s, by6, by_st);
  }
}

// Whether the instance can run with held_cap_bytes of shared memory on `device`: the shared
// memory attribute set and the occupancy asked once per device, not per call (as the attention
// launcher does; both calls cost host time on every quantize otherwise).
template <class In, Elem E, QuantFormat F>
Status resident(int device, size_t held_cap_bytes, bool* fits) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices] = {};  // 0: not asked yet, 1: fits, -1: does not
  int v = device >= 0 && device < kMaxDevices ? cache[device].load(std::memory_order_acquire) : 0;
  if (v == 0) {
    auto* kernel = quantize_onepass_kernel<In, E, F>;
    DW_CUDA_TRY("quantize", cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(held_cap_bytes)));
    int per_sm = 0;
    DW_CUDA_TRY("quantize", cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads,
                                                                          held_cap_bytes));
    v = per_sm >= 1 ? 1 : -1;
    if (device >= 0 && device < kMaxDevices) cache[device].store(v, std::memory_order_release);
  }
  *fits = v == 1;
  return Status::Ok();
}

template <class In, Elem E, QuantFormat F>
Status launch(const OnePassParams& base, const detail::DeviceInfo& dev, int device,
              size_t held_cap_bytes, cudaStream_t stream, bool* launched) {
  bool fits = false;
  DW_TRY((resident<In, E, F>(device, held_cap_bytes, &fits)));
  if (!fits) return Status::Ok();  // not launched: the two-pass path runs instead
  DW_CUDA_TRY("quantize", cudaMemsetAsync(base.amax, 0, sizeof(uint32_t), stream));
  auto* kernel = quantize_onepass_kernel<In, E, F>;
  OnePassParams p = base;
  // At most one CTA per SM (what the held units are sized for), each with at least one unit.
  const int32_t grid = std::min<int32_t>(dev.sm_count, p.units);
  constexpr int64_t kUnitBytes = int64_t{kUnit} * kChunk * static_cast<int64_t>(sizeof(In));
  const int64_t units_per_cta = (p.units + grid - 1) / grid;
  p.held_units = static_cast<int32_t>(
      std::min<int64_t>(units_per_cta, static_cast<int64_t>(held_cap_bytes) / kUnitBytes));
  // The last half-L2 share of the unheld units evict-normal, as the two-pass path keeps.
  p.keep_units = static_cast<int32_t>(l2_keep_bytes(dev) / grid / kUnitBytes);
  const size_t smem = static_cast<size_t>(p.held_units * kUnitBytes);
  void* args[] = {&p};
  const cudaError_t err = cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel),
                                                      dim3(static_cast<unsigned>(grid)),
                                                      dim3(kThreads), args, smem, stream);
  if (err == cudaErrorCooperativeLaunchTooLarge) {  // fewer SMs than queried (e.g. MPS limits)
    (void)cudaGetLastError();
    return Status::Ok();
  }
  DW_CUDA_TRY("quantize", err);
  *launched = true;
  return Status::Ok();
}

template <class In>
Status launch_for_input(const Problem& p, const OnePassParams& base, const detail::DeviceInfo& dev,
                        size_t cap, cudaStream_t stream, bool* launched) {
  const int device = p.device.index;
  if (p.format == QuantFormat::kNvfp4) {
    return launch<In, Elem::kE2M1, QuantFormat::kNvfp4>(base, dev, device, cap, stream, launched);
  }
  return p.elem == Elem::kE5M2
             ? launch<In, Elem::kE5M2, QuantFormat::kFp8Tensor>(base, dev, device, cap, stream, launched)
             : launch<In, Elem::kE4M3, QuantFormat::kFp8Tensor>(base, dev, device, cap, stream, launched);
}

// Calls the kernel takes: a reduced per-tensor amax along rows of 16-bit, 16-byte aligned x whose
// rows are whole chunks, with 32-bit chunk indices.
bool eligible(const Problem& p, const detail::DeviceInfo& dev) {
  const Matrix& x = p.main.x;
  const bool tensor_amax = p.format == QuantFormat::kFp8Tensor || p.format == QuantFormat::kNvfp4;
  const int64_t n = x.rows * x.cols;
  return tensor_amax && p.given_amax == nullptr && !p.has_transposed &&
         (x.dtype == DType::kBF16 || x.dtype == DType::kF16) && n > 0 && x.cols % kChunk == 0 &&
         n / kChunk < (int64_t{1} << 31) - (int64_t{1} << 20) &&
         (reinterpret_cast<uintptr_t>(x.data) & 15u) == 0 && dev.smem_per_block_optin >= 64 * 1024;
}

}  // namespace

Status launch_onepass(const Problem& p, uint32_t* amax_slot, const detail::DeviceInfo& dev,
                      cudaStream_t stream, bool* launched) {
  *launched = false;
  if (!eligible(p, dev)) return Status::Ok();
  OnePassParams base{};
  const Matrix& x = p.main.x;
  base.x = x.data;
  base.chunks = static_cast<int32_t>(x.rows * x.cols / kChunk);
  base.units = (base.chunks + kUnit - 1) / kUnit;
  base.data = p.main.data;
  base.scales = static_cast<uint8_t*>(p.main.scales);
  base.amax = amax_slot;
  base.C = x.cols / kChunk;
  base.chunks_per_row = FastDiv(base.C);
  base.pow2 = p.pow2;
  base.swizzle = p.swizzle;
  // Shared memory for the held units: 192 KB (six units), not all 227 KB a CTA may opt in to: the
  //  L1 that is left keeps the other units' loads in flight (H100, bf16, graph time: 192 KB
  //  against 224 KB 0-3 % faster on 7 of 8 cells, 96 KB 2-8 % slower; perf-notes).
  const size_t cap = std::min<size_t>(192 * 1024, (dev.smem_per_block_optin - 2048) / 1024 * 1024);
  if (x.dtype == DType::kF16) return launch_for_input<__half>(p, base, dev, cap, stream, launched);
  return launch_for_input<__nv_bfloat16>(p, base, dev, cap, stream, launched);
}

}  // namespace deepwell::quant
