"""Tests and NVIDIA-only code are not ports; one finding per decision (issue 28).

- What a test module is, from what its code proves (``rocmport.analysis.testing``), and
  ``--scope source|tests|all`` (and the ``scope`` key) that picks which modules a run reports
  and fixes, so the source pull request and the tests pull request can be made apart.
- Findings that are not ports (a skipped test, a test of CUDA graphs, NVIDIA-only code, a test
  of a repository that already runs its tests on ROCm) are reported, marked (the message,
  JSON ``not_a_port``, SARIF ``properties.notAPort``), and left alone by ``fix``.
- Findings of one rule that carry one decision key are one finding with the others as related
  locations (JSON ``related_locations``, SARIF ``relatedLocations``, schema-valid), kept by the
  cache.
"""

from __future__ import annotations

import ast
import json
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport.analysis.testing import is_test_module
from rocmport.cli import main
from rocmport.config import ConfigError, load_settings, rocm_ci
from rocmport.findings import Applicability, Finding, Fix, Position, Related, finding_from_data, finding_to_data

from .harness import fix, lint

SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


def run(*args, cwd):
    old = os.getcwd()
    try:
        os.chdir(cwd)
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


# -- what a test module is ------------------------------------------------------------------

@pytest.mark.parametrize("path,source,expected", [
    ("tests/test_model.py", "def test_x():\n    pass\n", True),
    ("pkg/check.py", "import pytest\n\ndef test_x():\n    pass\n", True),  # a framework import: any name
    ("tests/lora/utils.py", "import unittest\nclass PeftLoraLoaderMixinTests:\n    def test_a(self):\n"
                            "        pass\n", True),
    ("pkg/t.py", "import unittest\nclass Check(unittest.TestCase):\n    def runTest(self):\n        pass\n", True),
    ("tests/conftest.py", "import pytest\n", True),
    ("tests/test_speed.py", "import torch\nx = torch.ones(3)\n", False),  # named as a test, defines none
    ("pkg/testing_utils.py", "def test_helper_value():\n    return 3\n", False),  # no framework, not named so
    ("pkg/model.py", "import torch\n", False),
])
def test_a_test_module_is_what_its_code_proves(path, source, expected):
    assert is_test_module(ast.parse(source), path) is expected


def test_without_a_tree_the_name_decides():
    assert is_test_module(None, "tests/test_x.py") and not is_test_module(None, "pkg/x.py")


# -- --scope and the scope key ---------------------------------------------------------------

HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
TEST_HAZARD = 'import torch\n\ndef test_speed():\n    f = torch.compile(g, mode="reduce-overhead")\n'


@pytest.fixture
def project(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / "pkg" / "model.py", HAZARD)
    write(tmp_path / "tests" / "test_model.py", TEST_HAZARD)
    write(tmp_path / "docker" / "Dockerfile", 'FROM rocm/pytorch\nENV TORCH_CUDA_ARCH_LIST="8.0"\n')
    return tmp_path


def _files(result) -> set:
    return {item["filename"] for item in json.loads(result.stdout)}


def test_scope_picks_the_modules_a_lint_reports(project):
    everything = run("lint", "--no-cache", "--output-format", "json", ".", cwd=project)
    assert _files(everything) == {"pkg/model.py", "tests/test_model.py", "docker/Dockerfile"}
    scopes = {item["filename"]: item["scope"] for item in json.loads(everything.stdout)}
    assert scopes == {"pkg/model.py": "source", "tests/test_model.py": "tests", "docker/Dockerfile": "source"}
    source = run("lint", "--no-cache", "--scope", "source", "--output-format", "json", ".", cwd=project)
    assert _files(source) == {"pkg/model.py", "docker/Dockerfile"}
    tests = run("lint", "--no-cache", "--scope", "tests", "--output-format", "json", ".", cwd=project)
    assert _files(tests) == {"tests/test_model.py"}


def test_scope_picks_the_modules_a_fix_rewrites(project):
    run("fix", "--write", "--no-cache", "--scope", "source", ".", cwd=project)
    assert "is_rocm" in (project / "pkg" / "model.py").read_text()
    assert (project / "tests" / "test_model.py").read_text() == TEST_HAZARD
    run("fix", "--write", "--no-cache", "--scope", "tests", ".", cwd=project)
    assert "is_rocm" in (project / "tests" / "test_model.py").read_text()


