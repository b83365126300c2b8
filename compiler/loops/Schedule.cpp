#include "compiler/loops/Schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

namespace texc::loops {

const char* convModeName(ConvMode m) {
  switch (m) {
    case ConvMode::Implicit: return "implicit";
    case ConvMode::Im2col: return "im2col";
    case ConvMode::Direct: return "direct";
  }
  return "?";
}

bool parseConvMode(const std::string& text, ConvMode& out) {
  for (ConvMode m : {ConvMode::Implicit, ConvMode::Im2col, ConvMode::Direct})
    if (text == convModeName(m)) {
      out = m;
      return true;
    }
  return false;
}

namespace {

// k steps per micro-kernel iteration: 2 when one step has fewer than 24 FMAs, so that the loop's
// own instructions (add, compare, branch; they issue to the FMA ports too) take a small share of
// the FMA slots. Not more: on AVX2 (Zen 3) conv (1, 64, 64, 56, 56) with 4x16 tiles took 2.62 ms
// at 2 (and 1: LLVM unrolls that loop by 2 itself), 3.7-4.3 ms at 3 and 4.1 ms at 4; matmul 1024
// was level at 1 to 4 (23.2-23.8 ms).
constexpr int64_t kMinFmasPerIteration = 24;

int64_t unrollFor(int64_t accumulators) { return accumulators >= kMinFmasPerIteration ? 1 : 2; }

}  // namespace

RegisterTile chooseRegisterTile(const MachineInfo& m, int columnVectors) {
  const int64_t w = m.vectorFloats, R = m.vectorRegisters;
  const int64_t inFlight = int64_t{m.fmaLatency} * m.fmaPipes;  // independent sums the pipes need
  struct Candidate {
    int64_t rows, vectors;
    double loadsPerFma() const { return static_cast<double>(rows + vectors) / static_cast<double>(rows * vectors); }
  };
  std::optional<Candidate> best;
  for (int64_t v = 1; v <= 4; ++v) {
    if (columnVectors > 0 && v != columnVectors) continue;
    // accumulators + the column vectors + one broadcast, with one register to spare
    const int64_t rows = std::min<int64_t>(8, (R - 1 - v - 1) / v);
    if (rows < 1) continue;
    Candidate c{rows, v};
    if (c.rows * c.vectors < inFlight && columnVectors == 0) continue;
    if (!best || c.loadsPerFma() < best->loadsPerFma() - 1e-9 ||
        (c.loadsPerFma() < best->loadsPerFma() + 1e-9 && c.rows * c.vectors > best->rows * best->vectors))
      best = c;
  }
  if (!best) best = Candidate{std::max<int64_t>(1, std::min<int64_t>(8, (R - 3) / 2)), 2};
  RegisterTile t;
  t.mr = best->rows;
  t.nr = best->vectors * w;
  const int64_t acc = best->rows * best->vectors;
  t.explanation = fmt::format("+{} column vector{} +1 broadcast = {} of {} registers, {} loads per {} FMAs, >= {} in flight (FMA latency {} x {} pipes)",
                              best->vectors, best->vectors == 1 ? "" : "s", acc + best->vectors + 1, R, best->rows + best->vectors, acc,
                              inFlight, m.fmaLatency, m.fmaPipes);
  return t;
}

TileSchedule chooseTileSchedule(const MachineInfo& m, int64_t M, int64_t N, int64_t K, const ScheduleOverrides& o,
                                bool canBlockK, bool chooseOrder, int64_t aBytes) {
  TileSchedule s;
  const int64_t w = m.vectorFloats;
  RegisterTile rt = chooseRegisterTile(m);
  std::string narrowed;
  if (rt.nr > 2 * w) {
    // A wider tile is worth its fewer loads only while it computes little padding: the rows and
    // columns it pads cost more than 5 % over the two-vector tile's (N = 256 in panels of 48
    // pads 12.5 %) or its rows would. The implicit GEMM's pixel blocks must hold whole pooled
    // rows (fuse-into-tiles), which panels of 3W or 4W columns rarely divide.
    const RegisterTile two = chooseRegisterTile(m, 2);
    const auto padded = [](int64_t n, int64_t t) { return (n + t - 1) / t * t; };
    const int64_t wide = padded(M, rt.mr) * padded(N, rt.nr), narrow = padded(M, two.mr) * padded(N, two.nr);
    if (!chooseOrder) narrowed = ", 2 column vectors: implicit GEMM pixel blocks hold whole pooled rows";
    else if (wide * 100 > narrow * 105)
      narrowed = fmt::format(", 2 column vectors: {}x{} would pad {}x{} to {}x{}", rt.mr, rt.nr, M, N, padded(M, rt.mr), padded(N, rt.nr));
    if (!narrowed.empty()) rt = two;
  }
  s.nr = o.nr.value_or(rt.nr);
  s.nr = std::max<int64_t>(w, (s.nr + w - 1) / w * w);
  s.mr = o.mr.value_or(rt.mr);
  s.mr = std::clamp<int64_t>(s.mr, 1, 16);
  const bool ruleTile = !o.mr && !o.nr;
  s.ku = o.ku.value_or(unrollFor(s.mr * (s.nr / w)));
  const std::string tileRule =
      fmt::format("{}; k unrolled {}x ({} FMAs per iteration)", ruleTile ? " (" + rt.explanation + narrowed + ")" : "", s.ku, s.ku * s.mr * (s.nr / w));

  // The matmul nest's B panel may fill L1; the implicit GEMM's, half of L1 (measured: the
  // whole-L1 block is 5 % slower at conv (8, 64, 128, 28, 28), 2-3 % faster at SGEMM 1024-2048).
  const int64_t l1Share = chooseOrder ? m.l1Bytes : m.l1Bytes / 2;
  int64_t kcRule = std::max<int64_t>(8, l1Share / (s.nr * 4) / 8 * 8);
  // A panel of 4 vectors of 16 (AVX-512's 6x64 tile) would cut the matmul's k blocks to 128 in a
  // 32 KiB L1, and every k block reads and writes all of C once more: at SGEMM 2048 (C 16 MiB,
  // past L2) that traffic cost 8 % on Zen 4. Such a panel streams from L2 instead (one vector
  // load per 6 FMAs, well within L2's bandwidth), with k blocks of up to 512 (measured, Zen 4:
  // 2048 172 -> 158 ms, 1024 20.8 -> 19.7 ms; conv's blocks are kept).
  const bool panelInL2 = chooseOrder && kcRule < 512 && m.l2Bytes / 4 / (s.nr * 4) > kcRule;
  if (panelInL2) kcRule = std::min<int64_t>(512, m.l2Bytes / 4 / (s.nr * 4) / 8 * 8);
  int64_t kc = o.kc.value_or(kcRule);
  s.kc = canBlockK ? kc : 0;
  if (s.kc >= K) {
    // K fits in one block: no k blocks, unless the unblocked nest would need several row blocks
    // (its A block of all rows and a B panel overflow 3/4 of L2) and so pack B once per row
    // block; the matmul nest with one k block packs B once (SGEMM 512: B 3x -> 1x).
    const int64_t budget = m.l2Bytes * 3 / 4 - K * s.nr * 4;
    const bool oneRowBlock = budget > 0 && budget / (K * 4) >= M;
    s.kc = chooseOrder && !oneRowBlock ? K : 0;
  }
  const int64_t window = s.kc ? s.kc : K;

  int64_t mc;
  std::string blockRule;
  if (s.kc) {
    mc = m.l2Bytes / 2 / (s.kc * aBytes);
    blockRule = fmt::format("A block {}x{} <= L2/2 ({} KiB); B panel {}x{} = {} KiB <= {} ({} KiB), packed {} columns at a time "
                            "({{nc}}, <= L2/4)",
                            "{mc}", s.kc, m.l2Bytes / 2048, s.kc, s.nr, s.kc * s.nr * 4 / 1024,
                            panelInL2 ? "a quarter of L2" : chooseOrder ? "L1" : "L1/2",
                            panelInL2 ? m.l2Bytes / 4096 : l1Share / 1024, "{ncw}");
    if (panelInL2) blockRule += ", read from L2: a panel of 4 vectors would keep k blocks short in L1";
  } else {
    int64_t budget = m.l2Bytes * 3 / 4 - K * s.nr * 4;
    mc = budget > 0 ? budget / (K * aBytes) : s.mr;
    blockRule = fmt::format("k unblocked{}; A block {}x{} + B panel {}x{} <= 3/4 L2 ({} KiB)",
                            canBlockK ? "" : " (the output cannot hold partial sums)", "{mc}", K, K, s.nr,
                            m.l2Bytes * 3 / 4 / 1024);
  }
  if (o.mc) mc = *o.mc;
  mc = std::max(s.mr, mc / s.mr * s.mr);
  mc = std::min(mc, (M + s.mr - 1) / s.mr * s.mr);  // never more rows than C has
  // A row block per thread when C has the rows, so that every thread has one, but blocks of at
  // least 64 rows: each block packs all of B again, and amortises that over its rows. One thread
  // gets one block as far as L2 allows (M = 128, N = K = 4096: B, 64 MiB, is packed once, not twice).
  const int64_t T = std::max(1, m.threads);
  if (!o.mc && T > 1 && M >= T * s.mr)
    mc = std::min(mc, std::max(((M + T - 1) / T + s.mr - 1) / s.mr * s.mr, (64 + s.mr - 1) / s.mr * s.mr));
  // The same number of blocks, evened out (1024 rows in blocks of 252 leave 16 for the last),
  // and a multiple of the threads when there are more blocks than threads: 9 blocks on 2
  // threads keep one thread busy for a fifth of the time alone (bf16 matmul 2048, rows outer).
  if (!o.mc) {
    int64_t blocks = (M + mc - 1) / mc;
    const int64_t shared = (blocks + T - 1) / T * T;
    if (T > 1 && blocks > T && (M + shared - 1) / shared >= 64) blocks = shared;
    mc = std::min(mc, ((M + blocks - 1) / blocks + s.mr - 1) / s.mr * s.mr);
  }
  s.mc = mc;

  s.nc = s.nr;
  if (s.kc) {
    int64_t nc = o.nc.value_or(m.l2Bytes / 4 / (s.kc * 4));
    s.nc = std::clamp<int64_t>(nc / s.nr * s.nr, s.nr, (N + s.nr - 1) / s.nr * s.nr);
  }
  const int64_t stackLimit = int64_t{1} << 20;
  s.pack = o.pack.value_or(true) && window * s.nc * 4 <= stackLimit;
  s.packA = o.packA.value_or(true) && s.mc * window * aBytes <= stackLimit;

  // Loop order. Rows outer packs all of B again for every row block; columns outer (BLIS's order)
  // packs each B block once and all of A again for every column block, whose B block is as wide
  // as the stack scratch allows (one per thread when there are several). Take the order that
  // copies fewer bytes.
  std::string order;
  if (chooseOrder && s.kc && s.pack && s.packA) {
    const int64_t Npad = (N + s.nr - 1) / s.nr * s.nr;
    // The B block of columns-outer may take 2 MiB of the stack (L3, not L2: each of its panels
    // is read once per row block): SGEMM 2048 packs A twice instead of 4 times, 1.7 % faster.
    const int64_t columnBlockLimit = 2 * stackLimit;
    int64_t wide = std::max(s.nr, columnBlockLimit / (s.kc * 4) / s.nr * s.nr);
    if (T > 1) wide = std::min(wide, ((N + T - 1) / T + s.nr - 1) / s.nr * s.nr);
    const int64_t ncCols = std::clamp<int64_t>(o.nc ? *o.nc / s.nr * s.nr : wide, s.nr, std::min(Npad, wide));
    const int64_t rowBlocks = (M + s.mc - 1) / s.mc, colBlocks = (N + ncCols - 1) / ncCols;
    const double rowsMiB = static_cast<double>(M * K * aBytes + K * N * 4 * rowBlocks) / (1 << 20);
    const double colsMiB = static_cast<double>(K * N * 4 + M * K * aBytes * colBlocks) / (1 << 20);
    s.columnsOuter = o.columnsOuter.value_or(colsMiB < rowsMiB);
    if (s.columnsOuter) s.nc = ncCols;
    order = s.columnsOuter
                ? fmt::format("; columns outer: B packed once, A {}x ({:.1f} MiB copied; rows outer {:.1f})", colBlocks, colsMiB, rowsMiB)
                : fmt::format("; rows outer: A packed once, B {}x ({:.1f} MiB copied; columns outer {:.1f})", rowBlocks, rowsMiB, colsMiB);
  }
  std::string rule = blockRule.replace(blockRule.find("{mc}"), 4, std::to_string(s.mc));
  if (size_t at = rule.find("{ncw}"); at != std::string::npos) rule.replace(at, 5, std::to_string(s.nc));
  if (size_t at = rule.find("{nc}"); at != std::string::npos) rule.replace(at, 4, fmt::format("{} KiB", s.kc * s.nc * 4 / 1024));
  if (size_t at = rule.find("<= L2/4"); s.columnsOuter && at != std::string::npos) rule.replace(at, 7, "<= 2 MiB of scratch");
  rule += order;
  s.explanation = fmt::format("{}x{}x{}: C tile {}x{} = {} accumulators of {} floats{}; {}; B {}, A {}; {}; {} thread{}", M, N, K,
                              s.mr, s.nr, s.mr * (s.nr / w), w, tileRule, rule, s.pack ? "packed" : "read in place",
                              s.packA ? "packed" : "read in place", m.source, T, T == 1 ? "" : "s");
  return s;
}

namespace {

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool parseCount(const std::string& text, int64_t& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}

// One step of a `loops` line: `split V F`, `reorder V V...`, `unroll V [F]`, `parallel V|off`,
// `vectorize V [off]`, `register_block I J MR NR`, `pack A|B [V]`. Returns the error or empty.
std::string parseLoopStep(const std::string& text, LoopStep& step) {
  std::vector<std::string> w = words(text);
  step.text = text;
  if (w.empty()) return "empty step (two ';' in a row?)";
  const std::string& op = w[0];
  const size_t n = w.size() - 1;
  if (op == "split") {
    step.kind = LoopStepKind::Split;
    if (n != 2 || !parseCount(w[2], step.factor) || step.factor < 1)
      return fmt::format("'{}': expected 'split VAR FACTOR' with a factor >= 1", text);
    step.vars = {w[1]};
  } else if (op == "reorder") {
    step.kind = LoopStepKind::Reorder;
    if (n < 2) return fmt::format("'{}': expected 'reorder VAR VAR ...' (two loops or more, outermost first)", text);
    step.vars.assign(w.begin() + 1, w.end());
  } else if (op == "unroll") {
    step.kind = LoopStepKind::Unroll;
    if (n < 1 || n > 2 || (n == 2 && (!parseCount(w[2], step.factor) || step.factor < 2)))
      return fmt::format("'{}': expected 'unroll VAR FACTOR' with a factor >= 2, or 'unroll VAR' (fully)", text);
    step.vars = {w[1]};
  } else if (op == "parallel") {
    step.kind = LoopStepKind::Parallel;
    if (n != 1) return fmt::format("'{}': expected 'parallel VAR' or 'parallel off'", text);
    if (w[1] != "off") step.vars = {w[1]};
  } else if (op == "vectorize") {
    step.kind = LoopStepKind::Vectorize;
    if (n < 1 || n > 2 || (n == 2 && w[2] != "off")) return fmt::format("'{}': expected 'vectorize VAR' or 'vectorize VAR off'", text);
    step.vars = {w[1]};
    step.on = n == 1;
  } else if (op == "register_block") {
    step.kind = LoopStepKind::RegisterBlock;
    if (n != 4 || !parseCount(w[3], step.rows) || !parseCount(w[4], step.factor) || step.rows < 1 || step.factor < 1)
      return fmt::format("'{}': expected 'register_block ROWVAR COLVAR MR NR' (tile rows and columns >= 1)", text);
    step.vars = {w[1], w[2]};
  } else if (op == "pack") {
    step.kind = LoopStepKind::Pack;
    if (n < 1 || n > 2 || (w[1] != "A" && w[1] != "B"))
      return fmt::format("'{}': expected 'pack A|B' (before the nest) or 'pack A|B VAR' (first in loop VAR)", text);
    step.operand = w[1][0];
    if (n == 2) step.vars = {w[2]};
  } else {
    return fmt::format(
        "unknown loop transformation '{}' (expected split, reorder, unroll, parallel, vectorize, register_block or pack)", op);
  }
  return "";
}

// `loops BUFFER: step; step; ...` (the text after `loops`).
std::string parseLoopsLine(const std::string& rest, int no, ScheduleOverrides& out) {
  size_t colon = rest.find(':');
  std::vector<std::string> name = words(rest.substr(0, colon == std::string::npos ? rest.size() : colon));
  if (colon == std::string::npos || name.size() != 1)
    return fmt::format("line {}: expected 'loops BUFFER: step; step; ...'", no);
  LoopScheduleLine line;
  line.line = no;
  line.buffer = name[0];
  std::string steps = rest.substr(colon + 1);
  for (size_t start = 0; start <= steps.size();) {
    size_t semi = std::min(steps.find(';', start), steps.size());
    std::string text = steps.substr(start, semi - start);
    size_t a = text.find_first_not_of(" \t\r"), b = text.find_last_not_of(" \t\r");
    text = a == std::string::npos ? "" : text.substr(a, b - a + 1);
    // A trailing ';' is allowed; an empty step elsewhere is not.
    if (!(text.empty() && semi == steps.size() && !line.steps.empty())) {
      LoopStep step;
      if (std::string err = parseLoopStep(text, step); !err.empty()) return fmt::format("line {}: loops {}: {}", no, line.buffer, err);
      line.steps.push_back(std::move(step));
    }
    start = semi + 1;
  }
  out.loops.push_back(std::move(line));
  return "";
}

}  // namespace

std::string parseScheduleText(const std::string& text, ScheduleOverrides& out) {
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    auto trim = [](std::string s) {
      size_t a = s.find_first_not_of(" \t\r");
      size_t b = s.find_last_not_of(" \t\r");
      return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
    };
    line = trim(line);
    if (line.empty()) continue;
    if (line.rfind("loops", 0) == 0 && line.size() > 5 && (line[5] == ' ' || line[5] == '\t')) {
      if (std::string err = parseLoopsLine(line.substr(6), no, out); !err.empty()) return err;
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) return fmt::format("line {}: expected 'key = value', got '{}'", no, line);
    std::string key = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (key == "tile" || key == "pack" || key == "pack_a" || key == "pack_panels" || key == "input_in_place") {
      if (value != "on" && value != "off") return fmt::format("line {}: {} must be on or off, got '{}'", no, key, value);
      (key == "tile" ? out.tile : key == "pack" ? out.pack : key == "pack_a" ? out.packA : key == "pack_panels" ? out.packPanels : out.inputInPlace) =
          value == "on";
      continue;
    }
    if (key == "conv") {
      ConvMode mode;
      if (!parseConvMode(value, mode)) return fmt::format("line {}: conv must be implicit, im2col or direct, got '{}'", no, value);
      out.conv = mode;
      continue;
    }
    if (key == "order") {
      if (value != "rows" && value != "columns") return fmt::format("line {}: order must be rows or columns, got '{}'", no, value);
      out.columnsOuter = value == "columns";
      continue;
    }
    if (key != "mr" && key != "nr" && key != "ku" && key != "mc" && key != "kc" && key != "nc")
      return fmt::format("line {}: unknown key '{}' (expected tile, mr, nr, ku, mc, kc, nc, pack, pack_a, pack_panels, input_in_place, order or conv)", no, key);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    int64_t limit = key == "mc" || key == "kc" || key == "nc" ? 1 << 20 : key == "nr" ? 64 : key == "ku" ? 8 : 16;
    if (value.empty() || ec != std::errc() || p != value.data() + value.size() || v <= 0 || v > limit)
      return fmt::format("line {}: {} must be an integer in 1..{}, got '{}'", no, key, limit, value);
    (key == "mr" ? out.mr : key == "nr" ? out.nr : key == "ku" ? out.ku : key == "mc" ? out.mc : key == "kc" ? out.kc : out.nc) = v;
  }
  return "";
}

}  // namespace texc::loops
