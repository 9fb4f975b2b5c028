/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_wire.c - unit tests of the tcp wire codecs (prov/tcp/tcp_wire.h):
 * the byte layout on the wire, encode/decode round trips of every op, and
 * rejection of every field out of its range, one field at a time on an
 * otherwise valid frame, so each check is shown to be the one that fires.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ofi_atomic.h"
#include "tcp_wire.h"

/* A valid header of @op, with every field the op carries set. */
static struct tcp_hdr_view valid_hdr(uint8_t op)
{
	struct tcp_hdr_view v = {.version = TCP_WIRE_VERSION,
				 .op = op,
				 .op_id = 0x1122334455667788ULL};

	switch (op) {
	case TCP_OP_CONN_REQ:
	case TCP_OP_CONN_RESP:
		v.body_len = TCP_CONN_BODY_SIZE;
		v.payload_len = 17;
		break;
	case TCP_OP_TAGGED:
		v.tag = 0xfeedULL << 40;
		/* fall through */
	case TCP_OP_MSG:
		v.flags = TCP_F_CQ_DATA | TCP_F_ACK_REQ;
		v.data = 0xabcdef;
		v.payload_len = 4 << 20;
		break;
	case TCP_OP_WRITE_REQ:
		v.flags = TCP_F_CQ_DATA;
		v.data = 7;
		v.body_len = 2 * TCP_RMA_IOV_SIZE;
		v.payload_len = 300;
		break;
	case TCP_OP_READ_REQ:
		v.body_len = TCP_RMA_IOV_SIZE;
		break;
	case TCP_OP_READ_RESP:
	case TCP_OP_ATOMIC_RESP:
		v.payload_len = 64;
		break;
	case TCP_OP_ATOMIC_REQ:
		v.body_len = TCP_ATOMIC_BODY_SIZE + TCP_RMA_IOV_SIZE;
		v.payload_len = 16;
		break;
	case TCP_OP_COMMIT:
		v.body_len = 2 * TCP_RMA_IOV_SIZE;
		break;
	case TCP_OP_WRITE_RESP:
	case TCP_OP_ACK:
	case TCP_OP_COMMIT_RESP:
		v.status = FI_EACCES;
		break;
	}
	return v;
}

static int roundtrip(const struct tcp_hdr_view *v, struct tcp_hdr_view *out)
{
	uint8_t buf[TCP_HDR_SIZE + 8];

	memset(buf, 0xee, sizeof(buf));
	tcp_hdr_encode(buf, v);
	assert_int_equal(buf[TCP_HDR_SIZE], 0xee); /* wrote 48 bytes only */
	return tcp_hdr_decode(buf, TCP_HDR_SIZE, out);
}

static int decode_of(const struct tcp_hdr_view *v)
{
	struct tcp_hdr_view out;

	return roundtrip(v, &out);
}

static void test_layout(void **state)
{
	struct tcp_hdr_view v = valid_hdr(TCP_OP_TAGGED);
	uint8_t b[TCP_HDR_SIZE];

	(void)state;
	v.payload_len = 0x0102030405060708ULL & TCP_MAX_MSG_SIZE;
	tcp_hdr_encode(b, &v);
	assert_int_equal(b[0], TCP_WIRE_VERSION);
	assert_int_equal(b[1], TCP_OP_TAGGED);
	assert_int_equal(b[2], TCP_F_CQ_DATA | TCP_F_ACK_REQ);
	assert_int_equal(b[3], 0);
	/* little-endian: lowest byte first */
	assert_int_equal(b[8], 0x08);
	assert_int_equal(b[11], 0x05);
	assert_int_equal(b[12], 0);
	assert_int_equal(b[16], 0x88);
	assert_int_equal(b[23], 0x11);
	assert_int_equal(b[29], 0xed);
	assert_int_equal(b[32], 0xef);
	for (int i = 40; i < 48; i++)
		assert_int_equal(b[i], 0);
	/* Version 2 defined COMMIT/COMMIT_RESP and TCP_F_COMMIT, 3 the
	 * receive context of a request, little-endian at 40. */
	v.rx_ctx = 0x0203;
	tcp_hdr_encode(b, &v);
	assert_int_equal(b[40], 0x03);
	assert_int_equal(b[41], 0x02);
	for (int i = 42; i < 48; i++)
		assert_int_equal(b[i], 0);
	tcp_hdr_set_rx_ctx(b, 0x0405);
	assert_int_equal(b[40], 0x05);
	assert_int_equal(b[41], 0x04);
	/* 4 added TCP_F_NO_RESP, 5 TCP_F_BATCH. */
	assert_int_equal(TCP_WIRE_VERSION, 5);
	assert_int_equal(TCP_F_NO_RESP, 8);
	assert_int_equal(TCP_F_BATCH, 16);
	assert_int_equal(TCP_OP_COMMIT, 12);
	assert_int_equal(TCP_OP_COMMIT_RESP, 13);
	assert_int_equal(TCP_F_COMMIT, 4);
}

