#include "compiler/backend/cuda/CodeGenCUDA.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "compiler/loops/MaskBounds.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/gpu/GpuLegality.h"
#include "compiler/loops/gpu/MapGpu.h"
#include "compiler/loops/gpu/SyncGpuThreads.h"
#include "frontend/AST.h"

namespace texc {

const char* strategyName(CudaStrategy s) { return loops::gpuStrategyName(s); }

namespace loops {
namespace {

// Helpers every kernel may call; guarded so that several programs can share one translation unit.
// max/min follow the CPU backend (NaN propagates, -0 < +0); f16/bf16 conversions round to nearest
// even like LLVM's fptrunc and the CPU backend's bf16 code. max/min compute every candidate first
// and then select, so that they compile to selp rather than to branches (with early returns, or
// a nested ?: of calls, softmax's kernel had 56 conditional branches; now 6, its loops'): of two
// equal values the AND of their bits is +0 for a -0/+0 pair (max) and the OR is -0 (min), and
// either operand, bit for bit, otherwise.
const char* const kPrelude = R"(#ifndef TEXC_CUDA_PRELUDE
#define TEXC_CUDA_PRELUDE
__device__ __forceinline__ unsigned texc_bits(float x) { union { float f; unsigned u; } c; c.f = x; return c.u; }
__device__ __forceinline__ float texc_float(unsigned u) { union { float f; unsigned u; } c; c.u = u; return c.f; }
__device__ __forceinline__ unsigned long long texc_bits(double x) { union { double f; unsigned long long u; } c; c.f = x; return c.u; }
__device__ __forceinline__ double texc_double(unsigned long long u) { union { double f; unsigned long long u; } c; c.u = u; return c.f; }
__device__ __forceinline__ float texc_max(float a, float b) {
  const float ordered = a > b ? a : b, same = texc_float(texc_bits(a) & texc_bits(b)), nan = a + b;
  const float m = a == b ? same : ordered;
  return (a != a || b != b) ? nan : m;
}
__device__ __forceinline__ float texc_min(float a, float b) {
  const float ordered = a < b ? a : b, same = texc_float(texc_bits(a) | texc_bits(b)), nan = a + b;
  const float m = a == b ? same : ordered;
  return (a != a || b != b) ? nan : m;
}
__device__ __forceinline__ double texc_max(double a, double b) {
  const double ordered = a > b ? a : b, same = texc_double(texc_bits(a) & texc_bits(b)), nan = a + b;
  const double m = a == b ? same : ordered;
  return (a != a || b != b) ? nan : m;
}
__device__ __forceinline__ double texc_min(double a, double b) {
  const double ordered = a < b ? a : b, same = texc_double(texc_bits(a) | texc_bits(b)), nan = a + b;
  const double m = a == b ? same : ordered;
  return (a != a || b != b) ? nan : m;
}
__device__ __forceinline__ float texc_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ double texc_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
__device__ __forceinline__ float texc_f16_load(unsigned short h) {
  unsigned e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? __uint_as_float(0x7fffffffu) : __uint_as_float(0x7f800000u)) : ldexpf((float)(m | 0x400u), (int)e - 25);
  return (h >> 15) ? -v : v;
}
__device__ __forceinline__ unsigned short texc_f16_store(float f) {
  unsigned x = texc_bits(f), sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);
  if (x >= 0x47800000u) return (unsigned short)(sign | 0x7c00u);
  if (x < 0x38800000u) return (unsigned short)(sign | (unsigned)rintf(texc_float(x) * 16777216.0f));
  unsigned h = (((x >> 23) - 112u) << 10) | ((x >> 13) & 0x3ffu), rest = x & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return (unsigned short)(sign | h);
}
__device__ __forceinline__ float texc_bf16_load(unsigned short h) { return texc_float((unsigned)h << 16); }
__device__ __forceinline__ unsigned short texc_bf16_store(float f) {
  unsigned x = texc_bits(f);
  if (f != f) return (unsigned short)((x >> 16) | 0x40u);
  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ long long texc_floordiv(long long a, long long c) { long long q = a / c; return (a % c < 0) ? q - 1 : q; }
__device__ __forceinline__ long long texc_mod(long long a, long long c) { long long r = a % c; return r < 0 ? r + c : r; }
__device__ __forceinline__ int texc_floordiv(int a, int c) { int q = a / c; return (a % c < 0) ? q - 1 : q; }
__device__ __forceinline__ int texc_mod(int a, int c) { int r = a % c; return r < 0 ? r + c : r; }
__device__ __forceinline__ unsigned texc_pair(unsigned short lo, unsigned short hi) { return (unsigned)lo | ((unsigned)hi << 16); }
#endif
)";

// Tensor cores (tiledContractionMma), for modules that use them: d += a b on one m16n8k16
// fragment, through inline PTX. Only in device compilation: the CPU emulation has its own.
const char* const kMmaPrelude = R"(#ifndef TEXC_CUDA_MMA
#define TEXC_CUDA_MMA
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 800
__device__ __forceinline__ void texc_mma_bf16(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void texc_mma_f16(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// TF32 (--math=fast): x rounded to TF32 (nearest, ties away from zero), in a 32-bit register.
__device__ __forceinline__ unsigned texc_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ void texc_mma_tf32(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#else
// TF32 rounding by hand: add half of the 13 dropped bits to the magnitude, then drop them
// (infinities and NaN unchanged).
__device__ __forceinline__ unsigned texc_tf32(float x) {
  const unsigned u = texc_bits(x);
  return (u & 0x7f800000u) == 0x7f800000u ? u : (u + 0x1000u) & 0xffffe000u;
}
// m16n8k8.tf32 by shuffles: lane 4g + t gathers row g (and g + 8) of A from lanes 4g..4g+3 and
// columns 2t, 2t + 1 of B from lanes 4(2t)..4(2t)+3 and 4(2t+1)..; k in order.
__device__ __forceinline__ void texc_mma_tf32(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  for (int q = 0; q < 4; ++q) {  // k = q and q + 4
    const int from = 4 * g + q;
    const float x0 = texc_float(__shfl_sync(0xffffffffu, a0, from)), x1 = texc_float(__shfl_sync(0xffffffffu, a1, from));
    const float x2 = texc_float(__shfl_sync(0xffffffffu, a2, from)), x3 = texc_float(__shfl_sync(0xffffffffu, a3, from));
    for (int c = 0; c < 2; ++c) {
      const int col = 4 * (2 * t + c) + q;
      const float y0 = texc_float(__shfl_sync(0xffffffffu, b0, col)), y1 = texc_float(__shfl_sync(0xffffffffu, b1, col));
      d[c] += x0 * y0 + x2 * y1;
      d[2 + c] += x1 * y0 + x3 * y1;
    }
  }
}
// Before sm_80 (no bf16 mma): the same fragment semantics with shuffles and FMAs, so that the
// program still runs, slowly. Lane 4g + t gathers rows g and g + 8 of A from lanes 4g..4g+3 and
// columns 2t, 2t + 1 of B from lanes 8t..8t+7.
__device__ __forceinline__ float texc_half(unsigned h, bool bf16) { return bf16 ? texc_float(h << 16) : texc_f16_load((unsigned short)h); }
__device__ __forceinline__ void texc_mma_shuffled(float* d, const unsigned* a, unsigned b0, unsigned b1, bool bf16) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  for (int q = 0; q < 4; ++q) {
    const int from = 4 * g + q;
    const unsigned ra[4] = {__shfl_sync(0xffffffffu, a[0], from), __shfl_sync(0xffffffffu, a[1], from),
                            __shfl_sync(0xffffffffu, a[2], from), __shfl_sync(0xffffffffu, a[3], from)};
    for (int c = 0; c < 2; ++c) {
      const int col = 8 * t + 4 * c + q;
      const unsigned rb0 = __shfl_sync(0xffffffffu, b0, col), rb1 = __shfl_sync(0xffffffffu, b1, col);
      for (int h = 0; h < 2; ++h) {  // k = 2q + h, and 2q + h + 8
        const float x0 = texc_half(rb0 >> (16 * h) & 0xffffu, bf16), x1 = texc_half(rb1 >> (16 * h) & 0xffffu, bf16);
        d[c] += texc_half(ra[0] >> (16 * h) & 0xffffu, bf16) * x0 + texc_half(ra[2] >> (16 * h) & 0xffffu, bf16) * x1;
        d[2 + c] += texc_half(ra[1] >> (16 * h) & 0xffffu, bf16) * x0 + texc_half(ra[3] >> (16 * h) & 0xffffu, bf16) * x1;
      }
    }
  }
}
__device__ __forceinline__ void texc_mma_bf16(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  const unsigned a[4] = {a0, a1, a2, a3};
  texc_mma_shuffled(d, a, b0, b1, true);
}
__device__ __forceinline__ void texc_mma_f16(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  const unsigned a[4] = {a0, a1, a2, a3};
  texc_mma_shuffled(d, a, b0, b1, false);
}
#endif
#endif
#endif
)";

// Asynchronous copies from global to shared memory (tiledContraction with asyncCopy), for modules
// that use them. From sm_80 on, cp.async: the copy goes around the registers, and a source size
// of 0 fills the destination with zeros (an operand element outside the tensor). Before sm_80 a
// plain copy, finished at once. Only in device compilation: the CPU emulation has its own, which
// holds the copies back until the wait, as the hardware may.
const char* const kCpAsyncPrelude = R"(#ifndef TEXC_CUDA_CP_ASYNC
#define TEXC_CUDA_CP_ASYNC
#if defined(__CUDA_ARCH__)
template <typename T>
__device__ __forceinline__ void texc_cp_async(T* smem, const T* gmem, bool valid) {
#if __CUDA_ARCH__ >= 800
  const unsigned to = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(to), "l"(gmem), "n"(sizeof(T)), "r"(valid ? (int)sizeof(T) : 0));
#else
  *smem = valid ? *gmem : (T)0;
#endif
}
__device__ __forceinline__ void texc_cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// 16 bytes of a row (four floats or eight halves, 16-byte aligned at both ends) in one copy,
// cached in L2 only (.cg).
__device__ __forceinline__ void texc_cp_async16(void* smem, const void* gmem, bool valid) {
#if __CUDA_ARCH__ >= 800
  const unsigned to = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(gmem), "r"(valid ? 16 : 0));
#else
  *reinterpret_cast<uint4*>(smem) = valid ? *reinterpret_cast<const uint4*>(gmem) : make_uint4(0u, 0u, 0u, 0u);
#endif
}
// Waits until at most N of this thread's committed groups of copies are still in flight.
template <int N>
__device__ __forceinline__ void texc_cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
#endif
#endif
)";

bool isIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return false;
  return true;
}

// One kernel's code generator. Names: loop variables end in '_' ("i_"), buffers in "_p" ("x_p"),
// so neither can meet a C keyword, a math function, a CUDA built-in or each other.
// One kernel's printer: it reads the kernel's GPU mapping (map-gpu), its loop marks and its
// combines and barriers (sync-gpu-threads), and decides nothing. Names: loop variables end in '_'
// ("i_"), buffers in "_p" ("x_p"), so neither can meet a C keyword, a math function, a CUDA
// built-in or each other.
class KernelGen {
 public:
  KernelGen(const LoopProgram& p, const Kernel& k, const std::string& symbolPrefix, bool wideIndex)
      : p_(p), k_(k), m_(*k.gpu), prefix_(symbolPrefix), idx_(wideIndex ? "long long" : "int") {
    t_ = k.computeType == DType::F64 ? "double" : "float";
    for (size_t v = 0; v < k.varNames.size(); ++v)
      varNames_.push_back(isIdentifier(k.varNames[v]) ? k.varNames[v] + "_" : fmt::format("v{}_", v));
  }

