"""Does training beat random initializations on *measured* data? The learning margins, printed.

Trains the hybrid model (ranking loss) on a measured dataset and compares its validation pairwise accuracy and
top-1 score with the mean of five random initializations of the same model on the same validation pipelines
(one random init is a noisy baseline), then the mlp variant. Measured runtimes on a loaded machine are noisy,
so this is a benchmark, not a test: tests/test_train.py checks learning on a synthetic cost instead. On four
generated datasets training gained 0.12-0.15 pairwise and 0.12-0.22 top-1; on the noisiest 0.035-0.07 pairwise.

    python benchmarks/train_learning.py --data data            # a dataset generated earlier
    python benchmarks/train_learning.py --pipelines 32          # generate one (32 pipelines x 10 schedules)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from generator.datagen import BatchSpec, generate_batch
from ir.config import load_config
from ir.target import get_target
from train.config import TrainConfig
from train.data import DataConfig, TrainingData
from train.metrics import ranking_metrics
from train.model import ModelConfig, build_model
from train.run import predict_groups, train

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    from ir.logs import quiet_third_party

    quiet_third_party()  # MLflow's and Lightning's chatter off, as in every command
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None, help="a measured dataset root (default: generate one)")
    ap.add_argument("--pipelines", type=int, default=32)
    ap.add_argument("--schedules", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--val-fraction", type=float, default=0.3)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="train-learning-"))
    data = Path(args.data) if args.data else tmp / "data"
    if not args.data:
        specs = [BatchSpec(seeds=tuple(range(k, args.pipelines, 2)), schedules_per_pipeline=args.schedules,
                           max_stages=3, output_size=(32, 24, 3)) for k in (0, 1)]
        with ThreadPoolExecutor(2) as pool:
            for s in pool.map(lambda s: generate_batch(s, data), specs):
                print(s)
    common = [f"data={data}", "target=host", f"epochs={args.epochs}", f"val_fraction={args.val_fraction}",
              "progress=false", f"tracking_uri=sqlite:///{tmp}/mlflow.db", f"checkpoint_dir={tmp}/ckpt",
              "register=false"]
    hybrid = train(load_config(TrainConfig, ROOT / "conf" / "train.yaml",
                               [*common, "loss=pairwise_rank", "weight_decay=0.001"]))
    print(hybrid.summary())
    val = TrainingData.load(DataConfig(path=str(data), target="host", val_fraction=args.val_fraction)).val
    untrained = ModelConfig(kind="hybrid", num_cores=get_target("host").cores)
    inits = [ranking_metrics(predict_groups(build_model(untrained, seed=s), val).values()) for s in range(1, 6)]
    pairwise = float(np.mean([m.pairwise_accuracy for m in inits]))
    top1 = float(np.mean([m.top1_score for m in inits]))
    v = hybrid.val
    print(f"random inits: pairwise {[round(m.pairwise_accuracy, 3) for m in inits]} mean {pairwise:.3f}, "
          f"top-1 {[round(m.top1_score, 3) for m in inits]} mean {top1:.3f}")
    print(f"hybrid: pairwise {v['val_pairwise_accuracy']:.3f} ({v['val_pairwise_accuracy'] - pairwise:+.3f} over "
          f"random inits), top-1 {v['val_top1_score']:.3f} ({v['val_top1_score'] - top1:+.3f})")
    mlp = train(load_config(TrainConfig, ROOT / "conf" / "train.yaml", [*common, "model=mlp", "loss=pairwise_rank"]))
    print(f"mlp: pairwise {mlp.val['val_pairwise_accuracy']:.3f}, top-1 {mlp.val['val_top1_score']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
