"""The one status vocabulary of a measurement: every sample compiled or timed anywhere in schedlab (the data
generator, the Ray job, evaluation, the scheduler's autotuning) ends as exactly one of these, never an
exception — a failure is data (DESIGN §3.4). It lives in `ir`, the bottom layer, because backends produce
these statuses, the dataset (featurize) stores them and the trainer filters by them."""

from __future__ import annotations


class Status:
    """The statuses, as plain strings (they are stored in datasets and compared with `==`)."""

    OK = "ok"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    CRASH = "crash"
    TIMEOUT = "timeout"
    WRONG_OUTPUT = "wrong_output"
    INVALID_SCHEDULE = "invalid_schedule"
    WORKER_DIED = "worker_died"
    NO_GPU = "no_gpu"


# what each status means, one line each
MEANING: dict[str, str] = {
    Status.OK: "compiled, outputs equal the interpreter's (when checked), and timed",
    Status.COMPILE_ERROR: "code generation or the backend's compiler failed",
    Status.RUNTIME_ERROR: "the kernel raised while running",
    Status.CRASH: "the process running the kernel died (segfault, abort, killed for memory); the caller survives",
    Status.TIMEOUT: "compiling or measuring ran past its time limit; the worker was killed",
    Status.WRONG_OUTPUT: "the kernel's outputs differ from ir.interpret's; nothing was timed",
    Status.INVALID_SCHEDULE: "the LoopNest is not a valid schedule of its pipeline for the target (Plan refused it)",
    Status.WORKER_DIED: "the Ray worker compiling or measuring the sample died, and its retries too (generator.job)",
    Status.NO_GPU: "a GPU kernel compiled (and was checked on the CPU) but no GPU was visible to the process timing it",
}

STATUSES: tuple[str, ...] = tuple(MEANING)

OK, COMPILE_ERROR, RUNTIME_ERROR, CRASH, TIMEOUT, WRONG_OUTPUT, INVALID_SCHEDULE, WORKER_DIED, NO_GPU = STATUSES

__all__ = ["Status", "STATUSES", "MEANING", "OK", "COMPILE_ERROR", "RUNTIME_ERROR", "CRASH", "TIMEOUT",
           "WRONG_OUTPUT", "INVALID_SCHEDULE", "WORKER_DIED", "NO_GPU"]
