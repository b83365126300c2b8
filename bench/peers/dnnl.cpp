// dnnl.cpp — conv 3x3 pad 1 + per-channel scale/bias + 2x2 max pool with oneDNN: a
// convolution primitive with two binary post-ops (multiply by scale, add bias; oneDNN rejects
// per-channel f32 output scales as an attribute), then a max-pooling primitive. oneDNN picks
// its own activation layout ("any"); the timing includes the reorders from and back to NCHW,
// because texc and the other peers read and write NCHW. Weights are reordered once, outside
// the timing.
//
// conv_bf16: the same with input, weights, convolution and pool in bf16 (scale and bias f32
// post-ops, f32 accumulation inside oneDNN); the f32 inputs (bf16 values exactly) are converted
// outside the timing, the bf16 result is written back as f32.
//
// matmul_bf16: C = A B with A, B and C in bf16 (f32 accumulation inside oneDNN), all three in
// the plain row-major layout texc is given, so that oneDNN packs B inside the timing as texc
// does. The f32 inputs (bf16 values exactly) are converted to bf16 outside the timing; the bf16
// result is written back as f32.
#include "common.h"

#include <cstring>

#include <oneapi/dnnl/dnnl.hpp>

using namespace bench;
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

uint16_t toBf16(float f) {  // the inputs are bf16 values already: truncation is exact
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

float fromBf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

int matmulBf16(const Args& a) {
  Array A = input(a, "A"), B = input(a, "B");
  long M = A.shape[0], K = A.shape[1], N = B.shape[1];
  std::vector<uint16_t> a16(A.data.size()), b16(B.data.size()), c16(static_cast<size_t>(M * N));
  for (size_t i = 0; i < a16.size(); ++i) a16[i] = toBf16(A.data[i]);
  for (size_t i = 0; i < b16.size(); ++i) b16[i] = toBf16(B.data[i]);
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  memory::desc aDesc({M, K}, dt::bf16, tag::ab), bDesc({K, N}, dt::bf16, tag::ab), cDesc({M, N}, dt::bf16, tag::ab);
  memory aMem(aDesc, eng, a16.data()), bMem(bDesc, eng, b16.data()), cMem(cDesc, eng, c16.data());
  matmul::primitive_desc pd(matmul::desc(aDesc, bDesc, cDesc), eng);
  matmul mm(pd);
  timeAndReport(
      a.repeat,
      [&] {
        mm.execute(strm, {{DNNL_ARG_SRC, aMem}, {DNNL_ARG_WEIGHTS, bMem}, {DNNL_ARG_DST, cMem}});
        strm.wait();
      },
      std::string("matmul ") + pd.impl_info_str());
  Buffer out(M * N);
  for (long i = 0; i < M * N; ++i) out.p[i] = fromBf16(c16[static_cast<size_t>(i)]);
  writeNpy(a.out, out.p, {M, N});
  return 0;
}

std::vector<uint16_t> toBf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = toBf16(v[i]);
  return out;
}

// conv + scale/bias + pool in `type` (f32 or bf16).
int convPool(const Args& a, dt type) {
  Array I = input(a, "I"), Wt = input(a, "Wt"), scale = input(a, "scale"), bias = input(a, "bias");
  long N = I.shape[0], C = I.shape[1], H = I.shape[2], W = I.shape[3], K = Wt.shape[0];
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);

  const bool bf16 = type == dt::bf16;
  std::vector<uint16_t> src16 = bf16 ? toBf16(I.data) : std::vector<uint16_t>{}, wei16 = bf16 ? toBf16(Wt.data) : std::vector<uint16_t>{};
  memory::dims srcDims{N, C, H, W}, weiDims{K, C, 3, 3}, convDims{N, K, H, W}, poolDims{N, K, H / 2, W / 2}, chanDims{1, K, 1, 1};
  memory userSrc({srcDims, type, tag::nchw}, eng, bf16 ? static_cast<void*>(src16.data()) : I.data.data());
  memory userWei({weiDims, type, tag::oihw}, eng, bf16 ? static_cast<void*>(wei16.data()) : Wt.data.data());
  memory scaleMem({chanDims, dt::f32, tag::nchw}, eng, scale.data.data());
  memory biasMem({chanDims, dt::f32, tag::nchw}, eng, bias.data.data());
  Buffer out(N * K * (H / 2) * (W / 2));
  std::vector<uint16_t> out16(bf16 ? static_cast<size_t>(N * K * (H / 2) * (W / 2)) : 0);
  memory userDst({poolDims, type, tag::nchw}, eng, bf16 ? static_cast<void*>(out16.data()) : out.p);

  post_ops po;
  po.append_binary(algorithm::binary_mul, scaleMem.get_desc());
  po.append_binary(algorithm::binary_add, biasMem.get_desc());
  primitive_attr attr;
  attr.set_post_ops(po);
  convolution_forward::desc convDesc(prop_kind::forward_inference, algorithm::convolution_direct,
                                     {srcDims, type, tag::any}, {weiDims, type, tag::any}, {convDims, type, tag::any},
                                     {1, 1}, {1, 1}, {1, 1});
  convolution_forward::primitive_desc convPd(convDesc, attr, eng);
  pooling_forward::desc poolDesc(prop_kind::forward_inference, algorithm::pooling_max, convPd.dst_desc(),
                                 {poolDims, type, tag::any}, {2, 2}, {2, 2}, {0, 0}, {0, 0});
  pooling_forward::primitive_desc poolPd(poolDesc, eng);

  memory convSrc = userSrc, convWei = userWei, poolDst = userDst;
  bool reorderSrc = convPd.src_desc() != userSrc.get_desc(), reorderDst = poolPd.dst_desc() != userDst.get_desc();
  if (reorderSrc) convSrc = memory(convPd.src_desc(), eng);
  if (convPd.weights_desc() != userWei.get_desc()) {
    convWei = memory(convPd.weights_desc(), eng);
    reorder(userWei, convWei).execute(strm, userWei, convWei);
    strm.wait();
  }
  memory convDst(convPd.dst_desc(), eng);
  if (reorderDst) poolDst = memory(poolPd.dst_desc(), eng);
  convolution_forward conv(convPd);
  pooling_forward pool(poolPd);
  reorder srcReorder = reorderSrc ? reorder(userSrc, convSrc) : reorder();
  reorder dstReorder = reorderDst ? reorder(poolDst, userDst) : reorder();

  std::string info = std::string("conv ") + convPd.impl_info_str() + ", pool " + poolPd.impl_info_str();
  timeAndReport(
      a.repeat,
      [&] {
        if (reorderSrc) srcReorder.execute(strm, userSrc, convSrc);
        conv.execute(strm, {{DNNL_ARG_SRC, convSrc},
                            {DNNL_ARG_WEIGHTS, convWei},
                            {DNNL_ARG_DST, convDst},
                            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, scaleMem},
                            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, biasMem}});
        pool.execute(strm, {{DNNL_ARG_SRC, convDst}, {DNNL_ARG_DST, poolDst}});
        if (reorderDst) dstReorder.execute(strm, poolDst, userDst);
        strm.wait();
      },
      info);
  for (size_t i = 0; i < out16.size(); ++i) out.p[i] = fromBf16(out16[i]);
  writeNpy(a.out, out.p, poolDims);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = parseArgs(argc, argv);
  if (a.workload == "matmul_bf16") return matmulBf16(a);
  if (a.workload == "conv") return convPool(a, dt::f32);
  if (a.workload == "conv_bf16") return convPool(a, dt::bf16);
  std::fprintf(stderr, "dnnl: no workload '%s'\n", a.workload.c_str());
  return 2;
}
