"""Requests sent again and again with mostly the same fields, encoded once and completed per call.

A vector env's ``step_batch`` carries the same session ids and autoreset mode on every step; only
the actions, the request id and the ack change. :class:`RequestTemplate` encodes the unchanging
fields into msgpack bytes once; :meth:`RequestTemplate.fill` gives a :class:`FilledRequest` that the
client encodes with its id and ack by joining bytes, not by packing a dict with a list of ids in it.
The frame is the msgpack map :func:`gymwire.codec.pack` would give for the same fields (keys in
another order, which msgpack maps do not have).

Example::

    template = RequestTemplate("step_batch", {"session_ids": ids, "autoreset_mode": "next_step"})
    frame = template.fill(actions=np.zeros(16, np.int64)).encode(rid=7, ack=6)
"""

from __future__ import annotations

from collections.abc import KeysView
from typing import Any

import numpy as np

from .codec import pack, pack_tensor

_ID_KEY = pack("id")
_ACK_KEY = pack("ack")


def _map_header(size: int) -> bytes:
    if size < 16:
        return bytes((0x80 | size,))
    return b"\xde" + size.to_bytes(2, "big")


class RequestTemplate:
    """The fields of a request type that stay the same from call to call, encoded once."""

    __slots__ = ("type", "_fixed_keys", "_fixed", "_fixed_count", "_key_bytes")

    def __init__(self, type: str, fixed: dict[str, Any]) -> None:
        if {"id", "ack", "type"} & fixed.keys():
            raise ValueError("id, ack and type are set per request, not in a template")
        self.type = type
        self._fixed_keys = frozenset(fixed)
        # type goes in with the fixed fields: a map entry like the others.
        self._fixed = b"".join(pack(k) + pack(v) for k, v in {**fixed, "type": type}.items())
        self._fixed_count = len(fixed) + 1
        self._key_bytes: dict[str, bytes] = {}

    def fill(self, **varying: Any) -> FilledRequest:
        """This call's request: the template plus the fields that change, encoded now."""
        parts: list[bytes] = []
        key_bytes = self._key_bytes
        for key, value in varying.items():
            encoded_key = key_bytes.get(key)
            if encoded_key is None:
                encoded_key = key_bytes[key] = pack(key)
            parts.append(encoded_key)
            parts.append(pack_tensor(value) if type(value) is np.ndarray else pack(value))
        return FilledRequest(self, varying.keys(), parts)


class FilledRequest:
    """One request from a template: what ``AsyncClient.request`` takes in place of a fields dict."""

    __slots__ = ("template", "keys", "_parts")

    def __init__(self, template: RequestTemplate, keys: KeysView[str], parts: list[bytes]) -> None:
        self.template = template
        self.keys = keys
        self._parts = parts

    def __contains__(self, key: object) -> bool:
        return key in self.keys or key in self.template._fixed_keys

    def encode(self, rid: int, ack: int) -> bytes:
        """The whole frame with this id and ack."""
        t = self.template
        return b"".join((_map_header(t._fixed_count + 2 + len(self.keys)), t._fixed, _ID_KEY, pack(rid), _ACK_KEY, pack(ack), *self._parts))
