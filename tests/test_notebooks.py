"""Jupyter notebooks: discovery, magics, cell numbering, and fixes that rewrite only sources.

Cells are numbered from 1 over *all* cells (markdown included), as ruff and the cell's
position in Jupyter do; rows are relative to the cell.
"""

from __future__ import annotations

import difflib
import json
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from rocmport import prelude
from rocmport.config import Settings
from rocmport.discovery import discover, file_kind
from rocmport.inputs import check_bytes
from rocmport.notebook import mask_cell, unmask_cell

from .harness import FIXTURES

NOTEBOOKS = FIXTURES / "notebooks"
INDENT1 = NOTEBOOKS / "indent1_list.ipynb"
INDENT2 = NOTEBOOKS / "indent2_string.ipynb"


def check(data: bytes, fix: bool = False, name: str = "nb.ipynb", **kw):
    report = check_bytes(data, name, Settings(**kw), fix=fix)
    assert report.internal_error is None, report.internal_error
    return report


def source(cell) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def make(*sources, indent=1, **top) -> bytes:
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s}
             for s in sources]
    return json.dumps({"cells": cells, "metadata": top.get("metadata", {}), "nbformat": 4,
                       "nbformat_minor": 5}, indent=indent).encode()


def removed_lines(before: bytes, after: bytes):
    diff = difflib.ndiff(before.decode().splitlines(), after.decode().splitlines())
    return [line[2:] for line in diff if line.startswith("- ")]


# -- discovery ------------------------------------------------------------------------------

def test_discovery_finds_notebooks(tmp_path):
    (tmp_path / "a.ipynb").write_bytes(INDENT1.read_bytes())
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_bytes(INDENT1.read_bytes())
    assert file_kind(Path("x.ipynb")) == "notebook"
    files, missing = discover([str(tmp_path)], Settings(root=str(tmp_path)))
    assert [Path(f).name for f in files] == ["a.ipynb"] and not missing


# -- lint -------------------------------------------------------------------------------------

def test_lint_reports_cell_row_col():
    report = check(INDENT1.read_bytes())
    # ROC101 in cell 3 (cell 2 is markdown); the noqa'd ROC102 in cell 4 is silent; the
    # %%bash cell (a syntax error as Python, a hazard in a string) is not linted.
    assert [(f.code, f.cell, f.start.row, f.start.column, f.end.row, f.end.column) for f in report.findings] == [
        ("ROC101", 3, 4, 38, 4, 55)]
    edit = report.findings[0].fix.edits[0]
    assert (edit.location.row, edit.location.column) == (4, 38)


def test_cross_cell_names_and_string_sources():
    # `from torch import compile as tc` in cell 2 is what makes `tc(...)` in cell 3 a finding.
    report = check(INDENT2.read_bytes())
    assert [(f.code, f.cell, f.start.row, f.start.column) for f in report.findings] == [("ROC101", 3, 5, 23)]


def test_cli_concise_and_json(tmp_path):
    path = tmp_path / "train.ipynb"
    path.write_bytes(INDENT1.read_bytes())
    run = subprocess.run([sys.executable, "-m", "rocmport", "lint", str(path)], capture_output=True, text=True)
    assert run.returncode == 1
    assert f"{path}:cell 3:4:38: ROC101 [*]" in run.stdout
    run = subprocess.run([sys.executable, "-m", "rocmport", "lint", "--output-format", "json", str(path)],
                         capture_output=True, text=True)
    [item] = json.loads(run.stdout)
    assert item["cell"] == 3 and item["location"] == {"row": 4, "column": 38}


def test_invalid_json_is_roc001():
    report = check(b'{\n "cells": [\n  {"cell_type": "code",}\n ]\n}\n')
    [f] = report.findings
    assert f.code == "ROC001" and f.cell is None
    assert f.message.startswith("invalid notebook JSON: ") and (f.start.row, f.start.column) == (3, 24)
    assert check(b'{"nbformat": 4}').findings[0].message == 'not a Jupyter notebook: no "cells" list at the top level'
    assert check(b"\xff\xfe").findings[0].code == "ROC001"
    assert check(b"[]", fix=True).fixed is None


