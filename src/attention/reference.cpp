// CPU reference attention: the oracle for the GPU kernels and the fallback without a GPU.
//
// Forward, per query row i:  s_j = scale * q_i . k_j + bias_ij over the visible keys j,
//   lse_i = log sum_j exp(s_j),  o_i = sum_j exp(s_j - lse_i) v_j.
// Backward (FlashAttention's formulation):  P_ij = exp(s_ij - lse_i),  D_i = dO_i . O_i,
//   dS_ij = P_ij (dO_i . v_j - D_i),  dQ_i = scale sum_j dS_ij k_j,
//   dK_j = scale sum_i dS_ij q_i,  dV_j = sum_i P_ij dO_i   (GQA: summed over the group's heads).
// Everything accumulates in fp32; inputs are widened to fp32 tiles first.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention/problem.hpp"
#include "core/numeric.hpp"
#include "core/parallel.hpp"

namespace deepwell::attention {
namespace {

constexpr int64_t kRowBlock = 32;  // rows per parallel work item
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline float dot(const float* a, const float* b, int64_t n) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

inline void axpy(float alpha, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// Start row and length of sequence b in q and k.
struct Seq {
  int64_t q0, sq, k0, sk;
};

Seq sequence(const Problem& p, int64_t b) {
  if (!p.varlen) return {b * p.seqlen_q, p.seqlen_q, b * p.seqlen_k, p.seqlen_k};
  int64_t q0 = p.cu_seqlens_q[b], q1 = p.cu_seqlens_q[b + 1];
  int64_t k0 = p.cu_seqlens_k[b], k1 = p.cu_seqlens_k[b + 1];
  return {q0, q1 - q0, k0, k1 - k0};
}

// Element offset of (row r of sequence b, head h) in a BSHD-like tensor; `r_global` is the packed
// row for varlen tensors.
inline int64_t row_offset(const RowStrides& s, const Problem& p, int64_t b, int64_t r_local,
                          int64_t r_global, int64_t h) {
  return p.varlen ? r_global * s.row + h * s.head : b * s.batch + r_local * s.row + h * s.head;
}

// Widens rows [l0, l0 + n) of head h in sequence b (packed rows [g0, g0 + n) for varlen) into a
// dense fp32 [n][D] buffer.
void gather(const void* base, const RowStrides& s, const Problem& p, int64_t b, int64_t l0,
            int64_t g0, int64_t n, int64_t h, float* dst) {
  const int64_t D = p.head_dim;
  for (int64_t r = 0; r < n; ++r) {
    detail::load_row(base, p.dtype, row_offset(s, p, b, l0 + r, g0 + r, h), s.elem, D,
                     dst + r * D);
  }
}

struct BiasAccess {
  const TensorView* t = nullptr;
  int64_t sb = 0, sh = 0, sq = 0, sk = 0;
  explicit BiasAccess(const TensorView* bias) : t(bias) {
    if (!t) return;
    sb = t->shape[0] == 1 ? 0 : t->strides[0];
    sh = t->shape[1] == 1 ? 0 : t->strides[1];
    sq = t->strides[2];
    sk = t->strides[3];
  }
  float operator()(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return t ? detail::load_float(t->data, t->dtype, b * sb + h * sh + i * sq + j * sk) : 0.0f;
  }
};

int64_t lse_offset(const Problem& p, int64_t b, int64_t h, int64_t r_local, int64_t r_global) {
  return p.varlen ? h * p.lse_head_stride + r_global * p.lse_row_stride
                  : b * p.lse_batch_stride + h * p.lse_head_stride + r_local * p.lse_row_stride;
}

// Scores s_j for query row i over [lo, hi) into s[j - lo]; returns the max.
float scores(const Problem& p, const BiasAccess& bias, const float* qrow, const float* kbuf,
             int64_t b, int64_t h, int64_t i, int64_t lo, int64_t hi, float* s) {
  const int64_t D = p.head_dim;
  float m = kNegInf;
  for (int64_t j = lo; j < hi; ++j) {
    float v = p.scale * dot(qrow, kbuf + j * D, D) + bias(b, h, i, j);
    s[j - lo] = v;
    m = std::max(m, v);
  }
  return m;
}

}  // namespace

Status forward_cpu(const Problem& p) {
  const int64_t D = p.head_dim, G = p.group();
  const int64_t row_blocks = (p.seqlen_q + kRowBlock - 1) / kRowBlock;
  const BiasAccess bias(p.bias);
  detail::parallel_for(p.batch * p.heads_q * row_blocks, [&](int64_t begin, int64_t end) {
    std::vector<float> kbuf, vbuf, qrow(D), orow(D), s;
    int64_t cached_b = -1, cached_hk = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t rb = item % row_blocks;
      const int64_t h = (item / row_blocks) % p.heads_q;
      const int64_t b = item / (row_blocks * p.heads_q);
      const Seq seq = sequence(p, b);
      const int64_t r0 = rb * kRowBlock, r1 = std::min(seq.sq, r0 + kRowBlock);
      if (r0 >= r1) continue;
      const int64_t hk = h / G;
      if (b != cached_b || hk != cached_hk) {
        kbuf.resize(seq.sk * D);
        vbuf.resize(seq.sk * D);
        gather(p.k, p.k_stride, p, b, 0, seq.k0, seq.sk, hk, kbuf.data());
        gather(p.v, p.v_stride, p, b, 0, seq.k0, seq.sk, hk, vbuf.data());
        cached_b = b;
        cached_hk = hk;
      }
      s.resize(std::max<int64_t>(seq.sk, 1));
      for (int64_t i = r0; i < r1; ++i) {
        gather(p.q, p.q_stride, p, b, i, seq.q0 + i, 1, h, qrow.data());
        int64_t lo, hi;
        visible_keys(p, i, seq.sq, seq.sk, &lo, &hi);
        float m = scores(p, bias, qrow.data(), kbuf.data(), b, h, i, lo, hi, s.data());
        std::fill(orow.begin(), orow.end(), 0.0f);
        float lse = kNegInf;
        if (m != kNegInf) {  // at least one key with a finite score
          float l = 0.0f;
          for (int64_t j = lo; j < hi; ++j) {
            float e = std::exp(s[j - lo] - m);
            l += e;
            axpy(e, vbuf.data() + j * D, orow.data(), D);
          }
          float inv = 1.0f / l;
          for (int64_t d = 0; d < D; ++d) orow[d] *= inv;
          lse = m + std::log(l);
        }
        const int64_t o_off = row_offset(p.o_stride, p, b, i, seq.q0 + i, h);
        for (int64_t d = 0; d < D; ++d) {
          detail::store_float(p.out, p.dtype, o_off + d * p.o_stride.elem, orow[d]);
        }
        if (p.lse) p.lse[lse_offset(p, b, h, i, seq.q0 + i)] = lse;
      }
    }
  });
  return Status::Ok();
}

Status backward_cpu(const BackwardProblem& bp) {
  const Problem& p = bp.fwd;
  const int64_t D = p.head_dim, G = p.group();
  const BiasAccess bias(p.bias);
  const int64_t row_blocks = (p.seqlen_q + kRowBlock - 1) / kRowBlock;
  // D_i = dO_i . O_i for every (head, packed row): computed in pass 1, read in pass 2.
  std::vector<float> delta(static_cast<size_t>(p.heads_q * p.total_q));
  auto delta_at = [&](int64_t h, int64_t r_global) -> float& {
    return delta[static_cast<size_t>(h * p.total_q + r_global)];
  };
  auto lse_at = [&](int64_t b, int64_t h, int64_t i, int64_t r_global) {
    return p.lse[lse_offset(p, b, h, i, r_global)];
  };

  // Pass 1, query-major: D_i and dQ_i.
  detail::parallel_for(p.batch * p.heads_q * row_blocks, [&](int64_t begin, int64_t end) {
    std::vector<float> kbuf, vbuf, qrow(D), orow(D), dorow(D), dqrow(D), s;
    int64_t cached_b = -1, cached_hk = -1;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t rb = item % row_blocks;
      const int64_t h = (item / row_blocks) % p.heads_q;
      const int64_t b = item / (row_blocks * p.heads_q);
      const Seq seq = sequence(p, b);
      const int64_t r0 = rb * kRowBlock, r1 = std::min(seq.sq, r0 + kRowBlock);
      if (r0 >= r1) continue;
      const int64_t hk = h / G;
      if (b != cached_b || hk != cached_hk) {
        kbuf.resize(seq.sk * D);
        vbuf.resize(seq.sk * D);
        gather(p.k, p.k_stride, p, b, 0, seq.k0, seq.sk, hk, kbuf.data());
        gather(p.v, p.v_stride, p, b, 0, seq.k0, seq.sk, hk, vbuf.data());
        cached_b = b;
        cached_hk = hk;
      }
      s.resize(std::max<int64_t>(seq.sk, 1));
      for (int64_t i = r0; i < r1; ++i) {
        const int64_t rg = seq.q0 + i;
        gather(p.q, p.q_stride, p, b, i, rg, 1, h, qrow.data());
        gather(p.out, p.o_stride, p, b, i, rg, 1, h, orow.data());
        gather(bp.dout, bp.do_stride, p, b, i, rg, 1, h, dorow.data());
        const float di = dot(dorow.data(), orow.data(), D);
        delta_at(h, rg) = di;
        std::fill(dqrow.begin(), dqrow.end(), 0.0f);
        const float lse = lse_at(b, h, i, rg);
        int64_t lo, hi;
        visible_keys(p, i, seq.sq, seq.sk, &lo, &hi);
        if (lse != kNegInf) {
          scores(p, bias, qrow.data(), kbuf.data(), b, h, i, lo, hi, s.data());
          for (int64_t j = lo; j < hi; ++j) {
            float pij = std::exp(s[j - lo] - lse);
            float ds = pij * (dot(dorow.data(), vbuf.data() + j * D, D) - di);
            axpy(p.scale * ds, kbuf.data() + j * D, dqrow.data(), D);
          }
        }
        const int64_t off = row_offset(bp.dq_stride, p, b, i, rg, h);
        for (int64_t d = 0; d < D; ++d) {
          detail::store_float(bp.dq, p.dtype, off + d * bp.dq_stride.elem, dqrow[d]);
        }
      }
    }
  });

