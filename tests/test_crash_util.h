/*
 * test_crash_util.h - cutting power at every write of a recorded run.
 *
 * A recording device (on the public hw_dev vtable) logs every write of a
 * sequence in order; rec_image_at() builds, on a fresh device of the
 * same spec, the image a power cut after the first k writes leaves (the
 * k-th torn to a prefix of `torn` bytes when non-zero).  Tests mount
 * each such image and check what recovery must keep.
 */
#ifndef FSORACLE_TEST_CRASH_UTIL_H
#define FSORACLE_TEST_CRASH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/hw.h"

struct wr { uint64_t off; size_t len; uint8_t *data; };
struct rec_dev {
	struct hw_dev dev;
	struct hw_dev *lower;
	char spec[64];          /* the lower device, for fresh images */
	struct wr *w;
	size_t n, cap;
};

static int rec_read(struct hw_dev *d, uint64_t off, void *buf, size_t len)
{
	return hw_read(((struct rec_dev *)d)->lower, off, buf, len);
}

static int rec_write(struct hw_dev *d, uint64_t off, const void *buf,
		     size_t len, unsigned flags)
{
	struct rec_dev *r = (struct rec_dev *)d;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1024;
		r->w = realloc(r->w, r->cap * sizeof(*r->w));
	}
	r->w[r->n].off = off;
	r->w[r->n].len = len;
	r->w[r->n].data = malloc(len);
	memcpy(r->w[r->n].data, buf, len);
	r->n++;
	return hw_write(r->lower, off, buf, len, flags);
}

static int rec_flush(struct hw_dev *d)
{
	return hw_flush(((struct rec_dev *)d)->lower);
}

static void rec_destroy(struct hw_dev *d)
{
	struct rec_dev *r = (struct rec_dev *)d;

	for (size_t i = 0; i < r->n; i++)
		free(r->w[i].data);
	free(r->w);
	hw_close(r->lower);
	free(r);
}

static const struct hw_ops rec_ops = {
	.name = "record",
	.read = rec_read,
	.write = rec_write,
	.flush = rec_flush,
	.destroy = rec_destroy,
};

static struct rec_dev *rec_open(const char *spec)
{
	struct rec_dev *r = calloc(1, sizeof(*r));

	if (hw_open(spec, &r->lower, NULL, 0)) {
		free(r);
		return NULL;
	}
	snprintf(r->spec, sizeof(r->spec), "%s", spec);
	r->dev.ops = &rec_ops;
	r->dev.geo = r->lower->geo;
	snprintf(r->dev.spec, sizeof(r->dev.spec), "record:%s", spec);
	return r;
}

/* Build the image a cut after k writes leaves (k-th torn to `torn` bytes). */
static struct hw_dev *rec_image_at(struct rec_dev *r, size_t k, size_t torn)
{
	struct hw_dev *d = NULL;

	if (hw_open(r->spec, &d, NULL, 0))
		return NULL;
	for (size_t i = 0; i < k && i < r->n; i++)
		hw_write(d, r->w[i].off, r->w[i].data, r->w[i].len, 0);
	if (torn && k < r->n)
		hw_write(d, r->w[k].off, r->w[k].data,
			 torn < r->w[k].len ? torn : r->w[k].len, 0);
	return d;
}

#endif
