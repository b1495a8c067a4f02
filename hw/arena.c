/*
 * arena.c - byte buffers that die together (hw_internal.h): the bytes a
 * crash layer's records keep (what each write replaced, and at a cut
 * what each wrote, read back) live until the next flush forgets every
 * record at once.  A malloc and a free per write (two, when a record
 * kept both from the start) were most of the calls to malloc in a soak
 * and a page fault for every fresh megabyte; here an allocation is a
 * bump in a block kept from one flush to the next.
 *
 *   block 0  |rec a old|rz|rec b old|rz|rec c old|rz|....free....|
 *   block 1  |a write longer than block 0's room|rz|...free.......|
 *
 * hw_arena_reset() empties it when the last record is gone and keeps
 * the largest block; hw_arena_free() gives every block back.  Blocks come
 * from and go to the process's park (base/park.h), so a process with
 * many crash devices that are written in turn (a fuzz target's rigs)
 * shares a few blocks among them instead of keeping one each.  Each allocation is followed by a redzone and, under
 * ASan, everything outside the live allocations is poisoned
 * (base/poison.h), so an overflow past a record's bytes or a use after
 * the reset is reported as it would be with malloc; under MSan what is
 * handed out is uninitialised.  Past HW_ARENA_MAX bytes of blocks (a
 * device that is written and written without a flush) hw_arena_alloc()
 * says no and the caller mallocs.
 */
#include "hw/hw_internal.h"

#include <stdlib.h>

#include "base/park.h"
#include "base/poison.h"

#define ARENA_BLOCK   ((size_t)1 << 20)
#define ARENA_REDZONE 32u

struct hw_arena_block {
	struct hw_arena_block *next;
	size_t cap, used;
	uint8_t bytes[];
};

static size_t round16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

void *hw_arena_alloc(struct hw_arena *a, size_t len)
{
	size_t need = round16(len ? len : 1) + ARENA_REDZONE;
	struct hw_arena_block *b = a->head;
	uint8_t *p;

	if (!b || b->cap - b->used < need) {
		size_t cap = need > ARENA_BLOCK ? need : ARENA_BLOCK;

		if (a->total + cap > HW_ARENA_MAX)
			return NULL;
		b = park_alloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->cap = cap;
		b->used = 0;
		b->next = a->head;
		mem_idle(b->bytes, cap);
		a->head = b;
		a->total += cap;
	}
	p = b->bytes + b->used;
	b->used += need;
	mem_reuse(p, len);
	return p;
}

/* A block back to the process's park (base/park.h), for any arena. */
static void block_free(struct hw_arena_block *b)
{
	if (b)
		park_free(b, sizeof(*b) + b->cap);
}

void hw_arena_reset(struct hw_arena *a)
{
	struct hw_arena_block *keep = NULL, *b = a->head;

	while (b) {
		struct hw_arena_block *next = b->next;

		if (!keep || b->cap > keep->cap) {
			block_free(keep);
			keep = b;
		} else {
			block_free(b);
		}
		b = next;
	}
	a->head = keep;
	a->total = keep ? keep->cap : 0;
	if (keep) {
		keep->next = NULL;
		/* past used it is poisoned still: since it was made, or the
		 * reset before, nothing was handed out there */
		mem_idle(keep->bytes, keep->used);
		keep->used = 0;
	}
}

void hw_arena_free(struct hw_arena *a)
{
	while (a->head) {
		struct hw_arena_block *next = a->head->next;

		block_free(a->head);
		a->head = next;
	}
	a->total = 0;
}
