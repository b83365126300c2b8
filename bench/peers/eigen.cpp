// eigen.cpp — SGEMM with Eigen's own kernels (header-only, built with -O3 -march=native and
// Eigen's OpenMP threading).
#include "common.h"

#include <Eigen/Core>

using namespace bench;

int main(int argc, char** argv) {
  Args a = parseArgs(argc, argv);
  if (a.workload != "matmul") {
    std::fprintf(stderr, "eigen: no workload '%s'\n", a.workload.c_str());
    return 2;
  }
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Array A = input(a, "A"), B = input(a, "B");
  long M = A.shape[0], K = A.shape[1], N = B.shape[1];
  Eigen::Map<const Mat> ma(A.data.data(), M, K), mb(B.data.data(), K, N);
  Mat c(M, N);
  Eigen::setNbThreads(a.threads);
  timeAndReport(a.repeat, [&] { c.noalias() = ma * mb; }, "eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
                                                             std::to_string(EIGEN_MAJOR_VERSION) + ", " +
                                                             std::to_string(Eigen::nbThreads()) + " threads");
  writeNpy(a.out, c.data(), {M, N});
  return 0;
}
