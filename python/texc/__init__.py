"""texc from Python: compile a .tex program once, call it on numpy arrays (docs/python.md).

    >>> import numpy as np, texc
    >>> prog = texc.compile("examples/gelu.tex", sizes={"N": 1024})
    >>> y = prog(x=np.ones(1024, np.float32))["y"]

The compiler is the command line's own (the same libraries, linked into the module _texc).
"""

from __future__ import annotations

import html as _html
import os as _os
import tempfile as _tempfile
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple, Union

from . import _texc

__all__ = ["compile", "compare", "Program", "CompileError", "Diagnostic", "TensorSpec", "Table", "empty", "main"]


class Diagnostic(NamedTuple):
    """One diagnostic of a program: 1-based line and column, severity, message."""

    line: int
    column: int
    severity: str
    message: str


class TensorSpec(NamedTuple):
    """An input or output of a program: its name, shape and dtype ('f32', 'f64', 'f16', 'bf16')."""

    name: str
    shape: Tuple[int, ...]
    dtype: str


class CompileError(Exception):
    """The program has errors. str() is the compiler's gcc-format text; .diagnostics the list."""

    def __init__(self, text: str, diagnostics: List[Diagnostic]):
        super().__init__(text.rstrip("\n"))
        self.text = text
        self.diagnostics = diagnostics


class Table(list):
    """A list of dicts (rows) that pandas.DataFrame takes as it is; shows as a table in Jupyter."""

    def _repr_html_(self) -> str:
        if not self:
            return "<p>(empty)</p>"
        columns = list(self[0].keys())
        head = "".join(f"<th>{_html.escape(str(c))}</th>" for c in columns)
        rows = []
        for row in self:
            cells = []
            for c in columns:
                value = row.get(c, "")
                text = str(value)
                if c == "text" or len(text) > 80:
                    text = text[:77] + "..." if len(text) > 80 else text
                cells.append(f"<td>{_html.escape(text)}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


class Explanation(dict):
    """texc explain's report: 'text' (as the command line prints it) and 'sections' by title."""

    def __str__(self) -> str:
        return self["text"]

    def _repr_html_(self) -> str:
        return f"<pre>{_html.escape(self['text'])}</pre>"


def _is_path(source: Union[str, "_os.PathLike[str]"]) -> bool:
    if isinstance(source, _os.PathLike):
        return True
    return "\n" not in source and source.endswith(".tex")


class Program:
    """A compiled program. Call it with its inputs as keyword arguments; see docs/python.md."""

    def __init__(self, impl: Any, warnings: List[Diagnostic]):
        self._impl = impl
        self._run = impl.run
        self.warnings = warnings
        self.inputs: List[TensorSpec] = [TensorSpec(n, tuple(s), d) for n, s, d in impl.inputs]
        self.outputs: List[TensorSpec] = [TensorSpec(n, tuple(s), d) for n, s, d in impl.outputs]

    def __call__(self, out: Optional[Mapping[str, Any]] = None, **inputs: Any) -> Dict[str, Any]:
        """Runs the kernels; returns {output name: numpy array}. The GIL is released meanwhile."""
        return self._run(inputs, out)

    @property
    def threads(self) -> int:
        return self._impl.threads

    @property
    def num_kernels(self) -> int:
        return self._impl.num_kernels

    def check(self, **inputs: Any) -> Table:
        """Runs the program and the float64 reference; one row per output with its errors, the
        verdict against the error bound, and the reference and per-element bound arrays."""
        return Table(self._impl.check(inputs))

    def passes(self) -> Table:
        """Every pass that ran: name, changed, time_ms, and text (the IR after it)."""
        return Table(self._impl.passes())

    def ir(self, after: Optional[str] = None) -> str:
        """The IR as the pass `after` left it (the last pass when None)."""
        records = self._impl.passes()
        if after is None:
            return records[-1]["text"]
        for record in records:
            if record["name"] == after:
                return record["text"]
        names = ", ".join(r["name"] for r in records)
        raise ValueError(f"after='{after}': no such pass in this pipeline (passes: {names})")

    def explain(self, hw: str = "host") -> Explanation:
        """texc explain as data: {'text': ..., 'sections': {title: text}}."""
        text = self._impl.explain(hw)
        sections: Dict[str, str] = {}
        title = ""
        for line in text.splitlines(keepends=True):
            if line.startswith("== ") and line.rstrip().endswith(" =="):
                title = line.strip()[3:-3]
                sections[title] = ""
            elif title:
                sections[title] += line
        return Explanation(text=text, sections=sections)

    def explore(self, measure: bool = False) -> str:
        """texc explore's page (self-contained HTML) for this program."""
        with _tempfile.TemporaryDirectory() as d:
            return self._impl.explore_page(_os.path.join(d, "page.html"), measure)

    def _repr_html_(self) -> str:
        page = self.explore()
        return f'<iframe srcdoc="{_html.escape(page, quote=True)}" style="width:100%;height:600px;border:0"></iframe>'

    def _last_pointers(self) -> Dict[str, int]:
        """The addresses the kernels got for each input and output on the last call (tests)."""
        return self._impl.last_pointers()

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.inputs)
        outs = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.outputs)
        return f"<texc.Program {self._impl.name} ({ins}) -> ({outs})>"


