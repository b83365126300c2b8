#include "compiler/backend/cuda/CodeGenCUDA.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "compiler/loops/Equal.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "frontend/AST.h"

namespace texc {

const char* strategyName(CudaStrategy s) {
  switch (s) {
    case CudaStrategy::GridStride: return "grid-stride";
    case CudaStrategy::BlockReduce: return "block-reduce";
    case CudaStrategy::TiledContraction: return "tiled-contract";
    case CudaStrategy::RowBlock: return "row-block";
  }
  return "?";
}

namespace loops {
namespace {

// Helpers every kernel may call; guarded so that several programs can share one translation unit.
// max/min follow the CPU backend (NaN propagates, -0 < +0); f16/bf16 conversions round to nearest
// even like LLVM's fptrunc and the CPU backend's bf16 code.
const char* const kPrelude = R"(#ifndef TEXC_CUDA_PRELUDE
#define TEXC_CUDA_PRELUDE
__device__ __forceinline__ unsigned texc_bits(float x) { union { float f; unsigned u; } c; c.f = x; return c.u; }
__device__ __forceinline__ float texc_float(unsigned u) { union { float f; unsigned u; } c; c.u = u; return c.f; }
__device__ __forceinline__ float texc_max(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return (texc_bits(a) >> 31) ? b : a;
  return a > b ? a : b;
}
__device__ __forceinline__ float texc_min(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return (texc_bits(a) >> 31) ? a : b;
  return a < b ? a : b;
}
__device__ __forceinline__ double texc_max(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return (a == 0 && 1.0 / a < 0) ? b : a;
  return a > b ? a : b;
}
__device__ __forceinline__ double texc_min(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return (a == 0 && 1.0 / a < 0) ? a : b;
  return a < b ? a : b;
}
__device__ __forceinline__ float texc_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ double texc_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
__device__ __forceinline__ float texc_f16_load(unsigned short h) {
  unsigned e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? 0.0f / 0.0f : 1.0f / 0.0f) : ldexpf((float)(m | 0x400u), (int)e - 25);
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
class KernelGen {
 public:
  KernelGen(const LoopProgram& p, const Kernel& k, const CudaCodeGenOptions& o, bool wideIndex)
      : p_(p), k_(k), o_(o), idx_(wideIndex ? "long long" : "int") {
    t_ = k.computeType == DType::F64 ? "double" : "float";
    for (size_t v = 0; v < k.varNames.size(); ++v)
      varNames_.push_back(isIdentifier(k.varNames[v]) ? k.varNames[v] + "_" : fmt::format("v{}_", v));
  }

  CudaKernel run(std::string& out) {
    CudaKernel info;
    // Kernel names may hold characters C does not allow ("k1_e.1"); the kN prefix keeps them unique.
    info.symbol = o_.symbolPrefix;
    for (char ch : k_.name) info.symbol += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    info.loopKernel = k_.name;
    for (size_t b = 0; b < p_.buffers.size(); ++b) {
      bool written = static_cast<int>(b) == k_.outputBuffer;
      info.paramTypes.push_back(fmt::format("{}{}*", written ? "" : "const ", storageType(p_.buffers[b].dtype)));
    }
    // The left-hand nest: loops whose body is one loop, down to the list that holds the store.
    if (k_.body.size() == 1) lhs_ = perfectNest(k_.body[0]);
    const Block* inner = lhs_.empty() ? &k_.body : &innermostBody(lhs_);
    outputs_ = 1;
    for (const Loop* l : lhs_) outputs_ *= l->extent;

    std::string body;
    if (o_.tiledContractions && tiledContraction(*inner, body, info)) {
      info.strategy = CudaStrategy::TiledContraction;
    } else if (o_.blockReductions && blockReduce(*inner, body, info)) {
      info.strategy = CudaStrategy::BlockReduce;
    } else if (o_.blockReductions && o_.rowBlocks && rowBlock(*inner, body, info)) {
      info.strategy = CudaStrategy::RowBlock;
    } else {
      body.clear();
      gridStride(*inner, body, info);
      info.strategy = CudaStrategy::GridStride;
    }

    std::string params;
    for (size_t b = 0; b < p_.buffers.size(); ++b)
      params += fmt::format("{}{} __restrict__ {}", b ? ", " : "", info.paramTypes[b], bufferName(static_cast<int>(b)));
    out += fmt::format("// kernel {}: {}, launch <<<{}, {}>>>\n", k_.name, strategyName(info.strategy), info.blocks, info.threads);
    for (const std::string& m : info.mapping) out += "//   " + m + "\n";
    out += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n{}}}\n\n", info.threads, info.symbol, params, body);
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
    if (std::isnan(v)) return f32 ? "(0.0f / 0.0f)" : "(0.0 / 0.0)";
    if (std::isinf(v)) return v > 0 ? (f32 ? "(1.0f / 0.0f)" : "(1.0 / 0.0)") : (f32 ? "(-1.0f / 0.0f)" : "(-1.0 / 0.0)");
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
      case IndexExpr::Kind::FloorDiv: return fmt::format("({})texc_floordiv({}, {})", idx_, index(ix.ops[0]), ix.constant);
      case IndexExpr::Kind::Mod: return fmt::format("({})texc_mod({}, {})", idx_, index(ix.ops[0]), ix.constant);
    }
    return "?";
  }

  std::string offset(int buffer, const std::vector<IndexExpr>& idx) const {
    const Buffer& buf = p_.buffers[buffer];
    std::string s;
    int64_t stride = 1;
    for (size_t d = idx.size(); d-- > 0;) {
      std::string term = stride == 1 ? index(idx[d]) : fmt::format("{} * {}", stride, index(idx[d]));
      s = s.empty() ? term : term + " + " + s;
      stride *= buf.shape[d];
    }
    return s.empty() ? "0" : s;
  }

