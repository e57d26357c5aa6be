"""Space descriptions from the wire rebuilt as real ``gymnasium.spaces``, and values converted both ways.

The server describes spaces as data (``protocol/spaces.ts``) with exact dtypes and infinite bounds
kept. :func:`space_from_wire` turns a description into the matching Gymnasium space;
:func:`space_to_wire` goes back. Values follow Gymnasium's conventions on this side and the wire's
on the other: Discrete values are ints, Box/MultiDiscrete/MultiBinary arrays, Dict dicts, Tuple
tuples (arrays on the wire), Sequence tuples or a stacked array, Graph ``GraphInstance`` (a
``{nodes, edges, edge_links}`` map on the wire), OneOf ``(index, value)``.

Example::

    space = space_from_wire({"type": "discrete", "n": 2, "start": 0, "dtype": "int64"})
    value_from_wire(space, 1)  # np.int64(1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from .codec import wire_dtype_name


def _box(desc: dict[str, Any]) -> gs.Space[Any]:
    dtype = np.dtype(desc["dtype"])
    shape = tuple(int(d) for d in desc["shape"])
    return gs.Box(low=_box_bound(desc["low"], dtype, shape), high=_box_bound(desc["high"], dtype, shape), shape=shape, dtype=dtype)


def _multi_discrete(desc: dict[str, Any]) -> gs.Space[Any]:
    dtype = np.dtype(desc["dtype"])
    return gs.MultiDiscrete(np.asarray(desc["nvec"], dtype=dtype), dtype=dtype.type, start=np.asarray(desc["start"], dtype=dtype))


def _multi_binary(desc: dict[str, Any]) -> gs.Space[Any]:
    n = [int(d) for d in desc["n"]]
    return gs.MultiBinary(n[0] if len(n) == 1 else n)


def _graph(desc: dict[str, Any]) -> gs.Space[Any]:
    edge = desc.get("edge_space")
    return gs.Graph(space_from_wire(desc["node_space"]), None if edge is None else space_from_wire(edge))  # type: ignore[arg-type]


#: A builder per wire space tag; :data:`gymwire._protocol.SPACE_TYPES` (generated from
#: ``protocol/spaces.ts``) lists the tags, and a test checks that every one has its builder here.
SPACE_BUILDERS: dict[str, Callable[[dict[str, Any]], gs.Space[Any]]] = {
    "box": _box,
    "discrete": lambda desc: gs.Discrete(int(desc["n"]), start=int(desc["start"]), dtype=np.dtype(desc["dtype"]).type),
    "multi_discrete": _multi_discrete,
    "multi_binary": _multi_binary,
    "text": lambda desc: gs.Text(int(desc["max_length"]), min_length=int(desc["min_length"]), charset=str(desc["charset"])),
    "dict": lambda desc: gs.Dict({key: space_from_wire(sub) for key, sub in desc["spaces"].items()}),
    "tuple": lambda desc: gs.Tuple([space_from_wire(sub) for sub in desc["spaces"]]),
    "sequence": lambda desc: gs.Sequence(space_from_wire(desc["space"]), stack=bool(desc["stack"])),
    "graph": _graph,
    "oneof": lambda desc: gs.OneOf([space_from_wire(sub) for sub in desc["spaces"]]),
}


def space_from_wire(desc: dict[str, Any]) -> gs.Space[Any]:
    """Builds the Gymnasium space for a wire space description."""
    build = SPACE_BUILDERS.get(desc.get("type"))  # type: ignore[arg-type]
    if build is None:
        raise ValueError(f"unknown space type {desc.get('type')!r} in {desc!r}")
    return build(desc)


def _box_bound(bound: Any, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """A Box bound at the box's shape: the wire may send a suffix of it (``[]`` for one value), which broadcasts."""
    arr = np.asarray(bound, dtype=dtype)
    if arr.size == int(np.prod(shape)):
        return arr.reshape(shape)
    if arr.ndim > len(shape) or tuple(shape[len(shape) - arr.ndim :]) != arr.shape:
        raise ValueError(f"a Box bound of shape {arr.shape} does not broadcast to the box's shape {shape}")
    return np.array(np.broadcast_to(arr, shape))


