/*
 * zoned_model.h - a plain reference model of the zone rules, the naive
 * twin the `zoned` fuzz target holds hw/'s zoned device against.
 *
 * Written from the rules as hw.h and zone_model.c's header state them
 * (ZBC/ZAC, NVMe ZNS, null_blk where they leave a choice), not from that
 * file's code: per zone a type, a condition, a write pointer and the
 * order in which zones became implicitly open; the data in one flat
 * array; every limit found by counting zones, every rule an if.  Slow
 * and obvious on purpose.
 */
#ifndef FSORACLE_FUZZ_ZONED_MODEL_H
#define FSORACLE_FUZZ_ZONED_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "hw/hw.h"

#define ZMOD_MAX_ZONES 16

struct zmod_cfg {
	uint32_t nr_zones, nr_conv, nr_readonly, nr_offline;
	uint64_t zone_size, capacity;
	uint32_t max_open, max_active;   /* 0 = no limit */
	uint32_t max_append;             /* bytes        */
};

struct zmod {
	struct zmod_cfg cfg;
	uint8_t cond[ZMOD_MAX_ZONES];    /* enum hw_zone_cond */
	uint64_t wp[ZMOD_MAX_ZONES];     /* absolute bytes    */
	uint64_t opened_at[ZMOD_MAX_ZONES]; /* for "oldest implicitly open" */
	uint64_t clock;
	uint8_t *data;                   /* nr_zones * zone_size bytes */
};

/*
 * Normalize cfg as the device does (limits at or above the number of
 * sequential zones mean none, max_open capped at max_active, max_append
 * 0 or above the capacity means the capacity) and set up an empty
 * device.  0 or -ENOMEM.
 */
int zmod_init(struct zmod *m, const struct zmod_cfg *cfg);
void zmod_free(struct zmod *m);

/* The same contracts as hw_write, hw_read, hw_zone_append, hw_zone_mgmt. */
int zmod_write(struct zmod *m, uint64_t off, const uint8_t *buf, size_t len);
int zmod_read(struct zmod *m, uint64_t off, uint8_t *buf, size_t len);
int zmod_append(struct zmod *m, uint64_t zone, const uint8_t *buf,
		size_t len, uint64_t *written_off);
int zmod_mgmt(struct zmod *m, enum hw_zone_op op, uint64_t zone);

/* Zone i as hw_report_zones() reports it. */
void zmod_report(const struct zmod *m, uint64_t i, struct hw_zone *z);

#endif
