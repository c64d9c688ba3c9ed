"""What a file must hold for a rule to apply, declared once in the rule (``Rule.NEEDS``).

A rule says which names, calls, imports, strings or keywords any finding of it needs, in a
small vocabulary::

    NEEDS = Call("torch.cuda.get_device_capability") | Import("pynvml") & String("nvidia-smi")

and every fast path is derived from that one declaration:

- ``triggers()``: words of which the file's text must hold one (the engine's first look);
- ``words()``: groups of whole identifiers of which the text must hold one each;
- ``holds(facts)``: the answer on CPython's tree of the file (the prefilter's facts, see
  ``prescan``): False only when no node the declaration names can be there;
- ``spelled(facts)``: the words any code that holds such a node spells (for a rule whose
  findings and reads stay around the nodes it names, ``Rule.LOCAL``: a lint may leave every
  other definition unparsed, see ``opaque``).

Each answer must be conservative: a file is skipped only when no finding is possible. The
qualified names are those of LibCST's ``QualifiedNameProvider`` (``torch.compile``,
``torch.cuda.graph``), which ``prescan.Facts`` over-approximates from the file's imports.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, FrozenSet, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from .prescan import Facts


class Need:
    """One requirement on a file. Combine with ``|`` (either) and ``&`` (both)."""

    def __or__(self, other: "Need") -> "Need":
        return AnyOf(self, other)

    def __and__(self, other: "Need") -> "Need":
        return AllOf(self, other)

    # What the text must hold -------------------------------------------------------------
    def triggers(self) -> Tuple[str, ...]:
        """Substrings of which the text holds one wherever this need is met (() : no test)."""
        raise NotImplementedError

    def words(self) -> Tuple[Tuple[str, ...], ...]:
        """Groups of whole words (identifiers as text), one of each group held wherever this
        need is met."""
        raise NotImplementedError

    # What CPython's tree says --------------------------------------------------------------
    def holds(self, facts: "Facts") -> bool:
        raise NotImplementedError

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        """Words that code meeting this need spells (its nodes' names, as text)."""
        raise NotImplementedError


class _Names(Need):
    """Base of the needs that name qualified names."""

    def __init__(self, *names: str):
        if not names:
            raise ValueError(f"{type(self).__name__}() needs at least one name")
        self.names = frozenset(names)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(n) for n in sorted(self.names))})"

    def triggers(self) -> Tuple[str, ...]:
        # the provider names a node after its spelling: the last part is spelled (an attribute,
        # a name, or an import of it, maybe aliased: then the import spells it)
        return tuple(sorted({name.rsplit(".", 1)[-1] for name in self.names}))

    def words(self) -> Tuple[Tuple[str, ...], ...]:
        return (self.triggers(),)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return frozenset(facts.spellings(self.names))


class Name(_Names):
    """A reference (a name or an attribute chain, in any spelling the imports allow) that may
    resolve to one of the qualified names."""

    def holds(self, facts: "Facts") -> bool:
        return facts.may_reference(self.names)


class Call(_Names):
    """A call whose callee may resolve to one of the qualified names."""

    def holds(self, facts: "Facts") -> bool:
        return any(True for _ in facts.calls_to(self.names))


class Decorator(_Names):
    """A decorator (``@x`` or ``@x(...)``) that may resolve to one of the qualified names."""

    def holds(self, facts: "Facts") -> bool:
        return facts.decorated_with(self.names)


class Import(Need):
    """An import of one of the modules, or of a module inside one (``Import("pynvml")`` holds
    for ``import pynvml``, ``from pynvml.smi import x``; relative imports never)."""

    def __init__(self, *modules: str):
        if not modules:
            raise ValueError("Import() needs at least one module")
        self.modules = frozenset(modules)

    def __repr__(self) -> str:
        return f"Import({', '.join(repr(m) for m in sorted(self.modules))})"

    def _ours(self, module: Optional[str]) -> bool:
        return bool(module) and any(module == m or module.startswith(m + ".") for m in self.modules)

    def triggers(self) -> Tuple[str, ...]:
        return tuple(sorted({m.split(".", 1)[0] for m in self.modules}))

    def words(self) -> Tuple[Tuple[str, ...], ...]:
        return (self.triggers(),)

    def holds(self, facts: "Facts") -> bool:
        if facts.tree is None:
            return True
        for node in facts.nodes(ast.Import):
            if any(self._ours(alias.name) for alias in node.names):
                return True
        return any(not node.level and self._ours(node.module) for node in facts.nodes(ast.ImportFrom))

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return frozenset(self.triggers())


