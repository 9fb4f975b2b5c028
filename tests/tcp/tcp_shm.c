/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_shm.c - tcp's same-host path (fi_tcp(7), prov/tcp/tcp_shm.c) seen
 * from the application: receiver A and two senders, B with the path on
 * and C with it off (FI_TCP_SHM=0 in its environment), all tcp RDM
 * endpoints on one host.
 *  1. B and C each send A tagged messages of 8 B .. 1 MiB; A takes them
 *     all with FI_ADDR_UNSPEC receives on one CQ: data, per-sender order
 *     and FI_SOURCE (B's and C's fi_addr, whichever path) are checked.
 *  2. Directed receives for the same tag, one per sender, each get only
 *     their sender's message.
 *  3. The route: A counts the TCP connections accepted on its listening
 *     port (/proc/net/tcp*): only C's when the path is on, B's and C's
 *     in a second run with FI_TCP_SHM=0 for everyone, so the test fails
 *     if shm is not taken.
 * Exits 0 when everything matched, 1 otherwise, 77 without tcp.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "../shm/shm_check.h"
#include "../shm/test_node.h"

#define NMSG	   40
#define MAX_SIZE   (1 << 20)
#define ADDR_MAX   128
#define DIRECT_TAG 0xd1ec7ULL

static const size_t sizes[] = {8, 4096, 65536, MAX_SIZE};
struct node {
	struct test_node t;
	char name[ADDR_MAX];
	size_t namelen;
};

static int node_open(struct node *n)
{
	n->namelen = sizeof(n->name);
	return test_node_open(&n->t, "tcp",
			      FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV, n->name,
			      &n->namelen);
}

static void node_close(struct node *n)
{
	test_node_close(&n->t);
}

/* Reads one CQ entry, progressing; negative on error or timeout. */
static int wait_comp(struct node *n, struct fi_cq_tagged_entry *e,
		     fi_addr_t *src)
{
	struct fi_cq_err_entry err;
	int spins = 0;
	ssize_t ret;

	for (;;) {
		ret = src ? fi_cq_readfrom(n->t.cq, e, 1, src)
			  : fi_cq_read(n->t.cq, e, 1);
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(n->t.cq, &err, 0);
			fprintf(stderr, "completion error %d\n", err.err);
			return -err.err;
		}
		if (ret != -FI_EAGAIN)
			return (int)ret;
		if (++spins > 20 * 1000 * 1000)
			return -FI_ETIMEDOUT;
	}
}

static void fill(uint8_t *buf, size_t len, int who, int seq)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(who * 31 + seq * 7 + i);
}

