#!/usr/bin/env python3
"""The micro-kernel of a contraction, read off texc's assembly for a named CPU: what one
iteration of its innermost FMA loop does (FMAs, vector loads, broadcasts, other instructions),
and, with llvm-mca, how many cycles LLVM's scheduling model of that CPU gives it against the
FMA pipes' bound. This is how texc's register tile is chosen for a CPU the host is not
(docs/scheduling.md, "The register tile"): the counts are exact, the cycles are a model.

  scripts/microkernel-mca.py                       # matmul 1024, the four CPUs below
  scripts/microkernel-mca.py --cpu sapphirerapids --size 2048 --schedule my.sched
  scripts/microkernel-mca.py --count FILE.s        # counts of an assembly file, no llvm-mca

The bound is the model's own: the cycles llvm-mca gives as many independent FMAs of the same
width alone (LLVM 19 models Ice Lake and Sapphire Rapids server cores with one 512-bit FMA pipe,
Skylake-X with two, Zen 4 with 512-bit FMAs at half rate); the fraction is the loop's share of
that, so below 1 is the model's estimate of what the loads, addresses, counter and branch cost.
The models are LLVM's, not the hardware: a timing on the CPU itself is the measurement.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CPUS = ["haswell", "znver3", "skylake-avx512", "sapphirerapids"]


def innermost_fma_loop(asm):
    """The body of the innermost loop (a backward branch with no label between) with the most
    FMAs, as a list of instruction lines."""
    lines = asm.split("\n")
    labels = {}
    for i, line in enumerate(lines):
        m = re.match(r"^(\.LBB\d+_\d+):", line)
        if m:
            labels[m.group(1)] = i
    best = None
    for i, line in enumerate(lines):
        m = re.match(r"\s+j\w+\s+(\.LBB\d+_\d+)\s*$", line)
        if not m or m.group(1) not in labels or labels[m.group(1)] >= i:
            continue
        body = lines[labels[m.group(1)] + 1:i + 1]
        if any(re.match(r"^\.LBB", b) for b in body):
            continue
        insts = [b for b in body if b.startswith("\t") and not b.strip().startswith(".")]
        fmas = sum(1 for b in insts if re.match(r"\s+vfn?m(add|sub)", b))
        if fmas and (best is None or fmas > best[0]):
            best = (fmas, insts)
    return best[1] if best else None


def counts(insts):
    fmas = sum(1 for b in insts if re.match(r"\s+vfn?m(add|sub)", b))
    broadcasts = sum(1 for b in insts if "broadcast" in b or "{1to" in b)
    vector_loads = sum(1 for b in insts if re.match(r"\s+vmov(aps|ups|apd|upd)\s+[^%]*\(", b))
    width = "zmm" if any("zmm" in b for b in insts) else "ymm" if any("ymm" in b for b in insts) else "xmm"
    return dict(instructions=len(insts), fmas=fmas, broadcasts=broadcasts, vector_loads=vector_loads,
                other=len(insts) - fmas - broadcasts - vector_loads, width=width)


def mca_cycles(insts, cpu, mca):
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(insts) + "\n")
        path = f.name
    try:
        out = subprocess.run([mca, "-mcpu=" + cpu, "-iterations=300", path], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(path)
    return int(re.search(r"Total Cycles:\s+(\d+)", out).group(1)) / 300


def texc_asm(texc, workload, size, cpu, schedule):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "k.s")
        cmd = [texc, "compile", workload, "-D", "M=%d" % size, "-D", "N=%d" % size, "-D", "K=%d" % size, "--cpu", cpu,
               "--emit", "asm", "-o", out]
        if schedule:
            cmd += ["--schedule", schedule]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        loops = subprocess.run([texc, "compile", workload, "-D", "M=%d" % size, "-D", "N=%d" % size, "-D", "K=%d" % size,
                                "--cpu", cpu, "--emit", "loops"] + (["--schedule", schedule] if schedule else []),
                               check=True, capture_output=True, text=True).stdout
        with open(out) as f:
            asm = f.read()
    m = re.search(r"C tile (\d+x\d+)[^;]*; k unrolled (\d+)x", loops)
    return asm, (m.group(1), int(m.group(2))) if m else ("?", 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", action="append", help="an LLVM CPU name (repeatable; default: %s)" % ", ".join(CPUS))
    ap.add_argument("--size", type=int, default=1024, help="M = N = K of the matmul (default 1024)")
    ap.add_argument("--workload", default=os.path.join(ROOT, "bench", "workloads", "matmul.tex"))
    ap.add_argument("--schedule", help="a schedule file passed to texc")
    ap.add_argument("--texc", default=os.path.join(ROOT, "build", "texc"))
    ap.add_argument("--count", metavar="FILE.s", help="only count the loop of this assembly file")
    args = ap.parse_args()

    if args.count:
        with open(args.count) as f:
            insts = innermost_fma_loop(f.read())
        if not insts:
            sys.exit("%s: no loop with FMAs" % args.count)
        c = counts(insts)
        print("innermost FMA loop: %(instructions)d instructions: %(fmas)d FMAs, %(vector_loads)d vector loads, "
              "%(broadcasts)d broadcasts, %(other)d other (%(width)s)" % c)
        return
    # LLVM 19's, as texc's code generator: Debian's plain llvm-mca may be another version.
    mca = shutil.which("llvm-mca-19") or "/usr/lib/llvm-19/bin/llvm-mca"
    if not os.path.exists(mca) and not shutil.which(mca):
        mca = None
    if not mca:
        sys.exit("llvm-mca not found: it comes with Debian's llvm-19 package")
    print("| CPU | register tile | k unroll | per iteration: FMAs, vector loads, broadcasts, other | llvm-mca cycles "
          "| FMAs alone | modeled fraction |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: |")
    for cpu in args.cpu or CPUS:
        asm, (tile, ku) = texc_asm(args.texc, args.workload, args.size, cpu, args.schedule)
        insts = innermost_fma_loop(asm)
        if not insts:
            print("| %s | %s | %d | no FMA loop found | | | |" % (cpu, tile, ku))
            continue
        c = counts(insts)
        cycles = mca_cycles(insts, cpu, mca)
        reg = {"zmm": "zmm", "ymm": "ymm", "xmm": "xmm"}[c["width"]]
        regs = 32 if reg == "zmm" else 16  # the last two are the sources
        alone = ["\tvfmadd231ps\t%%%s%d, %%%s%d, %%%s%d" % (reg, regs - 2, reg, regs - 1, reg, i % (regs - 2))
                 for i in range(c["fmas"])]
        bound = mca_cycles(alone, cpu, mca)
        print("| %s | %s | %d | %d, %d, %d, %d (%s) | %.2f | %.1f | %.3f |" % (
            cpu, tile, ku, c["fmas"], c["vector_loads"], c["broadcasts"], c["other"], c["width"], cycles, bound, bound / cycles))


if __name__ == "__main__":
    main()
