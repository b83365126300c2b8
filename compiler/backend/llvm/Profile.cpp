#include "compiler/backend/llvm/Profile.h"

#include <fmt/format.h>
#include <llvm/ADT/ArrayRef.h>
#include <llvm/MC/MCAsmInfo.h>
#include <llvm/MC/MCContext.h>
#include <llvm/MC/MCDisassembler/MCDisassembler.h>
#include <llvm/MC/MCInst.h>
#include <llvm/MC/MCInstPrinter.h>
#include <llvm/MC/MCInstrAnalysis.h>
#include <llvm/MC/MCInstrInfo.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/backend/llvm/LLVMTarget.h"

namespace texc {

namespace {

struct Instruction {
  uint64_t offset = 0;  // from the function's start
  uint64_t length = 1;
  std::string text;
  bool fma = false;
  int64_t branchTo = -1;  // a branch's target offset within the function, else -1
  uint64_t samples = 0;
  int line = 0;  // the loop IR statement's line it was made for (0: none or not known)
};

// LLVM's MC layer for the JIT's CPU: decodes and prints (AT&T syntax, as `--emit asm`).
class Disassembler {
 public:
  explicit Disassembler(const CpuTarget& cpu) {
    initLLVM();
    llvm::InitializeNativeTargetDisassembler();
    const std::string triple = llvm::sys::getProcessTriple();
    std::string error;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
    if (!target) throw std::runtime_error("texc: profile: no LLVM target for " + triple + ": " + error);
    std::string features;
    for (const std::string& f : cpu.features) features += (features.empty() ? "" : ",") + f;
    registers_.reset(target->createMCRegInfo(triple));
    llvm::MCTargetOptions options;
    asmInfo_.reset(target->createMCAsmInfo(*registers_, triple, options));
    subtarget_.reset(target->createMCSubtargetInfo(triple, cpu.name, features));
    instrInfo_.reset(target->createMCInstrInfo());
    context_ = std::make_unique<llvm::MCContext>(llvm::Triple(triple), asmInfo_.get(), registers_.get(), subtarget_.get());
    disassembler_.reset(target->createMCDisassembler(*subtarget_, *context_));
    printer_.reset(target->createMCInstPrinter(llvm::Triple(triple), 0, *asmInfo_, *instrInfo_, *registers_));
    analysis_.reset(target->createMCInstrAnalysis(instrInfo_.get()));
    if (!disassembler_ || !printer_ || !analysis_) throw std::runtime_error("texc: profile: LLVM has no disassembler for " + triple);
  }

  std::vector<Instruction> decode(const JitFunction& f) const {
    std::vector<Instruction> out;
    llvm::ArrayRef<uint8_t> bytes(reinterpret_cast<const uint8_t*>(f.start), f.size);
    for (uint64_t at = 0; at < f.size;) {
      llvm::MCInst inst;
      uint64_t length = 0;
      Instruction i;
      i.offset = at;
      if (disassembler_->getInstruction(inst, length, bytes.slice(at), f.start + at, llvm::nulls()) == llvm::MCDisassembler::Success &&
          length > 0) {
        llvm::raw_string_ostream text(i.text);
        printer_->printInst(&inst, f.start + at, "", *subtarget_, text);
        text.flush();
        uint64_t target = 0;
        if (analysis_->isBranch(inst) && analysis_->evaluateBranch(inst, f.start + at, length, target) && target >= f.start &&
            target < f.start + f.size)
          i.branchTo = static_cast<int64_t>(target - f.start);
      } else {
        length = 1;
        i.text = "(not decoded)";
      }
      // Tabs to one space: the report is aligned text.
      std::replace(i.text.begin(), i.text.end(), '\t', ' ');
      i.text.erase(0, i.text.find_first_not_of(' '));
      i.fma = i.text.find("fmadd") != std::string::npos || i.text.find("fnmadd") != std::string::npos ||
              i.text.find("fmsub") != std::string::npos || i.text.find("dpbf16") != std::string::npos ||
              i.text.find("tdp") == 0;
      i.length = length;
      out.push_back(i);
      at += length;
    }
    return out;
  }

