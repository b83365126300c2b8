#!/usr/bin/env python3
"""texc benchmark driver: runs every workload for texc and its peers side by side, in one run.

    bench/bench.sh [--quick] [--json FILE] [--markdown FILE] [--only NAME,...] [--repeat N] [--rounds R]

(bench.sh installs what is missing and builds texc first; this script expects both done.)

Honesty rules, enforced here:
  * every timing is kernel time only: inputs are loaded and outputs allocated before the clock
    starts; each implementation runs once as a warm-up, then REPEAT (>= 5) timed runs, and the
    table shows their median and minimum;
  * every implementation gets the same input files, and its output is compared with texc's;
    the table shows the largest difference relative to the largest texc value, and a row whose
    result differs by more than the tolerance is marked FAIL;
  * the machine limits (copy and a=b+c+d bandwidth, FMA peak) are measured in the same run,
    on 1 and 2 threads; when the 2-thread limits are unstable, every 2-thread row is flagged;
  * a peer that cannot be installed, built or run stays in the table as "unavailable: why";
  * every implementation gets transparent huge pages for its large arrays where the kernel
    offers them (texc's runtime and numpy ask for them; the C++ peers, torch and the limits
    probe get them through glibc's malloc, GLIBC_TUNABLES=glibc.malloc.hugetlb=1), and the
    header says so: on a virtual machine a TLB miss walks two page tables, and a memory-bound
    loop on 4 KiB pages ran 25 % slower than on 2 MiB ones.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

import numpy as np

import targets as bench_targets  # bench/targets.py: the open issues' speed targets

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
BUILD = os.path.join(BENCH, ".build")
WORK = os.path.join(BENCH, ".work")
TEXC = os.path.join(ROOT, "build", "texc")
# The run uses a copy, so that a rebuild of build/texc during the run cannot break it.
TEXC_SNAPSHOT = os.path.join(BUILD, "texc")
CXX = os.environ.get("CXX", "g++")
# -fno-trapping-math lets gcc if-convert the clamps in vecmath.h (it changes no result).
CXXFLAGS = ["-O3", "-march=native", "-fno-trapping-math", "-std=c++20", "-pthread"]
MIN_REPEAT = 5


# --------------------------------------------------------------------------------------------
# Workloads. Each size is one table. `inputs` maps each input to its shape; `work` is the byte
# or flop count the rate is computed from; `limit` names the machine figure it is compared to.
# --------------------------------------------------------------------------------------------

ELEMENTWISE_PEERS = ["hand", "halide", "numpy", "numpy_out", "numexpr", "torch"]
ONE_THREAD_ONLY = {"numpy", "numpy_out"}  # numpy's elementwise operators run on one thread
# texc with the fast elementary functions beside the precise default (docs/vector-math.md).
FAST_MATH = {"texc --math=fast": ["--math=fast"]}


def gelu(n_rows, d):
    n = n_rows * d
    return dict(name="gelu 2^%d" % int(np.log2(n)), tex="gelu", defs={"N": n_rows, "D": d},
                inputs={"x": (n_rows, d), "b": (d,), "r": (n_rows, d)}, output="out",
                bytes=4 * (3 * n + d), limit="add3", peers=ELEMENTWISE_PEERS, tol=1e-4, texc_variants=FAST_MATH)


def ediff(n):
    return dict(name="E=D+(A+B)*C 2^%d" % int(np.log2(n)), tex="ediff", defs={"N": n},
                inputs={k: (n,) for k in "ABCD"}, output="E", bytes=4 * 5 * n, limit="add3",
                peers=ELEMENTWISE_PEERS, tol=1e-5)


def softmax(r, d):
    return dict(name="softmax %dx%d" % (r, d), tex="softmax", defs={"R": r, "D": d},
                inputs={"x": (r, d)}, output="y", bytes=4 * 2 * r * d, limit="copy",
                peers=ELEMENTWISE_PEERS, tol=1e-4, texc_variants=FAST_MATH)


def layernorm(r, d):
    return dict(name="layernorm %dx%d" % (r, d), tex="layernorm", defs={"R": r, "D": d},
                inputs={"x": (r, d), "gamma": (d,), "beta": (d,)}, output="y",
                bytes=4 * (2 * r * d + 2 * d), limit="copy",
                peers=["hand", "numpy", "torch"], tol=1e-4)


def matmul(m, n, k):
    name = "matmul %d" % m if m == n == k else "matmul M=%d N=%d K=%d" % (m, n, k)
    return dict(name=name, tex="matmul", defs={"M": m, "N": n, "K": k},
                inputs={"A": (m, k), "B": (k, n)}, output="C", flops=2 * m * n * k, limit="fma",
                peers=["openblas", "blis", "eigen", "halide", "numpy", "torch"], tol=1e-4)


def bf16_of(wl):
    """The same memory-bound workload over bf16 tensors (bench/workloads/NAME_bf16.tex): half the
    bytes (or, for a contraction, the bf16 dot-product peak as its limit); texc alone (with its --math=fast variant), to be read against the f32 row above it."""
    # oneDNN's bf16 convolution is the peer of the bf16 conv row; the others are texc alone.
    out = dict(wl, name="bf16 " + wl["name"], tex=wl["tex"] + "_bf16", dtype="bf16",
               peers=["dnnl"] if wl["tex"] == "conv" else [], tol=1e-2)
    if "bytes" in wl:
        out["bytes"] = wl["bytes"] // 2
    else:
        # a contraction: vdpbf16ps where the CPU has it; attention's micro-kernels widen to f32
        out["limit"] = wl.get("bf16_limit", "bf16dot")
    return out


def matmul_bf16(m, n, k):
    # bf16 in and out: texc reads the inputs as bf16 (.npy `<V2`), the peers the same values in
    # f32 files (exact) and convert them; results are compared in f32, to bf16's precision.
    return dict(name="bf16 matmul %d" % m if m == n == k else "bf16 matmul M=%d N=%d K=%d" % (m, n, k),
                tex="matmul_bf16", defs={"M": m, "N": n, "K": k}, dtype="bf16",
                inputs={"A": (m, k), "B": (k, n)}, output="C", flops=2 * m * n * k, limit="bf16dot",
                peers=["dnnl"], tol=1e-2)


def conv(n, c, k, h, w):
    return dict(name="conv3x3+scale/bias+maxpool (%d,%d,%d,%d,%d)" % (n, c, k, h, w), tex="conv",
                defs={"N": n, "C": c, "K": k, "H": h, "W": w},
                inputs={"I": (n, c, h, w), "Wt": (k, c, 3, 3), "scale": (k,), "bias": (k,)},
                output="pool", flops=2 * n * k * c * 9 * h * w, limit="fma",
                peers=["hand", "dnnl", "numpy", "torch"], tol=1e-4)


def attention(n, d=64, causal=True):
    # flops: the two products over the (i, j) the mask keeps (causal: j <= i, N (N + 1) / 2 pairs),
    # the work that has to be done; an implementation that computes every pair and masks does
    # twice that, and its rate here counts only the half that is needed.
    # `texc materialized` is texc with --disable-pass=online-softmax (the N x N scores stored).
    pairs = n * (n + 1) // 2 if causal else n * n
    return dict(name="attention%s N=%d d=%d" % ("" if causal else " (no mask)", n, d),
                tex="attention" if causal else "attention_full", defs={"N": n, "Dh": d},
                inputs={"Q": (n, d), "K": (n, d), "V": (n, d)}, output="O",
                flops=4 * pairs * d, limit="fma", bf16_limit="fma", peers=["hand", "openblas", "numpy", "torch"], tol=1e-4,
                texc_variants={"texc materialized": ["--disable-pass=online-softmax"]})


FULL = [gelu(4096, 4096), gelu(16384, 4096), ediff(1 << 24), softmax(4096, 4096), layernorm(4096, 4096),
        bf16_of(gelu(4096, 4096)), bf16_of(softmax(4096, 4096)), bf16_of(layernorm(4096, 4096)),
        matmul(256, 256, 256), matmul(512, 512, 512), matmul(1024, 1024, 1024), matmul(2048, 2048, 2048),
        matmul(128, 4096, 4096), matmul_bf16(2048, 2048, 2048), conv(1, 64, 64, 56, 56), conv(8, 64, 128, 28, 28),
        bf16_of(conv(1, 64, 64, 56, 56)),
        attention(1024), bf16_of(attention(1024)), attention(4096), attention(16384),
        attention(1024, causal=False), attention(4096, causal=False), attention(16384, causal=False)]
QUICK = [gelu(1024, 4096), ediff(1 << 22), softmax(1024, 4096), layernorm(1024, 4096),
         matmul(256, 256, 256), matmul(512, 512, 512), matmul_bf16(512, 512, 512), conv(1, 64, 64, 56, 56), attention(1024)]

# What each C++ peer is built from (extra flags after the common ones); its binary takes
# WORKLOAD INPUT_DIR OUT.npy THREADS REPEAT and prints one JSON line.
CPP_PEERS = {
    "hand": (["hand.cpp"], []),
    "openblas": (["blas.cpp"], ["-DUSE_OPENBLAS", "-lopenblas"]),
    "blis": (["blas.cpp"], ["-DUSE_BLIS", "-lblis"]),
    "eigen": (["eigen.cpp"], ["-fopenmp", "-I/usr/include/eigen3"]),
    "dnnl": (["dnnl.cpp"], ["-ldnnl"]),
    "halide": (["halide.cpp"], ["-I/usr/include/halide14", "-lHalide14", "-ldl"]),
}
PY_PEERS = {"numpy", "numpy_out", "numexpr", "torch"}
PEER_LABEL = {
    "hand": "hand-fused C++ loop", "openblas": "OpenBLAS", "blis": "BLIS", "eigen": "Eigen",
    "dnnl": "oneDNN", "halide": "Halide (JIT, hand schedule)", "numpy": "numpy op-by-op",
    "numpy_out": "numpy out=", "numexpr": "numexpr", "torch": "torch (CPU, eager)", "texc": "texc",
    "texc materialized": "texc --disable-pass=online-softmax",
}
WORKLOAD_ARG = {"gelu": "gelu", "ediff": "ediff", "softmax": "softmax", "layernorm": "layernorm",
                "gelu_bf16": "gelu_bf16", "softmax_bf16": "softmax_bf16", "layernorm_bf16": "layernorm_bf16",
                "matmul": "matmul", "matmul_bf16": "matmul_bf16", "conv": "conv", "conv_bf16": "conv_bf16", "attention": "attention", "attention_bf16": "attention_bf16",
                "attention_full": "attention_full"}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Building peers, the machine and its limits
# --------------------------------------------------------------------------------------------

def build_cpp(name, sources, extra):
    """Build one C++ peer into .build/ when its sources are newer; return (path, error)."""
    os.makedirs(BUILD, exist_ok=True)
    exe = os.path.join(BUILD, name)
    srcs = [os.path.join(BENCH, "peers", s) for s in sources]
    deps = srcs + [os.path.join(BENCH, "peers", h) for h in ("common.h", "vecmath.h")]
    if os.path.exists(exe) and all(os.path.getmtime(exe) >= os.path.getmtime(d) for d in deps):
        return exe, None
    cmd = [CXX] + CXXFLAGS + srcs + ["-o", exe] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        first = next((l for l in p.stderr.splitlines() if "error" in l), p.stderr.strip()[:200])
        return None, "build failed: " + first.strip()[:160]
    return exe, None


def cpu_info():
    with open("/proc/cpuinfo") as f:
        text = f.read()

    def field(name):
        m = re.search(r"^%s\s*:\s*(.*)$" % name, text, re.M)
        return m.group(1).strip() if m else ""
    flags = set(field("flags").split())
    return dict(model=field("model name") or platform.processor(), cores=os.cpu_count(), avx2="avx2" in flags,
                fma="fma" in flags, avx512f="avx512f" in flags, avx512_bf16="avx512_bf16" in flags,
                amx="amx_tile" in flags, family=int(field("cpu family") or 0),
                vendor=field("vendor_id"))


# The peers' kernels, probed in a child process (each library reads its variable once, when it
# loads): each probe prints the kernel the library says it runs, then its SGEMM rates at 1024 and 2048 on
# one thread (GFLOP/s, each the best of 5 after a warm-up; the operands are zeros, which cost an
# FMA what any value does), so that the bench can keep the fastest of the kernels the CPU runs.
_SGEMM_RATE = ("import time\n"
               "P = ctypes.c_void_p\n"
               "l.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, P, ctypes.c_int, P, ctypes.c_int, ctypes.c_float, P, ctypes.c_int]\n"
               "for n in (1024, 2048):\n"
               "    A, B, C = ((ctypes.c_float * (n * n))() for _ in range(3))\n"
               "    best = float('inf')\n"
               "    for k in range(6):\n"
               "        t = time.perf_counter()\n"
               "        l.cblas_sgemm(101, 111, 111, n, n, n, 1.0, A, n, B, n, 0.0, C, n)\n"
               "        best = min(best, time.perf_counter() - t) if k else best\n"
               "    print('%.1f' % (2 * n ** 3 / best / 1e9))\n")
_PROBE = {
    "openblas": "import ctypes, ctypes.util\n"
                "l = ctypes.CDLL(ctypes.util.find_library('openblas'))\n"
                "l.openblas_get_corename.restype = ctypes.c_char_p\n"
                "print(l.openblas_get_corename().decode())\n" + _SGEMM_RATE,
    "blis": "import ctypes, ctypes.util\n"
            "l = ctypes.CDLL(ctypes.util.find_library('blis'))\n"
            "l.bli_init()\n"
            "l.bli_arch_string.restype = ctypes.c_char_p\n"
            "print(l.bli_arch_string(l.bli_arch_query_id()).decode())\n" + _SGEMM_RATE,
}


def probe_kernel(lib, env_extra):
    """(the kernel the library runs under env_extra, its SGEMM GFLOP/s at 1024 and 2048 on one
    thread), or ("", ()) when the probe fails."""
    env = dict(os.environ)
    env.update(env_extra)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS"):
        env[var] = "1"
    env["GLIBC_TUNABLES"] = "glibc.malloc.hugetlb=1"
    try:
        p = subprocess.run([sys.executable, "-c", _PROBE[lib]], capture_output=True, text=True, env=env, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "", ()
    words = p.stdout.split() if p.returncode == 0 else []
    return (words[0], (float(words[1]), float(words[2]))) if len(words) == 3 else ("", ())


def blis_arch_ids():
    """BLIS 0.9 reads BLIS_ARCH_TYPE as the index of its arch_t enum: map the names to indices."""
    code = ("import ctypes, ctypes.util\n"
            "l = ctypes.CDLL(ctypes.util.find_library('blis'))\n"
            "l.bli_arch_string.restype = ctypes.c_char_p\n"
            "print(' '.join(l.bli_arch_string(i).decode() for i in range(40) if l.bli_arch_string(i)))\n")
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    names = p.stdout.split() if p.returncode == 0 else []
    return {name: i for i, name in enumerate(names)}


def fastest_kernel(lib, candidates):
    """Of candidates [(name, env)], those the library then reports running (a name it does not
    know, or a kernel whose instructions the CPU lacks, falls back to its own choice), the one with
    the best geometric mean of its SGEMM 1024 and 2048 rates: (name, env, words for the report),
    or None."""
    rates = []
    for name, env in candidates:
        ran, rate = probe_kernel(lib, env)
        if ran.lower() == name.lower() and rate and min(rate) > 0:
            rates.append((rate, name, env))
    if not rates:
        return None
    best = max(rates, key=lambda r: r[0][0] * r[0][1])
    return (best[1], best[2], "fastest at SGEMM 1024 / 2048 of " +
            ", ".join("%s %.1f / %.1f" % (n, r[0], r[1]) for r, n, _ in rates) + " GFLOP/s")


def peer_kernels(cpu):
    """The BLAS peers at their best kernel for this CPU: OpenBLAS's core type and BLIS's arch,
    each the fastest at SGEMM 1024 and 2048 on one thread of the kernels the CPU runs. Debian's OpenBLAS
    0.3.21 runs SkylakeX kernels on a Sapphire Rapids unless told Cooperlake, and Debian's BLIS 0.9
    runs haswell kernels there unless told skx; on a Zen 4 BLIS's zen3 kernel beat its skx one
    (1024: 99 against 86 GFLOP/s), so the newest kernel is not always the best: each is timed.
    A variable the user already set is kept. Returns (env, words for the report)."""
    env, said = {}, []
    if "OPENBLAS_CORETYPE" in os.environ:
        env["OPENBLAS_CORETYPE"] = os.environ["OPENBLAS_CORETYPE"]
        said.append("OpenBLAS %s (OPENBLAS_CORETYPE as given)" % os.environ["OPENBLAS_CORETYPE"])
    else:
        wanted = []
        if cpu["avx512f"]:
            wanted += ["SapphireRapids"] if cpu["amx"] else []
            wanted += ["Cooperlake"] if cpu["avx512_bf16"] else []
            wanted += ["SkylakeX"]
        if cpu["vendor"] == "AuthenticAMD" and cpu["family"] >= 0x17:
            wanted += ["Zen"]
        wanted += ["Haswell"] if cpu["avx2"] else []
        best = fastest_kernel("openblas", [(name, {"OPENBLAS_CORETYPE": name}) for name in wanted])
        if best:
            env.update(best[1])
            said.append("OpenBLAS %s (%s)" % (best[0], best[2]))
        else:
            said.append("OpenBLAS %s (its own choice)" % (probe_kernel("openblas", {})[0] or "unavailable"))
    if "BLIS_ARCH_TYPE" in os.environ:
        env["BLIS_ARCH_TYPE"] = os.environ["BLIS_ARCH_TYPE"]
        said.append("BLIS arch %s (BLIS_ARCH_TYPE as given)" % os.environ["BLIS_ARCH_TYPE"])
    else:
        ids = blis_arch_ids()
        wanted = []
        if cpu["avx512f"]:
            wanted += ["skx"]
        if cpu["vendor"] == "AuthenticAMD":
            wanted += {0x19: ["zen3", "zen2", "zen"], 0x17: ["zen2", "zen"]}.get(cpu["family"], [])
        wanted += ["haswell"] if cpu["avx2"] else []
        best = fastest_kernel("blis", [(name, {"BLIS_ARCH_TYPE": str(ids[name])}) for name in wanted if name in ids])
        if best:
            env.update(best[1])
            said.append("BLIS %s (BLIS_ARCH_TYPE=%s, %s)" % (best[0], best[1]["BLIS_ARCH_TYPE"], best[2]))
        else:
            said.append("BLIS %s (its own choice)" % (probe_kernel("blis", {})[0] or "unavailable"))
    return env, "; ".join(said)


def peer_env(threads, kernels):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "MKL_NUM_THREADS",
                "BLIS_NUM_THREADS"):
        env[var] = str(threads)
    env.update(kernels)
    env["HL_NUM_THREADS"] = str(threads)
    return env


def huge_pages():
    """Asks glibc's malloc, in every process this run starts, to request transparent huge pages
    for what it maps (glibc 2.35 and later; others ignore the tunable), and returns what the
    header says about it."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = re.search(r"\[(\w+)\]", f.read())
        mode = mode.group(1) if mode else "unknown"
    except OSError:
        mode = "unknown (no /sys/kernel/mm/transparent_hugepage)"
    tunables = [t for t in os.environ.get("GLIBC_TUNABLES", "").split(":") if t and not t.startswith("glibc.malloc.hugetlb=")]
    os.environ["GLIBC_TUNABLES"] = ":".join(tunables + ["glibc.malloc.hugetlb=1"])
    return ("transparent huge pages %s; texc's runtime and numpy ask for them for large arrays, every other "
            "implementation and the limits probe through GLIBC_TUNABLES=glibc.malloc.hugetlb=1" % mode)


