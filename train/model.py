"""The cost models: plain torch modules that map one pipeline's features and B candidate schedules to B runtimes.

Three kinds (MODEL_KINDS):

* ``hybrid`` — seeds/adams2019 §4.2 + Appendix B, as Halide's Adams2019 cost model (reference §4):
    - head1 (algorithm embedding): the per-stage 40x7 pipeline features (raw counts, as Halide) contracted
      with a filter passed through a sigmoid — weights positive and bounded, so the embedding grows
      monotonically with operation counts — plus a bias; linear, no ReLU. Width ``algorithm_embedding``
      = 8 (Halide's head1_channels). Schedule-independent: computed once per pipeline (embed_pipeline).
    - head2 (schedule embedding): log1p(41 schedule features) -> linear -> ReLU, width ``embedding`` = 24
      (Halide's head2_channels). The two concatenate to Halide's 32-wide stage vector.
    - trunk: one linear layer to NUM_TERMS = 27 coefficients c0..c26 (the paper's 27; Halide's trunk is 32
      wide and leaves some outputs unused), made non-negative, which multiply the hand-designed terms.
    - the 27 terms of Appendix B, computed from the RAW schedule features (cost_terms, looked up by name
      in featurize.schema.SCHEDULE_INDEX): compute cost (vector/scalar work, inlined or not) scaled by
      idle-core wastage ceil(tasks/cores)/max(1, tasks/cores); 11 load terms (lines/bytes read per
      realization, vector/scalar load counts, unique bytes/lines per vector and per task); store cost
      (lines written and bytes per realization, with separate coefficients for parallel stages, the
      output stage and the rest); false sharing; page faults; malloc; parallel launch; per-task overhead;
      working set. Per-stage cost = 1e-9 * sum_i c_i * term_i (Halide's scale: seconds-like units);
      the schedule's runtime is the sum over stages.
  Every term is a product of raw features, so a stage whose schedule features are all zero contributes
  exactly 0; an inlined stage (featurize gives it inlined_calls, its vector/scalar counts, vector size,
  parallelism and schedule-independent references, nothing about memory) contributes only its compute
  cost (coefficients c0/c1), as in Halide, where its memory traffic is charged to the stage it is inlined into.
  Deviations from Halide, each deliberate:
    - coefficients are softplus(trunk), not ReLU(trunk): strictly positive and never dead. Halide keeps
      ReLU and adds a 1e-5 penalty on negative pre-activations to unstick dead units; our loss functions
      see only predictions, so the activation carries that job.
    - the store cost is not doubled (Halide's legacy quirk; the learned coefficients absorb it).
    - the per-task overhead uses max(inner_parallelism - 1, 0) so that an all-zero stage stays at 0.
    - "is output" (Halide: stage index w == 0) is the first stage row: featurize orders stages outputs
      first, as Halide does.
    - num_cores is part of ModelConfig (Halide passes it at inference); set it to the target's cores.

* ``mlp`` — a plain per-stage MLP on [log1p(schedule features), log1p(pipeline features)] with two hidden
  ReLU layers of width ``hidden`` and a softplus output, summed over stages; no hand-designed terms. The
  pipeline half of the first layer is embed_pipeline (computed once per pipeline). Its per-stage output
  is scaled by MLP_SCALE = 1e-3 so that an untrained model predicts milliseconds, the range of measured
  runtimes, instead of seconds (the relative-throughput loss is not scale-free).

* ``residual`` — the analytical model (train.analytical: the same terms, its fixed coefficients, ops per point
  and the division among cores) whose coefficients the hybrid network rescales by exp(r), r bounded to
  +-residual_range (a trust region around the prior) and starting near 0: an untrained model ranks as the
  analytical model does, and training corrects it where the measurements disagree. Small datasets teach corrections to a sound prior more easily than costs from nothing.

* ``calibrated`` — the analytical model with its 27 coefficients rescaled by exp(r), one r per term for every
  stage of every pipeline (no network), bounded to +-residual_range and starting at 0. The residual model's
  corrections depend on each stage's features, so they can fit the training pipelines' quirks and move
  wherever a search leads; these 27 numbers can only re-weigh the terms, which is what a dataset of a few
  hundred pipelines can pin down.

Models are versioned with the feature schema: model_from_state refuses a config whose schema_version is not
featurize.SCHEMA_VERSION (check_schema).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch
from torch import Tensor, nn
from torch.nn import functional as F

import featurize
from featurize.schema import SCHEDULE_FEATURES, SCHEDULE_INDEX

from .analytical import PAGE_BYTES, PRIOR, analytical_terms, check_prior, coefficients
from .array_ops import array_ops

MODEL_KINDS = ("hybrid", "mlp", "residual", "calibrated")
TRUNK_INPUTS = ("raw", "normalized")  # ModelConfig.trunk_inputs
PIPELINE_SHAPE: tuple[int, int] = featurize.SCHEMA.pipeline_shape  # (40, 7)
NUM_SCHEDULE_FEATURES = len(SCHEDULE_FEATURES)  # 41
COST_SCALE = 1e-9  # Halide: per-stage cost * 1e-9
MLP_SCALE = 1e-3
MIN_RUNTIME = 1e-15  # floor on a prediction, so it is positive even for an all-zero schedule
TRUST_REGION_EDGE = 3.0  # residual: |raw| / residual_range past which tanh's slope is under 1 %: a correction at its bound
RESIDUAL_INIT = 5e-4  # residual: trunk weights start at 0.05 % of torch's fan-in bound, its bias at 0

# the 27 hand-designed terms of seeds/adams2019 Appendix B, in coefficient order c0..c26
TERMS = (
    "compute_vectors_inlined", "compute_scalars_inlined", "compute_vectors", "compute_scalars",  # c0-c3
    "load_lines_per_realization", "load_bytes_per_realization", "vector_loads_per_vector",  # c4-c6
    "scalar_loads_per_scalar", "scalar_loads_per_vector", "unique_bytes_per_vector_scalars",  # c7-c9
    "unique_bytes_per_vector_vectors", "unique_lines_per_vector_scalars", "unique_lines_per_vector_vectors",
    "unique_bytes_per_task", "unique_lines_per_task",  # c13-c14
    "store_lines_parallel", "store_lines_output", "store_lines_other",  # alpha: c15-c17
    "store_bytes_parallel", "store_bytes_output", "store_bytes_other",  # beta: c18-c20
    "false_sharing", "page_faults", "malloc", "parallel_launch", "parallel_tasks", "working_set",  # c21-c26
)
NUM_TERMS = len(TERMS)


class SchemaMismatch(ValueError):
    """A model trained on another feature schema than the one this schedlab computes."""


@dataclass(frozen=True)
class ModelConfig:
    kind: str = "hybrid"  # "hybrid" (Adams 2019) | "mlp" | "residual" | "calibrated" (analytical prior)
    embedding: int = 24  # hybrid: schedule-embedding width (Halide head2: 24)
    hidden: int = 64  # mlp: hidden width
    schema_version: int = featurize.SCHEMA_VERSION
    algorithm_embedding: int = 8  # hybrid: algorithm-embedding width (Halide head1: 8; 8 + 24 = Halide's 32)
    num_cores: int = 16  # hybrid: cores of the target (idle-core wastage); seeds/adams2019 used 16
    residual_range: float = 1.0  # residual, calibrated: a correction scales an analytical coefficient by e^-r..e^r at most
    prior: int = PRIOR  # residual, calibrated: the analytical prior corrected (train.analytical; saved configs without it: 1)
    trunk_inputs: str = "raw"  # hybrid, residual: "raw" (adams2019) | "normalized": each embedding standardized per stage
    #   before the trunk (TRUNK_INPUTS; saved configs without it: raw)

    def __post_init__(self):
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"unknown model kind {self.kind!r}; kinds: {', '.join(MODEL_KINDS)}")
        for name in ("embedding", "hidden", "schema_version", "algorithm_embedding", "num_cores"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"model config {name} must be a positive integer, got {value!r}")
        r = self.residual_range
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r <= 20:
            raise ValueError(f"model config residual_range must be a number in (0, 20], got {r!r}")
        check_prior(self.prior)
        if self.trunk_inputs not in TRUNK_INPUTS:
            raise ValueError(f"model config trunk_inputs must be one of {', '.join(TRUNK_INPUTS)}, got {self.trunk_inputs!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d) -> ModelConfig:
        known = {f.name for f in fields(ModelConfig)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown model config key(s) {', '.join(unknown)}; keys: {', '.join(sorted(known))}")
        return ModelConfig(**dict(d))


def check_schema(config: ModelConfig) -> None:
    """Refuse a model whose features would be read with another schema's names, order or definitions."""
    if config.schema_version != featurize.SCHEMA_VERSION:
        raise SchemaMismatch(f"cost model uses feature schema v{config.schema_version} but this schedlab computes "
                             f"v{featurize.SCHEMA_VERSION}: retrain the model on current features")


