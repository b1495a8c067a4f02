/*
 * round_plan.c - the rounds of `fsoracle run`, handed out (round_plan.h).
 */
#include "harness/round_plan.h"

#include <string.h>

/* The plan is shared by processes: its atomics must need no lock. */
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2 &&
	       ATOMIC_INT_LOCK_FREE == 2,
	       "run_plan's counters must be lock-free to be shared");

void run_plan_init(struct run_plan *p, uint64_t max_ops, uint64_t round_ops)
{
	memset(p, 0, sizeof(*p));
	p->max_ops = max_ops;
	p->round_ops = round_ops ? round_ops : 1;
	p->planned = max_ops ? (max_ops + p->round_ops - 1) / p->round_ops :
			       UINT64_MAX;
	atomic_init(&p->next, 1);
	atomic_init(&p->leftover, 0);
	atomic_init(&p->extra, p->planned == UINT64_MAX ? 0 : p->planned + 1);
	atomic_init(&p->done, 0);
	atomic_init(&p->stop, 0);
	atomic_init(&p->failures, 0);
	atomic_init(&p->printing, 0);
}

uint64_t run_plan_rounds(const struct run_plan *p)
{
	return p->planned;
}

bool run_plan_claim(struct run_plan *p, uint64_t *round, uint64_t *ops)
{
	uint64_t n, left;

	if (atomic_load(&p->stop))
		return false;
	n = atomic_fetch_add(&p->next, 1);
	if (n <= p->planned) {
		uint64_t rest = p->max_ops ? p->max_ops - (n - 1) * p->round_ops :
					     p->round_ops;

		*round = n;
		*ops = rest < p->round_ops ? rest : p->round_ops;
		return true;
	}
	/* the carved rounds are gone: what stalled rounds left */
	left = atomic_load(&p->leftover);
	do {
		if (!left)
			return false;
		*ops = left < p->round_ops ? left : p->round_ops;
	} while (!atomic_compare_exchange_weak(&p->leftover, &left,
					       left - *ops));
	*round = atomic_fetch_add(&p->extra, 1);
	return true;
}

void run_plan_give_back(struct run_plan *p, uint64_t unused)
{
	if (p->max_ops && unused)
		atomic_fetch_add(&p->leftover, unused);
}

uint64_t run_plan_upto(const struct run_plan *p, uint64_t round,
		       uint64_t in_round)
{
	return round <= p->planned ? (round - 1) * p->round_ops + in_round : 0;
}