def test_the_scope_key_and_its_errors(project):
    (project / "pyproject.toml").write_text('[tool.rocmport]\nscope = "tests"\n')
    assert load_settings(project).scope == "tests"
    assert _files(run("lint", "--no-cache", "--output-format", "json", ".", cwd=project)) == {"tests/test_model.py"}
    # the flag overrides the file
    assert "pkg/model.py" in _files(run("lint", "--no-cache", "--scope", "all", "--output-format", "json", ".",
                                        cwd=project))
    (project / "pyproject.toml").write_text('[tool.rocmport]\nscope = "docs"\n')
    with pytest.raises(ConfigError, match="`scope` must be one of all, source, tests"):
        load_settings(project)
    bad = run("lint", "--scope", "docs", ".", cwd=project)
    assert bad.exit_code == 2


# -- not a port: reported, marked, left alone ---------------------------------------------------

def test_a_parametrization_whose_graph_case_would_repeat_another_is_a_test_of_cuda_graphs(tmp_path):
    """`parametrize("mode", ["default", "reduce-overhead"])`: without CUDA graphs the second
    case is the first (bitsandbytes' compile tests: on ROCm the fix ran "default" twice, under
    ids `default0` / `default1`, and the graphs' case was gone). Reported, marked, left alone.
    Near misses, fixed as before: cases that stay distinct without the graphs (another value
    beside the mode, or another mode), and a parameter not named for a mode."""
    src = textwrap.dedent("""\
        import pytest
        import torch


        @pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
        @pytest.mark.parametrize("bias", [True, False])
        def test_linear(bias, mode):
            assert torch.compile(torch.nn.Linear(2, 2, bias=bias), mode=mode)(torch.ones(2)).shape == (2,)


        @pytest.mark.parametrize("mode", [None, pytest.param("reduce-overhead", id="graphs")])
        class TestCompiled:
            def test_add(self, mode):
                assert torch.compile(lambda x: x + 1, mode=mode)(1) == 2


        @pytest.mark.parametrize("mode,fullgraph", [(None, True), ("reduce-overhead", False)])
        def test_pairs(mode, fullgraph):
            assert torch.compile(lambda x: x + 1, mode=mode, fullgraph=fullgraph)(1) == 2


        @pytest.mark.parametrize("compile_mode", ["max-autotune-no-cudagraphs", "reduce-overhead"])
        def test_tuned(compile_mode):
            assert torch.compile(lambda x: x + 1, mode=compile_mode)(1) == 2
        """)
    path = str(tmp_path / "test_compile_modes.py")
    found = lint(src, path=path)
    assert [(f.code, f.start.row) for f in found] == [("ROC105", 5), ("ROC105", 11), ("ROC105", 17), ("ROC105", 22)]
    linear, compiled, pairs, tuned = found
    assert linear.not_a_port == ('a test of CUDA graphs: `test_linear` is parametrized over compile modes (`mode`):'
                                 ' without CUDA graphs its "reduce-overhead" case is its "default" case')
    assert compiled.not_a_port.startswith("a test of CUDA graphs: `TestCompiled` is parametrized")
    assert not linear.fixable and not compiled.fixable and "skipif" in linear.fix.message
    assert pairs.not_a_port is None and pairs.fixable and tuned.not_a_port is None and tuned.fixable
    fixed = fix(src, path=path).fixed.decode()
    assert '["default", "reduce-overhead"]' in fixed and '[None, pytest.param("reduce-overhead", id="graphs")]' in fixed
    assert '("default" if is_rocm else "reduce-overhead", False)' in fixed
    assert '["max-autotune-no-cudagraphs", "default" if is_rocm else "reduce-overhead"]' in fixed


def test_a_test_of_cuda_graphs_by_what_it_calls_gets_a_skip_not_a_rewrite(tmp_path):
    src = textwrap.dedent("""\
        import torch

        class HotswapTests:
            def _check(self, model):
                return torch.compile(model, mode="reduce-overhead")

            def test_hotswap(self):
                with torch._dynamo.config.patch(error_on_recompile=True):
                    self._check(torch.nn.Linear(2, 2))

            def test_other(self):
                return torch.compile(torch.nn.Linear(2, 2), mode="reduce-overhead")
        """)
    path = str(tmp_path / "test_hotswap_models.py")
    helper, other = lint(src, path=path)
    assert helper.not_a_port.startswith("a test of CUDA graphs: `_check` serves `test_hotswap`")
    assert not helper.fixable and "skipif" in helper.fix.message
    # one thing: the message says to skip, not to use "default"
    assert 'use "default"' not in helper.message and "skip the test on ROCm" in helper.message
    assert other.not_a_port is None and other.fixable
    fixed = fix(src, path=path).fixed.decode()
    assert 'return torch.compile(model, mode="reduce-overhead")' in fixed  # left alone
    assert fixed.count('"default" if is_rocm else "reduce-overhead"') == 1  # test_other only


