# Cython declarations for featurize/schedule.py (an augmenting .pxd: ir.hot compiles the .py with it). The
# featurizer and the DAG's static facts become extension types, and the plan's classes are cimported from
# ir/plan.pxd, so the compiled module reads their fields as struct members. Keep the fields in step with the .py.

from ir.dag cimport FunctionDAG
from ir.loopnest cimport LoopNest
from ir.plan cimport Chain, FuncPlan, Level, Loop, Plan

cdef class _StaticFacts:
    cdef public object minimum
    cdef public dict narrowest_bits, func_bpp, root_ext, bpp, cap, producers, func_producers, readers
    cdef public dict input_readers, reads

cdef class _Memo:
    cdef public dict regions, vectors, counts, siblings, tasks

cdef class _Featurizer:
    cdef public Plan plan
    cdef public FunctionDAG dag
    cdef public object target, pending, minimum, _alloc, _calls
    cdef public _StaticFacts static
    cdef public dict parent, feats, _runs, _input_fp
    cdef public frozenset inlined_set
    cdef public dict _regions_memo, _vectors_memo, _counts_memo, _siblings_memo, _tasks_memo
