"""flake8 plugin: ``flake8 --select ROC`` reports rocmport's findings (never fixes).

Registered as the ``ROC`` entry point of ``flake8.extension``. flake8 hands the plugin the
file name and its decoded lines; the plugin re-encodes them with the file's own encoding
(cookie, else UTF-8), so the engine sees the same bytes it would read from disk, and runs
rocmport's engine on them under the ``[tool.rocmport]`` configuration found from the file.

Suppression is flake8's: ``# noqa`` and ``# noqa: ROC101`` behave as flake8 users expect
(the engine honours the same comments, with the same prefix matching, and flake8 applies
its own on top), ``# flake8: noqa`` skips the file, and flake8's ``--select`` /
``--extend-ignore`` / ``per-file-ignores`` filter the codes. ``# rocmport: noqa`` still
silences a whole file. With ``--disable-noqa`` the engine sees the file with its ``noqa``
comments neutralised (same length, comments only), so every finding is reported.

Loading it costs next to nothing: this module imports nothing heavy, and when flake8's
selection keeps no ROC code (``flake8 --select E``) the engine is never imported. Nor is it
for a Python file that holds none of the enabled rules' trigger words (most files that never
mention torch or Triton): the rules' ``TRIGGERS`` and ``WORDS`` come from the light rule index
(``rocmport.registry.may_report``), and such a file could only get ROC001, for a syntax that
CPython accepts (flake8 has parsed it) and LibCST does not; ``rocmport lint`` still says so.
``benchmarks/flake8_cost.py`` measures it.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import tokenize
from pathlib import Path
from typing import Iterator, List, Sequence, Tuple

from . import __version__
from .source import encode_lines


@functools.lru_cache(maxsize=64)
def _settings_for(directory: str):
    from .config import ConfigError, Settings, load_settings

    try:
        return load_settings(Path(directory))
    except ConfigError:
        return Settings()


def _without_noqa(lines: Sequence[str]) -> List[str]:
    """``lines`` with ``noqa`` in comments spelled ``n0qa``: columns and code unchanged."""
    out = list(lines)
    try:
        for tok in tokenize.generate_tokens(iter(lines).__next__):
            if tok.type == tokenize.COMMENT and re.search("noqa", tok.string, re.I):
                row, col = tok.start
                line = out[row - 1]
                comment = re.sub("(?i)noqa", lambda m: m.group(0)[0] + "0" + m.group(0)[2:], tok.string)
                out[row - 1] = line[:col] + comment + line[col + len(tok.string):]
    except (tokenize.TokenError, SyntaxError, StopIteration):
        pass
    return out


def _roc_selected(options) -> bool:
    """Whether flake8's ``--select``/``--ignore`` (and their ``extend-`` forms, from the command
    line or the configuration) keep any rocmport code. flake8 runs every plugin and filters
    the results afterwards; a plugin that knows nothing it reports will be shown can skip its
    work. When in doubt (an older flake8), it runs."""
    try:
        from flake8.style_guide import Decision, DecisionEngine

        with _OwnPath():
            from .registry import rule_infos

            infos = rule_infos()
        engine = DecisionEngine(options)
        return any(engine.decision_for(code) is Decision.Selected for code in infos)
    except Exception:  # pragma: no cover - flake8 internals moved: run as before
        return True


class _OwnPath:
    """Imports inside resolve rocmport's rule package from beside this file: under
    ``python -m flake8`` the working directory comes first on sys.path, and a package of the
    user's named like rocmport's own must not be imported (and run) instead."""

    def __enter__(self):
        self.home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        sys.path.insert(0, self.home)

    def __exit__(self, *exc):
        sys.path.remove(self.home)


def _inputs():
    """rocmport's entry for one file (``rocmport.inputs``), the engine and its rule package
    imported from beside this file (see ``_OwnPath``)."""
    if "rocmport.inputs" not in sys.modules:
        with _OwnPath():
            from . import inputs  # noqa: F401
    return sys.modules["rocmport.inputs"]


def _nothing_to_find(lines: Sequence[str], path: str, settings) -> bool:
    """True for a Python file in which no enabled rule can match (the engine's first
    prefilter, from the light index): flake8 parsed it, so the engine would only parse it
    again. Notebooks and the shell/YAML/Dockerfile kinds go to the engine as before."""
    from .filekinds import HEAD_BYTES, file_kind
    from .registry import may_report

    if "rocmport.analysis.prescan" in sys.modules:  # the prefilter switched off (tests): no shortcut
        if not sys.modules["rocmport.analysis.prescan"].PREFILTER["enabled"]:
            return False
    text = "".join(lines)
    kind = file_kind(path, text[:HEAD_BYTES].encode("utf-8", "surrogateescape"))
    if kind not in (None, "python"):
        return False
    return not may_report(text, settings.enabled_codes(path))


class Plugin:
    """flake8 ``tree``-less checker: yields ``(row, column0, "ROCnnn message", type)``."""

    name = "rocmport"
    version = __version__
    disable_noqa = False
    selected = True  # False when flake8's selection leaves out every ROC code

    @classmethod
    def parse_options(cls, options) -> None:
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))
        cls.selected = _roc_selected(options)

    def __init__(self, tree, filename: str, lines: List[str]):
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        if not self.selected:
            return  # `flake8 --select E` and friends: the engine is never imported

        path = self.filename if self.filename not in ("stdin", "-", None) else "-"
        directory = os.path.dirname(os.path.abspath(path)) if path != "-" else os.getcwd()
        settings = _settings_for(directory)
        if _nothing_to_find(self.lines, path, settings):
            return  # the engine (and LibCST) is not imported for it
        check_bytes = _inputs().check_bytes
        lines = _without_noqa(self.lines) if self.disable_noqa else self.lines
        report = check_bytes(encode_lines(lines), path, settings)
        if report.internal_error:
            first = report.internal_error.splitlines()[0]
            yield 1, 0, f"ROC002 rocmport internal error: {first}", type(self)
        for f in report.findings:
            yield f.start.row, f.start.column - 1, f"{f.code} {f.message}", type(self)
