// Flash-style attention with a learned additive bias, forward and backward, on CPU in fp32:
//   out = softmax(q k^T + scale[h] * bias[b or 0, h] (+ key padding, causal mask)) v
// built by synthformer/attention/mixture.py (torch.utils.cpp_extension.load_inline). Neither pass keeps a
// (B, H, Lq, Lk) tensor: the forward runs an online softmax over key blocks and keeps the log-sum-exp of
// every row; the backward recomputes each (rows x keys) block from it, and sums the bias gradient of a
// bias shared by the batch over the batch while the block is in cache (the batch is the innermost loop).
// q, k may be wider than v (concatenated dot-product members, D+V): no padding of v.
// GEMMs: the BLAS `sgemm_` that libtorch_cpu exports (MKL in PyTorch's x86 wheels).
#include <torch/extension.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

extern "C" void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                       const int*, const float*, const int*, const float*, float*, const int*);

namespace {

constexpr float NEG_INF = -std::numeric_limits<float>::infinity();

// row-major C (m x n) = alpha * op(A) op(B) + beta * C, through column-major BLAS (C^T = op(B)^T op(A)^T)
inline void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* A, int lda, const float* B,
                 int ldb, float beta, float* C, int ldc) {
  const char* TA = ta ? "T" : "N";
  const char* TB = tb ? "T" : "N";
  sgemm_(TB, TA, &n, &m, &k, &alpha, B, &ldb, A, &lda, &beta, C, &ldc);
}

// exp(x), Cephes' polynomial (about 2 ulp), written so that the compiler vectorizes the loops that call it (no
// floor or float->int conversion: rounding by adding 1.5 * 2^23); x below -87.3 (masked logits, -inf) gives 0
inline float fexp(float x) {
  const float xc = x < -87.3f ? -87.3f : (x > 88.3f ? 88.3f : x);
  const float t = xc * 1.44269504088896341f + 12582912.0f;  // n = round(x / ln 2) in t's low mantissa bits
  const float n = t - 12582912.0f;
  int32_t ti;
  std::memcpy(&ti, &t, sizeof(ti));
  const int32_t e = (ti - 0x4B400000 + 127) << 23;  // 2^n
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  float s;
  std::memcpy(&s, &e, sizeof(s));
  return x < -87.3f ? 0.0f : p * s;
}

// max and sum of a row in 16 lanes (vectorizes without -ffast-math)
typedef float f16v __attribute__((vector_size(64)));  // 16 floats (GCC / Clang vector extension)

inline float row_max(const float* x, int64_t n) {
  f16v m;
  for (int i = 0; i < 16; ++i) m[i] = NEG_INF;
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    f16v v;
    std::memcpy(&v, x + j, sizeof(v));
    m = m < v ? v : m;
  }
  float r = NEG_INF;
  for (int i = 0; i < 16; ++i) r = r < m[i] ? m[i] : r;
  for (; j < n; ++j) r = r < x[j] ? x[j] : r;
  return r;
}

inline float dot(const float* x, const float* y, int64_t n) {  // y == nullptr: the sum of x
  float a[16] = {0};
  int64_t j = 0;
  if (y) {
    for (; j + 16 <= n; j += 16)
      for (int i = 0; i < 16; ++i) a[i] += x[j + i] * y[j + i];
  } else {
    for (; j + 16 <= n; j += 16)
      for (int i = 0; i < 16; ++i) a[i] += x[j + i];
  }
  float r = 0.0f;
  for (int i = 0; i < 16; ++i) r += a[i];
  for (; j < n; ++j) r += y ? x[j] * y[j] : x[j];
  return r;
}

// x[j] = exp(x[j] - m)
inline void exp_shifted(float* x, int64_t n, float m) {
  for (int64_t j = 0; j < n; ++j) x[j] = fexp(x[j] - m);
}

// a (B, H, L, last) tensor with unit stride along its last dimension: row l of (b, h) starts at at(b, h, l)
template <typename T>
struct Rows {
  T* p;
  int64_t sb, sh, sl;
  T* at(int64_t b, int64_t h, int64_t l) const { return p + b * sb + h * sh + l * sl; }
  int ld() const { return static_cast<int>(sl); }
};