def space_to_wire(space: gs.Space[Any]) -> dict[str, Any]:
    """The wire description of a Gymnasium space (inverse of :func:`space_from_wire`)."""
    if isinstance(space, gs.Box):
        dtype = wire_dtype_name(space.dtype)
        return {"type": "box", "dtype": dtype, "shape": list(space.shape), "low": np.asarray(space.low), "high": np.asarray(space.high)}
    if isinstance(space, gs.Discrete):
        return {"type": "discrete", "n": int(space.n), "start": int(space.start), "dtype": wire_dtype_name(space.dtype)}
    if isinstance(space, gs.MultiDiscrete):
        return {"type": "multi_discrete", "nvec": np.asarray(space.nvec), "start": np.asarray(space.start), "dtype": wire_dtype_name(space.dtype)}
    if isinstance(space, gs.MultiBinary):
        return {"type": "multi_binary", "n": [int(d) for d in np.atleast_1d(space.n)]}
    if isinstance(space, gs.Text):
        return {"type": "text", "min_length": space.min_length, "max_length": space.max_length, "charset": space.characters}
    if isinstance(space, gs.Dict):
        return {"type": "dict", "spaces": {k: space_to_wire(v) for k, v in space.spaces.items()}}
    if isinstance(space, gs.Tuple):
        return {"type": "tuple", "spaces": [space_to_wire(s) for s in space.spaces]}
    if isinstance(space, gs.Sequence):
        return {"type": "sequence", "space": space_to_wire(space.feature_space), "stack": bool(space.stack)}
    if isinstance(space, gs.Graph):
        return {
            "type": "graph",
            "node_space": space_to_wire(space.node_space),
            "edge_space": None if space.edge_space is None else space_to_wire(space.edge_space),
        }
    if isinstance(space, gs.OneOf):
        return {"type": "oneof", "spaces": [space_to_wire(s) for s in space.spaces]}
    raise TypeError(f"{type(space).__name__} has no wire description")


def value_from_wire(space: gs.Space[Any], value: Any) -> Any:
    """Converts a decoded wire value to Gymnasium's form for ``space``.

    Box values are returned exactly as decoded (no cast), so a server that sends the wrong dtype
    fails ``space.contains`` instead of being silently fixed.
    """
    if type(space) is gs.Box:
        return value  # the common case, before the checks for the other spaces (every step pays them)
    if isinstance(space, gs.Discrete):
        return space.dtype.type(value) if isinstance(value, (int, np.integer)) else value
    if isinstance(space, gs.MultiBinary):
        # The wire allows bool/uint8/int8 0-1 tensors; Gymnasium's MultiBinary is int8.
        return np.asarray(value).astype(np.int8, copy=False) if isinstance(value, np.ndarray) and value.dtype != np.int8 else value
    if isinstance(space, gs.Dict):
        if not isinstance(value, dict):
            return value
        return {k: value_from_wire(space.spaces[k], v) if k in space.spaces else v for k, v in value.items()}
    if isinstance(space, gs.Tuple):
        if not isinstance(value, (list, tuple)):
            return value
        return tuple(value_from_wire(s, v) for s, v in zip(space.spaces, value, strict=True)) if len(value) == len(space.spaces) else tuple(value)
    if isinstance(space, gs.Sequence):
        if isinstance(value, np.ndarray):
            return value
        if space.stack:
            if len(value) == 0:
                return np.zeros((0, *(space.feature_space.shape or ())), dtype=space.feature_space.dtype)
            return np.stack([np.asarray(value_from_wire(space.feature_space, v)) for v in value])
        return tuple(value_from_wire(space.feature_space, v) for v in value)
    if isinstance(space, gs.Graph):
        if not isinstance(value, dict):
            return value
        edges = value.get("edges")
        links = value.get("edge_links")
        return gs.GraphInstance(nodes=value.get("nodes"), edges=edges, edge_links=links)
    if isinstance(space, gs.OneOf):
        if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], int) and 0 <= value[0] < len(space.spaces):
            return (np.int64(value[0]), value_from_wire(space.spaces[value[0]], value[1]))
        return value
    return value


