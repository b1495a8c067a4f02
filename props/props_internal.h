/*
 * props_internal.h - what the files of the property engine share and
 * nobody else sees: the pool and its entries, the trial handle, the
 * growing Bloom filter, the isolated property call, the shrinker and the
 * seed database.
 *
 *   pool.c      the trial handle: drawing entries, spans, notes, bytes
 *   draw.c      built-in generators and types
 *   bloom.c     duplicate detection
 *   isolate.c   calling the property in process or in a child
 *   shrink.c    integrated shrinking on the pool
 *   run.c       the run: trials, hooks, reports, counterexamples
 *   seeddb.c    failing seeds saved between runs
 *   machine.c   state-machine testing
 *   opgen.c     op sequences; diff.c the differential property
 */
#ifndef FSORACLE_PROPS_INTERNAL_H
#define FSORACLE_PROPS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "harness/rng.h"
#include "props/props.h"

/* One request's record: the value the generator got and its width. */
struct props_entry {
	uint64_t v;
	uint8_t w;
};

struct props_pool {
	struct props_entry *e;
	size_t n, cap;
};

/* A span of entries [start, end) at a nesting depth (0 = outermost). */
struct props_span {
	uint32_t start, end;
	uint32_t depth;
};

/* Where a trial's entries come from. */
enum props_src {
	SRC_RNG,    /* search: fresh random values, recorded              */
	SRC_POOL,   /* shrink or replay: given entries, zeros past them    */
	SRC_BYTES,  /* fuzz: ceil(width/8) little-endian bytes per entry   */
};

#define PROPS_SPAN_STACK 64

struct props_trial {
	const struct props_cfg *cfg;
	enum props_src src;
	struct rng rng;
	const struct props_entry *in;   /* SRC_POOL                       */
	size_t nin;
	const uint8_t *bytes;           /* SRC_BYTES                      */
	size_t nbytes, bpos;
	size_t max_entries;
	int overflow;                   /* hit max_entries: zeros since   */

	struct props_pool rec;          /* what was read, in order        */
	struct props_span *spans;       /* in the order they began        */
	size_t nspans, capspans;
	uint32_t stack[PROPS_SPAN_STACK];
	uint32_t depth;                 /* open spans                     */
	int oom;

	unsigned nargs;
	void *args[PROPS_MAX_ARGS];
	size_t argstart[PROPS_MAX_ARGS + 1]; /* entry ranges per argument */

	char *notes;                    /* props_note lines               */
	size_t nnotes, capnotes;
};

/* ---- pool.c ---- */

void trial_init(struct props_trial *t, const struct props_cfg *cfg,
		unsigned nargs);
/* Drop what the last generation made (args stay: free them first). */
void trial_reset(struct props_trial *t);
void trial_destroy(struct props_trial *t);
void trial_src_rng(struct props_trial *t, uint64_t seed);
void trial_src_pool(struct props_trial *t, const struct props_entry *e,
		    size_t n);
void trial_src_bytes(struct props_trial *t, const uint8_t *b, size_t n);
/*
 * One request: `width` bits (0..64), the value at most `limit`.  In
 * search mode a generator may suggest the value (`want`, NULL for a
 * random one): that is how boundary bias stays a matter of generation
 * and never of the pool's meaning.
 */
uint64_t props_draw(struct props_trial *t, unsigned width, uint64_t limit,
		    const uint64_t *want);
/* A uniform random number for generation policy in search mode (0 in
 * the other modes; never recorded). */
uint64_t props_policy(struct props_trial *t, uint64_t n);
int props_searching(const struct props_trial *t);
/* Close spans left open by a generator that stopped early. */
void trial_close_spans(struct props_trial *t, uint32_t depth);

/* Generate every argument.  PROPS_PASS, PROPS_SKIP or PROPS_ERROR
 * (nothing allocated then). */
int trial_generate(struct props_trial *t);
void trial_free_args(struct props_trial *t);
void trial_clear_notes(struct props_trial *t);

int pool_push(struct props_pool *p, struct props_entry e);
int pool_copy(struct props_pool *dst, const struct props_entry *e, size_t n);
void pool_free(struct props_pool *p);
/* Shortlex: fewer entries first, then the smaller values. <0, 0, >0. */
int pool_cmp(const struct props_entry *a, size_t na,
	     const struct props_entry *b, size_t nb);
uint64_t pool_hash(const struct props_entry *e, size_t n);
/* The bytes a fuzzer would supply for this pool; malloc'd. */
uint8_t *pool_bytes(const struct props_entry *e, size_t n, size_t *len);

/* ---- bloom.c ---- */

struct bloom_layer;
struct bloom {
	struct bloom_layer *layers;
	unsigned nlayers;
};
void bloom_init(struct bloom *b);
void bloom_free(struct bloom *b);
int bloom_has(const struct bloom *b, uint64_t h);
/* 0 or -ENOMEM (the hash is then simply not remembered). */
int bloom_add(struct bloom *b, uint64_t h);

/* ---- isolate.c ---- */

/* Call the property on t's args: in process, or forked when cfg asks.
 * Fills t->notes.  final: a replay whose output the user should see. */
int isolate_call(struct props_trial *t, const struct props_info *info,
		 int final);
/* The property call itself (in this process). */
int call_prop(struct props_trial *t);

/* ---- shrink.c ---- */

struct shrink_ctx {
	struct props_trial *t;          /* scratch trial for candidates  */
	struct bloom *bloom;
	struct props_report *rep;
	const struct props_info *base;  /* run seed, trial seed, name    */
	struct props_pool best;         /* the smallest failing pool     */
	struct props_span *spans;       /* best's spans                  */
	size_t nspans;
	uint32_t attempts, shrinks;
	int halted, error;
	uint64_t t0_ns;
};
/* Shrink ctx->best (a failing pool) in place.  0 or -ENOMEM. */
int shrink_run(struct shrink_ctx *c);

/* ---- seeddb.c ---- */

/* Seeds saved for a property (malloc'd array, *n of them).  0 or -errno;
 * a missing file is no seeds. */
int seeddb_load(const char *dir, const char *name, uint64_t **seeds,
		size_t *n);
/* Replace the saved seeds.  0 or -errno.  n == 0 removes the file. */
int seeddb_store(const char *dir, const char *name, const uint64_t *seeds,
		 size_t n);

/* ---- time ---- */
uint64_t props_now_ns(void);

#endif
