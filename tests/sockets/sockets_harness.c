/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_harness.c - sockets_test.h's sockets_main counts: it runs
 * itself as child processes whose case lists misbehave and checks their
 * exit status:
 *
 *  exit    a case calls exit(0) before the last case ran: status 1
 *  fall    a case forks and its child returns into the case loop: the
 *          child ends with status 1 without running the parent's later
 *          cases (their PASS lines appear once), the parent 0
 *  fail    a case returns nonzero: status 1
 *  all     every case passes: status 0
 *
 * One line per case; exit 0 when every case passed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sockets_test.h"

static int pass(void)
{
	return 0;
}

static int bad(void)
{
	return 1;
}

static int leave(void)
{
	exit(0);
}

/* The child returns 0 like its parent, into the case loop. */
static int fall(void)
{
	pid_t pid = fork();

	if (pid > 0)
		waitpid(pid, NULL, 0);
	return 0;
}

static int none(void)
{
	return 0;
}

static void nothing(void)
{
}

/* The child's exit status for the case list @which; -1 if not run. */
static int status_of(const char *self, const char *which, char *out, size_t len)
{
	char cmd[4096];
	FILE *p;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s", self, which);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int child(const char *which)
{
	static const struct sockets_case exits[] = {
		{"one", pass}, {"exit", leave}, {"three", pass}};
	static const struct sockets_case falls[] = {
		{"one", pass}, {"fork", fall}, {"three", pass}};
	static const struct sockets_case fails[] = {{"one", pass},
						    {"bad", bad}};
	static const struct sockets_case alls[] = {{"one", pass},
						   {"two", pass}};
	const struct sockets_case *c = alls;
	size_t n = 2;

	if (!strcmp(which, "exit")) {
		c = exits;
		n = 3;
	} else if (!strcmp(which, "fall")) {
		c = falls;
		n = 3;
	} else if (!strcmp(which, "fail")) {
		c = fails;
	}
	return sockets_main(none, "nothing", c, n, nothing);
}

/* How often @line is a whole line of @text. */
static int lines(const char *text, const char *line)
{
	size_t len = strlen(line);
	const char *p = text;
	int n = 0;

	while ((p = strstr(p, line))) {
		if ((p == text || p[-1] == '\n') && p[len] == '\n')
			n++;
		p += len;
	}
	return n;
}

int main(int argc, char **argv)
{
	static char out[4096];
	int bad_cnt = 0, st;

	if (argc == 2)
		return child(argv[1]);
	st = status_of(argv[0], "exit", out, sizeof(out));
	bad_cnt += st != 1 || lines(out, "PASS: three");
	printf("%s: exit\n", st == 1 ? "PASS" : "FAIL");
	st = status_of(argv[0], "fall", out, sizeof(out));
	bad_cnt += st != 0 || lines(out, "PASS: three") != 1;
	printf("%s: fall\n",
	       st == 0 && lines(out, "PASS: three") == 1 ? "PASS" : "FAIL");
	st = status_of(argv[0], "fail", out, sizeof(out));
	bad_cnt += st != 1;
	printf("%s: fail\n", st == 1 ? "PASS" : "FAIL");
	st = status_of(argv[0], "all", out, sizeof(out));
	bad_cnt += st != 0;
	printf("%s: all\n", st == 0 ? "PASS" : "FAIL");
	return bad_cnt ? 1 : 0;
}
