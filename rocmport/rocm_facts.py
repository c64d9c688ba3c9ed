"""What ROCm versions and AMD GPU architectures mean for ported code: one table, with sources.

``rocmport doctor`` reads it to explain the HIP runtime and GPU it finds, the ROC7xx rules
quote it in their documentation, and ``docs/rocm-facts.md`` is generated from it
(``python -m rocmport.rocm_facts``; ``--check`` exits 1 when the page is stale). Update a
fact here, with its source, when ROCm moves; nothing else holds a copy.

Pure data and small pure functions: no torch, no other rocmport module.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

Version = Tuple[int, ...]


@dataclass(frozen=True)
class Arch:
    """An AMD GPU architecture as torch's ``gcnArchName`` names it (without feature flags)."""

    gfx: str
    products: str
    capability: Optional[Tuple[int, int]]  # what torch.cuda.get_device_capability() reports; None: not recorded
    fp8_dtype: Optional[str]  # the torch e4m3 fp8 dtype its matrix cores use; None: no fp8
    fp8_max: Optional[float]
    sources: Tuple[str, ...]
    mx: bool = False  # FP4 and OCP MX-format (MXFP8 / MXFP4) matrix instructions


ARCHS: Tuple[Arch, ...] = (
    Arch("gfx90a", "MI200 (MI210, MI250, MI250X)", (9, 0), None, None,
         ("torchtitan#3738", "torch-facts.md")),
    Arch("gfx942", "MI300 (MI300X, MI300A, MI325X)", (9, 4), "float8_e4m3fnuz", 240.0,
         ("sglang#39628", "DiffSynth-Studio#1528", "pytorch/FBGEMM#4280", "torch-facts.md")),
    Arch("gfx950", "MI350 (MI350X, MI355X)", (9, 5), "float8_e4m3fn", 448.0,
         ("torchtitan#3760", "pytorch/FBGEMM#4280", "triton-lang/triton#7186", "torch-facts.md"), mx=True),
    Arch("gfx1200", "RDNA4 (Radeon RX 9060)", (12, 0), "float8_e4m3fn", 448.0,
         ("ROCm/legacy-rocm-build#6019", "ROCm/rocm-systems rocm-bootstrap", "torch-facts.md")),
    Arch("gfx1201", "RDNA4 (Radeon RX 9070, AI PRO R9700)", (12, 0), "float8_e4m3fn", 448.0,
         ("ROCm/legacy-rocm-build#6019", "ROCm/rocm-systems rocm-bootstrap", "torch-facts.md")),
)


def amd_capabilities() -> Tuple[Tuple[int, int], ...]:
    """What ``torch.cuda.get_device_capability()`` reports on the AMD GPUs of the table."""
    return tuple(sorted({a.capability for a in ARCHS if a.capability is not None}))


@dataclass(frozen=True)
class RuntimeIssue:
    """A known HIP-runtime problem for a range of ROCm versions (and, where known, GPUs)."""

    key: str
    first: Optional[Version]  # first affected version; None: every earlier one
    until: Optional[Version]  # first version NOT affected; None: not fixed yet
    archs: Tuple[str, ...]  # gfx names affected; () for every GPU
    effect: str
    sources: Tuple[str, ...]
    status: str

    def versions(self) -> str:
        if self.first is None:
            return f"before {_version(self.until)}"
        if self.until is None:
            return f"{_version(self.first)} and later"
        last = self.until[:-1] + (self.until[-1] - 1,)
        return _version(self.first) if last == self.first else f"{_version(self.first)} - {_version(last)}"


HIP_RAISES_IN_CAPTURE_FROM: Version = (7, 14)

RUNTIME_ISSUES: Tuple[RuntimeIssue, ...] = (
    RuntimeIssue(
        "capture-errors-swallowed", None, HIP_RAISES_IN_CAPTURE_FROM, (),
        "HIP does not raise on an illegal operation during stream capture (a host sync, a "
        "pageable copy): the capture 'succeeds' and the graph replays wrong results silently",
        ("pytorch#155684", "pytorch#187110"), "fixed in 7.14 (pytorch#187110 raises)"),
    RuntimeIssue(
        "mi300x-replay-corruption", (7, 2, 0), (7, 2, 4), ("gfx942",),
        "graph replays on MI300X corrupt results nondeterministically",
        ("ROCm/clr#279",), "open"),
    RuntimeIssue(
        "mi355x-stale-reads", (7, 2, 4), (7, 2, 5), ("gfx950",),
        "graph replays on MI355X read stale data",
        ("ROCm/hip#3902",), "open"),
)


