"""Errors a user can cause, each a one-line message naming what to fix (and warnings, one line too)."""

import contextlib
import sys
import warnings


class SchedlabError(Exception):
    """Base of all user-facing errors: the message is one line and says what to fix."""


class PipelineError(SchedlabError):
    """A bad program: raised at definition time, naming the Func and the problem."""


class ScheduleError(SchedlabError):
    """A LoopNest that is not a valid schedule of its pipeline (or violates the target's limits)."""


class SchedlabWarning(UserWarning):
    """Something a user should know that does not stop the command (one line; a CLI prints `<prog>: warning:`)."""


@contextlib.contextmanager
def one_line_warnings(prog: str):
    """Within the block, schedlab's warnings print as `<prog>: warning: <message>` on stderr, as errors do; other
    warnings print as usual, and the previous handler comes back afterwards."""
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message, category, *args, **kwargs):
            if issubclass(category, SchedlabWarning):
                print(f"{prog}: warning: {first_line(str(message))}", file=sys.stderr)
            else:
                shown(message, category, *args, **kwargs)

        warnings.showwarning = show
        yield


def first_line(e: BaseException | str, *, last: bool = False) -> str:
    """An error (or its text) as one line for a report: its first non-empty line, stripped (`last`: its
    last one, the message under a remote traceback such as Ray's); the type's name when there is no text."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    if lines:
        return lines[-1] if last else lines[0]
    return type(e).__name__ if isinstance(e, BaseException) else ""
