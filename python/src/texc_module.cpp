// _texc: the Python module's native part (docs/python.md). It drives the same code as the command
// line (compiler/driver): compileProgram, the JIT, the reference and its bounds, explain, compare
// and explore. The Python package (python/texc/__init__.py) wraps it.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/backend/llvm/CpuExecutable.h"
#include "compiler/driver/Commands.h"
#include "compiler/driver/Execution.h"
#include "compiler/driver/Frontend.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/Pipeline.h"
#include "runtime/Buffer.h"
#include "runtime/ThreadPool.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace texc {
namespace {

// Usage errors become ValueError, run-time failures RuntimeError.
[[noreturn]] void raiseCommandError(const CommandError& e) {
  if (e.exitCode == kExitUsage) throw nb::value_error(e.message.c_str());
  throw std::runtime_error(e.message);
}

template <typename F>
auto translating(F f) {
  try {
    return f();
  } catch (const CommandError& e) {
    raiseCommandError(e);
  }
}

bool dtypeMatches(nb::dlpack::dtype d, DType t) {
  using nb::dlpack::dtype_code;
  auto code = static_cast<dtype_code>(d.code);
  if (d.lanes != 1) return false;
  switch (t) {
    case DType::F32: return code == dtype_code::Float && d.bits == 32;
    case DType::F64: return code == dtype_code::Float && d.bits == 64;
    case DType::F16: return code == dtype_code::Float && d.bits == 16;
    // numpy has no bfloat16: its bit patterns as uint16 are accepted too.
    case DType::BF16: return d.bits == 16 && (code == dtype_code::Bfloat || code == dtype_code::UInt);
  }
  return false;
}

std::string describeDtype(nb::dlpack::dtype d) {
  using nb::dlpack::dtype_code;
  std::string kind;
  switch (static_cast<dtype_code>(d.code)) {
    case dtype_code::Int: kind = "int"; break;
    case dtype_code::UInt: kind = "uint"; break;
    case dtype_code::Float: kind = "float"; break;
    case dtype_code::Bfloat: kind = "bfloat"; break;
    case dtype_code::Complex: kind = "complex"; break;
    case dtype_code::Bool: kind = "bool"; break;
    default: kind = "dtype code " + std::to_string(d.code); break;
  }
  return fmt::format("{}{}", kind, d.bits);
}

const char* numpyName(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F64: return "float64";
    case DType::F16: return "float16";
    case DType::BF16: return "uint16";
  }
  return "float32";
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

nb::dlpack::dtype numpyDtype(DType t) {
  switch (t) {
    case DType::F32: return nb::dtype<float>();
    case DType::F64: return nb::dtype<double>();
    case DType::F16: return nb::dlpack::dtype{static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::BF16: return nb::dtype<uint16_t>();  // bit patterns (numpy has no bfloat16)
  }
  return nb::dtype<float>();
}

// A numpy array over a texc Buffer (64-byte aligned, as the kernels require), which it then owns.
nb::object arrayOwning(Buffer&& buffer, const std::vector<int64_t>& shape, nb::dlpack::dtype dtype) {
  auto* owned = new Buffer(std::move(buffer));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Buffer*>(p); });
  std::vector<size_t> extents(shape.begin(), shape.end());
  return nb::cast(nb::ndarray<nb::numpy>(owned->data(), extents.size(), extents.data(), owner, nullptr, dtype));
}

using AnyArray = nb::ndarray<nb::ro, nb::device::cpu>;

bool cContiguous(const AnyArray& a) {
  int64_t expected = 1;
  for (size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(d));
  }
  return true;
}

// Copies a strided array of `elem`-byte elements into dense C order at `dst`.
void gather(const std::byte* src, const AnyArray& a, size_t dim, size_t elem, std::byte*& dst) {
  if (a.ndim() == 0) {
    std::memcpy(dst, src, elem);
    dst += elem;
    return;
  }
  for (size_t i = 0; i < a.shape(dim); ++i) {
    const std::byte* at = src + static_cast<int64_t>(i) * a.stride(dim) * static_cast<int64_t>(elem);
    if (dim + 1 == a.ndim()) {
      std::memcpy(dst, at, elem);
      dst += elem;
    } else {
      gather(at, a, dim + 1, elem, dst);
    }
  }
}

