"""genesis.data: TensorDataset, a deterministic DataLoader and Fashion-MNIST.

    images, labels = genesis.data.fashion_mnist(train=True)      # Debian's dataset-fashion-mnist
    loader = genesis.data.DataLoader(genesis.data.TensorDataset(images, labels),
                                     batch_size=64, shuffle=True, seed=0)
    for epoch in range(10):
        loader.set_epoch(epoch)
        for x, y in loader: ...

Epoch e's order depends only on (seed, e), the same as the C++ DataLoader: a Python run and a C++
run of the same model see the same batches.
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


class DataLoader:
    """Batches of a TensorDataset; iterating runs epoch `epoch` and then advances it, as the C++ one."""

    def __init__(self, dataset, batch_size=1, shuffle=False, drop_last=False, seed=0):
        self.dataset = dataset
        self.batch_size = batch_size
        self._impl = _C.data.DataLoader(list(dataset.tensors), batch_size, shuffle, drop_last, seed)

    def set_epoch(self, epoch):
        self._impl.epoch = epoch

    def __len__(self):
        return len(self._impl)

    def __iter__(self):
        # The epoch's order comes from the C++ loader once; each batch is one index_select per field
        # (the rows the C++ loader would copy, so the batches are the same).
        epoch = self._impl.epoch
        order = _C.tensor(self._impl.indices(epoch), dtype=_C.dtype.int64)
        tensors = self.dataset.tensors
        orders = {}
        bs = self.batch_size
        for b in range(len(self._impl)):
            batch = []
            for t in tensors:
                dev = t.device
                if dev not in orders:
                    orders[dev] = order.to(dev)
                batch.append(t.index_select(0, orders[dev][b * bs:(b + 1) * bs]))
            yield tuple(batch)
        self._impl.epoch = epoch + 1
