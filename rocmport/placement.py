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

import ast
import os
import re
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from . import reuse
from .findings import Edit
from .prelude import PACKAGE_GATE
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


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _is_import_line(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _only_imports(block: cst.BaseSuite, calls: bool = True) -> bool:
    """Only imports, ``pass``, assignments and expressions (with ``calls`` False: no call,
    a docstring or ``...``) in a block."""
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            if not all(isinstance(s, (cst.Import, cst.ImportFrom, cst.Pass, cst.Assign, cst.Expr)) for s in stmt.body):
                return False
            if not calls and any(isinstance(s, cst.Expr) and not isinstance(
                    s.value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)) for s in stmt.body):
                return False
        else:
            return False
    return True


def _has_import(block: cst.BaseSuite) -> bool:
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    return any(isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, (cst.Import, cst.ImportFrom))
                                                                  for s in stmt.body) for stmt in body)


def _guarded_imports(stmt: cst.CSTNode) -> bool:
    """``try: import x / except ImportError: x = None`` or ``if ...: import x``: part of the
    import block (its body imports; the other branches only import, assign or pass)."""
    if isinstance(stmt, cst.Try):
        return _has_import(stmt.body) and _only_imports(stmt.body) and all(_only_imports(h.body)
                                                                             for h in stmt.handlers)
    if isinstance(stmt, cst.If):
        if _is_main_guard(stmt):
            return False  # the program itself, not its imports
        return _has_import(stmt.body) and _only_imports(stmt.body, calls=False) and (stmt.orelse is None or (
            isinstance(stmt.orelse, cst.Else) and _only_imports(stmt.orelse.body, calls=False)))
    return False


def _is_main_guard(stmt: cst.If) -> bool:
    """``if __name__ == "__main__":``"""
    test = stmt.test
    return (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)
            and {type(test.left), type(test.comparisons[0].comparator)} == {cst.Name, cst.SimpleString}
            and "__name__" in (getattr(test.left, "value", ""), getattr(test.comparisons[0].comparator, "value", "")))


BOUND, MAYBE, UNSURE = "bound", "maybe", "unsure"


def _block_body(block) -> Sequence[cst.CSTNode]:
    return block.body if isinstance(block, cst.IndentedBlock) else [block]


def _leaves(body: Sequence[cst.CSTNode]) -> bool:
    """Does a block end by leaving (``raise``, ``return``, ``sys.exit(...)``)? The statements
    after its ``try`` then never run without what it failed to import."""
    if not body:
        return False
    last = body[-1]
    if not isinstance(last, cst.SimpleStatementLine):
        return False
    small = last.body[-1]
    if isinstance(small, (cst.Raise, cst.Return)):
        return True
    return (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
            and dotted(small.value.func) in ("sys.exit", "exit", "quit", "os._exit"))


def _binds_name(body: Sequence[cst.CSTNode], name: str) -> bool:
    """Does one of the simple statements of a block bind ``name`` (an import or ``name = ...``)?"""
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name
                                                     for t in small.targets):
                return True
            if isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name) \
                    and small.target.value == name:
                return True
            if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound = (alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name)
                             else (dotted(alias.name) or "").split(".")[0])
                    if bound == name:
                        return True
    return False


def torch_guard(stmt: cst.CSTNode) -> Optional[Tuple[str, str]]:
    """(name, how) for a statement of a module's or function's body that binds torch:
    BOUND (an import that runs whenever the statement does, or a ``try`` whose every handler
    leaves), MAYBE (the name is bound after it, to torch or to something else: a ``try``
    whose every handler binds it or leaves, ``torch = ...``), UNSURE (torch imported under
    ``if``, ``with`` or a ``try`` that goes on without binding it: the name may be unbound
    after it). None: the statement binds no torch."""
    name = torch_binding(stmt)
    if name:
        return name, BOUND
    if isinstance(stmt, cst.SimpleStatementLine):
        if _binds_name([stmt], "torch") and not any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
            return "torch", MAYBE
        return None
    if isinstance(stmt, cst.Try):
        found = next((torch_binding(inner) for inner in _block_body(stmt.body) if torch_binding(inner)), None)
        if found:
            handlers = [_block_body(h.body) for h in stmt.handlers]
            if all(_leaves(h) for h in handlers):
                return found, BOUND
            if all(_leaves(h) or _binds_name(h, found) for h in handlers):
                return found, MAYBE
            return found, UNSURE
    if _mentions_torch_import(stmt):
        return "torch", UNSURE
    return None