  std::string load(const Expr& e) const {
    std::string raw = fmt::format("{}[{}]", bufferName(e.buffer), offset(e.buffer, e.index));
    switch (p_.buffers[e.buffer].dtype) {
      case DType::F16: return fmt::format("(({})texc_f16_load({}))", t_, raw);
      case DType::BF16: return fmt::format("(({})texc_bf16_load({}))", t_, raw);
      default: return p_.buffers[e.buffer].dtype == k_.computeType ? raw : fmt::format("(({}){})", t_, raw);
    }
  }

  std::string expr(const Expr& e, const LoadMap& loads) const {
    switch (e.kind) {
      case ExprKind::Const: return e.isBool ? (e.constant != 0 ? "true" : "false") : literal(e.constant);
      case ExprKind::VarValue: return fmt::format("(({}){})", t_, e.index.empty() ? varNames_[e.var] : index(e.index[0]));
      case ExprKind::Load: {
        auto it = loads.find(&e);
        return it != loads.end() ? it->second : load(e);
      }
      case ExprKind::AccRead: return fmt::format("acc{}", e.acc);
      case ExprKind::Unary: return fmt::format("({}{})", e.unaryOp == UnaryOp::Neg ? "-" : "!", expr(e.args[0], loads));
      case ExprKind::Binary: {
        if (e.binaryOp == BinaryOp::Mod) throw std::logic_error("'%' reached code generation");
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
    }
    return "?";
  }

  std::string store(const Store& s, const LoadMap& loads) const {
    std::string v = expr(s.value, loads);
    switch (p_.buffers[s.buffer].dtype) {
      case DType::F16: v = fmt::format("texc_f16_store((float){})", v); break;
      case DType::BF16: v = fmt::format("texc_bf16_store((float){})", v); break;
      default: if (p_.buffers[s.buffer].dtype != k_.computeType) v = fmt::format("({}){}", storageType(p_.buffers[s.buffer].dtype), v);
    }
    return fmt::format("{}[{}] = {};", bufferName(s.buffer), offset(s.buffer, s.index), v);
  }

  void stmt(const Stmt& s, int depth, std::string& out, const LoadMap& loads = {}) const {
    std::string pad(2 * depth, ' ');
    switch (s.kind()) {
      case StmtKind::Loop: {
        const Loop& l = s.as<Loop>();
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
      case StmtKind::AccUpdate: {
        const AccUpdate& u = s.as<AccUpdate>();
        std::string a = fmt::format("acc{}", u.acc);
        out += fmt::format("{}{} = {};\n", pad, a, combine(u.reduce, a, expr(u.value, loads)));
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

  // Binds the variables of `loops` (outermost first) from the flat index `flat`, innermost
  // fastest; records "name → expression" mapping lines.
  void unflatten(const std::vector<const Loop*>& loops, const std::string& flat, int depth, std::string& out,
                 std::vector<std::string>* mapping) const {
    std::string pad(2 * depth, ' ');
    int64_t stride = 1;
    size_t firstLine = mapping ? mapping->size() : 0;
    for (size_t d = loops.size(); d-- > 0;) {
      const Loop& l = *loops[d];
      std::string e = flat;
      if (stride > 1) e = fmt::format("{} / {}", e, stride);
      if (d > 0) e = stride > 1 ? fmt::format("({}) % {}", e, l.extent) : fmt::format("{} % {}", e, l.extent);
      out += fmt::format("{}const {} {} = {};\n", pad, idx_, varNames_[l.var], e);
      if (mapping) mapping->push_back(fmt::format("{} → {}", k_.varNames[l.var], e));
      stride *= l.extent;
    }
    if (mapping) std::reverse(mapping->begin() + static_cast<std::ptrdiff_t>(firstLine), mapping->end());  // outermost first
  }

  // ---- grid-stride -------------------------------------------------------------------------------
  // A load of a tensor shaped like the output at exactly the output's indices: element t of the
  // flat index, so four consecutive t are one aligned float4 (buffers are 256-byte aligned).
  bool identityLoad(const Expr& e) const {
    const Buffer& buf = p_.buffers[e.buffer];
    if (buf.dtype != DType::F32 || e.index.size() != lhs_.size()) return false;
    for (size_t d = 0; d < lhs_.size(); ++d)
      if (e.index[d].kind != IndexExpr::Kind::Var || e.index[d].var != lhs_[d]->var || buf.shape[d] != lhs_[d]->extent) return false;
    return true;
  }

  // Elementwise f32 kernels over a multiple of 4 elements: each thread handles four consecutive
  // elements, its same-shaped operands read and its result written as float4.
  bool vectorized(const Block& inner, std::string& out, CudaKernel& info) const {
    if (inner.size() != 1 || !inner[0].is<Store>() || k_.computeType != DType::F32 || outputs_ % 4 != 0 || outputs_ < 4 ||
        p_.buffers[inner[0].as<Store>().buffer].dtype != DType::F32)
      return false;
    const Store& store = inner[0].as<Store>();
    std::vector<const Expr*> loads = loadsIn(store.value);
    std::set<int> vectorBuffers;
    for (const Expr* e : loads)
      if (identityLoad(*e)) vectorBuffers.insert(e->buffer);
    int b = o_.threadsPerBlock;
    int64_t quads = outputs_ / 4;
    info.threads = b;
    info.blocks = std::max<int64_t>(1, std::min<int64_t>((quads + b - 1) / b, o_.maxBlocks));
    out += fmt::format("  for ({} q = ({})blockIdx.x * {} + threadIdx.x; q < {}; q += ({})gridDim.x * {}) {{\n", idx_, idx_, b, quads, idx_, b);
    LoadMap lanes;
    for (int buf : vectorBuffers) {
      out += fmt::format("    const float4 {0}4 = reinterpret_cast<const float4*>({0})[q];\n", bufferName(buf));
      out += fmt::format("    const float {0}_lanes[4] = {{{0}4.x, {0}4.y, {0}4.z, {0}4.w}};\n", bufferName(buf));
    }
    for (const Expr* e : loads)
      if (vectorBuffers.count(e->buffer) && identityLoad(*e)) lanes[e] = fmt::format("{}_lanes[lane]", bufferName(e->buffer));
    out += "    float result[4];\n#pragma unroll\n    for (int lane = 0; lane < 4; ++lane) {\n";
    out += fmt::format("      const {} t = 4 * q + lane;\n", idx_);
    std::vector<std::string> mapping;
    unflatten(lhs_, "t", 3, out, &mapping);
    out += fmt::format("      result[lane] = {};\n    }}\n", expr(store.value, lanes));
    out += fmt::format("    reinterpret_cast<float4*>({})[q] = make_float4(result[0], result[1], result[2], result[3]);\n  }}\n",
                       bufferName(store.buffer));
    info.mapping = mapping;
    info.mapping.push_back(fmt::format("t = 4*q + lane, q = blockIdx.x*{}+threadIdx.x, grid-stride by gridDim.x*{} over {} float4 groups", b, b,
                                       quads));
    return true;
  }

  void gridStride(const Block& inner, std::string& out, CudaKernel& info) const {
    if (vectorized(inner, out, info)) return;
    int b = o_.threadsPerBlock;
    info.threads = b;
    info.blocks = std::max<int64_t>(1, std::min<int64_t>((outputs_ + b - 1) / b, o_.maxBlocks));
    std::string start = fmt::format("({})blockIdx.x * {} + threadIdx.x", idx_, b);
    out += fmt::format("  for ({} t = {}; t < {}; t += ({})gridDim.x * {}) {{\n", idx_, start, outputs_, idx_, b);
    std::vector<std::string> mapping;
    unflatten(lhs_, "t", 2, out, &mapping);
    for (std::string& m : mapping) {
      size_t arrow = m.find("→ ");
      std::string rhs = m.substr(arrow + 4);
      if (rhs == "t") rhs = fmt::format("blockIdx.x*{}+threadIdx.x", b);
      m = m.substr(0, arrow + 4) + rhs;
    }
    mapping.push_back(fmt::format("t = blockIdx.x*{}+threadIdx.x, grid-stride by gridDim.x*{} over {} elements", b, b, outputs_));
    info.mapping = mapping;
    out += declareAccs(2);
    for (const Stmt& s : inner) stmt(s, 2, out);
    out += "  }\n";
  }

  // ---- block-reduce ------------------------------------------------------------------------------
  // inner = [acc = identity, reduction loops over the term, store f(acc)]: one block per output
  // element, its threads striding over the reduction's flattened iterations.
  bool blockReduce(const Block& inner, std::string& out, CudaKernel& info) const {
    if (inner.size() != 3 || !inner[0].is<AccInit>() || !inner[1].is<Loop>() || !inner[2].is<Store>()) return false;
    std::vector<const Loop*> red = perfectNest(inner[1]);
    const Block* term = &innermostBody(red);
    int64_t terms = 1;
    for (const Loop* r : red) terms *= r->extent;
    // Worth it when the reduction is long or the outputs are too few to fill the GPU.
    if (!(terms >= 256 || (terms >= 32 && outputs_ <= 16384))) return false;

    int b = o_.threadsPerBlock;
    int warps = b / 32;
    int acc = inner[0].as<AccInit>().acc;
    ReduceKind kind = inner[0].as<AccInit>().reduce;
    std::string a = fmt::format("acc{}", acc);
    info.threads = b;
    info.blocks = std::max<int64_t>(1, std::min<int64_t>(outputs_, o_.maxBlocks));
    out += fmt::format("  __shared__ {} partial[{}];  // one per warp\n", t_, warps);
    out += fmt::format("  for ({} row = blockIdx.x; row < {}; row += gridDim.x) {{\n", idx_, outputs_);
    std::vector<std::string> mapping;
    unflatten(lhs_, "row", 2, out, &mapping);
    std::vector<std::string> redMapping;
    for (std::string& m : mapping) {
      size_t arrow = m.find("→ ");
      if (m.substr(arrow + 4) == "row") m = m.substr(0, arrow + 4) + "blockIdx.x";
    }
    mapping.push_back(fmt::format("row = blockIdx.x, grid-stride by gridDim.x over {} rows", outputs_));
    out += declareAccs(2);
    out += fmt::format("    {} = {};\n", a, identity(kind));
    out += fmt::format("    for ({} r = threadIdx.x; r < {}; r += {}) {{\n", idx_, terms, b);
    unflatten(red, "r", 3, out, &redMapping);
    for (std::string& m : redMapping) {
      size_t arrow = m.find("→ ");
      if (m.substr(arrow + 4) == "r") m = m.substr(0, arrow + 4) + "threadIdx.x";
      mapping.push_back(m + " (reduction)");
    }
    mapping.push_back(fmt::format("r = threadIdx.x, block-stride by {} over {} terms; warp shuffles, then shared memory", b, terms));
    for (const Stmt& s : *term) stmt(s, 3, out);
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
    info.mapping = mapping;
    return true;
  }

  // ---- row-block ---------------------------------------------------------------------------------
  // A fused row kernel's body (inner, per row of the left-hand loops) is a sequence of phases:
  // accumulator initialisations, loops (reducing into row accumulators, storing, or both) and
  // stores of row scalars. Each loop's perfect nest is flattened and strided over the block's
  // threads; each row accumulator it updates is combined across the block after it.
  struct RowPhase {
    const Stmt* stmt = nullptr;
    std::vector<const Loop*> nest;  // Loop: the perfect nest strided over the threads
    int64_t extent = 1;             // Loop: its flattened iterations
    std::vector<int> reduced;       // the row accumulators combined after it, in order
    std::vector<ReduceKind> kinds;  // and how
    std::set<int> stores;           // buffers written
    struct Access {
      int buffer;
      bool write;
      const std::vector<IndexExpr>* index;
    };
    std::vector<Access> accesses;
  };

  // What a loop body touches, at any depth. (Pack and Tile, CPU tiling only, never get here: the
  // tile pass is skipped for --target cuda.)
  struct Touches {
    std::set<int> localAccs, readAccs;
    std::map<int, ReduceKind> updatedAccs;
    std::vector<const Store*> stores;
    std::vector<const Expr*> loads;
  };
  static Touches touches(const Block& body) {
    Touches t;
    forEachStmt(body, [&](const Stmt& s) {
      if (const auto* init = s.getIf<AccInit>()) t.localAccs.insert(init->acc);
      if (const auto* update = s.getIf<AccUpdate>()) t.updatedAccs.emplace(update->acc, update->reduce);
      if (const auto* store = s.getIf<Store>()) t.stores.push_back(store);
      if (const Expr* value = valueOf(s)) {
        forEachLoad(*value, [&](const Expr& e) { t.loads.push_back(&e); });
        addAccReads(*value, t.readAccs);
      }
    });
    return t;
  }
  static void addAccReads(const Expr& e, std::set<int>& out) {
    forEachExprNode(e, [&](const Expr& n) {
      if (n.kind == ExprKind::AccRead) out.insert(n.acc);
    });
  }
  static std::vector<const Expr*> loadsIn(const Expr& e) {
    std::vector<const Expr*> loads;
    forEachLoad(e, [&](const Expr& load) { loads.push_back(&load); });
    return loads;
  }
  static bool isVar(const IndexExpr& ix, int var) { return ix.kind == IndexExpr::Kind::Var && ix.var == var; }

  // Splits inner into phases; false when some statement does not fit the strategy (a guard or an
  // update at the row level, a loop that reads a row accumulator it also reduces, a store that
  // several threads would make, a read of an element another thread of the same phase writes).
  bool planRow(const Block& inner, std::vector<RowPhase>& phases) const {
    std::map<int, ReduceKind> rowAccs;
    std::set<int> fresh;  // row accumulators holding their identity (initialised, not yet reduced)
    for (const Stmt& s : inner) {
      RowPhase ph;
      ph.stmt = &s;
      if (const auto* init = s.getIf<AccInit>()) {
        rowAccs[init->acc] = init->reduce;
        fresh.insert(init->acc);
      } else if (const auto* store = s.getIf<Store>()) {
        std::set<int> reads;
        addAccReads(store->value, reads);
        for (int acc : reads)
          if (!rowAccs.count(acc)) return false;
        for (const Expr* e : loadsIn(store->value)) ph.accesses.push_back({e->buffer, false, &e->index});
        ph.stores.insert(store->buffer);
        ph.accesses.push_back({store->buffer, true, &store->index});
      } else if (const auto* loop = s.getIf<Loop>()) {
        ph.nest = perfectNest(s);
        for (const Loop* l : ph.nest) ph.extent *= l->extent;
        Touches t = touches(loop->body);
        for (const auto& [acc, kind] : t.updatedAccs) {
          if (t.localAccs.count(acc)) {
            if (rowAccs.count(acc)) return false;  // a row accumulator re-initialised per iteration
            continue;
          }
          if (!rowAccs.count(acc) || !fresh.count(acc) || rowAccs[acc] != kind || t.readAccs.count(acc)) return false;
          ph.reduced.push_back(acc);
          ph.kinds.push_back(kind);
        }
        for (int acc : ph.reduced) fresh.erase(acc);
        // Every thread holds a row accumulator's value; one initialised inside a loop holds, in
        // each thread, what that thread's last iteration left, so nothing after the loop may read it.
        for (int acc : t.readAccs)
          if (!t.localAccs.count(acc) && !rowAccs.count(acc)) return false;
        for (int acc : t.localAccs) rowAccs.erase(acc);
        // Distinct strided iterations must store distinct elements: every strided variable indexes
        // some dimension of every store.
        for (const Store* st : t.stores) {
          for (const Loop* l : ph.nest) {
            bool indexed = std::any_of(st->index.begin(), st->index.end(), [&](const IndexExpr& ix) { return isVar(ix, l->var); });
            if (!indexed) return false;
          }
          ph.stores.insert(st->buffer);
          ph.accesses.push_back({st->buffer, true, &st->index});
        }
        // A buffer written in this phase is read only where the same thread writes it.
        for (const Expr* e : t.loads) {
          ph.accesses.push_back({e->buffer, false, &e->index});
          if (!ph.stores.count(e->buffer)) continue;
          bool own = std::any_of(t.stores.begin(), t.stores.end(),
                                 [&](const Store* st) { return st->buffer == e->buffer && equal(st->index, e->index); });
          if (!own) return false;
        }
      } else {
        return false;
      }
      phases.push_back(std::move(ph));
    }
    return std::any_of(phases.begin(), phases.end(), [](const RowPhase& ph) { return !ph.reduced.empty(); });
  }

  // Whether every buffer the row body writes is touched only at elements of the current row (the
  // left-hand variables index the same dimensions in every access), so consecutive rows of a
  // block need no barrier between them.
  bool rowPrivate(const Block& inner) const {
    std::map<int, std::vector<const std::vector<IndexExpr>*>> accesses;
    std::set<int> written;
    forEachAccess(
        inner, [&](const Expr& load) { accesses[load.buffer].push_back(&load.index); },
        [&](const Store& store) {
          accesses[store.buffer].push_back(&store.index);
          written.insert(store.buffer);
        });
    for (int b : written)
      for (const Loop* l : lhs_) {
        std::set<size_t> dims;
        for (size_t d = 0; d < p_.buffers[b].shape.size(); ++d) dims.insert(d);
        for (const std::vector<IndexExpr>* idx : accesses[b])
          for (size_t d = 0; d < idx->size(); ++d)
            if (!isVar((*idx)[d], l->var)) dims.erase(d);
        if (dims.empty()) return false;
      }
    return true;
  }

  bool rowBlock(const Block& inner, std::string& out, CudaKernel& info) const {
    // A single reduction and its store is block-reduce's shape; when that declined (too few
    // terms), one thread per output is the better mapping here too.
    if (inner.size() == 3 && inner[0].is<AccInit>() && inner[1].is<Loop>() && inner[2].is<Store>()) return false;
    std::vector<RowPhase> phases;
    if (!planRow(inner, phases)) return false;
    int64_t longest = 1;
    size_t maxReduced = 0;
    for (const RowPhase& ph : phases) {
      longest = std::max(longest, ph.extent);
      maxReduced = std::max(maxReduced, ph.reduced.size());
    }
    // Rows shorter than a warp: one thread per row (grid-stride) fills the GPU better, unless the
    // rows are too few to fill it either way.
    if (longest < 32 && outputs_ > 16384) return false;
    // The block: the configured size, halved while a whole row still fits in half of it (a warp
    // at least), so that short rows do not leave most threads idle.
    int b = o_.threadsPerBlock;
    while (b > 32 && b / 2 >= longest) b /= 2;
    int warps = b / 32;
    info.threads = b;
    info.blocks = std::max<int64_t>(1, std::min<int64_t>(outputs_, o_.maxBlocks));

    std::vector<std::string> mapping;
    if (warps > 1) out += fmt::format("  __shared__ {} partial[{}][{}];  // per-warp partials of the row reductions\n", t_, maxReduced, warps);
    out += fmt::format("  for ({} row = blockIdx.x; row < {}; row += gridDim.x) {{\n", idx_, outputs_);
    unflatten(lhs_, "row", 2, out, &mapping);
    for (std::string& m : mapping) {
      size_t arrow = m.find("→ ");
      if (m.substr(arrow + 4) == "row") m = m.substr(0, arrow + 4) + "blockIdx.x";
    }
    mapping.push_back(fmt::format("row = blockIdx.x, grid-stride by gridDim.x over {} rows", outputs_));
    out += declareAccs(2);

    // Barriers: a phase waits for the block when it reads an element written since the last
    // barrier, or writes one read or written since then, unless the same thread made that access
    // (sameThread).
    std::vector<std::pair<const RowPhase*, RowPhase::Access>> since;
    auto sync = [&](const char* why) {
      out += fmt::format("    __syncthreads();  // {}\n", why);
      since.clear();
    };
    int phaseNo = 0;
    for (const RowPhase& ph : phases) {
      const Stmt& s = *ph.stmt;
      bool readAfterWrite = false, writeAfterUse = false;
      for (const auto& [before, a] : since)
        for (const RowPhase::Access& b : ph.accesses) {
          if (a.buffer != b.buffer || !(a.write || b.write) || sameThread(*before, a, ph, b)) continue;
          (b.write ? writeAfterUse : readAfterWrite) = true;
        }
      if (readAfterWrite) sync("this phase reads what other threads wrote");
      else if (writeAfterUse) sync("this phase overwrites what other threads use");
      if (s.is<AccInit>()) {
        stmt(s, 2, out);
      } else if (s.is<Store>()) {
        out += "    if (threadIdx.x == 0) {  // a row scalar: every thread holds the accumulators\n";
        stmt(s, 3, out);
        out += "    }\n";
      } else {
        ++phaseNo;
        out += fmt::format("    // phase {}\n", phaseNo);
        out += fmt::format("    for ({} e = threadIdx.x; e < {}; e += {}) {{\n", idx_, ph.extent, b);
        std::vector<std::string> nestMapping;
        unflatten(ph.nest, "e", 3, out, &nestMapping);
        std::string stride = fmt::format("threadIdx.x + {}*s, s < {}", b, (ph.extent + b - 1) / b);
        std::string what;
        for (int buf : ph.stores) what += fmt::format("{}{}", what.empty() ? "stores " : ", ", p_.buffers[buf].name);
        for (size_t n = 0; n < ph.reduced.size(); ++n)
          what += fmt::format("{}{} into acc{}", what.empty() ? "" : ", ", reduceName(ph.kinds[n]), ph.reduced[n]);
        for (std::string& m : nestMapping) {
          size_t arrow = m.find("→ ");
          if (m.substr(arrow + 4) == "e") m = m.substr(0, arrow + 4) + stride;
          mapping.push_back(fmt::format("phase {}: {}", phaseNo, m));
        }
        if (ph.nest.size() > 1) mapping.push_back(fmt::format("phase {}: e = {}", phaseNo, stride));
        mapping.push_back(fmt::format("phase {}: {}{}", phaseNo, what.empty() ? "no stores" : what,
                                      ph.reduced.empty() ? "" : ", combined across the block and broadcast"));
        for (const Stmt& st : ph.nest.back()->body) stmt(st, 3, out);
        out += "    }\n";
      }
      for (const RowPhase::Access& a : ph.accesses) since.push_back({&ph, a});
      if (ph.reduced.empty()) continue;

      // Every lane ends with its warp's value (xor butterfly); one value per warp goes through
      // shared memory, and every warp combines those, so every thread holds the row's value.
      auto butterfly = [&]() {
        out += "    for (int o = 16; o > 0; o >>= 1) {\n";
        for (size_t n = 0; n < ph.reduced.size(); ++n) {
          std::string a = fmt::format("acc{}", ph.reduced[n]);
          out += fmt::format("      {} = {};\n", a, combine(ph.kinds[n], a, fmt::format("__shfl_xor_sync(0xffffffffu, {}, o)", a)));
        }
        out += "    }\n";
      };
      out += "    // combine the threads' partials: warp shuffles";
      out += warps > 1 ? ", then shared memory\n" : " (one warp)\n";
      butterfly();
      if (warps == 1) continue;
      out += "    if ((threadIdx.x & 31) == 0) {\n";
      for (size_t n = 0; n < ph.reduced.size(); ++n) out += fmt::format("      partial[{}][threadIdx.x >> 5] = acc{};\n", n, ph.reduced[n]);
      out += "    }\n";
      sync("the partials are written, and so is everything the phase stored");
      for (size_t n = 0; n < ph.reduced.size(); ++n)
        out += fmt::format("    acc{} = (threadIdx.x & 31) < {} ? partial[{}][threadIdx.x & 31] : {};\n", ph.reduced[n], warps, n,
                           identity(ph.kinds[n]));
      butterfly();
      sync("partial is rewritten by the next reduction");
    }
    if (!since.empty() && !rowPrivate(inner))
      sync("the block's next row may touch what this row touched");
    out += "  }\n";
    info.mapping = mapping;
    return true;
  }

  // Whether access a of phase p and access b of phase q touch each element from the same thread:
  // both loops stride the same nest shape over the threads, and b's index is a's with p's strided
  // variables read as q's (the stores of a loop are indexed by every strided variable, so an
  // element names its iteration, and so its thread).
  static bool sameThread(const RowPhase& p, const RowPhase::Access& a, const RowPhase& q, const RowPhase::Access& b) {
    if (p.nest.empty() || p.nest.size() != q.nest.size() || a.index->size() != b.index->size()) return false;
    VarRenaming rename;
    for (size_t n = 0; n < p.nest.size(); ++n) {
      if (p.nest[n]->extent != q.nest[n]->extent) return false;
      rename[p.nest[n]->var] = q.nest[n]->var;
    }
    return equal(*a.index, *b.index, rename);
  }

  static const char* reduceName(ReduceKind r) {
    switch (r) {
      case ReduceKind::Sum: return "sum";
      case ReduceKind::Prod: return "product";
      case ReduceKind::Max: return "max";
      case ReduceKind::Min: return "min";
    }
    return "?";
  }

  // ---- tiled contraction ---------------------------------------------------------------------------
  // inner = [acc = identity, for k { acc op= term }, store f(acc)] inside at least two left-hand
  // loops i, j, where some loads of the term read (i,k) and others (k,j): a 128x128 (or, for
  // smaller outputs, 64x64) tile of (i, j) per block of 16x16 threads, each thread an 8x8 (4x4)
  // register block, k in steps of 16 with the (i,k) and (k,j) operands staged in shared memory.
  bool tiledContraction(const Block& inner, std::string& out, CudaKernel& info) const {
    constexpr int kT = 16;  // threads per tile side, and the k-step
    if (lhs_.size() < 2 || inner.size() < 3 || inner.size() % 2 != 1 || !inner[0].is<AccInit>() || !inner[1].is<Loop>() ||
        !inner.back().is<Store>())
      return false;
    const AccInit& first = inner[0].as<AccInit>();
    const Loop& kLoop = inner[1].as<Loop>();
    const AccUpdate* update = kLoop.body.size() == 1 ? kLoop.body[0].getIf<AccUpdate>() : nullptr;
    if (!update || update->acc != first.acc) return false;
    // A fused producer read twice (matmul + bias + GELU reads h twice) lowers to the same
    // reduction twice: compute it once and give every copy's accumulator its value.
    std::vector<int> copies;
    for (size_t p = 2; p + 1 < inner.size(); p += 2) {
      const AccInit* init = inner[p].getIf<AccInit>();
      const Loop* loop = inner[p + 1].getIf<Loop>();
      if (!init || init->reduce != first.reduce || !loop || loop->extent != kLoop.extent || loop->body.size() != 1) return false;
      const AccUpdate* copy = loop->body[0].getIf<AccUpdate>();
      // Each copy has its own reduction variable: the copy's reads as kLoop's.
      if (!copy || copy->acc != init->acc || !equal(copy->value, update->value, VarRenaming{{loop->var, kLoop.var}})) return false;
      copies.push_back(init->acc);
    }
    const Loop& li = *lhs_[lhs_.size() - 2];
    const Loop& lj = *lhs_.back();
    int vi = li.var, vj = lj.var, vk = kLoop.var;
    int64_t I = li.extent, J = lj.extent, K = kLoop.extent;
    if (I < kT || J < kT || K < kT) return false;
    std::vector<const Expr*> loads = loadsIn(update->value);
    std::vector<const Expr*> aLoads, bLoads;
    for (const Expr* e : loads) {
      bool ui = usesVar(*e, vi), uj = usesVar(*e, vj), uk = usesVar(*e, vk);
      if (uk && ui && !uj) aLoads.push_back(e);
      if (uk && uj && !ui) bLoads.push_back(e);
    }
    if (aLoads.empty() || bLoads.empty()) return false;
    // 8x8 register blocks (128x128 tiles) when the outputs fill them, else 4x4 (64x64); the two
    // shared buffers of every operand must fit in the 48 KB a block may declare statically.
    auto sharedBytes = [&](int r) {
      return 2 * (static_cast<int64_t>(aLoads.size()) * kT * r * (kT + 1) + static_cast<int64_t>(bLoads.size()) * kT * kT * r) *
             dtypeBytes(k_.computeType);
    };
    const int kR = I >= 128 && J >= 128 && sharedBytes(8) <= 48 * 1024 ? 8 : 4;
    if (sharedBytes(kR) > 48 * 1024) return false;
    const int kTile = kT * kR;

    int64_t tilesI = (I + kTile - 1) / kTile, tilesJ = (J + kTile - 1) / kTile;
    int64_t batch = 1;
    for (size_t d = 0; d + 2 < lhs_.size(); ++d) batch *= lhs_[d]->extent;
    int64_t tiles = batch * tilesI * tilesJ;
    info.threads = kT * kT;
    info.blocks = std::max<int64_t>(1, std::min<int64_t>(tiles, o_.maxBlocks));
    const std::string& ni = varNames_[vi];
    const std::string& nj = varNames_[vj];
    const std::string& nk = varNames_[vk];
    std::string a = fmt::format("acc{}", first.acc);
    ReduceKind kind = first.reduce;

    // Two shared buffers per operand: while the threads compute on one k-step, the next step's
    // operands are loaded into registers and stored into the other buffer, so one barrier per
    // step suffices and the global loads overlap the arithmetic.
    LoadMap staged;
    for (size_t n = 0; n < aLoads.size(); ++n) {
      out += fmt::format("  __shared__ {} tileA{}[2][{}][{}];  // {} at (i, k), padded against bank conflicts\n", t_, n, kTile, kT + 1,
                         p_.buffers[aLoads[n]->buffer].name);
      staged[aLoads[n]] = fmt::format("tileA{}[cur][ty + {} * r][kk]", n, kT);
    }
    for (size_t n = 0; n < bLoads.size(); ++n) {
      out += fmt::format("  __shared__ {} tileB{}[2][{}][{}];  // {} at (k, j)\n", t_, n, kT, kTile, p_.buffers[bLoads[n]->buffer].name);
      staged[bLoads[n]] = fmt::format("tileB{}[cur][kk][tx + {} * c]", n, kT);
    }
    // Staging: each thread moves kR elements of every operand tile for k-step `kBase`; elements
    // out of range are 0 and never combined (their terms are skipped below).
    const int slots = kTile * kT / (kT * kT);
    auto stage = [&](const std::string& kBase, bool toRegisters, const std::string& buf, int depth) {
      std::string pad(2 * depth, ' ');
      for (size_t n = 0; n < aLoads.size(); ++n) {
        out += fmt::format("#pragma unroll\n{}for (int s = 0; s < {}; ++s) {{\n", pad, slots);
        out += fmt::format("{}  const int e = threadIdx.x + {} * s;\n", pad, kT * kT);
        out += fmt::format("{}  const {} {} = row0 + e / {}, {} = {} + e % {};\n", pad, idx_, ni, kT, nk, kBase, kT);
        std::string dest = toRegisters ? fmt::format("nextA{}[s]", n) : fmt::format("tileA{}[{}][e / {}][e % {}]", n, buf, kT, kT);
        out += fmt::format("{}  {} = ({} < {} && {} < {}) ? {} : {};\n{}}}\n", pad, dest, ni, I, nk, K, load(*aLoads[n]), literal(0), pad);
      }
      for (size_t n = 0; n < bLoads.size(); ++n) {
        out += fmt::format("#pragma unroll\n{}for (int s = 0; s < {}; ++s) {{\n", pad, slots);
        out += fmt::format("{}  const int e = threadIdx.x + {} * s;\n", pad, kT * kT);
        out += fmt::format("{}  const {} {} = {} + e / {}, {} = col0 + e % {};\n", pad, idx_, nk, kBase, kTile, nj, kTile);
        std::string dest = toRegisters ? fmt::format("nextB{}[s]", n) : fmt::format("tileB{}[{}][e / {}][e % {}]", n, buf, kTile, kTile);
        out += fmt::format("{}  {} = ({} < {} && {} < {}) ? {} : {};\n{}}}\n", pad, dest, nk, K, nj, J, load(*bLoads[n]), literal(0), pad);
      }
    };
    out += fmt::format("  const int tx = threadIdx.x % {}, ty = threadIdx.x / {};\n", kT, kT);
    out += fmt::format("  for ({} tile = blockIdx.x; tile < {}; tile += gridDim.x) {{\n", idx_, tiles);
    out += fmt::format("    const {} col0 = (tile % {}) * {};\n", idx_, tilesJ, kTile);
    out += fmt::format("    const {} row0 = ((tile / {}) % {}) * {};\n", idx_, tilesJ, tilesI, kTile);
    std::vector<const Loop*> outer(lhs_.begin(), lhs_.end() - 2);
    if (!outer.empty()) unflatten(outer, fmt::format("(tile / {})", tilesJ * tilesI), 2, out, nullptr);
    out += fmt::format("    {} regs[{}][{}];\n", t_, kR, kR);
    out += fmt::format("#pragma unroll\n    for (int r = 0; r < {}; ++r)\n#pragma unroll\n      for (int c = 0; c < {}; ++c) regs[r][c] = {};\n", kR, kR,
                       identity(kind));
    out += "    // the first k-step into buffer 0\n";
    stage("0", false, "0", 2);
    out += "    __syncthreads();\n";
    out += fmt::format("    for ({} k0 = 0; k0 < {}; k0 += {}) {{\n", idx_, K, kT);
    out += fmt::format("      const int cur = (int)(k0 / {}) & 1;\n", kT);
    out += fmt::format("      const bool more = k0 + {} < {};\n", kT, K);
    for (size_t n = 0; n < aLoads.size(); ++n) out += fmt::format("      {} nextA{}[{}];\n", t_, n, slots);
    for (size_t n = 0; n < bLoads.size(); ++n) out += fmt::format("      {} nextB{}[{}];\n", t_, n, slots);
    out += "      if (more) {  // the next k-step's operands, into registers\n";
    stage(fmt::format("(k0 + {})", kT), true, "", 4);
    out += "      }\n";
    out += fmt::format("#pragma unroll\n      for (int kk = 0; kk < {}; ++kk) {{\n", kT);
    if (K % kT != 0) out += fmt::format("        if (k0 + kk >= {}) break;\n", K);
    out += fmt::format("        const {} {} = k0 + kk;\n", idx_, nk);
    out += fmt::format("#pragma unroll\n        for (int r = 0; r < {}; ++r) {{\n", kR);
    out += fmt::format("          const {} {} = row0 + ty + {} * r;\n", idx_, ni, kT);
    out += fmt::format("#pragma unroll\n          for (int c = 0; c < {}; ++c) {{\n", kR);
    out += fmt::format("            const {} {} = col0 + tx + {} * c;\n", idx_, nj, kT);
    out += fmt::format("            regs[r][c] = {};\n", combine(kind, "regs[r][c]", expr(update->value, staged)));
    out += "          }\n        }\n      }\n";
    out += "      if (more) {  // into the buffer nobody reads during this step\n";
    for (size_t n = 0; n < aLoads.size(); ++n)
      out += fmt::format("#pragma unroll\n        for (int s = 0; s < {}; ++s) {{\n          const int e = threadIdx.x + {} * s;\n"
                         "          tileA{}[cur ^ 1][e / {}][e % {}] = nextA{}[s];\n        }}\n",
                         slots, kT * kT, n, kT, kT, n);
    for (size_t n = 0; n < bLoads.size(); ++n)
      out += fmt::format("#pragma unroll\n        for (int s = 0; s < {}; ++s) {{\n          const int e = threadIdx.x + {} * s;\n"
                         "          tileB{}[cur ^ 1][e / {}][e % {}] = nextB{}[s];\n        }}\n",
                         slots, kT * kT, n, kTile, kTile, n);
    out += "      }\n";
    out += "      __syncthreads();  // the next step's buffer is full; this step's may be overwritten\n    }\n";
    // Unrolled, so that regs stays in registers (a loop indexing it would put it in local memory).
    out += fmt::format("#pragma unroll\n    for (int r = 0; r < {}; ++r) {{\n", kR);
    out += fmt::format("      const {} {} = row0 + ty + {} * r;\n", idx_, ni, kT);
    out += fmt::format("#pragma unroll\n      for (int c = 0; c < {}; ++c) {{\n", kR);
    out += fmt::format("        const {} {} = col0 + tx + {} * c;\n", idx_, nj, kT);
    out += fmt::format("        if ({} >= {} || {} >= {}) continue;\n", ni, I, nj, J);
    out += declareAccs(4);
    out += fmt::format("        {} = regs[r][c];\n", a);
    for (int copy : copies) out += fmt::format("        acc{} = regs[r][c];  // the same reduction\n", copy);
    stmt(inner.back(), 4, out);
    out += "      }\n    }\n  }\n";

    info.mapping.push_back(fmt::format("{} → row0 + threadIdx.x/{} + {}*r, r < {} (row0: the {}-row tile of blockIdx.x)", k_.varNames[vi], kT, kT, kR, kTile));
    info.mapping.push_back(fmt::format("{} → col0 + threadIdx.x%{} + {}*c, c < {} (col0: the {}-column tile of blockIdx.x)", k_.varNames[vj], kT, kT, kR, kTile));
    info.mapping.push_back(fmt::format("{} → k0 + kk, k0 in steps of {} staged through shared memory", k_.varNames[vk], kT));
    if (!outer.empty()) {
      std::string names;
      for (const Loop* l : outer) names += (names.empty() ? "" : ", ") + k_.varNames[l->var];
      info.mapping.push_back(fmt::format("{} → tile / {}, tile = blockIdx.x, grid-stride over {} tiles", names, tilesI * tilesJ, tiles));
    }
    return true;
  }

  const LoopProgram& p_;
  const Kernel& k_;
  const CudaCodeGenOptions& o_;
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
    if (k.paramTypes.size() != program.buffers.size())
      problems.push_back(fmt::format("kernel {}: {} parameters for {} buffers", k.symbol, k.paramTypes.size(), program.buffers.size()));
  }
  return problems;
}

CudaModule generateCUDA(const loops::LoopProgram& program, const CudaCodeGenOptions& options) {
  if (options.threadsPerBlock < 32 || options.threadsPerBlock > 1024 || (options.threadsPerBlock & (options.threadsPerBlock - 1)))
    throw std::invalid_argument("threadsPerBlock must be a power of two in [32, 1024]");
  // 32-bit indices when every buffer and loop nest fits (faster address arithmetic), else 64-bit.
  bool wide = false;
  for (const loops::Buffer& b : program.buffers) wide = wide || b.numElements() >= (int64_t{1} << 30);
  // A loop nest's iterations: each loop's extent times those of the loops around it.
  for (const loops::Kernel& k : program.kernels)
    loops::walkWithEnclosing(k.body, [&](const loops::Stmt& s, const std::vector<const loops::Stmt*>& enclosing) {
      if (const auto* loop = s.getIf<loops::Loop>()) {
        int64_t n = 1;
        for (const loops::Stmt* e : enclosing)
          if (const auto* outer = e->getIf<loops::Loop>()) n *= outer->extent;
        wide = wide || n * loop->extent >= (int64_t{1} << 30);
      }
      return loops::WalkAction::Advance;
    });

  CudaModule m;
  m.source = "// CUDA C generated by texc from the loop IR (docs/cuda.md).\n";
  m.source += loops::kPrelude;
  m.source += "\n";
  for (const loops::Kernel& k : program.kernels) m.kernels.push_back(loops::KernelGen(program, k, options, wide).run(m.source));
  return m;
}

}  // namespace texc
