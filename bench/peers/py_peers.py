"""Python peers: numpy op by op, numpy with preallocated out= buffers, numexpr, torch (CPU, eager).

Run once per (workload, threads) by the driver, which sets the thread variables
(OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, NUMEXPR_NUM_THREADS) and OPENBLAS_CORETYPE before this
interpreter starts. Each implementation is warmed up once and timed REPEAT times; its result is
written to OUTDIR/<impl>.npy. Prints one JSON list of rows.
"""
import argparse
import ctypes
import json
import os
import sys
import time

import numpy as np

F32 = np.float32


def blas_kernel():
    """Which BLAS (and which OpenBLAS kernel) numpy's matmul runs on, read from the loaded libraries."""
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if "blas" in line.lower() and ".so" in line})
    for lib in libs:
        try:
            h = ctypes.CDLL(lib)
            fn = h.openblas_get_corename
            fn.restype = ctypes.c_char_p
            return "openblas kernel " + fn().decode()
        except (OSError, AttributeError):
            continue
    return "blas: " + (", ".join(os.path.basename(l) for l in libs) or "none found")


def timed(fn, repeat):
    fn()
    ms = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ms)), float(min(ms)), ms


# ---- implementations: each maps inputs to a zero-argument callable returning the result ----

def numpy_impl(w, d):
    if w == "gelu":
        x, b, r = d["x"], d["b"], d["r"]

        def f():
            h = x + b
            return F32(0.5) * h * (F32(1) + np.tanh(F32(0.7978845608) * (h + F32(0.044715) * h * h * h))) + r
        return f
    if w == "ediff":
        return lambda: d["D"] + (d["A"] + d["B"]) * d["C"]
    if w == "softmax":
        x = d["x"]

        def f():
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        return f
    if w == "layernorm":
        x, g, b = d["x"], d["gamma"], d["beta"]

        def f():
            mean = x.mean(axis=1, keepdims=True)
            c = x - mean
            var = (c * c).mean(axis=1, keepdims=True)
            return c / np.sqrt(var + F32(1e-5)) * g + b
        return f
    if w == "matmul":
        return lambda: d["A"] @ d["B"]
    if w == "conv":
        I, W, s, b = d["I"], d["Wt"], d["scale"], d["bias"]
        n, c, h, wd = I.shape
        k = W.shape[0]
        wmat = W.reshape(k, c * 9)

        def f():
            # im2col through a strided view of the zero-padded input, then one BLAS matmul.
            p = np.pad(I, ((0, 0), (0, 0), (1, 1), (1, 1)))
            win = np.lib.stride_tricks.sliding_window_view(p, (3, 3), axis=(2, 3))  # n c h w 3 3
            cols = np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * 9, h * wd)
            conv = np.matmul(wmat, cols).reshape(n, k, h, wd)
            sb = conv * s[None, :, None, None] + b[None, :, None, None]
            return sb.reshape(n, k, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
        return f
    if w in ("attention", "attention_full"):
        Q, K, V = d["Q"], d["K"], d["V"]
        n, dh = Q.shape
        mask = np.triu(np.ones((n, n), dtype=bool), 1) if w == "attention" else None

        def f():
            S = (Q @ K.T) * F32(1.0 / np.sqrt(dh))
            if mask is not None:
                S[mask] = -np.inf
            P = np.exp(S - S.max(axis=1, keepdims=True))
            return (P @ V) / P.sum(axis=1, keepdims=True)
        return f
    return None


def numpy_out_impl(w, d):
    """numpy with every temporary preallocated and reused (out=, in-place operators)."""
    if w == "gelu":
        x, b, r = d["x"], d["b"], d["r"]
        h, t, out = np.empty_like(x), np.empty_like(x), np.empty_like(x)

        def f():
            np.add(x, b, out=h)
            np.multiply(h, h, out=t)
            np.multiply(t, h, out=t)
            np.multiply(t, F32(0.044715), out=t)
            np.add(t, h, out=t)
            np.multiply(t, F32(0.7978845608), out=t)
            np.tanh(t, out=t)
            np.add(t, F32(1), out=t)
            np.multiply(t, h, out=t)
            np.multiply(t, F32(0.5), out=t)
            np.add(t, r, out=out)
            return out
        return f
    if w == "ediff":
        A, B, C, D = d["A"], d["B"], d["C"], d["D"]
        E = np.empty_like(A)

        def f():
            np.add(A, B, out=E)
            np.multiply(E, C, out=E)
            np.add(E, D, out=E)
            return E
        return f
    if w == "softmax":
        x = d["x"]
        e = np.empty_like(x)
        m = np.empty((x.shape[0], 1), F32)
        s = np.empty((x.shape[0], 1), F32)

        def f():
            np.max(x, axis=1, keepdims=True, out=m)
            np.subtract(x, m, out=e)
            np.exp(e, out=e)
            np.sum(e, axis=1, keepdims=True, out=s)
            np.divide(e, s, out=e)
            return e
        return f
    if w == "matmul":
        A, B = d["A"], d["B"]
        C = np.empty((A.shape[0], B.shape[1]), F32)
        return lambda: np.matmul(A, B, out=C)
    return None


def numexpr_impl(w, d):
    import numexpr as ne
    # Constants go in as float32 variables: Python float literals would make the result float64.
    k = {"c05": F32(0.5), "c1": F32(1), "c0": F32(0.7978845608), "c3": F32(0.044715)}
    if w == "gelu":
        x, b, r = d["x"], d["b"], d["r"]

        def f():
            h = ne.evaluate("x + b", local_dict={"x": x, "b": b})
            return ne.evaluate("c05 * h * (c1 + tanh(c0 * (h + c3 * h * h * h))) + r", local_dict=dict(k, h=h, r=r))
        return f
    if w == "ediff":
        A, B, C, D = d["A"], d["B"], d["C"], d["D"]
        return lambda: ne.evaluate("D + (A + B) * C", local_dict={"A": A, "B": B, "C": C, "D": D})
    if w == "softmax":
        x = d["x"]

        def f():
            m = x.max(axis=1, keepdims=True)
            e = ne.evaluate("exp(x - m)", local_dict={"x": x, "m": m})
            s = e.sum(axis=1, keepdims=True)
            return ne.evaluate("e / s", local_dict={"e": e, "s": s})
        return f
    return None


def torch_impl(w, d):
    import torch
    import torch.nn.functional as Fn
    t = {name: torch.from_numpy(a) for name, a in d.items()}
    if w == "gelu":
        return lambda: Fn.gelu(t["x"] + t["b"], approximate="tanh") + t["r"]
    if w == "ediff":
        return lambda: torch.addcmul(t["D"], t["A"] + t["B"], t["C"])
    if w == "softmax":
        return lambda: torch.softmax(t["x"], dim=1)
    if w == "layernorm":
        return lambda: Fn.layer_norm(t["x"], (t["x"].shape[1],), t["gamma"], t["beta"], eps=1e-5)
    if w == "matmul":
        return lambda: torch.mm(t["A"], t["B"])
    if w == "conv":
        k = t["Wt"].shape[0]
        s, b = t["scale"].view(1, k, 1, 1), t["bias"].view(1, k, 1, 1)
        return lambda: Fn.max_pool2d(Fn.conv2d(t["I"], t["Wt"], padding=1) * s + b, 2)
    if w in ("attention", "attention_full"):
        Q, K, V = t["Q"], t["K"], t["V"]
        n, dh = Q.shape
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), 1) if w == "attention" else None

        def f():
            S = (Q @ K.T) * (1.0 / dh ** 0.5)
            if mask is not None:
                S.masked_fill_(mask, float("-inf"))
            return torch.softmax(S, dim=1) @ V
        return f
    return None


