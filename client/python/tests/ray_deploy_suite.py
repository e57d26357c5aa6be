"""The container image and Kubernetes manifests in deploy/, checked without building or deploying.

The image cannot be built here (no container daemon, and base images come from a container
registry this machine does not reach), so the Dockerfile is linted with hadolint (from its PyPI
wheel) and its contract read from the file. The manifests are validated against the Kubernetes
API's JSON schemas shipped by kubernetes-validate (strict: unknown fields fail), and what they
promise (probes on /healthz, Prometheus scrape of /metrics, the token from a Secret, a non-root
user) is read from them. scripts/test-ray.sh runs this in the scale-out venv.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
MANIFESTS = sorted((REPO / "deploy" / "k8s").glob("*.yaml"))
KUBERNETES_VERSION = "1.37.0"
PORT = 8765


def _docs() -> list[dict[str, Any]]:
    return [doc for path in MANIFESTS for doc in yaml.safe_load_all(path.read_text()) if doc]


def _kind(kind: str) -> dict[str, Any]:
    found = [doc for doc in _docs() if doc["kind"] == kind]
    assert len(found) == 1, f"expected one {kind} in deploy/k8s, found {len(found)}"
    return found[0]


def test_dockerfile_passes_hadolint() -> None:
    hadolint = Path(sys.executable).with_name("hadolint")
    done = subprocess.run([str(hadolint), "--failure-threshold", "info", str(DOCKERFILE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_dockerfile_is_multi_stage_non_root_and_health_checked() -> None:
    text = DOCKERFILE.read_text()
    assert len(re.findall(r"^FROM\s", text, re.M)) >= 2
    user = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert re.search(r"^HEALTHCHECK .*\n?.*127\.0\.0\.1:8765/healthz", text, re.M)
    assert re.search(rf"^EXPOSE {PORT}$", text, re.M)
    assert f'"--port", "{PORT}"' in text
    # CPU onnxruntime by default: its install step must not download CUDA libraries.
    assert "ARG ONNXRUNTIME_NODE_INSTALL=skip" in text


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_matches_kubernetes_schema(path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        if doc:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_validator_rejects_a_broken_manifest() -> None:
    broken = yaml.safe_load((REPO / "deploy" / "k8s" / "deployment.yaml").read_text())
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["paht"] = "/healthz"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


def test_deployment_probes_metrics_token_and_user() -> None:
    deployment = _kind("Deployment")
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    port = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert port == {"ws": PORT}
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "ws"}
    annotations = pod["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics" and annotations["prometheus.io/port"] == str(PORT)
    token = {e["name"]: e for e in container["env"]}["GYMWIRE_TOKEN"]
    assert set(token["valueFrom"]) == {"secretKeyRef"}
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["metadata"]["labels"].items() >= deployment["spec"]["selector"]["matchLabels"].items()


def test_service_routes_to_the_deployment() -> None:
    service, deployment = _kind("Service"), _kind("Deployment")
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    (port,) = service["spec"]["ports"]
    assert port["port"] == PORT and port["targetPort"] == "ws"
    # Reconnects must reach the pod that holds the client's sessions to resume them.
    assert service["spec"]["sessionAffinity"] == "ClientIP"
