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
- the opt-in CUDA-graph helper (``rocmport_cudagraph``) captures and replays by hand on ROCm
  and returns the callable itself on NVIDIA;
- nothing at all runs on the NVIDIA path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import FrozenSet, Iterable, Optional, Tuple

VERSION = 2
MODE_MAPPER = "rocmport_compile_mode"
GRAPH_HELPER = "rocmport_cudagraph"
DEFAULT_GATE = "is_rocm"
# The gate a package's modules share, in its utilities module (``rocmport.package_gate``): private,
# so that a star import of that module does not bind it.
PACKAGE_GATE = "_is_rocm"
PARTS = ("gate", "mode_mapper", "setup", "graph_helper")

# Line starts and ends by Python's terminators (\r\n, \r, \n): re.M's ^ and $ know only \n.
BEGIN_RE = re.compile(
    r"(?:\A|(?<=[\r\n]))# >>> rocmport prelude v(?P<version>\d+) (?P<style>inline|import) gate=(?P<gate>[A-Za-z_]\w*)"
    r" parts=(?P<parts>[a-z_,]*)(?: (?P<opts>[a-z0-9_=,.-]*))? >>>[ \t]*(?=[\r\n]|\Z)",
)
END_LINE = "# <<< rocmport prelude <<<"
END_RE = re.compile(r"(?:\A|(?<=[\r\n]))# <<< rocmport prelude <<<[ \t]*(?:\r\n|\r|\n|\Z)")

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
    rng_patch: Optional[bool] = None  # None: only where the project may run on torch < 2.10
    inductor_setup: bool = True
    module_name: str = "_rocmport"
    # What the program proves (``rocmport.program``), for the set-up of an entry point: None
    # when not known (the long, general set-up); else the set-up holds only what changes
    # something for it (the short form, ``lean``)
    compiles: Optional[bool] = None
    autotunes: bool = False

    def tag(self) -> str:
        """The options that shape the generated text, recorded in the marker line."""
        bits = [] if self.lean() and self.profile == "safe" else [f"profile={self.profile}"]
        if self.inference_only:
            bits.append("inference")
        if self.compile_guard:
            bits.append("guard")
        if self.rng_patch is False and not self.lean():
            bits.append("norng")
        if not self.inductor_setup:
            bits.append("nosetup")
        if self.lean():  # only a program that compiles gets one
            bits.append("lean")
            if self.autotunes:
                bits.append("autotune")
        return ",".join(bits)

    def lean(self) -> bool:
        """The short set-up: the program's facts are known and nothing long was asked for."""
        return self.compiles is not None and not self.compile_guard and not self.rng_patch


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
    """The parts asked for, plus the gate they all test. Set-up is a part of its own, asked for
    only where a program starts (``rocmport setup``), never added to a fix's block."""
    wanted = set(parts) | {"gate"}
    unknown = wanted - set(PARTS)
    if unknown:
        raise ValueError(f"unknown prelude parts: {sorted(unknown)}")
    return frozenset(wanted)


def _header(style: str, gate: str, parts: FrozenSet[str], options: PreludeOptions) -> str:
    if options.lean() and set(parts) == {"gate", "setup"}:
        parts = frozenset({"setup"})  # a short set-up defines no gate: a short marker line
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


def lean_settings(options: PreludeOptions):
    """(config name, environment variable or None, value, why) of the short set-up: only the
    settings that change something for a program that does what ``options`` says."""
    out = []
    if not options.inductor_setup or not options.compiles:
        return out
    if options.autotunes:
        out.append(("max_autotune_gemm_backends", "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS", "ATEN",
                    "max-autotune's Triton and C++ GEMM templates fail or time out on ROCm (ROC204)"))
    if options.profile == "tuned":
        out += [(name, env, value, "tuned profile") for name, env, value in TUNED_SETTINGS]
        out.append(("recompile_limit", None, RECOMPILE_LIMIT, "tuned profile"))
    if options.inference_only:
        out += [(name, env, value, "inference-only") for name, env, value in INFERENCE_SETTINGS]
    return out


