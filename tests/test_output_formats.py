"""Output formats `full`, `github` and `sarif` (and `--output-file` for every format), as
../shared/docs/cli-contract.md describes them. SARIF is validated against the SARIF 2.1.0
schema in ../shared/schemas/."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport import __version__
from rocmport.cli import main
from rocmport.findings import Applicability, Edit, Finding, Fix, Position
from rocmport.output import FORMATTERS, escape_data, escape_property, full, github, sarif, sarif_document
from rocmport.registry import all_rules

HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
DISPLAY_ONLY = '\n\nclass Config:\n    compile_mode: str = "reduce-overhead"\n'  # ROC105: never fixed
SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


def run(*args, cwd=None, input=None):
    old = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def project(tmp_path):
    """A git work tree (a `.git` directory is what marks its root)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return tmp_path


@pytest.fixture(scope="module")
def sarif_validator():
    import jsonschema  # the `test` extra installs it: no skip

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def assert_valid(validator, document):
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def test_every_contract_format_is_accepted():
    assert set(FORMATTERS) == {"concise", "full", "json", "github", "sarif"}


# ---------------------------------------------------------------------------------------- full

def test_full_shows_the_source_line_an_underline_and_the_fix_as_a_diff(project):
    (project / "bad.py").write_text(HAZARD)
    result = run("lint", "--output-format", "full", "bad.py", cwd=project)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith("bad.py:2:27: ROC101 [*] mode=\"reduce-overhead\"")
    source = '  2 | f = torch.compile(g, mode="reduce-overhead")'
    assert source in lines
    underline = lines[lines.index(source) + 1]
    # the carets sit under the string literal: column 27, 17 characters
    assert underline == "    | " + " " * 26 + "^" * 17
    assert '    - f = torch.compile(g, mode="reduce-overhead")' in lines
    assert '    + f = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")' in lines
    assert any(line.startswith("  = fix (safe): ") for line in lines)
    assert lines[-1] == "Found 1 finding (1 fixable with `rocmport fix --write`)."


def test_full_reads_stdin_text_not_the_disk(project):
    source = 'import torch\n\n\nf = torch.compile(g, mode="max-autotune")\n'
    result = run("lint", "--output-format", "full", "--stdin-filename", "nowhere.py", "-", cwd=project, input=source)
    assert result.exit_code == 1
    assert "nowhere.py:4:27: ROC102" in result.output
    assert '  4 | f = torch.compile(g, mode="max-autotune")' in result.output


def test_full_keeps_tabs_multiline_spans_and_display_only_fixes():
    text = 'def f():\n\tx = call(\n\t\t1,\n\t\t2)\n'
    finding = Finding("ROC105", "cudagraph-mode-default", "msg", Position(2, 6), Position(4, 5),
                      fix=Fix(Applicability.DISPLAY_ONLY, "Gate it"), filename="t.py")
    out = full([finding], False, read_source=lambda path: text)
    lines = out.splitlines()
    assert "  2 | \tx = call(" in lines
    assert lines[lines.index("  2 | \tx = call(") + 1] == "    | \t    ^^^^^"  # tab kept, then 4 spaces
    assert "  4 | \t\t2)" in lines
    assert "  = fix (display-only): Gate it" in lines
    assert not any(line.startswith("    - ") for line in lines)  # no edits, no diff


def test_full_without_source_or_for_a_notebook_cell_still_reports():
    f = Finding("ROC101", "compile-reduce-overhead", "msg", Position(3, 5), Position(3, 9), filename="nb.ipynb",
                cell=2)
    out = full([f], False, read_source=lambda path: pytest.fail("a cell's rows are not the file's"))
    assert out.splitlines()[0] == "nb.ipynb:cell 2:3:5: ROC101 msg"
    gone = Finding("ROC101", "compile-reduce-overhead", "msg", Position(3, 5), Position(3, 9), filename="gone.py")
    assert full([gone], False, read_source=lambda path: None).splitlines()[0] == "gone.py:3:5: ROC101 msg"
    assert full([], False) == "All checks passed!\n"


