"""The rule registry: every rule class of every module of the ``rocmport.rules`` families.

A family is a package under ``rocmport/rules/``; each of its modules that defines a rule class
(a subclass of ``Rule`` with a ``CODE``) holds that one rule. Nothing else registers a rule.

Two views of the same rules:

- :func:`all_rules` imports the rule classes (and so LibCST): the engine needs them to visit
  a tree;
- :func:`rule_infos` gives what the command line needs before it knows whether any file must
  be analysed (codes, names, default selection, fix applicability, the documentation that
  ``rocmport rule CODE`` prints) without importing LibCST. It reads ``_rule_index.py``, a
  file generated from the rule classes (``python -m rocmport.registry --write``), and uses it
  only while a fingerprint of the rules' and analyses' sources matches the one it was generated from;
  otherwise (a rule was edited and the index not regenerated) it builds the same answer from
  the classes. The rule class stays the one place a rule is written.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, AbstractSet, Dict, List, Optional, Sequence, Tuple, Type, TypeVar

from .findings import Applicability

if TYPE_CHECKING:  # pragma: no cover
    from rocmport.rules.base import Rule

RULES_PACKAGE = "rocmport.rules"
R = TypeVar("R")  # a rule class or its RuleInfo: both have TRIGGERS and WORDS
INDEX_MODULE = "rocmport._rule_index"
INDEX_FILE = Path(__file__).with_name("_rule_index.py")
REGENERATE = "python -m rocmport.registry --write"


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)  # type: ignore[attr-defined]
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - broken install
        raise RuntimeError(f"the {package} package is missing")
    return Path(list(spec.submodule_search_locations)[0])


@functools.lru_cache(maxsize=None)
def families() -> Dict[str, List[str]]:
    """Each family package's rule-module candidates, by family name, in name order (every
    module but ``__init__`` and ``common``; one that defines no rule, such as the environment
    family's scanner of other file kinds, gives none)."""
    root = _package_dir(RULES_PACKAGE)
    found: Dict[str, List[str]] = {}
    for family in sorted(os.listdir(root)):
        folder = root / family
        if family.startswith(("_", ".")) or not (folder / "__init__.py").is_file():
            continue
        found[family] = [entry[:-3] for entry in sorted(os.listdir(folder))
                         if entry.endswith(".py") and not entry.startswith("_") and entry != "common.py"]
    return found


def rules_of(module) -> "List[Type[Rule]]":
    """The rule classes a module defines (not those it imports): at most one for a rule module."""
    from rocmport.rules.base import Rule

    return [value for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__
            and value.CODE]


@functools.lru_cache(maxsize=None)
def all_rules() -> Dict[str, "Type[Rule]"]:
    rules: Dict[str, Type[Rule]] = {}
    for family, names in families().items():
        for name in names:
            for rule in rules_of(importlib.import_module(f"{RULES_PACKAGE}.{family}.{name}")):
                if rule.CODE in rules and rules[rule.CODE] is not rule:
                    raise RuntimeError(f"rule code {rule.CODE} defined twice")
                rules[rule.CODE] = rule
    return dict(sorted(rules.items()))


def family_rules(family: str) -> "List[Type[Rule]]":
    """The rules of one family package (``compile_modes``, ...), in code order."""
    prefix = f"{RULES_PACKAGE}.{family}."
    return [rule for rule in all_rules().values() if rule.__module__.startswith(prefix)]


def visitor_rules() -> "List[Type[Rule]]":
    """Rules that run on a tree (all but the ROC0xx ones that the engine reports)."""
    return [r for code, r in all_rules().items() if not code.startswith("ROC0")]


def get(code: str) -> "Type[Rule]":
    return all_rules()[code.upper()]


