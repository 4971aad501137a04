"""A small stand-in for torchvision, enough for the example programs here, over the framework under test.

PUBLIC_EXAMPLES_FRAMEWORK picks that framework (genesis, or torch for the control run): datasets hand out its
tensors and models are built from its nn.  Datasets never download: MNIST reads Fashion-MNIST (the same
format: 28x28 grey images, 10 classes) from genesis.data.FASHION_MNIST_ROOT when it is installed, else makes
random images; PUBLIC_EXAMPLES_SUBSET="train,test" caps their sizes (default 640,320) so a run stays short.
Image work (resizing, cropping, normalising) happens in NumPy, so that a program fails on what it calls
itself, not on this stand-in."""
import importlib
import os

framework = importlib.import_module(os.environ.get("PUBLIC_EXAMPLES_FRAMEWORK", "genesis"))

from torchvision import datasets, models, transforms, utils  # noqa: E402

__all__ = ["datasets", "models", "transforms", "utils"]

__version__ = "0.0-stand-in"