# -- the hand-designed terms -------------------------------------------------------------------------


def cost_terms(schedule_features, num_cores: float):
    """The 27 Appendix-B terms per stage, [..., S, 41] raw features -> [..., S, 27], all >= 0: a tensor for a tensor,
    an ndarray for an ndarray (train.array_ops).

    Halide's selects between coefficients (inlined or not; parallel / output / other stage) become terms
    that are zero where their branch is not taken, so the cost is one dot product with the coefficients.
    """
    xp = array_ops(schedule_features)
    with xp.quiet():
        return _cost_terms(xp, schedule_features, num_cores)


def _cost_terms(xp, schedule_features, num_cores: float):
    x = xp.clamp_min(schedule_features, 0)

    def f(name: str):
        return x[..., SCHEDULE_INDEX[name]]

    def m(t):
        return xp.clamp_min(t, 1)

    zero = xp.zeros_like(x[..., 0])
    inner, outer = f("inner_parallelism"), f("outer_parallelism")
    num_vectors, num_scalars = f("num_vectors"), f("num_scalars")
    realizations, productions = f("num_realizations"), f("num_productions")

    num_tasks = m(inner * outer)
    tasks_per_core = num_tasks / num_cores
    idle_core_wastage = xp.ceil(tasks_per_core) / m(tasks_per_core)
    vector_work = f("vector_size") * num_vectors * idle_core_wastage
    scalar_work = num_scalars * idle_core_wastage
    inlined = f("inlined_calls") > 0
    compute = [xp.where(inlined, vector_work, zero), xp.where(inlined, scalar_work, zero),
               xp.where(inlined, zero, vector_work), xp.where(inlined, zero, scalar_work)]

    load = [realizations * f("unique_lines_read_per_realization"),
            realizations * f("unique_bytes_read_per_realization"),
            num_vectors * f("vector_loads_per_vector"),
            num_scalars * f("scalar_loads_per_scalar"),
            num_vectors * f("scalar_loads_per_vector"),
            num_scalars * f("unique_bytes_read_per_vector"),
            num_vectors * f("unique_bytes_read_per_vector"),
            num_scalars * f("unique_lines_read_per_vector"),
            num_vectors * f("unique_lines_read_per_vector"),
            num_tasks * f("unique_bytes_read_per_task"),
            num_tasks * f("unique_lines_read_per_task")]

    innermost_bytes_at_task = m(f("innermost_bytes_at_task"))
    lines_written = realizations * inner * f("bytes_at_task") / innermost_bytes_at_task
    bytes_written = realizations * f("bytes_at_realization")
    parallel = inner > 1
    is_output = xp.first_rows(x.shape[-2], x)
    output, other = ~parallel & is_output, ~parallel & ~is_output
    store = [xp.where(parallel, lines_written, zero), xp.where(output, lines_written, zero),
             xp.where(other, lines_written, zero), xp.where(parallel, bytes_written, zero),
             xp.where(output, bytes_written, zero), xp.where(other, bytes_written, zero)]

    max_threads_hitting_same_page = xp.minimum(inner, PAGE_BYTES / innermost_bytes_at_task)
    overheads = [xp.where(parallel, (num_vectors + num_scalars) / innermost_bytes_at_task, zero),  # false sharing
                 f("bytes_at_production") * max_threads_hitting_same_page * inner * outer,  # page faults
                 realizations,  # malloc
                 xp.where(parallel, productions, zero),  # parallel launch
                 productions * xp.clamp_min(inner - 1, 0),  # per-task overhead
                 f("working_set")]
    return xp.stack(compute + load + store + overheads, dim=-1)


