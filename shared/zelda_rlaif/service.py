"""How every ``zelda-rlaif <service>`` process runs: settings from flags, logging, signals, asyncio.

Each service's ``cli.run(args)`` does the same three things::

    settings = load_settings(ServiceSettings, **flag_overrides(args, "port", ...))
    configure_logging(name, settings.log)
    return run_service(main, settings)

where ``main(settings, stop)`` is the service's async entry point. SIGTERM (Kubernetes, ``zelda-rlaif up``)
and SIGINT (Ctrl-C) both set ``stop``; ``main`` then finishes or hands back its in-flight work and returns
its exit status. A second signal gives up on that: it raises ``KeyboardInterrupt``, as asyncio does on a
second Ctrl-C, and leaves unfinished work to the next process (the bus redelivers unacknowledged messages,
the trainer resumes from its last checkpoint). SIGHUP does that at once: the kernel sends it to a service whose
``zelda-rlaif up`` died without stopping it (``parent_death.py``), and so does a closing terminal, and in both
cases the servers that in-flight work would wait for (``up``'s NATS) may be gone with it. Cancelled tasks can
still wait for them (a reward-model service whose NATS had gone was seen still running 10 minutes after its
SIGHUP), so the process exits ``HANGUP_GRACE_S`` after a SIGHUP whatever is still running.

Only the standard library is imported here: the CLI modules import this inside ``run``, but keep it cheap.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# After a SIGHUP the process exits within this many seconds, finished or not.
HANGUP_GRACE_S = 10.0

S = TypeVar("S")
# A service's entry point: runs until done or until ``stop`` is set; returns the exit status (None: 0).
ServiceMain = Callable[[S, asyncio.Event], Awaitable[int | None]]


def flag_overrides(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The settings the user gave as flags, by field name; a flag left out (None) leaves the environment's."""
    return {name: value for name in names if (value := getattr(args, name, None)) is not None}


def run_service(main: ServiceMain[S], settings: S,
                *, loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None) -> int:
    """Run ``main(settings, stop)`` in a new event loop with SIGTERM/SIGINT setting ``stop``; its exit status.

    ``loop_factory``: an event loop other than asyncio's own (the HUD runs on uvloop, as uvicorn would).
    """

    async def until_stopped() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        signals_received = 0

        def on_signal(signum: signal.Signals) -> None:
            nonlocal signals_received
            signals_received += 1
            if signals_received > 1:
                raise KeyboardInterrupt  # asked again: give up on the graceful stop (cli.main exits 130)
            log.info("%s received: stopping (a second signal interrupts the shutdown)", signum.name)
            stop.set()

        def on_hangup() -> None:
            log.warning("SIGHUP received (the process that started this one, or its terminal, is gone): stopping "
                        "now, leaving unfinished work to the next process")
            exit_after_grace = threading.Timer(HANGUP_GRACE_S, _exit_now)
            exit_after_grace.daemon = True  # a process that stops in time exits without waiting for it
            exit_after_grace.start()
            raise KeyboardInterrupt

        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, on_signal, signum)
        loop.add_signal_handler(signal.SIGHUP, on_hangup)
        try:
            return await main(settings, stop) or 0
        finally:
            for signum in (*STOP_SIGNALS, signal.SIGHUP):
                loop.remove_signal_handler(signum)

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(until_stopped())


def _exit_now() -> None:
    """Exit a process still running ``HANGUP_GRACE_S`` after its SIGHUP."""
    log.error("still running %g s after SIGHUP: exiting without waiting for the rest", HANGUP_GRACE_S)
    logging.shutdown()
    os._exit(128 + signal.SIGHUP)
