"""What a file must hold for a rule to apply, declared once in the rule (``Rule.NEEDS``).

A rule says which names, calls, imports, strings, keys or numbers any finding of it needs,
in a small vocabulary::

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
The provider builds a name from the binding of its first part (an import, which spells the
module path, or a local name) and the attributes after it, so every part of a qualified
name is spelled in the text as a whole word: ``torch.cuda.synchronize`` needs ``torch``,
``cuda`` and ``synchronize``, whatever the spelling (``from torch.cuda import synchronize
as s``). Builtins (``builtins.setattr``) are the exception, and no need names one.

What a need asks of the tree beyond the file's name index (strings, keywords, keys,
numbers) is computed on first use from ``facts.nodes(...)`` and kept in ``facts.memo``.
"""

from __future__ import annotations

import ast
import itertools
from typing import TYPE_CHECKING, FrozenSet, Iterable, List, Optional, Set, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from .prescan import Facts

Groups = Tuple[Tuple[str, ...], ...]


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

    def words(self) -> Groups:
        """Groups of whole words (identifiers as text), one of each group held wherever this
        need is met."""
        raise NotImplementedError

    # What CPython's tree says --------------------------------------------------------------
    def holds(self, facts: "Facts") -> bool:
        raise NotImplementedError

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        """Words that code meeting this need spells (its nodes' names, as text)."""
        raise NotImplementedError


# -- the text of dotted names ------------------------------------------------------------------
# More last parts than this, and a part common to every name, the common part is the trigger
# (138 libdevice functions: one search for "libdevice" instead of 138).
_MAX_TRIGGERS = 3


def _dotted_text(names: Iterable[str]) -> Tuple[Tuple[str, ...], Groups]:
    """(triggers, words) of dotted names every part of which any spelling spells: the last
    parts (or, when there are many, the longest part common to all), and as word groups each
    other part common to all and the last parts."""
    split = [name.split(".") for name in names]
    lasts = tuple(sorted({parts[-1] for parts in split}))
    common = set(split[0]).intersection(*split[1:]) - set(lasts)
    triggers = (max(sorted(common), key=len),) if len(lasts) > _MAX_TRIGGERS and common else lasts
    return triggers, tuple((part,) for part in sorted(common)) + (lasts,)  # the cheap groups first


class _Names(Need):
    """Base of the needs that name qualified names."""

    def __init__(self, *names: str):
        if not names:
            raise ValueError(f"{type(self).__name__}() needs at least one name")
        if any(name.startswith("builtins.") for name in names):
            raise ValueError(f"{type(self).__name__}(): a builtin is bound by no import, so neither the text "
                             "nor the file's facts tell it apart; name something else the finding needs")
        self.names = frozenset(names)
        self._text = _dotted_text(self.names)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(n) for n in sorted(self.names))})"

    def triggers(self) -> Tuple[str, ...]:
        return self._text[0]

    def words(self) -> Groups:
        return self._text[1]

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return frozenset(facts.spellings(self.names))


class Name(_Names):
    """A reference (a name or an attribute chain, in any spelling the imports allow) that may
    resolve to one of the qualified names."""

    def holds(self, facts: "Facts") -> bool:
        return facts.may_reference(self.names)


class Under(_Names):
    """A reference that may resolve to one of the qualified names or to anything inside one
    (``Under("os")``: ``os.environ``, ``from os import putenv``)."""

    def holds(self, facts: "Facts") -> bool:
        return any(facts.may_reference_under(name) for name in self.names)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        words = {name.rsplit(".", 1)[-1] for name in self.names}
        words.update(name for name, bound in facts.bindings.items()
                     if any(b == p or b.startswith(p + ".") for b in bound for p in self.names))
        return frozenset(words)


class Call(_Names):
    """A call whose callee may resolve to one of the qualified names; with ``positional``,
    only one whose first argument is positional and not a ``*`` splat (``torch.compile(f)``,
    not ``torch.compile(*args)`` nor ``torch.compile(mode=m)``)."""

    def __init__(self, *names: str, positional: bool = False):
        super().__init__(*names)
        self.positional = positional

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + (", positional=True)" if self.positional else ")")

    def holds(self, facts: "Facts") -> bool:
        if not self.positional:
            return any(True for _ in facts.calls_to(self.names))
        Starred = ast.Starred
        return any(call.args and type(call.args[0]) is not Starred for call in facts.calls_to(self.names))


class Decorator(_Names):
    """A decorator (``@x`` or ``@x(...)``) that may resolve to one of the qualified names."""

    def holds(self, facts: "Facts") -> bool:
        return facts.decorated_with(self.names)


