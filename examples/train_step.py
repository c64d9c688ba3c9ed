"""A training step tuned the NVIDIA way: inductor flags and mode="max-autotune".

"max-autotune" also captures CUDA graphs (ROC102), and the flags below turn on inductor's
CUDA graphs globally (ROC201) and Triton GEMM templates (ROC204). `rocmport fix` gates each
on `is_rocm`; the NVIDIA path keeps every setting.

API for benchmarks/gpu_validate.py: setup(device) -> state, step(state) -> outputs.
"""

from __future__ import annotations

import argparse

import torch
import torch._inductor.config as inductor_config
import torch.nn as nn
import torch.nn.functional as F

inductor_config.triton.cudagraphs = True
inductor_config.max_autotune_gemm_backends = "ATEN,TRITON"
inductor_config.coordinate_descent_tuning = True


class Regressor(nn.Module):
    def __init__(self, dim: int = 256):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def setup(device: str) -> dict:
    torch.manual_seed(0)
    model = Regressor().to(device)
    gen = torch.Generator().manual_seed(1)
    data = [(torch.randn(64, 256, generator=gen).to(device), torch.randn(64, generator=gen).to(device))
            for _ in range(4)]
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    return {"model": model, "compiled": torch.compile(model, mode="max-autotune"), "data": data,
            "initial": initial}


def step(state: dict, steps: int = 8) -> torch.Tensor:
    model = state["model"]
    model.load_state_dict(state["initial"])  # every call trains from the same start
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for i in range(steps):
        x, y = state["data"][i % len(state["data"])]
        loss = F.mse_loss(state["compiled"](x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    print(step(setup(args.device)).tolist())


if __name__ == "__main__":
    main()