static void test_roundtrip_all_ops(void **state)
{
	struct tcp_hdr_view v, out;
	uint8_t op;

	(void)state;
	for (op = TCP_OP_CONN_REQ; op < TCP_OP_MAX; op++) {
		v = valid_hdr(op);
		memset(&out, 0x5a, sizeof(out));
		assert_int_equal(roundtrip(&v, &out), 0);
		assert_memory_equal(&v, &out, sizeof(v));
		assert_string_not_equal(tcp_op_str(op), "?");
	}
	assert_string_equal(tcp_op_str(200), "?");
}

static void test_hdr_short_and_null(void **state)
{
	struct tcp_hdr_view v = valid_hdr(TCP_OP_MSG), out;
	uint8_t buf[TCP_HDR_SIZE];

	(void)state;
	tcp_hdr_encode(buf, &v);
	assert_int_equal(tcp_hdr_decode(buf, TCP_HDR_SIZE - 1, &out), -EAGAIN);
	assert_int_equal(tcp_hdr_decode(buf, 0, &out), -EAGAIN);
	assert_int_equal(tcp_hdr_decode(NULL, TCP_HDR_SIZE, &out), -EINVAL);
	assert_int_equal(tcp_hdr_decode(buf, TCP_HDR_SIZE, NULL), -EINVAL);
}

static void test_hdr_version_op_reserved(void **state)
{
	struct tcp_hdr_view v = valid_hdr(TCP_OP_MSG), out;
	uint8_t buf[TCP_HDR_SIZE];
	int i;

	(void)state;
	tcp_hdr_encode(buf, &v);
	buf[0] = TCP_WIRE_VERSION + 1;
	assert_int_equal(tcp_hdr_decode(buf, sizeof(buf), &out),
			 -EPROTONOSUPPORT);
	buf[0] = 0;
	assert_int_equal(tcp_hdr_decode(buf, sizeof(buf), &out),
			 -EPROTONOSUPPORT);

	v.op = TCP_OP_INVALID;
	assert_int_equal(decode_of(&v), -EPROTO);
	for (i = TCP_OP_MAX; i < 256; i++) {
		v.op = (uint8_t)i;
		assert_int_equal(decode_of(&v), -EPROTO);
	}

	/* Any byte of the reserved fields. */
	for (i = 42; i < 48; i++) {
		v = valid_hdr(TCP_OP_MSG);
		tcp_hdr_encode(buf, &v);
		buf[i] = 0x80;
		assert_int_equal(tcp_hdr_decode(buf, sizeof(buf), &out),
				 -EPROTO);
	}
}

/* Requests name a receive context; any other op carrying one is not
 * a frame of ours. */
static void test_hdr_rx_ctx(void **state)
{
	struct tcp_hdr_view v, out;
	uint8_t buf[TCP_HDR_SIZE];
	uint8_t op;
	bool req;

	(void)state;
	for (op = TCP_OP_CONN_REQ; op < TCP_OP_MAX; op++) {
		v = valid_hdr(op);
		v.rx_ctx = 0xffff;
		tcp_hdr_encode(buf, &v);
		req = op == TCP_OP_MSG || op == TCP_OP_TAGGED ||
		      op == TCP_OP_WRITE_REQ || op == TCP_OP_READ_REQ ||
		      op == TCP_OP_ATOMIC_REQ || op == TCP_OP_COMMIT;
		/* the encoder never puts one on another op */
		assert_int_equal(buf[40], req ? 0xff : 0);
		if (req) {
			assert_int_equal(tcp_hdr_decode(buf, sizeof(buf), &out),
					 0);
			assert_int_equal(out.rx_ctx, 0xffff);
			continue;
		}
		tcp_hdr_set_rx_ctx(buf, 1);
		assert_int_equal(tcp_hdr_decode(buf, sizeof(buf), &out),
				 -EPROTO);
	}
}

