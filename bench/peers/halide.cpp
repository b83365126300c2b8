// halide.cpp — Halide 14 peers, JIT-compiled for the host, one hand schedule per workload.
// Halide's built-in tanh and exp lower to scalar calls on x86, so tanh is built from
// Halide::fast_exp (a vectorizable polynomial): tanh(x) = 1 - 2 / (exp(2x) + 1).
//   gelu, ediff   one fused loop, vectorized, rows (or chunks) in parallel
//   softmax       per row in parallel: max and sum reductions vectorized through rfactor, the
//                 exponentials kept in a row buffer
//   matmul        register tiles of 8 rows x 2 vectors, k innermost, row panels in parallel
//                 (no packing, no K blocking)
#include "common.h"

#include <Halide.h>

using namespace bench;
using namespace Halide;

namespace {

Halide::Buffer<float> wrap(Array& a) {
  std::vector<int> dims(a.shape.rbegin(), a.shape.rend());  // Halide's x is the last numpy dimension
  return Halide::Buffer<float>(a.data.data(), dims);
}

Expr vtanh(Expr x) {
  x = clamp(x, -9.0f, 9.0f);
  return 1.0f - 2.0f / (fast_exp(2.0f * x) + 1.0f);
}

void run(const Args& a, Func out, Halide::Buffer<float>& result, const std::string& info) {
  Target t = get_jit_target_from_environment();
  out.compile_jit(t);
  timeAndReport(a.repeat, [&] { out.realize(result); }, (info.empty() ? "" : info + ", ") + "target " + t.to_string());
}

int vec() { return get_host_target().has_feature(Target::AVX512_Skylake) ? 16 : 8; }

void gelu(const Args& a) {
  Array xa = input(a, "x"), ba = input(a, "b"), ra = input(a, "r");
  Halide::Buffer<float> X = wrap(xa), B = wrap(ba), R = wrap(ra), result(X.dim(0).extent(), X.dim(1).extent());
  Var j("j"), i("i"), jo("jo"), ji("ji");
  Func out("out");
  Expr h = X(j, i) + B(j);
  out(j, i) = 0.5f * h * (1.0f + vtanh(0.7978845608f * (h + 0.044715f * h * h * h))) + R(j, i);
  out.parallel(i, 8).vectorize(j, vec() * 2);
  run(a, out, result, "fast_exp tanh");
  writeNpy(a.out, result.data(), xa.shape);
}

void ediff(const Args& a) {
  Array A = input(a, "A"), B = input(a, "B"), C = input(a, "C"), D = input(a, "D");
  Halide::Buffer<float> bA = wrap(A), bB = wrap(B), bC = wrap(C), bD = wrap(D), result(bA.dim(0).extent());
  Var x("x"), xo("xo"), xi("xi");
  Func out("E");
  out(x) = bD(x) + (bA(x) + bB(x)) * bC(x);
  out.split(x, xo, xi, 1 << 16).parallel(xo).vectorize(xi, vec() * 2);
  run(a, out, result, "");
  writeNpy(a.out, result.data(), A.shape);
}

void softmax(const Args& a) {
  Array xa = input(a, "x");
  Halide::Buffer<float> X = wrap(xa);
  int D = X.dim(0).extent(), R = X.dim(1).extent();
  Halide::Buffer<float> result(D, R);
  Var j("j"), i("i"), u("u");
  RDom r(0, D);
  Func mx("mx"), e("e"), s("s"), out("y");
  mx(i) = Float(32).min();
  mx(i) = max(mx(i), X(r, i));
  e(j, i) = fast_exp(X(j, i) - mx(i));
  s(i) = 0.0f;
  s(i) += e(r, i);
  out(j, i) = e(j, i) / s(i);
  int v = vec();
  RVar ro("ro"), ri("ri");
  out.parallel(i).vectorize(j, v);
  e.compute_at(out, i).vectorize(j, v);
  mx.compute_at(out, i);
  s.compute_at(out, i);
  Func mxv = mx.update().split(r.x, ro, ri, v).rfactor(ri, u);
  mxv.compute_at(out, i).vectorize(u).update().vectorize(u);
  Func sv = s.update().split(r.x, ro, ri, v).rfactor(ri, u);
  sv.compute_at(out, i).vectorize(u).update().vectorize(u);
  run(a, out, result, "fast_exp");
  writeNpy(a.out, result.data(), xa.shape);
}

void matmul(const Args& a) {
  Array Aa = input(a, "A"), Ba = input(a, "B");
  Halide::Buffer<float> A = wrap(Aa), B = wrap(Ba);
  int K = A.dim(0).extent(), M = A.dim(1).extent(), N = B.dim(0).extent();
  Halide::Buffer<float> result(N, M);
  Var j("j"), i("i"), jo("jo"), io("io"), ji("ji"), ii("ii");
  RDom k(0, K);
  Func prod("prod"), out("C");
  prod(j, i) = 0.0f;
  prod(j, i) += A(k, i) * B(j, k);
  out(j, i) = prod(j, i);
  int v = vec();
  out.tile(j, i, jo, io, ji, ii, 2 * v, 8).parallel(io).vectorize(ji, v).unroll(ji).unroll(ii);
  prod.compute_at(out, jo).vectorize(j, v).unroll(j).unroll(i);
  prod.update().reorder(j, i, k).vectorize(j, v).unroll(j).unroll(i);
  run(a, out, result, "8x" + std::to_string(2 * v) + " register tiles");
  writeNpy(a.out, result.data(), {M, N});
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parseArgs(argc, argv);
  try {
    if (a.workload == "gelu") gelu(a);
    else if (a.workload == "ediff") ediff(a);
    else if (a.workload == "softmax") softmax(a);
    else if (a.workload == "matmul") matmul(a);
    else {
      std::fprintf(stderr, "halide: no workload '%s'\n", a.workload.c_str());
      return 2;
    }
  } catch (const Halide::Error& e) {
    std::fprintf(stderr, "halide: %s\n", e.what());
    return 1;
  }
  return 0;
}