# -- the models --------------------------------------------------------------------------------------


class CostNetwork(nn.Module):
    """Predicted runtime of B schedules of one pipeline; larger = slower. Subclasses define the stage costs."""

    config: ModelConfig

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config

    def embed_pipeline(self, pipeline_features: Tensor) -> Tensor:
        """[S, 40, 7] -> per-stage algorithm embedding [S, k]; schedule-independent, so compute it once."""
        raise NotImplementedError

    def stage_costs(self, pipeline_features: Tensor, schedule_features: Tensor,
                    pipeline_embedding: Tensor | None = None, terms: Tensor | None = None) -> Tensor:
        """[B, S] per-stage predicted costs (what Anderson 2021's freezing ranks stages by). `terms`: what
        terms(pipeline_features, schedule_features) gives, when the caller computed it already."""
        raise NotImplementedError

    def terms(self, pipeline_features, schedule_features):
        """The hand-designed terms [B, S, 27] the model's coefficients multiply, or None for a model without them.
        Tensors give a tensor, ndarrays an ndarray of the same bits (train.array_ops): search computes them with
        numpy, whose small operations cost a fraction of torch's."""
        return None

    def reset_parameters(self, generator: torch.Generator) -> None:
        raise NotImplementedError

    def forward(self, pipeline_features: Tensor, schedule_features: Tensor,
                pipeline_embedding: Tensor | None = None) -> Tensor:
        """[S,40,7] and [B,S,41] float32 -> [B] predicted runtimes (> 0)."""
        return self.stage_costs(pipeline_features, schedule_features, pipeline_embedding).sum(-1).clamp_min(MIN_RUNTIME)

    @torch.no_grad()
    def predict(self, pipeline_features: np.ndarray, schedule_features: np.ndarray) -> np.ndarray:
        """Numpy in, float64 [B] out, in eval mode without gradients; a single [S, 41] schedule gives [1]."""
        p = next(self.parameters())
        pf = torch.as_tensor(np.asarray(pipeline_features, dtype=np.float32), device=p.device)
        sf = torch.as_tensor(np.asarray(schedule_features, dtype=np.float32), device=p.device)
        if sf.ndim == 2:
            sf = sf[None]
        was_training = self.training
        self.eval()
        try:
            return self(pf, sf).double().cpu().numpy()
        finally:
            self.train(was_training)