def test_full_after_fix_write_shows_the_remaining_findings_in_the_fixed_text(project):
    (project / "bad.py").write_text(HAZARD + DISPLAY_ONLY)
    result = run("fix", "--write", "--output-format", "full", "bad.py", cwd=project)
    fixed = (project / "bad.py").read_text().splitlines()
    assert "ROC105" in result.output and "ROC101" not in result.output
    shown_lines = [line.strip().partition(" | ") for line in result.output.splitlines()
                   if " | " in line and line.strip()[:1].isdigit()]
    assert shown_lines
    for row, _, shown in shown_lines:
        assert fixed[int(row) - 1] == shown


# ---------------------------------------------------------------------------------------- github

def test_github_workflow_command_shape(project):
    (project / "bad.py").write_text(HAZARD)
    result = run("lint", "--output-format", "github", "bad.py", cwd=project)
    assert result.exit_code == 1
    assert result.output == (
        "::error title=rocmport (ROC101),file=bad.py,line=2,col=27,endLine=2,endColumn=44::"
        'mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there\n')


def test_github_paths_are_relative_to_the_git_root_with_forward_slashes(project):
    sub = project / "pkg" / "sub"
    sub.mkdir(parents=True)
    (sub / "bad.py").write_text(HAZARD)
    result = run("lint", "--output-format", "github", "bad.py", cwd=sub)
    assert "file=pkg/sub/bad.py," in result.output
    result = run("lint", "--output-format", "github", str(sub / "bad.py"), cwd=project)
    assert "file=pkg/sub/bad.py," in result.output


def test_github_paths_fall_back_to_the_working_directory(tmp_path, monkeypatch):
    work = tmp_path / "no-git-here"
    (work / "src").mkdir(parents=True)
    monkeypatch.chdir(work)
    if (tmp_path / ".git").exists() or any((p / ".git").exists() for p in tmp_path.parents):
        pytest.skip("the temporary directory lies inside a git work tree")
    f = Finding("ROC101", "n", "m", Position(1, 1), Position(1, 2), filename=str(work / "src" / "a.py"))
    assert "file=src/a.py," in github([f], False)


def test_github_escaping():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    f = Finding("ROC101", "n", "50%: a,b\nc", Position(1, 2), Position(1, 3), filename="we:ird,name.py")
    line = github([f], False, root=Path.cwd())
    assert line == ("::error title=rocmport (ROC101),file=we%3Aird%2Cname.py,line=1,col=2,endLine=1,endColumn=3"
                    "::50%25: a,b%0Ac\n")
    assert line.count("\n") == 1


def test_github_notebook_cell_names_the_cell_and_carries_its_row():
    # As ruff: the annotation has a line (the row inside the cell), so GitHub places it; the
    # message names the cell.
    f = Finding("ROC101", "n", "msg", Position(3, 5), Position(3, 9), filename="nb.ipynb", cell=4)
    assert github([f], False, root=Path.cwd()) == \
        "::error title=rocmport (ROC101),file=nb.ipynb,line=3,col=5,endLine=3,endColumn=9::cell 4:3:5: msg\n"
    assert github([], False) == ""


# ---------------------------------------------------------------------------------------- sarif

