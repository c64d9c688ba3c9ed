"""The LibCST internals rocmport builds on (``rocmport.analysis.libcst_internals``) are there,
behaving as relied on, in the LibCST this runs with; no other module reaches into LibCST's
private modules; and pyproject.toml bounds LibCST to the versions this is run against."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from rocmport.analysis import libcst_internals as internals

ROOT = Path(__file__).resolve().parent.parent


def test_each_internal_is_there_as_used():
    # a code generation state that counts lines and columns, as PositionProvider's does
    state = internals.PositionProvidingCodegenState(default_indent="    ", default_newline="\n", provider=None)
    assert isinstance(state, internals.CodegenState)
    for name in ("add_token", "add_indent_tokens", "record_syntactic_position", "before_codegen", "after_codegen"):
        assert callable(getattr(state, name)), name
    assert (state.line, state.column) == (1, 0)  # where generated code starts
    assert internals.NEWLINE_RE.split("a\r\nb\rc\nd") == ["a", "b", "c", "d"]
    # the visit helpers a placeholder node's children go through
    assert list(inspect.signature(internals.visit_required).parameters)[:4] == ["parent", "fieldname", "node", "visitor"]
    assert list(inspect.signature(internals.visit_sequence).parameters)[:4] == ["parent", "fieldname", "children",
                                                                                "visitor"]
    # a metadata value computed on demand
    wrapper = MetadataWrapper(cst.parse_module("import torch\ntorch.compile\n"))
    values = list(wrapper.resolve(QualifiedNameProvider).values())
    assert any(isinstance(v, internals.LazyValue) for v in values)
    assert all(callable(v) for v in values if isinstance(v, internals.LazyValue))
    assert wrapper.resolve(PositionProvider)


def test_no_other_module_imports_a_private_libcst_module():
    found = []
    for path in sorted((ROOT / "rocmport").rglob("*.py")):
        if path.name == "libcst_internals.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                if name.startswith("libcst") and (re.search(r"(^|\.)_", name) or name in (
                        "libcst.metadata.base_provider", "libcst.metadata.position_provider")):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert not found, "go through rocmport.analysis.libcst_internals:\n" + "\n".join(found)


def test_libcst_is_bounded_to_the_versions_the_tests_run_against():
    text = (ROOT / "pyproject.toml").read_text()
    spec = re.search(r'"libcst([^"]*)"', text).group(1)
    assert "<" in spec, "an upper bound: LibCST's internals may move in a new minor version"
    low = re.search(r">=\s*([\d.]+)", spec).group(1)
    high = re.search(r"<\s*([\d.]+)", spec).group(1)
    from importlib.metadata import version as installed

    running = tuple(int(p) for p in installed("libcst").split(".")[:2])
    assert tuple(int(p) for p in low.split(".")[:2]) <= running < tuple(int(p) for p in high.split(".")[:2])
