"""What the deployment files must agree with in the code: CLI subcommands and settings' variable names.

Both are read from the real modules, so a renamed flag or setting breaks these tests instead of a pod.
"""

from __future__ import annotations

import argparse
import importlib
from enum import Enum
from functools import cache
from typing import Any, get_args, get_origin

from pydantic import BaseModel, RootModel
from pydantic_settings import BaseSettings

from zelda_rlaif.cli import SERVICES, build_parser

# Each service's one settings class; the shared blocks are reached through their fields.
SETTINGS_CLASSES = {
    "judge": ("zelda_judge.settings", "JudgeSettings"),
    "hud": ("zelda_hud.settings", "HudSettings"),
    "reward-model": ("zelda_reward_model.settings", "RewardModelSettings"),
    "trainer": ("zelda_trainer.settings", "TrainerSettings"),
}

# Classes that code other than a service's settings class reads straight from the environment (each env runner
# reads the guidance LLM's key itself, so it is never shipped in the env config): the service whose containers
# must carry their variables.
DIRECT_SETTINGS_CLASSES = {
    "trainer": (("zelda_rlaif.game.guidance.config", "GuidanceSecrets"),),
}


@cache
def _parser() -> argparse.ArgumentParser:
    return build_parser()


def check_command(argv: list[str]) -> str:
    """Parse ``argv`` (``["zelda-rlaif", ...]``) with the real CLI; returns the subcommand.

    A service whose package is not importable in this checkout is absent from the parser: then only its
    registration in ``SERVICES`` is checked, not its flags.
    """
    assert argv and argv[0] == "zelda-rlaif", f"{argv} does not run the zelda-rlaif console script"
    assert len(argv) > 1, f"{argv} names no subcommand"
    command = argv[1]
    assert command in SERVICES or command == "provision", f"{command!r} is not a zelda-rlaif subcommand"
    if command in SERVICES and not _importable(SERVICES[command][0]):
        return command
    try:
        args = _parser().parse_args(argv[1:])
    except SystemExit as exc:
        raise AssertionError(f"zelda-rlaif rejects the arguments {argv[1:]}") from exc
    assert args.command == command
    return command


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ModuleNotFoundError:
        return False
    return True


@cache
def known_env_vars() -> frozenset[str]:
    """Every ZELDA_* variable some service's settings read (shared blocks and nested models included)."""
    names: set[str] = set()
    for module, class_name in SETTINGS_CLASSES.values():
        if not _importable(module):
            continue
        names |= _settings_env(getattr(importlib.import_module(module), class_name))
    for service in DIRECT_SETTINGS_CLASSES:
        names |= direct_env_vars(service)
    return frozenset(names)


def direct_env_vars(service: str) -> frozenset[str]:
    """The variables that ``service``'s code reads straight from the environment (DIRECT_SETTINGS_CLASSES)."""
    names: set[str] = set()
    for module, class_name in DIRECT_SETTINGS_CLASSES.get(service, ()):
        names |= _settings_env(getattr(importlib.import_module(module), class_name))
    return frozenset(names)


def _settings_env(cls: type[BaseSettings]) -> set[str]:
    prefix = str(cls.model_config.get("env_prefix", ""))
    delimiter = cls.model_config.get("env_nested_delimiter") or "__"
    names: set[str] = set()
    for field_name, field in cls.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseSettings):
            names |= _settings_env(annotation)  # built by its default factory, with its own prefix
        elif isinstance(annotation, type) and issubclass(annotation, RootModel):
            # A mapping model (e.g. rubric weights): its keys are those of its default.
            default = field.get_default(call_default_factory=True)
            names |= {f"{prefix}{field_name}{delimiter}{key}".upper() for key in default.root}
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names |= {f"{prefix}{field_name}{delimiter}{sub}".upper() for sub in annotation.model_fields}
        elif get_origin(annotation) is dict and (keyed := _enum_keyed_models(annotation)):
            # dict[SomeEnum, Model]: one variable per member and model field (ENDPOINTS__STATE__LLM_URL).
            keys, model = keyed
            names |= {f"{prefix}{field_name}{delimiter}{key}{delimiter}{sub}".upper()
                      for key in keys for sub in model.model_fields}
        else:
            names.add((field.alias or f"{prefix}{field_name}").upper())
    return names


def _enum_keyed_models(annotation: Any) -> tuple[list[str], type[BaseModel]] | None:
    key, value = get_args(annotation)
    if isinstance(key, type) and issubclass(key, Enum) and isinstance(value, type) and issubclass(value, BaseModel):
        return [str(member.value) for member in key], value
    return None
