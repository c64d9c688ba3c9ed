"""The fixed file still runs (issue 31): what ``fix`` and ``setup --write`` write is checked
as Python reads it, the bytes, not the decoded text; the gate never makes torch required in a
file that runs without it; the set-up goes before the program, not after it.

Each case runs the written file in a fresh interpreter: with torch missing (an import of it
raises ImportError), with real torch on the NVIDIA path, and with ``torch.version.hip`` set.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocmport import placement
from rocmport.config import Settings
from rocmport.inputs import check_bytes
from rocmport.source import SourceText

pytest.importorskip("torch")

def fix_bytes(data: bytes, path: str = "mod.py"):
    report = check_bytes(data, path, Settings(), fix=True)
    assert report.internal_error is None, report.internal_error
    return report


def cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "rocmport", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


# -- (1) a file whose first statement is not an import: the header stays on top ------------

HEADED = [
    ("latin-1", "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n", "caf\u00e9"),
    ("cp1252", "# -*- coding: cp1252 -*-\n", "\u201cquoted\u201d \u20ac"),
    ("shift_jis", "#!/usr/bin/python3\n# coding: shift_jis\n", "\u65e5\u672c\u8a9e"),
]


@pytest.mark.parametrize("encoding, header, word", HEADED)
def test_the_written_bytes_keep_the_cookie_and_the_shebang_on_top(tmp_path, encoding, header, word):
    """``print`` first, ``import torch`` later: the gate and ``import torch`` go below the
    ``#!`` line and the cookie, so the written bytes compile and run as a script."""
    text = header + f'WORD = "{word}"\nprint(WORD)\nimport torch\nf = torch.compile(abs, mode="reduce-overhead")\n'
    data = text.encode(encoding)
    report = fix_bytes(data)
    assert report.fixed is not None
    written = report.fixed
    assert written.startswith(header.encode(encoding))  # interpreter line and cookie: first, unchanged
    compile(written, "mod.py", "exec")  # as Python reads the bytes
    assert f'WORD = "{word}"'.encode(encoding) in written
    path = tmp_path / "mod.py"
    path.write_bytes(written)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]


@pytest.mark.parametrize("encoding, header, word", HEADED)
def test_setup_write_keeps_the_cookie_and_the_shebang_on_top(tmp_path, encoding, header, word):
    text = header + f'WORD = "{word}"\n\nif __name__ == "__main__":\n    print(WORD)\n'
    (tmp_path / "run.py").write_bytes(text.encode(encoding))
    # the general set-up: the short one is only for a program that compiles (issue 29)
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport.prelude]\ncompile-guard = true\n")
    proc = cli("setup", "--write", "run.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / "run.py").read_bytes()
    assert b"# >>> rocmport prelude" in written
    assert written.startswith(header.encode(encoding))
    compile(written, "run.py", "exec")
    run = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, timeout=300)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-2000:]


def test_a_licence_comment_stays_above_and_a_comment_stays_with_its_statement():
    text = ("#!/usr/bin/env python\n# Copyright 2024 Someone\n# Licensed under Apache-2.0\n\n"
            "# the scale\nSCALE = 2\nimport torch\nf = torch.compile(abs, mode=\"reduce-overhead\")\n")
    fixed = fix_bytes(text.encode()).fixed.decode()
    assert fixed.startswith("#!/usr/bin/env python\n# Copyright 2024 Someone\n# Licensed under Apache-2.0\n\n")
    assert "# the scale\nSCALE = 2\n" in fixed


def test_the_gate_follows_the_files_own_import_after_other_code():
    """Code before ``import torch`` (it may set what torch reads on import) keeps running
    first: the gate goes after that import, no second ``import torch`` above the code."""
    text = ('import os\n\nos.putenv("TORCH_LOGS", "dynamo")\nimport torch\n\n'
            'f = torch.compile(abs, mode="reduce-overhead")\n')
    fixed = fix_bytes(text.encode()).fixed.decode()
    assert fixed.count("import torch") == 1
    assert fixed.index('os.putenv("TORCH_LOGS"') < fixed.index("import torch") < fixed.index("is_rocm = ")


