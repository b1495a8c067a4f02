/*
 * svg.c - the oracle's plots, one SVG per scenario and variant, written
 * by hand: a panel per counter and one for time, each with the naive and
 * the optimized twin against the swept parameter (log scale, as the seed
 * tables sweep powers of two), like the seed 000 table drawn.
 *
 *   +-- bytes_zeroed -------+  +-- records -----------+
 *   |  o naive              |  |                      |
 *   |        o              |  |  o--o--o--o (both)   |
 *   |  o  #--#--# optimized |  |                      |
 *   +-----------------------+  +----------------------+
 *
 * Time panels show the median with a bar from q1 to q3.
 */
#include "perf/perf.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#define PW 380          /* panel width, height, margins */
#define PH 250
#define ML 70
#define MR 16
#define MT 34
#define MB 44
#define COLS 2

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
	double xmin, xmax, ymax;    /* data ranges (x in log2) */
};

static double px(const struct panel *p, double x)
{
	double lx = log2(x);

	if (p->xmax <= p->xmin)
		return p->x0 + ML + (PW - ML - MR) / 2.0;
	return p->x0 + ML + (lx - p->xmin) / (p->xmax - p->xmin) *
			    (PW - ML - MR);
}

static double py(const struct panel *p, double y)
{
	return p->y0 + MT + (1 - y / p->ymax) * (PH - MT - MB);
}

static void frame(FILE *f, const struct perf_result *r, struct panel *p,
		  const char *title, const double *xs, unsigned n)
{
	const struct perf_scenario *sc = r->sc;
	double step = tick_step(p->ymax);
	char buf[32];

	fprintf(f, "<rect x=\"%g\" y=\"%g\" width=\"%d\" height=\"%d\" "
		"fill=\"#fff\" stroke=\"#bbb\"/>\n", p->x0 + ML, p->y0 + MT,
		PW - ML - MR, PH - MT - MB);
	fprintf(f, "<text x=\"%g\" y=\"%g\" font-size=\"13\" "
		"font-weight=\"bold\">", p->x0 + ML, p->y0 + MT - 10);
	esc(f, title);
	fputs("</text>\n", f);
	p->ymax = ceil(p->ymax / step) * step;
	for (double y = 0; y <= p->ymax * 1.0001; y += step) {
		short_num(y, buf, sizeof(buf));
		fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" "
			"stroke=\"#eee\"/>\n<text x=\"%g\" y=\"%g\" "
			"font-size=\"10\" text-anchor=\"end\">%s</text>\n",
			p->x0 + ML, py(p, y), p->x0 + PW - MR, py(p, y),
			p->x0 + ML - 4, py(p, y) + 3, buf);
	}
	for (unsigned i = 0; i < n; i++) {
		perf_format_param(sc, (uint64_t)xs[i], buf, sizeof(buf));
		fprintf(f, "<text x=\"%g\" y=\"%g\" font-size=\"10\" "
			"text-anchor=\"middle\">%s</text>\n", px(p, xs[i]),
			p->y0 + PH - MB + 14, buf);
	}
	fprintf(f, "<text x=\"%g\" y=\"%g\" font-size=\"11\" "
		"text-anchor=\"middle\">", p->x0 + ML + (PW - ML - MR) / 2.0,
		p->y0 + PH - MB + 30);
	esc(f, sc->param_name);
	fputs("</text>\n", f);
}

static void series(FILE *f, const struct panel *p, int twin, const double *x,
		   const double *y, const double *lo, const double *hi,
		   unsigned n)
{
	if (n > 1) {
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"2\" points=\"", color[twin]);
		for (unsigned i = 0; i < n; i++)
			fprintf(f, "%s%.2f,%.2f", i ? " " : "", px(p, x[i]),
				py(p, y[i]));
		fputs("\"/>\n", f);
	}
	for (unsigned i = 0; i < n; i++) {
		if (lo && hi)
			fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
				"y2=\"%.2f\" stroke=\"%s\"/>\n", px(p, x[i]),
				py(p, lo[i]), px(p, x[i]), py(p, hi[i]),
				color[twin]);
		if (twin == 0)
			fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"4\" "
				"fill=\"%s\"/>\n", px(p, x[i]), py(p, y[i]),
				color[twin]);
		else
			fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"7\" "
				"height=\"7\" fill=\"%s\"/>\n", px(p, x[i]) - 3.5,
				py(p, y[i]) - 3.5, color[twin]);
	}
}

int perf_write_svg(FILE *f, const struct perf_result *r, unsigned variant)
{
	const struct perf_scenario *sc = r->sc;
	double x[PERF_MAX_PARAMS], y[2][PERF_MAX_PARAMS];
	double lo[2][PERF_MAX_PARAMS], hi[2][PERF_MAX_PARAMS];
	unsigned panels = sc->ncounters + 1, rows = (panels + COLS - 1) / COLS;
	char title[160];

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" font-family=\"sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n",
		COLS * PW, (int)rows * PH + 50);
	snprintf(title, sizeof(title), "%s %s%s%s: %s", sc->id, sc->name,
		 sc->nvariants ? " " : "",
		 sc->nvariants ? sc->variants[variant] : "", sc->title);
	fputs("<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">",
	      f);
	esc(f, title);
	fputs("</text>\n", f);
	for (int t = 0; t < 2; t++)
		fprintf(f, "<rect x=\"%d\" y=\"30\" width=\"10\" height=\"10\" "
			"fill=\"%s\"/><text x=\"%d\" y=\"39\" font-size=\"12\">"
			"%s</text>\n", 12 + t * 110, color[t], 26 + t * 110,
			label[t]);

	for (unsigned k = 0; k < panels; k++) {
		struct panel p = { (k % COLS) * PW, 50 + (k / COLS) * PH,
				   INFINITY, -INFINITY, 0 };
		int time = k == sc->ncounters;
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
			p.xmin = fmin(p.xmin, log2(x[n]));
			p.xmax = fmax(p.xmax, log2(x[n]));
			p.ymax = fmax(p.ymax, fmax(hi[0][n], hi[1][n]));
			n++;
		}
		snprintf(title, sizeof(title), "%s",
			 time ? "time (ms, median, q1-q3)" :
				sc->counters[k].name);
		if (n == 0) {
			fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" "
				"fill=\"#888\">", (int)p.x0 + ML,
				(int)p.y0 + PH / 2);
			esc(f, title);
			fputs(": no data</text>\n", f);
			continue;
		}
		if (!(p.ymax > 0))
			p.ymax = 1;
		frame(f, r, &p, title, x, n);
		for (int t = 0; t < 2; t++)
			series(f, &p, t, x, y[t], time ? lo[t] : NULL,
			       time ? hi[t] : NULL, n);
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
