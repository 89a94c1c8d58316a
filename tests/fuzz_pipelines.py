"""Small random pipelines that stress every corner of the DSL, for the backend property test and fuzzing.

Not the training-data generator (that models real imaging and learning code): these pipelines are
built to hit semantics and bounds corner cases — wrapping integer arithmetic mixed with floats,
division by zero, saturating casts, NaNs, stencils, down/upsampling, transposes, reductions, scans,
histograms, data-dependent gathers, skip connections and multiple outputs — at sizes small enough
to run hundreds of pairs in a test.
"""

from __future__ import annotations

import random

import ir
from ir import RDom, Var, cast, clamp, select
from ir.expr import Expr
from ir.types import f32, i8, i16, i32, u8, u16, u32

x, y = Var("x"), Var("y")
INT_TYPES = (u8, u16, u32, i8, i16, i32)
TYPES = INT_TYPES + (f32, f32, f32)
KINDS = ("pointwise", "stencil", "down", "up", "transpose", "reduce", "scan", "hist", "gather", "select",
         "math", "skip")


def random_test_pipeline(seed: int, size: tuple[int, int] | None = None, max_stages: int = 6) -> ir.Pipeline:
    rng = random.Random(seed)
    gen = _Gen(rng)
    n_inputs = rng.choice([1, 1, 2])
    for k in range(n_inputs):
        inp = ir.Input(f"in{k}", rng.choice(TYPES), 2)
        f = ir.Func(f"f{len(gen.funcs)}")
        f[x, y] = inp[x, y]
        gen.funcs.append(f)
    for _ in range(rng.randint(1, max_stages)):
        kind = rng.choice(KINDS)
        getattr(gen, "_" + kind)()
    outs = [gen.funcs[-1]]
    if len(gen.funcs) > 2 and rng.random() < 0.3:
        other = rng.choice(gen.funcs[1:-1])
        if other is not outs[0]:
            outs.append(other)
    srng = random.Random(seed * 7919 + 1)
    sizes = {}
    for o in outs:
        sizes[o] = size if size is not None else (srng.randint(5, 21), srng.randint(3, 13))
    return ir.Pipeline(outs, sizes, name=f"fuzz{seed}")


