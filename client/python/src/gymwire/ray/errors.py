"""The error a :class:`~gymwire.ray.ServerPool` raises for sessions on a server that died."""

from __future__ import annotations

from ..errors import SessionLostError


class ServerLostError(SessionLostError):
    """A pool server died (its actor crashed or was killed): the sessions it held are gone.

    ``details`` has ``server`` (the pool index), ``url`` (the dead server's), ``restarted_url`` (the
    restarted server's, or None when it did not come back) and, for vector envs, ``env_indices``.
    """