static void test_hdr_flags(void **state)
{
	struct tcp_hdr_view v;
	uint8_t op;
	int bit;

	(void)state;
	for (op = TCP_OP_CONN_REQ; op < TCP_OP_MAX; op++) {
		for (bit = 0; bit < 16; bit++) {
			uint16_t f = (uint16_t)(1U << bit);
			bool ok =
				(f == TCP_F_CQ_DATA &&
				 (op == TCP_OP_MSG || op == TCP_OP_TAGGED ||
				  op == TCP_OP_WRITE_REQ ||
				  op == TCP_OP_ATOMIC_REQ)) ||
				(f == TCP_F_ACK_REQ &&
				 (op == TCP_OP_MSG || op == TCP_OP_TAGGED)) ||
				(f == TCP_F_COMMIT &&
				 (op == TCP_OP_MSG || op == TCP_OP_TAGGED ||
				  op == TCP_OP_WRITE_REQ ||
				  op == TCP_OP_ATOMIC_REQ)) ||
				(f == TCP_F_NO_RESP &&
				 op == TCP_OP_WRITE_REQ) ||
				(f == TCP_F_BATCH && (op == TCP_OP_WRITE_REQ ||
						      op == TCP_OP_WRITE_RESP));

			v = valid_hdr(op);
			v.flags |= f;
			if (f == TCP_F_BATCH)
				v.status = 0; /* a batched answer: success */
			if (f == TCP_F_CQ_DATA && !v.data)
				v.data = 1;
			assert_int_equal(decode_of(&v), ok ? 0 : -EPROTO);
		}
	}
	/* A message asks for commit complete only with an ACK. */
	for (op = TCP_OP_MSG; op <= TCP_OP_TAGGED; op++) {
		v = valid_hdr(op);
		v.flags = TCP_F_CQ_DATA | TCP_F_COMMIT;
		assert_int_equal(decode_of(&v), -EPROTO);
		v.flags |= TCP_F_ACK_REQ;
		assert_int_equal(decode_of(&v), 0);
	}
	/* Writes and atomics are always answered: alone is fine. */
	v = valid_hdr(TCP_OP_WRITE_REQ);
	v.flags = TCP_F_COMMIT;
	v.data = 0;
	assert_int_equal(decode_of(&v), 0);
	v = valid_hdr(TCP_OP_ATOMIC_REQ);
	v.flags = TCP_F_COMMIT;
	assert_int_equal(decode_of(&v), 0);
	/* An unanswered write cannot promise commit; CQ data is fine. */
	v = valid_hdr(TCP_OP_WRITE_REQ);
	v.flags = TCP_F_NO_RESP | TCP_F_COMMIT;
	v.data = 0;
	assert_int_equal(decode_of(&v), -EPROTO);
	v.flags = TCP_F_NO_RESP | TCP_F_CQ_DATA;
	v.data = 7;
	assert_int_equal(decode_of(&v), 0);
	/* A batched write is answered, without commit; its answer is a
	 * success. */
	v.flags = TCP_F_BATCH | TCP_F_CQ_DATA;
	assert_int_equal(decode_of(&v), 0);
	v.flags = TCP_F_BATCH | TCP_F_NO_RESP;
	v.data = 0;
	assert_int_equal(decode_of(&v), -EPROTO);
	v.flags = TCP_F_BATCH | TCP_F_COMMIT;
	assert_int_equal(decode_of(&v), -EPROTO);
	v = valid_hdr(TCP_OP_WRITE_RESP);
	v.flags = TCP_F_BATCH;
	v.status = 0;
	assert_int_equal(decode_of(&v), 0);
	v.status = 13;
	assert_int_equal(decode_of(&v), -EPROTO);
}

static void test_hdr_fields_per_op(void **state)
{
	struct tcp_hdr_view v;
	uint8_t op;

	(void)state;
	for (op = TCP_OP_CONN_REQ; op < TCP_OP_MAX; op++) {
		bool has_status =
			op == TCP_OP_CONN_RESP || op == TCP_OP_WRITE_RESP ||
			op == TCP_OP_READ_RESP || op == TCP_OP_ATOMIC_RESP ||
			op == TCP_OP_ACK || op == TCP_OP_COMMIT_RESP;

		/* A tag only on TAGGED. */
		v = valid_hdr(op);
		v.tag ^= 1;
		assert_int_equal(decode_of(&v),
				 op == TCP_OP_TAGGED ? 0 : -EPROTO);
		/* Data only with TCP_F_CQ_DATA. */
		v = valid_hdr(op);
		v.flags &= (uint16_t)~TCP_F_CQ_DATA;
		v.data = 5;
		assert_int_equal(decode_of(&v), -EPROTO);
		/* A status only on responses, and at most TCP_STATUS_MAX. */
		v = valid_hdr(op);
		v.payload_len = 0;
		v.status = 1;
		assert_int_equal(decode_of(&v), has_status ? 0 : -EPROTO);
		v.status = TCP_STATUS_MAX + 1;
		assert_int_equal(decode_of(&v), has_status ? -EINVAL : -EPROTO);
		/* Any op_id goes. */
		v = valid_hdr(op);
		v.op_id = UINT64_MAX;
		assert_int_equal(decode_of(&v), 0);
	}
	/* A failed read returns no data; a reject may carry cm data. */
	v = valid_hdr(TCP_OP_READ_RESP);
	v.status = FI_EACCES;
	assert_int_equal(decode_of(&v), -EPROTO);
	v = valid_hdr(TCP_OP_ATOMIC_RESP);
	v.status = FI_EACCES;
	assert_int_equal(decode_of(&v), -EPROTO);
	v = valid_hdr(TCP_OP_CONN_RESP);
	v.status = FI_ECONNREFUSED;
	assert_int_equal(decode_of(&v), 0);
}

