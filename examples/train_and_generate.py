"""A small GPT-style language model: train a few steps, then generate token by token.

This is the kind of script people bring from NVIDIA machines. It carries several things
that break, hang or slow down on ROCm; `rocmport lint examples/` finds them and
`rocmport fix --write examples/` gates them on `is_rocm`, leaving the NVIDIA path as it was.
"""

from __future__ import annotations

import argparse
import copy
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


def compile_for_training(model: nn.Module) -> nn.Module:
    # max-autotune also captures CUDA graphs (ROC102).
    return torch.compile(model, mode="max-autotune")


def compile_for_decoding(model: nn.Module, mode: str):
    # The decode step is launch-bound: NVIDIA users compile it with CUDA graphs.
    decode = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    # A mode that comes from the command line is mapped at run time (ROC104).
    prefill = torch.compile(model, mode=mode, dynamic=True)
    return decode, prefill


def train(step_model: nn.Module, opt: torch.optim.Optimizer, steps: int, device: str, cfg: Config,
          generator: torch.Generator | None = None) -> float:
    loss = torch.tensor(0.0)
    for _ in range(steps):
        tokens = torch.randint(0, cfg.vocab, (8, cfg.context), device=device, generator=generator)
        logits = step_model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return loss.item()


@torch.no_grad()
def generate(decode, prefill, context: int, prompt: torch.Tensor, new_tokens: int) -> torch.Tensor:
    tokens = prompt
    logits = prefill(tokens)
    for _ in range(new_tokens):
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        tokens = torch.cat([tokens, nxt], dim=1)[:, -context:]
        logits = decode(tokens)
    return tokens


def setup(device: str, prefill_mode: str = "default") -> dict:
    """One model, compiled once for training and once for decoding (benchmarks/gpu_validate.py
    times ``step``)."""
    torch.manual_seed(0)
    cfg = Config()
    model = TinyGPT(cfg).to(device)
    decode, prefill = compile_for_decoding(model, prefill_mode)
    return {"cfg": cfg, "model": model, "device": device, "train": compile_for_training(model),
            "decode": decode, "prefill": prefill, "initial": copy.deepcopy(model.state_dict()),
            "generator": torch.Generator(device=device)}


def step(state: dict) -> torch.Tensor:
    """One training step from the initial weights, then eight tokens generated from a fixed
    prompt in eval mode: every step does the same work, whichever process runs how many."""
    model, cfg, device = state["model"], state["cfg"], state["device"]
    model.load_state_dict(state["initial"])
    state["generator"].manual_seed(0)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loss = train(state["train"], opt, 1, device, cfg, state["generator"])
    model.eval()
    prompt = torch.zeros(1, 8, dtype=torch.long, device=device)
    tokens = generate(state["decode"], state["prefill"], cfg.context, prompt, 8)
    return torch.cat([torch.tensor([loss], device=device), tokens.flatten().float()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--prefill-mode", default="default", choices=["default", "reduce-overhead", "max-autotune"])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    state = setup(args.device, args.prefill_mode)
    start = time.perf_counter()
    opt = torch.optim.AdamW(state["model"].parameters(), lr=3e-4)
    loss = train(state["train"], opt, args.steps, args.device, state["cfg"])
    state["model"].eval()
    prompt = torch.zeros(1, 8, dtype=torch.long, device=args.device)
    out = generate(state["decode"], state["prefill"], state["cfg"].context, prompt, 8)
    print(f"loss {loss:.3f}; generated {out.shape[1]} tokens in {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
