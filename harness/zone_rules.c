/*
 * zone_rules.c - the plain reference model of the zone rules
 * (zone_rules.h).
 *
 *   zone i:  [ start = i * zone_size ......... start + capacity | unusable ]
 *   conventional zones first (i < nr_conv), then sequential ones; the
 *   last nr_readonly + nr_offline sequential zones are read-only, then
 *   offline.
 *
 * Resources: a zone that must open (a write to an EMPTY or CLOSED zone,
 * an explicit open, a finish of an EMPTY or CLOSED zone) first needs an
 * active slot if it was EMPTY, then an open slot; with no open slot free
 * the implicitly open zone that opened first is closed to make one, but
 * only while an active slot is free (null_blk's rule, also for a CLOSED
 * zone that reopens), and with none of those the command fails with -EIO.
 */
#include "harness/zone_rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECTOR 512u

static uint64_t zstart(const struct zrules *m, uint64_t i)
{
	return i * m->cfg.zone_size;
}

static int is_conv(const struct zrules *m, uint64_t i)
{
	return i < m->cfg.nr_conv;
}

static int is_open(uint8_t c)
{
	return c == HW_ZC_IMP_OPEN || c == HW_ZC_EXP_OPEN;
}

static uint32_t count(const struct zrules *m, int active)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->cfg.nr_zones; i++)
		if (is_open(m->cond[i]) || (active && m->cond[i] == HW_ZC_CLOSED))
			n++;
	return n;
}

int zrules_init(struct zrules *m, const struct zrules_cfg *cfg)
{
	uint32_t nr_seq;

	memset(m, 0, sizeof(*m));
	if (!cfg->nr_zones || cfg->nr_zones > ZRULES_MAX_ZONES ||
	    cfg->nr_conv >= cfg->nr_zones || !cfg->capacity ||
	    cfg->capacity > cfg->zone_size || cfg->zone_size % SECTOR ||
	    cfg->capacity % SECTOR ||
	    (uint64_t)cfg->nr_readonly + cfg->nr_offline >
	    cfg->nr_zones - cfg->nr_conv)
		return -EINVAL;
	m->cfg = *cfg;
	nr_seq = m->cfg.nr_zones - m->cfg.nr_conv;
	if (m->cfg.max_active >= nr_seq)
		m->cfg.max_active = 0;
	if (m->cfg.max_open >= nr_seq)
		m->cfg.max_open = 0;
	if (m->cfg.max_active && m->cfg.max_open > m->cfg.max_active)
		m->cfg.max_open = m->cfg.max_active;
	if (!m->cfg.max_append || m->cfg.max_append > m->cfg.capacity)
		m->cfg.max_append = (uint32_t)m->cfg.capacity;
	m->data = calloc(m->cfg.nr_zones, m->cfg.zone_size);
	if (!m->data)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->cfg.nr_zones; i++) {
		uint32_t from_end = m->cfg.nr_zones - 1 - i;

		m->wp[i] = zstart(m, i);
		if (is_conv(m, i))
			m->cond[i] = HW_ZC_NOT_WP;
		else if (from_end < m->cfg.nr_offline)
			m->cond[i] = HW_ZC_OFFLINE;
		else if (from_end < m->cfg.nr_offline + m->cfg.nr_readonly)
			m->cond[i] = HW_ZC_READONLY;
		else
			m->cond[i] = HW_ZC_EMPTY;
	}
	return 0;
}

void zrules_free(struct zrules *m)
{
	free(m->data);
	m->data = NULL;
}

/* Make room for zone i to become open (implicitly or explicitly). */
static int take_resources(struct zrules *m, uint64_t i)
{
	uint8_t c = m->cond[i];

	if (is_open(c))
		return 0;
	if (c == HW_ZC_EMPTY && m->cfg.max_active &&
	    count(m, 1) >= m->cfg.max_active)
		return -EIO;
	if (m->cfg.max_open && count(m, 0) >= m->cfg.max_open) {
		uint64_t oldest = UINT64_MAX, victim = 0;

		if (m->cfg.max_active && count(m, 1) >= m->cfg.max_active)
			return -EIO;
		for (uint32_t z = 0; z < m->cfg.nr_zones; z++)
			if (m->cond[z] == HW_ZC_IMP_OPEN && m->opened_at[z] < oldest) {
				oldest = m->opened_at[z];
				victim = z;
			}
		if (oldest == UINT64_MAX)
			return -EIO;
		m->cond[victim] = m->wp[victim] == zstart(m, victim) ?
				  HW_ZC_EMPTY : HW_ZC_CLOSED;
	}
	return 0;
}

/* One write inside sequential zone i at off. */
static int seq_write(struct zrules *m, uint64_t i, uint64_t off,
		     const uint8_t *buf, size_t len)
{
	uint8_t c = m->cond[i];
	int ret;

	if (off % SECTOR || len % SECTOR)
		return -EINVAL;
	if (c == HW_ZC_FULL || c == HW_ZC_READONLY || c == HW_ZC_OFFLINE)
		return -EIO;
	if (off != m->wp[i] || off + len > zstart(m, i) + m->cfg.capacity)
		return -EIO;
	ret = take_resources(m, i);
	if (ret)
		return ret;
	if (!is_open(c)) {
		m->cond[i] = HW_ZC_IMP_OPEN;
		m->opened_at[i] = ++m->clock;
	}
	memcpy(m->data + off, buf, len);
	m->wp[i] += len;
	if (m->wp[i] == zstart(m, i) + m->cfg.capacity)
		m->cond[i] = HW_ZC_FULL;
	return 0;
}

