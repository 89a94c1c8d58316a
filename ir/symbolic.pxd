# Cython declarations for ir/symbolic.py (an augmenting .pxd: ir.hot compiles the .py with it). Lin, the affine
# form every region and loop is made of, becomes an extension type with read-only fields (a frozen value to
# Python), which the compiled hot modules make and read as a C struct. Keep the fields in step with the .py.

# The atoms of a form: frozen values with their sort key and hash computed once (the hash a C field: tp_hash reads it).
cdef class Sym:
    cdef readonly str name
    cdef readonly object lo, hi, key
    cdef Py_hash_t _hash

cdef class FloorDiv:
    cdef readonly Lin num
    cdef readonly object q, key
    cdef Py_hash_t _hash

cdef class MinMax:
    cdef readonly str kind
    cdef readonly tuple args
    cdef readonly object key
    cdef Py_hash_t _hash

cdef class Lin:
    cdef readonly tuple terms
    cdef readonly object const
    # __hash__'s value once computed, 0 before (not part of the value; set only compiled)
    cdef Py_hash_t _hashed

cdef Lin _as_lin(object v)  # a C function: the arithmetic converts its operands with it
cdef tuple _merged_terms(tuple a, tuple b, long sign)  # the terms of a sum or a difference, merged in C

# C functions for the compiled hot modules, which cimport them (a Python-level call costs more than the small ones do);
# cpdef ones stay callable from Python with the same arguments
cpdef Lin minmax(str kind, object a, object b)
cpdef Lin lmin(object a, object b)
cpdef Lin lmax(object a, object b)
cpdef object upper_diff(object h, object l)
cpdef object static_extent(object lo, object hi, object cap)
cpdef object exact_diff(object h, object l)
cpdef object _sym_upper_diffs(Lin a, Lin b)
cdef object _upper_memo(Lin d)
