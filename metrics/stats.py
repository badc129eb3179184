"""Mergeable summary statistics: count, mean, M2 (sum of squared deviations) and max.

:class:`Moments` summarises a multiset of float samples so that two summaries can be merged into
the summary of the union without looking at the samples again (Chan, Golub & LeVeque, "Updating
formulae and a pairwise algorithm for computing sample variances", 1979)::

    n     = n_a + n_b
    delta = mean_b - mean_a
    mean  = mean_a + delta * n_b / n
    M2    = M2_a + M2_b + delta**2 * n_a * n_b / n
    max   = max(max_a, max_b)

The variance is never computed as ``E[x**2] - E[x]**2`` (the "naive" sum of squares), which loses
every significant digit when the mean is large compared with the spread: for samples
``1e10 + (4, 7, 13, 16)`` it returns ``0`` or a negative number instead of ``22.5``.

Standard deviation is the *population* standard deviation (``ddof=0``, ``numpy.std``'s default):
``sqrt(M2 / count)``. A window is the whole population it describes, not a sample of it.

Precision ("exact as floats allow")
-----------------------------------
* ``count`` is a Python ``int``: exact, whatever the number of samples.
* ``max`` is exact (it is one of the samples).
* the mean is carried as an unevaluated sum of two floats, ``mean + mean_lo`` (double-double).
  There is no exact float average in general, so "exact" means: ``mean`` is the true average
  rounded to a float up to an error of a few ulps of the data's *spread* (max - min), not of its
  magnitude. Tests require ``abs(mean - math.fsum(xs) / n) <= 1e-12 * abs(mean)``; measured
  against ``fsum / n``: identical for ``1e10 + randint(0, 10)``, <= 1 ulp for uniform data,
  <= 9 ulps for heavy-tailed (lognormal) data whose max is ~400x the mean. Keeping the low part
  is what makes the merge
  *exact* at large offsets: with a single rounded float mean, each merge multiplies the rounding
  error of the means (up to ``ulp(1e10) / 2``, about ``1e-6`` at ``1e10``) by the distance between
  the means, and an hour of ``1e10 + randint(0, 10)`` samples merged from minute buckets already
  has a standard deviation wrong by ~5e-9 relative. With ``mean_lo`` the error of a merge is
  relative to the spread of the data, not to its magnitude.
* ``M2`` is accurate to a few ulps relative (sums of non-negative terms, ``math.fsum`` where many
  terms are combined); ``stddev`` is therefore accurate to well below ``1e-9`` relative.

An empty summary (``count == 0``) has ``mean == m2 == 0.0``, ``variance == stddev == 0.0`` and
``max == -inf`` (the identity of ``max``); callers that display it must check ``count`` first.
All functions are pure; instances are immutable.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Moments"]


def _two_sum(a: float, b: float) -> tuple[float, float]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _dd_add(hi: float, lo: float, x: float) -> tuple[float, float]:
    """Double-double ``(hi + lo) + x``, renormalised so that ``hi == fl(hi + lo)``."""
    s, e = _two_sum(hi, x)
    e += lo
    t = s + e
    return t, e - (t - s)


@dataclass(frozen=True, slots=True)
class Moments:
    """Summary of ``count`` samples: mean, M2 = sum((x - mean)**2), and maximum.

    ``mean_lo`` is the low-order part of the mean (the true average is ``mean + mean_lo``); it is
    ``0.0`` unless the mean was produced by merging, and may be omitted when constructing a value.
    """

    count: int
    mean: float
    m2: float
    max: float
    mean_lo: float = 0.0

    # -- constructors -------------------------------------------------------------------------

    @staticmethod
    def empty() -> Moments:
        """The summary of no samples: the identity of :meth:`merge`."""
        return _EMPTY

    @staticmethod
    def of(value: float) -> Moments:
        """The summary of the single sample ``value``."""
        v = float(value)
        return Moments(1, v, 0.0, v)

    @staticmethod
    def of_values(values: Sequence[float]) -> Moments:
        """The summary of ``values`` computed directly (two-pass, compensated); any order."""
        n = len(values)
        if n == 0:
            return _EMPTY
        if n == 1:
            return Moments.of(values[0])
        approx = math.fsum(values) / n
        devs = [x - approx for x in values]
        resid = math.fsum(devs)  # n * (true mean - approx), accurate to the data's spread
        hi, lo = _dd_add(approx, 0.0, resid / n)
        # sum((x - mu)**2) = sum((x - approx)**2) - n * (mu - approx)**2, mu - approx = resid / n
        m2 = math.fsum(d * d for d in devs) - resid * resid / n
        return Moments(n, hi, max(m2, 0.0), float(max(values)), lo)

    # -- merging --------------------------------------------------------------------------------

    @staticmethod
    def merge(a: Moments, b: Moments) -> Moments:
        """The summary of the union of ``a``'s and ``b``'s samples (Chan et al. pairwise update)."""
        if b.count == 0:
            return a
        if a.count == 0:
            return b
        n = a.count + b.count
        delta = (b.mean - a.mean) + (b.mean_lo - a.mean_lo)
        hi, lo = _dd_add(a.mean, a.mean_lo, delta * (b.count / n))
        m2 = a.m2 + b.m2 + delta * delta * (a.count * b.count / n)
        return Moments(n, hi, m2, a.max if a.max >= b.max else b.max, lo)

    @staticmethod
    def merge_all(parts: Iterable[Moments]) -> Moments:
        """The summary of the union of all ``parts`` (k-way form of the Chan update).

        ``mean = sum(n_i * mean_i) / n`` and ``M2 = sum(M2_i) + sum(n_i * (mean_i - mean)**2)``,
        with every mean taken relative to the first part's and every sum a ``math.fsum``, so
        the result does not depend on how the samples were split or in which order.
        """
        nonempty = [p for p in parts if p.count]
        if len(nonempty) <= 1:
            return nonempty[0] if nonempty else _EMPTY
        ref = nonempty[0]
        rhi, rlo = ref.mean, ref.mean_lo
        n = 0
        biggest = -math.inf
        deltas: list[float] = []
        for p in nonempty:
            n += p.count
            if p.max > biggest:
                biggest = p.max
            deltas.append((p.mean - rhi) + (p.mean_lo - rlo))
        shift = math.fsum(p.count * d for p, d in zip(nonempty, deltas, strict=True)) / n
        hi, lo = _dd_add(rhi, rlo, shift)
        terms = [p.m2 for p in nonempty]
        for p, d in zip(nonempty, deltas, strict=True):
            e = d - shift  # mean_i - mean
            terms.append(p.count * e * e)
        return Moments(n, hi, math.fsum(terms), biggest, lo)

    # -- derived values -------------------------------------------------------------------------

    @property
    def average(self) -> float:
        """Alias of :attr:`mean`."""
        return self.mean

    @property
    def variance(self) -> float:
        """Population variance ``M2 / count`` (``ddof=0``); ``0.0`` when empty."""
        return self.m2 / self.count if self.count else 0.0

    @property
    def stddev(self) -> float:
        """Population standard deviation ``sqrt(M2 / count)`` (``ddof=0``); ``0.0`` when empty."""
        return math.sqrt(self.variance)


_EMPTY = Moments(0, 0.0, 0.0, -math.inf)
