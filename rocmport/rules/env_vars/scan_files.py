"""ROC6xx in files that are not Python: shell scripts, Dockerfiles, YAML and ``.env`` files.

A pure, line-based scanner (no YAML or shell dependency): :func:`kind_for` says whether a
file is one of these, :func:`scan` returns display-only findings at the line that sets the
variable. Comments are not findings. rocmport never rewrites these files.

- shell (``.sh``, ``.bash``, ``.zsh``, or a ``#!`` line naming a shell): ``export X=1``,
  ``X=1 cmd``, ``env X=1 cmd``, ``declare -x X=1``, ``docker run -e X=1``, ``${X:-1}``;
- Dockerfile (``Dockerfile``, ``*.Dockerfile``, ``Dockerfile.*``, ``Containerfile``):
  ``ENV X=1``, ``ENV X 1``, several variables and continuation lines, and ``RUN`` commands;
- YAML (``.yml``, ``.yaml``): ``env:`` / ``environment:`` maps (GitHub workflows, compose),
  Kubernetes ``env: - name: X  value: "1"`` lists, compose ``- X=1`` lists, and the shell
  of ``run:`` steps;
- ``.env`` files (``.env``, ``.env.*``, ``*.env``): ``X=1``, ``export X=1``.
"""

from __future__ import annotations

import re
from typing import FrozenSet, Iterator, List, Optional, Tuple

from rocmport import suppression
from rocmport.filekinds import env_kind as kind_for  # the one file-kind decision
from rocmport.findings import Applicability, Finding, Fix, Position
from rocmport.source import LineIndex

from .common import (ARCH_LIST_VAR, AUTOTUNE_VARS, BACKEND_VARS, CUDAGRAPH_VARS, MESSAGES, PAIR_VARS, ROCM_ARCH_VAR,
                     ROCM_BUILD_WORD, ROCM_VALUES, UNKNOWN_VALUE_MESSAGES, classify, nvidia_arch_only)
from .env_cuda_and_hip_visible_devices import VisibleDevicesBoth, removes
from .env_cuda_arch_list_without_rocm_arch import ArchListWithoutRocmArch
from .env_cudagraphs import CudagraphsEnv
from .env_gemm_backends import GemmBackendsEnv
from .env_max_autotune import MaxAutotuneEnv

WATCHED = frozenset(AUTOTUNE_VARS + CUDAGRAPH_VARS + BACKEND_VARS) | PAIR_VARS
# The rules' names and messages live with the rules (rocmport.rules.env_vars), for every file kind.
NAMES = {rule.CODE: rule.NAME for rule in (MaxAutotuneEnv, CudagraphsEnv, GemmBackendsEnv, VisibleDevicesBoth,
                                            ArchListWithoutRocmArch)}
KIND_WORDS = {"shell": "a shell script", "dockerfile": "a Dockerfile", "yaml": "a YAML file",
              "dotenv": "an .env file"}

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\+?=")
_NEWLINE = re.compile(r"\r\n|\r|\n")

# (row, start column, end column (0-based, exclusive, in code points), variable, value or None)
Hit = Tuple[int, int, int, str, Optional[str]]


# ------------------------------------------------------------------------------------------
# Values
# ------------------------------------------------------------------------------------------

