"""Run the services of ``zelda-rlaif up`` as child processes, show progress, stop cleanly, summarise."""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from zelda_rlaif.bus import Bus
from zelda_rlaif.embedded_nats import EmbeddedNats
from zelda_rlaif.episodes import EpochReport
from zelda_rlaif.errors import ZeldaRlaifError
from zelda_rlaif.events import JudgeKind, LiveMetrics
from zelda_rlaif.settings import NatsSettings, StoreSettings, load_settings
from zelda_rlaif.storage import ObjectStore, keys, open_store
from zelda_rlaif.up import figures
from zelda_rlaif.up.processes import ServiceProcess, stop_together
from zelda_rlaif.up.run_dir import SUMMARY_FILE
from zelda_rlaif.up.servers import ServerWatch
from zelda_rlaif.up.stopping import (
    NATS_GRACE_S,
    SERVICES_GRACE_S,
    TRAINER_GRACE_S,
    StopRequest,
    resume_command,
)
from zelda_rlaif.up.summary import build_summary, print_summary
from zelda_rlaif.up.watch import PipelineWatch


@dataclass(frozen=True)
class UpOptions:
    run_id: str
    run_dir: Path
    epochs: int
    steps_per_epoch: int
    env_runners: int
    export_fraction: float
    rom: Path | None
    state: Path | None
    shaping_mode: str
    llm_url: str | None
    llm_model: str | None
    nats_url: str | None
    store_url: str | None
    hud_port: int
    resume: bool
    finish_timeout_s: float
    tensorboard_dir: Path | None = None  # None: no TensorBoard event files
    mlflow_uri: str | None = None
    # The flags that shaped the run, which the command to continue it repeats (see stopping.resume_command).
    resume_flags: tuple[str, ...] = ()
    # Kept open by every process `up` starts: the run directory's lock (``lock.py``), held until the last exits.
    held_fds: tuple[int, ...] = ()


class ServiceFailed(ZeldaRlaifError):
    pass


def service_processes(options: UpOptions, nats_url: str, store_url: str) -> list[ServiceProcess]:
    logs = options.run_dir / "logs"
    common = {"ZELDA_NATS_URL": nats_url, "ZELDA_STORE_URL": store_url, "OMP_NUM_THREADS": "1",
              "RAY_AUTH_MODE": "disabled", "PYTHONUNBUFFERED": "1",
              "ZELDA_TRAINER_EXPORT_FRACTION": str(options.export_fraction)}
    judge_env = dict(common)
    if options.llm_url:
        judge_env.update({"ZELDA_JUDGE_BACKEND": "openai", "ZELDA_JUDGE_LLM_URL": options.llm_url,
                          "ZELDA_JUDGE_LLM_MODEL": options.llm_model or ""})
    trainer_args = ["trainer", "--run-id", options.run_id, "--epochs", str(options.epochs),
                    "--steps-per-epoch", str(options.steps_per_epoch), "--env-runners", str(options.env_runners),
                    "--shaping-mode", options.shaping_mode, "--tensorboard-dir", str(options.tensorboard_dir or ""),
                    "--no-progress"]
    if options.mlflow_uri:
        trainer_args += ["--mlflow-uri", options.mlflow_uri]
    if options.rom:
        trainer_args += ["--rom", str(options.rom.resolve())]
    if options.state:
        trainer_args += ["--state", str(options.state.resolve())]
    if options.resume:
        trainer_args.append("--resume")
    processes = [
        ServiceProcess(f"judge-{kind}", ["judge", "--kind", kind.value, "--http-port", "0"], judge_env,
                       logs / f"judge-{kind}.log")
        for kind in JudgeKind
    ]
    processes += [
        ServiceProcess("reward-model", ["reward-model"], common, logs / "reward-model.log"),
        ServiceProcess("hud", ["hud", "--port", str(options.hud_port), "--run-id", options.run_id], common,
                       logs / "hud.log"),
        # SIGINT lets the trainer unwind (stop Ray, close NATS) like a Ctrl-C would. Started last, stopped first.
        # After its last epoch the trainer waits, as long as `up` does, for that epoch's judge scores and reward
        # model: its trackers log them too.
        ServiceProcess("trainer", trainer_args,
                       {**common, "ZELDA_TRAINER_FINAL_SCORES_WAIT_S": str(options.finish_timeout_s)},
                       logs / "trainer.log", stop_signal=signal.SIGINT),
    ]
    for process in processes:
        process.held_fds = options.held_fds
    return processes


