"""The generated prelude: the ``is_rocm`` gate and the ROCm set-up that fixed code relies on.

This module knows no rules. Fixes name the parts they need (:data:`PARTS`); the engine asks
for a block with those parts and decides where it goes. The block is delimited by marker
comments so a later run finds it, updates it in place when this generator's version or the
settings change, and never inserts it twice.

Everything generated follows ``shared/docs/torch-facts.md``:
- the gate is ``getattr(torch.version, "hip", None) is not None``;
- inductor is configured process-wide with ``os.environ.setdefault`` before
  ``torch._inductor.config`` is first imported (environment values are process-wide; config
  assignments are thread-local from torch 2.12), falling back, and saying so, to guarded
  per-key assignment when it already was; unknown names are skipped, never raised;
- the Dynamo recompile limit is raised under whichever name the installed torch has;
- the Dynamo RNG patch wraps ``torch._dynamo.convert_frame._compile`` and only on torch
  < 2.10 (the published patches do nothing on current torch);
- nothing at all runs on the NVIDIA path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import FrozenSet, Iterable, Optional, Tuple

VERSION = 1
MODE_MAPPER = "rocmport_compile_mode"
DEFAULT_GATE = "is_rocm"
PARTS = ("gate", "mode_mapper", "setup")

BEGIN_RE = re.compile(
    r"^# >>> rocmport prelude v(?P<version>\d+) (?P<style>inline|import) gate=(?P<gate>[A-Za-z_]\w*)"
    r" parts=(?P<parts>[a-z_,]*)(?: (?P<opts>[a-z0-9_=,.-]*))? >>>[ \t]*$",
    re.M,
)
END_LINE = "# <<< rocmport prelude <<<"
END_RE = re.compile(r"^# <<< rocmport prelude <<<[ \t]*(?:\r\n|\r|\n|$)", re.M)

# (config name, environment variable or None, ROCm value). "safe": only what prevents
# hangs, crashes and CUDA graphs on ROCm.
SAFE_SETTINGS: Tuple[Tuple[str, Optional[str], object], ...] = (
    ("triton.cudagraphs", "TORCHINDUCTOR_CUDAGRAPHS", False),
    ("max_autotune_gemm_backends", "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS", "ATEN"),
    ("memory_planning", "TORCHINDUCTOR_MEMORY_PLANNING", False),
)
# "tuned" adds the field notes' fusion and tuning settings.
TUNED_SETTINGS: Tuple[Tuple[str, Optional[str], object], ...] = (
    ("epilogue_fusion", None, True),
    ("aggressive_fusion", None, True),
    ("group_fusion", None, True),
    ("max_fusion_size", None, 128),
    ("coordinate_descent_tuning", "TORCHINDUCTOR_COORDINATE_DESCENT_TUNING", True),
    ("benchmark_kernel", "TORCHINDUCTOR_BENCHMARK_KERNEL", True),
    ("triton.multi_kernel", "TORCHINDUCTOR_MULTI_KERNEL", 1),
    ("shape_padding", "TORCHINDUCTOR_SHAPE_PADDING", True),
)
INFERENCE_SETTINGS: Tuple[Tuple[str, Optional[str], object], ...] = (
    ("freezing", "TORCHINDUCTOR_FREEZING", True),
)
RECOMPILE_LIMIT = 128


@dataclass(frozen=True)
class PreludeOptions:
    style: str = "auto"  # auto | inline | module
    profile: str = "safe"  # safe | tuned
    inference_only: bool = False
    compile_guard: bool = False
    rng_patch: bool = True
    inductor_setup: bool = True
    module_name: str = "_rocmport"

    def tag(self) -> str:
        """The options that shape the generated text, recorded in the marker line."""
        bits = [f"profile={self.profile}"]
        if self.inference_only:
            bits.append("inference")
        if self.compile_guard:
            bits.append("guard")
        if not self.rng_patch:
            bits.append("norng")
        if not self.inductor_setup:
            bits.append("nosetup")
        return ",".join(bits)


@dataclass(frozen=True)
class Block:
    """An existing prelude block found in a file."""

    start: int
    end: int
    version: int
    style: str
    gate: str
    parts: FrozenSet[str]
    opts: str


def find_block(text: str) -> Optional[Block]:
    begin = BEGIN_RE.search(text)
    if not begin:
        return None
    end = END_RE.search(text, begin.end())
    if not end:
        return None
    parts = frozenset(p for p in begin.group("parts").split(",") if p)
    return Block(begin.start(), end.end(), int(begin.group("version")), begin.group("style"),
                 begin.group("gate"), parts, begin.group("opts") or "")


def normalise_parts(parts: Iterable[str], options: PreludeOptions) -> FrozenSet[str]:
    wanted = set(parts) | {"gate"}
    unknown = wanted - set(PARTS)
    if unknown:
        raise ValueError(f"unknown prelude parts: {sorted(unknown)}")
    if options.inductor_setup or options.rng_patch or options.compile_guard:
        wanted.add("setup")
    return frozenset(wanted)


def _header(style: str, gate: str, parts: FrozenSet[str], options: PreludeOptions) -> str:
    ordered = ",".join(p for p in PARTS if p in parts)
    return f"# >>> rocmport prelude v{VERSION} {style} gate={gate} parts={ordered} {options.tag()} >>>"


def _env_value(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def settings_for(options: PreludeOptions):
    settings = list(SAFE_SETTINGS)
    if options.profile == "tuned":
        settings += TUNED_SETTINGS
    if options.inference_only:
        settings += INFERENCE_SETTINGS
    return settings


def _body(gate: Optional[str], parts: FrozenSet[str], options: PreludeOptions) -> str:
    """The Python code of the prelude (without markers); ``gate`` None: not defined here."""
    out = [
        "import torch as _rocmport_torch",
        "",
        '_rocmport_hip = getattr(_rocmport_torch.version, "hip", None) is not None',
    ]
    if gate is not None:
        out.append(f"{gate} = _rocmport_hip")
    out += [
        '_ROCMPORT_ROCM_MODES = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}',
    ]
    if "mode_mapper" in parts or options.compile_guard:
        out += [
            "",
            "",
            f"def {MODE_MAPPER}(mode):",
            '    """The torch.compile mode without CUDA graphs on ROCm; unchanged on NVIDIA."""',
            "    if _rocmport_hip and isinstance(mode, str):",
            "        return _ROCMPORT_ROCM_MODES.get(mode, mode)",
            "    return mode",
        ]
    if "setup" in parts:
        out += _setup_code(options)
    return "\n".join(out) + "\n"


def _setup_code(options: PreludeOptions) -> list:
    settings = settings_for(options) if options.inductor_setup else []
    lines = ["", "", "def _rocmport_setup():",
             '    """ROCm set-up, once per process; called only on ROCm builds."""',
             "    torch = _rocmport_torch",
             '    if getattr(torch, "_rocmport_setup_done", False):',
             "        return",
             "    torch._rocmport_setup_done = True"]
    if settings:
        lines += ["    import os", "    import sys", "    import warnings", "",
                  "    # (inductor config name, environment variable, ROCm value)",
                  "    settings = ("]
        for name, env, value in settings:
            lines.append(f"        ({name!r}, {env!r}, {value!r}),")
        lines += [
            "    )",
            '    imported = "torch._inductor.config" in sys.modules',
            "    pending = []",
            "    for name, env, value in settings:",
            "        if env is None:",
            "            pending.append((name, value))",
            "        elif not imported:",
            "            # Read once, when the config module is first imported: process-wide.",
            '            os.environ.setdefault(env, value if isinstance(value, str) else str(int(value)))',
            "        elif env not in os.environ:",
            "            pending.append((name, value))",
            "    if imported and pending:",
            "        warnings.warn(",
            '            "rocmport: torch._inductor.config was imported before the rocmport prelude ran; "',
            '            "ROCm inductor settings were assigned instead, which from torch 2.12 hold only in "',
            '            "the assigning thread. Import this module before anything that imports torch._inductor.",',
            "            stacklevel=2,",
            "        )",
            "    if pending:",
            "        try:",
            "            import torch._inductor.config as config",
            "        except Exception:",
            "            config = None",
            "        for name, value in pending:",
            "            target = config",
            '            *parents, leaf = name.split(".")',
            "            for parent in parents:",
            "                target = getattr(target, parent, None)",
            "            if target is not None and hasattr(target, leaf):",
            "                try:",
            "                    setattr(target, leaf, value)",
            "                except Exception:",
            "                    pass",
            "    try:",
            "        import torch._dynamo.config as dynamo_config",
            "    except Exception:",
            "        dynamo_config = None",
            '    for name in ("recompile_limit", "cache_size_limit"):',
            "        if dynamo_config is not None and hasattr(dynamo_config, name):",
            f"            if getattr(dynamo_config, name) < {RECOMPILE_LIMIT}:",
            f"                setattr(dynamo_config, name, {RECOMPILE_LIMIT})",
            "            break",
        ]
    if options.rng_patch:
        lines += ["    _rocmport_rng_patch()"]
    if options.compile_guard:
        lines += ["    _rocmport_compile_guard()"]
    if options.rng_patch:
        lines += _rng_patch_code()
    if options.compile_guard:
        lines += _compile_guard_code()
    lines += ["", "", "if _rocmport_hip:", "    _rocmport_setup()"]
    return lines


def _rng_patch_code() -> list:
    return [
        "", "",
        "def _rocmport_rng_patch():",
        '    """Let Dynamo compile during CUDA-graph capture on torch < 2.10 (fixed upstream in',
        "    2.10, PR #162505): while Dynamo compiles on a capturing stream, get_rng_state returns a",
        '    dummy state and set_rng_state skips the restore. Applied once; restorable."""',
        "    import functools",
        "    import re",
        "    import threading",
        "",
        "    torch = _rocmport_torch",
        '    match = re.match(r"(\\d+)\\.(\\d+)", torch.__version__)',
        "    if match is None or (int(match.group(1)), int(match.group(2))) >= (2, 10):",
        "        return False",
        '    if getattr(torch, "_rocmport_rng_restore", None) is not None:',
        "        return False",
        "    try:",
        "        import torch._dynamo.convert_frame as convert_frame",
        "    except Exception:",
        "        return False",
        "    cuda = torch.cuda",
        '    if not all(hasattr(cuda, n) for n in ("get_rng_state", "set_rng_state")) or not hasattr(',
        '        convert_frame, "_compile"',
        "    ):",
        "        return False",
        "    state = threading.local()",
        "    original_compile = convert_frame._compile",
        "    original_get, original_set = cuda.get_rng_state, cuda.set_rng_state",
        "",
        "    def capturing():",
        '        if getattr(state, "depth", 0) <= 0:',
        "            return False",
        "        try:",
        "            return cuda.is_available() and cuda.is_current_stream_capturing()",
        "        except Exception:",
        "            return False",
        "",
        "    @functools.wraps(original_compile)",
        "    def _compile(*args, **kwargs):",
        '        state.depth = getattr(state, "depth", 0) + 1',
        "        try:",
        "            return original_compile(*args, **kwargs)",
        "        finally:",
        "            state.depth -= 1",
        "",
        "    @functools.wraps(original_get)",
        "    def get_rng_state(*args, **kwargs):",
        "        if capturing():",
        "            return torch.zeros(16, dtype=torch.uint8)",
        "        return original_get(*args, **kwargs)",
        "",
        "    @functools.wraps(original_set)",
        "    def set_rng_state(*args, **kwargs):",
        "        if capturing():",
        "            return None",
        "        return original_set(*args, **kwargs)",
        "",
        "    def restore():",
        "        convert_frame._compile = original_compile",
        "        cuda.get_rng_state, cuda.set_rng_state = original_get, original_set",
        "        torch._rocmport_rng_restore = None",
        "",
        "    convert_frame._compile = _compile",
        "    cuda.get_rng_state, cuda.set_rng_state = get_rng_state, set_rng_state",
        "    torch._rocmport_rng_restore = restore",
        "    return True",
    ]