static void test_hdr_sizes(void **state)
{
	struct tcp_hdr_view v;

	(void)state;
	/* Payload limits per op. */
	v = valid_hdr(TCP_OP_MSG);
	v.payload_len = TCP_MAX_MSG_SIZE;
	assert_int_equal(decode_of(&v), 0);
	v.payload_len = TCP_MAX_MSG_SIZE + 1;
	assert_int_equal(decode_of(&v), -EMSGSIZE);
	v.payload_len = UINT64_MAX;
	assert_int_equal(decode_of(&v), -EMSGSIZE);
	v = valid_hdr(TCP_OP_CONN_REQ);
	v.payload_len = TCP_CONN_DATA_MAX;
	assert_int_equal(decode_of(&v), 0);
	v.payload_len = TCP_CONN_DATA_MAX + 1;
	assert_int_equal(decode_of(&v), -EMSGSIZE);
	v = valid_hdr(TCP_OP_READ_REQ);
	v.payload_len = 1;
	assert_int_equal(decode_of(&v), -EMSGSIZE);
	v = valid_hdr(TCP_OP_ACK);
	v.payload_len = 1;
	assert_int_equal(decode_of(&v), -EMSGSIZE);
	v = valid_hdr(TCP_OP_WRITE_RESP);
	v.payload_len = 1;
	assert_int_equal(decode_of(&v), -EMSGSIZE);
	v = valid_hdr(TCP_OP_ATOMIC_RESP);
	v.payload_len = TCP_ATOMIC_MAX + 1;
	assert_int_equal(decode_of(&v), -EMSGSIZE);
	/* A commit and its answer carry no payload. */
	v = valid_hdr(TCP_OP_COMMIT);
	v.payload_len = 1;
	assert_int_equal(decode_of(&v), -EMSGSIZE);
	v = valid_hdr(TCP_OP_COMMIT_RESP);
	v.payload_len = 1;
	assert_int_equal(decode_of(&v), -EMSGSIZE);
	v.payload_len = UINT64_MAX;
	assert_int_equal(decode_of(&v), -EMSGSIZE);

	/* Body sizes per op. */
	v = valid_hdr(TCP_OP_MSG);
	v.body_len = 1;
	assert_int_equal(decode_of(&v), -EPROTO);
	v = valid_hdr(TCP_OP_CONN_REQ);
	v.body_len = TCP_CONN_BODY_SIZE + 1;
	assert_int_equal(decode_of(&v), -EPROTO);
	v.body_len = 0;
	assert_int_equal(decode_of(&v), -EPROTO);
	v = valid_hdr(TCP_OP_WRITE_REQ);
	v.body_len = 0;
	assert_int_equal(decode_of(&v), -EINVAL);
	v.body_len = TCP_RMA_IOV_SIZE + 1;
	assert_int_equal(decode_of(&v), -EPROTO);
	v.body_len = TCP_IOV_MAX * TCP_RMA_IOV_SIZE;
	assert_int_equal(decode_of(&v), 0);
	v.body_len = (TCP_IOV_MAX + 1) * TCP_RMA_IOV_SIZE;
	assert_int_equal(decode_of(&v), -EINVAL);
	v.body_len = UINT16_MAX;
	assert_int_equal(decode_of(&v), -EPROTO);
	v = valid_hdr(TCP_OP_ATOMIC_REQ);
	v.body_len = TCP_ATOMIC_BODY_SIZE;
	assert_int_equal(decode_of(&v), -EINVAL);
	v.body_len = TCP_ATOMIC_BODY_SIZE - 1;
	assert_int_equal(decode_of(&v), -EPROTO);
	v.body_len = TCP_ATOMIC_BODY_SIZE + TCP_RMA_IOV_SIZE - 1;
	assert_int_equal(decode_of(&v), -EPROTO);
	/* A commit names 1..TCP_COMMIT_IOV_MAX ranges; its answer none. */
	v = valid_hdr(TCP_OP_COMMIT);
	v.body_len = 0;
	assert_int_equal(decode_of(&v), -EINVAL);
	v.body_len = TCP_RMA_IOV_SIZE;
	assert_int_equal(decode_of(&v), 0);
	v.body_len = TCP_COMMIT_IOV_MAX * TCP_RMA_IOV_SIZE;
	assert_int_equal(decode_of(&v), 0);
	v.body_len = (TCP_COMMIT_IOV_MAX + 1) * TCP_RMA_IOV_SIZE;
	assert_int_equal(decode_of(&v), -EINVAL);
	v.body_len = TCP_IOV_MAX * TCP_RMA_IOV_SIZE;
	assert_int_equal(decode_of(&v), -EINVAL);
	v.body_len = TCP_RMA_IOV_SIZE + 1;
	assert_int_equal(decode_of(&v), -EPROTO);
	v.body_len = UINT16_MAX;
	assert_int_equal(decode_of(&v), -EPROTO);
	v = valid_hdr(TCP_OP_COMMIT_RESP);
	v.body_len = TCP_RMA_IOV_SIZE;
	assert_int_equal(decode_of(&v), -EPROTO);
}

