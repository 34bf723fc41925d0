#!/usr/bin/python3
"""Compare lib/cron.c's firings with croniter's and with cron(8)'s rules.

    compare.py CRONNEXT [CASES]

Generates CASES (default 2500) cases, random but seeded: an expression
(lists, ranges, steps, month and day names, 7 as Sunday, the @ forms,
both day fields restricted), a zone, a start in 2020-2030 (half of them
in the 30 hours before one of the zone's offset changes) and asks
CRONNEXT (tests/tools/cronnext) for the next firings, each after the one
before.  Each of those steps (from an instant, the next firing) is then
checked twice:

  * against a reference written here from cron(8)'s documented rules
    over Python's zoneinfo: hk must agree on every step;
  * against croniter(expr, aware datetime).get_next(datetime), Debian's
    python3-croniter 1.3.5.  Where croniter differs, the step is excused
    only if hk agrees with the reference and an offset change lies
    within 3 hours of the start or of either answer: croniter 1.3.5
    does not follow cron(8) there (a fixed time in a skipped hour is
    reported an hour late, a wildcard expression skips the repeated
    hour, and the firing after a fall-back can be an hour off).  Every
    other difference fails.

The day-of-month/day-of-week rule is cron(8)'s (both restricted, i.e.
neither starting with '*': either matches; else both): croniter is told
it with day_or, and a field croniter would see as all values, though it
does not start with '*', is given to it as '*' (the same days).

Prints TAP, the figures as comments.  Needs Debian's python3 (croniter).
"""

import datetime
import random
import subprocess
import sys
import zoneinfo

from croniter import croniter

SEED = 7004
ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
         "Asia/Kolkata", "America/Sao_Paulo", "Pacific/Chatham",
         "Europe/London", "America/Santiago"]
STEPS = 4
T0 = int(datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
         .timestamp())
T1 = int(datetime.datetime(2031, 1, 1, tzinfo=datetime.timezone.utc)
         .timestamp())
NEAR = 3 * 3600   # a difference is excused only this close to a change
MARGIN = 2 * 3600  # more than any offset change in ZONES

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
          "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
# (low, high, names, names' first value)
FIELDS = [(0, 59, None, 0), (0, 23, None, 0), (1, 31, None, 0),
          (1, 12, MONTHS, 1), (0, 7, DAYS, 0)]
ALIASES = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
           "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
           "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@hourly": "0 * * * *"}


# --- generation -----------------------------------------------------------

def gen_value(rng, i, hot):
    lo, hi, names, nlo = FIELDS[i]
    if hot and rng.random() < 0.5:
        v = rng.choice(hot)
    else:
        v = rng.randint(lo, hi)
    if names and rng.random() < 0.4 and v - nlo < len(names):
        n = names[v - nlo]
        return rng.choice([n, n.upper(), n.capitalize()]), v
    return str(v), v