class _Gen:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.funcs: list[ir.Func] = []
        self.downs = 0

    # -- helpers ---------------------------------------------------------------------------------

    def pick(self) -> ir.Func:
        # prefer recent stages, but reach back for skip connections
        k = len(self.funcs)
        i = max(0, k - 1 - int(self.rng.expovariate(0.7)))
        return self.funcs[i]

    def new(self) -> ir.Func:
        f = ir.Func(f"f{len(self.funcs)}")
        self.funcs.append(f)
        return f

    def const(self, t) -> Expr:
        r = self.rng
        if t.is_float:
            return ir.expr.as_expr(r.choice([0.0, 0.5, 1.0, 2.0, -1.5, 3.0, 0.1]))
        v = r.choice([0, 1, 2, 3, 5, 7, 100, -1, -3, 255])
        if not t.can_represent(v):
            v = r.choice([0, 1, 2, 3])
        return cast(t, v)

    def expr(self, leaves: list[Expr], t, depth: int) -> Expr:
        """A random expression of type t over leaves (each cast to t)."""
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            if r.random() < 0.15:
                return self.const(t)
            return cast(t, r.choice(leaves))
        a = self.expr(leaves, t, depth - 1)
        b = self.expr(leaves, t, depth - 1)
        ops = ["add", "sub", "mul", "min", "max", "div", "mod", "select", "cast", "abs"]
        op = r.choice(ops)
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "min":
            return ir.min(a, b)
        if op == "max":
            return ir.max(a, b)
        if op == "div":
            return a / b
        if op == "mod":
            return a % b
        if op == "select":
            c = r.choice([a < b, a == b, (a > b) | (b == self.const(t)), ~(a <= b)])
            return select(c, a, b)
        if op == "cast":
            mid = r.choice(TYPES)
            return cast(t, cast(mid, a))
        if t.is_float:
            return ir.abs(a)
        return cast(t, ir.abs(a))

    def out_type(self, *fs):
        if self.rng.random() < 0.5:
            return fs[0].type
        return self.rng.choice(TYPES)

    # -- stage kinds -----------------------------------------------------------------------------

    def _pointwise(self):
        a, b = self.pick(), self.pick()
        t = self.out_type(a, b)
        f = self.new()
        f[x, y] = self.expr([a[x, y], b[x, y]], t, self.rng.randint(1, 3))

    def _stencil(self):
        a = self.pick()
        taps = [(self.rng.randint(-2, 2), self.rng.randint(-2, 2)) for _ in range(self.rng.randint(2, 5))]
        leaves = [a[x + dx, y + dy] for dx, dy in taps]
        t = self.out_type(a)
        f = self.new()
        if self.rng.random() < 0.5:
            acc = cast(t, leaves[0])
            for l in leaves[1:]:
                acc = acc + cast(t, l)
            f[x, y] = acc
        else:
            f[x, y] = self.expr(leaves, t, 2)

    def _down(self):
        if self.downs >= 2:
            return self._pointwise()
        self.downs += 1
        a = self.pick()
        o = self.rng.choice([0, 1])
        f = self.new()
        if self.rng.random() < 0.5:
            f[x, y] = a[2 * x + o, y]
        else:
            t = a.type
            f[x, y] = cast(t, a[x, 2 * y] + a[x, 2 * y + 1])

    def _up(self):
        a = self.pick()
        f = self.new()
        if self.rng.random() < 0.5:
            f[x, y] = a[x / 2, y]
        else:
            t = self.rng.choice([f32, i32])
            f[x, y] = (cast(t, a[x, (y + 1) / 2]) + cast(t, a[x, y / 2])) / cast(t, 2)

    def _transpose(self):
        a = self.pick()
        f = self.new()
        f[x, y] = a[y, x]

    def _reduce(self):
        a = self.pick()
        t = self.rng.choice([a.type, i32, f32])
        f = self.new()
        f[x, y] = self.const(t)
        if self.rng.random() < 0.5:
            r = RDom((-1, 3), name="r")
            f[x, y] += cast(t, a[x + r, y]) * self.const(t)
        else:
            r = RDom((0, 2), (-1, 2), name="r")
            f[x, y] = ir.max(f[x, y], cast(t, a[x + r.x, y + r.y]))

    def _scan(self):
        a = self.pick()
        f = self.new()
        f[x, y] = a[x, y]
        r = RDom((1, self.rng.randint(2, 9)), name="s")
        if self.rng.random() < 0.5:
            f[r, y] = f[r - 1, y] + f[r, y]
        else:
            f[x, r] = f[x, r - 1] * self.const(f.type) + f[x, r]

    def _hist(self):
        a = self.pick()
        f = self.new()
        f[x, y] = cast(i32, 0)
        n = self.rng.randint(3, 9)
        r = RDom((0, n), name="h")
        v = a[r, y]
        if a.type.is_float:
            v = v * 8.0
        f[clamp(cast(i32, v), 0, 7), y] += 1

    def _gather(self):
        a, b = self.pick(), self.pick()
        f = self.new()
        idx = b[x, y]
        if b.type.is_float:
            idx = idx * 16.0
        f[x, y] = a[clamp(cast(i32, idx), -2, 12), y]

    def _select(self):
        a, b = self.pick(), self.pick()
        t = self.out_type(a, b)
        f = self.new()
        f[x, y] = select(cast(t, a[x, y]) < cast(t, b[x, y]), cast(t, a[x, y - 1]), cast(t, b[x + 1, y]))

    def _math(self):
        a = self.pick()
        f = self.new()
        v = cast(f32, a[x, y])
        fn = self.rng.choice(["exp", "log", "sqrt", "sin", "tanh", "pow", "floor", "round"])
        if fn == "exp":
            f[x, y] = ir.exp(ir.min(v * 0.01, 5.0))
        elif fn == "log":
            f[x, y] = ir.log(ir.abs(v) + 1.0)
        elif fn == "sqrt":
            f[x, y] = ir.sqrt(ir.abs(v))
        elif fn == "pow":
            f[x, y] = ir.pow(ir.abs(v) * 0.01, 1.5)
        else:
            f[x, y] = getattr(ir, fn)(v * 0.3)

    def _skip(self):
        a, b = self.pick(), self.funcs[0]
        t = self.out_type(a, b)
        f = self.new()
        f[x, y] = cast(t, a[x, y]) + cast(t, b[x, y])