def test_a_skipped_test_is_marked_and_left_alone(tmp_path):
    src = ('import torch, unittest\n\nclass T(unittest.TestCase):\n    @unittest.skip("failing for now")\n'
           '    def test_x(self):\n        torch.compile(m, mode="reduce-overhead")\n')
    (finding,) = lint(src, path=str(tmp_path / "test_t.py"))
    assert finding.not_a_port == "a skipped test: the test `test_x` is skipped (`@unittest.skip`)"
    assert "[not a port, a skipped test" in finding.message and not finding.fixable
    assert fix(src, path=str(tmp_path / "test_t.py")).fixed is None
    # near miss: the same decorator in a module that defines no test (it is not a test module)
    (source,) = lint('import torch, unittest\n\n@unittest.skip("x")\ndef run_x():\n'
                     '    torch.compile(m, mode="reduce-overhead")\n', path=str(tmp_path / "pkg.py"))
    assert source.fixable and source.not_a_port is None


def test_nvidia_only_code_is_marked_but_a_predicate_named_for_a_feature_is_not():
    (finding,) = lint("import torch\ndef gemm_sm90(x):\n    return torch.compile(x, mode='max-autotune')\n")
    assert finding.not_a_port.startswith("NVIDIA-only code: `gemm_sm90`") and not finding.fixable
    (predicate,) = lint("import torch\ndef use_hopper_compile(x):\n    return torch.compile(x, mode='max-autotune')\n")
    assert predicate.not_a_port is None and predicate.fixable


def test_tests_of_a_repository_with_a_rocm_ci_are_not_ports(project):
    assert rocm_ci(str(project)) is None
    write(project / ".github" / "workflows" / "amd-ci.yml", """\
        jobs:
          test:
            runs-on: linux-mi300-gpu
            steps:
              - run: python -m pytest tests/
        """)
    rocm_ci.cache_clear()
    assert rocm_ci(str(project)) == ".github/workflows/amd-ci.yml runs tests on ROCm"
    items = {i["filename"]: i for i in json.loads(run("lint", "--no-cache", "--output-format", "json", ".",
                                                       cwd=project).stdout)}
    test = items["tests/test_model.py"]
    assert test["not_a_port"] == ("a test the repository already runs on ROCm: "
                                  ".github/workflows/amd-ci.yml runs tests on ROCm")
    assert test["fix"]["applicability"] == "display-only"
    assert items["pkg/model.py"]["not_a_port"] is None  # its source is still a port
    run("fix", "--write", "--no-cache", ".", cwd=project)
    assert (project / "tests" / "test_model.py").read_text() == TEST_HAZARD
    rocm_ci.cache_clear()


@pytest.mark.parametrize("name,text", [
    ("build.yml", "jobs:\n  b:\n    steps:\n      - run: python -m pytest tests/\n"),  # tests, no ROCm
    ("wheels.yml", "with-rocm: enable\nsteps:\n  - run: python setup.py bdist_wheel\n"),  # ROCm, no tests
])
def test_workflows_that_do_not_run_tests_on_rocm(tmp_path, name, text):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".github" / "workflows" / name, text)
    rocm_ci.cache_clear()
    assert rocm_ci(str(tmp_path)) is None