def test_syntax_error_in_a_cell_is_located_in_it():
    report = check(make("import torch\n", "x = 1\ndef f(:\n    pass"))
    [f] = report.findings
    assert (f.code, f.cell, f.start.row) == ("ROC001", 2, 2)


def test_non_python_notebook_is_skipped():
    data = make('torch.compile(m, mode="reduce-overhead")', metadata={"kernelspec": {"language": "julia"}})
    assert check(data).findings == []


def test_noqa_inside_a_cell():
    data = make("import torch\n", 'm = torch.compile(f, mode="reduce-overhead")  # noqa: ROC101')
    assert check(data).findings == []


# -- masking ----------------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["%matplotlib inline", "!pip install -q x", "torch.nn?",
                                  "??torch.compile", "files = !ls -1", "a, b = %sx echo", "%time f(x)",
                                  "!!ls", "%env CUDA_VISIBLE_DEVICES=0"])
def test_magic_lines_mask_to_same_length_python(line):
    text = f"import os\n{line}\nx = 1\n"
    masked, masks = mask_cell(text)
    assert len(masks) == 1 and masked != text
    assert [len(s) for s in masked.splitlines()] == [len(s) for s in text.splitlines()]
    cst.parse_module(masked)
    assert unmask_cell(masked, masks) == text


@pytest.mark.parametrize("text", [
    "! python prep.py --data_dir d \\\n                 --split train \\\n                 --out o\n\nx = 1\n",
    "for i in range(2):\n    !ls \\\n        -la\n    files = !ls \\\n        -1\n    print(files)\n",
])
def test_continued_shell_lines_with_their_own_indentation_are_python_after_masking(text):
    """A shell command continued with ``\\`` on lines aligned under its arguments (a common
    notebook shape, seen in peft's examples) was an ROC001 "unexpected indent"."""
    masked, masks = mask_cell(text)
    cst.parse_module(masked)
    assert [len(s) for s in masked.splitlines()] == [len(s) for s in text.splitlines()]
    assert unmask_cell(masked, masks) == text
    assert [f.code for f in check(make(text)).findings] == []


def test_magic_like_text_in_strings_and_comparisons_is_kept():
    text = 'doc = """\n!not a magic\n%neither\n"""\nok = a != b\nq = x == !y\n'
    masked, masks = mask_cell(text)
    assert masked.splitlines()[:3] == text.splitlines()[:3]
    assert "a != b" in masked


def test_cell_magics():
    masked, masks = mask_cell("%%time\nfor i in range(2):\n    %time f(i)\n")
    assert masked == "______\nfor i in range(2):\n    _______f(i)\n".replace("_______f(i)", "_" * 10)
    report = check(make("%%bash\necho $((1 + ))\ntorch.compile(m, mode='reduce-overhead')"))
    assert report.findings == []


# -- fix --------------------------------------------------------------------------------------

def _assert_fixed_notebook(original: bytes, fixed: bytes):
    before, after = json.loads(original), json.loads(fixed)
    assert list(before) == list(after)  # key order kept
    assert len(before["cells"]) == len(after["cells"])
    for old, new in zip(before["cells"], after["cells"]):
        assert list(old) == list(new)
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
        assert type(old["source"]) is type(new["source"])
    # idempotent, and nothing fixable left
    again = check(fixed, fix=True)
    assert again.fixed is None
    assert not [f for f in again.findings if f.applies(False)]
    return before, after


