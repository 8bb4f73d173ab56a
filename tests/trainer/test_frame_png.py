"""Frames as PNG (segment export and the HUD's live stream): lossless, and a palette PNG for a Game Boy screen."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from zelda_rlaif.game.actions import Action
from zelda_rlaif.game.env import ZeldaEnv
from zelda_trainer.export import encode_png


def decoded(png: bytes) -> tuple[str, np.ndarray]:
    with Image.open(io.BytesIO(png)) as image:
        return image.mode, np.asarray(image.convert("RGB"))


def test_a_game_screen_is_stored_as_a_lossless_palette_png() -> None:
    env = ZeldaEnv()
    env.reset(seed=0)
    env.render_next = True
    env.step(Action.RIGHT)
    screen = env.screen()
    rgba = env.emulator.pyboy.screen.ndarray  # PyBoy's own buffer: encoded before the emulator is closed
    for pixels in (screen, rgba):
        mode, rgb = decoded(encode_png(pixels))
        assert mode == "P"
        assert np.array_equal(rgb, screen)
    env.close()


def test_up_to_256_colours_in_any_order_and_rgb_beyond() -> None:
    colours = np.array([(i, 255 - i, i * 7 % 256) for i in range(256)], dtype=np.uint8)  # 256 distinct
    many = colours[np.random.default_rng(0).integers(0, 256, size=(144, 160))]
    many.reshape(-1, 3)[:256] = colours  # every one present
    mode, rgb = decoded(encode_png(many))
    assert mode == "P" and np.array_equal(rgb, many)

    beyond = many.copy()
    beyond[100, 7] = (0, 0, 1)  # a 257th colour
    mode, rgb = decoded(encode_png(beyond))
    assert mode == "RGB" and np.array_equal(rgb, beyond)
