"""A stand-in for matplotlib: plotting calls are accepted and draw nothing (the examples only save figures)."""


def use(backend, *args, **kwargs):
    pass
