#include "compiler/backend/llvm/CodeGenLLVM.h"

#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/IR/DIBuilder.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include "compiler/backend/llvm/NonTemporal.h"
#include "compiler/backend/llvm/SplitPhases.h"
#include "compiler/backend/llvm/VectorMath.h"
#include "compiler/loops/InterleaveLoops.h"
#include "compiler/loops/SumLanes.h"
#include "compiler/loops/Walk.h"
#include "core/IndexAlgebra.h"

namespace texc {

std::string kernelSymbol(const loops::Kernel& kernel) { return "texc_" + kernel.name; }

// Inside texc::loops so that Expr and Stmt name the loop IR's nodes, not the AST's.
namespace loops {
namespace {

llvm::Type* storageType(llvm::LLVMContext& ctx, DType t) {
  switch (t) {
    case DType::F32: return llvm::Type::getFloatTy(ctx);
    case DType::F64: return llvm::Type::getDoubleTy(ctx);
    case DType::F16: return llvm::Type::getHalfTy(ctx);
    // bf16 is held as raw 16 bits and converted with integer operations: LLVM lowers bfloat
    // truncation to a runtime-library call (__truncsfbf2) the JIT cannot always resolve.
    case DType::BF16: return llvm::Type::getInt16Ty(ctx);
  }
  return nullptr;
}

class KernelGen {
 public:
  KernelGen(const LoopProgram& p, const Kernel& k, llvm::Module& m, const CodeGenOptions& o, llvm::DIBuilder* di = nullptr,
            llvm::DIFile* diFile = nullptr)
      : p_(p), k_(k), m_(m), ctx_(m.getContext()), b_(ctx_), opts_(o), di_(di), diFile_(diFile) {
    ft_ = k.computeType == DType::F64 ? llvm::Type::getDoubleTy(ctx_) : llvm::Type::getFloatTy(ctx_);
    i64_ = llvm::Type::getInt64Ty(ctx_);
  }

  void run() {
    llvm::Function* body = emitBody();
    emitEntry(body);
  }

 private:
  // ---- the line table (CodeGenOptions::stmtLines) ---------------------------------------------
  // The line of the kernel's first statement: where its functions start.
  int kernelLine() const {
    if (k_.body.empty()) return 0;
    auto it = opts_.stmtLines->find(&k_.body.front());
    return it == opts_.stmtLines->end() ? 0 : it->second;
  }

  // Gives `f` a subprogram and makes the kernel's line the location of what the builder emits
  // next (until a statement sets its own).
  void describe(llvm::Function* f) {
    if (!di_) return;
    const int line = kernelLine();
    llvm::DISubprogram* sp = di_->createFunction(diFile_, f->getName(), f->getName(), diFile_, line,
                                                 di_->createSubroutineType(di_->getOrCreateTypeArray({})), line,
                                                 llvm::DINode::FlagZero,
                                                 llvm::DISubprogram::SPFlagDefinition | llvm::DISubprogram::SPFlagOptimized);
    f->setSubprogram(sp);
    scope_ = sp;
    b_.SetCurrentDebugLocation(llvm::DILocation::get(ctx_, line, 0, sp));
  }

  // While it lives, what the builder emits is statement `s`'s (its line in the loop IR).
  struct StatementLocation {
    KernelGen& gen;
    llvm::DebugLoc outer;
    StatementLocation(KernelGen& g, const Stmt& s) : gen(g), outer(g.b_.getCurrentDebugLocation()) {
      if (!gen.di_) return;
      auto it = gen.opts_.stmtLines->find(&s);
      if (it != gen.opts_.stmtLines->end()) gen.b_.SetCurrentDebugLocation(llvm::DILocation::get(gen.ctx_, it->second, 0, gen.scope_));
    }
    ~StatementLocation() {
      if (gen.di_) gen.b_.SetCurrentDebugLocation(outer);
    }
  };

  void addKernelAttributes(llvm::Function* f) {
    f->addFnAttr(llvm::Attribute::NoUnwind);
    if (opts_.preferWideVectors) f->addFnAttr("prefer-vector-width", "512");
    // Realign the frame to the widest vector. Without it a leaf kernel that spills vectors keeps
    // the caller's 16-byte alignment and spills with unaligned moves; whenever a 32-byte slot then
    // straddles a 4 KiB page, every iteration pays a page-split store and reload. On an AMD EPYC
    // Zen 3 that made GELU 2^24 5.7x slower (73 against 12.8 ms) at every other 16 bytes of a
    // 224-byte window of stack addresses, and bf16 GELU 1.8x slower in about one run in 5.
    f->addFnAttr("stackrealign");
  }

