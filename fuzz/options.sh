# shellcheck shell=bash
# fuzz/options.sh - a target's libFuzzer options, as the scripts that run
# libFuzzer themselves read them (ci/fuzz, fuzz/selftest.sh, fuzz/bench.sh,
# fuzz/rss.sh; sourced from the project's root).  fuzz/T.options is the
# one place they are set: OSS-Fuzz and ClusterFuzzLite read the same file
# beside the binary (fuzz/build-oss.sh copies it there), and take every
# key of its [libfuzzer] section as a flag, so these take every key too.
# Also where those scripts pin AFL++ to a core (afl_pin).

# lf_opt T KEY: the value of KEY in fuzz/T.options (empty when unset).
lf_opt() {
	tr -d '\r' < "fuzz/$1.options" |
		sed -n "s/^[[:space:]]*$2[[:space:]]*=[[:space:]]*//p" | head -1
}

# lf_flags T: every option of fuzz/T.options's [libfuzzer] section as a
# libFuzzer flag, `-KEY=VALUE`, the dictionary by its path from here.  A
# flag given after these overrides one of them (libFuzzer keeps the last).
# The flags are words: no value holds a space.
lf_flags() {
	tr -d '\r' < "fuzz/$1.options" | awk '
		/^[[:space:]]*(#|$)/ { next }
		/^[[:space:]]*\[/ { lf = $0 ~ /\[libfuzzer\]/; next }
		lf && /=/ {
			k = $0; sub(/^[[:space:]]*/, "", k); sub(/[[:space:]]*=.*/, "", k)
			v = $0; sub(/^[^=]*=[[:space:]]*/, "", v)
			sub(/[[:space:]]+$/, "", v)
			if (k == "dict" && v !~ /^\//)
				v = "fuzz/" v
			printf "%s-%s=%s", sep, k, v
			sep = " "
		}
		END { print "" }'
}

# afl_pin I: the command words that run AFL++ instance I (0, 1, ...) and
# its target on one CPU, the I-th (modulo their count) of the CPUs this
# process may use (Cpus_allowed_list: a cpuset or a taskset mask is kept):
# `taskset -c N`, or nothing where taskset or that list is missing.
# afl-fuzz does the same by itself unless AFL_NO_AFFINITY is set, but it
# gives up (or fails) when it finds no core free of other processes;
# these scripts set that variable and pin each instance here instead.  An
# execution hands its input to the target and waits for its status: with
# the two processes on two cores each hand-over is a wake-up across
# cores, which on a virtual machine costs more than most inputs (the
# empty target: 14k exec/s unpinned on this project's 2-core machine,
# 92k pinned).
afl_pin() {
	local list part c parts=() cpus=()
	command -v taskset >/dev/null 2>&1 || return 0
	list=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status 2>/dev/null)
	IFS=, read -ra parts <<< "$list"
	for part in "${parts[@]}"; do
		case "$part" in
		*[!0-9-]* | '') return 0 ;; # a form not known here: no pinning
		esac
		for ((c = ${part%-*}; c <= ${part#*-}; c++)); do
			cpus+=("$c")
		done
	done
	[ "${#cpus[@]}" -gt 0 ] || return 0
	printf 'taskset -c %d' "${cpus[$(($1 % ${#cpus[@]}))]}"
}
