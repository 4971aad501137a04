"""genesis.utils: torch.utils's import paths (genesis.utils.data is genesis.data)."""
from genesis.utils import data  # noqa: F401