def _check_inputs(pipeline_features: Tensor, schedule_features: Tensor) -> None:
    if pipeline_features.ndim != 3 or tuple(pipeline_features.shape[1:]) != PIPELINE_SHAPE:
        raise ValueError(f"pipeline features must be [S, {PIPELINE_SHAPE[0]}, {PIPELINE_SHAPE[1]}], "
                         f"got {list(pipeline_features.shape)}")
    if schedule_features.ndim != 3 or schedule_features.shape[-1] != NUM_SCHEDULE_FEATURES:
        raise ValueError(f"schedule features must be [B, S, {NUM_SCHEDULE_FEATURES}], "
                         f"got {list(schedule_features.shape)}")
    if schedule_features.shape[1] != pipeline_features.shape[0]:
        raise ValueError(f"schedule features have {schedule_features.shape[1]} stages, pipeline features "
                         f"{pipeline_features.shape[0]}")


def _uniform(t: Tensor, bound: float, generator: torch.Generator) -> None:
    nn.init.uniform_(t, -bound, bound, generator=generator)


def _reset_linear(layer: nn.Linear, generator: torch.Generator) -> None:
    bound = 1 / math.sqrt(layer.in_features)  # torch's default fan-in bound, but from our generator
    _uniform(layer.weight, bound, generator)
    if layer.bias is not None:
        _uniform(layer.bias, bound, generator)


