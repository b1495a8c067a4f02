/*
 * fuzz.h - what every fuzz target shares: the input layout, the failure
 * path, and the hooks the drivers (libFuzzer, the AFL++ driver, the
 * replay program) call.
 *
 * Every target reads the same shape of input:
 *
 *   +---------------------+------------------------------------------+
 *   | header: 16 bytes    | op records: 16 bytes each (binary.h)     |
 *   | geometry, mode,     | kind 0 ends the sequence                 |
 *   | corruption choices  |                                          |
 *   +---------------------+------------------------------------------+
 *
 * An input shorter than the header is zero-padded, and every header byte
 * value means something, so every byte string is a valid input and
 * all-zero bytes are the smallest instance (the least geometry, no
 * corruption, no ops).  One header record and op records keep the
 * structure-aware mutator (mutate.h) target-independent: it tweaks the
 * header bytes and inserts, deletes, duplicates, splices and tweaks ops.
 */
#ifndef FSORACLE_FUZZ_FUZZ_H
#define FSORACLE_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/binary.h"

#define FUZZ_HDR_LEN OP_BIN_RECORD

/* An input split into its header (zero-padded copy) and op bytes. */
struct fuzz_input {
	uint8_t hdr[FUZZ_HDR_LEN];
	const uint8_t *ops;
	size_t ops_len;
};

void fuzz_split(const uint8_t *data, size_t size, struct fuzz_input *in);

/* Report a finding on stderr and abort(): what the fuzzer calls a crash. */
_Noreturn void fuzz_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * Under ASan, with FSO_HEAP_LOG=FILE in the environment: a thread
 * appends "SECONDS BYTES" to FILE every FSO_HEAP_EVERY seconds (10),
 * BYTES being what the program holds allocated (ASan's count of live
 * blocks: not its quarantine of freed ones, nor the free memory its
 * allocator keeps, which are most of an ASan process's rss and grow with
 * the mix of sizes).  fuzz/rss.sh judges an ASan run by it: a leak or
 * an unbounded cache grows it.  Nothing in other builds, or without
 * the variable.  Every target's LLVMFuzzerInitialize calls it.
 */
void fuzz_heap_log_start(void);

/* The libFuzzer entry points every target defines. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Every target also says what an input means, for people and for triage:
 * a `#! fsoracle` header line a text op log can start with (empty when
 * the input is not an op log on a fresh filesystem), comment lines,
 * `#op LINE` lines (text ops the header implies, which go before the
 * decoded ones), and the `fsoracle decode` options that turn its op
 * bytes (the input from byte FUZZ_HDR_LEN on) into text.  0, or -errno.
 */
int fuzz_describe(const uint8_t *data, size_t size, FILE *out);

#endif
