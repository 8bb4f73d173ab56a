"""RND curiosity kernel: one step's forward pass, running error statistics and, every few steps, the update.

Sums run in float32 like the NumPy matmuls of the reference implementation; only their order differs, so
results agree to float32 rounding. The loops are explicit (an array expression inside a loop would allocate a
temporary per iteration) and their innermost index is the contiguous one, so LLVM vectorises them.
"""

from __future__ import annotations

import numba
import numpy as np

TARGET, PREDICTOR = 0, 1  # first index of the stacked second layers
COUNT, MEAN, VARIANCE, BUFFERED = 0, 1, 2, 3  # the state array


@numba.njit(cache=True, nogil=True)
def _train(pred_w2: np.ndarray, batch: np.ndarray, lr: float) -> None:
    """One normalised least-mean-squares step on the predictor's output layer over the buffered states.

    ``batch`` rows hold each state's predictor activations, then its output error (prediction - target).
    """
    rows, (hidden, features) = batch.shape[0], pred_w2.shape
    squares = np.zeros(hidden, np.float32)  # per unit, so that the sum over rows vectorises
    gradient = np.zeros((hidden, features), np.float32)
    for k in range(rows):
        for j in range(hidden):
            activation = batch[k, j]
            squares[j] += activation * activation
            if activation != 0.0:  # ReLU zeroes about half of them
                for f in range(features):
                    gradient[j, f] += activation * batch[k, hidden + f]
    power = float(squares.sum() / np.float32(rows)) + 1e-6
    step = np.float32(lr / power)
    for j in range(hidden):
        for f in range(features):
            pred_w2[j, f] -= step * gradient[j, f] / np.float32(rows)


@numba.njit(cache=True, nogil=True)
def reward(w1: np.ndarray, w2: np.ndarray, batch: np.ndarray, state: np.ndarray, lr: float,
           observation: np.ndarray) -> float:
    """The curiosity bonus of ``observation``: its prediction error relative to the running mean error.

    ``w1`` is both first layers side by side (target, then predictor), ``w2`` the stacked second layers. ``state``
    holds the running COUNT, MEAN and VARIANCE of the raw error and how many states are BUFFERED in ``batch``
    (see ``_train``). When the batch is full the predictor learns from it; its weights have not changed since
    those errors were computed, so they are what a recomputation would give.
    """
    hidden, features = w2.shape[1], w2.shape[2]
    h = np.zeros(w1.shape[1], np.float32)
    for i in range(observation.shape[0]):
        value = observation[i]
        if value != 0.0:  # most entries are one-hot or flag bits: skipping zeros saves most of the work
            for j in range(h.shape[0]):
                h[j] += value * w1[i, j]
    for j in range(h.shape[0]):
        h[j] = max(h[j], np.float32(0.0))

    target = np.zeros(features, np.float32)
    prediction = np.zeros(features, np.float32)
    for j in range(hidden):  # both second layers in one pass: half the loop overhead
        target_h, predictor_h = h[j], h[hidden + j]
        for f in range(features):
            target[f] += target_h * w2[TARGET, j, f]
            prediction[f] += predictor_h * w2[PREDICTOR, j, f]
    row = int(state[BUFFERED])
    batch[row, :hidden] = h[hidden:]
    squared = np.float32(0.0)
    for f in range(features):
        diff = prediction[f] - target[f]
        batch[row, hidden + f] = diff
        squared += diff * diff
    error = float(squared) / features

    state[COUNT] += 1.0
    delta = error - state[MEAN]
    state[MEAN] += delta / state[COUNT]
    state[VARIANCE] += (delta * (error - state[MEAN]) - state[VARIANCE]) / state[COUNT]

    state[BUFFERED] = row + 1
    if row + 1 == batch.shape[0]:
        _train(w2[PREDICTOR], batch, lr)
        state[BUFFERED] = 0
    # Relative to the running mean error: familiar states earn nothing (never a penalty), novel ones up to 3,
    # so a single surprise cannot outweigh the game's own rewards.
    return min(max(error / (state[MEAN] + 1e-8) - 1.0, 0.0), 3.0)
