"""genesis.data: TensorDataset, a deterministic DataLoader, DistributedSampler and Fashion-MNIST.

    images, labels = genesis.data.fashion_mnist(train=True)      # Debian's dataset-fashion-mnist
    loader = genesis.data.DataLoader(genesis.data.TensorDataset(images, labels),
                                     batch_size=64, shuffle=True, seed=0)
    for epoch in range(10):
        loader.set_epoch(epoch)
        for x, y in loader: ...

Epoch e's order depends only on (seed, e), the same as the C++ DataLoader: a Python run and a C++
run of the same model see the same batches.

Distributed training shards the data in either of two ways (rank r of R gets positions r, r + R, ...
of one permutation, padded by repeating its start so every rank gets ceil(n / R) examples):

    loader = DataLoader(ds, batch_size=64, shuffle=True, num_replicas=dist.get_world_size(),
                        rank=dist.get_rank())                     # the C++ loader shards
    sampler = DistributedSampler(ds)                              # torch's way
    loader = DataLoader(ds, batch_size=64, sampler=sampler)       # sampler.set_epoch(e) each epoch
"""
from genesis import _C
from genesis._C.data import FASHION_MNIST_ROOT, fashion_mnist, fashion_mnist_available, fashion_mnist_classes  # noqa


class TensorDataset:
    """Examples are the rows of tensors that share dim 0."""

    def __init__(self, *tensors):
        self.tensors = tensors

    def __len__(self):
        return self.tensors[0].shape[0]

    def __getitem__(self, i):
        return tuple(t[i] for t in self.tensors)


class DistributedSampler:
    """The indices of a dataset that this rank reads (torch.utils.data.DistributedSampler).

    Every rank draws the same permutation, keyed by (seed, epoch) only, pads it by repeating its
    start to a multiple of num_replicas (or cuts it, with drop_last), and takes positions rank,
    rank + num_replicas, ... of it: the ranks together cover the dataset once per epoch. Call
    set_epoch(e) before each epoch for a new order. num_replicas and rank default to the world
    size and rank of the default process group (RuntimeError when there is none).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        from genesis import distributed
        if num_replicas is None:
            num_replicas = distributed.get_world_size()
        if rank is None:
            rank = distributed.get_rank()
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas, self.rank = int(num_replicas), int(rank)
        self.shuffle, self.seed, self.drop_last = bool(shuffle), int(seed), bool(drop_last)
        self.epoch = 0
        n = dataset if isinstance(dataset, int) else len(dataset)
        self._impl = _C.distributed.DistributedSampler(n, self.num_replicas, self.rank, self.shuffle, self.seed,
                                                       self.drop_last)
        self.num_samples = self._impl.num_samples()
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch):
        """Sets the epoch, which changes the permutation when shuffling."""
        self.epoch = int(epoch)
        self._impl.set_epoch(self.epoch)

    def __iter__(self):
        return iter(self._impl.indices())

    def __len__(self):
        return self.num_samples


class DataLoader:
    """Batches of a TensorDataset; iterating runs epoch `epoch` and then advances it, as the C++ one.

    num_replicas and rank shard every epoch's order over the ranks (the C++ loader's sharding, the
    same split as DistributedSampler). A sampler (any iterable of indices, e.g. a
    DistributedSampler) gives the order instead; it excludes shuffle, and set_epoch is passed on
    to it.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, drop_last=False, seed=0,
                 num_replicas=1, rank=0):
        if sampler is not None and (shuffle or num_replicas != 1):
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle and num_replicas")
        self.dataset = dataset
        self.batch_size = batch_size
        self.sampler = sampler
        self.drop_last = drop_last
        self._impl = _C.data.DataLoader(list(dataset.tensors), batch_size, shuffle, drop_last, seed, num_replicas,
                                        rank)

    def set_epoch(self, epoch):
        self._impl.epoch = epoch
        if self.sampler is not None and hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __len__(self):
        if self.sampler is None:
            return len(self._impl)
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        # The epoch's order comes from the C++ loader (or the sampler) once; each batch is one
        # index_select per field (the rows the C++ loader would copy, so the batches are the same).
        epoch = self._impl.epoch
        indices = self._impl.indices(epoch) if self.sampler is None else [int(i) for i in self.sampler]
        order = _C.tensor(indices, dtype=_C.dtype.int64)
        tensors = self.dataset.tensors
        orders = {}
        bs = self.batch_size
        for b in range(len(self)):
            batch = []
            for t in tensors:
                dev = t.device
                if dev not in orders:
                    orders[dev] = order.to(dev)
                batch.append(t.index_select(0, orders[dev][b * bs:(b + 1) * bs]))
            yield tuple(batch)
        self._impl.epoch = epoch + 1
