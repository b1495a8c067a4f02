/*
 * report.c - the oracle's results as a text table and as JSON.
 *
 * The JSON schema ("fsoracle-perf/1"), documented in the README:
 *
 *   { "schema": "fsoracle-perf/1", "fsoracle_version": "0.9.0",
 *     "scale": "quick"|"full",
 *     "repeats": N, "warmup": N, "alpha": 0.05, "ci_level": 0.95,
 *     "bootstrap_resamples": N, "bootstrap_seed": N,
 *     "scenarios": [ {
 *        "id": "000", "name": ..., "title": ..., "path": "rt_truncate",
 *        "status": "ok"|"skipped"|"error", "reason": "..." (not ok),
 *        "param": "rtextsize", "variants": [ ... ],
 *        "points": [ {
 *           "variant": "rt", "param": 8192, "saves": bool,
 *           "counters": { NAME: { "naive": N, "optimized": N,
 *                                 "ratio": x|null, "primary": bool,
 *                                 "as_expected": bool }
 *                         (missing from the engine: null) ... },
 *           "checks": [ { "what": ..., "counter": ..., "twin":
 *                         "naive"|"optimized"|"naive-optimized",
 *                         "expected": N, "got": N|null,
 *                         "tolerance_pct": N, "matches": bool } ],
 *           "time": null | { "unit": "s", "naive": [..], "optimized": [..],
 *                     "naive_median", "naive_q1", "naive_q3",
 *                     "naive_min", "naive_max", "optimized_median", ...,
 *                     "ratio", "ci_low", "ci_high", "p_sign",
 *                     "verdict": "faster"|"slower"|
 *                                "no significant difference" } } ] } ],
 *     "summary": { "scenarios", "ran", "skipped", "errors",
 *                  "seed_checks", "seed_mismatches",
 *                  "less_work_failures" } }
 *
 * Counters are exact integers; the reader in json.c keeps their text so
 * a comparison never rounds them through a double.  The fields are
 * composed here as text; json.c has json-c check the whole and write it.
 */
#include "perf/perf_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void perf_format_param(const struct perf_scenario *sc, uint64_t v, char *buf,
		       size_t len)
{
	static const char sfx[] = "kmgt";
	int i = -1;

	if (!sc->param_bytes || v == 0 || v % 1024) {
		snprintf(buf, len, "%" PRIu64, v);
		return;
	}
	while (i < 3 && v % 1024 == 0 && v >= 1024) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%" PRIu64 "%c", v, sfx[i]);
}