// The compiler's one-time set-up (LLVM's targets, the CPU tables, the host model) is not meant for
// two threads at once: compiles are serialised, runs are not. Taken with the GIL released, or
// held by code that never takes the GIL while holding this.
std::mutex& compileMutex() {
  static std::mutex m;
  return m;
}

struct PassRecordPy {
  std::string name;
  bool changed = false;
  double ms = 0;
  std::string text;
};

struct Settings {
  std::string name;  // the path, or "<string>"
  std::optional<std::string> source;
  std::vector<std::string> defines;
  std::string fuse, cpu, math, schedule;
  int threads = 0;

  ProgramOptions options() const {
    ProgramOptions o;
    o.file = name;
    o.sourceText = source;
    o.defines = defines;
    o.fuse = fuse;
    o.math = math;
    o.pipeline.cpu = cpu;
    o.schedulePath = schedule;
    return o;
  }
};

nb::list diagnosticsOf(const Compilation& c) {
  nb::list out;
  for (const Diagnostic& d : c.diags->diagnostics()) {
    const char* sev = d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warning" : "note";
    out.append(nb::make_tuple(d.range.begin.line, d.range.begin.column, sev, d.message));
  }
  return out;
}

// A compiled program: its IR, its JIT-compiled kernels and the memory of its intermediates.
class CompiledProgram {
 public:
  Settings settings;
  std::unique_ptr<Compilation> compilation;
  std::unique_ptr<CpuExecutable> exe;
  std::unique_ptr<ThreadPool> pool;
  const Program* program = nullptr;
  Buffer arena;
  std::vector<Buffer> unplanned;   // intermediates the plan does not place, by tensor id
  std::vector<void*> baseTable;    // intermediates filled in; inputs and outputs per call
  std::vector<uintptr_t> lastTable;
  std::mutex runMutex;             // the arena serves one run at a time
  std::optional<std::vector<PassRecordPy>> records;

  void prepareMemory() {
    const Program& p = *program;
    const loops::MemoryPlan* plan = compilation->state.memoryPlan ? &*compilation->state.memoryPlan : nullptr;
    if (plan) arena = Buffer(static_cast<size_t>(plan->arenaBytes));
    unplanned.resize(p.tensors.size());
    baseTable.assign(p.tensors.size(), nullptr);
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      const TensorInfo& t = p.tensors[i];
      if (t.isInput || t.isOutput) continue;
      if (const loops::PlannedTemp* placed = plan ? plan->find(static_cast<int>(i)) : nullptr) {
        baseTable[i] = arena.data() + placed->offset;
      } else {
        unplanned[i] = Buffer(byteSize(elemTypeOf(t.dtype), t.shape));
        baseTable[i] = unplanned[i].data();
      }
    }
  }

  // Runs the kernels on `inputs` (by name); `out`: arrays to write the outputs into. Returns
  // {name: array}. `keep`: the outputs as Tensors too (for check).
  nb::dict run(nb::dict inputs, nb::object out, std::vector<Tensor>* keep);

  const std::vector<PassRecordPy>& passRecords();
};

nb::object numpyModule() {
  static nb::object np = nb::module_::import_("numpy");
  return np;
}