@dataclass(frozen=True)
class Fact:
    """A one-line fact the rules and the doctor rely on."""

    topic: str
    claim: str
    sources: Tuple[str, ...]


FACTS: Tuple[Fact, ...] = (
    Fact("detection", "`torch.version.cuda` is None on ROCm builds; `torch.version.hip` is the HIP version "
         "string there and None elsewhere. `torch.version.rocm` does not exist on older torch: detect ROCm "
         "with `torch.version.hip`.",
         ("bitsandbytes-foundation/bitsandbytes#1513", "meta-pytorch/torchtune#597", "meta-pytorch/torchtune#801",
          "huggingface/transformers#24451", "DeepSpeed#6909", "pytorch#97013")),
    Fact("capability", "`torch.cuda.get_device_capability()` reports the gfx version on ROCm: (9, 0) on MI200, "
         "(9, 4) on MI300, (9, 5) on MI350. Comparisons against NVIDIA generations (`>= (9, 0)` for Hopper, "
         "`major >= 8` for Ampere) pick NVIDIA-only paths on AMD.",
         ("torchtitan#3738", "torchtitan#4778", "sglang#28486", "vllm#40620 (RFC)")),
    Fact("capability", "A blanket gate on capability checks lost fp8 on MI300: gate only NVIDIA-only features "
         "(FA3, TMA, wgmma kernels), not features AMD has (fp8, bf16).", ("torchtitan#3760",)),
    Fact("tools", "`nvidia-smi` and NVML (`pynvml`) do not exist on ROCm; `torch.cuda` memory and device "
         "queries work on both, `amdsmi` is AMD's management library.",
         ("bytedance/xpu-perf#194", "ryujaehun/pytorch-gpu-benchmark#29", "pytorch#133259")),
    Fact("packages", "FlashAttention 3 (`flash_attn_interface`, `flash_attn_3`, built from flash-attention's "
         "hopper/ directory), DeepGEMM, FlashMLA, TensorRT and PyCUDA have no ROCm builds: importing them "
         "unconditionally fails at import time on AMD, and so does every module that imports them.",
         ("theroyallab/tabbyAPI#5",)),
    Fact("fp8", "fp8 formats depend on the GPU architecture, not on ROCm alone: MI300 (gfx942) uses "
         "`float8_e4m3fnuz` (max 240), MI350 (gfx950) and RDNA4 use `float8_e4m3fn` (max 448), MI200 has "
         "no fp8. `torch.finfo(dtype).max` gives the right maximum for the dtype in use.",
         ("sglang#39628", "DiffSynth-Studio#1528")),
    Fact("arch", "AMD GPUs are not one architecture: a vendor test (`torch.version.hip`, `is_hip()`) is true on "
         "all of them, but only gfx942 (MI300) has fnuz fp8 in hardware (hipBLASLt: fnuz types on gfx942 only, OCP "
         "fp8 on gfx950 and gfx12), only gfx950 (MI350) runs FP4 and MX-format GEMMs, and AITER's kernels are built "
         "for CDNA3 / CDNA4 only; test `torch.cuda.get_device_properties(0).gcnArchName` instead.",
         ("pytorch/FBGEMM#4280", "pytorch/FBGEMM#4282", "triton-lang/triton#7186", "ROCm/legacy-rocm-build#6019",
          "nod-ai/amd-shark-ai#1604", "xdit-project/xDiT#651")),
    Fact("capture", "CUDA graphs on ROCm are version-dependent: HIP before 7.14 swallows capture errors; "
         "ROCm 7.2.0-7.2.3 corrupts replays on MI300X; ROCm 7.2.4 on MI355X reads stale data.",
         ("pytorch#155684", "ROCm/clr#279", "ROCm/hip#3902")),
)


# ------------------------------------------------------------------------------------------
# Lookups
# ------------------------------------------------------------------------------------------

_GFX = re.compile(r"gfx[0-9a-f]+", re.I)
_VERSION = re.compile(r"\s*(\d+)\.(\d+)(?:\.(\d+))?")


def base_arch(gcn_arch_name: Optional[str]) -> Optional[str]:
    """``gfx942`` from ``gfx942:sramecc+:xnack-``; None when there is no gfx name."""
    match = _GFX.search(gcn_arch_name or "")
    return match.group().lower() if match else None


def arch(gcn_arch_name: Optional[str]) -> Optional[Arch]:
    name = base_arch(gcn_arch_name)
    return next((a for a in ARCHS if a.gfx == name), None)


def parse_version(text: Optional[str], parts: int = 3) -> Optional[Version]:
    """The first ``parts`` numbers of ``7.2.1-81``. ``torch.version.hip`` ("6.2.41133-dd7f95766")
    is read with ``parts=2``: its third number is a build number, not the ROCm patch level."""
    match = _VERSION.match(text or "")
    if not match:
        return None
    return tuple(int(g) for g in match.groups() if g is not None)[:parts]


