// dnnl.cpp — conv 3x3 pad 1 + per-channel scale/bias + 2x2 max pool with oneDNN: a
// convolution primitive with two binary post-ops (multiply by scale, add bias; oneDNN rejects
// per-channel f32 output scales as an attribute), then a max-pooling primitive. oneDNN picks
// its own activation layout ("any"); the timing includes the reorders from and back to NCHW,
// because texc and the other peers read and write NCHW. Weights are reordered once, outside
// the timing.
#include "common.h"

#include <oneapi/dnnl/dnnl.hpp>

using namespace bench;
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

int main(int argc, char** argv) {
  Args a = parseArgs(argc, argv);
  if (a.workload != "conv") {
    std::fprintf(stderr, "dnnl: no workload '%s'\n", a.workload.c_str());
    return 2;
  }
  Array I = input(a, "I"), Wt = input(a, "Wt"), scale = input(a, "scale"), bias = input(a, "bias");
  long N = I.shape[0], C = I.shape[1], H = I.shape[2], W = I.shape[3], K = Wt.shape[0];
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);

  memory::dims srcDims{N, C, H, W}, weiDims{K, C, 3, 3}, convDims{N, K, H, W}, poolDims{N, K, H / 2, W / 2}, chanDims{1, K, 1, 1};
  memory userSrc({srcDims, dt::f32, tag::nchw}, eng, I.data.data());
  memory userWei({weiDims, dt::f32, tag::oihw}, eng, Wt.data.data());
  memory scaleMem({chanDims, dt::f32, tag::nchw}, eng, scale.data.data());
  memory biasMem({chanDims, dt::f32, tag::nchw}, eng, bias.data.data());
  Buffer out(N * K * (H / 2) * (W / 2));
  memory userDst({poolDims, dt::f32, tag::nchw}, eng, out.p);

  post_ops po;
  po.append_binary(algorithm::binary_mul, scaleMem.get_desc());
  po.append_binary(algorithm::binary_add, biasMem.get_desc());
  primitive_attr attr;
  attr.set_post_ops(po);
  convolution_forward::desc convDesc(prop_kind::forward_inference, algorithm::convolution_direct,
                                     {srcDims, dt::f32, tag::any}, {weiDims, dt::f32, tag::any}, {convDims, dt::f32, tag::any},
                                     {1, 1}, {1, 1}, {1, 1});
  convolution_forward::primitive_desc convPd(convDesc, attr, eng);
  pooling_forward::desc poolDesc(prop_kind::forward_inference, algorithm::pooling_max, convPd.dst_desc(),
                                 {poolDims, dt::f32, tag::any}, {2, 2}, {2, 2}, {0, 0}, {0, 0});
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
  writeNpy(a.out, out.p, poolDims);
  return 0;
}
