"""SIGHUP stops a service at once (``run_service``): its supervisor is gone, and so may be the servers its
in-flight work would wait for, so the process exits within ``HANGUP_GRACE_S`` even where a task will not stop."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

SERVICE = textwrap.dedent("""
    import asyncio, sys
    import zelda_rlaif.service as service

    service.HANGUP_GRACE_S = float(sys.argv[1])

    async def main(settings, stop):
        async def stubborn():  # as a client that retries through its own cancellation
            while True:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    continue
        if sys.argv[2] == "stubborn":
            asyncio.get_running_loop().create_task(stubborn())
        print("ready", flush=True)
        await asyncio.Event().wait()

    try:
        sys.exit(service.run_service(main, None))
    except KeyboardInterrupt:
        sys.exit(130)
""")


def hang_up(grace_s: float, task: str) -> int:
    process = subprocess.Popen([sys.executable, "-c", SERVICE, str(grace_s), task], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    process.send_signal(signal.SIGHUP)
    try:
        return process.wait(timeout=60)  # a bound on a hang, not a timing: both cases exit in about a second
    finally:
        process.kill()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGHUP is a POSIX signal")
def test_a_service_whose_tasks_stop_exits_on_sighup_without_waiting_for_the_grace() -> None:
    assert hang_up(grace_s=600.0, task="none") == 130


@pytest.mark.skipif(sys.platform == "win32", reason="SIGHUP is a POSIX signal")
def test_a_task_that_will_not_stop_does_not_keep_the_process_after_sighup() -> None:
    assert hang_up(grace_s=0.5, task="stubborn") == 128 + signal.SIGHUP