def progress_table(options: UpOptions, watch: PipelineWatch, processes: list[ServiceProcess],
                   waiting: list[str] | None = None) -> Table:
    """One row per epoch: env steps, steps/s and the finished episodes from the epoch's report once it ended (from
    the live metrics while it runs), then the pipeline's counts; under it, the servers the run is waiting for."""
    table = Table(title=f"zelda-rlaif up: run {options.run_id}  HUD http://127.0.0.1:{options.hud_port}/")
    for column in ("epoch", "env steps", "steps/s", "episodes", "env return", "milestone score", "exported",
                   *(f"judged {kind}" for kind in JudgeKind), "scored", "scores ready", "reward model acc."):
        table.add_column(column)
    metrics = watch.metrics
    epochs = sorted(set(watch.exported) | set(watch.epochs_exported) | ({metrics.epoch} if metrics else set()))
    for epoch in epochs:
        # Both carry env steps, steps/s and episode figures: the report for the epoch, the metrics so far.
        agent: EpochReport | LiveMetrics | None = watch.reports.get(epoch) or (
            metrics if metrics and metrics.epoch == epoch else None)
        model = watch.reward_models.get(epoch)
        accuracy = "-" if model is None or model.validation_accuracy is None else f"{model.validation_accuracy:.2f}"
        table.add_row(
            str(epoch),
            *(("",) * 5 if agent is None else (
                str(agent.env_steps), f"{agent.env_steps_per_s:.0f}", figures.episodes(agent.episodes),
                figures.number(agent.episodes.return_env_mean), figures.number(agent.episodes.milestone_score))),
            str(watch.exported[epoch]),
            *(str(watch.judged[(epoch, kind.value)]) for kind in JudgeKind),
            str(watch.scored[epoch]), "yes" if epoch in watch.scores_ready else "",
            accuracy if model else "",
        )
    down = [p.name for p in processes if not p.running]
    table.caption = f"dead letters {watch.dead_letters}" + (f"  stopped: {', '.join(down)}" if down else "")
    if waiting:
        table.caption += "\n" + "\n".join(f"[yellow]{line}[/]" for line in waiting)
    return table


@dataclass
class Outcome:
    watch: PipelineWatch
    failure: str | None  # why the run stopped early, for the user; None: it finished or was asked to stop


def stop_services(processes: list[ServiceProcess], request: StopRequest) -> None:
    """The trainer first (it may be exporting or checkpointing, and the others may still take its last events),
    then the judges, the reward model and the HUD together."""
    stop_together([p for p in processes if p.name == "trainer"], TRAINER_GRACE_S, lambda: request.hurry)
    stop_together([p for p in processes if p.name != "trainer"], SERVICES_GRACE_S, lambda: request.hurry)


async def supervise(options: UpOptions, nats_url: str, store_url: str, store: ObjectStore, console: Console,
                    request: StopRequest) -> Outcome:
    bus = await Bus.connect(NatsSettings(url=nats_url), name="zelda-rlaif-up")
    await bus.provision()
    watch = PipelineWatch(options.run_id)
    await watch.start(bus)
    processes = service_processes(options, nats_url, store_url)
    trainer = processes[-1]
    failure: str | None = None
    servers = ServerWatch(bus, nats_url, store, keys.progress(options.run_id))
    probing = asyncio.Event()
    # Tasks, not awaited in the loop: while the store is away they wait, and the display must go on saying so.
    probe = asyncio.create_task(servers.probe_store(probing))
    reports: asyncio.Task[None] | None = None
    try:
        for process in processes:
            if not request.requested:
                process.start()
        with Live(progress_table(options, watch, processes), console=console, refresh_per_second=2,
                  transient=False) as live:
            finish_deadline: float | None = None
            while not request.requested:
                await asyncio.sleep(0.5)
                gone = [t.exception() for t in (probe, reports) if t is not None and t.done() and t.exception()]
                if gone:  # the store stayed away past its outage limit (the services stop on their own too)
                    failure = str(gone[0])
                    break
                if reports is None or reports.done():
                    reports = asyncio.create_task(watch.read_reports(store))
                live.update(progress_table(options, watch, processes, servers.waiting()))
                crashed = [p for p in processes if p is not trainer and not p.running]
                if crashed:
                    failure = f"{crashed[0].name} exited with {crashed[0].returncode}; see {crashed[0].log_path}"
                    break
                if trainer.running:
                    continue
                if trainer.returncode != 0:
                    failure = f"the trainer exited with {trainer.returncode}; see {trainer.log_path}"
                    break
                first_epoch = min(watch.epochs_exported, default=0)
                epochs = list(range(first_epoch, first_epoch + options.epochs))
                if finish_deadline is None:
                    finish_deadline = time.monotonic() + options.finish_timeout_s
                if watch.loop_closed(epochs):
                    if reports is not None:
                        await reports
                    await watch.read_reports(store)  # the last epoch's report, for the summary
                    break
                if time.monotonic() > finish_deadline:
                    failure = (f"training finished but the judges/reward model did not close every epoch within "
                               f"{options.finish_timeout_s:.0f}s; see the logs in {options.run_dir / 'logs'}")
                    break
    finally:
        if request.requested:
            console.print(f"[yellow]{signal.Signals(request.signum or 0).name} received: stopping the "
                          "services (again to stop at once)[/]")
        # In a thread, so that the display keeps counting the events the services publish while they stop.
        await asyncio.to_thread(stop_services, processes, request)
        probing.set()
        for task in (probe, reports):
            if task is not None and not task.done():
                task.cancel()
        await asyncio.sleep(0.3)  # let the last events arrive
        await watch.stop()
        await bus.close()
    if failure:
        for process in processes:
            if process.returncode not in (0, None, -signal.SIGTERM, -signal.SIGINT, 130):
                console.print(f"[red]{process.name}[/] log tail:\n{process.log_tail()}")
    return Outcome(watch, failure)