def _mentions_torch_import(node: cst.CSTNode) -> bool:
    """Does ``node`` hold an import of torch anywhere (a function's or class's too)?"""
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Import(self, n: cst.Import) -> bool:
            if any((dotted(a.name) or "").split(".")[0] == "torch" for a in n.names):
                found.append(n)
            return False

        def visit_ImportFrom(self, n: cst.ImportFrom) -> bool:
            if not n.relative and n.module is not None and (dotted(n.module) or "").split(".")[0] == "torch":
                found.append(n)
            return False

    node.visit(_Find())
    return bool(found)


def torch_required(module: cst.Module) -> bool:
    """Does the module import torch unconditionally at its top level (it cannot be imported
    without torch, so a gate may import torch too)?"""
    return any(torch_binding(stmt) or imports_from_torch(stmt) for stmt in module.body)


def torch_optional(module: cst.Module) -> bool:
    """Does the module run without torch while using it when it is there: torch imported only
    under a condition, in a ``try``, in functions, or taken from ``sys.modules``? A gate
    must not make it required."""
    if torch_required(module):
        return False
    return any(torch_guard(stmt) is not None for stmt in module.body)


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
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Name) and set(small.value.value) == {"_"}:
            continue  # a notebook's IPython line, masked (rocmport.notebook)
        else:
            return False
    return True


_COMMENT_OR_BLANK_RE = re.compile(r"[ \t\f]*(?:#[^\r\n]*)?(?:\r\n|\r|\n|$)")


def header_end(text: str) -> int:
    """Where code added above a file's first statement goes: after its ``#!`` line and
    encoding cookie (Python reads them only on the first two lines) and after the comment
    block at its top that a blank line sets apart (a licence); not between a comment and
    the statement it is attached to."""
    offset, row, end = 0, 0, 0
    while offset < len(text):
        match = _COMMENT_OR_BLANK_RE.match(text, offset)
        if match is None or match.end() == offset:
            break
        line = match.group(0)
        row += 1
        if not line.strip():  # a blank line: the comments above it are the header
            end = offset
        elif row <= 2:  # "#!" and the coding cookie: on the first two lines only
            end = match.end()
        offset = match.end()
    return end


@dataclass(frozen=True)
class GatePlan:
    """How the gate is bound for fixes before offset ``before``."""

    edit: Optional[Edit]  # None: nothing to add
    problem: Optional[str] = None  # why no gate can be bound (the fix is then not applied)
    extra: Tuple[Edit, ...] = ()  # an ``import torch`` the gate needs, in the import block


def gate_text(gate: str, torch_name: str, quote: str = '"', maybe_missing: bool = False) -> str:
    q = quote
    if maybe_missing:
        return f"{gate} = getattr(getattr({torch_name}, {q}version{q}, None), {q}hip{q}, None) is not None"
    return f"{gate} = getattr({torch_name}.version, {q}hip{q}, None) is not None"


