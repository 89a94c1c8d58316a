"""Feature schemas as objects and the FeatureExtractor role: the CPU schema's definitions, the registries and
their one-line errors, describe(), and a toy extractor added with one class and one registration line."""

from __future__ import annotations

import numpy as np
import pytest

from featurize import Features, featurize
from featurize import extractor as extractor_module
from featurize import schema as schema_module
from featurize.extractor import FeatureExtractor, get_extractor, register_extractor
from featurize.schema import (CPU_ADAMS2019, PIPELINE_ROWS, SCHEDULE_FEATURES, SCHEDULE_INDEX, SCHEMA,
                              SCHEMA_VERSION, FeatureDef, FeatureSchema, SchemaError, describe, get_schema,
                              register_schema)
from ir.sampling import random_schedule
from ir.target import get_target

from .fuzz_pipelines import random_test_pipeline


def test_the_cpu_schema_defines_every_feature_in_one_line():
    s = get_schema("cpu-adams2019")
    assert s is CPU_ADAMS2019 is SCHEMA and s.version == SCHEMA_VERSION == 2
    assert s.pipeline_shape == (40, 7) and s.schedule_width == 41
    assert s.schedule_names == SCHEDULE_FEATURES and s.row_names == PIPELINE_ROWS
    assert SCHEDULE_INDEX["working_set_at_root"] == 38  # Halide's 39 in Halide's order, then schedlab's two
    assert SCHEDULE_FEATURES[39:] == ("new_bytes_read_per_realization", "new_lines_read_per_realization")
    for group in (s.schedule_features, s.pipeline_rows, s.pipeline_columns):
        assert len({f.name for f in group}) == len(group)
        for f in group:
            assert isinstance(f, FeatureDef) and f.definition.strip() and "\n" not in f.definition
    assert s.definition("inlined_calls").startswith("calls to this stage inlined")
    with pytest.raises(SchemaError, match="has no feature 'nope'"):
        s.definition("nope")


def test_unknown_schema_is_one_line():
    with pytest.raises(SchemaError, match="unknown feature schema 'gpu-anderson2021'; registered: cpu-adams2019") as e:
        get_schema("gpu-anderson2021")
    assert "\n" not in str(e.value)


def test_describe_prints_features_by_name():
    p = random_test_pipeline(4)
    ln, _ = random_schedule(p, 7)
    f = featurize(p, ln)
    text = describe(f)
    func, stage = f.stages[0]
    assert text.splitlines()[0].startswith(f"{func}.s{stage}")
    points = f.by_name(func, stage)["points_computed_total"]
    line = next(l for l in text.splitlines() if l.strip().startswith("points_computed_total"))
    assert f"{points:.6g}" in line and CPU_ADAMS2019.definition("points_computed_total") in line
    assert f.describe(stage=0) == describe(f, stage=0)
    with pytest.raises(SchemaError, match="do not fit schema cpu-adams2019@2"):
        describe(Features(f.stages, f.pipeline, f.schedule[:, :5], f.inlined))


def test_the_cpu_extractor_is_featurize_and_other_kinds_are_one_line():
    p = random_test_pipeline(2)
    ln, _ = random_schedule(p, 3)
    ex = get_extractor("host")
    assert ex.target_kind == "cpu" and ex.schema is CPU_ADAMS2019 and get_extractor("cpu") is ex
    a, b = ex.extract(p, ln, get_target("host")), featurize(p, ln)
    assert a.stages == b.stages and np.array_equal(a.schedule, b.schedule) and np.array_equal(a.pipeline, b.pipeline)
    assert set(ex.pipeline_features(p.dag)) >= set(a.stages)
    with pytest.raises(SchemaError, match="no feature extractor for cuda targets; targets of kind cpu have one") as e:
        get_extractor("v100")
    assert "\n" not in str(e.value)
    with pytest.raises(SchemaError, match="no feature extractor for cuda targets"):
        featurize(p, ln, target="v100")


TOY = FeatureSchema("gpu-toy", 1, (FeatureDef("stages", "1 per stage"),), (FeatureDef("any", "any type"),),
                    (FeatureDef("points", "points computed by the stage"), FeatureDef("inlined", "1 if inlined")))


@pytest.fixture
def toy_registries(monkeypatch):
    monkeypatch.setattr(extractor_module, "_EXTRACTORS", dict(extractor_module._EXTRACTORS))
    monkeypatch.setattr(schema_module, "_SCHEMAS", dict(schema_module._SCHEMAS))


def test_a_toy_extractor_is_one_class_and_one_registration(toy_registries):
    register_schema(TOY)

    @register_extractor("cuda")
    class ToyGpuExtractor(FeatureExtractor):
        schema = TOY

        def extract(self, pipeline, loopnest, target, pending_parallel=frozenset(), complete=None, plan=None):
            cpu = featurize(pipeline, loopnest)  # reuse the CPU numbers to have something real
            pts = cpu.schedule[:, SCHEDULE_INDEX["points_computed_total"]]
            sched = np.stack([pts, np.asarray(cpu.inlined, np.float32)], axis=1)
            return Features(cpu.stages, np.ones((len(cpu.stages), 1, 1), np.float32), sched, cpu.inlined)

        def pipeline_features(self, dag):
            return {(n.name, s.index): np.ones((1, 1), np.float32) for n in dag.nodes for s in n.stages}

    p = random_test_pipeline(2)
    ln, _ = random_schedule(p, 3)
    ex = get_extractor("v100")
    assert isinstance(ex, ToyGpuExtractor) and ex.target_kind == "cuda" and get_schema("gpu-toy") is TOY
    f = featurize(p, ln, target="v100")  # featurize routes a cuda target to its extractor
    assert f.schedule.shape == (len(f.stages), TOY.schedule_width) and f.pipeline.shape[1:] == TOY.pipeline_shape
    assert "points computed by the stage" in describe(f, TOY)
    assert get_extractor("host").schema is CPU_ADAMS2019