def _lean_body(torch_name: Optional[str], options: PreludeOptions, os_name: Optional[str],
               optional: bool = False) -> str:
    """The short set-up of an entry point: environment defaults, set only on ROCm, before
    ``torch._inductor.config`` is imported; config assignments only for what has no variable
    (tuned profile). Formatter-clean (black, ruff format) and clean under ruff's default rules.
    ``optional``: the file runs without torch; the block keeps it so (its own import in
    ``try``/``except ImportError``, a ROCm test that is False without torch)."""
    settings = lean_settings(options)
    out = []
    if torch_name is None:
        out += ["try:", "    import torch", "except ImportError:", "    torch = None", ""] if optional else ["import torch"]
        torch_name = "torch"
    version = f'getattr({torch_name}, "version", None)' if optional else f"{torch_name}.version"
    out.append(f'if getattr({version}, "hip", None) is not None:')
    if os_name is None:
        out += ["    import os", ""]
        os_name = "os"
    reasons = []
    for _name, env, value, why in settings:
        if env is None:
            continue
        if why not in reasons:
            reasons.append(why)
            out.append(f"    # {why}")
        out.append(f'    {os_name}.environ.setdefault("{env}", "{_env_value(value)}")')
    config = [(name, value) for name, env, value, _ in settings if env is None and name != "recompile_limit"]
    if config:
        out += ["    import torch._inductor.config as inductor_config", ""]
        out += [f"    inductor_config.{name} = {value!r}" for name, value in config]
    if any(name == "recompile_limit" for name, *_ in settings):
        out += ["    import torch._dynamo.config as dynamo_config", "",
                f"    dynamo_config.cache_size_limit = max(dynamo_config.cache_size_limit, {RECOMPILE_LIMIT})"]
    while out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def _body(gate: Optional[str], parts: FrozenSet[str], options: PreludeOptions) -> str:
    """The Python code of the prelude (without markers); ``gate`` None: not defined here."""
    out = [
        _IMPORT_LINE,
        "",
        '_rocmport_hip = getattr(_rocmport_torch.version, "hip", None) is not None',
    ]
    if gate is not None:
        out.append(f"{gate} = _rocmport_hip")
    guard = "setup" in parts and options.compile_guard
    if "mode_mapper" in parts or guard:
        out += [
            '_ROCMPORT_ROCM_MODES = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}',
        ]
    if "mode_mapper" in parts:
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
    if "graph_helper" in parts:
        out += ["", ""] + _GRAPH_HELPER_CODE.strip("\n").split("\n")
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


_IMPORT_LINE = "import torch as _rocmport_torch"
_HIP_LINE = '_rocmport_hip = getattr(_rocmport_torch.version, "hip", None) is not None'
_OPTIONAL_HIP_LINE = '_rocmport_hip = getattr(getattr(_rocmport_torch, "version", None), "hip", None) is not None'
_OPTIONAL_IMPORT = "try:\n    import torch as _rocmport_torch\nexcept ImportError:\n    _rocmport_torch = None"


def render_inline(gate: str, parts: Iterable[str], options: PreludeOptions, *,
                  define_gate: bool = True, newline: str = "\n", torch_name: Optional[str] = None,
                  optional: bool = False, os_name: Optional[str] = None) -> str:
    """The marker-delimited block for a file (``define_gate`` False: reuse the file's own).
    ``torch_name``: the name the file binds torch to before the block; the block then uses it
    instead of importing torch itself, so it holds no import that isort would sort across its
    markers. ``optional``: the file runs without torch, and the block keeps it so (its own
    import in ``try``/``except ImportError``, a ROCm test that is False without torch)."""
    parts = normalise_parts(parts, options)
    if parts == {"gate", "setup"} and not define_gate and options.lean():
        text = (f"{_header('inline', gate, parts, options)}\n{_LEAN_BANNER}\n"
                f"{_lean_body(torch_name, options, os_name, optional)}{END_LINE}\n")
        return text.replace("\n", newline) if newline != "\n" else text
    body = _body(gate if define_gate else None, parts, options)
    if torch_name is not None:
        body = body.replace(_IMPORT_LINE, f"_rocmport_torch = {torch_name}", 1)
    elif optional:
        body = body.replace(_IMPORT_LINE, _OPTIONAL_IMPORT, 1)
    if optional:
        body = body.replace(_HIP_LINE, _OPTIONAL_HIP_LINE, 1)
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
    if "graph_helper" in parts:
        names.append(GRAPH_HELPER)
    # ``package``: the top package's dotted name, or the dots of a relative import of it
    target = (f"{package}{options.module_name}" if package.startswith(".")
              else f"{package}.{options.module_name}" if package else options.module_name)
    line = f"from {target} import {', '.join(names)}  # noqa: F401" if names else f"import {target}  # noqa: F401"
    text = f"{_header('import', gate, parts, options)}\n{line}\n{END_LINE}\n"
    return text.replace("\n", newline) if newline != "\n" else text


