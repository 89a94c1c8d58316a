# Cython declarations for ir/plan.py (an augmenting .pxd: ir.hot compiles the .py with it). The classes become
# extension types, so the compiled hot modules read their fields as struct members instead of Python attribute
# look-ups; pure Python runs the .py alone, the same classes with __slots__. Keep the fields in step with the .py.
# Plan's planning methods and region_at are cpdef: C calls from the plan's own methods and from callers whose
# variable is typed Plan (the featurizer). Call them directly; never take one as a bound object first.

from ir.dag cimport FunctionDAG
from ir.loopnest cimport LoopNest
from ir.symbolic cimport exact_diff, lmax, lmin, static_extent

cdef class Loop:
    cdef public str name
    cdef public object pure, count, count_form, index, base, ext, tile
    cdef public str tail

cdef class Level:
    cdef public LoopNest node
    cdef public object _chain, depth
    cdef public list loops
    cdef public tuple order

cdef class Chain:
    cdef public str func
    cdef public object stage
    cdef public LoopNest head, site
    cdef public list bounds, extents, exact, levels
    cdef object __weakref__

cdef class FuncPlan:
    cdef public str name
    cdef public object node, inlined
    cdef public LoopNest site, store
    cdef public list chains, region, extents, storage, storage_extents
    cdef public tuple layout, strides
    cdef public object sliding, level_ids

cdef class Sliding:
    cdef public object dim, loop, level

cdef class Plan:
    cdef public FunctionDAG dag
    cdef public object target, _kind, complete
    cdef public LoopNest root
    cdef public dict funcs, levels, parent, keys, by_key, _memo
    cdef public object _walk, _chains, changed
    cdef public set replanned
    cdef object __weakref__

    cpdef level(self, node)
    cpdef region_at(self, func, LoopNest n)
    cpdef _same_geometry(self, FuncPlan fp, FuncPlan old, Plan parent)
    cpdef _reuse(self, FuncPlan fp, FuncPlan old)
    cpdef _encloses(self, outer, n)
    cpdef _check_node(self, LoopNest n, p)
    cpdef _plan_func(self, FuncPlan fp)
    cpdef _plan_func_retiled(self, FuncPlan fp, FuncPlan old)
    cpdef _plan_levels(self, FuncPlan fp)
    cpdef _plan_chain(self, FuncPlan fp, Chain ch, nodes)
    cpdef _derive_chain(self, FuncPlan fp, stage, nodes)
    cpdef _loop(self, func, stage, LoopNest n, depth, j, name, pure, pbase, pext, pbound, tile)
    cpdef _stage_env_within(self, Chain ch, LoopNest n)
    cpdef _check_level_flags(self, FuncPlan fp, Chain ch, Level lvl)

cdef Py_ssize_t _id(object o)  # id(o) as a C cast (the .py says why)
cpdef tuple loop_order(stage, LoopNest n, tuple layout)  # C calls from _derive_chain (once per level it derives)
cpdef dict dag_loop_memo(FunctionDAG dag)
