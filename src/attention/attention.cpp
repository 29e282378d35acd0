// Public attention entry points: argument validation, normalization into a Problem, dispatch to the
// CPU reference or the CUDA kernels.
#include <cmath>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "attention/problem.hpp"
#include "core/validate.hpp"

namespace deepwell {
namespace {

using detail::arg_error;
using detail::shape_string;

constexpr std::string_view kFwd = "attention_forward";
constexpr std::string_view kBwd = "attention_backward";

// Largest head dimension the CUDA kernels handle (padded up to 64, 128 or 256 internally).
constexpr int64_t kMaxCudaHeadDim = 256;

attention::RowStrides row_strides(const TensorView& t, bool varlen) {
  if (varlen) return {0, t.strides[0], t.strides[1], t.strides[2]};
  return {t.strides[0], t.strides[1], t.strides[2], t.strides[3]};
}

Status check_disjoint(std::string_view op, std::string_view name, const TensorView& t,
                      std::string_view other_name, const TensorView& other) {
  if (!detail::overlaps(t, other)) return Status::Ok();
  return arg_error(op, name, "memory that does not overlap '" + std::string(other_name) + "'",
                   "overlapping ranges");
}

// Checks cu_seqlens on the host: starts at 0, non-decreasing, ends within `total`, and returns the
// largest length.
Status check_cu_seqlens_host(std::string_view op, std::string_view name, const TensorView& cu,
                             int64_t total, int64_t* max_len) {
  const int32_t* c = static_cast<const int32_t*>(cu.data);
  int64_t n = cu.shape[0];
  int64_t stride = cu.strides[0];
  *max_len = 0;
  if (c[0] != 0) {
    return arg_error(op, name, "a first entry of 0", std::to_string(c[0]));
  }
  for (int64_t i = 1; i < n; ++i) {
    int64_t prev = c[(i - 1) * stride], cur = c[i * stride];
    if (cur < prev) {
      return arg_error(op, name, "non-decreasing offsets",
                       std::to_string(cur) + " after " + std::to_string(prev) + " at index " +
                           std::to_string(i));
    }
    *max_len = std::max(*max_len, cur - prev);
  }
  if (c[(n - 1) * stride] > total) {
    return arg_error(op, name,
                     "a last entry of at most " + std::to_string(total) +
                         " (the rows of the packed tensor)",
                     std::to_string(c[(n - 1) * stride]));
  }
  return Status::Ok();
}

struct CommonArgs {
  const TensorView* q;
  const TensorView* k;
  const TensorView* v;
  const TensorView* cu_q;
  const TensorView* cu_k;
  int64_t max_q, max_k;
  const TensorView* bias;
  float scale;
  AttentionMask mask;
};

// Validates q, k, v, the varlen description, the bias and the mask; fills the shared Problem fields.
Status build_problem(std::string_view op, const CommonArgs& a, attention::Problem* p) {
  const TensorView &q = *a.q, &k = *a.k, &v = *a.v;
  DW_TRY(detail::check_view(op, "q", q));
  DW_TRY(detail::check_view(op, "k", k));
  DW_TRY(detail::check_view(op, "v", v));
  const bool varlen = a.cu_q != nullptr;
  if ((a.cu_q == nullptr) != (a.cu_k == nullptr)) {
    return arg_error(op, a.cu_q ? "cu_seqlens_k" : "cu_seqlens_q",
                     "cu_seqlens_q and cu_seqlens_k to be given together",
                     "only one of them");
  }
  if (varlen) {
    if (q.ndim != 3) {
      return arg_error(op, "q", "a 3-D tensor (total_q, Hq, D) when cu_seqlens_q is given",
                       std::to_string(q.ndim) + "-D tensor " + q.describe());
    }
  } else if (q.ndim != 4) {
    return arg_error(op, "q",
                     "a 4-D tensor (B, Sq, Hq, D), or 3-D (total_q, Hq, D) with cu_seqlens_q",
                     std::to_string(q.ndim) + "-D tensor " + q.describe());
  }
  DW_TRY(detail::check_rank(op, "k", k, {q.ndim}));
  DW_TRY(detail::check_rank(op, "v", v, {q.ndim}));

  const bool cuda = q.device.type == DeviceType::kCUDA;
  if (cuda) {
    DW_TRY(detail::check_dtype(op, "q", q, {DType::kBF16, DType::kF16}));
  } else {
    DW_TRY(detail::check_dtype(op, "q", q, {DType::kF32, DType::kBF16, DType::kF16}));
  }
  DW_TRY(detail::check_same_dtype(op, "k", k, "q", q));
  DW_TRY(detail::check_same_dtype(op, "v", v, "q", q));
  DW_TRY(detail::check_device(op, "k", k, "q", q.device));
  DW_TRY(detail::check_device(op, "v", v, "q", q.device));

  const int hd = q.ndim - 1, hh = q.ndim - 2;  // head-dim and head axes
  const int64_t D = q.shape[hd];
  if (D <= 0) return arg_error(op, "q", "a head dimension of at least 1", shape_string(q));
  DW_TRY(detail::check_dim(op, "k", k, hd, D, "head_dim, as in q"));
  DW_TRY(detail::check_dim(op, "v", v, hd, D, "head_dim, as in q"));
  for (int i = 0; i < q.ndim - 2; ++i) {  // v matches k in batch and sequence
    DW_TRY(detail::check_dim(op, "v", v, i, k.shape[i], i == 0 && !varlen ? "batch, as in k"
                                                                           : "sequence, as in k"));
  }
  const int64_t Hq = q.shape[hh], Hkv = k.shape[hh];
  if (Hkv == 0 || Hq % Hkv != 0) {
    return arg_error(op, "k",
                     "a head count that divides the " + std::to_string(Hq) +
                         " query heads (GQA/MQA)",
                     std::to_string(Hkv) + " heads in " + shape_string(k));
  }
  DW_TRY(detail::check_dim(op, "v", v, hh, Hkv, "heads, as in k"));

  if (cuda) {
    if (D > kMaxCudaHeadDim || D % 8 != 0) {
      return arg_error(op, "q",
                       "a head dimension that is a multiple of 8 and at most 256 on CUDA",
                       std::to_string(D), StatusCode::kNotSupported);
    }
    for (auto [name, t] : {std::pair{"q", &q}, {"k", &k}, {"v", &v}}) {
      DW_TRY(detail::check_last_dim_contiguous(op, name, *t));
      DW_TRY(detail::check_alignment(op, name, *t, 16));
    }
  }

  p->dtype = q.dtype;
  p->device = q.device;
  p->heads_q = Hq;
  p->heads_kv = Hkv;
  p->head_dim = D;
  p->varlen = varlen;
  p->q = q.data;
  p->k = k.data;
  p->v = v.data;
  p->q_stride = row_strides(q, varlen);
  p->k_stride = row_strides(k, varlen);
  p->v_stride = row_strides(v, varlen);

  if (varlen) {
    const TensorView &cq = *a.cu_q, &ck = *a.cu_k;
    DW_TRY(detail::check_view(op, "cu_seqlens_q", cq));
    DW_TRY(detail::check_view(op, "cu_seqlens_k", ck));
    DW_TRY(detail::check_rank(op, "cu_seqlens_q", cq, {1}));
    DW_TRY(detail::check_rank(op, "cu_seqlens_k", ck, {1}));
    DW_TRY(detail::check_dtype(op, "cu_seqlens_q", cq, {DType::kI32}));
    DW_TRY(detail::check_dtype(op, "cu_seqlens_k", ck, {DType::kI32}));
    DW_TRY(detail::check_device(op, "cu_seqlens_q", cq, "q", q.device));
    DW_TRY(detail::check_device(op, "cu_seqlens_k", ck, "q", q.device));
    if (cq.shape[0] < 1) {
      return arg_error(op, "cu_seqlens_q", "at least 1 entry (batch + 1)", shape_string(cq));
    }
    DW_TRY(detail::check_dim(op, "cu_seqlens_k", ck, 0, cq.shape[0],
                             "batch + 1, as in cu_seqlens_q"));
    DW_TRY(detail::check_contiguous(op, "cu_seqlens_q", cq));
    DW_TRY(detail::check_contiguous(op, "cu_seqlens_k", ck));
    p->batch = cq.shape[0] - 1;
    p->total_q = q.shape[0];
    p->total_k = k.shape[0];
    p->cu_seqlens_q = static_cast<const int32_t*>(cq.data);
    p->cu_seqlens_k = static_cast<const int32_t*>(ck.data);
    if (cuda) {
      // Lengths live on the GPU: reading them would need a synchronization. The kernels clamp
      // every offset to the packed tensors, so a wrong bound can give wrong rows but never an
      // out-of-bounds access.
      if (a.max_q < 0) {
        return arg_error(op, "max_seqlen_q", "a non-negative bound when cu_seqlens are on CUDA",
                         std::to_string(a.max_q));
      }
      if (a.max_k < 0) {
        return arg_error(op, "max_seqlen_k", "a non-negative bound when cu_seqlens are on CUDA",
                         std::to_string(a.max_k));
      }
      p->seqlen_q = a.max_q;
      p->seqlen_k = a.max_k;
    } else {
      int64_t mq = 0, mk = 0;
      DW_TRY(check_cu_seqlens_host(op, "cu_seqlens_q", cq, p->total_q, &mq));
      DW_TRY(check_cu_seqlens_host(op, "cu_seqlens_k", ck, p->total_k, &mk));
      if (a.max_q >= 0 && a.max_q < mq) {
        return arg_error(op, "max_seqlen_q", "at least the longest q sequence (" +
                         std::to_string(mq) + ")", std::to_string(a.max_q));
      }
      if (a.max_k >= 0 && a.max_k < mk) {
        return arg_error(op, "max_seqlen_k", "at least the longest k sequence (" +
                         std::to_string(mk) + ")", std::to_string(a.max_k));
      }
      p->seqlen_q = mq;
      p->seqlen_k = mk;
    }
  } else {
    DW_TRY(detail::check_dim(op, "k", k, 0, q.shape[0], "batch, as in q"));
    p->batch = q.shape[0];
    p->seqlen_q = q.shape[1];
    p->seqlen_k = k.shape[1];
    p->total_q = p->batch * p->seqlen_q;
    p->total_k = p->batch * p->seqlen_k;
  }

  if (a.bias != nullptr) {
    const TensorView& b = *a.bias;
    DW_TRY(detail::check_view(op, "bias", b));
    if (cuda) {
      return arg_error(op, "bias", "no bias on CUDA (supported by the CPU backend only)",
                       "a bias tensor", StatusCode::kNotSupported);
    }
    if (varlen) {
      return arg_error(op, "bias", "no bias with variable-length batches", "a bias tensor",
                       StatusCode::kNotSupported);
    }
    DW_TRY(detail::check_rank(op, "bias", b, {4}));
    DW_TRY(detail::check_dtype(op, "bias", b, {DType::kF32, DType::kBF16, DType::kF16}));
    DW_TRY(detail::check_device(op, "bias", b, "q", q.device));
    const int64_t want[4] = {p->batch, Hq, p->seqlen_q, p->seqlen_k};
    const char* what[4] = {"batch or 1", "query heads or 1", "Sq", "Sk"};
    for (int i = 0; i < 4; ++i) {
      bool ok = b.shape[i] == want[i] || (i < 2 && b.shape[i] == 1);
      if (!ok) {
        return arg_error(op, "bias",
                         "shape (B|1, Hq|1, Sq, Sk) = (" + std::to_string(want[0]) + "|1, " +
                             std::to_string(want[1]) + "|1, " + std::to_string(want[2]) + ", " +
                             std::to_string(want[3]) + "); dimension " + std::to_string(i) +
                             " is " + what[i],
                         shape_string(b));
      }
    }
    p->bias = a.bias;
  }

  if (std::isnan(a.scale) || a.scale <= 0.0f) {
    p->scale = 1.0f / std::sqrt(static_cast<float>(D));
  } else if (!std::isfinite(a.scale)) {
    return arg_error(op, "softmax_scale", "a finite positive value (or NaN for 1/sqrt(D))",
                     "inf");
  } else {
    p->scale = a.scale;
  }
  p->causal = a.mask.causal;
  p->window_left = a.mask.window_left < 0 ? -1 : a.mask.window_left;
  p->window_right = a.mask.window_right < 0 ? -1 : a.mask.window_right;
  if (a.mask.causal) {
    if (p->window_right > 0) {
      return arg_error(op, "window_right", "0 or unbounded with causal=true",
                       std::to_string(p->window_right));
    }
    p->window_right = 0;
  }
  return Status::Ok();
}

Status check_like(std::string_view op, std::string_view name, const TensorView& t,
                  std::string_view ref_name, const TensorView& ref) {
  DW_TRY(detail::check_view(op, name, t));
  DW_TRY(detail::check_same_dtype(op, name, t, ref_name, ref));
  DW_TRY(detail::check_device(op, name, t, ref_name, ref.device));
  if (t.ndim != ref.ndim || !std::equal(t.shape, t.shape + t.ndim, ref.shape)) {
    return arg_error(op, name, "shape " + shape_string(ref) + " (as " + std::string(ref_name) + ")",
                     shape_string(t));
  }
  if (ref.device.type == DeviceType::kCUDA) {
    DW_TRY(detail::check_last_dim_contiguous(op, name, t));
    DW_TRY(detail::check_alignment(op, name, t, 16));
  }
  return Status::Ok();
}

// The LSE tensor: fp32, (B, H, Sq) or (H, total_q) for varlen.
Status check_lse(std::string_view op, const TensorView& lse, const attention::Problem& p,
                 attention::Problem* out) {
  DW_TRY(detail::check_view(op, "lse", lse));
  DW_TRY(detail::check_dtype(op, "lse", lse, {DType::kF32}));
  DW_TRY(detail::check_device(op, "lse", lse, "q", p.device));
  if (p.varlen) {
    if (lse.ndim != 2 || lse.shape[0] != p.heads_q || lse.shape[1] != p.total_q) {
      return arg_error(op, "lse",
                       "shape (Hq, total_q) = (" + std::to_string(p.heads_q) + ", " +
                           std::to_string(p.total_q) + ")",
                       shape_string(lse));
    }
    out->lse_batch_stride = 0;
    out->lse_head_stride = lse.strides[0];
    out->lse_row_stride = lse.strides[1];
  } else {
    if (lse.ndim != 3 || lse.shape[0] != p.batch || lse.shape[1] != p.heads_q ||
        lse.shape[2] != p.seqlen_q) {
      return arg_error(op, "lse",
                       "shape (B, Hq, Sq) = (" + std::to_string(p.batch) + ", " +
                           std::to_string(p.heads_q) + ", " + std::to_string(p.seqlen_q) + ")",
                       shape_string(lse));
    }
    out->lse_batch_stride = lse.strides[0];
    out->lse_head_stride = lse.strides[1];
    out->lse_row_stride = lse.strides[2];
  }
  out->lse = static_cast<float*>(lse.data);
  return Status::Ok();
}

// Every check of the forward's arguments; fills p.
Status forward_problem(const AttentionForwardArgs& a, attention::Problem* out_problem) {
  attention::Problem& p = *out_problem;
  DW_TRY(build_problem(kFwd, {&a.q, &a.k, &a.v, a.cu_seqlens_q, a.cu_seqlens_k, a.max_seqlen_q,
                              a.max_seqlen_k, a.bias, a.softmax_scale, a.mask},
                       &p));
  DW_TRY(check_like(kFwd, "out", a.out, "q", a.q));
  DW_TRY(detail::check_no_internal_overlap(kFwd, "out", a.out));
  for (auto [name, t] : {std::pair{"q", &a.q}, {"k", &a.k}, {"v", &a.v}}) {
    DW_TRY(check_disjoint(kFwd, "out", a.out, name, *t));
  }
  p.out = a.out.data;
  p.o_stride = row_strides(a.out, p.varlen);
  if (a.lse != nullptr) {
    DW_TRY(check_lse(kFwd, *a.lse, p, &p));
    DW_TRY(detail::check_no_internal_overlap(kFwd, "lse", *a.lse));
    DW_TRY(check_disjoint(kFwd, "lse", *a.lse, "out", a.out));
  }
  return Status::Ok();
}

Status forward_impl(const AttentionForwardArgs& a, const Context& ctx) {
  attention::Problem p;
  DW_TRY(forward_problem(a, &p));
  if (p.batch == 0 || p.seqlen_q == 0 || p.total_q == 0) return Status::Ok();
  if (p.device.type == DeviceType::kCUDA) return attention::forward_cuda(p, ctx);
  return attention::forward_cpu(p);
}

Status forward_workspace_impl(const AttentionForwardArgs& a, size_t* bytes) {
  if (bytes == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "attention_forward_workspace_size: argument 'bytes': expected a pointer, got "
                  "null");
  }
  *bytes = 0;
  attention::Problem p;
  DW_TRY(forward_problem(a, &p));
  if (p.batch == 0 || p.seqlen_q == 0 || p.total_q == 0) return Status::Ok();
  if (p.device.type == DeviceType::kCUDA) return attention::forward_workspace_cuda(p, bytes);
  return Status::Ok();
}

Status backward_impl(const AttentionBackwardArgs& a, const Context&) {
  attention::BackwardProblem bp;
  attention::Problem& p = bp.fwd;
  DW_TRY(build_problem(kBwd, {&a.q, &a.k, &a.v, a.cu_seqlens_q, a.cu_seqlens_k, a.max_seqlen_q,
                              a.max_seqlen_k, a.bias, a.softmax_scale, a.mask},
                       &p));
  if (p.device.type == DeviceType::kCUDA) {
    return Status(StatusCode::kNotSupported,
                  std::string(kBwd) + ": the CUDA backward kernel is not in this version; "
                                      "the CPU backend computes the backward");
  }
  DW_TRY(check_like(kBwd, "out", a.out, "q", a.q));
  DW_TRY(check_like(kBwd, "dout", a.dout, "q", a.q));
  DW_TRY(check_lse(kBwd, a.lse, p, &p));
  DW_TRY(check_like(kBwd, "dq", a.dq, "q", a.q));
  DW_TRY(check_like(kBwd, "dk", a.dk, "k", a.k));
  DW_TRY(check_like(kBwd, "dv", a.dv, "v", a.v));
  const std::pair<const char*, const TensorView*> outs[] = {{"dq", &a.dq}, {"dk", &a.dk},
                                                            {"dv", &a.dv}};
  const std::pair<const char*, const TensorView*> ins[] = {
      {"q", &a.q}, {"k", &a.k}, {"v", &a.v}, {"out", &a.out}, {"dout", &a.dout}, {"lse", &a.lse}};
  for (auto [oname, ot] : outs) {
    DW_TRY(detail::check_no_internal_overlap(kBwd, oname, *ot));
    for (auto [iname, it] : ins) DW_TRY(check_disjoint(kBwd, oname, *ot, iname, *it));
  }
  DW_TRY(check_disjoint(kBwd, "dk", a.dk, "dq", a.dq));
  DW_TRY(check_disjoint(kBwd, "dv", a.dv, "dq", a.dq));
  DW_TRY(check_disjoint(kBwd, "dv", a.dv, "dk", a.dk));
  p.out = a.out.data;
  p.o_stride = row_strides(a.out, p.varlen);
  bp.dout = a.dout.data;
  bp.do_stride = row_strides(a.dout, p.varlen);
  bp.dq = a.dq.data;
  bp.dk = a.dk.data;
  bp.dv = a.dv.data;
  bp.dq_stride = row_strides(a.dq, p.varlen);
  bp.dk_stride = row_strides(a.dk, p.varlen);
  bp.dv_stride = row_strides(a.dv, p.varlen);
  return attention::backward_cpu(bp);
}

}  // namespace

Status attention_forward(const AttentionForwardArgs& args, const Context& ctx) {
  return detail::guarded(kFwd, [&] { return forward_impl(args, ctx); });
}

Status attention_forward_workspace_size(const AttentionForwardArgs& args, size_t* bytes) {
  return detail::guarded("attention_forward_workspace_size",
                         [&] { return forward_workspace_impl(args, bytes); });
}

Status attention_backward(const AttentionBackwardArgs& args, const Context& ctx) {
  return detail::guarded(kBwd, [&] { return backward_impl(args, ctx); });
}

}  // namespace deepwell