IMPLS = {"numpy": numpy_impl, "numpy_out": numpy_out_impl, "numexpr": numexpr_impl, "torch": torch_impl}


def info_for(impl, w, threads):
    if impl in ("numpy", "numpy_out"):
        return blas_kernel() if w in ("matmul", "conv", "attention", "attention_full") else "numpy %s, one thread" % np.__version__
    if impl == "numexpr":
        import numexpr as ne
        return "numexpr %s, vml %s, %d threads" % (ne.__version__, ne.use_vml, threads)
    if impl == "torch":
        import torch
        return "torch %s, %d threads, %s" % (torch.__version__, torch.get_num_threads(), blas_kernel())
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("indir")
    ap.add_argument("outdir")
    ap.add_argument("threads", type=int)
    ap.add_argument("repeat", type=int)
    ap.add_argument("impls")
    ap.add_argument("inputs", help="comma-separated input names")
    a = ap.parse_args()
    d = {name: np.load(os.path.join(a.indir, name + ".npy")) for name in a.inputs.split(",")}
    rows = []
    for impl in a.impls.split(","):
        row = {"impl": impl}
        try:
            if impl == "numexpr":
                import numexpr
                numexpr.set_num_threads(a.threads)
            if impl == "torch":
                import torch
                torch.set_num_threads(a.threads)
            fn = IMPLS[impl](a.workload, d)
            if fn is None:
                continue
            med, mn, ms = timed(fn, a.repeat)
            res = fn()
            if hasattr(res, "numpy"):
                res = res.numpy()
            np.save(os.path.join(a.outdir, impl + ".npy"), np.ascontiguousarray(res))
            row.update(median_ms=med, min_ms=mn, runs=len(ms), info=info_for(impl, a.workload, a.threads))
        except ImportError as e:
            row["unavailable"] = "not installed (%s)" % e
        except Exception as e:  # a peer that fails is reported, never dropped
            row["unavailable"] = "%s: %s" % (type(e).__name__, e)
        rows.append(row)
    json.dump(rows, sys.stdout)
    print()


if __name__ == "__main__":
    main()