def compile(
    source_or_path: Union[str, "_os.PathLike[str]"],
    sizes: Optional[Mapping[str, int]] = None,
    fuse: str = "all",
    target: str = "cpu",
    threads: Optional[int] = None,
    cpu: str = "host",
    math: str = "precise",
    schedule: Optional[str] = None,
) -> Program:
    """Compiles a program (a path ending in .tex, or its text) and JIT-compiles its kernels.

    sizes: overrides of literal 'let's (texc's -D NAME=VALUE). threads: None or 0 for one per
    core. Raises CompileError when the program has errors, ValueError for bad options.
    """
    if target != "cpu":
        raise ValueError(f"target='{target}': the Python module runs programs on the cpu target only")
    defines = []
    for name, value in (sizes or {}).items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"sizes['{name}']: expected an int, got {type(value).__name__}")
        defines.append(f"{name}={value}")
    if _is_path(source_or_path):
        name, text = _os.fspath(source_or_path), None
    else:
        name, text = "<string>", str(source_or_path)
    impl, diags, rendered = _texc.compile(name, text, defines, fuse, threads or 0, cpu, math,
                                          _os.fspath(schedule) if schedule is not None else None)
    diagnostics = [Diagnostic(*d) for d in diags]
    if impl is None:
        raise CompileError(rendered, diagnostics)
    return Program(impl, diagnostics)


def compare(
    source_or_path: Union[str, "_os.PathLike[str]", Program],
    sizes: Optional[Mapping[str, int]] = None,
    repeat: int = 10,
    seed: int = 1,
    threads: Optional[int] = None,
    **options: Any,
) -> Table:
    """texc compare as data: one row per variant (unfused, elementwise, fused) with its kernels,
    bytes, FLOPs, median time, bandwidth and whether it is within the error bound."""
    prog = source_or_path if isinstance(source_or_path, Program) else compile(source_or_path, sizes, threads=threads, **options)
    report = prog._impl.compare(repeat, seed)
    return Table(report["variants"])


def empty(shape: Tuple[int, ...], dtype: str = "f32") -> Any:
    """An uninitialised-looking (zeroed) numpy array, 64-byte aligned: an input the kernels read in
    place, or an out= array they write in place."""
    return _texc.empty(list(shape), dtype)


def main(argv: Optional[List[str]] = None) -> int:
    """The command line (texc ARGS...), as `python -m texc ARGS...` runs it."""
    import sys

    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    return _texc.command_line(["texc"] + args)
