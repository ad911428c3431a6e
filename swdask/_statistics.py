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


#: The same tables' columns for the finite-size correction of Park, Sheetlin, Ma, Mott and
#: Spouge (BMC Res. Notes 2012, 5:286), which BLAST+ applies to blastp's E-values (and so to
#: ``statistics="composition"``'s): matrix -> {(gap existence, extension): (C, alpha_v,
#: sigma)}, and each matrix's ungapped row's (alpha, alpha_v).
SPOUGE_PARAMETERS = {
    "BLOSUM45": {
        (13, 3): (0.671128, 35.855900, 35.963900), (12, 3): (0.691530, 45.693600, 45.851700),
        (11, 3): (0.691181, 62.874100, 63.103700), (10, 3): (0.710529, 88.286800, 88.639100),
        (16, 2): (0.666680, 36.279800, 36.452400), (15, 2): (0.673871, 44.825700, 45.060400),
        (14, 2): (0.685753, 60.736200, 61.102300), (13, 2): (0.698480, 85.148100, 85.689400),
        (12, 2): (0.713429, 127.758000, 128.582000),
        (19, 1): (0.672302, 53.071400, 53.828200), (18, 1): (0.682580, 72.342400, 73.403900),
        (17, 1): (0.695035, 103.055000, 104.721000),
        (16, 1): (0.712966, 170.100000, 173.003000),
    },
    "BLOSUM50": {
        (13, 3): (0.639287, 18.113800, 18.202800), (12, 3): (0.644715, 22.654600, 22.777700),
        (11, 3): (0.656327, 29.861100, 30.045700), (10, 3): (0.671150, 42.393800, 42.674000),
        (9, 3): (0.694326, 66.069600, 66.516400), (16, 2): (0.633899, 17.951800, 18.092100),
        (15, 2): (0.641985, 21.940100, 22.141800), (14, 2): (0.650682, 28.681200, 28.961900),
        (13, 2): (0.660984, 42.059500, 42.471600), (12, 2): (0.678090, 63.747600, 64.397300),
        (19, 1): (0.635714, 26.311200, 26.923300), (18, 1): (0.643523, 34.903700, 35.734800),
        (17, 1): (0.654504, 48.895800, 50.148600), (16, 1): (0.667750, 76.469100, 78.443000),
        (15, 1): (0.694575, 140.053000, 144.160000),
    },
    "BLOSUM62": {
        (11, 2): (0.641766, 12.673800, 12.757600), (10, 2): (0.649362, 16.474000, 16.602600),
        (9, 2): (0.659245, 22.751900, 22.950000), (8, 2): (0.672692, 35.483800, 35.821300),
        (7, 2): (0.702056, 61.238300, 61.886000), (6, 2): (0.740802, 140.417000, 141.882000),
        (13, 1): (0.647715, 19.506300, 19.893100), (12, 1): (0.656391, 27.856200, 28.469900),
        (11, 1): (0.669720, 42.602800, 43.636200), (10, 1): (0.693267, 83.178700, 85.065600),
        (9, 1): (0.731887, 210.333000, 214.842000),
    },
    "BLOSUM80": {
        (25, 2): (0.563956, 1.731000, 1.731300), (13, 2): (0.570979, 2.673470, 2.692300),
        (9, 2): (0.587837, 5.576090, 5.667860), (8, 2): (0.597556, 7.536950, 7.686230),
        (7, 2): (0.615254, 11.586600, 11.840400), (6, 2): (0.644054, 19.958100, 20.441200),
        (11, 1): (0.590702, 8.808610, 9.223320), (10, 1): (0.609620, 13.833800, 14.533400),
        (9, 1): (0.623800, 24.252000, 25.490400),
    },
    "BLOSUM90": {
        (9, 2): (0.570267, 4.232290, 4.334170), (8, 2): (0.581580, 5.797020, 5.961420),
        (7, 2): (0.600024, 9.040880, 9.321600), (6, 2): (0.629344, 16.024400, 16.531600),
        (11, 1): (0.576919, 7.143250, 7.619190), (10, 1): (0.591366, 11.483900, 12.269800),
        (9, 1): (0.613013, 21.408300, 22.840900),
    },
    "PAM250": {
        (15, 3): (0.687656, 34.578400, 34.928000), (14, 3): (0.689768, 43.353000, 43.443800),
        (13, 3): (0.697431, 50.948500, 51.081700), (12, 3): (0.704565, 69.606500, 69.793600),
        (11, 3): (0.722438, 98.653500, 98.927100), (17, 2): (0.684799, 41.583800, 41.735800),
        (16, 2): (0.691098, 51.635200, 51.843900), (15, 2): (0.699051, 67.256700, 67.558500),
        (14, 2): (0.714103, 96.315100, 96.756800),
        (13, 2): (0.728738, 135.653000, 136.339000),
        (21, 1): (0.683265, 48.728200, 49.218800), (20, 1): (0.689380, 60.832000, 61.514100),
        (19, 1): (0.696344, 84.019700, 84.985600),
        (18, 1): (0.710525, 113.829000, 115.184000),
        (17, 1): (0.727000, 175.071000, 177.196000),
    },
    "PAM30": {
        (7, 2): (0.479087, 1.014010, 1.162730), (6, 2): (0.499980, 1.688060, 1.951430),
        (5, 2): (0.533009, 3.377010, 3.871950), (10, 1): (0.474741, 1.372050, 1.788770),
        (9, 1): (0.492716, 2.463920, 3.186150), (8, 1): (0.521286, 5.368130, 6.763480),
        (15, 3): (0.437688, 0.157089, 0.155299), (14, 2): (0.440010, 0.206970, 0.198524),
        (14, 1): (0.444817, 0.436301, 0.361947), (13, 3): (0.439086, 0.178973, 0.175436),
    },
    "PAM70": {
        (8, 2): (0.549019, 2.881650, 3.025710), (7, 2): (0.565659, 4.534540, 4.785780),
        (6, 2): (0.596330, 7.942630, 8.402720), (11, 1): (0.543514, 3.681400, 4.108020),
        (10, 1): (0.560723, 6.002970, 6.716570), (9, 1): (0.585186, 11.360800, 12.636700),
        (11, 2): (0.524062, 1.321301, 1.281671), (12, 3): (0.516845, 0.818768, 0.811240),
    },
}
UNGAPPED_LENGTH_PARAMETERS = {
    "BLOSUM45": (0.9113, 9.611060),
    "BLOSUM50": (0.6895, 5.388310),
    "BLOSUM62": (0.7916, 4.964660),
    "BLOSUM80": (0.5222, 1.918130),
    "BLOSUM90": (0.4434, 1.377760),
    "PAM250": (0.98, 11.754300),
    "PAM30": (0.1938, 0.161818),
    "PAM70": (0.3250, 0.633439),
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
    #: Park et al.'s finite-size parameters (:data:`SPOUGE_PARAMETERS`, with the ungapped
    #: row's alpha and alpha_v and BLAST's gap existence plus extension), where published.
    finite_size: tuple | None = None

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


    def finite_size_evalue(self, score, query_length: int, subject_lengths, db_residues: int):
        """E-values of raw scores as BLAST+ reports blastp's (Park et al.'s finite-size
        correction of each query-subject pair, scaled to the whole database): for each hit,
        ``K * area * exp(-lambda * S) * db_residues / n``, where ``area`` is the expected
        product of the two sequences' lengths left for an alignment of score ``S`` to
        start in (the query's ``m`` and the subject's ``n`` less the mean length of such an
        alignment, ``alpha * S + b``, taken over its normal spread of variance
        ``alpha_v * S + beta_v``, plus their covariance ``sigma * S + tau``; ``b``,
        ``beta_v``, ``tau`` follow from the ungapped row: ``2 G (ungapped - gapped)``). A
        ValueError where the parameters are not published."""
        if self.finite_size is None:
            raise ValueError(f"no finite-size parameters for {self.source}")
        C, alpha_v, sigma, alpha_ungapped, alpha_v_ungapped, G = self.finite_size
        lam, a = self.lam, self.alpha
        b = 2.0 * G * (alpha_ungapped - a)
        beta_v = 2.0 * G * (alpha_v_ungapped - alpha_v)
        tau = 2.0 * G * (alpha_v_ungapped - sigma)
        y = np.asarray(score, dtype=np.float64)
        normal_cdf = np.frompyfunc(lambda z: math.erfc(-z / math.sqrt(2.0)) / 2.0, 1, 1)

        def room(length):  # E[max(0, L)] of the length left, and P(L > 0)
            mean = np.asarray(length, dtype=np.float64) - (a * y + b)
            spread = np.sqrt(np.maximum(2.0 * alpha_v / lam, alpha_v * y + beta_v))
            z = mean / spread
            below = np.asarray(normal_cdf(z), dtype=np.float64)
            return mean * below + spread * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi), below

        query_room, query_p = room(query_length)
        subject_room, subject_p = room(subject_lengths)
        covariance = np.maximum(2.0 * sigma / lam, sigma * y + tau)
        area = query_room * subject_room + covariance * query_p * subject_p
        return (area * self.K * np.exp(-lam * y) * db_residues
                / np.asarray(subject_lengths, dtype=np.float64))


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
    finite = SPOUGE_PARAMETERS.get(name, {}).get(key)
    if finite is not None and name in UNGAPPED_LENGTH_PARAMETERS:
        finite = finite + UNGAPPED_LENGTH_PARAMETERS[name] + (float(key[0] + key[1]),)
    return KarlinAltschul(lam, K, H, alpha, beta, source, finite)


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


