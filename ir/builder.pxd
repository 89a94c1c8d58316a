# Cython declarations for ir/builder.py (an augmenting .pxd: ir.hot compiles the .py with it). The builder places
# a Func for every child the search makes: as an extension type its fields are struct members, and the plan's and
# the tree's classes are cimported so the placement reads them as C structs. Keep the fields in step with the .py.

from ir.dag cimport FunctionDAG
from ir.loopnest cimport LoopNest
from ir.plan cimport Chain, FuncPlan, Level, Plan
from ir.symbolic cimport static_extent

cdef class ScheduleBuilder:
    cdef public object pipeline, target
    cdef public FunctionDAG dag
    cdef public dict decisions, applied, _shapes
    cdef public object _sites
