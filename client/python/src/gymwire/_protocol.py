# Generated from the TypeScript protocol by `npm run gen:python` (scripts/codegen/python-constants.ts).
# Do not edit: change protocol/*.ts and regenerate; a test fails when this file is stale.
"""Protocol constants shared with the TypeScript server and SDK."""

from __future__ import annotations

from typing import Final

PROTOCOL_VERSION: Final = 2
SUPPORTED_PROTOCOL_VERSIONS: Final = (2, 1)

#: Wire dtype names in code order: a dtype's code is its index here.
DTYPES: Final = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64")
TENSOR_EXT_TYPE: Final = 1
AUTORESET_MODES: Final = ("next_step", "same_step", "disabled")

#: WebSocket close codes the server uses.
CLOSE_GOING_AWAY: Final = 1001
CLOSE_PROTOCOL_ERROR: Final = 1002
CLOSE_POLICY_VIOLATION: Final = 1008
CLOSE_MESSAGE_TOO_BIG: Final = 1009
CLOSE_INTERNAL_ERROR: Final = 1011
CLOSE_TRY_AGAIN_LATER: Final = 1013
CLOSE_SLOW_READER: Final = 4008
FATAL_CLOSE_CODES: Final = (1002, 1008)

#: The events a server sends unasked (``{type: 'event', event, ...}`` frames with no id).
EVENT_SESSION_CLOSED: Final = "session_closed"
EVENT_SHUTDOWN: Final = "shutdown"

#: Every space tag (a wire space description's ``type``).
SPACE_TYPES: Final = ("box", "discrete", "multi_discrete", "multi_binary", "text", "dict", "tuple", "sequence", "graph", "oneof")

#: Every wire error code: who is at fault ("client", "server" or "env") and what it means.
ERROR_CODES: Final[dict[str, tuple[str, str]]] = {
    "ENV_ERR_BAD_FRAME": ("client", "The frame is not a msgpack message."),
    "ENV_ERR_FRAME_TOO_LARGE": ("client", "The frame is larger than the max_frame_bytes limit from the welcome."),
    "ENV_ERR_UNKNOWN_TYPE": ("client", "The message type is not one this protocol version defines."),
    "ENV_ERR_INVALID_MESSAGE": ("client", "The message does not match its schema; details.issues lists each violation with its path."),
    "ENV_ERR_BAD_TENSOR": ("client", "A tensor’s bytes do not match its dtype and shape, or its dtype code is unknown."),
    "ENV_ERR_HANDSHAKE_REQUIRED": ("client", "The first message on a connection must be hello."),
    "ENV_ERR_VERSION_MISMATCH": ("client", "The client’s protocol version is not supported; details.supported lists those that are."),
    "ENV_ERR_UNAUTHORIZED": ("client", "The auth token is missing or wrong."),
    "ENV_ERR_UNKNOWN_ENV": ("client", "No env is registered under that id; details.available lists the ids."),
    "ENV_ERR_INVALID_KWARGS": ("client", "The make kwargs do not match the env’s kwargs schema, or a path kwarg points outside the server’s data roots or at data that does not load."),
    "ENV_ERR_UNKNOWN_SESSION": ("client", "No open session has that id (never made, closed, or reaped)."),
    "ENV_ERR_RESET_NEEDED": ("client", "step or render was called before reset, or after the episode ended without a reset."),
    "ENV_ERR_INVALID_OPTIONS": ("client", "The reset options are invalid for this env (unknown scene index, bad value)."),
    "ENV_ERR_INVALID_ACTION": ("client", "The action is not in the action space (wrong dtype, shape, bounds or NaN)."),
    "ENV_ERR_UNKNOWN_TOOL": ("client", "The session’s env has no tool of that name."),
    "ENV_ERR_INVALID_TOOL_ARGS": ("client", "The tool arguments do not match the tool’s input schema."),
    "ENV_ERR_INVALID_STATE": ("client", "set_state was given bytes that this env cannot restore."),
    "ENV_ERR_UNSUPPORTED": ("client", "The env does not support the operation (no render mode, no state, no such format)."),
    "ENV_ERR_TOO_MANY_SESSIONS": ("client", "A session limit (per connection or per server) is reached."),
    "ENV_ERR_MEMORY_BUDGET": ("client", "make would take a session past a memory budget (max_memory_bytes_per_client or max_memory_bytes from the welcome); details give the session’s estimated bytes, the limit and what is in use. Nothing was built."),
    "ENV_ERR_TOO_MANY_PENDING": ("client", "Too many requests are waiting on one session."),
    "ENV_ERR_REPLY_EXPIRED": ("client", "A request id below the highest this client sent has no held answer: it ran and its answer was evicted (too many unacknowledged answers), or the id was never used (ids must increase). It was not run."),
    "ENV_ERR_SHUTTING_DOWN": ("server", "The server is shutting down and accepts no new work."),
    "ENV_ERR_ENV_FAILURE": ("env", "The env raised an exception while handling the request, or returned a value msgpack cannot carry; other sessions are unaffected."),
    "ENV_ERR_INTERNAL": ("server", "An unexpected server fault; the message says what failed."),
}

