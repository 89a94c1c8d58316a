# Cython declarations for scheduler/space.py (an augmenting .pxd: ir.hot compiles the .py with it). A search makes
# a State and a Candidate per child: as extension types they are built and read as C structs. Keep the fields in
# step with the .py's __slots__.

from ir.loopnest cimport LoopNest
from ir.plan cimport Plan
from ir.symbolic cimport static_extent

cdef class State:
    cdef readonly LoopNest tree
    cdef readonly object planned, features, num_decisions, decisions, inlined, pending
    cdef readonly State parent
    cdef readonly object order
    cdef object __weakref__

cdef class Candidate:
    cdef public State parent
    cdef public object func, decision
    cdef public LoopNest tree
    cdef public object pending
