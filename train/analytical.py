"""The analytical cost: adams2019 Appendix B's hand-designed terms with fixed coefficients (rough nanosecond
costs) and the parallel speed-up made explicit. It lives beside the learned models' terms (train.model
.cost_terms) so that training can score it as a baseline; scheduler.cost's `analytical` model wraps it.

Priors are versioned, because the `residual` model learns corrections to one of them (ModelConfig.prior):
  1. the 27 terms as Halide's learned model has them. Its page-fault term, bytes per production x threads
     hitting a page x tasks, grows with the square of the parallelism; at a fixed coefficient it charged the
     expert schedules of 11 of the 17 apps seconds they do not spend (lens_blur +19.4 s predicted for a 1.1 s
     schedule; docs/results/model-blind-spots-2026-11-27.txt).
  2. page faults counted as the pages a run maps fresh: glibc's malloc maps an allocation of at least 32 MiB
     (its largest mmap threshold) anew at every realization, and the run faults in each of its pages, about
     250 ns each (the kernel's fault path and zeroing 4 KiB; measured, benchmarks/page_fault_prior.py); a smaller
     allocation comes from the heap, where glibc's dynamic threshold keeps it once it has been freed, so in
     steady state (how every schedule is measured) it faults in nothing. The output's buffer belongs to the caller. Halide's term is not in it.
  3. prior 2 with lines at a cost nearer this machine's: the five terms that count lines (contiguous runs along a
     buffer's innermost storage dimension) read and written cost LINE_SCALE = 4x prior 2's. Measured on a chain of
     32 5x5 stencils compiled by Halide (benchmarks/line_cost_prior.py), column strips 32-96 wide cost 4.7-10.7x
     what prior 2 charges for their extra lines; 4 is below that range, so prior 3 still undercharges rather than
     over. Without it beam search chose column strips for stencil_chain, 1.7x slower than row tasks.
  4. prior 3 with a vector's unique bytes and lines read capped by what its loads can touch. The features take a
     vector's footprint as the bounding box of its reads, so a data-dependent index (max_filter's slice, lens_blur's
     depth, local_laplacian's pyramid level) or two taps far apart count the whole box between them: max_filter's
     vert read 10 KB per 8-lane vector by that box where its two dense loads touch 64 bytes. A vector touches at
     most (dense vector loads x lanes + lane-at-a-time loads) elements of at most ELEMENT_BYTES each, and at most
     two lines per dense load and one per lane-at-a-time load: a bound that never charges less than is read.
  5. (the default for a day: max_filter's beam and greedy schedules 1.5-2.0x faster in four runs, the other apps
     within noise; docs/train.md) prior 3 with a vector's and a realization's unique bytes read capped by the
     cache lines their loads can touch:
     two per dense load, one per lane-at-a-time (gather, broadcast) or scalar load, LINE_BYTES each; their lines at
     most that many, and a realization's lines shrunk by the fraction its bytes kept (the box shrinks along its
     outer dimensions, where the apps' data-dependent indices are, keeping its lines' length). The per-realization
     box is where a data-dependent index costs most: max_filter's expert vert is charged 19 MB per realization (all
     6 slices of every row of its task's vert_log), 14.7 s of the 19.5 s the model charged for a 142 ms run. A stage
     that gathers keeps its boxes: its lanes scatter over them, and capping them (prior 4, and prior 5's first
     version) made beam pick local_laplacian and lens_blur schedules 0.7-0.96x as fast. Its broadcasts and dense loads
     read one place per vector whatever their index, so there a data-dependent index only inflates the box.
  6. (the default from 2026-11-29 to 2026-12-03) prior 5 with a realization's reads counted as what the previous realization of
     its store_at loop did not read (the schema's new_bytes_read_per_realization / new_lines_read_per_realization,
     version 2): a stencil computed per row of a strip reads mostly the rows the row before read, which prior 5
     charges as fresh traffic at every realization. Beam: lens_blur's schedule ran 1.15-1.54x faster and
     interpolate's 1.02-1.54x in four measurements each, the other 15 apps kept their schedules (docs/train.md,
     "Prior 6").
  7. (the default since 2026-12-03) prior 6 plus the bytes a stage writes into an allocation of at least 4 MiB,
     charged at 0.1 ns a byte (written, then read back by its consumers, from memory rather than cache; memory
     bandwidth is shared, so it is not divided among cores), in Appendix B's working-set term, which no earlier
     prior charged. Held out on all 628 usable pipelines of datasets/random-host-llvm-epyc: pairwise 0.636 -> 0.650;
     in search on the 17 apps, 1.075-1.143x prior 6's geomean in four runs, two per backend, the order swapped
     (max_filter 4.1-5.6x, lens_blur and stencil_chain mostly faster; local_laplacian 0.85-0.87x in all four,
     depthwise_separable_conv and interpolate slower in three); a residual model on it, 5-fold cross-validated, ranks
     better than one on prior 6 (docs/train.md, "Prior 7").
  8. (a candidate) prior 7 with a stage's operations per point counted as a vectorized loop runs them: its loads
     (ImageCall, FuncCall, SelfCall) left out, since the load terms charge them already, and its 32-bit integer
     operations, which in a stage that does not store 32-bit integers are its coordinates' arithmetic (x + dx,
     clamps of indices), charged once per vector rather than per lane: a SIMD loop computes a vector's addresses
     from one scalar base. nl_means' difference image `d` counts 35 operations per point by prior 7 and 11.75 by
     this on 16 lanes (its 11 float operations, and its 12 index additions over 16). Nothing in the features changes; the rate per
     operation is prior 7's, which benchmarks/compute_rate_prior.py measures at 0.5-0.9x of it on dependent f32
     chains (docs/train.md, "Prior 8"). In search on the 17 apps, compiled by Halide: 0.926x prior 7, no app faster.
  9. (a candidate) prior 7 with its four compute coefficients at THROUGHPUT_RATE of prior 7's: the rate per operation
     benchmarks/compute_rate_prior.py measures when eight independent chains are in flight (0.21-0.40x on both
     backends), as a register tile's accumulators or a stencil's taps are, where prior 7's rate is what one dependent
     chain costs (0.5-0.9x). In search on the 17 apps, first Halide run: 1.026x prior 7, local_laplacian
     1.71x and lens_blur 0.69x; in three runs 1.005-1.042x, even (docs/train.md, "Prior 9").
 10. (a candidate) prior 9 with the line terms at prior 2's cost, not LINE_SCALE times it, where their footprint fits
     in CACHE_BYTES: prior 3's scale was measured on images that do not fit in the cache, and a stage storing into a
     tile of a few KiB touches lines the cache holds (depthwise_separable_conv's fused expert schedule, 1.6x faster
     than the beam's, was predicted 1.26x dearer by prior 7, most of the difference its tiles' stored lines). Orders
     pairs better than priors 7 and 9 on both committed datasets and on the apps' measured schedules; not searched
     with yet (docs/train.md, "Prior 10").
"""

