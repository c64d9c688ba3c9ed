"""The command line. It reads flags and configuration, asks discovery for files, hands each
to the engine, and gives the findings to an output format. Nothing below it prints."""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import click

from . import __version__, prelude
from .config import ConfigError, Settings, load_settings, prelude_options, validate_selectors
from .discovery import discover
from .cache import Cache, default_cache_dir
from .engine import FileReport
from .runner import check_files, check_stream
from .findings import Finding
from .output import FORMATTERS
from .registry import all_rules
from .writer import write_atomic

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split(values: Tuple[str, ...]) -> Tuple[str, ...]:
    out = []
    for v in values:
        out.extend(p.strip() for p in v.split(",") if p.strip())
    return tuple(out)


def _common(func):
    options = [
        click.argument("paths", nargs=-1, type=click.Path()),
        click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated)."),
        click.option("--extend-select", multiple=True, help="Codes to enable on top of the selection."),
        click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable."),
        click.option("--output-format", type=click.Choice(list(FORMATTERS)), default=None,
                     help="How findings are printed (default: concise)."),
        click.option("--output-file", type=click.Path(dir_okay=False), default=None,
                     help="Write findings to this file instead of stdout."),
        click.option("--force-exclude", is_flag=True, default=None,
                     help="Apply exclusions to paths named on the command line too."),
        click.option("--no-respect-gitignore", is_flag=True, default=False, help="Check files .gitignore lists."),
        click.option("--stdin-filename", default=None, help="The name of the file read from stdin."),
        click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="Configuration file (default: the nearest pyproject.toml with [tool.rocmport])."),
        click.option("--prelude-style", type=click.Choice(["auto", "inline", "module"]), default=None,
                     help="Generated prelude: inline block or an imported module (default: auto)."),
        click.option("--prelude-profile", type=click.Choice(["safe", "tuned"]), default=None,
                     help="ROCm inductor set-up: only what prevents hangs (safe), or tuned too."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                     help="Worker processes (default: one per CPU)."),
        click.option("--no-cache", is_flag=True, default=False, help="Neither read nor write the cache."),
        click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
                     help="Cache directory (default: .rocmport_cache at the project root)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _settings(paths, select, extend_select, ignore, force_exclude, no_respect_gitignore, config_file,
              prelude_style, prelude_profile, unsafe_fixes=None, stdin_filename=None) -> Settings:
    start = Path(stdin_filename).parent if stdin_filename and paths == ("-",) else (
        Path(os.path.commonpath([os.path.abspath(p) for p in paths])) if paths and "-" not in paths else Path.cwd())
    settings = load_settings(start, Path(config_file) if config_file else None)
    for name, values in (("--select", select), ("--extend-select", extend_select), ("--ignore", ignore)):
        validate_selectors(_split(values), name)
    changes = {}
    if select:
        changes["select"] = _split(select)
    if extend_select:
        changes["extend_select"] = settings.extend_select + _split(extend_select)
    if ignore:
        changes["ignore"] = settings.ignore + _split(ignore)
    if force_exclude:
        changes["force_exclude"] = True
    if no_respect_gitignore:
        changes["respect_gitignore"] = False
    if unsafe_fixes:
        changes["unsafe_fixes"] = True
    table = {}
    if prelude_style:
        table["style"] = prelude_style
    if prelude_profile:
        table["profile"] = prelude_profile
    if table:
        changes["prelude"] = prelude_options(table, "command line", settings.prelude)
    return settings.with_overrides(**changes)


def _emit(text: str, output_file: Optional[str]) -> None:
    if output_file:
        Path(output_file).write_bytes(text.encode("utf-8", "surrogateescape"))  # undecodable file names
    else:
        click.echo(text, nl=False)


def _run(paths: Sequence[str], settings: Settings, *, fix: bool, stdin_filename: Optional[str],
         jobs: Optional[int] = None, no_cache: bool = False, cache_dir: Optional[str] = None):
    """Check every file; returns (reports, missing paths)."""
    if not paths:
        paths = (".",)
    if "-" in paths:
        name = stdin_filename or "-"
        return [check_stream(sys.stdin.buffer, name, settings, fix=fix)], []
    files, missing = discover(paths, settings)
    cache = None
    if not no_cache:
        cache = Cache(Path(cache_dir) if cache_dir else default_cache_dir(settings), settings)
    if sys.stderr.isatty() and len(files) >= 50:
        with click.progressbar(length=len(files), file=sys.stderr, label="rocmport") as bar:
            reports = check_files(files, settings, fix=fix, jobs=jobs, cache=cache, progress=bar.update)
    else:
        reports = check_files(files, settings, fix=fix, jobs=jobs, cache=cache)
    return reports, missing


def _report_problems(reports: List[FileReport], missing: List[str]) -> bool:
    """Warn on stderr about paths that do not exist and internal errors; True if any."""
    bad = False
    for path in missing:
        click.echo(f"error: {path}: no such file or directory", err=True)
        bad = True
    for r in reports:
        if r.internal_error:
            click.echo(f"error: internal error while checking {r.path}: {r.internal_error}", err=True)
            bad = True
    return bad


EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT); SIGTERM gives 143: 128 + the signal, as shells report


class _Main(click.Group):
    """The group, with SIGINT / SIGTERM ending the run (workers stopped) with 128 + signal."""

    def main(self, *args, **kwargs):
        from .runner import Interrupted, interrupt_on_signals, restore_signals

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