# ------------------------------------------------------------------------------------------
# The light view
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RuleInfo:
    """What is known of a rule without importing it. The attribute names are the rule class's,
    so code that reads ``CODE``/``NAME``/``SUMMARY``/... or calls ``doc()`` takes either."""

    CODE: str
    NAME: str
    SUMMARY: str
    WHAT: str
    WHY: str
    DEFAULT_ENABLED: bool
    FIX_APPLICABILITY: Optional[Applicability]
    DOC: str
    # The engine's first prefilter (``Rule.TRIGGERS``, ``Rule.WORDS``): :func:`may_report`.
    # None: not known (an index written before they were recorded): the rule may match anything.
    TRIGGERS: Optional[Tuple[str, ...]] = None
    WORDS: Tuple[Tuple[str, ...], ...] = ()
    # ``Rule.PROJECT``: the rule reports only on a file linted with the project index
    PROJECT: bool = False

    def doc(self) -> str:
        return self.DOC

    @classmethod
    def of(cls, rule) -> "RuleInfo":
        return cls(rule.CODE, rule.NAME, rule.SUMMARY, rule.WHAT, rule.WHY, bool(rule.DEFAULT_ENABLED),
                   rule.FIX_APPLICABILITY, rule.doc(), tuple(rule.TRIGGERS),
                   tuple(tuple(group) for group in rule.WORDS), bool(getattr(rule, "PROJECT", False)))

    def as_data(self) -> dict:
        return {"code": self.CODE, "name": self.NAME, "summary": self.SUMMARY, "what": self.WHAT,
                "why": self.WHY, "default_enabled": self.DEFAULT_ENABLED,
                "fix": self.FIX_APPLICABILITY.value if self.FIX_APPLICABILITY else None, "doc": self.DOC,
                "triggers": list(self.TRIGGERS or ()), "words": [list(group) for group in self.WORDS],
                **({"project": True} if self.PROJECT else {})}

    @classmethod
    def from_data(cls, data: dict) -> "RuleInfo":
        fix = data["fix"]
        triggers = data.get("triggers")
        return cls(data["code"], data["name"], data["summary"], data["what"], data["why"],
                   data["default_enabled"], Applicability(fix) if fix else None, data["doc"],
                   None if triggers is None else tuple(triggers),
                   tuple(tuple(group) for group in data.get("words", ())), bool(data.get("project", False)))


