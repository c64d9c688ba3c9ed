"""The command line. It reads flags and configuration, asks discovery for files, hands each
to the engine, and gives the findings to an output format. Nothing below it prints.

Start-up is kept light: nothing here imports LibCST (or the engine) at module level. The
engine loads only when a file needs analysis, so ``--version``, ``rules``, ``rule CODE`` and
a lint answered from the cache never pay for it (``tests/test_startup_imports.py``)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import click

from . import __version__

if TYPE_CHECKING:  # pragma: no cover
    from .config import Settings
    from .reports import FileReport

# The names of rocmport.output.FORMATTERS (tests/test_cli_flags.py keeps the two equal): the
# formats themselves load only when something is printed.
FORMAT_NAMES = ("concise", "full", "json", "github", "sarif")

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split(values: Tuple[str, ...]) -> Tuple[str, ...]:
    out = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return tuple(out)


def _common(func):
    options = [
        # readable=False: a file this user cannot read is an ROC001 finding, not a usage error
        # that stops the run (pre-commit and editors always name files)
        click.argument("paths", nargs=-1, type=click.Path(readable=False)),
        click.option("--select", multiple=True,
                     help="Rule codes or prefixes to enable (comma-separated); replaces the configuration's "
                          "selection and its ignores, as ruff's --select does."),
        click.option("--extend-select", multiple=True, help="Codes to enable on top of the selection."),
        click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable."),
        click.option("--output-format", type=click.Choice(list(FORMAT_NAMES)), default=None,
                     help="How findings are printed (default: concise)."),
        click.option("--output-file", type=click.Path(dir_okay=False), default=None,
                     help="Write findings to this file instead of stdout."),
        click.option("--force-exclude", is_flag=True, default=None,
                     help="Apply exclusions to paths named on the command line (and --stdin-filename) too."),
        click.option("--no-respect-gitignore", is_flag=True, default=False, help="Check files .gitignore lists."),
        click.option("--stdin-filename", default=None,
                     help="Read the source from stdin (whatever paths are given) and name it this."),
        click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="Configuration file (default: the nearest pyproject.toml with [tool.rocmport])."),
        click.option("--scope", type=click.Choice(["all", "source", "tests"]), default=None,
                     help="Which modules to report and fix: all (default), source (not tests) or tests (modules "
                          "that define tests, as their code proves it), for a source pull request and a tests "
                          "pull request made apart."),
        click.option("--prelude-style", type=click.Choice(["auto", "inline", "module"]), default=None,
                     help="Generated prelude: inline block or an imported module (default: auto)."),
        click.option("--prelude-profile", type=click.Choice(["safe", "tuned"]), default=None,
                     help="ROCm inductor set-up: only what prevents hangs (safe), or tuned too."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                     help="Worker processes (default: one per CPU)."),
        click.option("--no-cache", is_flag=True, default=False, help="Neither read nor write the cache."),
        click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
                     help="Cache directory (default: .rocmport_cache at the project root)."),
        click.option("--exit-zero", is_flag=True, default=False,
                     help="Exit 0 even when findings remain (usage and internal errors still exit 2)."),
        click.option("--show-files", is_flag=True, default=False,
                     help="List the files that would be checked, one a line, and exit."),
        click.option("--show-settings", is_flag=True, default=False,
                     help="Print the settings in effect (for the first file) and exit."),
        click.option("-q", "--quiet", is_flag=True, default=False, help="Print findings and nothing else."),
        click.option("-s", "--silent", is_flag=True, default=False,
                     help="Print nothing; the exit status still tells."),
        click.option("-v", "--verbose", is_flag=True, default=False,
                     help="Say on stderr what is happening: configuration, files, timing."),
        click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto",
                     help="Colour in the findings: auto (a terminal, unless NO_COLOR is set; FORCE_COLOR "
                          "turns it on elsewhere), always, never."),
        click.option("--statistics", is_flag=True, default=False,
                     help="Count the findings per rule instead of listing them (fix: those that remain)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _sort_key(finding):
    return finding.sort_key()


class _Run:
    """One lint or fix invocation: its flags, how chatty it may be, where colour goes."""

    def __init__(self, kw: dict):
        self.kw = kw
        self.silent = bool(kw.get("silent"))
        self.quiet = bool(kw.get("quiet")) or self.silent
        self.verbose = bool(kw.get("verbose")) and not self.quiet
        self.started = time.perf_counter()
        self.color = not kw.get("output_file") and color_enabled(sys.stdout, kw.get("color") or "auto")
        self.stdin = _stdin_mode(kw.get("paths") or (), kw.get("stdin_filename"))

    def log(self, message: str) -> None:
        if self.verbose:
            click.echo(f"[rocmport] {message}", err=True)

    def note(self, message: str) -> None:
        """A summary or progress line on stderr (``-q`` drops it)."""
        if not self.quiet:
            click.echo(message, err=True)

    def elapsed(self) -> str:
        return f"{time.perf_counter() - self.started:.2f} s"


def color_enabled(stream, when: str = "auto") -> bool:
    """``--color always`` / ``never`` decide; ``auto``: colour on a terminal only, ``NO_COLOR``
    (any non-empty value) turns it off and ``FORCE_COLOR`` turns it on elsewhere too (NO_COLOR
    wins, as with ruff, whose ``--color`` flag also beats both)."""
    if when != "auto":
        return when == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _stdin_mode(paths: Sequence[str], stdin_filename: Optional[str]) -> bool:
    """ruff's rule: ``--stdin-filename`` always reads stdin (other paths are ignored with a
    warning), and so does a lone ``-``."""
    if stdin_filename is None and "-" not in paths:
        return False
    for path in paths:
        if path != "-":
            click.echo(f"warning: Ignoring file {path} in favor of standard input.", err=True)
    return True


def _settings(paths, select, extend_select, ignore, force_exclude, no_respect_gitignore, config_file,
              prelude_style, prelude_profile, unsafe_fixes=None, stdin_filename=None, stdin=False,
              scope=None) -> "Settings":
    from .config import load_settings, prelude_options, validate_selectors

    if stdin:
        start = Path(stdin_filename).parent if stdin_filename else Path.cwd()
    else:
        start = Path(os.path.commonpath([os.path.abspath(p) for p in paths])) if paths else Path.cwd()
    settings = load_settings(start, Path(config_file) if config_file else None)
    for name, values in (("--select", select), ("--extend-select", extend_select), ("--ignore", ignore)):
        validate_selectors(_split(values), name)
    changes: Dict[str, object] = {}
    if select or extend_select:
        # ruff's layering: the configuration's selection is resolved first (select, then
        # extend-select, then ignore); the command line's applies on top of the result, so a
        # code named by --select or --extend-select is on even when the file ignores it.
        base = _split(select) if select else tuple(sorted(settings.enabled_codes()))
        changes["select"] = base
        changes["extend_select"] = _split(extend_select)
        changes["ignore"] = _split(ignore)
    elif ignore:
        changes["ignore"] = settings.ignore + _split(ignore)
    if force_exclude:
        changes["force_exclude"] = True
    if no_respect_gitignore:
        changes["respect_gitignore"] = False
    if unsafe_fixes:
        changes["unsafe_fixes"] = True
    if scope:
        changes["scope"] = scope
    table = {}
    if prelude_style:
        table["style"] = prelude_style
    if prelude_profile:
        table["profile"] = prelude_profile
    if table:
        changes["prelude"] = prelude_options(table, "command line", settings.prelude)
    return settings.with_overrides(**changes)


def _load(run: _Run, unsafe_fixes=None) -> "Settings":
    from .config import ConfigError

    kw = run.kw
    try:
        settings = _settings(kw["paths"], kw["select"], kw["extend_select"], kw["ignore"], kw["force_exclude"],
                             kw["no_respect_gitignore"], kw["config_file"], kw["prelude_style"],
                             kw["prelude_profile"], unsafe_fixes, kw["stdin_filename"], run.stdin,
                             kw.get("scope"))
    except ConfigError as exc:
        raise _usage(exc)
    run.log(f"configuration: {settings.config_file or 'none found (defaults)'}; project root: {settings.root}")
    output_file = kw.get("output_file")
    if output_file:
        _output_folder(output_file)  # before the run: a path that cannot be written fails at once
    return settings


def _output_folder(output_file: str) -> None:
    """Create the folder ``--output-file`` goes into, as ruff does (``reports/x.sarif``)."""
    parent = os.path.dirname(os.path.abspath(output_file))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        _fail(f"cannot write --output-file {output_file}: {exc.strerror or exc}")


def _fail(message: str) -> "click.exceptions.Exit":
    """An error the user can act on: one line on stderr, exit 2."""
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(EXIT_ERROR)


def _emit(text: str, output_file: Optional[str], color: bool = False) -> None:
    if output_file:
        _output_folder(output_file)
        try:
            with open(output_file, "w", encoding="utf-8", errors="surrogateescape") as handle:
                handle.write(text)  # file names that are not UTF-8: their own bytes
        except OSError as exc:
            _fail(f"cannot write --output-file {output_file}: {exc.strerror or exc}")
    elif text:
        click.echo(text, nl=False, color=color or None)


def _stdin_excluded(settings: "Settings", stdin_filename: Optional[str]) -> bool:
    """``--force-exclude`` applies to the name given with ``--stdin-filename``, as in ruff."""
    if not (settings.force_exclude and stdin_filename):
        return False
    from .discovery import Excluder

    return Excluder(settings).excluded(Path(stdin_filename), False)


def _run(paths: Sequence[str], settings: "Settings", *, fix: bool, stdin_filename: Optional[str],
         jobs: Optional[int] = None, no_cache: bool = False, cache_dir: Optional[str] = None,
         run: Optional[_Run] = None):
    """Check every file; returns (reports, missing paths)."""
    if run is not None and run.stdin:
        from .runner import check_stream

        name = stdin_filename or "-"

        return [check_stream(sys.stdin.buffer, name, settings, fix=fix)], []
    if not paths:
        paths = (".",)
    from .cache import Cache, default_cache_dir
    from .discovery import discover
    from .runner import check_files

    files, missing = discover(paths, settings)
    if run is not None:
        run.log(f"{len(files)} file{'s' if len(files) != 1 else ''} to check")
    cache = None
    if not no_cache:
        cache = Cache(Path(cache_dir) if cache_dir else default_cache_dir(settings), settings)
    progress = None
    if files and not (run is not None and run.quiet):
        from .progress import Progress

        progress = Progress(len(files), sys.stderr, tty=_isatty(sys.stderr))
    reports = check_files(files, settings, fix=fix, jobs=jobs, cache=cache,
                          progress=progress.update if progress is not None else None)
    if progress is not None:
        progress.finish()
    if run is not None:
        engine = "rocmport.engine" in sys.modules
        run.log(f"checked {len(files)} file{'s' if len(files) != 1 else ''} in {run.elapsed()}"
                + ("" if engine or not files else " (all answered from the cache)"))
    return reports, missing


def _report_problems(reports: "List[FileReport]", missing: List[str]) -> bool:
    """Warn on stderr about paths that do not exist and internal errors; True if any."""
    from .output import visible

    tty = _isatty(sys.stderr)
    bad = False
    for path in missing:
        click.echo(f"error: {visible(path, tty)}: no such file or directory", err=True)
        bad = True
    for r in reports:
        if r.internal_error:
            click.echo(f"error: internal error while checking {visible(r.path, tty)}: {r.internal_error}", err=True)
            bad = True
    return bad


def _show(run: _Run, settings: "Settings") -> bool:
    """``--show-files`` / ``--show-settings``: print and say True (the caller exits 0)."""
    kw = run.kw
    if not (kw.get("show_files") or kw.get("show_settings")):
        return False
    from .discovery import discover

    if run.stdin:
        files, missing = [kw.get("stdin_filename") or "-"], []
        if _stdin_excluded(settings, kw.get("stdin_filename")):
            files = []
    else:
        files, missing = discover(kw["paths"] or (".",), settings)
    if missing:
        _report_problems([], missing)
        raise click.exceptions.Exit(EXIT_ERROR)
    if kw.get("show_files"):
        for path in sorted(os.path.abspath(f) if f != "-" else f for f in files):
            click.echo(path)
        return True
    click.echo(_settings_text(settings, files[0] if files else None), nl=False)
    return True


def _settings_text(settings: "Settings", path: Optional[str]) -> str:
    import dataclasses

    lines = [f"Resolved settings for: {os.path.abspath(path) if path and path != '-' else path or '(no file)'}",
             f"Settings path: {settings.config_file or '(none: defaults)'}", ""]
    for field in dataclasses.fields(settings):
        value = getattr(settings, field.name)
        if dataclasses.is_dataclass(value):
            for sub in dataclasses.fields(value):
                lines.append(f"{field.name}.{sub.name} = {getattr(value, sub.name)!r}")
        else:
            lines.append(f"{field.name} = {value!r}")
    enabled = sorted(settings.enabled_codes(path if path and path != "-" else None))
    lines.append(f"enabled rules = {enabled!r}")
    return "\n".join(lines) + "\n"


EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT); SIGTERM gives 143: 128 + the signal, as shells report


class _Main(click.Group):
    """The command group: an unexpected exception is an internal error, one line and exit 2
    (``ROCMPORT_TRACEBACK=1`` shows the traceback); SIGINT / SIGTERM end the run (workers
    stopped) with 128 + the signal."""

    def main(self, *args, **kwargs):
        from .signals import Interrupted, interrupt_on_signals, restore_signals

        previous = interrupt_on_signals()
        for stream in (sys.stdout, sys.stderr):  # file names that are not UTF-8: their own bytes
            try:
                stream.reconfigure(errors="surrogateescape")
            except (AttributeError, ValueError, OSError):  # pragma: no cover - a replaced stream
                pass
        try:
            return super().main(*args, **kwargs)
        except Interrupted as exc:
            sys.stderr.write(f"\nrocmport: interrupted ({signal_name(exc.signum)}); files not yet written were"
                             " left as they were\n")
            sys.exit(exc.exit_code)
        finally:
            restore_signals(previous)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort,
                KeyboardInterrupt, SystemExit):
            raise
        except BrokenPipeError:
            raise
        except Exception as exc:
            if os.environ.get("ROCMPORT_TRACEBACK"):
                raise
            detail = str(exc).splitlines()[0] if str(exc) else ""
            click.echo(f"error: internal error: {type(exc).__name__}{': ' + detail if detail else ''}"
                       " (ROCMPORT_TRACEBACK=1 shows where)", err=True)
            raise click.exceptions.Exit(EXIT_ERROR)


def signal_name(signum: int) -> str:
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:  # pragma: no cover
        return str(signum)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rocmport")
def main() -> None:
    """Port PyTorch and Triton code to AMD ROCm: find what breaks, hangs or slows down there
    and gate it on `is_rocm`, leaving the NVIDIA path as it was."""


def _format(findings, settings: "Settings", reports, run: _Run, output_format: Optional[str],
            summary: bool = True) -> str:
    from .output import FORMATTERS

    terminal = not run.kw.get("output_file") and _isatty(sys.stdout)
    return FORMATTERS[output_format or "concise"](findings, settings.unsafe_fixes, color=run.color, terminal=terminal,
                                                  summary=summary and not run.quiet, **_format_context(reports))


@main.command()
@_common
@click.option("--add-noqa", is_flag=True, default=False,
              help="Add `# noqa: CODE` comments for every finding (Python files), merging with existing ones.")
def lint(**kw):
    """Report findings; change nothing."""
    run = _Run(kw)
    settings = _load(run)
    if _show(run, settings):
        sys.exit(EXIT_OK)
    if kw["add_noqa"] and run.stdin:
        _fail("--add-noqa edits files in place: it cannot be used with stdin")
    if run.stdin and _stdin_excluded(settings, kw["stdin_filename"]):
        sys.stdin.buffer.read()
        run.log(f"{kw['stdin_filename']} is excluded (--force-exclude): not checked")
        reports, missing = [], []
    else:
        reports, missing = _run(kw["paths"], settings, fix=False, stdin_filename=kw["stdin_filename"],
                                jobs=kw["jobs"], no_cache=kw["no_cache"], cache_dir=kw["cache_dir"], run=run)
    findings = sorted((f for r in reports for f in r.findings), key=_sort_key)
    problems = _report_problems(reports, missing)
    if kw["add_noqa"]:
        sys.exit(EXIT_ERROR if _add_noqa(run, reports) or problems else EXIT_OK)
    if not run.silent:
        if kw["statistics"]:
            text = _statistics(findings, settings, run)
        else:
            text = _format(findings, settings, reports, run, kw["output_format"], summary=not (missing and not findings))
        _emit(text, kw["output_file"], run.color)
    if problems:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if findings and not kw["exit_zero"] else EXIT_OK)


def _statistics(findings, settings: "Settings", run: _Run) -> str:
    from .output import statistics

    return statistics(findings, settings.unsafe_fixes, as_json=run.kw["output_format"] == "json",
                      summary=not run.quiet)


def _add_noqa(run: _Run, reports: "List[FileReport]") -> bool:
    """Write the directives; returns True when a file could not be written."""
    from .noqa import add_noqa, is_python_file
    from .source import read_regular
    added = skipped = 0
    failed = False
    for r in reports:
        if not r.findings:
            continue
        if not is_python_file(r.path) or r.original is None:
            skipped += len(r.findings)
            continue
        result = add_noqa(r.original, r.findings)
        skipped += result.skipped
        if result.data is None:
            continue
        try:
            if read_regular(r.path) != r.original:
                click.echo(f"warning: {r.path} changed while it was checked: left alone", err=True)
                continue
            from .writer import write_atomic

            write_atomic(r.path, result.data)
        except OSError as exc:
            click.echo(f"error: {r.path}: cannot write: {exc.strerror or exc}", err=True)
            failed = True
            continue
        added += result.added
        run.log(f"{r.path}: {result.added} noqa directive{'s' if result.added != 1 else ''}")
    run.note(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
    if skipped:
        run.note(f"{skipped} finding{'s' if skipped != 1 else ''} could not get one (notebooks and non-Python "
                 "files are not edited; nor are lines inside a multi-line string or ending in a backslash).")
    return failed


@main.command()
@_common
@click.option("--write", is_flag=True, help="Apply the fixes in place (default: print a diff).")
@click.option("--unsafe-fixes", is_flag=True, default=None, help="Also apply fixes marked unsafe.")
@click.option("--fix-only", is_flag=True, default=False,
              help="Apply (or show) fixes; do not report what is left, and exit 0 (see --exit-non-zero-on-fix).")
@click.option("--exit-non-zero-on-fix", is_flag=True, default=False,
              help="Exit 1 when a file was fixed, even if nothing is left to report.")
@click.option("--pr-body", type=click.Path(dir_okay=False), default=None,
              help="Write the pull request's description (Markdown) to this file: per rule what changed where, "
                   "why on ROCm, what is left for a person, how to verify and how to opt out.")
def fix(**kw):
    """Show the fixes as a unified diff, or apply them with --write."""
    run = _Run(kw)
    write, fix_only, output_format, output_file = kw["write"], kw["fix_only"], kw["output_format"], kw["output_file"]
    settings = _load(run, kw["unsafe_fixes"])
    if _show(run, settings):
        sys.exit(EXIT_OK)
    if run.stdin and kw["pr_body"]:
        _fail("--pr-body describes the files a fix changes: it cannot be used with stdin")
    if run.stdin and _stdin_excluded(settings, kw["stdin_filename"]):
        sys.stdout.buffer.write(sys.stdin.buffer.read())  # excluded: passed through unchanged, as ruff does
        sys.stdout.flush()
        sys.exit(EXIT_OK)
    reports, missing = _run(kw["paths"], settings, fix=True, stdin_filename=kw["stdin_filename"], jobs=kw["jobs"],
                            no_cache=kw["no_cache"], cache_dir=kw["cache_dir"], run=run)
    changed = [r for r in reports if r.fixed is not None or r.extra_files]
    remaining = sorted((f for r in reports for f in r.findings), key=_sort_key)
    fixed_count = sum(r.fixes_applied for r in reports)
    problems = _report_problems(reports, missing)

    def status(fixed_something: bool, diff_mode: bool = False) -> int:
        if problems:
            return EXIT_ERROR
        if kw["exit_zero"]:
            return EXIT_OK
        if diff_mode and fixed_something:
            return EXIT_FINDINGS
        if fixed_something and kw["exit_non_zero_on_fix"]:
            return EXIT_FINDINGS
        return EXIT_FINDINGS if remaining and not fix_only else EXIT_OK

    if run.stdin:
        r = reports[0]
        sys.stdout.buffer.write(r.fixed if r.fixed is not None else (r.original or b""))
        sys.stdout.flush()
        if remaining and not fix_only and not run.silent:
            from .output import FORMATTERS

            click.echo(FORMATTERS["concise"](remaining, settings.unsafe_fixes, summary=not run.quiet,
                                             terminal=_isatty(sys.stderr)), err=True,
                       nl=False)
        sys.exit(status(r.fixed is not None))
    from . import patch

    def pr_body(done) -> None:
        if kw["pr_body"]:
            from .prbody import render as render_pr_body

            _emit(render_pr_body(done, remaining, settings, written=write), kw["pr_body"])
            run.note(f"Wrote the pull request's description to {kw['pr_body']}")

    manual = 0 if fix_only else sum(1 for f in remaining if not f.code.startswith("ROC0"))
    if not write:
        if not run.silent:
            if kw["statistics"]:  # what would remain, per rule, instead of the diff (ruff's --statistics)
                _emit("" if fix_only else _statistics(remaining, settings, run), output_file, run.color)
            else:
                _emit(patch.render(changed), output_file)
        files = sum(1 for r in changed if r.fixed is not None)
        for line in patch.summary(fixed_count, files, manual, patch.created(changed), written=False):
            run.note(line)
        pr_body(changed)
        sys.exit(status(bool(changed), diff_mode=True))
    new_files = patch.created(changed)
    from .writer import write_atomic

    written = 0
    done = []
    failed = set()
    for r in sorted(changed, key=lambda r: bool(r.needs_written)):  # what others import is written first
        try:
            lost = [p for p in r.needs_written if p in failed]
            if lost:
                raise OSError(f"it imports the gate of {lost[0]}, which could not be written")
            for extra_path, data in r.extra_files.items():
                write_atomic(extra_path, data)
            if r.fixed is not None:
                write_atomic(r.path, r.fixed, expected=r.original)
                written += 1
            done.append(r)
        except OSError as exc:
            click.echo(f"error: {r.path}: cannot write: {exc.strerror or exc}", err=True)
            failed.add(r.path)
            problems = True
            fixed_count -= r.fixes_applied if r.fixed is not None else 0  # never report lost fixes
    if not fix_only and not run.silent and (remaining or output_file or kw["statistics"]):
        text = (_statistics(remaining, settings, run) if kw["statistics"]
                else _format(remaining, settings, reports, run, output_format))
        _emit(text, output_file, run.color)
    for line in patch.summary(fixed_count, written, manual, new_files, written=True):
        run.note(line)
    pr_body(done)
    sys.exit(status(bool(written or any(r.extra_files for r in changed))))


def _format_context(reports: "Sequence[FileReport]") -> dict:
    """What the output formats may need beyond the findings: the text each finding's positions
    refer to (the fixed bytes after ``fix --write``, stdin's bytes for ``-``), read from disk
    for anything else."""
    from .output import decode_source, read_from_disk

    texts = {r.path: (r.fixed if r.fixed is not None else r.original) for r in reports}

    def read_source(path: str) -> Optional[str]:
        data = texts.get(path)
        return decode_source(data) if data is not None else read_from_disk(path)

    return {"read_source": read_source}


def _usage(exc: Exception) -> click.exceptions.Exit:
    click.echo(f"error: {exc}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


@main.command()
@click.argument("code")
def rule(code):
    """Print a rule's documentation."""
    from .registry import rule_infos

    rules = rule_infos()
    if code.upper() not in rules:
        click.echo(f"error: unknown rule {code!r} (`rocmport rules` lists them)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(rules[code.upper()].doc(), nl=False)


@main.command()
def rules():
    """List every rule, one a line."""
    from .registry import rule_infos

    for code, r in rule_infos().items():
        fix = r.FIX_APPLICABILITY.value if r.FIX_APPLICABILITY else "no fix"
        default = "" if r.DEFAULT_ENABLED else " (off by default)"
        click.echo(f"{code}  {r.NAME:<38} {fix:<13} {r.SUMMARY}{default}")


@main.command("prelude")
@click.option("--style", type=click.Choice(["inline", "module"]), default="inline",
              help="inline: the block pasted into a file; module: the generated module.")
@click.option("--profile", type=click.Choice(["safe", "tuned"]), default=None)
@click.option("--inference-only", is_flag=True, default=None, help="Also turn on freezing (tuned set-up).")
@click.option("--compile-guard", is_flag=True, default=None, help="Wrap torch.compile on ROCm.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None)
def prelude_command(style, profile, inference_only, compile_guard, config_file):
    """Print the generated prelude (to paste into an entry point)."""
    from . import prelude
    from .config import ConfigError, load_settings, prelude_options

    try:
        settings = load_settings(Path.cwd(), Path(config_file) if config_file else None)
        table = {k: v for k, v in (("profile", profile), ("inference-only", inference_only),
                                   ("compile-guard", compile_guard)) if v is not None}
        options = prelude_options(table, "command line", settings.prelude)
    except ConfigError as exc:
        raise _usage(exc)
    if options.rng_patch is None:  # the RNG patch where the project may run on torch < 2.10
        from dataclasses import replace

        from .house import may_run_on_torch_before

        options = replace(options, rng_patch=may_run_on_torch_before(Path.cwd(), (2, 10)))
    if style == "module":
        click.echo(prelude.render_module(options), nl=False)
    else:
        click.echo(prelude.render_inline(prelude.DEFAULT_GATE, prelude.PARTS, options), nl=False)


@main.command("setup")
@click.argument("entries", nargs=-1)
@click.option("--write", is_flag=True, help="Add the set-up to the entry points (default: print a diff).")
@click.option("--shell", is_flag=True, help="Print the set-up as shell exports (launch scripts, Dockerfile ENV).")
@click.option("--all", "show_all", is_flag=True, help="List every candidate, not only the best ranked.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None)
def setup_command(entries, write, shell, show_all, config_file):
    """Put the process-wide ROCm set-up where a program starts.

    ENTRIES are files or `module:function` console-script targets. Without any, list the
    candidates, ranked by the evidence that they start a program (console scripts, launch
    scripts, Makefiles, Dockerfiles and CI files that run them, README commands, a __main__
    guard with a command-line parser). The set-up holds only the settings that change
    something for the program (none for one that never compiles)."""
    from . import entrypoints, patch
    from .config import ConfigError, load_settings
    from .discovery import discover
    from .inputs import check_path

    try:
        settings = load_settings(Path.cwd(), Path(config_file) if config_file else None)
    except ConfigError as exc:
        raise _usage(exc)
    root = Path(settings.root)
    if shell and not entries:
        click.echo(entrypoints.shell_exports(settings.prelude), nl=False)
        return
    files, _ = discover((".",), settings)
    if not entries:
        found = entrypoints.rank(files, root)
        if not found:
            click.echo("No entry point found: name one, `rocmport setup path/to/train.py`.", err=True)
            sys.exit(EXIT_OK)
        click.echo("Entry points, most evidence first (give one or more to `rocmport setup`, or list them as"
                   " `entry-points` in [tool.rocmport]):")
        shown = found if show_all else found[:entrypoints.SHOWN]
        for c in shown:
            name = f"{c.target} ({c.path})" if c.target else c.path
            click.echo(f"  {name}  [{'; '.join(c.evidence[:3])}{'; ...' if len(c.evidence) > 3 else ''}]")
        if len(found) > len(shown):
            click.echo(f"  and {len(found) - len(shown)} others (`rocmport setup --all` lists them)")
        return
    from .gating import rng_note, setup_plan
    from .source import read_regular

    python_files = [f for f in files if f.endswith(".py")]
    paths = []
    for spec in entries:
        path = entrypoints.resolve(spec, root)
        if path is None:
            click.echo(f"error: {spec}: no such file or console-script module", err=True)
            sys.exit(EXIT_ERROR)
        paths.append(str(path))
    rel = tuple(os.path.relpath(os.path.abspath(p), os.path.abspath(settings.root)).replace(os.sep, "/")
                for p in paths)
    only = settings.with_overrides(entry_points=rel, select=("ROC001",), extend_select=(), ignore=())
    reports = []
    skipped = False
    for path in paths:
        try:
            text = read_regular(path).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
        plan = setup_plan(text, path, settings, files=python_files) if text is not None else None
        if shell:  # the program's own settings, as `export` lines
            if plan is not None and plan.wanted is not None:
                click.echo(f"# {os.path.relpath(path)}")
                click.echo(entrypoints.program_exports(plan.wanted), nl=False)
            continue
        note = rng_note(plan, settings, path) if plan is not None else None
        if note:
            click.echo(f"{path}: {note}.", err=True)
        if plan is not None and plan.options is None and plan.reason != "it does not parse":
            click.echo(f"{path}: {plan.reason}.", err=True)
            skipped = True
            continue
        reports.append(check_path(path, only, fix=True))
    if shell:
        return
    changed = [r for r in reports if r.fixed is not None]
    failed = False
    for r in reports:  # an entry point that cannot be read or parsed: said, never "has the set-up"
        for f in r.findings:
            if f.code == "ROC001":
                click.echo(f"error: {r.path}: {f.message}", err=True)
                failed = True
    if not write:
        _emit(patch.render(changed), None)
    else:
        from .writer import write_atomic

        for r in list(changed):
            try:
                write_atomic(r.path, r.fixed, expected=r.original)
            except OSError as exc:
                click.echo(f"error: {r.path}: cannot write: {exc.strerror or exc}", err=True)
                changed.remove(r)
                failed = True
    verb = "Added" if write else "Would add"
    for r in changed:
        click.echo(f"{verb} the ROCm set-up to {r.path}", err=True)
    if not changed and not failed and not skipped:
        click.echo("The entry points have the set-up already.", err=True)
    # as `fix`: 2 on an error, 1 when a diff was shown (something would change), else 0
    sys.exit(EXIT_ERROR if failed else EXIT_FINDINGS if changed and not write else EXIT_OK)


@main.command()
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text",
              help="text (default) or json.")
@click.option("--output-file", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file instead of stdout.")
def doctor(output_format, output_file):
    """Inspect this Python environment: torch build, inductor/dynamo settings, red-flag
    environment variables. Exit 1 on a red flag, 2 without torch."""
    from .doctor import run as run_doctor

    text, status = run_doctor(output_format)
    _emit(text, output_file)
    sys.exit(status)


@main.command()
def server():
    """Run the language server (LSP over stdio) for editors; needs the `server` extra."""
    try:
        from .server import main as serve
    except ImportError as exc:
        if getattr(exc, "name", "") and exc.name.split(".")[0] in ("pygls", "lsprotocol"):
            _fail("`rocmport server` needs pygls (the `server` extra): pip install 'pygls>=2,<3'")
        raise
    serve()