@main.command()
@_common
def lint(paths, select, extend_select, ignore, output_format, output_file, force_exclude, no_respect_gitignore,
         stdin_filename, config_file, prelude_style, prelude_profile, jobs, no_cache, cache_dir):
    """Report findings; change nothing."""
    try:
        settings = _settings(paths, select, extend_select, ignore, force_exclude, no_respect_gitignore,
                             config_file, prelude_style, prelude_profile, stdin_filename=stdin_filename)
    except ConfigError as exc:
        raise _usage(exc)
    reports, missing = _run(paths, settings, fix=False, stdin_filename=stdin_filename, jobs=jobs,
                            no_cache=no_cache, cache_dir=cache_dir)
    findings = sorted((f for r in reports for f in r.findings), key=Finding.sort_key)
    _emit(FORMATTERS[output_format or "concise"](findings, settings.unsafe_fixes, **_format_context(reports)),
          output_file)
    if _report_problems(reports, missing):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if findings else EXIT_OK)


@main.command()
@_common
@click.option("--write", is_flag=True, help="Apply the fixes in place (default: print a diff).")
@click.option("--unsafe-fixes", is_flag=True, default=None, help="Also apply fixes marked unsafe.")
def fix(paths, select, extend_select, ignore, output_format, output_file, force_exclude, no_respect_gitignore,
        stdin_filename, config_file, prelude_style, prelude_profile, jobs, no_cache, cache_dir, write, unsafe_fixes):
    """Show the fixes as a unified diff, or apply them with --write."""
    try:
        settings = _settings(paths, select, extend_select, ignore, force_exclude, no_respect_gitignore,
                             config_file, prelude_style, prelude_profile, unsafe_fixes, stdin_filename)
    except ConfigError as exc:
        raise _usage(exc)
    reports, missing = _run(paths, settings, fix=True, stdin_filename=stdin_filename, jobs=jobs,
                            no_cache=no_cache, cache_dir=cache_dir)
    stdin_mode = "-" in paths
    changed = [r for r in reports if r.fixed is not None or r.extra_files]
    remaining = sorted((f for r in reports for f in r.findings), key=Finding.sort_key)
    fixed_count = sum(r.fixes_applied for r in reports)
    problems = _report_problems(reports, missing)
    if stdin_mode:
        r = reports[0]
        sys.stdout.buffer.write(r.fixed if r.fixed is not None else (r.original or b""))
        sys.stdout.flush()
        if remaining:
            click.echo(FORMATTERS["concise"](remaining, settings.unsafe_fixes), err=True, nl=False)
        sys.exit(EXIT_ERROR if problems else (EXIT_FINDINGS if remaining else EXIT_OK))
    if not write:
        diff = "".join(_diff(r) for r in changed)
        _emit(diff, output_file)
        if fixed_count:
            click.echo(f"Would fix {fixed_count} finding{'s' if fixed_count != 1 else ''} in {len(changed)} "
                       f"file{'s' if len(changed) != 1 else ''} (run with --write to apply).", err=True)
        if remaining:
            click.echo(f"{len(remaining)} finding{'s' if len(remaining) != 1 else ''} would remain"
                       " (`rocmport lint` lists them).", err=True)
        sys.exit(EXIT_ERROR if problems else (EXIT_FINDINGS if (changed or remaining) else EXIT_OK))
    written = 0
    for r in changed:
        try:
            for extra_path, data in r.extra_files.items():
                write_atomic(extra_path, data)
            if r.fixed is not None:
                write_atomic(r.path, r.fixed, expected=r.original)
                written += 1
        except OSError as exc:
            click.echo(f"error: {r.path}: cannot write: {exc.strerror or exc}", err=True)
            problems = True
            fixed_count -= r.fixes_applied if r.fixed is not None else 0  # never report lost fixes
            r.findings.extend(f for f in [])  # findings stay reported below
    if remaining or output_file:
        _emit(FORMATTERS[output_format or "concise"](remaining, settings.unsafe_fixes, **_format_context(reports)),
              output_file)
    click.echo(f"Fixed {fixed_count} finding{'s' if fixed_count != 1 else ''} in {written} "
               f"file{'s' if written != 1 else ''}.", err=True)
    sys.exit(EXIT_ERROR if problems else (EXIT_FINDINGS if remaining else EXIT_OK))


def _diff(report: FileReport) -> str:
    out = []
    for extra_path, data in report.extra_files.items():
        try:
            old = Path(extra_path).read_bytes().decode("utf-8", "replace")
            old_name = extra_path
        except OSError:
            old, old_name = "", "/dev/null"
        out.append(_unified(old, data.decode("utf-8", "replace"), old_name, extra_path))
    if report.fixed is not None:
        out.append(_unified(report.original.decode("utf-8", "replace"), report.fixed.decode("utf-8", "replace"),
                            report.path, report.path))
    return "".join(out)


def _unified(old: str, new: str, old_name: str, new_name: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=old_name, tofile=new_name)
    text = ""
    for line in lines:
        text += line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
    return text


def _format_context(reports: Sequence[FileReport]) -> dict:
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
    rules = all_rules()
    if code.upper() not in rules:
        click.echo(f"error: unknown rule {code!r} (`rocmport rules` lists them)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(rules[code.upper()].doc(), nl=False)


@main.command()
def rules():
    """List every rule, one a line."""
    for code, r in all_rules().items():
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
    try:
        settings = load_settings(Path.cwd(), Path(config_file) if config_file else None)
        table = {k: v for k, v in (("profile", profile), ("inference-only", inference_only),
                                   ("compile-guard", compile_guard)) if v is not None}
        options = prelude_options(table, "command line", settings.prelude)
    except ConfigError as exc:
        raise _usage(exc)
    if style == "module":
        click.echo(prelude.render_module(options), nl=False)
    else:
        click.echo(prelude.render_inline(prelude.DEFAULT_GATE, prelude.PARTS, options), nl=False)


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
