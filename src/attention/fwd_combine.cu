// The split-KV combine kernel (fwd_combine.hpp): one warp per (row, head).
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

constexpr int kWarpsPerBlock = 8;

// Warp w of the grid handles (batch, row, head) number w (head fastest); lane l the 8 columns
// [8l, 8l + 8) of head_dim (<= 256, a multiple of 8: 16-byte loads and stores).
template <class T>
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    combine_kernel(const CombineParams p) {
  const int lane = threadIdx.x % 32;
  const int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int64_t per_batch = int64_t(p.rows) * p.heads;
  if (item >= per_batch * p.batches) return;
  const int batch = static_cast<int>(item / per_batch);
  const int row = static_cast<int>(item % per_batch / p.heads);
  const int head = static_cast<int>(item % p.heads);
  if (p.cu_seqlens_q != nullptr) {
    const int end = min(max(__ldg(p.cu_seqlens_q + p.num_seqs), 0), p.rows);
    if (row >= end) return;  // not in any sequence: the attention kernel wrote nothing there
  }

  // lse = log sum exp(lse_s), over the splits in lanes (and rounds of 32)
  const float* lse_s = p.lse_part + batch * p.pl_batch + head * p.pl_head + row;
  float m = -INFINITY;
  for (int s = lane; s < p.splits; s += 32) m = fmaxf(m, __ldg(lse_s + s * p.pl_split));
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float lse = -INFINITY;
  if (m != -INFINITY) {
    float sum = 0.f;
    for (int s = lane; s < p.splits; s += 32) sum += expf(__ldg(lse_s + s * p.pl_split) - m);
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    lse = m + logf(sum);
  }

  float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  const int col = 8 * lane;
  const bool active = col < p.head_dim;
  if (lse != -INFINITY) {
    const T* o_s = static_cast<const T*>(p.o_part) + batch * p.po_batch + row * p.po_row +
                   int64_t(head) * p.head_dim + col;
    for (int s = 0; s < p.splits; ++s) {
      const float w = expf(__ldg(lse_s + s * p.pl_split) - lse);  // 0 for an empty range
      if (active && w > 0.f) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(o_s + s * p.po_split));
        const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float2 f = to_float2<T>(words[j]);
          acc[2 * j] = fmaf(w, f.x, acc[2 * j]);
          acc[2 * j + 1] = fmaf(w, f.y, acc[2 * j + 1]);
        }
      }
    }
  }
  if (active) {
    T* out = static_cast<T*>(p.out) + batch * p.o_batch + row * p.o_row + head * p.o_head + col;
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

struct PartShape {
  int64_t batches, rows;
};
PartShape part_shape(const Problem& p) {
  return p.varlen ? PartShape{1, p.total_q} : PartShape{p.batch, p.seqlen_q};
}

}  // namespace

size_t split_workspace_bytes(const Problem& p, int splits) {
  const PartShape s = part_shape(p);
  const size_t rows = size_t(splits) * s.batches * s.rows * p.heads_q;
  const size_t o_bytes = (rows * p.head_dim * 2 + 255) / 256 * 256;  // 16-bit outputs only
  return o_bytes + rows * sizeof(float);
}

SplitPlan split_plan_in(const Problem& p, int splits, void* workspace) {
  const PartShape s = part_shape(p);
  const size_t rows = size_t(splits) * s.batches * s.rows * p.heads_q;
  const size_t o_bytes = (rows * p.head_dim * 2 + 255) / 256 * 256;
  return {splits, workspace, reinterpret_cast<float*>(static_cast<char*>(workspace) + o_bytes)};
}

Status combine_splits(const Problem& p, const SplitPlan& plan, void* stream) {
  const PartShape s = part_shape(p);
  CombineParams c{};
  c.o_part = plan.o_part;
  c.lse_part = plan.lse_part;
  c.splits = plan.splits;
  c.batches = static_cast<int>(s.batches);
  c.rows = static_cast<int>(s.rows);
  c.heads = static_cast<int>(p.heads_q);
  c.head_dim = static_cast<int>(p.head_dim);
  c.po_row = p.heads_q * p.head_dim;
  c.po_batch = s.rows * c.po_row;
  c.po_split = s.batches * c.po_batch;
  c.pl_head = s.rows;
  c.pl_batch = p.heads_q * s.rows;
  c.pl_split = s.batches * c.pl_batch;
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
  const int64_t blocks = (items + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 0x7fffffff) {
    return Status(StatusCode::kNotSupported, "attention_forward: too many rows for split-KV");
  }
  auto st = static_cast<cudaStream_t>(stream);
  if (p.dtype == DType::kBF16) {
    combine_kernel<__nv_bfloat16><<<static_cast<unsigned>(blocks), 32 * kWarpsPerBlock, 0, st>>>(c);
  } else {
    combine_kernel<__half><<<static_cast<unsigned>(blocks), 32 * kWarpsPerBlock, 0, st>>>(c);
  }
  return detail::last_launch_status("attention_forward (split-KV combine)");
}

}  // namespace deepwell::attention
