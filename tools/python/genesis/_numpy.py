"""NumPy, imported when first used: `import genesis` works without it (a bare virtualenv), and only
the features that need it (numpy(), from_numpy, interpolation tables, saving arrays, shared memory)
ask for it."""


class _LazyNumPy:
    def __getattr__(self, name):
        try:
            import numpy
        except ImportError as e:
            raise ImportError(f"this genesis feature needs NumPy (numpy.{name}); install numpy") from e
        return getattr(numpy, name)


np = _LazyNumPy()
