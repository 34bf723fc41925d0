#!/usr/bin/env python3
"""Run a toml-test decoder over the TOML 1.0.0 cases and print TAP.

    compare.py DECODER CORPUS...

Each CORPUS is a toml-test tree with valid/ and invalid/, and gets two
checks of its own.  Its TOML 1.0.0 cases are the files its
files-toml-1.0.0 names (toml-test since 2023); a tree without that list
(the 2022 corpus Debian ships in golang-github-burntsushi-toml-dev) counts
every .toml under valid/ and invalid/ but those its version.go excludes
from "1.0.0" (the \e escape of TOML 1.1).  A tree with neither is a
failure, not an empty pass.  A valid case
(valid/X.toml) passes if the decoder exits 0 and its JSON matches X.json
under upstream's rules (toml-test json.go): key order is ignored; types must
be equal; floats compare as float64 and any nan matches any nan; date-times
compare as instants (local kinds as their fields) to the millisecond, with
T, t or space between date and time and z or Z; bools compare
case-insensitively; every other value as an exact string.  An invalid case
passes if the decoder exits 1 with a "toml-decoder: " message and no
sanitizer report.  Files are read as raw bytes.
"""

import concurrent.futures
import datetime
import fnmatch
import json
import math
import os
import re
import subprocess
import sys

TIMEOUT = 30
SANITIZER = (b"Sanitizer", b"runtime error:", b"LeakSanitizer")

