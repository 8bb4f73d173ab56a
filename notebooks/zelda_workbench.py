"""What openshift_ai.ipynb does beyond calling codeflare-sdk: read the installed chart's wiring, build commands
and Jobs, and submit them, or, in a dry run, write them down instead.

The chart is the source of truth for the services: their Deployments carry the environment every zelda-rlaif
process needs (NATS, the object store, logging), with secrets as references to the chart's Secrets, and the
images of the release. The notebook reads them from the cluster instead of asking you to copy them.

Dry run (``ZELDA_NOTEBOOK_DRY_RUN=1``): everything is read and built as for real, nothing is created, changed or
deleted. codeflare-sdk writes the RayCluster to ``~/.codeflare/resources/`` (its ``write_to_file``), and the
Ray job submissions and Kubernetes Jobs go to ``ZELDA_NOTEBOOK_RENDER_DIR`` (default ``./rendered``) as files.
tests/deploy/test_notebook.py runs the notebook that way and checks what it wrote.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

DRY_RUN = os.environ.get("ZELDA_NOTEBOOK_DRY_RUN", "") == "1"
RENDER_DIR = Path(os.environ.get("ZELDA_NOTEBOOK_RENDER_DIR") or "rendered")
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
FINISHED = {"SUCCEEDED", "FAILED", "STOPPED"}


class WorkbenchError(RuntimeError):
    """Something the notebook needs from the cluster is not there; the message says what to set or install."""


def current_namespace() -> str:
    """The workbench's own namespace (its data science project): where the chart was installed, by default."""
    if SERVICE_ACCOUNT_NAMESPACE.exists():
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    return ""


@dataclass
class ChartWiring:
    """One chart Deployment's container: image, plain environment and the Secret each secret variable names."""

    deployment: dict[str, Any]
    image: str
    env: dict[str, str] = field(default_factory=dict)
    secret_refs: dict[str, tuple[str, str]] = field(default_factory=dict)  # variable -> (Secret, key)


