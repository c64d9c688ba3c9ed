"""Fix text in the project's language (issue 29): what a fix writes passes ruff's default rules
(`ruff check --isolated`: SIM211 wants `not is_rocm`, not `False if is_rocm else True`), and a
file that already spells the ROCm test inline (`torch.version.hip is None`) is fixed with that
spelling, not with a new gate line."""

from __future__ import annotations

import collections
import difflib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocmport import prelude
from rocmport.registry import visitor_rules

from .harness import assert_fix_properties, fix, fixture_pairs, lint

RUFF = shutil.which("ruff") or shutil.which("ruff", path=os.path.dirname(sys.executable))
needs_ruff = pytest.mark.skipif(RUFF is None, reason="ruff is installed by the test extra")
FIXTURES = Path(__file__).parent / "fixtures"


def _changed_rows(before: str, after: str):
    """Row of ``after`` -> the rows of ``before`` it replaced, for every row a fix added or changed."""
    rows = {}
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines())
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            for j in range(j1 + 1, j2 + 1):
                rows[j] = range(i1 + 1, i2 + 1)
    return rows


def _ruff_defaults(directory: Path):
    """{file name: [(code, row)]} of ruff's default rules, no configuration."""
    done = subprocess.run([RUFF, "check", "--isolated", "--no-cache", "--output-format", "json", "."],
                          cwd=directory, capture_output=True, text=True)
    found = collections.defaultdict(list)
    for v in json.loads(done.stdout or "[]"):
        found[Path(v["filename"]).name].append((v["code"], v["location"]["row"]))
    return found


def _fix_outputs():
    """(label, original, fixed) for every rule's INVALID case (unsafe fixes too) and every fixture."""
    for rule in visitor_rules():
        for i, case in enumerate(rule.INVALID):
            report = fix(case.code, select=[rule.CODE], unsafe=True, path=case.path)
            if report.fixed is not None:
                yield f"{rule.CODE}_invalid_{i}", case.code, report.fixed.decode("utf-8")
    families = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    for path, _expected in (pair for family in families for pair in fixture_pairs(family)):
        report = fix(path.read_bytes(), path=str(path), unsafe=True)
        if report.fixed is None:
            continue
        try:
            before, after = path.read_bytes().decode("utf-8"), report.fixed.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a latin-1 fixture: ruff reads UTF-8 only
        yield path.relative_to(FIXTURES).as_posix().replace("/", "_"), before, after


@needs_ruff
def test_no_fix_adds_a_violation_of_ruffs_default_rules(tmp_path):
    """Every line a fix adds or changes is clean under ruff's own default selection (0.17.6:
    SIM210/SIM211, BLE001, SIM117, ...): a violation the line had before does not count."""
    outputs = []
    for label, before, after in _fix_outputs():
        before, after = (t.replace("\r\n", "\n").replace("\r", "\n") for t in (before, after))
        (tmp_path / "before").mkdir(exist_ok=True)
        (tmp_path / "after").mkdir(exist_ok=True)
        (tmp_path / "before" / f"{label}.py").write_text(before, encoding="utf-8")
        (tmp_path / "after" / f"{label}.py").write_text(after, encoding="utf-8")
        outputs.append((label, before, after))
    assert len(outputs) > 100
    old, new = _ruff_defaults(tmp_path / "before"), _ruff_defaults(tmp_path / "after")
    added = []
    for label, before, after in outputs:
        rows = _changed_rows(before, after)
        had = collections.Counter(old.get(f"{label}.py", []))
        for code, row in new.get(f"{label}.py", []):
            if row not in rows:
                continue
            prior = next((r for r in rows[row] if had[(code, r)] > 0), None)
            if prior is not None:
                had[(code, prior)] -= 1
                continue
            added.append(f"{label}:{row}: {code} {after.splitlines()[row - 1].strip()}")
    assert not added, "\n".join(added)


def test_a_boolean_the_test_chooses_is_the_test():
    src = "import torch\nimport torch._inductor.config as ic\nic.triton.cudagraphs = True\nic.max_autotune = 1\n"
    out = fix(src).fixed.decode()
    assert "ic.triton.cudagraphs = not is_rocm\n" in out
    assert "ic.max_autotune = False if is_rocm else 1\n" in out  # not a boolean: the value stays
    assert lint(out) == []


def test_a_graph_helper_written_before_its_lint_clean_form_is_still_rocmports():
    """Blocks an earlier rocmport wrote (nested `with`, `except Exception`) are still its own:
    regenerated, never reported as edited by hand."""
    options = prelude.PreludeOptions()
    now = prelude.render_inline("is_rocm", {"graph_helper"}, options, define_gate=False, torch_name="torch")
    ((current, earlier),) = prelude._EARLIER_HELPER
    assert current in now
    text = "import torch\n\n" + now.replace(current, earlier) + "\n"
    block = prelude.find_block(text)
    assert block is not None and prelude.is_own_block(text, block, options)
    edited = text.replace("except Exception as exc:", "except ValueError as exc:")
    assert not prelude.is_own_block(edited, prelude.find_block(edited), options)


# -- the file's own inline spelling -------------------------------------------------------

INLINE = """\
import torch

USE_FLASH = torch.version.hip is None and torch.cuda.is_available()


def build(net):
    return torch.compile(net, mode="reduce-overhead", options={"triton.cudagraphs": True})
"""