nb::dict CompiledProgram::run(nb::dict inputs, nb::object out, std::vector<Tensor>* keep) {
  const Program& p = *program;
  std::vector<void*> table = baseTable;
  std::vector<Buffer> copies;                // inputs that could not be used in place
  std::vector<AnyArray> held;                // keeps the caller's arrays alive during the run
  size_t given = 0;
  for (int id : p.inputs) {
    const TensorInfo& t = p.tensors[id];
    nb::str key(t.name.c_str());
    if (!inputs.contains(key))
      throw nb::type_error(fmt::format("missing input '{}' ({} {})", t.name, dtypeName(t.dtype), shapeText(t.shape)).c_str());
    ++given;
    nb::handle obj = inputs[key];
    AnyArray a;
    if (!nb::try_cast(obj, a, false)) {
      // Anything numpy can make an array of (lists, scalars, objects with __array__).
      nb::object conv;
      try {
        conv = numpyModule().attr("asarray")(obj, nb::str(numpyName(t.dtype)));
      } catch (const nb::python_error&) {
        throw nb::type_error(fmt::format("input '{}': expected an array of {} {}, got an object of type {}", t.name,
                                         dtypeName(t.dtype), shapeText(t.shape), nb::inst_name(obj).c_str()).c_str());
      }
      if (!nb::try_cast(conv, a, false))
        throw nb::type_error(fmt::format("input '{}': expected an array of {} {}, got an object of type {}", t.name,
                                         dtypeName(t.dtype), shapeText(t.shape), nb::inst_name(obj).c_str()).c_str());
    }
    std::vector<int64_t> shape(a.ndim());
    for (size_t d = 0; d < a.ndim(); ++d) shape[d] = static_cast<int64_t>(a.shape(d));
    if (!dtypeMatches(a.dtype(), t.dtype))
      throw nb::type_error(fmt::format("input '{}': expected dtype {} with shape {}, got dtype {} with shape {}", t.name,
                                       dtypeName(t.dtype), shapeText(t.shape), describeDtype(a.dtype()), shapeText(shape)).c_str());
    if (shape != t.shape)
      throw nb::value_error(fmt::format("input '{}': expected shape {} ({}), got shape {} ({})", t.name, shapeText(t.shape),
                                        dtypeName(t.dtype), shapeText(shape), describeDtype(a.dtype())).c_str());
    const auto* data = static_cast<const std::byte*>(a.data());
    if (cContiguous(a) && reinterpret_cast<uintptr_t>(data) % elemBytes(elemTypeOf(t.dtype)) == 0) {
      // In place: the kernels only read inputs, and assume no more than the element's alignment
      // of them (CodeGenLLVM.cpp, bufferAlign).
      table[id] = const_cast<std::byte*>(data);
    } else {
      // Strided (or, from a raw buffer, not even element-aligned): one aligned, dense copy.
      size_t elem = elemBytes(elemTypeOf(t.dtype));
      copies.push_back(Buffer::uninitialized(byteSize(elemTypeOf(t.dtype), t.shape)));
      std::byte* dst = copies.back().data();
      gather(data, a, 0, elem, dst);
      table[id] = copies.back().data();
    }
    held.push_back(std::move(a));
  }
  if (given != inputs.size()) {
    for (auto [k, v] : inputs) {
      std::string name = nb::cast<std::string>(nb::str(k));
      int id = p.findTensor(name);
      if (id < 0 || !p.tensors[id].isInput)
        throw nb::type_error(fmt::format("the program has no input named '{}'", name).c_str());
    }
  }

  // Outputs: the caller's arrays (out=), else fresh 64-byte-aligned buffers.
  nb::dict result;
  std::vector<Buffer> fresh(p.outputs.size());
  std::vector<std::pair<void*, Buffer>> copyBack;  // unaligned out= arrays: written through a buffer
  nb::dict outs = out.is_none() ? nb::dict() : nb::cast<nb::dict>(out);
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    int id = p.outputs[k];
    const TensorInfo& t = p.tensors[id];
    size_t bytes = byteSize(elemTypeOf(t.dtype), t.shape);
    nb::str key(t.name.c_str());
    if (outs.contains(key)) {
      nb::ndarray<nb::device::cpu> o;
      if (!nb::try_cast(outs[key], o, false))
        throw nb::type_error(
            fmt::format("out '{}': expected a writable array of {} {}", t.name, dtypeName(t.dtype), shapeText(t.shape)).c_str());
      std::vector<int64_t> shape(o.ndim());
      for (size_t d = 0; d < o.ndim(); ++d) shape[d] = static_cast<int64_t>(o.shape(d));
      if (!dtypeMatches(o.dtype(), t.dtype))
        throw nb::type_error(fmt::format("out '{}': expected dtype {} with shape {}, got dtype {} with shape {}", t.name,
                                         dtypeName(t.dtype), shapeText(t.shape), describeDtype(o.dtype()), shapeText(shape))
                                 .c_str());
      AnyArray view(o);
      if (shape != t.shape || !cContiguous(view))
        throw nb::value_error(fmt::format("out '{}': expected a C-contiguous array of shape {} ({}), got shape {}{}", t.name,
                                          shapeText(t.shape), dtypeName(t.dtype), shapeText(shape),
                                          cContiguous(view) ? "" : ", not C-contiguous")
                                  .c_str());
      if (reinterpret_cast<uintptr_t>(o.data()) % Buffer::kAlignment == 0) {
        table[id] = o.data();
      } else {
        copyBack.emplace_back(o.data(), Buffer::uninitialized(bytes));
        table[id] = copyBack.back().second.data();
      }
      result[key] = outs[key];
    } else {
      fresh[k] = Buffer::uninitialized(bytes);
      table[id] = fresh[k].data();
    }
  }
  if (outs.size() > 0)
    for (auto [k, v] : outs) {
      std::string name = nb::cast<std::string>(nb::str(k));
      int id = p.findTensor(name);
      if (id < 0 || !p.tensors[id].isOutput) throw nb::type_error(fmt::format("out: the program has no output named '{}'", name).c_str());
    }

  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(runMutex);
    exe->run(table.data(), *pool);
    lastTable.assign(table.size(), 0);
    for (size_t i = 0; i < table.size(); ++i) lastTable[i] = reinterpret_cast<uintptr_t>(table[i]);
    for (auto& [dst, buf] : copyBack) std::memcpy(dst, buf.data(), buf.size());
  }

  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const TensorInfo& t = p.tensors[p.outputs[k]];
    if (keep) {
      Tensor copy = makeTensor(elemTypeOf(t.dtype), t.shape);
      std::memcpy(copy.data.data(), table[p.outputs[k]], copy.data.size());
      (*keep)[p.outputs[k]] = std::move(copy);
    }
    if (fresh[k].data()) result[nb::str(t.name.c_str())] = arrayOwning(std::move(fresh[k]), t.shape, numpyDtype(t.dtype));
  }
  if (keep)
    for (int id : p.inputs) {
      const TensorInfo& t = p.tensors[id];
      Tensor copy = makeTensor(elemTypeOf(t.dtype), t.shape);
      std::memcpy(copy.data.data(), table[id], copy.data.size());
      (*keep)[id] = std::move(copy);
    }
  return result;
}