def measure_limits(quick):
    exe, err = build_cpp("limits", ["limits.cpp"], [])
    if err:
        sys.exit("cannot build the limits probe: " + err)
    n = 1 << (24 if quick else 25)
    out = subprocess.run([exe, str(n), "7"], capture_output=True, text=True, check=True).stdout
    figures = {}
    for f in json.loads(out):
        figures[(f["figure"], f["threads"])] = f
    return figures


def limit_value(limits, which, threads):
    """A limit is what the machine reaches: the best of the repeated measurements."""
    if which == "fma":
        key = ("fma_avx512", threads) if ("fma_avx512", threads) in limits else ("fma_avx2", threads)
        return limits[key]["max"], key[0]
    if which == "bf16dot":
        # AMX tiles (tdpbf16ps) where the probe measured them; else vdpbf16ps (AVX512-BF16) does
        # two multiply-adds per f32 lane at the FMA's rate; without it a bf16 contraction runs on
        # f32 FMAs.
        if ("amx_bf16", threads) in limits:
            return limits[("amx_bf16", threads)]["max"], "amx_bf16"
        fma, name = limit_value(limits, "fma", threads)
        return (2 * fma, "2x " + name + " (vdpbf16ps)") if cpu_info()["avx512_bf16"] else (fma, name)
    if which in ("copy", "add3") and (which + "_nt", threads) in limits:
        # The bandwidth is the better of ordinary and streaming stores (those skip the read of
        # each destination line): texc streams its large outputs.
        nt = which + "_nt"
        best = nt if limits[(nt, threads)]["max"] > limits[(which, threads)]["max"] else which
        return limits[(best, threads)]["max"], best
    return limits[(which, threads)]["max"], which


