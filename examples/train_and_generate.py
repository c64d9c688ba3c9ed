"""A small GPT-style language model: train a few steps, then generate token by token.

This is the kind of script people bring from NVIDIA machines. It carries several things
that break, hang or slow down on ROCm; `rocmport lint examples/` finds them and
`rocmport fix --write examples/` gates them on `is_rocm`, leaving the NVIDIA path as it was.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab: int = 256
    dim: int = 128
    layers: int = 4
    heads: int = 4
    context: int = 64
    # Stored for later: ROC105 points at it, the compile call below is what gets fixed.
    compile_mode: str = "reduce-overhead"


class Block(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.dim)
        self.attn = nn.MultiheadAttention(cfg.dim, cfg.heads, batch_first=True)
        self.norm2 = nn.LayerNorm(cfg.dim)
        self.mlp = nn.Sequential(nn.Linear(cfg.dim, 4 * cfg.dim), nn.GELU(), nn.Linear(4 * cfg.dim, cfg.dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device), 1)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.pos = nn.Parameter(torch.zeros(1, cfg.context, cfg.dim))
        self.blocks = nn.Sequential(*[Block(cfg) for _ in range(cfg.layers)])
        self.head = nn.Linear(cfg.dim, cfg.vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        return self.head(self.blocks(x))


def train(model: nn.Module, steps: int, device: str, cfg: Config) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    # max-autotune also captures CUDA graphs (ROC102).
    step_model = torch.compile(model, mode="max-autotune")
    loss = torch.tensor(0.0)
    for _ in range(steps):
        tokens = torch.randint(0, cfg.vocab, (8, cfg.context), device=device)
        logits = step_model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return loss.item()


@torch.no_grad()
def generate(model: nn.Module, prompt: torch.Tensor, new_tokens: int, mode: str) -> torch.Tensor:
    # The decode step is launch-bound: NVIDIA users compile it with CUDA graphs.
    decode = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    # A mode that comes from the command line is mapped at run time (ROC104).
    prefill = torch.compile(model, mode=mode, dynamic=True)
    tokens = prompt
    logits = prefill(tokens)
    for _ in range(new_tokens):
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        tokens = torch.cat([tokens, nxt], dim=1)[:, -model.pos.shape[1]:]
        logits = decode(tokens)
    return tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prefill-mode", default="default", choices=["default", "reduce-overhead", "max-autotune"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    cfg = Config()
    model = TinyGPT(cfg).to(args.device)
    start = time.perf_counter()
    loss = train(model, args.steps, args.device, cfg)
    model.eval()
    out = generate(model, torch.zeros(1, 8, dtype=torch.long, device=args.device), 8, args.prefill_mode)
    print(f"loss {loss:.3f}; generated {out.shape[1]} tokens in {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
