"""Errors tgr raises on purpose. Each carries a one-line message meant for the user."""


class TgrError(Exception):
    """Base class: the CLI prints the message on one line and exits non-zero."""


class StoreError(TgrError):
    """The file is not a tgr store, is corrupted, or is from a newer tgr."""


class InputError(TgrError):
    """A document could not be read (bad encoding, missing path, ...)."""


class ModelMismatch(TgrError):
    """The store was built with another embedding model than the one offered."""


class ModelError(TgrError):
    """A model call failed for good (bad key, bad request, retries exhausted)."""


class TransientModelError(ModelError):
    """A model call failed in a way worth retrying (429, 5xx, timeout, connection).

    The gateway retries these; one that escapes (a probe outside the gateway) is reported
    like any ModelError. retry_after is the server's Retry-After hint in seconds.
    """

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after
