// The split-KV combine kernel (fwd_combine.hpp): one warp per (row, head), at most 32 splits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "attention/fwd_combine.hpp"
#include "core/cuda_utils.hpp"

namespace deepwell::attention {
namespace {

struct CombineParams {
  const void* o_part;
  const float* lse_part;
  int splits, batches, rows, heads, head_dim;
  // O_part / LSE_part strides (elements)
  int64_t po_split, po_batch, po_row;  // head: head_dim
  int64_t pl_split, pl_batch, pl_head;  // row: 1
  void* out;
  int64_t o_batch, o_row, o_head;
  float* lse;  // optional
  int64_t l_batch, l_head, l_row;
  const int32_t* cu_seqlens_q;  // varlen: rows past cu_seqlens_q[num_seqs] are not computed
  int num_seqs;
};

template <class T>
__device__ __forceinline__ float2 to_float2(uint32_t bits) {
  if constexpr (sizeof(T) == 2 && std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
  } else {
    return __half22float2(*reinterpret_cast<const __half2*>(&bits));
  }
}
template <class T>
__device__ __forceinline__ uint32_t from_float2(float a, float b) {
  uint32_t bits;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    bits = *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(a, b);
    bits = *reinterpret_cast<const uint32_t*>(&v);
  }
  return bits;
}

constexpr int kWarpsPerBlock = 4;

// The combine runs as a programmatic dependent of the attention kernel (PDL): the attention kernel
// lets it launch as soon as it starts (griddepcontrol.launch_dependents, with split-KV only), so
// its launch overlaps that kernel's run instead of following its end, and each combine thread
// waits in griddepcontrol.wait until the attention kernel has completed and its writes are
// visible. (H100, CUDA-graph time, plain launch -> PDL: packed GQA 1 x 2k keys 9.8 -> 9.4 us, MQA
// 32k 16.5 -> 16.0; 17 other decoding shapes within -2 / +1 %.)
__device__ __forceinline__ void wait_for_attention() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

template <class Params>
cudaError_t launch_dependent(void (*kernel)(Params), unsigned blocks, unsigned threads,
                             cudaStream_t stream, const Params& params) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, params);
}

// Warp w of the grid merges (batch, row, head) number w (head fastest). Its lanes form 32 /
// kChunks groups of kChunks lanes (kChunks: d / 8 rounded up to a power of two, at least 8):
// lane c of group g sums the 16-byte column chunk c (8 elements) of the splits g, g + groups,
// ..., whose weights lane s computed (splits <= 32), and the groups' sums meet by shuffles. A
// decoding call has few rows and up to 32 splits, so the splits' loads are spread over the lanes
// rather than walked one after the other (which measured 8.7 us for 24 splits at d = 64 on an
// H200; cuDNN's reduction takes 2), and a lane issues all its loads, the LSE's and the partial
// O's, before it waits on any: every unit wrote its O rows (an empty range zeros), so nothing
// depends on the weights but the sums.
template <class T, int kChunks>
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    combine_kernel(const CombineParams p) {
  static_assert(kChunks >= 8 && kChunks <= 32 && 32 % kChunks == 0);
  constexpr int kGroups = 32 / kChunks;
  constexpr int kPerLane = kMaxCombineSplits / kGroups;  // splits one lane reads
  const int lane = threadIdx.x % 32;
  const int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int64_t per_batch = int64_t(p.rows) * p.heads;
  if (item >= per_batch * p.batches) return;
  wait_for_attention();
  const int batch = static_cast<int>(item / per_batch);
  const int row = static_cast<int>(item % per_batch / p.heads);
  const int head = static_cast<int>(item % p.heads);
  if (p.cu_seqlens_q != nullptr) {
    const int end = min(max(__ldg(p.cu_seqlens_q + p.num_seqs), 0), p.rows);
    if (row >= end) return;  // not in any sequence: the attention kernel wrote nothing there
  }

  const int used = p.head_dim / 8;  // 16-byte chunks of a row
  const int chunk = lane % kChunks, group = lane / kChunks;
  const T* o_s = static_cast<const T*>(p.o_part) + batch * p.po_batch + row * p.po_row +
                 int64_t(head) * p.head_dim + 8 * chunk;
  uint4 part[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int s = group + i * kGroups;
    part[i] = s < p.splits && chunk < used
                  ? __ldg(reinterpret_cast<const uint4*>(o_s + s * p.po_split))
                  : make_uint4(0, 0, 0, 0);
  }

  // lse = log sum_s exp(lse_s); lane s < splits keeps its split's weight exp(lse_s - lse).
  const float* lse_s = p.lse_part + batch * p.pl_batch + head * p.pl_head + row;
  const float mine = lane < p.splits ? __ldg(lse_s + lane * p.pl_split) : -INFINITY;
  float m = mine;
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float lse = -INFINITY, weight = 0.f;
  if (m != -INFINITY) {
    float sum = mine == -INFINITY ? 0.f : expf(mine - m);
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    lse = m + logf(sum);
    weight = mine == -INFINITY ? 0.f : expf(mine - lse);
  }

  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int s = group + i * kGroups;
    const float w = __shfl_sync(0xffffffffu, weight, s);
    if (s < p.splits && chunk < used && w > 0.f) {  // 0: an empty range, or no key at all
      const uint32_t words[4] = {part[i].x, part[i].y, part[i].z, part[i].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = to_float2<T>(words[j]);
        acc[2 * j] = fmaf(w, f.x, acc[2 * j]);
        acc[2 * j + 1] = fmaf(w, f.y, acc[2 * j + 1]);
      }
    }
  }
  for (int o = kChunks; o < 32; o *= 2) {
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], o);
  }
  if (group == 0 && chunk < used) {
    T* out = static_cast<T*>(p.out) + batch * p.o_batch + row * p.o_row + head * p.o_head +
             8 * chunk;
    uint4 v;
    v.x = from_float2<T>(acc[0], acc[1]);
    v.y = from_float2<T>(acc[2], acc[3]);
    v.z = from_float2<T>(acc[4], acc[5]);
    v.w = from_float2<T>(acc[6], acc[7]);
    *reinterpret_cast<uint4*>(out) = v;
  }
  if (p.lse != nullptr && lane == 0) {
    p.lse[batch * p.l_batch + head * p.l_head + row * p.l_row] = lse;
  }
}

}  // namespace

