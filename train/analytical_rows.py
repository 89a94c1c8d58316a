# cython: boundscheck=False, wraparound=False, cdivision=True, nonecheck=False
"""The analytical model's terms one schedule row at a time: what `train.analytical.analytical_terms` computes over
numpy arrays, as one compiled loop (a hot module: ir.hot builds it).

Why: search scores every batch of children with the analytical terms (the analytical model, and the residual model's
prior). Over numpy that is ~150 small array operations a batch, each with a fixed cost of a few microseconds: on a
batch of a few dozen schedules the fixed cost is most of the model's time (docs/scheduler.md). A row's terms depend
only on that row (and on whether it is the output stage's), so a loop over rows does the same arithmetic without it.

The loop is a second writing of the numpy definition, kept to the same bits: each operation is the same IEEE
operation in the same order. A float32 row computes in double and rounds to float after every operation (and every
constant to float first, as numpy casts a Python scalar to the array's dtype): for + - * / double rounding through
a 53-bit double gives the correctly rounded float result, so the bits are numpy's float32 ones.
`tests/test_analytical_rows.py` checks both dtypes against the numpy path, bit for bit, on random and real features.
As plain Python (not built) the loop is slow; `train.analytical` then keeps the numpy path and uses this only where
it runs compiled (`COMPILED`).
"""

from __future__ import annotations

import numpy as np

try:
    import cython
except ImportError:  # Cython absent: the module runs as the plain Python it is
    from ir.cython_pure import cython

from featurize.schema import SCHEDULE_INDEX

COMPILED = cython.compiled
NUM_TERMS = 27  # train.model.TERMS (tests/test_analytical_rows.py checks it)
ROW_PARTS = frozenset({"fresh_pages", "line_cost", "line_cap", "new_reads", "dram_bytes", "throughput_rate"})
# ^ the prior parts the loop computes ("line_cost" and "throughput_rate" change only the coefficients); a prior with
# another part (vector_cap, cached_lines, lane_ops) keeps the numpy path

_F32 = np.float32


def _r(v: float, single: bool) -> float:
    """v as the array's dtype holds it: rounded to float for a float32 row."""
    if not single:
        return v
    if cython.compiled:
        return cython.cast(cython.float, v)
    return float(_F32(v))


def _clamp_min(v: float, low: float) -> float:
    """np.maximum(v, low): NaN stays NaN."""
    return low if v < low else v


