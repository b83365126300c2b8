"""Every example, compiled and run from Python, against numpy in float64."""

import numpy as np
import pytest

import texc

from conftest import EXAMPLES

rng = np.random.default_rng(1)


def rand(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def bf16_bits(x):
    """float32 values to bf16 bit patterns, by truncation."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def gelu_tanh(h):
    return 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))


def erf(x):
    from math import erf as e

    return np.vectorize(e)(x)


def softmax_rows(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def pool_windows(x, k, stride, pad, fill):
    c, h, w = x.shape
    xp = np.full((c, h + 2 * pad, w + 2 * pad), fill)
    xp[:, pad:pad + h, pad:pad + w] = x
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    return np.stack([xp[:, dy:dy + stride * oh:stride, dx:dx + stride * ow:stride][:, :oh, :ow]
                     for dy in range(k) for dx in range(k)])


def ref_gelu(i):
    h = i["x"] + i["b"]
    return {"out": gelu_tanh(h) + i["r"]}


def ref_softmax(i):
    return {"y": softmax_rows(i["x"])}


def ref_layernorm(i):
    x = i["x"]
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return {"y": (x - mean) / np.sqrt(var + 1e-5) * i["gamma"] + i["beta"]}


def ref_matmul(i):
    return {"C": i["A"] @ i["B"]}


def ref_matmul_bias_gelu(i):
    h = i["A"] @ i["W"] + i["bias"]
    return {"y": 0.5 * h * (1 + erf(h * 0.7071067811865476))}


def ref_fusion_add_mul(i):
    return {"E": i["D"] + (i["A"] + i["B"]) * i["C"]}


def ref_attention(i):
    q, k, v = i["Q"], i["K"], i["V"]
    s = q @ k.T / np.sqrt(q.shape[1])
    s = np.where(np.tril(np.ones_like(s, dtype=bool)), s, -np.inf)
    return {"O": softmax_rows(s) @ v}


def ref_avgpool_pad(i):
    x = i["x"]
    mx = pool_windows(x, 3, 2, 1, -np.inf).max(axis=0)
    total = pool_windows(x, 3, 2, 1, 0.0).sum(axis=0)
    count = pool_windows(np.ones((1,) + x.shape[1:]), 3, 2, 1, 0.0).sum(axis=0)
    return {"mx": mx, "avg": total / count}


def ref_conv_pool(i):
    x, w = i["I"], i["Wt"]
    n, c, h, wd = x.shape
    xp = np.zeros((n, c, h + 2, wd + 2))
    xp[:, :, 1:h + 1, 1:wd + 1] = x
    conv = np.zeros((n, w.shape[0], h, wd))
    for r in range(3):
        for s in range(3):
            conv += np.einsum("nchw,kc->nkhw", xp[:, :, r:r + h, s:s + wd], w[:, :, r, s])
    sb = conv * i["scale"][None, :, None, None] + i["bias"][None, :, None, None]
    return {"pool": sb.reshape(n, w.shape[0], h // 2, 2, wd // 2, 2).max(axis=(3, 5))}


CASES = {
    "gelu": ({"N": 16, "D": 40}, ref_gelu),
    "softmax": ({"R": 8, "D": 37}, ref_softmax),
    "layernorm": ({"R": 8, "D": 33}, ref_layernorm),
    "matmul": ({"M": 17, "K": 23, "N": 19}, ref_matmul),
    "matmul_bf16": ({"M": 17, "K": 45, "N": 19}, ref_matmul),
    "matmul_bias_gelu": ({"M": 9, "K": 31, "N": 21}, ref_matmul_bias_gelu),
    "fusion_add_mul": ({"N": 1000}, ref_fusion_add_mul),
    "attention": ({"N": 24, "Dh": 8}, ref_attention),
    "avgpool_pad": ({"C": 3, "H": 8, "W": 10}, ref_avgpool_pad),
    "conv_pool": ({"N": 1, "C": 3, "K": 4, "H": 6, "W": 8}, ref_conv_pool),
}


def test_every_example_has_a_case():
    assert sorted(p.stem for p in EXAMPLES.glob("*.tex")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("fuse", ["all", "none"])
def test_example_matches_numpy_float64(name, fuse):
    sizes, reference = CASES[name]
    prog = texc.compile(EXAMPLES / f"{name}.tex", sizes=sizes, fuse=fuse, threads=2)
    # bf16 tensors are passed and returned as their bit patterns (numpy has no bfloat16); their
    # inputs hold values bf16 represents exactly, and their results are held to bf16's precision.
    inputs = {t.name: rand(*t.shape) for t in prog.inputs}
    inputs = {t.name: from_bf16(bf16_bits(inputs[t.name])) if t.dtype == "bf16" else inputs[t.name] for t in prog.inputs}
    got = prog(**{t.name: bf16_bits(inputs[t.name]) if t.dtype == "bf16" else inputs[t.name] for t in prog.inputs})
    want = reference({k: v.astype(np.float64) for k, v in inputs.items()})
    assert sorted(got) == sorted(t.name for t in prog.outputs)
    for t in prog.outputs:
        value, tol = got[t.name], 2e-5
        if t.dtype == "bf16":
            assert value.dtype == np.uint16
            value, tol = from_bf16(value), 1e-2
        assert value.shape == t.shape and value.dtype == np.float32
        np.testing.assert_allclose(value, want[t.name], rtol=tol, atol=tol, err_msg=f"{name}: {t.name}")
