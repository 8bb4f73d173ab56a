"""``GuidanceRuntime``: the env-side life of online guidance. One per env, driven by ``ZeldaEnv.step``.

Each step, on the env thread and without ever waiting:
1. ``begin_step``: take in the answers that arrived (a new suggestion replaces the live one), then draw
   whether this step asks (seeded: text with ``text_probability``, vision with ``vision_probability``) and
   whether the rate limits allow it. It returns True when the step must render its frame (a vision request).
2. the env acts; the reward components see ``live`` (the ``guidance_*`` bonus).
3. ``end_step``: count agreement with the live suggestion, age it (it expires ``expiry_steps`` steps after
   its arrival), and send this step's request: the rules planner answers at once (the answer is taken in on
   the next step, like any other); an LLM request is handed to the background loop.

Answers come back through a thread-safe queue, so every counter is only touched by the env thread. Answers
to a request of an earlier episode, made in another room than the player is in now, or older than
``max_delay_steps``, are counted as stale and dropped: they describe a situation that is gone.

Counters: requests, answers, failures, stale, limited (draws refused by the rate limits), guided_steps
(steps with a live suggestion) and agreements (of those, the steps whose action matched it).
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from zelda_rlaif.game.actions import ACTION_NAMES
from zelda_rlaif.game.guidance.client import GuidanceClient, GuidanceRequestError
from zelda_rlaif.game.guidance.config import Backend, GuidanceConfig, GuidanceSecrets, Source
from zelda_rlaif.game.guidance.limits import TokenBucket
from zelda_rlaif.game.guidance.loop import BackgroundLoop, shared_loop
from zelda_rlaif.game.guidance.planner import RulesPlanner
from zelda_rlaif.game.guidance.snapshot import PlayView, Snapshot, describe, take_snapshot
from zelda_rlaif.settings import load_settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Suggestion:
    action: int
    reason: str
    source: Source
    backend: Backend
    requested_step: int  # env step count when the request was sent
    episode: int
    location: tuple[int, int]  # (group, room) the request was about

    @property
    def action_name(self) -> str:
        return ACTION_NAMES[self.action]


@dataclass(frozen=True)
class _Failure:
    kind: str
    message: str


@dataclass
class GuidanceCounts:
    requests: int = 0
    answers: int = 0
    failures: int = 0
    stale: int = 0
    limited: int = 0
    guided_steps: int = 0
    agreements: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))  # flat ints: no need for dataclasses.asdict's deep copy

    @property
    def agreement_rate(self) -> float | None:
        return self.agreements / self.guided_steps if self.guided_steps else None


Listener = Callable[[Suggestion, int], None]


class GuidanceRuntime:
    def __init__(self, config: GuidanceConfig, view: PlayView, *, clock: Callable[[], float] = time.monotonic,
                 loop: BackgroundLoop | None = None, planner: RulesPlanner | None = None) -> None:
        self.config = config
        self.view = view
        self.counts = GuidanceCounts()
        self.planner = planner or RulesPlanner()
        self.last_failure: str | None = None
        self._client = (GuidanceClient(config, load_settings(GuidanceSecrets).llm_api_key)
                        if config.backend == "openai" else None)
        self._loop = loop
        self._bucket = TokenBucket(config.rate_per_s, config.burst, clock)
        self._rng = random.Random(config.seed)
        self._p_text = config.text_probability
        self._p_any = config.text_probability + (config.vision_probability if config.sees_screen else 0.0)
        self._inbox: queue.SimpleQueue[Suggestion | _Failure] = queue.SimpleQueue()
        self._futures: set[concurrent.futures.Future[None]] = set()
        self._in_flight = 0
        self._episode = 0
        self._live: Suggestion | None = None
        self._location: tuple[int, int] | None = None  # where the player is (after the last step)
        self._steps_left = 0
        self._draw: Source | None = None
        self._unreported: dict[str, int] = {}
        self._warned: set[str] = set()
        self._listeners: list[Listener] = []
        self._closed = False

    # Hooks for the env

    @property
    def live(self) -> Suggestion | None:
        """The suggestion that applies to the step being taken (None when there is none)."""
        return self._live

    def new_episode(self, seed: int | None = None) -> None:
        """Forget the live suggestion; answers still in flight will be stale. A seed restarts the draws."""
        if seed is not None:
            self._rng = random.Random(f"{self.config.seed}/{seed}")
        self._episode += 1
        self._location = None
        self._live = None
        self._steps_left = 0
        self._draw = None

    def begin_step(self) -> bool:
        """Take in arrived answers and draw this step's request; True when the step must render its frame."""
        if not self._inbox.empty():
            self._take_answers()
        u = self._rng.random()
        source: Source | None = "text" if u < self._p_text else "vision" if u < self._p_any else None
        # The rules planner is local and free; only LLM requests are limited.
        if source is not None and self._client is not None and not self._may_send():
            self._count("limited")
            source = None
        self._draw = source
        return source == "vision"

    def end_step(self, action: int, state: dict[str, int], still_steps: int) -> None:
        self._location = (state.get("group", 0), state.get("room", 0))
        live = self._live
        if live is not None:
            self._count("guided_steps")
            if action == live.action:
                self._count("agreements")
            self._steps_left -= 1
            if self._steps_left <= 0:
                self._live = None
        if self._draw is not None and not self._closed:
            self._send(self._draw, take_snapshot(self.view, state, still_steps,
                                                 walkthrough=self.config.follow_walkthrough))
        self._draw = None

    def close(self) -> None:
        self._closed = True
        for future in list(self._futures):
            future.cancel()
        if self._client is not None and self._loop is not None and self._loop.alive:
            try:
                self._loop.submit(self._client.aclose()).result(timeout=2.0)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError, RuntimeError) as exc:
                log.debug("guidance client not closed cleanly: %s", exc)

    # For the trainer's metrics and the HUD

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(suggestion, step)`` on the env thread whenever a suggestion arrives."""
        self._listeners.append(listener)

    def take_counts(self) -> dict[str, int]:
        """Counter increases since the previous call (only the nonzero ones). Cheap: called every step."""
        changed, self._unreported = self._unreported, {}
        return changed

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def settle(self, timeout_s: float = 10.0) -> bool:
        """Wait until every request sent so far has its answer queued. For tests and benchmarks only: the
        env loop must never call this. Returns False on timeout."""
        _, pending = concurrent.futures.wait(list(self._futures), timeout=timeout_s)
        return not pending

    # Internals

    def _count(self, name: str) -> None:
        setattr(self.counts, name, getattr(self.counts, name) + 1)
        self._unreported[name] = self._unreported.get(name, 0) + 1

    def _may_send(self) -> bool:
        return self._in_flight < self.config.max_in_flight and self._bucket.try_take()

    def _send(self, source: Source, snapshot: Snapshot) -> None:
        self._count("requests")
        self._in_flight += 1
        if self._client is None:
            self._inbox.put(self._plan(snapshot))
            return
        screen = self.view.screen() if source == "vision" else None
        if self._loop is None:
            self._loop = shared_loop()
        future = self._loop.submit(self._ask(source, snapshot, screen, self._rng.getrandbits(31), self._episode))
        self._futures.add(future)
        future.add_done_callback(self._futures.discard)

    def _plan(self, snapshot: Snapshot) -> Suggestion | _Failure:
        try:
            plan = self.planner.suggest(snapshot)
        except Exception as exc:  # a planner bug costs a suggestion, never the env
            return _Failure("error", f"the rules planner failed on {snapshot.state}: {type(exc).__name__}: {exc}")
        return Suggestion(int(plan.action), plan.reason, "text", "rules", snapshot.step, self._episode,
                          snapshot.location)

    async def _ask(self, source: Source, snapshot: Snapshot, screen: np.ndarray | None, seed: int,
                   episode: int) -> None:
        """Runs on the background loop; whatever happens, exactly one outcome goes to the inbox."""
        assert self._client is not None
        outcome: Suggestion | _Failure
        try:
            action, reason = await self._client.ask(source, describe(snapshot), screen, seed)
        except GuidanceRequestError as exc:
            outcome = _Failure(exc.kind, str(exc))
        except Exception as exc:  # a bug or an odd server must not leave the request unaccounted for
            outcome = _Failure("error", f"{type(exc).__name__}: {exc}")
        else:
            outcome = Suggestion(action, reason, source, "openai", snapshot.step, episode, snapshot.location)
        self._inbox.put(outcome)

    def _take_answers(self) -> None:
        while True:
            try:
                outcome = self._inbox.get_nowait()
            except queue.Empty:
                return
            self._in_flight -= 1
            if isinstance(outcome, _Failure):
                self._failed(outcome)
            elif self._stale(outcome):
                self._count("stale")
            else:
                self._count("answers")
                self._live = outcome
                self._steps_left = self.config.expiry_steps
                self._notify(outcome)

    def _stale(self, suggestion: Suggestion) -> bool:
        return (suggestion.episode != self._episode or suggestion.location != self._location
                or self.view.step_count - suggestion.requested_step > self.config.max_delay_steps)

    def _failed(self, failure: _Failure) -> None:
        self._count("failures")
        self.last_failure = failure.message
        # The first failure of each kind is worth a warning; repeats would flood the log of a long run.
        level = logging.DEBUG if failure.kind in self._warned else logging.WARNING
        self._warned.add(failure.kind)
        log.log(level, "guidance request failed (%s): %s; play goes on without it", failure.kind, failure.message)

    def _notify(self, suggestion: Suggestion) -> None:
        step = self.view.step_count
        for listener in self._listeners:
            try:
                listener(suggestion, step)
            except Exception as exc:  # a HUD problem must never stop the env
                log.warning("guidance listener %r failed: %s", listener, exc)

