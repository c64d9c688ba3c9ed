"""A fused Triton kernel (relu, square, scale) launched with BLOCK_SIZE=32.

A 1-D block of 32 leaves half of every 64-lane AMD wavefront idle (ROC501): `rocmport fix`
uses 64 on ROCm, in the launch and in the grid, keeping 32 on NVIDIA. The kernel masks its
tail, so any block size computes the same values. Runs on CPU with TRITON_INTERPRET=1.

API for benchmarks/gpu_validate.py: setup(device) -> state, step(state) -> outputs.
"""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def relu_sq_scale(x_ptr, out_ptr, n, scale, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    in_range = offs < n
    x = tl.load(x_ptr + offs, mask=in_range, other=0.0)
    y = tl.where(x > 0, x * x, 0.0) * scale
    tl.store(out_ptr + offs, y, mask=in_range)


def relu_sq(x: torch.Tensor, scale: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    relu_sq_scale[(triton.cdiv(n, 32),)](x, out, n, scale, BLOCK_SIZE=32)
    return out


def setup(device: str) -> dict:
    gen = torch.Generator().manual_seed(1)
    n = 1 << 20 if device == "cuda" else 4096  # the interpreter runs one program at a time
    return {"x": torch.randn(n, generator=gen).to(device)}


def step(state: dict) -> torch.Tensor:
    return relu_sq(state["x"], 0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    state = setup(args.device)
    out = step(state)
    ref = torch.relu(state["x"]) ** 2 * 0.5
    print("max error", (out - ref).abs().max().item())


if __name__ == "__main__":
    main()
