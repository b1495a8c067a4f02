#!/usr/bin/env bash
# fuzz/bench.sh - executions per second of every fuzz target under each
# engine, beside the empty target's ceiling on this machine.  A
# measurement, not a test: it never fails on a number.
#
#   fuzz/bench.sh [--seconds N] [--runs R] [--targets diff,crash]
#                 [--json FILE]
#
# For each target (and `empty`), fuzzing one process for N seconds (20)
# from its seed corpus, inputs up to its options' max_len (diff: 16-byte
# header + 64 ops):
#   libFuzzer asan   $O/fuzz/libfuzzer/T (ASan + UBSan, custom mutator)
#   libFuzzer plain  $O/fuzz/libfuzzer-plain/T (no sanitizers)
#   AFL++            $O/fuzz/afl/T, persistent mode, shared-memory input,
#                    our custom mutator (and AFL++'s stability), afl-fuzz
#                    and the target on one core (afl_pin, fuzz/options.sh)
#   replay -O2       $O/fuzz/replay/T --bench over the seed corpus: the
#                    target's own cost with no fuzzer at all
# libFuzzer's figure is the steady state: executions after the seed
# corpus was loaded (its INITED line) over the time since, not the
# average over the corpus replay.  Beside it, the peak rss (MB).
# Every measurement runs R times (3), interleaved (all targets and
# engines once, then again), and the median is printed with the range
# of the R runs: "168 [151-180]" (AFL++: the lowest stability seen).
# --json FILE writes the medians too (schema fsoracle-fuzzbench/1).
# Builds with `make fuzz-bench` first (O=DIR: into DIR, as make's O=).
# The machine's load is printed: other work on it lowers every number.
set -u
cd "$(dirname "$0")/.."
O=${O:-out}
secs=20 runs=3 targets= json=
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) secs=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--targets) targets=$(echo "$2" | tr ',' ' '); shift 2 ;;
	--json) json=$2; shift 2 ;;
	-h|--help) sed -n '2,27p' "$0"; exit 0 ;;
	*) echo "bench: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
case "$secs$runs" in
*[!0-9]*) echo "bench: --seconds and --runs take whole numbers" >&2; exit 2 ;;
esac
[ -n "$targets" ] || targets=$(sed -e 's/#.*//' fuzz/targets | xargs)
make -s -j"$(nproc 2>/dev/null || echo 2)" O="$O" fuzz-bench >/dev/null || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=fuzz/options.sh
. fuzz/options.sh
mutator=$(realpath "$O")/fuzz/afl/mutator.so

