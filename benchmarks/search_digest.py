"""Did a speed change leave search results alone? A digest of every state a search realizes.

Speed work on the search path (symbolic bounds, Plan.extend, featurization, memoization) must not change a
single feature value: the cost model would score different numbers and the search would take other paths.
This runs greedy and beam over a fixed set of pipelines and hashes, per (pipeline, algorithm), every
realized state's feature arrays and plan extents (loop counts, tiles, tails per level), the order they were
realized in, and the chosen schedule's fingerprint and predicted cost. Write one file on the code before,
one on the code after, and compare:

    git stash; python benchmarks/search_digest.py write /tmp/before.json; git stash pop
    python benchmarks/search_digest.py write /tmp/after.json
    python benchmarks/search_digest.py compare /tmp/before.json /tmp/after.json

The default set (7 apps at size small, 6 random 20-stage pipelines, beam 6 x 2) realizes 28,644 states and
takes about half a minute on one core.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

APPS = ("unsharp", "harris", "iir_blur", "hist_eq", "max_filter", "camera_pipe", "bilateral_grid")


@contextlib.contextmanager
def digesting(sink: dict, current: list):
    """Every legal state SearchSpace.realize gives in the block adds to sink[current[0]] = [sha256, count]."""
    from scheduler.space import SearchSpace

    realize = SearchSpace.realize

    def recorded(self, candidate):
        s = realize(self, candidate)
        if s is None:  # an illegal candidate: whether it is refused before or after placing it is not a result
            return s
        h = sink.setdefault(current[0], [hashlib.sha256(), 0])
        for k in sorted(s.features):
            h[0].update(repr(k).encode())
            h[0].update(np.ascontiguousarray(s.features[k]).tobytes())
        for f in sorted(s.plan.funcs):
            fp = s.plan.funcs[f]
            shape = [(ch.extents, [[(lp.count, lp.tile, lp.tail) for lp in lv.loops] for lv in ch.levels])
                     for ch in fp.chains]
            h[0].update(repr((f, fp.inlined, fp.extents, fp.storage_extents, shape)).encode())
        h[1] += 1
        return s

    SearchSpace.realize = recorded
    try:
        yield
    finally:
        SearchSpace.realize = realize


def write(args) -> None:
    from generator.apps import get_app
    from generator.random_pipeline import generate
    from ir.target import get_target
    from scheduler import autoschedule, load_model

    model = load_model("analytical", get_target("host"))
    pipes = [(a, lambda a=a: get_app(a).build("small")) for a in args.apps.split(",") if a]
    pipes += [(f"random20 s{s}", lambda s=s: generate(s, max_stages=20).pipeline) for s in range(args.random)]
    sink, current, out = {}, [None], {}
    t = time.perf_counter()
    with digesting(sink, current):
        for i, (name, build) in enumerate(pipes, 1):
            p = build()
            for alg in ("greedy", "beam"):
                current[0] = f"{name}/{alg}"
                r = autoschedule(p, target="host", model=model, algorithm=alg, beam_size=args.beam_size,
                                 passes=args.passes)
                h = sink[current[0]]
                out[current[0]] = dict(states=h[1], digest=h[0].hexdigest(), result=r.loopnest.fingerprint,
                                       cost=float(r.predicted_cost))
            print(f"[{i}/{len(pipes)}] {name}: {sum(out[f'{name}/{a}']['states'] for a in ('greedy', 'beam'))} states",
                  flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"{sum(v['states'] for v in out.values())} states over {len(pipes)} pipelines in "
          f"{time.perf_counter() - t:.1f} s -> {args.out}")


def compare(args) -> int:
    a, b = (json.loads(Path(f).read_text()) for f in (args.a, args.b))
    differ = [k for k in a.keys() | b.keys() if a.get(k) != b.get(k)]
    if differ:
        print(f"DIFFERENT in {len(differ)} of {len(a)} searches: {', '.join(sorted(differ))}")
        return 1
    print(f"IDENTICAL: {len(a)} searches, {sum(v['states'] for v in a.values())} states")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="run the searches and write their digests")
    w.add_argument("out")
    w.add_argument("--apps", default=",".join(APPS))
    w.add_argument("--random", type=int, default=6, help="random 20-stage pipelines, seeds 0..N-1")
    w.add_argument("--beam-size", type=int, default=6)
    w.add_argument("--passes", type=int, default=2)
    c = sub.add_parser("compare", help="exit 1 unless two digest files agree on every search")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args(argv)
    if args.cmd == "write":
        write(args)
        return 0
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
