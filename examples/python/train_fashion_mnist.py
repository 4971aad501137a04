"""Trains an MLP (or a small CNN) on Fashion-MNIST: the Python twin of
examples/cpp/train_fashion_mnist.cpp.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_fashion_mnist.py --model mlp --epochs 10
    ... --model cnn --epochs 2 --limit-train 10000

Same models, initialisation order, dropout draws, data order (seed, epoch) and optimizer as the C++
program, so both print the same losses and accuracy for the same arguments.
"""
import argparse
import os
import time

import genesis
import genesis.nn as nn
import genesis.nn.functional as F
import genesis.optim as optim
from genesis.data import DataLoader, TensorDataset, fashion_mnist


class MLP(nn.Module):
    """784 -> 512 -> 256 -> 10 with ReLU and dropout 0.2 (~535k parameters)."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(784, 512)
        self.fc2 = nn.Linear(512, 256)
        self.fc3 = nn.Linear(256, 10)
        self.relu = nn.ReLU()
        self.drop = nn.Dropout(0.2)

    def forward(self, x):  # x (N, 1, 28, 28) -> logits (N, 10)
        h = self.drop(self.relu(self.fc1(self.flatten(x))))
        h = self.drop(self.relu(self.fc2(h)))
        return self.fc3(h)


class CNN(nn.Module):
    """(N,1,28,28) -> conv 16 -> pool -> conv 32 -> pool -> 128 -> 10 (206,922 parameters)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1, 1)
        self.pool = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)
        self.relu = nn.ReLU()

    def forward(self, x):
        h = self.pool(self.relu(self.conv1(x)))
        h = self.pool(self.relu(self.conv2(h)))
        return self.fc2(self.relu(self.fc1(self.flatten(h))))


def evaluate(model, images, labels, batch=1000):
    """(mean loss, correct) over the test set, in batches of 1000."""
    model.eval()
    loss_sum, correct = None, None
    with genesis.no_grad():
        for lo in range(0, images.shape[0], batch):
            x, y = images[lo:lo + batch], labels[lo:lo + batch]
            logits = model(x)
            loss = F.cross_entropy(logits, y, reduction="sum")
            c = (logits.argmax(1) == y).sum()
            loss_sum = loss if loss_sum is None else loss_sum + loss
            correct = c if correct is None else correct + c
    model.train()
    return loss_sum.item() / images.shape[0], correct.item()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="mlp", choices=["mlp", "cnn"])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda when available)")
    p.add_argument("--limit-train", type=int, default=0, help="use only the first N training images")
    p.add_argument("--limit-test", type=int, default=0, help="use only the first N test images")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: every core)")
    p.add_argument("--data", default=genesis.data.FASHION_MNIST_ROOT)
    args = p.parse_args(argv)
    if args.threads > 0:
        os.environ["GENESIS_NUM_THREADS"] = str(args.threads)  # read when the runtime starts
    device = genesis.device(args.device or ("cuda" if genesis.cuda.is_available() else "cpu"))

    t0 = time.perf_counter()
    train_x, train_y = fashion_mnist(args.data, train=True, device=device)
    test_x, test_y = fashion_mnist(args.data, train=False, device=device)
    if args.limit_train:
        train_x, train_y = train_x[:args.limit_train].contiguous(), train_y[:args.limit_train].contiguous()
    if args.limit_test:
        test_x, test_y = test_x[:args.limit_test].contiguous(), test_y[:args.limit_test].contiguous()
    loader = DataLoader(TensorDataset(train_x, train_y), batch_size=args.batch_size, shuffle=True, seed=args.seed)
    print(f"Fashion-MNIST: {train_x.shape[0]} train / {test_x.shape[0]} test images on {device} "
          f"(loaded in {time.perf_counter() - t0:.2f} s)")

    genesis.manual_seed(args.seed)
    model = (MLP() if args.model == "mlp" else CNN()).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    opt = optim.Adam(model.parameters(), lr=args.lr)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, args.epochs)
    print(f"model {type(model).__name__} ({n_params} parameters), Adam lr {args.lr:g}, cosine schedule over "
          f"{args.epochs} epochs, batch {args.batch_size}, seed {args.seed}")

    results = []
    for epoch in range(args.epochs):
        model.train()
        loader.set_epoch(epoch)
        loss_sum, seen, steps = genesis.zeros((), device=device), 0, 0
        t = time.perf_counter()
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with genesis.no_grad():
                loss_sum.add_(loss.detach() * y.shape[0])
            seen += y.shape[0]
            steps += 1
        train_secs = time.perf_counter() - t
        sched.step()
        test_loss, correct = evaluate(model, test_x, test_y)
        acc = 100.0 * correct / test_x.shape[0]
        train_loss = loss_sum.item() / max(1, seen)
        print(f"epoch {epoch + 1}/{args.epochs}  train loss {train_loss:.9g}  test loss {test_loss:.4f}  "
              f"test acc {acc:.2f}% ({correct}/{test_x.shape[0]})  train {train_secs:.3f} s "
              f"({steps / train_secs:.1f} batch/s)")
        results.append({"train_loss": train_loss, "test_loss": test_loss, "accuracy": acc, "seconds": train_secs})
    return results


if __name__ == "__main__":
    main()
