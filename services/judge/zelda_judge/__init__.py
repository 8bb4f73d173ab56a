"""The judge service: ``zelda-rlaif judge --kind state|puzzle|vision``.

Module map, in reading order: ``settings`` (JudgeSettings, ZELDA_JUDGE_*) -> ``rubric`` (dimensions and
weights) -> ``summary`` / ``segment_io`` / ``prompts`` (what a judge sees) -> ``votes`` and ``backends``
(rules-v1, or M votes from an OpenAI-compatible server) -> ``ledger`` (verdicts, combined scores and the
exactly-once ``scores.ready``) -> ``service`` (consumers, lifespan, entry point) -> ``cli``.
"""