static int xread(int fd, void *buf, size_t len)
{
	return read(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/* A sender: B (id 1) or C (id 2). */
static int sender(int id, int in, int out)
{
	struct node n = {0};
	struct fi_cq_tagged_entry e;
	fi_addr_t a;
	uint8_t *buf = malloc(MAX_SIZE);
	char name[ADDR_MAX], go;
	size_t len;
	int i;

	if (id == 2)
		setenv("FI_TCP_SHM", "0", 1);
	if (!buf || node_open(&n))
		return 1;
	if (xread(in, &len, sizeof(len)) || len > sizeof(name) ||
	    xread(in, name, len))
		return 1;
	if (write(out, &n.namelen, sizeof(n.namelen)) < 0 ||
	    write(out, n.name, n.namelen) < 0)
		return 1;
	if (fi_av_insert(n.t.av, name, 1, &a, 0, NULL) != 1)
		return 1;
	for (i = 0; i < NMSG; i++) {
		len = sizes[i % 4];
		fill(buf, len, id, i);
		while (fi_tsend(n.t.ep, buf, len, NULL, a,
				(uint64_t)id << 32 | (uint64_t)i,
				NULL) == -FI_EAGAIN)
			fi_cq_read(n.t.cq, &e, 0);
		if (wait_comp(&n, &e, NULL))
			return 1;
	}
	/* Step 2: one message on the shared tag, once A's receives wait. */
	if (xread(in, &go, 1))
		return 1;
	fill(buf, 64, id, 1000);
	while (fi_tsend(n.t.ep, buf, 64, NULL, a, DIRECT_TAG, NULL) ==
	       -FI_EAGAIN)
		fi_cq_read(n.t.cq, &e, 0);
	if (wait_comp(&n, &e, NULL))
		return 1;
	/* Until A counted connections. */
	if (xread(in, &go, 1))
		return 1;
	node_close(&n);
	free(buf);
	return 0;
}

/* Whether socket inode @ino is one of this process's descriptors. */
static bool own_socket(unsigned long ino)
{
	char path[300], link[64], want[40];
	struct dirent *de;
	bool found = false;
	ssize_t len;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return true; /* cannot tell: count it */
	snprintf(want, sizeof(want), "socket:[%lu]", ino);
	while (!found && (de = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		found = !strcmp(link, want);
	}
	closedir(d);
	return found;
}

/*
 * Established TCP connections of ours whose local port is @port: the
 * ones our listener accepted. Other processes' sockets are not counted
 * (make check runs other tests beside this one, and a socket of theirs
 * may have the same local port on another address).
 */
static int count_conns(uint16_t port)
{
	const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	char line[512], local[128], rem[128];
	unsigned int lport, st;
	unsigned long ino;
	int n = 0;

	for (size_t f = 0; f < 2; f++) {
		FILE *fp = fopen(files[f], "r");

		if (!fp)
			continue;
		while (fgets(line, sizeof(line), fp)) {
			if (sscanf(line,
				   " %*d: %127s %127s %x %*s %*s %*s %*u %*u"
				   " %lu",
				   local, rem, &st, &ino) != 4)
				continue;
			if (sscanf(strchr(local, ':') + 1, "%x", &lport) != 1)
				continue;
			if (st == 1 && lport == port && own_socket(ino))
				n++;
		}
		fclose(fp);
	}
	return n;
}

static void receive_all(struct node *n, const fi_addr_t *peer)
{
	struct fi_cq_tagged_entry e;
	uint8_t *bufs[2 * NMSG], want[MAX_SIZE];
	int next[3] = {0, 0, 0}, i, id, seq;
	fi_addr_t src;

	for (i = 0; i < 2 * NMSG; i++) {
		bufs[i] = malloc(MAX_SIZE);
		CHECK(!fi_trecv(n->t.ep, bufs[i], MAX_SIZE, NULL,
				FI_ADDR_UNSPEC, 0, 0xffffffffffffULL, bufs[i]),
		      "post %d", i);
	}
	for (i = 0; i < 2 * NMSG; i++) {
		CHECK(!wait_comp(n, &e, &src), "receive %d never completed", i);
		id = (int)(e.tag >> 32);
		seq = (int)(e.tag & 0xffffffff);
		CHECK(id == 1 || id == 2, "tag %#llx",
		      (unsigned long long)e.tag);
		CHECK(src == peer[id], "sender %d reported as fi_addr %llu", id,
		      (unsigned long long)src);
		CHECK(seq == next[id], "sender %d: message %d before %d", id,
		      seq, next[id]);
		next[id] = seq + 1;
		CHECK(e.len == sizes[seq % 4], "sender %d msg %d len %zu", id,
		      seq, e.len);
		fill(want, e.len, id, seq);
		CHECK(!memcmp(e.op_context, want, e.len),
		      "sender %d msg %d data", id, seq);
	}
	CHECK(next[1] == NMSG && next[2] == NMSG, "got %d from B, %d from C",
	      next[1], next[2]);
	for (i = 0; i < 2 * NMSG; i++)
		free(bufs[i]);
}

static void receive_directed(struct node *n, const fi_addr_t *peer,
			     const int *to)
{
	struct fi_cq_tagged_entry e;
	uint8_t buf[3][64], want[64];
	int id, k;

	for (id = 1; id <= 2; id++)
		CHECK(!fi_trecv(n->t.ep, buf[id], 64, NULL, peer[id],
				DIRECT_TAG, 0, buf[id]),
		      "post directed %d", id);
	for (id = 1; id <= 2; id++)
		CHECK(write(to[id], "g", 1) == 1, "pipe");
	for (k = 0; k < 2; k++) {
		CHECK(!wait_comp(n, &e, NULL),
		      "directed receive never completed");
		id = e.op_context == buf[1] ? 1 : 2;
		fill(want, 64, id, 1000);
		CHECK(!memcmp(buf[id], want, 64),
		      "directed receive for sender %d got another's data", id);
	}
}

static void check_route(struct node *n, bool on)
{
	int conns = count_conns(
		ntohs(((struct sockaddr_in *)(void *)n->name)->sin_port));

	CHECK(conns == (on ? 1 : 2),
	      "%d TCP connection(s) accepted, want %d (same-host path %s)",
	      conns, on ? 1 : 2, on ? "on for B" : "off");
}

static void check_sender(int id, int to, pid_t pid)
{
	int status;

	CHECK(write(to, "q", 1) == 1, "pipe");
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "sender %d failed",
	      id);
}

/* One run: 0, 77 without tcp, 1 when it could not be set up. */
static int scenario(bool on)
{
	int to[3][2], from[3][2], id, ret;
	fi_addr_t peer[3];
	pid_t pid[3];
	struct node n = {0};
	char name[ADDR_MAX];
	size_t len;

	/* B and A take it from here; C turns it off for itself. */
	setenv("FI_TCP_SHM", on ? "1" : "0", 1);
	/* Senders first: nothing of A's is inherited by them. */
	for (id = 1; id <= 2; id++) {
		if (pipe(to[id]) || pipe(from[id]))
			return 1;
		pid[id] = fork();
		if (!pid[id])
			_exit(sender(id, to[id][0], from[id][1]));
	}
	ret = node_open(&n);
	if (ret) {
		for (id = 1; id <= 2; id++)
			kill(pid[id], SIGKILL);
		if (ret == -FI_ENODATA)
			return 77;
		fprintf(stderr, "open: %s\n", fi_strerror(-ret));
		return 1;
	}
	for (id = 1; id <= 2; id++) {
		if (write(to[id][1], &n.namelen, sizeof(n.namelen)) < 0 ||
		    write(to[id][1], n.name, n.namelen) < 0 ||
		    xread(from[id][0], &len, sizeof(len)) ||
		    len > sizeof(name) || xread(from[id][0], name, len) ||
		    fi_av_insert(n.t.av, name, 1, &peer[id], 0, NULL) != 1) {
			fprintf(stderr, "address exchange with %d failed\n",
				id);
			return 1;
		}
	}
	receive_all(&n, peer);
	receive_directed(&n, peer, (int[]){0, to[1][1], to[2][1]});
	check_route(&n, on);
	for (id = 1; id <= 2; id++) {
		check_sender(id, to[id][1], pid[id]);
		close(to[id][1]);
		close(from[id][0]);
		close(to[id][0]);
		close(from[id][1]);
	}
	node_close(&n);
	printf("tcp_shm, same-host path %s: %d failure(s) so far\n",
	       on ? "on" : "off", failures);
	return 0;
}

int main(void)
{
	int ret = scenario(true);

	if (!ret)
		ret = scenario(false);
	if (ret == 77)
		printf("SKIP: no tcp provider\n");
	return ret ? ret : failures ? 1 : 0;
}
