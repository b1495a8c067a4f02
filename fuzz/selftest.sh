#!/usr/bin/env bash
# fuzz/selftest.sh - the fuzz targets' tests, for CI (ci/test) and by hand.
#
#   fuzz/selftest.sh [--quick] [--smoke SECONDS] [--no-oss] [--no-afl]
#
# Stages (each says ok or FAILED; the exit status is the number failed):
#   1. build: `make fuzz` (libFuzzer, AFL++, replay programs; without
#      afl-clang-fast, the libFuzzer and replay ones only)
#   2. replay: every target's replay program over its seed corpus
#      corpus/T/ and over corpus/regressions/*.ops (encoded afresh by
#      fuzz/mkseeds.sh --out, so a log added there is covered at once)
#   3. smoke: each target under libFuzzer for SECONDS (10) from its seed
#      corpus, with its dictionary, options and our custom mutator
#      (-fork=1 -ignore_crashes=1, so it goes on after a finding); a
#      finding fails the stage, with its report and `--describe`, unless
#      fuzz/known-findings lists it (then it is shown as known)
#   4. AFL++: each target under afl-fuzz for 5 s (persistent mode, our
#      custom mutator), which must start, run and report stability
#   5. OSS-Fuzz: build.sh under the OSS-Fuzz contract (clang, ASan,
#      libFuzzer) into a scratch $OUT, which must hold every target with
#      its seed corpus, dictionary and options; each runs its seeds
# --quick runs stages 1-2 only (no clang needed beyond the build).
set -u
cd "$(dirname "$0")/.."
smoke=10 quick=0 oss=1 afl=1
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1; shift ;;
	--smoke) smoke=$2; shift 2 ;;
	--no-oss) oss=0; shift ;;
	--no-afl) afl=0; shift ;;
	-h|--help) sed -n '2,23p' "$0"; exit 0 ;;
	*) echo "selftest: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
command -v afl-clang-fast >/dev/null && command -v afl-fuzz >/dev/null || afl=0
targets=$(sed -e 's/#.*//' fuzz/targets | xargs)
jobs=$(nproc 2>/dev/null || echo 2)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
stage() { echo; echo "=== fuzz: $*"; }
tally() { # tally NAME STATUS
	if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "--- $1: ok"
	else failed=$((failed + 1)); echo "--- $1: FAILED"; fi
}
opt() { sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "fuzz/$1.options" | head -1; }
known_finding() { # known_finding T REPORT: the known-findings line it matches
	local t re what
	while IFS=$'\t' read -r t re what; do
		case "$t" in ''|'#'*) continue ;; esac
		[ "$t" = "$1" ] && grep -a -q -E "$re" "$2" && { echo "$what"; return; }
	done < fuzz/known-findings
}

stage "build"
if [ "$quick" -eq 1 ]; then
	make -s -j"$jobs" all fuzz-replay
elif [ "$afl" -eq 1 ]; then
	make -s -j"$jobs" all fuzz
else
	make -s -j"$jobs" all fuzz-replay fuzz-libfuzzer
fi
tally build $? || exit 1
[ -x out/fuzz/replay/diff ] || { echo "selftest: nothing built" >&2; exit 1; }

stage "replay: seed corpora and corpus/regressions"
rc=0
./fuzz/mkseeds.sh --out "$tmp/regress" out/fsoracle > /dev/null || rc=1
for t in $targets; do
	for d in "corpus/$t" "$tmp/regress/$t"; do
		[ -d "$d" ] || continue
		echo "replay/$t $d"
		out/fuzz/replay/"$t" "$d" > "$tmp/replay.log" 2>&1 || rc=1
		grep -v '^fsoracle: note:' "$tmp/replay.log" | sed 's/^/  /'
	done
done
tally replay "$rc"

