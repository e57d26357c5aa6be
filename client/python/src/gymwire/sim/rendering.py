"""Which OpenGL MuJoCo renders offscreen frames with, chosen before MuJoCo is imported.

MuJoCo reads ``MUJOCO_GL`` once, at import; PyOpenGL (which robosuite's and Gymnasium's renderers
use) reads ``PYOPENGL_PLATFORM``. The two must agree. Where a GPU is present, EGL renders on it;
on a CPU-only machine, OSMesa (Debian's ``libosmesa6``) renders in software. Served and local runs
that should give the same pixels must use the same backend: call :func:`configure_gl` in both.
"""

from __future__ import annotations

import ctypes.util
import glob
import os
from collections.abc import MutableMapping


def gpu_present() -> bool:
    """An NVIDIA device node or a DRM render node: something EGL can render on in hardware."""
    return os.path.exists("/dev/nvidia0") or bool(glob.glob("/dev/dri/renderD*"))


def osmesa_present() -> bool:
    return ctypes.util.find_library("OSMesa") is not None


def choose_gl(environ: MutableMapping[str, str] | None = None) -> str:
    """``MUJOCO_GL`` as set, else ``egl`` with a GPU, else ``osmesa`` where libOSMesa is installed,
    else ``egl`` (Mesa's software EGL, slower to set up but present on most desktops)."""
    env = os.environ if environ is None else environ
    chosen = env.get("MUJOCO_GL")
    if chosen:
        return chosen
    if gpu_present():
        return "egl"
    return "osmesa" if osmesa_present() else "egl"


def configure_gl(environ: MutableMapping[str, str] | None = None) -> str:
    """Sets ``MUJOCO_GL`` and ``PYOPENGL_PLATFORM`` (each unless already set) to :func:`choose_gl`'s
    backend and returns it. Call before importing mujoco, robosuite or metaworld.

    >>> from gymwire.sim.rendering import configure_gl
    >>> configure_gl()  # 'osmesa' on a CPU-only machine with libosmesa6, 'egl' with a GPU
    """
    env = os.environ if environ is None else environ
    backend = choose_gl(env)
    env.setdefault("MUJOCO_GL", backend)
    if backend in ("egl", "osmesa"):
        env.setdefault("PYOPENGL_PLATFORM", backend)
    return backend


def effects_default() -> bool:
    """Shadows, reflections and multi-sample anti-aliasing on where a GPU renders, off in software:
    with OSMesa a 128-pixel Meta-World frame takes about 0.5 s with them and about 0.04 s without
    (measured on a 2-core VM under load)."""
    return gpu_present() and choose_gl() != "osmesa"


def effects_on(effects: bool | None) -> bool:
    return effects_default() if effects is None else bool(effects)


def drop_effects(model: object, scene: object) -> None:
    """No shadows or reflections in ``scene``, no anti-aliasing samples for render contexts made
    from ``model`` after this call."""
    import mujoco

    model.vis.quality.offsamples = 0  # type: ignore[attr-defined]
    for flag in (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION):
        scene.flags[flag] = 0  # type: ignore[attr-defined]
