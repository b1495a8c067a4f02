/*
 * isolate.c - calling the property: in this process (fast), or in a
 * child process so that a crash, a signal or a hang is a failure like any
 * other and can still be shrunk.
 *
 * Fork mode, per call:
 *
 *   parent: generate args -> fork -------------------------> poll(pipe)
 *   child:             fork_post hook, run property, write
 *                      [result byte][notes...] to the pipe, _exit(0)
 *
 * The arguments are generated in the parent (the pool must be known
 * there to shrink) and reach the child through fork's copy of memory.  A
 * child that dies, exits without writing a result, or has not finished
 * when the timeout expires (it gets cfg.fork.signal, then SIGKILL after
 * exit_timeout) fails the trial, with what happened as its note.  Every
 * child is reaped before the next trial starts.  Children's stdout and
 * stderr go to /dev/null during search and shrinking (a crashing
 * candidate under ASan prints a full report each time) unless
 * cfg.fork.verbose; the final replay of the minimal counterexample keeps
 * them, so its crash report is shown once.
 */
#include "base/fdio.h"
#include "props/props_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int call_prop(struct props_trial *t)
{
	const struct props_cfg *c = t->cfg;
	void **a = t->args;
	int r;

	if (c->prop1)
		r = c->prop1(t, a[0]);
	else if (c->prop2)
		r = c->prop2(t, a[0], a[1]);
	else if (c->prop3)
		r = c->prop3(t, a[0], a[1], a[2]);
	else
		r = c->propv(t, a, t->nargs);
	if (r != PROPS_PASS && r != PROPS_FAIL && r != PROPS_SKIP)
		r = PROPS_ERROR;
	return r;
}

static void child_quiet(void)
{
	int fd = open("/dev/null", O_WRONLY);

	if (fd < 0)
		return;
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/*
 * Quiet children die of their crash signal at once: a sanitizer's
 * handler would print (to /dev/null) and symbolize a report for every
 * crashing candidate, which costs far more than the candidate.  The
 * final replay keeps the handlers, so the one report shown is complete.
 */
static void child_plain_crashes(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
}


static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait up to ms for the child; 1 if reaped. */
static int reap_within(pid_t pid, int *status, unsigned ms)
{
	for (unsigned waited = 0;; waited++) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return 1;   /* gone already (ECHILD) */
		if (waited >= ms)
			return 0;
		sleep_ms(1);
	}
}

static void note_append(struct props_trial *t, const char *buf, size_t n)
{
	if (t->nnotes + n + 1 > t->capnotes) {
		size_t cap = (t->nnotes + n + 1) * 2;
		char *nn = realloc(t->notes, cap);

		if (!nn)
			return;
		t->notes = nn;
		t->capnotes = cap;
	}
	memcpy(t->notes + t->nnotes, buf, n);
	t->nnotes += n;
	t->notes[t->nnotes] = 0;
}

/* The child: the property, its result byte and notes down fd, exit. */
static _Noreturn void child_run(struct props_trial *t,
				const struct props_info *info, int final,
				int fd)
{
	const struct props_cfg *c = t->cfg;
	unsigned char r;

	if (!final && !c->fork.verbose) {
		child_quiet();
		child_plain_crashes();
	}
	if (c->hooks.fork_post)
		c->hooks.fork_post(info, c->hooks.env);
	trial_clear_notes(t);
	r = (unsigned char)call_prop(t);
	(void)fd_write_all(fd, &r, 1);
	if (t->nnotes)
		(void)fd_write_all(fd, t->notes, t->nnotes);
	close(fd);
	fflush(NULL);
	_exit(0);
}

/*
 * The child's result byte (*res, *got set) and notes from fd until EOF
 * or timeout ms.  1 if the time ran out first, else 0.
 */
static int read_child(struct props_trial *t, int fd, unsigned timeout,
		      unsigned char *res, int *got)
{
	char buf[4096];
	uint64_t deadline = props_now_ns() + (uint64_t)timeout * 1000000ull;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = props_now_ns();
		int left = now >= deadline ? 0 :
			(int)((deadline - now + 999999) / 1000000);
		ssize_t n;
		int pr;

		if (left == 0)
			return 1;
		pr = poll(&pfd, 1, left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			break;
		if (pr == 0)
			continue;   /* re-checked against the deadline */
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;      /* EOF: the child is done */
		if (!*got) {
			*res = (unsigned char)buf[0];
			*got = 1;
			note_append(t, buf + 1, (size_t)n - 1);
		} else {
			note_append(t, buf, (size_t)n);
		}
	}
	return 0;
}

static int call_forked(struct props_trial *t, const struct props_info *info,
		       int final)
{
	const struct props_cfg *c = t->cfg;
	unsigned timeout = c->fork.timeout_ms ? c->fork.timeout_ms : 10000;
	unsigned exit_to = c->fork.exit_timeout_ms ? c->fork.exit_timeout_ms : 100;
	int sig = c->fork.signal ? c->fork.signal : SIGTERM;
	int fds[2], status = 0, got = 0, timed_out, reaped = 0;
	unsigned char res = PROPS_ERROR;
	pid_t pid;

	if (pipe(fds))
		return PROPS_ERROR;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return PROPS_ERROR;
	}
	if (pid == 0) {
		close(fds[0]);
		child_run(t, info, final, fds[1]);
	}
	close(fds[1]);
	trial_clear_notes(t);
	timed_out = read_child(t, fds[0], timeout, &res, &got);
	close(fds[0]);
	if (timed_out) {
		kill(pid, sig);
		reaped = reap_within(pid, &status, exit_to);
		if (!reaped) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
		}
		props_note(t, "timed out after %u ms", timeout);
		return PROPS_FAIL;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status)) {
		props_note(t, "killed by signal %d (%s)", WTERMSIG(status),
			   strsignal(WTERMSIG(status)));
		return PROPS_FAIL;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
		props_note(t, "exited with status %d", WEXITSTATUS(status));
		return PROPS_FAIL;
	}
	if (!got) {
		props_note(t, "exited without a result");
		return PROPS_FAIL;
	}
	return res;
}

int isolate_call(struct props_trial *t, const struct props_info *info,
		 int final)
{
	if (t->cfg->fork.enable)
		return call_forked(t, info, final);
	trial_clear_notes(t);
	return call_prop(t);
}