def test_fix_indent1_list_sources():
    original = INDENT1.read_bytes()
    report = check(original, fix=True)
    assert report.fixes_applied == 1
    before, after = _assert_fixed_notebook(original, report.fixed)
    # Only the lines of the two changed sources differ; outputs, ids, metadata are the same bytes.
    assert removed_lines(original, report.fixed) == [
        '    "import torch.nn as nn"',
        '    "compiled = torch.compile(model, mode=\\"reduce-overhead\\")"',
    ]
    assert report.fixed.startswith(original[:original.index(b'"import torch.nn as nn"')])
    tail = original[original.index(b'    "torch.nn?\\n",'):]
    tail = tail[tail.index(b"   ]\n  },\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 3"):]
    assert report.fixed.endswith(tail)
    cells = after["cells"]
    # the gate line went into the first code cell, after its imports; magics are kept
    first = source(cells[0])
    assert first == ("%matplotlib inline\n!pip install -q transformers\nimport torch\nimport torch.nn as nn\n\n"
                     'is_rocm = getattr(torch.version, "hip", None) is not None')
    assert prelude.find_block(first) is None
    assert source(cells[2]) == source(before["cells"][2]).replace(
        'mode="reduce-overhead"', 'mode="default" if is_rocm else "reduce-overhead"')
    assert cells[2]["source"][1] == "torch.nn?\n"
    assert source(cells[3]) == source(before["cells"][3])


def test_fix_indent2_string_sources_keeps_non_ascii_and_key_order():
    original = INDENT2.read_bytes()
    report = check(original, fix=True)
    _, after = _assert_fixed_notebook(original, report.fixed)
    text = report.fixed.decode("utf-8")
    assert "données prêtes ✓" in text and "\\u00e9" not in text
    removed = removed_lines(original, report.fixed)
    assert len(removed) == 2 and all(line.startswith('      "source": "') for line in removed)
    cell2, cell3 = source(after["cells"][1]), source(after["cells"][2])
    assert cell2 == ("%load_ext autoreload\n%autoreload 2\nimport torch\nfrom torch import compile as tc\n\n"
                     'is_rocm = getattr(torch.version, "hip", None) is not None\n\nprint("données prêtes ✓")')
    assert cell3 == ('??torch.compile\nnet = torch.nn.Linear(2, 2)\nif True:\n    !nvidia-smi\n'
                     '    fn = tc(net, mode="default" if is_rocm else "reduce-overhead")\n')


def test_prelude_goes_to_first_code_cell_after_cell_magic():
    data = make("%%time\nimport os", "import torch\nimport torch._inductor.config\n",
                'm = torch.compile(f, mode="reduce-overhead")')
    report = check(data, fix=True)
    _, after = _assert_fixed_notebook(data, report.fixed)
    # the notebook's import block runs across the first two cells: the gate follows it
    assert source(after["cells"][0]) == "%%time\nimport os"
    assert source(after["cells"][1]) == ("import torch\nimport torch._inductor.config\n\n"
                                         'is_rocm = getattr(torch.version, "hip", None) is not None\n\n')


def test_compact_notebook_stays_compact():
    nb = {"cells": [{"cell_type": "code", "source": ["import torch\n", "m = torch.compile(f, mode='max-autotune')"]},
                    {"cell_type": "code", "source": []}]}
    for separators in ((", ", ": "), (",", ":")):
        data = json.dumps(nb, separators=separators).encode()
        report = check(data, fix=True)
        _assert_fixed_notebook(data, report.fixed)
        assert b"\n" not in report.fixed
        assert report.fixed.startswith(b'{"cells"' + separators[1].encode() + b'[{"cell_type"')
        assert separators[0].encode() + b'"\\n"' + separators[0].encode() in report.fixed


def test_fix_write_through_the_cli(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_bytes(INDENT1.read_bytes())
    run = subprocess.run([sys.executable, "-m", "rocmport", "fix", "--write", str(tmp_path)], capture_output=True)
    assert run.returncode == 0, run.stderr
    assert path.read_bytes() != INDENT1.read_bytes()
    run = subprocess.run([sys.executable, "-m", "rocmport", "lint", str(path)], capture_output=True, text=True)
    assert run.returncode == 0 and "All checks passed!" in run.stdout
