"""The reward-model service: on ``scores.ready`` it trains a Bradley-Terry reward model on the judges' scores.

Modules, in the order a request flows through them: ``settings`` -> ``dataset`` (scores and state logs from
the object store) -> ``preferences`` (pairs, held-out split) -> ``bradley_terry`` (training) -> ``update``
(accept or keep the previous model, save, metadata) -> ``service`` (bus consumer) -> ``cli``.
"""
