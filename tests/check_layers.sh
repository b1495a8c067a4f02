#!/usr/bin/env bash
# tests/check_layers.sh - ci/check-layers can fail: each rule is broken
# once in a scratch copy of the sources, and the check must name it there
# (file, line and rule); prose that names an errno must not trip it.
#
#   tests/check_layers.sh          exit 0 when every check passes
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
. "$src/tests/checks.sh"

# fresh: a scratch copy of every C file and the check, outside git.
fresh() {
	rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/ci"
	(cd "$src" && git ls-files -co --exclude-standard -- '*.c' '*.h' |
		grep -v '^out' | tar -cf - -T -) | tar -xf - -C "$tmp/tree"
	cp "$src/ci/check-layers" "$tmp/tree/ci/"
}
# plant FILE TEXT: append a line to FILE of the scratch copy.
plant() { printf '%s\n' "$2" >>"$tmp/tree/$1"; }
# caught DESC REGEX: the check fails and prints REGEX.
caught() {
	expect_status 1 "$1" -- "$tmp/tree/ci/check-layers" "$tmp/tree"
	expect_grep "$tmp/out" "$2" "$1"
}

fresh
expect_status 0 "the tree as it is" -- "$tmp/tree/ci/check-layers" "$tmp/tree"

fresh
plant ref/cow.c '#include "harness/op.h"'
caught "ref/ including the harness" \
	'^ref/cow\.c:[0-9]+: up-include: ref/ \(layer 2\) includes harness/op\.h'

fresh
plant hw/mem.c '#include "ref/ref.h"'
caught "hw/ including ref/" '^hw/mem\.c:[0-9]+: up-include: .*ref/ref\.h'

fresh
plant props/run.c '#include "perf/perf.h"'
caught "props/ including perf/, a room beside it" \
	'^props/run\.c:[0-9]+: up-include: props/ includes perf/perf\.h, a room beside it'

fresh
plant harness/op.c '#include "hw/hw_internal.h"'
caught "an internal header outside its module" \
	'^harness/op\.c:[0-9]+: internal: hw/hw_internal\.h used outside hw/'

fresh
plant ref/cow.c 'static int planted_positive(void) { return EIO; }'
caught "return EIO in ref/" '^ref/cow\.c:[0-9]+: errno-sign: positive errno \(return EIO\)'

fresh
plant ref/bmap.c 'static int planted_assign(int e) { e = ENOSPC; return e; }'
caught "err = ENOSPC in ref/" '^ref/bmap\.c:[0-9]+: errno-sign: positive errno'

fresh
plant ref/file.c 'static int planted_ternary(int c) { return c ? (EINVAL) : 0; }'
caught "a positive errno in a ternary" '^ref/file\.c:[0-9]+: errno-sign'

fresh
plant ref/cow.c '/* callers used to return EIO here;'
plant ref/cow.c ' * now err = ENOSPC is spelled -ENOSPC */'
plant ref/cow.c 'static const char planted_msg[] = "return EIO";'
plant ref/cow.c 'static int planted_case(int e) { switch (-e) { case EIO: return 1; } return e == EIO; }'
expect_status 0 "errno names in comments, strings, case labels and comparisons" \
	-- "$tmp/tree/ci/check-layers" "$tmp/tree"
expect_nogrep "$tmp/out" 'errno-sign' "prose and comparisons are not returns"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
