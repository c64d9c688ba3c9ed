"""The pull request's description (``rocmport fix --pr-body FILE``): per rule, what changed
where, why on ROCm with the evidence the rule cites, what is left for a person, how to verify
and how to opt out. Markdown, built from the fix's reports and the rules' own documentation
(the registry's light view: no LibCST), so it says what the diff does and nothing more.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from . import __version__
from .config import CUDA_GRAPH_CODES, Settings
from .findings import Applicability, Finding
from .output import relative_path
from .registry import rule_infos

MAX_LOCATIONS = 20  # per rule, in "left for a person"

# Short repository names that the rules' documentation cites (`pytorch#187715`).
REPOSITORIES = {
    "pytorch": "pytorch/pytorch", "torchtune": "pytorch/torchtune", "torchtitan": "pytorch/torchtitan",
    "TransformerEngine": "NVIDIA/TransformerEngine", "DeepSpeed": "deepspeedai/DeepSpeed",
    "bitsandbytes": "bitsandbytes-foundation/bitsandbytes", "vllm": "vllm-project/vllm",
    "sglang": "sgl-project/sglang", "ComfyUI": "comfyanonymous/ComfyUI",
    "DiffSynth-Studio": "modelscope/DiffSynth-Studio",
}
_CITATION = re.compile(r"(?<![\w/.-])((?:[A-Za-z0-9][\w.-]*/)?[A-Za-z][\w.-]*)#(\d+)\b")
_SEE_RULE = re.compile(r"\bsee (ROC\d{3})\b")

# How to check each fix on a ROCm machine (and that NVIDIA is unchanged): by code, then family.
_GRAPHS_OFF = ("On the ROCm machine, run the program with `TORCH_LOGS=cudagraphs`: inductor logs no CUDA-graph"
               " recording for the changed compile calls (before this change it did); the same command on NVIDIA"
               " logs the graphs as before.")
_AUTOTUNE = ("On ROCm, print `torch._inductor.config.max_autotune` just before the program compiles: False;"
             " on NVIDIA the value the code sets.")
_GEMM = ("On ROCm, print `torch._inductor.config.max_autotune_gemm_backends` just before the program compiles:"
         " \"ATEN\"; on NVIDIA the value the code sets.")
VERIFY = {
    "ROC1": _GRAPHS_OFF,
    "ROC106": ("On ROCm, the compiled function runs through `rocmport_cudagraph`: time a step with and without"
               " it; a failed capture is reported with a warning (`rocmport_cudagraph: capture failed`) and"
               " that input signature runs uncaptured. On NVIDIA `rocmport_cudagraph` returns the compiled"
               " function itself."),
    "ROC201": _GRAPHS_OFF, "ROC202": _GRAPHS_OFF, "ROC602": _GRAPHS_OFF,
    "ROC203": _AUTOTUNE, "ROC601": _AUTOTUNE, "ROC204": _GEMM, "ROC604": _GEMM,
    "ROC205": ("On ROCm, print `torch._inductor.config.memory_planning` just before the program compiles: False."),
    "ROC3": ("Run the code that captures the graph on a ROCm machine: the capture completes and a replay gives"
             " the outputs of an eager call; on NVIDIA the capture runs as before."),
    "ROC5": ("Run the kernel's tests on an AMD GPU (MI200/MI300): the kernel compiles and matches its reference."
             " On NVIDIA the launch parameters are the values they were (the rewritten expressions evaluate to"
             " them)."),
    "ROC7": ("Run the tests that cover the changed code on a ROCm build (`python -c \"import torch;"
             " print(torch.version.hip)\"` prints a version there): the GPU branch is taken; on NVIDIA and CPU"
             " builds the expressions evaluate as before."),
    "ROC701": ("On ROCm, `torch.version.cuda` is None and `torch.version.hip` a version: run the tests that cover"
               " the changed lines there, they now take the GPU branch (or skip the CUDA-version-specific one); on"
               " NVIDIA and CPU builds the expressions evaluate as before."),
    "ROC702": ("On an AMD GPU, `torch.cuda.get_device_capability()` returns (9, x) (MI300: (9, 4)): run the tests"
               " that cover the changed comparisons there; they no longer select the NVIDIA-only path. On NVIDIA"
               " they evaluate as before."),
    "ROC706": ("On MI300, `torch.finfo(torch.float8_e4m3fnuz).max` is 240.0, the value the ROCm branch now"
               " uses; on NVIDIA the value is 448 as before."),
    "ROC6": ("On ROCm, print the variable where the program sets it, before `torch._inductor` is imported: it"
             " holds the ROCm value; on NVIDIA the value the code sets."),
}


def _verify(code: str) -> str:
    for key in (code, code[:4]):
        if key in VERIFY:
            return VERIFY[key]
    return "Run the tests that cover the changed lines on a ROCm machine and on NVIDIA."


def _paragraph(text: str) -> str:
    return " ".join(textwrap.dedent(text).split())


def _markdown(text: str) -> str:
    """A rule's documentation text as Markdown: paragraphs joined into one line each, list items
    and table rows kept one a line."""
    out = []
    for block in re.split(r"\n\s*\n", textwrap.dedent(text).strip()):
        items: List[str] = []
        for line in block.splitlines():
            stripped = line.strip()
            if stripped.startswith(("- ", "* ", "|")) or not items:
                items.append(stripped)
            elif items[-1].startswith("|"):
                items.append(stripped)
            else:
                items[-1] += " " + stripped
        out.append("\n".join(items))
    return "\n\n".join(out)


def citations(code: str, infos=None, _seen: Optional[set] = None) -> List[str]:
    """The threads a rule's documentation cites (Markdown links where the repository is known),
    with those of the rules its explanation refers to (``see ROC101``)."""
    infos = infos if infos is not None else rule_infos()
    seen = _seen if _seen is not None else set()
    if code in seen or code not in infos:
        return []
    seen.add(code)
    info = infos[code]
    doc = info.WHY + "\n" + info.doc()
    out: List[str] = []
    for repo, number in _CITATION.findall(doc):
        full = repo if "/" in repo else REPOSITORIES.get(repo)
        label = f"{repo}#{number}"
        item = f"[{label}](https://github.com/{full}/issues/{number})" if full else label
        if item not in out:
            out.append(item)
    for other in _SEE_RULE.findall(info.WHY):
        out += [c for c in citations(other, infos, seen) if c not in out]
    return out


def _where(rows: Sequence[int]) -> str:
    rows = sorted(set(r for r in rows if r))
    if not rows:
        return ""
    shown = ", ".join(str(r) for r in rows[:8]) + (", ..." if len(rows) > 8 else "")
    return f" (line{'s' if len(rows) > 1 else ''} {shown} before the change)"


def render(reports: Sequence, remaining: Sequence[Finding], settings: Settings, *, written: bool,
           root: Optional[Path] = None) -> str:
    """The description of the pull request ``fix --write`` makes (``written``) or would make."""
    infos = rule_infos()
    rel = (lambda p: relative_path(p, root)) if root is not None else relative_path
    # rule -> file -> rows
    changed: "OrderedDict[str, Dict[str, List[int]]]" = OrderedDict()
    unknown: Dict[str, int] = {}
    ungated: set = set()
    files = set()
    for r in reports:
        if r.fixed is None:
            continue
        files.add(rel(r.path))
        if not r.applied and r.fixes_applied:
            unknown[rel(r.path)] = r.fixes_applied
        for code, row, gated in r.applied:
            changed.setdefault(code, {}).setdefault(rel(r.path), []).append(row)
            if not gated:
                ungated.add(code)
    changed = OrderedDict(sorted(changed.items()))
    total = sum(len(rows) for per in changed.values() for rows in per.values()) + sum(unknown.values())
    created = sorted({rel(p) for r in reports for p in r.extra_files})
    out: List[str] = []
    verb = "fixes" if written else "would fix"
    out += [f"# Port to AMD ROCm: {total} fix{'es' if total != 1 else ''} in {len(files)}"
            f" file{'s' if len(files) != 1 else ''}", ""]
    out += [f"What `rocmport fix --write` (rocmport {__version__}) {'wrote' if written else 'would write'}: it"
            f" {verb} code that breaks, hangs or slows down on ROCm."]
    gated = [c for c in changed if c not in ungated]
    if gated:
        out[-1] += (" " + ("The fixes of " + ", ".join(gated) + " test" if ungated else "Each fix tests")
                    + " whether torch is a ROCm build (`torch.version.hip`), so on NVIDIA and CPU builds every"
                    " rewritten expression evaluates exactly as before: only ROCm builds take the new branch.")
    if ungated:
        out[-1] += (" The fixes of " + ", ".join(sorted(ungated)) + " change the code on every platform, in the"
                    " way their rules explain (`rocmport rule CODE`).")
    out.append("")
    if created:
        out += ["New files: " + ", ".join(f"`{p}`" for p in created) + ".", ""]
    shared: Dict[str, int] = {}  # the module that defines a package's gate -> the modules importing it
    for r in reports:
        for path in r.needs_written if r.fixed is not None else ():
            shared[rel(path)] = shared.get(rel(path), 0) + 1
    for path, count in sorted(shared.items()):
        modules = "the module" if count == 1 else f"the {count} modules"
        out += [f"The ROCm test is defined once for its package, in `{path}`, and imported by {modules} that"
                " test it, rather than a line in each.", ""]
    if changed or unknown:
        out += ["## What changed", "", "| rule | fixes | files |", "|---|---|---|"]
        for code, per in changed.items():
            name = infos[code].NAME if code in infos else ""
            out.append(f"| {code} `{name}` | {sum(len(v) for v in per.values())} | {len(per)} |")
        if unknown:
            out.append(f"| (notebooks) | {sum(unknown.values())} | {len(unknown)} |")
        out.append("")
        for code, per in changed.items():
            out += _rule_section(code, per, infos)
        for path, count in sorted(unknown.items()):
            out += [f"- `{path}`: {count} fix{'es' if count != 1 else ''}"]
        if unknown:
            out.append("")
    else:
        out += ["Nothing to change.", ""]
    out += _left(remaining, settings, infos, rel)
    out += _verify_section(changed)
    out += _opt_out(changed, remaining)
    return "\n".join(out).rstrip() + "\n"


def _rule_section(code: str, per: Dict[str, List[int]], infos) -> List[str]:
    info = infos.get(code)
    if info is None:
        return [f"### {code}", ""] + [f"- `{p}`: {len(rows)}" for p, rows in sorted(per.items())] + [""]
    out = [f"### {code} {info.NAME}", "", _paragraph(info.SUMMARY), ""]
    for path, rows in sorted(per.items()):
        out.append(f"- `{path}`: {len(rows)} fix{'es' if len(rows) != 1 else ''}{_where(rows)}")
    out += ["", "**Why on ROCm.** " + _markdown(info.WHY)]
    cited = citations(code, infos)
    if cited:
        out += ["", "**Evidence.** " + ", ".join(cited) + "."]
    out += ["", f"Details: `rocmport rule {code}`; how to check it: below.", ""]
    return out


def _left(remaining: Sequence[Finding], settings: Settings, infos, rel) -> List[str]:
    """Findings no applied fix handles: display-only ones, and those whose fix is unsafe or
    was not applied (ROC002), by rule, with locations."""
    left = [f for f in remaining if not f.applies(settings.unsafe_fixes)]
    if not left:
        return ["## Left for a person", "", "Nothing: every finding was fixed.", ""]
    by_code: "OrderedDict[str, List[Finding]]" = OrderedDict()
    for f in sorted(left, key=lambda f: (f.code, f.filename, f.start.row, f.start.column)):
        by_code.setdefault(f.code, []).append(f)
    out = ["## Left for a person", "",
           "rocmport found these and changed nothing: each needs a decision that the code alone does not"
           " settle (`rocmport lint` lists them; `rocmport rule CODE` explains each).", ""]
    for code, found in by_code.items():
        info = infos.get(code)
        title = f"{code} {info.NAME}" if info else code
        out += [f"### {title} ({len(found)})", ""]
        if info is not None:
            out += [_paragraph(info.SUMMARY), ""]
        for f in found[:MAX_LOCATIONS]:
            where = rel(f.filename) + (f":cell {f.cell}" if f.cell else "") + f":{f.start.row}:{f.start.column}"
            hint = ""
            if f.fix is not None and f.fix.applicability is Applicability.UNSAFE:
                hint = " (an unsafe fix exists: `--unsafe-fixes`)"
            out.append(f"- `{where}`: {f.message}{hint}")
        if len(found) > MAX_LOCATIONS:
            out.append(f"- and {len(found) - MAX_LOCATIONS} more")
        out.append("")
    return out


def _verify_section(changed: Dict[str, Dict[str, List[int]]]) -> List[str]:
    out = ["## How to verify", "",
           "- On the ROCm machine, `python -c \"import torch; print(torch.version.hip)\"` prints a version (a"
           " ROCm build); on NVIDIA it prints `None`, and the NVIDIA path is the one before this change.",
           "- `rocmport lint` lists only the findings above, and a second `rocmport fix` changes nothing."]
    seen = set()
    for code in changed:
        text = _verify(code)
        if text not in seen:
            seen.add(text)
            codes = [c for c in changed if _verify(c) == text]
            out.append(f"- {', '.join(codes)}: {text}")
    return out + [""]


def _opt_out(changed: Dict[str, Dict[str, List[int]]], remaining: Sequence[Finding]) -> List[str]:
    fixed = sorted(set(changed) & CUDA_GRAPH_CODES)
    graphs = sorted(set(fixed) | ({f.code for f in remaining} & CUDA_GRAPH_CODES))
    some = next(iter(changed), None) or next((f.code for f in remaining), "ROC101")
    out = ["## How to opt out", ""]
    if graphs:
        out += ["- **CUDA graphs measured working on your ROCm stack?** Keep them: set `cuda-graphs-on-rocm = true`"
                " in `[tool.rocmport]` (pyproject.toml)" + (" and revert the hunks of " + ", ".join(fixed) if fixed
                                                            else "")
                + "; the CUDA-graph rules (" + ", ".join(graphs) + " here) then say nothing."]
    out += [f"- A rule everywhere: `ignore = [\"{some}\"]` in `[tool.rocmport]`.",
            f"- Some files: `per-file-ignores = {{ \"benchmarks/*\" = [\"{some}\"] }}`.",
            f"- One line: `# noqa: {some}` on the line the finding starts on; a whole file: a line"
            " `# rocmport: noqa`.", ""]
    return out


def counts(reports: Iterable) -> Counter:
    """Fixes applied per rule over ``reports``."""
    return Counter(code for r in reports if r.fixed is not None for code, _row, _gated in r.applied)
