"""The rule registry: every ``RULES`` list of every module in the ``codemods`` package."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Dict, List, Type

import codemods
from codemods.base import Rule


@functools.lru_cache(maxsize=None)
def all_rules() -> Dict[str, Type[Rule]]:
    rules: Dict[str, Type[Rule]] = {}
    for info in sorted(pkgutil.iter_modules(codemods.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"codemods.{info.name}")
        for rule in getattr(module, "RULES", ()):
            if rule.CODE in rules and rules[rule.CODE] is not rule:
                raise RuntimeError(f"rule code {rule.CODE} defined twice")
            rules[rule.CODE] = rule
    return dict(sorted(rules.items()))


def visitor_rules() -> List[Type[Rule]]:
    """Rules that run on a tree (all but the ROC0xx ones that the engine reports)."""
    return [r for code, r in all_rules().items() if not code.startswith("ROC0")]


def get(code: str) -> Type[Rule]:
    return all_rules()[code.upper()]