def read_deployment(api: client.ApiClient, namespace: str, name: str) -> ChartWiring:
    try:
        deployment = client.AppsV1Api(api).read_namespaced_deployment(name, namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            raise WorkbenchError(f"no Deployment {name} in namespace {namespace}: install the zelda-rlaif chart "
                                 "there first (docs/deployment.md), or set RELEASE to its release name") from exc
        raise
    manifest: dict[str, Any] = api.sanitize_for_serialization(deployment)
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    wiring = ChartWiring(deployment=manifest, image=container["image"])
    for var in container.get("env", []):
        ref = (var.get("valueFrom") or {}).get("secretKeyRef")
        if ref:
            wiring.secret_refs[var["name"]] = (ref["name"], ref["key"])
        elif "value" in var:
            wiring.env[var["name"]] = var["value"]
    return wiring


def read_secrets(api: client.ApiClient, namespace: str, refs: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The values behind ``refs``, for processes this notebook starts that cannot reference a Secret themselves."""
    core = client.CoreV1Api(api)
    values: dict[str, str] = {}
    for variable, (name, key) in refs.items():
        secret = core.read_namespaced_secret(name, namespace)
        if key not in (secret.data or {}):
            raise WorkbenchError(f"Secret {name} has no key {key!r} (read for {variable})")
        values[variable] = base64.b64decode(secret.data[key]).decode()
    return values


def sibling_image(image: str, target: str) -> str:
    """The release's image of another Dockerfile target: ``registry/judge:tag`` -> ``registry/trainer:tag``."""
    repository, _, tag = image.rpartition(":")
    if "/" in tag or not repository:  # no tag, only a registry port
        repository, tag = image, ""
    registry, _, _name = repository.rpartition("/")
    return f"{registry}/{target}" + (f":{tag}" if tag else "")


def trainer_argv(run_id: str, epochs: int, *, resume: bool) -> list[str]:
    """One training cycle on the Ray cluster: ``epochs`` more epochs of ``run_id``, continuing it with ``resume``."""
    argv = ["zelda-rlaif", "trainer", "--ray-address", "auto", "--no-progress", "--run-id", run_id,
            "--epochs", str(epochs)]
    return [*argv, "--resume"] if resume else argv


def rejudge_argv(run_id: str, epoch: int, kind: str, version: str) -> list[str]:
    return ["zelda-rlaif", "judge", "--rejudge", run_id, "--epoch", str(epoch), "--kind", kind,
            "--version", version]


def retrain_argv(run_id: str, epoch: int, version: str) -> list[str]:
    return ["zelda-rlaif", "reward-model", "--retrain", run_id, "--epoch", str(epoch), "--scores-version", version]


def one_off_job(wiring: ChartWiring, name: str, component: str, argv: list[str], env: dict[str, str],
                local_queue: str) -> dict[str, Any]:
    """A batch/v1 Job running ``argv`` once in a chart service's pod: its image, environment (secrets stay
    references), service account and security settings, with ``env`` overriding variables.

    Dropped from the service's pod: the ``provision`` init container (the one-off commands use no NATS), ports
    and probes, and the component label, so the service's Service, PodDisruptionBudget and autoscaler do not
    count the Job's pod as one of theirs. The Kueue label queues it like the Ray cluster.
    """
    template = json.loads(json.dumps(wiring.deployment["spec"]["template"]))
    labels = {**template["metadata"].get("labels", {}), "app.kubernetes.io/component": component}
    labels.pop("zelda-rlaif/role", None)
    pod = template["spec"]
    pod.pop("initContainers", None)
    pod["restartPolicy"] = "Never"
    container = pod["containers"][0]
    for key in ("ports", "livenessProbe", "readinessProbe", "startupProbe"):
        container.pop(key, None)
    container["name"] = component
    container["command"] = argv
    kept = [var for var in container.get("env", []) if var["name"] not in env]
    container["env"] = kept + [{"name": k, "value": v} for k, v in env.items()]
    job_labels = {key: labels[key] for key in labels if key.startswith("app.kubernetes.io/")}
    if local_queue:
        job_labels["kueue.x-k8s.io/queue-name"] = local_queue
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": wiring.deployment["metadata"]["namespace"], "labels": job_labels},
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 86400,
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def create_job(api: client.ApiClient, job: dict[str, Any]) -> str:
    """Create the Job (or, in a dry run, write it to RENDER_DIR/jobs/); returns what was done, to print."""
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    if DRY_RUN:
        path = RENDER_DIR / "jobs" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(job, sort_keys=False))
        return f"dry run: Job {name} written to {path}"
    client.BatchV1Api(api).create_namespaced_job(namespace, job)
    return f"Job {name} created in {namespace}: oc logs -f job/{name}"


def wait_for_job(api: client.ApiClient, namespace: str, name: str, timeout_s: float = 6 * 3600) -> str:
    """Block until the Job succeeds (returns its log) or fails (raises with its log)."""
    if DRY_RUN:
        return f"dry run: Job {name} not started"
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = batch.read_namespaced_job_status(name, namespace).status
        if status.succeeded or status.failed:
            pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={name}").items
            log = core.read_namespaced_pod_log(pods[-1].metadata.name, namespace) if pods else ""
            if status.failed:
                raise WorkbenchError(f"Job {name} failed:\n{log}")
            return str(log)
        time.sleep(10)
    raise TimeoutError(f"Job {name} did not finish within {timeout_s:.0f}s")


@dataclass
class RayJobs:
    """Ray job submissions to the cluster's head through its dashboard (codeflare's job client).

    Secrets travel in the submission's runtime environment, to the driver and every worker of that job, and
    never into the RayCluster's spec. In a dry run each submission is written to RENDER_DIR/ray-jobs/ with the
    secret values left out.
    """

    cluster: Any  # codeflare_sdk.Cluster
    secrets: dict[str, str]
    submitted: list[str] = field(default_factory=list)

    def submit(self, submission_id: str, argv: list[str], env: dict[str, str] | None = None) -> str:
        entrypoint = shlex.join(argv)
        env_vars = {**(env or {}), **self.secrets}
        if DRY_RUN:
            path = RENDER_DIR / "ray-jobs" / f"{submission_id}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            shown = {k: ("<secret>" if k in self.secrets else v) for k, v in env_vars.items()}
            path.write_text(json.dumps({"submission_id": submission_id, "entrypoint": entrypoint,
                                        "runtime_env": {"env_vars": shown}}, indent=2))
        else:
            self.cluster.job_client.submit_job(entrypoint=entrypoint, submission_id=submission_id,
                                               runtime_env={"env_vars": env_vars})
        self.submitted.append(submission_id)
        return submission_id

    def status(self, submission_id: str) -> str:
        return "DRY_RUN" if DRY_RUN else str(self.cluster.job_status(submission_id))

    def logs(self, submission_id: str, last_lines: int = 20) -> str:
        if DRY_RUN:
            return f"dry run: {submission_id} was not submitted"
        return "\n".join(str(self.cluster.job_logs(submission_id)).splitlines()[-last_lines:])

    def watch(self, submission_id: str, every_s: float = 60, last_lines: int = 5) -> Iterable[str]:
        """Status and the last log lines every ``every_s`` seconds until the job ends."""
        while True:
            status = self.status(submission_id)
            yield f"{time.strftime('%H:%M:%S')} {submission_id}: {status}\n{self.logs(submission_id, last_lines)}"
            if DRY_RUN or status in FINISHED:
                return
            time.sleep(every_s)


def hud_url(api: client.ApiClient, namespace: str, release: str) -> str | None:
    """The HUD's address: its OpenShift Route (hud.route.enabled in the chart), or None without one."""
    try:
        route = client.CustomObjectsApi(api).get_namespaced_custom_object(
            "route.openshift.io", "v1", namespace, "routes", f"{release}-hud")
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    admitted = route.get("status", {}).get("ingress") or [{}]  # the host OpenShift assigned, when spec has none
    host = route.get("spec", {}).get("host") or admitted[0].get("host")
    scheme = "https" if route.get("spec", {}).get("tls") else "http"
    return f"{scheme}://{host}" if host else None
