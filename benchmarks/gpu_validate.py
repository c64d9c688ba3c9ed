"""Validate ported programs on a real NVIDIA GPU, and measure the CUDA-graph helper.

Three steps:

  python benchmarks/gpu_validate.py prepare            # here: rocmport fix each example
  python benchmarks/gpu_validate.py run --json OUT     # on the GPU machine (torch with CUDA)
  python benchmarks/gpu_validate.py table OUT          # the Markdown tables of README.md

`prepare` writes, under build/gpu_programs/ (git-ignored): each example as it is
(`NAME.original.py`), after `rocmport fix` (`NAME.fixed.py`), for decode_loop also after
`--extend-select ROC106 --unsafe-fixes` (`NAME.helper.py`), and the generated helper
(`graph_helper.py`, the prelude with part "graph_helper"), so the GPU machine needs neither
rocmport nor libcst: `run` uses the standard library and torch only.

`run` records, in every program it starts, every torch.compile call (a spy that forwards to
the real one), counts CUDA-graph captures by who made them (inductor's CUDA-graph trees or
anyone else), runs the example's setup(device) and step(state), times step() with CUDA events
and saves the outputs.
- NVIDIA path, in rounds: each round is one new process that loads the original, the original
  AGAIN (a second, independent copy of the same program: the A/A noise baseline) and the fixed
  versions, warms them up, then times them interleaved, one step of each per repeat in a
  shuffled order, and takes each one's median. The load order rotates from round to round.
  The speed change of a fixed version is the median over rounds of (its median / the
  original's median - 1); the A/A change is the same figure for the original's second copy,
  and the A/A band is the largest |A/A change| of any round. Original and fixed must give the
  same compile calls and the same outputs (bitwise where deterministic); speed passes when
  the change is within 3 %, or, labelled as such, within the A/A band. manual_capture runs
  one process per program (its original's failed capture leaves a stream context entered),
  in rotated order each round, so its A/A is between processes.
- Simulated ROCm path (one process per program): `torch.version.hip` is set before the
  program is imported, so the program's gate and its prelude see a ROCm build, then reset to
  None once the imports are done: inductor itself must keep generating CUDA code to run on
  this GPU (it reads `torch.version.hip` in many places). The program must run to
  completion, with no inductor CUDA-graph capture and no CUDA-graph mode or option in its
  compile calls, and give the NVIDIA outputs.
The launch-bound MLP of shared/docs/torch-facts.md (12 layers, batch 8, d=256, eval) is
timed with "default", "reduce-overhead" and "default" + the helper (the generated code, with
its ROCm switch turned on, since this machine is NVIDIA), once per round, each round a new
process; the figures are medians over rounds.

Two more measurements (issue 16), each on the GPU machine after `prepare`:
  python benchmarks/gpu_validate.py transformer       # the helper where graphs matter
  python benchmarks/gpu_validate.py capture-fixture   # ROC307's fixture, as written and fixed
`transformer` times a launch-bound stack of 8 pre-norm transformer blocks (LayerNorm, causal
SDPA attention, GELU MLP; fp32 with TF32; small batch) as the MLP is timed, one process per
round; a configuration whose reduce-overhead is not 2x faster than "default" is replaced by
the next of TRANSFORMER_CONFIGS. `capture-fixture` runs tests/fixtures/capture/warmup_stream.py
and its fixed form, one process each, and compares their replays bitwise.

`--budget-s` bounds the whole run: round 1 always runs, a later round of an example (or of
the MLP) starts only if the time its last round took still fits. Every raw time is kept in
the JSON, which is rewritten after each step.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "build" / "gpu_programs"
EXAMPLES = ("decode_loop", "triton_scale", "manual_capture", "train_step", "train_and_generate")
RESULT = "@@RESULT@@"
# An original that fails its capture leaves torch.cuda.graph's stream context entered: it
# must not share a process with the fixed program.
SEPARATE_PROCESSES = ("manual_capture",)
# The second, independent copy of the original: the A/A noise baseline.
AGAIN = "original-again"
SPEED_BAND = 0.03
# Fixes that change the NVIDIA path on purpose (the table says so instead of "no").
INTENDED_SPEED_CHANGE = {"manual_capture": "fixed bug (see below)"}
# Extra words for a row of the table.
ROW_NOTES = {("triton_scale", "fixed/rocm"): "BLOCK_SIZE 64"}


# ------------------------------------------------------------------------------------------
# prepare (here, with rocmport installed)
# ------------------------------------------------------------------------------------------
def prepare(out: Path) -> None:
    from rocmport import prelude

    out.mkdir(parents=True, exist_ok=True)
    for name in EXAMPLES:
        source = (ROOT / "examples" / f"{name}.py").read_bytes()
        (out / f"{name}.original.py").write_bytes(source)
        variants = {"fixed": []}
        if name == "decode_loop":
            variants["helper"] = ["--extend-select", "ROC106", "--unsafe-fixes"]
        for variant, flags in variants.items():
            # rocmport as found from the current directory (a checkout of it), on stdin
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
            proc = subprocess.run([sys.executable, "-m", "rocmport", "fix", *flags, "--stdin-filename",
                                   f"examples/{name}.py", "-"], input=source, capture_output=True, env=env)
            if proc.returncode not in (0, 1) or not proc.stdout:
                raise SystemExit(f"rocmport fix failed on {name}: {proc.stderr.decode()}")
            if proc.stdout == source:
                raise SystemExit(f"rocmport fix changed nothing in {name}")
            (out / f"{name}.{variant}.py").write_bytes(proc.stdout)
    helper = prelude.render_inline("is_rocm", ["graph_helper"], prelude.PreludeOptions(inductor_setup=False,
                                                                                       rng_patch=False))
    (out / "graph_helper.py").write_text(helper)
    print(f"wrote {len(list(out.glob('*.py')))} programs to {out}")


# ------------------------------------------------------------------------------------------
# one program on one path (a child process on the GPU machine)
# ------------------------------------------------------------------------------------------

def _instrument(torch):
    """A compile spy and a capture counter; returns (calls, captures)."""
    import traceback

    calls, captures = [], {"inductor": 0, "other": 0}
    real_compile = torch.compile

    def spy(*args, **kwargs):
        calls.append({k: (v if isinstance(v, (str, bool, int, float, type(None), dict)) else repr(v))
                      for k, v in kwargs.items()})
        return real_compile(*args, **kwargs)

    torch.compile = spy
    graph_class = torch.cuda.graphs.CUDAGraph
    real_begin = graph_class.capture_begin

    def capture_begin(self, *args, **kwargs):
        inductor = any("cudagraph_trees" in frame.filename for frame in traceback.extract_stack())
        captures["inductor" if inductor else "other"] += 1
        return real_begin(self, *args, **kwargs)

    graph_class.capture_begin = capture_begin
    return calls, captures


def _time(torch, fn, warmup: int, repeats: int):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)  # us
    return statistics.median(times), times


def child(program: Path, path: str, save: Path, repeats: int) -> dict:
    import importlib.util

    import torch

    if path == "rocm":
        torch.version.hip = "6.2.41133"
    calls, captures = _instrument(torch)
    started = time.perf_counter()
    spec = importlib.util.spec_from_file_location("program", program)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass in the program looks its module up
    spec.loader.exec_module(module)
    gate = {k: v for k, v in vars(module).items() if k in ("is_rocm", "_rocmport_hip") and isinstance(v, bool)}
    torch.version.hip = None  # inductor must generate CUDA code for this GPU
    state = module.setup("cuda")
    first = module.step(state)
    median_us, times = _time(torch, lambda: module.step(state), warmup=3, repeats=repeats)
    out = module.step(state)
    torch.cuda.synchronize()
    torch.save({"first": first.detach().cpu(), "last": out.detach().cpu()}, save)
    import torch._inductor.config as inductor_config

    return {"program": program.name, "path": path, "compile_calls": calls, "captures": captures,
            "gate": gate, "inductor_triton_cudagraphs": bool(inductor_config.triton.cudagraphs),
            "median_us": median_us, "min_us": min(times), "repeats": repeats,
            "times_us": [round(t, 2) for t in times], "seconds": time.perf_counter() - started}


def pair(programs, saves, repeats: int, seed: int = 0, warmup: int = 5) -> dict:
    """NVIDIA path: several programs (the original, its second copy, the fixed versions) in one
    process, timed interleaved: each repeat times one step of each, in an order shuffled anew
    every repeat, so that drift of clocks and of the host, and the position in the order,
    fall on all of them alike. The same file may come twice: it is loaded twice, as two
    independent modules."""
    import importlib.util

    import torch

    calls, captures = _instrument(torch)
    loaded = []
    for index, program in enumerate(programs):
        started = time.perf_counter()
        spec = importlib.util.spec_from_file_location(f"program{index}", program)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # a dataclass in the program looks its module up
        spec.loader.exec_module(module)
        before_calls, before_captures = len(calls), dict(captures)
        state = module.setup("cuda")
        first = module.step(state)
        for _ in range(3):
            module.step(state)
        torch.cuda.synchronize()
        loaded.append({"module": module, "state": state, "first": first.detach().cpu(),
                       "compile_calls": calls[before_calls:],
                       "captures": {k: captures[k] - before_captures[k] for k in captures},
                       "seconds": time.perf_counter() - started, "times": [], "captures_later": 0})
    shuffle = random.Random(seed)
    for repeat in range(warmup + repeats):
        order = list(loaded)
        shuffle.shuffle(order)
        for item in order:
            before = sum(captures.values())
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            item["module"].step(item["state"])
            end.record()
            end.synchronize()
            item["captures_later"] += sum(captures.values()) - before
            if repeat >= warmup:
                item["times"].append(start.elapsed_time(end) * 1000.0)
    results = []
    for item, save in zip(loaded, saves):
        last = item["module"].step(item["state"])
        torch.cuda.synchronize()
        torch.save({"first": item["first"], "last": last.detach().cpu()}, save)
        results.append({"path": "nvidia", "compile_calls": item["compile_calls"], "captures": item["captures"],
                        "median_us": statistics.median(item["times"]), "min_us": min(item["times"]),
                        "captures_while_timed": item["captures_later"],
                        "repeats": repeats, "times_us": [round(t, 2) for t in item["times"]],
                        "seconds": item["seconds"], "interleaved": True})
    return {"runs": results, "seed": seed, "warmup_repeats": warmup}


# ------------------------------------------------------------------------------------------
# the launch-bound MLP: default / reduce-overhead / default + helper
# ------------------------------------------------------------------------------------------

def mlp_bench(helper_path: Path, calls_per_rep: int = 100, repeats: int = 15) -> dict:
    import copy

    import torch
    import torch.nn as nn

    namespace: dict = {}
    exec(compile(helper_path.read_text(), str(helper_path), "exec"), namespace)
    namespace["_rocmport_hip"] = True  # the helper's ROCm path, on this NVIDIA GPU
    helper = namespace["rocmport_cudagraph"]
    torch.manual_seed(0)
    layers = []
    for _ in range(12):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    base = nn.Sequential(*layers).cuda().eval()
    x = torch.randn(8, 256, device="cuda")
    variants = {
        "eager": lambda m: m,
        "default": lambda m: torch.compile(m, mode="default"),
        "reduce-overhead": lambda m: torch.compile(m, mode="reduce-overhead"),
        "default+helper": lambda m: helper(torch.compile(m, mode="default")),
        "default+helper(no clone)": lambda m: helper(torch.compile(m, mode="default"), clone_outputs=False),
    }
    results, outputs = {}, {}
    for name, build in variants.items():
        torch._dynamo.reset()
        fn = build(copy.deepcopy(base))

        def run_many():
            for _ in range(calls_per_rep):
                out = fn(x)
            return out

        with torch.no_grad():
            median_us, times = _time(torch, run_many, warmup=3, repeats=repeats)
            outputs[name] = fn(x).clone()
        results[name] = {"us_per_call": median_us / calls_per_rep, "min_us_per_call": min(times) / calls_per_rep,
                         "times_us_per_call": [round(t / calls_per_rep, 3) for t in times]}
        if name.startswith("default+helper"):
            entries = getattr(fn, "_rocmport_entries", {})
            results[name]["graphs"] = sum(isinstance(e, tuple) for e in entries.values())
    # The floor: the default-compiled model captured by hand, replayed with nothing around it.
    torch._dynamo.reset()
    floor_fn = torch.compile(copy.deepcopy(base), mode="default")
    with torch.no_grad():
        static_x = x.clone()
        for _ in range(3):
            floor_fn(static_x)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = floor_fn(static_x)

        def replay_many():
            for _ in range(calls_per_rep):
                graph.replay()

        median_us, times = _time(torch, replay_many, warmup=3, repeats=repeats)
        graph.replay()
        outputs["graph replay only"] = static_y.clone()
    results["graph replay only"] = {"us_per_call": median_us / calls_per_rep,
                                    "min_us_per_call": min(times) / calls_per_rep,
                                    "times_us_per_call": [round(t / calls_per_rep, 3) for t in times]}
    # The GPU's own time for one eager forward (launch gaps excluded) from the profiler.
    try:
        from torch.profiler import ProfilerActivity, profile

        with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                base(x)
            torch.cuda.synchronize()
        kernel_us = sum(e.device_time_total for e in prof.key_averages()) / 10
        results["eager"]["gpu_kernel_us_per_call"] = kernel_us
    except Exception as exc:  # the profiler is a nicety here
        results["eager"]["gpu_kernel_us_per_call"] = repr(exc)
    ref = outputs["default"]
    for name in outputs:
        results[name]["bitwise_equal_to_default"] = bool(torch.equal(outputs[name], ref))
        results[name]["max_abs_diff_to_default"] = float((outputs[name] - ref).abs().max())
    d, ro = results["default"]["us_per_call"], results["reduce-overhead"]["us_per_call"]
    for name in ("default+helper", "default+helper(no clone)"):
        h = results[name]["us_per_call"]
        results[name]["share_of_reduce_overhead_gain"] = (d - h) / (d - ro) if d != ro else None
    return {"model": "12 x (Linear(256, 256) + ReLU), batch 8, eval, no_grad", "calls_per_rep": calls_per_rep,
            "repeats": repeats, "variants": results}


# ------------------------------------------------------------------------------------------
# a launch-bound transformer-like block stack: where CUDA graphs matter
# ------------------------------------------------------------------------------------------
# Tried in this order: a later config is used only when reduce-overhead was not at least 2x
# faster than "default" with the one before (the regime the helper is for).
TRANSFORMER_CONFIGS = (
    {"layers": 8, "d": 256, "heads": 4, "batch": 2, "seq": 32},
    {"layers": 8, "d": 128, "heads": 4, "batch": 1, "seq": 16},
)


def _transformer(torch, layers: int, d: int, heads: int):
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        """Pre-norm block: LayerNorm, causal attention (SDPA), LayerNorm, GELU MLP."""

        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, heads, d // heads).permute(2, 0, 3, 1, 4).unbind(0)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    return nn.Sequential(*[Block() for _ in range(layers)], nn.LayerNorm(d))


def transformer_bench(helper_path: Path, config: dict, calls_per_rep: int = 50, repeats: int = 20) -> dict:
    import torch

    namespace: dict = {}
    exec(compile(helper_path.read_text(), str(helper_path), "exec"), namespace)
    namespace["_rocmport_hip"] = True  # the helper's ROCm path, on this NVIDIA GPU
    helper = namespace["rocmport_cudagraph"]
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)
    model = _transformer(torch, config["layers"], config["d"], config["heads"]).cuda().eval()
    x = torch.randn(config["batch"], config["seq"], config["d"], device="cuda")
    results, outputs, compile_s = {}, {}, {}

    def measure(name, fn):
        def run_many():
            for _ in range(calls_per_rep):
                out = fn(x)
            return out

        started = time.perf_counter()
        with torch.no_grad():
            fn(x)  # first call: compiles, captures
            torch.cuda.synchronize()
            compile_s[name] = time.perf_counter() - started
            median_us, times = _time(torch, run_many, warmup=3, repeats=repeats)
            outputs[name] = fn(x).clone()
        results[name] = {"us_per_call": median_us / calls_per_rep, "min_us_per_call": min(times) / calls_per_rep,
                         "times_us_per_call": [round(t / calls_per_rep, 3) for t in times],
                         "first_call_s": round(compile_s[name], 2)}

    torch._dynamo.reset()
    measure("eager", model)
    default = torch.compile(model, mode="default")
    measure("default", default)
    for name, clone in (("default+helper", True), ("default+helper(no clone)", False)):
        graphed = helper(default, clone_outputs=clone)
        measure(name, graphed)
        results[name]["graphs"] = sum(isinstance(e, tuple) for e in graphed._rocmport_entries.values())
    # The floor: the default-compiled model captured by hand (side-stream warm-up, stream=),
    # replayed with nothing around it: the GPU time of "default"'s kernels.
    with torch.no_grad():
        static_x = x.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                default(static_x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            static_y = default(static_x)

        def replay_many():
            for _ in range(calls_per_rep):
                graph.replay()

        median_us, times = _time(torch, replay_many, warmup=3, repeats=repeats)
        graph.replay()
        outputs["graph replay only"] = static_y.clone()
    results["graph replay only"] = {"us_per_call": median_us / calls_per_rep,
                                    "min_us_per_call": min(times) / calls_per_rep,
                                    "times_us_per_call": [round(t / calls_per_rep, 3) for t in times]}
    torch._dynamo.reset()
    measure("reduce-overhead", torch.compile(model, mode="reduce-overhead"))
    try:  # the GPU's own time for one call (launch gaps excluded), eager and "default"
        from torch.profiler import ProfilerActivity, profile

        for name, fn in (("eager", model),):
            with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    fn(x)
                torch.cuda.synchronize()
            results[name]["gpu_kernel_us_per_call"] = sum(e.device_time_total for e in prof.key_averages()) / 10
    except Exception as exc:  # the profiler is a nicety here
        results["eager"]["gpu_kernel_us_per_call"] = repr(exc)
    ref = outputs["default"]
    for name in outputs:
        results[name]["bitwise_equal_to_default"] = bool(torch.equal(outputs[name], ref))
        results[name]["max_abs_diff_to_default"] = float((outputs[name] - ref).abs().max())
        results[name]["max_abs_diff_to_eager"] = float((outputs[name] - outputs["eager"]).abs().max())
    d, ro = results["default"]["us_per_call"], results["reduce-overhead"]["us_per_call"]
    for name in ("default+helper", "default+helper(no clone)"):
        h = results[name]["us_per_call"]
        results[name]["share_of_reduce_overhead_gain"] = (d - h) / (d - ro) if d != ro else None
    return {"model": (f"{config['layers']} pre-norm blocks (LayerNorm, causal SDPA attention, GELU MLP 4x),"
                      f" d={config['d']}, {config['heads']} heads, batch {config['batch']}, seq {config['seq']},"
                      " fp32 with TF32, eval, no_grad"),
            "config": config, "calls_per_rep": calls_per_rep, "repeats": repeats,
            "reduce_overhead_speedup_over_default": d / ro, "variants": results}


def run_transformer(helper_path: Path, out_json: Path, rounds: int, budget_s: float, repeats: int) -> dict:
    """Rounds of transformer_bench, each a new process; a config whose reduce-overhead is not
    2x faster than "default" in its first round is replaced by the next one."""
    import torch

    clock = time.perf_counter()
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
              "command": " ".join([Path(sys.executable).name] + sys.argv), "configs_tried": []}
    index, per_round = 0, 0.0
    good: list = []
    for k in range(rounds + len(TRANSFORMER_CONFIGS) - 1):
        if k and budget_s and time.perf_counter() - clock + 1.2 * per_round + 5 > budget_s:
            report.setdefault("skipped_rounds", []).append(f"round {k + 1}: over --budget-s")
            break
        if len(good) >= rounds:
            break
        started = time.perf_counter()
        config = TRANSFORMER_CONFIGS[index]
        result = _spawn(["transformer-round", str(helper_path), json.dumps(config), "--repeats", str(repeats)],
                        timeout=400)
        per_round = time.perf_counter() - started
        result["config"] = config
        if "variants" in result:
            print("transformer", config, json.dumps({n: round(v["us_per_call"], 1)
                                                     for n, v in result["variants"].items()}), flush=True)
        else:
            print("transformer round failed:", result.get("error", "")[-1500:], flush=True)
        if not good and ("variants" not in result or result["reduce_overhead_speedup_over_default"] < 2.0) \
                and index + 1 < len(TRANSFORMER_CONFIGS):
            report["configs_tried"].append(result)  # not the regime: the next config
            index += 1
            continue
        good.append(result)
        report["transformer"] = _mlp_summary(good)
        report["seconds"] = time.perf_counter() - clock
        out_json.parent.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(report, indent=1, default=repr) + "\n")
    report["seconds"] = time.perf_counter() - clock
    out_json.write_text(json.dumps(report, indent=1, default=repr) + "\n")
    return report


# ------------------------------------------------------------------------------------------
# ROC307's runnable fixture: the capture as written and as fixed, on this GPU
# ------------------------------------------------------------------------------------------

def capture_fixture_child(program: Path, save: Path) -> dict:
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("program", program)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    started = time.perf_counter()
    replays, eager = module.run("cuda")
    torch.cuda.synchronize()
    torch.save({"replays": replays.cpu(), "eager": eager.cpu()}, save)
    return {"program": program.name, "seconds": time.perf_counter() - started,
            "last_replay_matches_eager": bool(torch.allclose(replays[-1], eager, atol=1e-5, rtol=1e-5))}


def run_capture_fixture(original: Path, fixed: Path, out_json: Path) -> dict:
    import torch

    work = Path("/tmp/gpu_validate_outputs")
    work.mkdir(parents=True, exist_ok=True)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": {}}
    for label, program in (("original", original), ("fixed", fixed)):
        save = work / f"capture_fixture.{label}.pt"
        report["runs"][label] = _spawn(["capture-fixture-child", str(program), str(save)], timeout=120)
        report["runs"][label]["save"] = str(save)
    if all("error" not in r for r in report["runs"].values()):
        a, b = (torch.load(report["runs"][k]["save"]) for k in ("original", "fixed"))
        report["bitwise_equal"] = all(torch.equal(a[k], b[k]) for k in a)
        report["max_abs_diff"] = max(float((a[k] - b[k]).abs().max()) for k in a)
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(report, indent=1, default=repr) + "\n")
    print("capture fixture", json.dumps({k: v for k, v in report.items() if k != "runs"}),
          json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "log"} for k, v in report["runs"].items()}),
          flush=True)
    return report


# ------------------------------------------------------------------------------------------
# run: every program on both paths, in rounds, then the comparisons
# ------------------------------------------------------------------------------------------

def _spawn(args, timeout=240) -> dict:
    env = dict(os.environ)
    env.pop("TORCHINDUCTOR_CUDAGRAPHS", None)
    started = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s", "wall_seconds": time.perf_counter() - started}
    wall = time.perf_counter() - started
    lines = [l for l in proc.stdout.splitlines() if l.startswith(RESULT)]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout)[-2000:], "wall_seconds": wall}
    result = json.loads(lines[-1][len(RESULT):])
    result["log"] = [l for l in proc.stdout.splitlines() if not l.startswith(RESULT)][-5:]
    result["wall_seconds"] = wall
    return result


def _cudagraph_calls(calls) -> list:
    bad = []
    for c in calls:
        if c.get("mode") in ("reduce-overhead", "max-autotune"):
            bad.append(c["mode"])
        options = c.get("options")
        if isinstance(options, dict) and options.get("triton.cudagraphs"):
            bad.append("options triton.cudagraphs")
    return bad


def _compare(torch, a: Path, b: Path) -> dict:
    x, y = torch.load(a), torch.load(b)
    same = all(torch.equal(x[k], y[k]) for k in ("first", "last"))
    diff = max(float((x[k].double() - y[k].double()).abs().max()) for k in ("first", "last"))
    close = all(torch.allclose(x[k].double(), y[k].double(), rtol=1e-3, atol=1e-3) for k in ("first", "last"))
    return {"bitwise_equal": same, "max_abs_diff": diff, "allclose": close}


def _median(values):
    return statistics.median(values) if values else None


def _speed_verdict(speed: float, aa_band) -> str:
    if abs(speed) <= SPEED_BAND:
        return "within ±3 %"
    if aa_band is not None and abs(speed) <= aa_band:
        return "within A/A noise"
    return "outside ±3 % and A/A noise"


def _nvidia_rounds(name: str, programs: Path, work: Path, variants: list, k: int, repeats: int) -> dict:
    """Round k of the NVIDIA path: {"order", "runs": {variant: run}, "saves": {variant: file}}."""
    order = variants[k % len(variants):] + variants[:k % len(variants)]
    saves = {v: work / f"{name}.{v}.nvidia.r{k}.pt" for v in variants}
    source = {v: programs / f"{name}.{'original' if v == AGAIN else v}.py" for v in variants}
    runs = {}
    if name in SEPARATE_PROCESSES:
        for v in order:
            runs[v] = _spawn(["child", str(source[v]), "nvidia", str(saves[v]), str(repeats)])
    else:
        together = _spawn(["pair", "--seed", str(k), str(repeats)] + [f"{source[v]}={saves[v]}" for v in order],
                          timeout=300)
        for i, v in enumerate(order):
            if "runs" in together:
                runs[v] = {**together["runs"][i], "process_wall_seconds": together["wall_seconds"]}
            else:
                runs[v] = together
    return {"order": order, "runs": runs, "saves": {v: str(p) for v, p in saves.items()}}


def _nvidia_checks(torch, rounds: list, variants: list) -> dict:
    """The NVIDIA-path checks over every round that ran: A/A first, then each fixed version."""
    failed = [i for i, r in enumerate(rounds) if any("error" in r["runs"][v] for v in variants)]
    ok_rounds = [r for i, r in enumerate(rounds) if i not in failed]
    if not ok_rounds:
        return {("A/A" if v == AGAIN else f"{v}/nvidia"): {"ok": False, "why": "a run failed"} for v in variants[1:]}
    checks = {}

    def compare(v):
        base = [r["runs"]["original"] for r in ok_rounds]
        runs = [r["runs"][v] for r in ok_rounds]
        outputs = [_compare(torch, Path(r["saves"]["original"]), Path(r["saves"][v])) for r in ok_rounds]
        speeds = [b["median_us"] / a["median_us"] - 1.0 for a, b in zip(base, runs)]
        return {
            "rounds": len(ok_rounds), "failed_rounds": failed,
            "same_compile_calls": all(b["compile_calls"] == a["compile_calls"] for a, b in zip(base, runs)),
            "same_captures": all(b["captures"] == a["captures"] for a, b in zip(base, runs)),
            "original_captures_rounds": [a["captures"] for a in base], "captures_rounds": [b["captures"] for b in runs],
            "bitwise_equal": all(o["bitwise_equal"] for o in outputs),
            "max_abs_diff": max(o["max_abs_diff"] for o in outputs),
            "allclose": all(o["allclose"] for o in outputs),
            "original_median_us_rounds": [a["median_us"] for a in base],
            "median_us_rounds": [b["median_us"] for b in runs],
            "speed_change_rounds": speeds, "speed_change": statistics.median(speeds)}

    aa = compare(AGAIN)
    aa["band"] = max(abs(s) for s in aa["speed_change_rounds"])
    checks["A/A"] = aa
    for v in variants:
        if v in ("original", AGAIN):
            continue
        c = compare(v)
        c["aa_speed_change"] = aa["speed_change"]
        c["aa_band"] = aa["band"]
        c["speed_within_3pct"] = abs(c["speed_change"]) <= SPEED_BAND
        c["speed_verdict"] = _speed_verdict(c["speed_change"], aa["band"])
        c["ok"] = (c["same_compile_calls"] and c["allclose"]
                   and c["speed_verdict"] in ("within ±3 %", "within A/A noise"))
        checks[f"{v}/nvidia"] = c
    return checks


def _rocm_checks(torch, entry: dict, files: dict, variants: list, base_us) -> dict:
    checks = {}
    base_file = files.get("original/nvidia")
    for variant in variants[1:]:
        rocm = entry[f"{variant}/rocm"]
        if base_file is None or "error" in rocm:
            checks[f"{variant}/rocm"] = {"ok": False, "why": "a run failed"}
            continue
        outputs = _compare(torch, base_file, files[f"{variant}/rocm"])
        bad = _cudagraph_calls(rocm["compile_calls"])
        checks[f"{variant}/rocm"] = {
            "completed": True, "inductor_captures": rocm["captures"]["inductor"],
            "other_captures": rocm["captures"]["other"], "cudagraph_modes": bad,
            "inductor_triton_cudagraphs": rocm["inductor_triton_cudagraphs"], **outputs,
            "speed_vs_original_nvidia": rocm["median_us"] / base_us - 1.0 if base_us else None,
            "ok": rocm["captures"]["inductor"] == 0 and not bad and not rocm["inductor_triton_cudagraphs"]
            and outputs["allclose"]}
    orig_rocm = entry.get("original/rocm", {})
    checks["original/rocm (the hazard, for contrast)"] = {
        "inductor_captures": orig_rocm.get("captures", {}).get("inductor"),
        "cudagraph_modes": _cudagraph_calls(orig_rocm.get("compile_calls", [])),
        "inductor_triton_cudagraphs": orig_rocm.get("inductor_triton_cudagraphs"),
        "error": orig_rocm.get("error", "")[-300:] or None}
    return checks


def _mlp_summary(rounds: list) -> dict:
    """Medians over the MLP rounds that ran; every round's figures are kept beside them."""
    good = [r for r in rounds if "variants" in r]
    if not good:
        return {"rounds": rounds, "error": "every round failed"}
    names = list(good[0]["variants"])
    variants = {}
    for name in names:
        per = [r["variants"][name] for r in good if name in r["variants"]]
        v = {"us_per_call": statistics.median(p["us_per_call"] for p in per),
             "us_per_call_rounds": [p["us_per_call"] for p in per],
             "min_us_per_call": min(p["min_us_per_call"] for p in per),
             "bitwise_equal_to_default": all(p["bitwise_equal_to_default"] for p in per),
             "max_abs_diff_to_default": max(p["max_abs_diff_to_default"] for p in per)}
        if "graphs" in per[0]:
            v["graphs_rounds"] = [p.get("graphs") for p in per]
        kernel = [p["gpu_kernel_us_per_call"] for p in per if isinstance(p.get("gpu_kernel_us_per_call"), float)]
        if kernel:
            v["gpu_kernel_us_per_call"] = statistics.median(kernel)
        variants[name] = v
    d, ro = variants["default"]["us_per_call"], variants["reduce-overhead"]["us_per_call"]
    for name in ("default+helper", "default+helper(no clone)"):
        if name in variants:
            h = variants[name]["us_per_call"]
            variants[name]["share_of_reduce_overhead_gain"] = (d - h) / (d - ro) if d != ro else None
            variants[name]["share_of_reduce_overhead_gain_rounds"] = [
                r["variants"][name]["share_of_reduce_overhead_gain"] for r in good]
    return {"model": good[0]["model"], "calls_per_rep": good[0]["calls_per_rep"], "repeats": good[0]["repeats"],
            "rounds": len(good), "failed_rounds": len(rounds) - len(good), "variants": variants,
            "raw_rounds": rounds}


