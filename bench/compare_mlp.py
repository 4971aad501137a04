#!/usr/bin/python3
"""bench/compare_mlp.py - one epoch of the Fashion-MNIST MLP: Genesis (CPU) vs PyTorch.

Times the training epochs of examples/cpp/train_fashion_mnist.cpp --model mlp
(Genesis on its CPU backend) and of the same loop in Debian's PyTorch
(python3-torch 1.13), then prints both and the ratio the acceptance asks for:

    genesis epoch time / pytorch epoch time <= 1.0

Same everything: 784-512-256-10 MLP with ReLU and dropout 0.2, cross-entropy,
Adam (lr 1e-3, zero_grad(set_to_none=True)), batch 64, the 60000 training
images in memory as one float32 tensor, a shuffled permutation per epoch and
an index_select per batch, the loss summed without a host sync per step, the
same thread count (GENESIS_NUM_THREADS / torch.set_num_threads).  Evaluation
and checkpoints are left out of both.  Rounds alternate Genesis and PyTorch so
that machine noise hits both alike; the figure per framework is the fastest
epoch (each epoch's time is printed too).

Debian's python3-torch links the reference BLAS (libblas3, netlib) unless
another libblas.so.3 is installed, which makes its matmuls ~20x slower than
they can be.  So PyTorch is also timed over OpenBLAS when one is found
(--openblas DIR, default: Debian's libopenblas0-pthread directory; or the
package unpacked anywhere with `apt-get download libopenblas0-pthread &&
dpkg-deb -x ...`), loaded for the PyTorch process alone via LD_LIBRARY_PATH,
and the ratio is taken against the faster PyTorch.

    /usr/bin/python3 bench/compare_mlp.py [build dir] [--threads N] [--epochs 2] [--rounds 1] [--openblas DIR]
"""
import argparse
import gzip
import json
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from mlp_epochs import timed_epochs  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("build", nargs="?", default="build")
p.add_argument("--threads", type=int, default=os.cpu_count())
p.add_argument("--epochs", type=int, default=2, help="epochs per framework per round")
p.add_argument("--rounds", type=int, default=1)
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--limit-train", type=int, default=0, help="first N training images only (0: all)")
p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--openblas", default="/usr/lib/x86_64-linux-gnu/openblas-pthread",
               help="directory holding OpenBLAS's libblas.so.3 for a second PyTorch run ('' to skip)")
p.add_argument("--no-default-blas", action="store_true",
               help="skip PyTorch on Debian's default (reference) BLAS, which takes ~2 min per epoch")
p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
args = p.parse_args()

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("compare_mlp: PyTorch is missing (Debian: apt-get install -y python3-torch)")

exe = os.path.join(args.build, "bin", "train_fashion_mnist")
if not args.torch_worker and not os.access(exe, os.X_OK):
    sys.exit(f"compare_mlp: {exe} not found (cmake --build {args.build} --target example_train_fashion_mnist)")


def genesis_epochs():
    cmd = [exe, "--model", "mlp", "--device", "cpu", "--threads", str(args.threads), "--epochs", str(args.epochs),
           "--batch-size", str(args.batch_size), "--no-eval", "--checkpoint", "none", "--progress", "lines"]
    if args.limit_train:
        cmd += ["--limit-train", str(args.limit_train)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [float(m) for m in re.findall(r"^epoch \d+/\d+ .*  train (\S+) s \(", out, re.M)]


def read_idx(path):
    with gzip.open(path, "rb") as f:
        b = f.read()
    ndim = b[3]
    dims = struct.unpack(">" + "I" * ndim, b[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(b[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 256), nn.Linear(256, 10)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        h = self.drop(F.relu(self.fc1(self.flatten(x))))
        h = self.drop(F.relu(self.fc2(h)))
        return self.fc3(h)

def torch_worker():
    """Runs in a child process (so that LD_LIBRARY_PATH can pick the BLAS); prints the epoch times."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    global images, labels, model, opt, gen
    images = read_idx(os.path.join(args.data, "train-images-idx3-ubyte.gz")).float().div_(255).reshape(-1, 1, 28, 28)
    labels = read_idx(os.path.join(args.data, "train-labels-idx1-ubyte.gz")).long()
    if args.limit_train:
        images, labels = images[:args.limit_train].contiguous(), labels[:args.limit_train].contiguous()
    model = MLP()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    print(json.dumps({"times": torch_epochs(), "n": images.shape[0], "version": torch.__version__}))


def torch_epochs():
    # five host syncs per epoch: the progress lines Genesis prints
    times, _ = timed_epochs(torch, F, model, opt, images, labels, args.batch_size, args.epochs,
                            lambda n: torch.randperm(n, generator=gen), syncs_per_epoch=5)
    return times


def run_torch(blas_dir):
    env = dict(os.environ)
    # Debian's torch does not know it runs on OpenBLAS, so torch.set_num_threads
    # does not reach OpenBLAS's own pool: give it the same thread count here.
    env["OPENBLAS_NUM_THREADS"] = str(args.threads)
    if blas_dir:
        env["LD_LIBRARY_PATH"] = blas_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", "--threads", str(args.threads),
           "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--limit-train", str(args.limit_train),
           "--data", args.data]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


if args.torch_worker:
    torch_worker()
    sys.exit(0)

configs = [] if args.no_default_blas else [("pytorch (Debian default BLAS)", "")]
if args.openblas and os.path.exists(os.path.join(args.openblas, "libblas.so.3")):
    configs.append(("pytorch + OpenBLAS", args.openblas))
else:
    print(f"note: no OpenBLAS libblas.so.3 in '{args.openblas}': PyTorch runs with the default BLAS only")
    if not configs:
        configs = [("pytorch (Debian default BLAS)", "")]
print(f"load average at start: {os.getloadavg()[0]:.2f}; threads {args.threads}; batch {args.batch_size}; "
      f"epochs of {args.limit_train or 60000} images")
best = {"genesis": []}
for name, _ in configs:
    best[name] = []
for r in range(args.rounds):
    g = genesis_epochs()
    best["genesis"] += g
    print(f"round {r + 1}: {'genesis':28s} epochs " + " ".join(f"{s:7.3f}" for s in g) + " s")
    for name, blas in configs:
        t = run_torch(blas)["times"]
        best[name] += t
        print(f"round {r + 1}: {name:28s} epochs " + " ".join(f"{s:7.3f}" for s in t) + " s")
g_best = min(best["genesis"])
print(f"fastest epoch: genesis {g_best:.3f} s")
fastest_torch = None
for name, _ in configs:
    t = min(best[name])
    print(f"fastest epoch: {name} {t:.3f} s -> ratio genesis/pytorch {g_best / t:.3f}")
    fastest_torch = t if fastest_torch is None else min(fastest_torch, t)
print(f"ratio genesis/pytorch (fastest PyTorch) = {g_best / fastest_torch:.3f} (target <= 1.0)")
