# Cython declarations for train/analytical_rows.py (an augmenting .pxd: ir.hot compiles the .py with it). The loop
# over rows runs on C doubles and typed memoryviews; the helpers are inline C functions. Keep them in step with the .py.

cimport cython
from libc.math cimport ceil as _c_ceil

cdef double _r(double v, bint single) noexcept
cdef double _clamp_min(double v, double low) noexcept
cdef double _minimum(double a, double b) noexcept
cdef double _ceil(double v) noexcept

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, k=Py_ssize_t, i_inner=Py_ssize_t, i_outer=Py_ssize_t, i_nv=Py_ssize_t,
               i_ns=Py_ssize_t, i_real=Py_ssize_t, i_prod=Py_ssize_t, i_vsize=Py_ssize_t, i_inl=Py_ssize_t,
               i_ulr=Py_ssize_t, i_ubr=Py_ssize_t, i_nlr=Py_ssize_t, i_nbr=Py_ssize_t, i_vlv=Py_ssize_t,
               i_sls=Py_ssize_t, i_slv=Py_ssize_t, i_ubv=Py_ssize_t, i_ulv=Py_ssize_t, i_ubt=Py_ssize_t,
               i_ult=Py_ssize_t, i_ibt=Py_ssize_t, i_bt=Py_ssize_t, i_bar=Py_ssize_t, i_bap=Py_ssize_t,
               i_ws=Py_ssize_t, i_pcr=Py_ssize_t,
               c=double, tiny=double, inner=double, outer=double, nv=double, ns=double, real=double, prods=double,
               vsize=double, ulr=double, ubr=double, vlv=double, sls=double, slv=double, ubv=double, ulv=double,
               bar=double, bap=double, num_tasks=double, tasks_per_core=double, idle=double, vector_work=double,
               scalar_work=double, ibt=double, lines_written=double, bytes_written=double, max_threads=double,
               fresh=double, lanes=double, vector_lines=double, scalar_lines=double, points=double, per_point=double,
               lines=double, box=double, line_box=double, kept=double, share=double,
               is_output=bint, inlined=bint, parallel=bint, output=bint, other=bint, uniform=bint)
cpdef void terms_rows(const double[:, ::1] sf, const double[::1] ops, double[:, ::1] out, Py_ssize_t stages,
                      double cores, bint single, bint fresh_pages, bint line_cap, bint new_reads, bint dram_bytes,
                      double mmap_threshold, double page_bytes, double line_bytes, double dram_allocation) except *
