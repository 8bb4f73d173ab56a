"""The replay suite judges real segments with real judges: it borrows the judge suite's fixtures (a private NATS
server, a fresh S3 bucket, the OpenAI test server, judge settings)."""

from tests.judge.conftest import judge_settings, llm, store

__all__ = ["judge_settings", "llm", "store"]
