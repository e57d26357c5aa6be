"""How far an imagined frame is from a simulated one: PSNR and SSIM as scikit-image computes them,
and the resize that brings the simulator's frames to the world model's resolution.

SSIM is Wang et al.'s (2004) with the paper's settings: a Gaussian window of standard deviation 1.5
(11 pixels wide), K1 = 0.01, K2 = 0.03, population covariances, the data range 255, averaged over
the three colour channels. PSNR is ``10 log10(255^2 / MSE)``; identical frames have none (``None``:
the MSE is 0).

>>> import numpy as np
>>> from gymwire.compare.metrics import psnr, ssim
>>> a = np.zeros((64, 64, 3), np.uint8)
>>> psnr(a, a) is None, ssim(a, a)
(True, 1.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

INSTALL_HINT = "pip install 'gymwire[compare]'"


def _skimage() -> Any:
    try:
        import skimage.metrics
        import skimage.transform
    except ImportError as err:
        raise ImportError(f"gymwire.compare needs scikit-image for SSIM, PSNR and resizing: {INSTALL_HINT}") from err
    return skimage


def check_frames(imagined: np.ndarray, simulated: np.ndarray) -> None:
    if imagined.shape != simulated.shape or imagined.ndim != 3 or imagined.shape[2] != 3:
        raise ValueError(f"frames to compare must both be [H, W, 3]; got {list(imagined.shape)} and {list(simulated.shape)}")
    if imagined.dtype != np.uint8 or simulated.dtype != np.uint8:
        raise ValueError(f"frames to compare must be uint8; got {imagined.dtype} and {simulated.dtype}")


def psnr(imagined: np.ndarray, simulated: np.ndarray) -> float | None:
    """Peak signal-to-noise ratio in dB over uint8 RGB frames; None for identical frames."""
    check_frames(imagined, simulated)
    if np.array_equal(imagined, simulated):
        return None
    return float(_skimage().metrics.peak_signal_noise_ratio(simulated, imagined, data_range=255))


def ssim(imagined: np.ndarray, simulated: np.ndarray) -> float:
    """Structural similarity (Wang et al. 2004, Gaussian window sigma 1.5) over uint8 RGB frames, in [-1, 1]."""
    check_frames(imagined, simulated)
    value = _skimage().metrics.structural_similarity(
        simulated,
        imagined,
        data_range=255,
        channel_axis=-1,
        gaussian_weights=True,
        sigma=1.5,
        use_sample_covariance=False,
    )
    return float(value)


def resize_frame(frame: np.ndarray, height: int, width: int) -> np.ndarray:
    """A uint8 [h, w, 3] frame at [height, width, 3]: bilinear, anti-aliased when it shrinks
    (scikit-image's resize), rounded back to uint8. A frame of that size already is returned as it is."""
    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
        raise ValueError(f"a frame must be uint8 [H, W, 3]; got {frame.dtype} {list(frame.shape)}")
    if frame.shape[:2] == (height, width):
        return np.ascontiguousarray(frame)
    shrinks = frame.shape[0] > height or frame.shape[1] > width
    out = _skimage().transform.resize(frame, (height, width, 3), order=1, anti_aliasing=shrinks, preserve_range=True)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)
