# shellcheck shell=bash
# fuzz/options.sh - a target's libFuzzer options, as the scripts that run
# libFuzzer themselves read them (ci/fuzz, fuzz/selftest.sh, fuzz/bench.sh,
# fuzz/rss.sh; sourced from the project's root).  fuzz/T.options is the
# one place they are set: OSS-Fuzz and ClusterFuzzLite read the same file
# beside the binary (fuzz/build-oss.sh copies it there), and take every
# key of its [libfuzzer] section as a flag, so these take every key too.

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
