#include "compiler/backend/llvm/JitFunctions.h"

#include <fmt/format.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/ExecutionEngine/Orc/Debugging/DebugInfoSupport.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

namespace texc {

void JitFunctionList::add(std::vector<JitFunction> linked) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (JitFunction& f : linked) functions_.push_back(std::move(f));
}

std::vector<JitFunction> JitFunctionList::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return functions_;
}

namespace {

// Records each linked graph's functions once their addresses are final.
class ListingPlugin : public llvm::orc::ObjectLinkingLayer::Plugin {
 public:
  ListingPlugin(JitFunctionList& list, std::string perfMap) : list_(list), perfMap_(std::move(perfMap)) {}

  void modifyPassConfig(llvm::orc::MaterializationResponsibility&, llvm::jitlink::LinkGraph&,
                        llvm::jitlink::PassConfiguration& config) override {
    // Debug sections are not loaded into memory: kept in the graph (not dead-stripped), their
    // relocations are applied all the same, so the line table read after fixup holds final
    // addresses. Only code built with a line table (run --profile) has them.
    config.PrePrunePasses.push_back(llvm::orc::preserveDebugSections);
    config.PostFixupPasses.push_back([this](llvm::jitlink::LinkGraph& graph) {
      record(graph);
      return llvm::Error::success();
    });
  }
  llvm::Error notifyFailed(llvm::orc::MaterializationResponsibility&) override { return llvm::Error::success(); }
  llvm::Error notifyRemovingResources(llvm::orc::JITDylib&, llvm::orc::ResourceKey) override { return llvm::Error::success(); }
  void notifyTransferringResources(llvm::orc::JITDylib&, llvm::orc::ResourceKey, llvm::orc::ResourceKey) override {}

 private:
  void record(llvm::jitlink::LinkGraph& graph) {
    std::vector<JitFunction> linked;
    for (const llvm::jitlink::Symbol* s : graph.defined_symbols())
      if (s->hasName() && s->isCallable() && s->getSize() > 0)
        linked.push_back({s->getName().str(), static_cast<uintptr_t>(s->getAddress().getValue()), static_cast<size_t>(s->getSize()), {}});
    if (linked.empty()) return;
    readLineTables(graph, linked);
    if (!perfMap_.empty()) {
      std::string lines;
      for (const JitFunction& f : linked) lines += fmt::format("{:x} {:x} {}\n", f.start, f.size, f.name);
      // perf reads the file after the run, so an append per graph is enough. A map that cannot
      // be written costs the profile its names, not the run its result: no error.
      std::lock_guard<std::mutex> lock(fileMutex_);
      if (std::FILE* f = std::fopen(perfMap_.c_str(), "a")) {
        std::fwrite(lines.data(), 1, lines.size(), f);
        std::fclose(f);
      }
    }
    list_.add(std::move(linked));
  }

  // Each function's rows of the graph's line table, if it has one. A table that cannot be read
  // costs the profile its lines, not the run: no error.
  static void readLineTables(llvm::jitlink::LinkGraph& graph, std::vector<JitFunction>& linked) {
    if (!graph.findSectionByName(".debug_line")) return;
    auto dwarf = llvm::orc::createDWARFContext(graph);
    if (!dwarf) {
      llvm::consumeError(dwarf.takeError());
      return;
    }
    // The rows of every unit's table, by address (an end-of-sequence row ends a stretch: line 0).
    llvm::DWARFContext& context = *dwarf->first;
    std::vector<LineRow> rows;
    for (const auto& unit : context.compile_units())
      if (const llvm::DWARFDebugLine::LineTable* table = context.getLineTableForUnit(unit.get()))
        for (const llvm::DWARFDebugLine::Row& row : table->Rows)
          rows.push_back({static_cast<uintptr_t>(row.Address.Address), row.EndSequence ? 0 : static_cast<int>(row.Line)});
    std::stable_sort(rows.begin(), rows.end(), [](const LineRow& a, const LineRow& b) { return a.start < b.start; });
    for (JitFunction& f : linked)
      for (const LineRow& row : rows)
        if (row.start >= f.start && row.start < f.start + f.size) f.lines.push_back(row);
  }

  JitFunctionList& list_;
  std::string perfMap_;
  std::mutex fileMutex_;
};

}  // namespace

std::string perfMapPath() {
  const char* asked = std::getenv("TEXC_PERF_MAP");
  if (!asked || !*asked || std::string(asked) == "0") return "";
  return fmt::format("/tmp/perf-{}.map", ::getpid());
}

bool listJitFunctions(llvm::orc::LLJIT& jit, JitFunctionList& list, const std::string& perfMap) {
  auto* linking = llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&jit.getObjLinkingLayer());
  if (!linking) return false;
  linking->addPlugin(std::make_unique<ListingPlugin>(list, perfMap));
  return true;
}

}  // namespace texc