from __future__ import annotations

import numpy as np

from featurize.schema import LINE_BYTES, PIPELINE_ROWS, SCHEDULE_INDEX, lines_per_vector
from ir.dag import OP_TYPES, TYPE_BUCKETS

from . import analytical_rows
from .array_ops import NUMPY, array_ops

# Appendix B's 27 terms (train.model.TERMS order) and a fixed cost per unit of each, in nanoseconds.
COEFFICIENTS = np.array([
    0.05, 0.5, 0.05, 0.5,  # compute: vector lanes and scalars, inlined or not (x ops per point)
    4.0, 0.02,  # lines and bytes read per realization
    0.3, 0.5, 0.5,  # vector loads per vector, scalar loads per scalar, scalar loads per vector
    0.01, 0.01, 0.1, 0.1,  # unique bytes / lines per vector
    0.02, 1.0,  # unique bytes / lines per task
    4.0, 4.0, 4.0, 0.05, 0.05, 0.05,  # lines and bytes written (parallel, output, other)
    0.1, 0.0005, 40.0, 2000.0, 200.0, 0.0,  # false sharing, page faults, malloc, launch, per task, working set
])
PAGE_BYTES = 4096
_PAGE_FAULTS = 22  # the page-fault term's index in train.model.TERMS (tests/test_train_model.py checks it)
PRIOR = 7  # the analytical model's prior (7 since 2026-12-03, 6 from 2026-11-29; docs/train.md); ModelConfig.prior says which one a residual model corrects
MMAP_THRESHOLD = 32 << 20  # bytes: glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit (mallopt(3): dynamic threshold)
PAGE_FAULT_NS = 250.0  # prior 2: nanoseconds per 4 KiB page faulted in (measured here: 210-280 ns, benchmarks/page_fault_prior.py)
PARALLEL_TERMS = slice(0, 21)  # compute, loads and stores divide among the cores running tasks
COMPUTE_TERMS = slice(0, 4)
# the terms that count lines (contiguous runs along a buffer's innermost storage dimension) read and written:
# load_lines_per_realization, unique_lines_per_task, store_lines_parallel / _output / _other
LINE_TERMS = (4, 14, 15, 16, 17)
LINE_SCALE = 4.0  # prior 3: what a line costs on this machine over prior 2's charge (benchmarks/line_cost_prior.py)
# prior 4: the four terms of a vector's (or scalar's) unique bytes and lines read, and the widest element a load reads
PER_VECTOR_BYTES_TERMS = (9, 10)  # unique_bytes_per_vector_scalars / _vectors
PER_VECTOR_LINES_TERMS = (11, 12)  # unique_lines_per_vector_scalars / _vectors
ELEMENT_BYTES = 8
# prior 5: the per-realization unique bytes and lines read (train.model.TERMS 5 and 4)
PER_REALIZATION_BYTES_TERM, PER_REALIZATION_LINES_TERM = 5, 4
# what each prior does beyond Appendix B's terms, the one list of priors: pages faulted in fresh (2), lines at
# their measured cost (3), a vector's footprint capped by its elements (4), footprints capped by lines where no
# lane gathers (5), a realization's reads less what the previous one read (6), bytes written to allocations too large
# for the cache (7), operations counted per lane (8), compute at the rate of overlapping operations (9), lines in a
# footprint the cache holds at the base cost (10)
PRIOR_PARTS = {1: frozenset(), 2: frozenset({"fresh_pages"}), 3: frozenset({"fresh_pages", "line_cost"}),
               4: frozenset({"fresh_pages", "line_cost", "vector_cap"}),
               5: frozenset({"fresh_pages", "line_cost", "line_cap"}),
               6: frozenset({"fresh_pages", "line_cost", "line_cap", "new_reads"}),
               7: frozenset({"fresh_pages", "line_cost", "line_cap", "new_reads", "dram_bytes"}),
               8: frozenset({"fresh_pages", "line_cost", "line_cap", "new_reads", "dram_bytes", "lane_ops"}),
               9: frozenset({"fresh_pages", "line_cost", "line_cap", "new_reads", "dram_bytes", "throughput_rate"}),
               10: frozenset({"fresh_pages", "line_cost", "line_cap", "new_reads", "dram_bytes", "throughput_rate",
                              "cached_lines"})}