# ------------------------------------------------------------------ composition-based statistics
#
# statistics="composition": the composition-based statistics of Schaffer et al. (Nucleic
# Acids Res. 2001, 29:2994), the rule of BLAST's `-comp_based_stats 1`. A pair of sequences of
# unusual composition (low-complexity, biased: a proline-rich protein against another) scores
# higher by chance than the matrix's lambda assumes, and its E-value comes out too small. For
# each hit, the ungapped lambda of the matrix is solved again under the two sequences' own
# amino-acid compositions (lambda'), and the score is taken at the scale lambda' / lambda of
# the standard ungapped lambda (under the standard background) before the E-value: BLAST's
# ratio, clipped to [0.5, 1] as BLAST clips it (never a bonus; at most half the score off).
# BLAST rescales the matrix by that ratio and aligns the pair again with the gap costs as
# they were; swdask scales the score itself (gaps included), so a gapped alignment keeps a
# little more score than BLAST's realignment gives it. Written here: no well-kept Python
# library computes it (the only implementation is NCBI's C toolkit).

#: The 20 amino acids with a composition, and BLAST's standard background frequencies of
#: them (Robinson and Robinson, PNAS 1991, 88:8880), in that order.
AMINO_ACIDS = "ARNDCQEGHILKMFPSTWYV"
ROBINSON_FREQUENCIES = np.array([
    78.05, 51.29, 44.87, 53.64, 19.25, 42.64, 62.95, 73.77, 21.99, 51.42, 90.19, 57.44, 22.43,
    38.56, 52.03, 71.20, 58.41, 13.30, 32.16, 64.41]) / 1000.0
