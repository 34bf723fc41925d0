"""benchstat - the statistics the paired bench scripts share.

Imported by the Python parts of bench/bench-*, which put this
directory on sys.path first.
"""

import math
import statistics


def median_interval(values):
    """The median of values and a 95% confidence interval for it.

    The interval comes from order statistics: the k-th smallest and the
    k-th largest value, k the largest with P(Binomial(n, 1/2) < k) <=
    0.025.  It assumes nothing about the shape of the noise, which on a
    shared host is anything but normal.  Returns (median, low, high);
    low and high are None when there are too few values (under 6).
    """
    v = sorted(values)
    n = len(v)
    k, cdf = 0, 0.0
    while True:
        nxt = cdf + math.comb(n, k) / 2 ** n
        if nxt > 0.025:
            break
        cdf, k = nxt, k + 1
    if k < 1:
        return statistics.median(v), None, None
    return statistics.median(v), v[k - 1], v[n - k]


def change(ratio):
    """A ratio as a signed percentage: 0.97 -> '-3.0%'."""
    return "%+.1f%%" % (100 * (ratio - 1))


def interval_text(values, show=change):
    """'median M, 95% interval L to H' of values, each through show."""
    med, lo, hi = median_interval(values)
    text = "median %s" % show(med)
    if lo is None:
        return text + " (too few pairs for a 95% interval)"
    return text + ", 95%% interval %s to %s" % (show(lo), show(hi))
