/*
 * run.c - a property run: trial seeds, generation, duplicates, hooks, the
 * first failure shrunk and reported, and the seed database.
 *
 * Trial order:
 *
 *   seeds saved in the database for this property (failed last time),
 *   cfg.always_seeds (regressions kept on purpose),
 *   cfg.trials random trials: the first one's seed is the run seed, each
 *   next one comes from a PRNG seeded with it.
 *
 * So `--seed S` with S a failure's trial seed reproduces that failure in
 * the first trial, and shrinking it again gives the same minimum.  The
 * run stops at the first failure (shrinking is the expensive part and
 * one minimal counterexample is what a developer needs).
 */
#include "props/props_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct run {
	const struct props_cfg *cfg;
	unsigned nargs;
	FILE *out;
	struct props_trial t;
	struct bloom bloom;
	struct props_report *rep;
	uint64_t run_seed;
	int from_bytes;                 /* props_run_bytes: no seeds      */
	uint64_t *db;                   /* saved seeds, then new failures */
	size_t ndb;
	int db_dirty;
	int progress_col;
};

const char *props_result_name(int result)
{
	switch (result) {
	case PROPS_PASS: return "pass";
	case PROPS_FAIL: return "fail";
	case PROPS_SKIP: return "skip";
	case PROPS_DUP: return "dup";
	case PROPS_ERROR: return "error";
	default: return result < 0 ? "bad config" : "?";
	}
}

void props_report_free(struct props_report *rep)
{
	if (!rep)
		return;
	free(rep->cex);
	free(rep->cex_bytes);
	free(rep->cex_log);
	rep->cex = NULL;
	rep->cex_bytes = NULL;
	rep->cex_log = NULL;
	rep->cex_len = 0;
}

/* Arity and property function must agree; every type needs alloc. */
static int validate(const struct props_cfg *c, unsigned *nargs)
{
	unsigned n = 0, fns = 0, want = 0;

	while (n < PROPS_MAX_ARGS && c->types[n])
		n++;
	if (n == 0)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (!c->types[i]->alloc)
			return -EINVAL;
	if (c->prop1) {
		fns++;
		want = 1;
	}
	if (c->prop2) {
		fns++;
		want = 2;
	}
	if (c->prop3) {
		fns++;
		want = 3;
	}
	if (c->propv) {
		fns++;
		want = n;
	}
	if (fns != 1 || want != n)
		return -EINVAL;
	*nargs = n;
	return 0;
}

static const char *cfg_name(const struct props_cfg *c)
{
	return c->name ? c->name : "property";
}

static void info_init(struct run *r, struct props_info *info, uint64_t seed,
		      uint32_t trial)
{
	memset(info, 0, sizeof(*info));
	info->name = cfg_name(r->cfg);
	info->run_seed = r->run_seed;
	info->trial_seed = seed;
	info->trial = trial;
	info->nargs = r->nargs;
	info->report = r->rep;
}

static void progress(struct run *r, char ch)
{
	if (!r->cfg->progress || r->cfg->quiet)
		return;
	fputc(ch, r->out);
	if (++r->progress_col == 64) {
		fputc('\n', r->out);
		r->progress_col = 0;
	}
}

/* Print text with every line indented. */
static void put_indented(FILE *f, const char *text, const char *indent)
{
	int bol = 1;

	for (const char *p = text; *p; p++) {
		if (bol)
			fputs(indent, f);
		fputc(*p, f);
		bol = *p == '\n';
	}
	if (!bol)
		fputc('\n', f);
}

static void print_arg(FILE *f, struct props_trial *t, unsigned i)
{
	const struct props_type *ty = t->cfg->types[i];
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return;
	if (ty->print) {
		ty->print(m, t->args[i], ty->env);
	} else {
		fprintf(m, "entries:");
		for (size_t e = t->argstart[i]; e < t->argstart[i + 1]; e++)
			fprintf(m, " %" PRIu64, t->rec.e[e].v);
	}
	fclose(m);
	if (strchr(buf, '\n')) {
		fprintf(f, "  arg %u (%s):\n", i, ty->name ? ty->name : "?");
		put_indented(f, buf, "    ");
	} else {
		fprintf(f, "  arg %u (%s): %s\n", i, ty->name ? ty->name : "?",
			buf);
	}
	free(buf);
}

/* The first op-sequence argument as its op log, or NULL. */
static char *oplog_of(struct props_trial *t, unsigned nargs)
{
	for (unsigned i = 0; i < nargs; i++) {
		const struct props_type *ty = t->cfg->types[i];
		char *buf = NULL;
		size_t len = 0;
		FILE *m;

		if (ty->print != props_ops_print)
			continue;
		m = open_memstream(&buf, &len);
		if (!m)
			return NULL;
		ty->print(m, t->args[i], ty->env);
		fclose(m);
		return buf;
	}
	return NULL;
}

