"""Stand-in for Cython's `cython` module where Cython is not installed: the hot modules' typing decorators
(`@cython.locals(...)`) do nothing, and the modules run as the plain Python they are (ir.hot)."""


class _PurePython:
    compiled = False

    @staticmethod
    def locals(**types):
        return lambda f: f


cython = _PurePython()