def spread(f):
    return (f["max"] - f["min"]) / f["median"]


def reliability(limits):
    """2-thread figures are trusted only when the 2-thread limits scale and repeat."""
    fma = "fma_avx512" if ("fma_avx512", 1) in limits else "fma_avx2"
    scale = limits[(fma, 2)]["max"] / limits[(fma, 1)]["max"]
    worst2 = max(spread(limits[(k, 2)]) for k in ("copy", "add3", fma))
    worst1 = max(spread(limits[(k, 1)]) for k in ("copy", "add3", fma))
    reasons = []
    if scale < 1.6:
        reasons.append("the best 2-thread FMA peak is only %.2fx the 1-thread one" % scale)
    if worst2 > 0.25:
        reasons.append("2-thread limits vary by up to %.0f%% between repeats" % (100 * worst2))
    return dict(two_thread_unreliable=bool(reasons), reasons=reasons, fma_scale=scale,
                spread_1t=worst1, spread_2t=worst2, one_thread_noisy=worst1 > 0.25)


# --------------------------------------------------------------------------------------------
# Running texc and the peers
# --------------------------------------------------------------------------------------------

def texc_cmd(wl, indir, outdir, threads, repeat, extra=()):
    cmd = [TEXC_SNAPSHOT, "run", os.path.join(BENCH, "workloads", wl["tex"] + ".tex")] + list(extra)
    for k, v in wl["defs"].items():
        cmd += ["-D", "%s=%d" % (k, v)]
    suffix = ".bf16.npy" if wl.get("dtype") == "bf16" else ".npy"
    for name in wl["inputs"]:
        cmd += ["--input", "%s=%s" % (name, os.path.join(indir, name + suffix))]
    return cmd + ["--threads", str(threads), "--output-dir", outdir, "--repeat", str(repeat), "--time-passes"]


