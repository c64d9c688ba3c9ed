"""The rule framework: every rocmport rule is a LibCST ``BatchableCSTVisitor``.

The engine parses a file once, wraps it in one ``MetadataWrapper`` (so each metadata
provider runs once for the file) and visits the tree once with every enabled rule batched
together, as Fixit does. A rule reports findings through its :class:`RuleContext`; it knows
nothing of the command line, output formats or the prelude text: a fix only names the
prelude parts its replacement text relies on (``requires``).

Each rule documents itself in class attributes (``rocmport rule CODE`` prints them) and
carries Fixit-style ``VALID`` / ``INVALID`` cases that the test-suite runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Collection, Dict, FrozenSet, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedName, QualifiedNameProvider

from rocmport.analysis import gates, testing
from rocmport.analysis.libcst_internals import LazyValue
from rocmport.analysis.names import import_names, name_parts, possible_names
from rocmport.analysis.needs import Need
from rocmport.analysis.platforms import ROCM
from rocmport.analysis.prescan import PREFILTER
from rocmport.analysis.syntax import ROCM_WORD
from rocmport.findings import Applicability, Edit, Finding, Fix

if TYPE_CHECKING:  # pragma: no cover
    from rocmport.analysis.index import ProjectIndex
    from rocmport.analysis.metadata import Metadata
    from rocmport.analysis.prescan import Facts
    from rocmport.source import LineIndex


@dataclass(frozen=True)
class Case:
    """A Fixit-style example: ``code`` and, for invalid cases, the fixed result.

    ``code`` and ``expected`` are dedented, and a first empty line dropped, so a case may be
    written as an indented triple-quoted block inside the class, as the docs are.
    For an invalid case, ``line`` and ``column`` (1-based, as rocmport prints them) and
    ``message``, where given, are those of the rule's first finding. ``path``: the name the
    code is checked under, for rules that read it (a test module, a module named for a
    package).
    """

    code: str
    expected: Optional[str] = None  # fixed output (None: no fix, or display-only)
    codes: Tuple[str, ...] = ()  # codes expected (defaults to the rule's own)
    line: Optional[int] = None
    column: Optional[int] = None
    message: Optional[str] = None
    path: str = "snippet.py"

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", _case_text(self.code))
        if self.expected is not None:
            object.__setattr__(self, "expected", _case_text(self.expected))


def _case_text(text: str) -> str:
    import textwrap

    text = textwrap.dedent(text)
    return text[1:] if text.startswith("\n") else text


@dataclass
class RuleOptions:
    """What a rule may know of the configuration: nothing about the CLI."""

    unsafe_fixes: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)


class RuleContext:
    """Per-file state shared by every rule: source text, positions, names, the gate."""

    def __init__(self, *, path: str, text: str, module: cst.Module, wrapper: "Metadata",
                 lines: "LineIndex", gate_name: str, options: RuleOptions, facts: "Optional[Facts]" = None,
                 index: "Optional[ProjectIndex]" = None):
        self.path = path
        self.index = index  # the project index (rocmport.analysis.index), None for a file linted alone
        self.facts = facts  # CPython's view of the file's imports (None when it does not parse)
        self.scopes: Any = None  # the engine's _resolve.ScopeBindings: where a name read is bound
        self.text = text
        self.module = module
        self.wrapper = wrapper
        self.lines = lines
        self.gate_name = gate_name
        self.quote = '"'  # the quote the repository's formatter wants in generated strings
        self.options = options
        self.findings: List[Finding] = []
        self.span_errors: List[str] = []
        self._cache: Dict[str, Any] = {}

    # -- metadata, resolved lazily --------------------------------------------------------
    def metadata(self, provider) -> Any:
        """The mapping of a LibCST metadata provider for this file, computed on first use
        and then shared by every rule. Most files never need one: positions are computed
        only when something is reported (for its top-level statement), qualified names only
        when a rule has a candidate; parents are recorded by the engine's visit (``Metadata``)."""
        return self.wrapper.resolve(provider)

    def qualified_names(self, node: cst.CSTNode) -> Collection[QualifiedName]:
        """QualifiedNameProvider's answer for ``node``. When the node's root name is bound
        only by absolute imports at module level (or by nothing), the answer follows from
        the import table alone and the provider (a scope analysis of the whole file, the
        dearest metadata) is not run; otherwise it is asked. A test compares both on every
        node of a corpus."""
        if self.facts is not None and PREFILTER["enabled"]:
            fast = import_names(node, self.facts, self.scopes)
            if fast is not None:
                return fast
        value = self.metadata(QualifiedNameProvider).get(node, ())
        return (value() if isinstance(value, LazyValue) else value) or ()

    def position(self, node: cst.CSTNode):
        return self.metadata(PositionProvider)[node]

    def may_resolve(self, node: cst.CSTNode, names) -> bool:
        """Cheap, conservative gate before asking QualifiedNameProvider: can ``node`` resolve
        to one of the qualified ``names``? With the file's imports known (``facts``): only if
        its root name is bound by an import that makes it one of them (see ``_prescan``).
        Otherwise: not if its last part is none of theirs, nor if a dotted chain starts with a
        name that is none of their parts (``re.compile`` cannot be ``torch.compile``) --
        unless the name is bound with ``as`` (an alias could hide it)."""
        if not PREFILTER["enabled"]:
            return True
        if self.facts is not None:
            return not possible_names(node, self.facts).isdisjoint(names)
        lasts, parts = name_parts(frozenset(names))
        aliases = self.import_aliases()
        if isinstance(node, cst.Name):
            return node.value in lasts or node.value in aliases
        if not isinstance(node, cst.Attribute):
            return True
        if node.attr.value not in lasts and node.attr.value not in aliases:
            return False
        root = node.value
        while isinstance(root, cst.Attribute):
            root = root.value
        return not isinstance(root, cst.Name) or root.value in parts or root.value in aliases

    def import_aliases(self):
        """Every name bound with ``as`` (a superset of import aliases), computed once."""
        return self.shared("import_aliases", lambda ctx: frozenset(_AS_NAME.findall(ctx.text)))

    # -- shared, computed-once analyses -------------------------------------------------
    def shared(self, key: str, factory):
        """Compute ``factory(self)`` once per file and share it between rules."""
        if key not in self._cache:
            self._cache[key] = factory(self)
        return self._cache[key]

    def release(self) -> None:
        """Drop the shared analyses once the rules are done: they hold this context (and
        may hold cycles of their own, which each one's ``release`` breaks), a cycle that
        would keep the file's trees until the cyclic collector runs."""
        for value in self._cache.values():
            release = getattr(value, "release", None)
            if callable(release):
                release()
        self._cache.clear()
        # the trees too: a visitor class defined in a rule's call is a cycle that may hold
        # the rule, and the rule holds this context
        self.module = self.wrapper = self.facts = self.scopes = None  # type: ignore[assignment]

    # -- positions and edits ------------------------------------------------------------
    def span(self, node: cst.CSTNode) -> Tuple[int, int]:
        """Offsets of ``node`` in the original text, checked against the node's code."""
        rng = self.metadata(PositionProvider)[node]
        start = self.lines.offset(rng.start.line, rng.start.column + self._dropped(rng.start.line))
        end = self.lines.offset(rng.end.line, rng.end.column + self._dropped(rng.end.line))
        return self._verified(node, start, end, rng.start.line)

    def _dropped(self, row: int) -> int:
        """Form feeds in the indentation of ``row``: LibCST leaves them out of its columns."""
        start, stop = self.lines.line_span(row)
        if "\x0c" not in self.text[start:stop]:
            return 0
        indent = _INDENT.match(self.text, start, stop).group()
        return indent.count("\x0c")

    def _verified(self, node: cst.CSTNode, start: int, end: int, row: int) -> Tuple[int, int]:
        if isinstance(node, cst.BaseExpression) and node.lpar:
            # PositionProvider's range leaves out a node's own parentheses; so does the span.
            node = node.with_changes(lpar=(), rpar=())
        if getattr(node, "leading_lines", ()):
            # and a statement's leading comment and blank lines, which its code holds
            node = node.with_changes(leading_lines=())
        code = self.module.code_for_node(node)
        # Compare ignoring whitespace: code_for_node cannot know the indentation of the
        # block around a multi-line node, but every other character must be the same.
        if _squash(self.text[start:end]) == _squash(code):
            return start, end
        # LibCST normalises a few rare bytes (a form feed that opens a line, a final lone
        # CR), which shifts columns on that line. Find the node's first line there instead.
        line_start, line_end = self.lines.line_span(row)
        first = code.split("\n", 1)[0].split("\r", 1)[0]
        found = -1
        if first:  # the occurrence on that line nearest to where LibCST placed it
            hits = [m.start() for m in re.finditer(re.escape(first), self.text[line_start:line_end + 1])]
            if hits:
                found = line_start + min(hits, key=lambda h: abs(line_start + h - start))
        if found != -1:
            same_line = self.lines.position(end).row == row
            new_start, new_end = found, (end + found - start if same_line else end)
            if _squash(self.text[new_start:new_end]) == _squash(code):
                return new_start, new_end
        raise SpanError(f"could not locate the source of a {type(node).__name__} at line {row}")

    def edit(self, start: int, end: int, content: str) -> Edit:
        """An edit of ``text[start:end]``, with its positions for output formats."""
        return Edit(start, end, content, self.lines.position(start), self.lines.position(end))

    def replace(self, node: cst.CSTNode, content: str) -> Edit:
        start, end = self.span(node)
        return self.edit(start, end, content)

    def insert_before(self, node: cst.CSTNode, content: str) -> Edit:
        start, _ = self.span(node)
        return self.edit(start, start, content)

    def insert_after(self, node: cst.CSTNode, content: str) -> Edit:
        _, end = self.span(node)
        return self.edit(end, end, content)

    def source(self, node: cst.CSTNode) -> str:
        try:
            start, end = self.span(node)
        except SpanError:
            return self.module.code_for_node(node)
        return self.text[start:end]

    def newline(self) -> str:
        return self.shared("newline", lambda ctx: ctx.lines.newline())