Status combine_splits(const Problem& p, const SplitPlan& plan, void* stream) {
  const SplitLayout& s = plan.layout;
  CombineParams c{};
  c.o_part = plan.o_part;
  c.lse_part = plan.lse_part;
  c.splits = plan.splits;
  c.batches = static_cast<int>(s.batches);
  c.rows = static_cast<int>(s.rows);
  c.heads = static_cast<int>(p.heads_q);
  c.head_dim = static_cast<int>(p.head_dim);
  c.po_row = s.o_row;
  c.po_batch = s.o_batch;
  c.po_split = s.o_split;
  c.pl_head = s.l_head;
  c.pl_batch = s.l_batch;
  c.pl_split = s.l_split;
  c.out = p.out;
  c.o_batch = p.o_stride.batch;
  c.o_row = p.o_stride.row;
  c.o_head = p.o_stride.head;
  c.lse = p.lse;
  c.l_batch = p.lse_batch_stride;
  c.l_head = p.lse_head_stride;
  c.l_row = p.lse_row_stride;
  c.cu_seqlens_q = p.varlen ? p.cu_seqlens_q : nullptr;
  c.num_seqs = static_cast<int>(p.batch);
  const int64_t items = s.batches * s.rows * p.heads_q;
  if (items == 0) return Status::Ok();
  if (plan.splits < 1 || plan.splits > kMaxCombineSplits) {
    return Status(StatusCode::kInternal, "attention_forward: split-KV with " +
                                             std::to_string(plan.splits) + " ranges (at most " +
                                             std::to_string(kMaxCombineSplits) + ")");
  }
  const int64_t blocks = (items + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 0x7fffffff) {
    return Status(StatusCode::kNotSupported, "attention_forward: too many rows for split-KV");
  }
  auto st = static_cast<cudaStream_t>(stream);
  const bool bf16 = p.dtype == DType::kBF16;
  const int chunks = p.head_dim <= 64 ? 8 : p.head_dim <= 128 ? 16 : 32;
  auto kernel = chunks == 8    ? (bf16 ? combine_kernel<__nv_bfloat16, 8> : combine_kernel<__half, 8>)
                : chunks == 16 ? (bf16 ? combine_kernel<__nv_bfloat16, 16> : combine_kernel<__half, 16>)
                               : (bf16 ? combine_kernel<__nv_bfloat16, 32> : combine_kernel<__half, 32>);
  const cudaError_t e = launch_dependent(kernel, static_cast<unsigned>(blocks), 32 * kWarpsPerBlock,
                                         st, c);
  (void)cudaGetLastError();  // e is this launch's error; leave none behind for the next call
  return detail::cuda_status(e, "attention_forward (split-KV combine)", "kernel launch");
}

}  // namespace deepwell::attention