def render_module(options: PreludeOptions, parts: Iterable[str] = PARTS, newline: str = "\n",
                  header: str = "") -> str:
    """The generated module of the ``module`` style with the parts the package uses, gate named
    ``is_rocm``, after ``header`` (the license comment the package's files share). Its block is
    the inline block itself, so a later run over the package keeps it as is."""
    docstring = ('"""ROCm gate generated by rocmport for this package; files import it.\n\n'
                 'Regenerated in place by `rocmport fix`; do not edit by hand."""\n')
    text = header + docstring + render_inline(DEFAULT_GATE, parts, options)
    return text.replace("\n", newline) if newline != "\n" else text


def same_code(a, b) -> bool:
    """Do two texts hold the same Python (compared by syntax tree, so a formatter's quotes,
    wrapping and blank lines do not count as a change)? Comments are compared too, as
    lines, since the markers are comments."""
    import ast

    if isinstance(a, bytes):
        a = a.decode("utf-8", "replace")
    if isinstance(b, bytes):
        b = b.decode("utf-8", "replace")
    try:
        same_tree = ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return a == b
    if not same_tree:
        return False
    comments = lambda t: [ln.strip() for ln in t.splitlines() if ln.strip().startswith("#")]  # noqa: E731
    return comments(a) == comments(b)


def _tag_options(opts: str, base: PreludeOptions) -> PreludeOptions:
    from dataclasses import replace

    bits = set(opts.split(",")) if opts else set()
    profile = "tuned" if "profile=tuned" in bits else "safe"
    if "lean" in bits:
        return replace(base, profile=profile, inference_only="inference" in bits, compile_guard=False,
                       rng_patch=False, inductor_setup="nosetup" not in bits, compiles=True,
                       autotunes="autotune" in bits)
    return replace(base, profile=profile, inference_only="inference" in bits, compile_guard="guard" in bits,
                   rng_patch=("norng" not in bits) and base.rng_patch is not False, inductor_setup="nosetup" not in bits,
                   compiles=None, autotunes=False)


def is_own_block(text: str, block: Block, options: PreludeOptions) -> bool:
    """Is the block between the markers exactly what this generator writes for its header
    (by syntax tree)? A block that a person or a tool (isort moving imports into it) changed
    is not: rocmport never replaces it."""
    content = text[block.start:block.end]
    if block.style == "import":
        import ast

        try:
            tree = ast.parse(content)
        except (SyntaxError, ValueError):
            return False
        return len(tree.body) == 1 and isinstance(tree.body[0], (ast.Import, ast.ImportFrom))
    if block.version != VERSION:
        return False
    opts = _tag_options(block.opts, options)
    match = re.search(r"(?m)^_rocmport_torch = (?P<name>[A-Za-z_]\w*)[ \t]*$",
                      content.replace("\r\n", "\n").replace("\r", "\n"))  # any newline
    torch_name = match.group("name") if match else None
    optional = "getattr(getattr(_rocmport_torch" in content
    if opts.lean():
        lean = re.search(r'if getattr\((?:getattr\()?(?P<name>[A-Za-z_]\w*)(?:\.version|, ["\']version["\'], None\)),'
                         r' ["\']hip["\']', content)
        optional = bool(lean) and lean.group(0).startswith("if getattr(getattr(")
        own_import = re.search(r"(?m)^[ \t]*import torch\s*$", content)
        torch_name = lean.group("name") if lean and not own_import else None
        os_name = None if re.search(r"(?m)^[ \t]+import os\s*$", content) else "os"
        return same_code(content, render_inline(block.gate, block.parts, opts, define_gate=False,
                                                torch_name=torch_name, os_name=os_name, optional=optional))
    for define_gate in (True, False):
        rendered = render_inline(block.gate, block.parts, opts, define_gate=define_gate, torch_name=torch_name,
                                 optional=optional)
        if same_code(content, rendered) or any(same_code(content, rendered.replace(now, before))
                                               for now, before in _EARLIER_HELPER):
            return True
    return False


