# Cython declarations for ir/loopnest.py (an augmenting .pxd: ir.hot compiles the .py with it). LoopNest becomes an
# extension type with read-only fields (a frozen value to Python), which the compiled hot modules read as struct
# members. Keep the fields in step with the .py's _FIELDS.

cdef class LoopNest:
    cdef readonly object func, stage, size, children, inlined, store_at, innermost, kind, vector_dim, vectorized_loop
    cdef readonly bint parallel, unrolled
    # structural_hash's memo (depth -> hash) and stages_within's, not part of the value
    cdef object _hashes, _within

    cpdef frozenset stages_within(self)
