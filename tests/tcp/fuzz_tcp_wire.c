/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fuzz_tcp_wire.c - libFuzzer harness over the tcp wire decoders
 * (prov/tcp/tcp_wire.c): every input is a frame head as a peer could send
 * it. Besides "no crash, no sanitizer report", it checks two properties
 * the receive path relies on:
 *  - canonical: a header the decoder accepts re-encodes to exactly the
 *    bytes it came from (no field is ignored or silently normalised);
 *  - bounded: an accepted frame's sizes are within the protocol limits,
 *    and the body decoders never accept a body the header does not
 *    announce;
 *  - a header accepted without a body is a whole frame head (the
 *    receive path then skips tcp_frame_decode).
 *
 * Built twice by tests/tcp/fuzz_tcp_wire.sh: with -fsanitize=fuzzer as the
 * harness, and with -DTCP_FUZZ_SEEDS as a program that writes a seed
 * corpus of valid frames of every op, made by the encoders.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_atomic.h"
#include "tcp_wire.h"

#include "../util/fuzz_check.h"

static void check_bodies(const uint8_t *data, size_t size,
			 const struct tcp_hdr_view *h)
{
	const uint8_t *body = data + TCP_HDR_SIZE;
	size_t len = size - TCP_HDR_SIZE;
	struct tcp_rma_iov iov[TCP_IOV_MAX];
	struct tcp_atomic_view av;
	struct tcp_conn_body c;
	uint64_t sum = 0;
	size_t n, i;
	int ret;

	ret = tcp_rma_body_decode(h, body, len, iov, &n);
	if (!ret) {
		CHECK(h->op == TCP_OP_WRITE_REQ || h->op == TCP_OP_READ_REQ);
		CHECK(n >= 1 && n <= TCP_IOV_MAX);
		CHECK(n * TCP_RMA_IOV_SIZE == h->body_len);
		for (i = 0; i < n; i++)
			sum += iov[i].len;
		CHECK(sum <= TCP_MAX_MSG_SIZE);
		CHECK(h->op != TCP_OP_WRITE_REQ || sum == h->payload_len);
	}
	ret = tcp_atomic_body_decode(h, body, len, &av);
	if (!ret) {
		CHECK(h->op == TCP_OP_ATOMIC_REQ);
		CHECK(av.iov_count >= 1 && av.iov_count <= TCP_IOV_MAX);
		CHECK(av.total <= TCP_ATOMIC_MAX);
		CHECK(av.dt_size && av.total % av.dt_size == 0);
		CHECK(!ofi_atomic_valid(av.kind, av.datatype, av.op, 0, NULL,
					NULL));
		CHECK(h->payload_len <= 2 * av.total);
	}
	ret = tcp_commit_body_decode(h, body, len, iov, &n);
	if (!ret) {
		CHECK(h->op == TCP_OP_COMMIT);
		CHECK(n >= 1 && n <= TCP_COMMIT_IOV_MAX);
		CHECK(n * TCP_RMA_IOV_SIZE == h->body_len);
		CHECK(h->payload_len == 0);
		CHECK(h->flags == 0);
	}
	ret = tcp_conn_body_decode(h, body, len, &c);
	if (!ret) {
		CHECK(h->op == TCP_OP_CONN_REQ || h->op == TCP_OP_CONN_RESP);
		CHECK(c.family == TCP_FAMILY_INET ||
		      c.family == TCP_FAMILY_INET6);
		CHECK(h->payload_len <= TCP_CONN_DATA_MAX);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcp_hdr_view h, h2;
	uint8_t re[TCP_HDR_SIZE];
	int ret;

	ret = tcp_frame_decode(data, size, &h);
	if (tcp_hdr_decode(data, size, &h2))
		return 0;
	CHECK(ret == 0 || ret == -EAGAIN || ret == -EPROTO || ret == -EINVAL ||
	      ret == -EMSGSIZE);
	/* tcp's receive path skips the body decoders for a header without
	 * a body: the header decode must then be the whole check. */
	CHECK(h2.body_len || ret == 0);

	tcp_hdr_encode(re, &h2);
	CHECK(!memcmp(re, data, TCP_HDR_SIZE));
	CHECK(h2.op > TCP_OP_INVALID && h2.op < TCP_OP_MAX);
	/* TCP_F_COMMIT on a message only with an ACK to carry the answer */
	CHECK(!(h2.flags & TCP_F_COMMIT) ||
	      (h2.op != TCP_OP_MSG && h2.op != TCP_OP_TAGGED) ||
	      (h2.flags & TCP_F_ACK_REQ));
	/* Only requests name a receive context (scalable endpoints). */
	CHECK(!h2.rx_ctx || h2.op == TCP_OP_MSG || h2.op == TCP_OP_TAGGED ||
	      h2.op == TCP_OP_WRITE_REQ || h2.op == TCP_OP_READ_REQ ||
	      h2.op == TCP_OP_ATOMIC_REQ || h2.op == TCP_OP_COMMIT);
	CHECK(!(h2.flags & TCP_F_COMMIT) || h2.op == TCP_OP_MSG ||
	      h2.op == TCP_OP_TAGGED || h2.op == TCP_OP_WRITE_REQ ||
	      h2.op == TCP_OP_ATOMIC_REQ);
	/* Only a write goes unanswered, and never one promising commit. */
	CHECK(!(h2.flags & TCP_F_NO_RESP) ||
	      (h2.op == TCP_OP_WRITE_REQ && !(h2.flags & TCP_F_COMMIT)));
	/* Batched: an answered write without commit, or a success. */
	CHECK(!(h2.flags & TCP_F_BATCH) ||
	      (h2.op == TCP_OP_WRITE_REQ &&
	       !(h2.flags & (TCP_F_COMMIT | TCP_F_NO_RESP))) ||
	      (h2.op == TCP_OP_WRITE_RESP && !h2.status));
	CHECK(h2.payload_len <= TCP_MAX_MSG_SIZE);
	CHECK(h2.body_len <= TCP_BODY_MAX);
	CHECK(h2.status <= TCP_STATUS_MAX);
	check_bodies(data, size, &h2);
	return 0;
}

#ifdef TCP_FUZZ_SEEDS
/* One seed file per valid frame head of each op, into argv[1]. */
static void write_seed(const char *dir, int n, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%03d", dir, n);
	f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(buf, 1, len, f) == len);
	fclose(f);
}

