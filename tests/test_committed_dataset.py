"""The dataset committed in datasets/ still reads under this schedlab: its feature schema is the one the
extractor writes (a schema change must regenerate or migrate it), and it holds what datasets/README.md says."""

from __future__ import annotations

import re
from pathlib import Path

from featurize import get_extractor
from train.data import DataConfig, TrainingData

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "datasets" / "random-host-halide"


def test_the_committed_dataset_reads_and_matches_its_readme():
    readme = (ROOT / "datasets" / "README.md").read_text()
    data = TrainingData.load(DataConfig(path=str(DATA), target="host", val_fraction=0.2, max_spread=0.25))
    data.check_schema(get_extractor("host").schema)
    s = data.stats
    assert s.backend == "halide" and s.samples_read == 2624 and s.failed_dropped == 0
    assert s.train_pipelines + s.val_pipelines + s.pipelines_skipped == 164
    assert re.search(rf"fingerprint \| `{s.fingerprint}`", readme), s.fingerprint


def test_the_contrasts_dataset_reads_and_matches_its_readme():
    readme = (ROOT / "datasets" / "README.md").read_text()
    data = TrainingData.load(DataConfig(path=str(ROOT / "datasets" / "random-host-halide-contrasts"), target="host",
                                        val_fraction=0.2, max_spread=0.25))
    data.check_schema(get_extractor("host").schema)
    s = data.stats
    assert s.backend == "halide" and s.samples_read == 2544 and s.failed_dropped == 0
    assert s.train_pipelines + s.val_pipelines + s.pipelines_skipped == 159
    assert re.search(rf"fingerprint \| `{s.fingerprint}`", readme), s.fingerprint
