#!/bin/sh
# lib/toml.c over toml-test's TOML 1.0.0 cases (../shared/toml-test): every
# valid case must decode to its .json under upstream's comparison rules,
# every invalid case must be refused.  tests/toml/compare.py runs the
# decoder ($HK_BUILD/tests/tools/toml-decoder) and prints the TAP.  Missing
# cases, decoder or python3 are failures, not skips.
. tests/integration/lib.sh

cases=$HK_TOP/../shared/toml-test
decoder=$HK_BUILD/tests/tools/toml-decoder

missing=
[ -f "$cases/files-toml-1.0.0" ] || missing="toml-test cases in $cases"
[ -x "$decoder" ] || missing="${missing:+$missing, }decoder $decoder (make tests)"
command -v python3 >/dev/null 2>&1 || missing="${missing:+$missing, }python3"
if [ -n "$missing" ]; then
	plan 1
	ok 1 "toml-test prerequisites"
	diag "missing: $missing"
	done_testing
fi

python3 "$HK_TOP/tests/toml/compare.py" "$decoder" "$cases"
