"""genesis.utils.data: torch.utils.data's import path for genesis.data (the same objects).

    from genesis.utils.data import DataLoader, Dataset, random_split
"""
from genesis.data import *  # noqa: F401,F403
from genesis.data import __all__  # noqa: F401

# torch.utils.data's submodule paths (torch.utils.data.sampler, .dataset, .dataloader, ...) name
# the same objects.
import sys as _sys  # noqa: E402

import genesis.data as _data  # noqa: E402

__path__ = []  # a package to the import system, so that its submodule names resolve

for _name in ("sampler", "dataset", "dataloader", "distributed", "_utils"):
    _sys.modules[__name__ + "." + _name] = _data
del _name
