// CPU reference of quantize / dequantize / scale swizzling: a direct transcription of the rules in
// docs/formats.md through the scalar codecs of codec.hpp, which the CUDA kernels share. Rows are
// processed in parallel; each row is widened to fp32 once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/numeric.hpp"
#include "core/parallel.hpp"
#include "quant/problem.hpp"

namespace deepwell::quant {
namespace {

uint32_t amax_of(const float* v, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, abs_bits(v[i]));
  return m;
}

void load_row(const Matrix& x, int64_t r, float* dst) {
  detail::load_row(x.data, x.dtype, x.row_offset(r), x.col_stride, x.cols, dst);
}

// Writes one row of codes (one per element) into the (rows, cols) data buffer whose rows are `ld`
// codes apart (== cols for fp4). fp4 rows have an even length, so no byte is shared by two rows
// (rows run in parallel).
void store_codes(uint8_t* data, bool fp4, int64_t r, int64_t cols, int64_t ld,
                 const uint8_t* codes) {
  if (!fp4) {
    std::memcpy(data + r * ld, codes, static_cast<size_t>(cols));
    return;
  }
  uint8_t* row = data + r * cols / 2;
  for (int64_t c = 0; c < cols; c += 2) row[c / 2] = static_cast<uint8_t>(codes[c] | codes[c + 1] << 4);
}

uint8_t load_code(const uint8_t* data, bool fp4, int64_t idx) {
  if (!fp4) return data[idx];
  const uint8_t b = data[idx / 2];
  return (idx & 1) ? b >> 4 : b & 0xf;
}

// amax over the whole matrix (NaN-propagating, as bits).
uint32_t matrix_amax(const Matrix& x) {
  uint32_t amax = 0;
  std::mutex mu;
  detail::parallel_for(x.rows, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(x.cols));
    uint32_t m = 0;
    for (int64_t r = r0; r < r1; ++r) {
      load_row(x, r, row.data());
      m = std::max(m, amax_of(row.data(), x.cols));
    }
    std::lock_guard<std::mutex> lock(mu);
    amax = std::max(amax, m);
  });
  return amax;
}

// Quantizes one target whose scales come per row or per block of a row (every format but
// kFp8Block128x128). `tensor_value` is the tensor scale (kFp8Tensor) or s_t (kNvfp4).
void quantize_rows(const Problem& p, const Target& t, float tensor_value) {
  const Matrix& x = t.x;
  const int64_t K = x.cols, block = p.traits.block;
  const int64_t C = scale_cols(p.traits, K);
  const ElemInfo info = elem_info(p.elem);
  float* f32_scales = static_cast<float*>(t.scales);
  uint8_t* byte_scales = static_cast<uint8_t*>(t.scales);
  detail::parallel_for(x.rows, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(K));
    std::vector<uint8_t> codes(static_cast<size_t>(K));
    for (int64_t r = r0; r < r1; ++r) {
      load_row(x, r, row.data());
      if (p.format == QuantFormat::kFp8Tensor || p.format == QuantFormat::kFp8Row) {
        float s = tensor_value;
        if (p.format == QuantFormat::kFp8Row) {
          s = fp32_scale(amax_of(row.data(), K), info, p.pow2);
          f32_scales[r] = s;
        }
        for (int64_t c = 0; c < K; ++c) codes[c] = encode_scaled(p.elem, row[c], s);
      } else {
        for (int64_t g = 0; g < C; ++g) {
          const int64_t c0 = g * block, c1 = std::min(K, c0 + block);
          const uint32_t amax = amax_of(row.data() + c0, c1 - c0);
          const int64_t si = scale_index(p.format, p.swizzle, static_cast<int>(block), t.rows2, K, r, c0);
          if (p.format == QuantFormat::kFp8Block1x128) {
            const float s = fp32_scale(amax, info, p.pow2);
            f32_scales[si] = s;
            for (int64_t c = c0; c < c1; ++c) codes[c] = encode_scaled(p.elem, row[c], s);
          } else if (p.format == QuantFormat::kNvfp4) {
            const uint8_t sb = nvfp4_block_scale(amax, tensor_value);
            byte_scales[si] = sb;
            for (int64_t c = c0; c < c1; ++c) codes[c] = encode_nvfp4(row[c], tensor_value, sb);
          } else {  // MX
            const uint8_t sb = mx_scale(amax, info, p.rule == ScaleRule::kRceil);
            byte_scales[si] = sb;
            for (int64_t c = c0; c < c1; ++c) codes[c] = encode_mx(p.elem, row[c], sb);
          }
        }
      }
      store_codes(t.data, p.traits.fp4, r, K, t.ld, codes.data());
    }
  });
}