def _compile_guard_code() -> list:
    return [
        "", "",
        "def _rocmport_compile_guard():",
        '    """On ROCm, give every torch.compile call (libraries too) the ROCm form of its mode."""',
        "    import functools",
        "",
        "    torch = _rocmport_torch",
        "    original = torch.compile",
        '    if getattr(original, "_rocmport_guard", False):',
        "        return",
        "",
        "    @functools.wraps(original)",
        "    def compile(*args, **kwargs):",
        '        if "mode" in kwargs:',
        '            kwargs["mode"] = _ROCMPORT_ROCM_MODES.get(kwargs["mode"], kwargs["mode"])',
        '        options = kwargs.get("options")',
        '        if isinstance(options, dict) and options.get("triton.cudagraphs"):',
        '            kwargs["options"] = {**options, "triton.cudagraphs": False}',
        "        return original(*args, **kwargs)",
        "",
        "    compile._rocmport_guard = True",
        "    torch.compile = compile",
    ]


def render_inline(gate: str, parts: Iterable[str], options: PreludeOptions, *,
                  define_gate: bool = True, newline: str = "\n") -> str:
    """The marker-delimited block for a file (``define_gate`` False: reuse the file's own)."""
    parts = normalise_parts(parts, options)
    body = _body(gate if define_gate else None, parts, options)
    text = f"{_header('inline', gate, parts, options)}\n{_BANNER}\n{body}{END_LINE}\n"
    return text.replace("\n", newline) if newline != "\n" else text


