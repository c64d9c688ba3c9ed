"""One suppression parser (rocmport.suppression) for Python and for shell, YAML and .env
files: the same comment means the same thing in every kind of file, with ruff's syntax."""

from __future__ import annotations

import pytest

from rocmport import suppression
from rocmport.config import Settings
from rocmport.filekinds import env_kind, file_kind
from rocmport.inputs import check_bytes

PYTHON = 'import torch\nm = torch.compile(f, mode="reduce-overhead"){comment}\n'  # ROC101 on line 2
SHELL = "#!/bin/sh\nexport TORCHINDUCTOR_CUDAGRAPHS=1{comment}\n"  # ROC602 on line 2
YAML = "env:\n  TORCHINDUCTOR_CUDAGRAPHS: \"1\"{comment}\n"  # ROC602 on line 2

# (comment at the end of the hazard's line, whether it silences it); {family} is ROC1 for the
# Python hazard and ROC6 for the environment files, {code} the hazard's code
LINE_CASES = [
    ("  # noqa", True),
    ("  # NOQA", True),
    ("  #noqa", True),
    ("  # noqa: {code}", True),
    ("  # noqa:{code}", True),
    ("  # noqa: ROC001, {code}", True),
    ("  # noqa: ROC001 {code}", True),
    ("  # noqa: {code} because the graph is never replayed", True),
    ("  # see the docs # noqa: {code}", True),
    ("  # noqa: {family}", True),  # a code covers the codes it starts, as in flake8
    ("  # noqa F401", True),  # no colon: a bare noqa, as in ruff
    ("  # noqa: ROC", False),  # not a code: no suppression at all (ruff: invalid directive)
    ("  # noqa:", False),
    ("  # noqa: roc101, roc602", False),  # codes are capitals, as in ruff
    ("  # noqa: ROC002", False),
    ("  # noqaROC101", False),
    ("  # the noqa-free zone", False),
    ("", False),
]


def _codes(data: bytes, path: str):
    return [f.code for f in check_bytes(data, path, Settings()).findings]


@pytest.mark.parametrize("comment, silenced", LINE_CASES)
@pytest.mark.parametrize("kind", ["python", "shell", "yaml"])
def test_line_noqa_means_the_same_in_every_kind(kind, comment, silenced):
    template, path, code = {"python": (PYTHON, "train.py", "ROC101"), "shell": (SHELL, "run", "ROC602"),
                            "yaml": (YAML, "ci.yaml", "ROC602")}[kind]
    text = template.format(comment=comment.format(code=code, family=code[:4]))
    assert _codes(text.encode(), path) == ([] if silenced else [code])


FILE_CASES = [
    ("# rocmport: noqa\n", True),
    ("# ROCMPORT: NOQA\n", True),
    ("    # rocmport: noqa\n", True),  # indented, still alone on its line
    ("# rocmport: noqa: {family}\n", True),
    ("# rocmport: noqa: {code}, ROC001 (vendored code)\n", True),
    ("# rocmport: noqa: ROC5\n", False),  # another family
    ("# rocmport: noqa: ROC\n", False),  # not a code: nothing
    ("# rocmport: noqa:\n", False),
    ("# rocmport:noqa:{family}\n", True),
    ("# rocmport noqa\n", False),
]


@pytest.mark.parametrize("header, silenced", FILE_CASES)
@pytest.mark.parametrize("kind", ["python", "shell", "dotenv"])
def test_file_noqa_means_the_same_in_every_kind(kind, header, silenced):
    if kind == "python":
        path, code, body = "train.py", "ROC101", PYTHON.format(comment="")
        if header.startswith(" "):  # an indented comment line inside a block
            body, header = "if True:\n" + header + "    pass\n" + body, ""
    else:
        path, code = ("run.sh", "ROC602") if kind == "shell" else (".env", "ROC602")
        body = "TORCHINDUCTOR_CUDAGRAPHS=1\n"
    text = header.format(code=code, family=code[:4]) + body
    assert _codes(text.encode(), path) == ([] if silenced else [code])


def test_hazard_text_in_strings_is_not_a_suppression():
    assert _codes(b'import torch\nm = torch.compile(f, mode="reduce-overhead"); s = "# noqa"\n', "a.py") == ["ROC101"]
    assert _codes(b'"""\n# rocmport: noqa\n"""\nimport torch\nm = torch.compile(f, mode="reduce-overhead")\n',
                  "a.py") == ["ROC101"]
    assert _codes(b'export TORCHINDUCTOR_CUDAGRAPHS=1; echo "# noqa"\n', "a.sh") == ["ROC602"]
    assert _codes(b"export TORCHINDUCTOR_CUDAGRAPHS=1; echo '# noqa'\n", "a.sh") == ["ROC602"]
    assert _codes(b"export TORCHINDUCTOR_CUDAGRAPHS=1 x#noqa\n", "a.sh") == ["ROC602"]  # a word, not a comment
    # a file-level comment after code is not file-level
    assert _codes(b'import torch\nx = 1  # rocmport: noqa\nm = torch.compile(f, mode="reduce-overhead")\n',
                  "a.py") == ["ROC101"]


