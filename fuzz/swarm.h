/*
 * swarm.h - swarm testing for fuzz inputs: one header byte draws the
 * input's feature set, as `fsoracle run` draws one per round (gen.h).
 *
 * Header byte FUZZ_SWARM_BYTE (the last; the diff and crash targets
 * leave it to this) is a seed:
 *
 *   0      no draw: every op kind, the preset's mount options, no chattr
 *          before the ops (what the seed corpora are)
 *   1..255 a draw: the op kinds the mutator makes for this input (every
 *          kind but pwrite and crash left out with chance 1/2), mount
 *          options added to the preset's (data=journal or writeback,
 *          delalloc, compress=zstd, each now and then), and chattr
 *          attributes every file takes before the ops (+j, +c, +o, +r,
 *          each with chance 1/4, where the preset allows it)
 *
 * The kinds shape what the mutator inserts and what a kind tweak picks
 * (mutate.c), so an input's ops stay exactly what runs and a finding's
 * text log replays as is; the mount options and the chattr ops are the
 * rig's (rig.c), and a finding's `--describe` shows them (the header's
 * mount=, `#op` lines).  Everything is a pure function of the byte.
 */
#ifndef FSORACLE_FUZZ_SWARM_H
#define FSORACLE_FUZZ_SWARM_H

#include <stdint.h>
#include <stdio.h>

#include "fuzz/fuzz.h"
#include "harness/op.h"

#define FUZZ_SWARM_BYTE (FUZZ_HDR_LEN - 1)

struct fuzz_swarm {
	uint64_t kinds;       /* bit k: the mutator may make kind k         */
	uint32_t attrs;       /* OP_ATTR_* every file takes first           */
	char mount[64];       /* mount options before the preset's, or ""   */
};

static inline uint64_t fuzz_swarm_mix(uint64_t z)
{
	z += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The draw of byte v; compress: the preset may mount compress=zstd. */
static inline void fuzz_swarm_draw(uint8_t v, int compress,
				   struct fuzz_swarm *s)
{
	uint64_t all = ((1ull << OP_KIND_COUNT) - 1) & ~1ull;
	uint64_t x = fuzz_swarm_mix(v), y = fuzz_swarm_mix(x);
	unsigned data;

	s->kinds = all;
	s->attrs = 0;
	s->mount[0] = 0;
	if (!v)
		return;
	s->kinds = (x & all) | (1ull << OP_PWRITE) | (1ull << OP_CRASH);
	for (unsigned b = 0; b < 4; b++)
		if (((y >> (2 * b)) & 3) == 0)
			s->attrs |= 1u << b;
	data = (unsigned)((y >> 8) % 10);
	snprintf(s->mount, sizeof(s->mount), "%s%s%s",
		 data < 2 ? "data=journal," : data == 2 ? "data=writeback," : "",
		 (y >> 12) & 1 ? "delalloc," : "",
		 compress && ((y >> 13) & 7) == 0 ? "compress=zstd," : "");
	for (char *p = s->mount; *p; p++)
		if (p[1] == 0 && *p == ',')
			*p = 0;
}

#endif
