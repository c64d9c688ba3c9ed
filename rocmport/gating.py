"""The gate and placement stage: which ROCm test a file's fixes use (its own, the project's,
or the generated line), the edits that bind it, the prelude block, and the set-up of entry
points. It knows no rules.
"""


from __future__ import annotations

import dataclasses
import io
import os
import re
import tokenize
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from rocmport.analysis import walk as _walk
from rocmport.analysis.metadata import Metadata
from rocmport.analysis.resolve import rocm_test_binding

from . import house, parsing, placement, prelude
from .config import Settings
from .file_analysis import FileAnalysis
from .findings import Applicability, Edit, Finding, Position
from .source import LineIndex, apply_edits, read_regular

# ------------------------------------------------------------------------------------------
# The gate name
# ------------------------------------------------------------------------------------------

def code_names(text: str) -> Set[str]:
    """Every name token of the code (strings and comments do not count)."""
    names = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                names.add(tok.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):  # pragma: no cover - it parsed
        return {m.group(0) for m in re.finditer(r"\w+", text)}
    return names


def choose_gate(module: cst.Module, text: str, block: Optional[prelude.Block]):
    """The name fixed code tests: the prelude's, the file's own binding, or a free name."""
    if block is not None:
        return block.gate, None
    own = rocm_test_binding(module, text)
    if own is not None:
        return own[0], ("stmt", id(own[1]))
    name = prelude.DEFAULT_GATE
    counter = 0
    taken = code_names(text) if name in text else set()
    while name in taken:
        counter += 1
        name = "_rocmport_is_rocm" if counter == 1 else f"_rocmport_is_rocm_{counter}"
    return name, None


class _InlineTests(cst.CSTVisitor):
    """The comparisons of the file that spell "this torch is a ROCm build" (or its negation)
    inline: ``<torch>.version.hip is not None`` / ``is None`` (``!=`` / ``==`` too), the left
    side also as ``getattr(<torch>.version, "hip", None)``; ``<torch>`` one of ``aliases``."""

    def __init__(self, aliases: Set[str]):
        super().__init__()
        self.aliases = aliases
        self.found: List[cst.BaseExpression] = []  # the left sides, in order

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) != 1:
            return
        target = node.comparisons[0]
        if not (isinstance(target.comparator, cst.Name) and target.comparator.value == "None"
                and isinstance(target.operator, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual))):
            return
        if self._is_hip(node.left):
            self.found.append(node.left)

    def _is_hip(self, left: cst.BaseExpression) -> bool:
        if isinstance(left, cst.Attribute) and left.attr.value == "hip":
            return self._version(left.value)
        if (isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "getattr"
                and len(left.args) in (2, 3) and all(a.keyword is None and not a.star for a in left.args)):
            first, second = left.args[0].value, left.args[1].value
            default = left.args[2].value if len(left.args) == 3 else None
            return (self._version(first) and isinstance(second, cst.SimpleString)
                    and second.evaluated_value == "hip"
                    and (default is None or (isinstance(default, cst.Name) and default.value == "None")))
        return False

    def _version(self, node: cst.BaseExpression) -> bool:
        return (isinstance(node, cst.Attribute) and node.attr.value == "version" and isinstance(node.value, cst.Name)
                and node.value.value in self.aliases and not node.lpar)


_JIT = re.compile(r"(?m)^[ \t]*@\s*(?:\w+\.)*jit\b")


def inline_gate(module: cst.Module, wrapper, text: str, lines: LineIndex,
                starts: List[int]) -> Optional[placement.HouseGate]:
    """The ROCm test as the file already spells it inline (``torch.version.hip is None`` in
    some condition of its own): fixes test the same spelling, positive
    (``torch.version.hip is not None``; their negation is ``torch.version.hip is None``), and
    no gate line is added. Only where the file imports torch at module level (a simple
    ``import torch`` statement of its body, not in a ``try``) before every fix (``starts``:
    where each fix begins), and no fix lies in a Triton kernel (a ``@jit`` function, which
    cannot read ``torch.version``)."""
    if "hip" not in text or not starts:
        return None
    positions = wrapper.resolve(PositionProvider)
    bound_at, alias = None, None
    for stmt in module.body:
        name = placement.torch_binding(stmt)
        if name is not None:
            end = positions[stmt].end
            bound_at, alias = lines.offset(end.line, end.column), name
            break
    if alias is None or min(starts) < bound_at:
        return None
    finder = _InlineTests({alias})
    _walk.visit(module, finder)
    if not finder.found:
        return None
    if _JIT.search(text):
        for start in starts:
            for function in enclosing_functions_of(module, wrapper, lines, start):
                if any(_JIT.match("@" + module.code_for_node(d.decorator)) for d in function.decorators):
                    return None
    left = module.code_for_node(finder.found[0])
    return placement.HouseGate(f"{left} is not None", bound_at)