// Compiles again up to the LLVM module, recording every pass and the IR after it (once, lazily).
const std::vector<PassRecordPy>& CompiledProgram::passRecords() {
  if (records) return *records;
  std::vector<PassRecordPy> out;
  ProgramOptions o = settings.options();
  CompileRequest request = translating([&] { return o.request(Stage::LLVM); });
  request.options.threads = settings.threads;
  request.printDiagnostics = false;
  std::string last;
  request.instrumentation.afterPass = [&](const PassInfo& pass, const CompileState& s, const PassTiming& t, const std::string&) {
    PassRecordPy r;
    r.name = pass.name;
    r.changed = t.changed;
    r.ms = t.ms;
    if (t.changed || last.empty()) last = printStage(s, pass.stage);
    r.text = last;
    out.push_back(std::move(r));
  };
  translating([&] {
    std::lock_guard<std::mutex> lock(compileMutex());
    return compileProgram(request);
  });
  records = std::move(out);
  return *records;
}

// std::cout's output while `f` runs, as a string (explain prints its report).
template <typename F>
std::string capturingStdout(F f) {
  std::ostringstream text;
  std::streambuf* old = std::cout.rdbuf(text.rdbuf());
  try {
    f();
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  return text.str();
}

Settings makeSettings(std::string name, std::optional<std::string> source, std::vector<std::string> defines, std::string fuse,
                      int threads, std::string cpu, std::string math, std::optional<std::string> schedule) {
  if (fuse != "none" && fuse != "elementwise" && fuse != "all")
    throw nb::value_error(fmt::format("fuse='{}': expected 'none', 'elementwise' or 'all'", fuse).c_str());
  if (math != "precise" && math != "fast") throw nb::value_error(fmt::format("math='{}': expected 'precise' or 'fast'", math).c_str());
  if (threads < 0) throw nb::value_error("threads must be >= 0 (0 or None: one per core)");
  Settings s;
  s.name = std::move(name);
  s.source = std::move(source);
  s.defines = std::move(defines);
  s.fuse = std::move(fuse);
  s.cpu = std::move(cpu);
  s.math = std::move(math);
  s.schedule = schedule.value_or("");
  s.threads = threads;
  return s;
}

// compile: (program, None, None) or, when the program has errors, (None, diagnostics, text).
nb::tuple compile(std::string name, std::optional<std::string> source, std::vector<std::string> defines, std::string fuse, int threads,
                  std::string cpu, std::string math, std::optional<std::string> schedule) {
  auto prog = std::make_unique<CompiledProgram>();
  prog->settings = makeSettings(std::move(name), std::move(source), std::move(defines), std::move(fuse), threads, std::move(cpu),
                                std::move(math), std::move(schedule));
  translating([&] {
    ProgramOptions o = prog->settings.options();
    CompileRequest request = o.request(Stage::LLVM);
    request.options.threads = threads;
    request.printDiagnostics = false;
    requireHostRuns(prog->settings.cpu);
    nb::gil_scoped_release release;  // the passes touch no Python object
    std::lock_guard<std::mutex> lock(compileMutex());
    prog->compilation = compileProgram(request);
    return 0;
  });
  Compilation& c = *prog->compilation;
  if (!c.ok) return nb::make_tuple(nb::none(), diagnosticsOf(c), c.diags->render(false));
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(compileMutex());
    prog->exe = CpuExecutable::load(std::move(c.state.llvmContext), std::move(c.state.llvmModule), *c.state.loops,
                                    c.state.options.optLevel, cpuTarget(prog->settings.cpu));
  }
  prog->program = &*c.state.graph;
  prog->pool = std::make_unique<ThreadPool>(threads);
  prog->prepareMemory();
  nb::list warnings = diagnosticsOf(c);
  std::string warningText = c.diags->render(false);
  return nb::make_tuple(nb::cast(prog.release(), nb::rv_policy::take_ownership), warnings, warningText);
}

