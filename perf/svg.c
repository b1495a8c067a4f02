/*
 * svg.c - the oracle's plots, one SVG per scenario and variant, written
 * by hand: a panel per counter and, across the bottom, one for time, each
 * with the naive and the optimized twin against the swept parameter (log
 * scale, as the seed tables sweep powers of two), like the seed 000 table
 * drawn.
 *
 *   +-- bytes_zeroed -------+  +-- records (twins equal) -+
 *   |  o naive              |  |                          |
 *   |        o              |  |  @--@--@--@              |
 *   |  o  #--#--# optimized |  |                          |
 *   +-----------------------+  +--------------------------+
 *   +-- time ------------------------------------------------+
 *   |  o---o---o                                              |
 *   |  #---#---#                                              |
 *   +---------------------------------------------------------+
 *     filesize  verdict              time ratio optimized/naive [95% CI]
 *     64m       faster (p 0.002)     0.41 [0.38 - 0.45]
 *
 * Both twins stay visible where they coincide: the naive one is a wide
 * solid line with hollow circles, the optimized one a dashed line with
 * small filled squares, so one drawn over the other shows both (the
 * panel title also says when they are equal everywhere).  A y axis whose
 * values span more than two decades is logarithmic; zeros then sit on a
 * floor a decade below the smallest value, labelled 0.  Each axis names
 * its unit.  The time panel shows the median with a bar from q1 to q3,
 * and under it each point's verdict and the optimized/naive ratio with its
 * confidence interval.
 */
#include "perf/perf.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#define PW 380          /* panel width, height, margins */
#define PH 250
#define ML 76
#define MR 16
#define MT 34
#define MB 44
#define COLS 2
#define VERDICT_LINE 14 /* a line of the time panel's verdicts */

static const char *const color[2] = { "#c0392b", "#1f5fa8" };
static const char *const label[2] = { "naive", "optimized" };

