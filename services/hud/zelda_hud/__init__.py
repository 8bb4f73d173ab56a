"""The HUD: a read-only live web dashboard of training, exploration and judging, pushed over websockets."""
