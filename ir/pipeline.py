"""A Pipeline: the outputs of a program with their sizes, checked as a whole.

Building a Pipeline finds every Func and Input the outputs depend on, rejects undefined Funcs,
duplicate names and cycles, finishes typechecking, and runs bounds inference once (`dag`), so a bad
program fails here with one line naming the Func.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Iterable

import numpy as np

from .errors import PipelineError
from .expr import Call
from .func import Func, Input
from .typecheck import typecheck_definition, walk_definition


class Pipeline:
    def __init__(self, outputs: Func | Iterable[Func], output_sizes: dict, name: str = "pipeline"):
        outs = [outputs] if isinstance(outputs, Func) else list(outputs)
        if not outs:
            raise PipelineError("a Pipeline needs at least one output Func")
        for o in outs:
            if not isinstance(o, Func):
                raise PipelineError(f"pipeline outputs must be Funcs, got {o!r}")
            if not o.defined:
                raise PipelineError(f"output {o.name} has no definition")
        if len({o.name for o in outs}) != len(outs):
            raise PipelineError("the same output Func is listed twice")
        self.name = name
        self.outputs: tuple[Func, ...] = tuple(outs)
        self.output_sizes: dict[str, tuple[int, ...]] = self._sizes(output_sizes)
        self.funcs, self.inputs = self._collect()
        self._typecheck()
        _ = self.dag  # bounds inference now, so an unbounded access fails at definition time

    # -- construction checks ---------------------------------------------------------------------

    def _sizes(self, output_sizes: dict) -> dict[str, tuple[int, ...]]:
        if not isinstance(output_sizes, dict):
            raise PipelineError("output_sizes must be a dict {output Func: (extent, ...)}")
        names = {o.name for o in self.outputs}
        sizes: dict[str, tuple[int, ...]] = {}
        for k, v in output_sizes.items():
            key = k.name if isinstance(k, Func) else k
            if key not in names:
                raise PipelineError(f"output_sizes names {key}, which is not an output of the pipeline")
            sizes[key] = tuple(v) if isinstance(v, (tuple, list)) else (v,)
        for o in self.outputs:
            if o.name not in sizes:
                raise PipelineError(f"output {o.name} has no size; add it to output_sizes")
            s = sizes[o.name]
            if len(s) != o.dimensions:
                raise PipelineError(f"output {o.name} has {o.dimensions} dimensions but its size {s} has {len(s)}")
            if not all(isinstance(e, (int, np.integer)) and e > 0 for e in s):
                raise PipelineError(f"output {o.name}: size {s} must be positive integers")
            sizes[o.name] = tuple(int(e) for e in s)
        return sizes

    def _collect(self) -> tuple[tuple[Func, ...], tuple[Input, ...]]:
        funcs: dict[str, Func] = {}
        inputs: dict[str, Input] = {}
        order: list[Func] = []  # post-order: producers before consumers
        state: dict[int, int] = {}  # 1 = on stack, 2 = done
        path: list[str] = []

        def visit(f: Func, caller: Func | None):
            if f.name in funcs and funcs[f.name] is not f:
                raise PipelineError(f"two different Funcs are named {f.name}; give them distinct names")
            if f.name in inputs:
                raise PipelineError(f"{f.name} names both a Func and an Input")
            funcs[f.name] = f
            st = state.get(id(f))
            if st == 2:
                return
            if st == 1:
                cyc = path[path.index(f.name):] + [f.name]
                raise PipelineError(f"{f.name}: cycle in the pipeline ({' -> '.join(cyc)})")
            if not f.defined:
                raise PipelineError(f"Func {f.name} is called by {caller.name if caller else '?'} but has no definition")
            state[id(f)] = 1
            path.append(f.name)
            for d in f.definitions:
                for n in walk_definition(d):
                    if isinstance(n, Call):
                        t = n.target
                        if isinstance(t, Input):
                            if t.name in inputs and inputs[t.name] is not t:
                                raise PipelineError(f"two different Inputs are named {t.name}")
                            if t.name in funcs:
                                raise PipelineError(f"{t.name} names both a Func and an Input")
                            inputs[t.name] = t
                        elif t is not f:
                            visit(t, f)
            path.pop()
            state[id(f)] = 2
            order.append(f)

        for o in self.outputs:
            visit(o, None)
        topo = tuple(reversed(order))  # consumers first: outputs lead
        return topo, tuple(sorted(inputs.values(), key=lambda i: i.name))

    def _typecheck(self) -> None:
        for f in reversed(self.funcs):  # producers first
            for i in range(len(f.definitions)):
                typecheck_definition(f, i)

    # -- derived data ----------------------------------------------------------------------------

    @functools.cached_property
    def dag(self):
        from .dag import FunctionDAG

        return FunctionDAG(self)

    def func(self, name: str) -> Func:
        for f in self.funcs:
            if f.name == name:
                return f
        raise KeyError(f"no Func named {name!r} in pipeline {self.name}")

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(o.name for o in self.outputs)

    @property
    def input_regions(self) -> dict[str, tuple[tuple[int, int], ...]]:
        """For each Input, the (min, extent) per dimension the outputs require."""
        return {name: tuple((lo, hi - lo + 1) for lo, hi in box) for name, box in self.dag.input_regions.items()}

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Random input buffers covering the required regions, indexed [x, y, ...] from each region's min.

        Arrays are Fortran-ordered (x is the contiguous dimension). Floats are uniform in [0, 1),
        integers uniform over their type, bools fair coins.
        """
        rng = np.random.default_rng(seed)
        out = {}
        for inp in self.inputs:
            shape = tuple(ext for _, ext in self.input_regions[inp.name])
            t = inp.type
            if t.is_float:
                a = rng.random(shape, dtype=np.float64).astype(t.dtype)
            elif t.is_bool:
                a = rng.integers(0, 2, shape).astype(bool)
            else:
                a = rng.integers(int(t.min), int(t.max) + 1, shape, dtype=np.int64).astype(t.dtype)
            out[inp.name] = np.asfortranarray(a)
        return out

    def to_json(self) -> dict:
        from .serialize import pipeline_to_json

        return pipeline_to_json(self)

    @staticmethod
    def from_json(obj: dict) -> "Pipeline":
        from .serialize import pipeline_from_json

        return pipeline_from_json(obj)

    @functools.cached_property
    def fingerprint(self) -> str:
        """A stable hash of the program and its sizes (the dataset's pipeline id)."""
        import json

        from .serialize import pipeline_to_json

        blob = json.dumps(pipeline_to_json(self, include_name=False), sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def __str__(self) -> str:
        from .printer import pipeline_to_str

        return pipeline_to_str(self)

    def __repr__(self) -> str:
        return f"Pipeline({self.name!r}, outputs={list(self.output_names)}, {len(self.funcs)} funcs)"
