#!/usr/bin/env bash
# fuzz/selftest.sh - the fuzz targets' tests, for CI (ci/test) and by hand.
#
#   fuzz/selftest.sh [--quick] [--smoke SECONDS] [--no-oss] [--no-afl]
#                    [--oss-only]
#                    [--catch [SECONDS] | --catch-only [SECONDS]]
#                    [--catch-seed N] [--catch-pairs T:BUG,...]
#
# Stages (each says ok or FAILED; the exit status is the number failed):
#   1. build: `make fuzz` (libFuzzer, AFL++, replay programs; without
#      afl-clang-fast, the libFuzzer and replay ones only; without clang,
#      the replay ones, and the stages that need clang say they skip)
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
#   5. OSS-Fuzz: build.sh under the OSS-Fuzz contract into a scratch
#      $OUT, which must hold every target with its seed corpus,
#      dictionary and options, three times: clang, ASan and libFuzzer
#      (each target runs its seeds); MSan and libFuzzer, ClusterFuzzLite's
#      memory flavour (each runs its first 40 seeds); afl-clang-fast and
#      AFL++'s driver, where $OUT must also hold fsoracle_mutator.so and
#      afl-fuzz, given it, must run it (5 s on diff)
#   6. catch (--catch): every target must find the planted bugs that
#      concern it.  `make fuzz-planted` builds the targets with
#      -DFSO_PLANTED into $O/fuzz/planted/ (no sanitizers: the bugs are
#      the checker's findings); FSO_PLANT=BUG picks one bug per run
#      (fuzz/plant.h): a bug in each seed path's optimized twin
#      (ref/plant.h), the model's planted bugs (harness/target_planted.c)
#      and the zoned_planted suite's two (props/suite_zoned.c).  For each
#      pair below, the seeds that already fail are set aside first (the
#      finding must be the fuzzer's), then libFuzzer runs from the rest of
#      corpus/T/ with the target's dictionary, options and our custom
#      mutator until the first failure or SECONDS (60): one libFuzzer
#      worker a core on the pair (CATCH_WORKERS=N sets how many), each
#      with its own -seed, sharing the corpus directory as libFuzzer's
#      -jobs=N -workers=N do, and the first failure stops them.  A
#      failure counts only if the same input passes without the bug.  The table gives each pair's seeds set aside, time to first
#      failure (MISSED past the cap, which fails the stage), executions
#      and what the checker saw.  --catch-seed N is libFuzzer's -seed (1);
#      --catch-pairs runs only the pairs named; --catch-only builds the
#      planted flavour and runs this stage alone.
#        diff   every engine bug and every model bug
#        crash  the same but rt_truncate (its presets have no realtime
#               device), and pmem_fence (ref/plant.h: a missing fence in
#               the pmem commit path, which only power cuts on pmem find)
#        zoned  append_location, model_capacity
#        image  none: it runs no model, and its ops (16, on plain files,
#               no journal-data, compression, delalloc, reflink or
#               realtime device) reach no optimized twin but the page
#               cache's, whose bug lives in memory, where it checks
#               nothing (fsck runs on the image after unmount)
# --quick runs stages 1-2 only; --no-afl and --no-oss leave out stages
# 4 and 5; --oss-only runs stage 5 alone.  Every flavour this machine
# has the tools for is built all the same (so they stay warning-free).
# O=DIR builds into DIR instead of out/ (as `make O=DIR`).
set -u
cd "$(dirname "$0")/.."
O=${O:-out}
smoke=10 quick=0 oss=1 afl=1 catch=0 catch_cap=60 catch_seed=1 catch_only=0
oss_only=0
catch_pairs=
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1; shift ;;
	--smoke) smoke=$2; shift 2 ;;
	--no-oss) oss=0; shift ;;
	--no-afl) afl=0; shift ;;
	--oss-only) oss_only=1; shift ;;
	--catch|--catch-only)
		catch=1
		[ "$1" = --catch-only ] && catch_only=1
		shift
		case "${1:-}" in [0-9]*) catch_cap=$1; shift ;; esac ;;
	--catch-seed) catch_seed=$2; shift 2 ;;
	--catch-pairs) catch_pairs=$(echo "$2" | tr ',' ' '); shift 2 ;;
	-h|--help) sed -n '2,59p' "$0"; exit 0 ;;
	*) echo "selftest: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