def test_sarif_is_valid_and_complete(project, sarif_validator):
    (project / "pkg").mkdir()
    (project / "pkg" / "bad.py").write_text(
        '# é\nimport torch\nx = "é€"; f = torch.compile(g, mode="reduce-overhead")\n'
        'class C:\n    compile_mode: str = "reduce-overhead"\n')
    result = run("lint", "--output-format", "sarif", "pkg/bad.py", cwd=project)
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert_valid(sarif_validator, doc)
    assert doc["version"] == "2.1.0"
    (run_,) = doc["runs"]
    assert run_["columnKind"] == "unicodeCodePoints"
    driver = run_["tool"]["driver"]
    assert driver["name"] == "rocmport" and driver["version"] == __version__
    assert driver["informationUri"].startswith("https://")
    ids = [r["id"] for r in driver["rules"]]
    assert ids == list(all_rules())
    for rule in driver["rules"]:
        assert rule["name"] and rule["shortDescription"]["text"] and rule["helpUri"].startswith("https://")
        assert 0 < len(rule["fullDescription"]["text"]) < 1024
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    by_rule = {r["ruleId"]: r for r in run_["results"]}
    assert set(by_rule) == {"ROC101", "ROC105"}
    hazard = by_rule["ROC101"]
    loc = hazard["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "pkg/bad.py", "uriBaseId": "%SRCROOT%"}
    line = 'x = "é€"; f = torch.compile(g, mode="reduce-overhead")'
    start = line.index('"reduce-overhead"') + 1  # 1-based code points
    assert loc["region"] == {"startLine": 3, "startColumn": start, "endLine": 3,
                             "endColumn": start + len('"reduce-overhead"')}  # exclusive
    assert driver["rules"][hazard["ruleIndex"]]["id"] == "ROC101"
    (fix,) = hazard["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "pkg/bad.py"
    replacement, gate = change["replacements"]  # the rewrite, and the gate line it tests
    assert replacement["deletedRegion"] == loc["region"]
    assert replacement["insertedContent"]["text"] == '"default" if is_rocm else "reduce-overhead"'
    assert 'is_rocm = getattr(torch.version, "hip", None) is not None' in gate["insertedContent"]["text"]
    assert "fixes" not in by_rule["ROC105"]  # display-only
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"


def test_sarif_without_findings_and_for_notebook_cells(sarif_validator):
    assert_valid(sarif_validator, json.loads(sarif([], False)))
    cell = Finding("ROC101", "compile-reduce-overhead", "msg", Position(1, 5), Position(1, 9), filename="nb.ipynb",
                   cell=3, fix=Fix(Applicability.SAFE, "m", (Edit(4, 8, "x", Position(1, 5), Position(1, 9)),)))
    doc = sarif_document([cell], False, root=Path.cwd())
    assert_valid(sarif_validator, doc)
    (result,) = doc["runs"][0]["results"]
    assert result["properties"] == {"cell": 3} and result["message"]["text"].startswith("cell 3:1:5: ")
    assert "region" not in result["locations"][0]["physicalLocation"]


def test_sarif_insertion_fix_has_an_empty_deleted_region(sarif_validator):
    f = Finding("ROC104", "compile-mode-not-literal", "m", Position(1, 5), Position(1, 9), filename="a.py",
                fix=Fix(Applicability.UNSAFE, "wrap", (Edit(4, 4, "w(", Position(1, 5), Position(1, 5)),
                                                      Edit(8, 8, ")", Position(1, 9), Position(1, 9))),
                        requires=("graph_helper",)))
    doc = sarif_document([f], False, root=Path.cwd())
    assert_valid(sarif_validator, doc)
    (fix,) = doc["runs"][0]["results"][0]["fixes"]
    regions = [r["deletedRegion"] for r in fix["artifactChanges"][0]["replacements"]]
    assert regions[0] == {"startLine": 1, "startColumn": 5, "endLine": 1, "endColumn": 5}
    assert "graph_helper" in fix["description"]["text"]
    assert fix["properties"] == {"applicability": "unsafe", "appliedByDefault": False}


NAMES = {b"caf\xe9.py": "caf%E9.py",  # latin-1: not UTF-8
         b"a b#c%d?.py": "a%20b%23c%25d%3F.py",
         "\u00fcn\u00ef.py".encode(): "%C3%BCn%C3%AF.py",
         b"esc\x1b[31mred.py": "esc%1B%5B31mred.py"}


def test_sarif_uris_are_percent_encoded_from_the_names_bytes(project, sarif_validator):
    """RFC 3986: a space, #, %, ? or a non-ASCII letter is encoded; a name that is not UTF-8
    keeps its bytes as %XX, and the document is UTF-8 (it held the raw bytes before)."""
    from urllib.parse import unquote_to_bytes

    (project / "sub dir").mkdir()
    for raw in NAMES:
        (project / os.fsdecode(raw)).write_text(HAZARD)
    (project / "sub dir" / "x.py").write_text(HAZARD)
    result = run("lint", "--no-cache", "--output-format", "sarif", "--output-file", "out.sarif", ".", cwd=project)
    assert result.exit_code == 1, result.output
    document = json.loads((project / "out.sarif").read_bytes().decode("utf-8"))  # strict: valid UTF-8
    assert_valid(sarif_validator, document)
    uris = {}
    for found in document["runs"][0]["results"]:
        artifact = found["locations"][0]["physicalLocation"]["artifactLocation"]
        assert artifact["uriBaseId"] == "%SRCROOT%"
        assert found["fixes"][0]["artifactChanges"][0]["artifactLocation"]["uri"] == artifact["uri"]
        uris[unquote_to_bytes(artifact["uri"])] = artifact["uri"]
    assert uris == {**NAMES, b"sub dir/x.py": "sub%20dir/x.py"}
    outside = Finding("ROC101", "n", "m", Position(1, 1), Position(1, 2), filename="/tmp/far away/t.py")
    doc = sarif_document([outside], False, root=project)
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///tmp/far%20away/t.py"}
    assert_valid(sarif_validator, doc)


def test_terminal_escapes_in_file_names_never_reach_a_terminal(project):
    """ESC and the other controls in a file name (or a source line) are shown as \\xNN by
    concise and full; on a terminal, so are bytes that are not UTF-8."""
    import pty
    import sys

    name = os.fsdecode(b"esc\x1b]0;owned\x07\x1b[2Jcaf\xe9.py")
    (project / name).write_text(HAZARD.replace('")\n', '")  # \x1b[31m\n'))
    escaped = "esc\\x1b]0;owned\\x07\\x1b[2Jcaf"
    for fmt in ("concise", "full"):
        piped = run("lint", "--no-cache", "--output-format", fmt, ".", cwd=project)
        assert piped.exit_code == 1 and "\x1b" not in piped.stdout and "\x07" not in piped.stdout
        assert piped.stdout_bytes.startswith(escaped.encode() + b"\xe9.py:")  # a pipe: the name's own bytes
    full_text = run("lint", "--no-cache", "--output-format", "full", ".", cwd=project).stdout
    assert "# \\x1b[31m" in full_text  # the source line too
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), NO_COLOR="1")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "rocmport", "lint", "--no-cache", "."], cwd=project, env=env,
                            stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(master)
    screen = b"".join(chunks)
    assert b"\x1b" not in screen and b"\x07" not in screen and b"\xe9" not in screen
    assert (escaped + "\\xe9.py:2:27: ROC101").encode() in screen