class _FunctionsAround(cst.CSTVisitor):
    """The function definitions around ``offset`` (a class of the module's, not of a call:
    a class made in a function would hold its cells, the file's positions among them, in a
    cycle)."""

    def __init__(self, positions, lines: LineIndex, offset: int):
        super().__init__()
        self.positions, self.lines, self.offset = positions, lines, offset
        self.found: List[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        rng = self.positions[node]
        start = self.lines.offset(rng.start.line, rng.start.column)
        end = self.lines.offset(rng.end.line, rng.end.column)
        if start <= self.offset < end:
            self.found.append(node)
            return True
        return False


def enclosing_functions(analysis: FileAnalysis, offset: int) -> List[cst.FunctionDef]:
    """The function definitions around ``offset``, outermost first."""
    return enclosing_functions_of(analysis.module, analysis.wrapper, analysis.lines, offset)


def enclosing_functions_of(module: cst.Module, wrapper, lines: LineIndex, offset: int) -> List[cst.FunctionDef]:
    """The function definitions of ``module`` around ``offset``, outermost first."""
    finder = _FunctionsAround(wrapper.resolve(PositionProvider), lines, offset)
    # only the statements around the offset's line can hold it (the others are not generated)
    for stmt in wrapper.statements_at(lines.position(offset).row):
        _walk.visit(stmt, finder)
    return finder.found


def _gate_bound(analysis: FileAnalysis, before: int) -> bool:
    """Is the gate name already bound at module level before ``before`` (by the file's own
    test, a gate line, or a block that defines it)?"""
    if analysis.gate_at is None:  # found once per file, reading positions of that statement only
        gate = analysis.gate
        analysis.gate_at = -1
        for stmt in analysis.module.body:
            if ("stmt", id(stmt)) == analysis.gate_binding or (isinstance(stmt, cst.SimpleStatementLine) and any(
                    isinstance(small, (cst.Assign, cst.AnnAssign)) and gate in _assigned_names(small)
                    for small in stmt.body)):
                start = analysis.wrapper.resolve(PositionProvider)[stmt].start
                analysis.gate_at = analysis.lines.offset(start.line, start.column)
                break
    return 0 <= analysis.gate_at < before


def _assigned_names(small: cst.BaseSmallStatement) -> Set[str]:
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
    return {t.value for t in targets if isinstance(t, cst.Name)}


def with_gate_edits(analysis: FileAnalysis, settings: Settings) -> List[Finding]:
    """Each fix that tests the gate carries the edit that binds it (JSON and SARIF fixes are
    then complete); identical edits of several fixes are applied once."""
    needy = [f for f in analysis.findings if f.fix is not None and f.fix.edits and "gate" in f.fix.requires]
    if not needy:
        return analysis.findings
    if analysis.house is not None:  # the project's own test, imported before every fix (analyze)
        wanted = {id(f) for f in needy}
        added = (analysis_edit(analysis, analysis.house.edit),) if analysis.house.edit is not None else ()
        return [dataclasses.replace(f, fix=dataclasses.replace(
                    f.fix, edits=tuple(f.fix.edits) + added, requires=tuple(r for r in f.fix.requires if r != "gate")))
                if id(f) in wanted else f for f in analysis.findings]
    placer = None
    module_level: List[Tuple[int, Tuple[Edit, ...]]] = []  # (gate line offset, its edits), planned so far
    fixed: Dict[int, Finding] = {}
    for f in sorted(needy, key=lambda f: min(e.start for e in f.fix.edits)):
        before = min(e.start for e in f.fix.edits)
        requires = tuple(r for r in f.fix.requires if r != "gate")
        if _gate_bound(analysis, before):
            fixed[id(f)] = dataclasses.replace(f, fix=dataclasses.replace(f.fix, requires=requires))
            continue
        earlier = [edits for at, edits in module_level if at <= before]
        if earlier:  # a module-level gate line planned for an earlier fix binds it here too
            fixed[id(f)] = dataclasses.replace(f, fix=dataclasses.replace(
                f.fix, edits=tuple(f.fix.edits) + earlier[0], requires=requires))
            continue
        if placer is None:
            style = house.style_for(f.filename)
            placer = placement.Placer(analysis.module, analysis.wrapper, analysis.text, analysis.lines,
                                      analysis.gate, quote=style.quote, lines_after_imports=style.lines_after_imports)
        plan = placer.plan(before, enclosing_functions(analysis, before))
        if plan.edit is None:
            fix = dataclasses.replace(f.fix, applicability=Applicability.DISPLAY_ONLY,
                                      message=f"{f.fix.message} (not applied: {plan.problem})")
            fixed[id(f)] = dataclasses.replace(f, fix=fix)
            continue
        added = tuple(analysis_edit(analysis, e) for e in plan.extra + (plan.edit,))
        if re.search(rf"(?:^|[\r\n]){re.escape(analysis.gate)} = ", plan.edit.content):  # any newline
            module_level.append((plan.edit.start, added))
        fixed[id(f)] = dataclasses.replace(f, fix=dataclasses.replace(
            f.fix, edits=tuple(f.fix.edits) + added, requires=requires))
    return [fixed.get(id(f), f) for f in analysis.findings]


def analysis_edit(analysis: FileAnalysis, edit: Edit) -> Edit:
    """``edit`` with its 1-based positions filled in, as rules' edits have them."""
    lines = analysis.lines
    start, end = lines.position(edit.start), lines.position(edit.end)
    return Edit(edit.start, edit.end, edit.content, Position(start.row, start.column), Position(end.row, end.column))


_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git", ".hg")


def _project_root(directory: Path) -> Optional[Path]:
    """The nearest directory at or above ``directory`` that holds a project's files
    (``pyproject.toml``, ``setup.py``, ``setup.cfg``, ``.git``): what runs the project has it
    on the path, so it is never a package itself, whatever ``__init__.py`` it holds."""
    for folder in (directory, *directory.parents):
        if any((folder / marker).exists() for marker in _PROJECT_MARKERS):
            return folder
    return None


def _package_of(path: str) -> Optional[Tuple[Path, str]]:
    """(top package directory, how the file imports it) of a file inside a package: its
    dotted name (``pkg``) where the package sits at the project's root or in its ``src``,
    else dots (``from .._rocmport import``: a package inside a namespace package, or a
    project whose root is not known, is imported under a name the file cannot know)."""
    if path in ("", "-"):
        return None
    directory = Path(path).resolve().parent
    if not (directory / "__init__.py").is_file():
        return None
    root = _project_root(directory)
    top, depth = None, 0
    while (directory / "__init__.py").is_file() and directory.name.isidentifier() and directory != root:
        top, depth = directory, depth + 1
        directory = directory.parent
    if top is None:
        return None
    if root is not None and top.parent in (root, root / "src"):
        return top, top.name
    return top, "." * depth


_MAIN_RE = re.compile(r"""__name__\s*==\s*['"]__main__['"]""")


def prelude_style(path: str, text: str, options: prelude.PreludeOptions):
    """"inline" or ("import", top package directory, how the file imports it). A script
    (a ``__main__`` guard) in a package gets the inline block: run as a file, it has no
    package to import from."""
    if options.style != "module":
        return "inline"  # the default: no new file
    package = _package_of(path)
    if package is None or _MAIN_RE.search(text):
        return "inline"
    return ("import",) + package


def _module_torch_name(analysis: FileAnalysis, before: int) -> Tuple[Optional[str], bool]:
    """The name a module-level binding of torch before ``before`` binds (None: none), and
    whether torch is optional in the file (the block must then keep it so)."""
    found, how = None, None
    for stmt, start, end in parsing.statement_spans(analysis):
        if end > before:
            break
        guard = placement.torch_guard(stmt)
        if guard is None or guard[1] == placement.UNSURE:
            continue
        if found is None or (guard[1] == placement.BOUND and (how != placement.BOUND or guard[0] == "torch")):
            found, how = guard
    if how == placement.BOUND:
        return found, False
    return found, found is not None or placement.torch_optional(analysis.module)


def prelude_edit(analysis: FileAnalysis, requires: Set[str], before: int, path: str,
                  settings: Settings, inline: bool = False) -> Tuple[Optional[Edit], Dict[str, bytes], Optional[str]]:
    """The marker block for the parts in ``requires`` (the graph helper): (edit, generated
    files, problem). A block whose content rocmport did not write is never replaced."""
    options = settings.prelude
    text = analysis.text
    newline = analysis.lines.newline()
    block = analysis.block
    if block is not None and not prelude.is_own_block(text, block, options):
        if set(requires) <= set(block.parts):
            return None, {}, None
        return None, {}, (f"the rocmport block at line {analysis.lines.position(block.start).row} was edited"
                          " by hand; it is not regenerated")
    parts = set(requires) | (set(block.parts) if block else set())
    gate = analysis.gate
    style = "inline" if inline else prelude_style(path, text, options)
    if block is not None:
        style = "inline" if block.style == "inline" else style
    # the gate is the file's own line (placement): a block only keeps one it had
    define_gate = block is not None and block.style == "inline" and f"{gate} = _rocmport_hip" in text[block.start:block.end]
    extra: Dict[str, bytes] = {}
    if style == "inline":
        at = block.start if block else placement.Placer(analysis.module, analysis.wrapper, text, analysis.lines,
                                                        gate).after_imports(before)
        torch_name, optional = _module_torch_name(analysis, at)
        rendered = prelude.render_inline(gate, parts, options, define_gate=define_gate, newline=newline,
                                         torch_name=torch_name, optional=optional,
                                         os_name="os" if _module_binds_os(analysis.module, at, text) else None)
    else:
        _, top, package = style
        rendered = prelude.render_import(package, gate, parts, options, define_gate=define_gate, newline=newline)
        module_path = top / f"{options.module_name}.py"
        wanted = prelude.render_module(options, parts, header=house.license_header(top)).encode("utf-8")
        try:
            current = read_regular(str(module_path))
        except OSError:
            current = None
        if current is not None and not prelude.is_generated_module(current):
            return None, {}, f"{module_path.name} exists and was not written by rocmport"
        if current is None or not prelude.same_code(current, wanted):
            extra[str(module_path)] = wanted
    if block is not None:
        if prelude.same_code(text[block.start:block.end], rendered):
            return None, extra, None
        return Edit(block.start, block.end, rendered), extra, None
    offset = placement.Placer(analysis.module, analysis.wrapper, text, analysis.lines, gate).after_imports(before)
    rest = text[offset:]
    after = "" if rest.startswith(("\n", "\r")) or not rest.strip() else newline
    return Edit(offset, offset, (newline if offset else "") + rendered + after), extra, None


def resolved_prelude(settings: Settings, path: str) -> Settings:
    """``settings`` with the RNG patch decided: on where the project may run on torch < 2.10
    (its declared requirement, read by ``house``), unless the configuration says."""
    options = settings.prelude
    if options.rng_patch is not None:
        return settings
    directory = Path.cwd() if path in ("", "-") else Path(os.path.abspath(path)).parent
    rng = house.may_run_on_torch_before(directory, (2, 10))
    return settings.with_overrides(prelude=dataclasses.replace(options, rng_patch=rng))


@dataclasses.dataclass
class SetupPlan:
    """What ``rocmport setup`` puts into an entry point: the prelude options (None: nothing),
    and why not, or what the set-up holds."""

    options: Optional[prelude.PreludeOptions]
    reason: str
    program: object = None
    wanted: Optional[prelude.PreludeOptions] = None  # what the program needs, wherever it can go


def _project_files(settings: Settings, path: str) -> List[str]:
    from .discovery import discover

    root = settings.root if os.path.isdir(settings.root) else os.path.dirname(os.path.abspath(path))
    files, _ = discover((root,), settings.with_overrides(force_exclude=False))
    return [f for f in files if f.endswith(".py")]


def _module_binds_os(module: cst.Module, before: int, text: str) -> bool:
    head = text[:before]
    return re.search(r"(?m)^import os[ \t]*(?:#.*)?$", head) is not None


def setup_plan(text: str, path: str, settings: Settings, module: Optional[cst.Module] = None,
               files: Optional[List[str]] = None) -> SetupPlan:
    """Which set-up the entry point at ``path`` needs: only settings that change something for
    the program (``rocmport.program``), placed before anything imports the inductor config."""
    from . import program as _program

    explicit_rng = settings.prelude.rng_patch  # None: decided here
    settings = resolved_prelude(settings, path)
    options = settings.prelude
    if module is None:
        try:
            module = parsing.parse(text)
        except (cst.ParserSyntaxError, RecursionError):
            return SetupPlan(None, "it does not parse")
    offset = placement.Placer(module, Metadata(module), text, LineIndex(text), prelude.DEFAULT_GATE).after_imports(len(text))
    line = text.count("\n", 0, offset) + 1
    found = _program.analyse(path, files if files is not None else _project_files(settings, path), before_line=line,
                             entry_text=text)
    # the RNG patch (60 lines): only where the configuration asks for it (`rng-patch = true`); where
    # it may matter (torch < 2.10 possible, the program compiles and captures), `setup` says so
    rng = bool(explicit_rng)
    options = dataclasses.replace(options, compiles=found.compiles, autotunes=found.autotunes, rng_patch=rng)
    if options.lean() and not prelude.lean_settings(options):
        why = ("no torch.compile in it or in the project modules it imports (a library's own compile, such as"
               " transformers' Trainer with torch_compile, is not seen)" if not found.compiles
               else "it compiles without max-autotune: inductor's defaults are already right for ROCm")
        return SetupPlan(None, f"nothing to set up: {why}", found, options)
    if found.early_inductor:
        return SetupPlan(None, "torch._inductor.config is imported before the set-up could run ("
                         + "; ".join(found.early_inductor[:3]) + "): environment defaults would come too late;"
                         " set them where the program is launched (`rocmport setup --shell " + os.path.relpath(path)
                         + "`)", found, options)
    if options.lean() and _module_torch_name_text(module, offset) is None:
        return SetupPlan(None, "it does not import torch in its import block: put the set-up where torch is"
                         " imported, or use `rocmport setup --shell " + os.path.relpath(path) + "`", found, options)
    return SetupPlan(options, "", found, options)


def rng_note(plan: SetupPlan, settings: Settings, path: str) -> Optional[str]:
    """A line for a program that compiles and captures CUDA graphs on a torch that may be older
    than 2.10, where the set-up leaves the RNG patch out unless asked."""
    found = plan.program
    if found is None or not (found.compiles and found.captures) or settings.prelude.rng_patch is not None:
        return None
    if not resolved_prelude(settings, path).prelude.rng_patch:
        return None
    return ("it compiles and captures CUDA graphs, and may run on torch < 2.10: warm up (compile) before the"
            " capture (`rocmport rule ROC304`), or add the Dynamo RNG patch with `[tool.rocmport.prelude]"
            " rng-patch = true` (60 lines)")


def _module_torch_name_text(module: cst.Module, before: int) -> Optional[str]:
    """The name a module-level ``import torch`` binds in the first ``before`` characters."""
    found = None
    position = 0
    for stmt in module.body:
        code = module.code_for_node(stmt)
        position += len(code)
        if position > before + 1:
            break
        name = placement.torch_binding(stmt)
        if name and (found is None or name == "torch"):
            found = name
    return found


def with_setup(text: str, path: str, settings: Settings, rules, enabled, extra: Dict[str, bytes],
               plan: Optional[SetupPlan] = None):
    """An entry point's text with the set-up block (process-wide settings that change something
    for its program) added or brought up to date; unchanged when the block is there, was
    edited by hand, or the program needs none (``setup_plan`` says why)."""
    tree, deep = parsing.cpython_parse(text)
    if tree is None or deep is not None:
        return text, extra
    try:
        module = parsing.parse(text)
    except (cst.ParserSyntaxError, RecursionError, parsing.TooLarge):
        return text, extra
    block = prelude.find_block(text)
    if plan is None:
        plan = setup_plan(text, path, settings, module)
    if plan.options is None:
        return text, extra
    gate, binding = choose_gate(module, text, block)
    analysis = FileAnalysis(text, [], module, Metadata(module), LineIndex(text), gate, binding, block)
    settings = settings.with_overrides(prelude=plan.options)
    pedit, files, problem = prelude_edit(analysis, {"setup"}, len(text), path, settings, inline=True)
    if problem is not None or pedit is None:
        return text, extra
    updated = apply_edits(text, [pedit])
    if parsing.parse_error(updated) is not None:
        return text, extra
    return updated, {**extra, **files}


def binds_gate(content: str, gate: str) -> bool:
    return re.search(rf"(?:^|[\r\n])[ \t]*{re.escape(gate)} = ", content) is not None  # any newline