if [ "$quick" -eq 0 ]; then
	stage "smoke: libFuzzer, ${smoke} s per target"
	for t in $targets; do
		mkdir -p "$tmp/smoke/$t/corpus" "$tmp/smoke/$t/art"
		cp corpus/"$t"/* "$tmp/smoke/$t/corpus/" 2>/dev/null
		out/fuzz/libfuzzer/"$t" -fork=1 -ignore_crashes=1 \
			-max_total_time="$smoke" \
			-max_len="$(opt "$t" max_len)" -timeout="$(opt "$t" timeout)" \
			-rss_limit_mb="$(opt "$t" rss_limit_mb)" -dict="fuzz/$t.dict" \
			-artifact_prefix="$tmp/smoke/$t/art/" -print_final_stats=1 \
			"$tmp/smoke/$t/corpus" > "$tmp/smoke/$t.log" 2>&1
		rc=$?
		grep -a '^#[0-9]*: cov:' "$tmp/smoke/$t.log" | tail -1 | cut -c1-100 |
			sed 's/^/  /'
		for a in "$tmp/smoke/$t/art"/*; do
			[ -f "$a" ] || continue
			out/fuzz/libfuzzer/"$t" "$a" > "$a.out" 2>&1
			known=$(known_finding "$t" "$a.out")
			if [ -n "$known" ]; then
				echo "  known finding: ${known:0:100}..."
				continue
			fi
			rc=1
			mkdir -p out/fuzz/findings
			cp "$a" "out/fuzz/findings/$t-$(basename "$a")"
			echo "  finding, kept as out/fuzz/findings/$t-$(basename "$a"):"
			grep -a -E '^(fsoracle|  [a-z]|==[0-9]+==ERROR|SUMMARY)' "$a.out" |
				head -12 | sed 's/^/    /'
			out/fuzz/replay/"$t" --describe "$a" | sed 's/^/    /'
		done
		tally "smoke-$t" "$rc"
	done
fi

if [ "$quick" -eq 0 ] && [ "$afl" -eq 1 ]; then
	stage "AFL++: 5 s per target, persistent mode, custom mutator"
	for t in $targets; do
		o=$tmp/afl/$t
		mkdir -p "$o"
		AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_QUIET=1 AFL_NO_AFFINITY=1 \
		AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
		AFL_CUSTOM_MUTATOR_LIBRARY="$PWD/out/fuzz/afl/mutator.so" \
			timeout 60 afl-fuzz -i "corpus/$t" -o "$o" -V 5 \
			-x "fuzz/$t.dict" -t "$(( $(opt "$t" timeout) * 1000 ))" \
			-- out/fuzz/afl/"$t" > "$o.log" 2>&1
		rc=$?
		st=$o/default/fuzzer_stats
		if [ "$rc" -eq 0 ] && [ -f "$st" ]; then
			echo "  $(sed -n 's/^\(execs_done\|execs_per_sec\|stability\|saved_crashes\) *: */\1 /p' "$st" | xargs)"
		else
			rc=1
			tail -5 "$o.log" | sed 's/^/    /'
		fi
		for a in "$o"/default/crashes/id:*; do
			[ -f "$a" ] || continue
			out/fuzz/replay/"$t" "$a" > "$tmp/afl-finding.out" 2>&1
			known=$(known_finding "$t" "$tmp/afl-finding.out")
			if [ -n "$known" ]; then
				echo "  known finding: ${known:0:100}..."
				continue
			fi
			rc=1
			mkdir -p out/fuzz/findings
			k=out/fuzz/findings/$t-afl-$(sha1sum < "$a" | cut -c1-12)
			cp "$a" "$k"
			echo "  finding, kept as $k:"
			out/fuzz/replay/"$t" "$k" 2>&1 |
				grep -a -E '^(fsoracle|  [a-z])' | head -4 | sed 's/^/    /'
		done
		tally "afl-$t" "$rc"
	done
fi

if [ "$quick" -eq 0 ] && [ "$oss" -eq 1 ]; then
	stage "OSS-Fuzz build contract (build.sh, clang, ASan, libFuzzer)"
	rc=0
	CC=clang CXX=clang++ CFLAGS='-fsanitize=address,fuzzer-no-link' \
		LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT="$tmp/ossout" \
		WORK="$tmp/osswork" SRC="$PWD" ./build.sh > "$tmp/oss.log" 2>&1 ||
		{ rc=1; tail -20 "$tmp/oss.log"; }
	for t in $targets; do
		[ "$rc" -eq 0 ] || break
		for f in "$t" "${t}_seed_corpus.zip" "$t.dict" "$t.options"; do
			[ -s "$tmp/ossout/$f" ] || { echo "  missing \$OUT/$f"; rc=1; }
		done
		mkdir -p "$tmp/osscorp/$t"
		(cd "$tmp/osscorp/$t" && unzip -q "$tmp/ossout/${t}_seed_corpus.zip") || rc=1
		echo "  \$OUT/$t: $(ls "$tmp/osscorp/$t" | wc -l) seeds, each run once"
		"$tmp/ossout/$t" -runs=0 -dict="$tmp/ossout/$t.dict" \
			"$tmp/osscorp/$t" > "$tmp/oss-$t.log" 2>&1 ||
			{ rc=1; grep -a -E '^(fsoracle|  [a-z]|SUMMARY)' "$tmp/oss-$t.log" | head -5; }
	done
	tally oss-fuzz "$rc"
fi

echo
echo "fuzz selftest: $passed passed, $failed failed"
exit "$failed"
