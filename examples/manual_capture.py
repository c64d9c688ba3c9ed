"""Inference through a hand-captured CUDA graph, with a synchronize inside the capture.

The `torch.cuda.synchronize()` at the end of the capture block invalidates the capture: on
CUDA it raises, and this program falls back to eager execution (slow, but correct); on ROCm
before 7.14 the error can be swallowed and the graph is silently corrupt (pytorch#155684).
`rocmport fix` (ROC301) moves the synchronize to just after the block.

API for benchmarks/gpu_validate.py: setup(device) -> state, step(state) -> outputs.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn


def make_model(device: str) -> nn.Module:
    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    return nn.Sequential(*layers).to(device).eval()


@torch.no_grad()
def capture(model: nn.Module, static_x: torch.Tensor):
    """(graph, static output), or None when the capture fails."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm up before capture
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            static_y = model(static_x)
            torch.cuda.synchronize()
    except RuntimeError as exc:
        print(f"capture failed, running eagerly: {str(exc).splitlines()[0]}")
        return None
    return graph, static_y


def setup(device: str) -> dict:
    model = make_model(device)
    gen = torch.Generator().manual_seed(1)
    inputs = [torch.randn(8, 256, generator=gen).to(device) for _ in range(16)]
    static_x = inputs[0].clone()
    captured = capture(model, static_x) if device == "cuda" else None
    return {"model": model, "inputs": inputs, "static_x": static_x, "captured": captured}


@torch.no_grad()
def step(state: dict) -> torch.Tensor:
    outs = []
    for x in state["inputs"]:
        if state["captured"] is None:
            outs.append(state["model"](x))
        else:
            graph, static_y = state["captured"]
            state["static_x"].copy_(x)
            graph.replay()
            outs.append(static_y.clone())
    return torch.stack(outs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    print(step(setup(args.device)).sum().item())


if __name__ == "__main__":
    main()
