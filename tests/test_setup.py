"""`rocmport setup` earns its lines (issue 29): candidates ranked by the evidence that they start
a program, only the settings that change something for that program, placed before anything
imports the inductor config (or a reason and the shell form), short, and clean under black,
ruff format and ruff's default rules."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport import entrypoints, program
from rocmport.cli import main

BIN = Path(sys.executable).parent


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def run(*args, cwd):
    old = os.getcwd()
    try:
        os.chdir(cwd)
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


MAIN = """\
    import argparse

    import torch


    def main():
        parser = argparse.ArgumentParser()
        parser.parse_args()
        print(torch)


    if __name__ == "__main__":
        main()
    """


@pytest.fixture
def project(tmp_path):
    """A repository whose real training entry point is `src/demo/train.py`, run by a launch
    script, a Makefile, a Dockerfile, CI and the README, among many look-alike scripts."""
    write(tmp_path / "pyproject.toml", """\
        [project]
        name = "demo"
        dependencies = ["torch>=2.10"]

        [project.scripts]
        demo-serve = "demo.serve:main"
        """)
    write(tmp_path / "src" / "demo" / "__init__.py", "")
    write(tmp_path / "src" / "demo" / "train.py", MAIN)
    write(tmp_path / "src" / "demo" / "serve.py", "import torch\n\n\ndef main():\n    print(torch)\n")
    write(tmp_path / "scripts" / "launch.sh", "#!/bin/sh\ntorchrun --nproc_per_node 8 -m demo.train \"$@\"\n")
    write(tmp_path / "Makefile", "train:\n\tpython -m demo.train --config a.yaml\n")
    write(tmp_path / "Dockerfile", "FROM python\nCMD [\"python\", \"-m\", \"demo.train\"]\n")
    write(tmp_path / ".github" / "workflows" / "smoke.yml", "jobs:\n  t:\n    steps:\n      - run: python tools/report.py\n")
    write(tmp_path / "tools" / "report.py", MAIN)
    write(tmp_path / "README.md", "Train:\n\n```sh\npython -m demo.train --config a.yaml\n```\n")
    # 180 look-alikes: a __main__ guard and a parser each, named by nothing
    for i in range(180):
        write(tmp_path / "experiments" / f"exp_{i:03d}.py", MAIN)
    write(tmp_path / "tests" / "test_train.py", MAIN)
    return tmp_path


def ranked(root: Path):
    files = [str(p) for p in root.rglob("*.py")]
    return entrypoints.rank(files, root)


def test_the_real_entry_point_ranks_first_and_the_evidence_is_given(project):
    found = ranked(project)
    assert found[0].path == "src/demo/train.py"
    assert {"run by Dockerfile", "run by Makefile", "run by scripts/launch.sh", "in README.md"} <= set(
        found[0].evidence)
    assert [c.path for c in found[1:3]] == ["src/demo/serve.py", "tools/report.py"]
    assert found[1].target == "demo.serve:main"
    assert found[-1].path == "tests/test_train.py"  # a test is never a program's start


def test_a_name_alone_is_no_evidence(tmp_path):
    write(tmp_path / "train.py", "print(1)\n")  # no guard, launched by nothing
    write(tmp_path / "run.py", MAIN)
    assert [c.path for c in ranked(tmp_path)] == ["run.py"]


def test_a_command_of_the_project_that_names_a_recipe(tmp_path):
    write(tmp_path / "pyproject.toml", '[project]\nname = "tt"\n[project.scripts]\ntune = "tt.cli:main"\n')
    write(tmp_path / "tt" / "__init__.py", "")
    write(tmp_path / "tt" / "cli.py", "import tt\n\n\ndef main():\n    print(tt)\n")
    for name in ("lora_finetune_single_device", "full_finetune_distributed", "knowledge_distillation"):
        write(tmp_path / "recipes" / f"{name}.py", MAIN)
    write(tmp_path / "README.md", "```\ntune run lora_finetune_single_device --config llama3/8B_lora\n```\n")
    found = ranked(tmp_path)
    assert [c.path for c in found[:2]] == ["tt/cli.py", "recipes/lora_finetune_single_device.py"]
    assert "named by a command in README.md" in found[1].evidence


def test_setup_lists_the_ranked_top_and_counts_the_others(project):
    result = run("setup", cwd=project)
    lines = result.stdout.splitlines()
    assert lines[1].startswith("  src/demo/train.py  [")
    assert len(lines) == 1 + entrypoints.SHOWN + 1
    assert lines[-1] == f"  and {len(ranked(project)) - entrypoints.SHOWN} others (`rocmport setup --all` lists them)"
    assert len(run("setup", "--all", cwd=project).stdout.splitlines()) == 1 + len(ranked(project))


# -- only what changes something ---------------------------------------------------------------------

def test_a_program_that_never_compiles_gets_nothing(project):
    before = (project / "src" / "demo" / "train.py").read_text()
    result = run("setup", "--write", "src/demo/train.py", cwd=project)
    assert result.exit_code == 0 and "nothing to set up: no torch.compile in it" in result.stderr
    assert (project / "src" / "demo" / "train.py").read_text() == before


def test_compiling_through_a_project_module_counts(project):
    write(project / "src" / "demo" / "model.py", """\
        import torch


        def build(net):
            return torch.compile(net, mode="max-autotune-no-cudagraphs")
        """)
    write(project / "src" / "demo" / "train.py", MAIN.replace("    import torch\n", "    import torch\n\n    "
                                                               "from demo.model import build\n").replace(
        "print(torch)", "print(build(torch.nn.Linear(2, 2)))"))
    found = program.analyse(str(project / "src" / "demo" / "train.py"), [str(p) for p in project.rglob("*.py")])
    assert found.compiles and found.autotunes and not found.captures and not found.early_inductor
    result = run("setup", "--write", "src/demo/train.py", cwd=project)
    text = (project / "src" / "demo" / "train.py").read_text()
    assert result.exit_code == 0, result.stderr
    block = text[text.index("# >>> rocmport"):text.index("# <<< rocmport prelude <<<")]
    assert 'os.environ.setdefault("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS", "ATEN")' in block
    for nothing in ("CUDAGRAPHS", "MEMORY_PLANNING", "recompile", "rng", "except"):  # no-ops and noise
        assert nothing not in block
    assert len(block.splitlines()) + 1 <= 30
    again = run("setup", "--write", "src/demo/train.py", cwd=project)
    assert "have the set-up already" in again.stderr and (project / "src" / "demo" / "train.py").read_text() == text


def test_compiling_without_max_autotune_needs_nothing(tmp_path):
    write(tmp_path / "train.py", MAIN.replace("print(torch)", "print(torch.compile(torch.nn.Linear(2, 2)))"))
    result = run("setup", "train.py", cwd=tmp_path)
    assert result.exit_code == 0 and result.stdout == ""
    assert "it compiles without max-autotune" in result.stderr


def test_an_early_inductor_import_through_the_project_is_said_and_nothing_is_written(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "kernels.py", """\
        import torch


        @torch.compile(mode="max-autotune")
        def fused(x):
            return x
        """)
    entry = write(tmp_path / "train.py", MAIN.replace("    import torch\n", "    import torch\n\n    from pkg import kernels\n"))
    before = entry.read_text()
    result = run("setup", "--write", "train.py", cwd=tmp_path)
    assert result.exit_code == 0 and entry.read_text() == before
    assert "torch._inductor.config is imported before the set-up could run" in result.stderr
    assert "pkg/kernels.py:4: torch.compile(...)" in result.stderr and "rocmport setup --shell" in result.stderr
    # directly, too
    entry.write_text("import torch._inductor.config\n" + before.replace("from pkg import kernels\n", "").replace(
        "print(torch)", "print(torch.compile(abs, mode='max-autotune'))"))
    direct = run("setup", "--write", "train.py", cwd=tmp_path)
    assert "train.py:1: import torch._inductor.config" in direct.stderr


def test_a_compile_inside_a_function_of_an_imported_module_is_not_early(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "kernels.py", "import torch\n\n\ndef get(f):\n    return torch.compile(f, mode='max-autotune')\n")
    write(tmp_path / "train.py", MAIN.replace("    import torch\n", "    import torch\n\n    from pkg import kernels\n"))
    result = run("setup", "--write", "train.py", cwd=tmp_path)
    assert result.exit_code == 0 and "Added the ROCm set-up to train.py" in result.stderr


@pytest.mark.parametrize("profile", ["safe", "tuned"])
def test_the_set_up_is_clean_under_black_ruff_format_and_ruff_defaults(tmp_path, profile):
    write(tmp_path / "pyproject.toml", f'[tool.rocmport.prelude]\nprofile = "{profile}"\n')
    entry = write(tmp_path / "train.py", """\
        import argparse
        import os

        import torch


        def main():
            argparse.ArgumentParser().parse_args()
            model = torch.compile(torch.nn.Linear(2, 2), mode="max-autotune-no-cudagraphs")
            print(model, os.getcwd())


        if __name__ == "__main__":
            main()
        """)
    result = run("setup", "--write", "train.py", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    text = entry.read_text()
    assert "    import os\n" not in text  # the file's own `os`
    assert text.count("\n") - 13 <= 30
    checks = [[str(BIN / "black"), "--check", "-q", "train.py"],
              [str(BIN / "ruff"), "format", "--isolated", "--check", "-q", "train.py"],
              [str(BIN / "ruff"), "check", "--isolated", "--no-cache", "-q", "train.py"]]
    for command in checks:
        proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    # and it runs: on NVIDIA/CPU it does nothing, with torch.version.hip set it sets the defaults
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHINDUCTOR_")}
    code = text.replace('if __name__ == "__main__":\n    main()\n', "")
    probe = code + "\nprint(sorted(k for k in os.environ if k.startswith('TORCHINDUCTOR_')))\n"
    cpu = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert cpu.stdout.strip() == "[]", cpu.stderr
    hip = subprocess.run([sys.executable, "-c", "import torch\ntorch.version.hip = '6.4'\n" + probe],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS" in hip.stdout, hip.stderr


def test_shell_form_of_one_program_holds_only_what_it_needs(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "kernels.py", "import torch\n\n\n@torch.compile(mode='max-autotune')\ndef f(x):\n    return x\n")
    write(tmp_path / "train.py", MAIN.replace("    import torch\n", "    import torch\n\n    from pkg import kernels\n"))
    write(tmp_path / "plain.py", MAIN)
    result = run("setup", "--shell", "train.py", "plain.py", cwd=tmp_path)
    assert result.stdout.splitlines() == [
        "# train.py", "# ROCm only: inductor settings this program needs (`rocmport setup --shell ENTRY`)",
        "export TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS=ATEN",
        "# plain.py", "# nothing to set up for this program (`rocmport setup ENTRY` says why)"]


def test_a_program_that_compiles_and_captures_is_told_about_the_rng_patch(tmp_path):
    body = MAIN.replace("print(torch)", "g = torch.cuda.CUDAGraph()\n        f = torch.compile(abs, mode='max-autotune')\n"
                        "        with torch.cuda.graph(g):\n            f(torch.ones(1))")
    entry = write(tmp_path / "train.py", body)
    result = run("setup", "--write", "train.py", cwd=tmp_path)
    assert "may run on torch < 2.10: warm up (compile) before the capture" in result.stderr
    text = entry.read_text()
    assert "_rocmport_rng_patch" not in text and "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS" in text


def test_tools_that_use_neither_torch_nor_the_project_rank_below_programs(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "scripts" / "audit.py", MAIN.replace("import torch\n", "import json\n").replace("print(torch)", "print(json)"))
    write(tmp_path / "train.py", MAIN)
    write(tmp_path / "cli.py", MAIN.replace("import torch\n", "import pkg\n").replace("print(torch)", "print(pkg)"))
    for i in range(3):
        write(tmp_path / ".github" / "workflows" / f"ci{i}.yml", "steps:\n  - run: python scripts/audit.py\n")
    assert [c.path for c in ranked(tmp_path)] == ["train.py", "cli.py", "scripts/audit.py"]
