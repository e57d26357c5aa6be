"""GPU policy inference: an ONNX policy on CUDA when onnxruntime has it (else CPU), acting in a
remote vector env, with a progress bar; the episodes are written as a trajectory dataset.

Run: python examples/python/gpu_inference.py [--episodes 64] [--num-envs 16] [--out /tmp/gymwire-cartpole]
Needs onnx, onnxruntime (or onnxruntime-gpu for CUDA), tqdm, pyarrow.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _server import check, server_url
from tqdm import tqdm

import gymwire
from gymwire.policies import CARTPOLE_LINEAR_WEIGHTS, make_policy, write_linear_onnx

parser = argparse.ArgumentParser()
parser.add_argument("--episodes", type=int, default=64)
parser.add_argument("--num-envs", type=int, default=16)
parser.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
parser.add_argument("--out", default=None)
args = parser.parse_args()

workdir = Path(tempfile.mkdtemp(prefix="gymwire-gpu-"))
model = write_linear_onnx(str(workdir / "cartpole-linear.onnx"), CARTPOLE_LINEAR_WEIGHTS, value_weights=[0, 0, 1, 0])
policy = make_policy("onnx", path=model, device=args.device, seed=0)
print(f"policy on {policy.device}")

with server_url() as url:
    envs = gymwire.make_vec(url, "gymwire/CartPole-v1", num_envs=args.num_envs)
    start = time.perf_counter()
    with tqdm(total=args.episodes, unit="ep", desc=f"CartPole x{args.num_envs} [{policy.device}]") as bar:
        manifest = gymwire.collect(envs, policy, episodes=args.episodes, out_dir=args.out or workdir / "dataset", seed=0, progress=bar.update)
    elapsed = time.perf_counter() - start
    envs.close()

steps = manifest["counts"]["steps"]
ds = gymwire.load_dataset(args.out or workdir / "dataset")
mean_return = float(ds.episodes.column("return").to_numpy().mean())
print(f"{manifest['counts']['episodes']} episodes, {steps} steps in {elapsed:.1f}s ({steps / elapsed:.0f} steps/s), mean return {mean_return:.1f}")
check(manifest["counts"]["episodes"] == args.episodes, "every episode should be recorded")
check(mean_return > 60, f"the linear policy should beat random play (~22), got {mean_return:.1f}")
