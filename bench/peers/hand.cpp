// hand.cpp — hand-written fused C++ loops, one per workload: what a programmer writes by hand
// with -O3 -march=native and no library. Each reads the driver's inputs, times the kernel
// (one warm-up, then the median of REPEAT runs) and writes its result for the correctness check.
#include "common.h"
#include "vecmath.h"

#include <cmath>
#include <limits>

using namespace bench;

namespace {

// Reductions with 16 partial results, so that gcc vectorizes them without -ffast-math.
constexpr int kLanes = 16;

float rowMax(const float* __restrict x, long n) {
  float part[kLanes];
  for (int u = 0; u < kLanes; ++u) part[u] = -std::numeric_limits<float>::infinity();
  long j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int u = 0; u < kLanes; ++u) part[u] = part[u] > x[j + u] ? part[u] : x[j + u];
  float m = part[0];
  for (int u = 1; u < kLanes; ++u) m = std::max(m, part[u]);
  for (; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

float rowSum(const float* __restrict x, long n) {
  float part[kLanes] = {};
  long j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int u = 0; u < kLanes; ++u) part[u] += x[j + u];
  float s = 0.0f;
  for (int u = 0; u < kLanes; ++u) s += part[u];
  for (; j < n; ++j) s += x[j];
  return s;
}

// sum of (x[j] - c)^2: the variance pass.
float rowSumSq(const float* __restrict x, long n, float c) {
  float part[kLanes] = {};
  long j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int u = 0; u < kLanes; ++u) part[u] += (x[j + u] - c) * (x[j + u] - c);
  float s = 0.0f;
  for (int u = 0; u < kLanes; ++u) s += part[u];
  for (; j < n; ++j) s += (x[j] - c) * (x[j] - c);
  return s;
}

// out = gelu(x + b) + r, gelu with the tanh form; one pass over the data.
void gelu(const Args& a) {
  Array x = input(a, "x"), b = input(a, "b"), r = input(a, "r");
  long rows = x.shape[0], cols = x.shape[1];
  Buffer out(x.size());
  timeAndReport(a.repeat, [&] {
    parallelFor(a.threads, rows, [&](long lo, long hi) {
      for (long i = lo; i < hi; ++i) {
        const float* __restrict xr = x.data.data() + i * cols;
        const float* __restrict rr = r.data.data() + i * cols;
        const float* __restrict bb = b.data.data();
        float* __restrict o = out.p + i * cols;
        for (long j = 0; j < cols; ++j) {
          float h = xr[j] + bb[j];
          float t = fastTanh(0.7978845608f * (h + 0.044715f * h * h * h));
          o[j] = 0.5f * h * (1.0f + t) + rr[j];
        }
      }
    });
  });
  writeNpy(a.out, out.p, x.shape);
}

// E = D + (A + B) * C, flat.
void ediff(const Args& a) {
  Array A = input(a, "A"), B = input(a, "B"), C = input(a, "C"), D = input(a, "D");
  Buffer E(A.size());
  timeAndReport(a.repeat, [&] {
    parallelFor(a.threads, A.size(), [&](long lo, long hi) {
      const float *__restrict pa = A.data.data(), *__restrict pb = B.data.data();
      const float *__restrict pc = C.data.data(), *__restrict pd = D.data.data();
      float* __restrict pe = E.p;
      for (long i = lo; i < hi; ++i) pe[i] = pd[i] + (pa[i] + pb[i]) * pc[i];
    });
  });
  writeNpy(a.out, E.p, A.shape);
}

// Row softmax: max, exp-and-sum (storing exp), scale; the row stays in cache between passes.
void softmax(const Args& a) {
  Array x = input(a, "x");
  long rows = x.shape[0], cols = x.shape[1];
  Buffer y(x.size());
  timeAndReport(a.repeat, [&] {
    parallelFor(a.threads, rows, [&](long lo, long hi) {
      for (long i = lo; i < hi; ++i) {
        const float* __restrict xr = x.data.data() + i * cols;
        float* __restrict yr = y.p + i * cols;
        float m = rowMax(xr, cols);
        for (long j = 0; j < cols; ++j) yr[j] = fastExp(xr[j] - m);
        float inv = 1.0f / rowSum(yr, cols);
        for (long j = 0; j < cols; ++j) yr[j] *= inv;
      }
    });
  });
  writeNpy(a.out, y.p, x.shape);
}