  // Pass 2, key-major: dK_j and dV_j, summed over the heads of the group and over the rows that
  // see key j.
  const int64_t key_blocks = (p.seqlen_k + kRowBlock - 1) / kRowBlock;
  detail::parallel_for(p.batch * p.heads_kv * key_blocks, [&](int64_t begin, int64_t end) {
    std::vector<float> qbuf, dobuf, krow(D), vrow(D), dk(kRowBlock * D), dv(kRowBlock * D);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t kb = item % key_blocks;
      const int64_t hk = (item / key_blocks) % p.heads_kv;
      const int64_t b = item / (key_blocks * p.heads_kv);
      const Seq seq = sequence(p, b);
      const int64_t j0 = kb * kRowBlock, j1 = std::min(seq.sk, j0 + kRowBlock);
      if (j0 >= j1) continue;
      std::fill(dk.begin(), dk.end(), 0.0f);
      std::fill(dv.begin(), dv.end(), 0.0f);
      for (int64_t h = hk * G; h < (hk + 1) * G; ++h) {
        qbuf.resize(seq.sq * D);
        dobuf.resize(seq.sq * D);
        gather(p.q, p.q_stride, p, b, 0, seq.q0, seq.sq, h, qbuf.data());
        gather(bp.dout, bp.do_stride, p, b, 0, seq.q0, seq.sq, h, dobuf.data());
        for (int64_t j = j0; j < j1; ++j) {
          gather(p.k, p.k_stride, p, b, j, seq.k0 + j, 1, hk, krow.data());
          gather(p.v, p.v_stride, p, b, j, seq.k0 + j, 1, hk, vrow.data());
          float* dkj = dk.data() + (j - j0) * D;
          float* dvj = dv.data() + (j - j0) * D;
          for (int64_t i = 0; i < seq.sq; ++i) {
            int64_t lo, hi;
            visible_keys(p, i, seq.sq, seq.sk, &lo, &hi);
            if (j < lo || j >= hi) continue;
            const int64_t rg = seq.q0 + i;
            const float lse = lse_at(b, h, i, rg);
            if (lse == kNegInf) continue;
            const float* qi = qbuf.data() + i * D;
            const float* doi = dobuf.data() + i * D;
            float sij = p.scale * dot(qi, krow.data(), D) + bias(b, h, i, j);
            float pij = std::exp(sij - lse);
            float ds = pij * (dot(doi, vrow.data(), D) - delta_at(h, rg));
            axpy(p.scale * ds, qi, dkj, D);
            axpy(pij, doi, dvj, D);
          }
        }
      }
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t offk = row_offset(bp.dk_stride, p, b, j, seq.k0 + j, hk);
        const int64_t offv = row_offset(bp.dv_stride, p, b, j, seq.k0 + j, hk);
        for (int64_t d = 0; d < D; ++d) {
          detail::store_float(bp.dk, p.dtype, offk + d * bp.dk_stride.elem, dk[(j - j0) * D + d]);
          detail::store_float(bp.dv, p.dtype, offv + d * bp.dv_stride.elem, dv[(j - j0) * D + d]);
        }
      }
    }
  });
  return Status::Ok();
}

}  // namespace deepwell::attention
