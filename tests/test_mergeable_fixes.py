"""What `rocmport fix` writes is what a maintainer merges: the least code, no import side
effects, the repository's own ruff and isort leave it as it is, a patch `git apply` takes,
nothing lost, nothing above the file's own set-up, and rocmport does not flag its own code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport import house, prelude
from rocmport.cli import main

from .harness import fix, lint

RUFF = shutil.which("ruff") or shutil.which("ruff", path=os.path.dirname(sys.executable))
needs_ruff = pytest.mark.skipif(RUFF is None, reason="ruff is installed by the test extra")


def run(*args, cwd):
    runner = CliRunner()
    old = os.getcwd()
    try:
        os.chdir(cwd)
        return runner.invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    write(tmp_path / "pyproject.toml", """\
        [project]
        name = "demo"
        dependencies = ["torch>=2.4"]

        [tool.ruff]
        line-length = 88

        [tool.ruff.lint]
        select = ["E", "F", "I", "W"]
        """)
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "model.py", '''\
        """A model."""

        import os

        import numpy as np
        import torch

        from pkg import helpers


        def build(net, cfg):
            compiled = torch.compile(net, mode="reduce-overhead", fullgraph=True)
            return compiled, helpers, np, os, cfg
        ''')
    write(tmp_path / "pkg" / "helpers.py", "X = 1\n")
    return tmp_path


# -- the least code ------------------------------------------------------------------------

def test_gate_only_fix_adds_one_line_and_no_file(repo):
    before = (repo / "pkg" / "model.py").read_text()
    result = run("fix", "--write", ".", cwd=repo)
    after = (repo / "pkg" / "model.py").read_text()
    assert sorted(p.name for p in (repo / "pkg").iterdir()) == ["__init__.py", "helpers.py", "model.py"]
    assert len(after.splitlines()) - len(before.splitlines()) <= 4
    assert 'is_rocm = getattr(torch.version, "hip", None) is not None' in after
    assert "rocmport prelude" not in after and "_rocmport_setup" not in after
    assert "Fixed 1 finding in 1 file." in result.output


def test_no_side_effect_on_import_under_rocm(repo, tmp_path):
    run("fix", "--write", ".", cwd=repo)
    probe = textwrap.dedent("""
        import os, sys
        import torch
        torch.version.hip = "6.2.0"
        import torch._dynamo.config as dc
        before = dict(os.environ), getattr(dc, "recompile_limit", None)
        sys.path.insert(0, sys.argv[1])
        import pkg.model
        after = dict(os.environ), getattr(dc, "recompile_limit", None)
        assert pkg.model.is_rocm is True
        assert before == after, "importing a fixed module changed process-wide state"
        print("OK")
        """)
    done = subprocess.run([sys.executable, "-c", probe, str(repo)], capture_output=True, text=True, timeout=300)
    assert "OK" in done.stdout, done.stderr


# -- formatter and linter peace ----------------------------------------------------------

@needs_ruff
def test_repository_ruff_and_format_leave_the_fix_alone(repo):
    assert subprocess.run([RUFF, "format", "--check", "."], cwd=repo, capture_output=True).returncode == 0
    assert subprocess.run([RUFF, "check", "."], cwd=repo, capture_output=True).returncode == 0
    run("fix", "--write", ".", cwd=repo)
    fixed = (repo / "pkg" / "model.py").read_text()
    check = subprocess.run([RUFF, "check", "."], cwd=repo, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout  # no E501, I001, E402
    fmt = subprocess.run([RUFF, "format", "--check", "--diff", "."], cwd=repo, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout
    # the rewritten call went past 88 columns: it is wrapped as ruff format wraps it
    assert "torch.compile(\n" in fixed
    # after the repository's own tools, a second fix changes nothing
    subprocess.run([RUFF, "check", "--fix", "."], cwd=repo, capture_output=True)
    subprocess.run([RUFF, "format", "."], cwd=repo, capture_output=True)
    again = run("fix", ".", cwd=repo)
    assert again.output.strip() == "" and again.exit_code == 0


def test_quote_style_follows_ruff(repo):
    with open(repo / "pyproject.toml", "a") as handle:
        handle.write('\n[tool.ruff.format]\nquote-style = "single"\n')
    house._style_for_dir.cache_clear()
    report = fix('import torch\nf = torch.compile(g, mode=m)\n', path=str(repo / "pkg" / "x.py"))
    text = report.fixed.decode()
    assert "is_rocm = getattr(torch.version, 'hip', None) is not None" in text
    assert "'reduce-overhead': 'default'" in text


def test_import_torch_goes_where_isort_puts_it():
    src = "import os\n\nimport numpy\nimport triton\nfrom torch import compile as tc\n\nf = tc(mode='reduce-overhead')\n"
    text = fix(src).fixed.decode()
    assert text.startswith("import os\n\nimport numpy\nimport torch\nimport triton\nfrom torch import compile as tc\n\n"
                           'is_rocm = getattr(torch.version, "hip", None) is not None\n\n')


# -- order and data loss ---------------------------------------------------------------------

def test_gate_comes_after_the_files_own_environment_set_up():
    src = textwrap.dedent("""\
        import os

        os.environ["TORCH_LOGS"] = "+dynamo"
        os.environ.setdefault("TORCH_COMPILE_DEBUG", "1")

        import torch

        f = torch.compile(g, mode="max-autotune")
        """)
    text = fix(src).fixed.decode()
    lines = text.splitlines()
    assert lines.index('os.environ["TORCH_LOGS"] = "+dynamo"') < lines.index("import torch") < lines.index(
        'is_rocm = getattr(torch.version, "hip", None) is not None')


def test_an_edited_block_is_never_replaced(tmp_path):
    """isort moved a user import between the markers; a later fix needs another part."""
    options = prelude.PreludeOptions()
    block = prelude.render_inline("is_rocm", ["graph_helper"], options, torch_name="torch")
    lines = block.splitlines(keepends=True)
    edited = lines[:2] + ["import json\n"] + lines[2:]  # what isort did
    src = "import torch\n\n" + "".join(edited) + "\n\ndef f(x):\n    return json.dumps(x)\n"
    assert not prelude.is_own_block(src, prelude.find_block(src), options)
    hazard = src + "\ng = torch.compile(f, mode='reduce-overhead')\n"
    text = fix(hazard, select=["ROC101", "ROC106"], unsafe=True).fixed
    text = text.decode() if text else hazard
    assert "import json\n" in text
    assert "".join(edited) in text  # the block is as the user left it


def test_own_block_is_recognised_after_ruff_format(tmp_path):
    options = prelude.PreludeOptions()
    block = prelude.render_inline("is_rocm", ["graph_helper"], options)
    reformatted = block.replace('"hip"', "'hip'")
    text = "import torch\n" + reformatted
    assert prelude.is_own_block(text, prelude.find_block(text), options)


# -- the diff is a patch ----------------------------------------------------------------------

def test_diff_applies_with_git_and_names_a_generated_module_once(repo):
    with open(repo / "pyproject.toml", "a") as handle:
        handle.write('\n[tool.rocmport]\nunsafe-fixes = true\nextend-select = ["ROC106"]\n'
                     '[tool.rocmport.prelude]\nstyle = "module"\n')
    write(repo / "pkg" / "other.py", "import torch\n\ng = torch.compile(abs, mode='reduce-overhead')\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init")
    result = run("fix", "pkg", cwd=repo)
    diff = result.stdout
    assert diff.count("+++ b/pkg/_rocmport.py") == 1
    assert "--- /dev/null\n+++ b/pkg/_rocmport.py" in diff
    assert str(repo) not in diff
    (repo / "fix.patch").write_text(diff)
    check = git(repo, "apply", "--check", "fix.patch")
    assert check.returncode == 0, check.stderr
    assert "would create pkg/_rocmport.py: add it to version control" in result.stderr
    written = run("fix", "--write", "pkg", cwd=repo)
    assert "created pkg/_rocmport.py: add it to version control" in written.stderr


def test_json_fixes_carry_the_gate_binding():
    src = "import torch\n\nf = torch.compile(g, mode='reduce-overhead')\n"
    (finding,) = lint(src)
    contents = [e.content for e in finding.fix.edits]
    assert any("is_rocm = getattr(torch.version" in c for c in contents)
    # applying exactly the edits of the JSON output gives the fixed file
    out = src
    for e in sorted(finding.fix.edits, key=lambda e: e.start, reverse=True):
        out = out[:e.start] + e.content + out[e.end:]
    assert out == fix(src).fixed.decode()


def test_json_output_lists_the_gate_edit(tmp_path):
    path = write(tmp_path / "m.py", "import torch\nf = torch.compile(g, mode='max-autotune')\n")
    result = run("lint", "--output-format", "json", str(path), cwd=tmp_path)
    data = json.loads(result.stdout)
    assert any("is_rocm = " in e["content"] for e in data[0]["fix"]["edits"])


# -- tests of CUDA graphs, the summary, own output -----------------------------------------------

def test_cuda_graph_tests_get_a_skip_suggestion_not_a_rewrite(tmp_path):
    src = "import torch\n\ndef test_cudagraph_replay():\n    f = torch.compile(g, mode='reduce-overhead')\n"
    (finding,) = lint(src, path=str(tmp_path / "test_model.py"))
    assert not finding.fixable and "skipif" in finding.fix.message
    assert fix(src, path=str(tmp_path / "test_model.py")).fixed is None
    whole = lint("import torch\n\ndef test_replay():\n    f = torch.compile(g, mode='reduce-overhead')\n",
                 path=str(tmp_path / "test_cuda_graphs.py"))
    assert not whole[0].fixable
    # judged by what the test calls, not only by names
    calls = lint("import torch\n\ndef test_replay(g):\n    f = torch.compile(g, mode='reduce-overhead')\n"
                 "    with torch.cuda.graph(torch.cuda.CUDAGraph()):\n        f(1)\n", path=str(tmp_path / "test_m.py"))
    assert not calls[0].fixable and "calls `torch.cuda.graph`" in calls[0].message
    # a module that defines no test is not tests, whatever its name
    script = lint("import torch\nf = torch.compile(g, mode='reduce-overhead')\n",
                  path=str(tmp_path / "test_cuda_graphs.py"))
    assert script[0].fixable and script[0].scope == "source"
    # a test about something else is ported as any code is
    other = lint(src.replace("test_cudagraph_replay", "test_loss"), path=str(tmp_path / "test_model.py"))
    assert other[0].fixable


def test_summary_says_what_is_left_by_hand(tmp_path):
    write(tmp_path / "m.py", """\
        import torch

        class C:
            compile_mode = "reduce-overhead"

        f = torch.compile(g, mode="max-autotune")
        """)
    diff = run("fix", ".", cwd=tmp_path)
    assert "Would fix 1 finding in 1 file; 1 needs a manual change (`rocmport lint` lists them)" in diff.stderr
    written = run("fix", "--write", ".", cwd=tmp_path)
    assert "Fixed 1 finding in 1 file; 1 needs a manual change (`rocmport lint` lists them)." in written.stderr


def test_rocmport_does_not_flag_its_own_code(tmp_path):
    src = textwrap.dedent("""\
        import torch
        import torch._inductor.config as ic

        ic.triton.cudagraphs = True

        def build(m, cfg):
            a = torch.compile(m, mode=cfg.mode)
            b = torch.compile(m, mode="max-autotune")
            return a, b
        """)
    before = {f.code for f in lint(src) if not f.fixable}
    fixed = fix(src).fixed.decode()
    assert {f.code for f in lint(fixed)} == before


# -- torch imported lazily or optionally: the module still imports without torch ------------------

def test_lazy_torch_import_gets_a_local_gate():
    src = textwrap.dedent("""\
        def build(m):
            import torch
            return torch.compile(m, mode="reduce-overhead")
        """)
    text = fix(src).fixed.decode()
    assert text.splitlines()[0] == "def build(m):"
    assert '    is_rocm = getattr(torch.version, "hip", None) is not None' in text
    exec(compile(text, "m.py", "exec"), {})  # defining the module needs no torch


def test_optional_torch_import_keeps_the_module_importable_without_torch():
    src = textwrap.dedent("""\
        try:
            import torch
        except ImportError:
            torch = None

        def build(m):
            return torch.compile(m, mode="reduce-overhead")
        """)
    text = fix(src).fixed.decode()
    assert 'getattr(getattr(torch, "version", None), "hip", None) is not None' in text
    namespace = {"__builtins__": __builtins__}
    code = text.replace("import torch", "import _rocmport_no_such_module as torch")
    exec(compile(code, "m.py", "exec"), namespace)
    assert namespace["is_rocm"] is False


# -- process-wide set-up only where a program starts ---------------------------------------------

def test_setup_goes_into_the_named_entry_point_only(repo):
    write(repo / "train.py", """\
        import torch

        from pkg import model


        def main():
            print(model, torch.compile(model, mode="max-autotune-no-cudagraphs"))


        if __name__ == "__main__":
            main()
        """)
    listing = run("setup", cwd=repo)
    assert "train.py" in listing.output
    result = run("setup", "--write", "train.py", cwd=repo)
    text = (repo / "train.py").read_text()
    assert 'if getattr(torch.version, "hip", None) is not None:' in text
    assert 'os.environ.setdefault("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS", "ATEN")' in text
    # torch>=2.4 is declared, but the program captures no CUDA graph: no RNG patch
    assert "_rocmport_rng_patch" not in text and "_rocmport_setup" not in text
    assert "Added the ROCm set-up to train.py" in result.stderr
    again = run("setup", "--write", "train.py", cwd=repo)
    assert "have the set-up already" in again.stderr
    assert "_rocmport_setup" not in (repo / "pkg" / "model.py").read_text()


def test_rng_patch_only_where_old_torch_is_possible(tmp_path):
    for spec, wanted in (("torch>=2.10", False), ("torch==2.13.0", False), ("torch>=2.4,<3", True),
                         ("torch", True), ("torch<2.12", True)):
        folder = tmp_path / spec.replace(">", "g").replace("<", "l").replace("=", "e").replace(",", "_")
        write(folder / "requirements.txt", f"numpy\n{spec}\n")
        house.lowest_torch.cache_clear()
        assert house.may_run_on_torch_before(folder, (2, 10)) is wanted, spec
    empty = tmp_path / "none"
    empty.mkdir()
    assert house.may_run_on_torch_before(empty, (2, 10)) is True


def test_entry_points_setting_and_shell_exports(repo):
    with open(repo / "pyproject.toml", "a") as handle:
        handle.write('\n[tool.rocmport]\nentry-points = ["scripts/*.py"]\n')
    write(repo / "scripts" / "serve.py", "import torch\n\nprint(torch.compile(abs, mode='max-autotune'))\n")
    write(repo / "scripts" / "plain.py", "import torch\n\nprint(torch)\n")
    run("fix", "--write", ".", cwd=repo)
    assert "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS" in (repo / "scripts" / "serve.py").read_text()
    assert (repo / "scripts" / "plain.py").read_text() == "import torch\n\nprint(torch)\n"  # it never compiles
    assert "_rocmport_setup" not in (repo / "pkg" / "model.py").read_text()
    shell = run("setup", "--shell", cwd=repo)
    assert "export TORCHINDUCTOR_CUDAGRAPHS=0" in shell.output


def test_generated_module_starts_with_the_package_license(tmp_path):
    pkg = tmp_path / "pkg"
    write(pkg / "__init__.py", "# Copyright 2026 Demo\n# SPDX-License-Identifier: MIT\n")
    write(pkg / "a.py", "# Copyright 2026 Demo\n# SPDX-License-Identifier: MIT\nimport torch\n")
    assert house.license_header(pkg) == "# Copyright 2026 Demo\n# SPDX-License-Identifier: MIT\n"
    module = prelude.render_module(prelude.PreludeOptions(), ["graph_helper"], header=house.license_header(pkg))
    assert module.startswith("# Copyright 2026 Demo\n") and "_rocmport_setup" not in module
    write(pkg / "b.py", "import torch\n")
    assert house.license_header(pkg) == ""


def test_an_existing_user_module_is_never_overwritten(tmp_path):
    pkg = tmp_path / "pkg"
    write(pkg / "__init__.py", "")
    write(pkg / "_rocmport.py", "def mine():\n    return 1\n")
    target = write(pkg / "a.py", "import torch\n\nf = torch.compile(abs, mode='reduce-overhead')\n")
    write(tmp_path / "pyproject.toml", '[tool.rocmport]\nunsafe-fixes = true\nextend-select = ["ROC106"]\n'
                                       '[tool.rocmport.prelude]\nstyle = "module"\n')
    run("fix", "--write", ".", cwd=tmp_path)
    assert (pkg / "_rocmport.py").read_text() == "def mine():\n    return 1\n"
    assert "_rocmport import" not in target.read_text()


def test_gate_goes_before_an_import_block_statement_that_holds_the_fix():
    """`if <hazard>: import x` looks like part of the import block; the gate must come before
    it, since the fix sits in its test."""
    src = textwrap.dedent("""\
        import torch

        if torch.cuda.get_device_capability() >= (9, 0):
            import flash_attn_interface
        """)
    text = fix(src, select=["ROC702"]).fixed.decode()
    lines = text.splitlines()
    gate = 'is_rocm = getattr(torch.version, "hip", None) is not None'
    assert lines.index(gate) < lines.index("if not is_rocm and torch.cuda.get_device_capability() >= (9, 0):")


def test_a_rewritten_decorator_is_wrapped_as_black_wraps_it(tmp_path):
    black = pytest.importorskip("black")  # in the test extra
    git(tmp_path, "init", "-q")
    write(tmp_path / "pyproject.toml", "[tool.black]\nline-length = 88\n")
    path = write(tmp_path / "m.py", """\
        import torch


        class T:
            def test_x(self, mode):
                @torch.compile(fullgraph=True, mode=mode)
                def step():
                    return 1

                return step
        """)
    house._style_for_dir.cache_clear()
    run("fix", "--write", "m.py", cwd=tmp_path)
    text = path.read_text()
    assert "        @torch.compile(\n            fullgraph=True,\n" in text
    assert black.format_str(text, mode=black.Mode(line_length=88)) == text


def test_lines_after_imports_follow_the_isort_setting(tmp_path):
    git(tmp_path, "init", "-q")
    write(tmp_path / "pyproject.toml", "[tool.ruff.lint.isort]\nlines-after-imports = 2\n")
    house._style_for_dir.cache_clear()
    text = fix("import torch\nx = 1\nf = torch.compile(g, mode='reduce-overhead')\n",
               path=str(tmp_path / "m.py")).fixed.decode()
    assert text.startswith('import torch\n\n\nis_rocm = getattr(torch.version, "hip", None) is not None\n')


def test_one_gate_line_for_fixes_before_and_after_the_torch_import():
    """Found by the property test: an environment write before `import torch` and a compile
    call after it got one gate line each."""
    src = ('import os\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"\nimport torch\n'
           'f = torch.compile(g, mode="reduce-overhead")\n')
    text = fix(src).fixed.decode()
    assert text.count("is_rocm = getattr(") == 1
    assert text.index("is_rocm = getattr(") < text.index('os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"]')
