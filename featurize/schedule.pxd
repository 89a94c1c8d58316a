# Cython declarations for featurize/schedule.py (an augmenting .pxd: ir.hot compiles the .py with it). The
# featurizer and the DAG's static facts become extension types, and the plan's classes are cimported from
# ir/plan.pxd, so the compiled module reads their fields as struct members. Keep the fields in step with the .py.
# The featurizer's per-stage methods are cpdef: a call between them is a C call through the type's table instead of
# a method look-up and Python's calling convention (a featurized stage makes a dozen such calls). The .py must call
# them directly, never take one as a bound object first (Cython converts it with a mismatched signature).

cimport numpy as cnp

from ir.dag cimport FunctionDAG
from ir.loopnest cimport LoopNest
from ir.plan cimport Chain, FuncPlan, Level, Loop, Plan, _id  # _id: id(o) as a C cast
from ir.symbolic cimport lmax, lmin, static_extent

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

    cpdef iters(self, LoopNest n)
    cpdef runs(self, LoopNest n)
    cpdef tasks(self, LoopNest n)
    cpdef outer_parallelism(self, n)
    cpdef root_head(self, n)
    cpdef alloc_in(self, n)
    cpdef alloc_table(self)
    cpdef extents(self, region, cap)
    cpdef callers_redone(self, name, redo)
    cpdef patch_root_working_set(self, old)
    cpdef patch_working_sets(self, old, FuncPlan fp, Chain ch, task_reads=*)
    cpdef stage(self, FuncPlan fp, Chain ch)
    cpdef native_vector_size(self, stage)
    cpdef task_features(self, list v, FuncPlan fp, Chain ch)
    cpdef task_reads(self, list v, FuncPlan fp, Chain ch)
    cpdef region_footprint(self, producer, LoopNest n)
    cpdef _input_region_at(self, name, n)
    cpdef dense_dim(self, producer)
    cpdef footprint(self, producer, extents)
    cpdef _footprint(self, producer, extents, dense)
    cpdef load_features(self, list v, FuncPlan fp, Chain ch, realizations)
    cpdef new_reads(self, list v, FuncPlan fp, stage, vec_regions, b_real, l_real)
    cpdef load_counts(self, stage, LoopNest inner)
    cpdef vector_regions(self, Chain ch)
    cpdef vector_env(self, Chain ch)
    cpdef classify(self, producer, jac, vec)
    cpdef inlined(self, FuncPlan fp)

cpdef _float64(list v)  # np.array(v) for a stage's floats, stored in a C loop (the .py says why)
cpdef list _float32_items(a, tuple idx)  # a[list(idx)].tolist(), read in place from a C-order float32 array
cpdef _float32_with_items(a, tuple idx, list values)  # a copy with those items set, stored in C
cpdef double _as_float32(double x)  # x rounded to float32, as numpy's cast stores it
cpdef stack_stage_features(list features, tuple keys)  # [B, S, width] of B states' stage arrays, copied in C


cdef inline float* _float32_data(object a):
    """The items of `a` where it is a float32 ndarray in C order, aligned and in native byte order (numpy's C API);
    NULL otherwise (the caller then asks numpy)."""
    if type(a) is not cnp.ndarray:
        return NULL
    if cnp.PyArray_TYPE(<cnp.ndarray>a) != cnp.NPY_FLOAT32 or not cnp.PyArray_ISCARRAY_RO(<cnp.ndarray>a):
        return NULL
    return <float*>cnp.PyArray_DATA(<cnp.ndarray>a)


cdef inline Py_ssize_t _float32_width(object a):
    """The length of `a` where it is a one-dimensional float32 ndarray that _float32_data reads in place; -1
    otherwise."""
    if _float32_data(a) == NULL or cnp.PyArray_NDIM(<cnp.ndarray>a) != 1:
        return -1
    return cnp.PyArray_DIM(<cnp.ndarray>a, 0)


cdef inline double* _float64_data(object a) except NULL:
    """The items of a new float64 array from np.empty (C order, aligned, native): where `a` is not such, TypeError."""
    if type(a) is not cnp.ndarray or cnp.PyArray_TYPE(<cnp.ndarray>a) != cnp.NPY_FLOAT64 or \
            not cnp.PyArray_ISCARRAY(<cnp.ndarray>a):
        raise TypeError("expected a writeable float64 array in C order")
    return <double*>cnp.PyArray_DATA(<cnp.ndarray>a)

# stage()'s feature indices: C integers, so the features' list (typed `list` above) is filled and read by index in C
# instead of a module look-up and a generic item assignment per feature
cdef Py_ssize_t _WS_ROOT, _N, _NUM_REALIZATIONS, _NUM_PRODUCTIONS, _PER_REALIZATION, _PER_PRODUCTION, _TOTAL
cdef Py_ssize_t _MINIMUM, _INNERMOST_EXTENT, _INNERMOST_PURE_EXTENT, _UNROLLED_EXTENT, _INNER_PAR, _OUTER_PAR
cdef Py_ssize_t _BYTES_REAL, _BYTES_PROD, _BYTES_ROOT, _INNER_BYTES_REAL, _INNER_BYTES_PROD, _INNER_BYTES_ROOT
cdef Py_ssize_t _UNIQUE_BYTES_REAL, _UNIQUE_LINES_REAL, _ALLOC_BYTES_REAL, _WS_HEAD, _VECTOR_SIZE
cdef Py_ssize_t _NATIVE_VECTOR_SIZE, _NUM_VECTORS, _NUM_SCALARS, _SCALAR_LOADS_PER_VECTOR, _VECTOR_LOADS_PER_VECTOR
cdef Py_ssize_t _SCALAR_LOADS_PER_SCALAR, _BYTES_TASK, _INNER_BYTES_TASK, _UNIQUE_BYTES_VECTOR, _UNIQUE_LINES_VECTOR
cdef Py_ssize_t _UNIQUE_BYTES_TASK, _UNIQUE_LINES_TASK, _WS_TASK, _WS_PROD, _WS_REAL, _NEW_BYTES_REAL
cdef Py_ssize_t _NEW_LINES_REAL, _INLINED_CALLS