DT_RE = {
    "datetime": re.compile(
        r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
        r"(Z|[+-]\d{2}:\d{2})$"),
    "datetime-local": re.compile(
        r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?$"),
    "date-local": re.compile(r"^(\d{4})-(\d{2})-(\d{2})$"),
    "time-local": re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?$"),
}


def parse_dt(kind, s):
    """A comparable form of a date-time, or None if it does not parse."""
    s = s.replace("t", "T").replace("z", "Z")
    if len(s) > 10 and s[10] == " ":
        s = s[:10] + "T" + s[11:]
    m = DT_RE[kind].match(s)
    if m is None:
        return None
    g = m.groups()
    if kind == "date-local":
        return tuple(int(x) for x in g)
    if kind == "time-local":
        ms = int(((g[3] or "") + "000")[:3])
        return (int(g[0]), int(g[1]), int(g[2]), ms)
    try:
        days = datetime.date(int(g[0]), int(g[1]), int(g[2])).toordinal()
    except ValueError:
        return None
    ms = int(((g[6] or "") + "000")[:3])
    secs = days * 86400 + int(g[3]) * 3600 + int(g[4]) * 60 + int(g[5])
    if kind == "datetime-local":
        return (secs, ms)
    off = g[7]
    if off != "Z":
        sign = -1 if off[0] == "-" else 1
        secs -= sign * (int(off[1:3]) * 3600 + int(off[4:6]) * 60)
    return (secs, ms)


def is_tagged(v):
    return (isinstance(v, dict) and set(v) == {"type", "value"}
            and isinstance(v["type"], str) and isinstance(v["value"], str))


def cmp_scalar(path, want, have):
    t, w, h = want["type"], want["value"], have["value"]
    if have["type"] != t:
        return "%s: type %s, want %s" % (path, have["type"], t)
    if t == "float":
        try:
            fw, fh = float(w), float(h)
        except ValueError:
            return "%s: float %r, want %r" % (path, h, w)
        if (math.isnan(fw) and math.isnan(fh)) or fw == fh:
            return None
        return "%s: float %r, want %r" % (path, h, w)
    if t in DT_RE:
        dw, dh = parse_dt(t, w), parse_dt(t, h)
        if dw is not None and dw == dh:
            return None
        return "%s: %s %r, want %r" % (path, t, h, w)
    if t == "bool":
        return None if w.lower() == h.lower() else \
            "%s: bool %r, want %r" % (path, h, w)
    return None if w == h else "%s: %s %r, want %r" % (path, t, h, w)


def compare(path, want, have):
    """None if have matches want, else the first difference."""
    if is_tagged(want):
        if not is_tagged(have):
            return "%s: got %s, want a %s" % (path, json.dumps(have)[:60],
                                               want["type"])
        return cmp_scalar(path, want, have)
    if isinstance(want, dict):
        if not isinstance(have, dict) or is_tagged(have):
            return "%s: got %s, want a table" % (path, json.dumps(have)[:60])
        if set(want) != set(have):
            return "%s: keys %s, want %s" % (path, sorted(have), sorted(want))
        for k in want:
            d = compare("%s.%s" % (path, json.dumps(k)), want[k], have[k])
            if d:
                return d
        return None
    if isinstance(want, list):
        if not isinstance(have, list):
            return "%s: got %s, want an array" % (path, json.dumps(have)[:60])
        if len(want) != len(have):
            return "%s: %d elements, want %d" % (path, len(have), len(want))
        for i, (w, h) in enumerate(zip(want, have)):
            d = compare("%s[%d]" % (path, i), w, h)
            if d:
                return d
        return None
    return "%s: bad expected value %r" % (path, want)


def first_line(b):
    s = b.decode("utf-8", "replace").strip().splitlines()
    return s[0] if s else "(nothing on stderr)"


def run(decoder, top, case):
    """(case, None) if the case passes, else (case, reason)."""
    try:
        with open(os.path.join(top, case), "rb") as f:
            doc = f.read()
    except OSError as e:
        return case, "cannot read case: %s" % e.strerror
    try:
        r = subprocess.run([decoder], input=doc, capture_output=True,
                           timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return case, "decoder timed out after %ds" % TIMEOUT
    except OSError as e:
        return case, "cannot run decoder: %s" % e.strerror
    if any(s in r.stderr for s in SANITIZER):
        return case, "sanitizer report: " + first_line(
            r.stderr[r.stderr.find(b"ERROR"):] if b"ERROR" in r.stderr
            else r.stderr)
    if case.startswith("invalid/"):
        if r.returncode == 1 and r.stderr.startswith(b"toml-decoder: "):
            return case, None
        if r.returncode == 0:
            return case, "accepted"
        return case, "exit %d: %s" % (r.returncode, first_line(r.stderr))
    if r.returncode != 0:
        return case, "exit %d: %s" % (r.returncode, first_line(r.stderr))
    try:
        with open(os.path.join(top, case[:-5] + ".json"), "rb") as f:
            want = json.loads(f.read())
    except (OSError, ValueError) as e:
        return case, "cannot read expected JSON: %s" % e
    try:
        have = json.loads(r.stdout)
    except ValueError as e:
        return case, "decoder printed bad JSON: %s" % e
    return case, compare("$", want, have)


def listed_cases(top):
    """The 1.0.0 cases named by TOP/files-toml-1.0.0, or None."""
    try:
        with open(os.path.join(top, "files-toml-1.0.0"), "rb") as f:
            names = f.read().decode("utf-8").split("\n")
    except OSError:
        return None
    return [n for n in names if n.endswith(".toml") and
            (n.startswith("valid/") or n.startswith("invalid/"))]


def excluded_by_version(top):
    """The patterns version.go excludes from 1.0.0 (the 2022 layout)."""
    with open(os.path.join(top, "..", "version.go"), encoding="utf-8") as f:
        src = f.read()
    m = re.search(r'"1\.0\.0":\s*versionSpec\{\s*exclude:\s*\[\]string\{'
                  r'([^}]*)\}', src)
    if m is None:
        raise OSError(0, "no 1.0.0 exclusions in version.go")
    return re.findall(r'"([^"]+)"', m.group(1))


def walked_cases(top):
    """Every valid/ and invalid/ .toml of TOP less version.go's 1.0.0
    exclusions; OSError if TOP has no version.go."""
    skip = excluded_by_version(top)
    cases = []
    for kind in ("valid", "invalid"):
        for d, _, files in os.walk(os.path.join(top, kind)):
            for n in files:
                if n.endswith(".toml"):
                    cases.append(os.path.relpath(os.path.join(d, n), top))
    return sorted(c for c in cases
                  if not any(fnmatch.fnmatch(c[:-5], p) for p in skip))


def check_corpus(decoder, top, n):
    """Prints checks n and n + 1 for one corpus; True if both pass."""
    cases = listed_cases(top)
    if cases is None:
        try:
            cases = walked_cases(top)
        except OSError as e:
            print("# %s: no files-toml-1.0.0, and version.go: %s" %
                  (top, e.strerror or e))
            cases = []
    workers = int(os.environ.get("TOML_TEST_JOBS", "2"))
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        results = list(ex.map(lambda c: run(decoder, top, c), cases))
    tally = {"valid": [0, 0], "invalid": [0, 0]}
    for case, why in results:
        kind = case.split("/", 1)[0]
        tally[kind][1] += 1
        if why is None:
            tally[kind][0] += 1
        else:
            print("# FAIL %s: %s" % (case, why.replace("\n", " ")))
    v, i = tally["valid"], tally["invalid"]
    counts = "toml-test (%s): valid %d/%d passed, invalid %d/%d rejected" % (
        top, v[0], v[1], i[0], i[1])
    print("# " + counts)
    print("# " + counts, file=sys.stderr)
    ok = v[1] > 0 and v[0] == v[1]
    print("%sok %d - %s valid: %d/%d decoded as expected" %
          ("" if ok else "not ", n, top, v[0], v[1]))
    ok2 = i[1] > 0 and i[0] == i[1]
    print("%sok %d - %s invalid: %d/%d rejected" %
          ("" if ok2 else "not ", n + 1, top, i[0], i[1]))
    return ok and ok2


def main():
    if len(sys.argv) < 3:
        print("usage: compare.py DECODER CORPUS...", file=sys.stderr)
        return 64
    decoder, tops = sys.argv[1], sys.argv[2:]
    print("1..%d" % (2 * len(tops)))
    passed = True
    for k, top in enumerate(tops):
        passed = check_corpus(decoder, top, 2 * k + 1) and passed
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
