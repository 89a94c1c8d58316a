"""Errors a user can cause, each a one-line message naming what to fix."""


class SchedlabError(Exception):
    """Base of all user-facing errors: the message is one line and says what to fix."""


class PipelineError(SchedlabError):
    """A bad program: raised at definition time, naming the Func and the problem."""


class ScheduleError(SchedlabError):
    """A LoopNest that is not a valid schedule of its pipeline (or violates the target's limits)."""
