#!/usr/bin/python3
"""bench/python/compare_overhead.py - the cost of Genesis from Python against PyTorch, in one run.

1. A tiny op from Python: `a + b` on 1-element float32 CPU tensors (also with autograd recording,
   and `x.relu()`), per call.  Rounds alternate Genesis and PyTorch; each figure is the fastest
   round's mean.  Target: Genesis <= 1.5x PyTorch's per-call time.
2. An epoch of the Fashion-MNIST MLP written in Python (examples/python/train_fashion_mnist.py's
   784-512-256-10 with ReLU and dropout 0.2, Adam lr 1e-3, batch 64, cross entropy, a shuffled
   permutation per epoch) in Genesis and the same loop in PyTorch, the same thread count
   (GENESIS_NUM_THREADS / torch.set_num_threads).  Target: Genesis epoch <= PyTorch's.

Debian's python3-torch uses the reference BLAS unless another libblas.so.3 is installed; PyTorch
is also timed over OpenBLAS when --openblas names a directory holding one (see
bench/compare_mlp.py), and the ratio is taken against the faster PyTorch.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/compare_overhead.py [--threads N]
        [--calls 200000] [--rounds 5] [--limit-train 12000] [--epochs 2] [--openblas DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import time

from mlp_epochs import timed_epochs

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=1)
p.add_argument("--calls", type=int, default=200000)
p.add_argument("--rounds", type=int, default=5)
p.add_argument("--limit-train", type=int, default=12000, help="images per epoch (0: all 60000)")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--openblas", default="/usr/lib/x86_64-linux-gnu/openblas-pthread")
p.add_argument("--skip-mlp", action="store_true")
p.add_argument("--worker", choices=["genesis", "torch"], help=argparse.SUPPRESS)
args = p.parse_args()
os.environ["GENESIS_NUM_THREADS"] = str(args.threads)


# ------------------------------------------------------------------ tiny ops

def per_call(fn, calls):
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls * 1e6


def tiny_ops():
    import genesis
    import torch
    torch.set_num_threads(args.threads)
    ga, gb = genesis.ones(1), genesis.ones(1)
    gg = genesis.ones(1, requires_grad=True)
    ta, tb = torch.ones(1), torch.ones(1)
    tg = torch.ones(1, requires_grad=True)
    cases = {
        "a + b": (lambda: ga + gb, lambda: ta + tb),
        "a + b (autograd)": (lambda: gg + gb, lambda: tg + tb),
        "a.relu()": (lambda: ga.relu(), lambda: ta.relu()),
    }
    results = {}
    for name, (gf, tf) in cases.items():
        per_call(gf, 1000)
        per_call(tf, 1000)
        g_best = t_best = float("inf")
        for _ in range(args.rounds):
            g_best = min(g_best, per_call(gf, args.calls))
            t_best = min(t_best, per_call(tf, args.calls))
        results[name] = (g_best, t_best)
    return results


# ------------------------------------------------------------------ MLP epochs

def mlp_worker(framework):
    """Runs in a child process (so that LD_LIBRARY_PATH can choose PyTorch's BLAS); prints epoch times."""
    if framework == "genesis":
        import genesis as fw
        import genesis.nn as nn
        import genesis.nn.functional as F
        images, labels = fw.data.fashion_mnist(train=True)
        fw.manual_seed(0)
        perm_fn = lambda n: fw.randperm(n)  # noqa: E731
    else:
        import torch as fw
        import torch.nn as nn
        import torch.nn.functional as F
        import genesis
        fw.set_num_threads(args.threads)
        gi, gl = genesis.data.fashion_mnist(train=True)  # the same images, as torch tensors
        images, labels = fw.from_numpy(gi.numpy().copy()), fw.from_numpy(gl.numpy().copy())
        fw.manual_seed(0)
        perm_fn = lambda n: fw.randperm(n)  # noqa: E731
    if args.limit_train:
        images, labels = images[:args.limit_train].contiguous(), labels[:args.limit_train].contiguous()

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 256), nn.Linear(256, 10)
            self.relu = nn.ReLU()
            self.drop = nn.Dropout(0.2)

        def forward(self, x):
            h = self.drop(self.relu(self.fc1(self.flatten(x))))
            h = self.drop(self.relu(self.fc2(h)))
            return self.fc3(h)

    model = MLP()
    opt = fw.optim.Adam(model.parameters(), lr=1e-3)
    times, loss_sum = timed_epochs(fw, F, model, opt, images, labels, args.batch_size, args.epochs, perm_fn)
    print(json.dumps({"times": times, "loss": loss_sum.item() / images.shape[0]}))


def run_worker(framework, blas_dir=""):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))
    if blas_dir:
        env["LD_LIBRARY_PATH"] = blas_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", framework, "--threads", str(args.threads),
           "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--limit-train", str(args.limit_train)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    print(f"load average at start: {os.getloadavg()[0]:.2f}; threads {args.threads}")
    ok = True
    for name, (g, t) in tiny_ops().items():
        ratio = g / t
        print(f"tiny op {name:18s}: genesis {g:6.3f} us, pytorch {t:6.3f} us per call -> ratio {ratio:.2f}"
              f" (target <= 1.5)")
        ok &= ratio <= 1.5 or name != "a + b"
    if args.skip_mlp:
        return ok
    g = min(run_worker("genesis")["times"])
    configs = [("pytorch (Debian default BLAS)", "")]
    if args.openblas and os.path.exists(os.path.join(args.openblas, "libblas.so.3")):
        configs.append(("pytorch + OpenBLAS", args.openblas))
    fastest = None
    print(f"MLP epoch of {args.limit_train or 60000} images, batch {args.batch_size}: genesis {g:.3f} s")
    for name, blas in configs:
        t = min(run_worker("torch", blas)["times"])
        fastest = t if fastest is None else min(fastest, t)
        print(f"MLP epoch: {name} {t:.3f} s -> ratio genesis/pytorch {g / t:.3f}")
    print(f"MLP epoch ratio genesis/pytorch (fastest PyTorch) = {g / fastest:.3f} (target <= 1.0)")
    return ok and g <= fastest


if __name__ == "__main__":
    if args.worker:
        mlp_worker(args.worker)
        sys.exit(0)
    sys.exit(0 if main() else 1)
