"""genesis.utils.data: torch.utils.data's import path for genesis.data (the same objects).

    from genesis.utils.data import DataLoader, Dataset, random_split
"""
from genesis.data import *  # noqa: F401,F403
from genesis.data import __all__  # noqa: F401
