"""What an operator would hit after ``helm install`` although every manifest validates: arguments that a
launcher's shell mangles, a sidecar without API access, Secrets nobody renders, placeholder secrets, a Route
the HUD cannot answer, NetworkPolicies that shut out the HUD's own Service, KEDA waiting on a consumer nobody
has created, and namespace labels OpenShift is dropping."""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest

from tests.deploy.chart import (
    CHART,
    NAMESPACE,
    RELEASE,
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
from tests.deploy.contracts import direct_env_vars
from tests.deploy.test_helm_chart import NO_DEPS, SCENARIOS
from zelda_rlaif.settings import PLACEHOLDER_SECRETS

# The main container of KServe's LLMInferenceService template runs `/bin/bash -c` with a script that ends in
# `eval "vllm serve ... ${VLLM_ADDITIONAL_ARGS} $@"`: the variable is parsed by the shell once more, so its
# quotes are consumed. Here printf stands in for vllm and prints each argument it would receive.
KSERVE_LAUNCHER = 'eval "printf \'%s\\0\' ${VLLM_ADDITIONAL_ARGS}"'

# Every literal secret value the chart (or a dependency it configures) would use, as a values path.
LITERAL_SECRETS = ("bus.auth.password", "store.s3.accessKey", "store.s3.secretKey", "hud.auth.token",
                   "minio.rootUser", "minio.rootPassword")

# Everything given literally, both dependencies on: every Secret anything reads must then be in the render.
ALL_LITERAL: dict[str, Any] = {
    "bus": {"auth": {"existingSecret": "", "password": "a-real-nats-password"}},
    "store": {"s3": {"existingSecret": "", "accessKey": "zelda-app", "secretKey": "a-real-s3-secret-key"}},
    "hud": {"auth": {"existingSecret": "", "token": "a-real-hud-token-of-24ch"}},
    "minio": {"existingSecret": "", "rootUser": "zelda-root", "rootPassword": "a-real-minio-root-password"},
}

AUTOSCALING: dict[str, Any] = {"trainer": {"autoscaling": {"enabled": True}}}


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[Manifest]]:
    scenarios = {name: render(values) for name, values in SCENARIOS.items()}
    scenarios["autoscaling-job"] = render(AUTOSCALING)
    scenarios["autoscaling-cluster"] = render(deep_merge(AUTOSCALING, {"trainer": {"mode": "cluster"}}))
    scenarios["all-literal"] = render(ALL_LITERAL)
    return scenarios


def render_without_schema(tmp_path: Path, values: dict[str, Any]) -> None:
    """Render as `helm install --skip-schema-validation` would: only the templates' own checks apply."""
    copy = lintable_copy(tmp_path)
    (copy / "values.schema.json").unlink()
    with helm_python.Chart.load(copy) as chart:
        chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)