_DEFAULT_EXPANSION = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=](?P<default>[^}$`]*)\}$")


def shell_value(word: str) -> Optional[str]:
    """The value of a shell word (quotes removed), or None when it expands at run time.
    ``${X:-1}`` gives its default."""
    out = []
    expands = False
    i = 0
    while i < len(word):
        c = word[i]
        if c == "'":
            j = word.find("'", i + 1)
            j = len(word) if j == -1 else j
            out.append(word[i + 1:j])
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            while j < len(word) and word[j] != '"':
                if word[j] == "\\" and j + 1 < len(word):
                    out.append(word[j + 1])
                    j += 2
                    continue
                if word[j] in "$`":
                    expands = True
                out.append(word[j])
                j += 1
            i = j + 1
            continue
        if c == "\\" and i + 1 < len(word):
            out.append(word[i + 1])
            i += 2
            continue
        if c in "$`":
            expands = True
        out.append(c)
        i += 1
    value = "".join(out)
    if expands:
        match = _DEFAULT_EXPANSION.match(value)
        return match.group("default") if match else None
    return value


def yaml_value(text: str) -> Optional[str]:
    """The string a YAML scalar gives an environment variable; None for ``${{ }}``
    expressions, anchors and tags."""
    text = text.strip()
    if not text or text in ("~", "null", "Null", "NULL"):
        return ""
    if text[0] in "&*!|>":
        return None
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        inner = text[1:-1]
        value = inner.replace("''", "'") if text[0] == "'" else inner.replace('\\"', '"')
    else:
        value = text
    if "${{" in value or "$(" in value:
        return None
    return value


# ------------------------------------------------------------------------------------------
# Shell
# ------------------------------------------------------------------------------------------

_SEPARATORS = (";;", "&&", "||", ";", "&", "|", "(", ")", "{", "}", "`", "$(")
_KEEP_COMMAND = {"then", "do", "else", "elif", "if", "while", "until", "!", "time", "exec", "nohup",
                 "sudo", "command", "builtin"}
_ASSIGNING = {"export", "env", "declare", "typeset", "local", "readonly"}


def shell_words(line: str) -> Iterator[Tuple[int, int, str]]:
    """(start, end, text) of the words and operators of one line; a comment ends it."""
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c in " \t":
            i += 1
            continue
        if c == "#":
            return
        for op in _SEPARATORS:
            if line.startswith(op, i):
                yield i, i + len(op), op
                i += len(op)
                break
        else:
            start = i
            while i < n and line[i] not in " \t;&|()`":
                if line[i] in "'\"":
                    quote = line[i]
                    i += 1
                    while i < n and line[i] != quote:
                        i += 2 if (quote == '"' and line[i] == "\\") else 1
                    i += 1
                elif line[i] == "\\":
                    i += 2
                elif line.startswith("$(", i) or line.startswith("${", i):
                    opener = line[i + 1]
                    close = ")" if opener == "(" else "}"
                    depth, i = 1, i + 2
                    while i < n and depth:
                        depth += line[i] == opener
                        depth -= line[i] == close
                        i += 1
                else:
                    i += 1
            yield start, min(i, n), line[start:min(i, n)]


class ShellState:
    """Whether the next word is where a command (or an assignment before it) may start."""

    def __init__(self) -> None:
        self.command_position = True
        self.assigning = False  # after export / env / declare
        self.names_only = False  # export / declare: every later word is a name or assignment
        self.option_value = False  # after -e / --env


def shell_line_hits(line: str, row: int, state: ShellState, column_offset: int = 0) -> Iterator[Hit]:
    continued = line.rstrip().endswith("\\") and not line.rstrip().endswith("\\\\")
    for start, end, word in shell_words(line):
        if word in _SEPARATORS:
            state.command_position, state.assigning, state.option_value = True, False, False
            state.names_only = False
            continue
        if word == "\\" and end >= len(line.rstrip()):
            continue
        is_assignment = _ASSIGN.match(word)
        if state.option_value or state.command_position or state.assigning:
            if is_assignment:
                var = is_assignment.group(1)
                if var in WATCHED:
                    yield (row, column_offset + start, column_offset + end, var,
                           shell_value(word[is_assignment.end():]))
                state.option_value = False
                continue
        if word.startswith("--env="):
            inner = word[len("--env="):]
            match = _ASSIGN.match(inner)
            if match and match.group(1) in WATCHED:
                offset = start + len("--env=")
                yield (row, column_offset + offset, column_offset + end, match.group(1),
                       shell_value(inner[match.end():]))
            continue
        if word in ("-e", "--env"):
            state.option_value = True
            continue
        state.option_value = False
        if state.command_position and word in _KEEP_COMMAND:
            continue
        if state.command_position and word in _ASSIGNING:
            state.command_position, state.assigning = False, True
            state.names_only = word != "env"
            continue
        if state.assigning and (word.startswith("-") or state.names_only):
            continue
        state.command_position, state.assigning = False, False
    if not continued:
        state.command_position, state.assigning, state.option_value = True, False, False


def scan_shell(lines: List[str]) -> Iterator[Hit]:
    state = ShellState()
    for row, line in enumerate(lines, 1):
        yield from shell_line_hits(line, row, state)


# ------------------------------------------------------------------------------------------
# Dockerfile
# ------------------------------------------------------------------------------------------

_INSTRUCTION = re.compile(r"^(\s*)([A-Za-z]+)(\s+|$)")


def scan_dockerfile(lines: List[str]) -> Iterator[Hit]:
    row = 0
    n = len(lines)
    while row < n:
        line = lines[row]
        row += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _INSTRUCTION.match(line)
        if not match:
            continue
        instruction = match.group(2).upper()
        # The physical lines of this instruction (continuations end in a backslash; comment
        # lines inside it are dropped, as Docker does).
        parts = [(row, match.end(), line)]
        while parts[-1][2].rstrip().endswith("\\") and row < n:
            row += 1
            nxt = lines[row - 1]
            if nxt.lstrip().startswith("#"):
                parts.append((row, len(nxt), nxt + "\\"))
                continue
            parts.append((row, 0, nxt))
        if instruction == "ENV":
            yield from _docker_env(parts)
        elif instruction == "RUN":
            if line[match.end():].lstrip().startswith("["):
                continue  # exec form
            state = ShellState()
            for r, col, text in parts:
                if text.lstrip().startswith("#"):
                    continue
                yield from shell_line_hits(text[col:], r, state, col)


def _docker_env(parts) -> Iterator[Hit]:
    first_row, first_col, first_text = parts[0]
    body = first_text[first_col:].rstrip()
    words = [w for w in shell_words(body.rstrip("\\"))]
    if words and "=" not in words[0][2]:
        # Legacy form: ENV NAME value with spaces (a single variable).
        var = words[0][2]
        if var in WATCHED:
            rest = body[words[0][1]:].strip().rstrip("\\").strip()
            if len(parts) > 1:
                rest = rest + " " + " ".join(t.strip().rstrip("\\").strip() for _, _, t in parts[1:])
            end = first_col + len(body.rstrip("\\").rstrip())
            yield first_row, first_col + words[0][0], end, var, shell_value(rest.strip())
        return
    for r, col, text in parts:
        if text.lstrip().startswith("#"):
            continue
        segment = text[col:]
        for start, end, word in shell_words(segment):
            match = _ASSIGN.match(word)
            if match and match.group(1) in WATCHED:
                yield r, col + start, col + end, match.group(1), shell_value(word[match.end():])


# ------------------------------------------------------------------------------------------
# YAML
# ------------------------------------------------------------------------------------------

_YAML_ENV_KEY = re.compile(r"^(\s*)(?:-\s+)?(?:env|environment)\s*:\s*(?P<rest>.*)$")
_YAML_RUN_KEY = re.compile(r"^(\s*)(?:-\s+)?(?:run|script|command|entrypoint)\s*:\s*(?P<rest>.*)$")
_YAML_MAP_ENTRY = re.compile(r"^(\s*)(?P<key>[\"']?[A-Za-z_][A-Za-z0-9_]*[\"']?)\s*:(?:\s+(?P<value>.*)|\s*$)")
_YAML_LIST_ASSIGN = re.compile(r"^(\s*)-\s+(?P<q>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*?)(?P=q)\s*$")
_YAML_NAME_ITEM = re.compile(r"^(\s*)-\s+name\s*:\s*(?P<name>[\"']?[A-Za-z_][A-Za-z0-9_]*[\"']?)\s*$")
_YAML_VALUE_KEY = re.compile(r"^(\s*)(?:-\s+)?value\s*:\s*(?P<value>.*)$")
_YAML_FLOW_ITEM = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<value>\"[^\"]*\"|'[^']*'|[^,}\s]*)")


