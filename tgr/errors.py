"""Errors tgr raises on purpose. Each carries a one-line message meant for the user."""


class TgrError(Exception):
    """Base class: the CLI prints the message on one line and exits non-zero."""


class TgrWarning(UserWarning):
    """What tgr says without stopping (models out of reach, text dropped, files skipped), as a
    Python warning where no warn callback was given: `warnings.simplefilter("error", tgr.TgrWarning)`
    makes a script stop on it."""


def tell(warn, message: str) -> None:
    """Say message through the warn callback, or, with none, as a Python warning (TgrWarning)."""
    if warn is not None:
        warn(message)
        return
    import os
    import sys
    import warnings

    package, level, frame = os.path.dirname(__file__), 2, sys._getframe(1)
    while frame is not None and os.path.dirname(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1  # the warning points at the caller's own line
    warnings.warn(message, TgrWarning, stacklevel=level)


class StoreError(TgrError):
    """The file is not a tgr store, is corrupted, or is from a newer tgr."""


class InputError(TgrError):
    """A document could not be read (bad encoding, missing path, ...)."""


class ModelMismatch(TgrError):
    """The store was built with another embedding model than the one offered."""


class ModelError(TgrError):
    """A model call failed for good (bad key, bad request, retries exhausted)."""


class OutOfReach(ModelError):
    """A model that cannot be reached here (no key, no endpoint named); reason says why in a
    few words, for the one-line note a question gives when it leaves the model out."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class TransientModelError(ModelError):
    """A model call failed in a way worth retrying (429, 5xx, timeout, connection).

    The gateway retries these; one that escapes (a probe outside the gateway) is reported
    like any ModelError. retry_after is the server's Retry-After hint in seconds.
    """

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class StreamBroken(TransientModelError):
    """A streamed answer's connection closed before the answer ended: a dropped network, or a
    one-slot local server (llama-cpp-python's) that dropped it to start another request."""


class BatchPending(TgrError):
    """The wave's batch jobs are submitted or still running, and the run was asked not to wait
    (tgr.build.batch; defined here so that a command that never indexes does not load that)."""

    def __init__(self, message: str, jobs: int, requests: int):
        super().__init__(message)
        self.jobs, self.requests = jobs, requests
