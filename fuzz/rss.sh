#!/usr/bin/env bash
# fuzz/rss.sh - the memory of a long fuzz run: each fuzz target under
# libFuzzer, plain and ASan + UBSan, fuzzed for N minutes from its seed
# corpus, its resident set read from /proc every S seconds.
#
#   fuzz/rss.sh [--minutes N] [--every S] [--targets diff,crash]
#               [--flavours plain,asan] [--limit-mb M] [--jobs J]
#               [--json FILE]
#
# A run prints its rss at each minute and is judged:
#   plain  the peak rss stays under M MB (256);
#   asan   after the first third of the run, the bytes it holds allocated
#          (ASan's count of live blocks, which the target writes every S
#          seconds: FSO_HEAP_LOG in fuzz/fuzz.h) grow by no more than a
#          twentieth or 32 MB, whichever is more.  A leak or an unbounded
#          cache grows them.  The rss of an ASan process is not judged:
#          most of it is ASan's quarantine of freed blocks (256 MB) and
#          the free memory its allocator keeps for each size of block,
#          which grows slowly as the mix of sizes changes; it is shown.
# Exits 1 when a run fails its judgement or dies, 2 on bad arguments.
# A run that dies (a finding: crash, timeout, out of memory) leaves its
# input in out/rss/ (O=DIR: DIR/rss/) and its report's summary here.
# J runs at once (1); each is one process on one core.  The default,
# 10 minutes of each target in both flavours, takes 80 minutes at
# --jobs 1: name the targets, or --jobs 2 on two idle cores.  A
# measurement for a quiet machine, never a CI stage.  Builds with
# `make fuzz-bench` first (O=DIR: into DIR, as make's O=).
set -u
cd "$(dirname "$0")/.."
O=${O:-out}
minutes=10 every=10 targets= flavours="plain asan" limit=256 jobs=1 json=
usage() { echo "rss: $1 (see --help)" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes) minutes=${2-}; shift 2 || usage "--minutes takes a number" ;;
	--every) every=${2-}; shift 2 || usage "--every takes a number" ;;
	--targets) targets=$(echo "${2-}" | tr ',' ' '); shift 2 || usage "--targets takes a list" ;;
	--flavours) flavours=$(echo "${2-}" | tr ',' ' '); shift 2 || usage "--flavours takes a list" ;;
	--limit-mb) limit=${2-}; shift 2 || usage "--limit-mb takes a number" ;;
	--jobs) jobs=${2-}; shift 2 || usage "--jobs takes a number" ;;
	--json) json=${2-}; shift 2 || usage "--json takes a file" ;;
	-h|--help) sed -n '2,27p' "$0"; exit 0 ;;
	*) usage "unknown argument '$1'" ;;
	esac
done
for v in "$minutes" "$every" "$limit" "$jobs"; do
	case "$v" in
	''|*[!0-9]*|0) usage "--minutes, --every, --limit-mb and --jobs take whole numbers above 0" ;;
	esac
done
known=$(sed -e 's/#.*//' fuzz/targets | xargs)
[ -n "$targets" ] || targets=$known
for t in $targets; do
	case " $known empty " in *" $t "*) ;; *) usage "no fuzz target '$t' (fuzz/targets)" ;; esac
done
for f in $flavours; do
	case "$f" in plain|asan) ;; *) usage "flavours are plain and asan, not '$f'" ;; esac
done
make -s -j"$(nproc 2>/dev/null || echo 2)" O="$O" fuzz-bench >/dev/null || exit 2
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
art=$O/rss
mkdir -p "$art" || exit 2
# shellcheck source=fuzz/options.sh
. fuzz/options.sh

