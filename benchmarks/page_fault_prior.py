"""How should the analytical model charge page faults? Its ranking of the committed dataset under each charge.

Prior 1 (Halide's term at a fixed coefficient), no page-fault charge at all, and prior 2's charge of the pages
a run maps fresh (train.analytical.pages_faulted) over a grid of mmap thresholds (an allocation at least this
big is mapped anew, and faults in every page, at each realization; a smaller one reuses the heap) and costs per
page. Each is scored with the ranking metrics of training (pairwise accuracy, top-1, Kendall tau) on the
training and on the validation pipelines of the dataset's split (train.data.DataConfig: the same hash split
and label-spread filter as `python -m train`). Prior 2's threshold comes from glibc (its largest dynamic mmap
threshold), not from this table: the random pipelines are too small to hold many such allocations, so the table
shows whether the charge hurts their ranking, not what it should be. Predictions only, about 15 s.

First it measures what the prior's two constants stand for, on this machine: for allocations just under and over
32 MiB and larger, the time to allocate, write and free a fresh buffer against writing a buffer kept from
before, as extra nanoseconds per 4 KiB page (numpy's allocator is glibc's malloc, as Halide's runtime is).
Under the threshold a fresh buffer costs nothing extra (glibc hands back the heap memory it kept); over it,
every page faults.

    python benchmarks/page_fault_prior.py
    python benchmarks/page_fault_prior.py --data datasets/random-host-halide --thresholds 131072,33554432
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class PageFaultCharge:
    """The analytical model (prior 2's terms) with its page-fault term and coefficient replaced."""

    def __init__(self, name: str, cores: int, prior: int, threshold: float | None = None, ns_per_page: float = 0.0):
        self.name, self.cores, self.prior = name, cores, prior
        self.threshold, self.ns_per_page = threshold, ns_per_page

    def predict(self, pipeline_features, schedule_features) -> np.ndarray:
        import torch

        from train import analytical as A

        sf = np.asarray(schedule_features)
        sf = torch.as_tensor(sf[None] if sf.ndim == 2 else sf, dtype=torch.float64)
        terms = A.analytical_terms(torch.as_tensor(np.asarray(pipeline_features, dtype=np.float32)), sf, self.cores,
                                   self.prior)
        c = A.coefficients(self.prior)
        if self.threshold is not None:
            terms[..., A._PAGE_FAULTS] = A.pages_faulted(sf, self.threshold)
            c[A._PAGE_FAULTS] = self.ns_per_page
        return (terms.numpy() * c).sum((-1, -2)) * 1e-9


def fault_cost(mib: int, repeats: int = 7) -> tuple[float, float, float]:
    """(fresh ms, reused ms, extra ns per 4 KiB page) of writing a float32 buffer of `mib` MiB: best of `repeats`."""
    import time

    n = (mib << 20) // 4
    kept = np.empty(n, np.float32)
    kept.fill(1)
    fresh, reused = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        a = np.empty(n, np.float32)
        a.fill(1)
        del a
        fresh.append(time.perf_counter() - t)
        t = time.perf_counter()
        kept.fill(2)
        reused.append(time.perf_counter() - t)
    f, r = min(fresh), min(reused)
    return f * 1e3, r * 1e3, (f - r) / ((mib << 20) / 4096) * 1e9


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="datasets/random-host-halide")
    ap.add_argument("--max-spread", type=float, default=0.25, help="as python -m train's max_spread")
    ap.add_argument("--thresholds", default=f"{128 << 10},{1 << 20},{4 << 20},{32 << 20}", help="bytes")
    ap.add_argument("--ns-per-page", default="100,250,500,1000")
    a = ap.parse_args(argv)

    from ir.target import get_target
    from train import analytical as A
    from train.data import DataConfig, TrainingData
    from train.metrics import ranking_metrics
    from train.run import predict_groups

    print("allocate + write + free a fresh buffer vs write a kept one (best of 7):")
    for mib in (8, 31, 33, 64, 128):
        f, r, extra = fault_cost(mib)
        print(f"  {mib:4d} MiB: fresh {f:7.2f} ms, kept {r:7.2f} ms, extra per 4 KiB page {extra:6.1f} ns"
              + ("  (>= the 32 MiB threshold)" if mib << 20 >= A.MMAP_THRESHOLD else ""), flush=True)
    data = TrainingData.load(DataConfig(path=a.data, max_spread=a.max_spread))
    cores = get_target("host").cores
    print(f"{a.data}: {data.stats}")
    charges = [PageFaultCharge("prior 1 (Halide's term, 0.0005)", cores, 1),
               PageFaultCharge("none", cores, 1, threshold=0.0, ns_per_page=0.0)]
    for thr in (int(t) for t in a.thresholds.split(",")):
        for ns in (float(n) for n in a.ns_per_page.split(",")):
            mark = " = prior 2" if (thr, ns) == (A.MMAP_THRESHOLD, A.PAGE_FAULT_NS) else ""
            charges.append(PageFaultCharge(f"pages, >= {thr >> 10} KiB fresh, {ns:g} ns{mark}", cores, 2, thr, ns))
    print(f"{'charge':44s} {'train: pairwise':>15s} {'top-1':>6s} {'tau':>6s}   {'val: pairwise':>13s} {'top-1':>6s} "
          f"{'tau':>6s}")
    for c in charges:
        cells = []
        for batches in (data.train, data.val):
            m = ranking_metrics(predict_groups(c, batches).values())
            cells.append(f"{m.pairwise_accuracy:15.4f} {m.top1_score:6.3f} {m.kendall_tau:6.3f}")
        print(f"{c.name:44s} {cells[0]}   {cells[1][2:]}", flush=True)
    print(f"({data.stats.train_pipelines} training and {data.stats.val_pipelines} validation pipelines, {cores} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