/* 15728640 -> "15,728,640" */
static const char *commas(uint64_t v, char *buf, size_t len)
{
	char raw[32];
	size_t n, o = 0;

	snprintf(raw, sizeof(raw), "%" PRIu64, v);
	n = strlen(raw);
	for (size_t i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = 0;
	return buf;
}

static const char *twin_name(int twin)
{
	return twin == 0 ? "naive" : twin == 1 ? "optimized" :
	       twin == 2 ? "naive-optimized" : "optimized-naive";
}

static const char *variant_name(const struct perf_scenario *sc, unsigned v)
{
	return sc->nvariants ? sc->variants[v] : "";
}

static const char *seed_word(const struct perf_point *pt, unsigned counter)
{
	int any = 0, bad = 0;

	for (unsigned i = 0; i < pt->nchecks; i++) {
		if (pt->checks[i].counter != counter)
			continue;
		any = 1;
		bad |= !perf_check_holds(&pt->checks[i]);
	}
	return !any ? "" : bad ? "DIFFERS from seed" : "matches seed";
}

static void print_counters(FILE *f, const struct perf_result *r,
			   unsigned v)
{
	const struct perf_scenario *sc = r->sc;
	char p[32], a[32], b[32];

	fprintf(f, "  %-10s %-20s %16s %16s %9s\n", sc->param_name, "counter",
		"naive", "optimized", "opt/naive");
	for (unsigned i = 0; i < r->npts; i++) {
		const struct perf_point *pt = &r->pts[i];

		if (pt->variant != v || !pt->counted)
			continue;
		perf_format_param(sc, pt->param, p, sizeof(p));
		for (unsigned c = 0; c < sc->ncounters; c++) {
			uint32_t bit = 1u << c;
			const char *label = c ? "" : p;

			if (!(pt->naive.have & pt->opt.have & bit)) {
				fprintf(f, "  %-10s %-20s %16s %16s %9s  "
					"(no such counter in the engine yet)\n",
					label, sc->counters[c].name, "-", "-",
					"-");
				continue;
			}
			fprintf(f, "  %-10s %-20s %16s %16s ", label,
				sc->counters[c].name,
				commas(pt->naive.v[c], a, sizeof(a)),
				commas(pt->opt.v[c], b, sizeof(b)));
			if (pt->naive.v[c])
				fprintf(f, "%9.3f", (double)pt->opt.v[c] /
						     pt->naive.v[c]);
			else
				fprintf(f, "%9s", pt->opt.v[c] ? "inf" : "=");
			fprintf(f, "  %s%s\n", seed_word(pt, c),
				!(pt->less_fail & bit) ? "" : pt->saves ?
				"  OPTIMIZED DOES NOT DO LESS" :
				"  TWINS SHOULD DO THE SAME");
		}
		for (unsigned k = 0; k < pt->nchecks; k++) {
			const struct perf_check *ck = &pt->checks[k];

			if (perf_check_holds(ck))
				continue;
			fprintf(f, "  %-10s   seed: %s: expected %s, got %s "
				"(%s)\n", "", ck->what,
				commas(ck->expect, a, sizeof(a)),
				ck->have ? commas(ck->got, b, sizeof(b)) :
					   "no counter",
				twin_name(ck->twin));
		}
	}
}

static void print_times(FILE *f, const struct perf_result *r, unsigned v)
{
	const struct perf_scenario *sc = r->sc;
	char p[32];
	int header = 0;

	for (unsigned i = 0; i < r->npts; i++) {
		const struct perf_point *pt = &r->pts[i];

		if (pt->variant != v || !pt->timed)
			continue;
		if (!header) {
			fprintf(f, "  time, %s; ms, median [q1 q3] over %u "
				"side-by-side pairs:\n", sc->time_doc,
				pt->nsamples);
			fprintf(f, "  %-10s %-24s %-24s %-22s %7s  %s\n",
				sc->param_name, "naive", "optimized",
				"opt/naive [95% CI]", "p(sign)", "verdict");
			header = 1;
		}
		perf_format_param(sc, pt->param, p, sizeof(p));
		fprintf(f, "  %-10s %8.3f [%6.3f %6.3f]  %8.3f [%6.3f %6.3f]  "
			"%5.3f [%5.3f %5.3f]  %7.4f  %s\n", p,
			pt->sn.median * 1e3, pt->sn.q1 * 1e3, pt->sn.q3 * 1e3,
			pt->so.median * 1e3, pt->so.q1 * 1e3, pt->so.q3 * 1e3,
			pt->cmp.ratio, pt->cmp.lo, pt->cmp.hi, pt->cmp.p,
			perf_verdict_name(pt->cmp.verdict));
	}
}

void perf_print_table(FILE *f, const struct perf_result *res, unsigned n)
{
	unsigned ran = 0, skipped = 0, errors = 0, checks = 0, bad = 0,
		 less = 0;

	for (unsigned s = 0; s < n; s++) {
		const struct perf_result *r = &res[s];
		const struct perf_scenario *sc = r->sc;
		unsigned nv = sc->nvariants ? sc->nvariants : 1;

		fprintf(f, "%s %s: %s  [path %s]\n", sc->id, sc->name,
			sc->title, sc->path_label);
		if (r->status == PERF_SKIPPED) {
			fprintf(f, "  not available: %s\n\n", r->reason);
			skipped++;
			continue;
		}
		if (r->status == PERF_ERROR) {
			fprintf(f, "  ERROR: %s\n", r->reason);
			errors++;
		} else {
			ran++;
		}
		for (unsigned v = 0; v < nv; v++) {
			if (sc->nvariants > 1)
				fprintf(f, " %s:\n", variant_name(sc, v));
			print_counters(f, r, v);
			print_times(f, r, v);
		}
		checks += r->seed_checks;
		bad += r->seed_mismatches;
		less += r->less_work_failures;
		fprintf(f, "\n");
	}
	fprintf(f, "perf: %u scenarios run, %u skipped (not available), %u "
		"errors; seed figures: %u of %u match; optimized doing no "
		"less work: %u\n", ran, skipped, errors, checks - bad, checks,
		less);
}

/* ---- JSON ---- */

static void put_summary(FILE *f, const char *prefix,
			const struct perf_summary *s)
{
	fprintf(f, "\"%s_median\": ", prefix);
	json_put_double(f, s->median);
	fprintf(f, ", \"%s_q1\": ", prefix);
	json_put_double(f, s->q1);
	fprintf(f, ", \"%s_q3\": ", prefix);
	json_put_double(f, s->q3);
	fprintf(f, ", \"%s_min\": ", prefix);
	json_put_double(f, s->min);
	fprintf(f, ", \"%s_max\": ", prefix);
	json_put_double(f, s->max);
}

static void put_samples(FILE *f, const double *x, unsigned n)
{
	fputc('[', f);
	for (unsigned i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		json_put_double(f, x[i]);
	}
	fputc(']', f);
}

static void put_point(FILE *f, const struct perf_scenario *sc,
		      const struct perf_point *pt)
{
	fputs("        { \"variant\": ", f);
	json_put_string(f, variant_name(sc, pt->variant));
	fprintf(f, ", \"param\": %" PRIu64 ", \"saves\": %s,\n"
		"          \"counters\": ", pt->param,
		pt->saves ? "true" : "false");
	if (!pt->counted) {
		fputs("null", f);
	} else {
		fputs("{", f);
		for (unsigned c = 0; c < sc->ncounters; c++) {
			fputs(c ? ",\n            " : "\n            ", f);
			json_put_string(f, sc->counters[c].name);
			if (!(pt->naive.have & pt->opt.have & (1u << c))) {
				fputs(": null", f);
				continue;
			}
			fprintf(f, ": { \"naive\": %" PRIu64 ", \"optimized\": "
				"%" PRIu64 ", \"ratio\": ", pt->naive.v[c],
				pt->opt.v[c]);
			json_put_double(f, pt->naive.v[c] ?
				(double)pt->opt.v[c] / pt->naive.v[c] : NAN);
			fprintf(f, ", \"primary\": %s, \"as_expected\": %s }",
				sc->counters[c].primary ? "true" : "false",
				pt->less_fail & (1u << c) ? "false" : "true");
		}
		fputs(" }", f);
	}
	fputs(",\n          \"checks\": [", f);
	for (unsigned k = 0; k < pt->nchecks; k++) {
		const struct perf_check *ck = &pt->checks[k];

		fputs(k ? ",\n            { \"what\": " :
			  "\n            { \"what\": ", f);
		json_put_string(f, ck->what);
		fputs(", \"counter\": ", f);
		json_put_string(f, ck->counter < sc->ncounters ?
				sc->counters[ck->counter].name : "?");
		fprintf(f, ", \"twin\": \"%s\", \"expected\": %" PRIu64
			", \"got\": ", twin_name(ck->twin), ck->expect);
		if (ck->have)
			fprintf(f, "%" PRIu64, ck->got);
		else
			fputs("null", f);
		fprintf(f, ", \"tolerance_pct\": %u, \"matches\": %s }",
			ck->tolerance_pct,
			perf_check_holds(ck) ? "true" : "false");
	}
	fputs(" ],\n          \"time\": ", f);
	if (!pt->timed) {
		fputs("null }", f);
		return;
	}
	fputs("{ \"unit\": \"s\", \"naive\": ", f);
	put_samples(f, pt->tnaive, pt->nsamples);
	fputs(",\n            \"optimized\": ", f);
	put_samples(f, pt->topt, pt->nsamples);
	fputs(",\n            ", f);
	put_summary(f, "naive", &pt->sn);
	fputs(",\n            ", f);
	put_summary(f, "optimized", &pt->so);
	fputs(",\n            \"ratio\": ", f);
	json_put_double(f, pt->cmp.ratio);
	fputs(", \"ci_low\": ", f);
	json_put_double(f, pt->cmp.lo);
	fputs(", \"ci_high\": ", f);
	json_put_double(f, pt->cmp.hi);
	fputs(", \"p_sign\": ", f);
	json_put_double(f, pt->cmp.p);
	fputs(", \"verdict\": ", f);
	json_put_string(f, perf_verdict_name(pt->cmp.verdict));
	fputs(" } }", f);
}

static const char *status_name(enum perf_status s)
{
	return s == PERF_OK ? "ok" : s == PERF_SKIPPED ? "skipped" : "error";
}

/* The report's fields, composed as JSON text (json_reformat checks it). */
static void compose_json(FILE *f, const struct perf_opts *o,
			 const struct perf_result *res, unsigned n)
{
	unsigned ran = 0, skipped = 0, errors = 0, checks = 0, bad = 0,
		 less = 0;

	fputs("{\n  \"schema\": \"fsoracle-perf/1\",\n  \"fsoracle_version\": ",
	      f);
	json_put_string(f, FSORACLE_VERSION);
	fprintf(f, ",\n  \"scale\": "
		"\"%s\",\n  \"repeats\": %u,\n  \"warmup\": %u,\n"
		"  \"clock\": \"%s\",\n"
		"  \"alpha\": 0.05,\n  \"ci_level\": 0.95,\n"
		"  \"bootstrap_resamples\": 2000,\n"
		"  \"bootstrap_seed\": %" PRIu64 ",\n  \"scenarios\": [",
		o->scale == PERF_FULL ? "full" : "quick",
		perf_repeats(o),
		o->warmup, o->clock == PERF_CLOCK_CPU ? "cpu" : "wall", o->seed);
	for (unsigned s = 0; s < n; s++) {
		const struct perf_result *r = &res[s];
		const struct perf_scenario *sc = r->sc;
		unsigned nv = sc->nvariants ? sc->nvariants : 1;

		fputs(s ? ",\n    { \"id\": " : "\n    { \"id\": ", f);
		json_put_string(f, sc->id);
		fputs(", \"name\": ", f);
		json_put_string(f, sc->name);
		fputs(",\n      \"title\": ", f);
		json_put_string(f, sc->title);
		fputs(",\n      \"path\": ", f);
		json_put_string(f, ref_path_name(sc->path));
		fprintf(f, ", \"status\": \"%s\"", status_name(r->status));
		if (r->status != PERF_OK) {
			fputs(", \"reason\": ", f);
			json_put_string(f, r->reason);
		}
		fputs(",\n      \"param\": ", f);
		json_put_string(f, sc->param_name);
		fputs(", \"variants\": [", f);
		for (unsigned v = 0; v < nv; v++) {
			if (v)
				fputs(", ", f);
			json_put_string(f, variant_name(sc, v));
		}
		fputs("],\n      \"points\": [", f);
		for (unsigned i = 0; i < r->npts; i++) {
			fputs(i ? ",\n" : "\n", f);
			put_point(f, sc, &r->pts[i]);
		}
		fputs(" ] }", f);
		ran += r->status == PERF_OK;
		skipped += r->status == PERF_SKIPPED;
		errors += r->status == PERF_ERROR;
		checks += r->seed_checks;
		bad += r->seed_mismatches;
		less += r->less_work_failures;
	}
	fprintf(f, " ],\n  \"summary\": { \"scenarios\": %u, \"ran\": %u, "
		"\"skipped\": %u, \"errors\": %u, \"seed_checks\": %u, "
		"\"seed_mismatches\": %u, \"less_work_failures\": %u }\n}\n",
		n, ran, skipped, errors, checks, bad, less);
}

int perf_write_json(FILE *f, const struct perf_opts *o,
		    const struct perf_result *res, unsigned n)
{
	char *text = NULL, err[160];
	size_t len = 0;
	FILE *m;
	int rc;

	if (!json_available())
		return -ENOTSUP;
	m = open_memstream(&text, &len);
	if (!m)
		return -ENOMEM;
	compose_json(m, o, res, n);
	if (ferror(m)) {
		fclose(m);
		free(text);
		return -ENOMEM;
	}
	fclose(m);
	rc = json_reformat(f, text, err, sizeof(err));
	if (rc == -EINVAL)
		fprintf(stderr, "fsoracle perf: internal error: the report is "
			"not JSON: %s\n", err);
	free(text);
	return rc;
}
