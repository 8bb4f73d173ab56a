"""The Helm chart: strict lint, its schema, valid manifests for every values file, and the rules the platform
imposes (KubeRay, Kueue, KEDA, LLMInferenceService) checked on what it renders."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

import helm_python
import kubernetes_validate
import pytest
import yaml

from tests.deploy.chart import (
    CHART,
    CUSTOM_KINDS,
    KUBE_VERSION,
    NAMESPACE,
    ROOT,
    VALUES_FILES,
    Manifest,
    containers,
    deep_merge,
    env_map,
    lintable_copy,
    named,
    of_kind,
    pod_labels,
    pod_specs,
    render,
    values_file,
)
from tests.deploy.contracts import check_command, known_env_vars
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.subjects import PIPELINE_STREAM, judge_consumer, judge_epoch_consumer
from zelda_trainer.settings import TrainerSettings

# The default values plus each environment overlay; dependencies are whatever each file says (rendering never
# needs the dependency charts), and "no-deps" renders with both switched off and external endpoints.
NO_DEPS: dict[str, Any] = {
    "nats": {"enabled": False},
    "minio": {"enabled": False},
    "bus": {"url": "nats://nats.example.svc:4222", "monitoringEndpoint": "nats-headless.example.svc:8222"},
    "store": {"s3": {"endpoint": "https://s3.example.com"}},
}
SCENARIOS: dict[str, dict[str, Any]] = {
    "default": {},
    "no-deps": NO_DEPS,
    # The branches no values file takes: HPAs, Ray's in-tree autoscaler, an Ingress, OpenShift UIDs.
    "hpa-autoscaler-ingress": deep_merge(NO_DEPS, {
        "global": {"openshift": True},
        "judges": {"autoscaling": {"mode": "hpa"}},
        "trainer": {"autoscaling": {"enabled": True}, "learner": {"enabled": True}},
        "hud": {"ingress": {"enabled": True, "className": "nginx", "tlsSecretName": "hud-tls"}},
        "image": {"pullSecrets": ["registry-credentials"]},
    }),
    **{name: values_file(name) for name in VALUES_FILES},
}
KINDS = [kind.value for kind in JudgeKind]
# A judge kind the chart has never heard of: adding it must take one values entry (and an LLM model entry when
# inference services are on), nothing in the templates.
NEW_KIND = "example"  # a kind no values file declares
NEW_KIND_VALUES: dict[str, Any] = {
    "enabled": True, "replicas": 1, "minReplicas": 1, "maxReplicas": 2, "lagThreshold": 5,
    "activationLagThreshold": 0, "maxInFlight": 4, "model": "Qwen/Qwen2.5-7B-Instruct",
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
}
NEW_KIND_MODEL: dict[str, Any] = {
    "name": "example-judge", "uri": "hf://Qwen/Qwen2.5-7B-Instruct", "replicas": 1, "tensorParallel": 1,
    "resources": {"requests": {"cpu": "4", "memory": "32Gi"}, "limits": {"memory": "48Gi"}},
}
HELPER_MAX_LINES = 250


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Manifest]]:
    return {scenario: render(values) for scenario, values in SCENARIOS.items()}


def release_name(component: str) -> str:
    return f"zelda-rlaif-{component}"


# --- lint and schema ------------------------------------------------------------------------------------


@pytest.mark.parametrize("values_name", [None, *VALUES_FILES])
def test_chart_lints_strictly(tmp_path: Path, values_name: str | None) -> None:
    values = values_file(values_name) if values_name else None
    report = helm_python.lint(lintable_copy(tmp_path), values, strict=True, namespace=NAMESPACE,
                              kube_version=f"v{KUBE_VERSION}")
    findings = [m for m in report["messages"] if m["severity"] >= 2]
    assert not report["errors"] and not findings, report


def test_template_helpers_stay_small() -> None:
    # One job per helper file (names and labels, NATS, store, judges, trainer, ...): past this size a file has
    # grown a second job and should be split by component.
    helpers = sorted((CHART / "templates").glob("_*.tpl"))
    assert helpers
    for helper in helpers:
        lines = len(helper.read_text().splitlines())
        assert lines <= HELPER_MAX_LINES, f"{helper.name} has {lines} lines: split it by component"


@pytest.mark.parametrize("values_name", VALUES_FILES)
def test_values_files_match_the_schema(values_name: str) -> None:
    with helm_python.Chart.load(CHART) as chart:
        chart.validate_schema(values_file(values_name))


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"judges": {"kinds": {"state": {"replicas": -1}}}}, "/judges/kinds/state/replicas"),
        ({"judges": {"autoscaling": {"mode": "vpa"}}}, "/judges/autoscaling/mode"),
        ({"judgez": {}}, "judgez"),
        ({"judges": {"kinds": {"vision": {"resources": {"limits": {"memory": None}}}}}}, "/judges/kinds/vision"),
        ({"trainer": {"runId": "Run_1"}}, "/trainer/runId"),
        ({"trainer": {"kueue": {"enabled": True, "queueName": "q"}, "mode": "cluster"}}, "/trainer/mode"),
        ({"trainer": {"kueue": {"enabled": True, "queueName": "q"}, "autoscaling": {"enabled": True}}},
         "/trainer/autoscaling/enabled"),
        ({"trainer": {"kueue": {"enabled": True, "queueName": ""}}}, "/trainer/kueue/queueName"),
        ({"store": {"url": "https://bucket"}}, "/store/url"),
        ({"podSecurityContext": {"runAsNonRoot": False}}, "/podSecurityContext/runAsNonRoot"),
        ({"hud": {"auth": {"existingSecret": "", "token": "short"}}}, "/hud/auth/token"),
    ],
)
def test_schema_rejects_bad_values(bad: dict[str, Any], where: str) -> None:
    with helm_python.Chart.load(CHART) as chart, pytest.raises(helm_python.HelmValuesError) as caught:
        chart.validate_schema(bad)
    assert where in str(caught.value)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"judges": {"backend": "openai"}}, "needs an LLM endpoint for the"),
        ({"hud": {"ingress": {"enabled": True}, "route": {"enabled": True}}}, "not both"),
        ({"nats": {"enabled": False}}, "bus.url is empty"),
        ({"store": {"s3": {"existingSecret": ""}}}, "an s3:// store needs credentials"),
        ({"hud": {"auth": {"existingSecret": ""}}}, "needs an access token"),
        ({"fullnameOverride": "zelda-rlaif-production", "trainer": {"runId": "experiment-2026-11-22"}},
         "longer than KubeRay's 47 characters"),
    ],
)
def test_contradictory_values_stop_the_render_with_a_reason(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=message):
        render(bad)


# --- every manifest is valid ------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_rendered_manifests_are_valid_kubernetes(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    manifests = rendered[scenario]
    assert manifests
    for manifest in manifests:
        key = (manifest["apiVersion"], manifest["kind"])
        if key in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(manifest, KUBE_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path)
            pytest.fail(f"{scenario}: {manifest['kind']}/{manifest['metadata']['name']} at {where}: {exc.message}")
        except kubernetes_validate.utils.SchemaNotFoundError:
            pytest.fail(f"{scenario}: no Kubernetes {KUBE_VERSION} schema for {key}; add checks for a custom kind")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_custom_resources_have_their_required_fields(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    manifests = rendered[scenario]
    for cluster in of_kind(manifests, "RayCluster"):
        assert len(cluster["metadata"]["name"]) <= 53
        check_ray_cluster_spec(cluster["spec"])
    for job in of_kind(manifests, "RayJob"):
        spec = job["spec"]
        assert len(job["metadata"]["name"]) <= 47
        assert spec["entrypoint"].strip()
        assert ("rayClusterSpec" in spec) != ("clusterSelector" in spec), "a RayJob needs exactly one cluster"
        if "rayClusterSpec" in spec:
            check_ray_cluster_spec(spec["rayClusterSpec"])
            assert isinstance(spec["shutdownAfterJobFinishes"], bool)
        else:
            target = spec["clusterSelector"]["ray.io/cluster"]
            assert [c for c in of_kind(manifests, "RayCluster") if c["metadata"]["name"] == target]
            assert "ttlSecondsAfterFinished" not in spec
        if "ttlSecondsAfterFinished" in spec:
            assert spec["shutdownAfterJobFinishes"] is True, "ttlSecondsAfterFinished works only with shutdown"
        assert spec.get("submissionMode", "K8sJobMode") in {"K8sJobMode", "HTTPMode", "SidecarMode"}
    for scaled in of_kind(manifests, "ScaledObject"):
        spec = scaled["spec"]
        assert spec["scaleTargetRef"]["name"]
        assert 0 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
        for trigger in spec["triggers"]:
            assert trigger["type"] == "nats-jetstream"
            meta = trigger["metadata"]
            for field in ("natsServerMonitoringEndpoint", "account", "stream", "consumer", "lagThreshold"):
                assert meta.get(field), f"{scaled['metadata']['name']}: trigger without {field}"
            assert all(isinstance(value, str) for value in meta.values()), "KEDA trigger metadata must be strings"
            host, _, port = meta["natsServerMonitoringEndpoint"].rpartition(":")
            assert host and port.isdigit() and "://" not in host
    for service in of_kind(manifests, "LLMInferenceService"):
        spec = service["spec"]
        assert spec["model"]["uri"].split("://")[0] in {"hf", "oci", "pvc", "s3", "gs"}
        assert spec["model"]["name"]
        assert spec["replicas"] >= 1
        assert set(spec["router"]) >= {"gateway", "route", "scheduler"}
        (main,) = spec["template"]["containers"]
        assert main["name"] == "main"
        gpus = int(main["resources"]["limits"]["nvidia.com/gpu"])
        assert gpus == spec.get("parallelism", {}).get("tensor", 1)
    for route in of_kind(manifests, "Route"):
        assert route["spec"]["to"]["kind"] == "Service"
        named(manifests, "Service", route["spec"]["to"]["name"])
        assert route["spec"]["tls"]["termination"] in {"edge", "reencrypt", "passthrough"}


def check_ray_cluster_spec(spec: dict[str, Any]) -> None:
    assert spec["rayVersion"]
    head = spec["headGroupSpec"]
    assert head["template"]["spec"]["containers"][0]["image"]
    assert head["rayStartParams"].get("num-cpus") == "0", "env runners must not land on the head"
    groups = spec["workerGroupSpecs"]
    assert 1 <= len(groups) <= 7, "Kueue admits at most 7 worker groups"
    names = [g["groupName"] for g in groups]
    assert len(set(names)) == len(names) and "env-runners" in names
    for group in groups:
        assert 0 <= group["minReplicas"] <= group["replicas"] <= group["maxReplicas"], group["groupName"]
        assert group["template"]["spec"]["containers"][0]["image"]
        assert all(isinstance(v, str) for v in group.get("rayStartParams", {}).values())
    learners = [g for g in groups if g["groupName"] == "learner"]
    for learner in learners:
        limits = learner["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert int(limits["nvidia.com/gpu"]) >= 1, "KubeRay finds GPUs through the nvidia.com/gpu limit"
    if spec.get("enableInTreeAutoscaling"):
        assert spec["autoscalerOptions"]["idleTimeoutSeconds"] >= 0


# --- judges ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["keda", "hpa", "none"])
def test_each_judge_kind_scales_by_exactly_one_mechanism(mode: str) -> None:
    manifests = render(deep_merge(NO_DEPS, {"judges": {"autoscaling": {"mode": mode}}}))
    scaled = {m["spec"]["scaleTargetRef"]["name"] for m in of_kind(manifests, "ScaledObject")}
    hpas = {m["spec"]["scaleTargetRef"]["name"] for m in of_kind(manifests, "HorizontalPodAutoscaler")}
    assert not scaled & hpas, "an HPA and a ScaledObject on one Deployment fight over its replicas"
    for kind in KINDS:
        deployment = named(manifests, "Deployment", release_name(f"judge-{kind}"))
        name = deployment["metadata"]["name"]
        expected = {"keda": (name in scaled), "hpa": (name in hpas), "none": not (name in scaled or name in hpas)}
        assert expected[mode], f"{name} is not scaled by {mode}"
        # An autoscaled Deployment leaves replicas to its autoscaler, so upgrades and Argo CD do not reset it.
        assert ("replicas" in deployment["spec"]) == (mode == "none")


def test_keda_reads_the_lag_of_each_kinds_durable_consumer(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["default"]
    for kind in JudgeKind:
        scaled = named(manifests, "ScaledObject", release_name(f"judge-{kind.value}"))
        triggers = {t["metadata"]["consumer"]: t["metadata"] for t in scaled["spec"]["triggers"]}
        assert set(triggers) == {judge_consumer(kind).durable, judge_epoch_consumer(kind).durable}
        assert {t["stream"] for t in triggers.values()} == {PIPELINE_STREAM}
        assert scaled["spec"]["scaleTargetRef"]["name"] == release_name(f"judge-{kind.value}")
        monitor = triggers[judge_consumer(kind).durable]["natsServerMonitoringEndpoint"]
        assert monitor == f"zelda-nats-headless.{NAMESPACE}.svc.cluster.local:8222"


def test_each_kind_has_its_own_replicas_and_model() -> None:
    values = deep_merge(NO_DEPS, {"judges": {"autoscaling": {"mode": "none"}, "kinds": {
        "state": {"replicas": 2}, "puzzle": {"replicas": 1}, "vision": {"replicas": 5}}}})
    manifests = render(values)
    for kind, replicas in {"state": 2, "puzzle": 1, "vision": 5}.items():
        deployment = named(manifests, "Deployment", release_name(f"judge-{kind}"))
        assert deployment["spec"]["replicas"] == replicas
        (judge,) = deployment["spec"]["template"]["spec"]["containers"]
        assert judge["command"] == ["zelda-rlaif", "judge", "--kind", kind]
        assert env_map(judge)["ZELDA_JUDGE_KIND"] == kind


def test_judges_are_wired_to_their_llm_inference_services(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["values-prod.yaml"]
    gateway = values_file("values-prod.yaml")["llm"]["inferenceServices"]["gatewayUrl"]
    services = {m["metadata"]["name"]: m for m in of_kind(manifests, "LLMInferenceService")}
    assert len(services) == len(KINDS)
    for kind in KINDS:
        service = services[release_name(f"llm-{kind}")]
        (judge,) = named(manifests, "Deployment", release_name(f"judge-{kind}"))["spec"]["template"]["spec"][
            "containers"]
        env = env_map(judge)
        assert env["ZELDA_JUDGE_BACKEND"] == "openai"
        assert env["ZELDA_JUDGE_LLM_URL"] == f"{gateway}/{NAMESPACE}/{service['metadata']['name']}/v1"
        assert env["ZELDA_JUDGE_LLM_MODEL"] == service["spec"]["model"]["name"]
        assert env["ZELDA_JUDGE_LLM_API_KEY"]["secretKeyRef"]["name"] == "zelda-rlaif-llm"


def test_the_chart_declares_every_judge_kind_the_services_know() -> None:
    defaults = values_file("values.yaml")
    assert sorted(defaults["judges"]["kinds"]) == sorted(KINDS)
    assert sorted(defaults["llm"]["inferenceServices"]["models"]) == sorted(KINDS)


def test_a_new_judge_kind_is_one_values_entry() -> None:
    values = deep_merge(NO_DEPS, {"judges": {"kinds": {NEW_KIND: NEW_KIND_VALUES}}})
    with helm_python.Chart.load(CHART) as chart:
        chart.validate_schema(values)
    manifests = render(values)
    name = release_name(f"judge-{NEW_KIND}")
    (judge,) = named(manifests, "Deployment", name)["spec"]["template"]["spec"]["containers"]
    assert judge["command"] == ["zelda-rlaif", "judge", "--kind", NEW_KIND]
    assert env_map(judge)["ZELDA_JUDGE_KIND"] == NEW_KIND
    scaled = named(manifests, "ScaledObject", name)
    assert {t["metadata"]["consumer"] for t in scaled["spec"]["triggers"]} == {f"judge-{NEW_KIND}",
                                                                               f"judge-{NEW_KIND}-epochs"}
    named(manifests, "Service", name)
    named(manifests, "PodDisruptionBudget", name)
    # Kinds render in sorted order, so the same values always give the same manifests.
    judges = [m["metadata"]["name"] for m in of_kind(manifests, "Deployment")
              if m["metadata"]["labels"].get("zelda-rlaif/role") == "judge"]
    assert judges == sorted(release_name(f"judge-{kind}") for kind in [*KINDS, NEW_KIND])


def test_a_new_judge_kind_on_inference_services_needs_its_model_entry() -> None:
    values = deep_merge(NO_DEPS, {
        "judges": {"backend": "openai", "kinds": {NEW_KIND: NEW_KIND_VALUES, "vision": {"enabled": False}}},
        "llm": {"inferenceServices": {"enabled": True, "gatewayUrl": "http://gateway.example"}},
    })
    with pytest.raises(helm_python.HelmRenderError, match=f"add llm.inferenceServices.models.{NEW_KIND} "):
        render(values)
    manifests = render(deep_merge(values, {"llm": {"inferenceServices": {"models": {NEW_KIND: NEW_KIND_MODEL}}}}))
    services = {m["metadata"]["name"] for m in of_kind(manifests, "LLMInferenceService")}
    # A disabled kind asks no model, so nothing is served for it.
    assert services == {release_name(f"llm-{kind}") for kind in [*KINDS, NEW_KIND] if kind != "vision"}
    (judge,) = named(manifests, "Deployment", release_name(f"judge-{NEW_KIND}"))["spec"]["template"]["spec"][
        "containers"]
    env = env_map(judge)
    assert env["ZELDA_JUDGE_LLM_URL"] == f"http://gateway.example/{NAMESPACE}/{release_name(f'llm-{NEW_KIND}')}/v1"
    assert env["ZELDA_JUDGE_LLM_MODEL"] == NEW_KIND_MODEL["name"]


# --- trainer on KubeRay ----------------------------------------------------------------------------------


def test_kueue_managed_rayjob_follows_kueues_rules(rendered: dict[str, list[Manifest]]) -> None:
    for scenario in ("values-staging.yaml", "values-prod.yaml"):
        (job,) = of_kind(rendered[scenario], "RayJob")
        queue = values_file(scenario)["trainer"]["kueue"]["queueName"]
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == queue
        assert "clusterSelector" not in job["spec"]
        assert job["spec"]["shutdownAfterJobFinishes"] is True
        assert job["spec"]["rayClusterSpec"]["enableInTreeAutoscaling"] is False
        assert not of_kind(rendered[scenario], "RayCluster"), "Kueue admits the RayJob's own cluster only"


def test_cluster_mode_submits_to_a_long_lived_raycluster(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["values-dev.yaml"]
    (cluster,) = of_kind(manifests, "RayCluster")
    (job,) = of_kind(manifests, "RayJob")
    assert job["spec"]["clusterSelector"] == {"ray.io/cluster": cluster["metadata"]["name"]}
    assert "rayClusterSpec" not in job["spec"] and "kueue.x-k8s.io/queue-name" not in job["metadata"]["labels"]


def test_gpu_learner_group_and_cpu_env_runners(rendered: dict[str, list[Manifest]]) -> None:
    (job,) = of_kind(rendered["values-prod.yaml"], "RayJob")
    groups = {g["groupName"]: g for g in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]}
    assert set(groups) == {"env-runners", "learner"}
    learner = groups["learner"]["template"]["spec"]
    assert learner["containers"][0]["image"].endswith("-cuda")
    assert {t["key"] for t in learner["tolerations"]} == {"nvidia.com/gpu"}
    runner = groups["env-runners"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in runner["resources"].get("limits", {})
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert env_map(head)["ZELDA_TRAINER_NUM_GPUS_PER_LEARNER"] == "1"
    (default_job,) = of_kind(rendered["default"], "RayJob")
    assert [g["groupName"] for g in default_job["spec"]["rayClusterSpec"]["workerGroupSpecs"]] == ["env-runners"]


def test_the_rom_is_mounted_on_every_ray_pod_never_baked_in(rendered: dict[str, list[Manifest]]) -> None:
    (job,) = of_kind(rendered["values-prod.yaml"], "RayJob")
    claim = values_file("values-prod.yaml")["trainer"]["rom"]["volume"]["persistentVolumeClaim"]["claimName"]
    for where, pod in pod_specs(job):
        if where.endswith("/submitter"):
            continue
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["rom"]["persistentVolumeClaim"]["claimName"] == claim, where
        ray = pod["containers"][0]
        mount = next(m for m in ray["volumeMounts"] if m["name"] == "rom")
        assert mount["mountPath"] == "/roms" and mount["readOnly"] is True
        assert env_map(ray)["ZELDA_TRAINER_ROM"] == "/roms/zelda.gbc"
    (default_job,) = of_kind(rendered["default"], "RayJob")
    for where, pod in pod_specs(default_job):
        assert "ZELDA_TRAINER_ROM" not in env_map(pod["containers"][0]), f"{where}: the test world needs no ROM"


def test_the_trainer_keeps_its_own_epoch_default_unless_told(rendered: dict[str, list[Manifest]]) -> None:
    # TrainerSettings.epochs is the one default: the chart sets ZELDA_TRAINER_EPOCHS only when trainer.epochs is.
    prod_epochs = str(values_file("values-prod.yaml")["trainer"]["epochs"])
    for scenario, expected in (("default", None), ("values-prod.yaml", prod_epochs)):
        ray_containers = [container for manifest in rendered[scenario] for _, pod in pod_specs(manifest)
                          for container in containers(pod) if "ZELDA_TRAINER_RUN_ID" in env_map(container)]
        assert ray_containers
        for container in ray_containers:
            assert env_map(container).get("ZELDA_TRAINER_EPOCHS") == expected, (scenario, container["name"])


def test_rayjob_entrypoint_runs_the_trainer_on_the_cluster(rendered: dict[str, list[Manifest]]) -> None:
    for scenario, manifests in rendered.items():
        for job in of_kind(manifests, "RayJob"):
            argv = shlex.split(job["spec"]["entrypoint"])
            assert check_command(argv) == "trainer", scenario
            assert argv[argv.index("--ray-address") + 1] == "auto"


# --- pods ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_pod_runs_as_non_root_with_resources(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    openshift = bool(SCENARIOS[scenario].get("global", {}).get("openshift"))
    pods = [(where, pod) for m in rendered[scenario] for where, pod in pod_specs(m)]
    assert pods
    for where, pod in pods:
        pod_context = pod["securityContext"]
        assert pod_context["runAsNonRoot"] is True, where
        assert pod_context["seccompProfile"]["type"] == "RuntimeDefault", where
        # OpenShift's restricted SCC assigns the UID; elsewhere the image's non-root UID is pinned.
        assert ("runAsUser" in pod_context) != openshift, where
        for container in containers(pod):
            label = f"{where}/{container['name']}"
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, label
            assert context["runAsNonRoot"] is True, label
            assert context["capabilities"]["drop"] == ["ALL"], label
            assert not context.get("privileged"), label
            requests, limits = container["resources"]["requests"], container["resources"]["limits"]
            assert {"cpu", "memory"} <= set(requests) and "memory" in limits, label


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_command_is_a_real_zelda_rlaif_subcommand(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    seen = set()
    for manifest in rendered[scenario]:
        for _, pod in pod_specs(manifest):
            for container in containers(pod):
                if container.get("command", [""])[0] == "zelda-rlaif":
                    seen.add(check_command(container["command"] + container.get("args", [])))
    assert seen == {"provision", "judge", "reward-model", "hud"}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_zelda_variable_is_a_real_setting(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    known = known_env_vars()
    for manifest in rendered[scenario]:
        for where, pod in pod_specs(manifest):
            for container in containers(pod):
                unknown = {n for n in env_map(container) if n.startswith("ZELDA_")} - known
                assert not unknown, f"{where}/{container['name']} sets variables no settings class reads: {unknown}"


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_trainer_accepts_the_settings_the_chart_gives_it(
    rendered: dict[str, list[Manifest]], scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The chart's numbers must make sense together (e.g. an epoch long enough for every emulator to export a
    # segment): the trainer's own settings class is the judge, as it would be in the driver pod.
    trainer_env = [
        {name: value for name, value in env_map(container).items()
         if name.startswith("ZELDA_TRAINER_") and isinstance(value, str)}
        for manifest in rendered[scenario] for _, pod in pod_specs(manifest) for container in containers(pod)
        if "ZELDA_TRAINER_RUN_ID" in env_map(container)
    ]
    assert trainer_env, "no Ray container carries the trainer's settings"
    for name in [name for name in os.environ if name.startswith("ZELDA_")]:
        monkeypatch.delenv(name)
    for variables in trainer_env:
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        settings = TrainerSettings()
        assert settings.steps_per_env_per_epoch >= settings.segment_steps


def test_network_policies_cover_every_pod_of_the_release(rendered: dict[str, list[Manifest]]) -> None:
    for scenario, manifests in rendered.items():
        policies = of_kind(manifests, "NetworkPolicy")
        deny = named(manifests, "NetworkPolicy", release_name("default-deny"))
        assert deny["spec"]["policyTypes"] == ["Ingress"] and "ingress" not in deny["spec"]
        selector = deny["spec"]["podSelector"]["matchLabels"]
        for manifest in manifests:
            for labels in pod_labels(manifest):
                assert selector.items() <= labels.items(), f"{scenario}: {manifest['metadata']['name']} escapes"
        hud = [p for p in policies if p["metadata"]["name"] == release_name("hud")]
        assert hud and hud[0]["spec"]["ingress"][0]["ports"] == [{"port": 8080, "protocol": "TCP"}]


def test_secrets_come_from_existing_secrets_unless_given_literally(rendered: dict[str, list[Manifest]]) -> None:
    for scenario in SCENARIOS:
        assert not of_kind(rendered[scenario], "Secret"), f"{scenario} renders a Secret from its values file"
    manifests = render(deep_merge(NO_DEPS, {
        "store": {"s3": {"existingSecret": "", "accessKey": "AKIAEXAMPLE", "secretKey": "s3-secret-for-test"}},
        "hud": {"auth": {"existingSecret": "", "token": "a-token-of-sixteen-or-more"}},
    }))
    secrets = {m["metadata"]["name"]: m for m in of_kind(manifests, "Secret")}
    assert set(secrets) == {release_name("s3"), release_name("hud-auth")}
    (hud,) = named(manifests, "Deployment", release_name("hud"))["spec"]["template"]["spec"]["containers"]
    ref = env_map(hud)["ZELDA_STORE_S3_SECRET_KEY"]["secretKeyRef"]
    assert ref == {"name": release_name("s3"), "key": "secretKey"}
    assert env_map(hud)["ZELDA_HUD_ACCESS_TOKEN"]["secretKeyRef"]["name"] == release_name("hud-auth")


def test_hud_is_exposed_by_ingress_or_route(rendered: dict[str, list[Manifest]]) -> None:
    assert of_kind(rendered["values-prod.yaml"], "Route") and not of_kind(rendered["values-prod.yaml"], "Ingress")
    manifests = render(deep_merge(NO_DEPS, {"hud": {"ingress": {"enabled": True, "className": "nginx"}}}))
    (ingress,) = of_kind(manifests, "Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == release_name("hud")
    named(manifests, "Service", backend["name"])


def test_argocd_application_points_at_this_chart() -> None:
    application = yaml.safe_load((ROOT / "helm" / "argocd" / "application.yaml").read_text())
    assert application["apiVersion"] == "argoproj.io/v1alpha1" and application["kind"] == "Application"
    source = application["spec"]["source"]
    assert (ROOT / source["path"]) == CHART
    for values_name in source["helm"]["valueFiles"]:
        assert (CHART / values_name).is_file()
    ignored = {(d["kind"], p) for d in application["spec"]["ignoreDifferences"] for p in d["jsonPointers"]}
    assert {("Deployment", "/spec/replicas"), ("RayJob", "/spec/suspend")} <= ignored
    assert application["spec"]["destination"]["namespace"]
