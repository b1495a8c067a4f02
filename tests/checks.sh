# tests/checks.sh - the checks the shell tests share (sourced, not run).
# The caller sets tmp (a scratch directory) and pass=0 fail=0; each check
# counts one pass or one failure, and a failure prints why.
ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL: $*"; }
expect_status() { # expect_status WANT DESC -- CMD...
	local want=$1 desc=$2; shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
	if [ "$got" -eq "$want" ]; then ok; else
		bad "$desc: exit $got, want $want"; sed 's/^/    /' "$tmp/err" | head -5; fi
}
expect_grep() { # expect_grep FILE REGEX DESC
	if grep -qE -- "$2" "$1"; then ok; else bad "$3: no /$2/ in output"; sed 's/^/    /' "$1" | head -10; fi
}
expect_nogrep() {
	if grep -qE -- "$2" "$1"; then bad "$3: unexpected /$2/"; else ok; fi
}
