"""Adapting predicted trajectories to the shape each env takes (NAVSIM ``[8, 3]``, Bench2Drive ``[6, 2]``)."""

from __future__ import annotations

import numpy as np


def adapt_waypoints(waypoints: np.ndarray, num_waypoints: int, dims: int, interval: float = 0.5, target_interval: float = 0.5) -> np.ndarray:
    """Resamples ``[N, K, 2 or 3]`` ego-frame waypoints to ``[N, num_waypoints, dims]``.

    Points are ``interval`` seconds apart starting one interval ahead (the ego is at t = 0, the
    origin); the result's are ``target_interval`` apart. Positions are interpolated linearly in
    time, and extrapolated past the last point along the last segment's velocity. A heading column
    is added (``dims == 3``) from the direction of travel when the model predicts none, and dropped
    for ``dims == 2``.
    """
    wps = np.asarray(waypoints, np.float64)
    if wps.ndim != 3 or wps.shape[2] not in (2, 3) or wps.shape[1] < 1:
        raise ValueError(f"waypoints must be [N, K, 2 or 3] with K >= 1, got {list(wps.shape)}")
    if dims not in (2, 3):
        raise ValueError(f"dims must be 2 (x, y) or 3 (x, y, heading), got {dims}")
    n, k, _ = wps.shape
    # The origin is the ego at t = 0, so the first point is interpolated from there.
    xy = np.concatenate([np.zeros((n, 1, 2)), wps[:, :, :2]], axis=1)
    times = interval * np.arange(k + 1)
    wanted = target_interval * np.arange(1, num_waypoints + 1)
    out = np.empty((n, num_waypoints, dims))
    last_velocity = (xy[:, -1] - xy[:, -2]) / interval
    for c in range(2):
        inside = np.stack([np.interp(wanted, times, xy[i, :, c]) for i in range(n)])
        beyond = xy[:, -1:, c] + last_velocity[:, None, c] * (wanted - times[-1])[None, :]
        out[:, :, c] = np.where(wanted[None, :] > times[-1], beyond, inside)
    if dims == 3:
        if wps.shape[2] == 3:
            padded = np.concatenate([np.zeros((n, 1)), np.unwrap(wps[:, :, 2], axis=1)], axis=1)
            heading = np.stack([np.interp(wanted, times, padded[i]) for i in range(n)])
            heading = np.where(wanted[None, :] > times[-1], padded[:, -1:], heading)
        else:
            path = np.concatenate([np.zeros((n, 1, 2)), out[:, :, :2]], axis=1)
            step = np.diff(path, axis=1)
            heading = np.arctan2(step[..., 1], step[..., 0])
            # Standing still: keep the previous heading (0 at the start).
            still = np.hypot(step[..., 0], step[..., 1]) < 1e-6
            for j in range(num_waypoints):
                heading[:, j] = np.where(still[:, j], heading[:, j - 1] if j else 0.0, heading[:, j])
        out[:, :, 2] = heading
    return out.astype(np.float32)