template <typename T>
Rows<T> rows_of(const at::Tensor& t) {
  TORCH_CHECK(t.dim() == 4 && t.stride(3) == 1 && (t.size(2) <= 1 || t.stride(2) >= t.size(3)),
              "expected a 4-d tensor with unit stride along its last dimension and rows that do not overlap");
  return Rows<T>{static_cast<T*>(t.data_ptr()), t.stride(0), t.stride(1), t.stride(2)};
}

// (B, H, L, n) fp32 zeros laid out as (B, L, H, n) (the layout the layer's projections give and take), viewed as (B, H, L, n)
at::Tensor blh_zeros(int64_t b, int64_t h, int64_t l, int64_t n, const at::TensorOptions& o, bool zero) {
  auto t = zero ? at::zeros({b, l, h, n}, o) : at::empty({b, l, h, n}, o);
  return t.permute({0, 2, 1, 3});
}

struct Problem {
  int64_t B, H, Lq, Lk, E, Dv;
  Rows<const float> q;  // (B, H, Lq, E)
  Rows<const float> k;  // (B, H, Lk, E)
  Rows<const float> v;  // (B, H, Lk, Dv)
  const float* bias;   // (Bb, H, Lq, Lk) or null
  int64_t bias_b;      // 1 (shared by the batch) or B
  const float* scale;  // (H) or null
  const float* qscale;  // (H) or null: multiplies q k^T (the dot product's mixture weight)
  const uint8_t* pad;  // (B, Lk), 1 = padding, or null
  int64_t shift;       // causal: key j visible from query i iff j <= i + shift
  bool causal;
  int64_t rb, cb;      // query rows and keys per block

  int64_t key_end(int64_t i0, int64_t r) const {  // keys after the block's last query are all masked
    return causal ? std::max<int64_t>(0, std::min(Lk, i0 + r + shift)) : Lk;
  }
  float sc(int64_t h) const { return scale ? scale[h] : 1.0f; }
  float qs(int64_t h) const { return qscale ? qscale[h] : 1.0f; }

  // logits of a block (r x c, in s, already q k^T) plus bias, padding and causal mask
  void add_bias_mask(float* s, int64_t b, int64_t h, int64_t i0, int64_t r, int64_t j0, int64_t c) const {
    const float f = sc(h);
    for (int64_t ii = 0; ii < r; ++ii) {
      float* row = s + ii * c;
      if (bias) {
        const float* br = bias + (((bias_b > 1 ? b : 0) * H + h) * Lq + i0 + ii) * Lk + j0;
        for (int64_t jj = 0; jj < c; ++jj) row[jj] += f * br[jj];
      }
      if (pad) {
        const uint8_t* pr = pad + b * Lk + j0;
        for (int64_t jj = 0; jj < c; ++jj) row[jj] = pr[jj] ? NEG_INF : row[jj];
      }
      if (causal) {
        const int64_t first = std::max<int64_t>(0, i0 + ii + shift + 1 - j0);  // first masked key in the block
        for (int64_t jj = first; jj < c; ++jj) row[jj] = NEG_INF;
      }
    }
  }
};

Problem make_problem(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const c10::optional<at::Tensor>& bias,
                     const c10::optional<at::Tensor>& scale, const c10::optional<at::Tensor>& pad, int64_t shift,
                     bool causal, const c10::optional<at::Tensor>& qscale, int64_t rb, int64_t cb) {
  TORCH_CHECK(q.dtype() == at::kFloat && k.dtype() == at::kFloat && v.dtype() == at::kFloat, "fp32 only");
  Problem p{};
  p.B = v.size(0); p.H = v.size(1); p.Lq = q.size(2); p.Lk = k.size(2); p.E = q.size(3); p.Dv = v.size(3);
  TORCH_CHECK(q.size(0) == p.B && k.size(0) == p.B, "q, k and v need the same batch");
  p.q = rows_of<const float>(q); p.k = rows_of<const float>(k); p.v = rows_of<const float>(v);
  p.bias = nullptr; p.bias_b = 1; p.scale = nullptr; p.pad = nullptr; p.qscale = nullptr;
  if (qscale && qscale->defined()) {
    TORCH_CHECK(qscale->is_contiguous() && qscale->dtype() == at::kFloat && qscale->numel() == p.H, "qscale: (H,) fp32");
    p.qscale = qscale->data_ptr<float>();
  }
  if (bias && bias->defined()) {
    TORCH_CHECK(bias->is_contiguous() && bias->dtype() == at::kFloat && bias->dim() == 4, "bias: contiguous fp32 4-d");
    TORCH_CHECK(bias->size(1) == p.H && bias->size(2) == p.Lq && bias->size(3) == p.Lk, "bias shape");
    p.bias = bias->data_ptr<float>(); p.bias_b = bias->size(0);
    TORCH_CHECK(p.bias_b == 1 || p.bias_b == p.B, "bias batch must be 1 or B");
  }
  if (scale && scale->defined()) {
    TORCH_CHECK(scale->is_contiguous() && scale->dtype() == at::kFloat && scale->numel() == p.H, "scale: (H,) fp32");
    p.scale = scale->data_ptr<float>();
  }
  if (pad && pad->defined()) {
    TORCH_CHECK(pad->is_contiguous() && pad->dtype() == at::kByte && pad->numel() == p.B * p.Lk, "pad: (B, Lk) uint8");
    p.pad = pad->data_ptr<uint8_t>();
  }
  p.shift = shift; p.causal = causal; p.rb = rb; p.cb = cb;
  return p;
}

}  // namespace