/* ---------------------------------------------------------------- */

static void test_rma_body(void **state)
{
	struct tcp_rma_iov in[TCP_IOV_MAX + 1], out[TCP_IOV_MAX];
	struct tcp_hdr_view h = valid_hdr(TCP_OP_WRITE_REQ);
	uint8_t body[(TCP_IOV_MAX + 1) * TCP_RMA_IOV_SIZE];
	size_t n = 0, i;

	(void)state;
	for (i = 0; i < TCP_IOV_MAX + 1; i++)
		in[i] = (struct tcp_rma_iov){0x1000 * (i + 1), 100 + i,
					     0xabc0 + i};
	in[1].len = 200; /* 100 + 200 = the payload of valid_hdr */
	assert_int_equal(tcp_rma_body_encode(body, in, 2), h.body_len);
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n), 0);
	assert_int_equal(n, 2);
	assert_memory_equal(in, out, 2 * sizeof(in[0]));

	/* Short body, wrong op, null. */
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len - 1, out, &n),
			 -EAGAIN);
	assert_int_equal(tcp_rma_body_decode(&h, NULL, h.body_len, out, &n),
			 -EINVAL);
	h.op = TCP_OP_MSG;
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n),
			 -EINVAL);
	h = valid_hdr(TCP_OP_WRITE_REQ);

	/* The payload must be the iovs' total. */
	h.payload_len = 299;
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n),
			 -EPROTO);
	h.payload_len = 301;
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n),
			 -EPROTO);

	/* One len too big, a sum past the limit, a wrapping region. */
	h = valid_hdr(TCP_OP_READ_REQ);
	in[0].len = TCP_MAX_MSG_SIZE + 1;
	tcp_rma_body_encode(body, in, 1);
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n),
			 -EMSGSIZE);
	in[0].len = UINT64_MAX;
	tcp_rma_body_encode(body, in, 1);
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n),
			 -EMSGSIZE);
	in[0].len = TCP_MAX_MSG_SIZE;
	in[1].len = 1;
	h.body_len = 2 * TCP_RMA_IOV_SIZE;
	tcp_rma_body_encode(body, in, 2);
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n),
			 -EMSGSIZE);
	in[1].len = 0;
	tcp_rma_body_encode(body, in, 2);
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n), 0);
	in[0] = (struct tcp_rma_iov){UINT64_MAX - 9, 11, 1};
	tcp_rma_body_encode(body, in, 2);
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n),
			 -EINVAL);
	in[0].len = 10; /* ends exactly at the top: fine */
	tcp_rma_body_encode(body, in, 2);
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n), 0);

	/* Counts outside 1..TCP_IOV_MAX. */
	h.body_len = 0;
	assert_int_equal(tcp_rma_body_decode(&h, body, sizeof(body), out, &n),
			 -EINVAL);
	h.body_len = (TCP_IOV_MAX + 1) * TCP_RMA_IOV_SIZE;
	assert_int_equal(tcp_rma_body_decode(&h, body, sizeof(body), out, &n),
			 -EINVAL);
}

