"""One local Ray for all trainer tests (starting Ray costs seconds; keep the number of start-ups small)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

# Env runners read store/NATS secrets from their own environment, which they inherit from this process.
S3_TEST_KEYS = {"ZELDA_STORE_S3_ACCESS_KEY": "test-access-key", "ZELDA_STORE_S3_SECRET_KEY": "test-secret-key"}


@pytest.fixture(scope="session")
def ray_local() -> Iterator[None]:
    os.environ.update(S3_TEST_KEYS)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _temp_dir=tempfile.mkdtemp(prefix="ray-tests-"),
             runtime_env={"env_vars": {**S3_TEST_KEYS, "OMP_NUM_THREADS": "1"}})
    yield
    ray.shutdown()