// kFp8Block128x128: per band of 128 rows, one pass for the block amaxes, one to encode.
void quantize_blocks(const Problem& p, const Target& t) {
  const Matrix& x = t.x;
  const int64_t K = x.cols, C = scale_cols(p.traits, K);
  const int64_t per_batch = (t.rows2 + 127) / 128;
  const int64_t bands = t.rows2 == 0 ? 0 : (x.rows / t.rows2) * per_batch;
  const ElemInfo info = elem_info(p.elem);
  float* scales = static_cast<float*>(t.scales);
  detail::parallel_for(bands, [&](int64_t b0, int64_t b1) {
    std::vector<float> row(static_cast<size_t>(K));
    std::vector<uint8_t> codes(static_cast<size_t>(K));
    std::vector<uint32_t> amax(static_cast<size_t>(C));
    for (int64_t band = b0; band < b1; ++band) {
      const int64_t batch = band / per_batch, i0 = (band % per_batch) * 128;
      const int64_t r0 = batch * t.rows2 + i0, r1 = batch * t.rows2 + std::min(t.rows2, i0 + 128);
      std::fill(amax.begin(), amax.end(), 0u);
      for (int64_t r = r0; r < r1; ++r) {
        load_row(x, r, row.data());
        for (int64_t g = 0; g < C; ++g) {
          const int64_t c0 = g * 128, c1 = std::min(K, c0 + 128);
          amax[g] = std::max(amax[g], amax_of(row.data() + c0, c1 - c0));
        }
      }
      float* band_scales = scales + band * C;
      for (int64_t g = 0; g < C; ++g) band_scales[g] = fp32_scale(amax[g], info, p.pow2);
      for (int64_t r = r0; r < r1; ++r) {
        load_row(x, r, row.data());
        for (int64_t c = 0; c < K; ++c) codes[c] = encode_scaled(p.elem, row[c], band_scales[c / 128]);
        store_codes(t.data, false, r, K, t.ld, codes.data());
      }
    }
  });
}

void quantize_target(const Problem& p, const Target& t, float tensor_value) {
  if (p.swizzle) {  // padding bytes of the swizzled layout are zero
    const int64_t C = scale_cols(p.traits, t.x.cols);
    std::memset(t.scales, 0, static_cast<size_t>(swizzled_bytes(t.x.rows, C)));
  }
  if (p.format == QuantFormat::kFp8Block128x128) {
    quantize_blocks(p, t);
  } else {
    quantize_rows(p, t, tensor_value);
  }
}

}  // namespace

Status quantize_cpu(const Problem& p) {
  float tensor_value = 0.0f;
  if (p.format == QuantFormat::kFp8Tensor || p.format == QuantFormat::kNvfp4) {
    const uint32_t amax = p.given_amax ? fbits(std::fabs(*p.given_amax)) : matrix_amax(p.main.x);
    tensor_value = p.format == QuantFormat::kNvfp4 ? nvfp4_tensor_scale(amax)
                                                   : fp32_scale(amax, elem_info(p.elem), p.pow2);
    *p.tensor_scale = tensor_value;
  }
  quantize_target(p, p.main, tensor_value);
  if (p.has_transposed) quantize_target(p, p.transposed, tensor_value);
  return Status::Ok();
}

Status dequantize_cpu(const DequantProblem& p) {
  const int64_t K = p.cols;
  const int block = p.traits.block;
  const float* f32_scales = static_cast<const float*>(p.scales);
  const uint8_t* byte_scales = static_cast<const uint8_t*>(p.scales);
  const float s_t = p.tensor_scale ? *p.tensor_scale : 0.0f;
  detail::parallel_for(p.rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t c = 0; c < K; ++c) {
        const uint8_t q = load_code(p.data, p.traits.fp4, r * p.ld + c);
        const int64_t si = scale_index(p.format, p.swizzle, block, p.rows2, K, r, c);
        float v;
        if (p.format == QuantFormat::kNvfp4) {
          v = decode_nvfp4(q, byte_scales[si], s_t);
        } else if (p.traits.byte_scales) {
          v = mul_rn(decode_elem(p.elem, q), decode_ue8m0(byte_scales[si]));
        } else {
          v = mul_rn(decode_elem(p.elem, q), f32_scales[si]);
        }
        detail::store_float(p.out, p.out_dtype, r * K + c, v);
      }
    }
  }, 16);
  return Status::Ok();
}

void swizzle_cpu(const uint8_t* in, uint8_t* out, int64_t rows, int64_t C, bool to_swizzled) {
  if (to_swizzled) std::memset(out, 0, static_cast<size_t>(swizzled_bytes(rows, C)));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t s = swizzled_scale_offset(r, c, C);
      if (to_swizzled) {
        out[s] = in[r * C + c];
      } else {
        out[r * C + c] = in[s];
      }
    }
  }
}

}  // namespace deepwell::quant
