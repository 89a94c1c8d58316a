"""Random training pipelines for the cost model, after the generator of Adams et al. 2019 (§5).

    p = random_pipeline(seed=7)                                  # ir.Pipeline, output 2000 x 2000 x 3
    p = random_pipeline(7, max_stages=8, output_size=(16, 12, 3), markov=True)
    g = generate(7)                                              # the same pipeline with its stage list
    p = random_pipeline(7, mix_weights="buffer")                 # channel mixes read their weights from inputs
    p = random_pipeline(7, motifs=0.3)                           # app-like pyramids and stencil chains (MOTIFS)
    p = random_pipeline(7, motifs=0.3, motif_kinds=("conv_layer",))  # app-like CNN layers only

A pipeline is a pure function of (seed, max_stages, output_size, markov, mix_weights, motifs, motif_kinds): one local
`random.Random(seed)` drives every decision, so the same arguments give the same pipeline (and
`Pipeline.fingerprint`) in any process.

Structure (halide-autoschedulers.md §1). Every stage is a 3-D Func over (x, y, c). The first stage
reads a float Input; `max_stages - 2` random stages follow; the last stage resamples back to the
output size and casts to f32. Each random stage draws its primary operand f and a second operand g
from anywhere earlier (g at i2 in [0, m-1], f at i1 in (i2, m]), so pipelines are DAGs with skip
connections; stages no path reaches from the output are not part of the Pipeline. Stage kinds
(`KINDS`) are drawn uniformly over Halide's 18 slots (all-to-all has three, binary two), or with
`markov=True` from the GPU variant's transition matrix (`MARKOV`); a kind whose precondition fails
falls through to a binary op (or the draw is repeated when there is only one operand).

Shapes. Each stage records its approximate shape at the *default* size (2000 x 2000 spatially) as
power-of-two scales of the input (every stride and resampling factor is a power of two) and its
channel count. All structural decisions use these nominal shapes, so a seed gives the same program
structure at any output size; only the constants that name extents (the padding box, scan lengths)
are scaled to the actual output size. Nominal stage sizes stay within [100, 1e8] elements.

DSL details: every data-dependent index is clamped; updates read their own Func only at their own
pure coordinates; select branches get one type; there is no inline sum(), so inline reductions are
explicit sums of taps or, where Halide's sum() makes a hidden Func, an auxiliary Func with an RDom
update (role "sum"). Func names are `s<k>_<kind>` for the pipeline's stages and `s<k>_<role>` for
auxiliary Funcs (`AUX_ROLES`); `stage_kind(name)` recovers either.

Deviations from Halide's generator, kept deliberately: 2-D convolutions and channel mixes are bounded
to `WORK_LIMIT` multiply-adds per stage at the default size (Halide's have no bound and reach 10^12;
samples must stay measurable) and conv reductions to `MAX_REDUCTION` terms; the unary-op stage is
allowed below `UNARY_LIMIT` elements rather than 10^4 (under 1% of the stages of a 2000 x 2000
pipeline are that small, so the kind would all but vanish); histogram buckets are capped at 512
channels like every other stage; upsampling keeps each spatial extent under `MAX_EXTENT`; box
downsampling beyond 8 taps is strided; strides and pooling factors are powers of two (1, 2, 4) so that
scales stay exact; all-to-all weights are (i + 2c) mod 5 - 2 rather than (i + 1)(c + 1), which grows
without bound, or with `mix_weights="buffer"` read from an input as conv2d's are (`MIX_WEIGHTS`); the ReLU
down-cast saturates; half of the random-expression stages cast their result to a random type (the float input would otherwise make nearly every stage f32); the input has the
output's channel count.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

import ir
from generator.apps.max_filter import LOWEST_F32
from generator.apps.max_filter import pow2 as select_pow2
from generator.apps.stencil_chain import weights as binomial_weights
from ir import Func, Input, RDom, Var, cast, clamp, select
from ir.expr import Const, Expr
from ir.types import Type, f32, i8, i16, i32, match_types, u8, u16, u32

__all__ = ["AUX_ROLES", "DEFAULT_OUTPUT_SIZE", "KINDS", "MARKOV", "MIX_WEIGHTS", "MOTIFS", "MOTIF_KINDS",
           "DEFAULT_MOTIF_KINDS", "GeneratedPipeline", "MixWeights", "StageInfo", "check_mix_weights",
           "check_motif_kinds", "check_motifs", "generate",
           "random_pipeline", "stage_kind", "transition_probabilities"]

x, y, c = Var("x"), Var("y"), Var("c")
t_slice = Var("t")  # the slice dimension of a max_filter motif's vert_log

DEFAULT_OUTPUT_SIZE = (2000, 2000, 3)
NOMINAL = 2000  # nominal spatial extent of the input (and output) at which decisions are made
MIN_ELEMS, MAX_ELEMS = 100, 10**8  # bounds on a stage's nominal size
MAX_CHANNELS = 512
MAX_EXTENT = 16000  # nominal spatial extent an upsample may reach
WORK_LIMIT = 1e10  # multiply-adds of one conv / channel-mix stage at the default size
MAX_REDUCTION = 4096  # terms of one 2-D convolution's reduction
SMALL = 10**4  # transcendental ops only on stages smaller than this (Halide: fast_exp etc. are costly)
UNARY_LIMIT = 2 * 10**7  # the unary-op stage's size limit (Halide: 10^4, which makes it all but absent)

CAST_TYPES = (u8, u16, u32, i8, i16, i32, f32)

# The pipeline's stage kinds, and Halide's 18 uniform slots (all-to-all x3 as its three variants, binary x2).
KINDS = ("stencil", "conv1d_rdom", "conv1d_sum", "conv2d", "pool", "activation", "pad", "upsample", "downsample",
         "all_to_all", "scan", "unary", "histogram", "slice", "binary")
SLOT_WEIGHTS = {k: 1 for k in KINDS} | {"all_to_all": 3, "binary": 2}
# Where a channel mix (all-to-all, and the resampling step that changes the channel count) gets its weights:
# "indices", computed from the channel indices as Halide's generator does ((i + 2c) mod 5 - 2 here), or "buffer",
# read from an input [input channel, output channel] as a layer's weights are (and as conv2d's are). A weight computed
# from c is invariant along x and y, so a schedule vectorized along x or y computes it once per vector and one
# vectorized along c in every lane: a cost no feature shows (docs/train.md, "632 pipelines"), which no app has.
# The structure drawn for a seed is the same either way; only the weight expressions differ.
MixWeights = Literal["indices", "buffer"]  # the configs' type (generator.job, generator.datagen)
MIX_WEIGHTS: tuple[str, ...] = get_args(MixWeights)
# Auxiliary Funcs: the input and output stages, resampling steps and the hidden Func of an inline sum().
AUX_ROLES = ("input", "output", "rs_down", "rs_mix", "rs_up", "sum")
# App-like structures, drawn in place of a random stage with chance `motifs` (0 by default: Halide's generator).
# A random stage never makes them, and the apps are full of them: a "pyramid" (local_laplacian, interpolate, bgu:
# levels each half the size of the one above, downsampled along x then y, then upsampled back level by level and
# combined with the level of the same size) and a "stencil_chain" (stencil_chain, the blurs of camera_pipe and
# nl_means: 2-D non-separable binomial stencils, each reading the previous). The builtin model's steadiest losses
# are on pyramids and stencil chains (docs/train.md). Their Funcs have the kinds MOTIF_KINDS.
# A "conv_layer" (conv_layer, depthwise_separable_conv): 1-3 CNN layers, each a 3x3 or 1x1 f32 convolution over all
# input channels (the channel reduction innermost, weights and bias read from inputs) then ReLU, with 8-64 output
# channels: the register-tiled channel reductions random conv2d stages (a few input channels, the kernel window
# innermost) rarely make. A "depthwise_separable" (depthwise_separable_conv, MobileNet): a 3x3 convolution of each
# channel on its own (dw_conv, an RDom update over the window), then a 1x1 pointwise layer as conv_layer's; a 1x1
# expansion layer first when the operand has few channels, as MobileNet v2's inverted residual. A "max_filter"
# (max_filter): Halide's log-step vertical running max (vert_log, an RDom update over rows then slices of a 4-D Func),
# a vertical max of height 2R+1 from two overlapping slice samples (vert_max), and a horizontal max over 2R+1 columns
# (horiz_max, an RDom update): scans whose pure x the schedule can vectorize inside the RVars. `motif_kinds` chooses
# among MOTIFS; DEFAULT_MOTIF_KINDS, the first two, keep every pipeline and batch name made before conv_layer existed.
MOTIFS = ("pyramid", "stencil_chain", "conv_layer", "depthwise_separable", "max_filter")
DEFAULT_MOTIF_KINDS = ("pyramid", "stencil_chain")
MOTIF_KINDS = ("pyr_down", "pyr_up", "pyr_mix", "stencil2d", "conv_layer", "conv_relu", "dw_conv", "vert_log",
               "vert_max", "horiz_max")
PYRAMID_FUNCS_PER_LEVEL = 5  # down x, down y, up x, up y, the combination with the level of the same size
MAX_PYRAMID_LEVELS = 4
MIN_MOTIF_EXTENT = 8  # nominal width and height of a motif's smallest Func: a pyramid's coarsest level, a strided layer
CONV_LAYER_CHANNELS = (8, 64)  # output channels of a conv_layer motif's layers
MAX_CONV_LAYERS = 3
MAX_FILTER_RADIUS = 12  # a max_filter motif's window is (2R+1)^2, R in [2, MAX_FILTER_RADIUS] (the app's R is 26)

# The GPU variant's transition matrix (Anderson 2021): listed entries; the rest of each row is spread
# over the other kinds in proportion to their uniform weights. Rows not listed are the uniform draw.
MARKOV = {
    "conv2d": {"activation": 0.8},
    "activation": {"pad": 0.4, "pool": 0.4},
    "pad": {"conv2d": 0.4, "pool": 0.4},
    "pool": {"conv2d": 0.8},
}


def transition_probabilities(prev: str | None, markov: bool) -> dict[str, float]:
    """Probability of each kind for the next stage, given the previous stage's kind."""
    total = sum(SLOT_WEIGHTS.values())
    uniform = {k: w / total for k, w in SLOT_WEIGHTS.items()}
    if not markov or prev not in MARKOV:
        return uniform
    row = MARKOV[prev]
    rest = 1.0 - sum(row.values())
    others = sum(uniform[k] for k in KINDS if k not in row)
    return {k: row[k] if k in row else rest * uniform[k] / others for k in KINDS}


