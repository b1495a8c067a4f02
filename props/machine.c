/*
 * machine.c - model-based (state-machine) testing on top of the pool.
 *
 * Building a sequence (the argument) uses the model only, never the SUT:
 *
 *   model := init
 *   while props_more():                       each step is one span
 *       choose c among the commands enabled(model)
 *       args := c.gen(bits, model)
 *       if c.pre(model, args): keep (c, args); model := c.next(model, args)
 *       else: drop the step
 *
 * Running it (the property) replays the steps on a fresh SUT, checking
 * each postcondition (c.run against the model before the step) and the
 * invariant after it.
 *
 * Shrinking needs nothing special: deleting a step's span or making an
 * entry smaller yields a new pool, and rebuilding from it goes through
 * the model again, so every shrunk sequence passed its preconditions.
 * A command whose precondition no longer holds after an earlier step was
 * removed is dropped or replaced by what the bits now mean, exactly as
 * when it was first generated.
 */
#include "props/props_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sm_inst {
	const struct props_sm *sm;
	size_t n, cap;
	unsigned *cmd;            /* command index per step            */
	unsigned char *args;      /* n * args_size bytes               */
};

static size_t args_size(const struct props_sm *sm)
{
	return sm->args_size ? sm->args_size : 1;
}

void props_sm_free(void *inst, void *env)
{
	struct sm_inst *s = inst;

	(void)env;
	if (!s)
		return;
	free(s->cmd);
	free(s->args);
	free(s);
}

size_t props_sm_steps(const void *inst)
{
	return ((const struct sm_inst *)inst)->n;
}

static int push_step(struct sm_inst *s, unsigned c, const void *args)
{
	size_t as = args_size(s->sm);

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		unsigned *nc = realloc(s->cmd, cap * sizeof(*nc));
		unsigned char *na;

		if (!nc)
			return -ENOMEM;
		s->cmd = nc;
		na = realloc(s->args, cap * as);
		if (!na)
			return -ENOMEM;
		s->args = na;
		s->cap = cap;
	}
	s->cmd[s->n] = c;
	memcpy(s->args + s->n * as, args, as);
	s->n++;
	return 0;
}

int props_sm_alloc(struct props_trial *t, void *env, void **out)
{
	const struct props_sm *sm = env;
	struct props_many many = PROPS_MANY(0, sm->max_steps ? sm->max_steps : 100,
					    sm->avg_steps ? sm->avg_steps : 20);
	struct sm_inst *s = calloc(1, sizeof(*s));
	void *model = calloc(1, sm->model_size ? sm->model_size : 1);
	void *args = malloc(args_size(sm));
	unsigned *enabled = malloc((sm->ncmds ? sm->ncmds : 1) * sizeof(*enabled));
	int ret = PROPS_PASS;

	if (!s || !model || !args || !enabled || !sm->ncmds) {
		ret = PROPS_ERROR;
		goto out;
	}
	s->sm = sm;
	if (sm->model_init)
		sm->model_init(model, sm->env);
	while (props_more(t, &many)) {
		const struct props_cmd *c;
		unsigned ne = 0;

		for (unsigned i = 0; i < sm->ncmds; i++)
			if (!sm->cmds[i].enabled || sm->cmds[i].enabled(model, sm->env))
				enabled[ne++] = i;
		if (ne == 0)
			break;          /* nothing can run: the sequence ends */
		c = &sm->cmds[enabled[props_below(t, ne)]];
		memset(args, 0, args_size(sm));
		if (c->gen)
			c->gen(t, model, args, sm->env);
		if (c->pre && !c->pre(model, args, sm->env))
			continue;       /* dropped; its bits stay in the pool */
		if (push_step(s, (unsigned)(c - sm->cmds), args)) {
			ret = PROPS_ERROR;
			goto out;
		}
		if (c->next)
			c->next(model, args, sm->env);
	}
out:
	free(model);
	free(args);
	free(enabled);
	if (ret != PROPS_PASS) {
		props_sm_free(s, env);
		s = NULL;
	}
	*out = s;
	return ret;
}

void props_sm_print(FILE *f, const void *inst, void *env)
{
	const struct sm_inst *s = inst;
	const struct props_sm *sm = s->sm;

	(void)env;
	fprintf(f, "%zu steps\n", s->n);
	for (size_t i = 0; i < s->n; i++) {
		const struct props_cmd *c = &sm->cmds[s->cmd[i]];

		fprintf(f, "%3zu  ", i);
		if (c->print)
			c->print(f, s->args + i * args_size(sm), sm->env);
		else
			fputs(c->name, f);
		fputc('\n', f);
	}
}

int props_sm_check(struct props_trial *t, void *steps)
{
	struct sm_inst *s = steps;
	const struct props_sm *sm = s->sm;
	void *model, *sut;
	int r = PROPS_PASS;

	model = calloc(1, sm->model_size ? sm->model_size : 1);
	if (!model)
		return PROPS_ERROR;
	sut = sm->sut_new(sm->env);
	if (!sut) {
		free(model);
		props_note(t, "%s: could not make a fresh system under test",
			   sm->name ? sm->name : "state machine");
		return PROPS_ERROR;
	}
	if (sm->model_init)
		sm->model_init(model, sm->env);
	for (size_t i = 0; i < s->n && r == PROPS_PASS; i++) {
		const struct props_cmd *c = &sm->cmds[s->cmd[i]];
		const void *args = s->args + i * args_size(sm);

		r = c->run(t, sut, model, args, sm->env);
		if (r != PROPS_PASS) {
			props_note(t, "at step %zu (%s)", i, c->name);
			break;
		}
		if (c->next)
			c->next(model, args, sm->env);
		if (sm->invariant)
			r = sm->invariant(t, sut, model, sm->env);
		if (r != PROPS_PASS)
			props_note(t, "in the invariant after step %zu (%s)", i,
				   c->name);
	}
	if (sm->sut_free)
		sm->sut_free(sut, sm->env);
	free(model);
	return r;
}