def test_bytes_that_python_would_read_otherwise_are_never_written(monkeypatch):
    """The last check is on the bytes: were the gate put above the cookie anyway, the file is
    left as it was and the findings say why."""
    monkeypatch.setattr(placement, "header_end", lambda text: 0)
    monkeypatch.setattr(placement.Placer, "_after_binding", lambda self, before: None)  # as before issue 31
    text = "# -*- coding: latin-1 -*-\nprint('\u00e9')\nimport torch\nf = torch.compile(abs, mode=\"reduce-overhead\")\n"
    report = fix_bytes(text.encode("latin-1"))
    assert report.fixed is None
    notes = [f.message for f in report.findings if f.code == "ROC002"]
    assert notes and "encoding declaration" in notes[0]


def test_written_problem_compiles_the_bytes():
    source = SourceText.from_bytes(b"x = 1\n")
    assert source.written_problem(b"x = 1\n", b"x = 1\n") is None
    assert "would not compile" in source.written_problem(b"x = 1\n", b"x = (\n")
    # an original this interpreter cannot compile gives no verdict on the compile
    assert source.written_problem(b"x = (\n", b"x = ((\n") is None
    assert "#!" in source.written_problem(b"#!/bin/python\nx = 1\n", b"y = 2\n#!/bin/python\nx = 1\n")


# -- (3) optional torch stays optional ------------------------------------------------------

RUNNER = textwrap.dedent(r'''
    import json, os, runpy, sys
    mode = sys.argv[2]
    calls = []
    if mode == "missing":
        sys.modules["torch"] = None  # import torch raises ImportError
    else:
        import torch
        if mode == "rocm":
            torch.version.hip = "6.2.0"
        torch.compile = lambda model=None, **kw: calls.append(kw) or model
    ns = runpy.run_path(sys.argv[1], run_name="probe")
    out = ns["build"]("m")
    print("@@" + json.dumps({"out": out, "calls": calls}))
''')


def run_shape(path: Path, mode: str, env=None) -> dict:
    import os

    environment = dict(os.environ, **(env or {}))
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(path), mode], capture_output=True, text=True,
                          timeout=300, env=environment)
    assert proc.returncode == 0, f"{mode}: {proc.stderr[-3000:]}"
    return json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("@@")][-1][2:])