def stage_kind(name: str) -> str:
    """The kind (or auxiliary role) of a Func made by this generator, from its name `s<k>_<kind>`."""
    head, _, kind = name.partition("_")
    if not (head.startswith("s") and head[1:].isdigit()) or kind not in KINDS + AUX_ROLES + MOTIF_KINDS:
        raise ValueError(f"{name!r} is not a Func name of the random pipeline generator")
    return kind


@dataclass(frozen=True)
class StageInfo:
    name: str
    kind: str  # one of KINDS, AUX_ROLES or MOTIF_KINDS
    variant: str
    shape: tuple[int, int, int]  # nominal (w, h, c) at the default size
    type: Type
    operands: tuple[str, ...]


@dataclass
class GeneratedPipeline:
    pipeline: ir.Pipeline
    stages: list[StageInfo]  # every Func made, in creation order (including ones the output does not reach)
    sequence: list[str] = field(default_factory=list)  # the kinds of the random stages, in the order drawn

    @property
    def live(self) -> list[StageInfo]:
        """The stages that are part of the Pipeline."""
        names = {f.name for f in self.pipeline.funcs}
        return [s for s in self.stages if s.name in names]


def random_pipeline(seed: int, max_stages: int = 20, output_size=DEFAULT_OUTPUT_SIZE,
                    markov: bool = False, mix_weights: str = "indices", motifs: float = 0.0,
                    motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS) -> ir.Pipeline:
    """A random pipeline: a pure function of its arguments (see the module docstring)."""
    return generate(seed, max_stages, output_size, markov, mix_weights, motifs, motif_kinds).pipeline


def generate(seed: int, max_stages: int = 20, output_size=DEFAULT_OUTPUT_SIZE,
             markov: bool = False, mix_weights: str = "indices", motifs: float = 0.0,
             motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS) -> GeneratedPipeline:
    """`random_pipeline`, with the list of stages it made."""
    check_mix_weights(mix_weights)
    check_motifs(motifs)
    motif_kinds = check_motif_kinds(motif_kinds)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if isinstance(max_stages, bool) or not isinstance(max_stages, (int, np.integer)):
        raise TypeError(f"max_stages must be an int, got {max_stages!r}")
    if max_stages < 2:
        raise ValueError(f"max_stages must be an int >= 2 (the input and output stages), got {max_stages!r}")
    try:
        size = tuple(int(v) for v in output_size)
    except (TypeError, ValueError):
        raise ValueError(f"output_size must be (width, height, channels), got {output_size!r}") from None
    if len(size) != 3 or any(v <= 0 for v in size) or any(v != o for v, o in zip(size, output_size)):
        raise ValueError(f"output_size must be three positive ints (width, height, channels), got {output_size!r}")
    return _Generator(int(seed), int(max_stages), size, bool(markov), mix_weights, float(motifs), motif_kinds).run()


def check_mix_weights(mix_weights) -> str:
    """`mix_weights` if it names a MIX_WEIGHTS choice, else a one-line ValueError naming them."""
    if mix_weights not in MIX_WEIGHTS:
        raise ValueError(f"mix_weights must be one of {', '.join(MIX_WEIGHTS)} (where a channel mix's weights come "
                         f"from), got {mix_weights!r}")
    return mix_weights


