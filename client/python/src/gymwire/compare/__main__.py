"""``python -m gymwire.compare``: a world model against its simulator on a gymwire server.

Both envs are made on the server at ``--url``; the report (gymwire.compare) prints as a table, and
``--json PATH`` writes it as JSON too (``-`` for stdout, instead of the table). Exit status 0 when
the run completes (whatever the numbers), 2 on a usage error, 1 when an env fails.

    python -m gymwire.compare --url ws://127.0.0.1:8765 \\
      --world-model gymwire/EvacWorldModel-v0 --world-model-kwargs '{"resolution": 128, "return_all_frames": true}' \\
      --simulator robosuite/Lift-v0 --simulator-kwargs '{"image_size": 128}' --simulator-image agentview_image \\
      --chunks 4 --seed 0 --json report.json
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from . import compare_envs


def _kwargs(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not JSON: {err}") from err
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _columns(text: str) -> list[int]:
    try:
        return [int(c) for c in text.split(",")]
    except ValueError as err:
        raise argparse.ArgumentTypeError("must be comma-separated integers, e.g. 0,1,2,6") from err


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gymwire.compare", description="A world model against its simulator: PSNR, SSIM and success per frame.")
    parser.add_argument("--url", required=True, help="the gymwire server, e.g. ws://127.0.0.1:8765")
    parser.add_argument("--world-model", required=True, help="world-model env id, e.g. gymwire/EvacWorldModel-v0")
    parser.add_argument("--world-model-kwargs", type=_kwargs, default={}, help="its make kwargs as JSON")
    parser.add_argument("--world-model-image", default="full_image", help="its frame's observation key (default full_image)")
    parser.add_argument("--simulator", required=True, help="simulator env id, e.g. robosuite/Lift-v0")
    parser.add_argument("--simulator-kwargs", type=_kwargs, default={}, help="its make kwargs as JSON")
    parser.add_argument("--simulator-image", default=None, help="its frame's observation key (dotted path; default: the observation itself)")
    parser.add_argument("--simulator-reset-options", type=_kwargs, default=None, help="the simulator's reset options as JSON")
    parser.add_argument(
        "--simulator-action-columns",
        type=_columns,
        default=None,
        help="the columns of each world-model action row the simulator takes, e.g. 0,1,2,6 (default: all)",
    )
    parser.add_argument("--seed", type=int, default=0, help="resets both envs and draws the actions (default 0)")
    parser.add_argument("--chunks", type=int, default=4, help="world-model steps of seeded random actions (default 4)")
    parser.add_argument("--actions", default=None, help="a .npy file of action rows [N, A] instead (N a multiple of the chunk)")
    parser.add_argument("--json", dest="json_path", default=None, help="write the report as JSON to this path ('-': stdout, no table)")
    args = parser.parse_args(argv)
    if args.chunks < 1:
        parser.error("--chunks must be at least 1")
    actions = np.load(args.actions) if args.actions else None

    import gymwire
    from gymwire.errors import GymwireError

    about = {
        "world_model": {"env_id": args.world_model, "kwargs": args.world_model_kwargs},
        "simulator": {"env_id": args.simulator, "kwargs": args.simulator_kwargs},
    }
    try:
        with gymwire.Client(args.url) as client:
            world_model = client.make(args.world_model, **args.world_model_kwargs)
            simulator = client.make(args.simulator, **args.simulator_kwargs)
            try:
                report = compare_envs(
                    world_model,
                    simulator,
                    simulator_image=args.simulator_image,
                    world_model_image=args.world_model_image,
                    chunks=args.chunks,
                    seed=args.seed,
                    actions=actions,
                    simulator_reset_options=args.simulator_reset_options,
                    about=about,
                )
            finally:
                world_model.close()
                simulator.close()
    except (GymwireError, KeyError, ValueError, ImportError) as err:
        print(f"gymwire.compare: {err}", file=sys.stderr)
        return 1
    document = json.dumps(report.as_dict(), indent=2)
    if args.json_path == "-":
        print(document)
        return 0
    print(report.table())
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as out:
            out.write(document + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
