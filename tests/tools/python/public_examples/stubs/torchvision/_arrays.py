"""NumPy views of the framework's tensors and back."""
import numpy as np

from torchvision import framework


def to_numpy(x):
    """A NumPy array of a framework tensor (detached, on the CPU) or of anything array-like."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "cpu"):
        x = x.cpu()
    if hasattr(x, "numpy"):
        return np.asarray(x.numpy())
    return np.asarray(x)


def to_tensor(a):
    """A framework tensor holding a NumPy array (its dtype kept)."""
    return framework.tensor(np.ascontiguousarray(a))