def check_motifs(motifs) -> float:
    """`motifs` if it is a chance in [0, 1], else a one-line ValueError."""
    if isinstance(motifs, bool) or not isinstance(motifs, (int, float)) or not 0.0 <= motifs <= 1.0:
        raise ValueError(f"motifs must be a number in [0, 1] (the chance that a stage slot draws an app-like "
                         f"motif of motif_kinds), got {motifs!r}")
    return float(motifs)


def check_motif_kinds(motif_kinds) -> tuple[str, ...]:
    """`motif_kinds` as a tuple of distinct MOTIFS names in the order given, else a one-line ValueError."""
    kinds = (motif_kinds,) if isinstance(motif_kinds, str) else tuple(motif_kinds or ())
    bad = [k for k in kinds if k not in MOTIFS]
    if not kinds or bad or len(set(kinds)) != len(kinds):
        raise ValueError(f"motif_kinds must be distinct names among {', '.join(MOTIFS)} (the app-like structures a "
                         f"motif slot draws from), got {motif_kinds!r}")
    return kinds


# -- typed expressions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TE:
    """An expression with the type it will have once typechecked."""

    e: Expr
    t: Type


def _as(a: TE, t: Type) -> TE:
    return a if a.t == t else TE(cast(t, a.e), t)


def _const(t: Type, v) -> TE:
    if t.is_float:
        return TE(Const(float(np.float32(v)), t), t)
    return TE(Const(int(v), t), t)


def _zero(t: Type) -> Expr:
    return _const(t, 0).e


def _widen(t: Type) -> Type:
    return Type(t.code, min(32, t.bits * 2))


def _numeric(a: TE) -> TE:
    return _as(a, u8) if a.t.is_bool else a


def _arith(op: str, a: TE, b: TE) -> TE:
    a, b = _numeric(a), _numeric(b)
    t = match_types(a.t, b.t)
    ea, eb = _as(a, t).e, _as(b, t).e
    e = {"add": lambda: ea + eb, "sub": lambda: ea - eb, "mul": lambda: ea * eb, "div": lambda: ea / eb,
         "mod": lambda: ea % eb, "min": lambda: ir.min(ea, eb), "max": lambda: ir.max(ea, eb)}[op]()
    return TE(e, t)


def _compare(op: str, a: TE, b: TE) -> TE:
    if a.t.is_bool and b.t.is_bool:
        op = "eq" if op in ("eq", "le", "ge") else "ne"
    else:
        a, b = _numeric(a), _numeric(b)
        t = match_types(a.t, b.t)
        a, b = _as(a, t), _as(b, t)
    ea, eb = a.e, b.e
    e = {"eq": lambda: ea == eb, "ne": lambda: ea != eb, "lt": lambda: ea < eb, "le": lambda: ea <= eb,
         "gt": lambda: ea > eb, "ge": lambda: ea >= eb}[op]()
    return TE(e, ir.bool_)


def _select(cond: TE, a: TE, b: TE) -> TE:
    if a.t.is_bool and b.t.is_bool:  # a bool select is a logical expression
        return TE((cond.e & a.e) | (~cond.e & b.e), ir.bool_)
    a, b = _numeric(a), _numeric(b)
    t = match_types(a.t, b.t)
    return TE(select(cond.e, _as(a, t).e, _as(b, t).e), t)


# -- stages -----------------------------------------------------------------------------------------


@dataclass
class Stage:
    func: Func
    sx: int  # log2 of the nominal width / NOMINAL
    sy: int
    c: int
    type: Type
    kind: str

    @property
    def w(self) -> float:
        return NOMINAL * 2.0 ** self.sx

    @property
    def h(self) -> float:
        return NOMINAL * 2.0 ** self.sy

    @property
    def size(self) -> float:
        return self.w * self.h * self.c

    def __call__(self, *args) -> TE:
        return TE(self.func[args], self.type)


def _ok_size(w: float, h: float, ch: int) -> bool:
    return MIN_ELEMS <= w * h * ch <= MAX_ELEMS


def _off(v: Expr, k) -> Expr:
    """v + k, leaving out a literal zero (k may be an RVar)."""
    return v if isinstance(k, int) and k == 0 else v + k


def _scaled(v: Expr, s: int, k) -> Expr:
    return _off(v if s == 1 else v * s, k)


class _Infeasible(Exception):
    """A stage's precondition failed (raised before any Func is made)."""