def run(programs: Path, out_json: Path, repeats: int, rounds: int, budget_s: float, only=None,
        mlp_repeats: int = 30) -> dict:
    import torch

    clock = time.perf_counter()
    work = Path("/tmp/gpu_validate_outputs")
    work.mkdir(parents=True, exist_ok=True)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cuda": torch.version.cuda, "command": " ".join([Path(sys.executable).name] + sys.argv),
              "settings": {"repeats": repeats, "rounds": rounds, "budget_s": budget_s,
                           "mlp_repeats": mlp_repeats, "speed_band": SPEED_BAND},
              "skipped_rounds": [], "examples": {}}
    cost: dict = {}  # seconds the last round of each example (or the MLP) took

    def save():
        report["seconds"] = time.perf_counter() - clock
        out_json.parent.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(report, indent=1, default=repr) + "\n")

    def fits(key: str, k: int) -> bool:
        if k == 0 or not budget_s:
            return True
        if time.perf_counter() - clock + 1.2 * cost.get(key, 0.0) + 5 <= budget_s:
            return True
        report["skipped_rounds"].append(f"{key} round {k + 1}: over --budget-s")
        return False

    names = [n for n in (only or EXAMPLES) if n in EXAMPLES]
    do_mlp = only is None or "mlp" in only
    mlp_rounds: list = []
    state = {}
    for name in names:
        variants = ["original", AGAIN, "fixed"] + (["helper"] if (programs / f"{name}.helper.py").exists() else [])
        state[name] = {"variants": variants, "rounds": [], "rocm": {}, "files": {}}
    for k in range(rounds):
        if do_mlp and fits("mlp", k):  # the helper's figure first: it matters most
            started = time.perf_counter()
            mlp_rounds.append(_spawn(["mlp", str(programs / "graph_helper.py"), "--repeats", str(mlp_repeats)],
                                     timeout=300))
            cost["mlp"] = time.perf_counter() - started
            report["mlp"] = _mlp_summary(mlp_rounds)
            print("mlp round", k + 1, json.dumps({n: v["us_per_call"] for n, v in
                                                    report["mlp"].get("variants", {}).items()}), flush=True)
            save()
        for name in names:
            st = state[name]
            variants = st["variants"]
            if not fits(name, k):
                continue
            started = time.perf_counter()
            st["rounds"].append(_nvidia_rounds(name, programs, work, variants, k, repeats))
            cost[name] = time.perf_counter() - started  # the NVIDIA round alone: what later rounds repeat
            if k == 0:  # the simulated ROCm path, once
                st["files"]["original/nvidia"] = Path(st["rounds"][0]["saves"]["original"])
                if "error" in st["rounds"][0]["runs"]["original"]:
                    st["files"].pop("original/nvidia")
                for variant in [v for v in variants if v != AGAIN]:
                    key = f"{variant}/rocm"
                    st["files"][key] = work / f"{name}.{variant}.rocm.pt"
                    st["rocm"][key] = _spawn(["child", str(programs / f"{name}.{variant}.py"), "rocm",
                                              str(st["files"][key]), str(repeats)])
            for v, r in st["rounds"][-1]["runs"].items():
                print(name, f"round {k + 1}", f"{v}/nvidia", r.get("median_us", r.get("error", "")[-300:]), flush=True)
            if k == 0:
                for key, r in st["rocm"].items():
                    print(name, key, r.get("median_us", r.get("error", "")[-300:]), flush=True)
            checks = _nvidia_checks(torch, st["rounds"], variants)
            base = [r["runs"]["original"]["median_us"] for r in st["rounds"] if "median_us" in r["runs"]["original"]]
            rocm_variants = [v for v in variants if v != AGAIN]
            checks.update(_rocm_checks(torch, st["rocm"], st["files"], rocm_variants, _median(base)))
            report["examples"][name] = {"checks": checks, "nvidia_rounds": st["rounds"], "rocm_runs": st["rocm"]}
            save()
    save()
    return report


