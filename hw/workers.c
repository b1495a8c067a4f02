/*
 * workers.c - a small pool of worker threads, the one piece of the
 * environment the engine's compressed writeback needs (ref/compress.c):
 * "run job(arg, i) for every i in [0, n) on the workers, and return when
 * all are done".  The engine hands it pure work (compressing a buffer it
 * owns); everything ordered (allocation, submission at the write
 * pointer, counters) stays on the calling thread.  A job learns which
 * worker (0..n-1) runs it, so state per worker (a compression context)
 * stays in that worker's cache.
 *
 *   caller            workers (n threads)
 *   hw_workers_submit -> publish batch, wake all; return
 *                     each: claim next index under the lock, run job
 *                     last to finish: signal done
 *   hw_workers_wait <- wait for done
 *
 * hw_workers_run is the two together.  One batch is in flight at a
 * time; between submit and wait the caller does other work (the engine
 * submits the previous batch's frames meanwhile).
 *
 * The lock is taken around every claim and completion, so everything a
 * job wrote happens before hw_workers_run returns.
 */
#include "base/park.h"
#include "hw/hw.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#define HW_WORKERS_MAX 64

struct hw_workers {
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	pthread_t tid[HW_WORKERS_MAX];
	struct hw_worker_id { struct hw_workers *w; unsigned k; }
		id[HW_WORKERS_MAX];
	unsigned nthreads;
	/* the current batch */
	void (*job)(void *arg, unsigned i, unsigned worker);
	void *arg;
	unsigned n, next, finished;
	unsigned long batch;     /* batches published (wakes the workers) */
	int quit;
};

static void *worker(void *p)
{
	const struct hw_worker_id *id = p;
	struct hw_workers *w = id->w;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->quit && w->next >= w->n)
			pthread_cond_wait(&w->work, &w->lock);
		if (w->quit)
			break;
		{
			unsigned i = w->next++;
			void (*job)(void *, unsigned, unsigned) = w->job;
			void *arg = w->arg;

			pthread_mutex_unlock(&w->lock);
			job(arg, i, id->k);
			pthread_mutex_lock(&w->lock);
		}
		if (++w->finished == w->n)
			pthread_cond_signal(&w->done);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int hw_workers_start(unsigned n, struct hw_workers **out)
{
	struct hw_workers *w;

	*out = NULL;
	if (n == 0 || n > HW_WORKERS_MAX)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	if (pthread_mutex_init(&w->lock, NULL)) {
		free(w);
		return -ENOMEM;
	}
	if (pthread_cond_init(&w->work, NULL)) {
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -ENOMEM;
	}
	if (pthread_cond_init(&w->done, NULL)) {
		pthread_cond_destroy(&w->work);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -ENOMEM;
	}
	for (; w->nthreads < n; w->nthreads++) {
		w->id[w->nthreads] = (struct hw_worker_id){ w, w->nthreads };
		park_threads(1); /* before it starts (base/park.h) */
		if (pthread_create(&w->tid[w->nthreads], NULL, worker,
				   &w->id[w->nthreads])) {
			park_threads(-1);
			hw_workers_stop(w);
			return -EAGAIN;
		}
	}
	*out = w;
	return 0;
}

void hw_workers_submit(struct hw_workers *w,
		       void (*job)(void *arg, unsigned i,
					       unsigned worker), void *arg,
		       unsigned n)
{
	hw_workers_wait(w);      /* one batch in flight at a time */
	if (n == 0)
		return;
	pthread_mutex_lock(&w->lock);
	w->job = job;
	w->arg = arg;
	w->n = n;
	w->next = 0;
	w->finished = 0;
	w->batch++;
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->lock);
}

void hw_workers_wait(struct hw_workers *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->finished < w->n)
		pthread_cond_wait(&w->done, &w->lock);
	w->n = w->next = w->finished = 0;
	pthread_mutex_unlock(&w->lock);
}

void hw_workers_run(struct hw_workers *w, void (*job)(void *arg, unsigned i,
					       unsigned worker),
		    void *arg, unsigned n)
{
	hw_workers_submit(w, job, arg, n);
	hw_workers_wait(w);
}

void hw_workers_stop(struct hw_workers *w)
{
	if (!w)
		return;
	hw_workers_wait(w);
	pthread_mutex_lock(&w->lock);
	w->quit = 1;
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->nthreads; i++)
		pthread_join(w->tid[i], NULL);
	park_threads(-(int)w->nthreads);
	pthread_cond_destroy(&w->done);
	pthread_cond_destroy(&w->work);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
