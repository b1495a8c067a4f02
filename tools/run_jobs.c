/*
 * run_jobs.c - the rounds of `fsoracle run` in worker processes
 * (run_jobs.h).
 */
#include "tools/run_jobs.h"
#include "base/fdio.h"
#include "tools/cmds.h"
#include "tools/common.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct run_plan *run_plan_shared(uint64_t max_ops, uint64_t round_ops)
{
	struct run_plan *p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	run_plan_init(p, max_ops, round_ops);
	return p;
}

void run_plan_unmap(struct run_plan *p)
{
	if (p)
		munmap(p, sizeof(*p));
}

int run_jobs_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		n = CPU_COUNT(&set);
		if (n > 0)
			return n;
	}
	n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? n : 1;
}

/* A worker's end: res from its pipe, or the signal that killed it. */
static void reap(int status, int fd, struct run_result *res)
{
	size_t got = 0;

	while (got < sizeof(*res)) {
		ssize_t r = read(fd, (char *)res + got, sizeof(*res) - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got == sizeof(*res) && WIFEXITED(status)) {
		res->signal = 0;
		/* it said all agreed, then failed at exit (a sanitizer's
		 * leak report): that status counts */
		if (!res->rc && WEXITSTATUS(status))
			res->rc = WEXITSTATUS(status);
		return;
	}
	memset(res, 0, sizeof(*res));
	res->failure = -1;
	res->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	/* it ended without a word: as a signal would, or as its status */
	res->rc = WIFSIGNALED(status) ? 128 + res->signal :
		  WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) :
		  EXIT_IO;
}

/* A child: run the worker, send what it found, end. */
static void child(run_worker_fn fn, void *arg, int job, int fd)
{
	struct run_result res;
	bool sent;

	memset(&res, 0, sizeof(res));
	res.failure = -1;
	fn(arg, job, &res);
	sent = fd_write_all(fd, &res, sizeof(res));
	close(fd);
	fflush(NULL);
	exit(sent ? 0 : EXIT_IO);
}

static void nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int run_jobs(int n, run_worker_fn fn, void *arg, struct run_plan *p,
	     bool quiet, double t0, struct run_result *res)
{
	pid_t pid[RUN_JOBS_MAX], parent = getpid();
	int fd[RUN_JOBS_MAX], left = 0, ret = 0;
	struct sigaction dfl = { .sa_handler = SIG_DFL }, old;
	double tlast = t0;

	if (n < 1 || n > RUN_JOBS_MAX)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].failure = -1;
		pid[i] = 0;
		fd[i] = -1;
	}
	/* SIGCHLD ignored (inherited so) would reap the workers unseen */
	sigemptyset(&dfl.sa_mask);
	sigaction(SIGCHLD, &dfl, &old);
	fflush(NULL); /* nothing buffered here is written twice */
	for (int i = 0; i < n; i++) {
		int pfd[2];

		if (pipe(pfd)) {
			ret = -errno;
			break;
		}
		pid[i] = fork();
		if (pid[i] == 0) {
			/* a worker ends with the run: killed (timeout's
			 * SIGTERM), the parent takes its workers along */
			if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent)
				_exit(EXIT_IO);
			for (int k = 0; k < i; k++)
				if (fd[k] >= 0)
					close(fd[k]);
			close(pfd[0]);
			child(fn, arg, i, pfd[1]);
		}
		close(pfd[1]);
		if (pid[i] < 0) {
			ret = -errno;
			pid[i] = 0;
			close(pfd[0]);
			break;
		}
		fd[i] = pfd[0];
		left++;
	}
	if (ret) /* the ones started stop at their next op */
		atomic_store(&p->stop, 1);
	while (left) {
		double tn;

		for (int i = 0; i < n; i++) {
			int status;
			pid_t w;

			if (pid[i] <= 0)
				continue;
			w = waitpid(pid[i], &status, WNOHANG);
			if (w == 0 || (w < 0 && errno == EINTR))
				continue;
			if (w < 0) /* gone unseen: its pipe says what it did */
				status = 0;
			reap(status, fd[i], &res[i]);
			close(fd[i]);
			pid[i] = 0;
			left--;
			if (res[i].signal || (res[i].rc && res[i].failure < 0))
				atomic_store(&p->stop, 1);
		}
		if (!left)
			break;
		nap(50);
		tn = mono_seconds();
		if (!quiet && tn - tlast >= 1.0) {
			uint64_t done = atomic_load(&p->done);

			fprintf(stderr, "  %llu ops, %.0f ops/s\n",
				(unsigned long long)done,
				(double)done / (tn - t0));
			tlast = tn;
		}
	}
	sigaction(SIGCHLD, &old, NULL);
	return ret;
}
