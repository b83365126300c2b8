// blas.cpp — SGEMM and attention through a CBLAS library. Built twice by the driver: once
// against OpenBLAS (-DUSE_OPENBLAS) and once against BLIS (-DUSE_BLIS). The info field names
// the kernel the library picked at run time, since a generic fallback kernel is several times
// slower.
//   matmul     C = A B
//   attention  causal, one head: S = Q K^T / sqrt(d) (sgemm), row softmax over j <= i,
//              O = P V (sgemm); the N x N matrix S is materialised (64 MiB at N = 4096).
//   attention_full  the same without the mask (softmax over every j).
#include "common.h"
#include "vecmath.h"

#include <cmath>
#include <limits>

using namespace bench;

// The CBLAS entry points, declared here so that either library links without its header.
extern "C" {
void cblas_sgemm(int order, int transA, int transB, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                 int ldb, float beta, float* c, int ldc);
#ifdef USE_OPENBLAS
void openblas_set_num_threads(int n);
char* openblas_get_corename(void);
#endif
#ifdef USE_BLIS
void bli_thread_set_num_threads(long n);
int bli_arch_query_id(void);
const char* bli_arch_string(int id);
#endif
}

namespace {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

std::string setThreadsAndName(int threads) {
#ifdef USE_OPENBLAS
  openblas_set_num_threads(threads);
  return std::string("openblas kernel ") + openblas_get_corename();
#else
  bli_thread_set_num_threads(threads);
  return std::string("blis kernel ") + bli_arch_string(bli_arch_query_id());
#endif
}

void matmul(const Args& a) {
  Array A = input(a, "A"), B = input(a, "B");
  int M = A.shape[0], K = A.shape[1], N = B.shape[1];
  Buffer C(long(M) * N);
  std::string info = setThreadsAndName(a.threads);
  timeAndReport(
      a.repeat,
      [&] { cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, M, N, K, 1.0f, A.data.data(), K, B.data.data(), N, 0.0f, C.p, N); }, info);
  writeNpy(a.out, C.p, {M, N});
}

void attention(const Args& a, bool causal) {
  Array Q = input(a, "Q"), Kt = input(a, "K"), V = input(a, "V");
  int N = Q.shape[0], d = Q.shape[1];
  Buffer S(long(N) * N), O(long(N) * d);
  std::string info = setThreadsAndName(a.threads);
  timeAndReport(
      a.repeat,
      [&] {
        cblas_sgemm(kRowMajor, kNoTrans, kTrans, N, N, d, 1.0f / std::sqrt(float(d)), Q.data.data(), d, Kt.data.data(), d, 0.0f,
                    S.p, N);
        parallelFor(a.threads, N, [&](long lo, long hi) {
          for (long i = lo; i < hi; ++i) {
            float* __restrict row = S.p + i * N;
            float m = -std::numeric_limits<float>::infinity();
            const long last = causal ? i : N - 1;
            for (long j = 0; j <= last; ++j) m = std::max(m, row[j]);
            float s = 0.0f;
            for (long j = 0; j <= last; ++j) {
              row[j] = fastExp(row[j] - m);
              s += row[j];
            }
            float inv = 1.0f / s;
            for (long j = 0; j <= last; ++j) row[j] *= inv;
            for (long j = last + 1; j < N; ++j) row[j] = 0.0f;
          }
        });
        cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, N, d, N, 1.0f, S.p, N, V.data.data(), d, 0.0f, O.p, d);
      },
      info);
  writeNpy(a.out, O.p, {N, d});
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parseArgs(argc, argv);
  try {
    if (a.workload == "matmul") matmul(a);
    else if (a.workload == "attention") attention(a, true);
    else if (a.workload == "attention_full") attention(a, false);
    else {
      std::fprintf(stderr, "blas: no workload '%s'\n", a.workload.c_str());
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "blas: %s\n", e.what());
    return 1;
  }
  return 0;
}