def render_import(package: str, gate: str, parts: Iterable[str], options: PreludeOptions, *,
                  define_gate: bool = True, newline: str = "\n") -> str:
    """The block that imports the gate (and mapper) from the package's generated module."""
    parts = normalise_parts(parts, options)
    names = []
    if define_gate:
        names.append(DEFAULT_GATE if gate == DEFAULT_GATE else f"{DEFAULT_GATE} as {gate}")
    if "mode_mapper" in parts:
        names.append(MODE_MAPPER)
    target = f"{package}.{options.module_name}" if package else options.module_name
    line = f"from {target} import {', '.join(names)}  # noqa: F401" if names else f"import {target}  # noqa: F401"
    text = f"{_header('import', gate, parts, options)}\n{line}\n{END_LINE}\n"
    return text.replace("\n", newline) if newline != "\n" else text


def render_module(options: PreludeOptions, newline: str = "\n") -> str:
    """The generated module of the ``module`` style: every part, gate named ``is_rocm``.
    Its block is the inline block itself, so a later run over the package keeps it as is."""
    docstring = ('"""ROC gate and set-up generated by rocmport for this package; files import it.\n\n'
                 'Regenerated in place by `rocmport fix`; do not edit by hand."""\n').replace("ROC gate", "ROCm gate")
    text = docstring + render_inline(DEFAULT_GATE, PARTS, options)
    return text.replace("\n", newline) if newline != "\n" else text


_BANNER = "# Generated by rocmport (`rocmport prelude` prints it); `rocmport fix` updates it in place."