def next_epoch(store: ObjectStore, run_id: str) -> int:
    """The epoch a resumed run starts at (``checkpoints.resume_point``, as the trainer picks it)."""
    from zelda_trainer import checkpoints

    return checkpoints.resume_point(store, run_id)[1]


def run_up(options: UpOptions) -> int:
    """Run the loop; 0 when it closed, 128 + the signal when stopped by one. Raises ``ServiceFailed``."""
    request = StopRequest().install()
    try:
        return _run_up(options, request, Console())
    finally:
        request.restore()


def _run_up(options: UpOptions, request: StopRequest, console: Console) -> int:
    store_url = options.store_url or (options.run_dir / "store").as_uri()
    store = open_store(load_settings(StoreSettings, url=store_url), create_bucket=True)
    first_epoch = next_epoch(store, options.run_id) if options.resume else 0
    embedded: EmbeddedNats | None = None
    outcome: Outcome | None = None
    try:
        nats_url = options.nats_url
        if nats_url is None:
            embedded = EmbeddedNats(options.run_dir / "nats", held_fds=options.held_fds, stop_with_owner=True)
            nats_url = embedded.start()
        console.print(f"run [bold]{options.run_id}[/] in {options.run_dir}")
        console.print(f"HUD: [bold]http://127.0.0.1:{options.hud_port}/[/]   NATS: {nats_url}   store: {store.url}")
        if not request.requested:
            outcome = asyncio.run(supervise(options, nats_url, store_url, store, console, request))
    finally:
        if embedded is not None:  # last: every service has stopped publishing
            embedded.stop(timeout_s=0 if request.hurry else NATS_GRACE_S)
    if outcome is not None and outcome.failure is None:
        summary = build_summary(options.run_id, options.run_dir, store, outcome.watch, options.hud_port)
        (options.run_dir / SUMMARY_FILE).write_text(summary.model_dump_json(indent=2))
        print_summary(summary, console)
    failure = outcome.failure if outcome is not None else None
    if request.requested or failure:
        epochs_left = first_epoch + options.epochs - next_epoch(store, options.run_id)
        resume = resume_command(options.run_dir, epochs_left, options.resume_flags) if epochs_left >= 1 else None
        if failure:
            raise ServiceFailed(f"{failure}; " + (f"once that is fixed, continue the run with: {resume}" if resume
                                                  else "its training had finished, so there is nothing to resume"))
        console.print("[yellow]stopped by request; every service shut down.[/] " + (
            "Continue the run with:" if resume else "Its training had finished, so there is nothing to resume."))
        if resume:
            console.print(resume, markup=False, highlight=False, soft_wrap=True)  # one line, to copy as it is
        return request.exit_code
    if options.tensorboard_dir is not None:
        console.print(f"curves: tensorboard --logdir {options.tensorboard_dir}")
    if options.mlflow_uri:
        console.print(f"MLflow: run {options.run_id} at {options.mlflow_uri}")
    return 0