nb::list tensorList(const Program& p, const std::vector<int>& ids) {
  nb::list out;
  for (int id : ids) {
    const TensorInfo& t = p.tensors[id];
    nb::list shape;
    for (int64_t e : t.shape) shape.append(e);
    out.append(nb::make_tuple(t.name, nb::tuple(shape), dtypeName(t.dtype)));
  }
  return out;
}

nb::object doublesArray(const std::vector<double>& values, const std::vector<int64_t>& shape) {
  Buffer b = Buffer::uninitialized(values.size() * sizeof(double));
  if (!values.empty()) std::memcpy(b.data(), values.data(), values.size() * sizeof(double));
  return arrayOwning(std::move(b), shape, nb::dtype<double>());
}

nb::list check(CompiledProgram& prog, nb::dict inputs) {
  const Program& p = *prog.program;
  std::vector<Tensor> tensors(p.tensors.size());
  nb::dict results = prog.run(inputs, nb::none(), &tensors);
  const Program& analysed = *prog.compilation->state.analysed;
  std::vector<RefTensor> refInputs;
  for (int id : p.inputs) refInputs.push_back({p.tensors[id].shape, toDoubles(tensors[id])});
  std::vector<OutputCheck> checks;
  CheckedReference ref;
  {
    nb::gil_scoped_release release;
    ref = referenceWithBounds(analysed, refInputs, effectiveMathMode(prog.compilation->state.options));
    checks = checkOutputs(p, tensors, analysed, ref);
  }
  nb::list out;
  for (size_t k = 0; k < checks.size(); ++k) {
    const OutputCheck& c = checks[k];
    int refId = analysed.outputs[k];
    nb::dict d;
    d["output"] = c.name;
    d["max_abs_error"] = c.error.maxAbs;
    d["max_rel_error"] = c.error.maxRel;
    d["within_bound"] = !c.beyond();
    d["elements"] = c.comparison.elements;
    d["beyond"] = c.comparison.mismatches;
    d["uncertain"] = c.comparison.uncertain;
    d["worst_ratio"] = c.comparison.worstRatio;
    d["worst_tolerance"] = c.comparison.worstAllowed;
    d["worst"] = describeWorst(c);
    d["value"] = results[nb::str(c.name.c_str())];
    d["reference"] = doublesArray(ref.values[refId].data, c.shape);
    d["bound"] = doublesArray(ref.bounds[refId], c.shape);
    out.append(d);
  }
  return out;
}

nb::list passes(CompiledProgram& prog) {
  nb::list out;
  for (const PassRecordPy& r : prog.passRecords()) {
    nb::dict d;
    d["name"] = r.name;
    d["changed"] = r.changed;
    d["time_ms"] = r.ms;
    d["text"] = r.text;
    out.append(d);
  }
  return out;
}

