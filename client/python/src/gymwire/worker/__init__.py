"""The Python side of hosted envs: ``gymwire serve --gym ID`` / ``--python module:callable`` runs
``python -m gymwire.worker`` processes that build Gymnasium envs and step them for the server.

Env authors use two things from here:

- :func:`tool` marks an env method as a tool that agents call through ``execute`` and MCP.
- The state protocol: an env whose unwrapped class defines ``gymwire_get_state(self) -> bytes``
  and ``gymwire_set_state(self, state: bytes) -> None`` supports ``get_state``/``set_state``. The
  bytes come from clients: ``gymwire_set_state`` must parse them safely (``np.frombuffer``,
  ``json.loads``, ``gymwire.codec.unpack``), never ``pickle.loads``, and raise ``ValueError`` for
  bytes it cannot restore.

Example::

    import gymnasium as gym
    from gymwire.worker import tool

    class Counter(gym.Env):
        @tool("Add n to the counter and return it", {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
        def add(self, n: int) -> int:
            self.count += n
            return self.count

See docs/serve-your-env.md.
"""

from .tools import tool

__all__ = ["tool"]