// (out (B, H, Lq, Dv), lse (B, H, Lq)); a row with no visible key outputs zeros and has lse = +inf
std::vector<at::Tensor> mixture_forward(at::Tensor q, at::Tensor k, at::Tensor v, c10::optional<at::Tensor> bias,
                                        c10::optional<at::Tensor> scale, c10::optional<at::Tensor> pad,
                                        int64_t shift, bool causal, c10::optional<at::Tensor> qscale, int64_t rb,
                                        int64_t cb) {
  const Problem p = make_problem(q, k, v, bias, scale, pad, shift, causal, qscale, rb, cb);
  auto out = blh_zeros(p.B, p.H, p.Lq, p.Dv, v.options(), false);
  const Rows<float> o = rows_of<float>(out);
  auto lse = at::empty({p.B, p.H, p.Lq}, v.options());
  float* lp = lse.data_ptr<float>();
  const int64_t nI = (p.Lq + p.rb - 1) / p.rb;
  // one (head, row block) per task, the batch innermost: a bias block shared by the batch is read from memory once
  at::parallel_for(0, p.H * nI, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> s(p.rb * p.cb), acc(p.B * p.rb * p.Dv), m(p.B * p.rb), l(p.B * p.rb);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t ib = t % nI, h = t / nI;
      const int64_t i0 = ib * p.rb, r = std::min(p.rb, p.Lq - i0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::fill(m.begin(), m.end(), NEG_INF);
      std::fill(l.begin(), l.end(), 0.0f);
      const int64_t kend = p.key_end(i0, r);
      for (int64_t j0 = 0; j0 < kend; j0 += p.cb) {
        const int64_t c = std::min(p.cb, kend - j0);
        for (int64_t b = 0; b < p.B; ++b) {
          float* ab = acc.data() + b * p.rb * p.Dv;
          float* mb = m.data() + b * p.rb;
          float* lb = l.data() + b * p.rb;
          gemm(false, true, r, c, p.E, p.qs(h), p.q.at(b, h, i0), p.q.ld(), p.k.at(b, h, j0), p.k.ld(), 0.0f, s.data(), c);
          p.add_bias_mask(s.data(), b, h, i0, r, j0, c);
          for (int64_t ii = 0; ii < r; ++ii) {
            float* row = s.data() + ii * c;
            const float mnew = std::max(mb[ii], row_max(row, c));
            if (mnew == NEG_INF) {  // nothing visible in this row so far
              std::fill(row, row + c, 0.0f);
              continue;
            }
            exp_shifted(row, c, mnew);
            const float sum = dot(row, nullptr, c);
            const float corr = fexp(mb[ii] - mnew);  // 0 on the first visible block
            if (corr != 1.0f) {  // rescale what earlier key blocks added
              float* a = ab + ii * p.Dv;
              for (int64_t d = 0; d < p.Dv; ++d) a[d] *= corr;
            }
            lb[ii] = lb[ii] * corr + sum;
            mb[ii] = mnew;
          }
          gemm(false, false, r, p.Dv, c, 1.0f, s.data(), c, p.v.at(b, h, j0), p.v.ld(), 1.0f, ab, p.Dv);
        }
      }
      for (int64_t b = 0; b < p.B; ++b) {
        for (int64_t ii = 0; ii < r; ++ii) {
          const int64_t x = b * p.rb + ii;
          float* orow = o.at(b, h, i0 + ii);
          const float inv = l[x] > 0.0f ? 1.0f / l[x] : 0.0f;
          for (int64_t d = 0; d < p.Dv; ++d) orow[d] = acc[x * p.Dv + d] * inv;
          lp[(b * p.H + h) * p.Lq + i0 + ii] = l[x] > 0.0f ? m[x] + std::log(l[x]) : std::numeric_limits<float>::infinity();
        }
      }
    }
  });
  return {out, lse};
}