/*
 * Replay the minimal pool once more (in fork mode with the child's output
 * shown), and describe it: arguments, notes, bytes.  Fills rep->cex.
 */
static int report_cex(struct run *r, const struct props_pool *best,
		      struct props_info *info)
{
	struct props_trial *t = &r->t;
	struct props_report *rep = r->rep;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int res;

	trial_src_pool(t, best->e, best->n);
	if (trial_generate(t) != PROPS_PASS)
		return PROPS_ERROR;
	res = isolate_call(t, info, !r->cfg->quiet);
	m = open_memstream(&buf, &len);
	if (!m) {
		trial_free_args(t);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < r->nargs; i++)
		print_arg(m, t, i);
	free(rep->cex_log);
	rep->cex_log = oplog_of(t, r->nargs);
	if (t->nnotes)
		put_indented(m, t->notes, "  why: ");
	if (res != PROPS_FAIL)
		fprintf(m, "  (this counterexample did not fail when run again: "
			"%s; the property is flaky)\n", props_result_name(res));
	fclose(m);
	free(rep->cex);
	rep->cex = buf;
	free(rep->cex_bytes);
	rep->cex_bytes = pool_bytes(best->e, best->n, &rep->cex_len);
	if (!r->cfg->quiet) {
		fprintf(r->out, "%s", buf);
		if (rep->cex_bytes && rep->cex_len <= 256) {
			fprintf(r->out, "  bytes (props_run_bytes):");
			for (size_t i = 0; i < rep->cex_len; i++)
				fprintf(r->out, "%s%02x", i % 32 ? "" : "\n    ",
					rep->cex_bytes[i]);
			fputc('\n', r->out);
		}
	}
	if (r->cfg->hooks.counterexample) {
		info->args = t->args;
		info->notes = t->notes;
		r->cfg->hooks.counterexample(info, r->cfg->hooks.env);
		info->args = NULL;
		info->notes = NULL;
	}
	trial_free_args(t);
	return 0;
}

/* Shrink the failing trial now in r->t and report it. */
static int shrink_and_report(struct run *r, struct props_info *info)
{
	struct props_report *rep = r->rep;
	struct shrink_ctx sc = { .t = &r->t, .bloom = &r->bloom, .rep = rep,
				 .base = info };
	uint64_t t0 = props_now_ns();
	int ret = 0;

	if (pool_copy(&sc.best, r->t.rec.e, r->t.rec.n))
		return -ENOMEM;
	sc.spans = malloc((r->t.nspans ? r->t.nspans : 1) * sizeof(*sc.spans));
	if (!sc.spans) {
		pool_free(&sc.best);
		return -ENOMEM;
	}
	if (r->t.nspans)
		memcpy(sc.spans, r->t.spans, r->t.nspans * sizeof(*sc.spans));
	sc.nspans = r->t.nspans;
	if (!r->cfg->shrink.disable)
		ret = shrink_run(&sc);
	rep->shrink_attempts = sc.attempts;
	rep->shrinks = sc.shrinks;
	rep->shrink_halted = sc.halted;
	rep->shrink_ms = (double)(props_now_ns() - t0) / 1e6;
	if (!r->cfg->quiet) {
		if (r->progress_col)
			fputc('\n', r->out);
		r->progress_col = 0;
		if (r->from_bytes)
			fprintf(r->out, "prop %s: FAIL on the given bytes\n",
				info->name);
		else
			fprintf(r->out, "prop %s: FAIL at trial %" PRIu32
				", trial seed 0x%016" PRIx64 " (run seed 0x%016"
				PRIx64 ")\n", info->name, info->trial,
				info->trial_seed, r->run_seed);
		fprintf(r->out, "  shrunk in %" PRIu32 " runs (%" PRIu32
			" kept, %" PRIu32 " duplicates skipped), %.1f ms%s\n",
			sc.attempts, sc.shrinks, rep->shrink_dups, rep->shrink_ms,
			sc.halted ? ", stopped by a budget or hook" : "");
		if (!r->from_bytes)
			fprintf(r->out, "  reproduce: seed 0x%016" PRIx64
				" as the run seed (it is the first trial)\n",
				info->trial_seed);
	}
	if (!ret)
		ret = report_cex(r, &sc.best, info);
	pool_free(&sc.best);
	free(sc.spans);
	return ret;
}

static void db_note(struct run *r, uint64_t seed, int failed)
{
	size_t i;

	if (!r->cfg->db)
		return;
	for (i = 0; i < r->ndb && r->db[i] != seed; i++)
		;
	if (failed && i == r->ndb) {
		uint64_t *nd = realloc(r->db, (r->ndb + 1) * sizeof(*nd));

		if (!nd)
			return;
		r->db = nd;
		r->db[r->ndb++] = seed;
		r->db_dirty = 1;
	} else if (!failed && i < r->ndb) {
		/* passes now: the bug it found is fixed, forget it */
		memmove(&r->db[i], &r->db[i + 1], (r->ndb - i - 1) * sizeof(*r->db));
		r->ndb--;
		r->db_dirty = 1;
	}
}

