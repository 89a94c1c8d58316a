"""How often a cost model orders one decision as the labels do: each one-decision contrast of a dataset
(generator.contrast: the beam-search sample with one level run serially, one Func inlined or computed, SIMD lanes
or unrolling off) against the beam-search sample it came from, per decision; and each rival model's beam pick
(generator.batch rivals, decision `rival <model>`) against the sampler's, the pair a search comparison turns on.

Why: pairwise accuracy over a pipeline's schedules mixes pairs that differ in many decisions at once, while a
search compares children that differ in one. A model can rank whole schedules well and still price one decision
wrongly everywhere (the calibrated model learned inlined work 1.36-1.48x dearer and computed camera_pipe's Funcs
where inlining them was 2x faster; docs/train.md); this metric shows that on the held-out pipelines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

APART = 0.10  # pairs whose measured runtimes differ by at least this much are reported apart (near-ties aside)


@dataclass(frozen=True)
class DecisionAccuracy:
    decision: str  # serial | inline | compute | scalar | rolled (generator.contrast.KINDS) | rival <model>
    pairs: int  # contrasts with their beam sample scored
    correct: float  # ordered as measured (a predicted or measured tie counts half)
    pairs_apart: int  # of them, measured at least APART apart
    correct_apart: float

    @property
    def accuracy(self) -> float:
        return self.correct / self.pairs if self.pairs else float("nan")

    @property
    def accuracy_apart(self) -> float:
        return self.correct_apart / self.pairs_apart if self.pairs_apart else float("nan")

    def describe(self) -> str:
        return (f"{self.decision} {self.accuracy:.2f} of {self.pairs}"
                + (f" ({self.accuracy_apart:.2f} of {self.pairs_apart} >= {100 * APART:.0f} % apart)"
                   if self.pairs_apart else ""))


def samplers_of(data: str | Path, target: str, pipeline_ids) -> dict[tuple[str, str], str]:
    """(pipeline_id, schedule_id) -> the sampler that made that schedule (beam, dropout, contrast-<kind>, ...), for the
    given pipelines of a dataset (one root, or several comma-separated, as training reads them)."""
    import polars as pl

    from featurize.dataset import dataset_roots, target_files

    files = [f for r in dataset_roots(data) for f in target_files(r, target)]
    ids = list(pipeline_ids)
    t = (pl.scan_parquet(files).select("pipeline_id", "schedule_id", "sampler")
         .filter(pl.col("pipeline_id").is_in(ids)).unique(["pipeline_id", "schedule_id"]).collect())
    return {(p, s): k for p, s, k in t.iter_rows()}


def decision_accuracy(scored, samplers: dict[tuple[str, str], str]) -> tuple[DecisionAccuracy, ...]:
    """Per decision, how the predictions order each contrast against its pipeline's beam sample. `scored` yields
    (pipeline_id, schedule_ids, predicted, measured) per pipeline; a pipeline without a beam sample is skipped."""
    from featurize.dataset import rival_pickers

    counts: dict[str, list[int]] = {}
    for pipeline_id, schedule_ids, predicted, measured in scored:
        kinds = [samplers.get((pipeline_id, s), "") for s in schedule_ids]
        if "beam" not in kinds:
            continue
        b = kinds.index("beam")
        for i, kind in enumerate(kinds):
            if kind.startswith("contrast-"):
                decisions = [kind.removeprefix("contrast-")]
            elif kind.startswith("beam-"):  # another model's beam pick (generator.batch rivals) against the sampler's
                decisions = [f"rival {r}" for r in rival_pickers(kind)]
            else:
                continue
            for decision in decisions:
                _score(counts.setdefault(decision, [0, 0, 0, 0]), predicted[i], predicted[b], measured[i], measured[b])
    return tuple(DecisionAccuracy(k, v[0], v[1], v[2], v[3]) for k, v in sorted(counts.items()))


def _score(c: list, predicted_i, predicted_b, measured_i, measured_b) -> None:
    """Add one pair to counts c = [pairs, correct, pairs apart, correct apart]."""
    truth = np.sign(measured_i - measured_b)
    guess = np.sign(predicted_i - predicted_b)
    score = 1.0 if guess == truth else 0.5 if guess == 0 or truth == 0 else 0.0
    c[0] += 1
    c[1] += score
    lo, hi = sorted((measured_i, measured_b))
    if hi >= (1 + APART) * lo:
        c[2] += 1
        c[3] += score


def scored_pipelines(model, batches):
    """(pipeline_id, schedule_ids, predicted, measured) per pipeline of `batches`, chunks of a pipeline joined (what
    train.run.predict_groups gives, with the schedule ids the decisions need)."""
    parts: dict[str, list] = {}
    for b in batches:
        pred = model.predict(b.pipeline_features.numpy(), b.schedule_features.numpy())
        parts.setdefault(b.pipeline_id, []).append((list(b.schedule_ids), pred, b.runtimes.double().numpy()))
    for pid, chunks in parts.items():
        yield (pid, [s for ids, _, _ in chunks for s in ids], np.concatenate([p for _, p, _ in chunks]),
               np.concatenate([t for _, _, t in chunks]))


def side_by_side(mine, theirs) -> str:
    """'serial 0.70 / 0.67 of 40 (0.85 / 0.80 of 20 >= 10 % apart); ...': two models' accuracies on the same pairs."""
    other = {d.decision: d for d in theirs}
    out = []
    for d in mine:
        o = other.get(d.decision)
        a = f"{d.accuracy:.2f} / {o.accuracy:.2f}" if o else f"{d.accuracy:.2f}"
        text = f"{d.decision} {a} of {d.pairs}"
        if d.pairs_apart:
            b = f"{d.accuracy_apart:.2f} / {o.accuracy_apart:.2f}" if o else f"{d.accuracy_apart:.2f}"
            text += f" ({b} of {d.pairs_apart} >= {100 * APART:.0f} % apart)"
        out.append(text)
    return "; ".join(out)
