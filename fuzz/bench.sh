#!/usr/bin/env bash
# fuzz/bench.sh - executions per second of every fuzz target under each
# engine, beside the empty target's ceiling on this machine.  A
# measurement, not a test: it never fails on a number.
#
#   fuzz/bench.sh [--seconds N] [--targets diff,crash]
#
# For each target (and `empty`), fuzzing one process for N seconds (20)
# from its seed corpus, inputs up to its options' max_len (diff: 16-byte
# header + 64 ops):
#   libFuzzer asan   out/fuzz/libfuzzer/T (ASan + UBSan, custom mutator)
#   libFuzzer plain  out/fuzz/libfuzzer-plain/T (no sanitizers)
#   AFL++            out/fuzz/afl/T, persistent mode, shared-memory input,
#                    our custom mutator (and AFL++'s stability)
#   replay -O2       out/fuzz/replay/T --bench over the seed corpus: the
#                    target's own cost with no fuzzer at all
# Builds with `make fuzz-bench` first.  The machine's load is printed:
# other work on it lowers every number.
set -u
cd "$(dirname "$0")/.."
secs=20 targets=
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) secs=$2; shift 2 ;;
	--targets) targets=$(echo "$2" | tr ',' ' '); shift 2 ;;
	-h|--help) sed -n '2,18p' "$0"; exit 0 ;;
	*) echo "bench: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ -n "$targets" ] || targets=$(sed -e 's/#.*//' fuzz/targets | xargs)
make -s -j"$(nproc 2>/dev/null || echo 2)" fuzz-bench >/dev/null || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
opt() { sed -n "s/^$2[[:space:]]*=[[:space:]]*//p" "fuzz/$1.options" | head -1; }

seeds() { # seeds T DIR: a fresh copy of the seed corpus
	rm -rf "$2" && mkdir -p "$2"
	cp corpus/"$1"/* "$2"/ 2>/dev/null || head -c 16 /dev/zero > "$2/zero"
}

lf() { # lf BINDIR T: libFuzzer's average exec/s
	seeds "$2" "$tmp/c"
	"$1/$2" -max_total_time="$secs" -max_len="$(opt "$2" max_len)" \
		-timeout=25 -rss_limit_mb=2560 -print_final_stats=1 \
		-artifact_prefix="$tmp/" "$tmp/c" > "$tmp/lf.log" 2>&1
	local r
	r=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$tmp/lf.log")
	[ -n "$r" ] && echo "$r" || echo "died"
}

afl() { # afl T: AFL++ exec/s (stability)
	command -v afl-fuzz >/dev/null || { echo "-"; return; }
	seeds "$1" "$tmp/c"
	rm -rf "$tmp/afl"
	AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_QUIET=1 AFL_NO_AFFINITY=1 \
	AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
	AFL_CUSTOM_MUTATOR_LIBRARY="$PWD/out/fuzz/afl/mutator.so" \
		afl-fuzz -i "$tmp/c" -o "$tmp/afl" -V "$secs" -t 25000 \
		-- "out/fuzz/afl/$1" > "$tmp/afl.log" 2>&1
	local st=$tmp/afl/default/fuzzer_stats
	[ -f "$st" ] || { echo "died"; return; }
	awk -F': *' '/^execs_done/ { e = $2 } /^run_time/ { t = $2 }
		/^stability/ { s = $2 }
		END { printf "%d (%s)", e / (t > 0 ? t : 1), s }' "$st"
}

replay() { # replay T: the replay program's exec/s over the seeds
	seeds "$1" "$tmp/c"
	out/fuzz/replay/"$1" --bench 5 "$tmp/c" 2>/dev/null |
		sed -n 's/.*: \([0-9]*\) exec\/s$/\1/p'
}

echo "fuzz/bench.sh: $secs s per run, load: $(cut -d' ' -f1-3 /proc/loadavg)," \
     "$(nproc) cpus"
printf '%-7s %16s %16s %20s %12s\n' target "libFuzzer asan" "libFuzzer plain" \
	"AFL++ (stability)" "replay -O2"
for t in empty $targets; do
	printf '%-7s %16s %16s %20s %12s\n' "$t" "$(lf out/fuzz/libfuzzer "$t")" \
		"$(lf out/fuzz/libfuzzer-plain "$t")" "$(afl "$t")" \
		"$([ "$t" = empty ] && echo - || replay "$t")"
done