have_afl=0
command -v afl-clang-fast >/dev/null && command -v afl-fuzz >/dev/null && have_afl=1
[ "$have_afl" -eq 1 ] || afl=0
if ! command -v clang >/dev/null && [ "$quick" -eq 0 ]; then
	echo "fuzz selftest: no clang: the smoke and OSS-Fuzz stages are skipped"
	oss=0
fi
targets=$(sed -e 's/#.*//' fuzz/targets | xargs)
jobs=$(nproc 2>/dev/null || echo 2)
catch_workers=${CATCH_WORKERS:-$jobs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
stage() { echo; echo "=== fuzz: $*"; started=$SECONDS; }
tally() { # tally NAME STATUS: the outcome, and seconds since the stage began
	local took="($((SECONDS - started)) s)"
	if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "--- $1: ok $took"
	else failed=$((failed + 1)); echo "--- $1: FAILED $took"; fi
}
# shellcheck source=fuzz/options.sh
. fuzz/options.sh
known_finding() { # known_finding T REPORT: the known-findings line it matches
	local t re what
	while IFS=$'\t' read -r t re what; do
		case "$t" in ''|'#'*) continue ;; esac
		[ "$t" = "$1" ] && grep -a -q -E "$re" "$2" && { echo "$what"; return; }
	done < fuzz/known-findings
}

# finding T INPUT REPORT: say what a fuzzer found; 0 if it is a known one
finding() {
	local known k
	known=$(known_finding "$1" "$3")
	if [ -n "$known" ]; then
		echo "  known finding: ${known:0:100}..."
		return 0
	fi
	mkdir -p "$O"/fuzz/findings
	k="$O"/fuzz/findings/$1-$(sha1sum < "$2" | cut -c1-12)
	cp "$2" "$k"
	echo "  finding, kept as $k:"
	grep -a -E '^(fsoracle|  [a-z]|==[0-9]+==ERROR|SUMMARY)' "$3" |
		head -12 | sed 's/^/    /'
	"$O"/fuzz/replay/"$1" --describe "$2" | sed 's/^/    /'
	return 1
}

# ---- stage 6: the planted bugs each target must find ----

# The pairs: target, then the planted bugs that concern it (see the top).
engine_bugs="rt_truncate pagecache_truncate cow_end forget delalloc_cap"
model_bugs="trunc_tail punch_short zero_keep_size collapse_eio audit_unlink"
all_pairs() {
	local b
	for b in $engine_bugs $model_bugs; do echo "diff:$b"; done
	for b in $engine_bugs $model_bugs; do
		[ "$b" = rt_truncate ] || echo "crash:$b"
	done
	echo crash:pmem_fence
	echo zoned:append_location zoned:model_capacity
}