static int call_hook(struct run *r, props_hook_fn fn, struct props_info *info)
{
	return fn ? fn(info, r->cfg->hooks.env) : PROPS_HOOK_CONTINUE;
}

/*
 * One trial.  Returns PROPS_PASS/SKIP/DUP/FAIL (counted), PROPS_ERROR,
 * or -1 when trial_pre halted the run.
 */
static int one_trial(struct run *r, uint64_t seed, uint32_t idx)
{
	struct props_trial *t = &r->t;
	struct props_report *rep = r->rep;
	const struct props_hooks *hk = &r->cfg->hooks;
	struct props_info info;
	int g, res, h, once = 0;
	uint64_t hash;

	info_init(r, &info, seed, idx);
	h = call_hook(r, hk->trial_pre, &info);
	if (h == PROPS_HOOK_HALT)
		return -1;
	if (h == PROPS_HOOK_ERROR)
		return PROPS_ERROR;
	trial_src_rng(t, seed);
	g = trial_generate(t);
	rep->trials++;
	if (g == PROPS_SKIP) {
		rep->skip++;
		progress(r, 's');
		return PROPS_SKIP;
	}
	if (g != PROPS_PASS)
		return PROPS_ERROR;
	hash = pool_hash(t->rec.e, t->rec.n);
	if (bloom_has(&r->bloom, hash)) {
		trial_free_args(t);
		rep->dup++;
		progress(r, 'd');
		return PROPS_DUP;
	}
	bloom_add(&r->bloom, hash);
	for (;;) {
		res = isolate_call(t, &info, 0);
		info.result = res;
		info.args = t->args;
		info.notes = t->notes;
		h = call_hook(r, hk->trial_post, &info);
		info.args = NULL;
		info.notes = NULL;
		if (h == PROPS_HOOK_ERROR) {
			res = PROPS_ERROR;
			break;
		}
		if (h == PROPS_HOOK_REPEAT || (h == PROPS_HOOK_REPEAT_ONCE && !once)) {
			once = h == PROPS_HOOK_REPEAT_ONCE;
			info.repeat = 1;
			continue;
		}
		break;
	}
	/* a failure's pool stays in t->rec; the args are not needed */
	trial_free_args(t);
	switch (res) {
	case PROPS_PASS:
		rep->pass++;
		progress(r, '.');
		break;
	case PROPS_SKIP:
		rep->skip++;
		progress(r, 's');
		break;
	case PROPS_FAIL:
		rep->fail++;
		rep->fail_seed = seed;
		rep->fail_trial = idx;
		progress(r, 'F');
		if (shrink_and_report(r, &info) < 0)
			return PROPS_ERROR;
		break;
	default:
		break;
	}
	return res;
}

static int run_trials(struct run *r)
{
	const struct props_cfg *c = r->cfg;
	uint32_t trials = c->trials ? c->trials : 100;
	uint32_t idx = 0;
	struct rng rng;
	size_t nsaved = r->ndb;
	uint64_t *saved = NULL;
	int res = PROPS_PASS;

	/* 1. seeds from the database (a copy: db_note edits the list) */
	if (nsaved) {
		saved = malloc(nsaved * sizeof(*saved));
		if (!saved)
			return -ENOMEM;
		memcpy(saved, r->db, nsaved * sizeof(*saved));
	}
	for (size_t i = 0; i < nsaved; i++) {
		res = one_trial(r, saved[i], idx++);
		r->rep->db_replayed++;
		if (res == PROPS_PASS || res == PROPS_FAIL)
			db_note(r, saved[i], res == PROPS_FAIL);
		if (res == PROPS_FAIL || res == PROPS_ERROR || res < 0)
			goto out;
	}
	/* 2. regression seeds */
	for (size_t i = 0; i < c->nalways; i++) {
		res = one_trial(r, c->always_seeds[i], idx++);
		if (res == PROPS_FAIL)
			db_note(r, c->always_seeds[i], 1);
		if (res == PROPS_FAIL || res == PROPS_ERROR || res < 0)
			goto out;
	}
	/* 3. random trials from the run seed */
	rng_seed(&rng, r->run_seed);
	for (uint32_t i = 0; i < trials; i++) {
		uint64_t seed = i == 0 ? r->run_seed : rng_next(&rng);

		res = one_trial(r, seed, idx++);
		if (res == PROPS_FAIL)
			db_note(r, seed, 1);
		if (res == PROPS_FAIL || res == PROPS_ERROR || res < 0)
			break;
	}
out:
	free(saved);
	return res;
}