# prior 7: the bytes a stage writes into an allocation too large for the last-level cache go to memory
# and come back when read, at memory bandwidth shared by all cores; the working-set term (0 before) carries them
_WORKING_SET = 26  # the working-set term's index in train.model.TERMS (tests/test_train_model.py checks it)
DRAM_ALLOCATION = 4 << 20  # bytes: an allocation at least this large is not kept in cache (4x this VM's L2, 1/8 its L3)
DRAM_NS_PER_BYTE = 0.1  # written once and read back, ~20 GB/s each way
# prior 9: the compute coefficients' share when operations overlap (benchmarks/compute_rate_prior.py --chains 8)
THROUGHPUT_RATE = 0.25
# prior 10: a footprint this small keeps its lines in cache (this VM's L2), so they cost prior 2's line
CACHE_BYTES = 1 << 20
_TASK_LINES = 14  # unique_lines_per_task (train.model.TERMS)
_STORE_LINES = (15, 16, 17)  # store_lines_parallel / _output / _other
PRIORS = tuple(PRIOR_PARTS)
# prior 6: a realization's unique bytes and lines read (its box) replaced by what the previous realization did not read
_BOX_READS = [SCHEDULE_INDEX["unique_bytes_read_per_realization"], SCHEDULE_INDEX["unique_lines_read_per_realization"]]
_NEW_READS = [SCHEDULE_INDEX["new_bytes_read_per_realization"], SCHEDULE_INDEX["new_lines_read_per_realization"]]
OPS = [PIPELINE_ROWS.index(op) for op in OP_TYPES if op not in ("Variable", "Param", "Const", "Let")]
# prior 8: the operations a vectorized loop runs per lane: loads are the load terms' (not compute), and a stage that
# stores no 32-bit integers computes its 32-bit integer operations once per vector (coordinates, not values)
LANE_OPS = [i for i in OPS if PIPELINE_ROWS[i] not in ("ImageCall", "FuncCall", "SelfCall")]
STORE_ROWS = [i for i, name in enumerate(PIPELINE_ROWS) if name.endswith("_Store")]
INT32 = TYPE_BUCKETS.index("UInt32")  # Halide's bucket of 32-bit integers, signed or not


