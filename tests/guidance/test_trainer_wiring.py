"""Guidance in the trainer without starting Ray: settings and the env config, the live env's suggestions on the
HUD subject (real NATS), and the guidance counters through the real RLlib callback and metrics logger."""

from __future__ import annotations

import asyncio

import pytest
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from tests.support.streams import catch_live
from tests.support.waiting import wait_until
from zelda_rlaif.bus import Bus
from zelda_rlaif.game.actions import ACTION_NAMES
from zelda_rlaif.game.config import EnvConfig
from zelda_rlaif.game.guidance.config import GuidanceConfig
from zelda_rlaif.game.guidance.runtime import Suggestion
from zelda_rlaif.game.rewards.config import RewardConfig
from zelda_rlaif.settings import NatsSettings
from zelda_rlaif.subjects import LIVE_GUIDANCE
from zelda_trainer import training_env
from zelda_trainer.callbacks import ZeldaCallbacks
from zelda_trainer.env_config import LivePlan, TrainingEnvConfig, training_env_config
from zelda_trainer.live import LiveStream
from zelda_trainer.settings import TrainerSettings


def test_trainer_settings_enable_guidance_and_env_config_ships_each_env_its_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert TrainerSettings().guidance.enabled is False
    monkeypatch.setenv("ZELDA_TRAINER_GUIDANCE__ENABLED", "true")
    monkeypatch.setenv("ZELDA_TRAINER_GUIDANCE__GLOBAL_RATE_PER_S", "3")
    settings = TrainerSettings(num_env_runners=3, envs_per_runner=2)
    assert settings.guidance.enabled
    config = training_env_config(settings, "testworld", 0)
    shipped = config.env.guidance
    assert shipped.enabled and shipped.num_envs == 6 and shipped.global_rate_per_s == 3.0
    assert "api_key" not in config.model_dump_json()  # secrets never travel in the env config


async def test_a_published_suggestion_reaches_the_hud_subject(bus: Bus, nats_settings: NatsSettings,
                                                              run_id: str) -> None:
    caught = await catch_live(bus, LIVE_GUIDANCE, run_id)
    received = caught.events
    stream = LiveStream(nats_settings, run_id, "w1v0", fps=15)
    stream.offer_suggestion(Suggestion(action=3, reason="line up with the left doorway", source="vision",
                                       backend="openai", requested_step=40, episode=1, location=(0, 0x11)), step=42)
    await wait_until(lambda: received)
    [event] = received
    assert (event.env_id, event.step, event.source, event.backend, event.action) == ("w1v0", 42, "vision",
                                                                                      "openai", "left")
    assert event.reason == "line up with the left doorway"

    stream.close()

    received.clear()
    stream = LiveStream(nats_settings, run_id, "w1v0", fps=15)
    for step in range(20):  # far more than anyone can read: the HUD gets a burst of 2, then 2 a second
        stream.offer_suggestion(Suggestion(action=1, reason="up", source="text", backend="rules",
                                           requested_step=step, episode=1, location=(0, 0x11)), step=step)
    await wait_until(lambda: len(received) >= 2)
    await asyncio.sleep(0.2)
    assert len(received) == 2
    await caught.close()
    stream.close()


async def test_the_live_training_env_streams_suggestions_and_reports_counts_to_the_metrics(
    bus: Bus, nats_settings: NatsSettings, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(training_env.TrainingEnv, "live_stream_taken", False)  # this env is the live one
    caught = await catch_live(bus, LIVE_GUIDANCE, run_id)
    received = caught.events
    config = TrainingEnvConfig(
        env=EnvConfig(start_jitter=0, max_steps=400, rewards=RewardConfig(rnd=0.0),
                      guidance=GuidanceConfig(enabled=True, text_probability=0.05, expiry_steps=10)),
        epoch=0, export=None, live=LivePlan(run_id=run_id, fps=15.0, worker_index=0, nats_url=nats_settings.url))
    env = training_env.TrainingEnv(config)
    env.attach(worker_index=0, vector_index=0)
    assert env.zelda.guidance is not None
    episode = SingleAgentEpisode()
    obs, info = env.reset(seed=3)
    episode.add_env_reset(observation=obs, infos=info)
    callbacks = ZeldaCallbacks()
    logger = MetricsLogger()
    for step in range(400):
        live = env.zelda.guidance.live
        action = live.action if live is not None and step % 2 else step % 5
        obs, reward, _, _, info = env.step(action)
        episode.add_env_step(observation=obs, action=action, reward=reward, infos=info)
    counts = env.zelda.guidance.counts
    assert info["episode"]["guidance"] == {k: v for k, v in counts.as_dict().items() if v}  # the episode's tally
    assert counts.answers > 5 and counts.agreements > 0

    await wait_until(lambda: received)
    await asyncio.sleep(0.2)
    assert 1 <= len(received) <= counts.answers  # the HUD shows at most 2 a second (the rules answer far more)
    assert {e.env_id for e in received} == {env.source_id}
    assert {e.backend for e in received} == {"rules"} and {e.source for e in received} == {"text"}
    assert all(e.action in ACTION_NAMES and e.reason for e in received)
    await caught.close()

    callbacks.on_episode_end(episode=episode, metrics_logger=logger)
    peek = logger.peek
    assert peek("zelda/guidance/requests") == counts.requests
    assert peek("zelda/guidance/answers") == counts.answers
    assert peek("zelda/guidance/failures") == 0
    assert peek("zelda/guidance/agreement_rate") == pytest.approx(counts.agreement_rate)
    assert peek("zelda/reward/guidance_text") == pytest.approx(0.01 * counts.agreements)
    env.close()
