"""Readable text for expressions and pipelines, in the DSL's own syntax."""

from __future__ import annotations

from .expr import (AsFuncType, BinOp, Call, Cast, Cmp, Const, Expr, FloorDiv, Logical, Math, Not, RVar,
                   Select, Var, _ClampBound)

_SYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%",
        "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "&", "or": "|"}
_PREC = {"or": 1, "and": 2, "eq": 4, "ne": 4, "lt": 4, "le": 4, "gt": 4, "ge": 4,
         "add": 5, "sub": 5, "mul": 6, "div": 6, "mod": 6}


def expr_to_str(e: Expr) -> str:
    return _s(e, 0)


def _s(e: Expr, parent: int) -> str:
    if isinstance(e, Const):
        if e.type is not None and e.type.is_float:
            return repr(float(e.value)) + ("f" if e.type.bits == 32 else "")
        if e.type is not None and e.type.is_bool:
            return "True" if e.value else "False"
        if e.type is not None and e.type.name != "i32":
            return f"{e.type}({e.value})"
        return str(e.value)
    if isinstance(e, (Var, RVar)):
        return e.name
    if isinstance(e, Cast):
        return f"cast({e.target}, {_s(e.value, 0)})"
    if isinstance(e, (BinOp, Cmp, Logical)) and e.op in _SYM:
        p = _PREC[e.op]
        out = f"{_s(e.a, p)} {_SYM[e.op]} {_s(e.b, p + 1)}"
        return f"({out})" if p < parent else out
    if isinstance(e, BinOp):  # min / max
        return f"{e.op}({_s(e.a, 0)}, {_s(e.b, 0)})"
    if isinstance(e, FloorDiv):
        out = f"{_s(e.a, 6)} // {_s(e.b, 7)}"
        return f"({out})" if 6 < parent else out
    if isinstance(e, Not):
        return f"~{_s(e.a, 9)}"
    if isinstance(e, Select):
        return f"select({_s(e.cond, 0)}, {_s(e.t, 0)}, {_s(e.f, 0)})"
    if isinstance(e, Call):
        return f"{e.target.name}[{', '.join(_s(a, 0) for a in e.args)}]"
    if isinstance(e, Math):
        return f"{e.fn}({', '.join(_s(a, 0) for a in e.args)})"
    if isinstance(e, AsFuncType):
        return _s(e.value, parent)
    if isinstance(e, _ClampBound):
        return _s(e.value, parent)
    return f"<{type(e).__name__}>"  # pragma: no cover


def definition_to_str(func, index: int) -> str:
    d = func.definitions[index]
    lhs = ", ".join(_s(a, 0) for a in d.lhs)
    return f"{func.name}[{lhs}] = {_s(d.value, 0)}"


def pipeline_to_str(pipeline) -> str:
    """The pipeline as DSL source: inputs, then every definition from the inputs toward the outputs."""
    lines = [f"# pipeline {pipeline.name}"]
    for inp in pipeline.inputs:
        lo_ext = pipeline.input_regions[inp.name]
        region = " x ".join(f"[{lo}, {lo + ext})" for lo, ext in lo_ext)
        lines.append(f"{inp.name} = Input({inp.name!r}, {inp.type}, {inp.dimensions})   # needs {region}")
    for f in reversed(pipeline.funcs):
        rdoms = {}
        for d in f.updates:
            for rv in d.rdom:
                rdoms[rv.rdom] = rv.ranges
        for name, ranges in rdoms.items():
            lines.append(f"{name} = RDom({', '.join(f'({lo}, {ext})' for lo, ext in ranges)}, name={name!r})")
        tag = ""
        if f.name in pipeline.output_sizes:
            tag = f"   # output {tuple(pipeline.output_sizes[f.name])}"
        for i in range(len(f.definitions)):
            lines.append(definition_to_str(f, i) + (f"   # {f.type}" if i == 0 else "") + (tag if i == 0 else ""))
    return "\n".join(lines)