def coefficients(prior: int = PRIOR) -> np.ndarray:
    """The fixed cost per unit of each term under `prior`, in nanoseconds."""
    check_prior(prior)
    c, parts = COEFFICIENTS.copy(), PRIOR_PARTS[prior]
    if "fresh_pages" in parts:
        c[_PAGE_FAULTS] = PAGE_FAULT_NS
    if "line_cost" in parts:
        c[list(LINE_TERMS)] *= LINE_SCALE
    if "dram_bytes" in parts:
        c[_WORKING_SET] = DRAM_NS_PER_BYTE
    if "throughput_rate" in parts:
        c[COMPUTE_TERMS] *= THROUGHPUT_RATE
    return c


def check_prior(prior) -> None:
    if isinstance(prior, bool) or prior not in PRIORS:
        raise ValueError(f"unknown analytical prior {prior!r}; priors: {', '.join(map(str, PRIORS))} (current {PRIOR})")


def pages_faulted(schedule_features, threshold: float = MMAP_THRESHOLD):
    """Prior 2's page-fault term per stage, [..., S] (a tensor or an ndarray, as given): pages faulted in per run of
    the pipeline, where allocations of at least `threshold` bytes are mapped fresh at every realization and smaller
    ones reuse the heap. A Func's update stages repeat its allocation's row: they are charged with it (as Halide's
    term is)."""
    xp = array_ops(schedule_features)
    x = xp.clamp_min(schedule_features, 0)
    nbytes = x[..., SCHEDULE_INDEX["bytes_at_realization"]]
    fresh = xp.where(nbytes >= threshold, xp.clamp_min(x[..., SCHEDULE_INDEX["num_realizations"]], 1),
                     xp.zeros_like(nbytes))
    pages = fresh * xp.ceil(nbytes / PAGE_BYTES)
    pages[..., :1] = 0  # the output stage (the first row): its buffer is the caller's
    return pages


