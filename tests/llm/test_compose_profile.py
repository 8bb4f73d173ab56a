"""The compose profile ``llm-gguf`` runs llama-server with the arguments compose renders: run them here, against the
binary the suite built and the tiny model in place of the mounted one, and check the judges' names answer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from tests.deploy.test_compose import compose_binary
from tests.support.llama_server import LlamaServer
from tests.support.tiny_llm import TinyModel
from zelda_rlaif.events import JudgeKind

ROOT = Path(__file__).resolve().parents[2]


def test_the_profile_command_serves_a_mounted_model_under_every_name(llama_server_bin: Path, tiny_model: TinyModel,
                                                                     tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text((ROOT / ".env.example").read_text() + f"\nZELDA_LLM_GGUF_MODEL={tiny_model.model.name}\n"
                        f"ZELDA_LLM_GGUF_ARGS=--mmproj /models/{tiny_model.mmproj.name}\n")
    rendered = subprocess.run(
        [str(compose_binary()), "-f", str(ROOT / "docker-compose.yml"), "--project-directory", str(ROOT),
         "--env-file", str(env_file), "config", "--format", "json"],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "COMPOSE_PROFILES": "llm-gguf"}, timeout=60,
        check=True,
    )
    command: list[str] = json.loads(rendered.stdout)["services"]["llm-gguf"]["command"]
    # The container's /models is the directory the user mounts: here, the tiny model's cache directory.
    args = [arg.replace("/models/", f"{tiny_model.model.parent}/") for arg in command]
    server = LlamaServer(llama_server_bin, tiny_model.model, log=tmp_path / "llama-server.log")
    server.command = [str(llama_server_bin), *args[:args.index("--port") + 1], str(server.port),
                      *args[args.index("--port") + 2:]]
    server.command[server.command.index("--host") + 1] = "127.0.0.1"
    with server:
        models = httpx.get(server.url + "/models", timeout=10).json()["data"]
        names = {name for model in models for name in (model["id"], *model.get("aliases", []))}
        assert names == {*(f"judge-{kind.value}" for kind in JudgeKind), "guidance"}
        meta = httpx.get(f"http://127.0.0.1:{server.port}/props", timeout=10).json()
        assert meta["modalities"]["vision"] is True and meta["default_generation_settings"]["n_ctx"] > 0