def test_the_inline_spelling_of_the_file_is_reused_and_no_gate_line_is_added():
    out = assert_fix_properties(INLINE.encode()).fixed.decode()
    assert "is_rocm" not in out
    assert ('torch.compile(net, mode="default" if torch.version.hip is not None else "reduce-overhead",'
            ' options={"triton.cudagraphs": torch.version.hip is None})') in out
    assert len(out.splitlines()) == len(INLINE.splitlines())


def test_an_alias_and_the_getattr_spelling_are_kept():
    src = textwrap.dedent("""\
        import torch as th

        if getattr(th.version, "hip", None) is not None:
            pass


        def build(net):
            return th.compile(net, mode="max-autotune")
        """)
    out = assert_fix_properties(src.encode()).fixed.decode()
    assert 'mode="max-autotune-no-cudagraphs" if getattr(th.version, "hip", None) is not None else "max-autotune"' in out


def test_a_negation_in_the_fix_follows_the_spelling():
    src = textwrap.dedent("""\
        import torch

        ON_NVIDIA = torch.version.hip is None


        def is_hopper():
            return torch.cuda.get_device_capability()[0] == 9
        """)
    out = assert_fix_properties(src.encode(), unsafe=True).fixed.decode()
    assert "return torch.version.hip is None and torch.cuda.get_device_capability()[0] == 9\n" in out
    assert "is_rocm" not in out


@pytest.mark.parametrize("src", [
    # the test only in a string or a comment: nothing the file spells
    'import torch\n\n# torch.version.hip is None\nDOC = "torch.version.hip is None"\n'
    'f = torch.compile(g, mode="reduce-overhead")\n',
    # truthiness: not a bool, and not the comparison the fix would write
    'import torch\n\nif torch.version.hip:\n    pass\nf = torch.compile(g, mode="reduce-overhead")\n',
    # torch imported only inside a function: the module-level spelling would not resolve
    'def build(g):\n    import torch\n\n    nvidia = torch.version.hip is None\n'
    '    return torch.compile(g, mode="reduce-overhead"), nvidia\n',
    # another module's `version`
    'import torch\nimport packaging as torch2\n\nX = torch2.version.hip is None\n'
    'f = torch.compile(g, mode="reduce-overhead")\n',
])
def test_near_misses_of_an_inline_spelling_get_the_gate_line(src):
    out = assert_fix_properties(src.encode()).fixed.decode()
    assert 'is_rocm = getattr(torch.version, "hip", None) is not None' in out
    assert '"default" if is_rocm else "reduce-overhead"' in out


def test_a_fix_above_the_torch_import_keeps_the_gate_line():
    src = textwrap.dedent("""\
        import os

        os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"

        import torch

        assert torch.version.hip is None or torch.cuda.is_available()
        """)
    out = assert_fix_properties(src.encode()).fixed.decode()
    assert "is_rocm" in out and "if torch.version.hip is not None else" not in out


def test_a_fix_in_a_triton_kernel_keeps_the_gate_line():
    """A `@triton.jit` body cannot read torch.version: a fix there tests the gate name (a
    global the kernel captures). (No rule fixes inside a kernel today: ROC510 defines a
    module-level constexpr; the guard is for the next one.)"""
    from rocmport import gating, parsing
    from rocmport.analysis.metadata import Metadata
    from rocmport.source import LineIndex

    src = textwrap.dedent("""\
        import torch
        import triton

        HIP = torch.version.hip is None


        @triton.jit
        def k(x, BLOCK: tl.constexpr):
            y = x + 32


        def launch(x):
            k[(1,)](x, BLOCK=32)
        """)
    module = parsing.parse(src)
    wrapper, lines = Metadata(module), LineIndex(src)
    in_kernel, in_host = src.index("32"), src.rindex("32")
    assert gating.inline_gate(module, wrapper, src, lines, [in_kernel]) is None
    assert gating.inline_gate(module, wrapper, src, lines, [in_host, in_kernel]) is None
    found = gating.inline_gate(module, wrapper, src, lines, [in_host])
    assert found is not None and found.text == "torch.version.hip is not None" and found.edit is None
    assert found.bound_at == src.index("\n")  # after `import torch`


def test_the_named_test_of_the_file_comes_before_an_inline_spelling():
    src = textwrap.dedent("""\
        import torch

        IS_HIP = torch.version.hip is not None
        OTHER = torch.version.hip is None and torch.cuda.is_available()
        f = torch.compile(g, mode="reduce-overhead")
        """)
    out = assert_fix_properties(src.encode()).fixed.decode()
    assert 'mode="default" if IS_HIP else "reduce-overhead"' in out


@pytest.mark.slow
def test_an_inline_spelled_fix_runs_the_same_on_the_nvidia_path(tmp_path):
    from .exec_harness import run_module

    src = INLINE + textwrap.dedent("""\


        calls = []
        torch.compile = lambda net, **kw: calls.append(kw) or net
        build(None)
        """)
    fixed = fix(src).fixed
    assert b"torch.version.hip is not None" in fixed
    probe = "calls"
    assert run_module(fixed, False, probe) == run_module(src, False, probe) == [
        {"mode": "reduce-overhead", "options": {"triton.cudagraphs": True}}]
    assert run_module(fixed, True, probe) == [{"mode": "default", "options": {"triton.cudagraphs": False}}]
