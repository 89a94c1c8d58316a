"""The datasets committed in datasets/ still read under this schedlab: their feature schema is the one the
extractor writes (a schema change must regenerate or migrate them), and each holds what datasets/README.md says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from featurize import get_extractor
from train.data import DataConfig, TrainingData

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name, backend, samples, pipelines", [
    ("random-host-halide", "halide", 2624, 164),
    ("random-host-halide-contrasts", "halide", 2544, 159),
    ("random-host-halide-avx2", "halide", 1840, 115),
    ("random-host-llvm", "llvm", 1840, 115),
    ("random-host-llvm-epyc", "llvm", 10240, 640),
    ("random-host-llvm-epyc-buffer-weights", "llvm", 3424, 214),
    ("random-host-halide-conv", "halide", 2576, 161),
    ("random-host-halide-dwmax", "halide", 2320, 145),
])
def test_a_committed_dataset_reads_and_matches_its_readme(name, backend, samples, pipelines):
    readme = (ROOT / "datasets" / "README.md").read_text()
    data = TrainingData.load(DataConfig(path=str(ROOT / "datasets" / name), target="host", val_fraction=0.2,
                                        max_spread=0.25))
    data.check_schema(get_extractor("host").schema)
    s = data.stats
    assert s.backend == backend and s.samples_read == samples and s.failed_dropped == 0
    assert s.train_pipelines + s.val_pipelines + s.pipelines_skipped == pipelines
    assert re.search(rf"fingerprint \| `{s.fingerprint}`", readme), s.fingerprint