def nested(path: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for ``"a.b"``."""
    result: Any = value
    for key in reversed(path.split(".")):
        result = {key: result}
    return dict(result)


# --- 1. arguments through KServe's launcher ------------------------------------------------------------


def through_kserve_launcher(additional_args: str) -> list[str]:
    bash = shutil.which("bash")
    assert bash, "bash is needed to reproduce KServe's launcher"
    result = subprocess.run([bash, "-c", KSERVE_LAUNCHER], env={"VLLM_ADDITIONAL_ARGS": additional_args},
                            capture_output=True, text=True, timeout=10, check=True)
    return result.stdout.split("\0")[:-1]


def check_vllm_args(argv: list[str]) -> None:
    for argument in argv:
        if argument.startswith(("{", "[")):
            try:
                json.loads(argument)
            except json.JSONDecodeError as exc:
                raise AssertionError(f"vLLM would receive {argument!r}, which is not JSON: quote it") from exc


def test_the_launchers_shell_would_catch_unquoted_json() -> None:
    # The check itself: the form that broke the vision judges' server does not pass.
    with pytest.raises(AssertionError, match="not JSON"):
        check_vllm_args(through_kserve_launcher('--limit-mm-per-prompt {"image":4}'))


def test_vllm_arguments_arrive_intact_through_kserves_launcher(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["values-prod.yaml"]
    services = of_kind(manifests, "LLMInferenceService")
    assert services
    key_frames = values_file("values.yaml")["judges"]["keyFrames"]
    for service in services:
        (main,) = service["spec"]["template"]["containers"]
        env = {item["name"]: item["value"] for item in main.get("env", [])}
        if "VLLM_ADDITIONAL_ARGS" not in env:
            continue
        argv = through_kserve_launcher(env["VLLM_ADDITIONAL_ARGS"])
        check_vllm_args(argv)
        # Nothing split or merged: the launcher hands vLLM what a POSIX shell reads in the value.
        assert argv == shlex.split(env["VLLM_ADDITIONAL_ARGS"]), service["metadata"]["name"]
        if "--limit-mm-per-prompt" in argv:
            limits = json.loads(argv[argv.index("--limit-mm-per-prompt") + 1])
            assert limits["image"] >= key_frames, "vLLM would refuse the judge's key frames"


# --- 2. API access for every container that talks to the API server --------------------------------------

# KubeRay's autoscaler sidecar: it lists and watches the Ray pods and patches the RayCluster's replicas (and
# pods, to mark those it removes).
AUTOSCALER_RULES = {("", "pods"): {"get", "list", "watch", "patch"}, ("ray.io", "rayclusters"): {"get", "patch"}}


def api_clients(manifest: Manifest) -> Iterator[tuple[str, dict[str, Any], dict[tuple[str, str], set[str]]]]:
    """(where, pod, rules it needs) for each pod with a container that calls the API server, sidecars that an
    operator adds included."""
    spec = manifest.get("spec", {})
    cluster = spec if manifest["kind"] == "RayCluster" else spec.get("rayClusterSpec")
    if manifest["kind"] in {"RayCluster", "RayJob"} and cluster and cluster.get("enableInTreeAutoscaling"):
        where = f"{manifest['kind']}/{manifest['metadata']['name']}/head (Ray autoscaler)"
        yield where, cluster["headGroupSpec"]["template"]["spec"], AUTOSCALER_RULES


def mounts_token(manifests: list[Manifest], pod: dict[str, Any]) -> bool:
    if "automountServiceAccountToken" in pod:
        return bool(pod["automountServiceAccountToken"])
    accounts = [a for a in of_kind(manifests, "ServiceAccount")
                if a["metadata"]["name"] == pod.get("serviceAccountName", "default")]
    return not accounts or accounts[0].get("automountServiceAccountToken", True) is not False


def granted(manifests: list[Manifest], account: str) -> dict[tuple[str, str], set[str]]:
    rules: dict[tuple[str, str], set[str]] = {}
    for binding in of_kind(manifests, "RoleBinding"):
        if not any(s["kind"] == "ServiceAccount" and s["name"] == account
                   and s.get("namespace", NAMESPACE) == NAMESPACE for s in binding.get("subjects", [])):
            continue
        assert binding["roleRef"]["kind"] == "Role", "bind a namespaced Role, not a ClusterRole"
        role = named(manifests, "Role", binding["roleRef"]["name"])
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    rules.setdefault((group, resource), set()).update(rule["verbs"])
    return rules


def test_every_api_client_has_a_token_and_the_verbs_it_needs(rendered: dict[str, list[Manifest]]) -> None:
    seen = 0
    for scenario, manifests in rendered.items():
        clients = {id(pod): (where, needs) for m in manifests for where, pod, needs in api_clients(m)}
        for manifest in manifests:
            for where, pod in pod_specs(manifest):
                if id(pod) not in clients:
                    # Least privilege: a pod that never calls the API server carries no token to steal.
                    assert not mounts_token(manifests, pod), f"{scenario}: {where} mounts a token it never uses"
                    continue
                seen += 1
                label, needs = clients[id(pod)]
                assert mounts_token(manifests, pod), f"{scenario}: {label} has no service account token"
                account = pod.get("serviceAccountName", "default")
                have = granted(manifests, account)
                for (group, resource), verbs in needs.items():
                    missing = verbs - have.get((group, resource), set())
                    assert not missing, f"{scenario}: {label} ({account}) may not {sorted(missing)} {resource}"
    assert seen >= 2, "no scenario runs the Ray autoscaler"


# --- 3. every Secret anything reads is rendered, or is the one Secret the operator creates ------------------


def pod_secret_reads(manifests: list[Manifest]) -> set[tuple[str, str | None]]:
    """(Secret, key) for every Secret a pod of the render reads (key None: the whole Secret)."""
    reads: set[tuple[str, str | None]] = set()
    for manifest in manifests:
        for _, pod in pod_specs(manifest):
            for container in containers(pod):
                for item in container.get("env", []):
                    if ref := item.get("valueFrom", {}).get("secretKeyRef"):
                        reads.add((ref["name"], ref["key"]))
                for source in container.get("envFrom", []):
                    if "secretRef" in source:
                        reads.add((source["secretRef"]["name"], None))
            for volume in pod.get("volumes", []):
                if "secret" in volume:
                    reads.add((volume["secret"]["secretName"], None))
    return reads


def dependency_secret_reads(values: dict[str, Any]) -> dict[tuple[str, str | None], str]:
    """(Secret, key) -> values path for each Secret the nats and minio dependencies read under ``values``."""
    merged = deep_merge(values_file("values.yaml"), values)
    reads: dict[tuple[str, str | None], str] = {}
    if merged["nats"]["enabled"]:
        for name, variable in merged["nats"].get("container", {}).get("env", {}).items():
            if isinstance(variable, dict) and (ref := variable.get("valueFrom", {}).get("secretKeyRef")):
                reads[(ref["name"], ref["key"])] = f"nats.container.env.{name}"
    if merged["minio"]["enabled"]:
        if merged["minio"].get("existingSecret"):
            reads[(merged["minio"]["existingSecret"], None)] = "minio.existingSecret"
        for index, user in enumerate(merged["minio"].get("users", [])):
            if user.get("existingSecret"):
                reads[(user["existingSecret"], user["existingSecretKey"])] = f"minio.users[{index}]"
    return reads


def test_every_secret_read_is_rendered_when_given_literally(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["all-literal"]
    secrets = {m["metadata"]["name"]: set(m.get("stringData", {})) | set(m.get("data", {}))
               for m in of_kind(manifests, "Secret")}
    reads = dict.fromkeys(pod_secret_reads(manifests), "a pod") | dependency_secret_reads(ALL_LITERAL)
    assert any(where.startswith("nats.") for where in reads.values())
    for (name, key), where in reads.items():
        assert name in secrets, f"{where} reads Secret {name}, which the chart does not render"
        assert key is None or key in secrets[name], f"{where} reads key {key} that Secret {name} lacks"


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "no-deps"])
def test_dependencies_read_the_secrets_the_services_read(rendered: dict[str, list[Manifest]], scenario: str) -> None:
    # With existingSecret the operator creates each Secret once: the server and its clients must name the same.
    ours = pod_secret_reads(rendered[scenario])
    for (name, key), where in dependency_secret_reads(SCENARIOS[scenario]).items():
        if where == "minio.existingSecret":
            continue  # MinIO's root account: only MinIO reads it
        assert (name, key) in ours, f"{scenario}: {where} reads {name}/{key}, which no service of ours reads"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"bus": {"auth": {"existingSecret": "nats-credentials"}}}, "nats.container.env.NATS_PASSWORD"),
        ({"bus": {"auth": {"passwordKey": "pass"}}}, "bus.auth.passwordKey"),
        ({"bus": {"auth": {"user": "trainer"}}}, "nats.config.merge.authorization.user"),
        ({"store": {"s3": {"existingSecret": "s3-credentials"}}}, r"minio.users\[0\].existingSecret"),
        (deep_merge(ALL_LITERAL, {"store": {"s3": {"accessKey": "someone-else"}}}), r"minio.users\[0\].accessKey"),
    ],
)
def test_a_server_and_its_clients_on_different_credentials_stop_the_render(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=message):
        render(values)


# --- 4. placeholder secrets stop the render -------------------------------------------------------------


@pytest.mark.parametrize("placeholder", sorted(PLACEHOLDER_SECRETS))
def test_every_placeholder_the_services_refuse_stops_the_render(placeholder: str) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=re.escape("bus.auth.password is a placeholder")):
        render(deep_merge(ALL_LITERAL, nested("bus.auth.password", placeholder.upper())))


@pytest.mark.parametrize("path", LITERAL_SECRETS)
def test_a_placeholder_in_any_literal_secret_stops_the_prod_render(path: str) -> None:
    # "<...>" as in documentation; long enough for the HUD token's schema.
    values = deep_merge(values_file("values-prod.yaml"), deep_merge(ALL_LITERAL, nested(path, "<set-a-real-one-here>")))
    with pytest.raises(helm_python.HelmRenderError, match=re.escape(f"{path} is a placeholder")) as caught:
        render(values)
    assert "<set-a-real-one-here>" not in str(caught.value), "a secret's value never appears in an error"
    render(deep_merge(values_file("values-prod.yaml"), ALL_LITERAL))  # real values render


def test_minioadmin_is_refused_as_minios_root_account() -> None:
    with pytest.raises(helm_python.HelmRenderError, match=re.escape("minio.rootPassword is a placeholder")):
        render(deep_merge(ALL_LITERAL, {"minio": {"rootPassword": "minioadmin"}}))


# --- 5. the HUD's Route ----------------------------------------------------------------------------------


@pytest.mark.parametrize("termination", ["reencrypt", "passthrough"])
def test_the_hud_route_terminates_tls_at_the_router(tmp_path: Path, termination: str) -> None:
    values = {"hud": {"route": {"enabled": True, "termination": termination}}}
    with helm_python.Chart.load(CHART) as chart, \
            pytest.raises(helm_python.HelmValuesError, match="/hud/route/termination"):
        chart.validate_schema(values)
    with pytest.raises(helm_python.HelmRenderError, match="must be edge: the HUD serves plain HTTP"):
        render_without_schema(tmp_path, values)


def test_rendered_routes_are_edge_terminated(rendered: dict[str, list[Manifest]]) -> None:
    routes = [route for manifests in rendered.values() for route in of_kind(manifests, "Route")]
    assert routes
    for route in routes:
        assert route["spec"]["tls"] == {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}
        assert route["spec"]["port"]["targetPort"] == "http"


# --- Also: NetworkPolicies and the HUD's Service -----------------------------------------------------------

OUTSIDE_CLIENT = {"namespace": None, "ip": "203.0.113.7"}  # a browser reaching a node port or load balancer


def admits(policies: list[Manifest], pod: dict[str, str], source: dict[str, Any], port: int) -> bool:
    """Whether Kubernetes' NetworkPolicy rules let ``source`` reach ``port`` of a pod labelled ``pod``."""
    selecting = [p for p in policies if p["spec"]["podSelector"].get("matchLabels", {}).items() <= pod.items()
                 and "Ingress" in p["spec"]["policyTypes"]]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("ingress", []):
            if rule.get("ports") and port not in [p["port"] for p in rule["ports"]]:
                continue
            if not rule.get("from") or any(peer_matches(peer, source) for peer in rule["from"]):
                return True
    return False


def peer_matches(peer: dict[str, Any], source: dict[str, Any]) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        address = ipaddress.ip_address(source["ip"])
        return address in ipaddress.ip_network(block["cidr"]) and not any(
            address in ipaddress.ip_network(cidr) for cidr in block.get("except", []))
    if source["namespace"] is None:
        return False  # outside the cluster: no namespace (nor pod) selector matches
    namespace_ok = peer.get("namespaceSelector", {}).get("matchLabels", {}).items() <= source["namespace"].items()
    pod_ok = peer.get("podSelector", {}).get("matchLabels", {}).items() <= source.get("pod", {}).items()
    return namespace_ok and pod_ok and ("namespaceSelector" in peer or "podSelector" in peer)


@pytest.mark.parametrize("service_type", ["ClusterIP", "NodePort", "LoadBalancer"])
def test_the_huds_service_type_reaches_the_hud_through_its_policies(service_type: str) -> None:
    manifests = render(deep_merge(NO_DEPS, {"hud": {"service": {"type": service_type}}}))
    deployment = named(manifests, "Deployment", f"{RELEASE}-hud")
    (labels,) = pod_labels(deployment)
    port = values_file("values.yaml")["hud"]["port"]
    policies = of_kind(manifests, "NetworkPolicy")
    ingress = {"namespace": {"kubernetes.io/metadata.name": "ingress-nginx"}, "ip": "10.0.0.9"}
    assert admits(policies, labels, ingress, port), "the ingress controller cannot reach the HUD"
    assert admits(policies, labels, OUTSIDE_CLIENT, port) == (service_type != "ClusterIP")
    # Never more than the HUD's port, and nothing else of the release opens up.
    assert not admits(policies, labels, OUTSIDE_CLIENT, port + 1)
    judge = named(manifests, "Deployment", f"{RELEASE}-judge-state")
    assert not admits(policies, next(pod_labels(judge)), OUTSIDE_CLIENT, 8080)


def test_the_hud_admits_the_router_by_its_current_label_alone(rendered: dict[str, list[Manifest]]) -> None:
    openshift = [s for s, values in SCENARIOS.items() if values.get("global", {}).get("openshift")]
    assert "values-prod.yaml" in openshift and "values-staging.yaml" in openshift
    for scenario in (s for s in openshift if s.startswith("values-")):
        policy = named(rendered[scenario], "NetworkPolicy", f"{RELEASE}-hud")
        selectors = [peer["namespaceSelector"]["matchLabels"] for rule in policy["spec"]["ingress"]
                     for peer in rule.get("from", [])]
        # policy-group.network.openshift.io/ingress also matches a host-network router; the older
        # network.openshift.io/policy-group=ingress is deprecated and may go.
        assert {"policy-group.network.openshift.io/ingress": ""} in selectors, scenario
        assert all(s.get("network.openshift.io/policy-group") != "ingress" for s in selectors), scenario
    # Without OpenShift, the ingress controller's namespace; a selector from values replaces it, never merges.
    default = named(rendered["default"], "NetworkPolicy", f"{RELEASE}-hud")
    assert default["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "ingress-nginx"}
    own = {"example.com/ingress": "yes"}
    for on_openshift in (False, True):
        manifests = render({"global": {"openshift": on_openshift}, "networkPolicy": {"ingressNamespaceSelector": own}})
        policy = named(manifests, "NetworkPolicy", f"{RELEASE}-hud")
        assert policy["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == own


# --- Also: KEDA cannot wake a judge kind whose consumer does not exist yet --------------------------------


def test_keda_scaled_judges_keep_one_replica(rendered: dict[str, list[Manifest]]) -> None:
    for scenario, manifests in rendered.items():
        for scaled in of_kind(manifests, "ScaledObject"):
            # The judge creates its durable consumer when it starts; KEDA reads that consumer's lag.
            assert scaled["spec"]["minReplicaCount"] >= 1, f"{scenario}: {scaled['metadata']['name']}"
    with pytest.raises(helm_python.HelmRenderError, match=re.escape("judges.kinds.vision.minReplicas is 0")):
        render({"judges": {"kinds": {"vision": {"minReplicas": 0}}}})
    render({"judges": {"autoscaling": {"mode": "none"}, "kinds": {"vision": {"minReplicas": 0}}}})


# --- Also: secrets read outside the settings classes reach the containers that read them -------------------


def test_the_guidance_llm_key_reaches_every_ray_container() -> None:
    # Each env runner reads the guidance LLM's key from its own environment (never from the env config), so it
    # must be on every Ray container, workers included.
    secret = {"name": "zelda-rlaif-guidance", "key": "api-key"}
    for values, expected in (({}, None), ({"trainer": {"guidanceLlm": {"existingSecret": secret["name"]}}}, secret)):
        ray = [container for manifest in render(values) for where, pod in pod_specs(manifest)
               if not where.endswith("/submitter") for container in containers(pod)
               if "ZELDA_TRAINER_RUN_ID" in env_map(container)]
        assert len(ray) >= 2
        for container in ray:
            for name in direct_env_vars("trainer"):
                found = env_map(container).get(name)
                assert (found and found["secretKeyRef"]) == expected, (container["name"], name)