def test_a_pytest_marker_for_rocm_says_so_too(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    rocm: runs on AMD GPUs\n    slow: slow\n")
    rocm_ci.cache_clear()
    assert rocm_ci(str(tmp_path)) == "pytest.ini registers a pytest marker for ROCm"
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow tests (not on rocm)\n")
    rocm_ci.cache_clear()
    assert rocm_ci(str(tmp_path)) is None


# -- one finding per decision ------------------------------------------------------------------

PTX = textwrap.dedent("""\
    import triton
    import triton.language as tl

    @triton.jit
    def dequant(w, s, is_top: tl.constexpr):
        if is_top:
            return tl.inline_asm_elementwise("lop3.b32 $0, $1, $2, 0xea;", "=r,r,r", [w, s],
                                             dtype=tl.int32, is_pure=True, pack=1)
        return tl.inline_asm_elementwise("sub.f16x2 $0, $1, $2;", "=r,r,r", [w, s],
                                         dtype=tl.int32, is_pure=True, pack=1)

    @triton.jit
    def other(w):
        return tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [w], dtype=tl.int32, is_pure=True, pack=1)
    """)


def test_one_finding_per_decision_with_related_locations(tmp_path):
    first, second = lint(PTX, select=["ROC509"])
    assert (first.start.row, second.start.row) == (7, 14)  # one per function: the decision
    assert first.message.endswith("(1 more place in this file follows from this decision: line 9)")
    assert [r.start.row for r in first.related] == [9] and second.related == ()
    # a suppressed copy is not counted
    suppressed = PTX.replace("[w, s],\n                                         dtype",
                             "[w, s],  # noqa: ROC509\n                                         dtype")
    assert lint(suppressed, select=["ROC509"])[0].related == ()


def test_related_locations_in_json_and_sarif(tmp_path):
    import jsonschema

    (tmp_path / ".git").mkdir()
    write(tmp_path / "k.py", PTX)
    data = json.loads(run("lint", "--no-cache", "--output-format", "json", "--select", "ROC509", "k.py",
                          cwd=tmp_path).stdout)
    assert data[0]["related_locations"] == [{"location": {"row": 9, "column": 12},
                                             "end_location": {"row": 10, "column": 75},
                                             "message": data[0]["related_locations"][0]["message"]}]
    doc = json.loads(run("lint", "--no-cache", "--output-format", "sarif", "--select", "ROC509", "k.py",
                         cwd=tmp_path).stdout)
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(doc))
    assert not errors, errors[:3]
    result = doc["runs"][0]["results"][0]
    (related,) = result["relatedLocations"]
    assert related["id"] == 1 and related["physicalLocation"]["region"]["startLine"] == 9
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "k.py"


def test_not_a_port_in_sarif_is_schema_valid(tmp_path):
    import jsonschema

    (tmp_path / ".git").mkdir()
    write(tmp_path / "tests" / "test_g.py", 'import torch\n\ndef test_cudagraph_replay():\n'
                                            '    f = torch.compile(g, mode="reduce-overhead")\n')
    doc = json.loads(run("lint", "--no-cache", "--output-format", "sarif", ".", cwd=tmp_path).stdout)
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert not list(jsonschema.validators.validator_for(schema)(schema).iter_errors(doc))
    (result,) = doc["runs"][0]["results"]
    assert result["properties"]["scope"] == "tests"
    assert result["properties"]["notAPort"].startswith("a test of CUDA graphs: `test_cudagraph_replay` is named for")
    assert "fixes" not in result


def test_the_cache_keeps_related_locations_scope_and_the_reason():
    f = Finding("ROC509", "triton-inline-ptx", "m", Position(7, 12), Position(8, 3),
                Fix(Applicability.DISPLAY_ONLY, "x"), "k.py", related=(Related(Position(9, 12), Position(10, 3), "r"),),
                scope="tests", not_a_port="a skipped test: t")
    back = finding_from_data(json.loads(json.dumps(finding_to_data(f))), "k.py")
    assert back == f
    from rocmport.cache import _valid

    assert _valid(finding_to_data(f))
    assert not _valid(dict(finding_to_data(f), sc="everything"))


def test_a_workflow_that_builds_rocm_wheels_and_tests_on_cpu_is_no_rocm_ci(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".github" / "workflows" / "wheels.yml", """\
        jobs:
          build_linux:
            runs-on: ubuntu-latest
            steps:
              - run: dnf install -y rocm-hip-sdk && python -m build
          test_windows:
            runs-on: windows-latest
            steps:
              - uses: actions/download-artifact@v4
                with:
                  name: wheels-windows-cuda-hip
              - run: python -m pytest tests/
        """)
    rocm_ci.cache_clear()
    assert rocm_ci(str(tmp_path)) is None
    (tmp_path / ".github" / "workflows" / "amd.yml").write_text(
        "jobs:\n  tests:\n    runs-on: linux-mi300-gpu-1\n    steps:\n      - run: make test\n")
    rocm_ci.cache_clear()
    assert rocm_ci(str(tmp_path)) == ".github/workflows/amd.yml runs tests on ROCm"
    rocm_ci.cache_clear()
