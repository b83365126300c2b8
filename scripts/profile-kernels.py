#!/usr/bin/env python3
"""Where the time of texc's CPU kernels goes: the share of samples per kernel and per innermost
loop, with each loop's instruction mix.

  scripts/profile-kernels.py FILE.tex [texc run options ...]
  scripts/profile-kernels.py bench/workloads/conv.tex -D N=1 --repeat 200
  scripts/profile-kernels.py --self-test            # the mapping on made-up samples, no perf

It runs `texc run FILE --random 1 --threads 1 --repeat N` (the options given are passed on, and
may override these) under `perf record -e cpu-clock`, a software clock that works in virtual
machines without hardware counters, and keeps the samples that fall in the JIT's code (perf
names no symbol there). The same program compiled with the same options, `texc compile
--emit obj`, holds the same instructions at the same offsets of one text section, so the section's
load address is the one that puts the most samples on instruction boundaries; every sample is
then given to the smallest loop (a backward branch and its target) around it. A loop is named by
its kernel and offsets, and described by the instructions it holds ("vfmadd231ps 32,
vbroadcastss 16, ..."), which is usually enough to tell the micro-kernel from a pack or an
epilogue; `texc compile FILE --emit asm` shows the rest.

Needs perf (Debian: linux-perf) allowed to sample this user's processes
(/proc/sys/kernel/perf_event_paranoid <= 2, or root) and objdump (binutils) or llvm-objdump.
Exits 77 with the reason when either is missing.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SKIP = 77


def parse_disassembly(text):
    """objdump -d output -> ({offset: (function, mnemonic)}, offsets in order, {offset of a jump:
    its target})."""
    instructions, order, targets, function = {}, [], {}, None
    for line in text.split("\n"):
        m = re.match(r"^([0-9a-f]+) <([^>]+)>:", line)
        if m:
            function = m.group(2)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)(?:\s+([0-9a-f]+)\b)?", line)
        if m and function:
            offset = int(m.group(1), 16)
            instructions[offset] = (function, m.group(2))
            order.append(offset)
            if m.group(2).startswith("j") and m.group(3):
                targets[offset] = int(m.group(3), 16)
    return instructions, order, targets


def loops_of(instructions, order, targets):
    """(start, end) of every loop: a jump back to an earlier instruction of the same function."""
    loops = []
    for offset in order:
        target = targets.get(offset)
        if target is not None and target <= offset and instructions.get(target, (None,))[0] == instructions[offset][0]:
            loops.append((target, offset))
    return loops


def find_base(samples, instructions):
    """The load address of the text section: of the candidates that put one of the most sampled
    addresses on an instruction, the one that puts the most samples on instructions."""
    top = sorted(samples, key=lambda a: -samples[a])[:4]
    best = (0, None)
    for address in top:
        for offset in instructions:
            base = address - offset
            hits = sum(count for a, count in samples.items() if (a - base) in instructions)
            if hits > best[0]:
                best = (hits, base)
    return best[1], best[0]


def attribute(samples, instructions, order, targets, base):
    """Samples per function and per innermost loop: [(share, function, (start, end) or None,
    instruction mix)], largest first."""
    loops = loops_of(instructions, order, targets)
    total = sum(samples.values())
    per_loop = collections.Counter()
    for address, count in samples.items():
        offset = address - base
        inside = [(end - start, start, end) for start, end in loops if start <= offset <= end]
        if inside:
            _, start, end = min(inside)
            per_loop[(instructions[start][0], start, end)] += count
        else:
            function = instructions.get(offset, ("(not an instruction boundary)", ""))[0]
            per_loop[(function, None, None)] += count
    rows = []
    for (function, start, end), count in per_loop.most_common():
        mix = ""
        if start is not None:
            kinds = collections.Counter(instructions[o][1] for o in order if start <= o <= end)
            mix = "%d instructions: %s" % (sum(kinds.values()), ", ".join("%s %d" % kv for kv in kinds.most_common(6)))
        rows.append((count / total, function, (start, end) if start is not None else None, mix))
    per_function = collections.Counter()
    for share, function, _, _ in rows:
        per_function[function] += share
    return rows, per_function


def report(rows, per_function, mapped, total, out=sys.stdout, limit=15):
    print("samples in the JIT's code: %d, %d of them on instruction boundaries (%.0f %%)" % (total, mapped, 100.0 * mapped / max(total, 1)), file=out)
    print("\nper kernel:", file=out)
    for function, share in per_function.most_common():
        print("  %6.1f %%  %s" % (100 * share, function), file=out)
    print("\nper innermost loop (offsets in the text section of `texc compile --emit obj`):", file=out)
    for share, function, span, mix in rows[:limit]:
        where = "[%x-%x]" % span if span else "outside loops"
        print("  %6.1f %%  %s %s %s" % (100 * share, function, where, mix), file=out)


def self_test():
    """Made-up disassembly and samples at a made-up load address: the base is found and every
    sample lands in its loop."""
    text = """
0000000000000000 <texc_k0_C>:
       0:	push   %rbp
       1:	xor    %eax,%eax
       3:	vmovups (%rdi),%zmm0
       9:	vmovaps %zmm0,(%rsi)
       f:	add    $0x40,%rdi
      13:	cmp    %rdx,%rdi
      16:	jne    3 <texc_k0_C+0x3>
      18:	vbroadcastss (%rcx),%zmm1
      1e:	vfmadd231ps %zmm0,%zmm1,%zmm2
      24:	vfmadd231ps %zmm0,%zmm1,%zmm3
      2a:	add    $0x4,%rcx
      2e:	cmp    %r8,%rcx
      31:	jne    18 <texc_k0_C+0x18>
      33:	ret
