# Cython declarations for ir/symbolic.py (an augmenting .pxd: ir.hot compiles the .py with it). Lin, the affine
# form every region and loop is made of, becomes an extension type with read-only fields (a frozen value to
# Python), which the compiled hot modules make and read as a C struct. Keep the fields in step with the .py.

cdef class Lin:
    cdef readonly tuple terms
    cdef readonly object const
    # __hash__'s value once computed (not part of the value; set only compiled)
    cdef object _hashed

cdef Lin _as_lin(object v)  # a C function: the arithmetic converts its operands with it
