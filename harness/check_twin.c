/*
 * check_twin.c - what a log header's check= asks of the checker
 * (check_cfg_parse), and the comparison of twin engines' state after
 * every op (check_cfg.twins), apart from check.c's hot paths.
 *
 * Twins are the engine targets of one run (engine, naive, fallback):
 * the same ops through another seed path.  What a reader sees is
 * compared for every target anyway; this compares what only the
 * engines have (target.h's enum target_twin_part), each engine target
 * against the first, so a path that leaves the bytes right and the
 * extents, free space or refcounts wrong is caught where it happened,
 * and by a replay of the log, whose header carries the request.
 *
 * After a crash, a power cut or an uneven ENOSPC the checker copies the
 * first engine's files that were not durable into the others
 * (check.c's adopt_files): their layouts are then the copy's, so until
 * the next reset those files' parts and the filesystem-wide parts (free
 * space, refcounts, the image) are no longer compared; the other files'
 * still are.  The image is compared once more between a crash's
 * recovery and that copy (check_twins_recovered): what each twin
 * recovered from its own device.
 *
 * Twins' extent trees may come apart: the optimized path rewrites a
 * record in place where its naive twin deletes and inserts, and small
 * nodes split and merge at other moments.  Their nodes then take other
 * blocks, and the allocations after them may find their room elsewhere
 * (a COW staging block, the preallocation after it, of another length):
 * nothing a reader sees, nothing wrong.  So once the files' tree blocks
 * have differed while their records (where in each file data lies, and
 * in what state) were the same (check.trees_apart), a difference in a
 * part that says where blocks lie (TWIN_PLACED: free, extents, cowfork,
 * refcount, image) is no finding: from that op (check.twins_apart)
 * until the next reset those parts are compared no more, sizes and
 * block counts still are, and the audit and the verifies judge the
 * rest.  Until such a difference shows, every part is compared.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "harness/check_internal.h"

static int parse_parts(const char *s, size_t len, uint32_t *mask, char *err,
		       size_t errlen)
{
	*mask = 0;
	if (len == 3 && !memcmp(s, "all", 3)) {
		*mask = TWIN_ALL;
		return 0;
	}
	while (len) {
		const char *plus = memchr(s, '+', len);
		size_t n = plus ? (size_t)(plus - s) : len;
		int p;

		for (p = 0; p < TWIN_NPARTS; p++)
			if (strlen(target_twin_names[p]) == n &&
			    !memcmp(target_twin_names[p], s, n))
				break;
		if (p == TWIN_NPARTS) {
			snprintf(err, errlen, "check: unknown twin part '%.*s' "
				 "(stat, free, extents, cowfork, refcount, image, "
				 "all)",
				 (int)(n > 40 ? 40 : n), s);
			return -EINVAL;
		}
		*mask |= 1u << p;
		s += n;
		len -= n;
		if (plus) {
			s++;
			len--;
			if (!len) {
				snprintf(err, errlen, "check: twins= ends with '+'");
				return -EINVAL;
			}
		}
	}
	return 0;
}

int check_cfg_parse(const char *s, struct check_cfg *cfg, char *err,
		    size_t errlen)
{
	while (s && *s) {
		size_t n = strcspn(s, ",");
		uint32_t mask;

		if (n == 4 && !memcmp(s, "each", 4)) {
			cfg->verify_each_op = 1;
			cfg->audit_every = 1;
		} else if (n > 6 && !memcmp(s, "twins=", 6)) {
			if (parse_parts(s + 6, n - 6, &mask, err, errlen))
				return -EINVAL;
			cfg->twins |= mask;
		} else {
			snprintf(err, errlen, "check: unknown word '%.*s' (each, "
				 "twins=PARTS)", (int)(n > 40 ? 40 : n), s);
			return -EINVAL;
		}
		s += n;
		if (*s == ',')
			s++;
	}
	return 0;
}

/* What a part holds, for the report. */
static const char *const part_what[TWIN_NPARTS] = {
	[TWIN_STAT] = "the size or block count", [TWIN_FREE] = "free blocks",
	[TWIN_EXTENTS] = "the data-fork extents", [TWIN_COWFORK] = "the COW fork",
	[TWIN_REFCOUNT] = "the refcount records",
	[TWIN_IMAGE] = "the device images",
};