// (dq, dk, dv, dbias or undefined, dscale or undefined, dqscale or undefined). dbias has the bias's shape (its batch summed when the bias
// is shared) and includes the scale; dscale[h] = sum(dS * bias[h]). out: the forward's output.
std::vector<at::Tensor> mixture_backward(at::Tensor dout, at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor lse,
                                         at::Tensor out, c10::optional<at::Tensor> bias,
                                         c10::optional<at::Tensor> scale, c10::optional<at::Tensor> pad,
                                         int64_t shift, bool causal, c10::optional<at::Tensor> qscale, bool need_bias,
                                         bool need_scale, bool need_qscale, int64_t rb, int64_t cb) {
  const Problem p = make_problem(q, k, v, bias, scale, pad, shift, causal, qscale, rb, cb);
  TORCH_CHECK(lse.is_contiguous(), "lse must be contiguous");
  // delta = rowsum(dP * P) = rowsum(dout * out), (B, H, Lq)
  auto delta = at::empty({p.B, p.H, p.Lq}, q.options());
  {
    const Rows<const float> o = rows_of<const float>(out), g = rows_of<const float>(dout);
    float* dp = delta.data_ptr<float>();
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.H; ++h)
        for (int64_t i = 0; i < p.Lq; ++i) dp[(b * p.H + h) * p.Lq + i] = dot(o.at(b, h, i), g.at(b, h, i), p.Dv);
  }
  need_bias = need_bias && p.bias;
  need_scale = need_scale && p.bias && p.scale;
  const bool want_ds = need_bias || need_scale;
  const bool shared = p.bias_b == 1 && p.B > 1;  // sum dS over the batch in a block buffer (B = 1: write it)
  const auto o32 = q.options();
  auto dq = blh_zeros(p.B, p.H, p.Lq, p.E, o32, true), dk = blh_zeros(p.B, p.H, p.Lk, p.E, o32, true);
  auto dv = blh_zeros(p.B, p.H, p.Lk, p.Dv, o32, true);
  at::Tensor dbias, dscale;
  if (need_bias) dbias = p.causal ? at::zeros_like(*bias) : at::empty_like(*bias);
  auto dscale64 = at::zeros({p.H}, q.options().dtype(at::kDouble));
  auto dqscale64 = at::zeros({p.H}, q.options().dtype(at::kDouble));
  double* dqsp = dqscale64.data_ptr<double>();
  const Rows<float> dQ = rows_of<float>(dq), dK = rows_of<float>(dk), dV = rows_of<float>(dv);
  const Rows<const float> dOut = rows_of<const float>(dout);
  float* dbp = need_bias ? dbias.data_ptr<float>() : nullptr;
  double* dsp = dscale64.data_ptr<double>();
  const float* lsp = lse.data_ptr<float>();
  const float* dlp = delta.data_ptr<float>();
  // one head per task: dq, dk, dv of (b, h) and the bias gradient of h are written by that task alone
  at::parallel_for(0, p.H, 1, [&](int64_t hbeg, int64_t hend) {
    std::vector<float> P(p.rb * p.cb), dS(p.rb * p.cb), sum(shared && want_ds ? p.rb * p.cb : 0);
    for (int64_t h = hbeg; h < hend; ++h) {
      const float f = p.sc(h);
      const float qsh = p.qs(h);
      double dsc = 0.0, dqs = 0.0;
      for (int64_t i0 = 0; i0 < p.Lq; i0 += p.rb) {
        const int64_t r = std::min(p.rb, p.Lq - i0);
        const int64_t kend = p.key_end(i0, r);
        for (int64_t j0 = 0; j0 < kend; j0 += p.cb) {
          const int64_t c = std::min(p.cb, kend - j0);
          if (!sum.empty()) std::fill(sum.begin(), sum.begin() + r * c, 0.0f);
          for (int64_t b = 0; b < p.B; ++b) {
            const int64_t bh = b * p.H + h;
            const float* Q = p.q.at(b, h, i0);
            const float* K = p.k.at(b, h, j0);
            const float* V = p.v.at(b, h, j0);
            const float* dO = dOut.at(b, h, i0);
            gemm(false, true, r, c, p.E, qsh, Q, p.q.ld(), K, p.k.ld(), 0.0f, P.data(), c);
            p.add_bias_mask(P.data(), b, h, i0, r, j0, c);
            for (int64_t ii = 0; ii < r; ++ii) {  // P = exp(s - lse): 0 where masked and in rows with no visible key
              float* row = P.data() + ii * c;
              exp_shifted(row, c, lsp[bh * p.Lq + i0 + ii]);
            }
            gemm(true, false, c, p.Dv, r, 1.0f, P.data(), c, dO, dOut.ld(), 1.0f, dV.at(b, h, j0), dV.ld());
            gemm(false, true, r, c, p.Dv, 1.0f, dO, dOut.ld(), V, p.v.ld(), 0.0f, dS.data(), c);  // dP
            for (int64_t ii = 0; ii < r; ++ii) {  // dS = P * (dP - delta)
              float* ds = dS.data() + ii * c;
              const float* pr = P.data() + ii * c;
              const float dl = dlp[bh * p.Lq + i0 + ii];
              for (int64_t jj = 0; jj < c; ++jj) ds[jj] = pr[jj] * (ds[jj] - dl);
            }
            // dQ accumulates dS K unscaled (scaled below, once its row block is complete); dK gets the scale now
            gemm(false, false, r, p.E, c, 1.0f, dS.data(), c, K, p.k.ld(), 1.0f, dQ.at(b, h, i0), dQ.ld());
            gemm(true, false, c, p.E, r, qsh, dS.data(), c, Q, p.q.ld(), 1.0f, dK.at(b, h, j0), dK.ld());
            if (!want_ds) continue;
            if (shared) {
              for (int64_t x = 0; x < r * c; ++x) sum[x] += dS[x];
            } else {  // a bias per example (FD), or B = 1: its own gradient
              const int64_t bb = p.bias_b > 1 ? b : 0;
              const float* br = p.bias + ((bb * p.H + h) * p.Lq + i0) * p.Lk + j0;
              for (int64_t ii = 0; ii < r; ++ii) {
                const float* ds = dS.data() + ii * c;
                if (need_scale) dsc += dot(ds, br + ii * p.Lk, c);
                if (need_bias) {
                  float* db = dbp + ((bb * p.H + h) * p.Lq + i0 + ii) * p.Lk + j0;
                  for (int64_t jj = 0; jj < c; ++jj) db[jj] = f * ds[jj];
                }
              }
            }
          }
          if (shared && want_ds) {
            const float* br = p.bias + (h * p.Lq + i0) * p.Lk + j0;
            for (int64_t ii = 0; ii < r; ++ii) {
              const float* sr = sum.data() + ii * c;
              if (need_scale) dsc += dot(sr, br + ii * p.Lk, c);
              if (need_bias) {
                float* db = dbp + (h * p.Lq + i0 + ii) * p.Lk + j0;
                for (int64_t jj = 0; jj < c; ++jj) db[jj] = f * sr[jj];
              }
            }
          }
        }
        if (p.qscale) {  // the row block's dQ is complete: d(qscale_h) += q . (dS K), then dQ = qscale_h dS K
          for (int64_t b = 0; b < p.B; ++b) {
            for (int64_t ii = 0; ii < r; ++ii) {
              float* g = dQ.at(b, h, i0 + ii);
              if (need_qscale) dqs += dot(p.q.at(b, h, i0 + ii), g, p.E);
              for (int64_t e = 0; e < p.E; ++e) g[e] *= qsh;
            }
          }
        }
      }
      dsp[h] = dsc;
      dqsp[h] = dqs;
    }
  });
  if (need_scale) dscale = dscale64.to(at::kFloat);
  at::Tensor dqscale;
  if (need_qscale && p.qscale) dqscale = dqscale64.to(at::kFloat);
  return {dq, dk, dv, dbias, dscale, dqscale};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &mixture_forward, "flash-style attention with a learned bias, forward (fp32, CPU)");
  m.def("backward", &mixture_backward, "its backward: q, k, v, the bias (summed over a shared batch), the scale");
}