static void esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* 15728640 -> "15.7M" */
static void short_num(double v, char *buf, size_t len)
{
	static const char sfx[] = " kMGTP";
	int i = 0;

	while (fabs(v) >= 1000 && i < 5) {
		v /= 1000;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%.4g", v);
	else
		snprintf(buf, len, "%.3g%c", v, sfx[i]);
}

/* A step of 1, 2 or 5 x 10^k giving about 4 ticks up to max. */
static double tick_step(double max)
{
	double raw = max / 4, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

struct panel {
	double x0, y0;              /* top-left corner */
	double w, mt;               /* width, top margin */
	double xmin, xmax;          /* x range, in log2 */
	double ymin, ymax;          /* y range; in log10 when log */
	int log;                    /* logarithmic y axis */
	int zeros;                  /* log axis: zeros drawn on a floor */
};

static double px(const struct panel *p, double x)
{
	double lx = log2(x);

	if (p->xmax <= p->xmin)
		return p->x0 + ML + (p->w - ML - MR) / 2.0;
	return p->x0 + ML + (lx - p->xmin) / (p->xmax - p->xmin) *
			    (p->w - ML - MR);
}

static double py(const struct panel *p, double y)
{
	double v = y;

	if (p->log)
		v = y > 0 ? log10(y) : p->ymin;
	return p->y0 + p->mt + (1 - (v - p->ymin) / (p->ymax - p->ymin)) *
			       (PH - MT - MB);
}

/*
 * Choose the y axis for values lo..hi of both twins: logarithmic when the
 * positive ones span more than two decades, else linear from 0.
 */
static void y_axis(struct panel *p, const double *lo, const double *hi,
		   unsigned n)
{
	double pmin = INFINITY, pmax = 0;

	for (unsigned i = 0; i < n; i++) {
		if (lo[i] > 0)
			pmin = fmin(pmin, lo[i]);
		if (!(lo[i] > 0))
			p->zeros = 1;
		pmax = fmax(pmax, hi[i]);
	}
	if (pmax > 0 && pmin < INFINITY && pmax / pmin > 100) {
		p->log = 1;
		p->ymin = floor(log10(pmin)) - (p->zeros ? 1 : 0);
		p->ymax = ceil(log10(pmax));
		return;
	}
	p->zeros = 0;
	p->ymin = 0;
	p->ymax = pmax > 0 ? pmax : 1;
}

static void y_tick(FILE *f, const struct panel *p, double y, const char *txt)
{
	fprintf(f, "<line x1=\"%g\" y1=\"%.2f\" x2=\"%g\" y2=\"%.2f\" "
		"stroke=\"#eee\"/>\n<text x=\"%g\" y=\"%.2f\" font-size=\"10\" "
		"text-anchor=\"end\">%s</text>\n", p->x0 + ML, py(p, y),
		p->x0 + p->w - MR, py(p, y), p->x0 + ML - 4, py(p, y) + 3, txt);
}

static void frame(FILE *f, const struct perf_result *r, struct panel *p,
		  const char *title, const char *yunit, const double *xs,
		  unsigned n)
{
	const struct perf_scenario *sc = r->sc;
	double mid = p->y0 + p->mt + (PH - MT - MB) / 2.0;
	char buf[64];

	fprintf(f, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%d\" "
		"fill=\"#fff\" stroke=\"#bbb\"/>\n", p->x0 + ML, p->y0 + p->mt,
		p->w - ML - MR, PH - MT - MB);
	fprintf(f, "<text x=\"%g\" y=\"%g\" font-size=\"13\" "
		"font-weight=\"bold\">", p->x0 + ML, p->y0 + p->mt - 10 -
		(p->mt - MT));
	esc(f, title);
	fputs("</text>\n", f);
	if (p->log) {
		unsigned decades = (unsigned)(p->ymax - p->ymin);
		unsigned every = decades > 6 ? 2 : 1;

		for (double e = p->ymin; e <= p->ymax + 0.001; e += every) {
			if (p->zeros && e == p->ymin) {
				y_tick(f, p, 0, "0");
				continue;
			}
			short_num(pow(10, e), buf, sizeof(buf));
			y_tick(f, p, pow(10, e), buf);
		}
	} else {
		double step = tick_step(p->ymax);

		p->ymax = ceil(p->ymax / step) * step;
		for (double y = 0; y <= p->ymax * 1.0001; y += step) {
			short_num(y, buf, sizeof(buf));
			y_tick(f, p, y, buf);
		}
	}
	/* the y axis' unit, turned along the axis */
	fprintf(f, "<text x=\"%g\" y=\"%g\" font-size=\"11\" "
		"text-anchor=\"middle\" transform=\"rotate(-90 %g %g)\">",
		p->x0 + 16, mid, p->x0 + 16, mid);
	esc(f, yunit);
	fputs(p->log ? ", log scale</text>\n" : "</text>\n", f);
	for (unsigned i = 0; i < n; i++) {
		perf_format_param(sc, (uint64_t)xs[i], buf, sizeof(buf));
		fprintf(f, "<text x=\"%g\" y=\"%g\" font-size=\"10\" "
			"text-anchor=\"middle\">%s</text>\n", px(p, xs[i]),
			p->y0 + p->mt + PH - MT - MB + 14, buf);
	}
	fprintf(f, "<text x=\"%g\" y=\"%g\" font-size=\"11\" "
		"text-anchor=\"middle\">", p->x0 + ML + (p->w - ML - MR) / 2.0,
		p->y0 + p->mt + PH - MT - MB + 30);
	esc(f, sc->param_name);
	fprintf(f, " (%slog scale)</text>\n", sc->param_bytes ? "bytes, " : "");
}

static void series(FILE *f, const struct panel *p, int twin, const double *x,
		   const double *y, const double *lo, const double *hi,
		   unsigned n)
{
	if (n > 1) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"%s\"%s points=\"", color[twin],
			twin ? "2" : "3.5",
			twin ? " stroke-dasharray=\"7 4\"" : "");
		for (unsigned i = 0; i < n; i++)
			fprintf(f, "%s%.2f,%.2f", i ? " " : "", px(p, x[i]),
				py(p, y[i]));
		fputs("\"/>\n", f);
	}
	for (unsigned i = 0; i < n; i++) {
		/* the twins' q1-q3 bars side by side, never on one line */
		double bx = px(p, x[i]) + (twin ? 3 : -3);

		if (lo && hi)
			fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
				"y2=\"%.2f\" stroke=\"%s\" stroke-width=\"1.5\"/>\n",
				bx, py(p, lo[i]), bx, py(p, hi[i]), color[twin]);
		if (twin == 0)
			fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"6\" "
				"fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n",
				px(p, x[i]), py(p, y[i]), color[twin]);
		else
			fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"6\" "
				"height=\"6\" fill=\"%s\"/>\n", px(p, x[i]) - 3,
				py(p, y[i]) - 3, color[twin]);
	}
}

