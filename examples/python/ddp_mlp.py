"""Data-parallel training of a small MLP, the torch.distributed way.

    genesis launch --nproc-per-node 2 /usr/bin/python3 examples/python/ddp_mlp.py
    PYTHONPATH=build/python /usr/bin/python3 examples/python/ddp_mlp.py      # one process works too

Each rank builds the same model and wraps it in DistributedDataParallel, which copies rank 0's
parameters to every rank and averages the gradients over the ranks while backward runs. A
DistributedSampler gives each rank its share of every epoch; the ranks together see the whole
dataset once per epoch. Rank 0 prints the epoch's mean loss over all ranks (an all_reduce), the
final accuracy, and writes the checkpoint (the module's own state_dict: it loads at any world size).
"""
import argparse

import genesis
import genesis.distributed as dist
import genesis.nn as nn
import genesis.optim as optim
from genesis.data import DataLoader, DistributedSampler, TensorDataset
from genesis.nn.parallel import DistributedDataParallel as DDP


class MLP(nn.Module):
    def __init__(self, d_in=2, hidden=32, classes=3):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def spirals(n, classes=3, seed=0):
    """n points on `classes` interleaved spiral arms (the same on every rank)."""
    g = genesis.Generator().manual_seed(seed)
    label = genesis.randint(0, classes, (n,), generator=g)
    r = genesis.rand(n, generator=g)
    theta = label.to(genesis.float32) * (2 * 3.14159265 / classes) + r * 4 + genesis.randn(n, generator=g) * 0.2
    x = genesis.stack([r * theta.cos(), r * theta.sin()], dim=1)
    return x, label


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--examples", type=int, default=1536)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--checkpoint", default="", help="write the model here (rank 0)")
    args = p.parse_args()

    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the launcher
    rank, world = dist.get_rank(), dist.get_world_size()

    genesis.manual_seed(0)
    model = DDP(MLP())
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    x, y = spirals(args.examples)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    dist.log0(f"{world} rank(s), {len(sampler)} examples and {len(loader)} batches per rank per epoch")

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a new order every epoch, the same on every rank
        total = genesis.zeros(2, dtype=genesis.float64)  # sum of losses, number of batches
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()  # averages the gradients over the ranks
            optimizer.step()
            total += genesis.tensor([loss.item(), 1.0], dtype=genesis.float64)
        dist.all_reduce(total)
        if rank == 0 and (epoch % 5 == 4 or epoch == args.epochs - 1):
            print(f"epoch {epoch + 1}: mean loss {total[0].item() / total[1].item():.4f}", flush=True)

    with genesis.no_grad():
        correct = (model(x).argmax(-1) == y).sum().item()
    if rank == 0:
        print(f"train accuracy {100.0 * correct / args.examples:.1f}%", flush=True)
    if args.checkpoint:
        dist.save_on_rank0(lambda: genesis.save(model.module.state_dict(), args.checkpoint))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
