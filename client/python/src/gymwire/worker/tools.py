"""Env methods exposed as tools: the :func:`tool` decorator and how the worker finds and calls them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

TOOL_ATTR = "__gymwire_tool__"


def tool(description: str, parameters: dict[str, Any] | None = None, *, name: str | None = None) -> Callable[[F], F]:
    """Marks an env method as a tool.

    ``parameters`` is the JSON Schema of the arguments (an ``object`` schema; the default takes
    none); the server validates arguments against it before the method runs and lists it in
    ``list_tools`` and MCP. The method is called on the unwrapped env as ``method(**args)`` and
    returns any wire value (numbers, strings, bytes, lists, dicts, numpy arrays).

    Example::

        @tool("Teleport the cart", {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]})
        def teleport(self, x: float) -> dict:
            self.state[0] = x
            return {"x": x}
    """
    schema = parameters if parameters is not None else {"type": "object", "properties": {}}
    if schema.get("type") != "object":
        raise ValueError(f"tool parameters must be a JSON Schema of type 'object', got {schema!r}")

    def mark(fn: F) -> F:
        setattr(fn, TOOL_ATTR, {"name": name or fn.__name__, "description": description, "parameters": schema})
        return fn

    return mark


def find_tools(env: Any) -> dict[str, tuple[dict[str, Any], Callable[..., Any]]]:
    """The tools an env declares, by name: each its description (for the server) and bound method."""
    found: dict[str, tuple[dict[str, Any], Callable[..., Any]]] = {}
    cls = type(env)
    for attr in dir(cls):
        member = getattr(cls, attr, None)
        spec = getattr(member, TOOL_ATTR, None)
        if spec is None:
            continue
        if spec["name"] in found:
            raise ValueError(f"{cls.__name__} declares two tools named {spec['name']!r}")
        found[spec["name"]] = (spec, getattr(env, attr))
    return found