class HybridCostModel(CostNetwork):
    """Adams 2019: a small network predicts 27 non-negative coefficients for hand-designed cost terms."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        k = config.algorithm_embedding
        self.head1_filter = nn.Parameter(torch.zeros(k, *PIPELINE_SHAPE))
        self.head1_bias = nn.Parameter(torch.zeros(k))
        self.head2 = nn.Linear(NUM_SCHEDULE_FEATURES, config.embedding)
        self.trunk = nn.Linear(k + config.embedding, NUM_TERMS)

    def reset_parameters(self, generator: torch.Generator) -> None:
        _uniform(self.head1_filter, 0.5, generator)  # Halide's random weights: U[-0.5, 0.5) before the sigmoid
        _uniform(self.head1_bias, 0.5, generator)
        _reset_linear(self.head2, generator)
        _reset_linear(self.trunk, generator)

    def algorithm_weights(self) -> Tensor:
        """The effective head1 filter: sigmoid keeps it in (0, 1) whatever the raw parameters do."""
        return torch.sigmoid(self.head1_filter)

    def embed_pipeline(self, pipeline_features: Tensor) -> Tensor:
        return torch.einsum("srt,krt->sk", pipeline_features, self.algorithm_weights()) + self.head1_bias

    def coefficients(self, pipeline_features: Tensor, schedule_features: Tensor,
                     pipeline_embedding: Tensor | None = None) -> Tensor:
        """[B, S, 27] non-negative coefficients c0..c26."""
        return F.softplus(self.trunk_output(pipeline_features, schedule_features, pipeline_embedding))

    def trunk_output(self, pipeline_features: Tensor, schedule_features: Tensor,
                     pipeline_embedding: Tensor | None = None) -> Tensor:
        """[B, S, 27]: the trunk on each stage's [algorithm embedding, schedule embedding], before activation."""
        _check_inputs(pipeline_features, schedule_features)
        emb = self.embed_pipeline(pipeline_features) if pipeline_embedding is None else pipeline_embedding
        sched = F.relu(self.head2(torch.log1p(schedule_features.clamp_min(0))))
        if self.config.trunk_inputs == "normalized":
            emb, sched = _standardized(emb), _standardized(sched)
        stage = torch.cat([emb.expand(sched.shape[0], -1, -1), sched], dim=-1)
        return self.trunk(stage)

    def terms(self, pipeline_features, schedule_features):
        return cost_terms(schedule_features, float(self.config.num_cores))

    def stage_costs(self, pipeline_features: Tensor, schedule_features: Tensor,
                    pipeline_embedding: Tensor | None = None, terms: Tensor | None = None) -> Tensor:
        coeff = self.coefficients(pipeline_features, schedule_features, pipeline_embedding)
        if terms is None:
            terms = self.terms(pipeline_features, schedule_features)
        return (coeff * terms).sum(-1) * COST_SCALE


def _standardized(x: Tensor) -> Tensor:
    """Each row of `x` at mean 0 and variance 1 over its last dimension (a layer norm with no learned scale).

    Why: the algorithm embedding sums raw op counts and the schedule embedding log-features of up to ~20, so the
    trunk's inputs reach the hundreds. One Adam step of lr 1e-2 then moves a residual's raw output by several
    units, past tanh's range: stop 66 found 96-100 % of the trust region's inputs saturated in trained residual
    models (gradients of exactly 0 in float32, the loss frozen from epoch 4 on)."""
    return F.layer_norm(x, x.shape[-1:])


def _trust_region(raw: Tensor, r: float) -> Tensor:
    """exp of `raw` squashed into [-r, r]: a factor within e^-r..e^r, exp(raw) near 0."""
    return torch.exp(r * torch.tanh(raw / r))