def value_to_wire(space: gs.Space[Any], value: Any) -> Any:
    """Converts a Gymnasium value (an action) to its wire form for ``space``.

    Array-like Box/MultiDiscrete values are cast to the space's dtype (a float64 list for a
    float32 Box is the usual Python habit); shape, bounds and NaN are left for the server to judge,
    so a bad action still comes back as ``InvalidActionError`` with the server's reason.
    """
    if type(value) is int and type(space) is gs.Discrete:
        return value  # the common case, as the Discrete branch below returns it, without its checks
    if isinstance(space, gs.Discrete):
        if isinstance(value, np.ndarray) and value.shape == ():
            value = value.item()
        if isinstance(value, (np.integer, bool)):
            return int(value)
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        return value
    if isinstance(space, (gs.Box, gs.MultiDiscrete)):
        if isinstance(value, (list, tuple, np.ndarray, int, float, np.generic)):
            arr = np.asarray(value)
            if arr.dtype != space.dtype and arr.dtype.kind in "biuf" and _castable(arr, space.dtype):
                arr = arr.astype(space.dtype)
            return arr
        return value
    if isinstance(space, gs.MultiBinary):
        if isinstance(value, (list, tuple, np.ndarray)):
            arr = np.asarray(value)
            return arr.astype(np.int8) if arr.dtype.kind in "biu" else arr
        return value
    if isinstance(space, gs.Dict) and isinstance(value, dict):
        return {k: value_to_wire(space.spaces[k], v) if k in space.spaces else v for k, v in value.items()}
    if isinstance(space, gs.Tuple) and isinstance(value, (list, tuple)):
        return [value_to_wire(s, v) for s, v in zip(space.spaces, value, strict=False)] + list(value[len(space.spaces) :])
    if isinstance(space, gs.Sequence):
        if isinstance(value, np.ndarray) and space.stack:
            return (
                value_to_wire(space.feature_space, value) if isinstance(space.feature_space, gs.Box) else [value_to_wire(space.feature_space, v) for v in value]
            )
        if isinstance(value, (list, tuple)):
            return [value_to_wire(space.feature_space, v) for v in value]
        return value
    if isinstance(space, gs.Graph) and isinstance(value, gs.GraphInstance):
        out: dict[str, Any] = {"nodes": value_to_wire(_stacked(space.node_space), value.nodes)}
        if value.edges is not None:
            out["edges"] = value_to_wire(_stacked(space.edge_space), value.edges) if space.edge_space is not None else value.edges
            out["edge_links"] = np.asarray(value.edge_links, dtype=np.int64)
        return out
    if isinstance(space, gs.OneOf) and isinstance(value, (list, tuple)) and len(value) == 2:
        index = int(value[0])
        return [index, value_to_wire(space.spaces[index], value[1]) if 0 <= index < len(space.spaces) else value[1]]
    return value


def _castable(arr: np.ndarray, dtype: np.dtype) -> bool:
    """Whether casting keeps every value (floats to floats always: NaN and bounds are the server's to judge)."""
    if dtype.kind == "f":
        return True
    if dtype.kind == "b":
        return bool(np.isin(arr, (0, 1)).all())
    if arr.dtype.kind == "f" and not (np.isfinite(arr).all() and (arr == np.round(arr)).all()):
        return False
    info = np.iinfo(dtype)
    return arr.size == 0 or bool(arr.min() >= info.min and arr.max() <= info.max)


def _stacked(space: gs.Space[Any] | None) -> gs.Space[Any]:
    """Graph nodes/edges are stacked arrays even for Discrete node spaces."""
    if isinstance(space, gs.Discrete):
        return gs.Box(low=int(space.start), high=int(space.start + space.n - 1), shape=(), dtype=space.dtype)
    assert space is not None
    return space
