/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * loopback_pair.h - the two ends of a TCP_NODELAY connection over
 * 127.0.0.1, for the floor benchmarks of this folder (raw_tcp.c,
 * raw_tcp_barrier.c), each built alone from its one source file.
 */
#ifndef LOOPBACK_PAIR_H
#define LOOPBACK_PAIR_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

/* 0, or -1 with errno set. */
static inline int loopback_pair(int *a, int *b)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int one = 1, l;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(l, 1) || getsockname(l, (struct sockaddr *)&sa, &len))
		return -1;
	*a = socket(AF_INET, SOCK_STREAM, 0);
	if (*a < 0 || connect(*a, (struct sockaddr *)&sa, sizeof(sa)))
		return -1;
	*b = accept(l, NULL, NULL);
	close(l);
	if (*b < 0)
		return -1;
	if (setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return -1;
	return 0;
}

#endif /* LOOPBACK_PAIR_H */