def _minimum(a: float, b: float) -> float:
    """np.minimum(a, b): NaN if either is."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


def _ceil(v: float) -> float:
    if cython.compiled:
        return cython.cast(cython.double, _c_ceil(v))
    return float(np.ceil(v))


def terms_rows(sf, ops, out, stages: int, cores: float, single: bool, fresh_pages: bool, line_cap: bool,
               new_reads: bool, dram_bytes: bool, mmap_threshold: float, page_bytes: float, line_bytes: float,
               dram_allocation: float) -> None:
    """Fill out[i, :27] with the terms of row i of `sf` ([N, 41] float64, each row a stage's schedule features; row i
    is stage i % stages of its schedule, stage 0 the output), `ops` [N] its stage's operations per point (at least 1,
    in the row's dtype). `single`: the rows were float32, and so is every operation."""
    n = sf.shape[0]
    if sf.shape[1] <= max(SCHEDULE_INDEX.values()) or ops.shape[0] != n or out.shape[0] != n or out.shape[1] != NUM_TERMS:
        raise ValueError(f"terms_rows: rows [{n}, {sf.shape[1]}], ops [{ops.shape[0]}], out [{out.shape[0]}, "
                         f"{out.shape[1]}]: want rows of the whole schedule width, one ops and one out row each")
    # the schedule features the terms read
    i_inner, i_outer = SCHEDULE_INDEX["inner_parallelism"], SCHEDULE_INDEX["outer_parallelism"]
    i_nv, i_ns = SCHEDULE_INDEX["num_vectors"], SCHEDULE_INDEX["num_scalars"]
    i_real, i_prod = SCHEDULE_INDEX["num_realizations"], SCHEDULE_INDEX["num_productions"]
    i_vsize, i_inl = SCHEDULE_INDEX["vector_size"], SCHEDULE_INDEX["inlined_calls"]
    i_ulr, i_ubr = (SCHEDULE_INDEX["unique_lines_read_per_realization"],
                    SCHEDULE_INDEX["unique_bytes_read_per_realization"])
    i_nlr, i_nbr = SCHEDULE_INDEX["new_lines_read_per_realization"], SCHEDULE_INDEX["new_bytes_read_per_realization"]
    i_vlv, i_sls = SCHEDULE_INDEX["vector_loads_per_vector"], SCHEDULE_INDEX["scalar_loads_per_scalar"]
    i_slv = SCHEDULE_INDEX["scalar_loads_per_vector"]
    i_ubv, i_ulv = SCHEDULE_INDEX["unique_bytes_read_per_vector"], SCHEDULE_INDEX["unique_lines_read_per_vector"]
    i_ubt, i_ult = SCHEDULE_INDEX["unique_bytes_read_per_task"], SCHEDULE_INDEX["unique_lines_read_per_task"]
    i_ibt, i_bt = SCHEDULE_INDEX["innermost_bytes_at_task"], SCHEDULE_INDEX["bytes_at_task"]
    i_bar, i_bap = SCHEDULE_INDEX["bytes_at_realization"], SCHEDULE_INDEX["bytes_at_production"]
    i_ws, i_pcr = SCHEDULE_INDEX["working_set"], SCHEDULE_INDEX["points_computed_per_realization"]
    c = _r(cores, single)
    tiny = _r(1e-30, single)
    mmap_threshold, page_bytes = _r(mmap_threshold, single), _r(page_bytes, single)
    line_bytes, dram_allocation = _r(line_bytes, single), _r(dram_allocation, single)
    for i in range(n):
        # x: the row, clamped at 0, a realization's box reads replaced by its new reads (prior 6)
        inner = _clamp_min(sf[i, i_inner], 0.0)
        outer = _clamp_min(sf[i, i_outer], 0.0)
        nv = _clamp_min(sf[i, i_nv], 0.0)
        ns = _clamp_min(sf[i, i_ns], 0.0)
        real = _clamp_min(sf[i, i_real], 0.0)
        prods = _clamp_min(sf[i, i_prod], 0.0)
        vsize = _clamp_min(sf[i, i_vsize], 0.0)
        ulr = _clamp_min(sf[i, i_nlr if new_reads else i_ulr], 0.0)
        ubr = _clamp_min(sf[i, i_nbr if new_reads else i_ubr], 0.0)
        vlv = _clamp_min(sf[i, i_vlv], 0.0)
        sls = _clamp_min(sf[i, i_sls], 0.0)
        slv = _clamp_min(sf[i, i_slv], 0.0)
        ubv = _clamp_min(sf[i, i_ubv], 0.0)
        ulv = _clamp_min(sf[i, i_ulv], 0.0)
        bar = _clamp_min(sf[i, i_bar], 0.0)
        bap = _clamp_min(sf[i, i_bap], 0.0)
        is_output = i % stages == 0

        # train.model.cost_terms
        num_tasks = _clamp_min(_r(inner * outer, single), 1.0)
        tasks_per_core = _r(num_tasks / c, single)
        idle = _r(_ceil(tasks_per_core) / _clamp_min(tasks_per_core, 1.0), single)
        vector_work = _r(_r(vsize * nv, single) * idle, single)
        scalar_work = _r(ns * idle, single)
        inlined = _clamp_min(sf[i, i_inl], 0.0) > 0
        out[i, 0] = vector_work if inlined else 0.0
        out[i, 1] = scalar_work if inlined else 0.0
        out[i, 2] = 0.0 if inlined else vector_work
        out[i, 3] = 0.0 if inlined else scalar_work
        out[i, 4] = _r(real * ulr, single)
        out[i, 5] = _r(real * ubr, single)
        out[i, 6] = _r(nv * vlv, single)
        out[i, 7] = _r(ns * sls, single)
        out[i, 8] = _r(nv * slv, single)
        out[i, 9] = _r(ns * ubv, single)
        out[i, 10] = _r(nv * ubv, single)
        out[i, 11] = _r(ns * ulv, single)
        out[i, 12] = _r(nv * ulv, single)
        out[i, 13] = _r(num_tasks * _clamp_min(sf[i, i_ubt], 0.0), single)
        out[i, 14] = _r(num_tasks * _clamp_min(sf[i, i_ult], 0.0), single)
        ibt = _clamp_min(_clamp_min(sf[i, i_ibt], 0.0), 1.0)
        lines_written = _r(_r(_r(real * inner, single) * _clamp_min(sf[i, i_bt], 0.0), single) / ibt, single)
        bytes_written = _r(real * bar, single)
        parallel = inner > 1
        output = not parallel and is_output
        other = not parallel and not is_output
        out[i, 15] = lines_written if parallel else 0.0
        out[i, 16] = lines_written if output else 0.0
        out[i, 17] = lines_written if other else 0.0
        out[i, 18] = bytes_written if parallel else 0.0
        out[i, 19] = bytes_written if output else 0.0
        out[i, 20] = bytes_written if other else 0.0
        max_threads = _minimum(inner, _r(page_bytes / ibt, single))
        out[i, 21] = _r(_r(nv + ns, single) / ibt, single) if parallel else 0.0
        out[i, 22] = _r(_r(_r(bap * max_threads, single) * inner, single) * outer, single)
        out[i, 23] = real
        out[i, 24] = prods if parallel else 0.0
        out[i, 25] = _r(prods * _clamp_min(_r(inner - 1.0, single), 0.0), single)
        out[i, 26] = _clamp_min(sf[i, i_ws], 0.0)

        if fresh_pages:  # prior 2: pages_faulted
            fresh = _clamp_min(real, 1.0) if bar >= mmap_threshold else 0.0
            out[i, 22] = 0.0 if is_output else _r(fresh * _ceil(_r(bar / page_bytes, single)), single)
        if line_cap:  # prior 5: _cap_footprints_by_lines
            lanes = _clamp_min(vsize, 1.0)
            uniform = lanes == 1 or slv < lanes
            vector_lines = _r(_r(2.0 * vlv, single) + slv, single)
            scalar_lines = sls
            if uniform:
                out[i, 9] = _minimum(out[i, 9], _r(_r(ns * scalar_lines, single) * line_bytes, single))
                out[i, 11] = _minimum(out[i, 11], _r(ns * scalar_lines, single))
                out[i, 10] = _minimum(out[i, 10], _r(_r(nv * vector_lines, single) * line_bytes, single))
                out[i, 12] = _minimum(out[i, 12], _r(nv * vector_lines, single))
            points = _r(_r(nv * lanes, single) + ns, single)
            per_point = _r(_r(_r(nv * vector_lines, single) + _r(ns * scalar_lines, single), single)
                           / _clamp_min(points, 1.0), single)
            lines = _r(_r(real * _clamp_min(sf[i, i_pcr], 0.0), single) * per_point, single)
            box = _r(real * ubr, single)
            line_box = _r(lines * line_bytes, single)
            kept = _r(line_box / _clamp_min(box, tiny), single) if uniform and box > line_box else 1.0
            out[i, 5] = _r(out[i, 5] * kept, single)
            if uniform:
                out[i, 4] = _minimum(_r(out[i, 4] * kept, single), lines)
        if dram_bytes:  # prior 7
            out[i, 26] = _r(bap * prods, single) if bar >= dram_allocation else 0.0

        # ops per point on the compute terms, then the terms that divide among the cores the tasks occupy
        for k in range(4):
            out[i, k] = _r(out[i, k] * ops[i], single)
        share = _minimum(num_tasks, c)
        for k in range(21):
            out[i, k] = _r(out[i, k] / share, single)
