# fuzz/fuzz.mk - build rules for the fuzz targets; included by the top
# Makefile, never part of `make all`.
#
#   make fuzz          every target (fuzz/targets, plus fuzz/empty.c) for
#                      libFuzzer, for AFL++ (plain and CMPLOG) and as a
#                      plain replay program, and the AFL++ custom mutator:
#
#     out/fuzz/libfuzzer/T      clang -fsanitize=fuzzer,address,undefined
#     out/fuzz/afl/T            afl-clang-fast, persistent mode (afl_driver.c)
#     out/fuzz/afl/T.cmplog     the same with AFL_LLVM_CMPLOG=1, for afl-fuzz -c
#     out/fuzz/afl/mutator.so   AFL_CUSTOM_MUTATOR_LIBRARY (mutator_afl.c)
#     out/fuzz/replay/T         $(CC) -O2 with replay.c: files and dirs
#
#   make fuzz-replay   only the replay programs (no clang or AFL++ needed)
#   make fuzz-bench    also libFuzzer without sanitizers, for fuzz/bench.sh:
#     out/fuzz/libfuzzer-plain/T
#   make fuzz-planted  the targets that read FSO_PLANT (fuzz/plant.h) for
#                      libFuzzer with -DFSO_PLANTED: one planted bug each
#                      run, chosen at run time, for fuzz/selftest.sh --catch;
#                      no sanitizers (the planted bugs are the checker's
#                      findings, and the search runs five times faster):
#     out/fuzz/planted/T        never part of `make fuzz` or build.sh
#
# Each flavour gets its own copy of libfsoracle.a, built by this Makefile
# itself with O= pointing under out/fuzz/ and the flavour's compiler and
# flags, so the engine is instrumented too.  What fuzz/coverage-ignore.txt
# lists is left out of the coverage instrumentation (it says why); a
# change to that list rebuilds every flavour.