/* An ATOMIC_REQ of @count iovs of @len bytes; returns the decode. */
static int atomic_case(uint8_t kind, uint8_t op, uint8_t dt, size_t count,
		       uint64_t len, uint64_t payload,
		       struct tcp_atomic_view *out)
{
	struct tcp_hdr_view h = valid_hdr(TCP_OP_ATOMIC_REQ);
	struct tcp_rma_iov iov[TCP_IOV_MAX];
	uint8_t body[TCP_BODY_MAX];
	size_t i;

	for (i = 0; i < count; i++)
		iov[i] = (struct tcp_rma_iov){0x10000 * (i + 1), len, 42};
	h.body_len = (uint16_t)tcp_atomic_body_encode(body, kind, op, dt, iov,
						      count);
	h.payload_len = payload;
	return tcp_atomic_body_decode(&h, body, h.body_len, out);
}

static void test_atomic_body(void **state)
{
	struct tcp_atomic_view av;
	struct tcp_hdr_view h;
	uint8_t body[TCP_BODY_MAX];
	int kind, op, dt;

	(void)state;
	assert_int_equal(atomic_case(TCP_ATOMIC_WRITE, FI_SUM, FI_UINT64, 2, 16,
				     32, &av),
			 0);
	assert_int_equal(av.dt_size, 8);
	assert_int_equal(av.total, 32);
	assert_int_equal(av.iov_count, 2);
	assert_int_equal(av.iov[1].addr, 0x20000);
	assert_int_equal(av.iov[1].key, 42);

	/* Payload per kind: operands, none for a fetch of READ, twice for
	 * compare. */
	assert_int_equal(atomic_case(TCP_ATOMIC_FETCH, FI_ATOMIC_READ, FI_INT32,
				     1, 8, 0, &av),
			 0);
	assert_int_equal(atomic_case(TCP_ATOMIC_FETCH, FI_ATOMIC_READ, FI_INT32,
				     1, 8, 8, &av),
			 -EPROTO);
	assert_int_equal(atomic_case(TCP_ATOMIC_COMPARE, FI_CSWAP, FI_INT32, 1,
				     8, 16, &av),
			 0);
	assert_int_equal(atomic_case(TCP_ATOMIC_COMPARE, FI_CSWAP, FI_INT32, 1,
				     8, 8, &av),
			 -EPROTO);
	assert_int_equal(
		atomic_case(TCP_ATOMIC_WRITE, FI_SUM, FI_INT32, 1, 8, 7, &av),
		-EPROTO);

	/* Every kind/op/datatype the executor knows passes, others fail. */
	for (kind = 0; kind < 256; kind++) {
		for (op = 0; op < 256; op += (op < 40 ? 1 : 37)) {
			for (dt = 0; dt < 256; dt += (dt < 40 ? 1 : 41)) {
				size_t sz = 0;
				uint64_t len, pay = 0;
				int want;

				want = kind < TCP_ATOMIC_KINDS &&
				       !ofi_atomic_valid(kind, dt, op, 0, &sz,
							 NULL);
				len = want ? 2 * sz : 8;
				if (want && kind == TCP_ATOMIC_COMPARE)
					pay = 2 * len;
				else if (want && !(kind == TCP_ATOMIC_FETCH &&
						   op == FI_ATOMIC_READ))
					pay = len;
				assert_int_equal(atomic_case((uint8_t)kind,
							     (uint8_t)op,
							     (uint8_t)dt, 1,
							     len, pay, &av),
						 want ? 0 : -EINVAL);
			}
		}
	}

	/* Element sizes, the total limit, iov counts. */
	assert_int_equal(atomic_case(TCP_ATOMIC_WRITE, FI_SUM, FI_UINT64, 1, 12,
				     12, &av),
			 -EINVAL);
	assert_int_equal(atomic_case(TCP_ATOMIC_WRITE, FI_SUM, FI_UINT8, 1,
				     TCP_ATOMIC_MAX, TCP_ATOMIC_MAX, &av),
			 0);
	assert_int_equal(atomic_case(TCP_ATOMIC_WRITE, FI_SUM, FI_UINT8, 1,
				     TCP_ATOMIC_MAX + 1, TCP_ATOMIC_MAX + 1,
				     &av),
			 -EMSGSIZE);
	assert_int_equal(atomic_case(TCP_ATOMIC_WRITE, FI_SUM, FI_UINT8,
				     TCP_IOV_MAX, 4, 4 * TCP_IOV_MAX, &av),
			 0);
	assert_int_equal(
		atomic_case(TCP_ATOMIC_WRITE, FI_SUM, FI_UINT8, 0, 4, 0, &av),
		-EINVAL);

	/* iov_count must match the body; reserved must be zero. */
	h = valid_hdr(TCP_OP_ATOMIC_REQ);
	struct tcp_rma_iov iov = {0x1000, 16, 1};
	tcp_atomic_body_encode(body, TCP_ATOMIC_WRITE, FI_SUM, FI_UINT64, &iov,
			       1);
	assert_int_equal(tcp_atomic_body_decode(&h, body, h.body_len, &av), 0);
	body[3] = 2;
	assert_int_equal(tcp_atomic_body_decode(&h, body, h.body_len, &av),
			 -EPROTO);
	body[3] = 1;
	body[6] = 1;
	assert_int_equal(tcp_atomic_body_decode(&h, body, h.body_len, &av),
			 -EPROTO);
	body[6] = 0;
	assert_int_equal(tcp_atomic_body_decode(&h, body, h.body_len - 1, &av),
			 -EAGAIN);
	h.op = TCP_OP_WRITE_REQ;
	assert_int_equal(tcp_atomic_body_decode(&h, body, h.body_len, &av),
			 -EINVAL);
}

