"""Fisher's exact test, two-sided, for many 2x2 tables at once.

A drift pass tests the failure rate of every series, and a series' window is small enough that most
of these tables need the exact test. ``scipy.stats.fisher_exact`` takes one table per call and spends
about a millisecond in its distribution objects' per-call checks, a second over 1,000 series. This
is the same algorithm (scipy 1.11+) with every step taken for all tables at once, each
hypergeometric function evaluated only for the tables that need it at the points scipy evaluates:
the same values for each table, so the p-values are scipy's, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
Mask = NDArray[np.bool_]

# scipy's relative tolerance for "as likely as the observed table".
_GAMMA = 1 + 1e-14


def _hypergeom() -> Any:
    """scipy.stats.hypergeom, imported on first use (see ``stats._special``)."""
    from scipy.stats import hypergeom

    return hypergeom


@dataclass(frozen=True)
class _Tables:
    """Tables as the hypergeometric distribution of their top-left cell: ``a`` observed of ``drawn``
    drawn from ``total`` holding ``marked``."""

    a: Ints
    total: Ints
    marked: Ints
    drawn: Ints

    def take(self, rows: Mask) -> _Tables:
        return _Tables(self.a[rows], self.total[rows], self.marked[rows], self.drawn[rows])

    def pmf(self, x: Ints) -> Floats:
        return np.asarray(_hypergeom().pmf(x, self.total, self.marked, self.drawn), dtype=np.float64)

    def cdf(self, x: Ints) -> Floats:
        return np.asarray(_hypergeom().cdf(x, self.total, self.marked, self.drawn), dtype=np.float64)

    def sf(self, x: Ints) -> Floats:
        return np.asarray(_hypergeom().sf(x, self.total, self.marked, self.drawn), dtype=np.float64)


def fisher_exact_two_sided(table: Ints) -> Floats:
    """The two-sided p-values of ``table``: one 2x2 table per row, as ``(a, b, c, d)`` for
    ``[[a, b], [c, d]]``; ``scipy.stats.fisher_exact(...).pvalue`` of each."""
    a, b, c, d = (table[:, i].astype(np.int64) for i in range(4))
    p = np.ones(len(a))
    # a margin of 0: nothing to test
    open_ = (a + b > 0) & (c + d > 0) & (a + c > 0) & (b + d > 0)
    tables = _Tables(a, a + b + c + d, a + b, a + c).take(open_)
    # int() of the float quotient, as scipy does
    mode = ((tables.drawn + 1) * (tables.marked + 1) / (tables.total + 2)).astype(np.int64)
    exact, at_mode = tables.pmf(tables.a), tables.pmf(mode)
    bound = exact * _GAMMA
    values = np.ones(len(mode))
    undecided = ~(np.abs(exact - at_mode) / np.maximum(exact, at_mode) <= 1e-14)
    for below in (True, False):
        rows = undecided & ((tables.a < mode) if below else (tables.a >= mode))
        values[rows] = _two_tails(tables.take(rows), mode[rows], bound[rows], below)
    p[open_] = np.minimum(values, 1.0)
    return p


def _two_tails(tables: _Tables, mode: Ints, bound: Floats, below: bool) -> Floats:
    """The tail beyond the observed value, plus the other tail from where the pmf falls to the
    observed one's (found by a binary search on that side of the mode)."""
    if below:
        near = tables.cdf(tables.a)
        far_end = tables.drawn
    else:
        near = tables.sf(tables.a - 1)
        far_end = np.zeros_like(mode)
    # The other tail is empty when even its end is more likely than the observed value.
    rows = ~(tables.pmf(far_end) > bound)
    if not rows.any():
        return near
    other = tables.take(rows)
    if below:
        guess = _search(lambda x, r: -other.take(r).pmf(x), -bound[rows], mode[rows], far_end[rows])
        tail = other.sf(guess)
    else:
        guess = _search(lambda x, r: other.take(r).pmf(x), bound[rows], far_end[rows], mode[rows])
        tail = other.cdf(guess)
    near[rows] += tail
    return near


def _search(fn: Callable[[Ints, Mask], Floats], target: Floats, lo: Ints, hi: Ints) -> Ints:
    """scipy's ``_binary_search_for_binom_tst`` run for every row at once: the ``i`` in ``[lo, hi]``
    with ``fn(i) <= target < fn(i + 1)`` of an ascending ``fn``, or the first ``i`` found with
    ``fn(i) == target``. ``fn(x, rows)`` evaluates the rows ``rows`` at ``x``."""
    lo, hi = lo.copy(), hi.copy()
    found = np.full(len(lo), -1, dtype=np.int64)
    active = lo < hi
    while active.any():
        mid = lo + (hi - lo) // 2
        value = np.zeros(len(lo))
        value[active] = fn(mid[active], active)
        below, above = active & (value < target), active & (value > target)
        hit = active & ~below & ~above  # equal (or NaN, which scipy also takes as found)
        found[hit] = mid[hit]
        lo[below] = mid[below] + 1
        hi[above] = mid[above] - 1
        active &= ~hit & (lo < hi)
    ends = found < 0
    end = lo[ends]
    found[ends] = np.where(fn(end, ends) <= target[ends], end, end - 1)
    return found