/*
 * Under the time panel, a line per point: the parameter, the verdict, and
 * the optimized/naive time ratio with its confidence interval.
 */
static void verdicts(FILE *f, const struct perf_scenario *sc,
		     const struct panel *p, const double *x,
		     const struct perf_cmp *const *cmp, unsigned n)
{
	double top = p->y0 + PH + 4, col[3] = { 0, 80, 330 };
	char buf[32];

	for (int c = 0; c < 3; c++)
		col[c] += p->x0 + ML;
	fprintf(f, "<text y=\"%g\" font-size=\"11\" font-weight=\"bold\">"
		"<tspan x=\"%g\">", top, col[0]);
	esc(f, sc->param_name);
	fprintf(f, "</tspan><tspan x=\"%g\">verdict (sign test, p &lt; 0.05)"
		"</tspan><tspan x=\"%g\">time ratio optimized/naive "
		"[95%% confidence interval]</tspan></text>\n", col[1], col[2]);
	for (unsigned i = 0; i < n; i++) {
		const struct perf_cmp *c = cmp[i];
		const char *fill = c->verdict == PERF_FASTER ? "#1e7b34" :
				   c->verdict == PERF_SLOWER ? "#b03a2e" :
				   "#444";

		perf_format_param(sc, (uint64_t)x[i], buf, sizeof(buf));
		fprintf(f, "<text y=\"%g\" font-size=\"11\" fill=\"%s\">"
			"<tspan x=\"%g\">%s</tspan><tspan x=\"%g\">%s (p %.2g)"
			"</tspan><tspan x=\"%g\">%.3g [%.3g - %.3g]</tspan>"
			"</text>\n", top + VERDICT_LINE * (i + 1), fill, col[0],
			buf, col[1], perf_verdict_name(c->verdict), c->p,
			col[2], c->ratio, c->lo, c->hi);
	}
}

/* Do the twins agree at every point? */
static int coincide(const double *a, const double *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return n > 0;
}

/* The unit of a counter, from its name. */
static const char *counter_unit(const char *name)
{
	return strstr(name, "bytes") ? "bytes" :
	       strstr(name, "blocks") ? "blocks" : "count";
}

