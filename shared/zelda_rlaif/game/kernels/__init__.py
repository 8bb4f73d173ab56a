"""Compiled per-step kernels (numba) behind the observation, the coverage counts, RND curiosity and the palette
PNGs of exported and live frames.

Why numba: an env step is ~70 us of emulation, so the env's own per-step work has to stay at a few
microseconds, and NumPy cannot get there (each small array call costs ~1 us of overhead, and the observation is
128 scalar stores). numba keeps one implementation in plain Python syntax that is fast both for a single env
and for many env runners. Kernels are compiled with ``cache=True`` so that Ray worker processes load the
compiled code from disk instead of recompiling it, and ``nogil=True`` because they touch only their own arrays.
numba's cache only notices edits to the file a compiled function is defined in, so a kernel and every kernel it
calls live in one module: otherwise an edit to a callee would leave the caller running its old cached code.

The Python classes that own the state (``ObservationBuilder``, ``CoverageTracker``, ``RndCuriosity``) stay the
entry points, as does the trainer's ``encode_png`` for the palette kernel; a kernel only does the arithmetic on
arrays they allocate.
"""