static void test_conn_body(void **state)
{
	struct tcp_hdr_view h = valid_hdr(TCP_OP_CONN_REQ);
	struct tcp_conn_body c = {.ep_type = TCP_CONN_EP_RDM,
				  .family = TCP_FAMILY_INET,
				  .port = 0xbeef,
				  .addr = {127, 0, 0, 1}},
			     out;
	uint8_t b[TCP_CONN_BODY_SIZE];

	(void)state;
	assert_int_equal(tcp_conn_body_encode(b, &c), TCP_CONN_BODY_SIZE);
	assert_memory_equal(b, "OFIT", 4);
	assert_int_equal(b[6], 0xef);
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), 0);
	c.magic = TCP_CONN_MAGIC;
	assert_memory_equal(&c, &out, sizeof(c));

	c.family = TCP_FAMILY_INET6;
	c.ep_type = TCP_CONN_EP_MSG;
	memset(c.addr, 0xfe, sizeof(c.addr));
	c.scope_id = 3;
	tcp_conn_body_encode(b, &c);
	h = valid_hdr(TCP_OP_CONN_RESP);
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), 0);
	assert_memory_equal(&c, &out, sizeof(c));

	/* IPv4 with bytes past the address or a scope id. */
	c.family = TCP_FAMILY_INET;
	tcp_conn_body_encode(b, &c);
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), -EPROTO);
	memset(c.addr + 4, 0, 12);
	tcp_conn_body_encode(b, &c);
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), -EPROTO);
	c.scope_id = 0;
	tcp_conn_body_encode(b, &c);
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), 0);

	/* Magic, reserved, ep type, family, sizes, op. */
	b[0] ^= 1;
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), -EPROTO);
	b[0] ^= 1;
	b[31] = 1;
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), -EPROTO);
	b[31] = 0;
	b[4] = 0;
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), -EINVAL);
	b[4] = 3;
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), -EINVAL);
	b[4] = TCP_CONN_EP_RDM;
	b[5] = 2; /* AF_INET is not our family code */
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), -EINVAL);
	b[5] = TCP_FAMILY_INET;
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b) - 1, &out),
			 -EAGAIN);
	h.op = TCP_OP_MSG;
	assert_int_equal(tcp_conn_body_decode(&h, b, sizeof(b), &out), -EINVAL);
}

