"""Pipelines to and from JSON, so that a dataset row can rebuild and recompile its program."""

from __future__ import annotations

from .errors import PipelineError
from .expr import BinOp, Call, Cast, Cmp, Const, Expr, Logical, Math, Not, RVar, Select, Var
from .func import Definition, Func, Input
from .types import type_from_name

FORMAT = 1


def expr_to_json(e: Expr):
    if isinstance(e, Const):
        return ["const", e.value, e.type.name]
    if isinstance(e, Var):
        return ["var", e.name]
    if isinstance(e, RVar):
        return ["rvar", e.rdom, e.index, [list(r) for r in e.ranges]]
    if isinstance(e, Cast):
        return ["cast", e.target.name, expr_to_json(e.value)]
    if isinstance(e, BinOp):
        return ["bin", e.op, e.type.name, expr_to_json(e.a), expr_to_json(e.b)]
    if isinstance(e, Cmp):
        return ["cmp", e.op, expr_to_json(e.a), expr_to_json(e.b)]
    if isinstance(e, Logical):
        return ["logic", e.op, expr_to_json(e.a), expr_to_json(e.b)]
    if isinstance(e, Not):
        return ["not", expr_to_json(e.a)]
    if isinstance(e, Select):
        return ["select", e.type.name, expr_to_json(e.cond), expr_to_json(e.t), expr_to_json(e.f)]
    if isinstance(e, Call):
        return ["call", e.target.name, e.type.name, [expr_to_json(a) for a in e.args]]
    if isinstance(e, Math):
        return ["math", e.fn, e.type.name, [expr_to_json(a) for a in e.args]]
    raise TypeError(f"cannot serialize {e!r}")  # pragma: no cover


def expr_from_json(o, targets: dict) -> Expr:
    tag = o[0]
    if tag == "const":
        t = type_from_name(o[2])
        v = o[1]
        return Const(float(v) if t.is_float else (bool(v) if t.is_bool else int(v)), t)
    if tag == "var":
        return Var(o[1])
    if tag == "rvar":
        return RVar(o[1], o[2], tuple(tuple(r) for r in o[3]))
    if tag == "cast":
        return Cast(type_from_name(o[1]), expr_from_json(o[2], targets))
    if tag == "bin":
        return BinOp(o[1], expr_from_json(o[3], targets), expr_from_json(o[4], targets), type_from_name(o[2]))
    if tag == "cmp":
        return Cmp(o[1], expr_from_json(o[2], targets), expr_from_json(o[3], targets))
    if tag == "logic":
        return Logical(o[1], expr_from_json(o[2], targets), expr_from_json(o[3], targets))
    if tag == "not":
        return Not(expr_from_json(o[1], targets))
    if tag == "select":
        return Select(expr_from_json(o[2], targets), expr_from_json(o[3], targets), expr_from_json(o[4], targets),
                      type_from_name(o[1]))
    if tag == "call":
        if o[1] not in targets:
            raise PipelineError(f"pipeline JSON calls {o[1]}, which it does not define")
        return Call(targets[o[1]], tuple(expr_from_json(a, targets) for a in o[3]), type_from_name(o[2]))
    if tag == "math":
        return Math(o[1], tuple(expr_from_json(a, targets) for a in o[3]), type_from_name(o[2]))
    raise PipelineError(f"pipeline JSON has an unknown expression tag {tag!r}")


def pipeline_to_json(p, include_name: bool = True) -> dict:
    obj = {
        "format": FORMAT,
        "inputs": [[i.name, i.type.name, i.dimensions] for i in p.inputs],
        "funcs": [
            {"name": f.name,
             "definitions": [{"lhs": [expr_to_json(a) for a in d.lhs], "value": expr_to_json(d.value),
                              "rdom": [[r.rdom, r.index, [list(x) for x in r.ranges]] for r in d.rdom]}
                             for d in f.definitions]}
            for f in reversed(p.funcs)],  # producers first
        "outputs": [[o.name, list(p.output_sizes[o.name])] for o in p.outputs],
    }
    if include_name:
        obj["name"] = p.name
    return obj


def pipeline_from_json(obj: dict):
    from .pipeline import Pipeline

    if obj.get("format") != FORMAT:
        raise PipelineError(f"pipeline JSON format {obj.get('format')!r} is not {FORMAT}; regenerate it")
    targets: dict = {name: Input(name, type_from_name(t), dims) for name, t, dims in obj["inputs"]}
    for fo in obj["funcs"]:
        targets[fo["name"]] = Func(fo["name"])
    for fo in obj["funcs"]:
        f = targets[fo["name"]]
        for do in fo["definitions"]:
            rdom = tuple(RVar(r[0], r[1], tuple(tuple(x) for x in r[2])) for r in do["rdom"])
            f.definitions.append(Definition(tuple(expr_from_json(a, targets) for a in do["lhs"]),
                                            expr_from_json(do["value"], targets), rdom, typed=True))
    outs = [targets[name] for name, _ in obj["outputs"]]
    return Pipeline(outs, {name: tuple(size) for name, size in obj["outputs"]}, name=obj.get("name", "pipeline"))
