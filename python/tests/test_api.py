"""The Python API: compile, call, inputs and outputs, errors, zero copy, the GIL, and the data
that passes/ir/check/explain/compare return."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import texc

from conftest import EXAMPLES, ROOT

GELU = EXAMPLES / "gelu.tex"
ADD = "input a : f32[N]\ninput b : f32[N]\noutput c = a * b + a\n"


def add_prog(n=64, **kw):
    return texc.compile("let N = 1\n" + ADD, sizes={"N": n}, **kw)


def test_inputs_and_outputs_describe_the_program():
    prog = texc.compile(GELU, sizes={"N": 4, "D": 8})
    assert prog.inputs == [("x", (4, 8), "f32"), ("b", (8,), "f32"), ("r", (4, 8), "f32")]
    assert prog.outputs == [("out", (4, 8), "f32")]
    assert prog.inputs[1].name == "b" and prog.inputs[1].shape == (8,) and prog.inputs[1].dtype == "f32"
    assert "gelu.tex" in repr(prog)


def test_source_text_and_path_compile_the_same():
    text = GELU.read_text()
    a = texc.compile(text, sizes={"N": 2, "D": 3})
    b = texc.compile(str(GELU), sizes={"N": 2, "D": 3})
    x = np.ones((2, 3), np.float32)
    r = np.zeros((2, 3), np.float32)
    bias = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(a(x=x, b=bias, r=r)["out"], b(x=x, b=bias, r=r)["out"])


def test_lists_and_array_likes_are_converted():
    prog = add_prog(3)
    got = prog(a=[1, 2, 3], b=np.array([2, 2, 2], np.float32))["c"]
    np.testing.assert_array_equal(got, [3, 6, 9])


def test_outputs_are_64_byte_aligned_numpy_arrays_owning_their_memory():
    prog = add_prog(100)
    c = prog(a=np.ones(100, np.float32), b=np.ones(100, np.float32))["c"]
    del prog
    assert c.ctypes.data % 64 == 0 and c.flags.c_contiguous and c.flags.writeable
    np.testing.assert_array_equal(c, 2)


def test_zero_copy_inputs_and_out_arrays():
    prog = add_prog(256)
    a, b, c = texc.empty((256,)), texc.empty((256,)), texc.empty((256,))
    a[:] = 1.5
    b[:] = 2
    result = prog(a=a, b=b, out={"c": c})
    assert result["c"] is c
    ptrs = prog._last_pointers()
    assert ptrs["a"] == a.ctypes.data and ptrs["b"] == b.ctypes.data and ptrs["c"] == c.ctypes.data
    np.testing.assert_array_equal(c, 4.5)


def test_contiguous_inputs_are_read_in_place_whatever_their_alignment():
    # numpy aligns to 16 bytes, a slice to 4: the kernels assume no more than the element's
    # alignment of an input, so both are read where they are.
    prog = add_prog(1000)
    base = np.arange(1001, dtype=np.float32)
    a, b = np.zeros(1000, np.float32) + 3, base[1:]
    assert b.ctypes.data % 16 != 0
    got = prog(a=a, b=b)["c"]
    np.testing.assert_array_equal(got, a * b + a)
    ptrs = prog._last_pointers()
    assert ptrs["a"] == a.ctypes.data and ptrs["b"] == b.ctypes.data


def test_strided_inputs_are_copied_and_still_right():
    prog = add_prog(8)
    base = np.arange(17, dtype=np.float32)
    strided = base[::2][:8]
    shifted = base[1:9]  # 4 bytes past an aligned start, at best: read in place
    got = prog(a=strided, b=shifted)["c"]
    np.testing.assert_array_equal(got, strided * shifted + strided)
    assert prog._last_pointers()["a"] != strided.ctypes.data
    assert prog._last_pointers()["b"] == shifted.ctypes.data


def test_unaligned_out_array_is_written():
    prog = add_prog(8)
    store = np.zeros(9, np.float32)
    out = store[1:]
    prog(a=np.ones(8, np.float32), b=np.ones(8, np.float32), out={"c": out})
    np.testing.assert_array_equal(store, [0] + [2] * 8)


@pytest.mark.filterwarnings("ignore:Failed to initialize NumPy")  # a torch built for another numpy
def test_torch_tensors_through_dlpack():
    torch = pytest.importorskip("torch", reason="torch is not installed (too big for the test environment)")
    prog = add_prog(64)
    a = torch.ones(64)
    b = torch.full((64,), 3.0)
    got = prog(a=a, b=b)["c"]
    np.testing.assert_array_equal(got, 4)
    ptrs = prog._last_pointers()
    if a.data_ptr() % 64 == 0:  # torch's CPU allocator aligns to 64 bytes: read in place
        assert ptrs["a"] == a.data_ptr() and ptrs["b"] == b.data_ptr()
    with pytest.raises(TypeError, match="input 'a': expected dtype f32.*got dtype float64"):
        prog(a=a.double(), b=b)


def test_compile_error_has_diagnostics_and_gcc_text():
    with pytest.raises(texc.CompileError) as err:
        texc.compile("input x : f32[4]\noutput y = x + z\n")
    e = err.value
    assert e.diagnostics and e.diagnostics[0].severity == "error"
    d = e.diagnostics[0]
    assert (d.line, d.column) == (2, 16)
    assert "z" in d.message
    assert str(e).startswith("<string>:2:16: error:")


def test_compile_error_from_a_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.tex"
    bad.write_text("input x : f32[4]\noutput y = x +\n")
    with pytest.raises(texc.CompileError) as err:
        texc.compile(bad)
    assert str(err.value).startswith(f"{bad}:2:")


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(fuse="some"), ValueError, "fuse"),
    (dict(math="sloppy"), ValueError, "math"),
    (dict(target="cuda"), ValueError, "cpu"),
    (dict(cpu="no-such-cpu"), ValueError, "no-such-cpu"),
    (dict(threads=-1), ValueError, "threads"),
    (dict(sizes={"N": 0}), ValueError, "N"),
    (dict(sizes={"Q": 4}), ValueError, "Q"),
    (dict(sizes={"N": "4"}), TypeError, "N"),
])
def test_bad_compile_options(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        texc.compile(GELU, **kwargs)


def test_missing_file():
    with pytest.raises(ValueError, match="no-such.tex"):
        texc.compile("no-such.tex")


def test_bad_inputs_name_the_input_and_both_shapes_and_dtypes():
    prog = add_prog(4)
    ok = np.ones(4, np.float32)
    with pytest.raises(ValueError, match=r"input 'a': expected shape \(4,\) \(f32\), got shape \(5,\) \(float32\)"):
        prog(a=np.ones(5, np.float32), b=ok)
    with pytest.raises(TypeError, match=r"input 'b': expected dtype f32 with shape \(4,\), got dtype float64 with shape \(4,\)"):
        prog(a=ok, b=np.ones(4))
    with pytest.raises(TypeError, match=r"input 'b': expected dtype f32 with shape \(4,\), got dtype int64"):
        prog(a=ok, b=np.ones(4, np.int64))
    with pytest.raises(TypeError, match="missing input 'b'"):
        prog(a=ok)
    with pytest.raises(TypeError, match="no input named 'z'"):
        prog(a=ok, b=ok, z=ok)
    with pytest.raises(TypeError, match="input 'a'.*object"):
        prog(a=object(), b=ok)
    with pytest.raises(ValueError, match="out 'c'"):
        prog(a=ok, b=ok, out={"c": np.ones(3, np.float32)})
    with pytest.raises(TypeError, match="out 'c'"):
        prog(a=ok, b=ok, out={"c": np.ones(4)})
    with pytest.raises(TypeError, match="no output named 'd'"):
        prog(a=ok, b=ok, out={"d": ok})
    with pytest.raises(TypeError, match="out 'c'"):
        ro = np.ones(4, np.float32)
        ro.flags.writeable = False
        prog(a=ok, b=ok, out={"c": ro})


def test_two_threads_run_two_programs_concurrently():
    # Two Python threads call two programs and record when each call starts and ends. With the
    # GIL held through the kernels the calls could only take turns; released, they overlap for
    # most of their time (whatever the cores' load: the OS may interleave them, the GIL may not).
    n = 1 << 21
    progs = [texc.compile(EXAMPLES / "fusion_add_mul.tex", sizes={"N": n}, threads=1) for _ in range(2)]
    data = {k: texc.empty((n,)) for k in "ABCD"}
    spans = [[], []]
    start = threading.Barrier(2)

    def work(k):
        start.wait()
        for _ in range(15):
            t0 = time.perf_counter()
            progs[k](**data)
            spans[k].append((t0, time.perf_counter()))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    overlap = sum(max(0.0, min(a1, b1) - max(a0, b0)) for a0, a1 in spans[0] for b0, b1 in spans[1])
    busy = min(sum(t1 - t0 for t0, t1 in s) for s in spans)
    assert overlap > 0.5 * busy, f"the calls overlapped {overlap:.4f}s of {busy:.4f}s: the GIL was held while kernels ran"


def test_threads_compile_and_run_at_once():
    results = {}

    def work(k):
        prog = add_prog(16 + k)
        results[k] = prog(a=np.full(16 + k, k, np.float32), b=np.ones(16 + k, np.float32))["c"]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        np.testing.assert_array_equal(results[k], np.full(16 + k, 2 * k))


def test_check_returns_errors_and_bound():
    prog = texc.compile(EXAMPLES / "softmax.tex", sizes={"R": 4, "D": 16})
    rows = prog.check(x=np.random.default_rng(0).uniform(-1, 1, (4, 16)).astype(np.float32))
    assert len(rows) == 1
    row = rows[0]
    assert row["output"] == "y" and row["within_bound"] and row["elements"] == 64
    assert 0 <= row["max_abs_error"] < 1e-5
    assert row["bound"].shape == (4, 16) and row["reference"].dtype == np.float64
    np.testing.assert_allclose(row["value"], row["reference"], atol=1e-6)


def test_passes_and_ir():
    prog = texc.compile(GELU, sizes={"N": 4, "D": 8})
    passes = prog.passes()
    names = [p["name"] for p in passes]
    assert "fuse" in names and set(passes[0]) == {"name", "changed", "time_ms", "text"}
    assert "<table>" in passes._repr_html_()
    assert prog.ir(after="fuse") == passes[names.index("fuse")]["text"]
    assert prog.ir()
    with pytest.raises(ValueError, match="no-such-pass"):
        prog.ir(after="no-such-pass")


def test_dataframes_take_the_data():
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    prog = texc.compile(GELU, sizes={"N": 4, "D": 8})
    assert len(pd.DataFrame(prog.passes())) == len(prog.passes())


def test_explain():
    prog = texc.compile(GELU, sizes={"N": 4, "D": 8})
    report = prog.explain(hw="h100")
    assert "fusion decisions" in report["sections"]
    assert "dataflow" in report["text"] and "<pre>" in report._repr_html_()


def test_compare():
    rows = texc.compare(GELU, sizes={"N": 8, "D": 16}, repeat=2, threads=1)
    assert [r["variant"] for r in rows][:1] and all(r["within_bound"] for r in rows)
    assert {"variant", "kernels", "median_ms", "bytes"} <= set(rows[0])
    assert "<table>" in rows._repr_html_()


def test_repr_html_is_the_explorer_page():
    prog = texc.compile(GELU, sizes={"N": 4, "D": 8})
    page = prog._repr_html_()
    assert page.startswith("<iframe srcdoc=") and "Dataflow graph" in page


def test_python_dash_m_texc_runs_the_command_line(tmp_path):
    env = dict(os.environ)
    run = subprocess.run([sys.executable, "-m", "texc", "check", str(GELU)], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    run = subprocess.run([sys.executable, "-m", "texc", "run", str(GELU), "-D", "N=2", "-D", "D=3", "--random", "1",
                          "--output-dir", str(tmp_path), "--check"], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "within the error bound" in run.stdout and (tmp_path / "out.npy").exists()
    bad = tmp_path / "bad.tex"
    bad.write_text("output y = z\n")
    run = subprocess.run([sys.executable, "-m", "texc", "check", str(bad)], capture_output=True, text=True, env=env)
    assert run.returncode == 1 and f"{bad}:1:" in run.stderr
    run = subprocess.run([sys.executable, "-m", "texc", "frobnicate"], capture_output=True, text=True, env=env)
    assert run.returncode == 2 and "unknown command 'frobnicate'" in run.stderr


def test_same_output_as_the_command_line(tmp_path):
    binary = os.environ.get("TEXC_BINARY")
    if not binary:
        pytest.skip("TEXC_BINARY is not set (ctest sets it to the build's texc)")
    args = ["run", str(GELU), "-D", "N=3", "-D", "D=5", "--random", "7", "--output-dir"]
    subprocess.run([binary] + args + [str(tmp_path / "cli")], check=True)
    subprocess.run([sys.executable, "-m", "texc"] + args + [str(tmp_path / "py")], check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "cli" / "out.npy"), np.load(tmp_path / "py" / "out.npy"))
