"""Pure Nash equilibria of a two-player game in matrix form: the model-choice meta-game.

Why: GLEE asks which pair of models two players would pick if each could choose the model that plays for
them. Player 1 picks a row i, player 2 a column j; their payoffs are A[i, j] and B[i, j] (e.g. the mean
self-gain of the row model against the column model, and of the column model against the row model).
(i*, j*) is a pure equilibrium iff A[i*, j*] >= A[i, j*] for every row i and B[i*, j*] >= B[i*, j] for every
column j (GLEE spec 1.7): each pick is a best response to the other. Weak best responses count (ties).

A cell not observed (NaN) is never an equilibrium, and a cell whose row or column has an unobserved
deviation is not certified either: nothing is claimed about a deviation that was never played.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TOL = 1e-12  # payoffs that differ by rounding only are ties


def _matrix(x: Sequence[Sequence[float]] | np.ndarray, name: str) -> np.ndarray:
    m = np.asarray(x, dtype=float)
    if m.ndim != 2 or m.size == 0:
        raise ValueError(f"{name}: expected a non-empty 2-D payoff matrix, got shape {m.shape}")
    return m


def best_responses(A: Sequence[Sequence[float]] | np.ndarray, B: Sequence[Sequence[float]] | np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Boolean matrices: ``rows[i, j]`` row i is a best response of player 1 to column j (its column fully
    observed); ``cols[i, j]`` column j is a best response of player 2 to row i (its row fully observed)."""
    a, b = _matrix(A, "A"), _matrix(B, "B")
    if a.shape != b.shape:
        raise ValueError(f"A and B must have the same shape, got {a.shape} and {b.shape}")
    col_ok = ~np.isnan(a).any(axis=0)  # every row's payoff against column j is known
    row_ok = ~np.isnan(b).any(axis=1)
    a_best = np.where(np.isnan(a), -np.inf, a).max(axis=0, keepdims=True)  # per column, player 1's best
    b_best = np.where(np.isnan(b), -np.inf, b).max(axis=1, keepdims=True)  # per row, player 2's best
    with np.errstate(invalid="ignore"):
        rows = (a >= a_best - TOL) & col_ok[None, :]
        cols = (b >= b_best - TOL) & row_ok[:, None]
    return rows, cols


def pure_equilibria(A: Sequence[Sequence[float]] | np.ndarray, B: Sequence[Sequence[float]] | np.ndarray
                    ) -> list[tuple[int, int]]:
    """Every (row, column) where both picks are best responses, in row-major order; [] when none."""
    rows, cols = best_responses(A, B)
    both = rows & cols
    return [(int(i), int(j)) for i, j in zip(*np.nonzero(both))]
