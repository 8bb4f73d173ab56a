"""The OpenShift AI workbench notebook (notebooks/openshift_ai.ipynb), run top to bottom without a cluster.

It runs in its own venv (codeflare-sdk's Ray is not the project's; tests/support/notebook_venv.py) as a dry run
(``ZELDA_NOTEBOOK_DRY_RUN=1``), against:

- a stand-in Kubernetes API server (tests/support/kube_api.py) holding what the chart rendered for production on
  OpenShift (trainer off: the notebook is the trainer), the Secrets the chart reads and the Kueue LocalQueue.
  codeflare-sdk looks the LocalQueue up there before it labels the RayCluster, as on a real cluster; the dry run
  only reads, and the stand-in records any write, which fails the test;
- the S3 test server as the chart's object store, holding reward models written by the project's own code.

Then what the notebook left is checked: codeflare-sdk's RayCluster (its ``write_to_file`` YAML), the Ray job
submissions and the re-judging / retraining Jobs.

How far the checks go: no installable package ships the KubeRay or Kueue CRDs (PyPI has neither; the CRDs live
only in the operators' source repositories), so the RayCluster is checked against the rules its CRD states
(required fields, types, the replica bounds) and Kueue's admission rules written out below, and each of its pod
templates against Kubernetes' own PodTemplateSpec schema with kubernetes-validate (strict), which is what the CRD
embeds. The Jobs are core Kubernetes objects: kubernetes-validate checks them whole. Every command goes through
the real CLI parser (tests/deploy/contracts.py) and every environment variable must be one a service reads.
"""

from __future__ import annotations

import base64
import json
import re
import shlex
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes_validate
import numpy as np
import pytest
import yaml

from tests.deploy.chart import KUBE_VERSION, NAMESPACE, RELEASE, deep_merge, render, values_file
from tests.deploy.contracts import check_command, known_env_vars
from tests.support.kube_api import KubeApiStandIn, Request
from tests.support.notebook_venv import ROOT, build_env, checkout_pythonpath, notebook_python
from zelda_rlaif.events import RewardModelUpdated
from zelda_rlaif.reward_model.metadata import PairCounts, RewardModelMetadata
from zelda_rlaif.reward_model.model_file import RewardModelFile
from zelda_rlaif.reward_model.network import RewardNet
from zelda_rlaif.reward_model.normalization import Normalization
from zelda_rlaif.scores import ScoresVersionManifest
from zelda_rlaif.settings import StoreSettings
from zelda_rlaif.storage import keys, open_store
from zelda_rlaif.storage.base import ObjectStore

# A first run builds the notebook's venv (minutes; in the background, tests/support/prebuilt.py).
pytestmark = [pytest.mark.slow, pytest.mark.prebuilt("notebook-venv"), pytest.mark.timeout(1800)]

NOTEBOOK = ROOT / "notebooks" / "openshift_ai.ipynb"
RUN_ID = "workbench-test"
LOCAL_QUEUE = "zelda-prod"  # values-prod.yaml's trainer.kueue.queueName: the project's LocalQueue
NEW_JUDGE_MODEL = "judge-model-v2"
VERSION = "state-judge-model-v2"  # the scores version the notebook names after the kind and the new model
CLUSTER_NAME = "zelda-workbench"
S3_ACCESS_KEY, S3_SECRET_KEY = "notebook-access-key", "notebook-secret-key-0123456789"
SECRETS = {  # the Secrets values-prod.yaml names (existingSecret), as their owners would create them
    "zelda-rlaif-s3": {"accessKey": S3_ACCESS_KEY, "secretKey": S3_SECRET_KEY},
    "zelda-rlaif-nats": {"password": "nats-password-for-the-notebook"},
    "zelda-rlaif-llm": {"api-key": "llm-key-for-the-notebook"},
}
# Variables Ray or codeflare-sdk read, not a zelda-rlaif service.
RUNTIME_VARS = {"RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED", "OMP_NUM_THREADS"}
# Kueue admits a RayCluster as one workload of at most 8 pod sets: the head and up to 7 worker groups.
KUEUE_MAX_WORKER_GROUPS = 7
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@dataclass(frozen=True)
class Executed:
    outputs: dict[str, str]  # cell id -> its printed text
    raycluster: dict[str, Any]
    raycluster_text: str
    ray_jobs: list[dict[str, Any]]
    jobs: dict[str, dict[str, Any]]  # component label -> Job
    chart: list[dict[str, Any]]
    requests: list[Request]
    writes: list[Request]


