/*
 * geom.c - header bytes -> filesystem preset and op geometry (geom.h).
 */
#include "fuzz/geom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ref/ref.h"

static const uint32_t journal_tab[3] = { 64, 128, 256 };
static const uint32_t maxext_tab[4] = { 0, 1, 2, 16 };
static const uint32_t cache_tab[4] = { 0, 2, 8, 64 };
static const uint32_t rtext_tab[4] = { 0, 1, 3, 4 };
static const uint32_t pcache_tab[4] = { 0, 8, 16, 64 };
static const uint32_t pcshift_tab[4] = { 0, 1, 2, 3 };

unsigned geom_presets(enum geom_kind kind)
{
	return kind == GEOM_CRASH ? 2 * GEOM_PRESETS : GEOM_PRESETS;
}

static void make_preset(enum geom_kind kind, unsigned preset,
			struct geom_preset *p)
{
	unsigned i = preset % GEOM_PRESETS;
	int pmem = kind == GEOM_CRASH && preset % geom_presets(kind) >= GEOM_PRESETS;
	uint64_t file_blocks, data, meta, bytes, rtextents = 0;
	uint32_t ipb;
	size_t n;

	memset(p, 0, sizeof(*p));
	p->bs = 512u << (i & 3);
	/* persistent memory: 1024 for 512 (ref.h's REF_PMEM_MIN_BLOCKSIZE) */
	if (pmem && p->bs < REF_PMEM_MIN_BLOCKSIZE)
		p->bs = REF_PMEM_MIN_BLOCKSIZE;
	p->maxrecs = 4 + (i >> 2) % 13;
	p->journal = journal_tab[i % 3];
	p->maxext = maxext_tab[(i / 5) % 4];
	p->cache = cache_tab[(i / 7) % 4];
	p->pcache = pcache_tab[(i / 3) % 4];
	p->pcshift = pcshift_tab[(i / 17) % 4];
	if (kind == GEOM_DIFF) {
		p->rtext = rtext_tab[(i / 11) % 4];
		if (p->maxext && p->rtext > p->maxext)
			p->rtext = p->maxext;
	}
	/* the second run of presets without a realtime device: reflink */
	p->reflink = i / 11 == 4;

	/* Data: 3x every file at its largest; then the metadata regions. */
	file_blocks = (GEOM_MAX_FILE + p->bs - 1) / p->bs;
	data = 3 * file_blocks * GEOM_MAX_FILES + 64;
	ipb = p->bs / 256 - 1;
	if (!ipb)
		ipb = 1;
	if (p->rtext) {
		/* The same for rt extents: each file may end in a partial
		 * one, and a freed one is not reusable before the commit. */
		uint64_t rtx_bytes = (uint64_t)p->rtext * p->bs;

		rtextents = 3 * GEOM_MAX_FILES *
			    ((GEOM_MAX_FILE + rtx_bytes - 1) / rtx_bytes + 1) + 64;
		p->rt_bytes = (rtextents * rtx_bytes + 4095) / 4096 * 4096;
	}
	/* Superblocks, journal, inode table, slack, and the rt bitmap at
	 * fewer than bs * 4 extents a block (its header is smaller). */
	meta = 2 + p->journal + (GEOM_INODES + ipb - 1) / ipb + 16 +
	       (rtextents + 4ull * p->bs - 1) / (4ull * p->bs);
	bytes = (data + meta) * p->bs;
	p->dev_bytes = (bytes + 4095) / 4096 * 4096;
	p->meta_bytes = (meta * p->bs + 4095) / 4096 * 4096;

	snprintf(p->dev, sizeof(p->dev), "%smem:%lluk",
		 kind != GEOM_CRASH ? "" : pmem ? "crash[atomic=8]:" : "crash:",
		 (unsigned long long)(p->dev_bytes >> 10));
#ifndef FSO_NO_EXTERNAL_LIBS
	/* the real persist path (hw/pmem.c), one file per process */
	if (pmem) {
		const char *dir = getenv("TMPDIR");

		if (!dir || !dir[0])
			dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(p->dev, sizeof(p->dev), "crash:pmem:%.120s/fso-crash-"
			 "%ld-%u.img,size=%lluk", dir, (long)getpid(), i,
			 (unsigned long long)(p->dev_bytes >> 10));
	}
#endif
	n = (size_t)snprintf(p->mkfs, sizeof(p->mkfs),
			     "bs=%u,maxrecs=%u,inodes=%u,journal=%u", p->bs,
			     p->maxrecs, GEOM_INODES, p->journal);
	if (p->maxext)
		n += (size_t)snprintf(p->mkfs + n, sizeof(p->mkfs) - n,
				      ",maxext=%u", p->maxext);
	if (p->reflink)
		n += (size_t)snprintf(p->mkfs + n, sizeof(p->mkfs) - n,
				      ",reflink=1");
	if (p->rtext) {
		snprintf(p->rtdev, sizeof(p->rtdev), "mem:%lluk",
			 (unsigned long long)(p->rt_bytes >> 10));
		snprintf(p->mkfs + n, sizeof(p->mkfs) - n, ",rtextsize=%u",
			 p->rtext * p->bs);
	}
	n = 0;
	if (p->cache)
		n = (size_t)snprintf(p->mount, sizeof(p->mount), "cache=%u,",
				     p->cache);
	/* half the presets delay allocation (seed path (e)); files flagged
	 * +c by the ops compress at writeback in either half */
	if ((i / 13) % 2)
		n += (size_t)snprintf(p->mount + n, sizeof(p->mount) - n,
				      "delalloc,");
	/* a page cache of a few pages evicts (shadows, refaults, writeback
	 * under pressure) and radix nodes of 2..8 slots make trees of 3 to
	 * 7 levels from files of a few pages (seed path (b)) */
	if (p->pcache)
		n += (size_t)snprintf(p->mount + n, sizeof(p->mount) - n,
				      "pagecache=%u,", p->pcache);
	if (p->pcshift)
		n += (size_t)snprintf(p->mount + n, sizeof(p->mount) - n,
				      "pagecache_shift=%u,", p->pcshift);
	if (n)
		p->mount[n - 1] = 0;
	if (kind == GEOM_CRASH)
		snprintf(p->targets, sizeof(p->targets), "engine:%s,model", p->dev);
	else
		snprintf(p->targets, sizeof(p->targets), "engine:%s,naive:%s,model",
			 p->dev, p->dev);
}

