"""SGEMM: C = A B with an RDom over the shared dimension, 512 x 512 f32 (A and B indexed [row-major dim first])."""

from __future__ import annotations

from ir import Func, Input, Pipeline, RDom, Var, f32
from ir.builder import ScheduleBuilder, StageSpec

DESCRIPTION = "SGEMM C = A B, f32"
SIZES = {"full": 512, "small": 24}


def build(size: str = "full") -> Pipeline:
    n = SIZES[size]
    i, j = Var("i"), Var("j")
    A = Input("A", f32, 2)  # A[i, k]: i is the contiguous dimension
    B = Input("B", f32, 2)  # B[k, j]
    k = RDom((0, n), name="k")
    prod = Func("prod")
    prod[i, j] = 0.0
    prod[i, j] += A[i, k] * B[k, j]
    C = Func("C")
    C[i, j] = prod[i, j]
    return Pipeline([C], {C: (n, n)}, name="matmul")


def schedule(p: Pipeline, target=None):
    """Blocks of C in parallel; each block accumulates in a local tile of prod, the reduction outside a
    SIMD loop over i with a few columns unrolled (a register tile)."""
    n = p.output_sizes["C"][0]
    bi, bj = (64, 16) if n >= 64 else (8, 8)
    vw = min(32, bi)
    s = ScheduleBuilder(p, target)
    s.root("C", tiles=[{"i": bi, "j": bj}], vectorize="i", vector_width=min(16, bi), parallel=True)
    s.compute_at("prod", "C", level=0, vectorize="i", vector_width=min(16, bi),
                 stages={1: StageSpec(tiles=[{"i": vw, "j": 4}], vectorize="i", vector_width=vw, unroll={"j": 4})})
    return s.build()


def gpu_schedule(p: Pipeline, target="h100"):
    """32x16 blocks of C, threads along i (coalesced: i is A's and C's innermost dimension), each thread
    accumulating 4 columns j in registers over the whole reduction."""
    from ir.gpu_schedule import GpuScheduleBuilder

    n = p.output_sizes["C"][0]
    s = GpuScheduleBuilder(p, target)
    s.gpu_tile("C", {"i": min(32, n), "j": min(16, n)}, per_thread={"j": min(4, n)})
    s.compute_at_thread("prod", "C")
    return s.build()