def analytical_terms(pipeline_features, schedule_features, cores: float, prior: int = PRIOR):
    """The Appendix B terms as the analytical model charges them, [..., S, 27] in the schedule features' type and
    dtype: compute terms times the stage's operations per point, and the terms that divide among cores (compute,
    loads, stores) divided by the cores its tasks occupy. The cost is their dot product with COEFFICIENTS, so a
    model that rescales those coefficients (train.model's `residual` kind) starts from exactly this cost.
    `prior` 2 replaces the page-fault term with pages_faulted."""
    check_prior(prior)
    xp = array_ops(schedule_features)
    if xp is NUMPY and analytical_rows.COMPILED and PRIOR_PARTS[prior] <= analytical_rows.ROW_PARTS and \
            schedule_features.dtype in _ROW_DTYPES:
        return _terms_by_rows(pipeline_features, schedule_features, cores, prior)
    with xp.quiet():
        return _analytical_terms(xp, pipeline_features, schedule_features, cores, prior)


_ROW_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _terms_by_rows(pipeline_features: np.ndarray, schedule_features: np.ndarray, cores: float,
                   prior: int) -> np.ndarray:
    """analytical_terms of numpy arrays by the compiled loop over rows (train.analytical_rows), the same bits."""
    sf, parts = schedule_features, PRIOR_PARTS[prior]
    with NUMPY.quiet():
        ops = ops_per_point(NUMPY, pipeline_features, sf)
    rows = np.ascontiguousarray(sf.reshape(-1, sf.shape[-1]), dtype=np.float64)
    ops_rows = np.ascontiguousarray(np.broadcast_to(ops, sf.shape[:-1]).reshape(-1), dtype=np.float64)
    out = np.empty((rows.shape[0], analytical_rows.NUM_TERMS))
    analytical_rows.terms_rows(rows, ops_rows, out, sf.shape[-2], float(cores), sf.dtype == np.float32,
                               "fresh_pages" in parts, "line_cap" in parts, "new_reads" in parts, "dram_bytes" in parts,
                               float(MMAP_THRESHOLD), float(PAGE_BYTES), float(LINE_BYTES), float(DRAM_ALLOCATION))
    return out.reshape(sf.shape[:-1] + (analytical_rows.NUM_TERMS,)).astype(sf.dtype, copy=False)


def _analytical_terms(xp, pipeline_features, schedule_features, cores: float, prior: int):
    from .model import cost_terms

    sf, parts = schedule_features, PRIOR_PARTS[prior]
    if "new_reads" in parts:
        sf = xp.clone(sf)
        sf[..., _BOX_READS] = sf[..., _NEW_READS]
    terms = xp.clone(cost_terms(sf, float(cores)))
    if "fresh_pages" in parts:
        terms[..., _PAGE_FAULTS] = pages_faulted(sf)
    x = xp.clamp_min(sf, 0)
    if "vector_cap" in parts:
        _cap_vector_footprints(terms, x)
    if "line_cap" in parts:
        _cap_footprints_by_lines(terms, x)
    if "cached_lines" in parts:
        _cached_lines_at_base_cost(terms, x)
    if "dram_bytes" in parts:
        big = x[..., SCHEDULE_INDEX["bytes_at_realization"]] >= DRAM_ALLOCATION
        written = x[..., SCHEDULE_INDEX["bytes_at_production"]] * x[..., SCHEDULE_INDEX["num_productions"]]
        terms[..., _WORKING_SET] = xp.where(big, written, xp.zeros_like(written))
    if "lane_ops" in parts:
        ops = ops_per_lane(pipeline_features, x)  # [..., S]: depends on each schedule's vector size
    else:
        ops = ops_per_point(xp, pipeline_features, sf)
    tasks = xp.clamp_min(x[..., SCHEDULE_INDEX["inner_parallelism"]] * x[..., SCHEDULE_INDEX["outer_parallelism"]], 1)
    terms[..., COMPUTE_TERMS] = terms[..., COMPUTE_TERMS] * ops[..., None]
    terms[..., PARALLEL_TERMS] = terms[..., PARALLEL_TERMS] / xp.clamp_max(tasks, float(cores))[..., None]
    return terms


def ops_per_point(xp, pipeline_features, schedule_features):
    """Operations per point of each stage, [S] in the schedule features' dtype, at least 1: the op histogram of
    pipeline features [S, 40, 7] without variables, params, constants and lets (every prior but 8)."""
    return xp.clamp_min(xp.cast_like(pipeline_features[:, OPS, :].sum((1, 2)), schedule_features), 1)