class Import(Need):
    """An import of one of the modules, or of a module inside one (``Import("pynvml")`` holds
    for ``import pynvml``, ``from pynvml.smi import x``; ``Import("a.b.c")`` for ``from a.b
    import c`` too; relative imports never). Every such import spells each part of the
    module."""

    def __init__(self, *modules: str):
        if not modules:
            raise ValueError("Import() needs at least one module")
        self.modules = frozenset(modules)
        self._text = _dotted_text(self.modules)

    def __repr__(self) -> str:
        return f"Import({', '.join(repr(m) for m in sorted(self.modules))})"

    def _ours(self, module: Optional[str]) -> bool:
        return bool(module) and any(module == m or module.startswith(m + ".") for m in self.modules)

    def triggers(self) -> Tuple[str, ...]:
        return self._text[0]

    def words(self) -> Groups:
        return self._text[1]

    def holds(self, facts: "Facts") -> bool:
        if facts.tree is None:
            return True
        for node in facts.nodes(ast.Import):
            if any(self._ours(alias.name) for alias in node.names):
                return True
        for node in facts.nodes(ast.ImportFrom):
            module = node.module
            if node.level or not module:
                continue
            if self._ours(module) or any(self._ours(f"{module}.{alias.name}") for alias in node.names):
                return True
        return False

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return frozenset(m.rsplit(".", 1)[-1] for m in self.modules)


class _Words(Need):
    """Base of the needs that name plain words (keywords, attributes, keys)."""

    def __init__(self, *names: str):
        if not names:
            raise ValueError(f"{type(self).__name__}() needs at least one name")
        self.names = frozenset(names)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(n) for n in sorted(self.names))})"

    def triggers(self) -> Tuple[str, ...]:
        return tuple(sorted(self.names))

    def words(self) -> Groups:
        return (self.triggers(),)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return self.names


class Keyword(_Words):
    """A keyword argument of one of the names in some call (``f(mode=...)``); with
    ``subscripted``, only in a call whose callee is a subscript (a Triton launch,
    ``kernel[grid](num_warps=8)``)."""

    def __init__(self, *names: str, subscripted: bool = False):
        super().__init__(*names)
        self.subscripted = subscripted

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + (", subscripted=True)" if self.subscripted else ")")

    def holds(self, facts: "Facts") -> bool:
        return not (subscript_call_keywords(facts) if self.subscripted else keywords(facts)).isdisjoint(self.names)


class Attribute(_Words):
    """An attribute of one of the names, on any receiver (``x.num_warps``); with ``assigned``,
    only one that is assigned to (``x.num_warps = 4``, ``x.num_warps += 1``)."""

    def __init__(self, *names: str, assigned: bool = False):
        super().__init__(*names)
        self.assigned = assigned

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + (", assigned=True)" if self.assigned else ")")

    def holds(self, facts: "Facts") -> bool:
        found = facts.attributes
        if not self.assigned:
            return any(name in found for name in self.names)
        Store = ast.Store
        return any(type(node.ctx) is Store for name in self.names for node in found.get(name, ()))


class Identifier(_Words):
    """A name or an attribute used in the code, a defined or imported name, spelled as one of
    the names (``Identifier("get_device_name")``: ``get_device_name()``, ``p.get_device_name``,
    ``from .util import get_device_name``); with ``part``, one that contains one
    (``Identifier("compile", part=True)``: ``maybe_compile``, ``support_torch_compile``). For a
    finding that a project's own function can cause (another module's wrapper or decorator,
    found through the index), whose qualified name no need can list. Comments and strings do
    not count."""

    def __init__(self, *names: str, part: bool = False):
        super().__init__(*names)
        if any(not name.isidentifier() for name in names):
            raise ValueError("Identifier() takes identifiers (no dots: name each part)")
        self.part = part

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + (", part=True)" if self.part else ")")

    def words(self) -> Groups:
        # a part is no whole word (``maybe_compile`` holds ``compile`` only as text)
        return () if self.part else (self.triggers(),)

    def holds(self, facts: "Facts") -> bool:
        if facts.tree is None:
            return True
        found = identifiers(facts)
        if not self.part:
            return not found.isdisjoint(self.names)
        return bool(self._containing(facts))

    def _containing(self, facts: "Facts") -> FrozenSet[str]:
        key = ("needs:identifiers:part", self.names)
        out = facts.memo.get(key)
        if out is None:
            names = self.names
            out = facts.memo[key] = frozenset(i for i in identifiers(facts) if any(n in i for n in names))
        return out  # type: ignore[return-value]

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return self._containing(facts) if self.part else self.names


