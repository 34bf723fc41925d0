#!/bin/sh
# lib/toml.c over toml-test's TOML 1.0.0 cases: every valid case must
# decode to its .json under upstream's comparison rules, every invalid case
# must be refused.  The corpus is Debian's (golang-github-burntsushi-toml-dev,
# the 2022 cases, which scripts/deps installs); a newer toml-test beside
# the checkout, in ../shared/toml-test, is run as well when it is there.
# tests/toml/compare.py runs the decoder ($HK_BUILD/tests/tools/toml-decoder)
# and prints the TAP.  A missing
# Debian corpus, decoder or python3 is a failure, not a skip.
. tests/integration/lib.sh

debian=/usr/share/gocode/src/github.com/BurntSushi/toml/internal/toml-test/tests
decoder=$HK_BUILD/tests/tools/toml-decoder

missing=
[ -d "$debian/valid" ] ||
    missing="toml-test cases in $debian (scripts/deps installs them)"
[ -x "$decoder" ] || missing="${missing:+$missing, }decoder $decoder (make tests)"
command -v python3 >/dev/null 2>&1 || missing="${missing:+$missing, }python3"
if [ -n "$missing" ]; then
	plan 1
	ok 1 "toml-test prerequisites"
	diag "missing: $missing"
	done_testing
fi

set -- "$debian"
newer=$HK_TOP/../shared/toml-test
[ -f "$newer/files-toml-1.0.0" ] && set -- "$@" "$(cd "$newer" && pwd)"
python3 "$HK_TOP/tests/toml/compare.py" "$decoder" "$@"
