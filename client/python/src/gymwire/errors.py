"""Exceptions raised by the gymwire client.

Two families, as in the TypeScript SDK: :class:`ServerError` carries a wire error (a stable
``ENV_ERR_*`` code, the server's message and details), with one subclass per code so callers can
``except InvalidActionError``; :class:`SdkError` subclasses are local conditions (connection lost,
timed out, version mismatch) that never cross the wire.
"""

from __future__ import annotations

from typing import Any


class GymwireError(Exception):
    """Base class of every gymwire exception."""


class SdkError(GymwireError):
    """A local client condition; ``code`` mirrors the TypeScript SdkError codes."""

    code = "SDK_ERROR"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class ConnectFailedError(SdkError):
    code = "CONNECT_FAILED"


class ConnectionLostError(SdkError):
    """The connection dropped and could not be resumed (or reconnecting is off)."""

    code = "CONNECTION_LOST"


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


class ServerError(GymwireError):
    """An error answered by the server: ``code`` (``ENV_ERR_*``), ``message``, ``details``."""

    code = "ENV_ERR_INTERNAL"

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}


class BadFrameError(ServerError): ...
class FrameTooLargeError(ServerError): ...
class UnknownTypeError(ServerError): ...
class InvalidMessageError(ServerError): ...
class BadTensorError(ServerError): ...
class HandshakeRequiredError(ServerError): ...
class UnauthorizedError(ServerError): ...
class UnknownEnvError(ServerError): ...
class InvalidKwargsError(ServerError): ...
class UnknownSessionError(ServerError): ...
class ResetNeededError(ServerError): ...
class InvalidOptionsError(ServerError): ...
class InvalidActionError(ServerError, ValueError): ...
class UnknownToolError(ServerError): ...
class InvalidToolArgsError(ServerError): ...
class InvalidStateError(ServerError): ...
class UnsupportedError(ServerError): ...
class TooManySessionsError(ServerError): ...
class TooManyPendingError(ServerError): ...
class MemoryBudgetError(ServerError): ...
class ShuttingDownError(ServerError): ...
class EnvFailureError(ServerError): ...
class InternalServerError(ServerError): ...


class ServerVersionMismatchError(ServerError, VersionMismatchError):
    """The server refused our hello with ENV_ERR_VERSION_MISMATCH; ``details['supported']`` lists its versions."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        ServerError.__init__(self, code, message, details)


ERROR_CLASSES: dict[str, type[ServerError]] = {
    "ENV_ERR_BAD_FRAME": BadFrameError,
    "ENV_ERR_FRAME_TOO_LARGE": FrameTooLargeError,
    "ENV_ERR_UNKNOWN_TYPE": UnknownTypeError,
    "ENV_ERR_INVALID_MESSAGE": InvalidMessageError,
    "ENV_ERR_BAD_TENSOR": BadTensorError,
    "ENV_ERR_HANDSHAKE_REQUIRED": HandshakeRequiredError,
    "ENV_ERR_VERSION_MISMATCH": ServerVersionMismatchError,
    "ENV_ERR_UNAUTHORIZED": UnauthorizedError,
    "ENV_ERR_UNKNOWN_ENV": UnknownEnvError,
    "ENV_ERR_INVALID_KWARGS": InvalidKwargsError,
    "ENV_ERR_UNKNOWN_SESSION": UnknownSessionError,
    "ENV_ERR_RESET_NEEDED": ResetNeededError,
    "ENV_ERR_INVALID_OPTIONS": InvalidOptionsError,
    "ENV_ERR_INVALID_ACTION": InvalidActionError,
    "ENV_ERR_UNKNOWN_TOOL": UnknownToolError,
    "ENV_ERR_INVALID_TOOL_ARGS": InvalidToolArgsError,
    "ENV_ERR_INVALID_STATE": InvalidStateError,
    "ENV_ERR_UNSUPPORTED": UnsupportedError,
    "ENV_ERR_TOO_MANY_SESSIONS": TooManySessionsError,
    "ENV_ERR_TOO_MANY_PENDING": TooManyPendingError,
    "ENV_ERR_MEMORY_BUDGET": MemoryBudgetError,
    "ENV_ERR_SHUTTING_DOWN": ShuttingDownError,
    "ENV_ERR_ENV_FAILURE": EnvFailureError,
    "ENV_ERR_INTERNAL": InternalServerError,
}


def server_error(error: dict[str, Any]) -> ServerError:
    """Builds the exception for a wire error; unknown codes (a newer server) become InternalServerError with the code kept."""
    code = str(error.get("code", "ENV_ERR_INTERNAL"))
    message = str(error.get("message", ""))
    details = error.get("details") or {}
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        return InternalServerError(code, message, {**details, "original_code": code})
    return cls(code, message, details)