def _yaml_strip_comment(line: str) -> str:
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"" and (i == 0 or line[i - 1] in " \t:-[{,"):
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def scan_yaml(lines: List[str]) -> Iterator[Hit]:
    n = len(lines)
    row = 0
    while row < n:
        raw = lines[row]
        row += 1
        line = _yaml_strip_comment(raw)
        if not line.strip():
            continue
        env = _YAML_ENV_KEY.match(line)
        run = _YAML_RUN_KEY.match(line)
        if env:
            rest = env.group("rest").strip()
            indent = line.index("env")  # the key's column: "- env:" items included
            if rest.startswith("{"):
                base = line.index("{")
                for m in _YAML_FLOW_ITEM.finditer(line, base):
                    if m.group("key") in WATCHED:
                        yield row, m.start(), m.end(), m.group("key"), yaml_value(m.group("value"))
                continue
            if rest:
                continue
            row = yield from _yaml_env_block(lines, row, indent)
        elif run:
            rest = run.group("rest").strip()
            indent = _indent(line)
            key = line.index(line.lstrip(" \t-")[:1], indent) if line.lstrip(" \t-") else indent
            if rest and rest[0] in "|>":
                state = ShellState()
                while row < n and (not lines[row].strip() or _indent(lines[row]) > indent):
                    yield from shell_line_hits(lines[row], row + 1, state)
                    row += 1
            elif not rest:  # a list of commands (GitLab's script:)
                while row < n:
                    item = _yaml_strip_comment(lines[row])
                    if item.strip() and (_indent(item) < key or (_indent(item) == key and not item.lstrip().startswith("-"))):
                        break
                    body = item.lstrip()
                    if body.startswith("- "):
                        col = len(item) - len(body) + 2
                        text = body[2:].rstrip()
                        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
                            text, col = text[1:-1], col + 1
                        yield from shell_line_hits(text, row + 1, ShellState(), col)
                    row += 1
            elif rest and not rest.startswith(("[", "{")):
                offset = raw.index(rest) if rest in raw else 0
                value = rest
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                    value, offset = value[1:-1], offset + 1
                yield from shell_line_hits(value, row, ShellState(), offset)