# What the graph helper said before, in blocks written by an earlier rocmport of the same
# version (v2): still rocmport's own block, regenerated in the current form. (The capture's
# two `with` statements became one, ruff's SIM117; the fallback's `except Exception` says
# why it is broad, ruff's BLE001: any error of the capture or of the call runs the plain call.)
_EARLIER_HELPER = ((
    """            with torch.cuda.device(device), torch.cuda.graph(graph, stream=side):
                try:
                    static_out = self.__wrapped__(*static_args, **static_kwargs)
                except Exception as exc:
                    raised.append(exc)
                    raise
        except Exception as exc:  # noqa: BLE001 (whatever failed, the plain call runs)""",
    """            with torch.cuda.device(device):
                with torch.cuda.graph(graph, stream=side):
                    try:
                        static_out = self.__wrapped__(*static_args, **static_kwargs)
                    except Exception as exc:
                        raised.append(exc)
                        raise
        except Exception as exc:"""),)


def is_generated_module(data: bytes) -> bool:
    """Does a file hold a module this generator wrote (its block is the whole code)?"""
    text = data.decode("utf-8", "replace")
    block = find_block(text)
    if block is None:
        return False
    return not text[block.end:].strip() and is_own_block(text, block, PreludeOptions())


_LEAN_BANNER = "# ROCm set-up for this program (`rocmport setup`); nothing runs on NVIDIA."
_BANNER = "# Generated by rocmport (`rocmport prelude` prints it); `rocmport fix` updates it in place."


