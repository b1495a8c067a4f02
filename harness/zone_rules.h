/*
 * zone_rules.h - a plain reference model of the zone rules, the naive
 * twin hw/'s emulated zoned device (zoned:mem, zoned:file) is held
 * against: by the `zoned` fuzz target (fuzz/zoned.c) and by the `zoned`
 * property suite (props/suite_zoned.c).
 *
 * Written from the rules as hw.h and zone_model.c's header state them
 * (ZBC/ZAC, NVMe ZNS, null_blk where they leave a choice), not from that
 * file's code: per zone a type, a condition, a write pointer and the
 * order in which zones became implicitly open; the data in one flat
 * array; every limit found by counting zones, every rule an if.  Slow
 * and obvious on purpose.  Tiny devices only (ZRULES_MAX_ZONES zones).
 */
#ifndef FSORACLE_HARNESS_ZONE_RULES_H
#define FSORACLE_HARNESS_ZONE_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "hw/hw.h"

#define ZRULES_MAX_ZONES 16

/* A device as zoned:mem's options describe it (zrules_spec). */
struct zrules_cfg {
	uint32_t nr_zones, nr_conv, nr_readonly, nr_offline;
	uint64_t zone_size, capacity;
	uint32_t max_open, max_active;   /* 0 = no limit */
	uint32_t max_append;             /* bytes, 0 = the capacity */
};

struct zrules {
	struct zrules_cfg cfg;           /* normalized (zrules_init)   */
	uint8_t cond[ZRULES_MAX_ZONES];  /* enum hw_zone_cond          */
	uint64_t wp[ZRULES_MAX_ZONES];   /* absolute bytes             */
	uint64_t opened_at[ZRULES_MAX_ZONES]; /* "oldest implicitly open" */
	uint64_t clock;
	uint8_t *data;                   /* nr_zones * zone_size bytes */
};

/*
 * Normalize cfg as the device does (limits at or above the number of
 * sequential zones mean none, max_open capped at max_active, max_append
 * 0 or above the capacity means the capacity) and set up an empty
 * device.  0, -EINVAL (more than ZRULES_MAX_ZONES zones, no sequential
 * zone, a capacity of 0 or above the zone size) or -ENOMEM.
 */
int zrules_init(struct zrules *m, const struct zrules_cfg *cfg);
void zrules_free(struct zrules *m);

/* The `zoned:mem,...` spec hw_open() takes for the same device. */
void zrules_spec(const struct zrules_cfg *cfg, char *spec, size_t len);

/* The same contracts as hw_write, hw_read, hw_zone_append, hw_zone_mgmt
 * and hw_report_zones. */
int zrules_write(struct zrules *m, uint64_t off, const uint8_t *buf,
		 size_t len);
int zrules_read(const struct zrules *m, uint64_t off, uint8_t *buf,
		size_t len);
int zrules_append(struct zrules *m, uint64_t zone, const uint8_t *buf,
		  size_t len, uint64_t *written_off);
int zrules_mgmt(struct zrules *m, enum hw_zone_op op, uint64_t zone);
int zrules_report(const struct zrules *m, uint64_t first_zone,
		  struct hw_zone *zones, unsigned *nr);

/* Zone i (< nr_zones) as hw_report_zones() reports it. */
void zrules_zone(const struct zrules *m, uint64_t i, struct hw_zone *z);

#endif
