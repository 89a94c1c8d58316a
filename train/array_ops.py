"""The few array operations the cost terms use, for torch tensors and numpy arrays alike.

Why: training differentiates the terms (train.model.cost_terms, train.analytical.analytical_terms) in torch, and
search scores the analytical model's terms for every batch of children it expands. On a batch of a few dozen
schedules torch spends most of a call dispatching its ~150 small operations (~0.4 ms a call on this project's
machines); numpy runs the same operations in a fraction of that. Writing the terms once over `array_ops(x)` keeps one
definition of them: both namespaces do IEEE float64 element-wise arithmetic, so they give the same bits.
"""

from __future__ import annotations

import contextlib

import numpy as np


class NumpyOps:
    """The operations on numpy arrays."""

    where = staticmethod(np.where)
    minimum = staticmethod(np.minimum)
    ceil = staticmethod(np.ceil)
    zeros_like = staticmethod(np.zeros_like)
    ones_like = staticmethod(np.ones_like)

    @staticmethod
    def clamp_min(t, low):
        return np.maximum(t, low)

    @staticmethod
    def clamp_max(t, high):
        return np.minimum(t, high)

    @staticmethod
    def stack(ts, dim: int):
        return np.stack(ts, axis=dim)

    @staticmethod
    def clone(t):
        return t.copy()

    @staticmethod
    def cast_like(t, like):
        return t.astype(like.dtype, copy=False)

    @staticmethod
    def first_rows(n: int, like):
        """[n] bools, True for row 0 only (the output stage's row)."""
        out = np.zeros(n, dtype=bool)
        out[:1] = True
        return out

    @staticmethod
    def quiet():
        """Overflow to inf and 0/0 as torch does them: silently (numpy warns)."""
        return np.errstate(over="ignore", divide="ignore", invalid="ignore")


class TorchOps:
    """The operations on torch tensors (autograd passes through them)."""

    def __init__(self):
        import torch

        self._torch = torch
        self.where = torch.where
        self.minimum = torch.minimum
        self.ceil = torch.ceil
        self.zeros_like = torch.zeros_like
        self.ones_like = torch.ones_like

    @staticmethod
    def clamp_min(t, low):
        return t.clamp_min(low)

    @staticmethod
    def clamp_max(t, high):
        return t.clamp_max(high)

    def stack(self, ts, dim: int):
        return self._torch.stack(ts, dim=dim)

    @staticmethod
    def clone(t):
        return t.clone()

    @staticmethod
    def cast_like(t, like):
        return t.to(like.dtype)

    def first_rows(self, n: int, like):
        out = self._torch.zeros(n, dtype=self._torch.bool, device=like.device)
        out[:1] = True
        return out

    @staticmethod
    def quiet():
        return contextlib.nullcontext()


NUMPY = NumpyOps()
_torch_ops: TorchOps | None = None


def array_ops(x) -> NumpyOps | TorchOps:
    """The namespace of `x`: numpy's for an ndarray, torch's otherwise."""
    global _torch_ops
    if isinstance(x, np.ndarray):
        return NUMPY
    if _torch_ops is None:
        _torch_ops = TorchOps()
    return _torch_ops
