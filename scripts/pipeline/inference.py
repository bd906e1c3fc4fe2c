"""Comparing two runtimes' times: the ratio of their medians with its interval, a test of the
ratio itself, and a correction for the number of comparisons in a family.

Why not "the two medians' intervals do not overlap" (explib.Spread.differs): at n = 3 a
percentile-bootstrap interval is the sample's range, and two ranges of identical distributions
part often enough to call a difference that is not there; and a table of 24 rows tested one by
one at 5% finds about one difference by chance alone. Here:

- the effect size is the ratio of the two medians, with a percentile-bootstrap 95% interval of
  that ratio (each sample resampled on its own, BOOTSTRAP_RESAMPLES times, seeded: the same
  values give the same interval);
- the test is a permutation test of the difference of the two samples' median log times (the
  log of a ratio of medians, in the scale where a ratio is symmetric): its p-value is the share of PERMUTATIONS relabellings of the pooled values whose statistic is at
  least as far from 0 as the observed one (with the observed labelling counted, so never 0);
- a family of comparisons (a table's rows) is corrected by Holm's step-down method, which keeps
  the chance of any false difference in the family at ALPHA.

tests/inference_test.py measures the false-positive rate between identical samples, one by one
and per family, and the power against a real difference. The test's smallest p-value has a
floor: relabellings that leave both samples' middle values in place leave the medians unmoved,
so even two samples that do not overlap give p >= 2 C(2k, k) / C(2n, n) with n runs a side and
k = (n - 1) // 2: 0.10 at 3 a side (nothing can be called at ALPHA), 0.0031 at 8 (nothing in a
family of more than 16 under Holm), 0.00076 at 10 (up to 65). The pipeline quotes ratios from
10 runs a side, and its families (a topology's rows, a machine and level of the hierarchy's
trial) are smaller than 65.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
PERMUTATIONS = 2000
SEED = 0x6E75676F  # fixed: the same values give the same interval and p-value, run after run


@dataclass
class Comparison:
    """a's median over b's, its 95% interval, the permutation test's p-value, and (once a family
    is judged) whether the difference stands after Holm's correction."""
    ratio: float
    lo: float
    hi: float
    p: float
    n_a: int
    n_b: int
    differs: bool = False

    def verdict(self, above: str = "faster", below: str = "slower") -> str:
        """The ratio's direction when it differs, else "no difference"."""
        if not self.differs:
            return "no difference"
        return above if self.ratio > 1 else below


def compare(a: list[float], b: list[float], seed: int = SEED, permutations: int = PERMUTATIONS) -> Comparison:
    """a's median over b's (positive values), with its interval and p-value; differs is the
    comparison alone at ALPHA (judge() corrects a family). With fewer than two values on a side
    there is no interval and no test: the ratio alone, p = 1 (no difference can be called).
    The p-value is never below 1 / (permutations + 1): a family of m comparisons needs more
    than m / ALPHA of them before Holm's correction can call anything (scripts/tools/compare.py's
    families are that large)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 1 or len(y) < 1 or (x <= 0).any() or (y <= 0).any():
        raise ValueError("compare: positive values on each side")
    ratio = float(np.median(x) / np.median(y))
    if len(x) < 2 or len(y) < 2:
        return Comparison(ratio, ratio, ratio, 1.0, len(x), len(y))
    rng = np.random.default_rng(seed)
    boot = (np.median(rng.choice(x, (BOOTSTRAP_RESAMPLES, len(x))), axis=1) /
            np.median(rng.choice(y, (BOOTSTRAP_RESAMPLES, len(y))), axis=1))
    lo, hi = (float(v) for v in np.quantile(boot, [0.025, 0.975]))
    # The statistic on the log values, for the observed labelling exactly as for the permuted
    # ones (the median of logs, not the log of the median: with an even n they differ).
    pooled = np.log(np.concatenate([x, y]))
    observed = abs(np.median(pooled[:len(x)]) - np.median(pooled[len(x):]))
    perms = rng.permuted(np.tile(pooled, (permutations, 1)), axis=1)
    stats = np.abs(np.median(perms[:, :len(x)], axis=1) - np.median(perms[:, len(x):], axis=1))
    p = float((1 + np.count_nonzero(stats >= observed - 1e-12)) / (permutations + 1))
    return Comparison(ratio, lo, hi, p, len(x), len(y), differs=p <= ALPHA)


def cell(c: Comparison | None, oversubscribed: bool = False) -> str:
    """A ratio as a table cell, with its interval: '*' after it when it differs (once judged),
    '~' before it when not, "(oversubscribed)" after it for runs with more Ps than CPUs."""
    if c is None:
        return "-"
    text = f"{c.ratio:.3g} [{c.lo:.3g}, {c.hi:.3g}]"
    text = text + "*" if c.differs else "~" + text
    return text + (" (oversubscribed)" if oversubscribed else "")


def holm(ps: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down rejections for a family's p-values, in their order."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    reject = [False] * len(ps)
    m = len(ps)
    for rank, i in enumerate(order):
        if ps[i] > alpha / (m - rank):
            break
        reject[i] = True
    return reject


def judge(family: dict, alpha: float = ALPHA) -> dict:
    """Sets differs on each Comparison of a family (a dict of them) by Holm's correction."""
    keys = list(family)
    for k, r in zip(keys, holm([family[k].p for k in keys], alpha)):
        family[k].differs = r
    return family
