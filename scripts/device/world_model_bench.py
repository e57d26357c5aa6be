"""The world-model benchmark: env-steps/s of gymwire/TorchWorldModel-v0 for 1, 8, 32 and 128 sessions
spread over (up to) 4 client processes, batched (one forward pass for the steps that arrive within
the window) against the same sessions stepped one by one (a server with batch size 1), plus device
memory and how far batched results are from one-by-one ones.

Run by scripts/device/world-model-bench.sh (which unpacks the carried Node and wheels); prints one
JSON object a line and writes the same lines to OUT/world-model-bench.jsonl.

    python3 scripts/device/world_model_bench.py --node NODE --server-js JS --out DIR [--cpu-smoke | --cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from typing import IO, Any

ENV_ID = "gymwire/TorchWorldModel-v0"
MODEL = "gymwire.worldmodel.models:bench_world_model"
SMOKE_MODEL = "gymwire.worldmodel.models:tiny_world_model"
NO_EPISODE_END = 10**9


class Server:
    """One `gymwire serve --torch-world-model` process; its output is kept for the report on failure."""

    def __init__(self, args: argparse.Namespace, max_batch: int, window: str) -> None:
        cmd = [
            args.node,
            args.server_js,
            "serve",
            "--port",
            "0",
            "--log-level",
            "warn",
            "--torch-world-model",
            args.model,
            "--torch-world-model-kwargs",
            json.dumps(args.model_kwargs),
            "--torch-world-model-device",
            args.device,
            "--torch-world-model-batch-size",
            str(max_batch),
            "--torch-world-model-batch-window",
            window,
            "--worker-timeout",
            "300s",
            "--max-frame-bytes",
            "512m",
            "--max-memory",
            "0",
            "--max-memory-per-client",
            "0",
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.url = self._wait_for_url(args.start_timeout)
        threading.Thread(target=self._drain, daemon=True).start()

    def _wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"on (ws://\S+)", line)
            if m:
                return m.group(1)
        self.stop()
        raise RuntimeError("the server did not start:\n" + "".join(self.lines[-40:]))

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines = (self.lines + [line])[-200:]

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url.replace("ws://", "http://") + "/metrics", timeout=30) as r:
            return r.read().decode()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def metric(text: str, name: str) -> float:
    total = 0.0
    for m in re.finditer(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+-]+)$", text, re.M):
        total += float(m.group(1))
    return total


def gpu_memory_used_mib() -> float | None:
    if not shutil.which("nvidia-smi"):
        return None
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30)
    try:
        return float(out.stdout.strip().splitlines()[0])
    except (ValueError, IndexError):
        return None


def client_main(url: str, sessions: int, seed: int) -> None:
    """One client process: a vector env of `sessions` sessions (one connection; each step one step_batch)."""
    import numpy as np

    import gymwire

    vec = gymwire.make_vec(url, ENV_ID, sessions, max_episode_steps=NO_EPISODE_END)
    vec.reset(seed=seed)
    shape = vec.single_action_space.shape
    actions = np.random.default_rng(seed).uniform(-0.5, 0.5, (sessions, *shape)).astype(np.float32)
    print("ready", flush=True)
    warm, measure = (float(x) for x in sys.stdin.readline().split()[1:3])
    end_warm = time.monotonic() + warm
    while time.monotonic() < end_warm:
        vec.step(actions)
    steps, start = 0, time.monotonic()
    while time.monotonic() - start < measure:
        vec.step(actions)
        steps += 1
    elapsed = time.monotonic() - start
    print(json.dumps({"steps": steps * sessions, "seconds": elapsed}), flush=True)
    vec.close()


def run_clients(args: argparse.Namespace, url: str, sessions: int) -> dict[str, Any]:
    """Session-steps per second of `sessions` sessions over min(4, sessions) client processes, stepping together."""
    procs = min(args.clients, sessions)
    split = [sessions // procs + (1 if i < sessions % procs else 0) for i in range(procs)]
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "client", url, str(n), str(1000 * i)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for i, n in enumerate(split)
    ]
    try:
        for child in children:
            assert child.stdout is not None
            line = child.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError(f"a client did not get ready: {line!r} {child.stderr.read() if child.stderr else ''}")
        for child in children:
            assert child.stdin is not None
            child.stdin.write(f"go {args.warm} {args.measure}\n")
            child.stdin.flush()
        results = []
        for child in children:
            assert child.stdout is not None
            line = child.stdout.readline()
            if not line:
                raise RuntimeError(f"a client died: {child.stderr.read() if child.stderr else ''}")
            results.append(json.loads(line))
    finally:
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
    steps = sum(r["steps"] for r in results)
    seconds = max(r["seconds"] for r in results)
    return {"sessions": sessions, "client_processes": procs, "env_steps_per_s": steps / seconds, "env_steps": steps, "seconds": seconds}


def equality(args: argparse.Namespace, url: str, sessions: int = 8, steps: int = 3) -> dict[str, Any]:
    """The frames and rewards of `sessions` seeded sessions stepped together (one step_batch a step)."""
    import numpy as np

    import gymwire

    vec = gymwire.make_vec(url, ENV_ID, sessions, max_episode_steps=NO_EPISODE_END)
    obs, _ = vec.reset(seed=7)
    shape = vec.single_action_space.shape
    rng = np.random.default_rng(7)
    frames, rewards = [], []
    for _ in range(steps):
        obs, _, _, _, info = vec.step(rng.uniform(-0.5, 0.5, (sessions, *shape)).astype(np.float32))
        frames.append(np.asarray(obs["full_image"]).astype(np.int16))
        rewards.append(np.asarray(info["rewards"], dtype=np.float64))
    vec.close()
    return {"frames": frames, "rewards": rewards}


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        client_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--node", required=True)
    parser.add_argument("--server-js", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--cpu-smoke", action="store_true", help="the tiny model on the CPU, 1 and 8 sessions, short phases: a dry run of the whole script")
    parser.add_argument("--cpu", action="store_true", help="a small model on the CPU (the docs' CPU figures)")
    parser.add_argument("--sessions", default="1,8,32,128")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--warm", type=float, default=3.0)
    parser.add_argument("--measure", type=float, default=8.0)
    parser.add_argument("--start-timeout", type=float, default=240.0)
    args = parser.parse_args()
    args.device = "cuda"
    args.model, args.model_kwargs = MODEL, {"size": 128, "width": 384, "blocks": 8}
    if args.cpu_smoke:
        args.device, args.model, args.model_kwargs = "cpu", SMOKE_MODEL, {}
        args.sessions, args.warm, args.measure = "1,8", 1.0, 2.0
    elif args.cpu:
        args.device, args.model_kwargs = "cpu", {"size": 64, "width": 128, "blocks": 2}
        if args.sessions == "1,8,32,128":
            args.sessions = "1,8,32"
    sessions = [int(s) for s in args.sessions.split(",")]
    os.makedirs(args.out, exist_ok=True)
    out: IO[str] = open(os.path.join(args.out, "world-model-bench.jsonl"), "a")

    def log(record: dict[str, Any]) -> None:
        line = json.dumps(record)
        print(line, flush=True)
        out.write(line + "\n")
        out.flush()

    import torch

    from gymwire.worldmodel.models import bench_world_model, tiny_world_model

    built = tiny_world_model() if args.cpu_smoke else bench_world_model(**args.model_kwargs)
    spec = built.world_model_spec
    log(
        {
            "phase": "setup",
            "model": args.model,
            "model_kwargs": args.model_kwargs,
            "parameters": sum(p.numel() for p in built.parameters()),
            "frame": [spec.height, spec.width],
            "chunk": spec.chunk,
            "device": args.device,
            "torch": torch.__version__,
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "gpu_memory_used_mib": gpu_memory_used_mib(),
        }
    )
    del built
    results: dict[str, dict[int, float]] = {}
    compared: dict[str, Any] = {}
    for mode, max_batch, window in (("batched", max(sessions), "2ms"), ("one_by_one", 1, "0ms")):
        t0 = time.monotonic()
        server = Server(args, max_batch, window)
        log({"phase": "server", "mode": mode, "start_s": round(time.monotonic() - t0, 1)})
        try:
            compared[mode] = equality(args, server.url)
            for n in sessions:
                before = server.metrics()
                r = run_clients(args, server.url, n)
                after = server.metrics()
                batches = metric(after, "gymwire_world_model_batch_size_count") - metric(before, "gymwire_world_model_batch_size_count")
                batched = metric(after, "gymwire_world_model_batch_size_sum") - metric(before, "gymwire_world_model_batch_size_sum")
                forward = metric(after, "gymwire_world_model_forward_seconds_sum") - metric(before, "gymwire_world_model_forward_seconds_sum")
                queued = metric(after, "gymwire_world_model_queue_wait_seconds_sum") - metric(before, "gymwire_world_model_queue_wait_seconds_sum")
                steps_seen = metric(after, "gymwire_world_model_queue_wait_seconds_count") - metric(before, "gymwire_world_model_queue_wait_seconds_count")
                results.setdefault(mode, {})[n] = r["env_steps_per_s"]
                log(
                    {
                        "phase": "throughput",
                        "mode": mode,
                        **r,
                        "mean_batch": batched / batches if batches else None,
                        "mean_forward_ms": 1000 * forward / batches if batches else None,
                        "mean_queue_wait_ms": 1000 * queued / steps_seen if steps_seen else None,
                        "device_memory_bytes": metric(after, "gymwire_world_model_device_memory_bytes"),
                        "gpu_memory_used_mib": gpu_memory_used_mib(),
                    }
                )
        finally:
            server.stop()
    import numpy as np

    frame_diff = max(int(np.abs(a - b).max()) for a, b in zip(compared["batched"]["frames"], compared["one_by_one"]["frames"], strict=True))
    reward_diff = max(float(np.abs(a - b).max()) for a, b in zip(compared["batched"]["rewards"], compared["one_by_one"]["rewards"], strict=True))
    log({"phase": "equality", "sessions": 8, "steps": 3, "max_frame_diff_levels": frame_diff, "max_reward_diff": reward_diff})
    log(
        {
            "phase": "summary",
            "device": args.device,
            "speedup": {str(n): results["batched"][n] / results["one_by_one"][n] for n in sessions},
            "batched_env_steps_per_s": {str(n): results["batched"][n] for n in sessions},
            "one_by_one_env_steps_per_s": {str(n): results["one_by_one"][n] for n in sessions},
        }
    )
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
