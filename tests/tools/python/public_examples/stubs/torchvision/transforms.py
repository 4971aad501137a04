"""The torchvision.transforms the examples use, computed in NumPy; ToTensor and Normalize return framework
tensors."""
import numpy as np

from torchvision._arrays import to_numpy, to_tensor


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor:
    """H x W (x C) uint8 image -> C x H x W float32 tensor in [0, 1]."""

    def __call__(self, image):
        a = to_numpy(image)
        scale = a.dtype == np.uint8
        if a.ndim == 2:
            a = a[:, :, None]
        a = a.transpose(2, 0, 1).astype(np.float32)
        return to_tensor(a / np.float32(255) if scale else a)


class Normalize:
    """(x - mean) / std per channel of a C x H x W tensor."""

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std = np.asarray(mean, np.float32), np.asarray(std, np.float32)

    def __call__(self, tensor):
        a = to_numpy(tensor).astype(np.float32)
        return to_tensor((a - self.mean[:, None, None]) / self.std[:, None, None])


class Resize:
    """Nearest-neighbour resize of an H x W (x C) image; an int size is the shorter side's."""

    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        a = to_numpy(image)
        h, w = a.shape[:2]
        if isinstance(self.size, int):
            oh, ow = (self.size, max(1, w * self.size // h)) if h <= w else (max(1, h * self.size // w), self.size)
        else:
            oh, ow = self.size
        rows = (np.arange(oh) * h // oh).clip(0, h - 1)
        cols = (np.arange(ow) * w // ow).clip(0, w - 1)
        return a[rows][:, cols]


class CenterCrop:
    def __init__(self, size):
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, image):
        a = to_numpy(image)
        h, w = a.shape[:2]
        top, left = max(0, (h - self.size[0]) // 2), max(0, (w - self.size[1]) // 2)
        return a[top:top + self.size[0], left:left + self.size[1]]


class Lambda:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)
