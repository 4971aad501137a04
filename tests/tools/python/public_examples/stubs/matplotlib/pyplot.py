"""matplotlib.pyplot calls the examples make, accepted and drawing nothing; plotted data must be array-like."""
import numpy as np


def _nothing(*args, **kwargs):
    pass


def plot(*args, **kwargs):
    for a in args:
        if not isinstance(a, str):
            np.asarray(a, dtype=np.float64)


figure = title = xlabel = ylabel = xticks = yticks = savefig = close = legend = show = _nothing