def gen_element(rng, i, hot):
    lo, hi = FIELDS[i][0], FIELDS[i][1]
    r = rng.random()
    if r < 0.45:
        return gen_value(rng, i, hot)[0]
    if r < 0.6:
        return "*/%d" % rng.randint(1, max(1, (hi - lo) // 2))
    a, av = gen_value(rng, i, hot)
    b, bv = gen_value(rng, i, None)
    if av > bv:
        a, b = b, a
    if r < 0.85:
        return "%s-%s" % (a, b)
    return "%s-%s/%d" % (a, b, rng.randint(1, 4))


# Values that meet offset changes: 2 and 3 o'clock (Berlin, New York,
# Lord Howe), 0 (Santiago, Sao Paulo), minutes 0, 30 (Lord Howe), 45
# (Chatham).
HOT = [[0, 15, 30, 45, 59], [0, 1, 2, 3, 23], None, None, None]


def gen_field(rng, i):
    r = rng.random()
    star = [0.35, 0.35, 0.55, 0.6, 0.55][i]
    if r < star:
        return "*"
    n = 1 if rng.random() < 0.7 else rng.randint(2, 3)
    return ",".join(gen_element(rng, i, HOT[i]) for _ in range(n))


def gen_expr(rng):
    if rng.random() < 0.06:
        return rng.choice(sorted(ALIASES))
    f = [gen_field(rng, i) for i in range(5)]
    # Some with both day fields restricted.
    if rng.random() < 0.15:
        f[2] = gen_element(rng, 2, None)
        f[4] = gen_element(rng, 4, None)
    return " ".join(f)


# --- expansion (independent of hk's parser) -------------------------------

def val(i, s):
    names, nlo = FIELDS[i][2], FIELDS[i][3]
    if s.isdigit():
        return int(s)
    return names.index(s.lower()) + nlo


def expand(i, field):
    lo, hi = FIELDS[i][0], FIELDS[i][1]
    out = set()
    for e in field.split(","):
        step = 1
        if "/" in e:
            e, st = e.split("/")
            step = int(st)
        if e == "*":
            a, b = lo, hi
        elif "-" in e:
            a, b = (val(i, x) for x in e.split("-"))
        else:
            a = b = val(i, e)
        out.update(range(a, b + 1, step))
    if i == 4 and 7 in out:
        out.discard(7)
        out.add(0)
    return out


class Expr:
    def __init__(self, text):
        self.text = text
        f = ALIASES.get(text.lower(), text).split()
        self.fields = f
        self.sets = [expand(i, f[i]) for i in range(5)]
        self.dom_star = f[2].startswith("*")
        self.dow_star = f[4].startswith("*")
        self.fixed = not f[0].startswith("*") and not f[1].startswith("*")
        self.day_or = not (self.dom_star or self.dow_star)

    def day_ok(self, d):
        dom = d.day in self.sets[2]
        dow = d.isoweekday() % 7 in self.sets[4]
        return (dom or dow) if self.day_or else (dom and dow)

    def for_croniter(self):
        """The expression and day_or that mean, to croniter, our days."""
        f = list(self.fields)
        full = (len(self.sets[2]) == 31 or len(self.sets[4]) == 7)
        if self.day_or and full:
            f[2] = f[4] = "*"       # either one, and one is every day
            return " ".join(f), True, True
        return " ".join(f), self.day_or, False


# --- the reference: cron(8)'s rules over zoneinfo -------------------------

def wall(t, z):
    return datetime.datetime.fromtimestamp(t, z).replace(tzinfo=None)


def instants(w, z, fixed):
    """The firings of wall time w under cron(8)'s rules."""
    t0 = int(w.replace(tzinfo=z, fold=0).timestamp())
    t1 = int(w.replace(tzinfo=z, fold=1).timestamp())
    shown = sorted({t for t in (t0, t1) if wall(t, z) == w})
    if len(shown) == 2:
        # A repeated time: a fixed time fires at the first (cron(8):
        # "not re-run"), a wildcard at both.
        return shown[:1] if fixed and shown[1] - shown[0] < 3 * 3600 \
            else shown
    if shown:
        return shown
    if not fixed:
        return []           # skipped: wildcards "run on the new time"
    # Skipped: a fixed time runs at the first minute after the jump.
    lo, hi = min(t0, t1), max(t0, t1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if wall(mid, z) < w:
            lo = mid
        else:
            hi = mid
    return [-(-hi // 60) * 60]


def ref_next(e, z, after):
    la = wall(after, z)
    start = (la - datetime.timedelta(seconds=MARGIN)).replace(second=0)
    horizon = la.date() + datetime.timedelta(days=8 * 366)
    best = best_w = None
    d = start.date()
    mins, hours, months = (sorted(e.sets[0]), sorted(e.sets[1]),
                           e.sets[3])
    while d <= horizon:
        day0 = datetime.datetime(d.year, d.month, d.day)
        if best is not None and day0 > best_w + \
                datetime.timedelta(seconds=MARGIN):
            break
        if d.month in months and e.day_ok(d):
            for h in hours:
                for m in mins:
                    w = day0.replace(hour=h, minute=m)
                    if w < start:
                        continue
                    if best is not None and w > best_w + \
                            datetime.timedelta(seconds=MARGIN):
                        break
                    for t in instants(w, z, e.fixed):
                        if t > after and (best is None or t < best):
                            best, best_w = t, w
        d += datetime.timedelta(days=1)
    return -1 if best is None else best


# --- offset changes -------------------------------------------------------

def changes(z):
    """Instants in 2019-2032 where z's offset changes."""
    out = []
    t = T0 - 86400 * 365
    prev = datetime.datetime.fromtimestamp(t, z).utcoffset()
    while t < T1 + 86400 * 400:
        n = t + 6 * 3600
        o = datetime.datetime.fromtimestamp(n, z).utcoffset()
        if o != prev:
            lo, hi = t, n
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if datetime.datetime.fromtimestamp(mid, z).utcoffset() == \
                        prev:
                    lo = mid
                else:
                    hi = mid
            out.append(hi)
            prev = o
        t = n
    return out


def near(chg, *ts):
    return any(abs(c - t) <= NEAR for c in chg for t in ts if t != -1)


# --- the run --------------------------------------------------------------

def main():
    cronnext = sys.argv[1]
    ncases = int(sys.argv[2]) if len(sys.argv) > 2 else 2500
    rng = random.Random(SEED)
    zinfo = {n: zoneinfo.ZoneInfo(n) for n in ZONES}
    chg = {n: changes(zinfo[n]) for n in ZONES}
    cases = []
    for _ in range(ncases):
        e = Expr(gen_expr(rng))
        zn = rng.choice(ZONES)
        inside = [c for c in chg[zn] if T0 <= c < T1]
        if inside and rng.random() < 0.5:
            c = rng.choice(inside)
            start = c - rng.randint(0, 30 * 3600)
        else:
            start = rng.randint(T0, T1)
        if rng.random() < 0.5:
            start -= start % 60
        cases.append((e, zn, start))

    inp = "".join("%s\t%s\t%d\t%d\n" % (e.text, zn, s, STEPS)
                  for e, zn, s in cases)
    p = subprocess.run([cronnext], input=inp, capture_output=True,
                       text=True, timeout=60)
    lines = p.stdout.splitlines()
    print("1..4")
    ok = p.returncode == 0 and len(lines) == len(cases) and \
        not any(l.startswith("error") for l in lines)
    print("%sok 1 - cronnext answered %d cases" % ("" if ok else "not ",
                                                   len(cases)))
    if not ok:
        print("# rc %d, %d lines; stderr: %s" % (p.returncode, len(lines),
                                                 p.stderr.strip()[:500]))
        for (e, zn, s), l in zip(cases, lines):
            if l.startswith("error"):
                print("# %r: %s" % (e.text, l))
                break
        print("not ok 2 - hk agrees with cron(8)'s rules\n"
              "not ok 3 - hk agrees with croniter\n"
              "not ok 4 - differences excused")
        return 1

    steps = ref_bad = cron_bad = agreed = 0
    never = restated = 0
    excused = {}
    shown_bad = 0
    for (e, zn, start), line in zip(cases, lines):
        z = zinfo[zn]
        hk = [int(x) for x in line.split()]
        afters = [start] + hk[:-1]
        cexpr, day_or, rs = e.for_croniter()
        restated += rs
        for after, got in zip(afters, hk):
            steps += 1
            ref = ref_next(e, z, after)
            if got != ref:
                ref_bad += 1
                if shown_bad < 10:
                    shown_bad += 1
                    print("# hk %d, cron(8) rules %d: %r %s after %d"
                          % (got, ref, e.text, zn, after))
                continue
            c = first_from(cexpr, day_or, z, after)
            if c == -1 and got != -1:
                c = -2
            if got == -1 or c == -1:
                never += got == c
            if c == got:
                agreed += 1
                continue
            why = reason(e, z, chg[zn], after, got, c)
            if why is not None:
                excused[why] = excused.get(why, 0) + 1
                continue
            cron_bad += 1
            if shown_bad < 10:
                shown_bad += 1
                print("# hk %d, croniter %d: %r %s after %d"
                      % (got, c, e.text, zn, after))

    print("# %d cases (%d zones), %d firings compared"
          % (len(cases), len(ZONES), steps))
    print("# %d expressions' day fields restated to croniter "
          "(a restricted field of all days, with the other restricted)"
          % restated)
    print("# %d steps with no firing within 8 years, on both sides" % never)
    print("%sok 2 - hk agrees with cron(8)'s rules on all %d firings "
          "(%d differ)" % ("" if ref_bad == 0 else "not ", steps, ref_bad))
    print("%sok 3 - hk agrees with croniter on %d firings, %d differences "
          "away from an offset change" % ("" if cron_bad == 0 else "not ",
                                          agreed, cron_bad))
    total = sum(excused.values())
    print("# %d differences with croniter excused, where hk follows "
          "cron(8) and croniter 1.3.5 demonstrably does not:" % total)
    for why in sorted(excused):
        print("#   %5d  %s" % (excused[why], why))
    # Excuses are the exception, though half the starts are chosen in
    # the 30 hours before an offset change: under 1 in 10 firings.
    print("%sok 4 - excused differences are few (%d of %d)"
          % ("" if total * 10 < steps else "not ", total, steps))
    return 0 if ref_bad == 0 and cron_bad == 0 and total * 10 < steps \
        else 1


def matches(e, w):
    return (w.minute in e.sets[0] and w.hour in e.sets[1] and
            w.month in e.sets[3] and e.day_ok(w.date()))


def first_from(cexpr, day_or, z, t):
    try:
        return int(croniter(cexpr, datetime.datetime.fromtimestamp(t, z),
                            day_or=day_or).get_next(datetime.datetime)
                   .timestamp())
    except Exception:   # croniter gives up on some never-days
        return -1


def reason(e, z, chg, after, got, c):
    """Why croniter's c is wrong where hk's got is cron(8)'s, or None.

    Only where the zone's offset changes between the start and the
    answers, or within NEAR of them: elsewhere every difference fails.
    """
    if c == -2 and e.day_or:
        f = list(e.fields)
        f[2] = "*"
        if first_from(" ".join(f), False, z, after) == got:
            return ("croniter fails where one day field never matches in "
                    "the months (the 31st of February, or a day of week): "
                    "it looks for each apart and gives up on the first")
    last = max(got, c)
    if not (near(chg, after, got, c) or
            any(after < x <= last for x in chg)):
        return None
    if 0 <= c <= after:
        return ("croniter's answer is not after its start (a start in "
                "a repeated hour)")
    w = wall(got, z)
    if e.fixed and not matches(e, w):
        return ("a fixed time in a skipped hour: cron(8) runs it at the "
                "first minute after the jump, croniter later")
    if not e.fixed and got < c and (wall(got - 3600, z) == w or
                                    wall(got - 1800, z) == w):
        return ("a wildcard in a repeated hour: cron(8) runs it on both "
                "passes, croniter skips the second")
    if c >= 0 and not matches(e, wall(c, z)):
        return ("croniter's answer is no firing: its local time does not "
                "match the expression (shifted by the offset change "
                "between start and firing)")
    cexpr, day_or, _ = e.for_croniter()
    if got < c and first_from(cexpr, day_or, z, got - 60) == got:
        return ("croniter skips a firing that it gives itself when "
                "started a minute before it (an offset change between "
                "start and firing)")
    return None


if __name__ == "__main__":
    sys.exit(main())
