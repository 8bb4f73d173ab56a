"""Render the Helm chart offline and look inside the result.

The chart declares NATS and MinIO as dependencies but does not vendor them (there is no registry access in
CI). Rendering does not need them; ``helm lint`` does, so ``lintable_copy`` lints a temporary copy with an
empty stand-in chart of each declared name and version in ``charts/``: every template of ours is linted
strictly, and nothing of theirs is pretended to be checked.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "zelda-rlaif"
VALUES_FILES = ("values-dev.yaml", "values-staging.yaml", "values-prod.yaml")
RELEASE = "zelda-rlaif"
NAMESPACE = "zelda"
KUBE_VERSION = "1.33.0"

# Kinds served by operators rather than Kubernetes itself; kubernetes-validate has no schema for them, so the
# tests check their required fields themselves.
CUSTOM_KINDS = {
    ("ray.io/v1", "RayCluster"),
    ("ray.io/v1", "RayJob"),
    ("keda.sh/v1alpha1", "ScaledObject"),
    ("serving.kserve.io/v1alpha1", "LLMInferenceService"),
    ("serving.kserve.io/v1alpha2", "LLMInferenceService"),
    ("route.openshift.io/v1", "Route"),
}

Manifest = dict[str, Any]


def values_file(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((CHART / name).read_text())
    assert isinstance(loaded, dict), f"{name} is not a mapping"
    return loaded


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's coalescing for plain maps: ``override`` wins, nested maps merge."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def render(values: dict[str, Any] | None = None) -> list[Manifest]:
    """Every manifest the chart renders for ``values`` (merged over values.yaml), NOTES.txt left out."""
    with helm_python.Chart.load(CHART) as chart:
        rendered = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    manifests: list[Manifest] = []
    for template, text in sorted(rendered.items()):
        if template.endswith("NOTES.txt"):
            continue
        manifests.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return manifests


def lintable_copy(destination: Path) -> Path:
    """A copy of the chart whose ``charts/`` holds an empty stand-in for each declared dependency."""
    copy = destination / CHART.name
    shutil.copytree(CHART, copy)
    metadata = yaml.safe_load((CHART / "Chart.yaml").read_text())
    for dependency in metadata.get("dependencies", []):
        stand_in = copy / "charts" / dependency["name"]
        stand_in.mkdir(parents=True)
        (stand_in / "Chart.yaml").write_text(yaml.safe_dump({
            "apiVersion": "v2",
            "name": dependency["name"],
            "version": dependency["version"],
            "description": "empty offline stand-in for lint",
            "type": "application",
        }))
    return copy


def of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def named(manifests: list[Manifest], kind: str, name: str) -> Manifest:
    matches = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def pod_specs(manifest: Manifest) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, pod spec) for every pod template inside a manifest, custom resources included."""
    kind = manifest["kind"]
    spec = manifest.get("spec", {})
    name = f"{kind}/{manifest['metadata']['name']}"
    if kind in {"Deployment", "StatefulSet", "DaemonSet", "Job"}:
        yield name, spec["template"]["spec"]
    elif kind == "RayCluster":
        yield from _ray_cluster_pods(name, spec)
    elif kind == "RayJob":
        if "rayClusterSpec" in spec:
            yield from _ray_cluster_pods(name, spec["rayClusterSpec"])
        if "submitterPodTemplate" in spec:
            yield f"{name}/submitter", spec["submitterPodTemplate"]["spec"]


def _ray_cluster_pods(name: str, cluster: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield f"{name}/head", cluster["headGroupSpec"]["template"]["spec"]
    for group in cluster.get("workerGroupSpecs", []):
        yield f"{name}/{group['groupName']}", group["template"]["spec"]


def pod_labels(manifest: Manifest) -> Iterator[dict[str, str]]:
    """The labels of every pod template inside a manifest."""
    kind = manifest["kind"]
    spec = manifest.get("spec", {})
    if kind in {"Deployment", "StatefulSet", "DaemonSet", "Job"}:
        yield spec["template"]["metadata"].get("labels", {})
    clusters = [spec] if kind == "RayCluster" else [spec["rayClusterSpec"]] if "rayClusterSpec" in spec else []
    for cluster in clusters:
        yield cluster["headGroupSpec"]["template"]["metadata"].get("labels", {})
        for group in cluster.get("workerGroupSpecs", []):
            yield group["template"]["metadata"].get("labels", {})
    if kind == "RayJob" and "submitterPodTemplate" in spec:
        yield spec["submitterPodTemplate"]["metadata"].get("labels", {})


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def env_map(container: dict[str, Any]) -> dict[str, Any]:
    """name -> value (or the valueFrom mapping) of a container's environment."""
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container.get("env", [])}
