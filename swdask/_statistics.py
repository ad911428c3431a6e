"""Bit scores and E-values of local alignment scores (Karlin-Altschul statistics).

For a local alignment score ``S`` of a query of ``m`` residues against a database of ``n``
residues in ``N`` sequences, with the gapped parameters ``lambda``, ``K`` of the scoring:

* bit score ``S' = (lambda * S - ln K) / ln 2``;
* E-value ``E = K * m' * n' * exp(-lambda * S)``, where ``m' = m - l`` and ``n' = n - N * l``
  are the lengths less the *length adjustment* ``l`` (the edge effect: an alignment cannot
  start in the last ``l`` residues of a sequence). ``l`` is the largest whole number with
  ``l <= alpha / lambda * ln(K * (m - l) * (n - N * l)) + beta`` and ``K (m - l)(n - N l)``
  at least ``max(m, n)`` (Altschul, Bundschuh, Olsen and Hwa, Nucleic Acids Res. 2001,
  29:351; BLAST's parameters ``alpha`` and ``beta`` below). The search space is the query's
  length times the *whole* database (every partition), as BLAST and ssearch36 count it.

The gapped parameters are those NCBI BLAST publishes for each matrix and gap cost it supports:
the tables ``blosum45_values`` ... ``pam70_values`` of ``c++/src/algo/blast/core/blast_stat.c``
in the NCBI C++ Toolkit (public domain, US Government work), columns gap existence, gap
extension, lambda, K, H, alpha, beta. BLAST charges ``existence + k * extension`` for a gap of
length k, swdask ``gap_open + (k - 1) * gap_extend``: swdask's ``(gap_open, gap_extend)`` is
BLAST's ``(gap_open - gap_extend, gap_extend)`` (swdask's default BLOSUM62 11/1 is BLAST's
``-gapopen 10 -gapextend 1``; ``blastp``'s default 11/1 is swdask's 12/1, and so is
``ssearch36 -f -11 -g -1``).

For a matrix or gap cost without published parameters, :func:`blast_parameters` returns None
and the callers leave ``bitscore``/``evalue`` null with a warning (never a guess).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

#: NCBI BLAST's gapped Karlin-Altschul parameters (blast_stat.c; see the module docstring):
#: matrix -> {(BLAST gap existence, extension): (lambda, K, H, alpha, beta)}.
BLAST_PARAMETERS = {
    "BLOSUM45": {
        (13, 3): (0.207, 0.049, 0.14, 1.5, -22), (12, 3): (0.199, 0.039, 0.11, 1.8, -34),
        (11, 3): (0.190, 0.031, 0.095, 2.0, -38), (10, 3): (0.179, 0.023, 0.075, 2.4, -51),
        (16, 2): (0.210, 0.051, 0.14, 1.5, -24), (15, 2): (0.203, 0.041, 0.12, 1.7, -31),
        (14, 2): (0.195, 0.032, 0.10, 1.9, -36), (13, 2): (0.185, 0.024, 0.084, 2.2, -45),
        (12, 2): (0.171, 0.016, 0.061, 2.8, -65), (19, 1): (0.205, 0.040, 0.11, 1.9, -43),
        (18, 1): (0.198, 0.032, 0.10, 2.0, -43), (17, 1): (0.189, 0.024, 0.079, 2.4, -57),
        (16, 1): (0.176, 0.016, 0.063, 2.8, -67),
    },
    "BLOSUM50": {
        (13, 3): (0.212, 0.063, 0.19, 1.1, -16), (12, 3): (0.206, 0.055, 0.17, 1.2, -18),
        (11, 3): (0.197, 0.042, 0.14, 1.4, -25), (10, 3): (0.186, 0.031, 0.11, 1.7, -34),
        (9, 3): (0.172, 0.022, 0.082, 2.1, -48), (16, 2): (0.215, 0.066, 0.20, 1.05, -15),
        (15, 2): (0.210, 0.058, 0.17, 1.2, -20), (14, 2): (0.202, 0.045, 0.14, 1.4, -27),
        (13, 2): (0.193, 0.035, 0.12, 1.6, -32), (12, 2): (0.181, 0.025, 0.095, 1.9, -41),
        (19, 1): (0.212, 0.057, 0.18, 1.2, -21), (18, 1): (0.207, 0.050, 0.15, 1.4, -28),
        (17, 1): (0.198, 0.037, 0.12, 1.6, -33), (16, 1): (0.186, 0.025, 0.10, 1.9, -42),
        (15, 1): (0.171, 0.015, 0.063, 2.7, -76),
    },
    "BLOSUM62": {
        (11, 2): (0.297, 0.082, 0.27, 1.1, -10), (10, 2): (0.291, 0.075, 0.23, 1.3, -15),
        (9, 2): (0.279, 0.058, 0.19, 1.5, -19), (8, 2): (0.264, 0.045, 0.15, 1.8, -26),
        (7, 2): (0.239, 0.027, 0.10, 2.5, -46), (6, 2): (0.201, 0.012, 0.061, 3.3, -58),
        (13, 1): (0.292, 0.071, 0.23, 1.2, -11), (12, 1): (0.283, 0.059, 0.19, 1.5, -19),
        (11, 1): (0.267, 0.041, 0.14, 1.9, -30), (10, 1): (0.243, 0.024, 0.10, 2.5, -44),
        (9, 1): (0.206, 0.010, 0.052, 4.0, -87),
    },
    "BLOSUM80": {
        (25, 2): (0.342, 0.17, 0.66, 0.52, -1.6), (13, 2): (0.336, 0.15, 0.57, 0.59, -3),
        (9, 2): (0.319, 0.11, 0.42, 0.76, -6), (8, 2): (0.308, 0.090, 0.35, 0.89, -9),
        (7, 2): (0.293, 0.070, 0.27, 1.1, -14), (6, 2): (0.268, 0.045, 0.19, 1.4, -19),
        (11, 1): (0.314, 0.095, 0.35, 0.90, -9), (10, 1): (0.299, 0.071, 0.27, 1.1, -14),
        (9, 1): (0.279, 0.048, 0.20, 1.4, -19),
    },
    "BLOSUM90": {
        (9, 2): (0.310, 0.12, 0.46, 0.67, -6), (8, 2): (0.300, 0.099, 0.39, 0.76, -7),
        (7, 2): (0.283, 0.072, 0.30, 0.93, -11), (6, 2): (0.259, 0.048, 0.22, 1.2, -16),
        (11, 1): (0.302, 0.093, 0.39, 0.78, -8), (10, 1): (0.290, 0.075, 0.28, 1.04, -15),
        (9, 1): (0.265, 0.044, 0.20, 1.3, -19),
    },
    "PAM250": {
        (15, 3): (0.205, 0.049, 0.13, 1.6, -23), (14, 3): (0.200, 0.043, 0.12, 1.7, -26),
        (13, 3): (0.194, 0.036, 0.10, 1.9, -31), (12, 3): (0.186, 0.029, 0.085, 2.2, -41),
        (11, 3): (0.174, 0.020, 0.070, 2.5, -48), (17, 2): (0.204, 0.047, 0.12, 1.7, -28),
        (16, 2): (0.198, 0.038, 0.11, 1.8, -29), (15, 2): (0.191, 0.031, 0.087, 2.2, -44),
        (14, 2): (0.182, 0.024, 0.073, 2.5, -53), (13, 2): (0.171, 0.017, 0.059, 2.9, -64),
        (21, 1): (0.205, 0.045, 0.11, 1.8, -34), (20, 1): (0.199, 0.037, 0.10, 1.9, -35),
        (19, 1): (0.192, 0.029, 0.083, 2.3, -52), (18, 1): (0.183, 0.021, 0.070, 2.6, -60),
        (17, 1): (0.171, 0.014, 0.052, 3.3, -86),
    },
    "PAM30": {
        (7, 2): (0.305, 0.15, 0.87, 0.35, -3), (6, 2): (0.287, 0.11, 0.68, 0.42, -4),
        (5, 2): (0.264, 0.079, 0.45, 0.59, -7), (10, 1): (0.309, 0.15, 0.88, 0.35, -3),
        (9, 1): (0.294, 0.11, 0.61, 0.48, -6), (8, 1): (0.270, 0.072, 0.40, 0.68, -10),
    },
    "PAM70": {
        (8, 2): (0.301, 0.12, 0.54, 0.56, -5), (7, 2): (0.286, 0.093, 0.43, 0.67, -7),
        (6, 2): (0.264, 0.064, 0.29, 0.90, -12), (11, 1): (0.305, 0.12, 0.52, 0.59, -6),
        (10, 1): (0.291, 0.091, 0.41, 0.71, -9), (9, 1): (0.270, 0.060, 0.28, 0.97, -14),
    },
}


class StatisticsWarning(UserWarning):
    """Bit scores and E-values left out: no published parameters for this scoring."""


@dataclass(frozen=True)
class KarlinAltschul:
    """Gapped Karlin-Altschul parameters of one scoring (see the module docstring)."""

    lam: float
    K: float
    H: float
    alpha: float
    beta: float
    source: str

    def bit_score(self, score):
        """Bit scores of raw scores (arrays welcome)."""
        return (self.lam * np.asarray(score, dtype=np.float64) - math.log(self.K)) / math.log(2)

    def length_adjustment(self, query_length: int, db_residues: int, db_sequences: int) -> int:
        """BLAST's length adjustment ``l`` (module docstring), by bisection on the decreasing
        ``f(l) = alpha / lambda * ln(K (m - l)(n - N l)) + beta - l``."""
        m, n, count = float(query_length), float(db_residues), float(max(db_sequences, 1))
        # the largest l keeping K (m - l)(n - N l) >= max(m, n): a quadratic's smaller root
        a, b, c = count, -(m * count + n), m * n - max(m, n) / self.K
        if c <= 0 or m <= 0 or n <= 0:
            return 0
        high = (-b - math.sqrt(max(b * b - 4 * a * c, 0.0))) / (2 * a)
        high = min(high, m - 1, n / count - 1)

        def f(ell):
            return (self.alpha / self.lam * math.log(self.K * (m - ell) * (n - count * ell))
                    + self.beta - ell)

        if high <= 0 or f(0.0) <= 0:
            return 0
        low = 0.0
        if f(high) >= 0:
            return max(0, int(math.floor(high)))
        for _ in range(60):
            middle = (low + high) / 2
            if f(middle) >= 0:
                low = middle
            else:
                high = middle
        return max(0, int(math.floor(low)))

    def evalue(self, score, query_length: int, db_residues: int, db_sequences: int):
        """E-values of raw scores of a query of ``query_length`` residues against a database
        of ``db_residues`` residues in ``db_sequences`` sequences."""
        ell = self.length_adjustment(query_length, db_residues, db_sequences)
        space = max(query_length - ell, 1) * max(db_residues - db_sequences * ell, 1)
        return self.K * space * np.exp(-self.lam * np.asarray(score, dtype=np.float64))


def blast_parameters(scoring, warn: bool = True) -> KarlinAltschul | None:
    """NCBI BLAST's gapped parameters for ``scoring`` (a :class:`~swdask.Scoring`), or None
    (with a :class:`StatisticsWarning` when ``warn``) for a matrix or gap cost BLAST does not
    publish."""
    name = (getattr(scoring, "name", None) or "").upper()
    key = (int(scoring.gap_open) - int(scoring.gap_extend), int(scoring.gap_extend))
    values = BLAST_PARAMETERS.get(name, {}).get(key)
    if values is None:
        if warn:
            known = ", ".join(f"{o + e}/{e}" for o, e in BLAST_PARAMETERS.get(name, {}))
            warnings.warn(
                f"no published Karlin-Altschul parameters for {name or 'this scoring'} with "
                f"gap_open={scoring.gap_open}, gap_extend={scoring.gap_extend}: bitscore and "
                "evalue are left null" + (f" (BLAST's gap costs for {name}, as swdask's "
                                          f"gap_open/gap_extend: {known})" if known else ""),
                StatisticsWarning, stacklevel=3)
        return None
    lam, K, H, alpha, beta = values
    source = (f"NCBI BLAST blast_stat.c, {name} gap existence {key[0]} extension {key[1]}")
    return KarlinAltschul(lam, K, H, alpha, beta, source)


# ------------------------------------------------------------------ fitted to the search itself

#: Scores are summarised per query in this many bins (0 ... SCORE_BINS - 2, and the last for
#: every higher score, which the fit leaves out as a certain homolog).
SCORE_BINS = 1024
#: A fit needs at least this many scores (targets) of the query.
_MIN_TARGETS = 200


def score_summary(scores, lengths, usable, xp=np):
    """What the fit needs from one query's scores against a column: per score bin, the number
    of targets and the sum of their lengths (two ``float64[SCORE_BINS]``, arrays of ``xp``).
    ``usable`` (bool) marks the rows that count: valid and non-empty."""
    binned = xp.minimum(xp.maximum(scores, 0), SCORE_BINS - 1).astype(xp.int64)[usable]
    counts = xp.bincount(binned, minlength=SCORE_BINS).astype(xp.float64)
    length_sums = xp.bincount(binned, weights=lengths[usable].astype(xp.float64),
                              minlength=SCORE_BINS)
    return counts, length_sums


def fit_scores(counts, length_sums, query_length: int) -> KarlinAltschul | None:
    """``lambda`` and ``K`` fitted to one query's scores against a whole database (its
    :func:`score_summary`, summed over partitions), or None with too few scores.

    The model is Karlin and Altschul's for the best local score ``S`` of the query (``m``
    residues) against an unrelated target of ``n``: ``P(S >= x) = 1 - exp(-K m n e^(-lambda
    x))``, a Gumbel law whose location moves with ``ln(m n)``. Its likelihood over all targets
    is maximised (``K`` in closed form for each ``lambda``, ``lambda`` by golden-section
    search): it depends on the data only through the number of targets and the sum of their
    lengths at each score, hence the summary. Homologs are not random: scores whose
    expected number among the targets falls below 0.01 under the fit are left out and the
    fit repeated (three rounds). E-values then follow ``E = K m n e^(-lambda S)`` with ``n``
    the database's residues (no length adjustment: the fit absorbs the edge effect at the
    database's lengths). This is the idea behind ssearch36's own statistics, which fits the
    score distribution of the search it ran (Pearson, Methods Enzymol. 1998, 266:227), in a
    maximum-likelihood form; not a copy of its estimator."""
    counts = np.asarray(counts, dtype=np.float64)
    length_sums = np.asarray(length_sums, dtype=np.float64)
    scores = np.arange(counts.size, dtype=np.float64)
    keep = np.ones(counts.size, dtype=bool)
    keep[-1] = False  # the overflow bin
    m = float(query_length)
    fitted = None
    for _ in range(3):
        c, L, s = counts[keep], length_sums[keep], scores[keep]
        total = c.sum()
        if total < _MIN_TARGETS or m <= 0:
            return None
        score_sum = float((c * s).sum())

        def profile(lam):
            k = total / (m * float((L * np.exp(-lam * s)).sum()))
            return total * math.log(lam) + total * math.log(k) - lam * score_sum, k

        # golden-section search by hand over one bounded parameter: SciPy (minimize_scalar)
        # is not a dependency, and the profile likelihood is smooth and unimodal here
        low, high = 0.005, 3.0
        ratio = (math.sqrt(5) - 1) / 2
        a, b = high - ratio * (high - low), low + ratio * (high - low)
        fa, fb = profile(a)[0], profile(b)[0]
        for _ in range(80):
            if fa < fb:
                low, a, fa = a, b, fb
                b = low + ratio * (high - low)
                fb = profile(b)[0]
            else:
                high, b, fb = b, a, fa
                a = high - ratio * (high - low)
                fa = profile(a)[0]
        lam = (low + high) / 2
        K = profile(lam)[1]
        fitted = KarlinAltschul(lam, K, float("nan"), 0.0, 0.0,
                                f"fitted to {int(total)} scores of this search")
        # left out: scores expected fewer than 0.01 times among this many targets
        expected = K * m * length_sums.sum() * np.exp(-lam * scores)
        new_keep = keep & (expected >= 0.01)
        if np.array_equal(new_keep, keep):
            break
        keep = new_keep
    return fitted