seeds() { # seeds T DIR: a fresh copy of the seed corpus
	rm -rf "$2" && mkdir -p "$2"
	cp corpus/"$1"/* "$2"/ 2>/dev/null || head -c 16 /dev/zero > "$2/zero"
}

lf() { # lf BINDIR T: "EXEC/S RSS_MB", exec/s after the corpus loaded
	seeds "$2" "$tmp/c"
	# shellcheck disable=SC2046 # flags are a list
	"$1/$2" -max_total_time="$secs" $(lf_flags "$2") -print_final_stats=1 \
		-artifact_prefix="$tmp/" "$tmp/c" > "$tmp/lf.log" 2>&1
	# INITED: "#N INITED ... exec/s: R" (N runs in N/R s); the final
	# stats: every run, and the time is the whole -max_total_time.
	awk -v total="$secs" '
		/INITED/ { n0 = substr($1, 2) + 0
			   for (i = 1; i < NF; i++) if ($i == "exec/s:") r0 = $(i + 1) }
		/^stat::number_of_executed_units:/ { n = $2 }
		/^stat::peak_rss_mb:/ { rss = $2 }
		END {
			if (n == "") { print "died"; exit }
			t0 = r0 > 0 ? n0 / r0 : 0
			rate = (total - t0 > 0.5) ? (n - n0) / (total - t0) : n / total
			printf "%d %d\n", rate, rss
		}' "$tmp/lf.log"
}

afl() { # afl T: "EXEC/S STABILITY% RSS_MB"
	seeds "$1" "$tmp/c"
	rm -rf "$tmp/afl"
	# shellcheck disable=SC2046 # afl_pin's words
	AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_QUIET=1 AFL_NO_AFFINITY=1 \
	AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
	AFL_CUSTOM_MUTATOR_LIBRARY="$mutator" \
		$(afl_pin 0) afl-fuzz -i "$tmp/c" -o "$tmp/afl" -V "$secs" -t 25000 \
		-- "$O/fuzz/afl/$1" > "$tmp/afl.log" 2>&1
	local st=$tmp/afl/default/fuzzer_stats
	[ -f "$st" ] || { echo died; return; }
	awk -F': *' '/^execs_done/ { e = $2 } /^run_time/ { t = $2 }
		/^stability/ { s = $2 } /^peak_rss_mb/ { m = $2 }
		END { printf "%d %s %d\n", e / (t > 0 ? t : 1), s, m }' "$st"
}

replay() { # replay T: the replay program's exec/s over the seeds
	seeds "$1" "$tmp/c"
	"$O/fuzz/replay/$1" --bench 5 "$tmp/c" 2>/dev/null |
		sed -n 's/.*: \([0-9]*\) exec\/s$/\1/p' | grep . || echo died
}

# summary FILE: "median [min-max]" of the numbers in FILE, one a line
summary() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "-"; exit }
		printf "%d [%d-%d]", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

have_afl=0
command -v afl-fuzz >/dev/null && [ -x "$O/fuzz/afl/diff" ] && have_afl=1
echo "fuzz/bench.sh: $secs s per run, $runs runs interleaved," \
     "load at start: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cpus"
for r in $(seq 1 "$runs"); do
	for t in empty $targets; do
		set -- $(lf "$O/fuzz/libfuzzer" "$t") died
		[ "$1" = died ] || { echo "$1" >> "$tmp/$t.lfa"; echo "$2" >> "$tmp/$t.lfa.rss"; }
		set -- $(lf "$O/fuzz/libfuzzer-plain" "$t") died
		[ "$1" = died ] || { echo "$1" >> "$tmp/$t.lfp"; echo "$2" >> "$tmp/$t.lfp.rss"; }
		if [ "$have_afl" -eq 1 ]; then
			set -- $(afl "$t") died
			[ "$1" = died ] || { echo "$1" >> "$tmp/$t.afl"; echo "${2%\%}" >> "$tmp/$t.stab"
					     echo "${3:-0}" >> "$tmp/$t.afl.rss"; }
		fi
		[ "$t" = empty ] || { v=$(replay "$t"); [ "$v" = died ] || echo "$v" >> "$tmp/$t.rep"; }
		printf '  run %d/%d: %s done (load %s)\n' "$r" "$runs" "$t" \
			"$(cut -d' ' -f1 /proc/loadavg)" >&2
	done
done

median() { sort -n "$1" 2>/dev/null | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "null" }'; }
maxof() { sort -n "$1" 2>/dev/null | awk '{ m = $1 } END { print NR ? m : "null" }'; }

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-7s %24s %24s %32s %14s\n' target "libFuzzer asan (rss MB)" \
	"libFuzzer plain (rss MB)" "AFL++ (lowest stability)" "replay -O2"
for t in empty $targets; do
	touch "$tmp/$t.lfa" "$tmp/$t.lfp" "$tmp/$t.afl" "$tmp/$t.stab" "$tmp/$t.rep" \
		"$tmp/$t.lfa.rss" "$tmp/$t.lfp.rss" "$tmp/$t.afl.rss"
	stab=$(sort -n "$tmp/$t.stab" | head -1)
	printf '%-7s %24s %24s %32s %14s\n' "$t" \
		"$(summary "$tmp/$t.lfa") ($(maxof "$tmp/$t.lfa.rss"))" \
		"$(summary "$tmp/$t.lfp") ($(maxof "$tmp/$t.lfp.rss"))" \
		"$(summary "$tmp/$t.afl")${stab:+ ($stab%)}" \
		"$([ "$t" = empty ] && echo - || summary "$tmp/$t.rep")"
done
if [ -n "$json" ]; then
	{
		printf '{"schema": "fsoracle-fuzzbench/1", "seconds": %d, "runs": %d, "targets": {' "$secs" "$runs"
		sep=
		for t in empty $targets; do
			stab=$(sort -n "$tmp/$t.stab" | head -1)
			printf '%s"%s": {"libfuzzer_asan": %s, "libfuzzer_asan_rss_mb": %s, ' \
				"$sep" "$t" "$(median "$tmp/$t.lfa")" "$(maxof "$tmp/$t.lfa.rss")"
			printf '"libfuzzer_plain": %s, "libfuzzer_plain_rss_mb": %s, ' \
				"$(median "$tmp/$t.lfp")" "$(maxof "$tmp/$t.lfp.rss")"
			printf '"afl": %s, "afl_stability": %s, "afl_rss_mb": %s, "replay": %s}' \
				"$(median "$tmp/$t.afl")" "${stab:-null}" "$(maxof "$tmp/$t.afl.rss")" \
				"$(median "$tmp/$t.rep")"
			sep=', '
		done
		printf '}}\n'
	} > "$json"
	echo "wrote $json"
fi
