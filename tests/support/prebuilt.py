"""The suite's slow prerequisites, made in one background process while the rest of the suite runs.

On a fresh machine llama-server's build (~9 minutes on 2 cores), the notebook's venv (~3) and the tiny models (under
a minute) were each made by the first test that needed them, with nothing else running: about a third of the suite.
Most of the suite waits on servers and child processes and leaves a core idle, so the root conftest starts this
module as soon as it has collected a test marked ``prebuilt(<name>, ...)``, and runs those tests last. It runs at the
lowest CPU priority, so the tests keep the cores they use. Each maker holds its cache entry's lock
(``tests/support/cache.py``) while it works: a test that gets there first waits for it and never builds twice, and
a prerequisite that fails here is made again by the test that needs it, which then reports the error.

    python -m tests.support.prebuilt llama-server tiny-models notebook-venv
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Sequence


def _llama_server() -> None:
    from tests.support.llama_server import llama_server_binary

    llama_server_binary()


def _tiny_models() -> None:
    from tests.support.tiny_llm import UNRULY, TinyConfig, make

    make(TinyConfig())
    make(UNRULY)


def _notebook_venv() -> None:
    from tests.support.notebook_venv import notebook_python

    notebook_python()


MAKERS: dict[str, Callable[[], None]] = {
    "llama-server": _llama_server,
    "tiny-models": _tiny_models,
    "notebook-venv": _notebook_venv,
}


def main(names: Sequence[str]) -> int:
    unknown = sorted(set(names) - set(MAKERS))
    if unknown:
        print(f"unknown prerequisites {unknown}; known: {sorted(MAKERS)}", file=sys.stderr)
        return 2
    os.nice(19)  # the build's compilers and pip inherit it
    # The suite stops this process when it ends first: leave through Python's exit, so that every lock is released
    # and every half-made entry's temporary folder removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    failed = 0
    for name in names:
        started = time.perf_counter()
        try:
            MAKERS[name]()
        except Exception as error:  # the test that needs it makes it again and fails with the full story
            print(f"{name}: failed after {time.perf_counter() - started:.0f}s: {error}", flush=True)
            failed += 1
        else:
            print(f"{name}: ready after {time.perf_counter() - started:.0f}s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
