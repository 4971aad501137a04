"""A small transformer: an encoder (token and position embeddings, pre-norm blocks of
multi-head self-attention and a GELU MLP) trained to reverse sequences of digits.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/transformer.py --steps 400
"""
import argparse
import time

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
import genesis.optim as optim


class Block(nn.Module):
    """x + attn(norm(x)), then h + mlp(norm(h)); x (N, L, d)."""

    def __init__(self, d, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h)[0]
        return x + self.mlp(self.norm2(x))


class Transformer(nn.Module):
    """ids (N, L) -> logits (N, L, vocab)."""

    def __init__(self, vocab, length, d=64, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(genesis.randn(length, d) * 0.02)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.tok(ids) + self.pos
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))


def batch(n, length, vocab, generator):
    x = genesis.randint(0, vocab, (n, length), generator=generator)
    return x, x.flip(1)  # targets: each sequence reversed


def main(argv=None):
    p = argparse.ArgumentParser(description="reverse digit sequences with a small transformer")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--length", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    vocab = 10
    genesis.manual_seed(args.seed)
    gen = genesis.Generator().manual_seed(args.seed)
    model = Transformer(vocab, args.length)
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = optim.lr_scheduler.get_cosine_schedule_with_warmup(opt, args.steps // 10, args.steps)
    print(f"transformer: {sum(p.numel() for p in model.parameters())} parameters, {args.steps} steps")
    t = time.perf_counter()
    losses = []
    for step in range(args.steps):
        x, y = batch(args.batch_size, args.length, vocab, gen)
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step % max(1, args.steps // 8) == 0 or step == args.steps - 1:
            print(f"step {step}: loss {losses[-1]:.4f}")
    model.eval()
    with genesis.no_grad():
        x, y = batch(1000, args.length, vocab, gen)
        acc = (model(x).argmax(-1) == y).float().mean().item()
    print(f"held-out token accuracy {100 * acc:.1f}% ({time.perf_counter() - t:.1f} s)")
    return losses, acc


if __name__ == "__main__":
    main()
