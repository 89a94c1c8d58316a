"""The pure-Python side of the hot modules' typing (ir.hot): a stand-in for Cython's `cython` module where Cython is
not installed (its `@cython.locals(...)` decorators do nothing, and the modules run as the plain Python they are),
and how a frozen class's constructor sets its fields when it runs as Python."""


class _PurePython:
    compiled = False

    @staticmethod
    def locals(**types):
        return lambda f: f


cython = _PurePython()


def set_frozen_fields(obj, names: tuple[str, ...], values: tuple) -> None:
    """Set the fields of a new instance of a class that refuses assignment (LoopNest, Lin, State: frozen values), as
    a frozen dataclass's __init__ does. Compiled, those classes set them as struct members instead."""
    for name, value in zip(names, values):
        object.__setattr__(obj, name, value)
