/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_hostile.c - a hostile peer against the tcp provider. One process
 * holds the victim endpoint A, a well-behaved peer B, and raw sockets that
 * connect to A like any peer (real handshake, from a listening address
 * that A's AV knows) and then send what no peer of ours would: garbage
 * headers, foreign versions, oversize lengths, reserved bits, a second
 * handshake, answers to requests never made, RMA and atomics with bad
 * keys or ranges, a payload cut short, garbage behind good frames in one
 * write (one read takes them all), a flood past the unexpected bound,
 * and malformed fi_commit frames (range counts, payload, flags, an answer
 * to nothing) next to well-formed ones naming bad ranges. Batched write
 * answers: one completes a window, one to a write asked alone is refused.
 *
 * For every case: the victim never crashes (this process survives, under
 * ASan in CI) nor hangs (deadlines); a protocol violation drops that
 * connection within 5 s; a bad key or range is answered FI_EACCES and the
 * registered buffer stays untouched; A's operations pending on that peer
 * fail with an error; and B's messages to A still arrive, data checked.
 * Two more cases, sread_sleeps and cntr_wait_sleeps, check that
 * fi_cq_sread and fi_cntr_wait sleep on the sockets (few wake-ups while
 * idle) and wake when a message comes.
 * Exit status 0 when every case passed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "ofi.h"
#include "tcp_wire.h"

#define TGT_SIZE 4096
#define TGT_BYTE 0xab

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av_a, *av_b;
static struct fid_cq *cq_a, *cq_b;
static struct fid_ep *ep_a, *ep_b;
static struct fid_mr *mr;
static uint8_t *tgt;
static uint64_t key;
static struct sockaddr_in name_a, name_b;
static fi_addr_t a_b, b_a; /* A's address of B, B's of A */
static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "  %s:%d: ", __func__, __LINE__);      \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			return -1;                                             \
		}                                                              \
	} while (0)

/* The last CQ entries seen on A: completions and errors. */
static struct fi_cq_tagged_entry a_comp;
static struct fi_cq_err_entry a_err;
static int a_ncomp, a_nerr;