# catch_pair T BUG: one pair, into $tmp/catch/T-BUG/ and its .res line:
# status, seeds set aside, seeds, seconds, executions, what was seen
catch_pair() {
	local t=$1 b=$2 d=$tmp/catch/$1-$2 bin=$O/fuzz/planted/$1
	local files=() rest=() f bad past aside=0 total t0 t1 rc art what execs
	mkdir -p "$d/corpus" "$d/aside"
	cp corpus/"$t"/* "$d/corpus/"
	total=$(ls "$d/corpus" | wc -l)
	# Seeds that fail with the bug are set aside: each run stops at the
	# first that fails, named by the "Running:" line before it.
	files=("$d"/corpus/*)
	while [ "${#files[@]}" -gt 0 ]; do
		FSO_PLANT=$b "$bin" "${files[@]}" > "$d/aside.log" 2>&1 && break
		bad=$(grep -a '^Running: ' "$d/aside.log" | tail -1 | cut -c10-)
		if [ -z "$bad" ] || ! [ -f "$bad" ]; then
			echo "ERROR $aside $total - - the seeds did not run" > "$d.res"
			return
		fi
		mv "$bad" "$d/aside/"
		aside=$((aside + 1))
		rest=() past=0
		for f in "${files[@]}"; do # the ones after it have not run
			[ "$past" -eq 1 ] && rest+=("$f")
			[ "$f" = "$bad" ] && past=1
		done
		files=("${rest[@]}")
	done
	# One libFuzzer worker a core, as `-jobs=N -workers=N` would run
	# them: seeds catch_seed, catch_seed + 1, ..., one corpus directory
	# shared; the first failure stops the others.
	local w n pids=() left=$catch_workers log
	t0=$(date +%s%N)
	for ((w = 0; w < catch_workers; w++)); do
		mkdir -p "$d/art$w"
		# shellcheck disable=SC2046 # flags are a list
		FSO_PLANT=$b timeout $((catch_cap + 60)) "$bin" \
			-seed="$((catch_seed + w))" \
			-max_total_time="$catch_cap" $(lf_flags "$t") \
			-artifact_prefix="$d/art$w/" -print_final_stats=1 \
			"$d/corpus" > "$d/fuzz$w.log" 2>&1 &
		pids+=($!)
	done
	art=
	while [ "$left" -gt 0 ] && [ -z "$art" ]; do
		wait -n "${pids[@]}" 2>/dev/null
		rc=$?
		left=$((left - 1))
		art=$(ls "$d"/art*/* 2>/dev/null | head -1)
	done
	t1=$(date +%s%N)
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	execs=0
	for ((w = 0; w < catch_workers; w++)); do
		n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/fuzz$w.log" | tail -1)
		[ -z "$n" ] && n=$(grep -a -o '^#[0-9]*' "$d/fuzz$w.log" | tail -1 | tr -d '#')
		execs=$((execs + ${n:-0}))
	done
	if [ -z "$art" ]; then
		cp "$d/fuzz0.log" "$d/fuzz.log"
		echo "MISSED $aside $total - ${execs:--} rc $rc" > "$d.res"
		return
	fi
	w=${art#"$d"/art}
	w=${w%%/*}
	log=$d/fuzz$w.log
	cp "$log" "$d/fuzz.log"
	what=$(grep -a -m1 -E '^fsoracle fuzz: |^==[0-9]+==ERROR' "$log" |
		sed -e 's/^fsoracle fuzz: [a-z]*: //' -e 's/ after .*//' \
		    -e 's/^==[0-9]*==ERROR: //' | cut -c1-48)
	# The finding must be the planted bug's: without it, the input passes.
	if ! FSO_PLANT=none "$bin" "$art" > "$d/unplanted.log" 2>&1; then
		mkdir -p "$O"/fuzz/findings
		f=$O/fuzz/findings/$t-$(sha1sum < "$art" | cut -c1-12)
		cp "$art" "$f"
		echo "REAL $aside $total - ${execs:--} fails without the bug too" \
			"(kept as $f): $what" > "$d.res"
		return
	fi
	echo "CAUGHT $aside $total $(( (t1 - t0) / 100000000 )) ${execs:--} $what" > "$d.res"
}

catch_stage() {
	local pairs p t b n=0 rc=0 st aside total ds execs what secs
	local cj=$(( (jobs + catch_workers - 1) / catch_workers )) # pairs at a time
	stage "catch: the planted bugs, libFuzzer from each seed corpus, cap ${catch_cap} s (seed $catch_seed)"
	if ! command -v clang >/dev/null; then
		echo "--- catch: skipped: no clang, so no libFuzzer targets"
		return
	fi
	if ! make -s -j"$jobs" O="$O" fuzz-planted > "$tmp/planted-build.log" 2>&1; then
		tail -20 "$tmp/planted-build.log"
		tally catch 1
		return
	fi
	echo "  built $O/fuzz/planted/ ($((SECONDS - started)) s)"
	pairs=${catch_pairs:-$(all_pairs | xargs)}
	rm -rf "$tmp/catch"
	mkdir -p "$tmp/catch"
	for p in $pairs; do
		t=${p%%:*} b=${p#*:}
		[ -x "$O/fuzz/planted/$t" ] || { echo "  no planted build of '$t'"; rc=1; continue; }
		while [ "$(jobs -rp | wc -l)" -ge "$cj" ]; do wait -n; done
		catch_pair "$t" "$b" &
	done
	wait
	printf '  %-6s %-19s %-12s %-15s %-7s %s\n' target bug "seeds aside" \
		"first failure" execs "what the checker saw"
	for p in $pairs; do
		t=${p%%:*} b=${p#*:}
		[ -f "$tmp/catch/$t-$b.res" ] || continue
		read -r st aside total ds execs what < "$tmp/catch/$t-$b.res"
		case "$st" in
		CAUGHT) secs="$((ds / 10)).$((ds % 10)) s" ;;
		*) secs=$st; rc=1 ;;
		esac
		printf '  %-6s %-19s %-12s %-15s %-7s %s\n' "$t" "$b" \
			"$aside of $total" "$secs" "$execs" "$what"
		n=$((n + 1))
		if [ "$st" != CAUGHT ]; then
			tail -5 "$tmp/catch/$t-$b/fuzz.log" 2>/dev/null | sed 's/^/    /'
		fi
	done
	tally "catch ($n pairs)" "$rc"
}

# oss_build NAME VAR=VALUE...: build.sh under the OSS-Fuzz contract with
# those variables into $tmp/oss-NAME/out; every target must be there with
# its seed corpus (unpacked into $tmp/oss-NAME/corpus/T), dictionary and
# options.  Its log is $tmp/oss-NAME.log.
oss_build() {
	local n=$1 t f rc=0
	shift
	env "$@" OUT="$tmp/oss-$n/out" WORK="$tmp/oss-$n/work" SRC="$PWD" \
		./build.sh > "$tmp/oss-$n.log" 2>&1 ||
		{ tail -20 "$tmp/oss-$n.log"; return 1; }
	for t in $targets; do
		for f in "$t" "${t}_seed_corpus.zip" "$t.dict" "$t.options"; do
			[ -s "$tmp/oss-$n/out/$f" ] || { echo "  missing \$OUT/$f"; rc=1; }
		done
		mkdir -p "$tmp/oss-$n/corpus/$t"
		(cd "$tmp/oss-$n/corpus/$t" &&
			unzip -q "$tmp/oss-$n/out/${t}_seed_corpus.zip") || rc=1
	done
	return "$rc"
}

# oss_seeds NAME MAX: run each target of that build over its seeds (the
# first MAX of them, 0 = all), each once, under libFuzzer
oss_seeds() {
	local n=$1 max=$2 t d=$tmp/oss-$1 rc=0
	for t in $targets; do
		if [ "$max" -gt 0 ]; then
			mkdir -p "$d/some/$t"
			ls "$d/corpus/$t" | sort | head -n "$max" |
				(cd "$d/corpus/$t" && xargs cp -t "$d/some/$t")
			set -- "$d/some/$t"
		else
			set -- "$d/corpus/$t"
		fi
		echo "  \$OUT/$t: $(ls "$1" | wc -l) seeds, each run once"
		"$d/out/$t" -runs=0 -dict="$d/out/$t.dict" "$1" \
			> "$d/run-$t.log" 2>&1 || {
			rc=1
			grep -a -E '^(fsoracle|  [a-z]|==[0-9]+==|SUMMARY)' \
				"$d/run-$t.log" | head -5
		}
	done
	return "$rc"
}

oss_stage() {
	local rc d drv seeds ours
	stage "OSS-Fuzz build contract (build.sh, clang, ASan, libFuzzer)"
	rc=0
	oss_build asan CC=clang CXX=clang++ \
		CFLAGS='-fsanitize=address,fuzzer-no-link' \
		LIB_FUZZING_ENGINE=-fsanitize=fuzzer &&
		oss_seeds asan 0 || rc=1
	tally oss-fuzz "$rc"

	# ClusterFuzzLite's memory flavour (.clusterfuzzlite/project.yaml):
	# the library without external libraries, every line instrumented;
	# the first 40 seeds of each target (MSan runs them ten times slower)
	stage "OSS-Fuzz build contract, MSan (clang, libFuzzer, 40 seeds a target)"
	rc=0
	oss_build msan CC=clang CXX=clang++ \
		CFLAGS='-O1 -fsanitize=memory -fsanitize-memory-track-origins -fsanitize=fuzzer-no-link' \
		LIB_FUZZING_ENGINE=-fsanitize=fuzzer &&
		oss_seeds msan 40 || rc=1
	tally oss-fuzz-msan "$rc"

	# The AFL++ engine: its driver, afl-clang-fast, and the custom mutator
	# library beside the targets.  afl-fuzz runs one target 5 s with
	# AFL_CUSTOM_MUTATOR_LIBRARY set as a runner sets it; the mutator ran
	# if queue entries carry its name (afl_custom_describe).
	if command -v afl-clang-fast >/dev/null && command -v afl-fuzz >/dev/null &&
	   drv=$(ls /usr/lib/afl/libAFLDriver.a /usr/local/lib/afl/libAFLDriver.a \
		2>/dev/null | head -1) && [ -n "$drv" ]; then
		stage "OSS-Fuzz build contract, AFL++ (afl-clang-fast, its driver, custom mutator)"
		rc=0
		d=$tmp/oss-afl
		oss_build afl AFL_QUIET=1 CC=afl-clang-fast CXX=afl-clang-fast++ \
			CFLAGS=-O1 FUZZING_ENGINE=afl LIB_FUZZING_ENGINE="$drv" || rc=1
		if [ "$rc" -eq 0 ]; then
			[ -s "$d/out/fsoracle_mutator.so" ] ||
				{ echo "  missing \$OUT/fsoracle_mutator.so"; rc=1; }
		fi
		if [ "$rc" -eq 0 ]; then
			AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1 \
			AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
			AFL_CUSTOM_MUTATOR_LIBRARY="$d/out/fsoracle_mutator.so" \
				timeout 120 afl-fuzz -i "$d/corpus/diff" -o "$d/afl" -V 5 \
				-x "$d/out/diff.dict" -t 25000 -- "$d/out/diff" \
				> "$d/afl.log" 2>&1
			# (on a loaded machine the seeds' calibration alone can
			# outlast the timeout: the mutator's entries decide)
			seeds=$(find "$d/corpus/diff" -type f | wc -l)
			ours=$(find "$d/afl/default/queue" -maxdepth 1 -type f \
				-name '*,fsoracle-ops*' 2>/dev/null | wc -l)
			echo "  afl-fuzz \$OUT/diff 5 s: $(find "$d/afl/default/queue" \
				-maxdepth 1 -type f 2>/dev/null | wc -l) queue entries" \
				"from $seeds seeds, $ours of them from fsoracle_mutator.so"
			[ "$ours" -gt 0 ] || { rc=1; tail -5 "$d/afl.log"; }
		fi
		tally oss-fuzz-afl "$rc"
	else
		echo; echo "=== fuzz: OSS-Fuzz AFL++ build skipped: no afl-clang-fast, afl-fuzz or libAFLDriver.a"
	fi
}

if [ "$oss_only" -eq 1 ]; then
	oss_stage
	echo
	echo "fuzz selftest: $passed passed, $failed failed"
	exit "$failed"
fi

if [ "$catch_only" -eq 1 ]; then
	started=$SECONDS
	catch_stage
	echo
	echo "fuzz selftest: $passed passed, $failed failed"
	exit "$failed"
fi

stage "build"
if [ "$have_afl" -eq 1 ]; then
	make -s -j"$jobs" O="$O" all fuzz
elif command -v clang >/dev/null; then
	make -s -j"$jobs" O="$O" all fuzz-replay fuzz-libfuzzer
else
	make -s -j"$jobs" O="$O" all fuzz-replay
fi
rc=$?
tally build "$rc"
[ "$rc" -eq 0 ] || { echo "fuzz selftest: the build failed" >&2; exit 1; }
[ -x "$O"/fuzz/replay/diff ] || { echo "selftest: nothing built" >&2; exit 1; }

stage "replay: seed corpora and corpus/regressions"
rc=0
./fuzz/mkseeds.sh --out "$tmp/regress" "$O"/fsoracle > /dev/null || rc=1
# The seed corpora in corpus/ must be what fuzz/mkseeds.sh makes now:
# the fuzzers start from them, and a log added to corpus/regressions
# without them rebuilt would be replayed here but never fuzzed from.
stale=$(for t in $targets; do
	for f in "$tmp/regress/$t"/seed-* corpus/"$t"/seed-*; do
		[ -f "$f" ] || continue
		b=$t/$(basename "$f")
		cmp -s "$tmp/regress/$b" "corpus/$b" || echo "$b"
	done
done | sort -u)
if [ -n "$stale" ]; then
	echo "corpus/ is not what fuzz/mkseeds.sh makes now: $(echo "$stale" |
		wc -l) seeds missing, extra or changed ($(echo "$stale" |
		head -1), ...); run fuzz/mkseeds.sh"
	rc=1
