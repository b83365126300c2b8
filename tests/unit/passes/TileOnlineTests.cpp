// The tile-online-softmax rewrite (compiler/loops/TileOnline.cpp): for attention in its forms
// (causal, strict and offset masks, a band of two comparisons, no mask, an additive bias,
// batched and multi-head, cross-attention, the unnormalised weighted sum, a row masked out
// entirely), under the register tiles of an AVX2 and an AVX-512 machine and under small blocks
// that give every loop a tail, the tiled loop program verifies and computes what the one pass
// computes under the loop-IR interpreter (in double; the sums run in another order, so within
// 1e-9, and NaN exactly where the one pass has NaN). Where the tiled form does not apply the
// kernel is left as it is, with the reason in its schedule line.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>

#include "LoopInterpreter.h"
#include "PassTestSupport.h"
#include "compiler/loops/TileOnline.h"

namespace texc::passtest {
namespace {

struct Case {
  const char* name;
  const char* text;
};

// Attention over Nq queries and Nk keys with scores `score` (over i, j) and the row normalised
// (or not).
std::string attention(int nq, int nk, int dh, int dv, const std::string& score, bool normalised = true) {
  return fmt::format(
      "input Q : f32[{0}, {2}]\ninput K : f32[{1}, {2}]\ninput V : f32[{1}, {3}]\ninput bias : f32[{0}, {1}]\n"
      "S[i, j] = {4}\nm[i] = max(j: S[i, j])\nP[i, j] = exp(S[i, j] - m[i])\nl[i] = sum(j: P[i, j])\n"
      "output O[i, c] = sum(j: P[i, j] * V[j, c]){5}\n",
      nq, nk, dh, dv, score, normalised ? " / l[i]" : "");
}

const std::string kDot = "sum(d: Q[i, d] * K[j, d]) * 0.25";

std::vector<std::pair<std::string, std::string>> cases() {
  return {
      {"causal 100 x 100", attention(100, 100, 16, 16, "select(j <= i, " + kDot + ", -inf)")},
      {"causal, strict and offset (j < i - 3: the first rows masked out entirely)", attention(70, 70, 8, 5, "select(j < i - 3, " + kDot + ", -inf)")},
      {"a band of two comparisons", attention(90, 90, 8, 8, "select(j <= i && i - 9 <= j, " + kDot + ", -inf)")},
      {"no mask, cross-attention 37 x 131, bias", attention(37, 131, 12, 20, kDot + " + bias[i, j]")},
      {"keys before queries (j >= i)", attention(61, 61, 8, 8, "select(j >= i, " + kDot + ", -inf)")},
      {"weighted sum, not normalised", attention(50, 77, 8, 8, "select(j <= i, " + kDot + ", -inf)", false)},
      {"batched multi-head, causal",
       "input Q : f32[2, 3, 29, 8]\ninput K : f32[2, 3, 29, 8]\ninput V : f32[2, 3, 29, 7]\n"
       "S[b, h, i, j] = select(j <= i, sum(d: Q[b, h, i, d] * K[b, h, j, d]) * 0.3, -inf)\n"
       "m[b, h, i] = max(j: S[b, h, i, j])\nP[b, h, i, j] = exp(S[b, h, i, j] - m[b, h, i])\n"
       "l[b, h, i] = sum(j: P[b, h, i, j])\noutput O[b, h, i, c] = sum(j: P[b, h, i, j] * V[b, h, j, c]) / l[b, h, i]\n"},
  };
}

loops::MachineInfo avx512Machine() {
  loops::MachineInfo m = avx2Machine();
  m.vectorFloats = 16;
  m.vectorRegisters = 32;
  m.l1Bytes = 48 * 1024;
  m.l2Bytes = 2 << 20;
  return m;
}

bool close(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::abs(a - b) <= 1e-9 * (1 + std::abs(b));
}

TEST_CASE("tile-online-softmax: the tiled kernel computes what the one pass computes", "[passes][tile][online-softmax]") {
  loops::ScheduleOverrides small;
  small.mc = 16;
  small.nc = 10;
  const std::pair<const char*, loops::MachineInfo> machines[] = {{"avx2", avx2Machine()}, {"avx512", avx512Machine()}};
  for (const auto& [name, text] : cases()) {
    DYNAMIC_SECTION(name) {
      LoweredLoops l = lowerOnly(name, text);
      std::vector<std::vector<double>> expected = interpretOnRandomInputs(l, l.loops, 11);
      for (const auto& [machineName, machine] : machines) {
        for (const loops::ScheduleOverrides& o : {loops::ScheduleOverrides{}, small}) {
          INFO(machineName << (o.mc ? ", blocks of 16 rows and tiles of 10 keys" : ", the rule's blocks"));
          loops::LoopProgram tiled = l.loops;
          REQUIRE(loops::tileOnlineSoftmax(tiled, machine, o) == 1);
          INFO(loops::printLoopProgram(tiled));
          for (const std::string& p : loops::verifyLoopProgram(tiled)) FAIL_CHECK(p);
          std::vector<std::vector<double>> got = interpretOnRandomInputs(l, tiled, 11);
          for (int id : l.graph.outputs) {
            REQUIRE(got[id].size() == expected[id].size());
            size_t bad = 0;
            for (size_t e = 0; e < got[id].size(); ++e) bad += !close(got[id][e], expected[id][e]);
            CHECK(bad == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("tile-online-softmax: the mask's comparisons skip whole key tiles, and blocks pair up", "[passes][tile][online-softmax]") {
  LoweredLoops l = lowerOnly("causal", attention(1024, 1024, 64, 64, "select(j <= i, " + kDot + ", -inf)"));
  loops::LoopProgram tiled = l.loops;
  REQUIRE(loops::tileOnlineSoftmax(tiled, avx2Machine(), {}) == 1);
  std::string text = loops::printLoopProgram(tiled);
  INFO(text);
  // 48-row blocks, 64-key tiles (as on every CPU: 10 register tiles of 6 keys and one of 4): the
  // tile is live when its first key is at most the block's last row (the largest i - j over the
  // block and tile is >= 0).
  CHECK(text.find("if 0 <= ((48 * i_pair + 47) - 64 * j_t) && ") != std::string::npos);
  CHECK(text.find("tile 4x16: j = (64 * j_t + 60) + 0..3") != std::string::npos);
  CHECK(text.find("for i_pair < 11 parallel") != std::string::npos);
  CHECK(text.find("# otherwise the whole tile, masked for every row of the block, is skipped") != std::string::npos);
  // Nothing of N x N elements: the local buffers are one tile of scores and four rows.
  for (const loops::Buffer& b : tiled.buffers)
    if (b.kind == loops::BufferKind::Local) CHECK(b.numElements() <= 64 * 48);
}

TEST_CASE("tile-online-softmax: what it leaves as one pass, and why", "[passes][tile][online-softmax]") {
  const std::pair<const char*, const char*> kept[] = {
      {"input Q : f32[8, 4]\ninput K : f32[9, 4]\nS[i, j] = sum(d: Q[i, d] * K[j, d])\nm[i] = max(j: S[i, j])\n"
       "output lse[i] = m[i] + log(sum(j: exp(S[i, j] - m[i])))\n",
       "logsumexp (no weighted sum to tile)"},
      {"input x : f32[8, 9]\ninput V : f32[9, 4]\nm[i] = max(j: x[i, j])\nP[i, j] = exp(x[i, j] - m[i])\nl[i] = sum(j: P[i, j])\n"
       "output O[i, c] = sum(j: P[i, j] * V[j, c]) / l[i]\n",
       "its scores are not one dot product (Q K^T)"},
      {"input Q : f32[8, 4]\ninput K : f32[9, 4]\ninput V : f32[9, 4]\n"
       "S[i, j] = sum(d: Q[i, d] * K[j, d])\nm[i] = max(j: S[i, j])\nP[i, j] = exp(S[i, j] - m[i])\nl[i] = sum(j: P[i, j])\n"
       "output O[i, c] = sum(j: P[i, j] * exp(V[j, c])) / l[i]\n",
       "the weights are not an f32, f16 or bf16 tensor read per key (V[j, c])"},
      {"input Q : f32[8, 4]\ninput K : f32[9, 4]\ninput w : f32[9]\n"
       "S[i, j] = sum(d: Q[i, d] * K[j, d])\nm[i] = max(j: S[i, j])\noutput z[i] = sum(j: exp(S[i, j] - m[i]) * w[j])\n",
       "one weighted sum per row (no column loop for the P V tile)"},
  };
  for (const auto& [text, why] : kept) {
    DYNAMIC_SECTION(why) {
      LoweredLoops l = lowerOnly("kept", text);
      loops::LoopProgram p = l.loops;
      CHECK(loops::tileOnlineSoftmax(p, avx2Machine(), {}) == 0);
      REQUIRE(!p.kernels.empty());
      CHECK(p.kernels.back().schedule == std::string("online softmax kept as one pass per row: ") + why);
    }
  }
  // tile = off in a schedule file: nothing happens, nothing is said.
  loops::ScheduleOverrides off;
  off.tile = false;
  LoweredLoops l = lowerOnly("causal", attention(16, 16, 4, 4, "select(j <= i, " + kDot + ", -inf)"));
  loops::LoopProgram p = l.loops;
  CHECK(loops::tileOnlineSoftmax(p, avx2Machine(), off) == 0);
  CHECK(p.kernels.back().schedule.empty());
}

}  // namespace
}  // namespace texc::passtest
