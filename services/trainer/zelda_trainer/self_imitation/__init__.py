"""Self-imitation on the best judged segments: the judges pick which past segments to imitate
(``best_segments``), the learner adds the self-imitation loss on them to PPO's (``learner``)."""

from zelda_trainer.self_imitation.best_segments import BestSegments, ImitationData
from zelda_trainer.self_imitation.learner import CONFIG_KEY, SelfImitationLearner

__all__ = ["CONFIG_KEY", "BestSegments", "ImitationData", "SelfImitationLearner"]
