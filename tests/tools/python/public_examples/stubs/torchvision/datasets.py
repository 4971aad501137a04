"""MNIST (backed by Fashion-MNIST or random images) and FakeData, as torchvision.datasets has them.  Items
before a transform are H x W (x C) uint8 NumPy arrays where torchvision hands out PIL images."""
import gzip
import os

import numpy as np

from torchvision._arrays import to_tensor


def _subset(train):
    sizes = os.environ.get("PUBLIC_EXAMPLES_SUBSET", "640,320").split(",")
    return int(sizes[0] if train else sizes[1])


def _fashion_mnist_root():
    try:
        import genesis.data
        root = genesis.data.FASHION_MNIST_ROOT
    except (ImportError, AttributeError):
        return None
    return root if os.path.exists(os.path.join(root, "train-images-idx3-ubyte.gz")) else None


def _read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _mnist_arrays(train):
    n = _subset(train)
    root = _fashion_mnist_root()
    if root is not None:
        prefix = "train" if train else "t10k"
        images = _read_idx(os.path.join(root, prefix + "-images-idx3-ubyte.gz"))[:n]
        labels = _read_idx(os.path.join(root, prefix + "-labels-idx1-ubyte.gz"))[:n]
        return np.array(images), labels.astype(np.int64)
    rng = np.random.RandomState(1 if train else 2)
    return rng.randint(0, 256, size=(n, 28, 28)).astype(np.uint8), rng.randint(0, 10, size=n).astype(np.int64)


class MNIST:
    """torchvision.datasets.MNIST: .data (N x 28 x 28 uint8), .targets (N int64), items (image, int label)."""

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        self.root, self.train = root, train
        self.transform, self.target_transform = transform, target_transform
        self._images, self._labels = _mnist_arrays(train)
        self.data = to_tensor(self._images)
        self.targets = to_tensor(self._labels)

    def __len__(self):
        return len(self._labels)

    def __getitem__(self, index):
        image, target = self._images[index], int(self._labels[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class FakeData:
    """torchvision.datasets.FakeData: random images, the same ones for the same index."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None,
                 random_offset=0):
        self.size, self.image_size, self.num_classes = size, tuple(image_size), num_classes
        self.transform, self.target_transform, self.random_offset = transform, target_transform, random_offset

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError("{} index out of range".format(type(self).__name__))
        rng = np.random.RandomState(index + self.random_offset)
        c, h, w = self.image_size
        image = rng.randint(0, 256, size=(h, w, c)).astype(np.uint8)
        target = int(rng.randint(0, self.num_classes))
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
