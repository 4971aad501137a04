"""genesis.backends.mps: genesis has no Metal (Apple GPU) backend, so MPS is neither built nor available."""


def is_built():
    """False: genesis has no MPS backend."""
    return False


def is_available():
    """False: genesis has no MPS backend (programs fall back to "cuda" or "cpu")."""
    return False