class String(Need):
    """A string constant (a plain or f-string's literal part) that contains one of the parts."""

    def __init__(self, *parts: str):
        if not parts:
            raise ValueError("String() needs at least one part")
        self.parts = frozenset(parts)

    def __repr__(self) -> str:
        return f"String({', '.join(repr(p) for p in sorted(self.parts))})"

    def triggers(self) -> Tuple[str, ...]:
        # none: the text need not spell the value (``"reduce-" "overhead"``, an escape), so a
        # rule combines a string with a need that does (``Call(...) & String(...)``)
        return ()

    def words(self) -> Tuple[Tuple[str, ...], ...]:
        return ()

    def holds(self, facts: "Facts") -> bool:
        return any(part in text for text in facts.strings for part in self.parts)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return self.parts


class Keyword(Need):
    """A keyword argument of one of the names in some call (``f(mode=...)``)."""

    def __init__(self, *names: str):
        if not names:
            raise ValueError("Keyword() needs at least one name")
        self.names = frozenset(names)

    def __repr__(self) -> str:
        return f"Keyword({', '.join(repr(n) for n in sorted(self.names))})"

    def triggers(self) -> Tuple[str, ...]:
        return tuple(sorted(self.names))

    def words(self) -> Tuple[Tuple[str, ...], ...]:
        return (self.triggers(),)

    def holds(self, facts: "Facts") -> bool:
        return not facts.keywords.isdisjoint(self.names)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return self.names


class Attribute(Need):
    """An attribute of one of the names, on any receiver (``x.num_warps``)."""

    def __init__(self, *names: str):
        if not names:
            raise ValueError("Attribute() needs at least one name")
        self.names = frozenset(names)

    def __repr__(self) -> str:
        return f"Attribute({', '.join(repr(n) for n in sorted(self.names))})"

    def triggers(self) -> Tuple[str, ...]:
        return tuple(sorted(self.names))

    def words(self) -> Tuple[Tuple[str, ...], ...]:
        return (self.triggers(),)

    def holds(self, facts: "Facts") -> bool:
        return any(name in facts.attributes for name in self.names)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return self.names


class AnyOf(Need):
    """One of the needs."""

    def __init__(self, *needs: Need):
        flat = []
        for need in needs:
            flat.extend(need.needs if isinstance(need, AnyOf) else (need,))
        self.needs = tuple(flat)

    def __repr__(self) -> str:
        return " | ".join(repr(n) if not isinstance(n, AllOf) else f"({n!r})" for n in self.needs)

    def triggers(self) -> Tuple[str, ...]:
        parts = [need.triggers() for need in self.needs]
        return () if any(not p for p in parts) else tuple(sorted({t for p in parts for t in p}))

    def words(self) -> Tuple[Tuple[str, ...], ...]:
        # each alternative's first group, joined: one of them is held wherever one is met
        groups = [need.words() for need in self.needs]
        if any(not g for g in groups):
            return ()
        return (tuple(sorted({w for g in groups for w in g[0]})),)

    def holds(self, facts: "Facts") -> bool:
        return any(need.holds(facts) for need in self.needs)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return frozenset().union(*(need.spelled(facts) for need in self.needs))


class AllOf(Need):
    """Every one of the needs (each somewhere in the file)."""

    def __init__(self, *needs: Need):
        flat = []
        for need in needs:
            flat.extend(need.needs if isinstance(need, AllOf) else (need,))
        self.needs = tuple(flat)

    def __repr__(self) -> str:
        return " & ".join(repr(n) if not isinstance(n, AnyOf) else f"({n!r})" for n in self.needs)

    def triggers(self) -> Tuple[str, ...]:
        return next((t for t in (need.triggers() for need in self.needs) if t), ())

    def words(self) -> Tuple[Tuple[str, ...], ...]:
        return tuple(group for need in self.needs for group in need.words())

    def holds(self, facts: "Facts") -> bool:
        return all(need.holds(facts) for need in self.needs)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return frozenset().union(*(need.spelled(facts) for need in self.needs))