class Placer:
    """Plans the gate line of one file (one parse, one position table)."""

    def __init__(self, module: cst.Module, wrapper: cst.MetadataWrapper, text: str, lines: LineIndex,
                 gate: str, quote: str = '"', lines_after_imports: int = 1):
        self.module = module
        self.text = text
        self.lines = lines
        self.gate = gate
        self.quote = quote
        self.blank_lines = max(lines_after_imports, 1)  # isort's lines-after-imports before the gate line
        self.newline = lines.newline()
        self._positions = wrapper.resolve(PositionProvider)

    def span(self, node: cst.CSTNode) -> Tuple[int, int]:
        rng = self._positions[node]
        return self.lines.offset(rng.start.line, rng.start.column), self.lines.offset(rng.end.line, rng.end.column)

    def _line_end(self, offset: int) -> int:
        """The offset just after the line that holds ``offset - 1`` (its terminator included)."""
        row = self.lines.position(max(offset - 1, 0)).row
        return self.lines.starts[row] if row < len(self.lines.starts) else len(self.text)

    def plan(self, before: int, scopes: Sequence[cst.CSTNode] = ()) -> GatePlan:
        """The gate binding for an edit at ``before``; ``scopes``: the function definitions
        enclosing it, innermost last (for files that import torch only inside functions).
        A file that runs without torch keeps running without it: the gate then follows a
        binding of torch that holds wherever the fix runs, or there is none (the fix is not
        applied)."""
        torch_name: Optional[str] = None
        maybe_missing = False
        anchor: Optional[int] = None  # end of the last statement of the import block
        for index, stmt in enumerate(self.module.body):
            start, end = self.span(stmt)
            if end > before:  # the statement holds the fix (or follows it): nothing from here
                break
            if index == 0 and _is_docstring(stmt):
                continue
            if not (_is_import_line(stmt) or _guarded_imports(stmt)):
                if _set_up_line(stmt):
                    continue
                break
            anchor = end
            guard = torch_guard(stmt)
            if guard is not None and guard[1] != UNSURE:
                name, how = guard
                if torch_name is None or (maybe_missing and how == BOUND) or (name == "torch" and how == BOUND):
                    torch_name, maybe_missing = name, how == MAYBE
        if torch_name is not None and anchor is not None:
            offset = self._line_end(anchor)
            line = gate_text(self.gate, torch_name, self.quote, maybe_missing)
            return GatePlan(self._gate_edit(offset, line))
        for scope in reversed(scopes):  # torch imported inside the function that needs the gate
            plan = self._in_function(scope, before)
            if plan is not None:
                return plan
        later = self._after_binding(before)  # torch bound further down, after other code
        if later is not None:
            return later
        if torch_optional(self.module):
            return GatePlan(None, "torch is optional in this file (imported under a condition, in a `try` that goes"
                                  " on without it, or only in other functions): a gate line would make it required")
        if torch_name is None and not scopes_import_torch(scopes):
            return self._with_import(before)
        return GatePlan(None, "the file does not import torch at module level before the fix")

    def _after_binding(self, before: int) -> Optional[GatePlan]:
        """The gate right after a module-level binding of torch that follows other code (and
        after the imports right below it), before ``before``: the file's own order of
        imports and code is kept (code before its ``import torch`` may set the environment
        torch reads)."""
        found = None
        body = self.module.body
        for index, stmt in enumerate(body):
            start, end = self.span(stmt)
            if end > before:
                break
            guard = torch_guard(stmt)
            if guard is not None and guard[1] != UNSURE and (found is None or guard[1] == BOUND):
                last = index
                while last + 1 < len(body) and _is_import_line(body[last + 1]) and self.span(body[last + 1])[1] <= before:
                    last += 1
                found = (guard, self.span(body[last])[1])
                if guard[1] == BOUND:
                    break
        if found is None:
            return None
        (name, how), end = found
        return GatePlan(self._gate_edit(self._line_end(end), gate_text(self.gate, name, self.quote, how == MAYBE)))

    def after_imports(self, before: int) -> int:
        """The line start just after the file's import block and its gate line (after its
        docstring when it has no import, after its ``#!`` line, coding cookie and licence
        comment when it has neither) and before ``before``."""
        anchor = header_end(self.text)
        for index, stmt in enumerate(self.module.body):
            start, end = self.span(stmt)
            if end > before:  # the statement holds the fix (or follows it): nothing from here
                break
            if index == 0 and _is_docstring(stmt):
                anchor = self._line_end(end)
                continue
            if _is_import_line(stmt) or _guarded_imports(stmt) or self._binds_gate(stmt):
                anchor = self._line_end(end)
            elif not _set_up_line(stmt):
                break
        return anchor

    def _binds_gate(self, stmt: cst.CSTNode) -> bool:
        return isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == self.gate
                                                  for t in small.targets) for small in stmt.body)

    def _gate_edit(self, offset: int, line: str, extra: str = "") -> Edit:
        """The gate line at ``offset`` (a line start), a paragraph of its own."""
        prefix = "" if offset == 0 or self.text[offset - 1] in "\r\n" else self.newline
        rest = self.text[offset:]
        blank_after = rest.startswith(("\n", "\r")) or not rest.strip()
        return Edit(offset, offset, prefix + extra + self.newline * self.blank_lines + line + self.newline
                    + ("" if blank_after else self.newline))

    def _with_import(self, before: int) -> GatePlan:
        """No torch import at all: ``import torch`` where isort puts it, the gate after the block."""
        imports = []  # (stmt, start, end, root, is_plain)
        anchor = None
        for index, stmt in enumerate(self.module.body):
            start, end = self.span(stmt)
            if end > before:  # the statement holds the fix (or follows it): nothing from here
                break
            if index == 0 and _is_docstring(stmt):
                anchor = end
                continue
            if _is_import_line(stmt):
                small = stmt.body[0]
                if isinstance(small, cst.Import):
                    imports.append((stmt, start, end, dotted(small.names[0].name) or "", True))
                else:
                    root = "." if small.relative else (dotted(small.module) or "").split(".")[0]
                    imports.append((stmt, start, end, root, False))
                anchor = end
            elif _guarded_imports(stmt):
                anchor = end
            elif not _set_up_line(stmt):
                break
        import_line = "import torch" + self.newline
        third = _torch_group(imports, self.lines)
        if third:
            at = None
            for stmt, start, end, name, plain in third:
                if plain and name.lower() > "torch":
                    at = start
                    break
            if at is None:
                froms = [i for i in third if not i[4]]
                at = froms[0][1] if froms else self._line_end(third[-1][2])
            at = self.lines.starts[self.lines.position(at).row - 1] if at < len(self.text) else at
            import_edit = Edit(at, at, import_line)
        elif imports:
            head = [i for i in imports if _section(i[3].split(".")[0]) in ("future", "std")]
            after = self._line_end(head[-1][2]) if head else self.lines.starts[self.lines.position(imports[0][1]).row - 1]
            follows = [i for i in imports if i[1] >= after]
            import_edit = Edit(after, after, (self.newline if head else "") + import_line
                               + (self.newline if follows and not head else ""))
        else:
            import_edit = None
        if import_edit is None:
            offset = self._line_end(anchor) if anchor is not None else header_end(self.text)
            edit = self._gate_edit(offset, gate_text(self.gate, "torch", self.quote),
                                   extra=("" if offset == 0 else self.newline) + "import torch" + self.newline)
            if offset == 0:
                edit = Edit(0, 0, edit.content.lstrip("\r\n"))
            return GatePlan(edit)
        gate_at = self._line_end(anchor)
        if gate_at == import_edit.start:
            return GatePlan(Edit(gate_at, gate_at, import_edit.content + self._gate_edit(
                gate_at, gate_text(self.gate, "torch", self.quote)).content))
        return GatePlan(self._gate_edit(gate_at, gate_text(self.gate, "torch", self.quote)), extra=(import_edit,))

    def _in_function(self, func: cst.CSTNode, before: int) -> Optional[GatePlan]:
        if not isinstance(func, cst.FunctionDef) or not isinstance(func.body, cst.IndentedBlock):
            return None
        for stmt in func.body.body:
            start, end = self.span(stmt)
            if start >= before:
                return None
            name = torch_binding(stmt)
            if name is None and imports_from_torch(stmt):
                offset = self._line_end(end)
                row = self.lines.position(start).row
                indent = self.text[self.lines.starts[row - 1]:start]
                if indent.strip():
                    return None
                line = gate_text(self.gate, "torch", self.quote)
                return GatePlan(Edit(offset, offset, f"{indent}import torch{self.newline}{indent}{line}{self.newline}"))
            guard = (name, BOUND) if name else torch_guard(stmt)
            if guard is not None and guard[1] != UNSURE and end <= before:
                offset = self._line_end(end)
                row = self.lines.position(start).row
                line_start = self.lines.starts[row - 1]
                indent = self.text[line_start:start]
                if indent.strip():
                    return None  # "x = 1; import torch": no line of its own
                line = gate_text(self.gate, guard[0], self.quote, guard[1] == MAYBE)
                return GatePlan(Edit(offset, offset, indent + line + self.newline))
        return None