def test_the_vendored_schema_is_sarif_2_1_0_and_rejects_bad_documents(sarif_validator):
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]
    good = sarif_document([], False, root=Path.cwd())
    assert_valid(sarif_validator, good)
    # the validator can fail: a wrong version, a result without a message, a negative line
    assert not sarif_validator.is_valid({**good, "version": "2.0.0"})
    run = json.loads(json.dumps(good["runs"][0]))
    run["results"] = [{"ruleId": "ROC101"}]
    assert not sarif_validator.is_valid({**good, "runs": [run]})
    run["results"] = [{"message": {"text": "x"}, "locations": [{"physicalLocation": {
        "artifactLocation": {"uri": "a.py"}, "region": {"startLine": 0}}}]}]
    assert not sarif_validator.is_valid({**good, "runs": [run]})


# ---------------------------------------------------------------------------------------- --output-file

@pytest.mark.parametrize("fmt", sorted(FORMATTERS))
def test_output_file_works_for_every_format(project, fmt):
    (project / "bad.py").write_text(HAZARD)
    expected = run("lint", "--output-format", fmt, "bad.py", cwd=project)
    result = run("lint", "--output-format", fmt, "--output-file", "out.txt", "bad.py", cwd=project)
    assert result.exit_code == expected.exit_code == 1
    assert result.output == ""
    written = (project / "out.txt").read_text(encoding="utf-8")
    assert written == expected.output and "ROC101" in written
    if fmt in ("json", "sarif"):
        json.loads(written)


@pytest.mark.parametrize("fmt", sorted(FORMATTERS))
def test_output_file_after_fix_write(project, fmt):
    (project / "bad.py").write_text(HAZARD + DISPLAY_ONLY)
    result = run("fix", "--write", "--output-format", fmt, "--output-file", "out.txt", "bad.py", cwd=project)
    assert result.exit_code == 1  # ROC105 is display-only: it remains
    written = (project / "out.txt").read_text(encoding="utf-8")
    if fmt == "sarif":
        assert [r["ruleId"] for r in json.loads(written)["runs"][0]["results"]] == ["ROC105"]
    else:
        assert "ROC105" in written and "ROC101" not in written


def test_console_script_writes_sarif_to_a_file(project, sarif_validator):
    import sys

    (project / "bad.py").write_text(HAZARD)
    proc = subprocess.run([sys.executable, "-m", "rocmport", "lint", "--output-format", "sarif", "--output-file",
                           "r.sarif", "."], cwd=project, capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == ""
    assert_valid(sarif_validator, json.loads((project / "r.sarif").read_text(encoding="utf-8")))
