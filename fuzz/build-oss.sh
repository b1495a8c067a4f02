#!/usr/bin/env bash
# fuzz/build-oss.sh - the fuzz part of the OSS-Fuzz / ClusterFuzzLite build.
#
#   ./fuzz/build-oss.sh LIBDIR
#
# build.sh calls this in OSS-Fuzz mode, after building LIBDIR/libfsoracle.a
# with $CC and $CFLAGS.  For every target in fuzz/targets it compiles
# fuzz/T.c and its helpers with $CC $CFLAGS (they carry the sanitizer and
# coverage flags: nothing here adds -fsanitize), links with $CXX and
# $LIB_FUZZING_ENGINE (libFuzzer, or AFL++'s driver, or another engine's),
# and puts in $OUT:
#
#   T                   the fuzzer
#   T_seed_corpus.zip   corpus/T/*, flat, each file named by its SHA-1
#   T.dict, T.options   fuzz/T.dict, fuzz/T.options
#   fsoracle_mutator.so the structure-aware mutator (mutate.h) as an AFL++
#                       custom mutator library, when the engine is AFL++
#
# libFuzzer calls the mutator linked into each target
# (mutator_libfuzzer.c).  AFL++'s driver never does: afl-fuzz mutates in
# its own process and takes a custom mutator only from
# AFL_CUSTOM_MUTATOR_LIBRARY in its environment (neither OSS-Fuzz's
# run_fuzzer nor ClusterFuzz reads it from T.options; ClusterFuzz's
# [env] section passes only a short allow-list).  So with AFL++ the
# library goes beside the targets, built with plain clang and no
# sanitizer or coverage flags (it runs inside afl-fuzz, which has
# neither), and the runner's environment names it:
#   AFL_CUSTOM_MUTATOR_LIBRARY=$OUT/fsoracle_mutator.so
# The engine is AFL++ when $FUZZING_ENGINE is afl (OSS-Fuzz and
# ClusterFuzzLite set it) or $LIB_FUZZING_ENGINE names AFL++'s driver.
#
# Local check (what fuzz/selftest.sh runs):
#   CC=clang CXX=clang++ CFLAGS='-fsanitize=address,fuzzer-no-link' \
#   LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT=/tmp/ossout WORK=/tmp/osswork \
#   SRC=/work ./build.sh
set -eu
cd "$(dirname "$0")/.."
lib=${1:?usage: fuzz/build-oss.sh LIBDIR}/libfsoracle.a
: "${CC:=clang}" "${CXX:=clang++}" "${CFLAGS:=}" "${OUT:?}"
: "${LIB_FUZZING_ENGINE:?}"
: "${CXXFLAGS:=$CFLAGS}"
work=${WORK:-$(mktemp -d)}/fsoracle-fuzz
mkdir -p "$work" "$OUT"
[ -f "$lib" ] || { echo "build-oss: $lib is missing" >&2; exit 1; }

helpers="input geom rig devtrack mutate mutator_libfuzzer"
# The library was built without external libraries (build.sh): the
# targets must know it too (the crash target's pmem presets then tear
# 8-byte words on mem: instead of opening pmem:).
cflags="-std=c11 -D_GNU_SOURCE -I. -Wall -Wextra -Wno-unused-parameter
	-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -DFSO_NO_EXTERNAL_LIBS"

objs=
for h in $helpers; do
	# shellcheck disable=SC2086 # flags are lists
	$CC $CFLAGS $cflags -c "fuzz/$h.c" -o "$work/$h.o"
	objs="$objs $work/$h.o"
done

for t in $(sed -e 's/#.*//' fuzz/targets); do
	echo "build-oss: $t"
	# shellcheck disable=SC2086
	$CC $CFLAGS $cflags -c "fuzz/$t.c" -o "$work/$t.o"
	# shellcheck disable=SC2086
	$CXX $CXXFLAGS -o "$OUT/$t" "$work/$t.o" $objs "$lib" \
		$LIB_FUZZING_ENGINE -lm
	cp "fuzz/$t.dict" "$OUT/$t.dict"
	cp "fuzz/$t.options" "$OUT/$t.options"
	rm -rf "$work/seeds-$t" "$OUT/${t}_seed_corpus.zip"
	mkdir -p "$work/seeds-$t"
	if [ -d "corpus/$t" ]; then
		for f in "corpus/$t"/*; do
			[ -f "$f" ] || continue
			sum=$(sha1sum < "$f")
			cp "$f" "$work/seeds-$t/${sum%% *}"
		done
	fi
	if ls "$work/seeds-$t"/* >/dev/null 2>&1; then
		(cd "$work/seeds-$t" && zip -q -j "$OUT/${t}_seed_corpus.zip" ./*)
	fi
done
afl=0
case "${FUZZING_ENGINE:-}:$LIB_FUZZING_ENGINE" in
afl:*|*AFLDriver*|*libAFL*) afl=1 ;;
esac
if [ "$afl" -eq 1 ]; then
	mcc=${MUTATOR_CC:-clang}
	command -v "$mcc" >/dev/null || mcc=cc
	echo "build-oss: fsoracle_mutator.so (AFL++ custom mutator, $mcc)"
	# shellcheck disable=SC2086
	$mcc $cflags -O2 -fPIC -shared -o "$OUT/fsoracle_mutator.so" \
		fuzz/mutate.c fuzz/mutator_afl.c harness/op.c harness/binary.c
	# not executable: runners take every executable in $OUT for a target
	chmod a-x "$OUT/fsoracle_mutator.so"
fi
echo "build-oss: $(sed -e 's/#.*//' fuzz/targets | xargs) in $OUT"
