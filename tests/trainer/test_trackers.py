"""Curves outside the HUD: TensorBoard event files read back with TensorBoard's own EventAccumulator, and MLflow
runs read back with MLflow's client, from its sqlite store and from a real ``mlflow server`` process.

The run's records are real objects in a real file store (reports, verdicts, scores, checkpoint and reward-model
files); the last test runs the real trainer for one epoch and checks what its trackers kept.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from nats.aio.msg import Msg
from PIL import Image

from zelda_rlaif.bus import Bus
from zelda_rlaif.episodes import EpisodeRecord, EpisodeStats, EpochReport
from zelda_rlaif.evaluation import EvalReport
from zelda_rlaif.events import EpochExported, JudgeKind, RewardModelUpdated, SegmentJudged, SegmentScored
from zelda_rlaif.game.profiles import get_profile
from zelda_rlaif.settings import NatsSettings, StoreSettings
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_rlaif.subjects import EPOCH_EXPORTED, REWARD_MODEL_UPDATED
from zelda_rlaif.verdicts import VerdictRecord, Vote
from zelda_trainer.settings import PPOSettings, TrainerSettings
from zelda_trainer.trackers import RunStatus, Tracker, Trackers, metric_name, open_trackers
from zelda_trainer.trackers.params import settings_params
from zelda_trainer.trackers.tensorboard_files import TensorBoardTracker

mlflow = pytest.importorskip("mlflow", reason="pip install 'zelda-rlaif[mlflow]' (a test extra)")
from mlflow.tracking import MlflowClient  # noqa: E402 (after the skip)

RUN = "tracked-run"
MILESTONES = [m.name for m in get_profile("testworld").milestones]
STEPS_PER_EPOCH = 600


# A run's records, as the trainer, the judges and the reward-model service store them.


def epoch_report(epoch: int) -> EpochReport:
    episodes = [
        EpisodeRecord(steps=200, env_return=1.0 + epoch, reward_model_return=0.25, rooms_visited=3, tiles_visited=40,
                      milestones=MILESTONES[:1]),
        EpisodeRecord(steps=300, env_return=2.0 + epoch, reward_model_return=-0.5, rooms_visited=5, tiles_visited=60,
                      milestones=MILESTONES[:2]),
    ]
    return EpochReport(run_id=RUN, epoch=epoch, env_steps=STEPS_PER_EPOCH * (epoch + 1),
                       epoch_env_steps=STEPS_PER_EPOCH, env_steps_per_s=120.0 + epoch, wall_time_s=5.0,
                       reward_model_epoch=None, episodes=EpisodeStats.of(episodes, MILESTONES))


# judge kind -> segment -> dimension scores
VERDICTS = {
    JudgeKind.STATE: {"seg-a": {"progress": 0.2, "exploration": 0.6}, "seg-b": {"progress": 0.4, "exploration": 1.0}},
    JudgeKind.PUZZLE: {"seg-a": {"progress": 0.5}, "seg-b": {"progress": 0.7}},
}
COMBINED = {"seg-a": 0.3, "seg-b": 0.5}


def store_epoch(store: ObjectStore, run_id: str, epoch: int, *, report: bool = True) -> None:
    if report:
        store.put_json(keys.epoch_report(run_id, epoch), epoch_report(epoch).model_copy(update={"run_id": run_id}))
    checkpoint = keys.checkpoint(run_id, epoch)
    store.put_bytes(f"{checkpoint}learner_group/state.pkl", b"weights of epoch %d" % epoch)
    store.put_json(keys.checkpoint_metadata(checkpoint), {"run_id": run_id, "epoch": epoch})


def store_judging(store: ObjectStore, run_id: str, epoch: int) -> RewardModelUpdated:
    for kind, segments in VERDICTS.items():
        for segment, scores in segments.items():
            verdict = SegmentJudged(run_id=run_id, epoch=epoch, segment_id=segment, kind=kind, backend="rules",
                                    model="rules", scores=scores, agreement=1.0, votes=1, rationale="why")
            store.put_json(keys.verdict(run_id, epoch, segment, kind.value),
                           VerdictRecord(verdict=verdict, votes=[Vote(scores=scores, rationale="why")]))
    store.put_jsonl(keys.epoch_scores(run_id, epoch), [
        SegmentScored(run_id=run_id, epoch=epoch, segment_id=segment, combined=combined,
                      dimensions={"progress": combined}, weights={"progress": 1.0})
        for segment, combined in COMBINED.items()])
    store.put_bytes(keys.reward_model(run_id, epoch), b"reward model bytes")
    store.put_json(keys.reward_model_metadata(run_id, epoch), {"epoch": epoch})
    return RewardModelUpdated(run_id=run_id, epoch=epoch, accepted=True, model_epoch=epoch, pairs=12,
                              validation_accuracy=0.75, trained_on_epochs=[epoch])


EXPECTED_JUDGE_FIGURES = {
    "judge/state/progress": 0.3, "judge/state/exploration": 0.8, "judge/puzzle/progress": 0.6,
    "judge/combined": 0.4, "reward_model/accuracy": 0.75, "reward_model/pairs": 12.0,
}


def eval_report(epoch: int) -> EvalReport:
    report = epoch_report(epoch)
    return EvalReport(run_id=RUN, policy="checkpoint", checkpoint="training", epoch=epoch, env_steps=report.env_steps,
                      greedy=False, profile="testworld", episode_steps=300, reward_model_epoch=None, seeds=[1, 2],
                      records=[], episodes=report.episodes, best_episode=0, video=None, wall_time_s=1.0,
                      episodes_per_s=2.0)


def gif(path: Path) -> Path:
    frames = [Image.new("RGB", (16, 16), color) for color in ("red", "blue")]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100)
    return path


# Reading back what the trackers kept.


def tensorboard_scalars(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(log_dir))
    accumulator.Reload()
    return {tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
            for tag in accumulator.Tags()["scalars"]}


def mlflow_run(client: MlflowClient, run_id: str) -> Any:
    experiment = client.get_experiment_by_name("zelda-rlaif")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id], filter_string=f"tags.zelda_run_id = '{run_id}'")
    assert len(runs) == 1, "one MLflow run per zelda run"
    return runs[0]


def mlflow_history(client: MlflowClient, run: Any) -> dict[str, list[tuple[int, float]]]:
    return {name: sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
            for name in run.data.metrics}


def mlflow_artifacts(client: MlflowClient, run: Any, path: str = "") -> set[str]:
    found: set[str] = set()
    for entry in client.list_artifacts(run.info.run_id, path or None):
        found |= mlflow_artifacts(client, run, entry.path) if entry.is_dir else {entry.path}
    return found


# What ``metrics.learning_figures`` makes of a training iteration's result.
LEARNING_FIGURES = {"learner/policy_loss": -0.02, "learner/entropy": 2.05, "reward/new_tile": 1.5,
                    "guidance/agreement_rate": 0.25}


def expected_curves(epochs: int) -> dict[str, list[tuple[int, float]]]:
    curves: dict[str, list[tuple[int, float]]] = {}
    for epoch in range(epochs):
        report = epoch_report(epoch)
        for name, value in report.flat().items():
            curves.setdefault(name, []).append((report.env_steps, value))
    return curves


def assert_curves(actual: Mapping[str, list[tuple[int, float]]], expected: Mapping[str, list[tuple[int, float]]],
                  ) -> None:
    for name, points in expected.items():
        assert name in actual, f"{name} is missing"
        assert [step for step, _ in actual[name]] == [step for step, _ in points], name
        assert [value for _, value in actual[name]] == pytest.approx([value for _, value in points], rel=1e-6), name


def log_two_epochs(trackers: Trackers, store: ObjectStore, tmp_path: Path) -> None:
    """What a trainer hands its trackers over two epochs, the first one judged and evaluated."""
    trackers.start()
    trackers.log_epoch(epoch_report(0), keys.checkpoint(RUN, 0), LEARNING_FIGURES)
    trackers.log_reward_model(store_judging(store, RUN, 0))
    video = gif(tmp_path / "best.gif")
    trackers.log_eval(eval_report(0), video)
    video.unlink()  # the evaluator deletes its file once the call returns
    trackers.log_epoch(epoch_report(1), keys.checkpoint(RUN, 1))


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    opened = open_store(StoreSettings(url=(tmp_path / "store").as_uri()))
    for epoch in (0, 1):
        store_epoch(opened, RUN, epoch)
    return opened


def tracked(tmp_path: Path, store: ObjectStore, **settings: Any) -> TrainerSettings:
    return TrainerSettings(run_id=RUN, store=StoreSettings(url=store.url), **settings)


def test_every_figure_reaches_tensorboard_and_mlflow_at_env_steps(tmp_path: Path, store: ObjectStore) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    trackers = open_trackers(tracked(tmp_path, store, tensorboard_dir=tmp_path / "tb", mlflow_uri=uri), store)
    assert trackers.names == ["TensorBoard", "MLflow"]
    log_two_epochs(trackers, store, tmp_path)
    trackers.close("FINISHED")

    expected = expected_curves(2)
    at_epoch_0 = STEPS_PER_EPOCH
    expected |= {name: [(at_epoch_0, value)] for name, value in LEARNING_FIGURES.items()}
    expected |= {name: [(at_epoch_0, value)] for name, value in EXPECTED_JUDGE_FIGURES.items()}
    expected |= {f"eval/{name}": [(at_epoch_0, value)] for name, value in epoch_report(0).episodes.flat().items()}
    assert "milestone/score" in expected and "throughput/env_steps_per_s" in expected

    scalars = tensorboard_scalars(tmp_path / "tb" / RUN)
    assert_curves(scalars, expected)

    client = MlflowClient(tracking_uri=uri)
    run = mlflow_run(client, RUN)
    assert run.info.status == "FINISHED"
    assert_curves(mlflow_history(client, run), expected)
    assert set(run.data.metrics) == set(scalars), "the same names in both"
    params = run.data.params
    assert params["ppo.lr"] == "0.0003" and params["epochs"] == "3" and params["store.url"] == store.url
    assert params["mlflow_uri"] == uri
    assert mlflow_artifacts(client, run) == {
        "checkpoints/epoch_0/learner_group/state.pkl", "checkpoints/epoch_0/zelda-checkpoint.json",
        "checkpoints/epoch_1/learner_group/state.pkl", "checkpoints/epoch_1/zelda-checkpoint.json",
        "reward_models/epoch_0/rm.pt", "reward_models/epoch_0/metadata.json", "eval/epoch_0/best.gif",
    }


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``mlflow server``: sqlite backend, artifacts proxied through the server (``mlflow-artifacts:``)."""
    root = tmp_path_factory.mktemp("mlflow-server")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log_file = (root / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}", "--artifacts-destination", str(root / "artifacts")],
        stdout=log_file, stderr=subprocess.STDOUT,
        # Its background job runner (huey) serves features this test does not use.
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"mlflow server exited with {process.returncode}: {(root / 'server.log').read_text()}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"mlflow server did not answer within 120s: {(root / 'server.log').read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log_file.close()


def test_a_real_mlflow_server_keeps_metrics_and_artifacts_and_a_resumed_run_continues(
    tmp_path: Path, store: ObjectStore, mlflow_server: str
) -> None:
    settings = tracked(tmp_path, store, tensorboard_dir=None, mlflow_uri=mlflow_server)
    trackers = open_trackers(settings, store)
    log_two_epochs(trackers, store, tmp_path)
    trackers.close("KILLED", timeout_s=120)  # a stopped run waits less by default

    client = MlflowClient(tracking_uri=mlflow_server)
    run = mlflow_run(client, RUN)
    assert run.info.status == "KILLED"
    assert_curves(mlflow_history(client, run), expected_curves(2))
    downloaded = Path(client.download_artifacts(run.info.run_id, "reward_models/epoch_0/rm.pt", str(tmp_path)))
    assert downloaded.read_bytes() == b"reward model bytes", "artifacts went through the server"

    # --resume: the same zelda run goes on in the same MLflow run; a changed setting keeps its first value.
    store_epoch(store, RUN, 2)
    resumed = open_trackers(settings.model_copy(update={"epochs": 5}), store)
    resumed.start()
    resumed.log_epoch(epoch_report(2), keys.checkpoint(RUN, 2))
    resumed.close("FINISHED")
    run = mlflow_run(client, RUN)
    assert run.info.status == "FINISHED" and run.data.params["epochs"] == "3"
    assert_curves(mlflow_history(client, run), expected_curves(3))
    assert "checkpoints/epoch_2/zelda-checkpoint.json" in mlflow_artifacts(client, run)


class Failing(Tracker):
    name = "Failing"

    def __init__(self) -> None:
        self.calls = 0

    def start(self, params: Mapping[str, str]) -> None:
        pass

    def log_metrics(self, figures: Mapping[str, float], step: int) -> None:
        self.calls += 1
        raise OSError("disk full")

    def close(self, status: RunStatus) -> None:
        pass


class Blocked(Tracker):
    """Holds the worker until released: the training loop must not wait for it."""

    name = "Blocked"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.logged: list[int] = []

    def start(self, params: Mapping[str, str]) -> None:
        pass

    def log_metrics(self, figures: Mapping[str, float], step: int) -> None:
        assert self.release.wait(60)
        self.logged.append(step)

    def close(self, status: RunStatus) -> None:
        pass


def test_tracker_failures_are_reported_once_and_never_reach_training(
    tmp_path: Path, store: ObjectStore, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING)
    # Neither tracker can start: TensorBoard's directory is a file, nothing listens at the MLflow URI.
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    (tmp_path / "not-a-dir").write_text("")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    unstartable = open_trackers(tracked(tmp_path, store, tensorboard_dir=tmp_path / "not-a-dir",
                                        mlflow_uri=f"http://127.0.0.1:{closed_port}"), store)
    log_two_epochs(unstartable, store, tmp_path)
    unstartable.close("FINISHED")
    messages = [r.getMessage() for r in caplog.records]
    assert sum("TensorBoard could not start" in m for m in messages) == 1, messages
    assert sum("MLflow could not start" in m for m in messages) == 1, messages

    # One failing on every call beside a working one: one warning, and the working one gets everything.
    caplog.clear()
    failing = Failing()
    trackers = Trackers([TensorBoardTracker(tmp_path / "tb" / RUN), failing], store, RUN, {})
    trackers.start()
    for epoch in (0, 1):
        trackers.log_epoch(epoch_report(epoch))
    # The store lacks what a reward model of epoch 7 needs: reported, and the next epoch is logged all the same.
    trackers.log_reward_model(RewardModelUpdated(run_id=RUN, epoch=7, accepted=False, model_epoch=None, pairs=0,
                                                 validation_accuracy=None, trained_on_epochs=[]))
    trackers.close("FINISHED")
    assert failing.calls == 2
    failures = [r.getMessage() for r in caplog.records]
    assert sum(m.startswith("Failing failed") for m in failures) == 1, failures
    assert sum(m.startswith("the object store failed") for m in failures) == 1, failures
    assert_curves(tensorboard_scalars(tmp_path / "tb" / RUN), expected_curves(2))

    # A slow tracker holds only its worker, never the caller.
    blocked = Blocked()
    slow = Trackers([blocked], store, RUN, {})
    slow.start()
    slow.log_epoch(epoch_report(0))
    slow.log_epoch(epoch_report(1))
    assert blocked.logged == [], "both calls returned while the tracker was still busy"
    blocked.release.set()
    slow.close("FINISHED")
    assert blocked.logged == [STEPS_PER_EPOCH, 2 * STEPS_PER_EPOCH]


def test_params_leave_secrets_out() -> None:
    settings = TrainerSettings(
        run_id=RUN, nats=NatsSettings(url="nats://alice:hunter2@127.0.0.1:4222", token="nats-token-value"),
        store=StoreSettings(url="s3://bucket/prefix", s3_access_key="access-key-value",
                            s3_secret_key="secret-key-value"))
    params = settings_params(settings)
    assert params["nats.url"] == "nats://127.0.0.1:4222"
    assert params["store.url"] == "s3://bucket/prefix" and params["ppo.lambda_"] == "0.95"
    assert "store.s3_secret_key" not in params and "nats.token" not in params
    for secret in ("hunter2", "nats-token-value", "access-key-value", "secret-key-value"):
        assert not any(secret in value for value in params.values())
    assert all(metric_name(name) == name for name in params), "valid MLflow param names"


def test_metric_names_are_valid_everywhere() -> None:
    assert metric_name("milestone/take_key") == "milestone/take_key"
    assert metric_name("milestone/Gnarled Key") == "milestone/Gnarled Key"
    assert metric_name("judge/state/progress (0-1)") == "judge/state/progress _0-1_"
    assert metric_name("eval//../x") == "eval/_/_/x"


def test_the_settings_name_the_trackers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZELDA_TRAINER_TENSORBOARD_DIR", "")
    monkeypatch.setenv("ZELDA_TRAINER_MLFLOW_URI", "http://mlflow:5000")
    settings = TrainerSettings()
    assert settings.tensorboard_dir is None and settings.mlflow_uri == "http://mlflow:5000"
    monkeypatch.delenv("ZELDA_TRAINER_TENSORBOARD_DIR")
    assert TrainerSettings().tensorboard_dir == Path("runs/tensorboard")
    with pytest.raises(ValueError, match=r"sqlite:////absolute/path/mlflow\.db"):
        TrainerSettings(mlflow_uri="./mlruns")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    assert TrainerSettings(mlflow_uri="file:///tmp/mlruns").mlflow_uri == "file:///tmp/mlruns"


@pytest.mark.slow
async def test_the_trainer_logs_epochs_judge_scores_evaluations_and_checkpoints(
    ray_local: None, bus: Bus, nats_settings: NatsSettings, tmp_path: Path
) -> None:
    """One real epoch. The judges and the reward-model service are played by the test: it stores the epoch's
    verdicts, scores and model once the epoch's report is stored, and publishes ``reward_model.updated``."""
    from zelda_trainer.training import Trainer

    run_id = f"tracked-{os.getpid()}-{time.monotonic_ns() % 10**6}"
    store_settings = StoreSettings(url=(tmp_path / "store").as_uri())
    store = open_store(store_settings)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    settings = TrainerSettings(
        run_id=run_id, epochs=1, steps_per_epoch=600, episode_steps=200, segment_steps=100, export_fraction=0.0,
        num_env_runners=2, envs_per_runner=1, live_frames=False, eval_every_epochs=1, eval_episodes=1,
        ppo=PPOSettings(train_batch_size=300, minibatch_size=100, num_epochs=2), nats=nats_settings,
        store=store_settings, tensorboard_dir=tmp_path / "tb", mlflow_uri=uri, final_scores_wait_s=120)

    exported = asyncio.Event()

    async def on_epoch(msg: Msg) -> None:
        if EpochExported.model_validate_json(msg.data).run_id == run_id:
            exported.set()

    async def judge_and_train_reward_model() -> None:
        await exported.wait()  # the epoch's report is stored before epoch.exported
        await bus.publish(REWARD_MODEL_UPDATED, store_judging(store, run_id, 0))

    subscription = await bus.subscribe_live(EPOCH_EXPORTED.subject, on_epoch)
    service = asyncio.create_task(judge_and_train_reward_model())
    summary = await Trainer(settings, show_progress=False).run()
    await service
    await subscription.unsubscribe()
    (report,) = summary.epochs

    expected = {name: [(report.env_steps, value)] for name, value in report.flat().items()}
    expected |= {name: [(report.env_steps, value)] for name, value in EXPECTED_JUDGE_FIGURES.items()}
    scalars = tensorboard_scalars(tmp_path / "tb" / run_id)
    assert_curves(scalars, expected)
    assert any(name.startswith("eval/") for name in scalars), sorted(scalars)
    # What RLlib's learner and the env callbacks reported in the epoch's last iteration, at the same env steps.
    learning = {"learner/policy_loss", "learner/vf_loss", "learner/entropy", "learner/mean_kl_loss",
                "reward/new_tile"}
    assert learning <= set(scalars), sorted(scalars)
    assert all(scalars[name][0][0] == report.env_steps for name in learning)

    client = MlflowClient(tracking_uri=uri)
    run = mlflow_run(client, run_id)
    assert run.info.status == "FINISHED" and run.data.params["run_id"] == run_id
    assert_curves(mlflow_history(client, run), expected)
    artifacts = mlflow_artifacts(client, run)
    assert "checkpoints/epoch_0/zelda-checkpoint.json" in artifacts
    assert {"reward_models/epoch_0/rm.pt", "reward_models/epoch_0/metadata.json"} <= artifacts
    assert any(path.startswith("eval/epoch_0/") for path in artifacts), sorted(artifacts)
