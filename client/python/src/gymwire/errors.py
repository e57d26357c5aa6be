"""Exceptions raised by the gymwire client.

Two families, as in the TypeScript SDK: :class:`ServerError` carries a wire error (a stable
``ENV_ERR_*`` code, the server's message and details), with one subclass per code so callers can
``except InvalidActionError``; :class:`SdkError` subclasses are local conditions (connection lost,
timed out, version mismatch) that never cross the wire. Every class carries its code; the codes,
their faults and summaries come from ``_protocol.py``, generated from the TypeScript protocol.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._protocol import ERROR_CODES, SDK_ERROR_CODES


class GymwireError(Exception):
    """Base class of every gymwire exception."""


class SdkError(GymwireError):
    """A local client condition; ``code`` is one of the SDKs' local codes (``SDK_ERROR_CODES``)."""

    #: The family's own code; every subclass carries one of ``SDK_ERROR_CODES``.
    code: ClassVar[str] = "SDK_ERROR"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled whole (details too): errors cross process boundaries in Ray actors and worker pools.
        return (type(self), (self.message, self.details))


class NotConnectedError(SdkError):
    """The client is not connected (yet, or any more) and cannot send."""

    code = "NOT_CONNECTED"


class ConnectFailedError(SdkError):
    code = "CONNECT_FAILED"


class ConnectionLostError(SdkError):
    """The connection dropped and could not be resumed (or reconnecting is off)."""

    code = "CONNECTION_LOST"


class ServerShutdownError(ConnectionLostError):
    """The server said it is shutting down (its ``shutdown`` event): its sessions are gone."""

    code = "SERVER_SHUTDOWN"


class SessionLostError(ConnectionLostError):
    """Reconnected, but the server no longer had this client's sessions."""

    code = "SESSION_LOST"


class RequestTimeoutError(SdkError, TimeoutError):
    """A request got no answer within its timeout."""

    code = "REQUEST_TIMEOUT"


class ClientClosedError(SdkError):
    code = "CLOSED"


class FrameTooLargeLocalError(SdkError, ValueError):
    """A request is larger than the server's ``max_frame_bytes``; it was not sent."""

    code = "FRAME_TOO_LARGE"


class BadResponseError(SdkError):
    code = "BAD_RESPONSE"


class VersionMismatchError(SdkError):
    """The server speaks another protocol version (refused our hello, or welcomed us with another)."""

    code = "VERSION_MISMATCH"


class TooDeepError(SdkError, ValueError):
    """A request nests deeper than the protocol's depth limit (512 levels); it was not sent."""

    code = "TOO_DEEP"


class TooManyPendingLocalError(SdkError):
    """More requests wait to be sent than the client allows; this one was not sent."""

    code = "TOO_MANY_PENDING"


class ServerError(GymwireError):
    """An error answered by the server: ``code`` (``ENV_ERR_*``), ``message``, ``details``."""

    code: str = "ENV_ERR_INTERNAL"

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception's default pickling would call __init__ with the one formatted string and fail,
        # so a Ray actor's error would reach the driver as "Failed to deserialize exception".
        return (type(self), (self.code, self.message, self.details))


class BadFrameError(ServerError):
    code = "ENV_ERR_BAD_FRAME"


class FrameTooLargeError(ServerError):
    code = "ENV_ERR_FRAME_TOO_LARGE"


class UnknownTypeError(ServerError):
    code = "ENV_ERR_UNKNOWN_TYPE"


class InvalidMessageError(ServerError):
    code = "ENV_ERR_INVALID_MESSAGE"


class BadTensorError(ServerError):
    code = "ENV_ERR_BAD_TENSOR"


class HandshakeRequiredError(ServerError):
    code = "ENV_ERR_HANDSHAKE_REQUIRED"


class UnauthorizedError(ServerError):
    code = "ENV_ERR_UNAUTHORIZED"


class UnknownEnvError(ServerError):
    code = "ENV_ERR_UNKNOWN_ENV"


class InvalidKwargsError(ServerError):
    code = "ENV_ERR_INVALID_KWARGS"


class UnknownSessionError(ServerError):
    code = "ENV_ERR_UNKNOWN_SESSION"


class ResetNeededError(ServerError):
    code = "ENV_ERR_RESET_NEEDED"


class InvalidOptionsError(ServerError):
    code = "ENV_ERR_INVALID_OPTIONS"


class InvalidActionError(ServerError, ValueError):
    code = "ENV_ERR_INVALID_ACTION"


class UnknownToolError(ServerError):
    code = "ENV_ERR_UNKNOWN_TOOL"


class InvalidToolArgsError(ServerError):
    code = "ENV_ERR_INVALID_TOOL_ARGS"


class InvalidStateError(ServerError):
    code = "ENV_ERR_INVALID_STATE"


class UnsupportedError(ServerError):
    code = "ENV_ERR_UNSUPPORTED"


class TooManySessionsError(ServerError):
    code = "ENV_ERR_TOO_MANY_SESSIONS"


class TooManyPendingError(ServerError):
    code = "ENV_ERR_TOO_MANY_PENDING"


class MemoryBudgetError(ServerError):
    code = "ENV_ERR_MEMORY_BUDGET"


class ShuttingDownError(ServerError):
    code = "ENV_ERR_SHUTTING_DOWN"


class EnvFailureError(ServerError):
    code = "ENV_ERR_ENV_FAILURE"


class InternalServerError(ServerError):
    code = "ENV_ERR_INTERNAL"


class ServerVersionMismatchError(ServerError, VersionMismatchError):
    """The server refused our hello with ENV_ERR_VERSION_MISMATCH; ``details['supported']`` lists its versions."""

    code = "ENV_ERR_VERSION_MISMATCH"

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        ServerError.__init__(self, code, message, details)


class ReplyExpiredError(ServerError):
    """A retried request had already run, but its answer was no longer held; it was not applied again."""

    code = "ENV_ERR_REPLY_EXPIRED"


def _by_code(base: type[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    stack = list(base.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        found.setdefault(cls.__dict__.get("code", ""), cls)
    found.pop("", None)
    return found


#: The exception class of every wire error code (each class carries its code).
ERROR_CLASSES: dict[str, type[ServerError]] = {code: cls for code, cls in _by_code(ServerError).items() if code in ERROR_CODES}
#: The exception class of every local SDK error code.
SDK_ERROR_CLASSES: dict[str, type[SdkError]] = {code: cls for code, cls in _by_code(SdkError).items() if code in SDK_ERROR_CODES}


def fault_of(code: str) -> str:
    """Who is at fault for a wire error code: ``"client"``, ``"server"`` or ``"env"`` (unknown codes: ``"server"``)."""
    return ERROR_CODES.get(code, ("server", ""))[0]


def server_error(error: dict[str, Any]) -> ServerError:
    """Builds the exception for a wire error; unknown codes (a newer server) become InternalServerError with the code kept."""
    code = str(error.get("code", "ENV_ERR_INTERNAL"))
    message = str(error.get("message", ""))
    details = error.get("details") or {}
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return InternalServerError(code, message, {**details, "original_code": code})
    return cls(code, message, details)
