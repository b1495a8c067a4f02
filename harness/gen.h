/*
 * gen.h - a seeded fsx-like random op generator.
 *
 * Like fsx it keeps its own idea of each file's size so that most reads
 * land inside the file and collapse/insert/clone get valid ranges, picks
 * kinds by weight, and mixes aligned and unaligned offsets.  Unlike fsx
 * it spreads ops over several files (staying on one for a while), picks
 * lengths log-uniformly (many small ops, some large), and now and then
 * emits an op with raw random values to exercise error paths.
 *
 * With `realtime` (the engines have a realtime device), a file starts
 * out realtime three times in four: while it is new and empty (at the
 * start of a round, after an unlink) the generator sends it `chattr +r`.
 * A chattr picked by weight then truncates its file to 0 first and flips
 * the realtime flag, so it always takes effect (the flag changes only on
 * a file without blocks).  Without `realtime` a chattr sets or clears a
 * random attribute.
 *
 * Now and then it sets the engine's seed-path switches (`naive PATHS`,
 * `fallback PATHS`, weight 3 each by default): random mixes mostly,
 * all or none sometimes, so the engine runs every mix of naive and
 * optimized paths and forced fallbacks against the naive twin and the
 * model, not just all-or-nothing.
 *
 * The sequence depends only on the seed and the config: the same seed
 * gives the same ops on every machine, whatever the targets do.
 */
#ifndef FSORACLE_HARNESS_GEN_H
#define FSORACLE_HARNESS_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "harness/op.h"
#include "harness/rng.h"

/* Zero fields mean the defaults. */
struct gen_cfg {
	uint64_t seed;
	uint32_t nfiles;                   /* 1..8; default 4               */
	uint64_t max_file;                 /* default 256 KiB (fsx -l)      */
	uint64_t max_op;                   /* default 64 KiB (fsx -o)       */
	uint32_t blocksize;                /* alignment unit; default 4096  */
	uint64_t exclude;                  /* kinds never generated (bits)  */
	uint32_t weight[OP_KIND_COUNT];    /* all zero = the default table  */
	int realtime;                      /* new files get chattr +r        */
};

struct gen {
	struct gen_cfg cfg;
	struct rng rng;
	uint64_t size[OP_MAX_FILES];       /* the generator's size estimate */
	unsigned cur;                      /* the file it is working on     */
	uint32_t fresh;                    /* files new and empty (bits)    */
	struct op pending;                 /* the next op, when kind != 0   */
	uint32_t cum[OP_KIND_COUNT];       /* cumulative weights            */
	uint32_t total;
};

/* The default weight of each kind (per mille-ish). */
extern const uint32_t gen_default_weight[OP_KIND_COUNT];

/* Fill defaults, seed.  Returns -EINVAL if every kind is excluded. */
int gen_init(struct gen *g, const struct gen_cfg *cfg);
/* The next op (normalized). */
void gen_next(struct gen *g, struct op *op);
/* Forget the size estimates, all files new (after the targets were reset). */
void gen_reset_sizes(struct gen *g);

/*
 * Parse "pwrite=300,pread=100,crash=0" into cfg->weight (starting from the
 * defaults).  Kind names are the text words.  0 or -EINVAL with err.
 */
int gen_parse_weights(struct gen_cfg *cfg, const char *s, char *err,
		      size_t errlen);

#endif
