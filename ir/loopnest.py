"""LoopNest: the one schedule representation, an immutable tree of loop levels
(seeds/adams2019 §3.1, Fig. 2-3; Halide's `LoopNest.h`).

Each node is one level of the loops of one stage of a Func. A stage's levels form a chain from its
outermost tile loop down to its innermost loop, which computes points. Where a chain hangs in the
tree says where the stage is computed: a child of the root is computed at root; a child of another
stage's node is computed once per iteration of that node's loops (compute_at). A Func's storage is
allocated at the node listing it in `store_at`: its compute site, or a coarser level for sliding
windows. Inlined Funcs have no nodes; the innermost loops that call them list them in `inlined`.

`size` gives, per loop of the stage (its pure Vars, then its RVars), the iterations at this level:
the number of tiles, not the size of each tile. The tile one iteration covers is the product of the
sizes of the deeper levels of the same chain; the outermost level covers the stage's region, with
tails shifted inwards for pure definitions (Halide's ShiftInwards) and guarded for updates. Loops at
one level run with the vectorized dimension innermost and the others in storage order; RVars are
iterated only by the innermost level, in RDom order, outside SIMD or unrolled loops and innermost
otherwise (adams2019 §3.3).

Each level has one `LoopKind` (anderson2021's `GPU_parallelism`): how its pure loops run. SERIAL,
PARALLEL (the level's pure loops fused into one parallel loop), UNROLLED (at the innermost level: the pure
non-SIMD loops fully unrolled), VECTORIZED (at the innermost level: serial loops around one SIMD loop);
for GPU targets BLOCK, THREAD and SIMD (vectorized inside a thread). Which loop runs as SIMD lanes is
`vectorized_loop` (Halide's vectorized_loop_index): a PARALLEL or UNROLLED innermost level may carry one
too; a SERIAL level that carries one is VECTORIZED (normalized on construction, so equal schedules are
equal trees). Which kinds a target allows is its kind's business (ir.target). Fingerprints of trees of
CPU kinds hash their format-1 JSON, so schedules stored before loop kinds keep their ids.

Queries come first; the few methods that build new nests follow.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import FrozenInstanceError
from typing import Iterator

try:
    import cython
except ImportError:  # pure Python without Cython: the typing decorators do nothing
    from .cython_pure import cython
from .cython_pure import set_frozen_fields

FORMAT = 2  # 2: a "kind" per level; 1 (booleans parallel / unrolled) still loads


_FIELDS = ("func", "stage", "size", "children", "inlined", "store_at", "innermost", "kind", "vector_dim",
           "vectorized_loop")  # the value: compared, hashed and pickled
_DERIVED = ("parallel", "unrolled")  # what search reads of `kind` per node per state: set on construction
_EMPTY_STRUCTURE = hash(())  # structural_hash below depth 0


class LoopKind(enum.Enum):
    """How a level's loops run (one per level; anderson2021 §6's GPU_parallelism)."""

    SERIAL = "serial"
    PARALLEL = "parallel"  # CPU: the level's pure loops as one fused parallel loop (one task per iteration)
    VECTORIZED = "vectorized"  # innermost level: serial loops around one SIMD loop (`vectorized_loop`)
    UNROLLED = "unrolled"  # innermost level: pure non-SIMD loops fully unrolled
    BLOCK = "block"  # GPU: the level's pure loops are the grid's thread blocks
    THREAD = "thread"  # GPU: the level's pure loops are the threads of a block
    SIMD = "simd"  # GPU: serial loops inside a thread, one of them vectorized (`vectorized_loop`)

    def __repr__(self) -> str:
        return f"LoopKind.{self.name}"

    # Members are singletons compared by identity, so identity's hash is theirs too; Enum's own __hash__ is a Python
    # function (hash of the name), and every new node's check looks its kind up in KIND_VALUES
    __hash__ = object.__hash__


# the members as module constants (here and in ir.builder): a member read off an Enum class is a slow attribute
# look-up (and `.value` a Python-level property), and constructing and hashing nodes reads them on every placement
SERIAL, PARALLEL = LoopKind.SERIAL, LoopKind.PARALLEL
VECTORIZED, UNROLLED = LoopKind.VECTORIZED, LoopKind.UNROLLED
KIND_VALUES: dict[LoopKind, str] = {k: k.value for k in LoopKind}


class LoopNest:
    """One level of the loop tree: a frozen value, compared and hashed by its fields (a plain slotted class, not a
    dataclass: ir/loopnest.pxd declares it as a Cython extension type, whose fields the compiled hot modules read
    as struct members; Cython's own dataclass takes no `slots`)."""

    # _hashes: structural_hash's memo, _within: stages_within's; neither is part of the value
    __slots__ = _FIELDS + _DERIVED + ("_hashes", "_within")

    def __init__(self, func: str | None = None, stage: int = 0, size: tuple[int, ...] = (),
                 children: tuple["LoopNest", ...] = (), inlined: tuple[tuple[str, int], ...] = (),
                 store_at: tuple[str, ...] = (), innermost: bool = False, kind: LoopKind = LoopKind.SERIAL,
                 vector_dim: int = -1, vectorized_loop: int = -1):
        kind = kind if isinstance(kind, LoopKind) else LoopKind(kind)
        if kind is SERIAL and vectorized_loop >= 0:
            kind = VECTORIZED
        elif kind is VECTORIZED and vectorized_loop < 0:
            kind = SERIAL  # a VECTORIZED level with no SIMD loop runs serially
        _fill(self, func, stage, size, children, inlined, store_at, innermost, kind, vector_dim, vectorized_loop)

    # func: the Func whose stage these loops iterate; None at the root
    # stage: which stage of it (0 = pure definition)
    # size: iterations of each loop at this level: the number of tiles
    # children: in execution order: producers computed here, then the next level
    # inlined: Funcs inlined into this innermost loop, with calls per point
    # store_at: Funcs allocated once per iteration of this level
    # innermost: the level that computes points; it has no children
    # kind: how this level's loops run
    # vector_dim: the Func dimension stored innermost and run as SIMD lanes (-1: none)
    # vectorized_loop: at the innermost level, the loop index run as SIMD lanes (-1: none)
    # parallel: kind is PARALLEL, this level's pure loops run as one fused parallel loop (CPU)
    # unrolled: kind is UNROLLED, at the innermost level the pure non-SIMD loops are fully unrolled

    def _fields(self) -> tuple:
        return (self.func, self.stage, self.size, self.children, self.inlined, self.store_at, self.innermost,
                self.kind, self.vector_dim, self.vectorized_loop)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __ne__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() != other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"LoopNest(func={self.func!r}, stage={self.stage!r}, size={self.size!r}, children={self.children!r}, "
                f"inlined={self.inlined!r}, store_at={self.store_at!r}, innermost={self.innermost!r}, "
                f"kind={self.kind!r}, vector_dim={self.vector_dim!r}, vectorized_loop={self.vectorized_loop!r})")

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return (LoopNest, self._fields())

    # -- queries ---------------------------------------------------------------------------------

    def kinds(self) -> set[LoopKind]:
        """Every loop kind used in this tree."""
        return {n.kind for n, _ in self.nodes() if not n.is_root}

    @property
    def is_root(self) -> bool:
        return self.func is None

    def nodes(self, parent: "LoopNest | None" = None) -> Iterator[tuple["LoopNest", "LoopNest | None"]]:
        """Every (node, parent) pair, pre-order."""
        yield self, parent
        for c in self.children:
            yield from c.nodes(self)

    def chain_heads(self) -> Iterator[tuple["LoopNest", "LoopNest"]]:
        """(outermost node of a stage chain, the node it is computed at), pre-order."""
        for n, p in self.nodes():
            if p is not None and (p.is_root or (p.func, p.stage) != (n.func, n.stage)):
                yield n, p

    @cython.locals(n="LoopNest", nxt="LoopNest")
    def chain(self) -> list["LoopNest"]:
        """This node and the deeper levels of the same stage, outermost first."""
        out = [self]
        n = self
        while not n.innermost:
            nxt = n.next_level()
            if nxt is None:
                break
            out.append(nxt)
            n = nxt
        return out

    @cython.locals(c="LoopNest")
    def next_level(self) -> "LoopNest | None":
        for c in self.children:
            if (c.func, c.stage) == (self.func, self.stage):
                return c
        return None

    def computed_funcs(self) -> list[str]:
        """Funcs with at least one stage in the tree, in first-appearance order."""
        seen: dict[str, None] = {}
        for n, _ in self.nodes():
            if n.func is not None:
                seen.setdefault(n.func, None)
        return list(seen)

    def inlined_funcs(self) -> set[str]:
        return {f for n, _ in self.nodes() for f, _ in n.inlined}

    def scheduled_funcs(self) -> set[str]:
        return set(self.computed_funcs()) | self.inlined_funcs()

    def find_chain(self, func: str, stage: int = 0) -> list["LoopNest"]:
        for head, _ in self.chain_heads():
            if head.func == func and head.stage == stage:
                return head.chain()
        raise KeyError(f"{func}.s{stage} is not computed in this loop nest")

    def path_to(self, target: "LoopNest") -> list["LoopNest"] | None:
        """Nodes from the root down to `target` (by identity), or None."""
        if self is target:
            return [self]
        for c in self.children:
            p = c.path_to(target)
            if p is not None:
                return [self] + p
        return None

    def validate(self, pipeline, target=None, complete: bool = True):
        """The Plan of this tree for `pipeline` (its loops, regions and allocations); raises
        ScheduleError saying why if the tree is not a valid schedule (complete=False accepts a
        partial schedule, as during search)."""
        from .plan import Plan
        from .target import get_target

        return Plan(pipeline.dag, self, get_target(target) if target is not None else None, complete)

    # -- identity --------------------------------------------------------------------------------

    def to_json(self) -> dict:
        d: dict = {}
        if self.func is not None:
            d["func"] = self.func
            d["stage"] = self.stage
            d["size"] = list(self.size)
        if self.children:
            d["children"] = [c.to_json() for c in self.children]
        if self.inlined:
            d["inlined"] = [[f, c] for f, c in self.inlined]
        if self.store_at:
            d["store_at"] = list(self.store_at)
        if self.innermost:
            d["innermost"] = True
        if self.kind is not LoopKind.SERIAL:
            d["kind"] = self.kind.value
        if self.vector_dim >= 0:
            d["vector_dim"] = self.vector_dim
        if self.vectorized_loop >= 0:
            d["vectorized_loop"] = self.vectorized_loop
        return d

    @staticmethod
    def from_json(d: dict, format: int = FORMAT) -> "LoopNest":
        """A tree from `to_json`'s dict; format 1 (booleans parallel / unrolled) is read as kinds."""
        from .errors import ScheduleError

        try:
            if format == 1:
                kind = (LoopKind.PARALLEL if d.get("parallel") else
                        LoopKind.UNROLLED if d.get("unrolled") else LoopKind.SERIAL)
            else:
                kind = LoopKind(d.get("kind", "serial"))
            return LoopNest(
                func=d.get("func"), stage=int(d.get("stage", 0)), size=tuple(int(s) for s in d.get("size", ())),
                children=tuple(LoopNest.from_json(c, format) for c in d.get("children", ())),
                inlined=tuple((str(f), int(c)) for f, c in d.get("inlined", ())),
                store_at=tuple(str(f) for f in d.get("store_at", ())),
                innermost=bool(d.get("innermost", False)), kind=kind,
                vector_dim=int(d.get("vector_dim", -1)), vectorized_loop=int(d.get("vectorized_loop", -1)))
        except (TypeError, ValueError, AttributeError) as e:
            raise ScheduleError(f"malformed LoopNest JSON: {e}") from None

    def dumps(self) -> str:
        return json.dumps({"format": FORMAT, "root": self.to_json()}, sort_keys=True, separators=(",", ":"))

    @staticmethod
    def loads(s: str) -> "LoopNest":
        """A tree from `dumps` (this format or format 1, which every dataset written before loop kinds holds)."""
        from .errors import ScheduleError

        obj = json.loads(s)
        fmt = obj.get("format")
        if fmt not in (1, FORMAT):
            raise ScheduleError(f"LoopNest JSON format {fmt!r} is not one this schedlab reads (1, {FORMAT})")
        return LoopNest.from_json(obj["root"], fmt)

    def to_v1_json(self) -> dict | None:
        """The format-1 dict of this tree (booleans parallel / unrolled), or None when it uses a GPU loop kind,
        which format 1 cannot say."""
        if self.kind in (LoopKind.BLOCK, LoopKind.THREAD, LoopKind.SIMD):
            return None
        d = {k: v for k, v in self.to_json().items() if k not in ("kind", "children")}
        if self.children:
            kids = [c.to_v1_json() for c in self.children]
            if any(k is None for k in kids):
                return None
            d["children"] = kids
        if self.kind in (LoopKind.PARALLEL, LoopKind.UNROLLED):
            d[self.kind.value] = True
        return d

    @property
    def fingerprint(self) -> str:
        """A content hash of the schedule. A tree of CPU loop kinds hashes its format-1 JSON, so every schedule
        in a dataset written before loop kinds keeps its id; a GPU tree hashes its format-2 JSON."""
        v1 = self.to_v1_json()
        text = (json.dumps({"format": 1, "root": v1}, sort_keys=True, separators=(",", ":")) if v1 is not None
                else self.dumps())
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @cython.locals(c="LoopNest")
    def structural_hash(self, depth: int) -> int:
        """Hash of the loop structure down to `depth` (seeds/adams2019 §3.2 coarse-to-fine passes;
        Halide's LoopNest::structural_hash).

        Every level contributes which Funcs are stored, computed and inlined at it. From depth 1 it
        adds its children's loop sizes (at depth exactly 1 only whether each is more than one) and loop
        kinds, and its vectorized loop; from depth 2 it descends into its children with depth - 2.

        Each node's hash at each depth is remembered on the node (not part of its value): a child state's tree
        shares every subtree off the path to its new decision with its parent's, so a search hashes only the
        nodes a placement made. Python's hash of the tuples, not a digest of their text: equal structures hash
        equal, and what the search compares is only whether two hashes are equal (a 64-bit collision aside)."""
        if depth < 0:
            return _EMPTY_STRUCTURE
        memo = self._hashes
        if memo is None:
            memo = {}
            if cython.compiled:
                self._hashes = memo
            else:
                object.__setattr__(self, "_hashes", memo)
        h = memo.get(depth)
        if h is not None:
            return h
        key = (tuple(sorted(self.store_at)), tuple([(c.func, c.stage) for c in self.children]),
               tuple(sorted([f for f, _ in self.inlined])))
        if depth > 0:
            if depth == 1:
                key += (tuple([(tuple([s > 1 for s in c.size]), c.kind._value_) for c in self.children]),
                        self.vectorized_loop)
            else:
                key += (tuple([(c.size, c.kind._value_) for c in self.children]), self.vectorized_loop,
                        tuple([c.structural_hash(depth - 2) for c in self.children]))
        h = memo[depth] = hash(key)
        return h

    @cython.locals(c="LoopNest")
    def stages_within(self) -> frozenset:
        """(func, stage) of this level and of every level below it: the stages whose loops run inside this one.
        Remembered on the node (not part of its value): a child state's tree shares its untouched subtrees."""
        s = self._within
        if s is None:
            found = {(self.func, self.stage)} if self.func is not None else set()
            for c in self.children:
                found |= c.stages_within()
            s = frozenset(found)
            if cython.compiled:
                self._within = s
            else:
                object.__setattr__(self, "_within", s)
        return s

    # -- printing --------------------------------------------------------------------------------

    def __str__(self) -> str:
        from .printing import loopnest_to_str

        return loopnest_to_str(self)

    def to_str(self, pipeline) -> str:
        """Readable loops with allocation sizes and tile extents from the pipeline's bounds."""
        from .printing import loopnest_to_str

        return loopnest_to_str(self, pipeline)

    # -- building new nests ----------------------------------------------------------------------

    def with_children(self, children) -> "LoopNest":
        return self._copy({"children": tuple(children)})

    def replace(self, **kw) -> "LoopNest":
        if "kind" in kw or "vectorized_loop" in kw:  # the kind is normalized on construction
            return LoopNest(**{**dict(zip(_FIELDS, self._fields())), **kw})
        return self._copy(kw)

    def _copy(self, changes: dict) -> "LoopNest":
        """This node with some fields (not kind or vectorized_loop, whose pairing the constructor normalizes)
        changed: the search copies nodes on every placement, and constructing one anew costs several times this."""
        func = changes.pop("func", self.func)
        stage = changes.pop("stage", self.stage)
        size = changes.pop("size", self.size)
        children = changes.pop("children", self.children)
        inlined = changes.pop("inlined", self.inlined)
        store_at = changes.pop("store_at", self.store_at)
        innermost = changes.pop("innermost", self.innermost)
        vector_dim = changes.pop("vector_dim", self.vector_dim)
        if changes:
            raise TypeError(f"LoopNest has no field(s) {', '.join(sorted(changes))}")
        new = LoopNest.__new__(LoopNest)
        _fill(new, func, stage, size, children, inlined, store_at, innermost, self.kind, vector_dim,
              self.vectorized_loop)
        return new

    def replace_node(self, target: "LoopNest", new: "LoopNest") -> "LoopNest":
        """A copy of this tree with `target` (by identity) replaced by `new`."""
        if self is target:
            return new
        changed = False
        kids = []
        for c in self.children:
            r = c.replace_node(target, new)
            changed |= r is not c
            kids.append(r)
        return self.with_children(kids) if changed else self


