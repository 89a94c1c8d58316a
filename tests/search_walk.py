"""The states searches actually visit, for properties that must hold on them: every child of a few random
states per decision, down to complete schedules."""

from __future__ import annotations

import random


def pipeline_from_spec(spec: str):
    """An app at size small ("harris"), or a random 20-stage pipeline at 64x48x3 ("random:3")."""
    from generator.apps import get_app
    from generator.random_pipeline import random_pipeline

    kind, _, seed = spec.partition(":")
    return random_pipeline(int(seed), 20, (64, 48, 3)) if kind == "random" else get_app(kind).build("small")


def sampled_search_children(space, seed, per_step: int):
    """Every child of `per_step` states per decision, drawn with random.Random(seed), from the empty schedule
    down to complete ones."""
    rng = random.Random(seed)
    frontier = [space.initial()]
    while frontier:
        children = [c for s in frontier for c in space.expand(s)]
        yield from children
        frontier = rng.sample(children, min(per_step, len(children)))
