// peers.cu — the vendor baselines for scripts/cuda-bench.sh, one line each:
//   copy_gbs <GB/s>          device-to-device copy of 2^26 floats (read + write bytes / time)
//   sgemm_ms <ms> <TFLOP/s>  cuBLAS SGEMM, 4096^3, fp32 (no tensor-core TF32: CUBLAS_DEFAULT_MATH)
//   bf16gemm_ms <ms> <TFLOP/s>  cuBLAS cublasGemmEx, 4096^3, bf16 in and out, f32 compute (tensor cores)
//   tf32gemm_ms <ms> <TFLOP/s>  cuBLAS SGEMM, 4096^3, fp32 with TF32 tensor cores (CUBLAS_TF32_TENSOR_OP_MATH)
//   convpool_ms <ms>         cuDNN conv 3x3 pad 1 (N=32, C=K=64, 56x56), then 2x2 max pool
//   softmax_ms <ms>          cuDNN softmax (accurate) over 4096 rows of 4096
// Every time is the median of 20 runs after warm-up, measured with CUDA events.
// Build: nvcc -O3 -arch=sm_90 peers.cu -lcublas -lcudnn -o cuda-peers
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                                      \
  do {                                                                                     \
    cudaError_t e = (x);                                                                   \
    if (e != cudaSuccess) {                                                                \
      std::fprintf(stderr, "cuda-peers: %s failed: %s\n", #x, cudaGetErrorString(e));      \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)
#define CHECK_CUBLAS(x)                                                                    \
  do {                                                                                     \
    cublasStatus_t s = (x);                                                                \
    if (s != CUBLAS_STATUS_SUCCESS) {                                                      \
      std::fprintf(stderr, "cuda-peers: %s failed: cuBLAS status %d\n", #x, (int)s);       \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)
#define CHECK_CUDNN(x)                                                                     \
  do {                                                                                     \
    cudnnStatus_t s = (x);                                                                 \
    if (s != CUDNN_STATUS_SUCCESS) {                                                       \
      std::fprintf(stderr, "cuda-peers: %s failed: %s\n", #x, cudnnGetErrorString(s));     \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

// Median milliseconds of `runs` calls of f after 3 warm-up calls.
template <typename F>
float medianMs(F f, int runs = 20) {
  for (int i = 0; i < 3; ++i) f();
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int i = 0; i < runs; ++i) {
    CHECK_CUDA(cudaEventRecord(a));
    f();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

float* deviceArray(size_t n, float value) {
  float* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, n * sizeof(float)));
  std::vector<float> host(n, value);
  CHECK_CUDA(cudaMemcpy(p, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return p;
}

int main() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    std::fprintf(stderr, "cuda-peers: no CUDA device\n");
    return 1;
  }
  // Copy bandwidth.
  {
    size_t n = size_t{1} << 26;
    float* src = deviceArray(n, 1.0f);
    float* dst = deviceArray(n, 0.0f);
    float ms = medianMs([&] { CHECK_CUDA(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice)); });
    std::printf("copy_gbs %.1f\n", 2.0 * n * sizeof(float) / (ms * 1e-3) / 1e9);
    CHECK_CUDA(cudaFree(src));
    CHECK_CUDA(cudaFree(dst));
  }
  // SGEMM 4096 (row-major C = A B computed as column-major C^T = B^T A^T).
  {
    int n = 4096;
    float* a = deviceArray(size_t(n) * n, 0.5f);
    float* b = deviceArray(size_t(n) * n, 0.25f);
    float* c = deviceArray(size_t(n) * n, 0.0f);
    cublasHandle_t h;
    CHECK_CUBLAS(cublasCreate(&h));
    CHECK_CUBLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    float one = 1, zero = 0;
    float ms = medianMs([&] { CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n)); });
    std::printf("sgemm_ms %.4f %.2f\n", ms, 2.0 * n * n * double(n) / (ms * 1e-3) / 1e12);
    // The same with TF32 tensor cores allowed: the peer of texc --math=fast.
    CHECK_CUBLAS(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
    ms = medianMs([&] { CHECK_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n)); });
    std::printf("tf32gemm_ms %.4f %.2f\n", ms, 2.0 * n * n * double(n) / (ms * 1e-3) / 1e12);
    CHECK_CUBLAS(cublasDestroy(h));
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(c));
  }
  // bf16 GEMM 4096: bf16 A, B and C, f32 accumulation, as texc's tensor-core tile.
  {
    int n = 4096;
    size_t count = size_t(n) * n;
    std::vector<__nv_bfloat16> host(count, __float2bfloat16(0.5f));
    __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
    for (__nv_bfloat16** p : {&a, &b, &c}) {
      CHECK_CUDA(cudaMalloc(p, count * sizeof(__nv_bfloat16)));
      CHECK_CUDA(cudaMemcpy(*p, host.data(), count * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
    }
    cublasHandle_t h;
    CHECK_CUBLAS(cublasCreate(&h));
    float one = 1, zero = 0;
    float ms = medianMs([&] {
      CHECK_CUBLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, CUDA_R_16BF, n, a, CUDA_R_16BF, n, &zero, c, CUDA_R_16BF,
                                n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    std::printf("bf16gemm_ms %.4f %.2f\n", ms, 2.0 * n * n * double(n) / (ms * 1e-3) / 1e12);
    CHECK_CUBLAS(cublasDestroy(h));
    for (__nv_bfloat16* p : {a, b, c}) CHECK_CUDA(cudaFree(p));
  }
  cudnnHandle_t dnn;
  CHECK_CUDNN(cudnnCreate(&dnn));
  // conv 3x3 pad 1 + 2x2 max pool.
  {
    int N = 32, C = 64, K = 64, H = 56, W = 56;
    cudnnTensorDescriptor_t in, conv, pool;
    cudnnFilterDescriptor_t filt;
    cudnnConvolutionDescriptor_t cd;
    cudnnPoolingDescriptor_t pd;
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&in));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&conv));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&pool));
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&filt));
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&cd));
    CHECK_CUDNN(cudnnCreatePoolingDescriptor(&pd));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(in, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(conv, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, H, W));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(pool, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, K, H / 2, W / 2));
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(filt, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, 3, 3));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    // FMA math: no tensor cores and no TF32, so cuDNN does the f32 FMAs texc's kernel does.
    CHECK_CUDNN(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
    CHECK_CUDNN(cudnnSetPooling2dDescriptor(pd, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
    float* x = deviceArray(size_t(N) * C * H * W, 0.5f);
    float* w = deviceArray(size_t(K) * C * 9, 0.01f);
    float* y = deviceArray(size_t(N) * K * H * W, 0.0f);
    float* p = deviceArray(size_t(N) * K * (H / 2) * (W / 2), 0.0f);
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int found = 0;
    CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(dnn, in, filt, cd, conv, 8, &found, perf));
    cudnnConvolutionFwdAlgo_t algo = perf[0].algo;
    size_t wsBytes = 0;
    CHECK_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(dnn, in, filt, cd, conv, algo, &wsBytes));
    void* ws = nullptr;
    if (wsBytes) CHECK_CUDA(cudaMalloc(&ws, wsBytes));
    float one = 1, zero = 0;
    float ms = medianMs([&] {
      CHECK_CUDNN(cudnnConvolutionForward(dnn, &one, in, x, filt, w, cd, algo, ws, wsBytes, &zero, conv, y));
      CHECK_CUDNN(cudnnPoolingForward(dnn, pd, &one, conv, y, &zero, pool, p));
    });
    std::printf("convpool_ms %.4f\n", ms);
  }
  // softmax over rows.
  {
    int R = 4096, D = 4096;
    cudnnTensorDescriptor_t t;
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&t));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, R, D, 1, 1));
    float* x = deviceArray(size_t(R) * D, 0.5f);
    float* y = deviceArray(size_t(R) * D, 0.0f);
    float one = 1, zero = 0;
    float ms = medianMs([&] {
      CHECK_CUDNN(cudnnSoftmaxForward(dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one, t, x, &zero, t, y));
    });
    std::printf("softmax_ms %.4f\n", ms);
  }
  CHECK_CUDNN(cudnnDestroy(dnn));
  return 0;
}
