"""How ``gymwire.ray`` finds the server command, tested without Ray (gymwire/ray/server.py imports
none of it; the package's __init__ does, so the module is loaded from its file)."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SERVER_PY = REPO / "client" / "python" / "src" / "gymwire" / "ray" / "server.py"


def _load_server_module(path: Path = SERVER_PY):
    spec = importlib.util.spec_from_file_location(f"gymwire_ray_server_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_explicit_and_gymwire_bin_come_first(monkeypatch: pytest.MonkeyPatch) -> None:
    server = _load_server_module()
    assert server.find_gymwire_command("node /x/bin/gymwire.js") == ["node", "/x/bin/gymwire.js"]
    monkeypatch.setenv("GYMWIRE_BIN", "node '/opt/my gymwire/bin/gymwire.js'")
    assert server.find_gymwire_command() == ["node", "/opt/my gymwire/bin/gymwire.js"]


def test_a_checkout_runs_its_own_bin_and_the_server_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """From this checkout (npm install done), the command is node bin/gymwire.js, and it serves."""
    monkeypatch.delenv("GYMWIRE_BIN", raising=False)
    server = _load_server_module()
    command = server.find_gymwire_command()
    assert command[1:] == [str(REPO / "bin" / "gymwire.js")] and Path(command[0]).name == "node"
    out = subprocess.run([*command, "envs", "--json"], capture_output=True, text=True, timeout=120, cwd="/")
    assert out.returncode == 0, out.stderr
    assert "gymwire/CartPole-v1" in out.stdout


def _installed_copy(tmp_path: Path) -> Path:
    """server.py where an installed wheel puts it: no checkout around it."""
    copy = tmp_path / "site-packages" / "lib" / "python3" / "gymwire" / "ray" / "server.py"
    copy.parent.mkdir(parents=True)
    copy.write_text(SERVER_PY.read_text())
    return copy


def test_installed_package_uses_path_then_node_modules_and_never_npx(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GYMWIRE_BIN", raising=False)
    server = _load_server_module(_installed_copy(tmp_path))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("node", "npx"):  # npx on PATH must not be used: it would fetch from the registry
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    monkeypatch.chdir(project / "sub")
    with pytest.raises(server.GymwireCommandNotFoundError, match="GYMWIRE_BIN") as raised:
        server.find_gymwire_command()
    assert "npx" not in str(raised.value)

    local = project / "node_modules" / ".bin" / "gymwire"
    local.parent.mkdir(parents=True)
    local.write_text("#!/bin/sh\n")
    local.chmod(0o755)
    assert server.find_gymwire_command() == [str(local)]

    (bin_dir / "gymwire").write_text("#!/bin/sh\n")
    (bin_dir / "gymwire").chmod(0o755)
    assert server.find_gymwire_command() == [str(bin_dir / "gymwire")]