#: BLAST's bounds on the ratio lambda' / lambda.
RATIO_BOUNDS = (0.5, 1.0)


def _amino_acid_scores(scoring) -> tuple[np.ndarray, np.ndarray]:
    """The matrix over the 20 amino acids (``float64[20, 20]``) and each amino acid's code in
    ``scoring``'s alphabet; a ValueError where the alphabet lacks one."""
    missing = [letter for letter in AMINO_ACIDS if letter not in scoring.alphabet]
    if missing or scoring.is_nucleotide:
        raise ValueError(f"statistics='composition' is for protein matrices with the 20 amino "
                         f"acids, and {scoring.name} lacks {''.join(missing) or 'them'}")
    codes = np.array([scoring.alphabet.index(letter) for letter in AMINO_ACIDS])
    return np.asarray(scoring.matrix, dtype=np.float64)[np.ix_(codes, codes)], codes


def ungapped_lambdas(scores: np.ndarray, rows: np.ndarray, columns: np.ndarray,
                     low: float, high: float) -> np.ndarray:
    """For each pair of compositions (``rows[k]``, ``columns[k]``: ``float64[n, 20]``, each
    summing to 1 or all 0), the ungapped lambda of ``scores`` under them, the positive root
    of ``sum_ij p_i q_j exp(lambda s_ij) = 1``, clamped to ``[low, high]``: ``low`` where no
    root exists (a non-negative expected score) or it lies below, ``high`` where it lies
    above. Bisection, all pairs at once: the function is convex, below 0 between 0 and the
    root and above past it."""
    values = np.unique(scores)
    # the probability of each score value for each pair: p^T [s == v] q
    masks = np.stack([(scores == v).astype(np.float64) for v in values])
    probabilities = np.einsum("ni,vij,nj->nv", rows, masks, columns)

    def excess(lam):  # sum_v P(v) exp(lambda v) - 1, per pair
        return (probabilities * np.exp(np.outer(lam, values))).sum(axis=1) - 1.0

    n = rows.shape[0]
    lower, upper = np.full(n, low), np.full(n, high)
    below, above = excess(lower) >= 0, excess(upper) <= 0  # root under low / over high
    for _ in range(60):
        middle = (lower + upper) / 2
        past = excess(middle) > 0
        upper = np.where(past, middle, upper)
        lower = np.where(past, lower, middle)
    found = (lower + upper) / 2
    return np.where(below, low, np.where(above, high, found))


def composition_ratios(query_codes, target_codes, scoring) -> np.ndarray:
    """Each hit's ratio lambda' / lambda (see above), from its query's and its target's
    residue codes (lists of ``uint8`` arrays, hit by hit): the letters outside the 20 amino
    acids count in neither composition."""
    scores, codes = _amino_acid_scores(scoring)
    position = np.full(256, -1, dtype=np.int64)
    position[codes] = np.arange(codes.size)

    def compositions(sequences) -> np.ndarray:
        counts = np.zeros((len(sequences), codes.size))
        for k, sequence in enumerate(sequences):
            places = position[np.asarray(sequence, dtype=np.uint8)]
            counts[k] = np.bincount(places[places >= 0], minlength=codes.size)
        totals = counts.sum(axis=1, keepdims=True)
        return np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)

    standard = ungapped_lambdas(scores, ROBINSON_FREQUENCIES[None, :] / ROBINSON_FREQUENCIES.sum(),
                                ROBINSON_FREQUENCIES[None, :] / ROBINSON_FREQUENCIES.sum(),
                                1e-6, 10.0)[0]
    low, high = RATIO_BOUNDS
    if not len(query_codes):
        return np.zeros(0)
    lam = ungapped_lambdas(scores, compositions(query_codes), compositions(target_codes),
                           low * standard, high * standard)
    return lam / standard