def imports_from_torch(stmt: cst.CSTNode) -> bool:
    """``from torch... import x`` or ``import torch.x as y``: torch is used, not bound as ``torch``."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
            if (dotted(small.module) or "").split(".")[0] == "torch":
                return True
        if isinstance(small, cst.Import) and any((dotted(a.name) or "").split(".")[0] == "torch" for a in small.names):
            return True
    return False


def scopes_import_torch(scopes: Sequence[cst.CSTNode]) -> bool:
    """Does one of the functions import torch itself (it must then stay importable without it)?"""
    for scope in scopes:
        if isinstance(scope, cst.FunctionDef) and isinstance(scope.body, cst.IndentedBlock):
            if any(torch_binding(stmt) or imports_from_torch(stmt) for stmt in scope.body.body):
                return True
    return False


def _section(root: str) -> str:
    import sys

    if root == "__future__":
        return "future"
    if root == ".":
        return "local"
    names = getattr(sys, "stdlib_module_names", None) or _STDLIB_FALLBACK
    if root in names:
        return "std"
    return "third"


_STDLIB_FALLBACK = frozenset({"abc", "argparse", "ast", "collections", "contextlib", "copy", "dataclasses",
                              "enum", "functools", "glob", "importlib", "inspect", "io", "itertools", "json",
                              "logging", "math", "os", "pathlib", "random", "re", "shutil", "subprocess", "sys",
                              "tempfile", "threading", "time", "typing", "unittest", "warnings"})


def _torch_group(imports, lines: LineIndex):
    """The import group (a run without blank lines) ``import torch`` belongs to: the one with a
    ``from torch`` import, else the first group of third-party imports."""
    groups = _import_groups(imports, lines)
    root = lambda item: item[3].split(".")[0] if item[4] else item[3]  # noqa: E731
    for group in groups:
        if any(root(i) == "torch" for i in group):
            return group
    for group in groups:
        if any(_section(root(i)) == "third" for i in group):
            return group
    return []


def _import_groups(imports: list, lines: LineIndex) -> List[list]:
    """Runs of import statements with no blank line between them (isort's groups); each
    item is a tuple whose second and third fields are the statement's start and end."""
    groups: List[list] = []
    last_row = None
    for item in imports:
        row = lines.position(item[1]).row
        if last_row is None or row > last_row + 1:
            groups.append([])
        groups[-1].append(item)
        last_row = lines.position(max(item[2] - 1, item[1])).row
    return groups


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


# ------------------------------------------------------------------------------------------
# The project's own ROCm test, from a module the file imports
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HouseGate:
    """A ROCm-build test the project defines in a module this file already imports
    (``utils.is_rocm()``, ``IS_HIP``): fixes test it instead of a new gate line."""

    text: str  # the expression fixes test: "is_rocm()", "utils.IS_HIP", "pkg.utils.is_hip()"
    bound_at: int  # the offset after which the name is bound (the end of its import statement)
    edit: Optional[Edit] = None  # the name added to the file's own import of the module, if needed


def _member_key(name: str) -> Tuple[int, str, str]:
    """isort's and ruff's order of the names in ``from m import a, B, C_D`` (order-by-type:
    constants, then classes, then the rest, each case-insensitively)."""
    if len(name) > 1 and name.isupper():
        rank = 0
    elif name[:1].isupper():
        rank = 1
    else:
        rank = 2
    return rank, name.lower(), name


def house_gate(module: cst.Module, wrapper: cst.MetadataWrapper, text: str, lines: LineIndex,
               importer: Optional[str], index, taken: Set[str], line_length: int,
               single_line: bool = False, tree=None) -> Optional[HouseGate]:
    """The project's own ROCm test this file can use, by preference: a name it already
    imports (``from pkg.utils import is_rocm``), an attribute of a project module it imports
    (``utils.is_rocm()``), a name added to its own ``from pkg.utils import ...`` of the module
    that defines it, or a new import of a module of a package it imports from
    (``_new_import``); each only where ``rocmport.reuse`` proves the program imports and runs
    as before (else None: the file's own gate line). ``importer``: the file's dotted name
    (None for a script); ``index``: the project index; ``taken``: the names the file's code
    uses (a new name must be free); ``single_line``: isort's force-single-line (also assumed
    when the file imports two names of one module in two statements); ``tree``: CPython's
    tree of ``text`` (parsed here when not given)."""
    if tree is None:
        try:
            tree = compile(text, "<fixed>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    positions = wrapper.resolve(PositionProvider)
    lines_of = lambda node: (lines.offset(positions[node].start.line, positions[node].start.column),  # noqa: E731
                             lines.offset(positions[node].end.line, positions[node].end.column))
    found: List[Tuple[int, int, HouseGate, Callable[[], bool]]] = []  # (preference, order, gate, its proof)
    froms = [(stmt, stmt.body[0]) for stmt in module.body if isinstance(stmt, cst.SimpleStatementLine)
             and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.ImportFrom)
             and not isinstance(stmt.body[0].names, cst.ImportStar)]
    sources = [_from_source(small) for _, small in froms]
    single_line = single_line or (len(set(sources)) < len(sources) and all(len(small.names) == 1 for _, small in froms))

    def through(test_module: str, test: str, head: str, absolute: bool, imported: Optional[str]) -> Callable[[], bool]:
        """The proof for a test read from ``test_module`` under the file's name ``head``,
        the module that the file's import runs being ``imported`` (None: the name is bound
        by that import itself)."""
        def proof() -> bool:
            return (reuse.plain_test(index, test_module, test) and reuse.bound_once(tree, head)
                    and not (absolute and reuse.stdlib_named(test_module))
                    and (imported is None or not reuse.reaches(index, [imported], importer)))
        return proof

    for order, stmt in enumerate(module.body):
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            continue
        small = stmt.body[0]
        end = lines_of(stmt)[1]
        if isinstance(small, cst.Import):
            for alias in small.names:
                name = dotted(alias.name) or ""
                local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
                for test, kind in _tests_of(index, name):
                    found.append((1, order, HouseGate(f"{local}.{test}" + ("()" if kind == "function" else ""), end),
                                  through(name, test, local.split(".")[0], True, name)))
            continue
        if not isinstance(small, cst.ImportFrom) or isinstance(small.names, cst.ImportStar):
            continue
        level = len(small.relative)
        base = dotted(small.module) if small.module is not None else None
        if level and importer is None:
            continue
        base = index.absolute(importer or "", base, level) if level else base
        if not base:
            continue
        for alias in small.names:
            imported = dotted(alias.name) or ""
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else imported
            kind = _test_kind(index, base, imported)
            if kind is not None:  # the test itself is imported
                found.append((0, order, HouseGate(local + ("()" if kind == "function" else ""), end),
                              through(base, imported, local, not level, None)))
            for test, kind in _tests_of(index, f"{base}.{imported}"):  # a module of the project
                found.append((1, order, HouseGate(f"{local}.{test}" + ("()" if kind == "function" else ""), end),
                              through(f"{base}.{imported}", test, local, not level, f"{base}.{imported}")))
        for test, kind in _tests_of(index, base):
            if test in taken:
                continue
            if single_line:
                edit = _add_line(froms, small, test, lines, lines_of, line_length)
            else:
                edit = _add_name(small, stmt, test, text, lines, lines_of, line_length)
            if edit is not None:
                def proof(base=base, test=test, level=level) -> bool:
                    return (reuse.plain_test(index, base, test) and reuse.bound_once(tree, test, new=True)
                            and not (not level and reuse.stdlib_named(base))
                            and not reuse.reaches(index, [base], importer))
                found.append((2, order, HouseGate(test + ("()" if kind == "function" else ""), end, edit), proof))
    if not found:
        return _new_import(module, text, lines, lines_of, importer, index, taken, line_length, tree)
    for _, _, gate, proof in sorted(found, key=lambda item: (item[0], item[1])):
        if proof():
            return gate
    return None


def _new_import(module: cst.Module, text: str, lines: LineIndex, span, importer: Optional[str], index,
                taken: Set[str], line_length: int, tree=None) -> Optional[HouseGate]:
    """A test defined in another module of a package the file imports from: ``from
    pkg.utils import is_rocm`` (or ``from .utils import ...`` where the file imports its own
    package relatively), a line added to the group of those imports where isort sorts it.
    Only where importing that module runs nothing but definitions and cannot import this
    file back (``rocmport.reuse``)."""
    imports = []  # (stmt, start, end, is_from, absolute module or None, relative level)
    for stmt in module.body:
        if _is_docstring(stmt) and not imports:
            continue
        if not _is_import_line(stmt) or len(stmt.body) != 1:
            if imports and not _set_up_line(stmt):
                break
            continue
        small = stmt.body[0]
        start, end = span(stmt)
        if isinstance(small, cst.Import):
            imports.append((stmt, start, end, False, dotted(small.names[0].name) or "", 0))
        else:
            level = len(small.relative)
            imports.append((stmt, start, end, True, dotted(small.module) if small.module is not None else "", level))
    if not imports:
        return None
    groups = _import_groups(imports, lines)
    package = None if importer is None else (importer if index.path_of(importer) and
                                             index.path_of(importer).endswith("__init__.py")
                                             else importer.rpartition(".")[0])
    choices = []  # (preference, module, name, kind, line, group, key, relative)
    for group_no, group in enumerate(groups):
        for item in group:
            relative = item[5] > 0
            if relative:
                if not package:
                    continue
                root = package.split(".")[0]
            else:
                root = item[4].split(".")[0]
                if not root or (index.path_of(root) is None and index.path_of(item[4]) is None):
                    continue  # not a module of the project
            for test_module, name, kind in index.rocm_tests_in(root):
                if (_private(name, kind) or name in taken or test_module == importer
                        or any(p.startswith("test") or p == "conftest" for p in test_module.split("."))):
                    continue
                if relative:
                    spec = _relative(package, test_module)
                    if spec is None or spec[0] != item[5]:
                        continue  # one level of relative imports per group keeps isort's order plain
                    key, source = (spec[0], spec[1].lower()), "." * spec[0] + spec[1]
                else:
                    key, source = (0, test_module.lower()), test_module
                if not _new_import_proved(index, test_module, name, importer, relative, tree):
                    continue
                line = f"from {source} import {name}"
                if len(line) > line_length:
                    continue
                shared = len(os.path.commonprefix([(package or "").split("."), test_module.split(".")]))
                choices.append(((-shared, test_module.count("."), test_module, name), kind, line, group_no, key,
                                relative))
    if not choices:
        return None
    _, kind, line, group_no, key, relative = min(choices, key=lambda c: c[0])
    at = _sorted_position(groups[group_no], key, relative, lines)
    if at is None:
        return None
    gate = line.rsplit(" ", 1)[1] + ("()" if kind == "function" else "")
    return HouseGate(gate, at, Edit(at, at, line + lines.newline()))


def _new_import_proved(index, test_module: str, name: str, importer: Optional[str], relative: bool, tree) -> bool:
    """May the file import ``name`` from ``test_module``, a module it does not import yet?"""
    if not reuse.plain_test(index, test_module, name) or not reuse.bound_once(tree, name, new=True):
        return False
    if not relative and reuse.stdlib_named(test_module):
        return False
    new = reuse.new_modules(index, test_module, importer)
    return (not reuse.reaches(index, new, importer)
            and reuse.without_effects(index, new, importer, reuse.imported_roots(tree)))


def _relative(package: str, module: str) -> Optional[Tuple[int, str]]:
    """(level, rest) of ``from .rest import`` naming ``module`` from inside ``package``."""
    ours, theirs = package.split("."), module.split(".")
    shared = len(os.path.commonprefix([ours, theirs]))
    if shared == 0:
        return None
    return len(ours) - shared + 1, ".".join(theirs[shared:])


def _sorted_position(group: list, key, relative: bool, lines: LineIndex) -> Optional[int]:
    """Where isort puts ``from <key> import ...`` in ``group``: among its ``from`` lines by
    module (after the plain ``import`` lines), or None when the group is not in that order."""
    def item_key(item):
        return (item[5], item[4].lower()) if relative else (0, item[4].lower())

    kinds = [item[3] for item in group]
    if kinds != sorted(kinds):  # plain imports first, then from-imports (isort's default)
        return None
    froms = [item for item in group if item[3] and (item[5] > 0) == relative]
    if [item_key(i) for i in froms] != sorted(item_key(i) for i in froms):
        return None
    for item in froms:
        if item_key(item) > key:
            return lines.starts[lines.position(item[1]).row - 1]
        if item_key(item) == key:
            return None  # the file imports from that module already: handled by house_gate
    last = group[-1]
    row = lines.position(max(last[2] - 1, last[1])).row
    return lines.starts[row] if row < len(lines.starts) else None


def _tests_of(index, module: str) -> List[Tuple[str, str]]:
    """The public ROCm tests module ``module`` of the project defines (none for a module
    outside the project)."""
    if not module or index.path_of(module) is None:
        return []
    summary = index.summary(module)
    if summary is None:
        return []
    return [(name, kind) for name, kind in summary.rocm_tests if not _private(name, kind)]


def _private(name: str, kind: str) -> bool:
    """A name another module does not import: private, unless it is the constant rocmport
    gives a package's modules to share (``rocmport.package_gate``)."""
    return name.startswith("_") and not (name == PACKAGE_GATE and kind == "constant")


def _test_kind(index, module: str, name: str, depth: int = 0) -> Optional[str]:
    """"constant" or "function" when ``module.name`` is a ROCm test of the project (followed
    through re-exports), else None."""
    if depth > 8 or index.path_of(module) is None:
        return None
    summary = index.summary(module)
    if summary is None:
        return None
    for test, kind in summary.rocm_tests:
        if test == name:
            return kind
    target = summary.imports.get(name)
    if target and "." in target:
        owner, _, attr = target.rpartition(".")
        return _test_kind(index, owner, attr, depth + 1)
    return None


def _from_source(small: cst.ImportFrom) -> str:
    return "." * len(small.relative) + ((dotted(small.module) or "") if small.module is not None else "")


def _add_line(froms, small: cst.ImportFrom, name: str, lines: LineIndex, span, line_length: int) -> Optional[Edit]:
    """Under force-single-line: ``from m import name`` as a line of its own among the file's
    one-name imports of ``m``, where isort sorts it."""
    source = _from_source(small)
    line = f"from {source} import {name}"
    if len(line) > line_length:
        return None
    same = [(stmt, s) for stmt, s in froms if _from_source(s) == source]
    if any(len(s.names) != 1 for _, s in same):
        return None
    keys = [_member_key(dotted(s.names[0].name) or "") for _, s in same]
    if keys != sorted(keys) or _member_key(name) in keys:
        return None
    rows = [lines.position(span(stmt)[0]).row for stmt, _ in same]
    if rows != list(range(rows[0], rows[0] + len(rows))):
        return None  # not one run of lines
    at = next((i for i, k in enumerate(keys) if k > _member_key(name)), len(same))
    row = rows[at] if at < len(same) else rows[-1] + 1
    if row - 1 >= len(lines.starts):
        return None
    offset = lines.starts[row - 1]
    return Edit(offset, offset, line + lines.newline())


def _add_name(small: cst.ImportFrom, stmt: cst.SimpleStatementLine, name: str, text: str, lines: LineIndex,
              span, line_length: int) -> Optional[Edit]:
    """The edit that adds ``name`` to ``from m import ...`` where isort would put it, or None
    when it cannot be done as a pure insertion that isort and the formatter leave alone."""
    aliases = list(small.names)
    if any(dotted(a.name) == name or (a.asname and getattr(a.asname.name, "value", None) == name) for a in aliases):
        return None
    keys = [_member_key(dotted(a.name) or "") for a in aliases]
    if keys != sorted(keys):
        return None  # not isort's order: where the name goes is anybody's guess
    at = next((i for i, k in enumerate(keys) if k > _member_key(name)), len(aliases))
    start, end = span(stmt)
    if small.lpar is None:  # one line
        if "\n" in text[start:end] or "\r" in text[start:end]:
            return None
        row = lines.position(start).row
        line_start = lines.starts[row - 1]
        line_end = text.find("\n", end)
        line = text[line_start:(len(text) if line_end < 0 else line_end)].rstrip("\r")
        if len(line) + len(name) + 2 > line_length:
            return None
        if at < len(aliases):
            offset = span(aliases[at])[0]
            return Edit(offset, offset, f"{name}, ")
        return Edit(span(aliases[-1])[1], span(aliases[-1])[1], f", {name}")
    # parenthesised, one name a line (black's and ruff-format's shape): a line of its own
    alias_rows = [lines.position(span(a)[0]).row for a in aliases]
    if len(set(alias_rows)) != len(aliases) or alias_rows[0] == lines.position(start).row:
        return None
    if at == len(aliases) and aliases[-1].comma == cst.MaybeSentinel.DEFAULT:
        return None
    if at == len(aliases) and not isinstance(aliases[-1].comma, cst.Comma):
        return None
    row = alias_rows[at] if at < len(aliases) else alias_rows[-1] + 1
    first = lines.starts[alias_rows[0] - 1]
    indent = text[first:span(aliases[0])[0]]
    if indent.strip():
        return None
    offset = lines.starts[row - 1]
    return Edit(offset, offset, f"{indent}{name},{lines.newline()}")
