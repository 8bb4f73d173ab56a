"""The palette kernel: a Game Boy screen as 8-bit colour indices and the palette they index.

A Game Boy screen holds few colours (4 shades on the original Game Boy; at most 8 background and 8 sprite
palettes of 4 on the Color), so a palette PNG stores it without loss in a third of the RGB pixel data. Pillow
also encodes a palette image several times faster: it filters RGB rows adaptively, palette rows not at all. Pillow
can build the palette itself (``Image.quantize``), but its quantizers promise exactness only loosely and cost more
than this one pass, which keeps each new colour in the order it first appears.
"""

from __future__ import annotations

import numba
import numpy as np

MAX_COLOURS = 256  # what one byte indexes


@numba.njit(cache=True, nogil=True)
def index_colours(pixels: np.ndarray, indices: np.ndarray, palette: np.ndarray) -> int:
    """Fill ``indices[y, x]`` with the palette index of ``pixels[y, x, :3]`` (RGB or RGBA, uint8) and ``palette``
    (``MAX_COLOURS`` x 3, uint8) with the colours in the order they first appear. Returns how many colours there
    are, or -1 when there are more than ``MAX_COLOURS`` (``indices`` and ``palette`` are then incomplete)."""
    height, width = indices.shape
    keys = np.empty(MAX_COLOURS, np.int64)
    count = 0
    last_key, last_index = np.int64(-1), 0  # neighbouring pixels mostly share a colour
    for y in range(height):
        for x in range(width):
            red, green, blue = pixels[y, x, 0], pixels[y, x, 1], pixels[y, x, 2]
            key = (np.int64(red) << 16) | (np.int64(green) << 8) | np.int64(blue)
            if key != last_key:
                found = -1
                for known in range(count):
                    if keys[known] == key:
                        found = known
                        break
                if found < 0:
                    if count == MAX_COLOURS:
                        return -1
                    keys[count] = key
                    palette[count, 0], palette[count, 1], palette[count, 2] = red, green, blue
                    found = count
                    count += 1
                last_key, last_index = key, found
            indices[y, x] = last_index
    return count
