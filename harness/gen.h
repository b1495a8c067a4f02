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
 * Swarm rounds (cfg.swarm; the soak's default).  Each round draws its
 * own feature set, as swarm testing does: one tuned mix reaches only the
 * states that mix builds, while leaving kinds out lets rare states pile
 * up (a file only ever appended to grows a deep extent tree, a round
 * without fsync piles up unflushed state before a crash).  A round draws
 *
 *   - kinds: every kind but pwrite is left out with probability 1/2; the
 *     rest get weights in [1, 2w] (w the default weight, 20 for kinds
 *     whose default is 0, such as chattr), so every kind the op
 *     language has is reachable;
 *   - sizes: the largest file log-uniform in [16k, max_file] (max_file
 *     given, else 16 MiB: large enough for page-cache trees of three
 *     levels and B+trees of height 3 and more at small fan-out), the
 *     longest op log-uniform in [4k, max_op] (given, else 1 MiB);
 *   - chattr attributes: a random subset of those the filesystem can
 *     have (cfg.attrs: +j, +c, and +r with a realtime device, +o with
 *     reflink), and the share of new files made realtime (0 to 4 in 4);
 *   - mkfs and mount options (gen_round.mkfs, .mount) for the caller to
 *     apply at the round's reset (check_new_round): data=journal or
 *     writeback, delalloc, compress=zstd, a B+tree fan-out of 4 to 8,
 *     each now and then; the options the user gave win over them.
 *
 * gen_round_describe() says what a round drew, for the failure log.
 * Without swarm, every round is cfg's fixed mix.
 *
 * The sequence depends only on the seed and the config: the same seed
 * gives the same ops (and rounds) on every machine, whatever the targets
 * do.
 */
#ifndef FSORACLE_HARNESS_GEN_H
#define FSORACLE_HARNESS_GEN_H

#include <stdbool.h>
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
	int swarm;                         /* each round draws its own mix  */
	uint32_t attrs;                    /* swarm: OP_ATTR_* the filesystem
					      can take (0: +j +c, with +r
					      when realtime)                */
	int swarm_compress;                /* swarm may mount compress=zstd */
	const char *mkfs, *mount;          /* the options given: a round
					      draws none they already set
					      (NULL: none)                 */
};

/* What a round uses (without swarm: cfg's mix). */
struct gen_round {
	unsigned number;                   /* 1 for the first round         */
	uint32_t weight[OP_KIND_COUNT];
	uint64_t max_file, max_op;
	uint32_t attrs;                    /* OP_ATTR_* chattr sets or clears */
	unsigned rt_share;                 /* new files realtime, of 4      */
	char mkfs[64];                     /* options for this round's mkfs */
	char mount[96];                    /* ... and mount ("" none)       */
};

struct gen {
	struct gen_cfg cfg;
	struct rng rng;
	uint64_t size[OP_MAX_FILES];       /* the generator's size estimate */
	unsigned cur;                      /* the file it is working on     */
	uint32_t fresh;                    /* files new and empty (bits)    */
	struct op pending;                 /* the next op, when kind != 0   */
	struct gen_round round;            /* this round's mix              */
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
/* The next round: sizes forgotten, and with swarm a new draw (g->round).
 * gen_init starts round 1 itself. */
void gen_new_round(struct gen *g);
/*
 * Round n (1 for the first) as gen_new_round starts it: a round's ops and
 * draw depend on cfg and n alone, whatever rounds ran before (its stream
 * is seeded from the seed and n), so rounds can run in any order or side
 * by side.
 */
void gen_goto_round(struct gen *g, unsigned n);
/* Whether this round may generate ops of kind k. */
bool gen_round_makes(const struct gen *g, enum op_kind k);
/* One line: what the round drew ("swarm round 3: kinds off: ...; ..."). */
void gen_round_describe(const struct gen *g, char *buf, size_t len);

/* Whether the options (comma-separated mkfs or mount options, or NULL)
 * set key: "name=" matches "name=anything", "name" itself. */
bool gen_opts_given(const char *opts, const char *key);

/*
 * Parse "pwrite=300,pread=100,crash=0" into cfg->weight (starting from the
 * defaults).  Kind names are the text words.  0 or -EINVAL with err.
 */
int gen_parse_weights(struct gen_cfg *cfg, const char *s, char *err,
		      size_t errlen);

#endif