# one T FLAVOUR: fuzz T for the whole time, one "SECONDS RSS_KB" line a
# sample into $tmp/T.FLAVOUR.rss, libFuzzer's log beside it.
one() {
	local t=$1 f=$2 bin dir=$tmp/$1.$2.corpus pid start now kb
	bin=$O/fuzz/libfuzzer-plain/$t
	[ "$f" = asan ] && bin=$O/fuzz/libfuzzer/$t
	mkdir -p "$dir"
	cp corpus/"$t"/* "$dir"/ 2>/dev/null || head -c 16 /dev/zero > "$dir/zero"
	: > "$tmp/$t.$f.heap"
	# shellcheck disable=SC2046 # flags are a list
	FSO_HEAP_LOG=$([ "$f" = asan ] && echo "$tmp/$t.$f.heap") FSO_HEAP_EVERY=$every \
	"$bin" -max_total_time=$((minutes * 60)) $(lf_flags "$t") \
		-rss_limit_mb=4096 -print_final_stats=1 \
		-artifact_prefix="$art/$t.$f." "$dir" > "$tmp/$t.$f.log" 2>&1 &
	pid=$!
	trap 'kill "$pid" 2>/dev/null' EXIT
	start=$(date +%s)
	: > "$tmp/$t.$f.rss"
	while kill -0 "$pid" 2>/dev/null; do
		kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
		now=$(date +%s)
		[ -n "$kb" ] && echo "$((now - start)) $kb" >> "$tmp/$t.$f.rss"
		sleep "$every"
	done
	wait "$pid"
	echo $? > "$tmp/$t.$f.rc"
}

echo "fuzz/rss.sh: $minutes min a run, rss every $every s, $jobs at once," \
     "load at start: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cpus"
running=0
for t in $targets; do
	for f in $flavours; do
		if [ "$running" -ge "$jobs" ]; then
			wait -n
			running=$((running - 1))
		fi
		echo "  started $t ($f) at $(date +%H:%M:%S)"
		one "$t" "$f" &
		running=$((running + 1))
	done
done
wait

# third_end FILE DIV: "AT_ONE_THIRD END" of a file of "SECONDS VALUE"
# lines, in MB (VALUE / DIV MB); "- -" when it is empty
third_end() {
	awk -v total=$((minutes * 60)) -v div="$2" '
		{ s[NR] = $1; v[NR] = $2 }
		END {
			if (NR == 0) { print "- -"; exit }
			third = v[1]
			for (i = 1; i <= NR; i++) if (s[i] <= total / 3) third = v[i]
			printf "%d %d\n", third / div, v[NR] / div
		}' "$1"
}

# judge T FLAVOUR: "VERDICT PEAK_MB RSS_THIRD RSS_END HEAP_THIRD HEAP_END
# EXECS" (MB; the heap "-" in plain runs)
judge() {
	local t=$1 f=$2 rc execs peak rss heap v
	rc=$(cat "$tmp/$t.$f.rc" 2>/dev/null || echo 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$t.$f.log")
	peak=$(awk '$2 > p { p = $2 } END { printf "%d", p / 1024 }' "$tmp/$t.$f.rss")
	rss=$(third_end "$tmp/$t.$f.rss" 1024)
	heap=$(third_end "$tmp/$t.$f.heap" 1048576)
	set -- $heap
	if [ "$rc" != 0 ] || [ "${execs:-0}" = 0 ] || [ "$rss" = "- -" ]; then
		v=died
	elif [ "$f" = plain ]; then
		v=$([ "$peak" -le "$limit" ] && echo ok || echo over)
	elif [ "$1" = - ]; then
		v=noheap # the target wrote no heap log: an old build?
	else
		v=$(awk -v a="$1" -v b="$2" 'BEGIN { tol = a / 20; if (tol < 32) tol = 32
			print b - a <= tol ? "ok" : "grows" }')
	fi
	echo "$v $peak $rss $heap ${execs:-0}"
}

fail=0
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
for t in $targets; do
	for f in $flavours; do
		# the last sample of each minute, MB
		for what in rss heap; do
			[ -s "$tmp/$t.$f.$what" ] || continue
			printf '%-6s %-5s %-4s at each minute (MB):' "$t" "$f" "$what"
			awk -v div=$([ $what = rss ] && echo 1024 || echo 1048576) '
				{ m = int($1 / 60); if (m > last) last = m; v[m] = $2 }
				END { for (m = 0; m <= last; m++) if (m in v) printf " %d", v[m] / div
				      printf "\n" }' "$tmp/$t.$f.$what"
		done
	done
done
echo "(MB; heap: what an ASan run holds allocated, judged; plain runs: the peak rss, judged)"
printf '%-6s %-5s %-6s %8s %8s %8s %9s %9s %11s\n' target build result \
	"peak rss" "rss 1/3" "rss end" "heap 1/3" "heap end" executions
for t in $targets; do
	for f in $flavours; do
		set -- $(judge "$t" "$f")
		printf '%-6s %-5s %-6s %8s %8s %8s %9s %9s %11s\n' "$t" "$f" "$1" "$2" "$3" "$4" "$5" "$6" "$7"
		[ "$1" = ok ] || { fail=1
			echo "  $t ($f): $1; from its log:" >&2
			grep -E '^==[0-9]+==|^SUMMARY|deadly signal|Test unit written|out-of-memory|^stat::peak' \
				"$tmp/$t.$f.log" | head -8 >&2; }
		echo "$t $f $*" >> "$tmp/results"
	done
done
if [ -n "$json" ]; then
	awk -v minutes="$minutes" -v limit="$limit" '
		function num(x) { return x == "-" ? "null" : x + 0 }
		BEGIN { printf "{\"schema\": \"fsoracle-fuzzrss/2\", \"minutes\": %d, \"plain_limit_mb\": %d, \"runs\": [", minutes, limit }
		{ printf "%s{\"target\": \"%s\", \"build\": \"%s\", \"result\": \"%s\", \"peak_rss_mb\": %s, \"rss_third_mb\": %s, \"rss_end_mb\": %s, \"heap_third_mb\": %s, \"heap_end_mb\": %s, \"executions\": %s}",
			(NR > 1 ? ", " : ""), $1, $2, $3, num($4), num($5), num($6), num($7), num($8), num($9) }
		END { printf "]}\n" }' "$tmp/results" > "$json"
	echo "wrote $json"
fi
exit "$fail"