class String(Need):
    """A string constant (a plain or f-string's literal part) that contains one of the parts;
    with ``whole``, that is one of them; with ``any_case``, in any case (``"TF32"``)."""

    def __init__(self, *parts: str, whole: bool = False, any_case: bool = False):
        if not parts:
            raise ValueError("String() needs at least one part")
        self.whole, self.any_case = whole, any_case
        self.parts = frozenset(p.lower() for p in parts) if any_case else frozenset(parts)

    def __repr__(self) -> str:
        flags = "".join(f", {f}=True" for f in ("whole", "any_case") if getattr(self, f))
        return f"String({', '.join(repr(p) for p in sorted(self.parts))}{flags})"

    def triggers(self) -> Tuple[str, ...]:
        # none: the text need not spell the value (``"reduce-" "overhead"``, an escape), so a
        # rule combines a string with a need that does (``Call(...) & String(...)``)
        return ()

    def words(self) -> Groups:
        return ()

    def holds(self, facts: "Facts") -> bool:
        found = strings(facts, self.any_case)
        parts = self.parts
        if any(part in found for part in parts):  # a whole constant: no scan
            return True
        return not self.whole and any(part in text for text in found for part in parts)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return self.parts


class Key(Need):
    """A mapping key written as a literal: ``m["k"] = ...``, ``{"k": ...}``, a keyword
    ``k=`` (``dict(k=...)``, ``m.update(k=...)``, any call), or the first argument of
    ``m.setdefault("k", ...)`` / ``m.__setitem__("k", ...)``. Like a string, a key need not
    be spelled in the text (``"a" "b"``): pair it with a need that is."""

    def __init__(self, *keys: str):
        if not keys:
            raise ValueError("Key() needs at least one key")
        self.keys = frozenset(keys)

    def __repr__(self) -> str:
        return f"Key({', '.join(repr(k) for k in sorted(self.keys))})"

    def triggers(self) -> Tuple[str, ...]:
        return ()

    def words(self) -> Groups:
        return ()

    def holds(self, facts: "Facts") -> bool:
        return not keys(facts).isdisjoint(self.keys)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return self.keys


class DictKey(Key):
    """A string key of a dict display (``{"k": ...}``), and nothing else ``Key`` names."""

    def __repr__(self) -> str:
        return "Dict" + super().__repr__()

    def holds(self, facts: "Facts") -> bool:
        return not dict_keys(facts).isdisjoint(self.keys)


class Number(Need):
    """An int or float literal equal to one of the values, written with its decimal digits
    (``448``, ``448.0``, ``-448.``; ``0x1C0`` and ``4_48`` are not looked for)."""

    def __init__(self, *values: int):
        if not values or any(type(v) is not int for v in values):
            raise ValueError("Number() needs one or more ints")
        self.values = frozenset(values)

    def __repr__(self) -> str:
        return f"Number({', '.join(str(v) for v in sorted(self.values))})"

    def triggers(self) -> Tuple[str, ...]:
        return tuple(sorted(str(abs(v)) for v in self.values))

    def words(self) -> Groups:
        return ()

    def holds(self, facts: "Facts") -> bool:
        if facts.tree is None:
            return True
        return not numbers(facts).isdisjoint(self.values)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return frozenset(self.triggers())


# -- combinations ---------------------------------------------------------------------------
_MAX_GROUPS = 64


def _pruned(groups: Iterable[FrozenSet[str]]) -> Groups:
    """The groups less those implied by a smaller one (a superset), smallest first."""
    unique = sorted(set(groups), key=lambda g: (len(g), sorted(g)))
    kept: List[FrozenSet[str]] = []
    for group in unique:
        if not any(other <= group for other in kept):
            kept.append(group)
    return tuple(tuple(sorted(group)) for group in kept)


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
        if any(not p for p in parts):
            return ()
        union = tuple(sorted({t for p in parts for t in p}))
        if len(union) <= _MAX_TRIGGERS:
            return union
        # many: a group of words that every alternative holds (as whole words, so as text)
        # is a trigger too, and fewer searches (the kernels or configs of Triton: "triton")
        small = [group for group in self.words() if len(group) <= _MAX_TRIGGERS]
        return min(small, key=lambda g: (len(g), -min(len(w) for w in g))) if small else union

    def words(self) -> Groups:
        # (a1 and a2) or (b1 and b2) = (a1 or b1) and (a1 or b2) and (a2 or b1) and (a2 or b2)
        groups = [need.words() for need in self.needs]
        if any(not g for g in groups):
            return ()
        count = 1
        for g in groups:
            count *= len(g)
        if count > _MAX_GROUPS:  # each alternative's first group, joined: still held
            return (tuple(sorted({w for g in groups for w in g[0]})),)
        return _pruned(frozenset().union(*choice) for choice in itertools.product(*groups))

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

    def words(self) -> Groups:
        return _pruned(frozenset(group) for need in self.needs for group in need.words())

    def holds(self, facts: "Facts") -> bool:
        return all(need.holds(facts) for need in self.needs)

    def spelled(self, facts: "Facts") -> FrozenSet[str]:
        return frozenset().union(*(need.spelled(facts) for need in self.needs))