# The opt-in CUDA-graph helper (part "graph_helper"). Manual capture and replay work on ROCm
# (HIP graphs) where inductor's own CUDA graphs do not reliably; measured on a launch-bound
# MLP (shared/docs/torch-facts.md), "default" plus a manual capture recovers all of
# "reduce-overhead"'s gain. On NVIDIA the helper returns the callable itself.
_GRAPH_HELPER_CODE = r'''
def rocmport_cudagraph(fn=None, *, clone_outputs=True, max_signatures=8, warmup=1):
    """On ROCm, run ``fn`` (a ``torch.compile(..., mode="default")`` callable) through CUDA
    (HIP) graphs captured by hand, as mode="reduce-overhead" does on NVIDIA. On NVIDIA (and
    on any build that is not ROCm) it returns ``fn`` itself, untouched.

    One graph per input signature: for every argument, a tensor's shape, strides, dtype,
    device and requires_grad; a scalar's (None, bool, int, float, str) type and value; a
    module's identity; and the grad and inference modes. The first ``warmup`` calls with a
    signature run ``fn`` plainly (that compiles it: nothing is compiled during a capture);
    the next one copies its tensors into static input buffers, captures one call of ``fn``
    and replays it; later calls copy their tensors in and replay. Each call runs ``fn``'s
    GPU work once.

    The warm-up calls and the capture run on one side stream per device, the one passed to
    ``torch.cuda.graph(..., stream=)`` (PyTorch's recommended pattern): libraries that keep
    a handle per stream (hipBLASLt from torch 2.12 on ROCm) create it during the warm-up,
    not during the capture, where creating it fails or hangs. The side stream waits for the
    current stream before a warm-up call and the current stream waits for it after.

    Outputs live in the graph's static output buffers, which the next replay overwrites:
    they are cloned before they are returned unless ``clone_outputs=False`` (then use or
    copy them before the next call with the same signature).

    The plain compiled call is made instead, and no graph is captured, for: an argument that
    is a CPU tensor or another object (a list, a dict, ...), tensors on several devices, no
    tensor at all; autograd (grad enabled and an input or output requiring grad); a call that
    modifies an input tensor in place (seen on its version counter during the warm-up;
    inference tensors have none, so under inference mode do not hand it such inputs); a
    signature whose capture failed (remembered: it is not tried again; a warning says why);
    and every new signature past ``max_signatures``. A graph freezes what is not an argument: Python state that
    ``fn`` reads (globals, flags, module attributes) keeps its value at capture, and
    parameters are read from their memory, so update them in place.
    """
    if fn is None:
        def decorator(function):
            return rocmport_cudagraph(function, clone_outputs=clone_outputs,
                                      max_signatures=max_signatures, warmup=warmup)
        return decorator
    if not _rocmport_hip or getattr(fn, "_rocmport_cudagraph", False):
        return fn
    return _RocmportGraphed(fn, clone_outputs, max_signatures, warmup)


class _RocmportGraphed:
    """What ``rocmport_cudagraph`` returns on ROCm; attributes are the wrapped callable's."""

    _rocmport_cudagraph = True

    def __init__(self, fn, clone_outputs, max_signatures, warmup):
        import functools

        functools.update_wrapper(self, fn, updated=())
        self.__wrapped__ = fn
        self._rocmport_clone = bool(clone_outputs)
        self._rocmport_max = int(max_signatures)
        self._rocmport_warmup = max(int(warmup), 1)
        # signature -> plain calls so far (int), a captured graph (tuple), or None: plain
        self._rocmport_entries = {}
        self._rocmport_warned = False
        self._rocmport_streams = {}  # device -> the side stream of warm-ups and captures

    def __getattr__(self, name):
        wrapped = self.__dict__.get("__wrapped__")
        if wrapped is None:
            raise AttributeError(name)
        return getattr(wrapped, name)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        import functools

        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        fn = self.__wrapped__
        slots, tensors, key = _rocmport_signature(args, kwargs)
        if key is None:
            return fn(*args, **kwargs)
        entries = self._rocmport_entries
        if key not in entries:
            if len(entries) >= self._rocmport_max:
                if not self._rocmport_warned:
                    self._rocmport_warned = True
                    import warnings

                    warnings.warn(f"rocmport_cudagraph: more than {self._rocmport_max} input signatures;"
                                  " new ones run without a CUDA graph", stacklevel=2)
                return fn(*args, **kwargs)
            entries[key] = 0
        entry = entries[key]
        if entry is None:
            return fn(*args, **kwargs)
        if isinstance(entry, int):
            if entry < self._rocmport_warmup:
                return self._rocmport_warm(key, args, kwargs, tensors)
            return self._rocmport_capture(key, args, kwargs, slots, tensors)
        graph, static_inputs, static_out = entry[0], entry[1], entry[2]
        for static, tensor in zip(static_inputs, tensors):
            static.copy_(tensor)
        graph.replay()
        return _rocmport_clone(static_out) if self._rocmport_clone else static_out

    def _rocmport_stream(self, device):
        """The side stream of ``device``, made on first use."""
        stream = self._rocmport_streams.get(device)
        if stream is None:
            stream = self._rocmport_streams[device] = _rocmport_torch.cuda.Stream(device=device)
        return stream

    def _rocmport_warm(self, key, args, kwargs, tensors):
        torch = _rocmport_torch
        versions = [_rocmport_version(t) for t in tensors]
        # On the side stream that the capture will use. Its allocations are only reused by
        # later work on that stream, which always starts by waiting for the current stream:
        # outputs handed back need no record_stream.
        side = self._rocmport_stream(tensors[0].device)
        current = torch.cuda.current_stream(tensors[0].device)
        side.wait_stream(current)
        try:
            with torch.cuda.stream(side):
                out = self.__wrapped__(*args, **kwargs)
        finally:
            current.wait_stream(side)
        mutated = any(_rocmport_version(t) != v for t, v in zip(tensors, versions))
        if mutated or (torch.is_grad_enabled() and _rocmport_requires_grad(out)):
            self._rocmport_entries[key] = None  # in-place input updates or autograd: no graph
        else:
            self._rocmport_entries[key] += 1
        return out

    def _rocmport_capture(self, key, args, kwargs, slots, tensors):
        torch = _rocmport_torch
        device = tensors[0].device
        current = torch.cuda.current_stream(device)
        raised = []  # what the captured call itself raised: the cause of a failed capture
        try:
            static_inputs = []
            for t in tensors:
                static = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)
                static.copy_(t)
                static_inputs.append(static)
            static_args, static_kwargs = list(args), dict(kwargs)
            for slot, static in zip(slots, static_inputs):
                if isinstance(slot, int):
                    static_args[slot] = static
                else:
                    static_kwargs[slot] = static
            graph = torch.cuda.CUDAGraph()
            side = self._rocmport_stream(device)
            with torch.cuda.device(device), torch.cuda.graph(graph, stream=side):
                try:
                    static_out = self.__wrapped__(*static_args, **static_kwargs)
                except Exception as exc:
                    raised.append(exc)
                    raise
        except Exception as exc:  # noqa: BLE001 (whatever failed, the plain call runs)
            # torch.cuda.graph's exit ends the capture before it leaves its stream: when ending
            # the capture raises (it does once the call broke it), its stream stays current
            torch.cuda.set_stream(current)
            _rocmport_settle(device, side, current)
            self._rocmport_entries[key] = None
            cause = raised[0] if raised else exc
            import warnings

            reason = (str(cause).strip().splitlines() or [""])[0]
            warnings.warn(f"rocmport_cudagraph: capture failed ({type(cause).__name__}: {reason}); this input"
                          " signature runs without a CUDA graph", stacklevel=3)
            return self.__wrapped__(*args, **kwargs)
        # The static arguments are kept so that modules and scalars stay alive with the graph.
        self._rocmport_entries[key] = (graph, static_inputs, static_out, static_args, static_kwargs)
        graph.replay()  # the capture ran nothing: this replay is the call
        return _rocmport_clone(static_out) if self._rocmport_clone else static_out


def _rocmport_settle(device, stream, current):
    """After a failed capture: torch's CUDA random number generator is still marked as
    capturing (ending the broken capture raised before the generator was told), so the next
    random op outside a capture raises "Offset increment outside graph capture encountered
    unexpectedly". One small capture that ends well clears the mark."""
    torch = _rocmport_torch
    try:
        scratch = torch.zeros(1, device=device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.device(device), torch.cuda.graph(graph, stream=stream):
            scratch.add_(1)
    except RuntimeError:  # a device too broken to capture anything: the plain call says so
        torch.cuda.set_stream(current)


def _rocmport_signature(args, kwargs):
    """(argument slots of the tensors, the tensors, the signature); signature None: no graph."""
    torch = _rocmport_torch
    grad = torch.is_grad_enabled()
    key = [grad, torch.is_inference_mode_enabled()]
    slots, tensors, device = [], [], None
    for slot, value in list(enumerate(args)) + sorted(kwargs.items()):
        if isinstance(value, torch.Tensor):
            if not value.is_cuda or (grad and value.requires_grad):
                return None, None, None
            if device is None:
                device = value.device
            elif value.device != device:
                return None, None, None
            key.append((slot, tuple(value.shape), tuple(value.stride()), value.dtype, value.device,
                        value.requires_grad))
            slots.append(slot)
            tensors.append(value)
        elif value is None or isinstance(value, (bool, int, float, str)):
            key.append((slot, type(value), value))
        elif isinstance(value, torch.nn.Module):
            key.append((slot, "module", id(value)))
        else:
            return None, None, None
    if not tensors:
        return None, None, None
    return slots, tensors, tuple(key)


def _rocmport_version(tensor):
    """The tensor's version counter; None for inference tensors, which have none."""
    try:
        return tensor._version
    except RuntimeError:
        return None


def _rocmport_requires_grad(value):
    torch = _rocmport_torch
    if isinstance(value, torch.Tensor):
        return value.requires_grad
    if isinstance(value, (list, tuple)):
        return any(_rocmport_requires_grad(v) for v in value)
    if isinstance(value, dict):
        return any(_rocmport_requires_grad(v) for v in value.values())
    return False


def _rocmport_clone(value):
    """A copy of the static outputs: tensors cloned, containers rebuilt, the rest shared."""
    torch = _rocmport_torch
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_rocmport_clone(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_rocmport_clone(v) for v in value)
    if isinstance(value, dict):
        import copy

        result = copy.copy(value)
        for k in value:
            result[k] = _rocmport_clone(value[k])
        return result
    return value
'''
