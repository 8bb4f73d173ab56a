"""The judge service: ``zelda-rlaif judge --kind <kind>``.

Module map, in reading order: ``settings`` (JudgeSettings, ZELDA_JUDGE_*) -> ``kinds`` (the table of judge
kinds: dimensions, default weights, prompt focus, rules scorer) -> ``rubric`` (weights of the combined score)
-> ``summary`` / ``segment_io`` / ``prompts`` and ``prompt_focus`` (what a judge sees) -> ``votes`` and
``backends`` (rules-v5 with the formulas of ``rule_scores``, or M votes from an OpenAI-compatible server) ->
``ledger`` (verdicts, combined scores and the exactly-once ``scores.ready``) -> ``service`` (consumers,
lifespan, entry point) -> ``rejudge`` (a stored epoch
re-scored with other settings as a new scores version, no NATS) -> ``cli``.
"""