#: The SDKs' local error codes (never sent over the wire) and what each means.
SDK_ERROR_CODES: Final[dict[str, str]] = {
    "NOT_CONNECTED": "The client is not connected (yet, or any more) and cannot send.",
    "CONNECT_FAILED": "The connection or its handshake could not be established.",
    "REQUEST_TIMEOUT": "A request got no answer within its timeout.",
    "CONNECTION_LOST": "The connection dropped and could not be resumed (or reconnecting is off).",
    "SERVER_SHUTDOWN": "The server announced its shutdown: waiting requests and requests for its sessions fail at once.",
    "SESSION_LOST": "Reconnected, but the server no longer had this client’s sessions.",
    "CLOSED": "The client was closed.",
    "BAD_RESPONSE": "The server sent an answer the client cannot read.",
    "FRAME_TOO_LARGE": "A request is larger than the server’s max_frame_bytes; it was not sent.",
    "VERSION_MISMATCH": "The server speaks another protocol version.",
    "TOO_DEEP": "A request nests deeper than the protocol’s depth limit (MAX_FRAME_DEPTH, 512 levels); it was not sent.",
    "TOO_MANY_PENDING": "More requests wait to be sent than the client allows (maxQueued); this one was not sent.",
}

#: The adaptive busy-poll window both ends use (runtime/busy-poll.ts): times in µs, the rest counts and a fraction.
BUSY_POLL_ADAPTIVE: Final[dict[str, float]] = {
    "max_us": 100,
    "start_us": 20,
    "probe_every": 16,
    "trial_every": 512,
    "trial_length": 16,
    "keep_below": 0.9,
    "backoff": 1024,
}

#: The trajectory dataset written and read by both SDKs (client/ts/dataset/format.ts).
DATASET_FORMAT: Final = "gymwire.trajectories"
DATASET_VERSION: Final = 1

#: The waypoint controllers by name (gymwire.control implements them): each reference's constants.
WAYPOINT_CONTROLLERS: Final[dict[str, dict[str, object]]] = {
    "bench2drive": {
        "kind": "bench2drive",
        "source": "Bench2DriveZoo team_code/pid_controller.py PIDController.control_pid (UniAD and VAD agents)",
        "turn": {"kp": 0.75, "ki": 0.75, "kd": 0.3, "n": 40},
        "speed": {"kp": 5, "ki": 0.5, "kd": 1, "n": 40},
        "max_throttle": 0.75,
        "brake_speed": 0.4,
        "brake_ratio": 1.1,
        "clip_delta": 0.25,
        "waypoint_dt": 0.5,
        "aim_dist": 4,
        "angle_thresh": 0.3,
        "dist_thresh": 10,
        "throttle_cut_speed": None,
    },
    "bench2drive-uniad": {
        "kind": "bench2drive",
        "source": "Bench2DriveZoo pid_controller.py control_pid with uniad_b2d_agent.py's throttle cut above 5 m/s",
        "turn": {"kp": 0.75, "ki": 0.75, "kd": 0.3, "n": 40},
        "speed": {"kp": 5, "ki": 0.5, "kd": 1, "n": 40},
        "max_throttle": 0.75,
        "brake_speed": 0.4,
        "brake_ratio": 1.1,
        "clip_delta": 0.25,
        "waypoint_dt": 0.5,
        "aim_dist": 4,
        "angle_thresh": 0.3,
        "dist_thresh": 10,
        "throttle_cut_speed": 5,
    },
    "transfuser": {
        "kind": "transfuser",
        "source": "autonomousvision/transfuser team_code_transfuser/model.py LidarCenterNet.control_pid, constants from config.py",
        "turn": {"kp": 1.25, "ki": 0.75, "kd": 0.3, "n": 20},
        "speed": {"kp": 5, "ki": 0.5, "kd": 1, "n": 20},
        "max_throttle": 0.75,
        "brake_speed": 0.4,
        "brake_ratio": 1.1,
        "clip_delta": 0.25,
        "waypoint_dt": 0.5,
        "aim_dist": 0,
        "angle_thresh": 0,
        "dist_thresh": 0,
        "throttle_cut_speed": None,
    },
}
