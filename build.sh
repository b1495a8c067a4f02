#!/usr/bin/env bash
# build.sh - the one build entry of fsoracle.
#
#   ./build.sh              release build into out/ (the fsoracle program,
#                           libfsoracle.a, unit tests)
#   ./build.sh asan         ASan + UBSan build into out-asan/
#   ./build.sh msan         MSan build (clang) into out-msan/
#   ./build.sh tsan         ThreadSanitizer build (clang) into out-tsan/
#                           (the compression workers, mount workers=N)
#   ./build.sh clean        remove every build directory
#
# When the OSS-Fuzz / ClusterFuzzLite variables are set ($LIB_FUZZING_ENGINE
# and $OUT), it follows that contract instead: $CC and $CFLAGS as given
# (they carry the sanitizer and coverage flags), fuzz targets linked with
# $LIB_FUZZING_ENGINE, binaries and their seed corpora, dictionaries and
# options placed in $OUT (fuzz/build-oss.sh does that part).  The library
# is built without external libraries (-DFSO_NO_EXTERNAL_LIBS): the fuzz
# targets use RAM devices only, and MSan would need those libraries
# instrumented too.
set -eu
cd "$(dirname "$0")"
jobs=$(nproc 2>/dev/null || echo 2)

if [ -n "${LIB_FUZZING_ENGINE:-}" ] && [ -n "${OUT:-}" ]; then
	: "${CC:=clang}"
	: "${CFLAGS:=}"
	work=${WORK:-$(mktemp -d)}
	# The engine's comparisons stay untraced, as in fuzz/fuzz.mk (which
	# says why), where the compiler takes the flag.
	engine=
	if echo 'int x;' | $CC $CFLAGS -fno-sanitize-coverage=trace-cmp -x c \
		-c - -o /dev/null 2>/dev/null; then
		engine=-fno-sanitize-coverage=trace-cmp
	fi
	make -j"$jobs" O="$work/fsoracle-build" CC="$CC" \
		EXTRA_CFLAGS="$CFLAGS -DFSO_NO_EXTERNAL_LIBS" EXTRA_LDFLAGS="$CFLAGS" \
		ENGINE_CFLAGS="$engine" "$work/fsoracle-build/libfsoracle.a"
	if [ -d fuzz ] && ls fuzz/*.c >/dev/null 2>&1; then
		./fuzz/build-oss.sh "$work/fsoracle-build"
	else
		echo "build.sh: no fuzz targets yet; built libfsoracle.a only" >&2
	fi
	exit 0
fi

case "${1:-}" in
"")     make -j"$jobs" ;;
asan)   make -j"$jobs" SAN=asan CC="${CC:-clang}" ;;
msan)   make -j"$jobs" SAN=msan CC=clang ;;
tsan)   make -j"$jobs" SAN=tsan CC=clang ;;
clean)  make clean ;;
*)      echo "usage: ./build.sh [asan|msan|tsan|clean]" >&2; exit 2 ;;
esac
