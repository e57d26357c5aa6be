"""Where a pool's servers go: a plan over the cluster's nodes, made before any actor starts.

:func:`plan_placement` turns the pool's placement options and ``ray.nodes()`` into one target per
server: a node id (the server is pinned there with a node-affinity strategy) or ``None`` (Ray's
``SPREAD`` strategy picks). It is a pure function, so each choice is tested without a cluster.
"""

from __future__ import annotations

from typing import Any


def eligible_nodes(nodes: list[dict[str, Any]], node_resource: str | None = None) -> list[str]:
    """Ids of the alive nodes (that have ``node_resource``, when given), in the order Ray lists them."""
    found = []
    for node in nodes:
        if not node.get("Alive", node.get("alive", False)):
            continue
        if node_resource is not None and float((node.get("Resources") or {}).get(node_resource, 0)) <= 0:
            continue
        found.append(str(node["NodeID"]))
    return found


def plan_placement(
    nodes: list[dict[str, Any]],
    *,
    num_servers: int | None = None,
    servers_per_node: int | None = None,
    node_resource: str | None = None,
) -> list[str | None]:
    """One placement target per server.

    - ``servers_per_node=N``: N servers on every eligible node (``num_servers``, if given, must match).
    - ``node_resource="GPU"`` (without ``servers_per_node``): ``num_servers`` servers (default one per
      eligible node) dealt round-robin over the nodes that have that resource.
    - ``num_servers=N`` alone: N servers spread by Ray (``None`` targets).
    - nothing: one server per alive node.

    Example::

        plan_placement(ray.nodes(), servers_per_node=2)      # ['a', 'a', 'b', 'b']
        plan_placement(ray.nodes(), num_servers=3)           # [None, None, None]
    """
    if num_servers is not None and num_servers < 1:
        raise ValueError(f"num_servers must be at least 1, got {num_servers}")
    if servers_per_node is not None and servers_per_node < 1:
        raise ValueError(f"servers_per_node must be at least 1, got {servers_per_node}")
    if num_servers is not None and servers_per_node is None and node_resource is None:
        return [None] * num_servers
    targets = eligible_nodes(nodes, node_resource)
    if not targets:
        what = f"with resource {node_resource!r}" if node_resource else ""
        raise ValueError(f"no alive Ray node {what} to place a gymwire server on".replace("  ", " "))
    if servers_per_node is not None:
        plan: list[str | None] = [node for node in targets for _ in range(servers_per_node)]
        if num_servers is not None and num_servers != len(plan):
            raise ValueError(
                f"num_servers={num_servers} does not match servers_per_node={servers_per_node} on {len(targets)} eligible nodes ({len(plan)} servers)"
            )
        return plan
    count = num_servers if num_servers is not None else len(targets)
    return [targets[i % len(targets)] for i in range(count)]