// Layer norm over the last dimension: mean, variance (two-pass, from cache), epilogue.
void layernorm(const Args& a) {
  Array x = input(a, "x"), gamma = input(a, "gamma"), beta = input(a, "beta");
  long rows = x.shape[0], cols = x.shape[1];
  Buffer y(x.size());
  timeAndReport(a.repeat, [&] {
    parallelFor(a.threads, rows, [&](long lo, long hi) {
      for (long i = lo; i < hi; ++i) {
        const float* __restrict xr = x.data.data() + i * cols;
        const float *__restrict g = gamma.data.data(), *__restrict bt = beta.data.data();
        float* __restrict yr = y.p + i * cols;
        float mean = rowSum(xr, cols) / cols;
        float inv = 1.0f / std::sqrt(rowSumSq(xr, cols, mean) / cols + 1e-5f);
        for (long j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * inv * g[j] + bt[j];
      }
    });
  });
  writeNpy(a.out, y.p, x.shape);
}

// conv 3x3 pad 1 + per-channel scale/bias + 2x2 max pool, fused: for each pooled row and each
// block of 16 output channels, compute the two conv rows in registers (4 pixels x 16
// channels at a time), apply scale/bias, pool, and store. The input is copied into a
// zero-padded buffer first (inside the timing); the weights are repacked once, outside it,
// as constants are.
typedef float v8 __attribute__((vector_size(32)));
constexpr int kKB = 16, kXT = 4;

void convPool(const Args& a) {
  Array I = input(a, "I"), Wt = input(a, "Wt"), scale = input(a, "scale"), bias = input(a, "bias");
  long N = I.shape[0], C = I.shape[1], H = I.shape[2], W = I.shape[3], K = Wt.shape[0];
  if (K % kKB || W % kXT || W % 2 || H % 2 || W > 512)
    throw std::runtime_error("conv: K must be a multiple of 16, W of 4 and at most 512, H and W even");
  long Hp = H + 2, Wp = W + 2, PH = H / 2, PW = W / 2;
  Buffer wpack(K * C * 9);  // [K/16][C][3][3][16]
  for (long k = 0; k < K; ++k)
    for (long c = 0; c < C; ++c)
      for (long t = 0; t < 9; ++t) wpack.p[(((k / kKB) * C + c) * 9 + t) * kKB + k % kKB] = Wt.data[(k * C + c) * 9 + t];
  Buffer padded(N * C * Hp * Wp), out(N * K * PH * PW);
  timeAndReport(a.repeat, [&] {
    parallelFor(a.threads, N * C, [&](long lo, long hi) {
      for (long nc = lo; nc < hi; ++nc)
        for (long y = 0; y < H; ++y)
          std::memcpy(padded.p + (nc * Hp + y + 1) * Wp + 1, I.data.data() + (nc * H + y) * W, W * sizeof(float));
    });
    parallelFor(a.threads, N * (K / kKB) * PH, [&](long lo, long hi) {
      alignas(32) float rowbuf[2][512][kKB];
      for (long task = lo; task < hi; ++task) {
        long py = task % PH, kb = (task / PH) % (K / kKB), n = task / (PH * (K / kKB));
        const float* wb = wpack.p + kb * C * 9 * kKB;
        for (int dy = 0; dy < 2; ++dy) {
          long y = 2 * py + dy;
          for (long x0 = 0; x0 < W; x0 += kXT) {
            v8 acc[kXT][2] = {};
            for (long c = 0; c < C; ++c) {
              const float* src = padded.p + ((n * C + c) * Hp + y) * Wp + x0;
              const float* w = wb + c * 9 * kKB;
              for (int r = 0; r < 3; ++r)
                for (int s = 0; s < 3; ++s) {
                  v8 w0 = *reinterpret_cast<const v8*>(w + (r * 3 + s) * kKB);
                  v8 w1 = *reinterpret_cast<const v8*>(w + (r * 3 + s) * kKB + 8);
                  for (int t = 0; t < kXT; ++t) {
                    float v = src[r * Wp + s + t];
                    acc[t][0] += w0 * v;
                    acc[t][1] += w1 * v;
                  }
                }
            }
            for (int t = 0; t < kXT; ++t) {
              *reinterpret_cast<v8*>(rowbuf[dy][x0 + t]) = acc[t][0];
              *reinterpret_cast<v8*>(rowbuf[dy][x0 + t] + 8) = acc[t][1];
            }
          }
        }
        for (int kk = 0; kk < kKB; ++kk) {
          long k = kb * kKB + kk;
          float sc = scale.data[k], bi = bias.data[k];
          float* dst = out.p + ((n * K + k) * PH + py) * PW;
          for (long px = 0; px < PW; ++px) {
            float m0 = std::max(rowbuf[0][2 * px][kk] * sc + bi, rowbuf[0][2 * px + 1][kk] * sc + bi);
            float m1 = std::max(rowbuf[1][2 * px][kk] * sc + bi, rowbuf[1][2 * px + 1][kk] * sc + bi);
            dst[px] = std::max(m0, m1);
          }
        }
      }
    });
  });
  writeNpy(a.out, out.p, {N, K, PH, PW});
}

// Attention written by hand the FlashAttention-2 way (the peer of texc's online-softmax kernel):
// blocks of kRows query rows across threads; for each block, tiles of kKeys keys: the scores tile
// Q K^T (K's tile transposed into a small buffer, so the dot products vectorise over the keys),
// the online update of each row's running max and sum with the rescaling of its output row, and
// the P V tile accumulated into the output rows. Nothing of N x N is stored. Causal: key tiles
// past the block's last row are skipped, and the tile on the diagonal masks j > i.
template <bool Causal>
void flashAttention(const Args& a) {
  constexpr long kRows = 4, kKeys = 64;
  Array Q = input(a, "Q"), K = input(a, "K"), V = input(a, "V");
  const long N = Q.shape[0], d = Q.shape[1];
  const float scale = 1.0f / std::sqrt(float(d));
  Buffer O(N * d);
  timeAndReport(a.repeat, [&] {
    const long blocks = (N + kRows - 1) / kRows;
    parallelFor(a.threads, blocks, [&](long lo, long hi) {
      std::vector<float> kt(d * kKeys), s(kRows * kKeys), acc(kRows * d);
      for (long b = lo; b < hi; ++b) {
        const long i0 = b * kRows, rows = std::min(kRows, N - i0);
        float m[kRows], l[kRows];
        for (long r = 0; r < kRows; ++r) m[r] = -INFINITY, l[r] = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        const long keyEnd = Causal ? std::min(N, i0 + rows) : N;
        for (long j0 = 0; j0 < keyEnd; j0 += kKeys) {
          const long keys = std::min(kKeys, keyEnd - j0);
          for (long jj = 0; jj < keys; ++jj)
            for (long c = 0; c < d; ++c) kt[c * kKeys + jj] = K.data[(j0 + jj) * d + c];
          for (long r = 0; r < rows; ++r) {
            float* __restrict sr = s.data() + r * kKeys;
            const float* __restrict q = Q.data.data() + (i0 + r) * d;
            for (long jj = 0; jj < kKeys; ++jj) sr[jj] = 0.0f;
            for (long c = 0; c < d; ++c) {
              const float qc = q[c];
              const float* __restrict kc = kt.data() + c * kKeys;
              for (long jj = 0; jj < kKeys; ++jj) sr[jj] += qc * kc[jj];
            }
            float tileMax = -INFINITY;
            for (long jj = 0; jj < keys; ++jj) {
              float v = sr[jj] * scale;
              if (Causal && j0 + jj > i0 + r) v = -INFINITY;
              sr[jj] = v;
              tileMax = std::max(tileMax, v);
            }
            const float mNew = std::max(m[r], tileMax);
            const float rescale = m[r] == -INFINITY ? 0.0f : fastExp(m[r] - mNew);
            float sum = 0.0f;
            for (long jj = 0; jj < keys; ++jj) {
              float p = sr[jj] == -INFINITY ? 0.0f : fastExp(sr[jj] - mNew);
              sr[jj] = p;
              sum += p;
            }
            l[r] = l[r] * rescale + sum;
            m[r] = mNew;
            float* __restrict o = acc.data() + r * d;
            for (long c = 0; c < d; ++c) o[c] *= rescale;
            for (long jj = 0; jj < keys; ++jj) {
              const float p = sr[jj];
              const float* __restrict v = V.data.data() + (j0 + jj) * d;
              for (long c = 0; c < d; ++c) o[c] += p * v[c];
            }
          }
        }
        for (long r = 0; r < rows; ++r) {
          const float inv = 1.0f / l[r];
          for (long c = 0; c < d; ++c) O.p[(i0 + r) * d + c] = acc[r * d + c] * inv;
        }
      }
    });
  }, "FlashAttention-2 loop, 4 query rows x 64 keys per tile");
  writeNpy(a.out, O.p, {N, d});
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parseArgs(argc, argv);
  try {
    if (a.workload == "gelu") gelu(a);
    else if (a.workload == "ediff") ediff(a);
    else if (a.workload == "softmax") softmax(a);
    else if (a.workload == "layernorm") layernorm(a);
    else if (a.workload == "conv") convPool(a);
    else if (a.workload == "attention") flashAttention<true>(a);
    else if (a.workload == "attention_full") flashAttention<false>(a);
    else {
      std::fprintf(stderr, "hand: no workload '%s'\n", a.workload.c_str());
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hand: %s\n", e.what());
    return 1;
  }
  return 0;
}