@cython.locals(n="LoopNest")
def _fill(n, func, stage, size, children, inlined, store_at, innermost, kind, vector_dim, vectorized_loop) -> None:
    """Set every field of a new node: as struct members when compiled (the extension type's fields are read-only to
    Python), through object.__setattr__ as Python (the class refuses assignment: a node is a frozen value)."""
    if cython.compiled:
        n.func, n.stage, n.size, n.children, n.inlined = func, stage, size, children, inlined
        n.store_at, n.innermost, n.kind, n.vector_dim, n.vectorized_loop = (store_at, innermost, kind, vector_dim,
                                                                            vectorized_loop)
        n.parallel, n.unrolled = kind is PARALLEL, kind is UNROLLED
    else:
        set_frozen_fields(n, _FIELDS + _DERIVED + ("_hashes", "_within"),
                          (func, stage, size, children, inlined, store_at, innermost, kind, vector_dim,
                           vectorized_loop, kind is PARALLEL, kind is UNROLLED, None, None))


def common_path(paths: list[list[LoopNest]]) -> list[LoopNest]:
    """The nodes (by identity) that begin every one of `paths` (each outermost first): the loops enclosing all their
    ends, the search space's enclosing levels (scheduler.space, ir.sampling)."""
    if not paths:
        return []
    common = paths[0]
    for path in paths[1:]:
        n = 0
        while n < min(len(common), len(path)) and common[n] is path[n]:
            n += 1
        common = common[:n]
    return list(common)
