"""Where the code a fix relies on goes, and the least of it.

A fix that only needs the ROCm test gets one line, ``is_rocm = getattr(torch.version, "hip",
None) is not None``, bound once at module level, right after the file's import block (so it
follows the file's own ``import torch`` and any environment set-up before it, and no import
comes after it: no E402). A file that already binds such a test, or that imports torch only
inside functions or inside ``try``/``except ImportError``, gets the form that keeps it working:
the existing name, a line after the function's own ``import torch``, or a test that is False
when torch is missing.

The engine and the notebook adapter both use this module; it knows no rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from .findings import Edit
from .source import LineIndex


def dotted(node: Optional[cst.CSTNode]) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    return None


def torch_binding(stmt: cst.CSTNode) -> Optional[str]:
    """The name under which a simple import statement binds the torch module itself."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return None
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                name = dotted(alias.name) or ""
                if name == "torch":
                    return alias.asname.name.value if alias.asname else "torch"
                if name.startswith("torch.") and alias.asname is None:
                    return "torch"
    return None


def _is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _only_imports(block: cst.BaseSuite) -> bool:
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            if not all(isinstance(s, (cst.Import, cst.ImportFrom, cst.Pass, cst.Assign, cst.Expr)) for s in stmt.body):
                return False
        else:
            return False
    return True


def _guarded_imports(stmt: cst.CSTNode) -> bool:
    """``try: import x / except ImportError: ...`` or ``if ...: import x``: part of the import block."""
    if isinstance(stmt, cst.Try):
        return _only_imports(stmt.body) and all(_only_imports(h.body) for h in stmt.handlers)
    if isinstance(stmt, cst.If):
        return _only_imports(stmt.body) and (stmt.orelse is None or (
            isinstance(stmt.orelse, cst.Else) and _only_imports(stmt.orelse.body)))
    return False


def _try_binds_torch(stmt: cst.CSTNode) -> Optional[str]:
    if isinstance(stmt, cst.Try):
        body = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else []
        for inner in body:
            name = torch_binding(inner)
            if name:
                return name
    return None


def _set_up_line(stmt: cst.CSTNode) -> bool:
    """Statements E402 allows between imports: ``os.environ[...] = ...``, ``os.environ.setdefault``,
    ``sys.path.insert``, dunder assignments, docstrings."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                t = target.target
                if isinstance(t, cst.Subscript) and (dotted(t.value) or "").endswith("environ"):
                    continue
                if isinstance(t, cst.Name) and t.value.startswith("__") and t.value.endswith("__"):
                    continue
                return False
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            name = dotted(small.value.func) or ""
            if not (name.startswith(("os.environ.", "sys.path.", "environ.")) or name.endswith(("environ.setdefault", "environ.update"))):
                return False
        elif isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
            continue
        else:
            return False
    return True


@dataclass(frozen=True)
class GatePlan:
    """How the gate is bound for fixes before offset ``before``."""

    edit: Optional[Edit]  # None: nothing to add
    problem: Optional[str] = None  # why no gate can be bound (the fix is then not applied)


def gate_text(gate: str, torch_name: str, quote: str = '"', maybe_missing: bool = False) -> str:
    q = quote
    if maybe_missing:
        return f"{gate} = getattr(getattr({torch_name}, {q}version{q}, None), {q}hip{q}, None) is not None"
    return f"{gate} = getattr({torch_name}.version, {q}hip{q}, None) is not None"


class Placer:
    """Plans the gate line of one file (one parse, one position table)."""

    def __init__(self, module: cst.Module, wrapper: cst.MetadataWrapper, text: str, lines: LineIndex,
                 gate: str, quote: str = '"'):
        self.module = module
        self.text = text
        self.lines = lines
        self.gate = gate
        self.quote = quote
        self.newline = lines.newline()
        self._positions = wrapper.resolve(PositionProvider)
        self._local: Dict[Tuple[int, int], GatePlan] = {}

    def span(self, node: cst.CSTNode) -> Tuple[int, int]:
        rng = self._positions[node]
        return self.lines.offset(rng.start.line, rng.start.column), self.lines.offset(rng.end.line, rng.end.column)

    def _line_end(self, offset: int) -> int:
        """The offset just after the line that holds ``offset - 1`` (its terminator included)."""
        row = self.lines.position(max(offset - 1, 0)).row
        return self.lines.starts[row] if row < len(self.lines.starts) else len(self.text)

    def plan(self, before: int, scopes: Sequence[cst.CSTNode] = ()) -> GatePlan:
        """The gate binding for an edit at ``before``; ``scopes``: the function definitions
        enclosing it, innermost last (for files that import torch only inside functions)."""
        torch_name: Optional[str] = None
        maybe_missing = False
        anchor: Optional[int] = None  # end of the last statement of the import block
        for index, stmt in enumerate(self.module.body):
            start, end = self.span(stmt)
            if start >= before:
                break
            name = torch_binding(stmt)
            if name:
                torch_name, maybe_missing = name, False
            elif _try_binds_torch(stmt):
                torch_name, maybe_missing = _try_binds_torch(stmt), True
            if index == 0 and isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) \
                    and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            if _is_import_line(stmt) or _guarded_imports(stmt):
                anchor = end
            elif not _set_up_line(stmt):
                break
        if torch_name is not None and anchor is not None:
            offset = self._line_end(anchor)
            line = gate_text(self.gate, torch_name, self.quote, maybe_missing)
            prefix = "" if offset == 0 or self.text[offset - 1] in "\r\n" else self.newline
            return GatePlan(Edit(offset, offset, prefix + self.newline + line + self.newline))
        for scope in reversed(scopes):  # torch imported inside the function that needs the gate
            plan = self._in_function(scope, before)
            if plan is not None:
                return plan
        return GatePlan(None, "the file does not import torch at module level before the fix")

    def _in_function(self, func: cst.CSTNode, before: int) -> Optional[GatePlan]:
        if not isinstance(func, cst.FunctionDef) or not isinstance(func.body, cst.IndentedBlock):
            return None
        for stmt in func.body.body:
            start, end = self.span(stmt)
            if start >= before:
                return None
            name = torch_binding(stmt)
            if name:
                offset = self._line_end(end)
                row = self.lines.position(start).row
                line_start = self.lines.starts[row - 1]
                indent = self.text[line_start:start]
                if indent.strip():
                    return None  # "x = 1; import torch": no line of its own
                line = gate_text(self.gate, name, self.quote)
                return GatePlan(Edit(offset, offset, indent + line + self.newline))
        return None


def dedupe(edits: Sequence[Edit]) -> List[Edit]:
    """The edits with identical ones (the same gate line carried by several fixes) once."""
    seen: Set[Tuple[int, int, str]] = set()
    out = []
    for e in edits:
        key = (e.start, e.end, e.content)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out
