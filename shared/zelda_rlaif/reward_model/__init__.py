"""The reward model shared by the reward-model service (which trains it) and the trainer (which shapes with it).

- ``network``: the per-state MLP r(s), 128 -> 64 -> 64 -> 1 (torch, for training).
- ``normalization``: ``Normalization``, the input scaling (one numpy function used for training *and*
  inference, so the features the model was trained on are exactly the features it sees in use) and the
  output statistics, as saved in ``rm.pt`` and recorded in ``metadata.json``.
- ``model_file``: ``rm.pt``, the weights together with their normalization.
- ``potential``: ``Potential``, Phi(s) from a saved model in plain numpy, cheap enough to call every env step.
- ``metadata``: ``metadata.json`` written beside every epoch's model (or beside a rejected attempt).
- ``registry``: finding and loading a run's current model in the object store.

Submodules are imported explicitly (``from zelda_rlaif.reward_model.potential import Potential``) so that
reading metadata never pays for importing torch.
"""