# -- what the needs ask of the tree, on first use -------------------------------------------
def strings(facts: "Facts", lower: bool = False) -> FrozenSet[str]:
    """Every str constant of the file (an f-string's literal parts included); ``lower``: in
    lower case."""
    key = "needs:strings:lower" if lower else "needs:strings"
    found = facts.memo.get(key)
    if found is None:
        if lower:
            found = frozenset(text.lower() for text in strings(facts))
        else:
            found = frozenset(node.value for node in facts.nodes(ast.Constant) if type(node.value) is str)
        facts.memo[key] = found
    return found  # type: ignore[return-value]


def keywords(facts: "Facts") -> FrozenSet[str]:
    """Every keyword argument's name (of calls and class definitions)."""
    found = facts.memo.get("needs:keywords")
    if found is None:
        found = facts.memo["needs:keywords"] = frozenset(
            node.arg for node in facts.nodes(ast.keyword) if node.arg is not None)
    return found  # type: ignore[return-value]


def identifiers(facts: "Facts") -> FrozenSet[str]:
    """Every identifier of the code: names used or bound, attributes, and each part of an
    imported module's or name's path and its alias."""
    found = facts.memo.get("needs:identifiers")
    if found is None:
        out: Set[str] = set(facts.names) | set(facts.attributes) | facts.other_bindings | set(facts.bindings)
        for node in facts.nodes(ast.alias):
            out.update(node.name.split("."))
            if node.asname:
                out.add(node.asname)
        for node in facts.nodes(ast.ImportFrom):
            if node.module:
                out.update(node.module.split("."))
        found = facts.memo["needs:identifiers"] = frozenset(out)
    return found  # type: ignore[return-value]


def subscript_call_keywords(facts: "Facts") -> FrozenSet[str]:
    """The keyword names of calls whose callee is a subscript (``kernel[grid](k=...)``)."""
    found = facts.memo.get("needs:subscript_call_keywords")
    if found is None:
        Subscript = ast.Subscript
        found = facts.memo["needs:subscript_call_keywords"] = frozenset(
            k.arg for call in facts.nodes(ast.Call) if type(call.func) is Subscript for k in call.keywords if k.arg)
    return found  # type: ignore[return-value]


_KEY_METHODS = ("setdefault", "__setitem__")


def keys(facts: "Facts") -> FrozenSet[str]:
    """Every literal mapping key ``Key`` names: stored subscripts, dict displays, keywords and
    the first argument of ``setdefault`` / ``__setitem__``."""
    found = facts.memo.get("needs:keys")
    if found is None:
        out: Set[str] = set(keywords(facts)) | stored_keys(facts) | dict_keys(facts)
        for method in _KEY_METHODS:
            out.update(first_strings(facts, method))
        found = facts.memo["needs:keys"] = frozenset(out)
    return found  # type: ignore[return-value]


def stored_keys(facts: "Facts") -> FrozenSet[str]:
    """The string keys of subscripts stored to (``m["k"] = ...``, ``m["k"] += ...``)."""
    found = facts.memo.get("needs:stored_keys")
    if found is None:
        Store, Constant = ast.Store, ast.Constant
        found = facts.memo["needs:stored_keys"] = frozenset(
            node.slice.value for node in facts.nodes(ast.Subscript)
            if type(node.ctx) is Store and type(node.slice) is Constant and type(node.slice.value) is str)
    return found  # type: ignore[return-value]


def dict_keys(facts: "Facts") -> FrozenSet[str]:
    """The string keys of dict displays (``{"k": ...}``)."""
    found = facts.memo.get("needs:dict_keys")
    if found is None:
        Constant = ast.Constant
        found = facts.memo["needs:dict_keys"] = frozenset(
            key.value for node in facts.nodes(ast.Dict) for key in node.keys
            if type(key) is Constant and type(key.value) is str)
    return found  # type: ignore[return-value]


def first_strings(facts: "Facts", method: str) -> Set[str]:
    """The string literals passed first to calls of ``method`` (``x.method("s", ...)``)."""
    out: Set[str] = set()
    for call in facts.calls.get(method, ()):
        if call.args and type(call.args[0]) is ast.Constant and type(call.args[0].value) is str:
            out.add(call.args[0].value)
    return out


def numbers(facts: "Facts") -> FrozenSet[float]:
    """Every int and float constant's value (no bool, no complex)."""
    found = facts.memo.get("needs:numbers")
    if found is None:
        found = facts.memo["needs:numbers"] = frozenset(
            node.value for node in facts.nodes(ast.Constant) if type(node.value) in (int, float))
    return found  # type: ignore[return-value]
