"""Reasons and an off switch (issue 29): `fix --pr-body FILE`, the `cuda-graphs-on-rocm` key that
silences the CUDA-graph rules, and the optional reason comments at gates."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport.cli import main
from rocmport.config import CUDA_GRAPH_CODES, ConfigError, load_settings
from rocmport.registry import rule_infos

GRAPHS = textwrap.dedent("""\
    import torch
    import triton
    from torch._inductor import config

    config.triton.cudagraphs = True
    f = torch.compile(g, mode="reduce-overhead")
    h = torch.compile(k, mode="max-autotune")


    @triton.jit
    def k(x):
        pass


    def launch(x):
        k[(1,)](x, num_warps=32)
    """)
DEFAULT_MODE = textwrap.dedent("""\
    class Config:
        compile_mode: str = "reduce-overhead"
    """)


def run(*args, cwd):
    old = os.getcwd()
    try:
        os.chdir(cwd)
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "model.py").write_text(GRAPHS)
    (pkg / "config.py").write_text(DEFAULT_MODE)
    return tmp_path


def codes(output: str):
    return sorted({line.split(": ", 1)[1].split()[0] for line in output.splitlines() if ": ROC" in line})


# -- the off switch ------------------------------------------------------------------------------

def test_cuda_graphs_on_rocm_silences_exactly_the_cuda_graph_rules(project):
    assert codes(run("lint", "--no-cache", ".", cwd=project).stdout) == ["ROC101", "ROC102", "ROC105", "ROC201",
                                                                        "ROC503"]
    with open(project / "pyproject.toml", "a") as handle:
        handle.write("\n[tool.rocmport]\ncuda-graphs-on-rocm = true\n")
    result = run("lint", "--no-cache", ".", cwd=project)
    assert codes(result.stdout) == ["ROC503"]  # the Triton block is not about CUDA graphs
    # the command line cannot turn them back on: the key says the project measured them working
    assert codes(run("lint", "--no-cache", "--select", "ROC1,ROC2,ROC5", ".", cwd=project).stdout) == ["ROC503"]
    fixed = run("fix", "--no-cache", "--write", ".", cwd=project)
    text = (project / "pkg" / "model.py").read_text()
    assert 'mode="reduce-overhead")' in text and "config.triton.cudagraphs = True" in text
    assert "16 if is_rocm else 32" in text and fixed.exit_code == 0


def test_the_key_covers_the_shell_and_environment_rules(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport]\ncuda-graphs-on-rocm = true\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\nexport TORCHINDUCTOR_CUDAGRAPHS=1\nexport TORCHINDUCTOR_MAX_AUTOTUNE=1\n")
    assert codes(run("lint", "--no-cache", "run.sh", cwd=tmp_path).stdout) == ["ROC601"]


def test_the_cuda_graph_codes_are_the_rules_that_turn_graphs_off():
    infos = rule_infos()
    assert CUDA_GRAPH_CODES <= set(infos)
    for code in CUDA_GRAPH_CODES:  # each one's documentation is about CUDA graphs
        text = (infos[code].WHY + infos[code].SUMMARY).lower()
        assert "cuda graph" in text or "cudagraph" in text, code
    for code in ("ROC203", "ROC301", "ROC307", "ROC501", "ROC601"):  # autotuning, capture hazards, Triton
        assert code not in CUDA_GRAPH_CODES


def test_the_key_must_be_a_boolean(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.rocmport]\ncuda-graphs-on-rocm = "yes"\n')
    with pytest.raises(ConfigError, match="cuda-graphs-on-rocm"):
        load_settings(tmp_path)


# -- the pull request's description --------------------------------------------------------------

def test_pr_body_without_write_describes_what_would_be_written(project):
    before = (project / "pkg" / "model.py").read_text()
    result = run("fix", "--no-cache", "--pr-body", "body.md", ".", cwd=project)
    assert result.exit_code == 1 and "+++ b/pkg/model.py" in result.stdout
    assert (project / "pkg" / "model.py").read_text() == before
    body = (project / "body.md").read_text()
    assert "would write" in body and "# Port to AMD ROCm: 4 fixes in 1 file" in body
    assert "| ROC101 `compile-reduce-overhead` | 1 | 1 |" in body
    assert "- `pkg/model.py`: 1 fix (line 7 before the change)" in body
    # why, with the threads the rule cites, linked
    assert "**Why on ROCm.** \"reduce-overhead\" sets `triton.cudagraphs=True`." in body
    assert "[ROCm/clr#279](https://github.com/ROCm/clr/issues/279)" in body
    assert "[pytorch#187715](https://github.com/pytorch/pytorch/issues/187715)" in body
    # left for a person: the display-only finding, with its place
    left = body.split("## Left for a person", 1)[1].split("## How to verify", 1)[0]
    assert "### ROC105 cudagraph-mode-default (1)" in left and "`pkg/config.py:2:" in left
    verify = body.split("## How to verify", 1)[1].split("## How to opt out", 1)[0]
    assert "TORCH_LOGS=cudagraphs" in verify and "ROC101, ROC102, ROC201:" in verify
    assert "ROC503: Run the kernel's tests on an AMD GPU" in verify
    opt_out = body.split("## How to opt out", 1)[1]
    assert "`cuda-graphs-on-rocm = true`" in opt_out and "revert the hunks of ROC101, ROC102, ROC201" in opt_out
    assert "per-file-ignores" in opt_out and "# noqa: ROC101" in opt_out


def test_pr_body_with_write_describes_what_was_written(project):
    result = run("fix", "--no-cache", "--write", "--pr-body", "out/body.md", ".", cwd=project)
    assert result.exit_code == 1  # ROC105 is left for a person
    body = (project / "out" / "body.md").read_text()
    assert "(rocmport " in body and ") wrote: it fixes" in body
    assert "ROC503 triton-num-warps-above-16" in body
    # a second run has nothing left to fix: the description says so
    again = run("fix", "--no-cache", "--write", "--pr-body", "again.md", ".", cwd=project)
    text = (project / "again.md").read_text()
    assert again.exit_code == 1 and "Nothing to change." in text and "ROC105" in text


def test_pr_body_says_which_fixes_are_not_gated(tmp_path):
    (tmp_path / "cap.py").write_text(textwrap.dedent("""\
        import torch

        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = f(x)
            torch.cuda.synchronize()
        """))
    run("fix", "--no-cache", "--pr-body", "body.md", "cap.py", cwd=tmp_path)
    body = (tmp_path / "body.md").read_text()
    assert "The fixes of ROC301 change the code on every platform" in body
    assert "whether torch is a ROCm build" not in body


def test_pr_body_cannot_describe_stdin(tmp_path):
    result = CliRunner().invoke(main, ["fix", "--pr-body", str(tmp_path / "b.md"), "-"], input="x = 1\n")
    assert result.exit_code == 2 and "--pr-body" in result.stderr and not (tmp_path / "b.md").exists()


# -- reason comments -----------------------------------------------------------------------------

def test_reason_comments_name_the_rule_above_each_gated_statement(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport]\nreason-comments = true\n")
    (tmp_path / "a.py").write_text(textwrap.dedent("""\
        import torch


        def build(m):
            if m:
                return torch.compile(
                    m,
                    mode="reduce-overhead",
                )
            return torch.compile(m)


        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x
        """))
    run("fix", "--no-cache", "--write", "a.py", cwd=tmp_path)
    text = (tmp_path / "a.py").read_text()
    assert text.count("# ROC101 compile-reduce-overhead: see `rocmport rule ROC101`") == 2
    assert "    if m:\n        # ROC101 compile-reduce-overhead: see `rocmport rule ROC101`\n        return torch.compile(" in text
    assert "\n# ROC101 compile-reduce-overhead: see `rocmport rule ROC101`\n@torch.compile(" in text
    for tool in ("black", "ruff"):
        exe = Path(sys.executable).parent / tool
        args = [str(exe), "--check", "-q", "a.py"] if tool == "black" else [str(exe), "format", "--isolated",
                                                                             "--check", "a.py"]
        assert subprocess.run(args, cwd=tmp_path).returncode == 0, tool
    again = run("fix", "--no-cache", "a.py", cwd=tmp_path)
    assert again.stdout == "" and again.exit_code == 0
    # off by default
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "b.py").write_text("import torch\n\nf = torch.compile(g, mode='reduce-overhead')\n")
    run("fix", "--no-cache", "--write", "b.py", cwd=tmp_path)
    assert "rocmport rule" not in (tmp_path / "b.py").read_text()