FUZZ_O      := $(O)/fuzz
FUZZ_CLANG  ?= clang
FUZZ_AFLCC  ?= afl-clang-fast
FUZZ_LIST   := $(shell sed -e 's/\#.*//' fuzz/targets 2>/dev/null)
FUZZ_ALL    := $(FUZZ_LIST) empty
FUZZ_COMMON := input geom rig devtrack
FUZZ_MUT    := mutate mutator_libfuzzer
FUZZ_HDRS   := $(wildcard fuzz/*.h) $(HDRS) fuzz/coverage-ignore.txt
FUZZ_IGNORE := $(CURDIR)/fuzz/coverage-ignore.txt

# The libFuzzer flavours trace no comparison in the engine (base/, hw/,
# ref/: ENGINE_CFLAGS in the Makefile).  Its comparisons are of the
# engine's own state (B+tree keys, cache indexes, bitmap words), millions
# an input: traced, they were 40% of a plain build's time, and libFuzzer
# turns them into nothing but the table of recent compares its generic
# mutations draw from, which our mutator rarely calls.  The input's
# decoding, the targets and the checker stay traced; edge coverage of
# the engine is unchanged.  Nor is an indirect call in the engine traced
# (its B+tree's store and its devices are called through pointers, tens
# of thousands of times an input): libFuzzer hashes each caller-callee
# pair into its value profile, which only -use_value_profile=1 reads and
# no run here sets: 2% of a plain build's instructions (and more of its
# time: the hash divides) for nothing.  build.sh leaves OSS-Fuzz's
# builds traced there, since ClusterFuzz turns the value profile on in
# some runs.  The planted-bug catch stage (fuzz/selftest.sh --catch) runs
# this configuration.
FUZZ_ENG_CF := -fno-sanitize-coverage=trace-cmp,indirect-calls
# A change to these rules or to the ignore list rebuilds every flavour.
FUZZ_LIBDEP := "$(FUZZ_IGNORE) $(CURDIR)/fuzz/fuzz.mk"

FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_LF_CF  := -O1 -fno-omit-frame-pointer -gline-tables-only $(FUZZ_SAN) \
               -fsanitize=fuzzer-no-link \
               -fsanitize-coverage-ignorelist=$(FUZZ_IGNORE) \
               -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZ_AFL_CF := -O2 -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZ_AFLENV := AFL_QUIET=1 AFL_LLVM_DENYLIST=$(FUZZ_IGNORE)

FUZZ_LFP_CF := -O2 -gline-tables-only -fsanitize=fuzzer-no-link \
               -fsanitize-coverage-ignorelist=$(FUZZ_IGNORE) \
               -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION

FUZZ_LF_BIN := $(FUZZ_ALL:%=$(FUZZ_O)/libfuzzer/%)
FUZZ_LFP_BIN := $(FUZZ_ALL:%=$(FUZZ_O)/libfuzzer-plain/%)
FUZZ_PL_LIST := diff crash zoned
FUZZ_PL_CF  := $(FUZZ_LFP_CF) -DFSO_PLANTED
FUZZ_PL_BIN := $(FUZZ_PL_LIST:%=$(FUZZ_O)/planted/%)
FUZZ_AFL_BIN := $(FUZZ_ALL:%=$(FUZZ_O)/afl/%) $(FUZZ_LIST:%=$(FUZZ_O)/afl/%.cmplog)
FUZZ_REPLAY := $(FUZZ_ALL:%=$(FUZZ_O)/replay/%)

.PHONY: fuzz fuzz-libfuzzer fuzz-afl fuzz-replay fuzz-bench fuzz-libs \
	fuzz-libs-plain fuzz-planted fuzz-libs-planted
fuzz: fuzz-libfuzzer fuzz-afl fuzz-replay
fuzz-bench: fuzz fuzz-libfuzzer-plain
fuzz-libfuzzer: $(FUZZ_LF_BIN)
fuzz-libfuzzer-plain: $(FUZZ_LFP_BIN)
fuzz-afl: $(FUZZ_AFL_BIN) $(FUZZ_O)/afl/mutator.so
fuzz-replay: $(FUZZ_REPLAY)
fuzz-planted: $(FUZZ_PL_BIN)

# The library, once per flavour.  The sub-make decides what is stale.
fuzz-libs:
	$(Q)$(MAKE) -s --no-print-directory EXTRA_DEPS=$(FUZZ_LIBDEP) O=$(FUZZ_O)/lf/lib SAN= CC=$(FUZZ_CLANG) \
		EXTRA_CFLAGS="$(FUZZ_LF_CF)" ENGINE_CFLAGS="$(FUZZ_ENG_CF)" $(FUZZ_O)/lf/lib/libfsoracle.a
	$(Q)$(FUZZ_AFLENV) $(MAKE) -s --no-print-directory EXTRA_DEPS=$(FUZZ_LIBDEP) O=$(FUZZ_O)/afl/lib SAN= \
		CC=$(FUZZ_AFLCC) EXTRA_CFLAGS="$(FUZZ_AFL_CF)" \
		$(FUZZ_O)/afl/lib/libfsoracle.a
	$(Q)$(FUZZ_AFLENV) AFL_LLVM_CMPLOG=1 $(MAKE) -s --no-print-directory EXTRA_DEPS=$(FUZZ_LIBDEP) \
		O=$(FUZZ_O)/afl-cmplog/lib SAN= CC=$(FUZZ_AFLCC) \
		EXTRA_CFLAGS="$(FUZZ_AFL_CF)" $(FUZZ_O)/afl-cmplog/lib/libfsoracle.a
$(FUZZ_O)/lf/lib/libfsoracle.a $(FUZZ_O)/afl/lib/libfsoracle.a \
$(FUZZ_O)/afl-cmplog/lib/libfsoracle.a: fuzz-libs ;
fuzz-libs-plain:
	$(Q)$(MAKE) -s --no-print-directory EXTRA_DEPS=$(FUZZ_LIBDEP) O=$(FUZZ_O)/lfp/lib SAN= \
		CC=$(FUZZ_CLANG) EXTRA_CFLAGS="$(FUZZ_LFP_CF)" \
		ENGINE_CFLAGS="$(FUZZ_ENG_CF)" \
		$(FUZZ_O)/lfp/lib/libfsoracle.a
$(FUZZ_O)/lfp/lib/libfsoracle.a: fuzz-libs-plain ;
fuzz-libs-planted:
	$(Q)$(MAKE) -s --no-print-directory EXTRA_DEPS=$(FUZZ_LIBDEP) O=$(FUZZ_O)/lfpl/lib SAN= \
		CC=$(FUZZ_CLANG) EXTRA_CFLAGS="$(FUZZ_PL_CF)" \
		ENGINE_CFLAGS="$(FUZZ_ENG_CF)" \
		$(FUZZ_O)/lfpl/lib/libfsoracle.a
$(FUZZ_O)/lfpl/lib/libfsoracle.a: fuzz-libs-planted ;

# libFuzzer
$(FUZZ_O)/lf/obj/%.o: fuzz/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $< (libFuzzer)")
	$(Q)$(FUZZ_CLANG) $(BASE) $(FUZZ_LF_CF) -c $< -o $@
$(FUZZ_O)/libfuzzer/empty: $(FUZZ_O)/lf/obj/empty.o $(FUZZ_COMMON:%=$(FUZZ_O)/lf/obj/%.o) \
		$(FUZZ_O)/lf/lib/libfsoracle.a
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(FUZZ_CLANG) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $(filter %.o %.a,$^) $(LIBS)
$(FUZZ_O)/libfuzzer/%: $(FUZZ_O)/lf/obj/%.o $(FUZZ_COMMON:%=$(FUZZ_O)/lf/obj/%.o) \
		$(FUZZ_MUT:%=$(FUZZ_O)/lf/obj/%.o) $(FUZZ_O)/lf/lib/libfsoracle.a
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(FUZZ_CLANG) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $(filter %.o %.a,$^) $(LIBS)

# libFuzzer without sanitizers (benchmarks: the engine's own cost)
$(FUZZ_O)/lfp/obj/%.o: fuzz/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $< (libFuzzer, no sanitizers)")
	$(Q)$(FUZZ_CLANG) $(BASE) $(FUZZ_LFP_CF) -c $< -o $@
$(FUZZ_O)/libfuzzer-plain/empty: $(FUZZ_O)/lfp/obj/empty.o \
		$(FUZZ_COMMON:%=$(FUZZ_O)/lfp/obj/%.o) $(FUZZ_O)/lfp/lib/libfsoracle.a
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(FUZZ_CLANG) -fsanitize=fuzzer -o $@ $(filter %.o %.a,$^) $(LIBS)
$(FUZZ_O)/libfuzzer-plain/%: $(FUZZ_O)/lfp/obj/%.o \
		$(FUZZ_COMMON:%=$(FUZZ_O)/lfp/obj/%.o) \
		$(FUZZ_MUT:%=$(FUZZ_O)/lfp/obj/%.o) $(FUZZ_O)/lfp/lib/libfsoracle.a
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(FUZZ_CLANG) -fsanitize=fuzzer -o $@ $(filter %.o %.a,$^) $(LIBS)

# libFuzzer with one planted bug chosen at run time (fuzz/plant.h)
$(FUZZ_O)/lfpl/obj/%.o: fuzz/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $< (libFuzzer, planted bugs, no sanitizers)")
	$(Q)$(FUZZ_CLANG) $(BASE) $(FUZZ_PL_CF) -c $< -o $@
$(FUZZ_O)/planted/%: $(FUZZ_O)/lfpl/obj/%.o \
		$(FUZZ_COMMON:%=$(FUZZ_O)/lfpl/obj/%.o) $(FUZZ_O)/lfpl/obj/plant.o \
		$(FUZZ_MUT:%=$(FUZZ_O)/lfpl/obj/%.o) $(FUZZ_O)/lfpl/lib/libfsoracle.a
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(FUZZ_CLANG) -fsanitize=fuzzer -o $@ $(filter %.o %.a,$^) $(LIBS)

# AFL++: persistent-mode driver, plain and CMPLOG
$(FUZZ_O)/afl/obj/%.o: fuzz/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $< (AFL++)")
	$(Q)$(FUZZ_AFLENV) $(FUZZ_AFLCC) $(BASE) $(FUZZ_AFL_CF) -c $< -o $@
$(FUZZ_O)/afl-cmplog/obj/%.o: fuzz/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $< (AFL++ CMPLOG)")
	$(Q)$(FUZZ_AFLENV) AFL_LLVM_CMPLOG=1 $(FUZZ_AFLCC) $(BASE) $(FUZZ_AFL_CF) \
		-c $< -o $@
$(FUZZ_O)/afl/%: $(FUZZ_O)/afl/obj/%.o $(FUZZ_COMMON:%=$(FUZZ_O)/afl/obj/%.o) \
		$(FUZZ_O)/afl/obj/afl_driver.o $(FUZZ_O)/afl/lib/libfsoracle.a
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(FUZZ_AFLENV) $(FUZZ_AFLCC) -o $@ $(filter %.o %.a,$^) $(LIBS)
$(FUZZ_O)/afl/%.cmplog: $(FUZZ_O)/afl-cmplog/obj/%.o \
		$(FUZZ_COMMON:%=$(FUZZ_O)/afl-cmplog/obj/%.o) \
		$(FUZZ_O)/afl-cmplog/obj/afl_driver.o \
		$(FUZZ_O)/afl-cmplog/lib/libfsoracle.a
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(FUZZ_AFLENV) AFL_LLVM_CMPLOG=1 $(FUZZ_AFLCC) -o $@ \
		$(filter %.o %.a,$^) $(LIBS)
$(FUZZ_O)/afl/mutator.so: fuzz/mutate.c fuzz/mutator_afl.c harness/op.c \
		harness/binary.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(BASE) -O2 -fPIC -shared -o $@ $(filter %.c,$^)

# Replay programs: the default compiler and the release library.
$(FUZZ_O)/replay/obj/%.o: fuzz/%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $< (replay)")
	$(Q)$(CC) $(CFLAGS_ALL) -c $< -o $@
$(FUZZ_O)/replay/%: $(FUZZ_O)/replay/obj/%.o \
		$(FUZZ_COMMON:%=$(FUZZ_O)/replay/obj/%.o) \
		$(FUZZ_O)/replay/obj/replay.o $(O)/libfsoracle.a
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(filter %.o %.a,$^) $(LIBS)

# Objects are kept (make would delete them as intermediates).
FUZZ_OBJS := $(FUZZ_ALL) $(FUZZ_COMMON) $(FUZZ_MUT) afl_driver replay plant
.SECONDARY: $(foreach d,lf lfp lfpl afl afl-cmplog replay,$(FUZZ_OBJS:%=$(FUZZ_O)/$(d)/obj/%.o))