def _register_prior(module: nn.Module, prior: int) -> None:
    """The analytical coefficients of `prior` as a constant buffer: not a parameter, not in the state dict."""
    module.register_buffer("analytical_coefficients", torch.as_tensor(coefficients(prior), dtype=torch.float32),
                           persistent=False)


class ResidualCostModel(HybridCostModel):
    """The analytical model with learned corrections: coefficient i = COEFFICIENTS[i] * exp(r_i), where r is
    adams2019's network (the same heads and trunk as `hybrid`) bounded to +-residual_range, and the terms are
    the analytical model's (ops per point, the division among cores: train.analytical.analytical_terms).

    The trunk starts near zero, so an untrained model ranks as the analytical model does and training moves
    it only where the measured runtimes disagree: with datasets of hundreds of pipelines rather than
    adams2019's thousands, the network learns corrections to a sound prior instead of costs from nothing. A
    term whose analytical coefficient is 0 (the working set) stays 0."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        _register_prior(self, config.prior)

    def reset_parameters(self, generator: torch.Generator) -> None:
        super().reset_parameters(generator)
        bound = RESIDUAL_INIT / math.sqrt(self.trunk.in_features)
        _uniform(self.trunk.weight, bound, generator)
        nn.init.zeros_(self.trunk.bias)

    def coefficients(self, pipeline_features: Tensor, schedule_features: Tensor,
                     pipeline_embedding: Tensor | None = None) -> Tensor:
        raw = self.trunk_output(pipeline_features, schedule_features, pipeline_embedding)
        return self.analytical_coefficients * _trust_region(raw, float(self.config.residual_range))

    def at_trust_region_bound(self, pipeline_features: Tensor, schedule_features: Tensor) -> Tensor:
        """[B, S, 27] bool: the corrections whose trunk output lies past TRUST_REGION_EDGE ranges, where the
        gradient is ~0 (exactly 0 in float32 a little further): a model with most of them there has stopped
        learning and corrects by e^+-r, a sign per term and stage (docs/train.md, stop 66)."""
        raw = self.trunk_output(pipeline_features, schedule_features)
        return raw.abs() > TRUST_REGION_EDGE * float(self.config.residual_range)

    def share_at_trust_region_bound(self, pairs) -> float:
        """The share of corrections at the bound over (pipeline features, schedule features) tensor pairs."""
        with torch.no_grad():
            flags = [self.at_trust_region_bound(p, s).reshape(-1) for p, s in pairs]
        return float(torch.cat(flags).float().mean())

    def terms(self, pipeline_features, schedule_features):
        return analytical_terms(pipeline_features, schedule_features, float(self.config.num_cores), self.config.prior)

    def stage_costs(self, pipeline_features: Tensor, schedule_features: Tensor,
                    pipeline_embedding: Tensor | None = None, terms: Tensor | None = None) -> Tensor:
        coeff = self.coefficients(pipeline_features, schedule_features, pipeline_embedding)
        if terms is None:
            terms = self.terms(pipeline_features, schedule_features)
        return (coeff * terms).sum(-1) * COST_SCALE


class CalibratedCostModel(CostNetwork):
    """The analytical model with one learned scale per term: coefficient i = COEFFICIENTS[i] * exp(r_i), r a
    27-vector shared by every stage, bounded to +-residual_range, starting at 0 (the analytical model itself).
    Weight decay pulls r towards the prior. A term whose analytical coefficient is 0 (the working set) stays 0."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.log_scale = nn.Parameter(torch.zeros(NUM_TERMS))
        _register_prior(self, config.prior)

    def reset_parameters(self, generator: torch.Generator) -> None:
        nn.init.zeros_(self.log_scale)

    def scales(self) -> Tensor:
        """[27] factors on the analytical coefficients, each within e^-r..e^r."""
        return _trust_region(self.log_scale, float(self.config.residual_range))

    def embed_pipeline(self, pipeline_features: Tensor) -> Tensor:
        return pipeline_features.new_zeros((pipeline_features.shape[0], 0))  # the terms need no embedding

    def terms(self, pipeline_features, schedule_features):
        return analytical_terms(pipeline_features, schedule_features, float(self.config.num_cores), self.config.prior)

    def stage_costs(self, pipeline_features: Tensor, schedule_features: Tensor,
                    pipeline_embedding: Tensor | None = None, terms: Tensor | None = None) -> Tensor:
        _check_inputs(pipeline_features, schedule_features)
        if terms is None:
            terms = self.terms(pipeline_features, schedule_features)
        return (self.analytical_coefficients * self.scales() * terms).sum(-1) * COST_SCALE