std::string explain(CompiledProgram& prog, std::string hw) {
  ExplainOptions o;
  o.program = prog.settings.options();
  o.hw = std::move(hw);
  return translating([&] {
    std::lock_guard<std::mutex> lock(compileMutex());
    return capturingStdout([&] { commandExplain(o); });
  });
}

nb::dict compare(CompiledProgram& prog, int repeat, uint64_t seed) {
  CompareOptions o;
  o.program = prog.settings.options();
  o.threads = prog.settings.threads;
  o.repeat = repeat;
  o.seed = seed;
  CompareReport report;
  std::ostringstream text;
  int status = translating([&] {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(compileMutex());
    return runCompare(o, text, &report);
  });
  nb::list variants;
  for (const CompareVariantResult& v : report.variants) {
    nb::dict d;
    d["variant"] = v.name;
    d["kernels"] = v.kernels;
    d["bytes"] = v.bytes;
    d["flops"] = v.flops;
    d["median_ms"] = v.medianMs;
    d["gbps"] = v.gbps;
    d["within_bound"] = v.withinBound;
    variants.append(d);
  }
  nb::dict out;
  out["variants"] = variants;
  out["table"] = report.table;
  out["text"] = text.str();
  out["status"] = status;
  return out;
}

std::string explorePage(CompiledProgram& prog, std::string path, bool measure) {
  ExploreOptions o;
  o.program = prog.settings.options();
  o.output = path;
  o.measure = measure;
  o.threads = prog.settings.threads;
  translating([&] {
    std::lock_guard<std::mutex> lock(compileMutex());
    return commandExplore(o);
  });
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int commandLine(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int status;
  {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(compileMutex());
    status = runCommandLine(static_cast<int>(args.size()), argv.data());
    std::cout.flush();
    std::cerr.flush();
  }
  return status;
}

nb::object alignedEmpty(std::vector<int64_t> shape, std::string dtype) {
  DType t;
  if (dtype == "f32" || dtype == "float32") t = DType::F32;
  else if (dtype == "f64" || dtype == "float64") t = DType::F64;
  else if (dtype == "f16" || dtype == "float16") t = DType::F16;
  else if (dtype == "bf16") t = DType::BF16;
  else throw nb::type_error(fmt::format("dtype '{}': expected f32, f64, f16 or bf16", dtype).c_str());
  for (int64_t e : shape)
    if (e < 0) throw nb::value_error("negative extent");
  return arrayOwning(Buffer(byteSize(elemTypeOf(t), shape)), shape, numpyDtype(t));
}

}  // namespace
}  // namespace texc

NB_MODULE(_texc, m) {
  using namespace texc;
  m.doc() = "texc's native module; use the package texc (docs/python.md).";
  nb::class_<CompiledProgram>(m, "CompiledProgram")
      .def_prop_ro("inputs", [](CompiledProgram& p) { return tensorList(*p.program, p.program->inputs); })
      .def_prop_ro("outputs", [](CompiledProgram& p) { return tensorList(*p.program, p.program->outputs); })
      .def_prop_ro("name", [](CompiledProgram& p) { return p.settings.name; })
      .def_prop_ro("threads", [](CompiledProgram& p) { return p.pool->numThreads(); })
      .def_prop_ro("num_kernels", [](CompiledProgram& p) { return p.exe->numKernels(); })
      .def("run", [](CompiledProgram& p, nb::dict inputs, nb::object out) { return p.run(inputs, out, nullptr); }, "inputs"_a,
           "out"_a = nb::none())
      .def("check", &check)
      .def("passes", &passes)
      .def("explain", &explain, "hw"_a = "host")
      .def("compare", &compare, "repeat"_a = 10, "seed"_a = 1)
      .def("explore_page", &explorePage, "path"_a, "measure"_a = false)
      .def("last_pointers", [](CompiledProgram& p) {
        nb::dict d;
        for (size_t i = 0; i < p.lastTable.size() && i < p.program->tensors.size(); ++i)
          if (p.program->tensors[i].isInput || p.program->tensors[i].isOutput) d[p.program->tensors[i].name.c_str()] = p.lastTable[i];
        return d;
      });
  m.def("compile", &compile, "name"_a, "source"_a.none(), "defines"_a, "fuse"_a, "threads"_a, "cpu"_a, "math"_a, "schedule"_a.none());
  m.def("command_line", &commandLine, "args"_a);
  m.def("empty", &alignedEmpty, "shape"_a, "dtype"_a);
}