class _Generator:
    def __init__(self, seed: int, max_stages: int, size: tuple[int, int, int], markov: bool,
                 mix_weights: str = "indices", motifs: float = 0.0,
                 motif_kinds: tuple[str, ...] = DEFAULT_MOTIF_KINDS):
        self.seed = seed
        self.mix_weights = mix_weights
        self.motifs = motifs
        self.motif_kinds = motif_kinds
        self.rng = random.Random(seed)
        self.max_stages = max_stages
        self.W, self.H, self.C = size
        self.markov = markov
        self.count = 0
        self.info: list[StageInfo] = []

    # -- helpers ---------------------------------------------------------------------------------

    def ri(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def chance(self, p: float = 0.5) -> bool:
        return self.rng.random() < p

    def new_func(self, kind: str) -> Func:
        f = Func(f"s{self.count}_{kind}")
        self.count += 1
        return f

    def record(self, st: Stage, variant: str, *operands: Stage) -> Stage:
        self.info.append(StageInfo(st.func.name, st.kind, variant, (round(st.w), round(st.h), st.c), st.type,
                                   tuple(o.func.name for o in operands)))
        return st

    def extent(self, st: Stage, dim: int) -> int:
        """The actual extent of a stage along dim at the requested output size."""
        if dim == 2:
            return st.c
        base = self.W if dim == 0 else self.H
        return max(1, round(base * 2.0 ** (st.sx if dim == 0 else st.sy)))

    def const(self, t: Type) -> TE:
        if t.is_float:
            return _const(t, round(self.rng.uniform(0.0, 1.0), 4))
        return _const(t, self.ri(1, int(min(127, t.max))))

    def out_channels(self, w: float, h: float, reduction: int = 1) -> int:
        lo = math.ceil(MIN_ELEMS / (w * h))
        hi = int(min(MAX_CHANNELS, MAX_ELEMS // (w * h), WORK_LIMIT // (w * h * reduction)))
        if lo > hi:
            raise _Infeasible
        return self.ri(lo, hi)

    def grow_factor(self, st: Stage, dim: int) -> int:
        """log2 of a random size increase (Halide: 2^k with k in [max(1, L-3), L])."""
        ext = st.w if dim == 0 else st.h
        room = min(MAX_ELEMS / st.size, MAX_EXTENT / ext)
        if room < 2:
            raise _Infeasible
        top = math.floor(math.log2(room))
        return self.ri(max(1, top - 3), top)

    def shrink_factor(self, st: Stage, dim: int) -> int:
        """log2 of a random size reduction (Halide: min(8, 2^k), keeping at least MIN_ELEMS)."""
        ext = st.w if dim == 0 else st.h
        room = min(st.size / MIN_ELEMS, ext)
        if room < 2:
            raise _Infeasible
        top = math.floor(math.log2(room))
        return min(3, self.ri(1, top))

    # -- random expressions ----------------------------------------------------------------------

    def rexpr(self, leaves: list[TE], depth: int, small: bool) -> TE:
        """A random expression that uses every leaf once; depth adds decoration beyond the splits."""
        n = len(leaves)
        if n == 1:
            if depth <= 0 or self.chance(0.3):
                return leaves[0]
            return self.unary_node(self.rexpr(leaves, depth - 1, small), small)
        if depth > 0 and self.chance(0.15):
            return self.unary_node(self.rexpr(leaves, depth - 1, small), small)
        if n >= 3 and self.chance(0.2):
            k1 = self.ri(1, n - 2)
            k2 = self.ri(k1 + 1, n - 1)
            cond = self.as_bool(self.rexpr(leaves[:k1], depth - 1, small))
            return _select(cond, self.rexpr(leaves[k1:k2], depth - 1, small), self.rexpr(leaves[k2:], depth - 1, small))
        k = self.ri(1, n - 1)
        return self.binary_node(self.rexpr(leaves[:k], depth - 1, small), self.rexpr(leaves[k:], depth - 1, small))

    def binary_node(self, a: TE, b: TE) -> TE:
        if a.t.is_bool and b.t.is_bool and self.chance(0.7):
            return TE(a.e & b.e if self.chance() else a.e | b.e, ir.bool_)
        r = self.rng.random()
        if r < 0.2:
            return _compare(self.rng.choice(("lt", "le", "gt", "ge", "eq", "ne")), a, b)
        if r < 0.3 and not (a.t.is_bool and b.t.is_bool):  # select(a < b, a, b)-style
            return _select(_compare(self.rng.choice(("lt", "gt", "ne")), a, b), a, b)
        return _arith(self.rng.choice(("add", "add", "sub", "mul", "mul", "min", "max", "div", "mod")), a, b)

    def unary_node(self, a: TE, small: bool) -> TE:
        if a.t.is_bool:
            return TE(~a.e, ir.bool_) if self.chance() else _as(a, self.rng.choice(CAST_TYPES))
        ops = ["cast", "cast", "cast", "const", "const", "cmp", "sqrt", "exp", "log"]
        if small:
            ops += ["sin", "tanh"]
        op = self.rng.choice(ops)
        if op == "cast":
            return _as(a, self.rng.choice([t for t in CAST_TYPES if t != a.t]))
        if op == "const":
            return _arith(self.rng.choice(("add", "sub", "mul", "mul", "div", "min", "max")), a, self.const(a.t))
        if op == "cmp":
            return _compare(self.rng.choice(("lt", "gt")), a, self.const(a.t))
        return TE(getattr(ir, op)(_as(a, f32).e), f32)

    def as_bool(self, a: TE) -> TE:
        return a if a.t.is_bool else _compare(self.rng.choice(("lt", "gt", "ne")), a, self.const(a.t))

    def as_value(self, a: TE) -> TE:
        """A random expression as a Func's value: never bool, and often cast to a random type (the float
        input would otherwise make nearly every stage f32)."""
        t = self.rng.choice(CAST_TYPES)
        if a.t.is_bool:
            return _as(a, t) if self.chance() else _select(a, self.const(t), _const(t, 0))
        return _as(a, t) if self.chance(0.5) else a

    # -- the pipeline ----------------------------------------------------------------------------

    def run(self) -> GeneratedPipeline:
        inp = Input("input", f32, 3)
        first = self.new_func("input")
        if self.markov:  # the GPU variant wraps the input in a repeat-edge boundary condition
            first[x, y, c] = inp[clamp(x, 0, self.W - 1), clamp(y, 0, self.H - 1), clamp(c, 0, self.C - 1)]
        else:
            first[x, y, c] = inp[x, y, c]
        stages = [self.record(Stage(first, 0, 0, self.C, f32, "input"), "repeat_edge" if self.markov else "")]
        sequence: list[str] = []
        while len(sequence) < self.max_stages - 2:
            # motifs == 0 draws nothing here, so a seed's pipeline is the one Halide's generator makes
            made = self.random_motif(stages, self.max_stages - 2 - len(sequence)) if (
                self.motifs and self.chance(self.motifs)) else []
            if not made:
                made = [self.random_stage(stages, sequence[-1] if sequence else None)]
            stages.extend(made)
            sequence.extend(st.kind for st in made)
        tail = self.resample_to(stages[-1], 0, 0, self.C)
        out = self.new_func("output")
        out[x, y, c] = _as(tail(x, y, c), f32).e
        self.record(Stage(out, 0, 0, self.C, f32, "output"), "", tail)
        p = ir.Pipeline([out], {out: (self.W, self.H, self.C)}, name=f"random{self.seed}")
        return GeneratedPipeline(p, self.info, sequence)

    def random_stage(self, stages: list[Stage], prev_kind: str | None) -> Stage:
        probs = transition_probabilities(prev_kind, self.markov)
        kinds, weights = list(probs), list(probs.values())
        for _ in range(1000):
            m = len(stages) - 1
            i2 = self.ri(0, m - 1) if m > 0 else 0
            i1 = self.ri(i2 + 1, m) if m > 0 else 0
            f, g = stages[i1], stages[i2]
            kind = self.rng.choices(kinds, weights)[0]
            try:
                return getattr(self, "_" + kind)(f, g)
            except _Infeasible:
                pass
            if i1 != i2:
                return self._binary(f, g)
        raise AssertionError("no feasible stage in 1000 draws")  # pragma: no cover

    def random_motif(self, stages: list[Stage], left: int) -> list[Stage]:
        """An app-like structure (MOTIFS) of at most `left` Funcs on one of the last three stages; [] when the
        one drawn does not fit (then a random stage is drawn instead)."""
        f = stages[self.ri(max(0, len(stages) - 3), len(stages) - 1)]
        make = {"pyramid": self._pyramid, "stencil_chain": self._stencil_chain, "conv_layer": self._conv_layers,
                "depthwise_separable": self._depthwise_separable, "max_filter": self._max_filter}  # one per MOTIFS
        return make[self.rng.choice(self.motif_kinds)](f, left)

    def _pyramid(self, f: Stage, left: int) -> list[Stage]:
        """Levels each half the size of the one above (downsampled along x, then y), then back up: each level's
        upsampled result combined with the level of the same size, as a Laplacian pyramid is collapsed."""
        levels = self.ri(1, MAX_PYRAMID_LEVELS)
        while levels and not (f.w / 2 ** levels >= MIN_MOTIF_EXTENT and f.h / 2 ** levels >= MIN_MOTIF_EXTENT
                              and f.size / 4 ** levels >= MIN_ELEMS
                              and levels * PYRAMID_FUNCS_PER_LEVEL <= left):
            levels -= 1
        if not levels:
            return []
        made: list[Stage] = []
        pyramid = [f]
        for _ in range(levels):
            down = self._downsample(pyramid[-1], pyramid[-1], 0, 1, kind="pyr_down")
            made.append(down)
            made.append(self._downsample(down, down, 1, 1, kind="pyr_down"))
            pyramid.append(made[-1])
        out = pyramid[-1]
        for level in reversed(pyramid[:-1]):
            up = self._upsample(out, out, 0, 1, kind="pyr_up")
            made.append(up)
            made.append(self._upsample(up, up, 1, 1, kind="pyr_up"))
            out = self._binary(level, made[-1], kind="pyr_mix")
            made.append(out)
        return made

    def _stencil_chain(self, f: Stage, left: int) -> list[Stage]:
        """2 to 6 non-separable (2r+1) x (2r+1) binomial stencils (r 1 or 2), each reading the previous."""
        n, r = min(self.ri(2, 6), left), self.ri(1, 2)
        if n < 2 or f.w < 4 * r + 1 or f.h < 4 * r + 1:
            return []
        w = binomial_weights(r)  # the app's weights: w[j + r][i + r] is the tap at (x + i, y + j)
        total = sum(map(sum, w))
        made: list[Stage] = []
        g = f
        for _ in range(n):
            t = g.type
            at_t = t if t.is_float else (_widen(t) if t.bits < 32 else t)
            acc = None
            for j in range(-r, r + 1):
                for i in range(-r, r + 1):
                    tap = _arith("mul", _as(g(_off(x, i), _off(y, j), c), at_t), _const(at_t, w[j + r][i + r]))
                    acc = tap if acc is None else _arith("add", acc, tap)
            mean = (_arith("mul", acc, _const(f32, 1.0 / total)) if t.is_float
                    else _arith("div", acc, _const(at_t, total)))
            val = _as(mean, t)
            s = self.new_func("stencil2d")
            s[x, y, c] = val.e
            g = self.record(Stage(s, g.sx, g.sy, g.c, t, "stencil2d"), f"{2 * r + 1}x{2 * r + 1}", g)
            made.append(g)
        return made

    def _conv_layers(self, f: Stage, left: int) -> list[Stage]:
        """1 to MAX_CONV_LAYERS CNN layers as conv_layer's: conv[x, y, co] = bias[co] + sum over (ci, kx, ky) of
        weight[ci, kx, ky, co] * in[s x + kx - 1, s y + ky - 1, ci] (ci innermost, f32), then ReLU; a 3x3 or 1x1
        kernel, CONV_LAYER_CHANNELS output channels within the work and size bounds, stride s 1 but in the first
        layer (1, 2 or 4). [] when none fits."""
        made: list[Stage] = []
        g = f
        for layer in range(min(self.ri(1, MAX_CONV_LAYERS), left // 2)):
            k = 3 if self.chance(0.7) and g.c * 9 <= MAX_REDUCTION else 1
            # the first layer may stride by 2 or 4 as a network's stem does: fewer pixels, room for more channels
            ls = self.rng.choice((0, 1, 2)) if layer == 0 else 0
            while ls and min(g.w, g.h) / 2 ** ls < MIN_MOTIF_EXTENT:
                ls -= 1
            layer_made = self._conv_layer(g, k, ls)
            if not layer_made:
                break
            made += layer_made
            g = layer_made[-1]
        return made

    def _conv_layer(self, g: Stage, k: int, ls: int) -> list[Stage]:
        """One CNN layer of a k x k kernel and stride 2^ls on g, then its ReLU; [] when no output channel count
        within CONV_LAYER_CHANNELS fits the size and work bounds."""
        stride, sx, sy = 2 ** ls, g.sx - ls, g.sy - ls
        wh = g.w * g.h / 4 ** ls
        hi = int(min(CONV_LAYER_CHANNELS[1], MAX_ELEMS // wh, WORK_LIMIT // (wh * g.c * k * k)))
        if hi < CONV_LAYER_CHANNELS[0]:
            return []
        cout = self.ri(CONV_LAYER_CHANNELS[0], hi)
        conv = self.new_func("conv_layer")
        wts, bias = Input(f"w{self.count - 1}", f32, 4), Input(f"b{self.count - 1}", f32, 1)
        if k == 3:
            r = RDom((0, g.c), (0, 3), (0, 3), name=f"r{self.count - 1}")
            wx, wy, tap = r.y, r.z, g(_scaled(x, stride, r.y - 1), _scaled(y, stride, r.z - 1), r.x)
        else:
            r = RDom((0, g.c), name=f"r{self.count - 1}")
            wx, wy, tap = 0, 0, g(_scaled(x, stride, 0), _scaled(y, stride, 0), r.x)
        conv[x, y, c] = bias[c]
        conv[x, y, c] += wts[r.x, wx, wy, c] * _as(tap, f32).e
        layer = self.record(Stage(conv, sx, sy, cout, f32, "conv_layer"), f"{k}x{k} s{stride} {g.c}->{cout}", g)
        relu = self.new_func("conv_relu")
        relu[x, y, c] = _arith("max", TE(conv[x, y, c], f32), _const(f32, 0.0)).e
        return [layer, self.record(Stage(relu, sx, sy, cout, f32, "conv_relu"), "relu", layer)]

    def _depthwise_separable(self, f: Stage, left: int) -> list[Stage]:
        """A MobileNet block as depthwise_separable_conv's: dw[x, y, c] = sum over (kx, ky) of
        weight[kx, ky, c] * in[x + kx - 1, y + ky - 1, c] (f32, an RDom update), then a 1x1 pointwise layer and its
        ReLU; first a 1x1 expansion layer when the operand has under CONV_LAYER_CHANNELS[0] channels (or, with room,
        at random). [] when it does not fit; without the pointwise layer when that does not."""
        if left < 3 or min(f.w, f.h) < MIN_MOTIF_EXTENT:
            return []
        made: list[Stage] = []
        g = f
        if left >= 5 and (g.c < CONV_LAYER_CHANNELS[0] or self.chance(0.3)):
            made = self._conv_layer(g, 1, 0)
            g = made[-1] if made else g
        if g.c < CONV_LAYER_CHANNELS[0]:
            return made
        dw = self.new_func("dw_conv")
        wts = Input(f"w{self.count - 1}", f32, 3)
        r = RDom((0, 3), (0, 3), name=f"r{self.count - 1}")
        dw[x, y, c] = _zero(f32)
        dw[x, y, c] += wts[r.x, r.y, c] * _as(g(x + r.x - 1, y + r.y - 1, c), f32).e
        made.append(self.record(Stage(dw, g.sx, g.sy, g.c, f32, "dw_conv"), f"3x3 {g.c}", g))
        return made + self._conv_layer(made[-1], 1, 0)

    def _max_filter(self, f: Stage, left: int) -> list[Stage]:
        """Halide's max filter over a (2R+1) x (2R+1) square: vert_log[x, y, c, t], slice t the max over rows
        [y, y + 2^t) made by an RDom update over rows (inner) and slices (outer) from two samples of slice t - 1;
        vert_max, the max over rows [y - R, y + R] from two overlapping samples of slice floor(log2(2R + 1));
        horiz_max, an RDom update taking the max of vert_max over columns [x - R, x + R]. [] when it does not fit."""
        radius = self.ri(2, MAX_FILTER_RADIUS)
        while radius > 2 and min(f.w, f.h) < 4 * radius + 1:
            radius //= 2
        top = math.floor(math.log2(2 * radius + 1))  # the slice whose two samples cover 2R + 1 rows
        if left < 2 or min(f.w, f.h) < 4 * radius + 1 or f.size * (top + 1) > MAX_ELEMS:
            return []
        rows = self.extent(f, 1)
        t = f.type
        vert_log = self.new_func("vert_log")
        vert_log[x, y, c, t_slice] = f(x, y, c).e
        r = RDom((-radius, rows + 2 * radius), (1, top), name=f"r{self.count - 1}")
        step = clamp(select_pow2(r.y - 1, top - 1), 0, 2 ** (top - 1))
        vert_log[x, r.x, c, r.y] = _arith("max", TE(vert_log[x, r.x, c, r.y - 1], t),
                                          TE(vert_log[x, r.x + step, c, r.y - 1], t)).e
        # recorded but not returned: a 4-D Func is no operand for the (x, y, c) stages drawn after it (as conv2d's sum)
        scan = self.record(Stage(vert_log, f.sx, f.sy, f.c, t, "vert_log"), f"slices {top + 1}", f)
        vert = self.new_func("vert_max")
        vert[x, y, c] = _arith("max", TE(vert_log[x, y - radius, c, top], t),
                               TE(vert_log[x, y + radius + 1 - 2 ** top, c, top], t)).e
        made = [self.record(Stage(vert, f.sx, f.sy, f.c, t, "vert_max"), f"r{radius}", scan)]
        horiz = self.new_func("horiz_max")
        dx = RDom((-radius, 2 * radius + 1), name=f"r{self.count - 1}")
        horiz[x, y, c] = _const(t, LOWEST_F32 if t.is_float else t.min).e
        horiz[x, y, c] = _arith("max", TE(horiz[x, y, c], t), TE(vert[x + dx.x, y, c], t)).e
        made.append(self.record(Stage(horiz, f.sx, f.sy, f.c, t, "horiz_max"), f"r{radius}", made[-1]))
        return made

    # -- stage kinds (each raises _Infeasible before making any Func) ----------------------------

    def _stencil(self, f: Stage, g: Stage) -> Stage:
        dim = self.ri(0, 1)
        lo, hi = self.ri(-3, 0), self.ri(0, 3)
        taps = [f(_off(x, k), y, c) if dim == 0 else f(x, _off(y, k), c) for k in range(lo, hi + 1)]
        depth = int(math.log(len(taps))) + self.ri(0, 1)
        v = self.as_value(self.rexpr(taps, depth, f.size < SMALL))
        s = self.new_func("stencil")
        s[x, y, c] = v.e
        return self.record(Stage(s, f.sx, f.sy, f.c, v.t, "stencil"), f"{'xy'[dim]}[{lo},{hi}]", f)

    def _conv1d_rdom(self, f: Stage, g: Stage) -> Stage:
        dim = self.ri(0, 1)
        lo, hi = self.ri(-10, 0), self.ri(0, 10)
        s = self.new_func("conv1d_rdom")
        r = RDom((lo, hi - lo + 1), name=f"r{self.count - 1}")
        s[x, y, c] = _zero(f.type)
        tap = f(x + r.x, y, c) if dim == 0 else f(x, y + r.x, c)
        s[x, y, c] += self.const(f.type).e * tap.e
        return self.record(Stage(s, f.sx, f.sy, f.c, f.type, "conv1d_rdom"), f"{'xy'[dim]}[{lo},{hi}]", f)

    def _conv1d_sum(self, f: Stage, g: Stage) -> Stage:
        dim = self.ri(0, 1)
        lo, hi = self.ri(-10, 0), self.ri(0, 10)
        acc = None
        for k in range(lo, hi + 1):
            tap = f(_off(x, k), y, c) if dim == 0 else f(x, _off(y, k), c)
            term = _arith("mul", self.const(f.type), tap)
            acc = term if acc is None else _arith("add", acc, term)
        s = self.new_func("conv1d_sum")
        s[x, y, c] = acc.e
        return self.record(Stage(s, f.sx, f.sy, f.c, acc.t, "conv1d_sum"), f"{'xy'[dim]}[{lo},{hi}]", f)

    def _conv2d(self, f: Stage, g: Stage) -> Stage:
        lo, hi = self.ri(-5, 0), self.ri(0, 5)
        while f.c * (hi - lo + 1) ** 2 > MAX_REDUCTION:  # shrink the kernel toward its centre
            lo, hi = (lo + 1, hi) if -lo >= hi and lo < 0 else (lo, hi - 1)
        k = hi - lo + 1
        stride = self.rng.choice((1, 1, 2, 2, 4))
        if stride > k:
            stride = 1
        ls = stride.bit_length() - 1
        sx, sy = f.sx - ls, f.sy - ls
        w, h = NOMINAL * 2.0 ** sx, NOMINAL * 2.0 ** sy
        red = f.c * k * k
        if stride > 1 and (w < 1 or h < 1):
            raise _Infeasible
        cout = self.out_channels(w, h, red)
        t = f.type
        mt = at = t
        if t.is_integer and self.chance():  # widened multiply and accumulate (2x bits, then 2x again, <= 32)
            mt = _widen(t)
            at = _widen(mt)
        variant = "unrolled" if red <= 27 and self.chance(0.4) else self.rng.choice(("rdom", "sum"))
        s = self.new_func("conv2d")
        wts = Input(f"w{self.count - 1}", t, 4)

        def term(i, j, ci) -> TE:
            tap = f(_scaled(x, stride, i), _scaled(y, stride, j), ci)
            prod = _arith("mul", _as(TE(wts[ci, i, j, c], t), mt), _as(tap, mt))
            return _as(prod, at)

        if variant == "unrolled":
            acc = None
            for ci in range(f.c):
                for j in range(lo, hi + 1):
                    for i in range(lo, hi + 1):
                        tm = term(i, j, ci)
                        acc = tm if acc is None else _arith("add", acc, tm)
            s[x, y, c] = acc.e
        else:
            red_f = s if variant == "rdom" else self.new_func("sum")
            r = RDom((lo, k), (lo, k), (0, f.c), name=f"r{self.count - 1}")
            red_f[x, y, c] = _zero(at)
            red_f[x, y, c] += term(r.x, r.y, r.z).e
            if variant == "sum":
                self.record(Stage(red_f, sx, sy, cout, at, "sum"), "conv2d", f)
                s[x, y, c] = red_f[x, y, c]
        return self.record(Stage(s, sx, sy, cout, at, "conv2d"),
                           f"{variant} {k}x{k} s{stride} {f.c}->{cout} {mt}/{at}", f)

    def _pool(self, f: Stage, g: Stage) -> Stage:
        if f.w < 32 or f.h < 32:
            raise _Infeasible
        stride = 4 if self.chance(0.25) else 2
        if not _ok_size(f.w / stride, f.h / stride, f.c):
            stride = 2
            if not _ok_size(f.w / 2, f.h / 2, f.c):
                raise _Infeasible
        k = stride + self.ri(0, 1)
        lo = -((k - 1) // 2)
        op = "avg" if self.chance() else "max"
        variant = "unrolled" if k < 4 and self.chance(0.4) else ("rdom" if op == "max" or self.chance() else "sum")
        ls = stride.bit_length() - 1
        t = f.type
        scale = k * k

        def tap(i, j) -> TE:
            return f(_scaled(x, stride, i), _scaled(y, stride, j), c)

        s = self.new_func("pool")
        out_t = t
        if variant == "unrolled":
            taps = [tap(i, j) for j in range(lo, lo + k) for i in range(lo, lo + k)]
            if op == "max":
                acc = taps[0]
                for tp in taps[1:]:
                    acc = _arith("max", acc, tp)
            else:
                at = t if t.is_float else i32
                acc = None
                for tp in taps:
                    acc = _as(tp, at) if acc is None else _arith("add", acc, _as(tp, at))
                if t.is_float:
                    acc = _arith("mul", acc, _const(f32, 1.0 / scale))
                else:
                    acc = _as(_arith("div", acc, _const(at, scale)), t)
            s[x, y, c] = acc.e
        elif variant == "rdom":
            r = RDom((lo, k), (lo, k), name=f"r{self.count - 1}")
            if op == "max":
                s[x, y, c] = tap(lo, lo).e
                s[x, y, c] = ir.max(s[x, y, c], tap(r.x, r.y).e)
            else:  # Halide's form: each term divided by the kernel size
                s[x, y, c] = _zero(t)
                s[x, y, c] += _arith("div", tap(r.x, r.y), _const(t, scale)).e
        else:  # sum(): a hidden Func accumulating in float
            hidden = self.new_func("sum")
            r = RDom((lo, k), (lo, k), name=f"r{self.count - 1}")
            hidden[x, y, c] = _zero(f32)
            hidden[x, y, c] += _as(tap(r.x, r.y), f32).e
            self.record(Stage(hidden, f.sx - ls, f.sy - ls, f.c, f32, "sum"), "pool", f)
            s[x, y, c] = hidden[x, y, c] / _const(f32, scale).e
            out_t = f32
        return self.record(Stage(s, f.sx - ls, f.sy - ls, f.c, out_t, "pool"), f"{op} {variant} {k}x{k} s{stride}", f)

    def _activation(self, f: Stage, g: Stage) -> Stage:
        t = f.type
        s = self.new_func("activation")
        if not t.is_float or self.chance():  # ReLU; tanh (the GPU variant's) on floats
            v = _arith("max", f(x, y, c), _const(t, 0))
            variant = "relu"
            if t.is_int and t.bits > 8 and self.chance():  # down-cast to 1/2 or 1/4 of the bits, saturating
                nt = Type("int", max(8, t.bits // self.rng.choice((2, 4))))
                v = _as(_arith("min", v, _const(t, nt.max)), nt)
                variant = f"relu->{nt}"
        else:
            v = TE(ir.tanh(_as(f(x, y, c), f32).e), f32)
            variant = "tanh"
        s[x, y, c] = v.e
        return self.record(Stage(s, f.sx, f.sy, f.c, v.t, "activation"), variant, f)

    def _pad(self, f: Stage, g: Stage) -> Stage:
        w, h, ch = self.extent(f, 0), self.extent(f, 1), f.c
        s = self.new_func("pad")
        inside = (x >= 0) & (x < w) & (y >= 0) & (y < h) & (c >= 0) & (c < ch)
        s[x, y, c] = select(inside, f.func[clamp(x, 0, w - 1), clamp(y, 0, h - 1), clamp(c, 0, ch - 1)], _zero(f.type))
        return self.record(Stage(s, f.sx, f.sy, f.c, f.type, "pad"), f"{w}x{h}x{ch}", f)

    def _upsample(self, f: Stage, g: Stage, dim: int | None = None, log2: int | None = None, kind="upsample") -> Stage:
        if f.c > MAX_CHANNELS and log2 is None:
            raise _Infeasible
        dim = self.ri(0, 1) if dim is None else dim
        log2 = self.grow_factor(f, dim) if log2 is None else log2
        k = 1 << log2
        v = x if dim == 0 else y
        t = f.type

        def at(e):
            return f(e, y, c) if dim == 0 else f(x, e, c)

        s = self.new_func(kind)
        if self.chance():
            variant = "nearest"
            val = at(v / k)
        else:
            variant = "linear"
            i0, frac = v / k, v % k
            if t.is_float:
                wt = _arith("mul", TE(cast(f32, frac), f32), _const(f32, 1.0 / k))
                val = _arith("add", at(i0), _arith("mul", _arith("sub", at(i0 + 1), at(i0)), wt))
            else:
                wt = _widen(t) if t.bits < 32 else (i32 if t.is_int else u32)
                val = _arith("add", _arith("mul", _as(at(i0), wt), TE(cast(wt, k - frac), wt)),
                             _arith("mul", _as(at(i0 + 1), wt), TE(cast(wt, frac), wt)))
                val = _as(_arith("div", val, _const(wt, k)), t)
        s[x, y, c] = val.e
        sx, sy = (f.sx + log2, f.sy) if dim == 0 else (f.sx, f.sy + log2)
        return self.record(Stage(s, sx, sy, f.c, val.t, kind), f"{variant} {'xy'[dim]} x{k}", f)

    def _downsample(self, f: Stage, g: Stage, dim: int | None = None, log2: int | None = None,
                    kind="downsample") -> Stage:
        dim = self.ri(0, 1) if dim is None else dim
        log2 = self.shrink_factor(f, dim) if log2 is None else log2
        k = 1 << log2
        v = x if dim == 0 else y
        t = f.type

        def at(e):
            return f(e, y, c) if dim == 0 else f(x, e, c)

        s = self.new_func(kind)
        if k > 8 or self.chance():
            variant = "strided"
            val = at(v * k)
        else:
            variant = "box"
            at_t = t if t.is_float else (_widen(t) if t.bits < 32 else t)
            acc = None
            for i in range(k):
                tap = _as(at(_off(v * k, i)), at_t)
                acc = tap if acc is None else _arith("add", acc, tap)
            mean = _arith("mul", acc, _const(f32, 1.0 / k)) if t.is_float else _arith("div", acc, _const(at_t, k))
            val = _as(mean, t)
        s[x, y, c] = val.e
        sx, sy = (f.sx - log2, f.sy) if dim == 0 else (f.sx, f.sy - log2)
        return self.record(Stage(s, sx, sy, f.c, val.t, kind), f"{variant} {'xy'[dim]} /{k}", f)

    def _all_to_all(self, f: Stage, g: Stage, cout: int | None = None, kind="all_to_all") -> Stage:
        if cout is None:
            cout = self.out_channels(f.w, f.h, f.c)
            variant = self.rng.choice(("unrolled", "rdom", "sum"))
            if variant == "unrolled" and f.c > 16:
                variant = "rdom"
        else:
            variant = "rdom"
        t = f.type if f.type.is_float else match_types(f.type, i32)
        s = self.new_func(kind)
        wts = Input(f"w{self.count - 1}", t, 2) if self.mix_weights == "buffer" else None

        def weight(i) -> TE:
            if wts is not None:  # read from a buffer [input channel, output channel], as a layer's weights are
                return TE(wts[i, c], t)
            return TE(cast(t, (i + 2 * c) % 5 - 2), t)  # a synthetic weight from the channel indices, in [-2, 2]

        if variant == "unrolled":
            acc = None
            for i in range(f.c):
                tm = _arith("mul", _as(f(x, y, i), t), weight(i))
                acc = tm if acc is None else _arith("add", acc, tm)
            s[x, y, c] = acc.e
        else:
            red_f = s if variant == "rdom" else self.new_func("sum")
            r = RDom((0, f.c), name=f"r{self.count - 1}")
            red_f[x, y, c] = _zero(t)
            red_f[x, y, c] += _arith("mul", _as(f(x, y, r.x), t), weight(r.x)).e
            if variant == "sum":
                self.record(Stage(red_f, f.sx, f.sy, cout, t, "sum"), "all_to_all", f)
                s[x, y, c] = red_f[x, y, c]
        return self.record(Stage(s, f.sx, f.sy, cout, t, kind), f"{variant} {f.c}->{cout}", f)

    def _scan(self, f: Stage, g: Stage) -> Stage:
        dim = self.ri(0, 2)
        n = max(2, self.extent(f, dim))
        s = self.new_func("scan")
        s[x, y, c] = f.func[x, y, c]
        fwd = RDom((1, n - 1), name=f"r{self.count - 1}f")
        bwd = RDom((1, n - 1), name=f"r{self.count - 1}b")

        def at(e) -> tuple:
            return tuple(e if d == dim else (x, y, c)[d] for d in range(3))

        s[at(fwd.x)] += s[at(fwd.x - 1)]
        s[at(n - 1 - bwd.x)] += s[at(n - bwd.x)]
        return self.record(Stage(s, f.sx, f.sy, f.c, f.type, "scan"), f"{'xyc'[dim]} n={n}", f)

    def _unary(self, f: Stage, g: Stage) -> Stage:
        if f.size >= UNARY_LIMIT:
            raise _Infeasible
        op = self.rng.choice(("exp", "log", "sqrt"))
        s = self.new_func("unary")
        s[x, y, c] = getattr(ir, op)(_as(f(x, y, c), f32).e)
        return self.record(Stage(s, f.sx, f.sy, f.c, f32, "unary"), op, f)

    def _histogram(self, f: Stage, g: Stage) -> Stage:
        if f.w <= 32 or f.h <= 32:
            raise _Infeasible
        box = self.rng.choice((2, 4, 8))
        nb = min(MAX_CHANNELS, box * box * f.c)
        lb = box.bit_length() - 1
        if not _ok_size(f.w / box, f.h / box, nb):
            raise _Infeasible
        one = self.resample_to(f, f.sx, f.sy, 1)  # reduce to one channel
        ht = self.rng.choice((i32, f32))
        s = self.new_func("histogram")
        r = RDom((0, box), (0, box), name=f"r{self.count - 1}")
        s[x, y, c] = _zero(ht)
        v = one(x * box + r.x, y * box + r.y, 0)
        idx = cast(i32, v.e * float(nb)) if v.t.is_float else cast(i32, v.e)
        s[x, y, clamp(idx, 0, nb - 1)] += 1
        return self.record(Stage(s, f.sx - lb, f.sy - lb, nb, ht, "histogram"), f"box {box} buckets {nb} {ht}", one)

    def _slice(self, f: Stage, g: Stage) -> Stage:
        if f.c > g.c:
            f, g = g, f
        if g.w * g.h < MIN_ELEMS:
            raise _Infeasible
        index = self.resample_to(f, g.sx, g.sy, 1)
        v = index(x, y, c)
        idx = cast(i32, v.e * float(g.c)) if v.t.is_float else cast(i32, v.e)
        s = self.new_func("slice")
        s[x, y, c] = g.func[x, y, clamp(idx, 0, g.c - 1)]
        return self.record(Stage(s, g.sx, g.sy, 1, g.type, "slice"), f"{g.c} channels", g, index)

    def _binary(self, f: Stage, g: Stage, kind: str = "binary") -> Stage:
        if (f.sx, f.sy, f.c) != (g.sx, g.sy, g.c):
            if f.size < g.size:
                f = self.resample_to(f, g.sx, g.sy, g.c)
            else:
                g = self.resample_to(g, f.sx, f.sy, f.c)
        leaves = [f(x, y, c), g(x, y, c)]
        if self.chance():
            leaves.reverse()
        v = self.as_value(self.rexpr(leaves, self.ri(1, 3), f.size < SMALL))
        s = self.new_func(kind)
        s[x, y, c] = v.e
        return self.record(Stage(s, f.sx, f.sy, f.c, v.t, kind), "", f, g)

    def resample_to(self, st: Stage, sx: int, sy: int, ch: int) -> Stage:
        """Halide's resample_to: downsample, change the channel count with an all-to-all, upsample."""
        if st.sx > sx:
            st = self._downsample(st, st, 0, st.sx - sx, kind="rs_down")
        if st.sy > sy:
            st = self._downsample(st, st, 1, st.sy - sy, kind="rs_down")
        if st.c != ch:
            st = self._all_to_all(st, st, ch, kind="rs_mix")
        if st.sx < sx:
            st = self._upsample(st, st, 0, sx - st.sx, kind="rs_up")
        if st.sy < sy:
            st = self._upsample(st, st, 1, sy - st.sy, kind="rs_up")
        return st