/* Encodes @h over the body already at @buf + TCP_HDR_SIZE (@blen
 * bytes), checks the frame decodes and writes it as seed *@n. */
static void seed_frame(const char *dir, int *n, uint8_t *buf,
		       const struct tcp_hdr_view *h, size_t blen)
{
	struct tcp_hdr_view chk;

	tcp_hdr_encode(buf, h);
	CHECK(!tcp_frame_decode(buf, TCP_HDR_SIZE + blen, &chk));
	write_seed(dir, (*n)++, buf, TCP_HDR_SIZE + blen);
}

int main(int argc, char **argv)
{
	uint8_t buf[TCP_HDR_SIZE + TCP_BODY_MAX];
	struct tcp_rma_iov iov[TCP_IOV_MAX];
	struct tcp_conn_body c = {.ep_type = TCP_CONN_EP_RDM,
				  .family = TCP_FAMILY_INET,
				  .port = 4242,
				  .addr = {127, 0, 0, 1}};
	struct tcp_hdr_view h;
	int n = 0, op, i;
	size_t blen;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (i = 0; i < TCP_IOV_MAX; i++)
		iov[i] = (struct tcp_rma_iov){0x1000 * (i + 1), 8, 77};

	for (op = TCP_OP_CONN_REQ; op < TCP_OP_MAX; op++) {
		memset(&h, 0, sizeof(h));
		memset(buf, 0, sizeof(buf));
		h.op = (uint8_t)op;
		h.op_id = (uint64_t)op << 32 | 1;
		blen = 0;
		switch (op) {
		case TCP_OP_CONN_REQ:
		case TCP_OP_CONN_RESP:
			blen = tcp_conn_body_encode(buf + TCP_HDR_SIZE, &c);
			h.payload_len = 16;
			break;
		case TCP_OP_TAGGED:
			h.tag = 0x1234;
			/* fall through */
		case TCP_OP_MSG:
			h.flags = TCP_F_CQ_DATA | TCP_F_ACK_REQ | TCP_F_COMMIT;
			h.data = 99;
			h.payload_len = 1024;
			break;
		case TCP_OP_WRITE_REQ:
		case TCP_OP_READ_REQ:
			blen = tcp_rma_body_encode(buf + TCP_HDR_SIZE, iov, 3);
			h.payload_len = op == TCP_OP_WRITE_REQ ? 24 : 0;
			if (op == TCP_OP_WRITE_REQ)
				h.flags = TCP_F_COMMIT;
			break;
		case TCP_OP_COMMIT:
			blen = tcp_commit_body_encode(buf + TCP_HDR_SIZE, iov,
						      TCP_COMMIT_IOV_MAX);
			break;
		case TCP_OP_ATOMIC_REQ:
			blen = tcp_atomic_body_encode(
				buf + TCP_HDR_SIZE, TCP_ATOMIC_COMPARE,
				FI_CSWAP, FI_UINT64, iov, 2);
			h.payload_len = 32;
			break;
		case TCP_OP_READ_RESP:
		case TCP_OP_ATOMIC_RESP:
			h.payload_len = 8;
			break;
		default:
			h.status = 13;
			break;
		}
		h.body_len = (uint16_t)blen;
		/* requests to a scalable endpoint's receive context 5 */
		h.rx_ctx = 5;
		seed_frame(argv[1], &n, buf, &h, blen);
	}
	/* An unanswered write with CQ data (the collective engine's), a
	 * batched write and its answer, a fetching atomic and an IPv6
	 * handshake as well. */
	memset(&h, 0, sizeof(h));
	h.op = TCP_OP_WRITE_REQ;
	h.flags = TCP_F_NO_RESP | TCP_F_CQ_DATA;
	h.data = 3;
	h.payload_len = 8;
	blen = tcp_rma_body_encode(buf + TCP_HDR_SIZE, iov, 1);
	h.body_len = (uint16_t)blen;
	seed_frame(argv[1], &n, buf, &h, blen);
	h.flags = TCP_F_BATCH;
	h.data = 0;
	seed_frame(argv[1], &n, buf, &h, blen);
	memset(&h, 0, sizeof(h));
	h.op = TCP_OP_WRITE_RESP;
	h.flags = TCP_F_BATCH;
	h.op_id = 9;
	seed_frame(argv[1], &n, buf, &h, 0);

	memset(&h, 0, sizeof(h));
	h.op = TCP_OP_ATOMIC_REQ;
	blen = tcp_atomic_body_encode(buf + TCP_HDR_SIZE, TCP_ATOMIC_FETCH,
				      FI_ATOMIC_READ, FI_DOUBLE, iov, 1);
	h.body_len = (uint16_t)blen;
	seed_frame(argv[1], &n, buf, &h, blen);

	c.family = TCP_FAMILY_INET6;
	memset(c.addr, 0, sizeof(c.addr));
	c.addr[15] = 1;
	memset(&h, 0, sizeof(h));
	h.op = TCP_OP_CONN_REQ;
	blen = tcp_conn_body_encode(buf + TCP_HDR_SIZE, &c);
	h.body_len = (uint16_t)blen;
	seed_frame(argv[1], &n, buf, &h, blen);
	printf("%d seeds in %s\n", n, argv[1]);
	return 0;
}
#endif
