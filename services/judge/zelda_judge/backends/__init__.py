"""Judge backends: ``rules`` (deterministic, no LLM, the embedded default) and ``openai`` (M LLM votes)."""

from zelda_judge.backends.base import JudgeBackend, JudgeBackendError, Judgement

__all__ = ["JudgeBackend", "JudgeBackendError", "Judgement"]
