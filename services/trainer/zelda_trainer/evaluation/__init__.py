"""Evaluation: a policy plays episodes on fresh seeds and the figures, a JSON report and a video come out.

``cli``/``command``: ``zelda-rlaif eval``. ``checkpoint``: choose and read a run's checkpoint. ``policies``: the
trained RLModule or the random baseline. ``play``: the episodes and the best one's replay. ``evaluate``: one
evaluation end to end, also run by the trainer (``during_training``).
"""
