#!/bin/bash -eu
# .clusterfuzzlite/build.sh - ClusterFuzzLite / OSS-Fuzz build script.
# The project's own build.sh follows the OSS-Fuzz contract when
# $LIB_FUZZING_ENGINE and $OUT are set: libfsoracle.a with $CC/$CFLAGS,
# then fuzz/build-oss.sh puts every target of fuzz/targets in $OUT with
# its seed corpus, dictionary and options.
cd "$SRC/fsoracle"
./build.sh
