"""``python -m gymwire.formats``: what ``gymwire rollout --format lerobot|minari`` runs.

``check FORMAT`` exits 0 when the format's writer can be imported, else 3 with the pip extra to
install; ``convert --format FORMAT ARROW_DIR OUT_DIR`` writes an Arrow dataset as that format and
prints the new manifest as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import FORMATS, MissingExtraError, require
from .convert import convert

MISSING_EXTRA_EXIT = 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gymwire.formats")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="can this Python write FORMAT?")
    check.add_argument("format", choices=FORMATS)
    conv = sub.add_parser("convert", help="an Arrow dataset into FORMAT")
    conv.add_argument("--format", required=True, choices=FORMATS[1:])
    conv.add_argument("--fps", type=int, default=None, help="LeRobot frame rate (default: the env family's)")
    conv.add_argument("--dataset-id", default=None, help="LeRobot repo id or Minari dataset id")
    conv.add_argument("--overwrite", action="store_true")
    conv.add_argument("--progress", action="store_true", help="a progress bar on stderr")
    conv.add_argument("arrow_dir")
    conv.add_argument("out_dir")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            require(args.format)
            return 0
        manifest = convert(
            args.arrow_dir, args.format, args.out_dir, overwrite=args.overwrite, fps=args.fps, dataset_id=args.dataset_id, progress=args.progress
        )
    except MissingExtraError as err:
        print(f"gymwire: {err}", file=sys.stderr)
        return MISSING_EXTRA_EXIT
    print(json.dumps(manifest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
