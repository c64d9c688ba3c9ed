"""Greedy decoding with a small language model, the decode step compiled for low overhead.

One decode step is a handful of small kernels: launch-bound, so NVIDIA users compile it with
mode="reduce-overhead" (CUDA graphs). On ROCm that mode hangs or slows down on common stacks:
`rocmport fix` gates it (ROC101); `--extend-select ROC106 --unsafe-fixes` also wraps the
compiled step in the prelude's `rocmport_cudagraph`, which captures it by hand on ROCm.

API for benchmarks/gpu_validate.py: setup(device) -> state, step(state) -> outputs.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 512, dim: int = 256, layers: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens).mean(1)  # a bag-of-tokens context: enough for a decode loop
        for layer in self.layers:
            x = x + layer(x)
        return self.head(x)


def decode_step(model: TinyLM, tokens: torch.Tensor) -> torch.Tensor:
    return model(tokens).argmax(-1)


def setup(device: str) -> dict:
    torch.manual_seed(0)
    model = TinyLM().to(device).eval()
    decode = torch.compile(decode_step, mode="reduce-overhead", fullgraph=True)
    prompt = torch.randint(0, 512, (4, 16), generator=torch.Generator().manual_seed(1)).to(device)
    return {"model": model, "decode": decode, "prompt": prompt}


@torch.no_grad()
def step(state: dict, new_tokens: int = 16) -> torch.Tensor:
    tokens = state["prompt"]
    generated = []
    for _ in range(new_tokens):
        nxt = state["decode"](state["model"], tokens)
        generated.append(nxt.clone())  # CUDA-graph outputs are overwritten by the next call
        tokens = torch.cat([tokens[:, 1:], nxt[:, None]], dim=1)
    return torch.stack(generated, dim=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    state = setup(args.device)
    print(step(state).tolist()[0])


if __name__ == "__main__":
    main()