_HIGH = 1 << 30


def _affected(version: Version, issue: RuntimeIssue) -> Optional[bool]:
    """Is ``version`` in the issue's range? None when it is too coarse to tell (7.2 against
    7.2.0 - 7.2.3)."""
    precision = max(len(issue.first or ()), len(issue.until or ()))
    low = version + (0,) * (precision - len(version))
    high = version + (_HIGH,) * (precision - len(version))
    if (issue.first is not None and high < issue.first) or (issue.until is not None and low >= issue.until):
        return False
    if (issue.first is None or low >= issue.first) and (issue.until is None or high < issue.until):
        return True
    return None


def runtime_issues(version: Optional[Version], gfx: Optional[str] = None):
    """(issue, certain) for every known issue that may apply to ``version`` on ``gfx``:
    ``certain`` is False where the version is too coarse or the GPU is unknown."""
    out = []
    if version is None:
        return out
    for issue in RUNTIME_ISSUES:
        if issue.archs and gfx is not None and gfx not in issue.archs:
            continue
        hit = _affected(version, issue)
        if hit is not False:
            out.append((issue, bool(hit) and (not issue.archs or gfx is not None)))
    return out


# ------------------------------------------------------------------------------------------
# Rendering (rule docs and docs/rocm-facts.md)
# ------------------------------------------------------------------------------------------

def _version(v: Optional[Version]) -> str:
    return "any later" if v is None else ".".join(str(p) for p in v)


def arch_table() -> str:
    """Markdown table of the architectures (capability, fp8)."""
    rows = ["| gfx | GPUs | get_device_capability() | fp8 e4m3 dtype | fp8 max | FP4 / MX | sources |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for a in ARCHS:
        cap = "not recorded" if a.capability is None else f"{a.capability}"
        dtype = f"`torch.{a.fp8_dtype}`" if a.fp8_dtype else "none"
        fmax = "-" if a.fp8_max is None else f"{a.fp8_max:g}"
        mx = "yes" if a.mx else "no"
        rows.append(f"| {a.gfx} | {a.products} | {cap} | {dtype} | {fmax} | {mx} | {', '.join(a.sources)} |")
    return "\n".join(rows)


def runtime_table() -> str:
    rows = ["| issue | ROCm versions | GPUs | effect | status | sources |", "| --- | --- | --- | --- | --- | --- |"]
    for i in RUNTIME_ISSUES:
        versions = i.versions()
        gpus = ", ".join(i.archs) or "all"
        rows.append(f"| {i.key} | {versions} | {gpus} | {i.effect} | {i.status} | {', '.join(i.sources)} |")
    return "\n".join(rows)


def facts_table(topics: Optional[Tuple[str, ...]] = None) -> str:
    rows = ["| topic | fact | sources |", "| --- | --- | --- |"]
    for f in FACTS:
        if topics is None or f.topic in topics:
            rows.append(f"| {f.topic} | {f.claim} | {', '.join(f.sources)} |")
    return "\n".join(rows)


DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "rocm-facts.md"


def render_markdown() -> str:
    return "\n".join([
        "# ROCm facts rocmport relies on",
        "",
        "<!-- Generated from rocmport/rocm_facts.py by `python -m rocmport.rocm_facts`; do not edit. -->",
        "",
        "`rocmport doctor` explains the HIP runtime and the GPUs it finds with these tables, and the",
        "ROC7xx rules quote them. Sources are public issue threads (`owner/repo#N`; a bare `#N` or",
        "`pytorch#N` is pytorch/pytorch) and facts checked against real torch (2.13 CPU, 2.11 CUDA).",
        "To update a fact when ROCm moves, edit `rocmport/rocm_facts.py` and regenerate this page.",
        "",
        "## AMD GPU architectures",
        "",
        arch_table(),
        "",
        "## Known HIP-runtime problems with CUDA graphs",
        "",
        "`rocmport doctor` compares the HIP version of the running torch (`torch.version.hip`) and the",
        "installed ROCm (`$ROCM_PATH/.info/version`, default /opt/rocm) with these ranges.",
        "",
        runtime_table(),
        "",
        "## Facts behind the ROC7xx rules",
        "",
        facts_table(),
        "",
    ])


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render_markdown()
    if "--check" in argv:
        current = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.exists() else ""
        if current != text:
            print(f"{DOC_PATH} is stale: run python -m rocmport.rocm_facts", file=sys.stderr)
            return 1
        return 0
    DOC_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