/* A part of the filesystem, not of one file. */
static int fs_wide_part(int part)
{
	return part == TWIN_FREE || part == TWIN_REFCOUNT || part == TWIN_IMAGE;
}

/* The first engine is the good side of a twin comparison. */
static int twin_fail(struct checker *c, int first, int bad, int part,
		     unsigned f)
{
	int fs_wide = fs_wide_part(part);
	int ref = c->ref, ret;

	c->ref = first;
	ret = check_fail(c, CHECK_TWIN, bad, f, NULL, NULL, 0, 0,
			 "%s%s%s differ between %s and %s (check twins=%s)",
			 part_what[part], fs_wide ? "" : " of ",
			 fs_wide ? "" : op_file_name(&c->log, f),
			 c->t[first]->name, c->t[bad]->name,
			 target_twin_names[part]);
	c->ref = ref;
	return ret;
}

void check_cfg_format(const struct check_cfg *cfg, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	if (cfg->verify_each_op && cfg->audit_every == 1)
		used += (size_t)snprintf(buf, len, "each");
	if (!cfg->twins || used >= len)
		return;
	used += (size_t)snprintf(buf + used, len - used, "%stwins=",
				 used ? "," : "");
	for (int p = 0; p < TWIN_NPARTS && used < len; p++)
		if (cfg->twins & (1u << p))
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 buf[used - 1] == '=' ? "" : "+",
						 target_twin_names[p]);
}

/* The parts in mask, each engine target against the first. */
static int compare_parts(struct checker *c, uint32_t mask)
{
	struct target_twin tw[2];
	int first = -1, ret = 0;

	if (!mask || c->status || c->stalled)
		return c->status;
	c->verifying++;
	for (int i = 0; i < c->n && !ret; i++) {
		struct target *t = c->t[i];
		struct target_twin *mine = &tw[first < 0 ? 0 : 1];

		if (!t->ops->twin)
			continue;
		ret = t->ops->twin(t, mask, mine);
		if (ret) {
			char eb[32];

			ret = check_fail(c, CHECK_ERRNO, i, 0, NULL, NULL, 0, 0,
					 "reading the state of %s failed: %s",
					 t->name,
					 check_errstr(ret, eb, sizeof(eb)));
			break;
		}
		if (first < 0) {
			first = i;
			continue;
		}
		if ((mask & TWIN_PLACED) &&
		    mine->tree_blocks != tw[0].tree_blocks &&
		    mine->records == tw[0].records)
			c->trees_apart = 1;
		for (int p = 0; p < TWIN_NPARTS && !ret; p++) {
			int fs_wide = fs_wide_part(p);
			int placed = (TWIN_PLACED >> p) & 1;

			if (!(mask & (1u << p)) ||
			    (fs_wide && c->twin_adopted) ||
			    (placed && c->twins_apart))
				continue;
			for (unsigned f = 0; f < OP_MAX_FILES; f++) {
				if (tw[0].h[p][f] == tw[1].h[p][f] ||
				    (!fs_wide && (c->twin_adopted & (1u << f))))
					continue;
				if (placed && c->trees_apart) {
					/* blocks lie elsewhere since the
					 * trees came apart: no finding */
					c->twins_apart = c->log.n ? c->log.n : 1;
					c->st.twins_apart++;
					c->st.twins_apart_ops++; /* this op */
					break;
				}
				ret = twin_fail(c, first, i, p, f);
				break;
			}
		}
	}
	c->verifying--;
	return ret;
}

int check_twins(struct checker *c)
{
	return compare_parts(c, c->cfg.twins);
}

int check_twins_recovered(struct checker *c)
{
	return compare_parts(c, c->cfg.twins & (1u << TWIN_IMAGE));
}
