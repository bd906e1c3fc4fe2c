#!/usr/bin/python3
"""scripts/pipeline/inference.py's false-positive rate and power, by simulation.

usage: tests/inference_test.py

Identical samples: TRIALS pairs of 10 values each from one log-normal distribution (the shape of
run times: a floor and a right tail, here a spread like the virtual set's). The permutation test
of the ratio of medians must call a difference in at most ALPHA of them (up to three binomial
standard deviations above, for the simulation's own noise), and a family of FAMILY such
comparisons corrected by Holm's method must call any difference in at most ALPHA of the families.
The old rule, "the two medians' 95% bootstrap intervals do not overlap", is measured beside them
at n = 3 for the record (its rate is printed, not asserted). Power: a true ratio of 1.5 at this
spread is found in most trials. The generator is seeded: the test gives the same numbers each
run. Exit status 0 when every bound holds, 1 naming the one that does not.
"""
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from pipeline import explib, inference  # noqa: E402

TRIALS = 400
FAMILY = 10
N = 10
SIGMA = 0.15  # log-normal spread: a run's time varies by about 15%


def bound(rate: float, trials: int) -> float:
    return rate + 3 * math.sqrt(rate * (1 - rate) / trials)


def main() -> int:
    rng = np.random.default_rng(20261129)
    errors = []

    false = sum(inference.compare(rng.lognormal(0, SIGMA, N), rng.lognormal(0, SIGMA, N), seed=t).differs
                for t in range(TRIALS))
    rate = false / TRIALS
    print(f"identical samples, n = {N}: a difference called in {false} of {TRIALS} ({rate:.3f}; "
          f"stated level {inference.ALPHA})")
    if rate > bound(inference.ALPHA, TRIALS):
        errors.append(f"false-positive rate {rate:.3f} above {inference.ALPHA} (bound {bound(inference.ALPHA, TRIALS):.3f})")

    families = TRIALS // 4
    wrong = 0
    for f in range(families):
        fam = {i: inference.compare(rng.lognormal(0, SIGMA, N), rng.lognormal(0, SIGMA, N), seed=f * FAMILY + i)
               for i in range(FAMILY)}
        wrong += any(c.differs for c in inference.judge(fam).values())
    fw = wrong / families
    print(f"families of {FAMILY} identical comparisons with Holm's correction: any difference called in "
          f"{wrong} of {families} ({fw:.3f}; stated level {inference.ALPHA})")
    if fw > bound(inference.ALPHA, families):
        errors.append(f"family-wise error rate {fw:.3f} above {inference.ALPHA}")

    old = sum(explib.spread(list(rng.lognormal(0, SIGMA, 3))).differs(explib.spread(list(rng.lognormal(0, SIGMA, 3))))
              for _ in range(TRIALS))
    print(f"for the record, the old rule (intervals apart) at n = 3: {old} of {TRIALS} ({old / TRIALS:.3f})")

    found = sum(inference.compare(rng.lognormal(math.log(1.5), SIGMA, N), rng.lognormal(0, SIGMA, N), seed=t).differs
                for t in range(TRIALS // 4))
    power = found / (TRIALS // 4)
    print(f"a true ratio of 1.5, n = {N}: found in {found} of {TRIALS // 4} ({power:.3f})")
    if power < 0.8:
        errors.append(f"power {power:.3f} below 0.8 against a ratio of 1.5")

    c = inference.compare([2.0, 2.2, 1.9, 2.1], [1.0, 1.1, 0.9, 1.05])
    if not (c.lo <= c.ratio <= c.hi and 1.7 < c.ratio < 2.3):
        errors.append(f"the ratio's interval does not hold its ratio: {c}")
    if inference.holm([0.01, 0.04, 0.03]) != [True, False, False]:
        errors.append(f"holm([0.01, 0.04, 0.03]) = {inference.holm([0.01, 0.04, 0.03])}")
    for e in errors:
        print(f"inference_test.py: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
