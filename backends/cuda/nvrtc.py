"""Compile checks of generated CUDA C with NVRTC, with no GPU and no driver (reference/gpu-without-gpu.md §1).

NVRTC from pip (`nvidia-cuda-nvrtc-cu12`) is called through CuPy's low-level bindings, which need no device
(CuPy's RawModule and compile_using_nvrtc query the device first and fail without a driver). Each kernel text
is compiled to a cubin for every architecture asked, and ptxas's report (registers, shared memory, spills) is
parsed per kernel: they are the resources the GPU would give a block, and the limits a schedule must respect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..kernel import CompileError

ARCHS = ("sm_80", "sm_90")  # A100 and H100/H200: the targets in conf/targets

_FUNCTION = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


@dataclass(frozen=True)
class KernelResources:
    """ptxas's report for one kernel on one architecture."""

    kernel: str
    arch: str
    registers: int
    shared_bytes: int
    barriers: int
    stack_bytes: int
    spill_stores: int
    spill_loads: int


@dataclass(frozen=True)
class NvrtcResult:
    arch: str
    cubin_bytes: int
    seconds: float
    resources: tuple[KernelResources, ...]
    log: str


def available() -> str | None:
    """None if NVRTC can compile here, else what to install."""
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
    except ImportError:
        return "the CUDA compile check needs CuPy and NVRTC: pip install schedlab[gpu]"
    except Exception as e:  # noqa: BLE001 - cupy raises its own DynamicLibNotFoundError
        return f"the CUDA compile check needs NVRTC ({type(e).__name__}): pip install nvidia-cuda-nvrtc-cu12"
    return None


def version() -> tuple[int, int]:
    from cupy.cuda import nvrtc

    return tuple(nvrtc.getVersion())


def compile_cuda(source: str, name: str, arch: str = "sm_90", extra: tuple[str, ...] = ()) -> tuple[bytes, NvrtcResult]:
    """The cubin of `source` for `arch` and ptxas's resources per kernel; a CompileError with NVRTC's first
    error line when it does not compile."""
    import time

    why = available()
    if why is not None:
        raise CompileError(why)
    from cupy.cuda import nvrtc

    t0 = time.perf_counter()
    prog = nvrtc.createProgram(source, f"{name}.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [f"-arch={arch}", "-std=c++17", "--ptxas-options=-v", *extra])
        except nvrtc.NVRTCError as e:
            log = nvrtc.getProgramLog(prog)
            first = next((l for l in log.splitlines() if "error" in l), str(e))
            raise CompileError(f"NVRTC ({arch}) rejected the generated CUDA: {first.strip()}") from None
        cubin = nvrtc.getCUBIN(prog)
        log = nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return cubin, NvrtcResult(arch, len(cubin), time.perf_counter() - t0, parse_ptxas(log, arch), log)


def parse_ptxas(log: str, arch: str) -> tuple[KernelResources, ...]:
    """One KernelResources per 'Compiling entry function' block of a ptxas -v report."""
    out = []
    current = None
    stack = (0, 0, 0)
    for line in log.splitlines():
        m = _FUNCTION.search(line)
        if m:
            current = m.group(1)
            stack = (0, 0, 0)
            continue
        m = _SPILL.search(line)
        if m and current is not None:
            stack = tuple(int(x) for x in m.groups())
            continue
        m = _USED.search(line)
        if m and current is not None:
            regs, barriers, smem = (int(x) if x else 0 for x in m.groups())
            out.append(KernelResources(current, arch, regs, smem, barriers, *stack))
            current = None
    return tuple(out)


def nvcc_check(source: str, name: str, arch: str = "sm_90", timeout: float = 300.0) -> tuple[KernelResources, ...] | None:
    """The optional second compile check: nvcc (where it is on the PATH) on the same text, ptxas's resources per
    kernel; None without nvcc; a CompileError when it does not compile."""
    import os
    import shutil
    import subprocess
    import tempfile

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        cu = os.path.join(d, f"{name}.cu")
        with open(cu, "w") as f:
            f.write(source)
        r = subprocess.run([nvcc, f"-arch={arch}", "-std=c++17", "-cubin", "-Xptxas", "-v", cu, "-o",
                            os.path.join(d, f"{name}.cubin")], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        first = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr.strip()[:300])
        raise CompileError(f"nvcc ({arch}) rejected the generated CUDA: {first.strip()}")
    return parse_ptxas(r.stdout + r.stderr, arch)