HAZARD = 'torch.compile(m, mode="reduce-overhead")'
SHAPES = {
    "import under if": f"""\
        import os

        if os.environ.get("USE_TORCH"):
            import torch


        def build(m):
            if not os.environ.get("USE_TORCH"):
                return m
            return {HAZARD}
        """,
    "TYPE_CHECKING and a lazy import": f"""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import torch


        def build(m):
            try:
                import torch
            except ImportError:
                return m
            return {HAZARD}
        """,
    "contextlib.suppress": f"""\
        import contextlib

        with contextlib.suppress(ImportError):
            import torch


        def build(m):
            if "torch" not in globals():
                return m
            return {HAZARD}
        """,
    "try/except inside a function": f"""\
        def build(m):
            try:
                import torch
            except ImportError:
                return m
            return {HAZARD}
        """,
    "an except branch that leaves torch unbound": f"""\
        try:
            import torch
        except ImportError:
            pass


        def build(m):
            if "torch" not in globals():
                return m
            return {HAZARD}
        """,
    "sys.modules.get": f"""\
        import sys

        torch = sys.modules.get("torch")


        def build(m):
            if torch is None:
                return m
            return {HAZARD}
        """,
    "except binds None": f"""\
        try:
            import torch
        except ImportError:
            torch = None


        def build(m):
            if torch is None:
                return m
            return {HAZARD}
        """,
    "a function's own import": f"""\
        import sys


        def build(m):
            if sys.modules.get("torch", 0) is None:
                return m
            import torch
            return {HAZARD}
        """,
    "importlib": f"""\
        import importlib
        import sys

        torch = None if sys.modules.get("torch", 0) is None else importlib.import_module("torch")


        def build(m):
            if torch is None:
                return m
            return {HAZARD}
        """,
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_file_that_runs_without_torch_still_does_after_the_fix(tmp_path, shape):
    source = textwrap.dedent(SHAPES[shape])
    report = fix_bytes(source.encode(), str(tmp_path / "mod.py"))
    path = tmp_path / "mod.py"
    if report.fixed is None:  # no gate that keeps torch optional: the fix is shown, not applied
        assert [f for f in report.findings if f.code == "ROC101" and not f.applies(False)], report.findings
        path.write_text(source)
    else:
        fixed = report.fixed.decode()
        assert "is_rocm" in fixed and fix_bytes(report.fixed, str(path)).fixed is None
        path.write_bytes(report.fixed)
    assert run_shape(path, "missing") == {"out": "m", "calls": []}
    env = {"USE_TORCH": "1"}
    assert run_shape(path, "nvidia", env)["calls"] == [{"mode": "reduce-overhead"}]
    rocm = run_shape(path, "rocm", env)["calls"]
    assert rocm == [{"mode": "default" if report.fixed is not None else "reduce-overhead"}]


def test_which_optional_shapes_get_a_gate():
    """Where torch is bound for sure at the fix (an import in the function, a ``try`` whose
    handlers bind it or leave, ``torch = ...``), the gate follows that binding; where it may
    be unbound, the fix is shown and not applied."""
    fixed = {shape: fix_bytes(textwrap.dedent(src).encode()).fixed is not None for shape, src in SHAPES.items()}
    assert fixed == {
        "import under if": False, "contextlib.suppress": False, "an except branch that leaves torch unbound": False,
        "TYPE_CHECKING and a lazy import": True, "try/except inside a function": True, "sys.modules.get": True,
        "except binds None": True, "a function's own import": True, "importlib": True,
    }
    assert "import torch\n\nis_rocm" not in fix_bytes(textwrap.dedent(SHAPES["sys.modules.get"]).encode()).fixed.decode()


# -- (4) the set-up goes before the program, and keeps torch optional -----------------------

PROBE_SETUP = textwrap.dedent(r'''
    import json, os, runpy, sys
    mode = sys.argv[2]
    if mode == "missing":
        sys.modules["torch"] = None
    else:
        import torch
        if mode == "rocm":
            torch.version.hip = "6.2.0"
    sys.argv = [sys.argv[1]]
    runpy.run_path(sys.argv[0], run_name="__main__")
''')


def run_entry(path: Path, mode: str) -> str:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHINDUCTOR_")}
    proc = subprocess.run([sys.executable, "-c", PROBE_SETUP, str(path), mode], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, f"{mode}: {proc.stderr[-3000:]}"
    return proc.stdout


MAIN_FIRST = """\
if __name__ == "__main__":
    import os
    print("cudagraphs", os.environ.get("TORCHINDUCTOR_CUDAGRAPHS"))
"""

GUARDED = """\
import os

try:
    import torch
except ImportError:
    torch = None


def main():
    print("torch", torch is not None, "cudagraphs", os.environ.get("TORCHINDUCTOR_CUDAGRAPHS"))


if __name__ == "__main__":
    main()
"""

GUARD_AFTER_CODE = """\
import os

print("starting")
try:
    import torch
except ImportError:
    torch = None

if __name__ == "__main__":
    print("torch", torch is not None, "cudagraphs", os.environ.get("TORCHINDUCTOR_CUDAGRAPHS"))
"""

LAZY = """\
import os


def main():
    try:
        import torch
    except ImportError:
        torch = None
    print("torch", torch is not None, "cudagraphs", os.environ.get("TORCHINDUCTOR_CUDAGRAPHS"))


if __name__ == "__main__":
    main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("name, source", [("main first", MAIN_FIRST), ("guarded", GUARDED),
                                          ("guard after code", GUARD_AFTER_CODE), ("lazy", LAZY)])
def test_setup_runs_before_the_program_and_keeps_torch_optional(tmp_path, name, source):
    """The general set-up (here with the compile guard), which is written whatever the
    program's imports are."""
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport.prelude]\ncompile-guard = true\n")
    path = tmp_path / "run.py"
    path.write_text(source)
    proc = cli("setup", "--write", "run.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = path.read_text()
    assert written.index("# >>> rocmport prelude") < written.index('if __name__ == "__main__":')
    assert cli("setup", "run.py", cwd=tmp_path).returncode == 0  # a second run changes nothing
    assert "\nimport torch as _rocmport_torch\n" not in written or name == "main first"  # never unconditional
    rocm = run_entry(path, "rocm")
    assert "cudagraphs 0" in rocm, rocm  # the set-up ran before the program read the setting
    assert "cudagraphs None" in run_entry(path, "nvidia")
    if name != "main first":
        assert "torch False cudagraphs None" in run_entry(path, "missing")


AUTOTUNE_MAIN_FIRST = """\
import os

import torch

if __name__ == "__main__":
    f = torch.compile(abs, mode="max-autotune")
    print("backends", os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS"))
"""

AUTOTUNE_GUARDED = """\
import os

try:
    import torch
except ImportError:
    torch = None


def main():
    if torch is not None:
        torch.compile(abs, mode="max-autotune")
    print("torch", torch is not None, "backends", os.environ.get("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS"))


if __name__ == "__main__":
    main()
"""


@pytest.mark.slow
def test_the_short_set_up_goes_before_a_main_block_right_after_the_imports(tmp_path):
    path = tmp_path / "run.py"
    path.write_text(AUTOTUNE_MAIN_FIRST)
    proc = cli("setup", "--write", "run.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = path.read_text()
    assert " lean" in written and written.index("# >>> rocmport prelude") < written.index('if __name__ == "__main__":')
    assert cli("setup", "run.py", cwd=tmp_path).returncode == 0  # a second run changes nothing
    assert "backends ATEN" in run_entry(path, "rocm")
    assert "backends None" in run_entry(path, "nvidia")


@pytest.mark.slow
def test_the_short_set_up_never_makes_optional_torch_mandatory(tmp_path):
    """No unconditional ``import torch`` above a ``try``/``except ImportError`` guard: no
    block, and the reason with the shell form."""
    path = tmp_path / "run.py"
    path.write_text(AUTOTUNE_GUARDED)
    proc = cli("setup", "--write", "run.py", cwd=tmp_path)
    assert path.read_text() == AUTOTUNE_GUARDED
    assert "does not import torch in its import block" in proc.stderr + proc.stdout, proc.stderr
    assert "torch False backends None" in run_entry(path, "missing")


@pytest.mark.parametrize("torch_name, optional", [(None, False), (None, True), ("torch", True), ("th", False)])
def test_the_short_set_up_block_is_recognised_as_rocmports_own_and_keeps_torch_optional(torch_name, optional):
    """The short block in each form ``gating`` may ask for (the file's torch or its own, torch
    optional or not) is read back as rocmport's own, so a second run keeps it; the optional
    form runs without torch."""
    import dataclasses

    from rocmport import prelude

    opts = dataclasses.replace(prelude.PreludeOptions(), compiles=True, autotunes=True, rng_patch=False,
                               compile_guard=False)
    block = prelude.render_inline("is_rocm", {"gate", "setup"}, opts, define_gate=False, torch_name=torch_name,
                                  optional=optional)
    head = {None: "", "torch": "torch = None\n", "th": "import torch as th\n"}[torch_name]
    text = head + block
    assert prelude.is_own_block(text, prelude.find_block(text), opts)
    assert ("getattr(getattr(" in block) == optional
    if optional:
        probe = "import sys\nsys.modules['torch'] = None\n" + text + "print('ok')\n"
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
        assert proc.stdout.strip() == "ok", proc.stderr