def _yaml_env_block(lines: List[str], row: int, indent: int):
    """Entries of the ``env:`` block that starts after 0-based ``row``; returns the row where
    the block ends. A generator that yields hits."""
    n = len(lines)
    pending = None  # (row, start, end, name, item indent) of a "- name: X" item
    while row < n:
        raw = lines[row]
        line = _yaml_strip_comment(raw)
        if not line.strip():
            row += 1
            continue
        # A block sequence may sit at its key's own indentation (Kubernetes style).
        if _indent(line) < indent or (_indent(line) == indent and not line.lstrip().startswith("-")):
            break
        row += 1
        item = _YAML_NAME_ITEM.match(line)
        if item:
            name = item.group("name").strip("'\"")
            start = line.index(item.group("name"))
            pending = (row, start, start + len(item.group("name")), name, _indent(line)) if name in WATCHED else None
            continue
        value = _YAML_VALUE_KEY.match(line)
        if value and pending is not None:
            prow, pstart, pend, name, _ = pending
            text = value.group("value").rstrip()
            yield _span_hit(prow, pstart, row, line.rstrip(), name, yaml_value(text))
            pending = None
            continue
        listed = _YAML_LIST_ASSIGN.match(line)
        if listed:
            if listed.group("key") in WATCHED:
                start = line.index(listed.group("key"))
                yield row, start, len(line.rstrip()), listed.group("key"), shell_value(listed.group("value"))
            continue
        entry = _YAML_MAP_ENTRY.match(line)
        if entry and entry.group("value") is not None:
            key = entry.group("key").strip("'\"")
            if key in WATCHED:
                start = line.index(entry.group("key"))
                yield row, start, len(line.rstrip()), key, yaml_value(entry.group("value"))
    return row


def _span_hit(row, start, end_row, end_line, name, value):
    # A k8s item spans its "name:" and "value:" lines: the hit starts at the name.
    return (row, start, (end_row, len(end_line)), name, value)


# ------------------------------------------------------------------------------------------
# .env
# ------------------------------------------------------------------------------------------

_DOTENV = re.compile(r"^(\s*)(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>.*)$")


def scan_dotenv(lines: List[str]) -> Iterator[Hit]:
    for row, line in enumerate(lines, 1):
        if line.lstrip().startswith("#"):
            continue
        match = _DOTENV.match(line)
        if not match or match.group("key") not in WATCHED:
            continue
        value = match.group("value").strip()
        if value[:1] in "'\"":
            close = value.find(value[0], 1)
            value = value[1:close] if close != -1 else value[1:]
            literal = value if "$" not in value else None
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
            literal = shell_value(value)
        yield row, match.start("key"), len(line.rstrip()), match.group("key"), literal


# ------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------

SCANNERS = {"shell": scan_shell, "dockerfile": scan_dockerfile, "yaml": scan_yaml, "dotenv": scan_dotenv}


