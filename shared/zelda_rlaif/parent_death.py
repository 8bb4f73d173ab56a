"""Child processes that do not outlive their parent, however it dies.

``zelda-rlaif up`` stops its services in order when it is asked to (``up/stopping.py``), but a SIGKILL, the OOM
killer or a crash gives it no chance. Without this its trainer would go on training and writing checkpoints into
the run directory, and its NATS server on holding the run's JetStream files, beside the next ``up --resume``.
On Linux the kernel sends a chosen signal to a child when the thread that started it dies
(``prctl(PR_SET_PDEATHSIG)``); the ``preexec_fn`` below asks for it between fork and exec. Elsewhere (macOS)
there is no such request and the function returns None: ``up``'s own orderly stop is all there is.

The request follows the *thread* that forked the child, so call ``Popen`` with it from a thread that lives as
long as the process (``up`` starts everything from its main thread).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def stop_with_parent(signum: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess.Popen`` that has the kernel send ``signum`` to the child when this
    process dies; None where the platform cannot (use it as ``preexec_fn=stop_with_parent(...)`` either way)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here, before the fork: the child only calls it
    parent = os.getpid()

    def request() -> None:
        if libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # the parent died before the request: no one will send the signal
            os._exit(1)  # before exec: the parent's signal handlers are still this process's

    return request