def sources_fingerprint() -> str:
    """A digest of every source file of the rules and the shared analyses (and of the
    vocabulary and facts their documentation uses)."""
    digest = hashlib.blake2b(digest_size=16)
    here = Path(__file__).parent
    files = sorted(list(_package_dir(RULES_PACKAGE).rglob("*.py")) + list((here / "analysis").glob("*.py")))
    files += [here / "findings.py", here / "rocm_facts.py"]
    for path in files:
        digest.update(path.relative_to(here).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def _indexed() -> Optional[Dict[str, RuleInfo]]:
    try:
        index = importlib.import_module(INDEX_MODULE)
        if index.FINGERPRINT != sources_fingerprint():
            return None
        return {data["code"]: RuleInfo.from_data(data) for data in index.RULES}
    except (ImportError, AttributeError, KeyError, TypeError, ValueError, OSError):
        return None


@functools.lru_cache(maxsize=None)
def rule_infos() -> Dict[str, RuleInfo]:
    """Every rule's :class:`RuleInfo`, by code, in code order; LibCST-free when the index is
    current (it is in a release, and in a checkout after ``--write``)."""
    infos = _indexed()
    if infos is None:
        infos = {code: RuleInfo.of(rule) for code, rule in all_rules().items()}
    return infos


def may_report(text: str, enabled: AbstractSet[str]) -> bool:
    """False only when no enabled rule that runs on a tree has its ``TRIGGERS`` and ``WORDS``
    in ``text``: the engine's first prefilter (:func:`text_triggered`) answered from the index,
    without importing a rule or LibCST. Then a lint of ``text`` only checks that the file
    parses. ROC0xx codes are the engine's own, not a rule's visit: not counted here."""
    return bool(text_triggered([info for code, info in rule_infos().items()
                                if not code.startswith("ROC0") and code in enabled], text))


def text_triggered(rules: Sequence[R], text: str, index=None) -> List[R]:
    """The engine's first prefilter: the rules (classes, or their :class:`RuleInfo`) whose
    ``TRIGGERS`` (one of them) and ``WORDS`` (one of each group) ``text`` holds. A rule with
    no triggers passes them. With the project ``index``, a rule class that has
    ``index_triggers(index)`` is triggered by what that returns instead: (substrings, whole
    words), the words given by the project's other modules (the names of the modules whose
    import runs CUDA-only code, say); None from it: its ``TRIGGERS``. Without the index, a rule
    that reports only with it (``PROJECT``) is never triggered."""
    scan = WordRuns(text)
    words: Dict[str, bool] = {}
    held: Dict[Tuple[str, ...], bool] = {}  # rules of a family share their triggers: one search each
    out = []
    for rule in rules:
        if index is None and getattr(rule, "PROJECT", False):
            continue
        triggers = rule.TRIGGERS
        dynamic = getattr(rule, "index_triggers", None) if index is not None else None
        project = dynamic(index) if dynamic is not None else None
        if project is not None:
            substrings, names = project
            if not any(scan.holds(t) for t in substrings) and not any(scan.holds_word(w, words) for w in names):
                continue
        elif triggers:
            found = held.get(triggers)
            if found is None:
                found = held[triggers] = any(scan.holds(t) for t in triggers)
            if not found:
                continue
        if all(any(scan.holds_word(w, words) for w in group) for group in rule.WORDS):
            out.append(rule)
    return out


_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_RUN_TABLE = bytes(c if c in _WORD_BYTES else 32 for c in range(256))  # other bytes: a space
_PIECES: Dict[str, Tuple[bool, Tuple[str, ...]]] = {}


def _pieces(needle: str) -> Tuple[bool, Tuple[str, ...]]:
    """(is ``needle`` one run of ASCII word characters, its runs)."""
    found = _PIECES.get(needle)
    if found is None:
        runs = tuple(needle.encode("ascii", "replace").translate(_RUN_TABLE).decode("ascii").split())
        found = _PIECES[needle] = (len(runs) == 1 and runs[0] == needle, runs)
    return found


class WordRuns:
    """A text, searched for the prefilter's many needles (171 distinct triggers: a search
    of the whole text each was 8 % of a lint of the torch package). An occurrence of a
    run of ASCII word characters (``[A-Za-z0-9_]``) lies inside one of the text's maximal
    such runs, so it is looked for in the text's distinct runs, joined by spaces (made once,
    a sixth of the torch package's bytes); a needle with other characters is looked for in
    the text only when each of its runs is there."""

    __slots__ = ("text", "_runs")

    def __init__(self, text: str):
        self.text = text
        self._runs: Optional[str] = None

    def runs(self) -> str:
        if self._runs is None:
            data = self.text.encode("ascii", "replace").translate(_RUN_TABLE)
            self._runs = " ".join(set(data.decode("ascii").split()))
        return self._runs

    def holds(self, needle: str) -> bool:
        """Is ``needle`` a substring of the text?"""
        solid, runs = _pieces(needle)
        if solid:
            return needle in self.runs()
        return all(run in self.runs() for run in runs) and needle in self.text

    def holds_word(self, word: str, seen: Dict[str, bool]) -> bool:
        """:func:`holds_word`, after a look at the runs: a word they lack is not there."""
        found = seen.get(word)
        if found is None:
            found = seen[word] = self.holds(word) and holds_word(self.text, word, seen)
        return found


def holds_word(text: str, word: str, seen: Dict[str, bool]) -> bool:
    """Does ``text`` hold ``word`` as a whole word (``\\bword\\b``: what a name or attribute
    spelled so is)? ``str.find`` and a look at each side: forty times faster than the regex."""
    found = seen.get(word)
    if found is None:
        found = False
        size = len(word)
        at = text.find(word)
        while at >= 0:
            before = text[at - 1] if at else " "
            after = text[at + size] if at + size < len(text) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                found = True
                break
            at = text.find(word, at + 1)
        seen[word] = found
    return found


def render_index() -> str:
    """The text of ``_rule_index.py`` for the rules as they are now."""
    import pprint

    rules = [RuleInfo.of(rule).as_data() for rule in all_rules().values()]
    return (
        f'"""Generated by `{REGENERATE}` from the rule classes; do not edit.\n\n'
        "rocmport.registry.rule_infos() reads it only while FINGERPRINT matches the rules' sources.\n"
        '"""\n\n'
        f"FINGERPRINT = {sources_fingerprint()!r}\n\n"
        f"RULES = {pprint.pformat(rules, width=100, sort_dicts=False)}\n"
    )


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render_index()
    if args == ["--check"]:
        current = INDEX_FILE.read_text(encoding="utf-8") if INDEX_FILE.is_file() else ""
        if current != text:
            print(f"{INDEX_FILE} is stale: run `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    if args == ["--write"]:
        INDEX_FILE.write_text(text, encoding="utf-8")
        return 0
    print("usage: python -m rocmport.registry --write | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
