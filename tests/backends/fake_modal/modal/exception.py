"""The errors of modal 1.6.4 the backend meets, with the same names and class hierarchy."""


class Error(Exception):
    """Base of Modal's errors."""


class AuthError(Error):
    """No or refused credentials."""


class InvalidError(Error):
    """A request Modal refuses."""


class NotFoundError(Error):
    """An object that does not exist."""


class ConnectionError(Error):
    """The server could not be reached."""


class RemoteError(Error):
    """A failure on Modal's side."""


class ImageBuildError(RemoteError):
    """An image that did not build."""


class ExecutionError(Error):
    """A function call that failed."""


class TimeoutError(Error):
    """Modal's own timeout base, not the builtin one."""


class FunctionTimeoutError(TimeoutError):
    """A call that ran past its function's timeout."""


class OutputExpiredError(TimeoutError):
    """A call whose result is gone."""


class InternalFailure(Error):
    """An internal failure."""