def test_dockerfile_has_only_file_level_suppression():
    # in a Dockerfile "#" after an instruction is not a comment; a whole comment line is
    assert _codes(b"FROM x\nENV TORCHINDUCTOR_CUDAGRAPHS=1 # noqa\n", "Dockerfile") == ["ROC602"]
    assert _codes(b"# rocmport: noqa: ROC602\nFROM x\nENV TORCHINDUCTOR_CUDAGRAPHS=1\n", "Dockerfile") == []


def test_the_parser_itself():
    assert suppression.line_directive("# noqa") == (True, None)
    assert suppression.line_directive("# noqa: ROC101,ROC102") == (True, frozenset({"ROC101", "ROC102"}))
    assert suppression.line_directive("# noqa: ROC")[0] is False
    assert suppression.file_directive("  # rocmport: noqa: ROC5") == (True, frozenset({"ROC5"}))
    assert suppression.line_comment("X=1 # c") == "# c"
    assert suppression.line_comment("X='a # b'") is None
    assert suppression.line_comment('X="a \\" # b"') is None
    assert suppression.line_comment("# only") == "# only"
    found = suppression.Suppressions.from_comments([(3, "# noqa: ROC1", False), (3, "# noqa: ROC6", False)])
    assert found.suppresses("ROC601", 3) and found.suppresses("ROC101", 3) and not found.suppresses("ROC601", 4)


def test_one_file_kind_decision():
    assert [file_kind(p) for p in ("a.py", "a.pyi", "a.ipynb", "A.PY", "a.pyw", "notes.txt")] == \
        ["python", "python", "notebook", None, None, None]
    assert [file_kind(p) for p in ("Dockerfile", "x.sh", "ci.yml", ".env.local")] == \
        ["dockerfile", "shell", "yaml", "dotenv"]
    assert file_kind("run", b"#!/usr/bin/env bash\n") == "shell" and file_kind("run", b"#!/usr/bin/python\n") is None
    assert env_kind("a.py", b"#!/bin/sh\n") is None and env_kind("win\\ci.YAML") == "yaml"
    # the entry for one file, discovery and the environment-file rules ask the same function
    from rocmport import discovery, inputs
    from rocmport.rules.env_vars import scan_files as env_files

    assert env_files.kind_for is env_kind
    assert inputs.file_kind is file_kind and discovery.filekinds.file_kind is file_kind


@pytest.mark.parametrize("comment, silenced", LINE_CASES)
def test_add_noqa_reads_a_directive_as_the_engine_does(comment, silenced):
    # ``--add-noqa`` parses the comment that is already there with the same parser: after it,
    # the finding is silenced whatever the comment was, and a second run adds nothing
    from rocmport.noqa import add_noqa

    data = PYTHON.format(comment=comment.format(code="ROC101", family="ROC1")).encode()
    findings = check_bytes(data, "train.py", Settings()).findings
    result = add_noqa(data, findings)
    assert (result.data is None) is silenced and result.skipped == 0
    fixed = result.data if result.data is not None else data
    assert _codes(fixed, "train.py") == []
    assert add_noqa(fixed, check_bytes(fixed, "train.py", Settings()).findings).data is None


def test_add_noqa_merges_into_a_valid_directive_only():
    from rocmport.noqa import add_noqa

    data = PYTHON.format(comment="  # noqa: E501 long line").encode()
    out = add_noqa(data, check_bytes(data, "train.py", Settings()).findings).data
    assert out.decode().splitlines()[1].endswith("# noqa: E501, ROC101 long line")
    data = PYTHON.format(comment="  # noqa: roc101").encode()  # not a directive: a new one follows it
    out = add_noqa(data, check_bytes(data, "train.py", Settings()).findings).data
    assert out.decode().splitlines()[1].endswith("# noqa: roc101  # noqa: ROC101")
    match = suppression.line_directive_match("# noqa: x  # noqa: ROC1, ROC2 why")
    assert match.group("codes") == "ROC1, ROC2" and suppression.split_codes(match.group("codes")) == ["ROC1", "ROC2"]
    assert suppression.line_directive_match("# noqa:") is None


def test_a_python_file_is_tokenized_only_when_a_finding_line_or_the_file_may_hold_a_directive(monkeypatch):
    read = []
    real = suppression.python_comments
    monkeypatch.setattr(suppression, "python_comments", lambda text: read.append(text) or real(text))
    hazard = 'm = torch.compile(f, mode="reduce-overhead")'
    # a directive on another line: not read, and the finding stays
    assert _codes(f"import torch  # noqa: F401\n{hazard}\n".encode(), "a.py") == ["ROC101"] and not read
    assert _codes(f"import torch\n{hazard}  # noqa\n".encode(), "a.py") == [] and len(read) == 1
    assert _codes(f"# rocmport: noqa\nimport torch\n{hazard}\n".encode(), "a.py") == [] and len(read) == 2
    # a directive in a string on the finding's line is read by the tokenizer: no suppression
    assert _codes(f'import torch\n{hazard}; s = "# noqa"\n'.encode(), "a.py") == ["ROC101"] and len(read) == 3
    # with a CR the tokenizer's rows may not be the finding's: read whole, as before
    assert _codes(f"import torch  # noqa: F401\r\n{hazard}\r\n".encode(), "a.py") == ["ROC101"] and len(read) == 4
    assert _codes(f"import torch\r\n{hazard}  # noqa\r\n".encode(), "a.py") == [] and len(read) == 5
