# fsoracle - the build.  ./build.sh is the entry point; this file does the
# work.  Every .c under base/ hw/ ref/ harness/ props/ perf/ goes into
# libfsoracle.a, every tests/test_*.c becomes its own test program,
# tools/*.c the fsoracle CLI.
#
#   make                 gcc (or $CC), -O2, into out/
#   make SAN=asan        ASan + UBSan, into out-asan/
#   make SAN=msan        MSan (clang only), into out-msan/
#   make SAN=tsan        ThreadSanitizer (clang), into out-tsan/
#   make check           build and run the unit tests
#   make V=1             show every command
#
# Warnings are errors everywhere.  Sanitizer builds keep -O1 and frame
# pointers so reports are readable.

CC      ?= cc
SAN     ?=
O       ?= out$(if $(SAN),-$(SAN))

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wpointer-arith -Wformat=2 -Wvla \
           -Wno-unused-parameter
BASE    := -std=c11 -D_GNU_SOURCE -g -I. $(WARN)
OPT     := -O2

ifeq ($(SAN),asan)
  OPT    := -O1 -fno-omit-frame-pointer
  SANF   := -fsanitize=address,undefined -fno-sanitize-recover=all
endif
ifeq ($(SAN),msan)
  OPT    := -O1 -fno-omit-frame-pointer
  SANF   := -fsanitize=memory -fsanitize-memory-track-origins \
            -fno-sanitize-recover=all -DFSO_NO_EXTERNAL_LIBS
endif

ifeq ($(SAN),tsan)
  OPT    := -O1 -fno-omit-frame-pointer
  SANF   := -fsanitize=thread
endif

CFLAGS_ALL := $(BASE) $(OPT) $(SANF) $(EXTRA_CFLAGS)
LDFLAGS_ALL := $(SANF) $(EXTRA_LDFLAGS)
LIBS    := -lm $(if $(filter msan,$(SAN)),,-lpmem2 -lzbd -lzstd -ljson-c)

# FUSE (`fsoracle mount`): only the CLI links libfuse3, and only where
# pkg-config finds it and the build may use external libraries; elsewhere
# the subcommand is there and says it is unavailable.
ifeq ($(filter msan,$(SAN))$(findstring FSO_NO_EXTERNAL_LIBS,$(EXTRA_CFLAGS)),)
  FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
  FUSE_LIBS   := $(shell pkg-config --libs fuse3 2>/dev/null)
endif
ifneq ($(FUSE_LIBS),)
  FUSE_CFLAGS += -DFSO_HAVE_FUSE
endif

LIB_SRCS  := $(sort $(wildcard base/*.c hw/*.c ref/*.c harness/*.c props/*.c perf/*.c))
LIB_OBJS  := $(LIB_SRCS:%.c=$(O)/obj/%.o)
TOOL_SRCS := $(sort $(wildcard tools/*.c))
TOOL_OBJS := $(TOOL_SRCS:%.c=$(O)/obj/%.o)
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(O)/tests/%)
HDRS      := $(wildcard base/*.h hw/*.h ref/*.h harness/*.h props/*.h perf/*.h tools/*.h tests/*.h)

.PHONY: all check clean
all: $(O)/libfsoracle.a $(O)/fsoracle $(TEST_BINS)

Q := $(if $(V),,@)

# EXTRA_DEPS: more files every object depends on (the fuzz builds pass
# their coverage ignore list)
$(O)/obj/%.o: %.c $(HDRS) $(EXTRA_DEPS)
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_ALL) -c $< -o $@

$(O)/libfsoracle.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(O)/obj/tools/cmd_mount.o: CFLAGS_ALL += $(FUSE_CFLAGS)

# ENGINE_CFLAGS: more flags for the engine and its devices only (base/,
# hw/, ref/).  The libFuzzer builds leave the engine's comparisons
# untraced there (fuzz/fuzz.mk says why).
$(O)/obj/base/%.o $(O)/obj/hw/%.o $(O)/obj/ref/%.o: CFLAGS_ALL += $(ENGINE_CFLAGS)

$(O)/fsoracle: $(TOOL_OBJS) $(O)/libfsoracle.a
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(TOOL_OBJS) $(O)/libfsoracle.a $(LIBS) $(FUSE_LIBS)

$(O)/tests/%: $(O)/obj/tests/%.o $(O)/obj/tests/test.o $(O)/libfsoracle.a
	@mkdir -p $(dir $@)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $< $(TEST_EXTRA_$*) $(O)/obj/tests/test.o $(O)/libfsoracle.a $(LIBS)

# A test of fuzz code links that code too (fuzz/fuzz.mk builds the rest).
TEST_EXTRA_test_devtrack := $(O)/obj/fuzz/devtrack.o
$(O)/tests/test_devtrack: $(O)/obj/fuzz/devtrack.o
$(O)/obj/fuzz/devtrack.o $(O)/obj/tests/test_devtrack.o: fuzz/devtrack.h

# The program with the planted engine bugs (ref/plant.h), FSO_PLANT=NAME
# choosing one at run time: for showing the soak and the property suites
# find them (ci/planted).  Never part of `all` or build.sh.
.PHONY: planted
planted:
	$(Q)$(MAKE) -s --no-print-directory O=out-planted \
		EXTRA_CFLAGS="$(EXTRA_CFLAGS) -DFSO_PLANTED" out-planted/fsoracle

# Fuzz targets (libFuzzer, AFL++, plain replay) have their own rules.
-include fuzz/fuzz.mk

check: all
	O=$(O) ./ci/unit

clean:
	rm -rf out out-asan out-msan out-tsan
