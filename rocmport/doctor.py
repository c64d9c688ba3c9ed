"""``rocmport doctor``: what the running Python environment means for ROCm.

It reports torch's version and build (CUDA, HIP or CPU), on ROCm the HIP runtime and each
GPU's architecture and what they mean (known capture and replay bugs of that HIP version, the
fp8 format of that GPU: the facts and their sources are ``rocmport.rocm_facts``), the
Inductor and Dynamo settings
that decide whether CUDA graphs, autotuning and friends are on (each with its value and where
that came from: the default or an environment variable), the environment variables that are
red flags on ROCm and what they do, and whether this torch needs the Dynamo RNG patch.

Unlike ``lint`` and ``fix``, which never import what they read, doctor imports torch: it
inspects the environment it runs in. Exit status: 0 no red flag, 1 red flags, 2 no torch.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import rocm_facts

EXIT_OK, EXIT_RED_FLAG, EXIT_NO_TORCH = 0, 1, 2

# torch fixed the Dynamo RNG bug in 2.10 (PR #162505): older versions need the prelude's patch.
RNG_FIXED_IN = (2, 10)
THREAD_LOCAL_CONFIG_FROM = (2, 12)
TRUTHY = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class Setting:
    module: str  # "inductor" or "dynamo"
    name: str  # dotted name inside the config module
    default: Any  # torch 2.13's default (torch-facts.md)
    env: Tuple[str, ...] = ()  # environment variables torch reads it from
    why: str = ""
    aliases: Tuple[str, ...] = ()  # older names of the same setting, tried in order


SETTINGS: Tuple[Setting, ...] = (
    Setting("inductor", "triton.cudagraphs", False, ("TORCHINDUCTOR_CUDAGRAPHS",),
            "CUDA graphs for every compiled graph: hangs or slowdowns on ROCm"),
    Setting("inductor", "triton.cudagraph_trees", True, (),
            "which CUDA-graph implementation; False does NOT turn CUDA graphs off"),
    Setting("inductor", "max_autotune", False, ("TORCHINDUCTOR_MAX_AUTOTUNE",),
            "autotune matmuls and pointwise kernels (Triton templates, long compiles)"),
    Setting("inductor", "max_autotune_pointwise", False, ("TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE",),
            "autotune pointwise kernels"),
    Setting("inductor", "max_autotune_gemm", False, ("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM",),
            "autotune matmuls"),
    Setting("inductor", "max_autotune_gemm_backends", "ATEN,TRITON,CPP",
            ("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS",),
            "GEMM backends autotuning may pick; ATEN (rocBLAS/hipBLASLt) is the safe one on ROCm"),
    Setting("inductor", "memory_planning", False, ("TORCHINDUCTOR_MEMORY_PLANNING",),
            "ahead-of-time buffer planning; known failures on ROCm"),
    Setting("inductor", "coordinate_descent_tuning", False, ("TORCHINDUCTOR_COORDINATE_DESCENT_TUNING",),
            "extra tuning of Triton kernel configs (on in max-autotune modes)"),
    Setting("inductor", "freezing", False, ("TORCHINDUCTOR_FREEZING",),
            "constant-folds weights: inference only"),
    Setting("inductor", "benchmark_kernel", False, ("TORCHINDUCTOR_BENCHMARK_KERNEL",),
            "benchmark generated kernels"),
    Setting("inductor", "triton.multi_kernel", 0, ("TORCHINDUCTOR_MULTI_KERNEL",),
            "generate several kernel variants and pick at run time"),
    Setting("inductor", "shape_padding", True, ("TORCHINDUCTOR_SHAPE_PADDING",),
            "pad matmul shapes for alignment"),
    Setting("inductor", "trace.enabled", False, ("TORCH_COMPILE_DEBUG",),
            "write debug traces for every compile (slow)"),
    Setting("inductor", "force_disable_caches", False,
            ("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCH_COMPILE_FORCE_DISABLE_CACHES"),
            "recompile everything on every run"),
    Setting("dynamo", "recompile_limit", 8, (),
            "recompilations per code object before Dynamo falls back to eager",
            aliases=("cache_size_limit",)),
    Setting("dynamo", "accumulated_recompile_limit", 256, (), "recompilations in total"),
)


@dataclass
class EnvFinding:
    name: str
    value: str
    red_flag: bool
    effect: str


@dataclass
class Report:
    python: str
    executable: str
    torch: Optional[str] = None
    torch_error: Optional[str] = None
    build: Optional[str] = None  # "cuda" | "rocm" | "cpu"
    cuda: Optional[str] = None
    hip: Optional[str] = None
    gpus: List[str] = field(default_factory=list)
    settings: List[Dict[str, Any]] = field(default_factory=list)
    environment: List[EnvFinding] = field(default_factory=list)
    rng_patch_needed: Optional[bool] = None
    rocm: Optional[Dict[str, Any]] = None  # ROCm builds: HIP runtime, GPU architectures, known issues
    notes: List[str] = field(default_factory=list)

    @property
    def red_flags(self) -> List[EnvFinding]:
        return [e for e in self.environment if e.red_flag]

    def as_dict(self) -> Dict[str, Any]:
        return {
            "python": self.python,
            "executable": self.executable,
            "torch": None if self.torch is None else {
                "version": self.torch, "build": self.build, "cuda": self.cuda, "hip": self.hip, "gpus": self.gpus,
            },
            "error": self.torch_error,
            "settings": self.settings,
            "environment": [asdict(e) for e in self.environment],
            "red_flags": [e.name for e in self.red_flags],
            "remedy": remedy(self.red_flags, self.build),
            "rocm": self.rocm,
            "rng_patch": None if self.rng_patch_needed is None else {
                "needed": self.rng_patch_needed,
                "reason": _rng_reason(self.torch, self.rng_patch_needed),
            },
            "notes": self.notes,
        }


def parse_version(text: Optional[str]) -> Optional[Tuple[int, int]]:
    """(major, minor) of a version string such as ``2.10.0a0+git1234``; never TorchVersion,
    whose comparisons misclassify nightlies."""
    match = re.match(r"\s*(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def needs_rng_patch(version: Optional[str]) -> Optional[bool]:
    parsed = parse_version(version)
    return None if parsed is None else parsed < RNG_FIXED_IN


def _rng_reason(version: Optional[str], needed: Optional[bool]) -> str:
    if needed:
        return (f"torch {version} is older than 2.10: Dynamo compiling while a CUDA graph is captured fails "
                "with 'Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture'; rocmport's "
                "prelude applies the patch (rng-patch = true)")
    return f"torch {version} has the upstream fix (2.10, PR #162505); the prelude skips the patch"


# ------------------------------------------------------------------------------------------
# Environment variables
# ------------------------------------------------------------------------------------------

def _truthy(value: str) -> bool:
    return value.strip().lower() in TRUTHY


def _torch_on(value: str) -> bool:
    """How torch 2.13's inductor config reads these flags: ``os.environ.get(NAME) == "1"``
    (``true``, ``yes`` or `` 1`` leave the setting off)."""
    return value == "1"


def _off(setting: str, value: str) -> str:
    if _truthy(value):
        return f'{setting} stays off (torch turns it on only for the exact value "1")'
    return f"{setting} stays off"


def check_environment(environ: Mapping[str, str]) -> List[EnvFinding]:
    """The environment variables that matter on ROCm, red flags first-class."""
    out: List[EnvFinding] = []

    def add(name: str, red_flag: bool, effect: str) -> None:
        out.append(EnvFinding(name, environ[name], red_flag, effect))

    for name in sorted(environ):
        value = environ[name]
        if name == "TORCHINDUCTOR_CUDAGRAPHS":
            if _torch_on(value):
                add(name, True, "turns on triton.cudagraphs for every torch.compile in the process: CUDA graphs "
                                "hang or slow down on ROCm (rocmport ROC602)")
            else:
                add(name, False, _off("triton.cudagraphs", value))
        elif name in ("TORCHINDUCTOR_MAX_AUTOTUNE", "TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE",
                      "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM"):
            setting = name[len("TORCHINDUCTOR_"):].lower()
            if _torch_on(value):
                add(name, True, f"turns on {setting} for every compile: Triton/CPP GEMM templates and long "
                                "autotuning on ROCm, where they are often slower than rocBLAS/hipBLASLt "
                                "(rocmport ROC601)")
            else:
                add(name, False, _off(setting, value))
        elif name == "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS":
            backends = {b.strip().upper() for b in value.split(",") if b.strip()}
            risky = sorted(backends & {"TRITON", "CPP"})
            if risky:
                add(name, True, f"lets autotuning pick {' and '.join(risky)} GEMM templates; use ATEN on ROCm "
                                "(rocmport ROC604)")
            else:
                add(name, False, "GEMM autotuning limited to " + ",".join(sorted(backends)))
        elif name == "TORCHINDUCTOR_MEMORY_PLANNING":
            if _torch_on(value):
                add(name, True, "turns on memory_planning, which fails on ROCm (rocmport ROC205)")
            else:
                add(name, False, _off("memory_planning", value))
        elif name in ("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCH_COMPILE_FORCE_DISABLE_CACHES") and _truthy(value):
            add(name, False, "disables every compile cache: each run recompiles from scratch (slow start)")
        elif name == "TORCH_COMPILE_DEBUG" and _torch_on(value):
            add(name, False, "writes debug traces for every compile (slow, large output)")
        elif name in ("TORCHINDUCTOR_COORDINATE_DESCENT_TUNING", "TORCHINDUCTOR_FREEZING",
                      "TORCHINDUCTOR_BENCHMARK_KERNEL", "TORCHINDUCTOR_MULTI_KERNEL",
                      "TORCHINDUCTOR_SHAPE_PADDING"):
            setting = name[len("TORCHINDUCTOR_"):].lower()
            add(name, False, f"sets {setting} process-wide (rocmport's tuned profile may set it too)")
    if all(name in environ for name in VISIBILITY_PAIR):  # ROC605's check, on this environment
        cuda, hip = VISIBILITY_PAIR
        out.append(EnvFinding(hip, environ[hip], True,
                              f"set together with {cuda}={environ[cuda]}: on a ROCm build torch counts the GPUs "
                              f"{hip} names and ignores {cuda} without a word, while the HIP runtime reads both "
                              f"(the wrong GPUs, or none); set one, {hip} on ROCm, {cuda} on NVIDIA "
                              "(rocmport ROC605)"))
    out.sort(key=lambda e: (not e.red_flag, e.name))
    return out


VISIBILITY_PAIR = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


def remedy(flags: List[EnvFinding], build: Optional[str]) -> List[str]:
    """What to do about the red flags, and nothing that is not so: rocmport's prelude sets
    inductor's variables with ``os.environ.setdefault``, so a value already in the
    environment stays in force; only unsetting it helps."""
    lines = []
    names = [e.name for e in flags if not (e.name == VISIBILITY_PAIR[1] and e.effect.startswith("set together"))]
    if names:
        lines.append(f"Unset {_and(names)} before the program starts (`unset {' '.join(names)}`, or take "
                     f"{'it' if len(names) == 1 else 'them'} out of the launch script, Dockerfile or CI "
                     "environment). rocmport's prelude does not override "
                     f"{'it' if len(names) == 1 else 'them'}: it fills in only variables that are not set "
                     "(os.environ.setdefault), so a value already in the environment stays in force.")
    if len(names) < len(flags):
        cuda, hip = VISIBILITY_PAIR
        drop = {"rocm": cuda, "cuda": hip}.get(build or "")
        lines.append(f"Keep one of {cuda} and {hip}: {hip} on ROCm, {cuda} on NVIDIA"
                     + (f" (this is a {'ROCm' if build == 'rocm' else 'CUDA'} build: `unset {drop}`)." if drop
                        else "."))
    return lines


def _and(names: List[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# ------------------------------------------------------------------------------------------
# torch
# ------------------------------------------------------------------------------------------

_MISSING = object()


def _lookup(module, dotted: str):
    value = module
    for part in dotted.split("."):
        value = getattr(value, part, _MISSING)
        if value is _MISSING:
            return _MISSING
    return value


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)


def read_settings(inductor, dynamo, environ: Mapping[str, str]) -> List[Dict[str, Any]]:
    modules = {"inductor": inductor, "dynamo": dynamo}
    rows = []
    for s in SETTINGS:
        module = modules[s.module]
        name, value = s.name, _MISSING
        for candidate in (s.name, *s.aliases):
            if module is not None:
                value = _lookup(module, candidate)
            if value is not _MISSING:
                name = candidate
                break
        env_set = [v for v in s.env if v in environ]
        if value is _MISSING:
            source = "not in this torch"
        elif env_set:
            source = "environment: " + ", ".join(f"{v}={environ[v]}" for v in env_set)
        elif value == s.default:
            source = "default"
        else:
            source = "changed at start-up (not by an environment variable rocmport knows)"
        rows.append({
            "name": f"{s.module}.{name}",
            "value": None if value is _MISSING else _jsonable(value),
            "default": _jsonable(s.default),
            "source": source,
            "env": list(s.env),
            "about": s.why,
        })
    return rows


def inspect(environ: Optional[Mapping[str, str]] = None) -> Report:
    environ = dict(os.environ if environ is None else environ)
    report = Report(python=platform.python_version(), executable=sys.executable)
    report.environment = check_environment(environ)
    try:
        import torch
    except Exception as exc:  # ImportError, or a broken install
        report.torch_error = f"{type(exc).__name__}: {exc}"
        return report
    report.torch = str(getattr(torch, "__version__", "unknown"))
    version = getattr(torch, "version", None)
    report.cuda = getattr(version, "cuda", None)
    report.hip = getattr(version, "hip", None)
    report.build = "rocm" if report.hip is not None else ("cuda" if report.cuda is not None else "cpu")
    try:
        if torch.cuda.is_available():
            report.gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except Exception as exc:  # pragma: no cover - driver trouble
        report.notes.append(f"could not list GPUs: {exc}")
    inductor = dynamo = None
    try:
        import torch._inductor.config as inductor
    except Exception as exc:  # pragma: no cover - very old or broken torch
        report.notes.append(f"cannot import torch._inductor.config: {exc}")
    try:
        import torch._dynamo.config as dynamo
    except Exception as exc:  # pragma: no cover
        report.notes.append(f"cannot import torch._dynamo.config: {exc}")
    report.settings = read_settings(inductor, dynamo, environ)
    report.rng_patch_needed = needs_rng_patch(report.torch)
    parsed = parse_version(report.torch)
    if parsed is not None and parsed >= THREAD_LOCAL_CONFIG_FROM:
        report.notes.append("torch >= 2.12: assignments to torch._inductor.config are thread-local; values "
                            "from environment variables are process-wide (rocmport's prelude uses them)")
    if report.build == "rocm":
        report.notes.append("ROCm build: torch.cuda.* are the HIP APIs; rocmport's gate "
                            "(torch.version.hip is not None) is True here")
        report.rocm = inspect_rocm(torch, environ)
    return report


# ------------------------------------------------------------------------------------------
# ROCm: HIP runtime and GPU architectures (facts: rocmport.rocm_facts)
# ------------------------------------------------------------------------------------------

def read_rocm_install(environ: Mapping[str, str]) -> Optional[Dict[str, str]]:
    """The installed ROCm's version from ``$ROCM_PATH/.info/version`` (default /opt/rocm):
    it has the patch level that ``torch.version.hip`` lacks. None when there is none."""
    root = Path(environ.get("ROCM_PATH") or "/opt/rocm")
    path = root / ".info" / "version"
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[0].strip()
    except (OSError, IndexError):
        return None
    return {"path": str(path), "version": text} if text else None


def describe_gpu(index: int, props: Any, name: str) -> Dict[str, Any]:
    """One GPU: its gfx architecture (``gcnArchName``), what torch reports as its capability,
    and its fp8 format from the facts table."""
    raw = getattr(props, "gcnArchName", None)
    gfx = rocm_facts.base_arch(raw)
    arch = rocm_facts.arch(raw)
    major, minor = getattr(props, "major", None), getattr(props, "minor", None)
    row: Dict[str, Any] = {
        "index": index, "name": name, "gcnArchName": raw, "gfx": gfx,
        "capability": [major, minor] if isinstance(major, int) and isinstance(minor, int) else None,
        "family": arch.products if arch else None,
    }
    if arch is None:
        row["fp8"] = None
        row["fp8_note"] = (f"{gfx or 'this GPU'} is not in rocmport's table: check AMD's precision-support "
                           "page for its fp8 format")
    elif arch.fp8_dtype is None:
        row["fp8"] = None
        row["fp8_note"] = f"{gfx} ({arch.products}) has no fp8 matrix support"
    else:
        row["fp8"] = {"dtype": f"torch.{arch.fp8_dtype}", "max": arch.fp8_max}
        row["fp8_note"] = (f"fp8 is torch.{arch.fp8_dtype} (max {arch.fp8_max:g}) on {gfx}"
                           + ("; code that hard-codes float8_e4m3fn or 448 is wrong here (ROC705, ROC706)"
                              if arch.fp8_dtype != "float8_e4m3fn" else ""))
    if row["capability"] is not None:
        row["capability_note"] = (f"get_device_capability() is ({major}, {minor}) here: comparisons against "
                                  "NVIDIA generations (>= (9, 0) for Hopper) misread it (ROC702)")
    return row


def inspect_rocm(torch: Any, environ: Mapping[str, str]) -> Dict[str, Any]:
    """What the HIP runtime and the visible GPUs of a ROCm build mean (``torch`` may be a
    stand-in with the same attributes: tests pass one)."""
    hip = getattr(getattr(torch, "version", None), "hip", None)
    hip_version = rocm_facts.parse_version(hip, parts=2)  # its third number is a build number
    install = read_rocm_install(environ)
    install_version = rocm_facts.parse_version(install["version"]) if install else None
    # The installed ROCm says the patch level, where it is the same release as torch's HIP.
    version, version_source = hip_version, "torch.version.hip (major.minor)"
    if install_version is not None and hip_version is not None and install_version[:2] == hip_version:
        version, version_source = install_version, install["path"]
    gpus: List[Dict[str, Any]] = []
    notes: List[str] = []
    try:
        if torch.cuda.is_available():
            for index in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(index)
                name = getattr(props, "name", None) or torch.cuda.get_device_name(index)
                gpus.append(describe_gpu(index, props, str(name)))
    except Exception as exc:  # driver trouble: say so, keep going
        notes.append(f"could not read the GPUs' properties: {type(exc).__name__}: {exc}")
    archs = sorted({g["gfx"] for g in gpus if g["gfx"]}) or [None]
    issues: Dict[str, Dict[str, Any]] = {}
    for gfx in archs:
        for issue, certain in rocm_facts.runtime_issues(version, gfx):
            entry = issues.setdefault(issue.key, {
                "key": issue.key, "versions": issue.versions(), "gpus": list(issue.archs) or ["all"],
                "effect": issue.effect, "status": issue.status, "sources": list(issue.sources),
                "certain": certain})
            entry["certain"] = entry["certain"] or certain
    return {
        "hip": hip, "hip_version": None if hip_version is None else ".".join(map(str, hip_version)),
        "rocm_install": install, "version_checked": None if version is None else ".".join(map(str, version)),
        "version_source": version_source, "gpus": gpus, "runtime_issues": list(issues.values()), "notes": notes,
    }


def _rocm_lines(rocm: Dict[str, Any]) -> List[str]:
    install = rocm["rocm_install"]
    lines = ["", "ROCm:",
             f"  HIP runtime  {rocm['hip']} (torch.version.hip)"
             + (f"; installed ROCm {install['version']} ({install['path']})" if install else "")]
    for g in rocm["gpus"]:
        family = f", {g['family']}" if g["family"] else ""
        lines.append(f"  GPU {g['index']}        {g['name']}: {g['gcnArchName'] or 'no gcnArchName'}{family}")
        lines.append(f"               {g['fp8_note']}")
        if g.get("capability_note"):
            lines.append(f"               {g['capability_note']}")
    if not rocm["gpus"]:
        lines.append("  GPUs         none visible: the known issues below are those of this HIP version on any GPU")
    if rocm["runtime_issues"]:
        lines.append(f"  Known HIP-runtime issues for {rocm['version_checked']} (from {rocm['version_source']}):")
        for i in rocm["runtime_issues"]:
            mark = "" if i["certain"] else "possibly (patch level or GPU unknown): "
            lines.append(f"    - {mark}{i['effect']} [ROCm {i['versions']}, GPUs: {', '.join(i['gpus'])}; "
                         f"{i['status']}; {', '.join(i['sources'])}]")
        lines.append("    CUDA graphs (reduce-overhead, manual capture) are risky on this stack: keep rocmport's "
                     "ROC1xx/ROC3xx fixes on.")
    elif rocm["version_checked"]:
        lines.append(f"  No known HIP-runtime capture issue for {rocm['version_checked']}.")
    for note in rocm["notes"]:
        lines.append("  Note: " + note)
    return lines


# ------------------------------------------------------------------------------------------
# Rendering
# ------------------------------------------------------------------------------------------

NO_TORCH = ("torch is not installed in this Python environment ({executable}), so there is nothing for "
            "`rocmport doctor` to inspect. Install torch here (pip install torch) and run it again. "
            "`rocmport lint` and `rocmport fix` do not need torch.")


def render_text(report: Report) -> str:
    lines = ["rocmport doctor", f"Python  {report.python} ({report.executable})"]
    if report.torch is None:
        lines.append("torch   not installed")
        lines.append("")
        lines.append(NO_TORCH.format(executable=report.executable))
        if report.torch_error:
            lines.append(f"(import torch failed: {report.torch_error})")
        return "\n".join(lines) + "\n"
    build = {"rocm": f"ROCm (HIP {report.hip})", "cuda": f"CUDA {report.cuda}", "cpu": "CPU only (no CUDA, no HIP)"}
    lines.append(f"torch   {report.torch}, build: {build.get(report.build, report.build)}")
    lines.append("GPUs    " + (", ".join(report.gpus) if report.gpus else "none visible"))
    if report.rocm is not None:
        lines += _rocm_lines(report.rocm)
    lines += ["", "Inductor and Dynamo settings (value, where it came from):"]
    width = max((len(s["name"]) for s in report.settings), default=0)
    for s in report.settings:
        value = "-" if s["value"] is None and s["source"] == "not in this torch" else repr(s["value"])
        lines.append(f"  {s['name']:<{width}}  {value:<18} {s['source']}")
    lines += ["", "Environment variables:"]
    if not report.environment:
        lines.append("  none of the variables that matter on ROCm is set")
    for e in report.environment:
        flag = "RED FLAG " if e.red_flag else ""
        lines.append(f"  {flag}{e.name}={e.value}: {e.effect}")
    lines += ["", "Dynamo RNG patch: " + ("needed: " if report.rng_patch_needed else "not needed: ")
              + _rng_reason(report.torch, report.rng_patch_needed)]
    for note in report.notes:
        lines.append("Note: " + note)
    lines.append("")
    flags = report.red_flags
    if flags:
        lines.append(f"{len(flags)} red flag{'s' if len(flags) != 1 else ''}: " + ", ".join(e.name for e in flags)
                     + ".")
        lines += remedy(flags, report.build)
    else:
        lines.append("No red flags.")
    return "\n".join(lines) + "\n"


def render_json(report: Report) -> str:
    data = report.as_dict()
    if report.torch is None:
        data["error"] = NO_TORCH.format(executable=report.executable) + (
            f" (import torch failed: {report.torch_error})" if report.torch_error else "")
    return json.dumps(data, indent=2) + "\n"


def run(output_format: str = "text", environ: Optional[Mapping[str, str]] = None) -> Tuple[str, int]:
    """The doctor's output and exit status."""
    report = inspect(environ)
    text = render_json(report) if output_format == "json" else render_text(report)
    if report.torch is None:
        return text, EXIT_NO_TORCH
    return text, EXIT_RED_FLAG if report.red_flags else EXIT_OK