def ops_per_lane(pipeline_features, x):
    """Prior 8's operations per point of each stage, [..., S] for pipeline features [S, 40, 7] and clamped schedule
    features x [..., S, 41]: the op histogram without loads, its 32-bit integer operations divided by the vector size
    in a stage whose stores are not 32-bit integers; at least 1, as prior 7's count."""
    xp = array_ops(x)
    pf = xp.cast_like(pipeline_features, x)
    ops = pf[:, LANE_OPS, :].sum(1)  # [S, 7]: by type bucket
    stores_int32 = pf[:, STORE_ROWS, INT32].sum(1) > 0
    index = xp.where(stores_int32, xp.zeros_like(ops[:, INT32]), ops[:, INT32])  # [S]
    lanes = xp.clamp_min(x[..., SCHEDULE_INDEX["vector_size"]], 1)
    return xp.clamp_min(ops.sum(1) - index + index / lanes, 1)


def _cap_vector_footprints(terms, x) -> None:
    """Prior 4, in place: each per-vector unique bytes / lines term at most what the vector's loads can touch (its
    dense loads' lanes and its lane-at-a-time loads, ELEMENT_BYTES each; two lines per dense load, one per other).
    `x`: the schedule features, clamped at 0."""
    xp = array_ops(x)
    dense = x[..., SCHEDULE_INDEX["vector_loads_per_vector"]]
    lanewise = x[..., SCHEDULE_INDEX["scalar_loads_per_vector"]]
    elements = dense * xp.clamp_min(x[..., SCHEDULE_INDEX["vector_size"]], 1) + lanewise
    byte_bound, line_bound = elements * ELEMENT_BYTES, 2 * dense + lanewise
    counts = (x[..., SCHEDULE_INDEX["num_scalars"]], x[..., SCHEDULE_INDEX["num_vectors"]])
    for kb, kl, count in zip(PER_VECTOR_BYTES_TERMS, PER_VECTOR_LINES_TERMS, counts):
        terms[..., kb] = xp.minimum(terms[..., kb], count * byte_bound)
        terms[..., kl] = xp.minimum(terms[..., kl], count * line_bound)


def _cached_lines_at_base_cost(terms, x) -> None:
    """Prior 10, in place: lines within a footprint that fits in CACHE_BYTES cost prior 2's line, not LINE_SCALE times
    it. Prior 3's scale was measured on column strips of a stencil chain over images that do not fit (their lines come
    from memory); a stage storing into a tile of a few KiB, or reading one, touches lines its cache holds. The
    footprint deciding it: the stage's own allocation for its stores, a realization's bytes read (the new ones, as
    prior 6 counts them) for its loads, a task's for its task lines. `x`: the schedule features, clamped at 0."""
    xp = array_ops(x)

    def base_where_small(term: int, footprint: str) -> None:
        small = x[..., SCHEDULE_INDEX[footprint]] <= CACHE_BYTES
        terms[..., term] = xp.where(small, terms[..., term] / LINE_SCALE, terms[..., term])

    base_where_small(PER_REALIZATION_LINES_TERM, "unique_bytes_read_per_realization")
    base_where_small(_TASK_LINES, "unique_bytes_read_per_task")
    for term in _STORE_LINES:
        base_where_small(term, "bytes_at_realization")