  // texc_<k>.body(ptr noalias b0, ..., i64 lo, i64 hi)
  llvm::Function* emitBody() {
    // One parameter per program tensor; local buffers (after them) live on this call's stack.
    std::vector<llvm::Type*> params(tensorCount(), llvm::PointerType::getUnqual(ctx_));
    params.push_back(i64_);
    params.push_back(i64_);
    auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), params, false);
    auto* f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, kernelSymbol(k_) + ".body", m_);
    addKernelAttributes(f);
    const std::vector<bool> stored = loops::buffersStored(p_, k_);
    for (size_t i = 0; i < tensorCount(); ++i) {
      llvm::Argument* a = f->getArg(i);
      a->setName(p_.buffers[i].name);
      a->addAttr(llvm::Attribute::NoAlias);
      a->addAttr(llvm::Attribute::NoCapture);
      a->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(bufferAlign(i))));
      uint64_t bytes = static_cast<uint64_t>(p_.buffers[i].numElements()) * dtypeBytes(p_.buffers[i].dtype);
      a->addAttr(llvm::Attribute::getWithDereferenceableBytes(ctx_, bytes));
      if (p_.buffers[i].kind == loops::BufferKind::Input || !stored[i])
        a->addAttr(llvm::Attribute::ReadOnly);
      buffers_.push_back(a);
    }
    // A kernel planned to write in place reads its input through the output's pointer (the
    // memory is the same): the input's parameter is then never accessed, so every parameter stays
    // noalias, and the vectorizer sees each element loaded and stored at one address, with no
    // run-time overlap check. Other buffers share memory with these only while dead, when this
    // kernel does not touch them, which noalias allows.
    if (opts_.memoryPlan) {
      int input = opts_.memoryPlan->inPlaceInputOf(p_, static_cast<int>(&k_ - p_.kernels.data()));
      if (input >= 0) buffers_[input] = buffers_[k_.outputBuffer];
    }
    lo_ = f->getArg(tensorCount());
    hi_ = f->getArg(tensorCount() + 1);
    lo_->setName("lo");
    hi_->setName("hi");

    fn_ = f;
    describe(f);
    auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f);
    b_.SetInsertPoint(entry);
    for (int a = 0; a < k_.numAccs; ++a) accs_.push_back(b_.CreateAlloca(ft_, nullptr, "acc" + std::to_string(a)));
    for (int a = 0; a < k_.numAccs; ++a) {
      accNaN_.push_back(b_.CreateAlloca(b_.getInt1Ty(), nullptr, "acc" + std::to_string(a) + ".nan"));
      b_.CreateStore(b_.getFalse(), accNaN_.back());
    }
    for (size_t i = tensorCount(); i < p_.buffers.size(); ++i) {
      const loops::Buffer& local = p_.buffers[i];
      llvm::AllocaInst* a = b_.CreateAlloca(storageType(ctx_, local.dtype), i64(local.numElements()), local.name);
      a->setAlignment(llvm::Align(64));
      buffers_.push_back(a);
    }
    // Scratch lives on the stack of the call, except what would not fit there (im2col's whole
    // patch matrix): that comes from the heap and goes back before the call returns.
    auto* ptr = llvm::PointerType::getUnqual(ctx_);
    std::vector<llvm::Value*> heap;
    for (size_t i = 0; i < k_.scratchSizes.size(); ++i) {
      const int64_t bytes = k_.scratchSizes[i] * 4;
      if (bytes > kStackScratchBytes) {
        llvm::FunctionCallee alloc = m_.getOrInsertFunction("aligned_alloc", ptr, i64_, i64_);
        llvm::Value* p = b_.CreateCall(alloc, {i64(64), i64((bytes + 63) / 64 * 64)}, "s" + std::to_string(i));
        scratch_.push_back(p);
        heap.push_back(p);
        continue;
      }
      llvm::AllocaInst* a = b_.CreateAlloca(ft_, llvm::ConstantInt::get(i64_, k_.scratchSizes[i]), "s" + std::to_string(i));
      a->setAlignment(llvm::Align(64));
      scratch_.push_back(a);
    }
    vars_.assign(k_.varNames.size(), nullptr);
    varExtents_.assign(k_.varNames.size(), 0);
    for (const Stmt& s : k_.body) stmt(s, /*outermost=*/true);
    // Non-temporal stores are weakly ordered: fence them before the call returns, so that the
    // thread that joins this one (and the next kernel) sees them.
    if (streamed_) b_.CreateCall(llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_sse_sfence));
    for (llvm::Value* p : heap) b_.CreateCall(m_.getOrInsertFunction("free", llvm::Type::getVoidTy(ctx_), ptr), {p});
    b_.CreateRetVoid();
    return f;
  }

  // texc_<k>(ptr buffers, i64 lo, i64 hi): loads the buffer table and calls the body.
  void emitEntry(llvm::Function* body) {
    auto* ptr = llvm::PointerType::getUnqual(ctx_);
    auto* fty = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_), {ptr, i64_, i64_}, false);
    auto* f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, kernelSymbol(k_), m_);
    // The body is inlined here, and the caller's attributes then decide the vector width.
    addKernelAttributes(f);
    describe(f);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
    std::vector<llvm::Value*> args;
    for (size_t i = 0; i < tensorCount(); ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr, f->getArg(0), i);
      // The body's parameters say how they are aligned, but the body is inlined here and the
      // attribute is lost with it: the loaded pointers carry it instead (finishStreamingStores
      // needs it).
      llvm::LoadInst* base = b_.CreateLoad(ptr, slot, p_.buffers[i].name);
      llvm::Metadata* align = llvm::ConstantAsMetadata::get(b_.getInt64(bufferAlign(i)));
      base->setMetadata(llvm::LLVMContext::MD_align, llvm::MDNode::get(ctx_, align));
      args.push_back(base);
    }
    args.push_back(f->getArg(1));
    args.push_back(f->getArg(2));
    b_.CreateCall(body, args);
    b_.CreateRetVoid();
  }

  // The program's tensors: every buffer before the first local one (LoopIR.h, BufferKind).
  size_t tensorCount() const {
    size_t n = 0;
    while (n < p_.buffers.size() && p_.buffers[n].kind != loops::BufferKind::Local) ++n;
    return n;
  }

  // ---- statements ----------------------------------------------------------------------------
  void stmt(const Stmt& s, bool outermost) {
    const StatementLocation location(*this, s);
    switch (s.kind()) {
      case StmtKind::Loop: loop(s.as<Loop>(), outermost && s.as<Loop>().parallel); break;
      case StmtKind::Store: {
        const Store& st = s.as<Store>();
        const loops::Buffer& buf = p_.buffers[st.buffer];
        llvm::Value* v = expr(loops::valueToRound(p_, st));
        llvm::StoreInst* store =
            b_.CreateAlignedStore(toStorage(v, buf.dtype), address(st.buffer, st.index), llvm::Align(elementAlign(buf.dtype)));
        if (st.streaming) {
          // Tagged now, marked non-temporal after vectorization (NonTemporal.h says why).
          store->setMetadata(llvm::LLVMContext::MD_access_group, streamingStoreTag(m_));
          streamed_ = true;
        }
        break;
      }
      case StmtKind::AccInit:
        b_.CreateStore(identity(s.as<AccInit>().reduce), accs_[s.as<AccInit>().acc]);
        b_.CreateStore(b_.getFalse(), accNaN_[s.as<AccInit>().acc]);
        break;
      case StmtKind::AccUpdate: {
        const AccUpdate& u = s.as<AccUpdate>();
        llvm::Value* term = expr(u.value);
        if (auto lanes = sumLanes_.find(u.acc); lanes != sumLanes_.end()) {  // lane (iteration - first of the group)
          llvm::Value* lane = b_.CreateSub(innermostIv_, laneBase_, "lane", true, true);
          llvm::Value* slot = b_.CreateInBoundsGEP(ft_, lanes->second, lane);
          b_.CreateStore(combine(u.reduce, b_.CreateLoad(ft_, slot), term), slot);
          break;
        }
        llvm::Value* acc = b_.CreateLoad(ft_, accs_[u.acc]);
        b_.CreateStore(combine(u.reduce, acc, term), accs_[u.acc]);
        if (u.reduce == ReduceKind::Max || u.reduce == ReduceKind::Min) {
          llvm::Value* seen = b_.CreateLoad(b_.getInt1Ty(), accNaN_[u.acc]);
          b_.CreateStore(b_.CreateOr(seen, b_.CreateFCmpUNO(term, term)), accNaN_[u.acc]);
        }
        break;
      }
      case StmtKind::Guard: {
        const Guard& g = s.as<Guard>();
        llvm::Value* ok = nullptr;
        for (const loops::GuardCond& c : g.conds) {
          // 0 <= i < n as one unsigned compare.
          llvm::Value* in = b_.CreateICmpULT(index(c.index), llvm::ConstantInt::get(i64_, c.extent));
          ok = ok ? b_.CreateAnd(ok, in) : in;
        }
        auto* then = llvm::BasicBlock::Create(ctx_, "term", fn_);
        auto* merge = llvm::BasicBlock::Create(ctx_, "term.end", fn_);
        b_.CreateCondBr(ok, then, merge);
        b_.SetInsertPoint(then);
        for (const Stmt& c : g.body) stmt(c, false);
        b_.CreateBr(merge);
        b_.SetInsertPoint(merge);
        break;
      }
      case StmtKind::Pack: pack(s.as<Pack>()); break;
      case StmtKind::Tile: tile(s.as<Tile>()); break;
      case StmtKind::AccSet:
        b_.CreateStore(expr(s.as<AccSet>().value), accs_[s.as<AccSet>().acc]);
        b_.CreateStore(b_.getFalse(), accNaN_[s.as<AccSet>().acc]);  // the value carries its own NaN
        break;
    }
  }

  // for (v = start; v < end; ++v) body(v): the loop of every Loop statement and of the tile
  // pass's packing and tiles. The increment is nuw/nsw: trip counts are known and small.
  template <class Body>
  llvm::BranchInst* countedLoop(const std::string& name, llvm::Value* start, llvm::Value* end, Body body) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, name + ".loop", fn_);
    auto* bodyBB = llvm::BasicBlock::Create(ctx_, name + ".body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, name + ".exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(i64_, 2, name);
    iv->addIncoming(start, pre);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, end), bodyBB, exit);
    b_.SetInsertPoint(bodyBB);
    llvm::Value* outerIv = innermostIv_;
    innermostIv_ = iv;
    body(iv);
    innermostIv_ = outerIv;
    iv->addIncoming(b_.CreateAdd(iv, llvm::ConstantInt::get(i64_, 1), name + ".next", true, true), b_.GetInsertBlock());
    llvm::BranchInst* latch = b_.CreateBr(header);
    b_.SetInsertPoint(exit);
    return latch;
  }

  // Whether `body` holds a loop, inside guards too (a tile's epilogue is not looked into).
  static bool holdsLoop(const Block& body) {
    return !walk(body, [](const Stmt& s) {
      if (s.is<Loop>()) return WalkAction::Stop;
      return s.is<Tile>() ? WalkAction::SkipNested : WalkAction::Advance;
    });
  }

  // Whether the body of vector loop `l` holds loops, all of them short windows (a pool's dy and
  // dx, extents of at most kWindowExtent, which LLVM unrolls whole before its vectorizer runs),
  // one of them over bf16 pairs (loops/PairBf16Lanes.h), and reads and writes `l`'s variable in
  // the last dimension only: then every element is a 32-bit word at unit stride along `l`. A
  // tile inside is not a window.
  static constexpr int64_t kWindowExtent = 8;
  static bool holdsOnlyPairedWindowLoops(const Loop& l) {
    bool paired = false;
    auto alongRows = [&](const std::vector<IndexExpr>& index) {
      for (size_t d = 0; d + 1 < index.size(); ++d)
        if (usesVar(index[d], l.var)) return true;
      return false;
    };
    const bool windows = walk(l.body, [&](const Stmt& s) {
      if (s.is<Tile>() || (s.is<Loop>() && s.as<Loop>().extent > kWindowExtent)) return WalkAction::Stop;
      if (s.is<Store>() && alongRows(s.as<Store>().index)) return WalkAction::Stop;
      bool strided = false;
      if (const Expr* v = valueOf(s))
        forEachExprNode(*v, [&](const Expr& e) { strided = strided || (e.kind == ExprKind::Load && alongRows(e.index)); });
      if (strided) return WalkAction::Stop;
      paired = paired || (s.is<Loop>() && s.as<Loop>().pairs);
      return WalkAction::Advance;
    });
    return paired && windows;
  }

  // Whether the body of `l` holds loops, all of them short windows (kWindowExtent), and no tile.
  static bool holdsOnlyWindowLoops(const Loop& l) {
    bool loops = false;
    const bool windows = walk(l.body, [&](const Stmt& s) {
      if (s.is<Tile>() || (s.is<Loop>() && s.as<Loop>().extent > kWindowExtent)) return WalkAction::Stop;
      loops = loops || s.is<Loop>();
      return WalkAction::Advance;
    });
    return loops && windows;
  }

  // A loop's marks, passed on to LLVM's loop vectorizer as loop metadata: `vector` on a loop
  // with no loop inside is llvm.loop.vectorize.enable (widen it if legal, whatever the cost
  // model thinks of the profit), plus interleave.count where interleave-loops chose one;
  // `scalar` is vectorize.width 1 and interleave.count 1 (one element per iteration, as
  // written). A `vector` loop holding a reduction's loop (a row sum over rows) gets no hint: LLVM
  // widens inner loops only, here the reduction's. Without a mark, the vectorizer decides.
  // A `vector` loop holding only window loops becomes the innermost loop once LLVM has unrolled
  // them. With AVX-512, an extent above 16 but not a multiple of it and a window over bf16
  // pairs, the cost model widened a pool over 28 outputs 4 lanes at a time, or unrolled it whole
  // and let the SLP vectorizer join 4-lane groups (bf16 conv + pool, 269 instructions per 28
  // outputs). So such a loop is widened on purpose, not unrolled before it is, and its remainder
  // runs as masked lanes (vectorize.predicate.enable): two 16-lane iterations, 83 instructions.
  // Not with AVX2, whose masked loads and stores are dear, nor over strided f32 reads (an f32
  // pool's 2 x + dx), which masked lanes would turn into gathers.
  void markLoop(llvm::BranchInst* latch, const Loop& l) {
    // A `vector` loop shorter than one vector that holds only window loops (a 2x2 pool over 14
    // outputs of a 28-wide image, with AVX-512): left alone, LLVM unrolled it and the row loop
    // around it whole, and the SLP vectorizer joined the rows with gathers and scatters (112
    // vgatherqps per 14 x 14 plane). Widened on purpose, without masked lanes (strided ones would
    // be gathers too), then unrolled whole: the pool of conv (8, 64, 128, 28, 28) on its own, Zen
    // 4, 1 thread, 0.65 -> 0.074 ms; the conv with it 9.89 -> 8.98 ms.
    if (l.vectorize && l.extent < opts_.vectorFloats && holdsOnlyWindowLoops(l)) {
      widenThenUnroll(latch, /*maskedRemainder=*/false);
      return;
    }
    if (l.vectorize && opts_.vectorFloats >= 16 && l.extent > opts_.vectorFloats && l.extent % opts_.vectorFloats != 0 &&
        holdsOnlyPairedWindowLoops(l)) {
      widenThenUnroll(latch, /*maskedRemainder=*/true);
      return;
    }
    if (!(l.vectorize && !holdsLoop(l.body)) && !l.scalar) return;
    if (l.vectorize && l.interleave > 0)
      setLoopHints(latch, {loopHint("llvm.loop.vectorize.enable", b_.getTrue()), loopHint("llvm.loop.interleave.count", b_.getInt32(l.interleave))});
    else if (l.vectorize) setLoopHints(latch, {loopHint("llvm.loop.vectorize.enable", b_.getTrue())});
    else markInOrder(latch);
  }

  // One `!{!"name", value}` hint of a loop ID.
  llvm::Metadata* loopHint(const char* name, llvm::Constant* value) {
    llvm::Metadata* ops[] = {llvm::MDString::get(ctx_, name), llvm::ConstantAsMetadata::get(value)};
    return llvm::MDNode::get(ctx_, ops);
  }

  // Widen the loop (vectorize.enable), with its remainder as masked lanes if asked, and let
  // nothing unroll it before that, so that LLVM cannot unroll it whole and vectorize across it
  // instead; the widened loop is then unrolled whole.
  void widenThenUnroll(llvm::BranchInst* latch, bool maskedRemainder) {
    std::vector<llvm::Metadata*> hints = {loopHint("llvm.loop.vectorize.enable", b_.getTrue()), loopHint("llvm.loop.unroll.disable", b_.getTrue()),
                                          followup("llvm.loop.vectorize.followup_vectorized", {attribute("llvm.loop.unroll.full")})};
    if (maskedRemainder) hints.push_back(loopHint("llvm.loop.vectorize.predicate.enable", b_.getTrue()));
    setLoopHints(latch, std::move(hints));
  }

  // A loop attribute without a value (`!{!"llvm.loop.unroll.full"}`).
  llvm::Metadata* attribute(const char* name) { return llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name)}); }

  // The attributes a transformation gives the loop it makes (`!{!"...followup_...", attrs...}`).
  llvm::Metadata* followup(const char* name, std::vector<llvm::Metadata*> attributes) {
    attributes.insert(attributes.begin(), llvm::MDString::get(ctx_, name));
    return llvm::MDNode::get(ctx_, attributes);
  }

  // The latch's loop ID: a distinct node that names itself, then the hints.
  void setLoopHints(llvm::BranchInst* latch, std::vector<llvm::Metadata*> hints) {
    hints.insert(hints.begin(), nullptr);
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, hints);
    id->replaceOperandWith(0, id);
    latch->setMetadata(llvm::LLVMContext::MD_loop, id);
  }

  // The schedule's k unroll for a tile's k loop, as llvm.loop.unroll.count: LLVM's unroller
  // does it (with a remainder loop when the trip count is not a multiple), where its own cost
  // model would leave a 24-FMA body alone.
  void unrollBy(llvm::BranchInst* latch, int64_t count) {
    if (count > 1) setLoopHints(latch, {loopHint("llvm.loop.unroll.count", b_.getInt32(static_cast<uint32_t>(count)))});
  }

  // ---- packed panels and register tiles (the tile pass) ---------------------------------------
  llvm::AllocaInst* entryAlloca(llvm::Type* t, int64_t count, const std::string& name) {
    llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    llvm::AllocaInst* a = eb.CreateAlloca(t, llvm::ConstantInt::get(i64_, count), name);
    a->setAlignment(llvm::Align(64));
    return a;
  }

  // Lanes per vector of a tile or panel: the widest power of two up to 16 dividing its columns.
  static int64_t laneCount(int64_t cols) {
    int64_t w = 16;
    while (cols % w != 0) w /= 2;
    return w;
  }

  llvm::Value* i64(int64_t v) { return llvm::ConstantInt::get(i64_, v); }

  // Lanes j .. j+W-1 that lie below `extent`.
  llvm::Value* laneMask(llvm::Value* j, int64_t w, int64_t extent) {
    std::vector<llvm::Constant*> lanes;
    for (int64_t l = 0; l < w; ++l) lanes.push_back(llvm::ConstantInt::get(i64_, l));
    llvm::Value* idx = b_.CreateAdd(b_.CreateVectorSplat(static_cast<unsigned>(w), j), llvm::ConstantVector::get(lanes));
    return b_.CreateICmpSLT(idx, b_.CreateVectorSplat(static_cast<unsigned>(w), i64(extent)));
  }

  // W consecutive column-operand values from column j (load: the column operand's Load).
  // `padded`: masked lanes may lie outside the buffer (padding), so the address is computed
  // without the inbounds promise.
  // An operand that is not contiguous in the column (A B^T: K[j, d]) is gathered lane by lane.
  llvm::Value* columnVector(const Expr& load, llvm::Value* j, int colVar, int64_t w, llvm::Value* mask, bool padded = false) {
    return fromStorage(rawColumnVector(load, j, colVar, w, mask, padded), p_.buffers[load.buffer].dtype);
  }
  // The same in the buffer's storage type (f16/bf16 bits unconverted: the bf16-pair packs).
  llvm::Value* rawColumnVector(const Expr& load, llvm::Value* j, int colVar, int64_t w, llvm::Value* mask, bool padded = false) {
    if (load.kind != ExprKind::Load) throw std::logic_error("tile column operand is not a load");
    if (!unitStrideIn(p_.buffers[load.buffer], load.index, colVar)) return rawGather(load, j, colVar, w, mask);
    vars_[colVar] = j;
    llvm::Value* ptr = address(load.buffer, load.index, !padded);
    const DType dtype = p_.buffers[load.buffer].dtype;
    auto* vt = llvm::FixedVectorType::get(storageType(ctx_, dtype), static_cast<unsigned>(w));
    const llvm::Align align(elementAlign(dtype));
    if (!mask) return b_.CreateAlignedLoad(vt, ptr, align);
    return b_.CreateMaskedLoad(vt, ptr, align, mask, llvm::Constant::getNullValue(vt));
  }

  // W column-operand values at columns j .. j+W-1 read one address per lane, for an operand whose
  // address does not step by one element with the column. Lanes outside `mask` are not read.
  llvm::Value* gatherColumnVector(const Expr& load, llvm::Value* j, int colVar, int64_t w, llvm::Value* mask) {
    return fromStorage(rawGather(load, j, colVar, w, mask), p_.buffers[load.buffer].dtype);
  }
  llvm::Value* rawGather(const Expr& load, llvm::Value* j, int colVar, int64_t w, llvm::Value* mask) {
    const auto n = static_cast<unsigned>(w);
    llvm::Value* ptrs = columnPointers(load, j, colVar, w);
    if (!mask) mask = llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(b_.getInt1Ty(), n));
    const DType dtype = p_.buffers[load.buffer].dtype;
    auto* st = llvm::FixedVectorType::get(storageType(ctx_, dtype), n);
    return b_.CreateMaskedGather(st, ptrs, llvm::Align(elementAlign(dtype)), mask, llvm::Constant::getNullValue(st));
  }

  // The addresses of `load` at columns j .. j+W-1, one per lane (leaves the column variable at j).
  llvm::Value* columnPointers(const Expr& load, llvm::Value* j, int colVar, int64_t w) {
    const auto n = static_cast<unsigned>(w);
    llvm::Value* ptrs = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getPtrTy(), n));
    for (unsigned l = 0; l < n; ++l) {
      vars_[colVar] = b_.CreateAdd(j, i64(l));
      ptrs = b_.CreateInsertElement(ptrs, address(load.buffer, load.index, /*inBounds=*/false), static_cast<uint64_t>(l));
    }
    vars_[colVar] = j;
    return ptrs;
  }

  // The next W values along k from k0 (contiguous in memory) of the W columns first ..
  // first+W-1 of a column pack's operand, transposed: vector u holds value k0 + u of the W
  // columns. Each column is one load of `rowType` (W values, widened to f32 when `widen`); a
  // column past the extent (`ragged`) reads the last one, for the caller to zero.
  std::vector<llvm::Value*> loadTransposedSquare(const Pack& s, llvm::Value* first, llvm::Value* k0, int64_t w, bool ragged, llvm::Type* rowType,
                                                 llvm::Align align, bool widen) {
    const DType dtype = p_.buffers[s.value.buffer].dtype;
    std::vector<llvm::Value*> rows;
    for (int64_t l = 0; l < w; ++l) {
      llvm::Value* j = b_.CreateAdd(first, i64(l));
      vars_[s.var] = ragged ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, j, i64(s.extent - 1)) : j;
      vars_[s.k.var] = k0;
      llvm::Value* row = b_.CreateAlignedLoad(rowType, address(s.value.buffer, s.value.index), align);
      rows.push_back(widen ? fromStorage(row, dtype) : row);
    }
    return transposeSquare(std::move(rows));
  }

  // Whether the element `idx` addresses in `buf` is the next one when `var` grows by one (the
  // other variables fixed): in the linear form of the offset (linearOffset), `var` has
  // coefficient 1 and appears in no division or remainder. B[k, j] and an image's x + s - 1
  // are; so is the tile pass's merged pixel e read as [.., e / W + a, e % W + b] over [.., W]
  // (the offset is e + a W + b); B[j, k] (A B^T) and I[.., 2 y + r, ..] are not.
  static bool unitStrideIn(const loops::Buffer& buf, const std::vector<IndexExpr>& idx, int var) {
    IndexExpr flat;
    AffineForm form = linearOffset(buf, idx, flat);
    return !form.varInAtom(var) && form.coeffOf(var) == 1;
  }

  // The k window of a pack or tile: [start, end) and the length its scratch layout assumes.
  struct KBounds {
    llvm::Value* start;
    llvm::Value* end;
    int64_t length;
  };
  KBounds kBounds(const KWindow& w) {
    if (w.block == 0) return {i64(0), i64(w.extent), w.extent};
    llvm::Value* start = index(w.base);
    llvm::Value* end = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(start, i64(w.block)), i64(w.extent));
    return {start, end, w.block};
  }

  llvm::Value* scratchAt(int id, llvm::Value* element) { return b_.CreateInBoundsGEP(ft_, scratch_[id], element); }

  // Column pack: scratch[(k - k.base) * count + c] = column operand at j = base + c (0 past
  // extent, by masked loads).
  void pack(const Pack& s) {
    if (s.bf16Pairs && s.amx) return s.side == PackSide::Rows ? packRowTilesAmx(s) : packColumnPairs(s);
    if (s.bf16Pairs) return s.side == PackSide::Rows ? packRowPairs(s) : packColumnPairs(s);
    if (s.side == PackSide::Rows) return packRows(s);
    if (s.padding.empty() && s.value.kind == ExprKind::Load && !unitStrideIn(p_.buffers[s.value.buffer], s.value.index, s.var))
      return packGathered(s);
    // A padded pack works on the lanes the tile pass chose (Pack::lanes: 8 with AVX2, whose
    // masks then stay 8 x 32 bits in one register; 16 with AVX-512's mask registers).
    const int64_t w = std::min<int64_t>(laneCount(s.panel > 0 ? std::min(s.panel, s.count) : s.count), s.padding.empty() ? 16 : s.lanes);
    llvm::Value* j0 = index(s.base);
    KBounds kw = kBounds(s.k);
    bool ragged = s.extent % s.count != 0;
    std::vector<llvm::Value*> masks(s.count / w, nullptr);
    for (int64_t v = 0; ragged && s.padding.empty() && v < s.count / w; ++v) masks[v] = laneMask(b_.CreateAdd(j0, i64(v * w)), w, s.extent);
    const int64_t panel = s.panel > 0 ? s.panel : s.count;
    const int64_t nvec = s.count / w;
    const PaddedTables tables = s.padding.empty() ? PaddedTables{} : paddedTables(s, j0, kw, w, ragged, /*maskTableAlone=*/true);
    countedLoop(k_.varNames[s.k.var] + ".pack", kw.start, kw.end, [&](llvm::Value* k) {
      vars_[s.k.var] = k;
      llvm::Value* row = b_.CreateMul(b_.CreateSub(k, kw.start), i64(panel));
      llvm::Value* phase = tables.masks && !tables.offsets ? b_.CreateMul(b_.CreateURem(k, i64(tables.period)), i64(nvec)) : nullptr;
      for (int64_t v = 0; v < nvec; ++v) {
        llvm::Value* j = b_.CreateAdd(j0, i64(v * w));
        llvm::Value* vec;
        if (tables.offsets) {
          vec = fromStorage(tableLoad(tables, s, k, v, w), p_.buffers[s.value.buffer].dtype);
        } else {
          // A padded pack computes all its lane masks on 32-bit lanes (mixing them with the
          // 64-bit column mask would make LLVM shuffle every mask through bytes).
          llvm::Value* mask = masks[v];
          if (tables.masks) mask = tableMask(tables, phase, v, w);
          else if (!s.padding.empty()) mask = paddingMask(s, j, w, ragged);
          vec = columnVector(s.value, j, s.var, w, mask, !s.padding.empty());
        }
        int64_t c = v * w;  // panel (c / panel) starts at (c / panel) * panel * L
        llvm::Value* at = b_.CreateAdd(row, i64((c / panel) * panel * kw.length + c % panel));
        b_.CreateAlignedStore(vec, scratchAt(s.scratch, at), llvm::Align(4 * w));
      }
    });
    vars_[s.k.var] = vars_[s.var] = nullptr;
  }

  // What a padded column pack (a convolution's input: pack, packColumnPairs) computes before its
  // k loop.
  //  - Padding that repeats along k (a convolution's r, s: every R*S terms) is computed once per
  //    phase and column vector into a table of lane masks (`masks`, 32-bit lanes, negative where
  //    the lane is read): none when the padding does not repeat. With 16 lanes and conditions
  //    that read k and the column alone, the masks are constant bits instead (`bits`), computed
  //    when the code is generated: the per-call table cost the AMX bf16 convolution 11 % of its
  //    time (0.298 against 0.265 ms without it, (1, 64, 64, 56, 56), 1 thread, same host).
  //  - When the operand's offset is a part of k alone plus a part of the rest (the pixel, the
  //    image), c * H * W + (r - 1) * W + s - 1 beside p, with the pixels contiguous: the k part
  //    is tabulated when the code is generated, one 32-bit offset per k step of the whole
  //    reduction (`offsets`), and so is each step's first entry of the mask table (`maskRows`);
  //    `bases` holds the address of the rest per column vector. The k loop then loads two table
  //    entries instead of dividing k by R * S, S and the period at every step (on a Sapphire
  //    Rapids class Xeon the f32 pack went from 36 instructions per k step to 19 with 8-float
  //    vectors, 11 with 16). Not for a strided convolution (2 y + r), nor tables over 65536 steps.
  struct PaddedTables {
    llvm::AllocaInst* masks = nullptr;
    int64_t period = 0;
    int64_t vectors = 0;
    llvm::GlobalVariable* offsets = nullptr;
    llvm::GlobalVariable* maskRows = nullptr;
    std::vector<llvm::Value*> bases;
    // With 16 lanes, padding over k and the column alone and the pack's first column a multiple
    // of 16: the masks as constant bits instead of `masks`, one 16-bit word per phase and 16
    // columns of the whole extent (`bitColumns` words per phase, the last one 0), `bitVector`
    // the word of each column vector of this pack.
    llvm::GlobalVariable* bits = nullptr;
    int64_t bitColumns = 0;
    std::vector<llvm::Value*> bitVector;
  };
  // `maskTableAlone`: whether to build the mask table when the offsets do not split either.
  PaddedTables paddedTables(const Pack& s, llvm::Value* j0, const KBounds& kw, int64_t w, bool ragged, bool maskTableAlone) {
    PaddedTables t;
    t.vectors = s.count / w;
    int64_t period = 1;
    for (const loops::GuardCond& c : s.padding) {
      const int64_t p = kPeriod(c.index, s.k.var);
      period = p > 0 && period > 0 ? std::lcm(period, p) : 0;
    }
    if (period <= 0 || period > 64 || 2 * period > kw.length) return t;
    t.period = period;
    auto constantTable = [&](llvm::Type* elem, std::vector<llvm::Constant*>& values, const char* name) {
      auto* type = llvm::ArrayType::get(elem, values.size());
      return new llvm::GlobalVariable(m_, type, /*isConstant=*/true, llvm::GlobalValue::PrivateLinkage,
                                      llvm::ConstantArray::get(type, values), name);
    };

    // The offsets, when the operand's offset splits.
    constexpr int64_t kMostSteps = 1 << 16;
    const loops::Buffer& buf = p_.buffers[s.value.buffer];
    IndexExpr flat;
    AffineForm form;
    std::vector<const AffineTerm*> kTerms, rest;
    bool split = s.value.kind == ExprKind::Load && s.k.extent <= kMostSteps && unitStrideIn(buf, s.value.index, s.var);
    if (split) {
      form = linearOffset(buf, s.value.index, flat);
      split = !form.overflow;
      for (const AffineTerm& term : form.terms) {
        const bool usesK = term.atom ? loops::usesVar(*term.atom, s.k.var) : term.var == s.k.var;
        if (usesK && term.atom && !readsOnlyOf(*term.atom, {s.k.var})) split = false;  // an atom of k alone is tabulated with it
        (usesK ? kTerms : rest).push_back(&term);
      }
    }
    std::vector<int64_t> vals(k_.varNames.size(), 0);
    std::vector<llvm::Constant*> offsets;
    for (int64_t k = 0; split && k < s.k.extent; ++k) {
      vals[s.k.var] = k;
      int64_t off = 0;
      for (const AffineTerm* term : kTerms) off += term->coeff * (term->atom ? evalIndex(*term->atom, vals) : k);
      split = off >= INT32_MIN && off <= INT32_MAX;
      offsets.push_back(b_.getInt32(static_cast<uint32_t>(off)));
    }

    // Constant mask bits: the conditions read k and the column only, and every column vector
    // starts at a multiple of 16 (the pack's first column, in the form's terms).
    bool bits = split && w == 16;
    for (const loops::GuardCond& c : s.padding)
      if (!readsOnlyOf(c.index, {s.k.var, s.var})) bits = false;
    if (bits) {
      AffineForm base = affineForm(s.base);
      bits = !base.overflow && base.constant % 16 == 0;
      for (const AffineTerm& term : base.terms) bits = bits && !term.atom && term.coeff % 16 == 0;
    }
    t.bitColumns = (s.extent + 15) / 16 + 1;
    if (bits && period * t.bitColumns > (1 << 17)) bits = false;
    if (bits) {
      std::vector<llvm::Constant*> words;
      for (int64_t q = 0; q < period; ++q) {
        vals[s.k.var] = q;
        for (int64_t v = 0; v < t.bitColumns; ++v) {
          uint32_t word = 0;
          for (int64_t l = 0; l < 16; ++l) {
            vals[s.var] = v * 16 + l;
            bool in = vals[s.var] < s.extent;
            for (const loops::GuardCond& c : s.padding) {
              const int64_t x = evalIndex(c.index, vals);
              in = in && x >= 0 && x < c.extent;
            }
            if (in) word |= 1u << l;
          }
          words.push_back(b_.getInt16(static_cast<uint16_t>(word)));
        }
      }
      t.bits = constantTable(b_.getInt16Ty(), words, "pack.pad.bits");
      llvm::Value* first = b_.CreateSDiv(j0, i64(16));
      for (int64_t v = 0; v < t.vectors; ++v)
        t.bitVector.push_back(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(first, i64(v)), i64(t.bitColumns - 1)));
    } else if (split || maskTableAlone) {
      auto* maskType = llvm::FixedVectorType::get(b_.getInt32Ty(), static_cast<unsigned>(w));
      t.masks = entryAlloca(maskType, period * t.vectors, "pad.masks");
      countedLoop(k_.varNames[s.k.var] + ".phase", i64(0), i64(period), [&](llvm::Value* q) {
        vars_[s.k.var] = q;
        for (int64_t v = 0; v < t.vectors; ++v) {
          llvm::Value* mask = paddingMask(s, b_.CreateAdd(j0, i64(v * w)), w, ragged);
          b_.CreateAlignedStore(b_.CreateSExt(mask, maskType),
                                b_.CreateInBoundsGEP(maskType, t.masks, b_.CreateAdd(b_.CreateMul(q, i64(t.vectors)), i64(v))), llvm::Align(4 * w));
        }
      });
      vars_[s.k.var] = nullptr;
    }
    if (!split) return t;

    std::vector<llvm::Constant*> rows;
    for (int64_t k = 0; k < s.k.extent; ++k) rows.push_back(b_.getInt32(static_cast<uint32_t>(k % period * (bits ? t.bitColumns : t.vectors))));
    t.offsets = constantTable(b_.getInt32Ty(), offsets, "pack.k.offsets");
    t.maskRows = constantTable(b_.getInt32Ty(), rows, "pack.k.mask.rows");
    llvm::Type* elem = storageType(ctx_, buf.dtype);
    for (int64_t v = 0; v < t.vectors; ++v) {
      vars_[s.var] = b_.CreateAdd(j0, i64(v * w));
      llvm::Value* offset = i64(form.constant);
      for (const AffineTerm* term : rest) {
        llvm::Value* x = term->atom ? index(*term->atom) : vars_[term->var];
        offset = b_.CreateAdd(offset, term->coeff != 1 ? b_.CreateMul(x, i64(term->coeff)) : x);
      }
      t.bases.push_back(b_.CreateGEP(elem, buffers_[s.value.buffer], offset));
    }
    vars_[s.var] = nullptr;
    return t;
  }

  // Whether every variable `e` reads is one of `vars`.
  static bool readsOnlyOf(const IndexExpr& e, std::initializer_list<int> vars) {
    if (e.kind == IndexExpr::Kind::Var) return std::find(vars.begin(), vars.end(), e.var) != vars.end();
    for (const IndexExpr& op : e.ops)
      if (!readsOnlyOf(op, vars)) return false;
    return true;
  }

  // The lane mask of column vector v for the phase whose entries start at `phaseRow`.
  llvm::Value* tableMask(const PaddedTables& t, llvm::Value* phaseRow, int64_t v, int64_t w) {
    if (t.bits) {
      llvm::Value* at = b_.CreateInBoundsGEP(t.bits->getValueType(), t.bits, {i64(0), b_.CreateAdd(phaseRow, t.bitVector[v])});
      llvm::Value* word = b_.CreateAlignedLoad(b_.getInt16Ty(), at, llvm::Align(2));
      return b_.CreateBitCast(word, llvm::FixedVectorType::get(b_.getInt1Ty(), 16));
    }
    auto* maskType = llvm::FixedVectorType::get(b_.getInt32Ty(), static_cast<unsigned>(w));
    llvm::Value* entry = b_.CreateAlignedLoad(maskType, b_.CreateInBoundsGEP(maskType, t.masks, b_.CreateAdd(phaseRow, i64(v))), llvm::Align(4 * w));
    return b_.CreateICmpSLT(entry, llvm::Constant::getNullValue(maskType));
  }

  // Column vector v of a padded pack at step k (0 <= k < the reduction's extent) by the offset
  // tables, in the operand's storage type: padded lanes are 0 and not read.
  llvm::Value* tableLoad(const PaddedTables& t, const Pack& s, llvm::Value* k, int64_t v, int64_t w) {
    auto entry = [&](llvm::GlobalVariable* table) {
      return b_.CreateAlignedLoad(b_.getInt32Ty(), b_.CreateInBoundsGEP(table->getValueType(), table, {i64(0), k}), llvm::Align(4));
    };
    llvm::Value* mask = tableMask(t, b_.CreateZExt(entry(t.maskRows), i64_), v, w);
    const DType dtype = p_.buffers[s.value.buffer].dtype;
    llvm::Type* elem = storageType(ctx_, dtype);
    auto* vt = llvm::FixedVectorType::get(elem, static_cast<unsigned>(w));
    llvm::Value* ptr = b_.CreateGEP(elem, t.bases[v], b_.CreateSExt(entry(t.offsets), i64_));
    return b_.CreateMaskedLoad(vt, ptr, llvm::Align(elementAlign(dtype)), mask, llvm::Constant::getNullValue(vt));
  }

  // A column pack whose operand is gathered (A B^T: K[j, d]), panel by panel: the P columns of a
  // panel are P rows of K, read along k, so each k step touches P rows instead of every row of
  // the block (at 512 columns, 512 rows 4 KiB apart: a TLB miss per element). When k runs along
  // memory (K[j, d] itself), W columns' next W values of k are W vector loads (one per column)
  // transposed in registers; the k steps left over, and operands strided in k too, are gathered
  // one vector per k step. Columns past the extent read the last column and are zeroed after.
  void packGathered(const Pack& s) {
    const int64_t panel = s.panel > 0 ? s.panel : s.count;
    const int64_t w = std::min<int64_t>(laneCount(panel), 16);
    llvm::Value* j0 = index(s.base);
    KBounds kw = kBounds(s.k);
    const bool ragged = s.extent % s.count != 0;
    countedLoop(k_.varNames[s.var] + ".panel", i64(0), i64(s.count / panel), [&](llvm::Value* t) {
      llvm::Value* first = b_.CreateAdd(j0, b_.CreateMul(t, i64(panel)));
      std::vector<llvm::Value*> masks(panel / w, nullptr);
      for (int64_t v = 0; ragged && v < panel / w; ++v) masks[v] = laneMask(b_.CreateAdd(first, i64(v * w)), w, s.extent);
      llvm::Value* base = b_.CreateMul(t, i64(panel * kw.length));
      llvm::Value* gatheredFrom = kw.start;
      const loops::Buffer& buf = p_.buffers[s.value.buffer];
      if (unitStrideIn(buf, s.value.index, s.k.var)) {
        auto* rowType = llvm::FixedVectorType::get(storageType(ctx_, buf.dtype), static_cast<unsigned>(w));
        llvm::Value* squares = b_.CreateSDiv(b_.CreateSub(kw.end, kw.start), i64(w));
        countedLoop(k_.varNames[s.k.var] + ".squares", i64(0), squares, [&](llvm::Value* q) {
          llvm::Value* k0 = b_.CreateAdd(kw.start, b_.CreateMul(q, i64(w)));
          llvm::Value* row = b_.CreateAdd(base, b_.CreateMul(b_.CreateSub(k0, kw.start), i64(panel)));
          for (int64_t v = 0; v < panel / w; ++v) {
            std::vector<llvm::Value*> cols = loadTransposedSquare(s, b_.CreateAdd(first, i64(v * w)), k0, w, ragged, rowType,
                                                                  llvm::Align(elementAlign(buf.dtype)), /*widen=*/true);
            for (int64_t u = 0; u < w; ++u) {
              llvm::Value* col = masks[v] ? b_.CreateSelect(masks[v], cols[u], llvm::Constant::getNullValue(cols[u]->getType())) : cols[u];
              b_.CreateAlignedStore(col, scratchAt(s.scratch, b_.CreateAdd(row, i64(u * panel + v * w))), llvm::Align(4 * w));
            }
          }
        });
        gatheredFrom = b_.CreateAdd(kw.start, b_.CreateMul(squares, i64(w)));
      }
      countedLoop(k_.varNames[s.k.var] + ".pack", gatheredFrom, kw.end, [&](llvm::Value* k) {
        vars_[s.k.var] = k;
        llvm::Value* row = b_.CreateAdd(base, b_.CreateMul(b_.CreateSub(k, kw.start), i64(panel)));
        for (int64_t v = 0; v < panel / w; ++v) {
          llvm::Value* vec = gatherColumnVector(s.value, b_.CreateAdd(first, i64(v * w)), s.var, w, masks[v]);
          b_.CreateAlignedStore(vec, scratchAt(s.scratch, b_.CreateAdd(row, i64(v * w))), llvm::Align(4 * w));
        }
      });
    });
    vars_[s.k.var] = vars_[s.var] = nullptr;
  }

  // The lanes j .. j+W-1 of a padded column pack whose every condition holds: a condition that
  // reads the column is evaluated lane by lane (32-bit lanes; what depends on the column only is
  // invariant in the pack's k loop and hoisted out of it), the others once for the vector.
  // With `ragged`, the lanes must also lie below the column extent.
  llvm::Value* paddingMask(const Pack& s, llvm::Value* j, int64_t w, bool ragged) {
    const auto n = static_cast<unsigned>(w);
    std::vector<llvm::Constant*> steps;
    for (int64_t l = 0; l < w; ++l) steps.push_back(b_.getInt32(static_cast<uint32_t>(l)));
    llvm::Value* columns = b_.CreateAdd(b_.CreateVectorSplat(n, b_.CreateTrunc(j, b_.getInt32Ty())), llvm::ConstantVector::get(steps));
    llvm::Value* all =
        ragged ? b_.CreateICmpSLT(columns, b_.CreateVectorSplat(n, b_.getInt32(static_cast<uint32_t>(s.extent)))) : nullptr;
    for (const loops::GuardCond& c : s.padding) {
      llvm::Value* in;
      if (loops::usesVar(c.index, s.var)) {
        in = b_.CreateICmpULT(laneIndex(c.index, s.var, columns), b_.CreateVectorSplat(n, b_.getInt32(static_cast<uint32_t>(c.extent))));
      } else {
        in = b_.CreateVectorSplat(n, b_.CreateICmpULT(index(c.index), i64(c.extent)));
      }
      all = all ? b_.CreateAnd(all, in) : in;
    }
    return all;
  }

  // `ix` at every lane of `columns` (32-bit lanes, one value of the column variable each); the
  // other variables are the same in every lane. The tile pass only pads operands whose indices
  // fit in 32 bits.
  llvm::Value* laneIndex(const IndexExpr& ix, int colVar, llvm::Value* columns) {
    const unsigned n = llvm::cast<llvm::FixedVectorType>(columns->getType())->getNumElements();
    auto constant = [&](int64_t v) { return b_.CreateVectorSplat(n, b_.getInt32(static_cast<uint32_t>(v))); };
    switch (ix.kind) {
      case IndexExpr::Kind::Const: return constant(ix.constant);
      case IndexExpr::Kind::Var:
        return ix.var == colVar ? columns : b_.CreateVectorSplat(n, b_.CreateTrunc(vars_[ix.var], b_.getInt32Ty()));
      case IndexExpr::Kind::Add: return b_.CreateAdd(laneIndex(ix.ops[0], colVar, columns), laneIndex(ix.ops[1], colVar, columns));
      case IndexExpr::Kind::Sub: return b_.CreateSub(laneIndex(ix.ops[0], colVar, columns), laneIndex(ix.ops[1], colVar, columns));
      case IndexExpr::Kind::Mul: return b_.CreateMul(laneIndex(ix.ops[0], colVar, columns), constant(ix.constant));
      case IndexExpr::Kind::FloorDiv:
      case IndexExpr::Kind::Mod: {
        // Floor semantics, as index() computes them.
        llvm::Value* a = laneIndex(ix.ops[0], colVar, columns);
        llvm::Value* c = constant(ix.constant);
        llvm::Value* r = b_.CreateSRem(a, c);
        llvm::Value* neg = b_.CreateICmpSLT(r, constant(0));
        if (ix.kind == IndexExpr::Kind::Mod) return b_.CreateSelect(neg, b_.CreateAdd(r, c), r);
        return b_.CreateSub(b_.CreateSDiv(a, c), b_.CreateZExt(neg, a->getType()));
      }
    }
    return nullptr;
  }

  // A P > 0 such that `ix` is the same at var and var + P for every value of the other variables
  // (var >= 0), or 0 when there is none this simple rule sees: var appears only as (var / d) % m
  // or var % m, whose period is d * m.
  static int64_t kPeriod(const IndexExpr& ix, int var) {
    switch (ix.kind) {
      case IndexExpr::Kind::Const: return 1;
      case IndexExpr::Kind::Var: return ix.var == var ? 0 : 1;
      case IndexExpr::Kind::Add:
      case IndexExpr::Kind::Sub: {
        int64_t a = kPeriod(ix.ops[0], var), b = kPeriod(ix.ops[1], var);
        return a && b ? std::lcm(a, b) : 0;
      }
      case IndexExpr::Kind::Mul: return kPeriod(ix.ops[0], var);
      case IndexExpr::Kind::FloorDiv: return kPeriod(ix.ops[0], var);
      case IndexExpr::Kind::Mod: {
        const IndexExpr& e = ix.ops[0];
        if (ix.constant <= 0) return 0;
        if (e.kind == IndexExpr::Kind::Var && e.var == var) return ix.constant;
        if (e.kind == IndexExpr::Kind::FloorDiv && e.constant > 0 && e.ops[0].kind == IndexExpr::Kind::Var && e.ops[0].var == var)
          return e.constant * ix.constant;
        return kPeriod(e, var);
      }
    }
    return 0;
  }

  // Row pack: scratch[(r / panel) * panel * L + (k - k.base) * panel + r % panel] = row operand
  // at i = min(base + r, extent - 1), panel by panel, k by k.
  void packRows(const Pack& s) {
    llvm::Value* i0 = index(s.base);
    KBounds kw = kBounds(s.k);
    countedLoop(k_.varNames[s.var] + ".panel", i64(0), i64(s.count / s.panel), [&](llvm::Value* t) {
      llvm::Value* panel = b_.CreateMul(t, i64(s.panel * kw.length));
      std::vector<llvm::Value*> rowIdx;
      for (int64_t r = 0; r < s.panel; ++r)
        rowIdx.push_back(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(i0, b_.CreateAdd(b_.CreateMul(t, i64(s.panel)), i64(r))),
                                                  i64(s.extent - 1)));
      countedLoop(k_.varNames[s.k.var] + ".pack", kw.start, kw.end, [&](llvm::Value* k) {
        vars_[s.k.var] = k;
        llvm::Value* at = b_.CreateAdd(panel, b_.CreateMul(b_.CreateSub(k, kw.start), i64(s.panel)));
        for (int64_t r = 0; r < s.panel; ++r) {
          vars_[s.var] = rowIdx[r];
          b_.CreateStore(expr(s.value), scratchAt(s.scratch, b_.CreateAdd(at, i64(r))));
        }
      });
    });
    vars_[s.k.var] = vars_[s.var] = nullptr;
  }

  // The bf16 bits of a load, unconverted (the bf16-pair packs).
  llvm::Value* rawLoad(const Expr& load) {
    if (load.kind != ExprKind::Load || p_.buffers[load.buffer].dtype != DType::BF16) throw std::logic_error("bf16 pair pack of a non-bf16 operand");
    return b_.CreateAlignedLoad(b_.getInt16Ty(), address(load.buffer, load.index), llvm::Align(2));
  }

  // Pairs along k: the k loop of a pack runs over pairs q, k0 = start + 2q and k1 = k0 + 1; k1
  // may lie past the window's end, where the pair's high half is +0 (the address read is k0's).
  struct KPair {
    llvm::Value* k0;
    llvm::Value* k1;     // clamped into the window
    llvm::Value* inside; // whether k0 + 1 is in the window
  };
  KPair kPair(const KBounds& kw, llvm::Value* q) {
    llvm::Value* k0 = b_.CreateAdd(kw.start, b_.CreateMul(q, i64(2)));
    llvm::Value* next = b_.CreateAdd(k0, i64(1));
    llvm::Value* inside = b_.CreateICmpSLT(next, kw.end);
    return {k0, b_.CreateSelect(inside, next, k0), inside};
  }
  llvm::Value* pairCount(const KBounds& kw) { return b_.CreateSDiv(b_.CreateAdd(b_.CreateSub(kw.end, kw.start), i64(1)), i64(2)); }

  // Column pack of bf16 pairs (Pack::bf16Pairs): two rows of W columns each, loaded as 16-bit
  // lanes and interleaved, so that 32-bit lane c holds (B[k0, j + c], B[k1, j + c]). A padded
  // pack (implicit GEMM) masks each row's lanes with its own k's conditions; an operand not
  // contiguous in the column (a strided convolution's input) is gathered.
  void packColumnPairs(const Pack& s) {
    const int64_t panel = s.panel > 0 ? s.panel : s.count;
    const bool padded = !s.padding.empty();
    const loops::Buffer& buf = p_.buffers[s.value.buffer];
    if (!padded && !unitStrideIn(buf, s.value.index, s.var) && unitStrideIn(buf, s.value.index, s.k.var))
      return packColumnPairsAlongK(s, panel);
    const int64_t w = std::min<int64_t>(laneCount(panel), padded ? s.lanes : 16);
    llvm::Value* j0 = index(s.base);
    KBounds kw = kBounds(s.k);
    const int64_t pairs = packedPairs(kw.length, s.amx);
    const bool ragged = s.extent % s.count != 0;
    // Without offset tables (a strided convolution) the pair pack computes each lane's masks: a
    // mask table built per call was slower (bf16 conv with stride 2, AMX, 1 thread: 0.077 ->
    // 0.083 ms).
    const PaddedTables tables = padded ? paddedTables(s, j0, kw, w, ragged, /*maskTableAlone=*/false) : PaddedTables{};
    llvm::Value* zero = llvm::Constant::getNullValue(llvm::FixedVectorType::get(b_.getInt16Ty(), static_cast<unsigned>(w)));
    std::vector<int> interleave;
    for (int l = 0; l < w; ++l) {
      interleave.push_back(l);
      interleave.push_back(l + static_cast<int>(w));
    }
    std::vector<llvm::Value*> masks(s.count / w, nullptr);
    for (int64_t v = 0; ragged && v < s.count / w; ++v) masks[v] = laneMask(b_.CreateAdd(j0, i64(v * w)), w, s.extent);
    countedLoop(k_.varNames[s.k.var] + ".pairs", i64(0), pairCount(kw), [&](llvm::Value* q) {
      KPair kp = kPair(kw, q);
      for (int64_t v = 0; v < s.count / w; ++v) {
        llvm::Value* j = b_.CreateAdd(j0, i64(v * w));
        auto row = [&](llvm::Value* k) {
          if (tables.offsets) return tableLoad(tables, s, k, v, w);
          vars_[s.k.var] = k;
          return rawColumnVector(s.value, j, s.var, w, padded ? paddingMask(s, j, w, ragged) : masks[v], padded);
        };
        llvm::Value* lo = row(kp.k0);
        llvm::Value* hi = b_.CreateSelect(kp.inside, row(kp.k1), zero);
        const int64_t c = v * w;
        llvm::Value* at = b_.CreateAdd(b_.CreateMul(q, i64(panel)), i64((c / panel) * panel * pairs + c % panel));
        b_.CreateAlignedStore(interleaveWords(lo, hi, interleave), scratchAt(s.scratch, at), llvm::Align(4));
      }
    });
    vars_[s.k.var] = vars_[s.var] = nullptr;
    if (s.amx) zeroPairsToTiles(s, kw, panel);
  }

  // The words lo[0], hi[0], lo[1], hi[1], ...: one bf16 pair per 32-bit lane. With 16 words a
  // side (AVX512-BF16 targets, all of which have AVX512BW) it is one vpermt2w of the two halves
  // as they were loaded: from the generic shuffle LLVM 19 first copies each half into the upper
  // half of its register (two vinserti64x4 per 64-byte row of the pack, on the pipe the permute
  // needs too). The permute's indices pass through an empty inline asm once per kernel, or
  // InstCombine turns the permute back into that shuffle.
  llvm::Value* interleaveWords(llvm::Value* lo, llvm::Value* hi, const std::vector<int>& interleave) {
    const auto n = llvm::cast<llvm::FixedVectorType>(lo->getType())->getNumElements();
    if (n != 16 || !lo->getType()->getScalarType()->isIntegerTy(16)) return b_.CreateShuffleVector(lo, hi, interleave);
    std::vector<int> widen(32, llvm::PoisonMaskElem);
    for (int l = 0; l < 16; ++l) widen[l] = l;
    if (!pairOrder_) {
      std::vector<uint16_t> order;
      for (int l = 0; l < 16; ++l) {
        order.push_back(static_cast<uint16_t>(l));
        order.push_back(static_cast<uint16_t>(l + 32));  // lane l of the second operand
      }
      llvm::Constant* indices = llvm::ConstantDataVector::get(ctx_, order);
      auto* opaque = llvm::InlineAsm::get(llvm::FunctionType::get(indices->getType(), {indices->getType()}, false), "", "=v,0",
                                          /*hasSideEffects=*/false);
      llvm::IRBuilder<> eb(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
      pairOrder_ = eb.CreateCall(opaque, {indices}, "pair.order");
    }
    llvm::Value* wideLo = b_.CreateShuffleVector(lo, widen);
    llvm::Value* wideHi = b_.CreateShuffleVector(hi, widen);
    return b_.CreateIntrinsic(llvm::Intrinsic::x86_avx512_vpermi2var_hi_512, {}, {wideLo, pairOrder_, wideHi});
  }

  // An AMX column pack: pairs past the window, up to the end of its last group of 16, are zeros,
  // so that the last tile's k steps past the window add nothing. In each panel they are one
  // contiguous run of words (pair q of the panel's columns at q * panel).
  void zeroPairsToTiles(const Pack& s, const KBounds& kw, int64_t panel) {
    const int64_t pairs = packedPairs(kw.length, true);
    llvm::Value* filled = pairCount(kw);
    llvm::Value* groupsEnd = b_.CreateMul(b_.CreateSDiv(b_.CreateAdd(filled, i64(15)), i64(16)), i64(16));
    llvm::Value* bytes = b_.CreateMul(b_.CreateSub(groupsEnd, filled), i64(panel * 4));
    countedLoop("pairs.zero", i64(0), i64(s.count / panel), [&](llvm::Value* t) {
      llvm::Value* at = b_.CreateAdd(b_.CreateMul(t, i64(panel * pairs)), b_.CreateMul(filled, i64(panel)));
      b_.CreateMemSet(scratchAt(s.scratch, at), b_.getInt8(0), bytes, llvm::MaybeAlign(4));
    });
  }

  // The transpose of a square of W vectors of W lanes (W a power of two): log2(W) rounds of
  // zipping vector i with vector i + W/2 (its low halves interleaved, then its high halves), each
  // round W two-source shuffles (vpunpck*/vpermt2d).
  std::vector<llvm::Value*> transposeSquare(std::vector<llvm::Value*> rows) {
    const int w = static_cast<int>(rows.size());
    std::vector<int> lo, hi;
    for (int l = 0; l < w / 2; ++l) {
      lo.insert(lo.end(), {l, l + w});
      hi.insert(hi.end(), {l + w / 2, l + w / 2 + w});
    }
    for (int round = 1; round < w; round *= 2) {
      std::vector<llvm::Value*> next(rows.size());
      for (int i = 0; i < w / 2; ++i) {
        next[2 * i] = b_.CreateShuffleVector(rows[i], rows[i + w / 2], lo);
        next[2 * i + 1] = b_.CreateShuffleVector(rows[i], rows[i + w / 2], hi);
      }
      rows = std::move(next);
    }
    return rows;
  }

  // The column pack of bf16 pairs for an operand whose k runs along memory (A B^T: B[j, k]):
  // each pair (B[j, k0], B[j, k0 + 1]) is one 32-bit word in memory already. W columns' next W
  // pairs are W vector loads along k (one per column, 2-byte aligned) transposed in registers;
  // the pairs left over are one 32-bit gather per W columns (x86 gathers take any alignment), and
  // an odd last k of the window a 16-bit gather with a zero high half, so that nothing past the
  // window is read. Columns past the extent read the last column's row and are zeroed after.
  void packColumnPairsAlongK(const Pack& s, int64_t panel) {
    const int64_t w = std::min<int64_t>(laneCount(panel), 16);
    const auto n = static_cast<unsigned>(w);
    llvm::Value* j0 = index(s.base);
    KBounds kw = kBounds(s.k);
    const int64_t pairs = packedPairs(kw.length, s.amx);
    const bool ragged = s.extent % s.count != 0;
    auto* words = llvm::FixedVectorType::get(b_.getInt32Ty(), n);
    std::vector<llvm::Value*> masks(s.count / w, nullptr);
    for (int64_t v = 0; v < s.count / w; ++v)
      masks[v] = ragged ? laneMask(b_.CreateAdd(j0, i64(v * w)), w, s.extent) : llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(b_.getInt1Ty(), n));
    // Where pair q of column c of the pack goes: the micro-kernel's panel order.
    auto pairAt = [&](llvm::Value* q, int64_t c) {
      return scratchAt(s.scratch, b_.CreateAdd(b_.CreateMul(q, i64(panel)), i64((c / panel) * panel * pairs + c % panel)));
    };
    // Pair q of every W columns: `gather` gives the words of the W columns from j.
    auto storePairs = [&](llvm::Value* q, auto gather) {
      vars_[s.k.var] = b_.CreateAdd(kw.start, b_.CreateMul(q, i64(2)));
      for (int64_t v = 0; v < s.count / w; ++v)
        b_.CreateAlignedStore(gather(b_.CreateAdd(j0, i64(v * w)), masks[v]), pairAt(q, v * w), llvm::Align(4));
    };
    llvm::Value* length = b_.CreateSub(kw.end, kw.start);
    llvm::Value* squares = b_.CreateSDiv(length, i64(2 * w));
    countedLoop(k_.varNames[s.k.var] + ".squares", i64(0), squares, [&](llvm::Value* t) {
      llvm::Value* q0 = b_.CreateMul(t, i64(w));
      llvm::Value* k0 = b_.CreateAdd(kw.start, b_.CreateMul(q0, i64(2)));
      for (int64_t v = 0; v < s.count / w; ++v) {
        const int64_t c = v * w;
        std::vector<llvm::Value*> cols = loadTransposedSquare(s, b_.CreateAdd(j0, i64(c)), k0, w, ragged, words, llvm::Align(2), /*widen=*/false);
        for (int64_t u = 0; u < w; ++u) {
          llvm::Value* col = ragged ? b_.CreateSelect(masks[v], cols[u], llvm::Constant::getNullValue(words)) : cols[u];
          b_.CreateAlignedStore(col, pairAt(b_.CreateAdd(q0, i64(u)), c), llvm::Align(4));
        }
      }
    });
    countedLoop(k_.varNames[s.k.var] + ".pairs", b_.CreateMul(squares, i64(w)), b_.CreateSDiv(length, i64(2)), [&](llvm::Value* q) {
      storePairs(q, [&](llvm::Value* j, llvm::Value* mask) {
        return b_.CreateMaskedGather(words, columnPointers(s.value, j, s.var, w), llvm::Align(2), mask, llvm::Constant::getNullValue(words));
      });
    });
    auto* odd = llvm::BasicBlock::Create(ctx_, "pairs.odd", fn_);
    auto* done = llvm::BasicBlock::Create(ctx_, "pairs.done", fn_);
    b_.CreateCondBr(b_.CreateICmpNE(b_.CreateSRem(length, i64(2)), i64(0)), odd, done);
    b_.SetInsertPoint(odd);
    storePairs(b_.CreateSDiv(length, i64(2)), [&](llvm::Value* j, llvm::Value* mask) {
      return b_.CreateZExt(rawGather(s.value, j, s.var, w, mask), words);
    });
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    vars_[s.k.var] = vars_[s.var] = nullptr;
    if (s.amx) zeroPairsToTiles(s, kw, panel);
  }

  // The row pack of an AMX tile (Pack::amx): for each panel, row and group of 16 pairs, the row's
  // 32 k steps are one 64-byte load (k is contiguous in the operand; steps past the window are
  // masked off as zeros) stored as one row of an A tile. Rows past the extent read the last row.
  // An operand whose k is not contiguous even in its merged offset (linearOffset: an implicit
  // GEMM's weights read as W[k, crs / 9, (crs / 3) % 3, crs % 3] are) is packed pair by pair
  // instead.
  void packRowTilesAmx(const Pack& s) {
    if (!unitStrideIn(p_.buffers[s.value.buffer], s.value.index, s.k.var)) return packRowTilesAmxByPairs(s);
    llvm::Value* i0 = index(s.base);
    KBounds kw = kBounds(s.k);
    const int64_t pairs = packedPairs(kw.length, true);
    auto* lanes = llvm::FixedVectorType::get(b_.getInt16Ty(), 32);
    llvm::Value* length = b_.CreateSub(kw.end, kw.start);
    llvm::Value* groups = b_.CreateSDiv(b_.CreateAdd(length, i64(31)), i64(32));
    llvm::Value* laneIds = llvm::ConstantVector::get([&] {
      std::vector<llvm::Constant*> ids;
      for (int l = 0; l < 32; ++l) ids.push_back(b_.getInt64(l));
      return ids;
    }());
    countedLoop(k_.varNames[s.var] + ".panel", i64(0), i64(s.count / s.panel), [&](llvm::Value* t) {
      llvm::Value* panel = b_.CreateMul(t, i64(s.panel * pairs));
      countedLoop(k_.varNames[s.var] + ".row", i64(0), i64(s.panel), [&](llvm::Value* r) {
        vars_[s.var] = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(i0, b_.CreateAdd(b_.CreateMul(t, i64(s.panel)), r)),
                                                i64(s.extent - 1));
        countedLoop(k_.varNames[s.k.var] + ".group", i64(0), groups, [&](llvm::Value* g) {
          llvm::Value* k0 = b_.CreateAdd(kw.start, b_.CreateMul(g, i64(32)));
          vars_[s.k.var] = k0;
          llvm::Value* left = b_.CreateVectorSplat(32, b_.CreateSub(kw.end, k0));
          llvm::Value* mask = b_.CreateICmpSLT(laneIds, left);
          llvm::Value* row = b_.CreateMaskedLoad(lanes, address(s.value.buffer, s.value.index), llvm::Align(2), mask,
                                                 llvm::Constant::getNullValue(lanes));
          llvm::Value* at = b_.CreateAdd(panel, b_.CreateAdd(b_.CreateMul(g, i64(s.panel * 16)), b_.CreateMul(r, i64(16))));
          b_.CreateAlignedStore(row, scratchAt(s.scratch, at), llvm::Align(64));
        });
      });
    });
    vars_[s.k.var] = vars_[s.var] = nullptr;
  }

  // packRowTilesAmx, pair by pair: the pairs of the window (an odd last one ending in +0), then
  // zero pairs to the end of the last group.
  void packRowTilesAmxByPairs(const Pack& s) {
    llvm::Value* i0 = index(s.base);
    KBounds kw = kBounds(s.k);
    const int64_t pairs = packedPairs(kw.length, true);
    llvm::Value* filled = pairCount(kw);
    llvm::Value* padded = b_.CreateMul(b_.CreateSDiv(b_.CreateAdd(filled, i64(15)), i64(16)), i64(16));
    countedLoop(k_.varNames[s.var] + ".panel", i64(0), i64(s.count / s.panel), [&](llvm::Value* t) {
      llvm::Value* panel = b_.CreateMul(t, i64(s.panel * pairs));
      countedLoop(k_.varNames[s.var] + ".row", i64(0), i64(s.panel), [&](llvm::Value* r) {
        llvm::Value* row = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(i0, b_.CreateAdd(b_.CreateMul(t, i64(s.panel)), r)),
                                                    i64(s.extent - 1));
        auto at = [&](llvm::Value* q) {
          llvm::Value* group = b_.CreateMul(b_.CreateSDiv(q, i64(16)), i64(s.panel * 16));
          return scratchAt(s.scratch, b_.CreateAdd(panel, b_.CreateAdd(group, b_.CreateAdd(b_.CreateMul(r, i64(16)), b_.CreateSRem(q, i64(16))))));
        };
        countedLoop(k_.varNames[s.k.var] + ".pairs", i64(0), filled, [&](llvm::Value* q) {
          KPair kp = kPair(kw, q);
          vars_[s.var] = row;
          vars_[s.k.var] = kp.k0;
          llvm::Value* lo = b_.CreateZExt(rawLoad(s.value), b_.getInt32Ty());
          vars_[s.k.var] = kp.k1;
          llvm::Value* hi = b_.CreateSelect(kp.inside, b_.CreateZExt(rawLoad(s.value), b_.getInt32Ty()), b_.getInt32(0));
          b_.CreateAlignedStore(b_.CreateOr(lo, b_.CreateShl(hi, 16)), at(q), llvm::Align(4));
        });
        countedLoop(k_.varNames[s.k.var] + ".zero", filled, padded,
                    [&](llvm::Value* q) { b_.CreateAlignedStore(b_.getInt32(0), at(q), llvm::Align(4)); });
      });
    });
    vars_[s.k.var] = vars_[s.var] = nullptr;
  }

  // Row pack of bf16 pairs: element (r / panel) * panel * L' + q * panel + r % panel holds
  // (A[i, k0], A[i, k1]) as one 32-bit word, the value the micro-kernel broadcasts.
  void packRowPairs(const Pack& s) {
    llvm::Value* i0 = index(s.base);
    KBounds kw = kBounds(s.k);
    const int64_t pairs = (kw.length + 1) / 2;
    countedLoop(k_.varNames[s.var] + ".panel", i64(0), i64(s.count / s.panel), [&](llvm::Value* t) {
      llvm::Value* panel = b_.CreateMul(t, i64(s.panel * pairs));
      std::vector<llvm::Value*> rowIdx;
      for (int64_t r = 0; r < s.panel; ++r)
        rowIdx.push_back(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(i0, b_.CreateAdd(b_.CreateMul(t, i64(s.panel)), i64(r))),
                                                  i64(s.extent - 1)));
      countedLoop(k_.varNames[s.k.var] + ".pairs", i64(0), pairCount(kw), [&](llvm::Value* q) {
        KPair kp = kPair(kw, q);
        llvm::Value* at = b_.CreateAdd(panel, b_.CreateMul(q, i64(s.panel)));
        for (int64_t r = 0; r < s.panel; ++r) {
          vars_[s.var] = rowIdx[r];
          vars_[s.k.var] = kp.k0;
          llvm::Value* lo = b_.CreateZExt(rawLoad(s.value), b_.getInt32Ty());
          vars_[s.k.var] = kp.k1;
          llvm::Value* hi = b_.CreateSelect(kp.inside, b_.CreateZExt(rawLoad(s.value), b_.getInt32Ty()), b_.getInt32(0));
          b_.CreateAlignedStore(b_.CreateOr(lo, b_.CreateShl(hi, 16)), scratchAt(s.scratch, b_.CreateAdd(at, i64(r))), llvm::Align(4));
        }
      });
    });
    vars_[s.k.var] = vars_[s.var] = nullptr;
  }

  // A tile's frame: its first row and column, the rows and columns of it inside the extents, the
  // block after it (a tile starting past either extent branches there at once; the caller ends
  // in it), and per vector of W columns the mask of the columns inside (null when all are).
  struct TileFrame {
    llvm::Value* i0;
    llvm::Value* j0;
    llvm::Value* rowsIn;
    llvm::Value* colsIn;
    llvm::BasicBlock* done;
    std::vector<llvm::Value*> outMasks;
  };
  TileFrame enterTile(const Tile& s, int64_t w) {
    TileFrame f;
    f.i0 = index(s.rowBase);
    f.j0 = index(s.colBase);
    auto* inside = llvm::BasicBlock::Create(ctx_, "tile", fn_);
    f.done = llvm::BasicBlock::Create(ctx_, "tile.end", fn_);
    b_.CreateCondBr(b_.CreateAnd(b_.CreateICmpSLT(f.i0, i64(s.rowExtent)), b_.CreateICmpSLT(f.j0, i64(s.colExtent))), inside, f.done);
    b_.SetInsertPoint(inside);
    f.rowsIn = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i64(s.rows), b_.CreateSub(i64(s.rowExtent), f.i0));
    f.colsIn = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i64(s.cols), b_.CreateSub(i64(s.colExtent), f.j0));
    f.outMasks.assign(s.cols / w, nullptr);
    for (int64_t v = 0; s.colExtent % s.cols != 0 && v < s.cols / w; ++v) f.outMasks[v] = laneMask(b_.CreateAdd(f.j0, i64(v * w)), w, s.colExtent);
    return f;
  }

  // Where the partial sums of earlier k blocks of a tile's row r, columns c.. live: in the output
  // elements (the first epilogue store), or in the tile's f32 scratch beside a low-precision output.
  llvm::Value* partialSumAddress(const Tile& s, llvm::Value* i0, llvm::Value* j0, int64_t r, int64_t c) {
    if (s.sumScratch >= 0) {
      llvm::Value* row = b_.CreateAdd(index(s.sumRow), i64(r));
      return scratchAt(s.sumScratch, b_.CreateAdd(b_.CreateMul(row, i64(s.sumStride)), b_.CreateAdd(index(s.sumCol), i64(c))));
    }
    const Store& st = s.epilogue[0].as<Store>();
    vars_[s.rowVar] = b_.CreateAdd(i0, i64(r));
    vars_[s.colVar] = b_.CreateAdd(j0, i64(c));
    return address(st.buffer, st.index);
  }

  // Copies the partial sums of earlier k blocks between where they live (partialSumAddress) and
  // `slot(r, v)`, a vector of W floats per row r and vector v of the tile: into the slots when
  // `load`, out of them otherwise. Rows past the extent are left alone (each row is guarded);
  // columns past it are masked (0 when loaded).
  template <class Slot>
  void copyPartialSums(const Tile& s, const TileFrame& f, int64_t w, bool load, Slot slot) {
    auto* vt = llvm::FixedVectorType::get(ft_, static_cast<unsigned>(w));
    for (int64_t r = 0; r < s.rows; ++r) {
      auto* then = llvm::BasicBlock::Create(ctx_, "row", fn_);
      auto* next = llvm::BasicBlock::Create(ctx_, "row.end", fn_);
      b_.CreateCondBr(b_.CreateICmpSLT(i64(r), f.rowsIn), then, next);
      b_.SetInsertPoint(then);
      for (int64_t v = 0; v < s.cols / w; ++v) {
        llvm::Value* ptr = partialSumAddress(s, f.i0, f.j0, r, v * w);
        llvm::Value* mask = f.outMasks[v];
        if (load) {
          llvm::Value* x = mask ? static_cast<llvm::Value*>(b_.CreateMaskedLoad(vt, ptr, llvm::Align(4), mask, llvm::Constant::getNullValue(vt)))
                                : b_.CreateAlignedLoad(vt, ptr, llvm::Align(4));
          b_.CreateAlignedStore(x, slot(r, v), llvm::Align(4 * w));
        } else {
          llvm::Value* x = b_.CreateAlignedLoad(vt, slot(r, v), llvm::Align(4 * w));
          if (mask) b_.CreateMaskedStore(x, ptr, llvm::Align(4), mask);
          else b_.CreateAlignedStore(x, ptr, llvm::Align(4));
        }
      }
      b_.CreateBr(next);
      b_.SetInsertPoint(next);
    }
  }

  // After a k block that is not the last: the partial sums go where the epilogue's store will
  // go (copyPartialSums out of `slot`) and the tile ends; the code after this runs for the last.
  template <class Slot>
  void savePartialSumsUnlessLast(const Tile& s, const TileFrame& f, const KBounds& kw, int64_t w, Slot slot) {
    auto* save = llvm::BasicBlock::Create(ctx_, "tile.save", fn_);
    auto* last = llvm::BasicBlock::Create(ctx_, "tile.last", fn_);
    b_.CreateCondBr(b_.CreateICmpSLT(kw.end, i64(s.k.extent)), save, last);
    b_.SetInsertPoint(save);
    copyPartialSums(s, f, w, /*load=*/false, slot);
    b_.CreateBr(f.done);
    b_.SetInsertPoint(last);
  }

  // The epilogue of a tile whose sums are in `spill` (rows x cols f32), element by element over
  // the part of the tile inside the extents.
  void tileEpilogue(const Tile& s, llvm::AllocaInst* spill, llvm::Value* i0, llvm::Value* j0, llvm::Value* rowsIn, llvm::Value* colsIn) {
    varExtents_[s.rowVar] = s.rowExtent;
    varExtents_[s.colVar] = s.colExtent;
    auto epilogue = [&](llvm::Value* rowsN, llvm::Value* colsN) {
      countedLoop(k_.varNames[s.rowVar] + ".epi", i64(0), rowsN, [&](llvm::Value* r) {
        llvm::BranchInst* colLatch = countedLoop(k_.varNames[s.colVar] + ".epi", i64(0), colsN, [&](llvm::Value* c) {
          vars_[s.rowVar] = b_.CreateAdd(i0, r);
          vars_[s.colVar] = b_.CreateAdd(j0, c);
          llvm::Value* v = b_.CreateLoad(ft_, b_.CreateInBoundsGEP(ft_, spill, b_.CreateAdd(b_.CreateMul(r, i64(s.cols)), c)));
          b_.CreateStore(v, accs_[s.acc]);
          b_.CreateStore(b_.getFalse(), accNaN_[s.acc]);
          for (const Stmt& e : s.epilogue) stmt(e, false);
        });
        // A whole tile's columns are whole vectors: vectorized along them, where the rows are
        // strided. Left to itself, LLVM unrolled a 32-column loop whole and then vectorized the
        // 8 rows with gathers and scatters (attention's score tiles, 20 % of the kernel).
        if (llvm::isa<llvm::ConstantInt>(colsN))
          widenThenUnroll(colLatch, /*maskedRemainder=*/false);
      });
    };
    if (s.colExtent % s.cols != 0 || s.rowExtent % s.rows != 0) {
      // A whole tile (the common case) runs the epilogue with constant trip counts, which LLVM
      // turns into vector code; only a tile at an edge takes the element-by-element loop.
      // (Measured: the scalar epilogue was 3 % of conv (1, 64, 64, 56, 56).)
      auto* whole = llvm::BasicBlock::Create(ctx_, "epi.whole", fn_);
      auto* edge = llvm::BasicBlock::Create(ctx_, "epi.edge", fn_);
      auto* joined = llvm::BasicBlock::Create(ctx_, "epi.end", fn_);
      b_.CreateCondBr(b_.CreateAnd(b_.CreateICmpEQ(rowsIn, i64(s.rows)), b_.CreateICmpEQ(colsIn, i64(s.cols))), whole, edge);
      b_.SetInsertPoint(whole);
      epilogue(i64(s.rows), i64(s.cols));
      b_.CreateBr(joined);
      b_.SetInsertPoint(edge);
      epilogue(rowsIn, colsIn);
      b_.CreateBr(joined);
      b_.SetInsertPoint(joined);
    } else {
      epilogue(i64(s.rows), i64(s.cols));
    }
    vars_[s.rowVar] = vars_[s.colVar] = nullptr;
    varExtents_[s.rowVar] = varExtents_[s.colVar] = 0;
  }

  // An AMX tile (Tile::amx): rows/16 x cols/16 accumulator tiles of 16x16 f32 carried through
  // the loop over groups of 16 pairs (32 k steps) as x86_amx values, each group loading one A
  // tile per 16 rows and one B tile per 16 columns from the packs (Pack::amx) and doing one
  // tdpbf16ps per accumulator. LLVM's AMX passes configure the tiles (ldtilecfg) from the
  // constant shapes. Partial sums of earlier k blocks are copied into `spill` and loaded as the
  // starting tiles; the sums are stored back to `spill` for the partial-sum store or the epilogue.
  void amxTile(const Tile& s) {
    constexpr int64_t w = 16;
    const int64_t nvec = s.cols / w, rowTiles = s.rows / 16, tiles = rowTiles * nvec;
    const TileFrame frame = enterTile(s, w);
    KBounds kw = kBounds(s.k);
    const int64_t pairs = packedPairs(kw.length, true);
    llvm::AllocaInst* spill = entryAlloca(ft_, s.rows * s.cols, "tile.c");
    auto spillAt = [&](int64_t r, int64_t c) { return b_.CreateConstInBoundsGEP1_64(ft_, spill, r * s.cols + c); };

    llvm::Type* amxType = llvm::Type::getX86_AMXTy(ctx_);
    llvm::Function* tileLoad = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_tileloadd64_internal);
    llvm::Function* tileZero = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_tilezero_internal);
    llvm::Function* tileDot = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_tdpbf16ps_internal);
    llvm::Function* tileStore = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_tilestored64_internal);
    llvm::Value* sixteenRows = b_.getInt16(16);
    llvm::Value* rowBytes = b_.getInt16(64);
    auto load = [&](llvm::Value* ptr, int64_t stride) { return b_.CreateCall(tileLoad, {sixteenRows, rowBytes, ptr, i64(stride)}); };
    auto accTileAt = [&](int64_t t) { return spillAt((t / nvec) * 16, (t % nvec) * 16); };

    // The accumulator tiles: zeros, or (a k block after the first) the partial sums so far.
    std::vector<llvm::Value*> acc(tiles);
    const bool partialSums = s.k.block > 0;
    if (partialSums) {
      auto* resume = llvm::BasicBlock::Create(ctx_, "tile.resume", fn_);
      auto* start = llvm::BasicBlock::Create(ctx_, "tile.start", fn_);
      auto* joined = llvm::BasicBlock::Create(ctx_, "tile.sums", fn_);
      b_.CreateCondBr(b_.CreateICmpSGT(kw.start, i64(0)), resume, start);
      b_.SetInsertPoint(resume);
      copyPartialSums(s, frame, w, /*load=*/true, [&](int64_t r, int64_t v) { return spillAt(r, v * w); });
      std::vector<llvm::Value*> resumed(tiles), zeroed(tiles);
      for (int64_t t = 0; t < tiles; ++t) resumed[t] = load(accTileAt(t), s.cols * 4);
      llvm::BasicBlock* resumedEnd = b_.GetInsertBlock();
      b_.CreateBr(joined);
      b_.SetInsertPoint(start);
      for (int64_t t = 0; t < tiles; ++t) zeroed[t] = b_.CreateCall(tileZero, {sixteenRows, rowBytes});
      b_.CreateBr(joined);
      b_.SetInsertPoint(joined);
      for (int64_t t = 0; t < tiles; ++t) {
        llvm::PHINode* phi = b_.CreatePHI(amxType, 2, "acc.tile");
        phi->addIncoming(resumed[t], resumedEnd);
        phi->addIncoming(zeroed[t], start);
        acc[t] = phi;
      }
    } else {
      for (int64_t t = 0; t < tiles; ++t) acc[t] = b_.CreateCall(tileZero, {sixteenRows, rowBytes});
    }

    // The groups of 32 k steps (the packs hold zeros past the window up to the last group's end).
    llvm::Value* groups = b_.CreateSDiv(b_.CreateAdd(b_.CreateSub(kw.end, kw.start), i64(31)), i64(32));
    // A row pack of all of k (implicit GEMM) holds every group of it: the window's start at a
    // whole group (k blocks of multiples of 32 steps).
    llvm::Value* rowPanel = b_.CreateMul(index(s.blockRow), i64(s.rowPackWhole ? packedPairs(s.k.extent, true) : pairs));
    llvm::Value* firstRowGroup = s.rowPackWhole ? b_.CreateSDiv(kw.start, i64(32)) : i64(0);
    llvm::Value* colPanel = b_.CreateMul(index(s.blockCol), i64(pairs));
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, "groups.loop", fn_);
    auto* body = llvm::BasicBlock::Create(ctx_, "groups.body", fn_);
    auto* exit = llvm::BasicBlock::Create(ctx_, "groups.exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* g = b_.CreatePHI(i64_, 2, "group");
    g->addIncoming(i64(0), pre);
    std::vector<llvm::PHINode*> carried(tiles);
    for (int64_t t = 0; t < tiles; ++t) {
      carried[t] = b_.CreatePHI(amxType, 2, "acc.tile");
      carried[t]->addIncoming(acc[t], pre);
    }
    b_.CreateCondBr(b_.CreateICmpSLT(g, groups), body, exit);
    b_.SetInsertPoint(body);
    std::vector<llvm::Value*> a(rowTiles), bt(nvec);
    for (int64_t r = 0; r < rowTiles; ++r)
      a[r] = load(scratchAt(s.rowScratch, b_.CreateAdd(rowPanel, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(firstRowGroup, g), i64(s.rows * 16)),
                                                                              i64(r * 16 * 16)))),
                  64);
    for (int64_t v = 0; v < nvec; ++v)
      bt[v] = load(scratchAt(s.colScratch, b_.CreateAdd(colPanel, b_.CreateAdd(b_.CreateMul(g, i64(16 * s.cols)), i64(v * 16)))), s.cols * 4);
    for (int64_t t = 0; t < tiles; ++t)
      carried[t]->addIncoming(b_.CreateCall(tileDot, {sixteenRows, rowBytes, rowBytes, carried[t], a[t / nvec], bt[t % nvec]}), body);
    g->addIncoming(b_.CreateAdd(g, i64(1), "group.next", true, true), body);
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
    for (int64_t t = 0; t < tiles; ++t) b_.CreateCall(tileStore, {sixteenRows, rowBytes, accTileAt(t), i64(s.cols * 4), carried[t]});

    if (partialSums) savePartialSumsUnlessLast(s, frame, kw, w, [&](int64_t r, int64_t v) { return spillAt(r, v * w); });
    tileEpilogue(s, spill, frame.i0, frame.j0, frame.rowsIn, frame.colsIn);
    b_.CreateBr(frame.done);
    b_.SetInsertPoint(frame.done);
  }

  // tile: rows x cols accumulators, each row `cols / W` vectors, kept in registers across the k
  // loop (allocas that SROA promotes); each k broadcasts one row-operand value per row and does
  // one fused multiply-add per accumulator vector. Then the epilogue runs for every element of
  // the tile inside the extents, or (k blocks before the last) the partial sums are stored.
  void tile(const Tile& s) {
    if (s.amx) return amxTile(s);
    const int64_t w = laneCount(s.cols);
    const int64_t nvec = s.cols / w;
    auto* vt = llvm::FixedVectorType::get(ft_, static_cast<unsigned>(w));
    const TileFrame frame = enterTile(s, w);
    const auto& [i0, j0, rowsIn, colsIn, done, outMasks] = frame;
    KBounds kw = kBounds(s.k);
    const bool ragged = s.colExtent % s.cols != 0;

    std::vector<llvm::AllocaInst*> accs;
    for (int64_t a = 0; a < s.rows * nvec; ++a) {
      accs.push_back(entryAlloca(vt, 1, "c" + std::to_string(a)));
      b_.CreateStore(llvm::Constant::getNullValue(vt), accs.back());
    }
    const bool partialSums = s.k.block > 0 && !s.perWindow;
    if (partialSums) {
      // The next tile down will start from its C rows: ask for them now, so that they come
      // from L1 then instead of stalling its first FMAs.
      llvm::Function* prefetch = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::prefetch, {b_.getPtrTy()});
      for (int64_t r = 0; r < (s.sumScratch < 0 ? s.rows : 0); ++r) {  // scratch partial sums are in cache
        const Store& st = s.epilogue[0].as<Store>();
        vars_[s.rowVar] = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(i0, i64(s.rows + r)), i64(s.rowExtent - 1));
        for (int64_t v = 0; v < nvec; v += std::max<int64_t>(1, 16 / w)) {
          vars_[s.colVar] = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(j0, i64(v * w)), i64(s.colExtent - 1));
          b_.CreateCall(prefetch, {address(st.buffer, st.index), b_.getInt32(1), b_.getInt32(3), b_.getInt32(1)});
        }
      }
      auto* resume = llvm::BasicBlock::Create(ctx_, "tile.resume", fn_);
      auto* start = llvm::BasicBlock::Create(ctx_, "tile.start", fn_);
      b_.CreateCondBr(b_.CreateICmpSGT(kw.start, i64(0)), resume, start);
      b_.SetInsertPoint(resume);
      copyPartialSums(s, frame, w, /*load=*/true, [&](int64_t r, int64_t v) { return accs[r * nvec + v]; });
      b_.CreateBr(start);
      b_.SetInsertPoint(start);
    }
    // Rows past the extent read the last row (their results are never stored).
    std::vector<llvm::Value*> rowIdx;
    for (int64_t r = 0; r < s.rows; ++r)
      rowIdx.push_back(b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(i0, i64(r)), i64(s.rowExtent - 1)));
    // Scratch elements per row (column) of a pack: k steps, or pairs of them.
    auto units = [&](int64_t steps) { return s.bf16Pairs ? (steps + 1) / 2 : steps; };
    llvm::Value* rowPanel =
        s.rowScratch >= 0 ? b_.CreateMul(index(s.blockRow), i64(units(s.rowPackWhole ? s.k.extent : kw.length))) : nullptr;
    llvm::Value* colPanel = s.colScratch >= 0 ? b_.CreateMul(index(s.blockCol), i64(units(kw.length))) : nullptr;

    // bf16 pairs: one vdpbf16ps per accumulator vector adds the products of two k steps.
    auto pairLoop = [&](int64_t rows) {
      if (w != 16) throw std::logic_error("bf16-pair tile needs 16-float vectors");
      auto* words = llvm::FixedVectorType::get(b_.getInt32Ty(), 16);
      auto* pairsType = llvm::FixedVectorType::get(b_.getBFloatTy(), 32);
      llvm::Function* dot = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512);
      llvm::BranchInst* latch = countedLoop(k_.varNames[s.k.var] + ".pairs", i64(0), pairCount(kw), [&](llvm::Value* q) {
        std::vector<llvm::Value*> col(nvec);
        for (int64_t v = 0; v < nvec; ++v) {
          llvm::Value* at = b_.CreateAdd(b_.CreateAdd(colPanel, b_.CreateMul(q, i64(s.cols))), i64(v * w));
          col[v] = b_.CreateBitCast(b_.CreateAlignedLoad(words, scratchAt(s.colScratch, at), llvm::Align(64)), pairsType);
        }
        // A row pack of all of k (implicit GEMM) is read at the window's pairs (its windows start even).
        llvm::Value* pair = s.rowPackWhole ? b_.CreateAdd(b_.CreateSDiv(kw.start, i64(2)), q) : q;
        for (int64_t r = 0; r < rows; ++r) {
          llvm::Value* at = b_.CreateAdd(rowPanel, b_.CreateAdd(b_.CreateMul(pair, i64(s.rows)), i64(r)));
          llvm::Value* word = b_.CreateAlignedLoad(b_.getInt32Ty(), scratchAt(s.rowScratch, at), llvm::Align(4));
          llvm::Value* a = b_.CreateBitCast(b_.CreateVectorSplat(16, word), pairsType);
          for (int64_t v = 0; v < nvec; ++v) {
            llvm::AllocaInst* slot = accs[r * nvec + v];
            b_.CreateStore(b_.CreateCall(dot, {b_.CreateLoad(vt, slot), a, col[v]}), slot);
          }
        }
      });
      unrollBy(latch, s.kUnroll);
    };
    // An implicit GEMM's input read in place (Tile::colPadding): described as the pack it
    // replaces (nothing is stored), whose offset and mask tables the k loop reads as a pack's
    // would; lanes past the extent are masked by them too. Without tables (a strided
    // convolution, a short window) each step computes its lanes' conditions.
    std::optional<loops::Pack> view;
    PaddedTables tables;
    if (!s.colPadding.empty()) {
      view.emplace();
      view->var = s.colVar;
      view->base = s.colBase;
      view->count = view->panel = s.cols;
      view->extent = s.colExtent;
      view->k = s.k;
      view->value = s.value.args[1];
      view->padding = s.colPadding;
      view->lanes = w;
      tables = paddedTables(*view, j0, kw, w, ragged, /*maskTableAlone=*/false);
    }
    // A row operand read in place one element after another along k (attention's K[j, d]):
    // each row's first element found before the k loop, so that each step's load is that row
    // plus k. Computed in the loop, LLVM turned the rows' offsets into `or`s of disjoint bits
    // and then kept them out of the loads' addressing: 2 integer operations per broadcast.
    const Expr& rowOperand = s.value.args[0];
    const bool rowsByPointer = s.rowScratch < 0 && rowOperand.kind == ExprKind::Load &&
                               unitStrideIn(p_.buffers[rowOperand.buffer], rowOperand.index, s.k.var);
    std::vector<llvm::Value*> rowStarts;
    if (rowsByPointer) {
      vars_[s.k.var] = kw.start;
      for (int64_t r = 0; r < s.rows; ++r) {
        vars_[s.rowVar] = rowIdx[r];
        rowStarts.push_back(address(rowOperand.buffer, rowOperand.index));
      }
      vars_[s.k.var] = nullptr;
    }
    // The k loop over the tile's first `rows` rows (the others keep their zeros).
    auto kLoopOfRows = [&](bool masked, int64_t rows) {
      if (s.bf16Pairs) return pairLoop(rows);
      std::vector<llvm::Value*> masks(nvec, nullptr);
      for (int64_t v = 0; masked && v < nvec; ++v) masks[v] = laneMask(b_.CreateAdd(j0, i64(v * w)), w, s.colExtent);
      llvm::BranchInst* latch = countedLoop(k_.varNames[s.k.var], kw.start, kw.end, [&](llvm::Value* k) {
        vars_[s.k.var] = k;
        llvm::Value* kIn = b_.CreateSub(k, kw.start);
        std::vector<llvm::Value*> col(nvec);
        for (int64_t v = 0; v < nvec; ++v) {
          if (s.colScratch >= 0) {
            llvm::Value* at = b_.CreateAdd(b_.CreateAdd(colPanel, b_.CreateMul(kIn, i64(s.cols))), i64(v * w));
            col[v] = b_.CreateAlignedLoad(vt, scratchAt(s.colScratch, at), llvm::Align(4 * w));
          } else if (view && tables.offsets) {
            col[v] = fromStorage(tableLoad(tables, *view, k, v, w), p_.buffers[view->value.buffer].dtype);
          } else if (view) {
            llvm::Value* j = b_.CreateAdd(j0, i64(v * w));
            col[v] = columnVector(s.value.args[1], j, s.colVar, w, paddingMask(*view, j, w, ragged), /*padded=*/true);
          } else {
            col[v] = columnVector(s.value.args[1], b_.CreateAdd(j0, i64(v * w)), s.colVar, w, masks[v]);
          }
        }
        for (int64_t r = 0; r < rows; ++r) {
          llvm::Value* aValue;
          if (s.rowScratch >= 0) {
            llvm::Value* at = b_.CreateAdd(rowPanel, b_.CreateAdd(b_.CreateMul(s.rowPackWhole ? k : kIn, i64(s.rows)), i64(r)));
            aValue = b_.CreateLoad(ft_, scratchAt(s.rowScratch, at));
          } else if (rowsByPointer) {
            const DType dtype = p_.buffers[rowOperand.buffer].dtype;
            llvm::Type* stored = storageType(ctx_, dtype);
            aValue = fromStorage(b_.CreateAlignedLoad(stored, b_.CreateInBoundsGEP(stored, rowStarts[r], kIn), llvm::Align(elementAlign(dtype))),
                                 dtype);
          } else {
            vars_[s.rowVar] = rowIdx[r];
            aValue = expr(s.value.args[0]);
          }
          llvm::Value* a = b_.CreateVectorSplat(static_cast<unsigned>(w), aValue);
          for (int64_t v = 0; v < nvec; ++v) {
            llvm::AllocaInst* slot = accs[r * nvec + v];
            llvm::Value* sum = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {a, col[v], b_.CreateLoad(vt, slot)});
            b_.CreateStore(sum, slot);
          }
        }
      });
      unrollBy(latch, s.kUnroll);
    };
    // A tile with only the edge's rows inside the extent (Tile::edgeRows) multiplies those rows
    // alone: with the last row repeated it took as long as a whole tile (SGEMM M = 128 in 6-row
    // tiles ran as long as M = 132).
    auto kLoop = [&](bool masked) {
      if (s.edgeRows <= 0) return kLoopOfRows(masked, s.rows);
      auto* whole = llvm::BasicBlock::Create(ctx_, "tile.rows", fn_);
      auto* edge = llvm::BasicBlock::Create(ctx_, "tile.edge.rows", fn_);
      auto* joined = llvm::BasicBlock::Create(ctx_, "tile.rows.end", fn_);
      b_.CreateCondBr(b_.CreateICmpSLE(rowsIn, i64(s.edgeRows)), edge, whole);
      b_.SetInsertPoint(whole);
      kLoopOfRows(masked, s.rows);
      b_.CreateBr(joined);
      b_.SetInsertPoint(edge);
      kLoopOfRows(masked, s.edgeRows);
      b_.CreateBr(joined);
      b_.SetInsertPoint(joined);
    };
    if (s.colScratch >= 0 || view || !ragged) {
      kLoop(false);
    } else {
      // A panel reaching past the last column reads it with masked loads.
      auto* full = llvm::BasicBlock::Create(ctx_, "tile.full", fn_);
      auto* raggedBB = llvm::BasicBlock::Create(ctx_, "tile.ragged", fn_);
      auto* joined = llvm::BasicBlock::Create(ctx_, "tile.sum", fn_);
      b_.CreateCondBr(b_.CreateICmpSLE(b_.CreateAdd(j0, i64(s.cols)), i64(s.colExtent)), full, raggedBB);
      b_.SetInsertPoint(full);
      kLoop(false);
      b_.CreateBr(joined);
      b_.SetInsertPoint(raggedBB);
      kLoop(true);
      b_.CreateBr(joined);
      b_.SetInsertPoint(joined);
    }
    vars_[s.k.var] = nullptr;

    if (partialSums) savePartialSumsUnlessLast(s, frame, kw, w, [&](int64_t r, int64_t v) { return accs[r * nvec + v]; });

    // The epilogue, element by element over the part of the tile inside the extents.
    llvm::AllocaInst* spill = entryAlloca(ft_, s.rows * s.cols, "tile.c");
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t v = 0; v < nvec; ++v)
        b_.CreateAlignedStore(b_.CreateLoad(vt, accs[r * nvec + v]), b_.CreateConstInBoundsGEP1_64(ft_, spill, r * s.cols + v * w),
                              llvm::Align(4 * w));
    tileEpilogue(s, spill, i0, j0, rowsIn, colsIn);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  // for (v = start; v < end; ++v) with start/end constants, or [lo, hi) for the parallel loop; a
  // loop whose sums keep lanes (sum-lanes, loops/SumLanes.h) runs as two (iterationsOf).
  void loop(const Loop& l, bool usesChunk) {
    if (l.pairs) return pairedLoop(l);
    varExtents_[l.var] = l.extent;
    auto range = [&](llvm::Value* start, llvm::Value* end) {
      return countedLoop(k_.varNames[l.var], start, end, [&](llvm::Value* iv) {
        vars_[l.var] = iv;
        const std::vector<loops::Prefetch>* outer = prefetched_;
        if (!l.prefetch.empty()) prefetched_ = &l.prefetch;
        for (const Stmt& c : l.body) stmt(c, false);
        prefetched_ = outer;
        vars_[l.var] = nullptr;
      });
    };
    if (usesChunk && l.phases > 1) phasedIterations(l, lo_, hi_, range);
    else if (usesChunk) markLoop(range(lo_, hi_), l);  // a parallel loop keeps no sum lanes
    else iterationsOf(l, l.extent, range);
    varExtents_[l.var] = 0;
  }

  // Iterations [from, to) of a loop split into phases (split-chains, loops/SplitChains.h):
  // blocks of l.phaseBlock iterations and one shorter block for the rest, each emitted as
  // l.phases copies of the loop that splitPhases (SplitPhases.h) cuts into the stretches of its
  // chain. The bounds are constants, or a thread's chunk of a parallel loop.
  template <class Range>
  void phasedIterations(const Loop& l, llvm::Value* from, llvm::Value* to, Range range) {
    const int64_t block = l.phaseBlock;
    auto oneBlock = [&](llvm::Value* start, llvm::Value* length) {
      std::vector<PhaseCopy> copies;
      std::vector<llvm::BranchInst*> latches;
      for (int p = 0; p < l.phases; ++p) {
        llvm::BranchInst* latch = range(start, b_.CreateAdd(start, length, "", true, true));
        auto* header = latch->getSuccessor(0);
        copies.push_back({latch->getParent(), llvm::cast<llvm::PHINode>(&header->front())});
        latches.push_back(latch);
      }
      if (!splitPhases(*fn_, copies, start, block))  // cannot happen for the loops split-chains picks; one whole copy then
        for (size_t p = 0; p + 1 < copies.size(); ++p) emptyLoopBody(*copies[p].body, copies[p].iv);
      for (llvm::BranchInst* latch : latches) markLoop(latch, l);
    };
    llvm::Value* count = b_.CreateSub(to, from, "", true, true);
    llvm::Value* whole = b_.CreateSDiv(count, i64(block));
    countedLoop(k_.varNames[l.var] + ".blocks", i64(0), whole,
                [&](llvm::Value* b) { oneBlock(b_.CreateAdd(from, b_.CreateMul(b, i64(block), "", true, true), "", true, true), i64(block)); });
    llvm::Value* rest = b_.CreateSRem(count, i64(block));
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(rest); !c || !c->isZero())
      oneBlock(b_.CreateAdd(from, b_.CreateMul(whole, i64(block), "", true, true), "", true, true), rest);
  }

  // Iterations [0, n) of loop `l`, each range of them emitted by range(from, to): one loop
  // marked as `l` says; or, where its sums keep lanes (loops/SumLanes.h), the first
  // sumLanes * m iterations as m rounds of sumLanes, iteration r * sumLanes + q adding its terms
  // to lane q of an array per summed accumulator (lane 0 starts from the accumulator's value, the
  // others from the identity), then the lanes given up in the fixed order (giveUpLanes), then the
  // rest of the iterations in order. No update reassociates: each lane adds its own terms in
  // order, so the bits are the same however LLVM widens, interleaves or unrolls the rounds, on
  // every CPU. A round is widened to the target's vectors, interleaved across all of them when
  // its lanes fill at most 4 vectors, or 8 when no term is a transcendental, and then unrolled
  // whole (the lanes stay in registers: with AVX-512 the code LLVM's own 4-vector reduction
  // made); otherwise 4 vectors at a time with the lanes in memory, since 8 AVX2 copies of an exp
  // would not fit 16 registers.
  template <class Range>
  void iterationsOf(const Loop& l, int64_t n, Range range) {
    if (l.sumLanes == 0) return l.phases > 1 ? phasedIterations(l, i64(0), i64(n), range) : markLoop(range(i64(0), i64(n)), l);
    const int64_t lanes = l.sumLanes, split = n - n % lanes;
    const int64_t width = opts_.vectorFloats / (ft_->isDoubleTy() ? 2 : 1);
    std::map<int, llvm::AllocaInst*> arrays;
    std::vector<std::pair<int, ReduceKind>> summed;
    bool heavy = false;
    loops::forEachStmt(l.body, [&](const Stmt& s) {
      if (const Expr* v = loops::valueOf(s)) heavy = heavy || loops::callsTranscendental(*v);
      if (!s.is<AccUpdate>()) return;
      const AccUpdate& u = s.as<AccUpdate>();
      if ((u.reduce != ReduceKind::Sum && u.reduce != ReduceKind::Prod) || arrays.count(u.acc)) return;
      arrays[u.acc] = entryAlloca(ft_, lanes, "acc" + std::to_string(u.acc) + ".lanes");
      summed.push_back({u.acc, u.reduce});
    });
    llvm::Type* laneVector = llvm::FixedVectorType::get(ft_, static_cast<unsigned>(lanes));
    for (auto [acc, reduce] : summed) {
      llvm::Value* start = b_.CreateInsertElement(b_.CreateVectorSplat(static_cast<unsigned>(lanes), laneIdentity(reduce)),
                                                  b_.CreateLoad(ft_, accs_[acc]), uint64_t{0});
      b_.CreateAlignedStore(start, arrays[acc], llvm::Align(64));
    }
    const bool whole = lanes / width <= 4 || (!heavy && lanes / width <= 8);
    llvm::BranchInst* rounds = countedLoop(k_.varNames[l.var] + ".round", i64(0), i64(split / lanes), [&](llvm::Value* r) {
      laneBase_ = b_.CreateMul(r, i64(lanes), "", true, true);
      sumLanes_ = arrays;
      llvm::BranchInst* round = range(laneBase_, b_.CreateAdd(laneBase_, i64(lanes), "", true, true));
      sumLanes_.clear();
      setLoopHints(round, {loopHint("llvm.loop.vectorize.enable", b_.getTrue()), loopHint("llvm.loop.vectorize.width", b_.getInt32(static_cast<uint32_t>(width))),
                           loopHint("llvm.loop.interleave.count", b_.getInt32(static_cast<uint32_t>(whole ? lanes / width : kInterleaveVectors))),
                           loopHint("llvm.loop.unroll.disable", b_.getTrue()),
                           followup("llvm.loop.vectorize.followup_vectorized", {attribute(whole ? "llvm.loop.unroll.full" : "llvm.loop.unroll.disable")})});
    });
    markInOrder(rounds);
    for (auto [acc, reduce] : summed)
      b_.CreateStore(giveUpLanes(reduce, b_.CreateAlignedLoad(laneVector, arrays[acc], llvm::Align(64)), loops::sumLaneGroup(k_.computeType)), accs_[acc]);
    if (split < n) markInOrder(range(i64(split), i64(n)));
  }

  // The identity of a lane: -0 for a sum (x + -0 is x for every x, +0 too), 1 for a product.
  llvm::Value* laneIdentity(ReduceKind r) {
    return r == ReduceKind::Sum ? llvm::ConstantFP::getNegativeZero(ft_) : llvm::ConstantFP::get(ft_, 1.0);
  }

  // The lanes of `v` reduced to one value in the order loops/SumLanes.h fixes: its groups of
  // `group` lanes combined lane by lane, first to last, then the group's lanes in a halving
  // tree (lane j with lane j + half).
  llvm::Value* giveUpLanes(ReduceKind r, llvm::Value* v, int64_t group) {
    auto lanesOf = [&](llvm::Value* x, int64_t from, int64_t count) {
      std::vector<int> mask;
      for (int64_t i = 0; i < count; ++i) mask.push_back(static_cast<int>(from + i));
      return b_.CreateShuffleVector(x, mask);
    };
    const int64_t lanes = llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements();
    llvm::Value* acc = lanesOf(v, 0, group);
    for (int64_t g = group; g < lanes; g += group) acc = combine(r, acc, lanesOf(v, g, group));
    for (int64_t half = group / 2; half >= 1; half /= 2) acc = combine(r, lanesOf(acc, 0, half), lanesOf(acc, half, half));
    return b_.CreateExtractElement(acc, uint64_t{0});
  }

  // One element per iteration, as written (a `scalar` loop, the rest of a sum's loop).
  void markInOrder(llvm::BranchInst* latch) {
    setLoopHints(latch, {loopHint("llvm.loop.vectorize.width", b_.getInt32(1)), loopHint("llvm.loop.interleave.count", b_.getInt32(1))});
  }

  // ---- values --------------------------------------------------------------------------------
  static unsigned elementAlign(DType t) { return static_cast<unsigned>(dtypeBytes(t)); }
  // The alignment the code may assume of tensor i's base: 64 bytes for what texc allocates
  // (outputs and intermediates: the arena and the runtime align them; streaming stores need it),
  // the element's size for a program input, so that a caller's array (numpy aligns to 16 bytes)
  // is read in place. Every load of an input is element-aligned anyway (vmovups).
  uint64_t bufferAlign(size_t i) const {
    return p_.buffers[i].kind == loops::BufferKind::Input ? elementAlign(p_.buffers[i].dtype) : 64;
  }

  llvm::Value* convert(llvm::Value* v, llvm::Type* to) {
    if (v->getType() == to) return v;
    if (v->getType()->getPrimitiveSizeInBits() < to->getPrimitiveSizeInBits()) return b_.CreateFPExt(v, to);
    return b_.CreateFPTrunc(v, to);
  }

  // Storage <-> compute type. bf16: the high half of an f32; stores round to nearest even and
  // keep NaN a (quiet) NaN.
  // Scalars or vectors (the tile's packs widen whole vectors).
  llvm::Value* fromStorage(llvm::Value* v, DType t) {
    llvm::Type* to = v->getType()->getWithNewType(ft_);
    if (t != DType::BF16) return convert(v, to);
    llvm::Value* bits = b_.CreateShl(b_.CreateZExt(v, v->getType()->getWithNewType(b_.getInt32Ty())), 16);
    return convert(b_.CreateBitCast(bits, v->getType()->getWithNewType(b_.getFloatTy())), to);
  }

  // The f32 bits of `f` (a float) rounded to bf16 (nearest, ties to even), low half still to be
  // cleared: adding 0x7FFF, or 0x8000 when the kept half's last bit is set, carries into the kept
  // half exactly when rounding goes up. No shifts, which share pipes with the FMAs on some cores:
  // the bit test is a mask compare and the choice of addend a blend. A NaN gets the quiet bit
  // instead, so that no carry turns it into an infinity.
  llvm::Value* bf16RoundedBits(llvm::Value* f) {
    llvm::Type* i32 = f->getType()->getWithNewType(b_.getInt32Ty());
    auto k = [&](uint32_t v) { return llvm::ConstantInt::get(i32, v); };
    llvm::Value* bits = b_.CreateBitCast(f, i32);
    llvm::Value* lastKeptSet = b_.CreateICmpNE(b_.CreateAnd(bits, k(0x10000)), k(0));
    llvm::Value* rounded = b_.CreateAdd(bits, b_.CreateSelect(lastKeptSet, k(0x8000), k(0x7FFF)));
    return b_.CreateSelect(b_.CreateFCmpUNO(f, f), b_.CreateOr(bits, k(0x400000)), rounded);
  }

  llvm::Value* toStorage(llvm::Value* v, DType t) {
    if (t != DType::BF16) return convert(v, storageType(ctx_, t));
    llvm::Value* f = convert(v, b_.getFloatTy());
    return b_.CreateTrunc(b_.CreateLShr(bf16RoundedBits(f), 16), b_.getInt16Ty());
  }

  // A value rounded to bf16 and widened back (a fused bf16 producer's rounding), without the
  // 16-bit round trip: the rounded bits with the low half cleared.
  llvm::Value* roundThroughBf16(llvm::Value* v) {
    llvm::Value* f = convert(v, b_.getFloatTy());
    llvm::Value* bits = b_.CreateAnd(bf16RoundedBits(f), llvm::ConstantInt::get(f->getType()->getWithNewType(b_.getInt32Ty()), 0xFFFF0000u));
    return convert(b_.CreateBitCast(bits, f->getType()), v->getType());
  }

  llvm::Value* index(const IndexExpr& ix) {
    switch (ix.kind) {
      case IndexExpr::Kind::Const: return llvm::ConstantInt::get(i64_, ix.constant);
      case IndexExpr::Kind::Var: return vars_[ix.var];
      case IndexExpr::Kind::Add: return b_.CreateAdd(index(ix.ops[0]), index(ix.ops[1]), "", false, true);
      case IndexExpr::Kind::Sub: return b_.CreateSub(index(ix.ops[0]), index(ix.ops[1]), "", false, true);
      case IndexExpr::Kind::Mul: return b_.CreateMul(index(ix.ops[0]), llvm::ConstantInt::get(i64_, ix.constant), "", false, true);
      case IndexExpr::Kind::FloorDiv:
      case IndexExpr::Kind::Mod: {
        // Floor semantics from truncating division: adjust when the remainder is negative.
        llvm::Value* a = index(ix.ops[0]);
        llvm::Value* c = llvm::ConstantInt::get(i64_, ix.constant);
        llvm::Value* r = b_.CreateSRem(a, c);
        llvm::Value* neg = b_.CreateICmpSLT(r, llvm::ConstantInt::get(i64_, 0));
        if (ix.kind == IndexExpr::Kind::Mod) return b_.CreateSelect(neg, b_.CreateAdd(r, c), r);
        llvm::Value* q = b_.CreateSDiv(a, c);
        return b_.CreateSub(q, b_.CreateZExt(neg, i64_));
      }
    }
    return nullptr;
  }

  // The flat element offset of buffer[idx] in affine form, with the floor divisions and modulos
  // that cancel merged (mergedAffineForm, core/IndexAlgebra.h). The tile pass indexes an image by
  // its pixel p as [p / W + r - 1, p % W + s - 1]: the offset is then p + (r - 1) * W + s - 1,
  // plainly linear in p, and neighbouring vectors of a pack share one base instead of each
  // computing its own division; a conv's weights read as W[k, crs / 9, (crs / 3) % 3, crs % 3]
  // are 576 k + crs, a row read in order. The form's atoms point into `offset`, the offset as an
  // index expression: sum(stride * idx[d]), last dimension first.
  static AffineForm linearOffset(const loops::Buffer& buf, const std::vector<IndexExpr>& idx, IndexExpr& offset) {
    offset = IndexExpr::makeConst(0);
    int64_t stride = 1;
    for (size_t d = idx.size(); d-- > 0;) {
      offset = IndexExpr::makeNode(IndexExpr::Kind::Add, 0, {std::move(offset), IndexExpr::makeNode(IndexExpr::Kind::Mul, stride, {idx[d]})});
      stride *= buf.shape[d];
    }
    return mergedAffineForm(offset);
  }


  // The address of buffer[idx]: its linear form, term by term.
  llvm::Value* address(int buffer, const std::vector<IndexExpr>& idx, bool inBounds = true) {
    const loops::Buffer& buf = p_.buffers[buffer];
    IndexExpr flat;
    AffineForm form = linearOffset(buf, idx, flat);
    llvm::Value* offset = nullptr;
    for (const AffineTerm& t : form.terms) {
      llvm::Value* term = t.atom ? index(*t.atom) : vars_[t.var];
      if (t.coeff != 1) term = b_.CreateMul(term, i64(t.coeff), "", false, true);
      offset = offset ? b_.CreateAdd(offset, term, "", false, true) : term;
    }
    if (!offset) offset = i64(form.constant);
    else if (form.constant != 0) offset = b_.CreateAdd(offset, i64(form.constant), "", false, true);
    if (!inBounds) return b_.CreateGEP(storageType(ctx_, buf.dtype), buffers_[buffer], offset);
    return b_.CreateInBoundsGEP(storageType(ctx_, buf.dtype), buffers_[buffer], offset);
  }

  llvm::Value* identity(ReduceKind r) {
    double inf = std::numeric_limits<double>::infinity();
    switch (r) {
      case ReduceKind::Sum: return llvm::ConstantFP::get(ft_, 0.0);
      case ReduceKind::Prod: return llvm::ConstantFP::get(ft_, 1.0);
      case ReduceKind::Max: return llvm::ConstantFP::get(ft_, -inf);
      case ReduceKind::Min: return llvm::ConstantFP::get(ft_, inf);
    }
    return nullptr;
  }

  llvm::Value* combine(ReduceKind r, llvm::Value* acc, llvm::Value* term) {
    // A sum or product adds in the order written (the lanes of sum-lanes are an order too:
    // iterationsOf); a max or min is exact in any order.
    llvm::FastMathFlags fmf;
    if (r == ReduceKind::Max || r == ReduceKind::Min) fmf.setAllowReassoc();
    llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
    b_.setFastMathFlags(fmf);
    switch (r) {
      case ReduceKind::Sum: return b_.CreateFAdd(acc, term);
      case ReduceKind::Prod: return b_.CreateFMul(acc, term);
      case ReduceKind::Max:
      case ReduceKind::Min: {
        // One vmaxps/vminps per vector: NaNs are no concern here (a NaN term sets the
        // accumulator's NaN flag, AccUpdate, and a read of a flagged accumulator is NaN), nor is
        // the sign of a zero (a max over +0 and -0 may give either, as numpy's does).
        fmf.setNoNaNs();
        fmf.setNoSignedZeros();
        b_.setFastMathFlags(fmf);
        return b_.CreateBinaryIntrinsic(r == ReduceKind::Max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, acc, term);
      }
    }
    return nullptr;
  }

  // A loop over bf16 pairs (loops/PairBf16Lanes.h): for (k = 0; k < extent / 2; ++k), with the
  // loop variable at the pair's first element, 2k. Each statement runs for the even element and
  // then for the odd one; a store writes both as one word.
  void pairedLoop(const Loop& l) {
    varExtents_[l.var] = l.extent;
    iterationsOf(l, l.extent / 2, [&](llvm::Value* from, llvm::Value* to) { return pairRange(l, from, to); });  // lanes of pairs
    varExtents_[l.var] = 0;
  }

  // Pairs [from, to) of pairedLoop's loop.
  llvm::BranchInst* pairRange(const Loop& l, llvm::Value* from, llvm::Value* to) {
    return countedLoop(k_.varNames[l.var], from, to, [&](llvm::Value* pair) {
      vars_[l.var] = b_.CreateShl(pair, 1, "", true, true);
      pairVar_ = l.var;
      const std::vector<loops::Prefetch>* outer = prefetched_;
      if (!l.prefetch.empty()) prefetched_ = &l.prefetch;
      for (const Stmt& c : l.body) {
        if (!c.is<Store>()) {  // an update: the even element's term, then the odd one's
          for (pairLane_ = 0; pairLane_ < 2; ++pairLane_) stmt(c, false);
          continue;
        }
        const Store& st = c.as<Store>();
        const Expr& value = loops::valueToRound(p_, st);
        llvm::Value* half[2];
        for (pairLane_ = 0; pairLane_ < 2; ++pairLane_) half[pairLane_] = bf16RoundedBits(convert(expr(value), b_.getFloatTy()));
        llvm::Value* word = b_.CreateOr(b_.CreateLShr(half[0], 16), b_.CreateAnd(half[1], b_.getInt32(0xFFFF0000u)));
        llvm::StoreInst* store = b_.CreateAlignedStore(word, address(st.buffer, st.index), llvm::Align(2));
        if (st.streaming) {
          store->setMetadata(llvm::LLVMContext::MD_access_group, streamingStoreTag(m_));
          streamed_ = true;
        }
      }
      pairLane_ = 0;
      pairVar_ = -1;
      prefetched_ = outer;
      vars_[l.var] = nullptr;
    });
  }

  // A load of `e`'s element, tagged for a prefetch when its loop asks for one.
  llvm::LoadInst* loadTagged(const Expr& e, llvm::Type* type, unsigned align) {
    llvm::LoadInst* v = b_.CreateAlignedLoad(type, address(e.buffer, e.index), llvm::Align(align));
    if (prefetched_)
      for (const loops::Prefetch& f : *prefetched_)
        if (f.buffer == e.buffer) v->setMetadata(llvm::LLVMContext::MD_access_group, prefetchedLoadTag(m_, f.bytes));
    return v;
  }

  bool readsPairVar(const Expr& e) const {
    for (const IndexExpr& ix : e.index)
      if (texc::usesVar(ix, pairVar_)) return true;
    return false;
  }

  llvm::Value* expr(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Const: return llvm::ConstantFP::get(ft_, e.constant);
      case ExprKind::VarValue: {
        // A loop variable's value (a causal mask's j <= i): through i32 when its extent fits, as
        // the same float (exact either way below 2^31), because AVX2 converts 8 i32 lanes in one
        // instruction and i64 lanes only one by one.
        if (e.index.empty() && varExtents_[e.var] > 0 && varExtents_[e.var] <= std::numeric_limits<int32_t>::max())
          return b_.CreateSIToFP(b_.CreateTrunc(vars_[e.var], b_.getInt32Ty()), ft_);
        return b_.CreateSIToFP(e.index.empty() ? vars_[e.var] : index(e.index[0]), ft_);
      }
      case ExprKind::Load: {
        const loops::Buffer& buf = p_.buffers[e.buffer];
        if (pairVar_ >= 0 && readsPairVar(e)) {
          // A bf16 pair as one word: the even element is its low half moved up, the odd one its
          // high half with the low half cleared.
          llvm::Value* word = loadTagged(e, b_.getInt32Ty(), 2);
          llvm::Value* bits = pairLane_ == 0 ? b_.CreateShl(word, 16) : b_.CreateAnd(word, b_.getInt32(0xFFFF0000u));
          return convert(b_.CreateBitCast(bits, b_.getFloatTy()), ft_);
        }
        return fromStorage(loadTagged(e, storageType(ctx_, buf.dtype), elementAlign(buf.dtype)), buf.dtype);
      }
      case ExprKind::AccRead: {
        // A max or min that met a NaN is NaN (combine: the running value itself ignores NaNs).
        llvm::Value* v = b_.CreateLoad(ft_, accs_[e.acc]);
        llvm::Value* seen = b_.CreateLoad(b_.getInt1Ty(), accNaN_[e.acc]);
        return b_.CreateSelect(seen, llvm::ConstantFP::getNaN(ft_), v);
      }
      case ExprKind::Unary: {
        llvm::Value* a = expr(e.args[0]);
        return e.unaryOp == UnaryOp::Neg ? b_.CreateFNeg(a) : b_.CreateNot(a);
      }
      case ExprKind::Binary: {
        llvm::Value* a = expr(e.args[0]);
        llvm::Value* c = expr(e.args[1]);
        switch (e.binaryOp) {
          case BinaryOp::Add: return b_.CreateFAdd(a, c);
          case BinaryOp::Sub: return b_.CreateFSub(a, c);
          case BinaryOp::Mul: return b_.CreateFMul(a, c);
          // A division by a sum's reciprocal arrives as `a * (1 / s)` (reciprocal-of-sums, a graph
          // pass), so that fused and unfused kernels round alike; LLVM hoists `1 / s` out of the row.
          case BinaryOp::Div: return b_.CreateFDiv(a, c);
          case BinaryOp::Lt: return b_.CreateFCmpOLT(a, c);
          case BinaryOp::Le: return b_.CreateFCmpOLE(a, c);
          case BinaryOp::Gt: return b_.CreateFCmpOGT(a, c);
          case BinaryOp::Ge: return b_.CreateFCmpOGE(a, c);
          case BinaryOp::Eq: return b_.CreateFCmpOEQ(a, c);
          case BinaryOp::Ne: return b_.CreateFCmpUNE(a, c);
          case BinaryOp::And: return b_.CreateAnd(a, c);
          case BinaryOp::Or: return b_.CreateOr(a, c);
          case BinaryOp::Mod: break;
        }
        throw std::logic_error("'%' reached code generation");
      }
      case ExprKind::Call: return call(e);
    }
    return nullptr;
  }

  llvm::Value* call(const Expr& e) {
    std::vector<llvm::Value*> a;
    for (const Expr& x : e.args) a.push_back(expr(x));
    llvm::Value* zero = llvm::ConstantFP::get(ft_, 0.0);
    switch (e.builtin) {
      case Builtin::Sqrt: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a[0]);
      case Builtin::Rsqrt:
        return b_.CreateFDiv(llvm::ConstantFP::get(ft_, 1.0), b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a[0]));
      case Builtin::Relu: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a[0], zero);
      case Builtin::Abs: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a[0]);
      case Builtin::Floor: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, a[0]);
      case Builtin::Ceil: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, a[0]);
      case Builtin::Min: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a[0], a[1]);
      case Builtin::Max: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a[0], a[1]);
      case Builtin::Select: return b_.CreateSelect(a[0], a[1], a[2]);
      // A fused f16/bf16 producer's rounding: a store and a load of that type (expr is scalar).
      case Builtin::RoundF16: return fromStorage(toStorage(a[0], DType::F16), DType::F16);
      case Builtin::RoundBF16: return roundThroughBf16(a[0]);
      default: break;
    }
    MathFn fn;
    switch (e.builtin) {
      case Builtin::Exp: fn = MathFn::Exp; break;
      case Builtin::Log: fn = MathFn::Log; break;
      case Builtin::Tanh: fn = MathFn::Tanh; break;
      case Builtin::Sigmoid: fn = MathFn::Sigmoid; break;
      case Builtin::Erf: fn = MathFn::Erf; break;
      case Builtin::Sin: fn = MathFn::Sin; break;
      case Builtin::Cos: fn = MathFn::Cos; break;
      case Builtin::Pow: fn = MathFn::Pow; break;
      default: throw std::logic_error("unhandled builtin in code generation");
    }
    // -O0 calls libm (scalar, exact to an ulp); otherwise inline approximations that vectorize.
    if (opts_.optLevel == 0) return emitMathLibm(b_, m_, fn, a);
    // An exp whose argument was proved <= 0 (nonpositive-exp): the same bits, fewer operations.
    if (e.builtin == Builtin::Exp && e.nonPositiveArg) {
      return emitExpNonPositive(b_, a[0], opts_.math, opts_.expUnderflow);
    }
    return emitMath(b_, fn, a, opts_.math);
  }

  const LoopProgram& p_;
  const Kernel& k_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const CodeGenOptions& opts_;
  llvm::Type* ft_;
  llvm::Type* i64_;
  llvm::Function* fn_ = nullptr;
  bool streamed_ = false;  // a non-temporal store was emitted: the body ends with sfence
  const std::vector<loops::Prefetch>* prefetched_ = nullptr;  // the loop being emitted: loads to prefetch
  int pairVar_ = -1;   // the variable of the bf16 pair loop being emitted (pairedLoop), or -1
  int pairLane_ = 0;   // which element of the pair the value being built is for: 0 even, 1 odd
  llvm::Value* innermostIv_ = nullptr;  // the induction variable of the innermost countedLoop being emitted
  llvm::Value* laneBase_ = nullptr;     // the first iteration of the round of sum lanes being emitted
  std::map<int, llvm::AllocaInst*> sumLanes_;  // in a round of sum lanes: each summed accumulator's lanes
  llvm::Value* pairOrder_ = nullptr;  // interleaveWords's permute indices, made opaque once
  std::vector<llvm::Value*> buffers_;
  llvm::Value* lo_ = nullptr;
  llvm::Value* hi_ = nullptr;
  std::vector<llvm::AllocaInst*> accs_;
  std::vector<llvm::AllocaInst*> accNaN_;  // per accumulator: a max or min has met a NaN
  std::vector<llvm::Value*> scratch_;
  // Larger scratch (im2col's patch matrix) is allocated on the heap.
  static constexpr int64_t kStackScratchBytes = int64_t{4} << 20;
  std::vector<llvm::Value*> vars_;
  // The extent of each loop variable while its loop is being emitted (0: not known): a value in
  // [0, extent) that fits 32 bits converts to float through i32.
  std::vector<int64_t> varExtents_;
  llvm::DIBuilder* di_ = nullptr;  // with CodeGenOptions::stmtLines: the module's debug info
  llvm::DIFile* diFile_ = nullptr;
  llvm::DIScope* scope_ = nullptr;  // the function being emitted
};

}  // namespace
}  // namespace loops

std::unique_ptr<llvm::Module> generateLLVM(const loops::LoopProgram& program, llvm::LLVMContext& context,
                                           const CodeGenOptions& options) {
  auto module = std::make_unique<llvm::Module>("texc", context);
  std::unique_ptr<llvm::DIBuilder> di;
  llvm::DIFile* file = nullptr;
  if (options.stmtLines) {
    // Line tables only: no variables or types, just each instruction's statement.
    module->addModuleFlag(llvm::Module::Warning, "Debug Info Version", llvm::DEBUG_METADATA_VERSION);
    module->addModuleFlag(llvm::Module::Warning, "Dwarf Version", 4);
    di = std::make_unique<llvm::DIBuilder>(*module);
    file = di->createFile("loops", ".");
    di->createCompileUnit(llvm::dwarf::DW_LANG_C, file, "texc", /*isOptimized=*/true, "", 0, llvm::StringRef(),
                          llvm::DICompileUnit::LineTablesOnly);
  }
  for (const loops::Kernel& k : program.kernels) loops::KernelGen(program, k, *module, options, di.get(), file).run();
  if (di) di->finalize();
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*module, &os)) throw std::logic_error("generated LLVM IR is invalid: " + os.str());
  return module;
}

}  // namespace texc
