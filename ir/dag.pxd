# Cython declarations for ir/dag.py (an augmenting .pxd: ir.hot compiles the .py with it). FunctionDAG becomes an
# extension type: search and featurization ask it for nodes and analyses thousands of times per state, by C calls
# where the caller's variable is typed. Keep the fields in step with the .py's __slots__.

cdef class FunctionDAG:
    cdef public object pipeline
    cdef public tuple nodes
    cdef public dict _by_name, inputs, _analyses
    cdef object __weakref__

    cpdef analysis(self, key, compute)
    cpdef node(self, name)
    cpdef stage_requires(self, stage, producer, env)