0000000000000040 <texc_k1_pool>:
      40:	vmaxps %zmm0,%zmm1,%zmm1
      46:	dec    %r9
      49:	jne    40 <texc_k1_pool+0x40>
      4b:	ret
"""
    instructions, order, targets = parse_disassembly(text)
    base = 0x7F0000001200
    samples = {base + 0x1E: 50, base + 0x24: 30, base + 0x2A: 10, base + 0x9: 6, base + 0x46: 3, base + 0x33: 1}
    found, mapped = find_base(samples, instructions)
    assert found == base, hex(found or 0)
    assert mapped == 100, mapped
    rows, per_function = attribute(samples, instructions, order, targets, base)
    assert rows[0][1] == "texc_k0_C" and rows[0][2] == (0x18, 0x31) and abs(rows[0][0] - 0.90) < 1e-9, rows[0]
    assert "vfmadd231ps 2" in rows[0][3], rows[0][3]
    assert rows[1][2] == (0x3, 0x16) and abs(rows[1][0] - 0.06) < 1e-9, rows[1]
    assert rows[2][1] == "texc_k1_pool" and abs(rows[2][0] - 0.03) < 1e-9, rows[2]
    assert rows[3][2] is None and rows[3][1] == "texc_k0_C", rows[3]  # the ret, outside any loop
    assert abs(per_function["texc_k0_C"] - 0.97) < 1e-9, per_function
    print("profile-kernels self-test: base found, 4 rows attributed as expected")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true", help="check the mapping on made-up samples (no perf)")
    ap.add_argument("--texc", default=os.path.join(ROOT, "build", "texc"), help="the texc binary (default build/texc)")
    ap.add_argument("--frequency", type=int, default=20000, help="samples per second (default 20000)")
    ap.add_argument("--limit", type=int, default=15, help="loops listed (default 15)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless most samples land on instructions and a loop of a kernel got some (for the tests)")
    args, texc_args = ap.parse_known_args()
    if args.self_test:
        return self_test()
    if not texc_args:
        ap.error("give a .tex file (and texc run options)")
    perf = shutil.which("perf")
    objdump = shutil.which("objdump") or shutil.which("llvm-objdump-19") or shutil.which("llvm-objdump")
    if not perf:
        print("profile-kernels: skipped: perf is not installed (Debian: linux-perf)", file=sys.stderr)
        return SKIP
    if not objdump:
        print("profile-kernels: skipped: no objdump (Debian: binutils) or llvm-objdump", file=sys.stderr)
        return SKIP
    if not os.access(args.texc, os.X_OK):
        print("profile-kernels: %s is not an executable texc (--texc)" % args.texc, file=sys.stderr)
        return 2
    program, options = texc_args[0], texc_args[1:]
    given = {o.split("=")[0] for o in options}
    run_defaults = [part for name, value in (("--random", "1"), ("--threads", "1"), ("--repeat", "100")) if name not in given for part in (name, value)]
    # The compile takes the options that change the code; run-only ones are left out.
    run_only = {"--random": 1, "--threads": 1, "--repeat": 1, "--output-dir": 1, "--input": 1, "--check": 0}
    compile_options, i = [], 0
    while i < len(options):
        name = options[i].split("=")[0]
        if name in run_only:
            i += 1 + (run_only[name] if "=" not in options[i] else 0)
            continue
        compile_options.append(options[i])
        i += 1
    with tempfile.TemporaryDirectory() as tmp:
        obj = os.path.join(tmp, "kernels.o")
        done = subprocess.run([args.texc, "compile", program, *compile_options, "--emit", "obj", "-o", obj], capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            return done.returncode
        text = subprocess.run([objdump, "-d", "--no-show-raw-insn", obj], capture_output=True, text=True, check=True).stdout
        data = os.path.join(tmp, "perf.data")
        command = [perf, "record", "-q", "-e", "cpu-clock", "-F", str(args.frequency), "-o", data, "--", args.texc, "run", program,
                   *run_defaults, "--output-dir", os.path.join(tmp, "out"), *options]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            if "perf_event_paranoid" in done.stderr or "Permission" in done.stderr or "not permitted" in done.stderr:
                print("profile-kernels: skipped: perf may not sample here:\n" + done.stderr, file=sys.stderr)
                return SKIP
            sys.stderr.write(done.stderr)
            return done.returncode
        timing = [l for l in (done.stdout + done.stderr).split("\n") if l.startswith("time:")]
        script = subprocess.run([perf, "script", "-i", data, "-F", "ip,dso"], capture_output=True, text=True).stdout
    samples = collections.Counter()
    for line in script.split("\n"):
        parts = line.split()
        # JIT code has no file behind it: perf names a map file it looked for, /tmp/perf-PID.map.
        if len(parts) >= 2 and "perf-" in parts[1] and parts[1].endswith(".map)"):
            samples[int(parts[0], 16)] += 1
    if not samples:
        print("profile-kernels: no samples fell in the JIT's code (a longer --repeat?)", file=sys.stderr)
        return 1
    instructions, order, targets = parse_disassembly(text)
    base, mapped = find_base(samples, instructions)
    rows, per_function = attribute(samples, instructions, order, targets, base)
    for line in timing:
        print(line)
    report(rows, per_function, mapped, sum(samples.values()), limit=args.limit)
    if args.check and (2 * mapped < sum(samples.values()) or not any(span for _, _, span, _ in rows)):
        print("profile-kernels: --check: the samples did not map onto the kernels' instructions and loops", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