  CudaKernel run(std::string& out) {
    CudaKernel info;
    // Kernel names may hold characters C does not allow ("k1_e.1"); the kN prefix keeps them unique.
    info.symbol = prefix_;
    for (char ch : k_.name) info.symbol += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    info.loopKernel = k_.name;
    info.strategy = m_.strategy;
    info.blocks = m_.blocks;
    info.threads = m_.threads;
    info.minBlocksPerSM = m_.minBlocksPerSM;
    info.mapping = m_.notes;
    const std::vector<bool> stored = loops::buffersStored(p_, k_);  // the output, and split-keys' row statistics
    for (size_t b = 0; b < p_.buffers.size(); ++b) {
      bool written = stored[b];
      info.paramTypes.push_back(fmt::format("{}{}*", written ? "" : "const ", storageType(p_.buffers[b].dtype)));
    }
    // The loops the grid covers (marked grid, blocks, tile-rows or tile-cols): the perfect nest
    // from the top; the statements inside them run per output, row or tile element.
    if (k_.body.size() == 1)
      for (const Loop* l : perfectNest(k_.body[0])) {
        if (l->gpu != GpuLoop::Grid && l->gpu != GpuLoop::Blocks && l->gpu != GpuLoop::TileRows && l->gpu != GpuLoop::TileCols) break;
        lhs_.push_back(l);
      }
    const Block* inner = lhs_.empty() ? &k_.body : &innermostBody(lhs_);
    outputs_ = 1;
    for (const Loop* l : lhs_) outputs_ *= l->extent;

    std::string body;
    switch (m_.strategy) {
      case GpuStrategy::TiledContraction: tiledContraction(*inner, body); break;
      case GpuStrategy::BlockReduce: blockReduce(*inner, body); break;
      case GpuStrategy::RowBlock: rowBlock(*inner, body); break;
      case GpuStrategy::OnlineTile: onlineTile(*inner, body); break;
      case GpuStrategy::GridStride: m_.float4 ? vectorized(*inner, body) : gridStride(*inner, body); break;
    }

    std::string params;
    for (size_t b = 0; b < p_.buffers.size(); ++b)
      params += fmt::format("{}{} __restrict__ {}", b ? ", " : "", info.paramTypes[b], bufferName(static_cast<int>(b)));
    out += fmt::format("// kernel {}: {}, launch <<<{}, {}>>>\n", k_.name, strategyName(info.strategy), info.blocks, info.threads);
    for (const std::string& m : info.mapping) out += "//   " + m + "\n";
    const std::string bounds = info.minBlocksPerSM > 1 ? fmt::format("{}, {}", info.threads, info.minBlocksPerSM) : std::to_string(info.threads);
    out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n{}}}\n\n", bounds, info.symbol, params, body);
    return info;
  }

 private:
  using LoadMap = std::map<const Expr*, std::string>;

  // ---- names and types -------------------------------------------------------------------------
  std::string bufferName(int b) const {
    const std::string& n = p_.buffers[b].name;
    return isIdentifier(n) ? n + "_p" : fmt::format("b{}_p", b);
  }
  static const char* storageType(DType t) {
    switch (t) {
      case DType::F32: return "float";
      case DType::F64: return "double";
      case DType::F16:
      case DType::BF16: return "unsigned short";
    }
    return "?";
  }
  std::string literal(double v) const {
    bool f32 = t_ == std::string("float");
    // Bit casts: NVRTC and ptxas fold neither 1.0f / 0.0f nor 0.0f / 0.0f, and each costs a division.
    if (std::isnan(v)) return f32 ? "__uint_as_float(0x7fffffffu)" : "__longlong_as_double(0x7fffffffffffffffLL)";
    if (std::isinf(v))
      return v > 0 ? (f32 ? "__uint_as_float(0x7f800000u)" : "__longlong_as_double(0x7ff0000000000000LL)")
                   : (f32 ? "__uint_as_float(0xff800000u)" : "(-__longlong_as_double(0x7ff0000000000000LL))");
    std::string s = f32 ? fmt::format("{:.9g}", v) : fmt::format("{:.17g}", v);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    if (f32) s += "f";
    return v < 0 ? "(" + s + ")" : s;
  }
  std::string fn(const char* name) const { return t_ == std::string("float") ? std::string(name) + "f" : name; }
  std::string identity(ReduceKind r) const {
    switch (r) {
      case ReduceKind::Sum: return literal(0);
      case ReduceKind::Prod: return literal(1);
      case ReduceKind::Max: return literal(-INFINITY);
      case ReduceKind::Min: return literal(INFINITY);
    }
    return "?";
  }
  static std::string combine(ReduceKind r, const std::string& a, const std::string& b) {
    switch (r) {
      case ReduceKind::Sum: return fmt::format("{} + {}", a, b);
      case ReduceKind::Prod: return fmt::format("{} * {}", a, b);
      case ReduceKind::Max: return fmt::format("texc_max({}, {})", a, b);
      case ReduceKind::Min: return fmt::format("texc_min({}, {})", a, b);
    }
    return "?";
  }

  // ---- index expressions, values, statements -----------------------------------------------------
  std::string index(const IndexExpr& ix) const {
    switch (ix.kind) {
      case IndexExpr::Kind::Const: return std::to_string(ix.constant);
      case IndexExpr::Kind::Var: return varNames_[ix.var];
      case IndexExpr::Kind::Add: return fmt::format("({} + {})", index(ix.ops[0]), index(ix.ops[1]));
      case IndexExpr::Kind::Sub: return fmt::format("({} - {})", index(ix.ops[0]), index(ix.ops[1]));
      case IndexExpr::Kind::Mul: return fmt::format("{} * {}", ix.constant, index(ix.ops[0]));
      // A non-negative operand divides as C does (by a constant: a multiply-high and a shift);
      // otherwise the helpers round toward -infinity, in the kernel's index width.
      case IndexExpr::Kind::FloorDiv:
        if (nonNegative(ix.ops[0])) return fmt::format("({} / {})", index(ix.ops[0]), ix.constant);
        return fmt::format("texc_floordiv(({}){}, ({}){})", idx_, index(ix.ops[0]), idx_, ix.constant);
      case IndexExpr::Kind::Mod:
        if (nonNegative(ix.ops[0])) return fmt::format("({} % {})", index(ix.ops[0]), ix.constant);
        return fmt::format("texc_mod(({}){}, ({}){})", idx_, index(ix.ops[0]), idx_, ix.constant);
    }
    return "?";
  }
  // Whether `ix` is >= 0 for every value of its variables (loop variables count from 0, and the
  // mapped ones, row0 + ..., k0 + kk, from 0 too); floor division and modulo by the positive
  // constants of the language keep that.
  static bool nonNegative(const IndexExpr& ix) {
    switch (ix.kind) {
      case IndexExpr::Kind::Const: return ix.constant >= 0;
      case IndexExpr::Kind::Var: return true;
      case IndexExpr::Kind::Add: return nonNegative(ix.ops[0]) && nonNegative(ix.ops[1]);
      case IndexExpr::Kind::Sub: return false;
      case IndexExpr::Kind::Mul: return ix.constant >= 0 && nonNegative(ix.ops[0]);
      case IndexExpr::Kind::FloorDiv:
      case IndexExpr::Kind::Mod: return nonNegative(ix.ops[0]);
    }
    return false;
  }

  std::string offset(int buffer, const std::vector<IndexExpr>& idx) const {
    const Buffer& buf = p_.buffers[buffer];
    std::string s;
    int64_t stride = 1;
    for (size_t d = idx.size(); d-- > 0;) {
      const bool zero = idx[d].kind == IndexExpr::Kind::Const && idx[d].constant == 0;
      std::string term = stride == 1 ? index(idx[d]) : fmt::format("{} * {}", stride, index(idx[d]));
      if (!zero) s = s.empty() ? term : term + " + " + s;
      stride *= buf.shape[d];
    }
    return s.empty() ? "0" : s;
  }

  std::string load(const Expr& e) const { return loadAt(e.buffer, offset(e.buffer, e.index)); }
  std::string loadAt(int buffer, const std::string& at) const {
    std::string raw = fmt::format("{}[{}]", bufferName(buffer), at);
    switch (p_.buffers[buffer].dtype) {
      case DType::F16: return fmt::format("(({})texc_f16_load({}))", t_, raw);
      case DType::BF16: return fmt::format("(({})texc_bf16_load({}))", t_, raw);
      default: return p_.buffers[buffer].dtype == k_.computeType ? raw : fmt::format("(({}){})", t_, raw);
    }
  }

  std::string expr(const Expr& e, const LoadMap& loads) const {
    switch (e.kind) {
      case ExprKind::Const: return e.isBool ? (e.constant != 0 ? "true" : "false") : literal(e.constant);
      case ExprKind::VarValue: return fmt::format("(({}){})", t_, e.index.empty() ? varNames_[e.var] : index(e.index[0]));
      case ExprKind::Load: {
        auto it = loads.find(&e);
        if (it != loads.end()) return it->second;
        auto row = rowRegs_.find(e.buffer);
        if (row != rowRegs_.end() && !laneCounter_.empty()) return fmt::format("{}[{}]", row->second, laneCounter_);
        // Predicated code runs for rows and keys it does not count: a load from memory only when on.
        return on_.empty() ? load(e) : fmt::format("({} ? {} : {})", on_, load(e), literal(0));
      }
      case ExprKind::AccRead: return fmt::format("acc{}", e.acc);
      case ExprKind::Unary: return fmt::format("({}{})", e.unaryOp == UnaryOp::Neg ? "-" : "!", expr(e.args[0], loads));
      case ExprKind::Binary: {
        if (e.binaryOp == BinaryOp::Mod) throw std::logic_error("'%' reached code generation");
        if (reciprocalOfAcc(e) && rcpNames_.count(e.args[1].acc)) return rcpNames_.at(e.args[1].acc);
        const char* op = e.binaryOp == BinaryOp::And ? "&&" : e.binaryOp == BinaryOp::Or ? "||" : spelling(e.binaryOp);
        return fmt::format("({} {} {})", expr(e.args[0], loads), op, expr(e.args[1], loads));
      }
      case ExprKind::Call: return call(e, loads);
    }
    return "?";
  }

  std::string call(const Expr& e, const LoadMap& loads) const {
    std::vector<std::string> a;
    for (const Expr& x : e.args) a.push_back(expr(x, loads));
    switch (e.builtin) {
      case Builtin::Exp: return fmt::format("{}({})", fn("exp"), a[0]);
      case Builtin::Log: return fmt::format("{}({})", fn("log"), a[0]);
      case Builtin::Sqrt: return fmt::format("{}({})", fn("sqrt"), a[0]);
      // 1 / sqrt rather than rsqrtf, whose error is larger than the tolerance the tests allow.
      case Builtin::Rsqrt: return fmt::format("({} / {}({}))", literal(1), fn("sqrt"), a[0]);
      case Builtin::Tanh: return fmt::format("{}({})", fn("tanh"), a[0]);
      case Builtin::Sigmoid: return fmt::format("texc_sigmoid({})", a[0]);
      case Builtin::Relu: return fmt::format("texc_max({}, {})", a[0], literal(0));
      case Builtin::Abs: return fmt::format("{}({})", fn("fabs"), a[0]);
      case Builtin::Erf: return fmt::format("{}({})", fn("erf"), a[0]);
      case Builtin::Sin: return fmt::format("{}({})", fn("sin"), a[0]);
      case Builtin::Cos: return fmt::format("{}({})", fn("cos"), a[0]);
      case Builtin::Floor: return fmt::format("{}({})", fn("floor"), a[0]);
      case Builtin::Ceil: return fmt::format("{}({})", fn("ceil"), a[0]);
      case Builtin::Pow: return fmt::format("{}({}, {})", fn("pow"), a[0], a[1]);
      case Builtin::Min: return fmt::format("texc_min({}, {})", a[0], a[1]);
      case Builtin::Max: return fmt::format("texc_max({}, {})", a[0], a[1]);
      case Builtin::Select: return fmt::format("({} ? {} : {})", a[0], a[1], a[2]);
      case Builtin::RoundF16: return fmt::format("(({})texc_f16_load(texc_f16_store((float){})))", t_, a[0]);
      case Builtin::RoundBF16: return fmt::format("(({})texc_bf16_load(texc_bf16_store((float){})))", t_, a[0]);
    }
    return "?";
  }

  // `v` converted to buffer b's storage type.
  std::string storeValue(int b, std::string v) const {
    switch (p_.buffers[b].dtype) {
      case DType::F16: return fmt::format("texc_f16_store((float){})", v);
      case DType::BF16: return fmt::format("texc_bf16_store((float){})", v);
      default: return p_.buffers[b].dtype != k_.computeType ? fmt::format("({}){}", storageType(p_.buffers[b].dtype), v) : v;
    }
  }

  std::string store(const Store& s, const LoadMap& loads) const {
    auto row = rowRegs_.find(s.buffer);
    if (row != rowRegs_.end() && !laneCounter_.empty()) {  // a row in registers keeps the rounded value
      std::string reg = fmt::format("{}[{}]", row->second, laneCounter_);
      return fmt::format("{} = {};", reg, predicated(expr(s.value, loads), reg));
    }
    std::string v = expr(loops::valueToRound(p_, s), loads);
    switch (p_.buffers[s.buffer].dtype) {
      case DType::F16: v = fmt::format("texc_f16_store((float){})", v); break;
      case DType::BF16: v = fmt::format("texc_bf16_store((float){})", v); break;
      default: if (p_.buffers[s.buffer].dtype != k_.computeType) v = fmt::format("({}){}", storageType(p_.buffers[s.buffer].dtype), v);
    }
    std::string st = fmt::format("{}[{}] = {};", bufferName(s.buffer), offset(s.buffer, s.index), v);
    // A row statistic stored after the keys (split-keys), with rows in registers: every lane of
    // the row holds it; the first stores it, for a real row only.
    if (rows_ && !rows_->splitLoops.empty() && laneCounter_.empty())
      st = fmt::format("if ({}{}) {}", on_.empty() ? "active" : on_, rows_->lanes > 1 ? " && lane == 0" : "", st);
    return st;
  }

  void stmt(const Stmt& s, int depth, std::string& out, const LoadMap& loads = {}) const {
    std::string pad(2 * depth, ' ');
    switch (s.kind()) {
      case StmtKind::Loop: {
        const Loop& l = s.as<Loop>();
        if (rows_ && rows_->splitLoops.count(&l)) {
          splitLoop(l, depth, out, loads);
          break;
        }
        out += fmt::format("{}for ({} {} = 0; {} < {}; ++{}) {{\n", pad, idx_, varNames_[l.var], varNames_[l.var], l.extent, varNames_[l.var]);
        for (const Stmt& b : l.body) stmt(b, depth + 1, out, loads);
        out += pad + "}\n";
        break;
      }
      case StmtKind::Store: out += pad + store(s.as<Store>(), loads) + "\n"; break;
      // The tile pass is CPU-only (it is skipped for --target cuda): these never arrive here.
      case StmtKind::Pack:
      case StmtKind::Tile: throw std::logic_error("codegen-cuda: the loop IR has CPU tiling statements (Pack/Tile)");
      case StmtKind::AccInit: {
        const AccInit& init = s.as<AccInit>();
        out += fmt::format("{}acc{} = {};\n", pad, init.acc, identity(init.reduce));
        break;
      }
      case StmtKind::AccSet: {
        const AccSet& a = s.as<AccSet>();
        std::string acc = fmt::format("acc{}", a.acc);
        out += fmt::format("{}{} = {};\n", pad, acc, predicated(expr(a.value, loads), acc));
        break;
      }
      case StmtKind::AccUpdate: {
        const AccUpdate& u = s.as<AccUpdate>();
        std::string a = fmt::format("acc{}", u.acc);
        std::string v = combine(u.reduce, a, expr(u.value, loads));
        // A lane's partial of a split loop starts from the identity each time: it needs no predicate.
        out += fmt::format("{}{} = {};\n", pad, a, laneCounter_.empty() ? predicated(v, a) : v);
        break;
      }
      case StmtKind::Guard: {
        const Guard& g = s.as<Guard>();
        std::string conds;
        for (size_t i = 0; i < g.conds.size(); ++i) {
          std::string ix = index(g.conds[i].index);
          conds += fmt::format("{}{} >= 0 && {} < {}", i ? " && " : "", ix, ix, g.conds[i].extent);
        }
        out += fmt::format("{}if ({}) {{  // otherwise the term is skipped\n", pad, conds);
        for (const Stmt& b : g.body) stmt(b, depth + 1, out, loads);
        out += pad + "}\n";
        break;
      }
    }
  }

  std::string declareAccs(int depth) const {
    if (k_.numAccs == 0) return "";
    std::string s = std::string(2 * depth, ' ') + t_ + " ";
    for (int a = 0; a < k_.numAccs; ++a) s += fmt::format("{}acc{}", a ? ", " : "", a);
    return s + ";\n";
  }


  // Binds the variables of `loops` (outermost first) from the flat index `flat`, innermost fastest.
  void bind(const std::vector<const Loop*>& loops, const std::string& flat, int depth, std::string& out) const {
    std::vector<int64_t> extents;
    for (const Loop* l : loops) extents.push_back(l->extent);
    std::vector<std::string> exprs = gpu::unflattenExprs(extents, flat);
    std::string pad(2 * depth, ' ');
    for (size_t d = loops.size(); d-- > 0;) out += fmt::format("{}const {} {} = {};\n", pad, idx_, varNames_[loops[d]->var], exprs[d]);
  }

  // ---- grid-stride -------------------------------------------------------------------------------
  // float4: each thread handles four consecutive elements, the mapping's float4 loads read from
  // one float4 per buffer and the result written as one float4.
  void vectorized(const Block& inner, std::string& out) const {
    const Store& store = inner[0].as<Store>();
    std::vector<const Expr*> loads = gpu::loadsInOrder(store.value);
    int b = m_.threads;
    int64_t quads = outputs_ / 4;
    out += fmt::format("  for ({} q = ({})blockIdx.x * {} + threadIdx.x; q < {}; q += ({})gridDim.x * {}) {{\n", idx_, idx_, b, quads, idx_, b);
    LoadMap lanes;
    for (int buf : m_.float4Buffers) {
      out += fmt::format("    const float4 {0}4 = reinterpret_cast<const float4*>({0})[q];\n", bufferName(buf));
      out += fmt::format("    const float {0}_lanes[4] = {{{0}4.x, {0}4.y, {0}4.z, {0}4.w}};\n", bufferName(buf));
    }
    for (int n : m_.float4Loads) lanes[loads[n]] = fmt::format("{}_lanes[lane]", bufferName(loads[n]->buffer));
    out += "    float result[4];\n#pragma unroll\n    for (int lane = 0; lane < 4; ++lane) {\n";
    out += fmt::format("      const {} t = 4 * q + lane;\n", idx_);
    bind(lhs_, "t", 3, out);
    out += fmt::format("      result[lane] = {};\n    }}\n", expr(store.value, lanes));
    out += fmt::format("    reinterpret_cast<float4*>({})[q] = make_float4(result[0], result[1], result[2], result[3]);\n  }}\n",
                       bufferName(store.buffer));
  }

  void gridStride(const Block& inner, std::string& out) const {
    int b = m_.threads;
    std::string start = fmt::format("({})blockIdx.x * {} + threadIdx.x", idx_, b);
    out += fmt::format("  for ({} t = {}; t < {}; t += ({})gridDim.x * {}) {{\n", idx_, start, outputs_, idx_, b);
    bind(lhs_, "t", 2, out);
    out += declareAccs(2);
    for (const Stmt& s : inner) stmt(s, 2, out);
    out += "  }\n";
  }

  // ---- online-tile ---------------------------------------------------------------------------------
  // An online-softmax kernel (docs/cuda.md, "Online softmax"): one query row per thread, `tile`
  // rows per block; the block walks the keys in stages of kStep, every thread of the block first
  // copying its share of the stage's K and V rows (the staged loads) into shared memory, then each
  // thread running the one-pass recurrence over the stage's keys for its row, its running max and
  // sum in registers. Rows past the last take part in the staging (and the barriers) only.
  void onlineTile(const Block& inner, std::string& out) {
    std::optional<gpu::OnlineTileMatch> t = gpu::matchOnlineTile(p_, k_, gpu::kernelShape(k_));
    if (!t) throw std::logic_error("codegen-cuda: online-tile kernel " + k_.name + " does not have the online-softmax shape");
    if (!t->splitLoops.empty()) {
      rows_ = std::move(t);
      onlineTileRows(inner, out);
      return;
    }
    const int rowsPerBlock = m_.tile, stage = m_.kStep;
    const Loop& rows = *lhs_.back();
    const Loop& keys = *t->keys;
    const std::string& ni = varNames_[rows.var];
    const std::string& nj = varNames_[keys.var];
    std::vector<const Loop*> outer(lhs_.begin(), lhs_.end() - 1);
    LoadMap staged;
    for (size_t slot = 0; slot < t->slotExtents.size(); ++slot)
      out += fmt::format("  __shared__ {} stage{}[{}];  // {}: {} keys x {}\n", t_, slot, stage * t->slotExtents[slot],
                         p_.buffers[t->staged[t->slotFirst[slot]].load->buffer].name, stage, t->slotExtents[slot]);
    for (const gpu::StagedLoad& sl : t->staged)
      staged[sl.load] = fmt::format("stage{}[jj * {} + {}]", sl.slot, t->slotExtents[sl.slot], varNames_[sl.var]);
    out += fmt::format("  for ({} blk = blockIdx.x; blk < {}; blk += gridDim.x) {{\n", idx_, m_.work);
    out += fmt::format("    const {} row0 = (blk % {}) * {};\n", idx_, t->tiles, rowsPerBlock);
    out += fmt::format("    const {} {} = row0 + threadIdx.x;\n", idx_, ni);
    if (!outer.empty()) bind(outer, fmt::format("(blk / {})", t->tiles), 2, out);
    out += fmt::format("    const bool active = {} < {};\n", ni, rows.extent);
    out += declareAccs(2);
    out += "    if (active) {\n";
    for (size_t n = 0; n < t->keyStmt; ++n) stmt(inner[n], 3, out);
    out += "    }\n";
    out += fmt::format("    for ({} j0 = 0; j0 < {}; j0 += {}) {{\n", idx_, keys.extent, stage);
    out += stageSkip(keys, rows.var, rowsPerBlock, stage);
    out += "      __syncthreads();  // every thread is done with the previous stage\n";
    for (size_t slot = 0; slot < t->slotExtents.size(); ++slot) {
      const gpu::StagedLoad& first = t->staged[t->slotFirst[slot]];
      const int64_t width = t->slotExtents[slot];
      out += fmt::format("      for (int e = threadIdx.x; e < {}; e += {}) {{\n", stage * width, rowsPerBlock);
      out += fmt::format("        const {} {} = j0 + e / {}, {} = e % {};\n", idx_, nj, width, varNames_[first.var], width);
      out += fmt::format("        stage{}[e] = {} < {} ? {} : {};\n      }}\n", slot, nj, keys.extent, load(*first.load), literal(0));
    }
    out += "      __syncthreads();\n";
    out += "      if (active) {\n";
    out += fmt::format("        const int keysHere = {0} - j0 < {1} ? (int)({0} - j0) : {1};\n", keys.extent, stage);
    out += "        for (int jj = 0; jj < keysHere; ++jj) {\n";
    out += fmt::format("          const {} {} = j0 + jj;\n", idx_, nj);
    for (const Stmt& b : keys.body) stmt(b, 5, out, staged);
    out += "        }\n      }\n    }\n";
    out += "    if (active) {\n";
    for (size_t n = t->keyStmt + 1; n < inner.size(); ++n) stmt(inner[n], 3, out);
    out += "    }\n  }\n";
  }

  // `value`, or the old value of `target` where the predicate of the code being printed is false.
  std::string predicated(const std::string& value, const std::string& target) const {
    return on_.empty() ? value : fmt::format("{} ? {} : {}", on_, value, target);
  }

  // The offset of element `col` of the current row of `buffer`, read as [outer.., i, col].
  std::string rowOffset(int buffer, const std::string& col) const {
    const Buffer& buf = p_.buffers[buffer];
    std::string s = col;
    int64_t stride = buf.shape.back();
    for (size_t d = lhs_.size(); d-- > 0;) {
      s = fmt::format("{} * {} + {}", stride, varNames_[lhs_[d]->var], s);
      stride *= buf.shape[d];
    }
    return s;
  }

  // The row element that register slot u of this lane holds (online-tile, rows in registers;
  // OnlineTileMatch::group): l, l + lanes, ..., or in groups of 4 consecutive ones.
  std::string laneElement() const {
    const int lanes = rows_->lanes;
    const int64_t perLane = rows_->rowWidth / lanes;
    if (lanes == 1) return "u";
    if (rows_->group == 1) return fmt::format("lane + {} * u", lanes);
    return perLane == 4 ? std::string("4 * lane + u") : fmt::format("4 * lane + {} * (u / 4) + u % 4", 4 * lanes);
  }

  // A loop over the row's elements, split over the row's lanes (laneElement), unrolled so that
  // the row arrays stay in registers; then the partials of the reductions it holds combined by
  // xor shuffles among the row's lanes (every lane ends with the same value).
  void splitLoop(const Loop& l, int depth, std::string& out, const LoadMap& loads) const {
    std::string pad(2 * depth, ' ');
    const int lanes = rows_->lanes;
    const int64_t perLane = rows_->rowWidth / lanes;
    // Under a predicate (a key's `on`), the staged elements this lane reads go into registers
    // first: NVRTC would otherwise turn `on ? O * a + p * V : O` into a branch with the shared
    // loads inside, one scalar load each, where a group of 4 is one ld.shared.v4 out here.
    LoadMap here = loads;
    if (!on_.empty()) {
      std::vector<const Expr*> stagedLoads;
      forEachStmt(l.body, [&](const Stmt& s) {
        if (const Expr* v = valueOf(s))
          forEachLoad(*v, [&](const Expr& e) {
            if (loads.count(&e) && std::find(stagedLoads.begin(), stagedLoads.end(), &e) == stagedLoads.end()) stagedLoads.push_back(&e);
          });
      });
      for (const Expr* e : stagedLoads) {
        const std::string name = fmt::format("staged{}", stagedCopies_++);
        out += fmt::format("{}{} {}[{}];\n#pragma unroll\n{}for (int u = 0; u < {}; ++u) {{\n", pad, t_, name, perLane, pad, perLane);
        out += fmt::format("{}  const {} {} = {};\n{}  {}[u] = {};\n{}}}\n", pad, idx_, varNames_[l.var], laneElement(), pad, name,
                           loads.at(e), pad);
        here[e] = name + "[u]";
      }
    }
    out += fmt::format("#pragma unroll\n{}for (int u = 0; u < {}; ++u) {{\n", pad, perLane);
    out += fmt::format("{}  const {} {} = {};\n", pad, idx_, varNames_[l.var], laneElement());
    laneCounter_ = "u";
    for (const Stmt& b : l.body) stmt(b, depth + 1, out, here);
    laneCounter_.clear();
    out += pad + "}\n";
    if (lanes == 1) return;
    for (const auto& [loop, accs] : rows_->reduced) {
      if (loop != &l) continue;
      for (const auto& [acc, kind] : accs) {
        std::string a = fmt::format("acc{}", acc);
        out += fmt::format("#pragma unroll\n{}for (int x = {}; x > 0; x /= 2) {} = {};  // the row's lanes\n", pad, lanes / 2, a,
                           combine(kind, a, fmt::format("__shfl_xor_sync(rowMask, {}, x)", a)));
      }
    }
  }

  // online-tile with rows in registers (GpuLegality.h, OnlineTileMatch): `lanes` threads per query
  // row, `tile` rows per block. Every thread runs every statement of the row body, the key loop's
  // included, so that the shuffles and barriers are block-uniform: a statement that writes an
  // accumulator or the output row is predicated on the row being real (`active`) and, in the key
  // body, the key being unmasked (`on`), and memory is read only where the predicate holds.
  void onlineTileRows(const Block& inner, std::string& out) {
    const gpu::OnlineTileMatch& t = *rows_;
    const int rowsPerBlock = m_.tile, stage = m_.kStep, lanes = t.lanes;
    const int64_t perLane = t.rowWidth / lanes;
    const Loop& rows = *lhs_.back();
    const Loop& keys = *t.keys;
    const std::string& ni = varNames_[rows.var];
    const std::string& nj = varNames_[keys.var];
    std::vector<const Loop*> outer(lhs_.begin(), lhs_.end() - 1);
    LoadMap staged;
    for (size_t slot = 0; slot < t.slotExtents.size(); ++slot)
      out += fmt::format("  __shared__ __align__(16) {} stage{}[{}];  // {}: {} keys x {}\n", t_, slot, stage * t.slotExtents[slot],
                         p_.buffers[t.staged[t.slotFirst[slot]].load->buffer].name, stage, t.slotExtents[slot]);
    for (const gpu::StagedLoad& sl : t.staged)
      staged[sl.load] = fmt::format("stage{}[jj * {} + {}]", sl.slot, t.slotExtents[sl.slot], varNames_[sl.var]);
    rowRegs_[k_.outputBuffer] = bufferName(k_.outputBuffer) + "_row";
    for (int b : t.preloaded) rowRegs_[b] = bufferName(b) + "_row";
    out += fmt::format("  for ({} blk = blockIdx.x; blk < {}; blk += gridDim.x) {{\n", idx_, m_.work);
    out += fmt::format("    const {} row0 = (blk % {}) * {};\n", idx_, t.tiles, rowsPerBlock);
    if (lanes > 1) out += fmt::format("    const int lane = threadIdx.x % {};\n", lanes);
    out += fmt::format("    const {} {} = row0 + threadIdx.x{};\n", idx_, ni, lanes > 1 ? fmt::format(" / {}", lanes) : "");
    if (!outer.empty()) bind(outer, fmt::format("(blk / {})", t.tiles), 2, out);
    out += fmt::format("    const bool active = {} < {};\n", ni, rows.extent);
    if (lanes > 1)
      out += fmt::format("    const unsigned rowMask = {};  // this row's lanes of the warp\n",
                         lanes == 32 ? std::string("0xffffffffu") : fmt::format("0x{:x}u << (threadIdx.x % 32 / {} * {})", (1u << lanes) - 1, lanes, lanes));
    if (k_.numAccs > 0) {
      out += "    " + t_ + " ";
      for (int a = 0; a < k_.numAccs; ++a) out += fmt::format("{}acc{} = {}", a ? ", " : "", a, literal(0));
      out += ";\n";
    }
    for (const auto& [b, name] : rowRegs_) out += fmt::format("    {} {}[{}] = {{}};\n", t_, name, perLane);
    const std::string col = laneElement();
    for (int b : t.preloaded)
      out += fmt::format("#pragma unroll\n    for (int u = 0; u < {}; ++u) {}[u] = active ? {} : {};\n", perLane, rowRegs_[b],
                         loadAt(b, rowOffset(b, col)), literal(0));
    on_ = "active";
    for (size_t n = 0; n < t.keyStmt; ++n) stmt(inner[n], 2, out);
    on_.clear();
    out += fmt::format("    for ({} j0 = 0; j0 < {}; j0 += {}) {{\n", idx_, keys.extent, stage);
    out += stageSkip(keys, rows.var, rowsPerBlock, stage);
    out += "      __syncthreads();  // every thread is done with the previous stage\n";
    for (size_t slot = 0; slot < t.slotExtents.size(); ++slot) {
      const gpu::StagedLoad& first = t.staged[t.slotFirst[slot]];
      const int64_t width = t.slotExtents[slot];
      out += fmt::format("      for (int e = threadIdx.x; e < {}; e += {}) {{\n", stage * width, m_.threads);
      out += fmt::format("        const {} {} = j0 + e / {}, {} = e % {};\n", idx_, nj, width, varNames_[first.var], width);
      out += fmt::format("        stage{}[e] = {} < {} ? {} : {};\n      }}\n", slot, nj, keys.extent, load(*first.load), literal(0));
    }
    out += "      __syncthreads();\n";
    out += fmt::format("      const int keysHere = {0} - j0 < {1} ? (int)({0} - j0) : {1};\n", keys.extent, stage);
    // Unrolled by 4: the next keys' dot products and shuffles depend only on the stage and the
    // row's registers, so they overlap the running max and sum's chain of the current key.
    out += "#pragma unroll 4\n      for (int jj = 0; jj < keysHere; ++jj) {\n";
    out += fmt::format("        const {} {} = j0 + jj;\n", idx_, nj);
    const Block* keyBody = &keys.body;
    std::string on = "active";
    if (keyBody->size() == 1 && (*keyBody)[0].is<Guard>()) {
      const Guard& g = (*keyBody)[0].as<Guard>();
      for (const GuardCond& c : g.conds) {
        std::string ix = index(c.index);
        on += fmt::format(" && {} >= 0 && {} < {}", ix, ix, c.extent);
      }
      keyBody = &g.body;
    }
    out += fmt::format("        const bool on = {};  // a real row and an unmasked key\n", on);
    on_ = "on";
    for (const Stmt& b : *keyBody) stmt(b, 4, out, staged);
    on_.clear();
    out += "      }\n    }\n";
    on_ = "active";
    std::vector<const Stmt*> post;
    for (size_t n = t.keyStmt + 1; n < inner.size(); ++n) post.push_back(&inner[n]);
    hoistReciprocals(post, 2, out);
    for (const Stmt* st : post) stmt(*st, 2, out);
    rcpNames_.clear();
    on_.clear();
    out += fmt::format("    if (active) {{\n#pragma unroll\n      for (int u = 0; u < {}; ++u) {}[{}] = {}[u];\n    }}\n", perLane,
                       bufferName(k_.outputBuffer), rowOffset(k_.outputBuffer, col), rowRegs_[k_.outputBuffer]);
    out += "  }\n";
  }

  // A stage of keys that the mask (the key loop's guard: affine comparisons) excludes for every row
  // of the block is skipped, by all threads alike: for each comparison 0 <= e(i, j) < E, e's
  // largest value over the block's rows and the stage's keys must be >= 0 and its smallest < E
  // (MaskBounds.h, as the CPU's tile-online-softmax does for its key tiles).
  std::string stageSkip(const Loop& keys, int rowVar, int rowsPerBlock, int stage) const {
    if (keys.body.size() != 1 || !keys.body[0].is<Guard>()) return "";
    const int j = keys.var;
    std::string live;
    for (const GuardCond& c : keys.body[0].as<Guard>().conds) {
      std::optional<MaskCorners> m = maskCorners(c, rowVar, j, rowsPerBlock, stage);
      if (!m) continue;
      auto corner = [&](int64_t row, int64_t key) {
        return fmt::format("const {0} {1} = row0 + {2}, {3} = j0 + {4};", idx_, varNames_[rowVar], row, varNames_[j], key);
      };
      live += fmt::format("      {{ {} live = live && {} >= 0; }}\n", corner(m->rowOfLargest, m->keyOfLargest), index(c.index));
      live += fmt::format("      {{ {} live = live && {} < {}; }}\n", corner(m->rowOfSmallest, m->keyOfSmallest), index(c.index), c.extent);
    }
    if (live.empty()) return "";
    return "      bool live = true;\n" + live + "      if (!live) continue;  // the mask excludes this stage for every row of the block\n";
  }

  // ---- block-reduce ------------------------------------------------------------------------------
  // inner = [acc = identity, the reduction nest (marked threads), store f(acc)]: one block per
  // output element, its threads striding over the reduction's flattened iterations.
  void blockReduce(const Block& inner, std::string& out) const {
    std::vector<const Loop*> red = perfectNest(inner[1]);
    const Block& term = innermostBody(red);
    int b = m_.threads;
    int warps = b / 32;
    int acc = inner[0].as<AccInit>().acc;
    ReduceKind kind = inner[0].as<AccInit>().reduce;
    std::string a = fmt::format("acc{}", acc);
    out += fmt::format("  __shared__ {} partial[{}];  // one per warp\n", t_, warps);
    out += fmt::format("  for ({} row = blockIdx.x; row < {}; row += gridDim.x) {{\n", idx_, outputs_);
    bind(lhs_, "row", 2, out);
    out += declareAccs(2);
    out += fmt::format("    {} = {};\n", a, identity(kind));
    out += fmt::format("    for ({} r = threadIdx.x; r < {}; r += {}) {{\n", idx_, m_.terms, b);
    bind(red, "r", 3, out);
    for (const Stmt& s : term) stmt(s, 3, out);
    out += "    }\n";
    // Every lane ends with the warp's value (xor butterfly), then every warp combines the partials.
    std::string shuffle = fmt::format(
        "    for (int o = 16; o > 0; o >>= 1) {} = {};\n", a, combine(kind, a, fmt::format("__shfl_xor_sync(0xffffffffu, {}, o)", a)));
    out += "    // warp reduction\n" + shuffle;
    out += fmt::format("    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = {};\n", a);
    out += "    __syncthreads();\n";
    out += fmt::format("    {} = (threadIdx.x & 31) < {} ? partial[threadIdx.x & 31] : {};\n", a, warps, identity(kind));
    out += "    // block reduction: every warp combines the per-warp partials\n" + shuffle;
    out += "    __syncthreads();  // partial is reused by the next row\n";
    out += "    if (threadIdx.x == 0) {\n";
    stmt(inner[2], 3, out);
    out += "    }\n  }\n";
  }

  // ---- row-block ---------------------------------------------------------------------------------
  // The row body runs statement by statement: an initialisation in every thread, a loop strided
  // over the threads (its perfect nest flattened), a row-scalar store in thread 0; around each,
  // the barrier and the combine sync-gpu-threads placed.
  void rowBlock(const Block& inner, std::string& out) const {
    if (!m_.synced || m_.sync.size() != inner.size())
      throw std::logic_error("codegen-cuda: row-block kernel " + k_.name + " has no combines and barriers (sync-gpu-threads did not run)");
    int b = m_.threads;
    int warps = b / 32;
    if (warps > 1) out += fmt::format("  __shared__ {} partial[{}][{}];  // per-warp partials of the row reductions\n", t_, m_.maxCombined, warps);
    out += fmt::format("  for ({} row = blockIdx.x; row < {}; row += gridDim.x) {{\n", idx_, outputs_);
    bind(lhs_, "row", 2, out);
    out += declareAccs(2);
    // Rows in registers: element s of a thread's share is e = threadIdx.x + b*s; as float4, the
    // groups of 4 consecutive elements: e = 4 (threadIdx.x + b (s/4)) + s%4.
    const bool vec4 = m_.rowFloat4;
    const int64_t width = m_.rowWidth, groups = vec4 ? (width / 4 + b - 1) / b : 0;
    const int64_t perThread = vec4 ? 4 * groups : (width + b - 1) / b;
    const bool ragged = vec4 ? (width / 4) % b != 0 : width % b != 0;
    const std::string col = vec4 ? fmt::format("4 * (threadIdx.x + {} * (s / 4)) + s % 4", b) : fmt::format("threadIdx.x + {} * s", b);
    // Whether element s lies in the row (only tested when ragged).
    const std::string inside = vec4 ? fmt::format("threadIdx.x + {} * (s / 4) < {}", b, width / 4) : fmt::format("{} < {}", col, width);
    const std::string group = fmt::format("4 * (threadIdx.x + {} * q)", b);
    for (int buf : m_.rowRegisters) {
      rowRegs_[buf] = bufferName(buf) + "_row";
      out += fmt::format("    {} {}_row[{}];\n", t_, bufferName(buf), perThread);
      if (buf == k_.outputBuffer) continue;
      if (vec4) {
        // One 16-byte read-only load per group (ld.global.nc.v4).
        out += fmt::format("#pragma unroll\n    for (int q = 0; q < {}; ++q) {{  // read once, as float4\n", groups);
        std::string pad = ragged ? "        " : "      ";
        if (ragged) out += fmt::format("      if (threadIdx.x + {} * q < {}) {{\n", b, width / 4);
        out += fmt::format("{}const float4 v = __ldg(reinterpret_cast<const float4*>({} + {}));\n", pad, bufferName(buf), rowOffset(buf, group));
        out += fmt::format("{}{}_row[4 * q] = v.x; {}_row[4 * q + 1] = v.y; {}_row[4 * q + 2] = v.z; {}_row[4 * q + 3] = v.w;\n", pad,
                           bufferName(buf), bufferName(buf), bufferName(buf), bufferName(buf));
        if (ragged)
          out += fmt::format("      }} else {{\n        {}_row[4 * q] = {}_row[4 * q + 1] = {}_row[4 * q + 2] = {}_row[4 * q + 3] = {};\n      }}\n",
                             bufferName(buf), bufferName(buf), bufferName(buf), bufferName(buf), literal(0));
        out += "    }\n";
        continue;
      }
      std::string value = loadAt(buf, rowOffset(buf, col));
      if (ragged) value = fmt::format("{} ? {} : {}", inside, value, literal(0));
      out += fmt::format("#pragma unroll\n    for (int s = 0; s < {}; ++s) {}_row[s] = {};  // read once\n", perThread, bufferName(buf), value);
    }
    auto sync = [&](const std::string& why) { out += fmt::format("    __syncthreads();  // {}\n", why); };
    int phaseNo = 0;
    for (size_t n = 0; n < inner.size(); ++n) {
      const Stmt& s = inner[n];
      const GpuRowSync& sy = m_.sync[n];
      if (!sy.barrierBefore.empty()) sync(sy.barrierBefore);
      if (s.is<AccInit>()) {
        stmt(s, 2, out);
      } else if (s.is<Store>()) {
        out += "    if (threadIdx.x == 0) {  // a row scalar: every thread holds the accumulators\n";
        stmt(s, 3, out);
        out += "    }\n";
      } else {
        std::vector<const Loop*> nest = perfectNest(s);
        int64_t extent = 1;
        for (const Loop* l : nest) extent *= l->extent;
        out += fmt::format("    // phase {}\n", ++phaseNo);
        hoistReciprocals(innermostBody(nest), 2, out);
        if (width) {
          out += fmt::format("#pragma unroll\n    for (int s = 0; s < {}; ++s) {{\n", perThread);
          out += fmt::format("      const {} e = {};\n", idx_, col);
          if (ragged) out += fmt::format("      if ({}) {{\n", vec4 ? inside : fmt::format("e < {}", width));
          bind(nest, "e", ragged ? 4 : 3, out);
          laneCounter_ = "s";
          for (const Stmt& st : innermostBody(nest)) stmt(st, ragged ? 4 : 3, out);
          laneCounter_.clear();
          if (ragged) out += "      }\n";
        } else {
          out += fmt::format("    for ({} e = threadIdx.x; e < {}; e += {}) {{\n", idx_, extent, b);
          bind(nest, "e", 3, out);
          for (const Stmt& st : innermostBody(nest)) stmt(st, 3, out);
        }
        rcpNames_.clear();
        out += "    }\n";
      }
      if (sy.accs.empty()) continue;
      // Every lane ends with its warp's value (xor butterfly); one value per warp goes through
      // shared memory, and every warp combines those, so every thread holds the row's value.
      auto butterfly = [&]() {
        out += "    for (int o = 16; o > 0; o >>= 1) {\n";
        for (size_t a = 0; a < sy.accs.size(); ++a) {
          std::string v = fmt::format("acc{}", sy.accs[a]);
          out += fmt::format("      {} = {};\n", v, combine(sy.kinds[a], v, fmt::format("__shfl_xor_sync(0xffffffffu, {}, o)", v)));
        }
        out += "    }\n";
      };
      out += "    // combine the threads' partials: warp shuffles";
      out += warps > 1 ? ", then shared memory\n" : " (one warp)\n";
      butterfly();
      if (warps == 1) continue;
      out += "    if ((threadIdx.x & 31) == 0) {\n";
      for (size_t a = 0; a < sy.accs.size(); ++a) out += fmt::format("      partial[{}][threadIdx.x >> 5] = acc{};\n", a, sy.accs[a]);
      out += "    }\n";
      sync("the partials are written, and so is everything the phase stored");
      for (size_t a = 0; a < sy.accs.size(); ++a)
        out += fmt::format("    acc{} = (threadIdx.x & 31) < {} ? partial[{}][threadIdx.x & 31] : {};\n", sy.accs[a], warps, a,
                           identity(sy.kinds[a]));
      butterfly();
      sync("partial is rewritten by the next reduction");
    }
    if (width && !m_.rowRegisters.empty() && m_.rowRegisters[0] == k_.outputBuffer && vec4) {
      const std::string o = bufferName(k_.outputBuffer);
      out += fmt::format("#pragma unroll\n    for (int q = 0; q < {}; ++q) {{  // the output row, written once, as float4\n", groups);
      std::string target = fmt::format("*reinterpret_cast<float4*>({} + {}) = make_float4({}_row[4 * q], {}_row[4 * q + 1], {}_row[4 * q + 2], {}_row[4 * q + 3]);",
                                       o, rowOffset(k_.outputBuffer, group), o, o, o, o);
      out += ragged ? fmt::format("      if (threadIdx.x + {} * q < {}) {}\n", b, width / 4, target) : "      " + target + "\n";
      out += "    }\n";
    } else if (width && !m_.rowRegisters.empty() && m_.rowRegisters[0] == k_.outputBuffer) {
      out += fmt::format("#pragma unroll\n    for (int s = 0; s < {}; ++s) {{  // the output row, written once\n", perThread);
      std::string target = fmt::format("{}[{}] = {};", bufferName(k_.outputBuffer), rowOffset(k_.outputBuffer, col),
                                       storeValue(k_.outputBuffer, bufferName(k_.outputBuffer) + "_row[s]"));
      out += ragged ? fmt::format("      if ({} < {}) {}\n", col, width, target) : "      " + target + "\n";
      out += "    }\n";
    }
    if (!m_.rowEndBarrier.empty()) sync(m_.rowEndBarrier);
    out += "  }\n";
  }

  // `1 / acc`: a row statistic's reciprocal, which the graph pass reciprocal-of-sums (softmax's
  // e * (1 / s)) and the lowering of online softmax (attention's O * (1 / l)) write out.
  static bool reciprocalOfAcc(const Expr& e) {
    return e.kind == ExprKind::Binary && e.binaryOp == BinaryOp::Div && e.args[0].kind == ExprKind::Const && e.args[0].constant == 1 &&
           e.args[1].kind == ExprKind::AccRead;
  }

  // Before a loop whose statements take the reciprocal of a row accumulator they do not write
  // (reciprocalOfAcc): the reciprocal once, named, and used by every element. The same value as
  // computing it per element, so hoisting it changes no bit.
  void hoistReciprocals(const Block& body, int depth, std::string& out) const {
    std::vector<const Stmt*> all;
    for (const Stmt& st : body) all.push_back(&st);
    hoistReciprocals(all, depth, out);
  }
  void hoistReciprocals(const std::vector<const Stmt*>& stmts, int depth, std::string& out) const {
    std::set<int> written, divisors;
    auto visit = [&](const Stmt& st) {
      if (const auto* a = st.getIf<AccInit>()) written.insert(a->acc);
      if (const auto* a = st.getIf<AccSet>()) written.insert(a->acc);
      if (const auto* a = st.getIf<AccUpdate>()) written.insert(a->acc);
      if (const Expr* v = valueOf(st))
        forEachExprNode(*v, [&](const Expr& e) {
          if (reciprocalOfAcc(e)) divisors.insert(e.args[1].acc);
        });
    };
    for (const Stmt* top : stmts) {
      visit(*top);
      if (const Loop* l = top->getIf<Loop>()) forEachStmt(l->body, visit);
      if (const Guard* g = top->getIf<Guard>()) forEachStmt(g->body, visit);
    }
    for (int acc : divisors) {
      if (written.count(acc)) continue;
      // A later phase of the same row may hoist it again (the row-block kernel's phases share
      // one scope): each hoist gets a name of its own, and the divisions after it use that one.
      std::string name = fmt::format("rcp{}", acc);
      for (int n = 2; declaredRcps_.count(name); ++n) name = fmt::format("rcp{}_{}", acc, n);
      declaredRcps_.insert(name);
      out += fmt::format("{}const {} {} = {} / acc{};\n", std::string(2 * depth, ' '), t_, name, literal(1), acc);
      rcpNames_[acc] = name;
    }
  }

  // ---- tiled contraction ---------------------------------------------------------------------------
  // "&& (unsigned)(index) < extent" per condition of the implicit GEMM's padding guard: the column operand is staged as
  // 0 where one fails (one unsigned comparison covers both bounds).
  std::string paddingCheck(const Loop& kLoop) const {
    const Guard* pad = kLoop.body[0].getIf<Guard>();
    std::string s;
    if (!pad) return s;
    const char* u = idx_ == "int" ? "unsigned" : "unsigned long long";
    for (const GuardCond& c : pad->conds) s += fmt::format(" && ({})({}) < {}u", u, index(c.index), c.extent);
    return s;
  }
  // One operand tile's 16-byte copies for one k-step (GpuMapping::vectorCopies): `groups` groups
  // of `group` elements from rows of `rowLength`; group e lands in row e / (rowLength / group) of
  // `tile` at element group * (e % ...). The row's variable `outer` is `outerBase` plus the row,
  // the variable along it `inner` (id `innerVar`) is `innerBase` plus the element; `ok` holds
  // inside the tensor. The address is the group's first element's, written linearly (linearAlong).
  void vectorStage(const std::string& tile, int64_t groups, int rowLength, int group, const std::string& outer, const std::string& outerBase,
                   const std::string& inner, int innerVar, const std::string& innerBase, const std::string& ok, const Expr& load, int depth,
                   std::string& out) const {
    const std::string pad(2 * depth, ' ');
    const int perRow = rowLength / group;
    // Fewer groups than threads (a 64x16 bf16 tile has 128): the threads past them copy nothing.
    const int64_t rounds = (groups + m_.threads - 1) / m_.threads;
    const bool some = groups % m_.threads != 0;
    out += fmt::format("#pragma unroll\n{}for (int s = 0; s < {}; ++s) {{\n", pad, rounds);
    out += fmt::format("{}  const int e = threadIdx.x + {} * s;\n", pad, m_.threads);
    if (some) out += fmt::format("{}  if (e >= {}) break;\n", pad, groups);
    out += fmt::format("{}  const {} {} = {} + e / {}, {} = {} + {} * (e % {});\n", pad, idx_, outer, outerBase, perRow, inner, innerBase, group,
                       perRow);
    out += fmt::format("{}  const bool ok = {};\n", pad, ok);
    out += fmt::format("{}  texc_cp_async16(&{}[e / {}][{} * (e % {})], ok ? &{} : {}, ok);\n{}}}\n", pad, tile, perRow, group, perRow,
                       rawElement(gpu::linearAlong(p_, k_, load, innerVar)), bufferName(load.buffer), pad);
  }
  // The element `e` loads, as stored (no conversion).
  std::string rawElement(const Expr& e) const { return fmt::format("{}[{}]", bufferName(e.buffer), offset(e.buffer, e.index)); }

  // The cp.async pipeline of GpuMapping::stages (S) buffers over k in steps of kT: the copies of
  // steps k+1 .. k+S-1 are in flight while step k computes. Every step commits one group of
  // copies (empty past the end), so that waiting until at most S-2 groups are pending means this
  // step's have landed. `stage(kBase, buffer, depth)` issues and commits one step's copies;
  // `compute()` prints one step's arithmetic on buffer `cur`.
  template <class Stage, class Compute>
  void asyncPipeline(int kT, int64_t K, Stage stage, Compute compute, std::string& out) const {
    const int S = m_.stages;
    for (int st = 0; st + 1 < S; ++st) {
      out += fmt::format("    // k-step {}'s copies, into buffer {}\n", st, st);
      if (st * kT < K) stage(std::to_string(st * kT), std::to_string(st), 2);
      else out += "    texc_cp_async_commit();  // past K: an empty group keeps the count\n";
    }
    out += fmt::format("    for ({} k0 = 0; k0 < {}; k0 += {}) {{\n", idx_, K, kT);
    out += fmt::format("      const int cur = (int)(k0 / {}) % {};\n", kT, S);
    out += fmt::format("      texc_cp_async_wait<{}>();  // this thread's copies of this step have landed{}\n", S - 2,
                       S > 2 ? " (the next step's may not have)" : "");
    out += "      __syncthreads();  // everyone's have, and everyone is done with the buffer of the step before\n";
    out += fmt::format("      if (k0 + {} < {}) {{  // step k0 + {}'s copies, into that buffer, in flight during this step\n", (S - 1) * kT, K,
                       (S - 1) * kT);
    stage(fmt::format("(k0 + {})", (S - 1) * kT), S == 2 ? "cur ^ 1" : fmt::format("(cur + {}) % {}", S - 1, S), 4);
    out += "      } else {\n        texc_cp_async_commit();  // an empty group keeps the count\n      }\n";
    compute();
    out += "    }\n";
    out += "    __syncthreads();  // the next tile's first copies go into buffers still being read\n";
  }

  // The register-staged pipeline after its first step went into buffer 0: the barrier, and the
  // k loop's head with the step's buffer (`cur`) and whether a next step follows (`more`).
  void registerStagedLoopHead(int kT, int64_t K, std::string& out) const {
    out += "    __syncthreads();\n";
    out += fmt::format("    for ({} k0 = 0; k0 < {}; k0 += {}) {{\n", idx_, K, kT);
    out += fmt::format("      const int cur = (int)(k0 / {}) & 1;\n", kT);
    out += fmt::format("      const bool more = k0 + {} < {};\n", kT, K);
  }

  // Declares a tile column's loop variables from its flat index `flat`: j itself, or, with a
  // pool's window in the epilogue (GpuMapping::window), colw = j * W + w and j and w from it.
  // Returns what to compare with the flat column count.
  std::string declareColumn(const Loop* window, int vj, const std::string& flat, const std::string& pad, std::string& out) const {
    if (!window) {
      out += fmt::format("{}const {} {} = {};\n", pad, idx_, varNames_[vj], flat);
      return varNames_[vj];
    }
    out += fmt::format("{}const {} colw = {};\n", pad, idx_, flat);
    out += fmt::format("{}const {} {} = colw / {}, {} = colw % {};\n", pad, idx_, varNames_[vj], m_.window, varNames_[window->var], m_.window);
    return "colw";
  }

  // The epilogue of an output with a pool's window (GpuMapping::window), in two parts.
  // windowFold: the window's accumulator m (declared here with the others) is `fold`'s m op= f(acc)
  // of this column's element, whose accumulator value is `value`, where `inRange` holds, and the
  // identity elsewhere.
  void windowFold(const Block& inner, const Loop& window, const std::string& value, const std::string& inRange, int depth,
                  std::string& out) const {
    const std::string pad(2 * depth, ' ');
    const AccInit& m = inner[0].as<AccInit>();
    out += declareAccs(depth);
    out += fmt::format("{}acc{} = {};\n", pad, m.acc, identity(m.reduce));
    out += fmt::format("{}if ({}) {{\n", pad, inRange);
    out += fmt::format("{}  acc{} = {};\n", pad, window.body[0].as<AccInit>().acc, value);
    for (int copy : m_.copies) out += fmt::format("{}  acc{} = {};  // the same reduction\n", pad, copy, value);
    stmt(window.body.back(), depth + 1, out);
    out += pad + "}\n";
  }
  // windowStore: m combined with the lanes `lane ^ o`, o < `lanes`, by xor shuffles (every lane
  // of the warp takes part, so nothing may skip them), then the store where `inRange` and
  // `first` (the window's first column) hold.
  void windowStore(const Block& inner, int lanes, const std::string& inRange, const std::string& first, int depth, std::string& out) const {
    const std::string pad(2 * depth, ' ');
    const AccInit& m = inner[0].as<AccInit>();
    if (lanes > 1)
      out += fmt::format("#pragma unroll\n{}for (int o = 1; o < {}; o <<= 1) acc{} = {};\n", pad, lanes, m.acc,
                         combine(m.reduce, fmt::format("acc{}", m.acc), fmt::format("__shfl_xor_sync(0xffffffffu, acc{}, o)", m.acc)));
    out += fmt::format("{}if (!({}) || !({})) continue;\n", pad, inRange, first);
    stmt(inner.back(), depth, out);
  }

  // The grid-stride loop over a tiled contraction's output tiles (the batch loops outermost, then
  // rows, then columns): the tile's first row and column, and the batch variables bound.
  void tileLoopHead(int64_t tilesI, int64_t tilesJ, int tileI, int tileJ, std::string& out) const {
    out += fmt::format("  for ({} tile = blockIdx.x; tile < {}; tile += gridDim.x) {{\n", idx_, m_.work);
    out += fmt::format("    const {} col0 = (tile % {}) * {};\n", idx_, tilesJ, tileJ);
    out += fmt::format("    const {} row0 = ((tile / {}) % {}) * {};\n", idx_, tilesJ, tilesI, tileI);
    std::vector<const Loop*> outer(lhs_.begin(), lhs_.end() - 2);
    if (!outer.empty()) bind(outer, fmt::format("(tile / {})", tilesJ * tilesI), 2, out);
  }

  // The tiled contraction on tensor cores (GpuMapping::mma): the same tiles, k-steps of 16 and
  // double-buffered staging as tiledContraction, but the operands are staged as their 16-bit
  // values and the block's 8 warps, 2 x 4, each compute (tile/2) x (tile/4) outputs as a grid of
  // 16 x 8 fragments with one mma.sync.m16n8k16 per fragment and k-step (PTX ISA, "Matrix
  // fragments for mma.m16n8k16"): lane l holds rows l/4 and l/4 + 8 and columns 2(l%4) and
  // 2(l%4) + 1 of each accumulator fragment, and pairs of k of its A and B fragments.
  void tiledContractionMma(const Block& inner, std::string& out) const {
    const int kT = m_.kStep;  // 16, mma's k
    const int kTile = m_.tile;
    const int fragsI = kTile / 2 / 16, fragsJ = kTile / 4 / 8;
    // With a pool in the epilogue, the contraction is the window loop's body.
    const Loop* window = m_.window > 1 ? gpu::poolWindow(inner) : nullptr;
    const Block& body = window ? window->body : inner;
    const AccInit& first = body[0].as<AccInit>();
    const Loop& kLoop = body[1].as<Loop>();
    const AccUpdate& update = gpu::kLoopUpdate(kLoop);
    const Loop& li = *lhs_[lhs_.size() - 2];
    const Loop& lj = *lhs_.back();
    int64_t I = li.extent, J = lj.extent * m_.window, K = kLoop.extent;  // J: the flat columns
    std::vector<const Expr*> loads = gpu::loadsInOrder(update.value);
    const Expr& aLoad = *loads[m_.rowOperands[0]];
    const Expr& bLoad = *loads[m_.colOperands[0]];
    int64_t tilesI = (I + kTile - 1) / kTile, tilesJ = (J + kTile - 1) / kTile;
    const std::string& ni = varNames_[li.var];
    const std::string& nj = varNames_[lj.var];
    const std::string& nk = varNames_[kLoop.var];
    const int slots = kTile * kT / (kT * kT);
    // TF32 (--math=fast): the f32 values are staged and rounded as the fragments load; two
    // m16n8k8 per k-step of 16.
    const bool tf32 = m_.mma == "tf32";
    const std::string elem = tf32 ? "float" : "unsigned short";
    const std::string zero = tf32 ? "0.0f" : "(unsigned short)0";
    // Rows of A padded by 16 bytes and of B by 8 elements (GpuMapping::rowPad, colPad), against
    // bank conflicts between the fragment loads of the 8 row groups.
    const int rowLen = kT + m_.rowPad, colLen = kTile + m_.colPad;
    const std::string padding = paddingCheck(kLoop);
    const int S = m_.asyncCopy ? m_.stages : 2;
    out += fmt::format("  __shared__ {}{} tileA[{}][{}][{}];  // {} at (i, k), {}\n", m_.asyncCopy ? "__align__(16) " : "", elem, S, kTile,
                       rowLen, p_.buffers[aLoad.buffer].name, tf32 ? "f32, rounded to TF32 as the fragments load" : m_.mma + " bits");
    out += fmt::format("  __shared__ {}{} tileB[{}][{}][{}];  // {} at (k, j)\n", m_.asyncCopy ? "__align__(16) " : "", elem, S, kT, colLen,
                       p_.buffers[bLoad.buffer].name);
    // With asyncCopy: 16-byte copies of `group` consecutive elements of a row (a group wholly in
    // or out of the tensor), one step's into buffer `buf`, then a commit.
    const int group = tf32 ? 4 : 8;
    auto stageAsync = [&](const std::string& kBase, const std::string& buf, int depth) {
      vectorStage(fmt::format("tileA[{}]", buf), kTile * kT / group, kT, group, ni, "row0", nk, kLoop.var, kBase,
                  fmt::format("({} < {} && {} < {})", ni, I, nk, K), aLoad, depth, out);
      vectorStage(fmt::format("tileB[{}]", buf), kTile * kT / group, kTile, group, nk, kBase, nj, lj.var, "col0",
                  fmt::format("({} < {} && {} < {})", nk, K, nj, J), bLoad, depth, out);
      out += std::string(2 * depth, ' ') + "texc_cp_async_commit();\n";
    };
    auto stage = [&](const std::string& kBase, bool toRegisters, const std::string& buf, int depth) {
      std::string pad(2 * depth, ' ');
      out += fmt::format("#pragma unroll\n{}for (int s = 0; s < {}; ++s) {{\n", pad, slots);
      out += fmt::format("{}  const int e = threadIdx.x + {} * s;\n", pad, kT * kT);
      out += fmt::format("{}  const {} {} = row0 + e / {}, {} = {} + e % {};\n", pad, idx_, ni, kT, nk, kBase, kT);
      out += fmt::format("{}  {} = ({} < {} && {} < {}) ? {} : {};\n{}}}\n", pad,
                         toRegisters ? "nextA[s]" : fmt::format("tileA[{}][e / {}][e % {}]", buf, kT, kT), ni, I, nk, K, rawElement(aLoad), zero, pad);
      out += fmt::format("#pragma unroll\n{}for (int s = 0; s < {}; ++s) {{\n", pad, slots);
      out += fmt::format("{}  const int e = threadIdx.x + {} * s;\n", pad, kT * kT);
      out += fmt::format("{}  const {} {} = {} + e / {};\n", pad, idx_, nk, kBase, kTile);
      const std::string column = declareColumn(window, lj.var, fmt::format("col0 + e % {}", kTile), pad + "  ", out);
      out += fmt::format("{}  {} = ({} < {} && {} < {}{}) ? {} : {};\n{}}}\n", pad,
                         toRegisters ? "nextB[s]" : fmt::format("tileB[{}][e / {}][e % {}]", buf, kTile, kTile), nk, K, column, J, padding,
                         rawElement(bLoad), zero, pad);
    };
    out += "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;\n";
    out += fmt::format("  const int g = lane / 4, t = lane % 4, wr = (warp / 4) * {}, wc = (warp % 4) * {};\n", kTile / 2, kTile / 4);
    tileLoopHead(tilesI, tilesJ, kTile, kTile, out);
    out += fmt::format("    float frag[{}][{}][4];\n", fragsI, fragsJ);
    out += fmt::format("#pragma unroll\n    for (int a = 0; a < {}; ++a)\n#pragma unroll\n      for (int b = 0; b < {}; ++b)\n"
                       "#pragma unroll\n        for (int e = 0; e < 4; ++e) frag[a][b][e] = 0.0f;\n", fragsI, fragsJ);
    // This k-step's arithmetic on buffer `cur`.
    auto fragments = [&]() {
    out += "      // This k-step: the A fragments of the warp's rows, then per column fragment its B fragment\n";
    out += "      // and one mma per row fragment. Out-of-range k, rows and columns were staged as +0.\n";
    if (tf32) {
      // m16n8k8.tf32 (PTX ISA, "Matrix fragments for mma.m16n8k8"): lane 4g + t holds A(g, t),
      // A(g + 8, t), A(g, t + 4), A(g + 8, t + 4) and B(t, g), B(t + 4, g); k-halves of 8.
      out += fmt::format("#pragma unroll\n      for (int kh = 0; kh < {}; kh += 8) {{\n", kT);
      out += fmt::format("        unsigned fa[{}][4];\n", fragsI);
      out += fmt::format("#pragma unroll\n        for (int a = 0; a < {}; ++a) {{\n", fragsI);
      out += "          const float* r0 = &tileA[cur][wr + 16 * a + g][kh + t];\n";
      out += fmt::format("          const float* r8 = r0 + 8 * {};\n", rowLen);
      out += "          fa[a][0] = texc_tf32(r0[0]);\n          fa[a][1] = texc_tf32(r8[0]);\n";
      out += "          fa[a][2] = texc_tf32(r0[4]);\n          fa[a][3] = texc_tf32(r8[4]);\n        }\n";
      out += fmt::format("#pragma unroll\n        for (int b = 0; b < {}; ++b) {{\n", fragsJ);
      out += "          const int c = wc + 8 * b + g;\n";
      out += "          const unsigned fb0 = texc_tf32(tileB[cur][kh + t][c]), fb1 = texc_tf32(tileB[cur][kh + t + 4][c]);\n";
      out += fmt::format("#pragma unroll\n          for (int a = 0; a < {}; ++a) texc_mma_tf32(frag[a][b], fa[a][0], fa[a][1], fa[a][2], fa[a][3], fb0, fb1);\n",
                         fragsI);
      out += "        }\n      }\n";
    } else {
    out += fmt::format("      unsigned fa[{}][4];\n", fragsI);
    out += fmt::format("#pragma unroll\n      for (int a = 0; a < {}; ++a) {{\n", fragsI);
    out += "        const unsigned short* r0 = &tileA[cur][wr + 16 * a + g][2 * t];\n";
    out += fmt::format("        const unsigned short* r8 = r0 + 8 * {};\n", rowLen);
    out += "        fa[a][0] = texc_pair(r0[0], r0[1]);\n        fa[a][1] = texc_pair(r8[0], r8[1]);\n";
    out += "        fa[a][2] = texc_pair(r0[8], r0[9]);\n        fa[a][3] = texc_pair(r8[8], r8[9]);\n      }\n";
    out += fmt::format("#pragma unroll\n      for (int b = 0; b < {}; ++b) {{\n", fragsJ);
    out += "        const int c = wc + 8 * b + g;\n";
    out += "        const unsigned fb0 = texc_pair(tileB[cur][2 * t][c], tileB[cur][2 * t + 1][c]);\n";
    out += "        const unsigned fb1 = texc_pair(tileB[cur][2 * t + 8][c], tileB[cur][2 * t + 9][c]);\n";
    out += fmt::format("#pragma unroll\n        for (int a = 0; a < {}; ++a) texc_mma_{}(frag[a][b], fa[a][0], fa[a][1], fa[a][2], fa[a][3], fb0, fb1);\n",
                       fragsI, m_.mma);
    out += "      }\n";
    }
    };
    if (m_.asyncCopy) {
      asyncPipeline(kT, K, stageAsync, fragments, out);
    } else {
    out += "    // the first k-step into buffer 0\n";
    stage("0", false, "0", 2);
    registerStagedLoopHead(kT, K, out);
    out += fmt::format("      {} nextA[{}], nextB[{}];\n", elem, slots, slots);
    out += "      if (more) {  // the next k-step's operands, into registers\n";
    stage(fmt::format("(k0 + {})", kT), true, "", 4);
    out += "      }\n";
    fragments();
    out += "      if (more) {  // into the buffer nobody reads during this step\n";
    out += fmt::format("#pragma unroll\n        for (int s = 0; s < {}; ++s) {{\n          const int e = threadIdx.x + {} * s;\n"
                       "          tileA[cur ^ 1][e / {}][e % {}] = nextA[s];\n          tileB[cur ^ 1][e / {}][e % {}] = nextB[s];\n        }}\n",
                       slots, kT * kT, kT, kT, kTile, kTile);
    out += "      }\n";
    out += "      __syncthreads();  // the next step's buffer is full; this step's may be overwritten\n    }\n";
    }
    // Each accumulator element at its row and column, in the epilogue.
    out += fmt::format("#pragma unroll\n    for (int a = 0; a < {}; ++a) {{\n#pragma unroll\n      for (int b = 0; b < {}; ++b) {{\n", fragsI, fragsJ);
    if (window) {
      // A pool's window: a lane's two columns 2t, 2t + 1 lie in one window (W >= 2), whose other
      // columns are in the lanes t ^ o, o < W / 2 (W divides the fragment's 8 columns).
      const AccInit& m = inner[0].as<AccInit>();
      const std::string inRange = fmt::format("{} < {} && colw < {}", ni, I, J);
      out += "#pragma unroll\n        for (int h = 0; h < 2; ++h) {\n";
      out += fmt::format("          const {} {} = row0 + wr + 16 * a + g + 8 * h;\n", idx_, ni);
      out += fmt::format("          {} pair[2];\n", t_);
      out += "#pragma unroll\n          for (int e = 0; e < 2; ++e) {\n";
      declareColumn(window, lj.var, "col0 + wc + 8 * b + 2 * t + e", "            ", out);
      windowFold(inner, *window, "frag[a][b][2 * h + e]", inRange, 6, out);
      out += fmt::format("            pair[e] = acc{};\n          }}\n", m.acc);
      out += "          {\n";
      declareColumn(window, lj.var, "col0 + wc + 8 * b + 2 * t", "            ", out);
      out += declareAccs(6);
      out += fmt::format("            acc{} = {};\n", m.acc, combine(m.reduce, "pair[0]", "pair[1]"));
      windowStore(inner, m_.window / 2, inRange, fmt::format("{} == 0", varNames_[window->var]), 6, out);
      out += "          }\n";
      out += "        }\n      }\n    }\n  }\n";
      return;
    }
    out += "#pragma unroll\n        for (int e = 0; e < 4; ++e) {\n";
    out += fmt::format("          const {} {} = row0 + wr + 16 * a + g + 8 * (e / 2);\n", idx_, ni);
    out += fmt::format("          const {} {} = col0 + wc + 8 * b + 2 * t + e % 2;\n", idx_, nj);
    out += fmt::format("          if ({} >= {} || {} >= {}) continue;\n", ni, I, nj, J);
    out += declareAccs(5);
    out += fmt::format("          acc{} = frag[a][b][e];\n", first.acc);
    for (int copy : m_.copies) out += fmt::format("          acc{} = frag[a][b][e];  // the same reduction\n", copy);
    stmt(inner.back(), 5, out);
    out += "        }\n      }\n    }\n  }\n";
  }

  // inner = [acc = identity, for k { acc op= term }, (copies), store f(acc)]: a tile x tileCols
  // block of (i, j) per block of kStep x kStep threads, each thread a regBlock x regCols register
  // block, k in steps of kStep with the mapping's row and column operands staged in shared memory.
  void tiledContraction(const Block& inner, std::string& out) const {
    if (!m_.mma.empty()) return tiledContractionMma(inner, out);
    const int kT = m_.kStep;
    const int kRI = m_.regBlock, kRJ = m_.regCols;  // a thread's rows and columns
    const int tileI = m_.tile, tileJ = m_.tileCols;
    // With a pool in the epilogue, the contraction is the window loop's body.
    const Loop* window = m_.window > 1 ? gpu::poolWindow(inner) : nullptr;
    const Block& body = window ? window->body : inner;
    const AccInit& first = body[0].as<AccInit>();
    const Loop& kLoop = body[1].as<Loop>();
    const AccUpdate& update = gpu::kLoopUpdate(kLoop);
    const Loop& li = *lhs_[lhs_.size() - 2];
    const Loop& lj = *lhs_.back();
    int vi = li.var, vj = lj.var, vk = kLoop.var;
    int64_t I = li.extent, J = lj.extent * m_.window, K = kLoop.extent;  // J: the flat columns
    std::vector<const Expr*> loads = gpu::loadsInOrder(update.value);
    std::vector<const Expr*> aLoads, bLoads;
    for (int n : m_.rowOperands) aLoads.push_back(loads[n]);
    for (int n : m_.colOperands) bLoads.push_back(loads[n]);
    int64_t tilesI = (I + tileI - 1) / tileI, tilesJ = (J + tileJ - 1) / tileJ;
    const std::string& ni = varNames_[vi];
    const std::string& nj = varNames_[vj];
    const std::string& nk = varNames_[vk];
    std::string a = fmt::format("acc{}", first.acc);
    ReduceKind kind = first.reduce;
    const std::string padding = paddingCheck(kLoop);
    // Two shared buffers per operand: while the threads compute on one k-step, the next step's
    // operands travel into the other buffer, so one barrier per step suffices and the global loads
    // overlap the arithmetic. With asyncCopy they go by cp.async, straight into shared memory;
    // otherwise they are loaded into registers during the step and stored after it.
    LoadMap staged;
    for (size_t n = 0; n < aLoads.size(); ++n) {
      out += fmt::format("  __shared__ {}{} tileA{}[{}][{}][{}];  // {} at (i, k){}\n", m_.vectorCopies.empty() ? "" : "__align__(16) ", t_, n,
                         m_.stages, tileI, kT + m_.rowPad,
                         p_.buffers[aLoads[n]->buffer].name, m_.rowPad ? ", padded against bank conflicts" : "");
      staged[aLoads[n]] = fmt::format("tileA{}[cur][ty + {} * r][kk]", n, kT);
    }
    for (size_t n = 0; n < bLoads.size(); ++n) {
      out += fmt::format("  __shared__ {}{} tileB{}[{}][{}][{}];  // {} at (k, j)\n", m_.vectorCopies.empty() ? "" : "__align__(16) ", t_, n,
                         m_.stages, kT, tileJ, p_.buffers[bLoads[n]->buffer].name);
      staged[bLoads[n]] = fmt::format("tileB{}[cur][kk][tx + {} * c]", n, kT);
    }
    // Staging: each thread moves kRI elements of every row operand's tile and kRJ of every column
    // operand's for k-step `kBase`; elements out of range are 0 and never combined (their terms
    // are skipped below).
    const int slotsA = tileI * kT / (kT * kT), slotsB = tileJ * kT / (kT * kT);
    // For every element this thread stages of each operand tile at k-step `kBase`: its loop, its
    // indices, then `move(load, slot, dest, inside, pad)` writes the statements that move it, where
    // `slot` is "A0[s]"-like and `dest` the element of buffer `buf` of the shared tile.
    // An operand of GpuMapping::vectorCopies (async only) goes by vectorStage instead.
    auto isVector = [&](const Expr* e) {
      for (int n : m_.vectorCopies)
        if (loads[n] == e) return true;
      return false;
    };
    auto forEachStaged = [&](const std::string& kBase, const std::string& buf, int depth, auto move) {
      std::string pad(2 * depth, ' ');
      for (size_t n = 0; n < aLoads.size(); ++n) {
        if (isVector(aLoads[n])) {  // rows of kT elements, four at a time
          vectorStage(fmt::format("tileA{}[{}]", n, buf), tileI * kT / 4, kT, 4, ni, "row0", nk, vk, kBase,
                      fmt::format("({} < {} && {} < {})", ni, I, nk, K), *aLoads[n], depth, out);
          continue;
        }
        out += fmt::format("#pragma unroll\n{}for (int s = 0; s < {}; ++s) {{\n", pad, slotsA);
        out += fmt::format("{}  const int e = threadIdx.x + {} * s;\n", pad, kT * kT);
        out += fmt::format("{}  const {} {} = row0 + e / {}, {} = {} + e % {};\n", pad, idx_, ni, kT, nk, kBase, kT);
        move(*aLoads[n], fmt::format("A{}[s]", n), fmt::format("tileA{}[{}][e / {}][e % {}]", n, buf, kT, kT),
             fmt::format("({} < {} && {} < {})", ni, I, nk, K), pad + "  ");
        out += pad + "}\n";
      }
      for (size_t n = 0; n < bLoads.size(); ++n) {
        if (isVector(bLoads[n])) {  // rows of tileJ elements, four at a time
          vectorStage(fmt::format("tileB{}[{}]", n, buf), tileJ * kT / 4, tileJ, 4, nk, kBase, nj, vj, "col0",
                      fmt::format("({} < {} && {} < {})", nk, K, nj, J), *bLoads[n], depth, out);
          continue;
        }
        out += fmt::format("#pragma unroll\n{}for (int s = 0; s < {}; ++s) {{\n", pad, slotsB);
        out += fmt::format("{}  const int e = threadIdx.x + {} * s;\n", pad, kT * kT);
        out += fmt::format("{}  const {} {} = {} + e / {};\n", pad, idx_, nk, kBase, tileJ);
        const std::string column = declareColumn(window, vj, fmt::format("col0 + e % {}", tileJ), pad + "  ", out);
        move(*bLoads[n], fmt::format("B{}[s]", n), fmt::format("tileB{}[{}][e / {}][e % {}]", n, buf, tileJ, tileJ),
             fmt::format("({} < {} && {} < {}{})", nk, K, column, J, padding), pad + "  ");
        out += pad + "}\n";
      }
    };
    // Through registers: into the shared buffer `buf`, or (toRegisters) into nextA/nextB.
    auto stage = [&](const std::string& kBase, bool toRegisters, const std::string& buf, int depth) {
      forEachStaged(kBase, buf, depth, [&](const Expr& e, const std::string& slot, const std::string& dest, const std::string& ok, const std::string& pad) {
        out += fmt::format("{}{} = {} ? {} : {};\n", pad, toRegisters ? "next" + slot : dest, ok, load(e), literal(0));
      });
    };
    // With asyncCopy: each element one cp.async into buffer `buf`, zeros out of range (the source
    // then the buffer's start, never read).
    auto stageAsync = [&](const std::string& kBase, const std::string& buf, int depth) {
      forEachStaged(kBase, buf, depth, [&](const Expr& e, const std::string&, const std::string& dest, const std::string& ok, const std::string& pad) {
        out += fmt::format("{}const bool ok = {};\n", pad, ok);
        out += fmt::format("{}texc_cp_async(&{}, ok ? &{} : {}, ok);\n", pad, dest, load(e), bufferName(e.buffer));
      });
      out += fmt::format("{}texc_cp_async_commit();\n", std::string(2 * depth, ' '));
    };
    out += fmt::format("  const int tx = threadIdx.x % {}, ty = threadIdx.x / {};\n", kT, kT);
    tileLoopHead(tilesI, tilesJ, tileI, tileJ, out);
    out += fmt::format("    {} regs[{}][{}];\n", t_, kRI, kRJ);
    out += fmt::format("#pragma unroll\n    for (int r = 0; r < {}; ++r)\n#pragma unroll\n      for (int c = 0; c < {}; ++c) regs[r][c] = {};\n", kRI, kRJ,
                       identity(kind));
    auto computeStep = [&]() {
      out += fmt::format("#pragma unroll\n      for (int kk = 0; kk < {}; ++kk) {{\n", kT);
      if (K % kT != 0) out += fmt::format("        if (k0 + kk >= {}) break;\n", K);
      out += fmt::format("        const {} {} = k0 + kk;\n", idx_, nk);
      out += fmt::format("#pragma unroll\n        for (int r = 0; r < {}; ++r) {{\n", kRI);
      out += fmt::format("          const {} {} = row0 + ty + {} * r;\n", idx_, ni, kT);
      out += fmt::format("#pragma unroll\n          for (int c = 0; c < {}; ++c) {{\n", kRJ);
      declareColumn(window, vj, fmt::format("col0 + tx + {} * c", kT), "            ", out);
      out += fmt::format("            regs[r][c] = {};\n", combine(kind, "regs[r][c]", expr(update.value, staged)));
      out += "          }\n        }\n      }\n";
    };
    if (m_.asyncCopy) {
      asyncPipeline(kT, K, stageAsync, computeStep, out);
    } else {
      out += "    // the first k-step into buffer 0\n";
      stage("0", false, "0", 2);
      registerStagedLoopHead(kT, K, out);
      for (size_t n = 0; n < aLoads.size(); ++n) out += fmt::format("      {} nextA{}[{}];\n", t_, n, slotsA);
      for (size_t n = 0; n < bLoads.size(); ++n) out += fmt::format("      {} nextB{}[{}];\n", t_, n, slotsB);
      out += "      if (more) {  // the next k-step's operands, into registers\n";
      stage(fmt::format("(k0 + {})", kT), true, "", 4);
      out += "      }\n";
      computeStep();
      out += "      if (more) {  // into the buffer nobody reads during this step\n";
      for (size_t n = 0; n < aLoads.size(); ++n)
        out += fmt::format("#pragma unroll\n        for (int s = 0; s < {}; ++s) {{\n          const int e = threadIdx.x + {} * s;\n"
                           "          tileA{}[cur ^ 1][e / {}][e % {}] = nextA{}[s];\n        }}\n",
                           slotsA, kT * kT, n, kT, kT, n);
      for (size_t n = 0; n < bLoads.size(); ++n)
        out += fmt::format("#pragma unroll\n        for (int s = 0; s < {}; ++s) {{\n          const int e = threadIdx.x + {} * s;\n"
                           "          tileB{}[cur ^ 1][e / {}][e % {}] = nextB{}[s];\n        }}\n",
                           slotsB, kT * kT, n, tileJ, tileJ, n);
      out += "      }\n";
      out += "      __syncthreads();  // the next step's buffer is full; this step's may be overwritten\n    }\n";
    }
    // Unrolled, so that regs stays in registers (a loop indexing it would put it in local memory).
    out += fmt::format("#pragma unroll\n    for (int r = 0; r < {}; ++r) {{\n", kRI);
    out += fmt::format("      const {} {} = row0 + ty + {} * r;\n", idx_, ni, kT);
    out += fmt::format("#pragma unroll\n      for (int c = 0; c < {}; ++c) {{\n", kRJ);
    const std::string column = declareColumn(window, vj, fmt::format("col0 + tx + {} * c", kT), "        ", out);
    if (window) {
      // A window's W columns are in the lanes tx .. tx + W - 1 of a half-warp (W divides 16).
      const std::string inRange = fmt::format("{} < {} && colw < {}", ni, I, J);
      windowFold(inner, *window, "regs[r][c]", inRange, 4, out);
      windowStore(inner, m_.window, inRange, fmt::format("{} == 0", varNames_[window->var]), 4, out);
      out += "      }\n    }\n  }\n";
      return;
    }
    out += fmt::format("        if ({} >= {} || {} >= {}) continue;\n", ni, I, column, J);
    out += declareAccs(4);
    out += fmt::format("        {} = regs[r][c];\n", a);
    for (int copy : m_.copies) out += fmt::format("        acc{} = regs[r][c];  // the same reduction\n", copy);
    stmt(inner.back(), 4, out);
    out += "      }\n    }\n  }\n";
  }

  // Rows in registers (onlineTileRows): the plan, the register array of each buffer held per row,
  // the current split loop's counter, and the predicate of the statements being printed.
  std::optional<gpu::OnlineTileMatch> rows_;
  mutable std::map<int, std::string> rowRegs_;
  mutable std::string laneCounter_;
  mutable int stagedCopies_ = 0;  // splitLoop's register copies of staged elements, numbered
  std::string on_;
  mutable std::map<int, std::string> rcpNames_;  // accumulators whose reciprocal the code in print has hoisted, and its name
  mutable std::set<std::string> declaredRcps_;    // the names hoisted in the kernel so far

  const LoopProgram& p_;
  const Kernel& k_;
  const GpuMapping& m_;
  std::string prefix_;
  std::string idx_;
  std::string t_;
  std::vector<std::string> varNames_;
  std::vector<const Loop*> lhs_;
  int64_t outputs_ = 1;
};

}  // namespace
}  // namespace loops