/*
 * geom_preset's answer, made once a process for each preset: every input
 * asks for its preset, and the dozen snprintf calls of making one were a
 * hundredth of a quick input.  A preset depends on kind, preset and the
 * process alone (the pmem file names the pid): rig_init_all makes every
 * one before AFL++'s fork server starts, so a child names the file its
 * rig's device is.
 */
void geom_preset(enum geom_kind kind, unsigned preset, struct geom_preset *p)
{
	/* untouched pages of these cost nothing: one kind is used a process */
	static struct geom_preset memo[2][2 * GEOM_PRESETS];
	static bool made[2][2 * GEOM_PRESETS];
	unsigned k = kind == GEOM_CRASH;

	preset %= geom_presets(kind);
	if (!made[k][preset]) {
		make_preset(kind, preset, &memo[k][preset]);
		made[k][preset] = true;
	}
	*p = memo[k][preset];
}

void geom_from_header(enum geom_kind kind, const uint8_t *h,
		      struct fuzz_geom *g)
{
	memset(g, 0, sizeof(*g));
	g->preset = h[0] % GEOM_PRESETS;
	if (kind == GEOM_CRASH && (h[2] & 1))
		g->preset += GEOM_PRESETS;
	geom_preset(kind, g->preset, &g->p);
	g->op.nfiles = 1 + (h[1] & 3);
	g->op.max_file = (uint64_t)4096 << ((h[GEOM_MAXFILE_BYTE] >>
					     GEOM_MAXFILE_SHIFT) &
					    GEOM_MAXFILE_MASK);
	if (kind == GEOM_DIFF) {
		g->naive = h[2] & REF_PATHS_ALL;
		g->fallback = h[3] & REF_PATHS_ALL & ~g->naive;
	}
	op_geom_normalize(&g->op);
	fuzz_swarm_draw(h[FUZZ_SWARM_BYTE],
			!g->p.reflink && ref_compress_available(), &g->swarm);
	if (!g->p.rtext)
		g->swarm.attrs &= ~OP_ATTR_REALTIME;
	if (!g->p.reflink)
		g->swarm.attrs &= ~OP_ATTR_ALWAYS_COW;
	else
		g->swarm.attrs &= ~OP_ATTR_COMPRESS;
}

unsigned geom_prefix_ops(const struct fuzz_geom *g,
			 struct op ops[GEOM_PREFIX_MAX])
{
	unsigned n = 0;

	if (g->naive)
		ops[n++] = (struct op){ .kind = OP_NAIVE, .arg = g->naive };
	if (g->fallback)
		ops[n++] = (struct op){ .kind = OP_FALLBACK, .arg = g->fallback };
	for (unsigned f = 0; f < g->op.nfiles && f < GEOM_MAX_FILES; f++)
		for (unsigned b = 0; b < 4; b++)
			if (g->swarm.attrs & (1u << b))
				ops[n++] = (struct op){ .kind = OP_SET_FLAG,
							.file = (uint8_t)f,
							.arg = 1u << b };
	return n;
}

void geom_env(const struct geom_preset *p, struct target_env *env)
{
	memset(env, 0, sizeof(*env));
	env->dev = p->dev;
	env->mkfs = p->mkfs;
	env->mount = p->mount;
	env->rtdev = p->rtdev[0] ? p->rtdev : NULL;
}

void geom_header_line(const struct fuzz_geom *g, const char *targets,
		      char *buf, size_t len)
{
	const char *sw = g->swarm.mount;

	snprintf(buf, len, "#! fsoracle dev=%s%s%s mkfs=%s%s%s%s%s targets=%s",
		 g->p.dev, g->p.rtdev[0] ? " rt=" : "", g->p.rtdev, g->p.mkfs,
		 sw[0] || g->p.mount[0] ? " mount=" : "", sw,
		 sw[0] && g->p.mount[0] ? "," : "", g->p.mount, targets);
}