static int run_main(struct run *r)
{
	const struct props_cfg *c = r->cfg;
	struct props_report *rep = r->rep;
	struct props_info info;
	uint64_t t0 = props_now_ns();
	int res, h;

	info_init(r, &info, r->run_seed, 0);
	h = call_hook(r, c->hooks.run_pre, &info);
	if (h == PROPS_HOOK_ERROR || h == PROPS_HOOK_HALT)
		return PROPS_ERROR;
	if (c->db && seeddb_load(c->db, cfg_name(c), &r->db, &r->ndb) < 0)
		r->ndb = 0;   /* an unreadable database is no database */
	if (!c->quiet && !c->terse)
		fprintf(r->out, "prop %s: seed 0x%016" PRIx64 ", %" PRIu32
			" trials%s%s\n", cfg_name(c), r->run_seed,
			c->trials ? c->trials : 100, c->fork.enable ? ", fork" : "",
			r->ndb ? ", replaying saved failures first" : "");
	res = run_trials(r);
	if (r->progress_col && !c->quiet)
		fputc('\n', r->out);
	rep->run_ms = (double)(props_now_ns() - t0) / 1e6;
	if (res < 0 && res != -1)
		return res;
	if (res == PROPS_ERROR)
		res = PROPS_ERROR;
	else if (rep->fail)
		res = PROPS_FAIL;
	else if (!rep->pass && (rep->skip || rep->dup))
		res = PROPS_SKIP;
	else
		res = PROPS_PASS;
	if (c->db && r->db_dirty) {
		int e = seeddb_store(c->db, cfg_name(c), r->db, r->ndb);

		if (e < 0) /* the failing seeds would be lost unsaid */
			fprintf(stderr, "prop %s: cannot keep its failing seeds "
				"in %s: %s\n", cfg_name(c), c->db, strerror(-e));
	}
	if (!c->quiet && !c->terse && res != PROPS_FAIL)
		fprintf(r->out, "prop %s: %s (%" PRIu32 " pass, %" PRIu32
			" skip, %" PRIu32 " dup) in %.2f s\n", cfg_name(c),
			res == PROPS_PASS ? "PASS" : res == PROPS_SKIP ? "SKIP" :
			"ERROR", rep->pass, rep->skip, rep->dup,
			rep->run_ms / 1e3);
	info.result = res;
	call_hook(r, c->hooks.run_post, &info);
	return res;
}

/* Validate and set up a run; rep may be NULL (then `local` is used). */
static int run_open(struct run *r, const struct props_cfg *cfg,
		    struct props_report *rep, struct props_report *local)
{
	if (!cfg || validate(cfg, &r->nargs))
		return -EINVAL;
	r->cfg = cfg;
	r->rep = rep ? rep : local;
	memset(r->rep, 0, sizeof(*r->rep));
	r->out = cfg->out ? cfg->out : stdout;
	r->run_seed = cfg->seed;
	trial_init(&r->t, cfg, r->nargs);
	bloom_init(&r->bloom);
	return 0;
}

static void run_close(struct run *r, struct props_report *local)
{
	trial_destroy(&r->t);
	bloom_free(&r->bloom);
	free(r->db);
	if (r->rep == local)
		props_report_free(local);
}

int props_run(const struct props_cfg *cfg, struct props_report *rep)
{
	struct props_report local;
	struct run r = { .cfg = cfg };
	int res = run_open(&r, cfg, rep, &local);

	if (res)
		return res;
	res = run_main(&r);
	run_close(&r, &local);
	return res;
}

int props_run_bytes(const struct props_cfg *cfg, const uint8_t *data,
		    size_t len, int shrink, struct props_report *rep)
{
	struct props_report local;
	struct run r = { .cfg = cfg, .from_bytes = 1 };
	struct props_info info;
	struct props_cfg c2;            /* the run's cfg once it fails */
	int res = run_open(&r, cfg, rep, &local);

	if (res)
		return res;
	rep = r.rep;
	info_init(&r, &info, 0, 0);
	trial_src_bytes(&r.t, data, len);
	res = trial_generate(&r.t);
	rep->trials = 1;
	if (res == PROPS_PASS) {
		res = isolate_call(&r.t, &info, 0);
		trial_free_args(&r.t);
	}
	switch (res) {
	case PROPS_PASS:
		rep->pass = 1;
		break;
	case PROPS_SKIP:
		rep->skip = 1;
		break;
	case PROPS_FAIL:
		c2 = *cfg;
		rep->fail = 1;
		if (!shrink)
			c2.shrink.disable = 1;
		r.cfg = &c2;
		r.t.cfg = &c2;
		if (shrink_and_report(&r, &info) < 0)
			res = PROPS_ERROR;
		break;
	default:
		break;
	}
	run_close(&r, &local);
	return res;
}