std::vector<std::string> verifyCudaModule(const CudaModule& m, const loops::LoopProgram& program) {
  std::vector<std::string> problems;
  if (m.kernels.size() != program.kernels.size())
    problems.push_back(fmt::format("{} CUDA kernels for {} loop kernels", m.kernels.size(), program.kernels.size()));
  std::set<std::string> symbols;
  for (const CudaKernel& k : m.kernels) {
    if (!symbols.insert(k.symbol).second) problems.push_back(fmt::format("kernel symbol {} defined twice", k.symbol));
    if (m.source.find(fmt::format(") {}(", k.symbol)) == std::string::npos) problems.push_back(fmt::format("kernel {} is not in the source", k.symbol));
    if (k.blocks < 1 || k.blocks >= (int64_t{1} << 31)) problems.push_back(fmt::format("kernel {}: {} blocks", k.symbol, k.blocks));
    if (k.threads < 32 || k.threads > 1024 || k.threads % 32 != 0) problems.push_back(fmt::format("kernel {}: {} threads", k.symbol, k.threads));
    // An SM holds at most 2048 threads (sm_80 and later).
    if (k.minBlocksPerSM < 1 || int64_t{k.minBlocksPerSM} * k.threads > 2048)
      problems.push_back(fmt::format("kernel {}: {} blocks of {} threads per SM", k.symbol, k.minBlocksPerSM, k.threads));
    if (k.paramTypes.size() != program.buffers.size())
      problems.push_back(fmt::format("kernel {}: {} parameters for {} buffers", k.symbol, k.paramTypes.size(), program.buffers.size()));
  }
  return problems;
}