def _cap_footprints_by_lines(terms, x) -> None:
    """Prior 5, in place: a vector's and a realization's unique bytes read at most LINE_BYTES per cache line its loads
    can touch (two per dense load, one per lane-at-a-time load, one per scalar load), their lines at most that
    many; a realization's lines shrink by the fraction its bytes kept. A stage that gathers keeps its boxes. `x`:
    the schedule features, clamped at 0."""
    xp = array_ops(x)
    f = {name: x[..., SCHEDULE_INDEX[name]] for name in (
        "num_vectors", "num_scalars", "vector_size", "vector_loads_per_vector", "scalar_loads_per_vector",
        "scalar_loads_per_scalar", "points_computed_per_realization", "num_realizations",
        "unique_bytes_read_per_realization")}
    lanes = xp.clamp_min(f["vector_size"], 1)
    # featurize counts a gather as `lanes` lane-at-a-time loads and a broadcast as one: fewer than a vector's lanes
    # of them are broadcasts, which read one place per vector whatever their index
    uniform = (lanes == 1) | (f["scalar_loads_per_vector"] < lanes)
    vector_lines = lines_per_vector(f["vector_loads_per_vector"], f["scalar_loads_per_vector"])
    scalar_lines = f["scalar_loads_per_scalar"]
    for kb, kl, count, bound in zip(PER_VECTOR_BYTES_TERMS, PER_VECTOR_LINES_TERMS,
                                    (f["num_scalars"], f["num_vectors"]), (scalar_lines, vector_lines)):
        terms[..., kb] = xp.where(uniform, xp.minimum(terms[..., kb], count * bound * LINE_BYTES), terms[..., kb])
        terms[..., kl] = xp.where(uniform, xp.minimum(terms[..., kl], count * bound), terms[..., kl])
    points = f["num_vectors"] * lanes + f["num_scalars"]
    per_point = (f["num_vectors"] * vector_lines + f["num_scalars"] * scalar_lines) / xp.clamp_min(points, 1)
    lines = f["num_realizations"] * f["points_computed_per_realization"] * per_point
    box = f["num_realizations"] * f["unique_bytes_read_per_realization"]
    kept = xp.where(uniform & (box > lines * LINE_BYTES), lines * LINE_BYTES / xp.clamp_min(box, 1e-30),
                    xp.ones_like(box))
    kb, kl = PER_REALIZATION_BYTES_TERM, PER_REALIZATION_LINES_TERM
    terms[..., kb] = terms[..., kb] * kept
    terms[..., kl] = xp.where(uniform, xp.minimum(terms[..., kl] * kept, lines), terms[..., kl])


def analytical_charges_ns(pipeline_features: np.ndarray, schedule_features: np.ndarray, cores: int,
                          prior: int = PRIOR) -> np.ndarray:
    """Nanoseconds per stage per term, [schedules, stages, 27], for schedule features [schedules, stages, 41] (or
    one schedule) of a pipeline whose pipeline features are [stages, 40, 7]: what the model of `prior` charges."""
    schedule = np.asarray(schedule_features, dtype=np.float64)
    if schedule.ndim == 2:
        schedule = schedule[None]
    terms = analytical_terms(np.asarray(pipeline_features, dtype=np.float32), schedule, cores, prior)
    return terms * coefficients(prior)


def analytical_term_costs(pipeline_features: np.ndarray, schedule_features: np.ndarray, cores: int,
                          prior: int = PRIOR) -> np.ndarray:
    """Seconds per term (27) of one schedule, summed over its stages: what each term costs it under `prior`."""
    return analytical_charges_ns(pipeline_features, schedule_features, cores, prior)[0].sum(0) * 1e-9


def analytical_stage_costs(pipeline_features: np.ndarray, schedule_features: np.ndarray, cores: int,
                           prior: int = PRIOR) -> np.ndarray:
    """Seconds per stage, [schedules, stages], for schedule features [schedules, stages, 41] (or one schedule)
    of a pipeline whose pipeline features are [stages, 40, 7]."""
    return analytical_charges_ns(pipeline_features, schedule_features, cores, prior).sum(-1) * 1e-9


class AnalyticalCost:
    """predict(pf, sf) -> total seconds per schedule: what train.run.predict_groups scores with."""

    def __init__(self, cores: int, prior: int = PRIOR):
        check_prior(prior)
        self.cores = max(1, int(cores))
        self.prior = prior

    def predict(self, pipeline_features, schedule_features) -> np.ndarray:
        return analytical_stage_costs(pipeline_features, schedule_features, self.cores, self.prior).sum(-1)
