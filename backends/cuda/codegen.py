"""Lowering a GPU (pipeline, LoopNest) to CUDA C: one kernel per stage of each Func computed at root.

A kernel runs one root stage chain. Its outermost (BLOCK) level's pure loops are the grid, flattened into
blockIdx.x; every level below runs inside one block, walked as `ir.plan.Plan` describes it (the same walk as the
numba backend's codegen). At block level, a THREAD level is one thread phase: its pure loops are the block's
threads (flattened into threadIdx.x; a count known only at run time is guarded), with the deeper levels and
points as serial code per thread; a chain that reaches its points with no THREAD level is run by one thread.
Every phase ends with `__syncthreads()`, so a producer's tile in shared memory is complete before a consumer
phase reads it and is read before the next iteration of a block-level loop overwrites it. Funcs stored at root
are global buffers, inside a block shared arrays, inside a thread per-thread arrays (`ir.gpu.memory_space`).
Outputs computed over a larger region than their size are copied out by one more kernel.

Every kernel takes every buffer (inputs, outputs, global intermediates) in one order, so the host program is a
list of (kernel, grid, block) launches over the same argument list: CuPy runs it on a GPU, the CPU emulation
runs the very same text through the prelude's loops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ir.dag import FunctionDAG
from ir.errors import ScheduleError
from ir.expr import Call
from ir.gpu import GLOBAL, REGISTER, SHARED, memory_space, threads_of
from ir.loopnest import LoopKind, LoopNest
from ir.plan import FuncPlan, Level, Plan
from ir.symbolic import FloorDiv, Lin, MinMax, Sym

from ..numba.codegen import MAX_POINT_STATEMENTS
from ..numba.exprgen import Frame, Value
from .cexpr import CPointEmitter, ctype
from .prelude import PRELUDE

COPY_THREADS = 256  # threads per block of the copy-out kernels


@dataclass(frozen=True)
class Buffer:
    """One kernel argument: an input, an output, or a Func stored at root in global memory."""

    name: str  # the argument's name in every kernel
    role: str  # "input" | "output" | "global"
    func: str  # the Input or Func it holds
    dtype: str  # numpy dtype name
    size: int  # elements


@dataclass(frozen=True)
class Launch:
    kernel: str
    grid: int  # blocks (blockIdx.x)
    block: int  # threads per block (threadIdx.x)
    shared_bytes: int  # static shared memory the kernel declares


@dataclass(frozen=True)
class CudaSource:
    source: str  # prelude + kernels + the CPU launchers
    name: str
    buffers: tuple[Buffer, ...]  # every kernel's arguments, in order
    launches: tuple[Launch, ...]  # the host program, in order

    @property
    def kernels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(l.kernel for l in self.launches))


def generate(plan: Plan, name: str = "kernel") -> CudaSource:
    return _Generator(plan, name).run()


def c_code(x: Lin) -> str:
    """C for a symbolic form over loop indices (64-bit integer arithmetic)."""
    x = Lin.of(x)
    parts = []
    for a, c in x.terms:
        s = _atom(a)
        parts.append(s if c == 1 else f"-{s}" if c == -1 else f"{c}LL * {s}")
    if x.const or not parts:
        parts.append(f"{x.const}LL")
    return "(" + " + ".join(parts).replace("+ -", "- ") + ")"


def _atom(a) -> str:
    if isinstance(a, Sym):
        return a.name
    if isinstance(a, FloorDiv):
        return f"sl_floordiv({c_code(a.num)}, {a.q}LL)"
    if isinstance(a, MinMax):
        out = c_code(a.args[0])
        for x in a.args[1:]:
            out = f"sl_{a.kind}({out}, {c_code(x)})"
        return out
    raise TypeError(f"cannot render {a!r}")  # pragma: no cover


class _Generator:
    def __init__(self, plan: Plan, name: str):
        self.plan = plan
        self.dag: FunctionDAG = plan.dag
        self.name = name
        p = self.dag.pipeline
        self.inputs = [i.name for i in p.inputs]
        self.outputs = list(p.output_names)
        self.internal = list(self.dag.internal_outputs)
        self.inlined = {f: self.dag.node(f).func for f in plan.inlined}
        self.space = {f: memory_space(plan, fp) for f, fp in plan.funcs.items() if not fp.inlined}
        self.lines: list[str] = []
        self.indent = 1
        self.temps = 0
        self.statements = 0
        self.threads = 1  # the widest thread phase of the kernel being written
        self.shared = 0  # bytes of shared memory the kernel being written declares

    # -- buffers ---------------------------------------------------------------------------------

    def _buffers(self) -> list[Buffer]:
        out = []
        for n in self.inputs:
            inp = self.dag.inputs[n]
            size = math.prod(hi - lo + 1 for lo, hi in inp.region)
            out.append(Buffer(f"in_{n}", "input", n, inp.type.dtype.name, size))
        for n in self.outputs:
            size = math.prod(self.dag.pipeline.output_sizes[n])
            out.append(Buffer(f"out_{n}", "output", n, self.dag.node(n).type.dtype.name, size))
        for f, fp in self.plan.funcs.items():
            if not fp.inlined and self.space[f] == GLOBAL and (f not in self.outputs or f in self.internal):
                out.append(Buffer(f"g_{f}", "global", f, fp.node.type.dtype.name, fp.allocation_points))
        return out

    def _params(self, buffers: list[Buffer]) -> str:
        ps = []
        for b in buffers:
            t = ctype(self.dag.inputs[b.func].type if b.role == "input" else self.dag.node(b.func).type)
            ps.append(f"{'const ' if b.role == 'input' else ''}{t}* __restrict__ {b.name}")
        return ", ".join(ps)

    # -- output ----------------------------------------------------------------------------------

    def line(self, s: str) -> None:
        self.lines.append("    " * self.indent + s)

    def _fresh(self) -> str:
        self.temps += 1
        return f"_t{self.temps}"

    def run(self) -> CudaSource:
        buffers = self._buffers()
        params = self._params(buffers)
        args = ", ".join(b.name for b in buffers)
        kernels: list[str] = []
        launches: list[Launch] = []
        for k, c in enumerate(self.plan.root.children):  # each a chain head: one kernel per root stage
            lvl = self.plan.level(c)
            kname = f"{self.name}_{k}_{c.func}_s{c.stage}"
            body, grid = self._kernel(lvl)
            kernels.append(self._kernel_text(kname, params, body))
            launches.append(Launch(kname, grid, self.threads, self.shared))
        for o in self.internal:
            kname = f"{self.name}_copy_{o}"
            body, grid = self._copy_out(o)
            kernels.append(self._kernel_text(kname, params, body))
            launches.append(Launch(kname, grid, COPY_THREADS, 0))
        cpu = ["#if !defined(__CUDACC__)"]
        for kname in dict.fromkeys(l.kernel for l in launches):
            cpu.append(f'extern "C" void {kname}_cpu(sl_i64 grid, {params}) {{\n'
                       f"    for (sl_i64 b = 0; b < grid; ++b) {{ sl_block_index_ = b; {kname}({args}); }}\n}}")
        cpu.append("#endif")
        src = "\n".join([PRELUDE, *kernels, *cpu]) + "\n"
        return CudaSource(src, self.name, tuple(buffers), tuple(launches))

    def _kernel_text(self, kname: str, params: str, body: list[str]) -> str:
        return "\n".join([f"SL_KERNEL {kname}({params}) {{", f"    SL_BLOCK({self.threads});", *body, "}", ""])

    def _root_storage(self) -> None:
        """Every kernel addresses the Funcs stored at root through the same names."""
        for f in self.plan.root.store_at:
            fp = self.plan.func(f)
            t = ctype(fp.node.type)
            src = f"out_{f}" if f in self.outputs and f not in self.internal else f"g_{f}"
            self.line(f"[[maybe_unused]] {t}* const {f}_buf = {src};")
            self._offset(fp)

    def _offset(self, fp: FuncPlan) -> None:
        off = " + ".join(f"{c_code(lo)} * {s}LL" for (lo, _), s in zip(fp.storage, fp.strides)) or "0LL"
        self.line(f"[[maybe_unused]] const sl_i64 {fp.name}_off = -({off});")

    def _kernel(self, lvl: Level) -> tuple[list[str], int]:
        """The body of the kernel running one root chain, and its grid."""
        self.lines, self.indent, self.threads, self.shared = [], 1, 1, 0
        n = lvl.node
        if n.kind is not LoopKind.BLOCK:
            raise ScheduleError(f"{n.func}.s{n.stage}: a Func computed at root starts with block loops")
        self._root_storage()
        blocks = [lvl.loops[j] for j in lvl.order if lvl.loops[j].pure and lvl.loops[j].count > 1]  # RVars: serial
        for lp in blocks:
            if not lp.count_form.is_const:  # pragma: no cover - root regions are exact
                raise ScheduleError("block loops need constant trip counts")
        grid = math.prod(lp.count for lp in blocks)
        self._decode("SL_BLOCK_INDEX", blocks)
        if n.innermost:
            self._phase_of_one(lvl, skip={id(lp) for lp in blocks})
        else:
            self._node_body(n, thread=False)
        return self.lines, grid

    def _decode(self, linear: str, loops: list) -> None:
        """Loop indices from a linear block or thread index, the innermost loop fastest."""
        rest = linear
        for k, lp in enumerate(reversed(loops)):
            idx = self._index(lp)
            if k == len(loops) - 1:
                self.line(f"const sl_i64 {idx} = {rest};")
            else:
                self.line(f"const sl_i64 {idx} = {rest} % {lp.count}LL;")
                nxt = self._fresh()
                self.line(f"const sl_i64 {nxt} = {rest} / {lp.count}LL;")
                rest = nxt

    # -- tree walk -------------------------------------------------------------------------------

    def _node_body(self, n: LoopNest, thread: bool) -> None:
        for f in n.store_at:
            self._allocate(self.plan.func(f), thread)
        for c in n.children:
            if (c.func, c.stage) == (n.func, n.stage):
                self._level(self.plan.level(c), thread)
            else:
                self._level(self.plan.level(c).chain.levels[0], thread)

    def _allocate(self, fp: FuncPlan, thread: bool) -> None:
        t = ctype(fp.node.type)
        size = fp.allocation_points
        if self.space[fp.name] == SHARED:
            self.line(f"SL_SHARED({t}, {fp.name}_buf, {size});")
            self.shared += size * fp.node.type.bytes
        else:
            assert self.space[fp.name] == REGISTER and thread
            self.line(f"{t} {fp.name}_buf[{size}];")
        self._offset(fp)

    def _level(self, lvl: Level, thread: bool) -> None:
        n = lvl.node
        if not thread:
            if n.kind is LoopKind.THREAD:
                self._thread_phase(lvl)
                return
            if n.innermost:
                self._phase_of_one(lvl)
                return
        if n.innermost:
            self._innermost(lvl)
            return
        depth0 = self.indent
        opened = 0
        for j in lvl.order:
            lp = lvl.loops[j]
            if lp.count > 1:
                idx = self._index(lp)
                self.line(f"for (sl_i64 {idx} = 0; {idx} < {self._count(lp)}; ++{idx}) {{")
                self.indent += 1
                opened += 1
        self._node_body(n, thread)
        self._close(opened, depth0)

    def _close(self, opened: int, depth0: int) -> None:
        for _ in range(opened):
            self.indent -= 1
            self.line("}")
        self.indent = depth0

    def _thread_phase(self, lvl: Level) -> None:
        """A THREAD level at block level: its pure loops are the block's threads."""
        n = lvl.node
        threads = [lvl.loops[j] for j in lvl.order if lvl.loops[j].pure and lvl.loops[j].count > 1]
        total = threads_of(lvl)
        self.threads = max(self.threads, total)
        depth0 = self.indent
        self.line(f"SL_THREADS(sl_t, {total}) {{")
        self.indent += 1
        self._decode("sl_t", threads)
        guards = [f"{self._index(lp)} < {c_code(lp.count_form)}" for lp in threads if not lp.count_form.is_const]
        opened = 1
        if guards:
            self.line(f"if ({' && '.join(guards)}) {{")
            self.indent += 1
            opened += 1
        if n.innermost:
            self._innermost(lvl, skip={id(lp) for lp in threads})
        else:
            self._node_body(n, thread=True)
        self._close(opened, depth0)
        self.line("__syncthreads();")

    def _phase_of_one(self, lvl: Level, skip: frozenset | set = frozenset()) -> None:
        """Points reached at block level with no THREAD level: one thread computes them (`skip`: the loops
        that are the kernel's blocks, when the BLOCK level itself computes points)."""
        depth0 = self.indent
        self.line("SL_THREADS(sl_t, 1) {")
        self.indent += 1
        self._innermost(lvl, skip)
        self._close(1, depth0)
        self.line("__syncthreads();")

    def _count(self, lp) -> str:
        return f"{lp.count}LL" if lp.count_form.is_const else c_code(lp.count_form)

    def _index(self, lp) -> str:
        syms = lp.index.symbols()
        assert len(syms) == 1
        return next(iter(syms))

    def _innermost(self, lvl: Level, skip: frozenset | set = frozenset()) -> None:
        """The point loops inside one thread: serial (RVars in RDom order), unrolled where the level is."""
        n = lvl.node
        depth0 = self.indent
        opened = 0
        for j in lvl.order:
            lp = lvl.loops[j]
            if id(lp) in skip or lp.count <= 1:
                continue
            if n.kind is LoopKind.UNROLLED and lp.pure and lp.count_form.is_const:
                self.line("SL_UNROLL")
            idx = self._index(lp)
            self.line(f"for (sl_i64 {idx} = 0; {idx} < {self._count(lp)}; ++{idx}) {{")
            self.indent += 1
            opened += 1
        self._point(lvl)
        self._close(opened, depth0)

    # -- points ----------------------------------------------------------------------------------

    def _point(self, lvl: Level) -> None:
        stage = lvl.chain.stage
        fp = self.plan.func(stage.func)
        em = CPointEmitter(self.line, self._load, self.inlined, self._fresh)
        env: dict[str, Value] = {}
        before = len(self.lines)
        for lp, l in zip(lvl.loops, stage.loop):
            lo, hi = (fp.node.region[l.func_dim] if l.pure else l.rdom_range)
            name = self._fresh()
            self.line(f"const sl_i64 {name} = {c_code(lp.base)};")
            env[l.name] = Value(name, lo, hi)
        frame = Frame(env, ())
        coords = [em.value(a, frame).code for a in stage.lhs]
        val = em.value(stage.value, frame)
        self.line(f"{self._ref(fp.name, self._index_code(fp.name, coords))} = ({ctype(fp.node.type)}){val.code};")
        self.statements += len(self.lines) - before
        if self.statements > MAX_POINT_STATEMENTS:
            raise ScheduleError(f"{fp.name}: the inlined code per point exceeds {MAX_POINT_STATEMENTS} "
                                "statements; compute some inlined Funcs instead")

    def _ref(self, f: str, idx: str) -> str:
        return f"SL_SH({f}_buf, {idx})" if self.space[f] == SHARED else f"{f}_buf[{idx}]"

    def _index_code(self, f: str, coords: list[str]) -> str:
        fp = self.plan.func(f)
        terms = [f"{f}_off"]
        for c, s in zip(coords, fp.strides):
            terms.append(c if s == 1 else f"{c} * {s}LL")
        return " + ".join(terms)

    def _load(self, call: Call, args: list[Value]) -> str:
        name = call.target.name
        coords = [a.code for a in args]
        if call.is_input:
            region = self.dag.inputs[name].region
            stride, terms, const = 1, [], 0
            for (lo, hi), c in zip(region, coords):
                terms.append(c if stride == 1 else f"{c} * {stride}LL")
                const -= lo * stride
                stride *= hi - lo + 1
            if const:
                terms.append(f"({const}LL)")
            return f"in_{name}[{' + '.join(terms)}]"
        return self._ref(name, self._index_code(name, coords))

    def _copy_out(self, o: str) -> tuple[list[str], int]:
        self.lines, self.indent, self.threads, self.shared = [], 1, COPY_THREADS, 0
        sizes = self.dag.pipeline.output_sizes[o]
        total = math.prod(sizes)
        fp = self.plan.func(o)
        self.line(f"[[maybe_unused]] {ctype(fp.node.type)}* const {o}_buf = g_{o};")
        self._offset(fp)
        self.line(f"SL_THREADS(sl_t, {COPY_THREADS}) {{")
        self.indent += 1
        self.line(f"const sl_i64 _i = SL_BLOCK_INDEX * {COPY_THREADS}LL + sl_t;")
        self.line(f"if (_i < {total}LL) {{")
        self.indent += 1
        coords, rest = [], "_i"
        for d, e in enumerate(sizes):
            self.line(f"const sl_i64 _o{d} = {rest} % {e}LL;")
            coords.append(f"_o{d}")
            if d < len(sizes) - 1:
                self.line(f"const sl_i64 _r{d} = {rest} / {e}LL;")
                rest = f"_r{d}"
        self.line(f"out_{o}[_i] = {o}_buf[{self._index_code(o, coords)}];")
        self.indent -= 1
        self.line("}")
        self.indent -= 1
        self.line("}")
        return self.lines, -(-total // COPY_THREADS)
