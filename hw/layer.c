/*
 * layer.c - what every stacking layer (crash, faulty, log) shares: the
 * head, and pass-through ops for the calls a layer leaves alone.  A
 * layer is a struct hw_layer (its own hw_dev, then the device below);
 * hw.c opens the lower device, hands it to the layer's open, and walks
 * stacks (beside its table of layers).
 *
 *     log:crash:mem:1m      hw_dev (log) --lower--> hw_dev (crash)
 *                                          --lower--> hw_dev (mem)
 *
 * Pass-through goes through the lower device's public calls, so every
 * device in a stack keeps its own counters and argument checks.
 */
#include "hw/hw_internal.h"

#include <stdio.h>
#include <stdlib.h>

void hw_layer_init(struct hw_layer *l, const struct hw_ops *ops,
		   struct hw_dev *lower)
{
	hw_dev_init(&l->dev, ops, lower->geo.size, lower->geo.caps);
	l->dev.geo = lower->geo;
	/* a layer's zero-out is its own (the crash layer keeps what it
	 * replaced), whatever the lower device's does */
	l->dev.geo.caps &= ~HW_CAP_ZERO_FREES;
	l->lower = lower;
}

static struct hw_dev *lower_of(struct hw_dev *dev)
{
	return ((struct hw_layer *)dev)->lower;
}

int hw_layer_read(struct hw_dev *dev, uint64_t off, void *buf, size_t len)
{
	return hw_read(lower_of(dev), off, buf, len);
}

const void *hw_layer_view(struct hw_dev *dev, uint64_t off, size_t len)
{
	return hw_view(lower_of(dev), off, len);
}

int hw_layer_write(struct hw_dev *dev, uint64_t off, const void *buf,
		   size_t len, unsigned flags)
{
	return hw_write(lower_of(dev), off, buf, len, flags);
}

int hw_layer_flush(struct hw_dev *dev)
{
	return hw_flush(lower_of(dev));
}

int hw_layer_zero_out(struct hw_dev *dev, uint64_t off, uint64_t len,
		      unsigned flags)
{
	return hw_zero_out(lower_of(dev), off, len, flags);
}

int hw_layer_discard(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	return hw_discard(lower_of(dev), off, len);
}

int hw_layer_persist(struct hw_dev *dev, uint64_t off, uint64_t len)
{
	return hw_persist(lower_of(dev), off, len);
}

int hw_layer_report_zones(struct hw_dev *dev, uint64_t first_zone,
			  struct hw_zone *zones, unsigned *nr)
{
	return hw_report_zones(lower_of(dev), first_zone, zones, nr);
}

int hw_layer_zone_mgmt(struct hw_dev *dev, enum hw_zone_op op, uint64_t zone)
{
	return hw_zone_mgmt(lower_of(dev), op, zone);
}

int hw_layer_zone_append(struct hw_dev *dev, uint64_t zone, const void *buf,
			 size_t len, unsigned flags, uint64_t *written_off)
{
	return hw_zone_append(lower_of(dev), zone, buf, len, flags,
			      written_off);
}

int hw_layer_describe(struct hw_dev *dev, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s over ", dev->ops->name);

	if (n < 0 || (size_t)n >= len)
		return 0;
	return hw_describe(lower_of(dev), buf + n, len - (size_t)n);
}

void hw_layer_destroy(struct hw_dev *dev)
{
	hw_close(lower_of(dev));
	free(dev);
}