class MLPCostModel(CostNetwork):
    """Baseline without hand-designed terms: per-stage MLP, softplus, summed over stages."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        h = config.hidden
        self.pipeline_in = nn.Linear(PIPELINE_SHAPE[0] * PIPELINE_SHAPE[1], h)  # holds the first layer's bias
        self.schedule_in = nn.Linear(NUM_SCHEDULE_FEATURES, h, bias=False)
        self.hidden = nn.Linear(h, h)
        self.out = nn.Linear(h, 1)

    def reset_parameters(self, generator: torch.Generator) -> None:
        fan_in = self.pipeline_in.in_features + self.schedule_in.in_features  # one layer on the concatenation
        for t in (self.pipeline_in.weight, self.pipeline_in.bias, self.schedule_in.weight):
            _uniform(t, 1 / math.sqrt(fan_in), generator)
        _reset_linear(self.hidden, generator)
        _reset_linear(self.out, generator)

    def embed_pipeline(self, pipeline_features: Tensor) -> Tensor:
        """The pipeline half of the first layer: W_p log1p(pipeline) + b, [S, hidden]."""
        flat = pipeline_features.reshape(pipeline_features.shape[0], -1)
        return self.pipeline_in(torch.log1p(flat.clamp_min(0)))

    def stage_costs(self, pipeline_features: Tensor, schedule_features: Tensor,
                    pipeline_embedding: Tensor | None = None, terms: Tensor | None = None) -> Tensor:
        _check_inputs(pipeline_features, schedule_features)
        emb = self.embed_pipeline(pipeline_features) if pipeline_embedding is None else pipeline_embedding
        h = F.relu(self.schedule_in(torch.log1p(schedule_features.clamp_min(0))) + emb)
        h = F.relu(self.hidden(h))
        return F.softplus(self.out(h)).squeeze(-1) * MLP_SCALE


_CLASSES: dict[str, type[CostNetwork]] = {"hybrid": HybridCostModel, "mlp": MLPCostModel,
                                          "residual": ResidualCostModel, "calibrated": CalibratedCostModel}


def build_model(config: ModelConfig, seed: int | None = None) -> CostNetwork:
    """A freshly initialized model; the same seed gives the same weights (the global RNG is untouched)."""
    if seed is None:
        seed = int(torch.randint(0, 2**62, (1,)).item())
    with torch.random.fork_rng(devices=[]):  # nn.Linear's own init draws from the global RNG: undo that
        model = _CLASSES[config.kind](config)
    model.reset_parameters(torch.Generator().manual_seed(seed))
    return model


def save_checkpoint_dict(model: CostNetwork) -> dict:
    """{"config": JSON-able dict, "state_dict": CPU tensors}: everything model_from_state needs."""
    return {"config": model.config.to_dict(),
            "state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}}


def model_from_state(config: dict, state: dict) -> CostNetwork:
    """Rebuild a saved model exactly; refuses another feature schema (SchemaMismatch, one line)."""
    if "schema_version" not in config:
        raise SchemaMismatch("cost model config has no schema_version: it cannot be checked against the features")
    cfg = ModelConfig.from_dict({"prior": 1, **config})  # saved before priors were versioned: prior 1's terms
    check_schema(cfg)
    model = _CLASSES[cfg.kind](cfg)
    model.load_state_dict(state, strict=True)
    return model.eval()


load_state = model_from_state
