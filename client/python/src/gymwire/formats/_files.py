"""What every dataset writer does with its output directory before it writes."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..dataset import DatasetExistsError


def clear_for_writing(out: Path, marker: str, overwrite: bool) -> None:
    """Makes sure ``out`` can take a new dataset: absent or empty, or (with ``overwrite``) a dataset of
    this format (it holds ``marker``), which is removed. Anything else is refused."""
    if not out.exists() or not any(out.iterdir()):
        if out.exists():
            out.rmdir()
        return
    if not (out / marker).exists():
        raise DatasetExistsError(f"{out} is not empty and holds no dataset ({marker}); write into a new or empty directory")
    if not overwrite:
        raise DatasetExistsError(f"{out} already holds a dataset ({marker}); write elsewhere, or pass overwrite=True to replace it")
    shutil.rmtree(out)