# ------------------------------------------------------------------------------------------
# the README tables
# ------------------------------------------------------------------------------------------

def _pct(x: float) -> str:
    return f"{x * 100:+.1f} %"


def _range(values) -> str:
    return f"{min(values) * 100:+.1f} to {max(values) * 100:+.1f}" if len(values) > 1 else ""


MLP_NAMES = {"eager": "eager", "default": '"default"', "reduce-overhead": '"reduce-overhead"',
             "default+helper": '"default" + `rocmport_cudagraph`',
             "default+helper(no clone)": '"default" + `rocmport_cudagraph(clone_outputs=False)`',
             "graph replay only": "replaying a hand-captured graph, nothing else"}


def table(report: dict) -> str:
    rows = ["| example | check | compile calls | outputs | speed (median of rounds; range) "
            "| A/A: original vs itself (median; band) | CUDA graphs | ok |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, data in report["examples"].items():
        for key, c in data["checks"].items():
            if key == "A/A":
                continue
            if key.startswith("original/rocm"):
                if c["cudagraph_modes"] or c["inductor_captures"]:
                    rows.append(f"| {name} | original, simulated ROCm | {', '.join(c['cudagraph_modes']) or '-'}"
                                f" | | | | inductor {c['inductor_captures']} | the hazard |")
                continue
            label = key + (f" ({ROW_NOTES[(name, key)]})" if (name, key) in ROW_NOTES else "")
            if "why" in c:
                rows.append(f"| {name} | {label} | | | | | | no ({c['why']}) |")
                continue
            outputs = "bitwise equal" if c["bitwise_equal"] else f"max diff {c['max_abs_diff']:.2g}"
            if key.endswith("nvidia"):
                rng = _range(c.get("speed_change_rounds", []))
                speed = f"{_pct(c['speed_change'])}" + (f" ({rng}; {c['rounds']} rounds)" if rng else
                                                         " (1 round)" if c.get("rounds") == 1 else "")
                aa = (f"{_pct(c['aa_speed_change'])}; ±{c['aa_band'] * 100:.1f} %" if "aa_band" in c
                      else "not measured")
                c.setdefault("speed_verdict", _speed_verdict(c["speed_change"], c.get("aa_band")))
                calls = "same" if c["same_compile_calls"] else "DIFFERENT"
                aa_check = data["checks"].get("A/A", {})
                graphs = ("same captures" if c["same_captures"] else "different captures, A/A too"
                          if aa_check.get("same_captures") is False else "different captures")
                if c["ok"]:
                    ok = f"yes ({c['speed_verdict']})"
                elif name in INTENDED_SPEED_CHANGE and c["same_compile_calls"] and c["allclose"]:
                    ok = INTENDED_SPEED_CHANGE[name]
                else:
                    why = [w for w, bad in (("compile calls differ", not c["same_compile_calls"]),
                                            ("outputs differ", not c["allclose"]),
                                            (c["speed_verdict"], c["speed_verdict"].startswith("outside")))
                           if bad]
                    ok = f"no ({'; '.join(why)})"
            else:
                speed = f"{_pct(c['speed_vs_original_nvidia'])} vs original NVIDIA"
                aa = ""
                calls = "no CUDA-graph mode" if not c["cudagraph_modes"] else ", ".join(c["cudagraph_modes"])
                graphs = f"inductor {c['inductor_captures']}, manual {c['other_captures']}"
                ok = "yes" if c["ok"] else "no"
            rows.append(f"| {name} | {label} | {calls} | {outputs} | {speed} | {aa} | {graphs} | {ok} |")
    mlp = report.get("mlp", {}).get("variants")
    if mlp:
        n = report["mlp"].get("rounds", 1)
        rows += ["", f"| variant | us per call (median of {n} rounds) | rounds | "
                     "share of reduce-overhead's gain over \"default\" | outputs vs \"default\" |",
                 "| --- | --- | --- | --- | --- |"]
        for name, v in mlp.items():
            share = v.get("share_of_reduce_overhead_gain")
            per = v.get("us_per_call_rounds", [v["us_per_call"]])
            share_rounds = v.get("share_of_reduce_overhead_gain_rounds") or []
            share_text = "" if share is None else f"{share * 100:.1f} %"
            if share_text and len(share_rounds) > 1:
                share_text += f" (rounds: {', '.join(f'{s * 100:.1f}' for s in share_rounds)} %)"
            outputs = ("bitwise equal" if v["bitwise_equal_to_default"]
                       else "max diff %.2g" % v["max_abs_diff_to_default"])
            rows.append(f"| {MLP_NAMES.get(name, name)} | {v['us_per_call']:.1f} | "
                        f"{', '.join(f'{p:.1f}' for p in per)} | {share_text} | {outputs} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=Path, default=PROGRAMS)
    p = sub.add_parser("run")
    p.add_argument("--programs", type=Path, default=PROGRAMS)
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "gpu_validate.json")
    p.add_argument("--repeats", type=int, default=100, help="timed steps per program per round")
    p.add_argument("--rounds", type=int, default=3, help="NVIDIA-path rounds (new processes) per example")
    p.add_argument("--budget-s", type=float, default=0.0,
                   help="start no round after the first that would end past this many seconds (0: no bound)")
    p.add_argument("--mlp-repeats", type=int, default=30)
    p.add_argument("--only", nargs="*")
    p = sub.add_parser("table")
    p.add_argument("json", type=Path)
    p = sub.add_parser("child")
    p.add_argument("program", type=Path)
    p.add_argument("path", choices=("nvidia", "rocm"))
    p.add_argument("save", type=Path)
    p.add_argument("repeats", type=int)
    p = sub.add_parser("pair")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("repeats", type=int)
    p.add_argument("programs", nargs="+", help="PROGRAM=SAVE")
    p = sub.add_parser("mlp")
    p.add_argument("helper", type=Path)
    p.add_argument("--repeats", type=int, default=30)
    p = sub.add_parser("transformer", help="the helper on a launch-bound transformer block stack, in rounds")
    p.add_argument("--helper", type=Path, default=PROGRAMS / "graph_helper.py")
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "transformer_helper.json")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--budget-s", type=float, default=0.0)
    p.add_argument("--repeats", type=int, default=20)
    p = sub.add_parser("transformer-round")
    p.add_argument("helper", type=Path)
    p.add_argument("config")
    p.add_argument("--repeats", type=int, default=20)
    p = sub.add_parser("capture-fixture", help="ROC307's runnable fixture, as written and as fixed")
    p.add_argument("--original", type=Path, default=ROOT / "tests" / "fixtures" / "capture" / "warmup_stream.py")
    p.add_argument("--fixed", type=Path,
                   default=ROOT / "tests" / "fixtures" / "capture" / "warmup_stream.expected.py")
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "capture_fixture.json")
    p = sub.add_parser("capture-fixture-child")
    p.add_argument("program", type=Path)
    p.add_argument("save", type=Path)
    args = parser.parse_args()
    if args.cmd == "prepare":
        prepare(args.out)
    elif args.cmd == "run":
        report = run(args.programs, args.json, args.repeats, args.rounds, args.budget_s, args.only, args.mlp_repeats)
        print(table(report))
    elif args.cmd == "table":
        print(table(json.loads(args.json.read_text())))
    elif args.cmd == "child":
        print(RESULT + json.dumps(child(args.program, args.path, args.save, args.repeats), default=repr))
    elif args.cmd == "pair":
        pairs = [item.split("=", 1) for item in args.programs]
        result = pair([Path(a) for a, _ in pairs], [Path(b) for _, b in pairs], args.repeats, args.seed)
        print(RESULT + json.dumps(result, default=repr))
    elif args.cmd == "mlp":
        print(RESULT + json.dumps(mlp_bench(args.helper, repeats=args.repeats)))
    elif args.cmd == "transformer":
        report = run_transformer(args.helper, args.json, args.rounds, args.budget_s, args.repeats)
        print(table({"examples": {}, "mlp": report.get("transformer", {})}))
    elif args.cmd == "transformer-round":
        print(RESULT + json.dumps(transformer_bench(args.helper, json.loads(args.config), repeats=args.repeats)))
    elif args.cmd == "capture-fixture":
        run_capture_fixture(args.original, args.fixed, args.json)
    elif args.cmd == "capture-fixture-child":
        print(RESULT + json.dumps(capture_fixture_child(args.program, args.save)))


if __name__ == "__main__":
    main()
