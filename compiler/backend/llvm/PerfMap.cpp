#include "compiler/backend/llvm/PerfMap.h"

#include <fmt/format.h>
#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace texc {

namespace {

// Appends each linked graph's functions to the map once their addresses are final.
class PerfMapPlugin : public llvm::orc::ObjectLinkingLayer::Plugin {
 public:
  explicit PerfMapPlugin(std::string path) : path_(std::move(path)) {}

  void modifyPassConfig(llvm::orc::MaterializationResponsibility&, llvm::jitlink::LinkGraph&,
                        llvm::jitlink::PassConfiguration& config) override {
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
    std::string lines;
    for (const llvm::jitlink::Symbol* s : graph.defined_symbols())
      if (s->hasName() && s->isCallable() && s->getSize() > 0)
        lines += fmt::format("{:x} {:x} {}\n", s->getAddress().getValue(), s->getSize(), s->getName().str());
    if (lines.empty()) return;
    // Several threads may compile at once (one JIT per executable); perf reads the file after
    // the run, so an append per graph is enough. A map that cannot be written costs the
    // profile its names, not the run its result: no error.
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::FILE* f = std::fopen(path_.c_str(), "a")) {
      std::fwrite(lines.data(), 1, lines.size(), f);
      std::fclose(f);
    }
  }

  std::string path_;
  std::mutex mutex_;
};

}  // namespace

std::string perfMapPath() {
  const char* asked = std::getenv("TEXC_PERF_MAP");
  if (!asked || !*asked || std::string(asked) == "0") return "";
  return fmt::format("/tmp/perf-{}.map", ::getpid());
}

void addPerfMap(llvm::orc::LLJIT& jit, const std::string& path) {
  auto* linking = llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&jit.getObjLinkingLayer());
  if (!linking) throw std::runtime_error("texc: TEXC_PERF_MAP: this JIT's object layer does not list the functions it links");
  linking->addPlugin(std::make_unique<PerfMapPlugin>(path));
}

}  // namespace texc