CudaModule printCUDA(const loops::LoopProgram& program, const std::string& symbolPrefix) {
  for (const loops::Kernel& k : program.kernels)
    if (!k.gpu) throw std::logic_error("codegen-cuda: kernel " + k.name + " has no GPU mapping (map-gpu did not run)");
  for (const loops::Buffer& b : program.buffers)
    if (b.kind == loops::BufferKind::Local)
      throw std::logic_error("codegen-cuda: local buffer " + b.name + " (the CPU's tiled online softmax) reached the CUDA backend");
  CudaModule m;
  m.source = "// CUDA C generated by texc from the loop IR (docs/cuda.md).\n";
  m.source += loops::kPrelude;
  for (const loops::Kernel& k : program.kernels)
    if (!k.gpu->mma.empty()) {
      m.source += loops::kMmaPrelude;
      break;
    }
  for (const loops::Kernel& k : program.kernels)
    if (k.gpu->asyncCopy) {
      m.source += loops::kCpAsyncPrelude;
      break;
    }
  m.source += "\n";
  for (const loops::Kernel& k : program.kernels)
    m.kernels.push_back(loops::KernelGen(program, k, symbolPrefix, needsWideIndex(program, k)).run(m.source));
  return m;
}

// 32-bit indices for a kernel whose every index fits them, decided from its index ranges: each
// value an index expression takes is an offset into a buffer the kernel reads or writes, a loop
// variable, or a flattened perfect nest (the grid's and the block's strides), so the kernel is
// 64-bit only when one of those reaches 2^30 (a margin of 2 below int's range for the
// out-of-range indices a guard then rejects, and the grid-stride counters' last step).
bool needsWideIndex(const loops::LoopProgram& program, const loops::Kernel& k) {
  constexpr int64_t kLimit = int64_t{1} << 30;
  bool wide = false;
  auto buffer = [&](int b) { wide = wide || (b >= 0 && program.buffers[b].numElements() >= kLimit); };
  buffer(k.outputBuffer);
  loops::walk(k.body, [&](const loops::Stmt& s) {
    if (const auto* st = s.getIf<loops::Store>()) buffer(st->buffer);
    if (const loops::Expr* value = loops::valueOf(s)) loops::forEachLoad(*value, [&](const loops::Expr& e) { buffer(e.buffer); });
    if (s.is<loops::Loop>()) {
      int64_t n = 1;
      for (const loops::Loop* l : loops::perfectNest(s)) n = n > kLimit / std::max<int64_t>(l->extent, 1) ? kLimit : n * l->extent;
      wide = wide || n >= kLimit;
    }
    return loops::WalkAction::Advance;
  });
  if (k.gpu) wide = wide || k.gpu->blocks * k.gpu->threads >= kLimit;  // a grid-stride step
  return wide;
}

loops::gpu::GpuMapOptions gpuMapOptions(const CudaCodeGenOptions& o) {
  loops::gpu::GpuMapOptions g;
  g.threadsPerBlock = o.threadsPerBlock;
  g.maxBlocks = o.maxBlocks;
  g.blockReductions = o.blockReductions;
  g.rowBlocks = o.rowBlocks;
  g.tiledContractions = o.tiledContractions;
  g.tf32 = o.tf32;
  g.multiprocessors = o.multiprocessors;
  return g;
}

CudaModule generateCUDA(const loops::LoopProgram& program, const CudaCodeGenOptions& options) {
  if (options.threadsPerBlock < 32 || options.threadsPerBlock > 1024 || (options.threadsPerBlock & (options.threadsPerBlock - 1)))
    throw std::invalid_argument("threadsPerBlock must be a power of two in [32, 1024]");
  loops::LoopProgram mapped = program;
  loops::gpu::mapGpu(mapped, gpuMapOptions(options));
  loops::gpu::syncGpuThreads(mapped);
  return printCUDA(mapped, options.symbolPrefix);
}

}  // namespace texc
