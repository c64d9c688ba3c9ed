"""The CUDA-graph helper of ROC106 on a real GPU: what it does when a capture fails, and where
it gains in training (issue 31).

    python benchmarks/gpu_validate.py prepare                      # here: writes the helper
    python3 benchmarks/gpu_helper_checks.py --json OUT             # on the GPU machine

Needs only torch with CUDA and build/gpu_programs/graph_helper.py (the generated prelude with
its graph helper), run with its ROCm switch turned on, since the machine is NVIDIA.

``failure``: a function that runs once plainly (the warm-up) and then, during its capture,
reads a value back to the host (``.item()``: illegal while a stream captures). The helper
must fall back to a plain call, warn with the cause (the call's own error, not the error of
ending the broken capture), leave the current stream as it found it, run the call's GPU work
once (a counter tensor the function increments), and not try that signature again.

``training``: a launch-bound MLP (12 layers, d=256, batch 8) trained with Adam, per step
(forward, loss, backward, optimizer step): eager; compiled "default"; compiled
"reduce-overhead"; the helper around the compiled model (under autograd it falls back: the
model's output requires grad); and the helper around the whole step (a function that runs the
compiled model, the loss, backward and a capturable Adam's step, returning the detached loss).
Median time per step over interleaved repeats, and each variant's losses against eager's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELPER = ROOT / "build" / "gpu_programs" / "graph_helper.py"


def load_helper():
    namespace: dict = {}
    exec(compile(HELPER.read_text(), str(HELPER), "exec"), namespace)
    namespace["_rocmport_hip"] = True  # as on a ROCm build: the helper captures by hand
    return namespace["rocmport_cudagraph"]


def failure(torch, helper) -> dict:
    calls = {"n": 0}
    counter = torch.zeros(1, device="cuda")

    def fragile(x):
        calls["n"] += 1
        counter.add_(1)
        y = x * 2
        if calls["n"] >= 2:
            y.sum().item()  # a host read: breaks a capture
        return y

    graphed = helper(fragile)
    x = torch.ones(4, device="cuda")
    before = torch.cuda.current_stream()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = graphed(x)  # warm-up
        calls_after_warmup, counter_after_warmup = calls["n"], None
        torch.cuda.synchronize()
        counter_after_warmup = counter.item()
        second = graphed(x)  # the capture fails: a plain call instead
        torch.cuda.synchronize()
        stream_after = torch.cuda.current_stream()
        calls_after_failure, counter_after_failure = calls["n"], counter.item()
        third = graphed(x)  # remembered: a plain call, no new capture
        torch.cuda.synchronize()
        # torch's state after the failure: random numbers (a broken capture leaves the CUDA
        # generator marked as capturing), and a new signature's warm-up, capture and replays
        try:
            torch.randn(4, device="cuda")
            torch.cuda.synchronize()
            rng = "works"
        except RuntimeError as exc:
            rng = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        fine = helper(lambda v: v * 3 + 1)
        y = torch.arange(8.0, device="cuda")
        after = [fine(y) for _ in range(4)]
        torch.cuda.synchronize()
    messages = [str(w.message) for w in caught if "rocmport_cudagraph" in str(w.message)]
    return {
        "stream_restored": stream_after == before,
        "stream_after": repr(stream_after), "stream_before": repr(before),
        "warnings": messages,
        # the cause is the host read's error, not cudaErrorStreamCaptureInvalidated from ending
        # the broken capture ("operation failed due to a previous error during capture")
        "warning_names_the_cause": bool(messages) and "previous error" not in messages[0],
        "python_calls": {"warm_up": calls_after_warmup, "failing_call": calls_after_failure - calls_after_warmup,
                         "after": calls["n"] - calls_after_failure},
        "gpu_work": {"warm_up": counter_after_warmup,
                     "failing_call": counter_after_failure - counter_after_warmup,
                     "after": counter.item() - counter_after_failure},
        "outputs_right": all(bool(torch.equal(o, x * 2)) for o in (first, second, third)),
        "rng_after_failure": rng,
        "next_capture_after_failure": {"replays_right": all(bool(torch.equal(o, y * 3 + 1)) for o in after),
                                       "graphed": isinstance(next(iter(fine._rocmport_entries.values())), tuple)},
    }


def training(torch, helper, repeats: int, warmup: int) -> dict:
    nn = torch.nn

    def make():
        torch.manual_seed(0)
        layers = []
        for _ in range(12):
            layers += [nn.Linear(256, 256), nn.ReLU()]
        return nn.Sequential(*layers).cuda()

    x = torch.randn(8, 256, device="cuda")
    target = torch.randn(8, 256, device="cuda")
    loss_fn = nn.MSELoss()

    def variant(kind):
        model = make()
        capturable = kind == "helper around the step"
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=capturable)
        if kind == "eager":
            fwd = model
        elif kind == "compile default":
            fwd = torch.compile(model, mode="default")
        elif kind == "compile reduce-overhead":
            fwd = torch.compile(model, mode="reduce-overhead")
        elif kind == "helper around the model":
            fwd = helper(torch.compile(model, mode="default"))
        else:
            fwd = torch.compile(model, mode="default")

        def step(inp, tgt):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(fwd(inp), tgt)
            loss.backward()
            opt.step()
            return loss.detach()

        return helper(step) if kind == "helper around the step" else step

    kinds = ["eager", "compile default", "compile reduce-overhead", "helper around the model",
             "helper around the step"]
    steps = {kind: variant(kind) for kind in kinds}
    losses = {kind: [] for kind in kinds}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for kind in kinds:  # warm up (compile, capture) each
            for _ in range(warmup):
                losses[kind].append(steps[kind](x, target).clone())
        torch.cuda.synchronize()
        times = {kind: [] for kind in kinds}
        for _ in range(repeats):
            for kind in kinds:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                losses[kind].append(steps[kind](x, target).clone())
                end.record()
                end.synchronize()
                times[kind].append(start.elapsed_time(end) * 1000)
    eager = torch.stack(losses["eager"])
    out = {"warnings": sorted({str(w.message)[:200] for w in caught})}
    for kind in kinds:
        mine = torch.stack(losses[kind])
        out[kind] = {"us_per_step": statistics.median(times[kind]),
                     "max_loss_diff_vs_eager": float((mine - eager).abs().max()),
                     "graphed_entries": len(getattr(steps[kind], "_rocmport_entries", {}) or {})}
    base = out["compile reduce-overhead"]["us_per_step"]
    for kind in kinds:
        out[kind]["speedup_vs_reduce_overhead"] = base / out[kind]["us_per_step"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    helper = load_helper()
    started = time.time()
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    # training first: the failure check leaves whatever torch's state the helper leaves
    result["training"] = training(torch, helper, args.repeats, args.warmup)
    Path(args.json).write_text(json.dumps(result, indent=1))
    result["failure"] = failure(torch, helper)
    result["seconds"] = time.time() - started
    Path(args.json).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