static void progress(void)
{
	struct fi_cq_tagged_entry e;
	ssize_t n;

	n = fi_cq_read(cq_a, &e, 1);
	if (n == 1) {
		a_comp = e;
		a_ncomp++;
	} else if (n == -FI_EAVAIL) {
		memset(&a_err, 0, sizeof(a_err));
		if (fi_cq_readerr(cq_a, &a_err, 0) == 1)
			a_nerr++;
	}
	(void)fi_cq_read(cq_b, &e, 1);
}

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	size_t len;
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR;
	hints->fabric_attr->prov_name = strdup("tcp");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	ret = ret ? ret : fi_domain(fabric, info, &domain, NULL);
	ret = ret ? ret : fi_av_open(domain, &av_attr, &av_a, NULL);
	ret = ret ? ret : fi_av_open(domain, &av_attr, &av_b, NULL);
	ret = ret ? ret : fi_cq_open(domain, &cq_attr, &cq_b, NULL);
	cq_attr.wait_obj =
		FI_WAIT_UNSPEC; /* A's is read with fi_cq_sread too */
	ret = ret ? ret : fi_cq_open(domain, &cq_attr, &cq_a, NULL);
	ret = ret ? ret : fi_endpoint(domain, info, &ep_a, NULL);
	ret = ret ? ret : fi_endpoint(domain, info, &ep_b, NULL);
	ret = ret ? ret : fi_ep_bind(ep_a, &av_a->fid, 0);
	ret = ret ? ret : fi_ep_bind(ep_b, &av_b->fid, 0);
	ret = ret ? ret : fi_ep_bind(ep_a, &cq_a->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ? ret : fi_ep_bind(ep_b, &cq_b->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ? ret : fi_enable(ep_a);
	ret = ret ? ret : fi_enable(ep_b);
	if (ret)
		return ret;
	len = sizeof(name_a);
	ret = fi_getname(&ep_a->fid, &name_a, &len);
	len = sizeof(name_b);
	ret = ret ? ret : fi_getname(&ep_b->fid, &name_b, &len);
	if (ret)
		return ret;
	if (fi_av_insert(av_a, &name_b, 1, &a_b, 0, NULL) != 1 ||
	    fi_av_insert(av_b, &name_a, 1, &b_a, 0, NULL) != 1)
		return -FI_EINVAL;
	tgt = malloc(TGT_SIZE);
	memset(tgt, TGT_BYTE, TGT_SIZE);
	ret = fi_mr_reg(domain, tgt, TGT_SIZE, FI_REMOTE_WRITE | FI_REMOTE_READ,
			0, 0, 0, &mr, NULL);
	if (ret)
		return ret;
	key = fi_mr_key(mr);
	return 0;
}

static bool tgt_untouched(void)
{
	size_t i;

	for (i = 0; i < TGT_SIZE; i++) {
		if (tgt[i] != TGT_BYTE)
			return false;
	}
	return true;
}

/* B sends a tagged message to A: A must still serve its good peers. */
static int b_alive(void)
{
	static uint64_t round;
	char out[64], in[64] = {0};
	uint64_t t0 = ofi_gettime_ms();
	int n = a_ncomp;
	ssize_t ret;

	round++;
	snprintf(out, sizeof(out), "still here %llu",
		 (unsigned long long)round);
	ret = fi_trecv(ep_a, in, sizeof(in), NULL, FI_ADDR_UNSPEC,
		       0x77000 + round, 0, NULL);
	CHECK(!ret, "fi_trecv: %zd", ret);
	do {
		ret = fi_tsend(ep_b, out, sizeof(out), NULL, b_a,
			       0x77000 + round, NULL);
		progress();
	} while (ret == -FI_EAGAIN && ofi_gettime_ms() - t0 < 5000);
	CHECK(!ret, "fi_tsend: %zd", ret);
	while (a_ncomp == n || !(a_comp.flags & FI_RECV)) {
		CHECK(ofi_gettime_ms() - t0 < 5000, "B's message never came");
		progress();
	}
	CHECK(!strcmp(in, out), "B's message arrived wrong: '%s'", in);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The raw peer.                                                        */

struct raw {
	int fd;	 /* connected to A */
	int lfd; /* its listening socket: its address is in A's AV */
	struct sockaddr_in laddr;
	fi_addr_t addr; /* A's fi_addr for it */
};

static int raw_write(struct raw *r, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t t0 = ofi_gettime_ms();
	ssize_t n;

	while (len) {
		n = send(r->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN)
			return -errno;
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
		if (ofi_gettime_ms() - t0 > 5000)
			return -ETIMEDOUT;
		progress();
	}
	return 0;
}

/* Reads exactly @len bytes while A progresses; 0, -ECONNRESET at EOF. */
static int raw_read(struct raw *r, void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t t0 = ofi_gettime_ms();
	ssize_t n;

	while (len) {
		n = recv(r->fd, p, len, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (ofi_gettime_ms() - t0 > 5000)
			return -ETIMEDOUT;
		progress();
	}
	return 0;
}

static void raw_hdr(void *buf, uint8_t op, uint16_t flags, uint64_t payload,
		    uint64_t op_id)
{
	struct tcp_hdr_view h = {
		.op = op,
		.flags = flags,
		.payload_len = payload,
		.op_id = op_id,
	};

	tcp_hdr_encode(buf, &h);
}

static int raw_open_as(struct raw *r, bool in_av)
{
	uint8_t frame[TCP_HDR_SIZE + TCP_CONN_BODY_SIZE];
	struct tcp_conn_body c = {.ep_type = TCP_CONN_EP_RDM,
				  .family = TCP_FAMILY_INET};
	struct tcp_hdr_view h = {.op = TCP_OP_CONN_REQ,
				 .body_len = TCP_CONN_BODY_SIZE};
	socklen_t len = sizeof(r->laddr);

	memset(r, 0, sizeof(*r));
	r->laddr.sin_family = AF_INET;
	r->laddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r->lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(r->lfd >= 0 && !bind(r->lfd, (void *)&r->laddr, len) &&
		      !listen(r->lfd, 4) &&
		      !getsockname(r->lfd, (void *)&r->laddr, &len),
	      "raw listener: %s", strerror(errno));
	r->addr = FI_ADDR_NOTAVAIL;
	CHECK(!in_av ||
		      fi_av_insert(av_a, &r->laddr, 1, &r->addr, 0, NULL) == 1,
	      "inserting the raw peer");
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(r->fd >= 0 && !connect(r->fd, (void *)&name_a, sizeof(name_a)),
	      "connect to A: %s", strerror(errno));
	c.port = ntohs(r->laddr.sin_port);
	memcpy(c.addr, &r->laddr.sin_addr, 4);
	tcp_hdr_encode(frame, &h);
	tcp_conn_body_encode(frame + TCP_HDR_SIZE, &c);
	CHECK(!raw_write(r, frame, sizeof(frame)), "handshake write");
	CHECK(!raw_read(r, frame, sizeof(frame)), "no handshake answer");
	CHECK(!tcp_hdr_decode(frame, sizeof(frame), &h) &&
		      h.op == TCP_OP_CONN_RESP && h.status == 0,
	      "handshake refused");
	return 0;
}

static int raw_open(struct raw *r)
{
	return raw_open_as(r, true);
}

static void raw_close(struct raw *r)
{
	if (r->fd >= 0)
		close(r->fd);
	close(r->lfd);
	if (r->addr != FI_ADDR_NOTAVAIL)
		fi_av_remove(av_a, &r->addr, 1, 0);
	progress();
}

/* A must close the connection: EOF or reset within 5 s. */
static int expect_drop(struct raw *r)
{
	uint64_t t0 = ofi_gettime_ms();
	uint8_t sink[4096];
	ssize_t n;

	for (;;) {
		n = recv(r->fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			return 0;
		CHECK(ofi_gettime_ms() - t0 < 5000,
		      "A kept the connection of a hostile peer");
		progress();
	}
}

/* A must answer @op for op_id 7 with FI_EACCES and keep the connection. */
static int expect_eacces(struct raw *r, uint8_t op)
{
	uint8_t buf[TCP_HDR_SIZE];
	struct tcp_hdr_view h;

	CHECK(!raw_read(r, buf, sizeof(buf)), "no answer");
	CHECK(!tcp_hdr_decode(buf, sizeof(buf), &h), "answer undecodable");
	CHECK(h.op == op && h.op_id == 7 && h.status == FI_EACCES &&
		      !h.payload_len,
	      "answer %s status %u payload %llu", tcp_op_str(h.op), h.status,
	      (unsigned long long)h.payload_len);
	CHECK(tgt_untouched(), "the registered buffer was written");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Cases.                                                               */

/* Sends @len bytes of @frame after the handshake; A must drop us. */
static int send_garbage(const void *frame, size_t len)
{
	struct raw r;
	int ret;

	if (raw_open(&r))
		return -1;
	ret = raw_write(&r, frame, len);
	ret = ret ? ret : expect_drop(&r);
	raw_close(&r);
	return ret;
}

static int c_bad_version(void)
{
	uint8_t f[TCP_HDR_SIZE];

	raw_hdr(f, TCP_OP_MSG, 0, 0, 0);
	f[0] = 99;
	return send_garbage(f, sizeof(f));
}

static int c_bad_op(void)
{
	uint8_t f[TCP_HDR_SIZE];

	raw_hdr(f, TCP_OP_MSG, 0, 0, 0);
	f[1] = 200;
	return send_garbage(f, sizeof(f));
}

static int c_random_bytes(void)
{
	uint8_t f[512];
	size_t i;

	for (i = 0; i < sizeof(f); i++)
		f[i] = (uint8_t)(i * 37 + 11);
	return send_garbage(f, sizeof(f));
}

static int c_oversize(void)
{
	uint8_t f[TCP_HDR_SIZE];

	raw_hdr(f, TCP_OP_MSG, 0, 1ULL << 40, 0);
	return send_garbage(f, sizeof(f));
}

static int c_reserved_flags(void)
{
	uint8_t f[TCP_HDR_SIZE];

	raw_hdr(f, TCP_OP_TAGGED, 0x8000, 0, 0);
	return send_garbage(f, sizeof(f));
}

static int c_second_handshake(void)
{
	uint8_t f[TCP_HDR_SIZE + TCP_CONN_BODY_SIZE];
	struct tcp_conn_body c = {.ep_type = TCP_CONN_EP_RDM,
				  .family = TCP_FAMILY_INET,
				  .port = 1};
	struct tcp_hdr_view h = {.op = TCP_OP_CONN_REQ,
				 .body_len = TCP_CONN_BODY_SIZE};

	tcp_hdr_encode(f, &h);
	tcp_conn_body_encode(f + TCP_HDR_SIZE, &c);
	return send_garbage(f, sizeof(f));
}

static int c_unknown_answer(void)
{
	uint8_t f[TCP_HDR_SIZE];

	raw_hdr(f, TCP_OP_WRITE_RESP, 0, 0, 12345);
	return send_garbage(f, sizeof(f));
}

static int c_unknown_read_data(void)
{
	uint8_t f[TCP_HDR_SIZE + 64] = {0};

	raw_hdr(f, TCP_OP_READ_RESP, 0, 64, (uint64_t)3 << 32 | 5);
	return send_garbage(f, sizeof(f));
}

/* An RMA request with one iov; then @payload bytes of 0x5a. */
static int rma_req(struct raw *r, uint8_t op, uint64_t addr, uint64_t len,
		   uint64_t k, uint64_t payload)
{
	uint8_t f[TCP_HDR_SIZE + TCP_RMA_IOV_SIZE];
	struct tcp_rma_iov iov = {addr, len, k};
	struct tcp_hdr_view h = {.op = op,
				 .op_id = 7,
				 .payload_len = payload,
				 .body_len = TCP_RMA_IOV_SIZE};
	uint8_t *data;
	int ret;

	tcp_hdr_encode(f, &h);
	tcp_rma_body_encode(f + TCP_HDR_SIZE, &iov, 1);
	ret = raw_write(r, f, sizeof(f));
	if (ret || !payload)
		return ret;
	data = malloc(payload);
	memset(data, 0x5a, payload);
	ret = raw_write(r, data, payload);
	free(data);
	return ret;
}

static int rma_case(uint8_t op, uint64_t addr, uint64_t len, uint64_t k)
{
	uint8_t answer =
		op == TCP_OP_WRITE_REQ ? TCP_OP_WRITE_RESP : TCP_OP_READ_RESP;
	struct raw r;
	int ret;

	if (raw_open(&r))
		return -1;
	ret = rma_req(&r, op, addr, len, k, op == TCP_OP_WRITE_REQ ? len : 0);
	ret = ret ? ret : expect_eacces(&r, answer);
	raw_close(&r);
	return ret;
}

static int c_write_bad_key(void)
{
	return rma_case(TCP_OP_WRITE_REQ, (uintptr_t)tgt, 64, key + 1);
}

static int c_write_past_end(void)
{
	return rma_case(TCP_OP_WRITE_REQ, (uintptr_t)tgt + TGT_SIZE - 8, 64,
			key);
}

static int c_write_before_start(void)
{
	return rma_case(TCP_OP_WRITE_REQ, (uintptr_t)tgt - 8, 16, key);
}

static int c_read_bad_key(void)
{
	return rma_case(TCP_OP_READ_REQ, (uintptr_t)tgt, 64, key ^ 0xff00);
}

static int c_read_past_end(void)
{
	return rma_case(TCP_OP_READ_REQ, (uintptr_t)tgt, TGT_SIZE + 1, key);
}

/* A peer A's AV does not know is still answered, on its connection. */
static int c_unknown_peer_bad_key(void)
{
	struct raw r;
	int ret;

	if (raw_open_as(&r, false))
		return -1;
	ret = rma_req(&r, TCP_OP_WRITE_REQ, (uintptr_t)tgt, 64, key + 9, 64);
	ret = ret ? ret : expect_eacces(&r, TCP_OP_WRITE_RESP);
	raw_close(&r);
	return ret;
}

static int c_atomic_bad_key(void)
{
	uint8_t f[TCP_HDR_SIZE + TCP_ATOMIC_BODY_SIZE + TCP_RMA_IOV_SIZE + 8];
	struct tcp_rma_iov iov = {(uintptr_t)tgt, 8, key + 3};
	struct tcp_hdr_view h = {
		.op = TCP_OP_ATOMIC_REQ, .op_id = 7, .payload_len = 8};
	struct raw r;
	int ret;

	h.body_len = (uint16_t)tcp_atomic_body_encode(
		f + TCP_HDR_SIZE, TCP_ATOMIC_WRITE, FI_SUM, FI_UINT64, &iov, 1);
	tcp_hdr_encode(f, &h);
	memset(f + TCP_HDR_SIZE + h.body_len, 1, 8);
	if (raw_open(&r))
		return -1;
	ret = raw_write(&r, f, TCP_HDR_SIZE + h.body_len + 8);
	ret = ret ? ret : expect_eacces(&r, TCP_OP_ATOMIC_RESP);
	raw_close(&r);
	return ret;
}

/* ------------------------------------------------------------------ */
/* fi_commit frames (persistent memory).                                */

/*
 * A COMMIT frame of @count ranges (all @iov) with header @flags, @status
 * and @payload bytes announced (and sent); op_id 7.
 */
static int commit_frame(struct raw *r, size_t count, struct tcp_rma_iov iov,
			uint16_t flags, uint16_t status, uint64_t payload)
{
	uint8_t f[TCP_HDR_SIZE + (TCP_COMMIT_IOV_MAX + 2) * TCP_RMA_IOV_SIZE +
		  64] = {0};
	struct tcp_hdr_view h = {.op = TCP_OP_COMMIT,
				 .op_id = 7,
				 .flags = flags,
				 .status = status,
				 .payload_len = payload};
	size_t i, len;

	for (i = 0; i < count; i++)
		tcp_commit_body_encode(f + TCP_HDR_SIZE + i * TCP_RMA_IOV_SIZE,
				       &iov, 1);
	h.body_len = (uint16_t)(count * TCP_RMA_IOV_SIZE);
	tcp_hdr_encode(f, &h);
	len = TCP_HDR_SIZE + h.body_len + (payload <= 64 ? payload : 0);
	return raw_write(r, f, len);
}

static int commit_garbage(size_t count, uint16_t flags, uint16_t status,
			  uint64_t payload)
{
	struct tcp_rma_iov iov = {(uintptr_t)tgt, 64, key};
	struct raw r;
	int ret;

	if (raw_open(&r))
		return -1;
	ret = commit_frame(&r, count, iov, flags, status, payload);
	ret = ret ? ret : expect_drop(&r);
	raw_close(&r);
	CHECK(!ret,
	      "commit of %zu iovs, flags 0x%x, status %u, payload %llu "
	      "kept",
	      count, flags, status, (unsigned long long)payload);
	return 0;
}

/* No range, or more than fi_commit(3) allows: a broken stream. */
static int c_commit_bad_count(void)
{
	if (commit_garbage(0, 0, 0, 0))
		return -1;
	if (commit_garbage(TCP_COMMIT_IOV_MAX + 1, 0, 0, 0))
		return -1;
	return commit_garbage(TCP_IOV_MAX, 0, 0, 0);
}

/* A commit carries no payload, not even one byte. */
static int c_commit_payload(void)
{
	if (commit_garbage(1, 0, 0, 8))
		return -1;
	return commit_garbage(1, 0, 0, 1ULL << 40);
}

/* Flags (known or not) and a status on a commit request. */
static int c_commit_flags(void)
{
	if (commit_garbage(1, TCP_F_COMMIT, 0, 0))
		return -1;
	if (commit_garbage(1, TCP_F_ACK_REQ, 0, 0))
		return -1;
	if (commit_garbage(1, 0x8000, 0, 0))
		return -1;
	return commit_garbage(1, 0, FI_EIO, 0);
}

/* A commit-complete message must ask for the ACK that carries it. */
static int c_commit_msg_no_ack(void)
{
	uint8_t f[TCP_HDR_SIZE + 16] = {0};

	raw_hdr(f, TCP_OP_MSG, TCP_F_COMMIT, 16, 3);
	return send_garbage(f, sizeof(f));
}

/* An answer to a commit never made. */
static int c_commit_unknown_answer(void)
{
	uint8_t f[TCP_HDR_SIZE];
	struct tcp_hdr_view h = {.op = TCP_OP_COMMIT_RESP, .op_id = 4242};

	tcp_hdr_encode(f, &h);
	return send_garbage(f, sizeof(f));
}

/*
 * Well-formed commits naming a bad key, a volatile registration, a range
 * that wraps: answered FI_EACCES, the connection kept, nothing touched.
 */
static int c_commit_bad_range(void)
{
	struct tcp_rma_iov bad[] = {
		{(uintptr_t)tgt, 64, key + 5},
		{(uintptr_t)tgt, 64, key}, /* not FI_RMA_PMEM */
		{(uintptr_t)tgt + 64, UINT64_MAX - 8, key},
		{(uintptr_t)tgt, TGT_SIZE + 1, key},
	};
	struct raw r;
	size_t i;
	int ret = 0;

	if (raw_open(&r))
		return -1;
	for (i = 0; i < OFI_ARRAY_SIZE(bad) && !ret; i++) {
		ret = commit_frame(&r, i % 2 ? 1 : TCP_COMMIT_IOV_MAX, bad[i],
				   0, 0, 0);
		ret = ret ? ret : expect_eacces(&r, TCP_OP_COMMIT_RESP);
	}
	raw_close(&r);
	return ret;
}

/* A's read from the raw peer is pending when the peer turns hostile. */
static int c_pending_read_fails(void)
{
	uint8_t f[TCP_HDR_SIZE + TCP_RMA_IOV_SIZE], junk[TCP_HDR_SIZE];
	char buf[256];
	uint64_t t0;
	int n = a_nerr;
	struct raw r;
	ssize_t ret;

	if (raw_open(&r))
		return -1;
	ret = fi_read(ep_a, buf, sizeof(buf), NULL, r.addr, 0x1000, 42, buf);
	CHECK(!ret, "fi_read: %zd", ret);
	CHECK(!raw_read(&r, f, sizeof(f)), "the read request never came");
	memset(junk, 0xee, sizeof(junk));
	CHECK(!raw_write(&r, junk, sizeof(junk)), "garbage write");
	t0 = ofi_gettime_ms();
	while (a_nerr == n) {
		CHECK(ofi_gettime_ms() - t0 < 5000,
		      "the pending read did not fail");
		progress();
	}
	CHECK(a_err.op_context == buf && a_err.err,
	      "error entry for another op (err %d)", a_err.err);
	raw_close(&r);
	return 0;
}

/*
 * Batched answers (TCP_F_BATCH): A's window of writes carries the flag
 * and one answer naming the last completes them all, successfully.
 */
static int c_batch_answer(void)
{
	enum { N = 3 };
	uint8_t f[TCP_HDR_SIZE + TCP_RMA_IOV_SIZE + 8];
	uint64_t src[N] = {1, 2, 3}, t0;
	struct tcp_hdr_view h;
	int i, ncomp = a_ncomp, nerr = a_nerr;
	struct raw r;
	ssize_t ret;

	if (raw_open(&r))
		return -1;
	for (i = 0; i < N; i++) {
		ret = fi_write(ep_a, &src[i], 8, NULL, r.addr, 0x1000, 42,
			       &src[i]);
		CHECK(!ret, "fi_write: %zd", ret);
	}
	for (i = 0; i < N; i++) {
		CHECK(!raw_read(&r, f, sizeof(f)), "write %d never came", i);
		CHECK(!tcp_hdr_decode(f, sizeof(f), &h) &&
			      h.op == TCP_OP_WRITE_REQ &&
			      (h.flags & TCP_F_BATCH),
		      "write %d: op %s flags %#x", i, tcp_op_str(h.op),
		      h.flags);
	}
	raw_hdr(f, TCP_OP_WRITE_RESP, TCP_F_BATCH, 0, h.op_id);
	CHECK(!raw_write(&r, f, TCP_HDR_SIZE), "answer write");
	t0 = ofi_gettime_ms();
	while (a_ncomp - ncomp < N && a_nerr == nerr) {
		CHECK(ofi_gettime_ms() - t0 < 5000, "%d of %d writes completed",
		      a_ncomp - ncomp, N);
		progress();
	}
	CHECK(a_nerr == nerr && a_comp.op_context == &src[N - 1],
	      "errors %d, last completion %p", a_nerr - nerr,
	      a_comp.op_context);
	raw_close(&r);
	return 0;
}

/* A batched answer to a write A asked alone (FI_COMMIT_COMPLETE): not
 * an answer of ours, A drops the connection and the write fails. */
static int c_batch_answer_alone(void)
{
	uint8_t f[TCP_HDR_SIZE + TCP_RMA_IOV_SIZE + 8];
	uint64_t src = 5, t0;
	struct iovec iov = {&src, 8};
	struct fi_rma_iov rma = {0x1000, 8, 42};
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .iov_count = 1,
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = &src};
	struct tcp_hdr_view h;
	int nerr = a_nerr;
	struct raw r;
	ssize_t ret;

	if (raw_open(&r))
		return -1;
	msg.addr = r.addr;
	ret = fi_writemsg(ep_a, &msg, FI_COMMIT_COMPLETE | FI_COMPLETION);
	CHECK(!ret, "fi_writemsg: %zd", ret);
	CHECK(!raw_read(&r, f, sizeof(f)), "the write never came");
	CHECK(!tcp_hdr_decode(f, sizeof(f), &h) && h.op == TCP_OP_WRITE_REQ &&
		      !(h.flags & TCP_F_BATCH),
	      "op %s flags %#x", tcp_op_str(h.op), h.flags);
	raw_hdr(f, TCP_OP_WRITE_RESP, TCP_F_BATCH, 0, h.op_id);
	CHECK(!raw_write(&r, f, TCP_HDR_SIZE), "answer write");
	t0 = ofi_gettime_ms();
	while (a_nerr == nerr) {
		CHECK(ofi_gettime_ms() - t0 < 5000, "the write did not fail");
		progress();
	}
	CHECK(a_err.op_context == &src && a_err.err,
	      "error entry for another op (err %d)", a_err.err);
	raw_close(&r);
	return 0;
}

/* A receive filling from the raw peer when it closes mid-payload. */
static int c_cut_payload(void)
{
	uint8_t f[TCP_HDR_SIZE + 10] = {0};
	char buf[1000];
	uint64_t t0;
	int n = a_nerr;
	struct raw r;
	ssize_t ret;

	ret = fi_trecv(ep_a, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 0x4242, 0,
		       buf);
	CHECK(!ret, "fi_trecv: %zd", ret);
	if (raw_open(&r))
		return -1;
	tcp_hdr_encode(f, &(struct tcp_hdr_view){.op = TCP_OP_TAGGED,
						 .tag = 0x4242,
						 .payload_len = 1000});
	CHECK(!raw_write(&r, f, sizeof(f)), "write");
	close(r.fd);
	r.fd = -1;
	t0 = ofi_gettime_ms();
	while (a_nerr == n) {
		CHECK(ofi_gettime_ms() - t0 < 5000,
		      "the receive of a cut message did not fail");
		progress();
	}
	CHECK(a_err.op_context == buf, "error entry for another op");
	raw_close(&r);
	return 0;
}

/*
 * Three good messages, garbage, and a fourth message, all in one write:
 * A reads them in one go, so it parses the garbage from the same buffer
 * the good ones came in. The three arrive whole, the connection drops at
 * the garbage, and nothing after it is delivered.
 */
static int c_garbage_in_batch(void)
{
	uint8_t f[5 * (TCP_HDR_SIZE + 16)] = {0}, *p = f;
	char buf[4][16];
	int i, n = a_ncomp;
	uint64_t t0;
	struct raw r;
	ssize_t ret;

	memset(buf, 0, sizeof(buf));
	for (i = 0; i < 4; i++) {
		ret = fi_trecv(ep_a, buf[i], sizeof(buf[i]), NULL,
			       FI_ADDR_UNSPEC, 0x5100 + i, 0, buf[i]);
		CHECK(!ret, "fi_trecv: %zd", ret);
	}
	for (i = 0; i < 4; i++) {
		if (i == 3) { /* a foreign version, then the fourth */
			raw_hdr(p, TCP_OP_MSG, 0, 16, 0);
			p[0] = TCP_WIRE_VERSION + 1;
			p += TCP_HDR_SIZE + 16;
		}
		tcp_hdr_encode(p, &(struct tcp_hdr_view){.op = TCP_OP_TAGGED,
							 .tag = 0x5100 + i,
							 .payload_len = 16});
		snprintf((char *)p + TCP_HDR_SIZE, 16, "message %d", i);
		p += TCP_HDR_SIZE + 16;
	}
	if (raw_open(&r))
		return -1;
	CHECK(send(r.fd, f, sizeof(f), MSG_NOSIGNAL) == (ssize_t)sizeof(f),
	      "write");
	CHECK(!expect_drop(&r), "A kept the connection");
	t0 = ofi_gettime_ms();
	while (a_ncomp < n + 3 && ofi_gettime_ms() - t0 < 5000)
		progress();
	for (i = 0; i < 10; i++)
		progress();
	CHECK(a_ncomp == n + 3, "%d messages arrived, not 3", a_ncomp - n);
	for (i = 0; i < 3; i++) {
		char want[16] = {0};

		snprintf(want, sizeof(want), "message %d", i);
		CHECK(!memcmp(buf[i], want, 16), "message %d arrived wrong", i);
	}
	CHECK(!buf[3][0], "the message after the garbage was delivered");
	CHECK(!fi_cancel(&ep_a->fid, buf[3]), "cancel");
	n = a_nerr;
	t0 = ofi_gettime_ms();
	while (a_nerr == n && ofi_gettime_ms() - t0 < 5000)
		progress();
	CHECK(a_err.op_context == buf[3] && a_err.err == FI_ECANCELED,
	      "no cancel entry for the fourth receive");
	raw_close(&r);
	return 0;
}

/* More unexpected data than A buffers: A stalls, allocates nothing. */
static int c_unexpected_flood(void)
{
	uint8_t f[TCP_HDR_SIZE];
	static uint8_t chunk[1 << 16];
	uint64_t t0 = ofi_gettime_ms();
	size_t sent = 0;
	struct raw r;
	ssize_t n;

	if (raw_open(&r))
		return -1;
	raw_hdr(f, TCP_OP_MSG, 0, 1ULL << 31, 0);
	CHECK(!raw_write(&r, f, sizeof(f)), "write");
	/* Push until TCP stops taking it: A must not read 2 GiB. */
	while (ofi_gettime_ms() - t0 < 1500) {
		n = send(r.fd, chunk, sizeof(chunk),
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0)
			sent += (size_t)n;
		progress();
	}
	CHECK(sent < (256u << 20), "A swallowed %zu bytes unexpected", sent);
	raw_close(&r);
	return 0;
}

/* Times this process went to sleep so far. */
static long sleeps(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw;
}

static uint64_t sent_at;
static atomic_int sender_stop;

/* B sends to *@arg (default A) after 300 ms. */
static void *late_sender(void *arg)
{
	static char msg[32] = "wake up";
	fi_addr_t to = arg ? *(fi_addr_t *)arg : b_a;
	struct fi_cq_tagged_entry e;

	usleep(300 * 1000);
	sent_at = ofi_gettime_ms();
	while (fi_tsend(ep_b, msg, sizeof(msg), NULL, to, 0x5eed, NULL) ==
	       -FI_EAGAIN)
		;
	/* B's progress (connecting, writing) until the receiver has it:
	 * a small send completes at once, before it is on the wire. */
	while (!atomic_load(&sender_stop))
		(void)fi_cq_read(cq_b, &e, 1);
	return arg;
}

/* fi_cq_sread sleeps on the sockets and wakes when a message comes. */
static int c_sread_sleeps(void)
{
	struct fi_cq_tagged_entry e;
	char in[32] = {0};
	uint64_t t0;
	pthread_t th;
	long naps;
	ssize_t n;

	t0 = ofi_gettime_ms();
	naps = sleeps();
	n = fi_cq_sread(cq_a, &e, 1, NULL, 400);
	naps = sleeps() - naps;
	CHECK(n == -FI_EAGAIN, "idle sread: %zd", n);
	CHECK(ofi_gettime_ms() - t0 >= 390, "sread returned early");
	/* 1 ms naps would wake ~400 times; sleeping on the sockets ~40. */
	CHECK(naps < 100, "idle sread of 400 ms woke %ld times", naps);

	CHECK(!fi_trecv(ep_a, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 0x5eed, 0,
			in),
	      "fi_trecv");
	atomic_store(&sender_stop, 0);
	CHECK(!pthread_create(&th, NULL, late_sender, NULL), "thread");
	n = fi_cq_sread(cq_a, &e, 1, NULL, 5000);
	t0 = ofi_gettime_ms();
	atomic_store(&sender_stop, 1);
	pthread_join(th, NULL);
	CHECK(n == 1 && e.op_context == in, "sread: %zd", n);
	CHECK(t0 - sent_at < 200, "woke %llu ms after the send",
	      (unsigned long long)(t0 - sent_at));
	return 0;
}

/* fi_cntr_wait sleeps on the sockets too (endpoint C, a receive counter). */
static int c_cntr_wait_sleeps(void)
{
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP,
				  .wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr qa = {.format = FI_CQ_FORMAT_TAGGED};
	struct sockaddr_in name_c;
	size_t len = sizeof(name_c);
	struct fid_cntr *cntr;
	struct fid_cq *cq_c;
	struct fid_ep *ep_c;
	char in[32] = {0};
	fi_addr_t b_c;
	pthread_t th;
	uint64_t t0;
	long naps;
	int ret;

	ret = fi_endpoint(domain, info, &ep_c, NULL);
	ret = ret ? ret : fi_cq_open(domain, &qa, &cq_c, NULL);
	ret = ret ? ret : fi_cntr_open(domain, &ca, &cntr, NULL);
	ret = ret ? ret : fi_ep_bind(ep_c, &av_a->fid, 0);
	ret = ret ? ret : fi_ep_bind(ep_c, &cq_c->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ? ret : fi_ep_bind(ep_c, &cntr->fid, FI_RECV);
	ret = ret ? ret : fi_enable(ep_c);
	ret = ret ? ret : fi_getname(&ep_c->fid, &name_c, &len);
	CHECK(!ret, "endpoint C: %d", ret);
	CHECK(fi_av_insert(av_b, &name_c, 1, &b_c, 0, NULL) == 1, "insert C");

	naps = sleeps();
	ret = fi_cntr_wait(cntr, 1, 400);
	naps = sleeps() - naps;
	CHECK(ret == -FI_ETIMEDOUT, "idle cntr_wait: %d", ret);
	CHECK(naps < 100, "idle cntr_wait of 400 ms woke %ld times", naps);

	CHECK(!fi_trecv(ep_c, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 0x5eed, 0,
			in),
	      "fi_trecv");
	atomic_store(&sender_stop, 0);
	CHECK(!pthread_create(&th, NULL, late_sender, &b_c), "thread");
	ret = fi_cntr_wait(cntr, 1, 5000);
	t0 = ofi_gettime_ms();
	atomic_store(&sender_stop, 1);
	pthread_join(th, NULL);
	CHECK(!ret && !strcmp(in, "wake up"), "cntr_wait: %d", ret);
	CHECK(t0 - sent_at < 200, "woke %llu ms after the send",
	      (unsigned long long)(t0 - sent_at));
	fi_close(&ep_c->fid);
	fi_close(&cq_c->fid);
	fi_close(&cntr->fid);
	fi_av_remove(av_b, &b_c, 1, 0);
	return 0;
}

struct hcase {
	const char *name;
	int (*fn)(void);
};

static const struct hcase cases[] = {
	{"bad_version", c_bad_version},
	{"bad_op", c_bad_op},
	{"random_bytes", c_random_bytes},
	{"oversize", c_oversize},
	{"reserved_flags", c_reserved_flags},
	{"second_handshake", c_second_handshake},
	{"unknown_answer", c_unknown_answer},
	{"unknown_read_data", c_unknown_read_data},
	{"write_bad_key", c_write_bad_key},
	{"write_past_end", c_write_past_end},
	{"write_before_start", c_write_before_start},
	{"read_bad_key", c_read_bad_key},
	{"read_past_end", c_read_past_end},
	{"atomic_bad_key", c_atomic_bad_key},
	{"unknown_peer_bad_key", c_unknown_peer_bad_key},
	{"commit_bad_count", c_commit_bad_count},
	{"commit_payload", c_commit_payload},
	{"commit_flags", c_commit_flags},
	{"commit_msg_no_ack", c_commit_msg_no_ack},
	{"commit_unknown_answer", c_commit_unknown_answer},
	{"commit_bad_range", c_commit_bad_range},
	{"pending_read_fails", c_pending_read_fails},
	{"batch_answer", c_batch_answer},
	{"batch_answer_alone", c_batch_answer_alone},
	{"cut_payload", c_cut_payload},
	{"garbage_in_batch", c_garbage_in_batch},
	{"unexpected_flood", c_unexpected_flood},
	{"sread_sleeps", c_sread_sleeps},
	{"cntr_wait_sleeps", c_cntr_wait_sleeps},
};

int main(void)
{
	const char *only = getenv("TCP_HOSTILE_ONLY");
	size_t i;
	int ret;

	ret = setup();
	if (ret) {
		fprintf(stderr, "setup: %s\n", fi_strerror(-ret));
		return 1;
	}
	for (i = 0; i < OFI_ARRAY_SIZE(cases); i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		ret = cases[i].fn();
		if (!ret)
			ret = b_alive();
		if (ret)
			failures++;
		printf("%s %s\n", ret ? "FAIL" : "PASS", cases[i].name);
		fflush(stdout);
	}
	fi_close(&ep_a->fid);
	fi_close(&ep_b->fid);
	fi_close(&mr->fid);
	fi_close(&cq_a->fid);
	fi_close(&cq_b->fid);
	fi_close(&av_a->fid);
	fi_close(&av_b->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	free(tgt);
	printf("%d failed\n", failures);
	return failures ? 1 : 0;
}
