"""One exception type for every problem a user can fix.

The CLI prints ``str(error)`` as a single line and exits 2, so every message names the
problem *and* the fix; nothing else in the package prints tracebacks at users.
"""


class PGLimitsError(Exception):
    """A user-fixable problem: ``problem`` says what is wrong, ``fix`` what to do."""

    def __init__(self, problem: str, fix: str = ""):
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem} — fix: {fix}" if fix else problem)


class ServerUnavailable(PGLimitsError):
    """A server could not be obtained or started; the study reports it as unavailable."""