static void test_commit_body(void **state)
{
	struct tcp_rma_iov in[TCP_COMMIT_IOV_MAX + 1], out[TCP_IOV_MAX];
	struct tcp_hdr_view h = valid_hdr(TCP_OP_COMMIT);
	uint8_t body[(TCP_COMMIT_IOV_MAX + 1) * TCP_RMA_IOV_SIZE];
	size_t n = 0, i;

	(void)state;
	for (i = 0; i < TCP_COMMIT_IOV_MAX + 1; i++)
		in[i] = (struct tcp_rma_iov){0x1000 * (i + 1), 100 + i,
					     0xc0c0 + i};
	assert_int_equal(tcp_commit_body_encode(body, in, 2), h.body_len);
	assert_int_equal(tcp_commit_body_decode(&h, body, h.body_len, out, &n),
			 0);
	assert_int_equal(n, 2);
	assert_memory_equal(in, out, 2 * sizeof(in[0]));

	/* The target judges ranges: huge, wrapping and empty ones pass. */
	in[0] = (struct tcp_rma_iov){0x1000, UINT64_MAX, 1};
	in[1] = (struct tcp_rma_iov){UINT64_MAX - 9, 11, 2};
	in[2] = (struct tcp_rma_iov){0, 0, 3};
	in[3] = (struct tcp_rma_iov){1, (uint64_t)TCP_MAX_MSG_SIZE * 4, 4};
	h.body_len =
		(uint16_t)tcp_commit_body_encode(body, in, TCP_COMMIT_IOV_MAX);
	assert_int_equal(decode_of(&h), 0);
	assert_int_equal(tcp_commit_body_decode(&h, body, h.body_len, out, &n),
			 0);
	assert_int_equal(n, TCP_COMMIT_IOV_MAX);
	assert_memory_equal(in, out, TCP_COMMIT_IOV_MAX * sizeof(in[0]));

	/* Short body, null, wrong op, counts outside 1..4. */
	assert_int_equal(
		tcp_commit_body_decode(&h, body, h.body_len - 1, out, &n),
		-EAGAIN);
	assert_int_equal(tcp_commit_body_decode(&h, NULL, h.body_len, out, &n),
			 -EINVAL);
	assert_int_equal(
		tcp_commit_body_decode(NULL, body, h.body_len, out, &n),
		-EINVAL);
	h.op = TCP_OP_WRITE_REQ;
	assert_int_equal(tcp_commit_body_decode(&h, body, h.body_len, out, &n),
			 -EINVAL);
	h = valid_hdr(TCP_OP_COMMIT);
	h.body_len = 0;
	assert_int_equal(
		tcp_commit_body_decode(&h, body, sizeof(body), out, &n),
		-EINVAL);
	h.body_len = (TCP_COMMIT_IOV_MAX + 1) * TCP_RMA_IOV_SIZE;
	assert_int_equal(
		tcp_commit_body_decode(&h, body, sizeof(body), out, &n),
		-EINVAL);
	h.body_len = TCP_RMA_IOV_SIZE - 1;
	assert_int_equal(
		tcp_commit_body_decode(&h, body, sizeof(body), out, &n),
		-EPROTO);
	/* The RMA decoder does not take a commit, nor the reverse. */
	h = valid_hdr(TCP_OP_COMMIT);
	assert_int_equal(tcp_rma_body_decode(&h, body, h.body_len, out, &n),
			 -EINVAL);
}

static void test_frame(void **state)
{
	uint8_t buf[TCP_HDR_SIZE + TCP_BODY_MAX];
	struct tcp_rma_iov iov = {0x1000, 64, 9};
	struct tcp_hdr_view h = valid_hdr(TCP_OP_READ_REQ), out;

	(void)state;
	tcp_hdr_encode(buf, &h);
	tcp_rma_body_encode(buf + TCP_HDR_SIZE, &iov, 1);
	assert_int_equal(tcp_frame_decode(buf, TCP_HDR_SIZE + 24, &out), 0);
	assert_int_equal(tcp_frame_decode(buf, TCP_HDR_SIZE + 23, &out),
			 -EAGAIN);
	/* A body-less op needs the header only. */
	h = valid_hdr(TCP_OP_ACK);
	tcp_hdr_encode(buf, &h);
	assert_int_equal(tcp_frame_decode(buf, TCP_HDR_SIZE, &out), 0);
	h = valid_hdr(TCP_OP_COMMIT_RESP);
	tcp_hdr_encode(buf, &h);
	assert_int_equal(tcp_frame_decode(buf, TCP_HDR_SIZE, &out), 0);
	assert_int_equal(out.status, FI_EACCES);
	/* A commit needs its ranges. */
	h = valid_hdr(TCP_OP_COMMIT);
	tcp_hdr_encode(buf, &h);
	tcp_commit_body_encode(buf + TCP_HDR_SIZE, &iov, 1);
	tcp_commit_body_encode(buf + TCP_HDR_SIZE + 24, &iov, 1);
	assert_int_equal(tcp_frame_decode(buf, TCP_HDR_SIZE + 48, &out), 0);
	assert_int_equal(out.body_len, 48);
	assert_int_equal(tcp_frame_decode(buf, TCP_HDR_SIZE + 47, &out),
			 -EAGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_roundtrip_all_ops),
		cmocka_unit_test(test_hdr_short_and_null),
		cmocka_unit_test(test_hdr_version_op_reserved),
		cmocka_unit_test(test_hdr_rx_ctx),
		cmocka_unit_test(test_hdr_flags),
		cmocka_unit_test(test_hdr_fields_per_op),
		cmocka_unit_test(test_hdr_sizes),
		cmocka_unit_test(test_rma_body),
		cmocka_unit_test(test_atomic_body),
		cmocka_unit_test(test_conn_body),
		cmocka_unit_test(test_commit_body),
		cmocka_unit_test(test_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
