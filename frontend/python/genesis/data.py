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
        self._impl = _C.data.DataLoader(list(dataset.tensors), batch_size, shuffle, drop_last, seed)

    def set_epoch(self, epoch):
        self._impl.epoch = epoch

    def __len__(self):
        return len(self._impl)

    def __iter__(self):
        epoch = self._impl.epoch
        for b in range(len(self._impl)):
            yield tuple(self._impl.batch(epoch, b))
        self._impl.epoch = epoch + 1