class SpanError(Exception):
    pass


_UNSET = object()
# A function that asks a question (``is_hopper``, ``supports_fp8``, ``_tma_ok``): it runs on every
# platform to decide, so its name does not make its code NVIDIA-only.
_PREDICATE = re.compile(r"(?i)^_*(?:is|has|have|can|supports?|use|should|check|detect|get_is)_|_(?:ok|available|"
                        r"supported|enabled)$")
_AS_NAME = re.compile(r"\bas\s+([A-Za-z_]\w*)")


_WS = re.compile(r"\s+")
_INDENT = re.compile(r"[ \t\x0c]*")


def _squash(text: str) -> str:
    return _WS.sub("", text)


class Rule(cst.BatchableCSTVisitor):
    """Base class of every rule. Subclasses set the documentation attributes below."""

    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""  # kebab-case, like ruff's rule names
    SUMMARY: ClassVar[str] = ""  # one line, shown by ``rocmport rules``
    WHAT: ClassVar[str] = ""  # what it finds
    WHY: ClassVar[str] = ""  # why it is a problem on ROCm
    EXAMPLE: ClassVar[str] = ""  # code that triggers it
    FIXED_EXAMPLE: ClassVar[str] = ""  # the same after ``rocmport fix``
    FIX: ClassVar[str] = ""  # the fix and why it is (or is not) safe
    FIX_APPLICABILITY: ClassVar[Optional[Applicability]] = None
    DEFAULT_ENABLED: ClassVar[bool] = True
    # What a file must hold for the rule to apply, declared once (``rocmport.analysis.needs``:
    # ``Call("torch.compile") & String("reduce-overhead")``, ``Import("pynvml") | ...``). The
    # prefilters below are derived from it: ``TRIGGERS`` and ``WORDS`` (the text), ``may_match``
    # (CPython's tree) and, for a ``LOCAL`` rule, ``reach`` (what a lint may leave unparsed).
    NEEDS: ClassVar[Optional[Need]] = None
    # True when the rule reports at, and reads only around, the nodes ``NEEDS`` names (their
    # statements and the tests around them) and module-level statements: a lint may then
    # leave unparsed every function or class that spells none of them.
    LOCAL: ClassVar[bool] = False
    # Derived from ``NEEDS`` unless the class sets them. A file whose text holds none of the
    # ``TRIGGERS`` cannot hold a finding of this rule; ``WORDS``: groups of whole words
    # (identifiers, as text), one of each group held. Both must be conservative.
    TRIGGERS: ClassVar[Tuple[str, ...]] = ()
    WORDS: ClassVar[Tuple[Tuple[str, ...], ...]] = ()
    VALID: ClassVar[Sequence[Case]] = ()
    INVALID: ClassVar[Sequence[Case]] = ()

    # The providers a rule may ask for. The engine resolves none of them up front: each is
    # computed the first time any rule of the file asks (see ``get_metadata``).
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    def __init__(self, context: RuleContext):
        super().__init__()
        self.context = context

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        needs = cls.__dict__.get("NEEDS")
        if needs is None:
            return
        if "TRIGGERS" not in cls.__dict__:
            cls.TRIGGERS = needs.triggers()
            if not cls.TRIGGERS:
                raise TypeError(f"{cls.__name__}.NEEDS gives the text prefilter no word ({needs!r}): add a "
                                "Name, Call, Import, Keyword or Attribute to it with &, or set TRIGGERS")
        if "WORDS" not in cls.__dict__:
            cls.WORDS = needs.words()

    @classmethod
    def may_match(cls, facts: "Facts") -> bool:
        """Second prefilter, on CPython's parse of a file that passed ``TRIGGERS``: False
        only when the file provably holds no finding of this rule (``NEEDS`` on the
        ``prescan`` facts). The engine then spares the file LibCST when no enabled rule may
        match. A rule overrides it only where a derived answer is measurably too slow or too
        wide (``benchmarks/bench.py``), and tests it against the derived one."""
        needs = cls.NEEDS
        if needs is None:
            return True
        found = facts.memo.get(needs)  # the rules of a family share their NEEDS: asked once per file
        if found is None:
            found = facts.memo[needs] = needs.holds(facts)
        return found  # type: ignore[return-value]

    @classmethod
    def reach(cls, facts: "Facts") -> Optional[FrozenSet[str]]:
        """The words outside which this rule neither reports nor reads anything of a function
        or class: a definition whose code holds none of the words of any rule run on the file
        is left unparsed by a lint (``opaque``). Derived from ``NEEDS`` for a ``LOCAL`` rule;
        None otherwise: the rule may read any definition (a call graph, a kernel launched
        elsewhere, a dict built in a helper)."""
        if cls.LOCAL and cls.NEEDS is not None:
            return cls.NEEDS.spelled(facts)
        return None

    def get_metadata(self, key, node, default=_UNSET):  # type: ignore[override]
        mapping = self.context.metadata(key)
        value = mapping[node] if default is _UNSET else mapping.get(node, default)
        return value() if isinstance(value, LazyValue) else value

    # -- reporting ------------------------------------------------------------------------
    def report(self, node: cst.CSTNode, message: str, *, fix: Optional[Fix] = None,
               end_node: Optional[cst.CSTNode] = None, decision: Optional[str] = None) -> None:
        """Report a finding at ``node`` (to ``end_node``). ``decision``: a key that names the
        choice this finding is a place of (a kernel, a layer's default, a skip decorator):
        the engine reports the findings of this rule in one file that carry the same key
        once, at the first, with the count and the others as related locations
        (docs/adding-a-rule.md, "One finding per decision"). Only display-only findings are
        grouped: a fix is made at each place."""
        ctx = self.context
        try:
            start, end = ctx.span(node)
            if end_node is not None:
                end = ctx.span(end_node)[1]
        except SpanError as exc:
            # Report the finding at LibCST's position, without a fix we cannot place.
            rng = ctx.position(node)
            start = ctx.lines.offset(rng.start.line, rng.start.column)
            end = ctx.lines.offset(rng.end.line, rng.end.column)
            ctx.span_errors.append(str(exc))
            fix = None
        ctx.findings.append(
            Finding(
                code=self.CODE,
                name=self.NAME,
                message=message,
                start=ctx.lines.position(start),
                end=ctx.lines.position(end),
                fix=fix,
                filename=ctx.path,
                span=(start, end),
                decision=decision,
                not_a_port=self.not_a_port(node),
            )
        )

    def not_a_port(self, node: cst.CSTNode) -> Optional[str]:
        """Why the code at ``node`` is not a port, so that a fix leaves it alone (the finding
        is still reported, marked): in a test module, a test skipped unconditionally or a test
        whose point is CUDA graphs (``testing``); anywhere, code for NVIDIA GPUs only
        (``gates.nvidia_only``). None: a port."""
        tests = testing.of(self.context)
        if tests.is_test:
            reason = tests.skipped(node)
            if reason is not None:
                return f"a skipped test: {reason}"
            reason = tests.about_graphs(node)
            if reason is not None:
                return f"{testing.GRAPH_TEST}: {reason}"
        if self.CODE.startswith("ROC7") or self._in_predicate(node):
            # a vendor check decides for itself what NVIDIA-only code is (ROC7xx); a predicate
            # named for an NVIDIA feature (``is_hopper()``) runs on every GPU: it is the gate
            return None
        reason = gates.of(self.context).nvidia_only(node)
        return f"NVIDIA-only code: {reason}" if reason is not None else None

    def _in_predicate(self, node: cst.CSTNode) -> bool:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                return _PREDICATE.search(ancestor.name.value) is not None
        return False

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.get_metadata(ParentNodeProvider, node, None)

    def ancestors(self, node: cst.CSTNode):
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def in_rocm_branch(self, node: cst.CSTNode) -> bool:
        """True when ``node`` runs on one side of a ROCm test only: on ROCm alone (``if
        is_rocm:``, ``x if torch.version.hip else y``, ``is_hip() and ...``) or never on ROCm
        (their other side, ``if torch.version.cuda:``, ``if is_cpu():``), as the platform
        analysis reads the conditions around it (``gates``); or in a function or class whose
        name says it is ROCm-specific. Such code is already gated."""
        where = gates.of(self.context).where(node)
        if ROCM not in where or where <= {ROCM}:
            return True
        return any(isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and ROCM_WORD.search(ancestor.name.value)
                   for ancestor in self.ancestors(node))

    def platforms(self, node: cst.CSTNode):
        """The platforms ``node`` can run on (``rocmport.analysis.platforms``: CUDA, ROCM, CPU,
        OTHER), from the conditions around it."""
        return gates.of(self.context).where(node)

    @classmethod
    def doc(cls) -> str:
        """The rule's documentation, as ``rocmport rule CODE`` prints it (Markdown)."""
        parts = [f"# {cls.CODE} {cls.NAME}", "", cls.SUMMARY.strip(), ""]
        if not cls.DEFAULT_ENABLED:
            parts += ["Off by default: enable it with `--select " + cls.CODE + "` or `extend-select`.", ""]
        parts += ["## What it finds", "", _dedent(cls.WHAT), "", "## Why it is a problem on ROCm", "",
                  _dedent(cls.WHY), "", "## Example", "", "```python", _dedent(cls.EXAMPLE), "```", ""]
        if cls.FIXED_EXAMPLE:
            parts += ["After `rocmport fix --write`:", "", "```python", _dedent(cls.FIXED_EXAMPLE), "```", ""]
        applicability = cls.FIX_APPLICABILITY.value if cls.FIX_APPLICABILITY else "none"
        parts += [f"## Fix ({applicability})", "", _dedent(cls.FIX)]
        return "\n".join(parts).rstrip() + "\n"


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip("\n")