 private:
  std::unique_ptr<llvm::MCRegisterInfo> registers_;
  std::unique_ptr<llvm::MCAsmInfo> asmInfo_;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget_;
  std::unique_ptr<llvm::MCInstrInfo> instrInfo_;
  std::unique_ptr<llvm::MCContext> context_;
  std::unique_ptr<llvm::MCDisassembler> disassembler_;
  std::unique_ptr<llvm::MCInstPrinter> printer_;
  std::unique_ptr<llvm::MCInstrAnalysis> analysis_;
};

struct Loop {
  size_t first = 0, last = 0;  // instruction indices, inclusive (last: the backward branch)
};

std::string percent(uint64_t part, uint64_t whole) { return whole ? fmt::format("{:5.1f}%", 100.0 * part / whole) : "    -"; }

// The loop IR line the code at `pc` of `f` was made for (0: none).
int lineAt(const JitFunction& f, uintptr_t pc) {
  auto after = std::upper_bound(f.lines.begin(), f.lines.end(), pc, [](uintptr_t a, const LineRow& r) { return a < r.start; });
  return after == f.lines.begin() ? 0 : std::prev(after)->line;
}

// Line `line` of the listing, its indentation kept, cut to a report's width.
std::string listed(const std::vector<std::string>& listing, int line) {
  if (line < 1 || static_cast<size_t>(line) > listing.size()) return "(no statement)";
  std::string text = listing[static_cast<size_t>(line) - 1];
  constexpr size_t kWidth = 110;
  if (text.size() > kWidth) text = text.substr(0, kWidth - 3) + "...";
  return text;
}

}  // namespace

std::string profileReport(const std::vector<JitFunction>& functions, const std::vector<uintptr_t>& samples, const CpuTarget& cpu,
                          uint64_t dropped, double cpuSeconds, const ProfileOptions& options) {
  const uint64_t total = samples.size();
  // Samples per function, and per byte offset within it.
  std::vector<std::map<uint64_t, uint64_t>> at(functions.size());
  std::vector<uint64_t> inFunction(functions.size(), 0);
  uint64_t elsewhere = 0;
  for (uintptr_t pc : samples) {
    bool found = false;
    for (size_t f = 0; f < functions.size() && !found; ++f)
      if (pc >= functions[f].start && pc < functions[f].start + functions[f].size) {
        ++at[f][pc - functions[f].start];
        ++inFunction[f];
        found = true;
      }
    if (!found) ++elsewhere;
  }
  std::string out = fmt::format("profile: {} samples over {:.3f} s of CPU time (all threads){}\n", total, cpuSeconds,
                                dropped ? fmt::format("; {} more not kept", dropped) : "");
  if (total == 0) return out + "profile: no samples: the timed runs took less CPU time than one period (raise --repeat)\n";

  std::vector<size_t> order(functions.size());
  for (size_t f = 0; f < order.size(); ++f) order[f] = f;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return inFunction[a] > inFunction[b]; });
  for (size_t f : order)
    if (inFunction[f] > 0) out += fmt::format("  {}  {}\n", percent(inFunction[f], total), functions[f].name);
  out += fmt::format("  {}  outside the JIT's code (the runtime, the thread pool's waits, the kernel of the OS)\n", percent(elsewhere, total));

  // Samples per statement of the loop IR, over every function.
  const bool lines = !options.listing.empty();
  if (lines) {
    std::map<int, uint64_t> perLine;
    for (size_t f = 0; f < functions.size(); ++f)
      for (const auto& [offset, n] : at[f]) perLine[lineAt(functions[f], functions[f].start + offset)] += n;
    std::vector<std::pair<int, uint64_t>> ranked(perLine.begin(), perLine.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    out += "\nby statement of the loop IR (Ln: line n of this run's loop IR, as --emit loops prints it):\n";
    int listedLines = 0;
    for (const auto& [line, n] : ranked) {
      if (listedLines == options.statements || n < options.minLoopShare * static_cast<double>(total)) break;
      out += fmt::format("  {}  {:>5}  {}\n", percent(n, total), line > 0 ? fmt::format("L{}", line) : "-", listed(options.listing, line));
      ++listedLines;
    }
  }

  // The hottest innermost loops over all functions.
  const Disassembler disassembler(cpu);
  struct Hot {
    size_t function;
    uint64_t samples;
    std::vector<Instruction> code;  // the loop's instructions, with their samples
  };
  std::vector<Hot> hot;
  for (size_t f : order) {
    if (inFunction[f] == 0) continue;
    std::vector<Instruction> code = disassembler.decode(functions[f]);
    for (Instruction& x : code) {
      auto it = at[f].find(x.offset);
      if (it != at[f].end()) x.samples = it->second;
      if (lines) x.line = lineAt(functions[f], functions[f].start + x.offset);
    }
    std::vector<Loop> loops;
    for (size_t i = 0; i < code.size(); ++i) {
      if (code[i].branchTo < 0 || static_cast<uint64_t>(code[i].branchTo) > code[i].offset) continue;
      auto first = std::find_if(code.begin(), code.end(), [&](const Instruction& x) { return x.offset == static_cast<uint64_t>(code[i].branchTo); });
      if (first == code.end()) continue;
      loops.push_back({static_cast<size_t>(first - code.begin()), i});
    }
    for (const Loop& l : loops) {
      bool innermost = true;
      for (const Loop& o : loops)
        if ((o.first != l.first || o.last != l.last) && l.first <= o.first && o.last <= l.last) innermost = false;
      if (!innermost) continue;
      uint64_t samples = 0;
      for (size_t i = l.first; i <= l.last; ++i) samples += code[i].samples;
      if (samples >= options.minLoopShare * static_cast<double>(total))
        hot.push_back({f, samples, std::vector<Instruction>(code.begin() + static_cast<std::ptrdiff_t>(l.first),
                                                            code.begin() + static_cast<std::ptrdiff_t>(l.last) + 1)});
    }
  }
  std::stable_sort(hot.begin(), hot.end(), [](const Hot& a, const Hot& b) { return a.samples > b.samples; });
  if (hot.size() > static_cast<size_t>(options.loops)) hot.resize(static_cast<size_t>(options.loops));
  for (const Hot& h : hot) {
    int fmas = 0;
    for (const Instruction& x : h.code) fmas += x.fma ? 1 : 0;
    out += fmt::format("\n{} of the samples in a loop of {} ({} instructions, {} of them multiply-adds), +{:#x}..+{:#x}:\n",
                       percent(h.samples, total), functions[h.function].name, h.code.size(), fmas, h.code.front().offset,
                       h.code.back().offset + h.code.back().length);
    for (const Instruction& x : h.code) {
      const std::string line = !lines ? "" : x.line > 0 ? fmt::format("L{:<5}", x.line) : "-     ";
      out += fmt::format("  {}  +{:<6x} {}{}\n", percent(x.samples, total), x.offset, line, x.text);
    }
  }
  return out;
}

}  // namespace texc