int zrules_write(struct zrules *m, uint64_t off, const uint8_t *buf, size_t len)
{
	uint64_t size = (uint64_t)m->cfg.nr_zones * m->cfg.zone_size;

	if (len == 0)
		return 0;
	if (off > size || len > size - off)
		return -EINVAL;
	/* Split per zone, as the block layer splits bios. */
	while (len) {
		uint64_t i = off / m->cfg.zone_size;
		uint64_t end = zstart(m, i) + m->cfg.zone_size;
		size_t n = (size_t)(end - off < len ? end - off : len);
		int ret = 0;

		if (is_conv(m, i))
			memcpy(m->data + off, buf, n);
		else
			ret = seq_write(m, i, off, buf, n);
		if (ret)
			return ret;
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

int zrules_read(const struct zrules *m, uint64_t off, uint8_t *buf,
		size_t len)
{
	uint64_t size = (uint64_t)m->cfg.nr_zones * m->cfg.zone_size;

	if (len == 0)
		return 0;
	if (off > size || len > size - off)
		return -EINVAL;
	/* Zone by zone: the written part as written, past the write
	 * pointer zeros; an offline zone fails the read. */
	while (len) {
		uint64_t i = off / m->cfg.zone_size;
		uint64_t end = zstart(m, i) + m->cfg.zone_size;
		uint64_t valid = is_conv(m, i) ? end : m->wp[i];
		size_t n = (size_t)(end - off < len ? end - off : len);
		size_t k = valid <= off ? 0 : valid - off < n ?
			   (size_t)(valid - off) : n;

		if (m->cond[i] == HW_ZC_OFFLINE)
			return -EIO;
		memcpy(buf, m->data + off, k);
		memset(buf + k, 0, n - k);
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

int zrules_append(struct zrules *m, uint64_t zone, const uint8_t *buf,
		size_t len, uint64_t *written_off)
{
	uint64_t at;
	int ret;

	if (zone >= m->cfg.nr_zones || len == 0 || len > m->cfg.max_append ||
	    len % SECTOR)
		return -EINVAL;
	if (is_conv(m, zone))
		return -EIO;
	at = m->wp[zone];
	ret = seq_write(m, zone, at, buf, len);
	if (!ret)
		*written_off = at;
	return ret;
}

int zrules_mgmt(struct zrules *m, enum hw_zone_op op, uint64_t i)
{
	uint8_t c;
	int ret;

	if (op < HW_ZONE_RESET || op > HW_ZONE_FINISH || i >= m->cfg.nr_zones)
		return -EINVAL;
	c = m->cond[i];
	if (is_conv(m, i) || c == HW_ZC_READONLY || c == HW_ZC_OFFLINE)
		return -EIO;
	switch (op) {
	case HW_ZONE_RESET:
		m->cond[i] = HW_ZC_EMPTY;
		m->wp[i] = zstart(m, i);
		return 0;
	case HW_ZONE_OPEN:
		if (c == HW_ZC_FULL)
			return -EIO;
		if (c == HW_ZC_EXP_OPEN)
			return 0;
		ret = take_resources(m, i);
		if (!ret)
			m->cond[i] = HW_ZC_EXP_OPEN;
		return ret;
	case HW_ZONE_CLOSE:
		if (c == HW_ZC_FULL || c == HW_ZC_EMPTY)
			return -EIO;
		if (c == HW_ZC_CLOSED)
			return 0;
		m->cond[i] = m->wp[i] == zstart(m, i) ? HW_ZC_EMPTY : HW_ZC_CLOSED;
		return 0;
	default: /* finish */
		if (c == HW_ZC_FULL)
			return 0;
		if (c == HW_ZC_EMPTY || c == HW_ZC_CLOSED) {
			ret = take_resources(m, i);
			if (ret)
				return ret;
		}
		memset(m->data + m->wp[i], 0,
		       (size_t)(zstart(m, i) + m->cfg.capacity - m->wp[i]));
		m->wp[i] = zstart(m, i) + m->cfg.capacity;
		m->cond[i] = HW_ZC_FULL;
		return 0;
	}
}

/* A conventional zone has no write pointer: Linux reports its end. */
void zrules_zone(const struct zrules *m, uint64_t i, struct hw_zone *z)
{
	memset(z, 0, sizeof(*z));
	z->start = zstart(m, i);
	z->len = m->cfg.zone_size;
	z->type = is_conv(m, i) ? HW_ZONE_CONV : HW_ZONE_SEQ;
	z->cond = m->cond[i];
	z->capacity = is_conv(m, i) ? m->cfg.zone_size : m->cfg.capacity;
	z->wp = is_conv(m, i) ? z->start + z->len : m->wp[i];
}

int zrules_report(const struct zrules *m, uint64_t first_zone,
		  struct hw_zone *zones, unsigned *nr)
{
	if (!nr || first_zone > m->cfg.nr_zones || (*nr && !zones))
		return -EINVAL;
	if (*nr > m->cfg.nr_zones - first_zone)
		*nr = (unsigned)(m->cfg.nr_zones - first_zone);
	for (unsigned k = 0; k < *nr; k++)
		zrules_zone(m, first_zone + k, &zones[k]);
	return 0;
}

void zrules_spec(const struct zrules_cfg *c, char *spec, size_t len)
{
	snprintf(spec, len, "zoned:mem,size=%llu,zone=%llu,cap=%llu,conv=%u,"
		 "append_max=%u,max_open=%u,max_active=%u,readonly=%u,offline=%u",
		 (unsigned long long)c->zone_size * c->nr_zones,
		 (unsigned long long)c->zone_size, (unsigned long long)c->capacity,
		 c->nr_conv, c->max_append, c->max_open, c->max_active,
		 c->nr_readonly, c->nr_offline);
}
