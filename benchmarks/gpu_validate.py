"""Validate ported programs on a real NVIDIA GPU, and measure the CUDA-graph helper.

Three steps:

  python benchmarks/gpu_validate.py prepare            # here: rocmport fix each example
  python benchmarks/gpu_validate.py run --json OUT     # on the GPU machine (torch with CUDA)
  python benchmarks/gpu_validate.py table OUT          # the Markdown table of README.md

`prepare` writes, under build/gpu_programs/ (git-ignored): each example as it is
(`NAME.original.py`), after `rocmport fix` (`NAME.fixed.py`), for decode_loop also after
`--extend-select ROC106 --unsafe-fixes` (`NAME.helper.py`), and the generated helper
(`graph_helper.py`, the prelude with part "graph_helper"), so the GPU machine needs neither
rocmport nor libcst.

`run` starts one process per (program, path). Each one records every torch.compile call (a
spy that forwards to the real one), counts CUDA-graph captures by who made them (inductor's
CUDA-graph trees or anyone else), runs the example's setup(device) and step(state), times
step() with CUDA events (median of repeats, after warm-up), and saves the outputs.
- NVIDIA path: torch as installed. Original and fixed must give the same compile calls,
  the same outputs (bitwise where deterministic) and the same speed within 3 %.
- Simulated ROCm path: `torch.version.hip` is set before the program is imported, so the
  program's gate and its prelude see a ROCm build, then reset to None once the imports are
  done: inductor itself must keep generating CUDA code to run on this GPU (it reads
  `torch.version.hip` in many places). The program must run to completion, with no inductor
  CUDA-graph capture and no CUDA-graph mode or option in its compile calls, and give the
  NVIDIA outputs.
The launch-bound MLP of shared/docs/torch-facts.md (12 layers, batch 8, d=256, eval) is
timed with "default", "reduce-overhead" and "default" + the helper (the generated code,
with its ROCm switch turned on, since this machine is NVIDIA).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "build" / "gpu_programs"
EXAMPLES = ("decode_loop", "triton_scale", "manual_capture", "train_step")
RESULT = "@@RESULT@@"
# An original that fails its capture leaves torch.cuda.graph's stream context entered: it
# must not share a process with the fixed program.
SEPARATE_PROCESSES = ("manual_capture",)


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
            "seconds": time.perf_counter() - started}


def pair(programs, saves, repeats: int) -> dict:
    """NVIDIA path: the original and its fixed versions in one process, timed interleaved
    (A B A B ...), so that drift of clocks and of the host between processes cancels."""
    import importlib.util

    import torch

    calls, captures = _instrument(torch)
    loaded = []
    for index, program in enumerate(programs):
        started = time.perf_counter()
        spec = importlib.util.spec_from_file_location(f"program{index}", program)
        module = importlib.util.module_from_spec(spec)
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
                       "seconds": time.perf_counter() - started, "times": []})
    for _ in range(repeats):
        for item in loaded:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            item["module"].step(item["state"])
            end.record()
            end.synchronize()
            item["times"].append(start.elapsed_time(end) * 1000.0)
    results = []
    for item, save in zip(loaded, saves):
        last = item["module"].step(item["state"])
        torch.cuda.synchronize()
        torch.save({"first": item["first"], "last": last.detach().cpu()}, save)
        results.append({"path": "nvidia", "compile_calls": item["compile_calls"], "captures": item["captures"],
                        "median_us": statistics.median(item["times"]), "min_us": min(item["times"]),
                        "repeats": repeats, "seconds": item["seconds"], "interleaved": True})
    return {"runs": results}


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
        results[name] = {"us_per_call": median_us / calls_per_rep, "min_us_per_call": min(times) / calls_per_rep}
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
                                    "min_us_per_call": min(times) / calls_per_rep}
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
# run: every program on both paths, then the comparisons
# ------------------------------------------------------------------------------------------

def _spawn(args, timeout=240) -> dict:
    env = dict(os.environ)
    env.pop("TORCHINDUCTOR_CUDAGRAPHS", None)
    started = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                              timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [l for l in proc.stdout.splitlines() if l.startswith(RESULT)]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout)[-2000:], "seconds": time.perf_counter() - started}
    result = json.loads(lines[-1][len(RESULT):])
    result["log"] = [l for l in proc.stdout.splitlines() if not l.startswith(RESULT)][-5:]
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


def run(programs: Path, out_json: Path, repeats: int, only=None) -> dict:
    import torch

    work = Path("/tmp/gpu_validate_outputs")
    work.mkdir(parents=True, exist_ok=True)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cuda": torch.version.cuda, "command": " ".join([Path(sys.executable).name] + sys.argv),
              "examples": {}}

    def save():
        out_json.parent.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(report, indent=1, default=repr) + "\n")

    if only is None or "mlp" in only:  # the helper's figure first: it matters most
        report["mlp"] = _spawn(["mlp", str(programs / "graph_helper.py")], timeout=300)
        print("mlp", json.dumps(report["mlp"])[:2000], flush=True)
        save()
    for name in [n for n in (only or EXAMPLES) if n in EXAMPLES]:
        entry, files = {}, {}
        variants = ["original", "fixed"] + (["helper"] if (programs / f"{name}.helper.py").exists() else [])
        for variant in variants:
            files[f"{variant}/nvidia"] = work / f"{name}.{variant}.nvidia.pt"
        if name in SEPARATE_PROCESSES:
            for variant in variants:
                key = f"{variant}/nvidia"
                entry[key] = _spawn(["child", str(programs / f"{name}.{variant}.py"), "nvidia", str(files[key]),
                                     str(repeats)])
        else:
            together = _spawn(["pair", str(repeats)] + [f"{programs / f'{name}.{v}.py'}={files[f'{v}/nvidia']}"
                                                        for v in variants], timeout=300)
            for i, variant in enumerate(variants):
                entry[f"{variant}/nvidia"] = together["runs"][i] if "runs" in together else together
        for variant in variants:
            key = f"{variant}/rocm"
            files[key] = work / f"{name}.{variant}.rocm.pt"
            entry[key] = _spawn(["child", str(programs / f"{name}.{variant}.py"), "rocm", str(files[key]),
                                 str(repeats)])
        for key in entry:
            print(name, key, entry[key].get("median_us", entry[key].get("error", "")[-300:]), flush=True)
        checks = {}
        base = entry["original/nvidia"]
        for variant in variants[1:]:
            nv, rocm = entry[f"{variant}/nvidia"], entry[f"{variant}/rocm"]
            if "error" in base or "error" in nv:
                checks[f"{variant}/nvidia"] = {"ok": False, "why": "a run failed"}
            else:
                outputs = _compare(torch, files["original/nvidia"], files[f"{variant}/nvidia"])
                speed = nv["median_us"] / base["median_us"] - 1.0
                checks[f"{variant}/nvidia"] = {
                    "same_compile_calls": nv["compile_calls"] == base["compile_calls"],
                    "same_captures": nv["captures"] == base["captures"],
                    **outputs, "speed_change": speed,
                    "ok": nv["compile_calls"] == base["compile_calls"] and outputs["allclose"] and abs(speed) <= 0.03}
            if "error" in base or "error" in rocm:
                checks[f"{variant}/rocm"] = {"ok": False, "why": "a run failed"}
            else:
                outputs = _compare(torch, files["original/nvidia"], files[f"{variant}/rocm"])
                bad = _cudagraph_calls(rocm["compile_calls"])
                checks[f"{variant}/rocm"] = {
                    "completed": True, "inductor_captures": rocm["captures"]["inductor"],
                    "other_captures": rocm["captures"]["other"], "cudagraph_modes": bad,
                    "inductor_triton_cudagraphs": rocm["inductor_triton_cudagraphs"], **outputs,
                    "speed_vs_original_nvidia": rocm["median_us"] / base["median_us"] - 1.0,
                    "ok": rocm["captures"]["inductor"] == 0 and not bad and not rocm["inductor_triton_cudagraphs"]
                    and outputs["allclose"]}
        orig_rocm = entry.get("original/rocm", {})
        checks["original/rocm (the hazard, for contrast)"] = {
            "inductor_captures": orig_rocm.get("captures", {}).get("inductor"),
            "cudagraph_modes": _cudagraph_calls(orig_rocm.get("compile_calls", [])),
            "inductor_triton_cudagraphs": orig_rocm.get("inductor_triton_cudagraphs"),
            "error": orig_rocm.get("error", "")[-300:] or None}
        report["examples"][name] = {"runs": entry, "checks": checks}
        save()
    return report


# ------------------------------------------------------------------------------------------
# the README table
# ------------------------------------------------------------------------------------------

def table(report: dict) -> str:
    rows = ["| example | check | compile calls | outputs | speed | CUDA graphs | ok |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, data in report["examples"].items():
        for key, c in data["checks"].items():
            if key.startswith("original/rocm"):
                rows.append(f"| {name} | original, simulated ROCm (the hazard) | {', '.join(c['cudagraph_modes']) or '-'}"
                            f" | | | inductor captures: {c['inductor_captures']} | |")
                continue
            if "why" in c:
                rows.append(f"| {name} | {key} | | | | | no ({c['why']}) |")
                continue
            outputs = "bitwise equal" if c["bitwise_equal"] else f"max diff {c['max_abs_diff']:.2g}"
            if key.endswith("nvidia"):
                speed = f"{c['speed_change'] * 100:+.1f} %"
                calls = "same" if c["same_compile_calls"] else "DIFFERENT"
                graphs = "same captures" if c["same_captures"] else "different captures"
            else:
                speed = f"{c['speed_vs_original_nvidia'] * 100:+.1f} % vs original NVIDIA"
                calls = "no CUDA-graph mode" if not c["cudagraph_modes"] else ", ".join(c["cudagraph_modes"])
                graphs = f"inductor {c['inductor_captures']}, manual {c['other_captures']}"
            rows.append(f"| {name} | {key} | {calls} | {outputs} | {speed} | {graphs} | {'yes' if c['ok'] else 'no'} |")
    mlp = report.get("mlp", {}).get("variants")
    if mlp:
        rows += ["", "| launch-bound MLP | us per call | vs default | share of reduce-overhead's gain | outputs |",
                 "| --- | --- | --- | --- | --- |"]
        d = mlp["default"]["us_per_call"]
        for name, v in mlp.items():
            share = v.get("share_of_reduce_overhead_gain")
            rows.append(f"| {name} | {v['us_per_call']:.1f} | {d / v['us_per_call']:.2f}x | "
                        f"{'' if share is None else f'{share * 100:.1f} %'} | "
                        f"{'bitwise equal' if v['bitwise_equal_to_default'] else 'max diff %.2g' % v['max_abs_diff_to_default']} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=Path, default=PROGRAMS)
    p = sub.add_parser("run")
    p.add_argument("--programs", type=Path, default=PROGRAMS)
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "gpu_validate.json")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--only", nargs="*")
    p = sub.add_parser("table")
    p.add_argument("json", type=Path)
    p = sub.add_parser("child")
    p.add_argument("program", type=Path)
    p.add_argument("path", choices=("nvidia", "rocm"))
    p.add_argument("save", type=Path)
    p.add_argument("repeats", type=int)
    p = sub.add_parser("pair")
    p.add_argument("repeats", type=int)
    p.add_argument("programs", nargs="+", help="PROGRAM=SAVE")
    p = sub.add_parser("mlp")
    p.add_argument("helper", type=Path)
    args = parser.parse_args()
    if args.cmd == "prepare":
        prepare(args.out)
    elif args.cmd == "run":
        report = run(args.programs, args.json, args.repeats, args.only)
        print(table(report))
    elif args.cmd == "table":
        print(table(json.loads(args.json.read_text())))
    elif args.cmd == "child":
        print(RESULT + json.dumps(child(args.program, args.path, args.save, args.repeats), default=repr))
    elif args.cmd == "pair":
        pairs = [item.split("=", 1) for item in args.programs]
        result = pair([Path(a) for a, _ in pairs], [Path(b) for _, b in pairs], args.repeats)
        print(RESULT + json.dumps(result, default=repr))
    elif args.cmd == "mlp":
        print(RESULT + json.dumps(mlp_bench(args.helper)))


if __name__ == "__main__":
    main()
