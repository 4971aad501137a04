"""Boolean switches stored on a module object, set and read like torch.backends's (a bool only)."""
import types


def bool_flag(name, setter_name, on_set=None):
    """A property of a module class: reads _flags[name]; writes accept only a bool (RuntimeError otherwise, as
    torch's setters say), then call on_set(value) when given."""

    def get(mod):
        return mod.__dict__["_flags"][name]

    def put(mod, value):
        if not isinstance(value, bool):
            raise RuntimeError(f"{setter_name} expects a bool, but got {type(value).__name__}")
        mod.__dict__["_flags"][name] = value
        if on_set is not None:
            on_set(value)

    return property(get, put, doc=f"torch.backends flag {name!r} (a bool)")


class FlagModule(types.ModuleType):
    """A module whose class carries bool_flag properties (the module object's __class__ is set to a subclass)."""