def run_texc(wl, indir, outdir, threads, repeat, budget_s, extra=()):
    """texc's own timer: one warm-up run, then REPEAT timed runs (kernel time only). A probe run
    first measures one run; a row whose REPEAT+1 runs would exceed the budget keeps that single
    timing and says so, and a probe that outlives the budget is stopped and reported as such
    (its output is then missing, so that row's peers go unchecked)."""
    try:
        p = subprocess.run(texc_cmd(wl, indir, outdir, threads, 0, extra), capture_output=True, text=True,
                           timeout=budget_s)
    except subprocess.TimeoutExpired:
        return dict(unavailable="one texc run takes over %.0f s (the row's budget), so over %.0f ms"
                                % (budget_s, budget_s * 1e3))
    except OSError as e:
        return dict(unavailable="texc could not start: %s" % e)
    if p.returncode != 0:
        return dict(unavailable="texc failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:160])
    m = re.search(r"^\s*run\s+([\d.]+) ms\s+\((\d+) kernels", p.stderr, re.M)
    one_ms, kernels = float(m.group(1)), int(m.group(2))
    if one_ms / 1e3 * (repeat + 1) > budget_s:
        return with_rss(dict(median_ms=one_ms, min_ms=one_ms, runs=1, info="%d kernels" % kernels,
                             note="one run, not a median: %d runs would take %.0f s (budget %.0f s)"
                                  % (repeat + 1, one_ms / 1e3 * (repeat + 1), budget_s)), p.stderr)
    p = subprocess.run(texc_cmd(wl, indir, outdir, threads, repeat, extra), capture_output=True, text=True)
    if p.returncode != 0:
        return dict(unavailable="texc failed: " + (p.stderr.strip().splitlines() or ["?"])[-1][:160])
    m = re.search(r"time: median ([\d.]+) ms, min ([\d.]+) ms over (\d+) runs \((\d+) kernels", p.stderr)
    return with_rss(dict(median_ms=float(m.group(1)), min_ms=float(m.group(2)), runs=int(m.group(3)),
                         info="%s kernels" % m.group(4)), p.stderr)


def with_rss(r, stderr):
    """Adds texc's peak resident set (its --time-passes line) to a row: attention's N x N
    buffers show there."""
    rss = re.search(r"^\s*peak RSS\s+([\d.]+) MiB", stderr, re.M)
    if rss:
        r["peak_rss_mib"] = float(rss.group(1))
        r["info"] += ", peak RSS %.0f MiB" % r["peak_rss_mib"]
    return r


def run_cpp(peer, exe, wl, indir, out, threads, repeat, env, timeout):
    try:
        p = subprocess.run([exe, WORKLOAD_ARG[wl["tex"]], indir, out, str(threads), str(repeat)],
                           capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(unavailable="timed out after %d s" % timeout)
    if p.returncode != 0:
        return dict(unavailable="failed: " + (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:160])
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_python(impls, wl, indir, outdir, threads, repeat, env, timeout):
    cmd = [sys.executable, os.path.join(BENCH, "peers", "py_peers.py"), WORKLOAD_ARG[wl["tex"]], indir, outdir,
           str(threads), str(repeat), ",".join(impls), ",".join(wl["inputs"])]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {i: dict(unavailable="timed out after %d s" % timeout) for i in impls}
    if p.returncode != 0:
        why = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:160]
        return {i: dict(unavailable="python peers failed: " + why) for i in impls}
    rows = json.loads(p.stdout.strip().splitlines()[-1])
    return {r.pop("impl"): r for r in rows}


def load_result(path):
    """An output file as an array; bf16 (`<V2`, texc's) widened to float32."""
    got = np.load(path)
    if got.dtype.kind == "V" and got.dtype.itemsize == 2:
        got = (np.frombuffer(got.tobytes(), dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(got.shape)
    return got


def compare(ref, path, tol):
    """Largest |peer - texc| relative to the largest |texc|; float32 required."""
    if not os.path.exists(path):
        return None, "no output"
    got = load_result(path)
    if got.dtype != np.float32:
        return None, "result is %s, not float32" % got.dtype
    if got.shape != ref.shape:
        return None, "shape %s, texc %s" % (got.shape, ref.shape)
    err = float(np.max(np.abs(got.astype(np.float64) - ref)) / max(float(np.max(np.abs(ref))), 1e-30))
    return err, None if err <= tol else "differs from texc by %.2e (tolerance %.0e)" % (err, tol)


def make_inputs(wl, indir, seed):
    rng = np.random.default_rng(seed)
    os.makedirs(indir, exist_ok=True)
    for name, shape in wl["inputs"].items():
        x = rng.uniform(-1, 1, size=shape).astype(np.float32)
        if wl.get("dtype") == "bf16":
            # Rounded to bf16 (nearest even) for everyone: texc reads the bits, the peers the f32 values.
            bits = x.view(np.uint32)
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
            np.save(os.path.join(indir, name + ".bf16.npy"), bits.view("V2"))
            x = (bits.astype(np.uint32) << 16).view(np.float32)
        np.save(os.path.join(indir, name + ".npy"), x)


def run_round(wl, args, builds, kernels, indir, threads, state, backwards):
    """One pass over texc, its variants and the peers at one thread count; `backwards` runs them
    in the opposite order (alternate rounds do, so that a drift of the machine's speed over the
    rounds weighs on both ends alike). Returns [(impl, result)] in table order."""
    env = peer_env(threads, kernels)
    outdir = os.path.join(WORK, "out%d" % threads)
    os.makedirs(outdir, exist_ok=True)

    def texc_row():
        t0 = time.time()
        r = run_texc(wl, indir, os.path.join(outdir, "texc"), threads, args.repeat, args.texc_budget)
        texc_out = os.path.join(outdir, "texc", wl["output"] + ".npy")
        if "unavailable" not in r:
            if state["ref"] is None:
                state["ref"] = load_result(texc_out).astype(np.float64)
                r["check"] = 0.0
            else:
                r["check"], bad = compare(state["ref"], texc_out, wl["tol"])
                if bad:
                    r["check_fail"] = "%d-thread texc " % threads + bad
        log("  %-28s %dT  texc %s  (%.1f s)" % (wl["name"], threads, fmt_ms(r), time.time() - t0))
        return [("texc", r)]

    def variant_row(variant, extra):
        # texc under other switches (attention: materialized), checked against texc's result.
        t0 = time.time()
        vdir = os.path.join(outdir, variant.replace(" ", "_"))
        r = run_texc(wl, indir, vdir, threads, args.repeat, args.texc_budget, extra)
        if "unavailable" not in r and state["ref"] is not None:
            r["check"], bad = compare(state["ref"], os.path.join(vdir, wl["output"] + ".npy"), wl["tol"])
            if bad:
                r["check_fail"] = bad
        log("  %-28s %dT  %s %s  (%.1f s)" % (wl["name"], threads, variant, fmt_ms(r), time.time() - t0))
        return [(variant, r)]

    def checked(peer, r):
        peer_out = os.path.join(outdir, peer + ".npy")
        if "unavailable" not in r and state["ref"] is None and os.path.exists(peer_out):
            # texc did not finish: the first peer's result becomes the reference instead.
            state["ref"] = load_result(peer_out).astype(np.float64)
            r["check"], r["note"] = 0.0, "reference for the check (texc gave no result)"
        elif "unavailable" not in r and state["ref"] is not None:
            r["check"], bad = compare(state["ref"], peer_out, wl["tol"])
            if bad:
                r["check_fail"] = bad
        return r

    def cpp_row(peer):
        t0 = time.time()
        if builds[peer][1]:
            r = dict(unavailable=builds[peer][1])
        else:
            r = run_cpp(peer, builds[peer][0], wl, indir, os.path.join(outdir, peer + ".npy"), threads,
                        args.repeat, env, args.peer_timeout)
        r = checked(peer, r)
        log("  %-28s %dT  %s %s  (%.1f s)" % (wl["name"], threads, peer, fmt_ms(r), time.time() - t0))
        return [(peer, r)]

    def py_rows(py):
        # The Python peers share one process (numpy, numexpr and torch load once).
        results = run_python(py, wl, indir, outdir, threads, args.repeat, env, args.peer_timeout)
        out = []
        for peer in py:
            if peer in results:
                out.append((peer, checked(peer, results[peer])))
                log("  %-28s %dT  %s %s" % (wl["name"], threads, peer, fmt_ms(results[peer])))
        return out

    peers = [p for p in wl["peers"] if not (threads > 1 and p in ONE_THREAD_ONLY and wl["tex"] in
                                            ("gelu", "ediff", "softmax", "layernorm"))]
    py = [p for p in peers if p in PY_PEERS]
    steps = [texc_row] + [lambda v=v, e=e: variant_row(v, e) for v, e in wl.get("texc_variants", {}).items()]
    steps += [lambda p=p: cpp_row(p) for p in peers if p not in PY_PEERS]
    if py:
        steps.append(lambda: py_rows(py))
    done = {}
    for step in (reversed(steps) if backwards else steps):
        for impl, r in step():
            done[impl] = r
    order = ["texc"] + list(wl.get("texc_variants", {})) + peers
    return [(impl, done[impl]) for impl in order if impl in done]


def combine_rounds(impl, rounds, texc_rounds, limit_rounds, wl):
    """One row from an implementation's results by round number: the median of its round
    medians, the least of its minimums, and, measured within each round, its time over texc's
    and its rate over the limit probed at the start of that round; each of those is the median
    over the rounds, with its range in the notes."""
    ok = [(i, r) for i, r in sorted(rounds.items()) if "unavailable" not in r]
    if not ok:
        return dict(rounds[max(rounds)])
    row = dict(ok[-1][1])
    medians = [r["median_ms"] for _, r in ok]
    row["median_ms"] = float(np.median(medians))
    row["min_ms"] = min(r["min_ms"] for _, r in ok)
    row["runs"] = sum(r.get("runs", 0) for _, r in ok)
    row["round_medians_ms"] = medians
    checks = [r["check"] for _, r in ok if r.get("check") is not None]
    if checks:
        row["check"] = max(checks)
    fails = [r["check_fail"] for _, r in ok if r.get("check_fail")]
    if fails:
        row["check_fail"] = fails[0]
    ratios = [r["median_ms"] / texc_rounds[i]["median_ms"] for i, r in ok
              if "median_ms" in texc_rounds.get(i, {})]
    if ratios:
        row["round_ratios_to_texc"] = ratios
    work = wl.get("bytes", wl.get("flops"))
    fractions = [work / (r["median_ms"] * 1e-3) / 1e9 / limit_rounds[i] for i, r in ok]
    row["round_fractions_of_limit"] = fractions
    said = "%d rounds" % len(ok)
    if ratios and impl != "texc":
        said += ", time / texc %.3f-%.3f" % (min(ratios), max(ratios))
    said += ", of the round's limit %.3f-%.3f" % (min(fractions), max(fractions))
    row["note"] = "; ".join(x for x in (row.get("note", ""), said) if x)
    return row


def run_workload(wl, args, limits, rel, builds, kernels):
    indir = os.path.join(WORK, "in")
    shutil.rmtree(WORK, ignore_errors=True)
    make_inputs(wl, indir, args.seed)
    state = dict(ref=None)
    threads_list = [1, 2]
    # by_threads[t][impl] = that implementation's result in each round, in order
    by_threads = {t: {} for t in threads_list}
    order = {t: [] for t in threads_list}
    round_limits = []
    for rnd in range(args.rounds):
        if args.rounds > 1:
            # The limits again at the start of every round, for fractions of the same minutes.
            probe = limits if rnd == 0 else measure_limits(args.quick)
            round_limits.append({t: limit_value(probe, wl["limit"], t)[0] for t in threads_list})
            log("  round %d of %d" % (rnd + 1, args.rounds))
        for threads in threads_list:
            for impl, r in run_round(wl, args, builds, kernels, indir, threads, state, backwards=rnd % 2 == 1):
                if impl not in by_threads[threads]:
                    by_threads[threads][impl] = {}
                    order[threads].append(impl)
                by_threads[threads][impl][rnd] = r
    rows = []
    for threads in threads_list:
        texc_rounds = by_threads[threads].get("texc", {})
        for impl in order[threads]:
            rounds = by_threads[threads][impl]
            if args.rounds > 1:
                r = combine_rounds(impl, rounds, texc_rounds, {i: lim[threads] for i, lim in enumerate(round_limits)}, wl)
            else:
                r = dict(rounds[0])
            r["impl"] = impl
            rows.append((threads, r))
    # Rates, fractions, ratios.
    texc_ms = {t: r["median_ms"] for t, r in rows if r["impl"] == "texc" and "median_ms" in r}
    out = []
    for threads, r in rows:
        row = dict(workload=wl["name"], impl=r.pop("impl"), threads=threads)
        row.update(r)
        if "median_ms" in r:
            lim, lim_name = limit_value(limits, wl["limit"], threads)
            if "bytes" in wl:
                row["gbps"] = wl["bytes"] / (r["median_ms"] * 1e-3) / 1e9
                row["fraction_of_limit"] = row["gbps"] / lim
            else:
                row["gflops"] = wl["flops"] / (r["median_ms"] * 1e-3) / 1e9
                row["fraction_of_limit"] = row["gflops"] / lim
            row["limit"] = "%s %dT" % (lim_name, threads)
            if "round_fractions_of_limit" in r:
                row["fraction_of_limit"] = float(np.median(r["round_fractions_of_limit"]))
                row["limit"] += ", probed each round"
            if threads in texc_ms:
                row["ratio_to_texc"] = r["median_ms"] / texc_ms[threads]
            if "round_ratios_to_texc" in r:
                row["ratio_to_texc"] = float(np.median(r["round_ratios_to_texc"]))
            if threads == 2 and rel["two_thread_unreliable"]:
                row["flag"] = "2-thread figures unreliable on this machine"
            if r.get("runs", 0) < MIN_REPEAT:
                row["flag"] = (row.get("flag", "") + "; " if row.get("flag") else "") + r.get("note", "fewer runs")
        out.append(row)
    shutil.rmtree(WORK, ignore_errors=True)
    return out


def fmt_ms(r):
    if "unavailable" in r:
        return "unavailable: " + r["unavailable"]
    return "median %.3f ms, min %.3f ms" % (r["median_ms"], r["min_ms"])


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def texc_target():
    """What texc generates code for in this run (`texc passes`' first line: the CPU --cpu host
    resolves to, its vector width and registers, its caches), so every figure names it."""
    try:
        p = subprocess.run([TEXC_SNAPSHOT, "passes"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "(unknown: texc passes did not run)"
    for line in p.stdout.splitlines():
        if line.startswith("# cpu "):
            return line[2:]
    return "(unknown: texc passes printed no cpu line)"


def markdown(rows, wls, meta):
    lim, rel = meta["limits"], meta["reliability"]
    lines = ["# texc benchmark: %s" % meta["date"], "",
             "Machine: %s, %d logical CPUs, AVX2 %s, FMA %s, AVX-512 %s. Load average at start %s, at end %s. "
             "Mode: %s, %d timed runs after one warm-up per row%s. BLAS kernels: %s. Memory: %s."
             % (meta["cpu"]["model"], meta["cpu"]["cores"], yes(meta["cpu"]["avx2"]), yes(meta["cpu"]["fma"]),
                yes(meta["cpu"]["avx512f"]), meta["load_start"], meta["load_end"], meta["mode"], meta["repeat"],
                rounds_said(meta.get("rounds", 1)),
                meta["blas_kernels"], meta.get("memory", "(not recorded)")), "",
             "texc's code: %s." % meta.get("texc_cpu", "(unknown)"), "",
             "## Machine limits (measured by this run: best of 7 after a warm-up, with min-median)", "",
             "Fractions in the tables are of the best figure, at the same thread count; a bandwidth is the "
             "better of ordinary and streaming stores.", "",
             "| figure | 1 thread | 2 threads |", "| --- | --- | --- |"]
    names = {"copy": "copy b = a (GB/s, read + write)", "add3": "d = a + b + c (GB/s)",
             "copy_nt": "copy, streaming stores (GB/s)", "add3_nt": "a + b + c, streaming stores (GB/s)",
             "fma_avx2": "AVX2 FMA peak (GFLOP/s)", "fma_avx512": "AVX-512 FMA peak (GFLOP/s)",
             "amx_bf16": "AMX tdpbf16ps peak (GFLOP/s)"}
    for fig in ("copy", "add3", "copy_nt", "add3_nt", "fma_avx2", "fma_avx512", "amx_bf16"):
        if (fig, 1) in lim:
            cells = ["**%.1f** (%.1f-%.1f)" % (lim[(fig, t)]["max"], lim[(fig, t)]["min"], lim[(fig, t)]["median"])
                     for t in (1, 2)]
            lines.append("| %s | %s | %s |" % (names[fig], cells[0], cells[1]))
    lines.append("")
    if rel["two_thread_unreliable"]:
        lines.append("**2-thread rows are flagged (†) as unreliable:** " + "; ".join(rel["reasons"]) + ".")
    else:
        lines.append("2-thread figures look reliable (FMA peak scales %.2fx; repeats vary by at most %.0f%%)."
                     % (rel["fma_scale"], 100 * rel["spread_2t"]))
    if rel["one_thread_noisy"]:
        lines.append("The 1-thread limits also vary by up to %.0f%% between repeats: the machine was busy."
                     % (100 * rel["spread_1t"]))
    lines += ["", "Columns: median and min of the timed runs; rate from the workload's byte or flop count; "
              "fraction of the machine limit named in the heading, at the same thread count; "
              "time / texc = this row's median over texc's median at the same thread count (below 1: faster "
              "than texc); check = largest |result - texc| / largest |texc|.", ""]
    for wl in wls:
        wrows = [r for r in rows if r["workload"] == wl["name"]]
        unit = "GB/s" if "bytes" in wl else "GFLOP/s"
        limname = {"add3": "a+b+c bandwidth", "copy": "copy bandwidth", "fma": "FMA peak",
                   "bf16dot": "AMX tdpbf16ps peak" if ("amx_bf16", 1) in lim
                   else "bf16 dot peak (2x FMA with AVX512-BF16)"}[wl["limit"]]
        lines += ["### %s" % wl["name"], "",
                  "| implementation | threads | median ms | min ms | %s | of %s | time / texc | check | notes |"
                  % (unit, limname), "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in wrows:
            label = PEER_LABEL.get(r["impl"], r["impl"])
            th = "%d%s" % (r["threads"], "†" if r["threads"] == 2 and rel["two_thread_unreliable"] else "")
            if "unavailable" in r:
                lines.append("| %s | %s | unavailable: %s | | | | | | |" % (label, th, r["unavailable"]))
                continue
            rate = r.get("gbps", r.get("gflops"))
            check = "FAIL: " + r["check_fail"] if r.get("check_fail") else (
                "%.1e" % r["check"] if r.get("check") is not None else "")
            notes = "; ".join(x for x in (r.get("info", ""), r.get("note", "")) if x)
            lines.append("| %s | %s | %.3f | %.3f | %.2f | %.3f | %s | %s | %s |" % (
                label, th, r["median_ms"], r["min_ms"], rate, r["fraction_of_limit"],
                "%.3f" % r["ratio_to_texc"] if "ratio_to_texc" in r else "", check, notes))
        lines.append("")
    return "\n".join(lines)


def rounds_said(rounds):
    if rounds == 1:
        return ""
    return (", in %d rounds (a workload's rows run one after another, the next round in the opposite "
            "order; a row's median is the median of its round medians, its time / texc and its fraction "
            "of the limit the medians of the figures within each round, the limits probed at the start "
            "of each round)" % rounds)


def yes(b):
    return "yes" if b else "no"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, under 3 minutes")
    ap.add_argument("--json", help="write every row as JSON to this file")
    ap.add_argument("--markdown", default=os.path.join(BENCH, "results", "latest.md"), help="write the tables here")
    ap.add_argument("--only", help="comma-separated substrings of workload names to run")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per row (at least 5)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run each workload's rows this many times, alternating (time / texc and fractions "
                         "of the limit become medians of per-round figures, the limits probed each round)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--texc-budget", type=float, default=None,
                    help="seconds one texc row may take; slower rows keep a single timing")
    ap.add_argument("--peer-timeout", type=int, default=300)
    args = ap.parse_args()
    args.repeat = max(MIN_REPEAT, args.repeat or 5)
    if args.rounds < 1:
        sys.exit("--rounds must be at least 1")
    if args.texc_budget is None:
        args.texc_budget = 15.0 if args.quick else 45.0
    if not os.path.exists(TEXC):
        sys.exit("no %s: run bench/bench.sh, which builds it" % TEXC)
    started = time.time()
    wls = QUICK if args.quick else FULL
    if args.only:
        # Empty keys (a trailing comma) would match every workload: they are ignored.
        keys = [k.strip() for k in args.only.split(",") if k.strip()]
        wls = [w for w in wls if any(k in w["name"] for k in keys)]
        if not wls:
            sys.exit("--only %r matches no workload" % args.only)

    os.makedirs(BUILD, exist_ok=True)
    shutil.copy2(TEXC, TEXC_SNAPSHOT)
    cpu = cpu_info()
    memory = huge_pages()
    log("Memory: %s" % memory)
    kernels, kernels_said = peer_kernels(cpu)
    log("BLAS kernels: %s" % kernels_said)
    load_start = os.getloadavg()[0]
    log("building peers ...")
    builds = {name: build_cpp(name, srcs, extra) for name, (srcs, extra) in CPP_PEERS.items()}
    for name, (_, err) in builds.items():
        if err:
            log("  %s unavailable: %s" % (name, err))
    log("measuring machine limits ...")
    limits = measure_limits(args.quick)
    rel = reliability(limits)
    for (fig, t), f in sorted(limits.items()):
        log("  %-10s %dT  best %.1f %s (min %.1f, median %.1f)" % (fig, t, f["max"], f["unit"], f["min"], f["median"]))
    rows = []
    for wl in wls:
        log("%s" % wl["name"])
        rows += run_workload(wl, args, limits, rel, builds, kernels)
    meta = dict(date=datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), cpu=cpu, mode="quick" if args.quick else "full",
                repeat=args.repeat, rounds=args.rounds, blas_kernels=kernels_said, memory=memory, limits=limits, reliability=rel, texc_cpu=texc_target(),
                load_start="%.1f" % load_start, load_end="%.1f" % os.getloadavg()[0],
                wall_s=round(time.time() - started, 1))
    md = markdown(rows, wls, meta)
    targets_md, targets = bench_targets.table(rows, cpu)
    if any("value" in t for t in targets):  # a run with none of the targets' rows (--quick, --only) leaves it out
        md += "\n" + targets_md
    md += "\nWall time of this run: %.0f s.\n" % meta["wall_s"]
    print(md)
    if args.markdown:
        os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
        with open(args.markdown, "w") as f:
            f.write(md)
    if args.json:
        meta["limits"] = [dict(v, figure=k[0], threads=k[1]) for k, v in sorted(limits.items())]
        with open(args.json, "w") as f:
            json.dump(dict(meta=meta, rows=rows, targets=targets), f, indent=1)
    log("done in %.0f s" % (time.time() - started))
    return 1 if any(r.get("check_fail") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