int perf_write_svg(FILE *f, const struct perf_result *r, unsigned variant)
{
	const struct perf_scenario *sc = r->sc;
	double x[PERF_MAX_PARAMS], y[2][PERF_MAX_PARAMS];
	double lo[2][PERF_MAX_PARAMS], hi[2][PERF_MAX_PARAMS];
	double all_lo[2 * PERF_MAX_PARAMS], all_hi[2 * PERF_MAX_PARAMS];
	const struct perf_cmp *cmp[PERF_MAX_PARAMS];
	unsigned panels = sc->ncounters + 1;
	unsigned rows = (sc->ncounters + COLS - 1) / COLS, timed = 0;
	int height;
	char title[160];

	for (unsigned i = 0; i < r->npts; i++)
		timed += r->pts[i].variant == variant && r->pts[i].timed;
	height = (int)(rows + 1) * PH + 50 + 10 +
		 (int)(timed + 1) * VERDICT_LINE;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" font-family=\"sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n",
		COLS * PW, height);
	snprintf(title, sizeof(title), "%s %s%s%s: %s", sc->id, sc->name,
		 sc->nvariants ? " " : "",
		 sc->nvariants ? sc->variants[variant] : "", sc->title);
	fputs("<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">",
	      f);
	esc(f, title);
	fputs("</text>\n", f);
	/* the legend: each twin's line and marker as the panels draw them */
	fprintf(f, "<line x1=\"12\" y1=\"36\" x2=\"40\" y2=\"36\" stroke=\"%s\" "
		"stroke-width=\"3.5\"/><circle cx=\"26\" cy=\"36\" r=\"6\" "
		"fill=\"#fafafa\" stroke=\"%s\" stroke-width=\"2\"/>"
		"<text x=\"46\" y=\"40\" font-size=\"12\">%s</text>\n",
		color[0], color[0], label[0]);
	fprintf(f, "<line x1=\"112\" y1=\"36\" x2=\"140\" y2=\"36\" "
		"stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"7 4\"/>"
		"<rect x=\"123\" y=\"33\" width=\"6\" height=\"6\" fill=\"%s\"/>"
		"<text x=\"146\" y=\"40\" font-size=\"12\">%s</text>\n",
		color[1], color[1], label[1]);

	for (unsigned k = 0; k < panels; k++) {
		int time = k == sc->ncounters;
		struct panel p = {
			.x0 = time ? 0 : (k % COLS) * PW,
			.y0 = 50 + (time ? rows : k / COLS) * PH,
			.w = time ? COLS * PW : PW,
			.mt = MT,
			.xmin = INFINITY, .xmax = -INFINITY,
		};
		unsigned n = 0;

		for (unsigned i = 0; i < r->npts && n < PERF_MAX_PARAMS; i++) {
			const struct perf_point *pt = &r->pts[i];

			if (pt->variant != variant)
				continue;
			if (time ? !pt->timed :
				   !pt->counted ||
				   !(pt->naive.have & pt->opt.have & (1u << k)))
				continue;
			x[n] = (double)pt->param;
			cmp[n] = &pt->cmp;
			if (time) {
				y[0][n] = pt->sn.median * 1e3;
				y[1][n] = pt->so.median * 1e3;
				lo[0][n] = pt->sn.q1 * 1e3;
				hi[0][n] = pt->sn.q3 * 1e3;
				lo[1][n] = pt->so.q1 * 1e3;
				hi[1][n] = pt->so.q3 * 1e3;
			} else {
				y[0][n] = (double)pt->naive.v[k];
				y[1][n] = (double)pt->opt.v[k];
				lo[0][n] = hi[0][n] = y[0][n];
				lo[1][n] = hi[1][n] = y[1][n];
			}
			all_lo[2 * n] = lo[0][n];
			all_lo[2 * n + 1] = lo[1][n];
			all_hi[2 * n] = hi[0][n];
			all_hi[2 * n + 1] = hi[1][n];
			p.xmin = fmin(p.xmin, log2(x[n]));
			p.xmax = fmax(p.xmax, log2(x[n]));
			n++;
		}
		snprintf(title, sizeof(title), "%s%s",
			 time ? "time of the operation (median, q1-q3 bars)" :
				sc->counters[k].name,
			 coincide(y[0], y[1], n) ? " (twins equal)" : "");
		if (n == 0) {
			fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" "
				"fill=\"#888\">", (int)p.x0 + ML,
				(int)p.y0 + PH / 2);
			esc(f, title);
			fputs(": no data</text>\n", f);
			continue;
		}
		y_axis(&p, all_lo, all_hi, 2 * n);
		frame(f, r, &p, title, time ? "ms" :
		      counter_unit(sc->counters[k].name), x, n);
		for (int t = 0; t < 2; t++)
			series(f, &p, t, x, y[t], time ? lo[t] : NULL,
			       time ? hi[t] : NULL, n);
		if (time)
			verdicts(f, sc, &p, x, cmp, n);
	}
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}

int perf_write_svgs(const char *dir, const struct perf_result *res,
		    unsigned n, char *err, size_t len)
{
	if (mkdir(dir, 0777) && errno != EEXIST)
		return perf_fail(err, len, -errno, "%s: %s", dir,
				 strerror(errno));
	for (unsigned s = 0; s < n; s++) {
		const struct perf_scenario *sc = res[s].sc;
		unsigned nv = sc->nvariants ? sc->nvariants : 1;

		if (res[s].status == PERF_SKIPPED)
			continue;
		for (unsigned v = 0; v < nv; v++) {
			char path[4096];
			FILE *f;
			int rc;

			if (nv > 1)
				snprintf(path, sizeof(path), "%s/%s-%s-%s.svg",
					 dir, sc->id, sc->name,
					 sc->variants[v]);
			else
				snprintf(path, sizeof(path), "%s/%s-%s.svg",
					 dir, sc->id, sc->name);
			f = fopen(path, "w");
			if (!f)
				return perf_fail(err, len, -errno, "%s: %s",
						 path, strerror(errno));
			rc = perf_write_svg(f, &res[s], v);
			if (fclose(f) || rc)
				return perf_fail(err, len, -EIO,
						 "%s: write failed", path);
		}
	}
	return 0;
}