fi
for t in $targets; do
	for d in "corpus/$t" "$tmp/regress/$t"; do
		[ -d "$d" ] || continue
		echo "replay/$t $d"
		"$O"/fuzz/replay/"$t" "$d" > "$tmp/replay.log" 2>&1 || rc=1
		grep -v '^fsoracle: note:' "$tmp/replay.log" | sed 's/^/  /'
	done
done
# the timing options: the 3 slowest seeds, and a bad count refused
"$O"/fuzz/replay/diff --slowest 3 corpus/diff > "$tmp/slowest.log" 2>&1 || rc=1
n=$(grep -c ' ms .*%  corpus/diff/' "$tmp/slowest.log")
if [ "$n" -ne 3 ] || ! grep -q '^together ' "$tmp/slowest.log"; then
	echo "replay/diff --slowest 3: not 3 inputs and a total:"
	sed 's/^/  /' "$tmp/slowest.log"
	rc=1
fi
for bad in "--slowest 0" "--slowest 3x" "--bench 0" "--bench 2x"; do
	# shellcheck disable=SC2086 # the option and its value
	if "$O"/fuzz/replay/diff $bad corpus/diff > /dev/null 2>&1; then
		echo "replay/diff $bad: accepted"
		rc=1
	fi
done
tally replay "$rc"