def store_reward_model(store: ObjectStore, epoch: int, accuracy: float) -> None:
    """What the reward-model service leaves for an accepted epoch: rm.pt, then its metadata."""
    states = np.random.default_rng(epoch).standard_normal((64, 128)).astype(np.float32)
    model = RewardModelFile.from_net(RewardNet(), Normalization.fit(states), run_id=RUN_ID, epoch=epoch)
    store.put_bytes(keys.reward_model(RUN_ID, epoch), model.to_bytes())
    store.put_json(keys.reward_model_metadata(RUN_ID, epoch), metadata(epoch, accuracy))


def metadata(epoch: int, accuracy: float, scores_version: str | None = None) -> RewardModelMetadata:
    event = RewardModelUpdated(run_id=RUN_ID, epoch=epoch, accepted=True, model_epoch=epoch, pairs=10,
                               validation_accuracy=accuracy, trained_on_epochs=list(range(epoch + 1)))
    return RewardModelMetadata(
        run_id=RUN_ID, epoch=epoch, accepted=True, model_epoch=epoch, trained_on_epochs=event.trained_on_epochs,
        scores_version=scores_version, segments=12,
        pairs=PairCounts(train_decisive=8, train_ties=0, validation_decisive=2, validation_ties=0),
        validation_accuracy=accuracy, event=event)


def store_scores_version(store: ObjectStore, epoch: int) -> None:
    """A finished re-judging of ``epoch`` and its retrained model, as the Jobs of an earlier session left them."""
    store.put_json(keys.scores_version_manifest(RUN_ID, epoch, VERSION), ScoresVersionManifest(
        run_id=RUN_ID, epoch=epoch, version=VERSION, created_at=datetime.now(UTC), rejudged_kinds=["state"],
        carried_kinds=["puzzle", "vision"], settings={"state": {"backend": "openai", "model": NEW_JUDGE_MODEL}},
        weights={"state": 0.5, "puzzle": 0.25, "vision": 0.25}, segments=12, scored=11, unjudged=1,
        compared_with_live=11, spearman_vs_live=0.72))
    store.put_json(keys.versioned_reward_model_metadata(RUN_ID, epoch, VERSION), metadata(epoch, 0.95, VERSION))


def secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NAMESPACE},
            "type": "Opaque", "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def cell_text(cell: dict[str, Any]) -> str:
    parts: list[str] = []
    for output in cell.get("outputs", []):
        text = output.get("text") if output["output_type"] == "stream" else output.get("data", {}).get("text/plain")
        if text is not None:
            parts.extend(text if isinstance(text, list) else [text])  # nbformat splits long text into lines
    return "".join(parts)


