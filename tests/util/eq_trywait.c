/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * eq_trywait.c - an application that sleeps on an EQ's fd (FI_WAIT_FD,
 * fi_control FI_GETWAIT) with manual progress, calling fi_trywait before
 * each sleep as fi_trywait(3) asks, sees a join complete: endpoints of
 * shm, tcp and sockets join the whole AV, and nothing drives them but
 * fi_trywait and fi_eq_read of their EQ. Twice per provider: two
 * endpoints sharing one EQ in one process, then one endpoint in each of
 * two processes (where each sleeps until the other's writes arrive).
 * A sleep of 5 s with the join still pending fails the case (before
 * fi_trywait ran the EQ's progress and armed its endpoints, the poll
 * slept for ever). Once joined, an idle EQ lets the application sleep
 * (fi_trywait answers 0) within 2 s.
 *
 * Exit 0 when every provider passed or is missing.
 */
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pair.h"

#define SLEEP_MS 5000

/* Joins @p's endpoints (already started: @want completions to come),
 * sleeping on the EQ's fd whenever fi_trywait allows; *@sleeps counts
 * the sleeps. */
static int join_sleeping(struct pair *p, int want, int *sleeps)
{
	double end = pair_now() + PAIR_WAIT_SEC;
	struct pollfd pfd = {.events = POLLIN};
	struct fid *fids[1] = {&p->eq->fid};
	int joined = 0, ret;

	PAIR_CALL(fi_control(&p->eq->fid, FI_GETWAIT, &pfd.fd));
	while (joined < want) {
		ret = pair_join_read(p, &joined);
		if (ret != -FI_EAGAIN && ret)
			return ret;
		if (!ret)
			continue;
		if (pair_now() > end)
			return -FI_ETIMEDOUT;
		if (fi_trywait(p->fabric, fids, 1))
			continue; /* something to read: read it */
		(*sleeps)++;
		if (poll(&pfd, 1, SLEEP_MS) == 0) {
			printf("  slept %d ms with %d of %d joined\n", SLEEP_MS,
			       joined, want);
			return -FI_ETIMEDOUT;
		}
	}
	/* joined and idle: fi_trywait soon lets the application sleep (the
	 * last acknowledgements may keep it busy for a moment) */
	end = pair_now() + 2;
	while (pair_now() < end) {
		ret = pair_join_read(p, &joined);
		if (ret != -FI_EAGAIN)
			return ret ? ret : -FI_EOTHER;
		ret = fi_trywait(p->fabric, fids, 1);
		if (ret != -FI_EAGAIN)
			return ret;
	}
	printf("  fi_trywait never lets an idle EQ sleep\n");
	return -FI_EBUSY;
}

static int report(const char *prov, const char *how, int ret, int sleeps)
{
	printf("%s: %s %s (%d sleeps) %d\n", ret ? "FAIL" : "PASS", prov, how,
	       sleeps, ret);
	return ret ? 1 : 0;
}

static int run_one(const char *prov)
{
	int ctx[2], ret, sleeps = 0;
	struct pair p;

	ret = pair_open(&p, prov, FI_PROGRESS_MANUAL, FI_WAIT_FD);
	if (!ret)
		ret = pair_join_start(&p, ctx);
	if (!ret)
		ret = join_sleeping(&p, 2, &sleeps);
	pair_close(&p);
	return report(prov, "one process", ret, sleeps);
}

/* Rank @rank's half: its endpoint, names through the pipes, the join,
 * and a last word so that neither closes while the other still joins. */
static int half(const char *prov, int rank, int rfd, int wfd, int *sleeps)
{
	char names[2][PAIR_NAME_LEN];
	struct pair p;
	int ctx[2], ret;
	char c = 0;

	ret = pair_open_n(&p, prov, FI_PROGRESS_MANUAL, FI_WAIT_FD, 1,
			  &names[rank]);
	if (ret)
		goto out;
	ret = -FI_EIO;
	if (write(wfd, names[rank], PAIR_NAME_LEN) != PAIR_NAME_LEN ||
	    read(rfd, names[!rank], PAIR_NAME_LEN) != PAIR_NAME_LEN)
		goto out;
	ret = pair_insert(&p, names);
	if (!ret)
		ret = pair_join_start(&p, ctx);
	if (!ret)
		ret = join_sleeping(&p, 1, sleeps);
	if (!ret && (write(wfd, &c, 1) != 1 || read(rfd, &c, 1) != 1))
		ret = -FI_EIO;
out:
	pair_close(&p);
	return ret;
}

static int run_two(const char *prov)
{
	int down[2], up[2], ret, status, sleeps = 0;
	pid_t pid;

	if (pipe(down) || pipe(up))
		return report(prov, "two processes", -FI_EIO, 0);
	pid = fork();
	if (!pid) {
		close(down[1]);
		close(up[0]);
		alarm(PAIR_WAIT_SEC * 2);
		exit(half(prov, 1, down[0], up[1], &sleeps) ? 1 : 0);
	}
	close(down[0]);
	close(up[1]);
	ret = pid < 0 ? -FI_EIO : half(prov, 0, up[0], down[1], &sleeps);
	close(down[1]);
	close(up[0]);
	if (pid > 0 &&
	    (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	     WEXITSTATUS(status)) &&
	    !ret)
		ret = -FI_EOTHER;
	return report(prov, "two processes", ret, sleeps);
}

int main(void)
{
	static const char *const provs[] = {"shm", "tcp", "sockets"};
	struct pair p;
	int failed = 0;
	size_t i;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (i = 0; i < sizeof(provs) / sizeof(provs[0]); i++) {
		if (pair_open_n(&p, provs[i], FI_PROGRESS_MANUAL, FI_WAIT_FD, 0,
				NULL) == -FI_ENODATA) {
			pair_close(&p);
			printf("SKIP: %s\n", provs[i]);
			continue;
		}
		pair_close(&p);
		failed |= run_one(provs[i]);
		failed |= run_two(provs[i]);
	}
	return failed;
}