if [ "$quick" -eq 0 ] && ! [ -x "$O"/fuzz/libfuzzer/diff ]; then
	echo; echo "=== fuzz: smoke skipped: no clang, so no libFuzzer targets"
elif [ "$quick" -eq 0 ]; then
	stage "smoke: libFuzzer, ${smoke} s per target"
	for t in $targets; do
		started=$SECONDS
		mkdir -p "$tmp/smoke/$t/corpus" "$tmp/smoke/$t/art"
		cp corpus/"$t"/* "$tmp/smoke/$t/corpus/" 2>/dev/null
		# shellcheck disable=SC2046 # flags are a list
		"$O"/fuzz/libfuzzer/"$t" -fork=1 -ignore_crashes=1 \
			-max_total_time="$smoke" $(lf_flags "$t") \
			-artifact_prefix="$tmp/smoke/$t/art/" -print_final_stats=1 \
			"$tmp/smoke/$t/corpus" > "$tmp/smoke/$t.log" 2>&1
		rc=$?
		grep -a '^#[0-9]*: cov:' "$tmp/smoke/$t.log" | tail -1 | cut -c1-100 |
			sed 's/^/  /'
		# the rate, for ci/main's summary: the last report's exec/s
		echo "  smoke-$t: $(grep -a '^#[0-9]*: cov:' "$tmp/smoke/$t.log" |
			tail -1 | sed -n 's/.*exec\/s:* \([0-9]*\).*/\1/p') exec/s" \
			"(libFuzzer + ASan + UBSan, ${smoke} s from the seed corpus)"
		# With findings, they decide (known ones pass); without, the run.
		ls "$tmp/smoke/$t/art"/* >/dev/null 2>&1 && rc=0
		[ "$rc" -eq 0 ] || tail -5 "$tmp/smoke/$t.log" | sed 's/^/    /'
		for a in "$tmp/smoke/$t/art"/*; do
			[ -f "$a" ] || continue
			("$O"/fuzz/libfuzzer/"$t" "$a"; true) > "$a.out" 2>&1
			finding "$t" "$a" "$a.out" || rc=1
		done
		tally "smoke-$t" "$rc"
	done
fi

if [ "$quick" -eq 0 ] && [ "$afl" -eq 1 ]; then
	stage "AFL++: 5 s per target, persistent mode, custom mutator"
	for t in $targets; do
		started=$SECONDS
		o=$tmp/afl/$t
		mkdir -p "$o"
		# shellcheck disable=SC2046 # afl_pin's words
		AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_QUIET=1 AFL_NO_AFFINITY=1 \
		AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
		AFL_CUSTOM_MUTATOR_LIBRARY="$(realpath "$O")/fuzz/afl/mutator.so" \
			timeout 60 $(afl_pin 0) afl-fuzz -i "corpus/$t" -o "$o" -V 5 \
			-x "fuzz/$t.dict" -t "$(( $(lf_opt "$t" timeout) * 1000 ))" \
			-- "$O"/fuzz/afl/"$t" > "$o.log" 2>&1
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
			("$O"/fuzz/replay/"$t" "$a"; true) > "$tmp/afl-finding.out" 2>&1
			finding "$t" "$a" "$tmp/afl-finding.out" || rc=1
		done
		tally "afl-$t" "$rc"
	done
fi

if [ "$quick" -eq 0 ] && [ "$oss" -eq 1 ]; then
	oss_stage
fi

if [ "$catch" -eq 1 ]; then
	catch_stage
fi

echo
echo "fuzz selftest: $passed passed, $failed failed"
exit "$failed"