def scan(path: str, text: str, enabled: FrozenSet[str], kind: Optional[str] = None) -> List[Finding]:
    """Display-only ROC601/ROC602/ROC604/ROC605/ROC606 findings of one non-Python file. Never
    raises for odd input: what it cannot read as an assignment is not a finding."""
    kind = kind or kind_for(path, text[:256].encode("utf-8", "replace"))
    if kind is None or not (enabled & set(NAMES)):
        return []
    lines = _NEWLINE.split(text)
    starts = LineIndex(text).starts
    suppressed = suppression.for_lines(lines, kind)  # line and file noqa comments
    if suppressed.whole_file:
        return []
    findings: List[Finding] = []
    seen = set()
    pairs: List[Hit] = []

    def add(code: str, row: int, start: int, end, message: str, hint: str) -> None:
        end_row, end_col = (end if isinstance(end, tuple) else (row, end))
        if code not in enabled or suppressed.suppresses(code, row):
            return
        findings.append(Finding(
            code=code, name=NAMES[code], message=message + f" (set in {KIND_WORDS[kind]})",
            start=Position(row, start + 1), end=Position(end_row, end_col + 1),
            fix=Fix(Applicability.DISPLAY_ONLY, hint), filename=path,
            span=(starts[row - 1] + start, starts[end_row - 1] + end_col),
        ))

    for hit in SCANNERS[kind](lines):
        row, start, end, var, value = hit
        if var in PAIR_VARS:
            pairs.append(hit)
            continue
        code = classify(var, value)
        if code is None or (row, start, code) in seen:
            continue
        seen.add((row, start, code))
        message = MESSAGES[code].format(var=var)
        if value is None:
            message = f"{var} is set to a value only known at run time: {UNKNOWN_VALUE_MESSAGES[code]}"
        rocm = ROCM_VALUES[code]
        hint = (f'Leave {var} unset (or "0") for ROCm' if rocm == "0" else f'Set {var} to "{rocm}" for ROCm')
        add(code, row, start, end, message, hint)
    _pair_findings(path, kind, lines, text, pairs, add)
    findings.sort(key=lambda f: (f.start.row, f.start.column, f.code))
    return findings


_NVIDIA_FILE = re.compile(r"(?i)(?:^|[/_.-])(?:nv|nvidia|cuda)(?:[_.-][^/]*)?$")


def _pair_findings(path: str, kind: str, lines: List[str], text: str, hits: List[Hit], add) -> None:
    """ROC605 (both visibility variables set in one environment) and ROC606
    (TORCH_CUDA_ARCH_LIST without PYTORCH_ROCM_ARCH); messages from the rules themselves."""
    groups = {}
    for hit in hits:
        key = _yaml_parent(lines, hit[0]) if kind == "yaml" else 0
        groups.setdefault(key, []).append(hit)
    if not any(removes(text, var) for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")):
        for group in groups.values():
            cuda = [h for h in group if h[3] == "CUDA_VISIBLE_DEVICES"]
            hip = [h for h in group if h[3] == "HIP_VISIBLE_DEVICES"]
            if cuda and hip:
                earlier, later = sorted((cuda[0], hip[0]), key=lambda h: (h[0], h[1]))
                add(VisibleDevicesBoth.CODE, later[0], later[1], later[2],
                    VisibleDevicesBoth.message(later[3], earlier[3], earlier[0]), VisibleDevicesBoth.HINT)
    arch = [h for h in hits if h[3] == ARCH_LIST_VAR and h[4] != "" and not nvidia_arch_only(h[4])]
    # a Dockerfile or YAML file that names ROCm nowhere builds nothing for ROCm (its image and
    # runners are NVIDIA's or CPU-only); a shell script may run anywhere
    no_rocm_build = kind in ("dockerfile", "yaml") and ROCM_BUILD_WORD.search(text) is None
    if arch and ROCM_ARCH_VAR not in text and not _NVIDIA_FILE.search(path.replace("\\", "/")) \
            and not no_rocm_build:
        row, start, end, var, _ = arch[0]
        add(ArchListWithoutRocmArch.CODE, row, start, end, ArchListWithoutRocmArch.message(var),
            ArchListWithoutRocmArch.HINT)


def _yaml_parent(lines: List[str], row: int) -> int:
    """The row of the nearest line above ``row`` that is indented less (its map or list)."""
    indent = _indent(lines[row - 1])
    for above in range(row - 1, 0, -1):
        line = _yaml_strip_comment(lines[above - 1])
        if line.strip() and _indent(line) < indent:
            return above
    return 0