@pytest.fixture(scope="module")
def executed(s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[Executed]:
    python = notebook_python()
    tmp = tmp_path_factory.mktemp("notebook")
    bucket = f"s3://notebook-{uuid.uuid4().hex[:10]}/zelda"
    store = open_store(StoreSettings(url=bucket, s3_endpoint=s3_endpoint, s3_access_key=S3_ACCESS_KEY,
                                     s3_secret_key=S3_SECRET_KEY), create_bucket=True)
    store_reward_model(store, 0, 0.8)
    store_reward_model(store, 1, 0.9)
    store_scores_version(store, 1)
    values = deep_merge(values_file("values-prod.yaml"), {
        "trainer": {"enabled": False},
        "store": {"url": bucket, "s3": {"endpoint": s3_endpoint}},
    })
    chart = render(values)
    with KubeApiStandIn() as api:
        for manifest in chart:
            if manifest["kind"] in {"Deployment", "Route", "Service"}:
                api.put({**manifest, "metadata": {**manifest["metadata"], "namespace": NAMESPACE}})
        for name, data in SECRETS.items():
            api.put(secret(name, data))
        api.put({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
                 "metadata": {"name": LOCAL_QUEUE, "namespace": NAMESPACE}, "spec": {"clusterQueue": "cluster"}})
        env = {
            **build_env(),
            "HOME": str(tmp / "home"),  # codeflare-sdk writes the RayCluster under ~/.codeflare/resources
            "PYTHONPATH": checkout_pythonpath(),
            "JUPYTER_PLATFORM_DIRS": "1",
            "ZELDA_NOTEBOOK_DRY_RUN": "1",
            "ZELDA_NOTEBOOK_RENDER_DIR": str(tmp / "rendered"),
            "ZELDA_NOTEBOOK_NAMESPACE": NAMESPACE,
            "ZELDA_NOTEBOOK_RELEASE": RELEASE,
            "ZELDA_NOTEBOOK_LOCAL_QUEUE": LOCAL_QUEUE,
            "ZELDA_NOTEBOOK_API_SERVER": api.url,
            "ZELDA_NOTEBOOK_API_TOKEN": "sha256~test-token",
            "ZELDA_NOTEBOOK_RUN_ID": RUN_ID,
            "ZELDA_NOTEBOOK_CLUSTER_NAME": CLUSTER_NAME,
            "ZELDA_NOTEBOOK_NEW_JUDGE_MODEL": NEW_JUDGE_MODEL,
        }
        out = artifacts_dir / "openshift_ai.dry-run.ipynb"  # the notebook as a user would see it, outputs included
        result = subprocess.run(
            [str(python), "-c", RUN_NOTEBOOK, str(NOTEBOOK), str(NOTEBOOK.parent), str(out)],
            env=env, cwd=tmp, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"the notebook failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    cells = json.loads(out.read_text())["cells"]
    raycluster_path = tmp / "home" / ".codeflare" / "resources" / f"{CLUSTER_NAME}.yaml"
    rendered = tmp / "rendered"
    jobs = [yaml.safe_load(path.read_text()) for path in sorted((rendered / "jobs").glob("*.yaml"))]
    yield Executed(
        outputs={cell["id"]: cell_text(cell) for cell in cells if cell["cell_type"] == "code"},
        raycluster=yaml.safe_load(raycluster_path.read_text()),
        raycluster_text=raycluster_path.read_text(),
        ray_jobs=[json.loads(path.read_text()) for path in sorted((rendered / "ray-jobs").glob("*.json"))],
        jobs={job["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]: job for job in jobs},
        chart=chart,
        requests=list(api.requests),
        writes=list(api.writes),
    )


RUN_NOTEBOOK = """
import sys
import nbformat
from nbclient import NotebookClient
notebook = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(notebook, sys.argv[3])
"""


def validate_core(manifest: dict[str, Any], where: str) -> None:
    try:
        kubernetes_validate.validate(manifest, KUBE_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{where} at {'.'.join(str(p) for p in exc.path)}: {exc.message}")


def check_pod_template(template: dict[str, Any], where: str) -> None:
    """The CRD embeds Kubernetes' PodTemplateSpec: validated as the template of a core PodTemplate."""
    validate_core({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "check"}, "template": template},
                  where)


def check_ray_start_params(params: Any, where: str) -> None:
    assert isinstance(params, dict), where
    assert all(isinstance(v, str) for v in params.values()), f"{where}: rayStartParams maps names to strings"


def check_raycluster(cluster: dict[str, Any]) -> None:
    """The RayCluster CRD's rules (ray.io/v1), as stated in its schema: what it requires and allows."""
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    name = cluster["metadata"]["name"]
    assert DNS_LABEL.fullmatch(name) and len(name) <= 53, f"{name}: KubeRay appends suffixes to 53 characters"
    spec = cluster["spec"]
    allowed = {"authOptions", "autoscalerOptions", "enableInTreeAutoscaling", "gcsFaultToleranceOptions",
               "headGroupSpec", "headServiceAnnotations", "managedBy", "rayVersion", "suspend", "upgradeStrategy",
               "workerGroupSpecs"}
    assert set(spec) <= allowed, f"fields the RayCluster CRD does not have: {set(spec) - allowed}"
    assert isinstance(spec.get("rayVersion", ""), str) and isinstance(spec.get("enableInTreeAutoscaling", False), bool)
    head = spec["headGroupSpec"]
    assert set(head) <= {"enableIngress", "headService", "rayStartParams", "serviceType", "template"}
    assert head.get("serviceType", "ClusterIP") in {"ClusterIP", "NodePort", "LoadBalancer"}
    check_ray_start_params(head.get("rayStartParams", {}), "head")
    check_pod_template(head["template"], "headGroupSpec.template")
    groups = spec.get("workerGroupSpecs", [])
    names = [group["groupName"] for group in groups]
    assert len(set(names)) == len(names), f"worker group names repeat: {names}"
    for group in groups:
        where = f"workerGroupSpecs[{group['groupName']}]"
        assert set(group) <= {"groupName", "idleTimeoutSeconds", "maxReplicas", "minReplicas", "numOfHosts",
                              "rayStartParams", "replicas", "scaleStrategy", "suspend", "template"}, where
        for bound in ("replicas", "minReplicas", "maxReplicas"):
            assert isinstance(group.get(bound, 0), int) and not isinstance(group.get(bound, 0), bool), where
        assert 0 <= group["minReplicas"] <= group.get("replicas", group["minReplicas"]) <= group["maxReplicas"], where
        check_ray_start_params(group.get("rayStartParams", {}), where)
        check_pod_template(group["template"], f"{where}.template")


def check_kueue_admits(cluster: dict[str, Any]) -> None:
    """What Kueue's RayCluster integration requires of a queued cluster."""
    assert cluster["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == LOCAL_QUEUE
    spec = cluster["spec"]
    assert spec.get("enableInTreeAutoscaling") is not True, "Kueue admits a fixed size: no in-tree autoscaling"
    assert len(spec.get("workerGroupSpecs", [])) <= KUEUE_MAX_WORKER_GROUPS


def containers(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [*template["spec"].get("initContainers", []), *template["spec"]["containers"]]


def env_names(container: dict[str, Any]) -> set[str]:
    return {var["name"] for var in container.get("env", [])}


# --- what the notebook read and changed --------------------------------------------------------------------------


def test_the_dry_run_reads_the_cluster_and_changes_nothing(executed: Executed) -> None:
    assert not executed.writes, f"a dry run sent writes to the API server: {executed.writes}"
    read = {request.path for request in executed.requests}
    assert f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{RELEASE}-reward-model" in read
    assert f"/apis/kueue.x-k8s.io/v1beta1/namespaces/{NAMESPACE}/localqueues" in read


def test_the_chart_wiring_and_the_hud_are_shown(executed: Executed) -> None:
    (route,) = [m for m in executed.chart if m["kind"] == "Route"]
    assert f"https://{route['spec']['host']}" in executed.outputs["chart"]
    assert f"https://{route['spec']['host']}" in executed.outputs["watch"]
    assert "ZELDA_STORE_S3_ACCESS_KEY" in executed.outputs["chart"]
    for data in SECRETS.values():
        for value in data.values():
            assert value not in "".join(executed.outputs.values()), "a secret value was printed"


# --- the Ray cluster ---------------------------------------------------------------------------------------------


def test_codeflare_renders_a_valid_raycluster_queued_by_kueue(executed: Executed) -> None:
    cluster = executed.raycluster
    check_raycluster(cluster)
    check_kueue_admits(cluster)
    assert cluster["metadata"]["name"] == CLUSTER_NAME and cluster["metadata"]["namespace"] == NAMESPACE
    reward_model = next(m for m in executed.chart
                        if m["kind"] == "Deployment" and m["metadata"]["name"] == f"{RELEASE}-reward-model")
    trainer_image = reward_model["spec"]["template"]["spec"]["containers"][0]["image"].replace(
        "/reward-model:", "/trainer:")
    spec = cluster["spec"]
    templates = [spec["headGroupSpec"]["template"], *(g["template"] for g in spec["workerGroupSpecs"])]
    for template in templates:
        for container in containers(template):
            assert container["image"] == trainer_image
            assert env_names(container) <= known_env_vars() | RUNTIME_VARS
            assert {"ZELDA_NATS_URL", "ZELDA_STORE_URL", "ZELDA_STORE_S3_ENDPOINT"} <= env_names(container)


def test_secrets_stay_out_of_the_raycluster(executed: Executed) -> None:
    for data in SECRETS.values():
        for value in data.values():
            assert value not in executed.raycluster_text


def test_each_cycle_runs_the_trainer_through_the_real_cli(executed: Executed) -> None:
    cycles = executed.ray_jobs
    assert len(cycles) == 2, "the first cycle and the next one"
    for cycle in cycles:
        argv = shlex.split(cycle["entrypoint"])
        assert check_command(argv) == "trainer"
        assert argv[argv.index("--ray-address") + 1] == "auto"
        assert argv[argv.index("--run-id") + 1] == RUN_ID
        assert "--resume" in argv, "each cycle continues the run from its last checkpoint"
        env_vars = cycle["runtime_env"]["env_vars"]
        assert set(env_vars) <= known_env_vars()
        assert {"ZELDA_STORE_S3_ACCESS_KEY", "ZELDA_STORE_S3_SECRET_KEY", "ZELDA_NATS_PASSWORD"} <= set(env_vars)
        assert all(value == "<secret>" for value in env_vars.values()), "the render leaves secret values out"
    assert len({cycle["submission_id"] for cycle in cycles}) == 2


# --- the reward model and re-judging -----------------------------------------------------------------------------


def test_the_latest_reward_model_is_loaded_from_the_store(executed: Executed) -> None:
    shown = executed.outputs["reward-model"]
    assert "reward model of epoch 1: validation accuracy 0.900" in shown
    assert "trained on epochs [0, 1]" in shown and "128 input features" in shown
    compared = executed.outputs["compare"]
    assert f"{VERSION}: 11 of 12 segments scored" in compared and "Spearman against the live scores 0.72" in compared
    assert "validation accuracy 0.95, live: 0.9" in compared


def test_rejudge_and_retrain_run_as_queued_jobs_in_the_charts_own_pods(executed: Executed) -> None:
    assert set(executed.jobs) == {"rejudge", "retrain"}
    deployments = {m["metadata"]["name"]: m for m in executed.chart if m["kind"] == "Deployment"}
    services = [m for m in executed.chart if m["kind"] == "Service"]
    expected = {
        "rejudge": (f"{RELEASE}-judge-state", "judge",
                    ["--rejudge", RUN_ID, "--epoch", "1", "--kind", "state", "--version", VERSION]),
        "retrain": (f"{RELEASE}-reward-model", "reward-model",
                    ["--retrain", RUN_ID, "--epoch", "1", "--scores-version", VERSION]),
    }
    for component, (deployment_name, command, arguments) in expected.items():
        job = executed.jobs[component]
        validate_core(job, f"Job {job['metadata']['name']}")
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == LOCAL_QUEUE
        assert DNS_LABEL.fullmatch(job["metadata"]["name"]) and len(job["metadata"]["name"]) <= 63
        template = job["spec"]["template"]
        (container,) = containers(template)  # no provision init container: re-judging uses no NATS
        argv = container["command"]
        assert check_command(argv) == command and argv[2:] == arguments
        service_pod = deployments[deployment_name]["spec"]["template"]["spec"]
        assert container["image"] == service_pod["containers"][0]["image"]
        assert template["spec"]["serviceAccountName"] == service_pod["serviceAccountName"]
        assert env_names(container) <= known_env_vars() | RUNTIME_VARS
        by_name = {var["name"]: var for var in container["env"]}
        assert "secretKeyRef" in by_name["ZELDA_STORE_S3_SECRET_KEY"]["valueFrom"], "secrets stay references"
        labels = template["metadata"]["labels"]
        for service in services:
            selector = service["spec"]["selector"]
            assert not selector.items() <= labels.items(), f"{service['metadata']['name']} would route to the Job"
    (rejudge,) = containers(executed.jobs["rejudge"]["spec"]["template"])
    rejudge_env = {var["name"]: var.get("value") for var in rejudge["env"]}
    assert rejudge_env["ZELDA_JUDGE_LLM_MODEL"] == NEW_JUDGE_MODEL
    assert rejudge_env["ZELDA_JUDGE_KIND"] == "state"
