/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_wire.c - encoders and validating decoders of the tcp wire format
 * (tcp_wire.h). Pure functions over byte buffers: no allocation, no
 * global state, no I/O, so the unit test and the fuzzer run them alone.
 *
 * The rules per op live in one table (tcp_op_rules), so the header decoder
 * is one lookup plus comparisons; the body decoders then tie the body to
 * the header's payload size. Atomic op/datatype/kind combinations are
 * checked against prov/util's executor table (ofi_atomic_valid), so the
 * wire accepts exactly what the target can run.
 */
#include <errno.h>
#include <string.h>

#include "ofi.h"
#include "ofi_atomic.h"
#include "tcp_wire.h"

_Static_assert((int)TCP_ATOMIC_WRITE == (int)OFI_ATOMIC_WRITE, "kind");
_Static_assert((int)TCP_ATOMIC_FETCH == (int)OFI_ATOMIC_FETCH, "kind");
_Static_assert((int)TCP_ATOMIC_COMPARE == (int)OFI_ATOMIC_COMPARE, "kind");

/* ------------------------------------------------------------------ */
/* Little-endian loads and stores at any alignment.                     */

static inline uint16_t tcp_ld16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t tcp_ld32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t tcp_ld64(const uint8_t *p)
{
	return (uint64_t)tcp_ld32(p) | (uint64_t)tcp_ld32(p + 4) << 32;
}

static inline void tcp_st16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void tcp_st32(uint8_t *p, uint32_t v)
{
	tcp_st16(p, (uint16_t)v);
	tcp_st16(p + 2, (uint16_t)(v >> 16));
}

static inline void tcp_st64(uint8_t *p, uint64_t v)
{
	tcp_st32(p, (uint32_t)v);
	tcp_st32(p + 4, (uint32_t)(v >> 32));
}

/* ------------------------------------------------------------------ */
/* Per-op rules.                                                        */

enum tcp_body_kind {
	TCP_BODY_NONE,	 /* body_len 0 */
	TCP_BODY_CONN,	 /* exactly TCP_CONN_BODY_SIZE */
	TCP_BODY_RMA,	 /* 1..TCP_IOV_MAX rma iovs */
	TCP_BODY_ATOMIC, /* atomic body + 1..TCP_IOV_MAX rma iovs */
	TCP_BODY_COMMIT, /* 1..TCP_COMMIT_IOV_MAX rma iovs */
};

struct tcp_op_rule {
	const char *name;
	bool valid;	/* false: reserved or unknown */
	uint16_t flags; /* flags the op may carry */
	bool tag;	/* carries a tag */
	bool status;	/* carries a status */
	enum tcp_body_kind body;
	uint64_t max_payload;
};

static const struct tcp_op_rule tcp_op_rules[TCP_OP_MAX] = {
	[TCP_OP_INVALID] = {.name = "INVALID"},
	[TCP_OP_CONN_REQ] = {"CONN_REQ", true, 0, false, false, TCP_BODY_CONN,
			     TCP_CONN_DATA_MAX},
	[TCP_OP_CONN_RESP] = {"CONN_RESP", true, 0, false, true, TCP_BODY_CONN,
			      TCP_CONN_DATA_MAX},
	[TCP_OP_MSG] = {"MSG", true, TCP_F_ALL, false, false, TCP_BODY_NONE,
			TCP_MAX_MSG_SIZE},
	[TCP_OP_TAGGED] = {"TAGGED", true, TCP_F_ALL, true, false,
			   TCP_BODY_NONE, TCP_MAX_MSG_SIZE},
	[TCP_OP_WRITE_REQ] = {"WRITE_REQ", true,
			      TCP_F_CQ_DATA | TCP_F_COMMIT | TCP_F_NO_RESP |
				      TCP_F_BATCH,
			      false, false, TCP_BODY_RMA, TCP_MAX_MSG_SIZE},
	[TCP_OP_WRITE_RESP] = {"WRITE_RESP", true, TCP_F_BATCH, false, true,
			       TCP_BODY_NONE, 0},
	[TCP_OP_READ_REQ] = {"READ_REQ", true, 0, false, false, TCP_BODY_RMA,
			     0},
	[TCP_OP_READ_RESP] = {"READ_RESP", true, 0, false, true, TCP_BODY_NONE,
			      TCP_MAX_MSG_SIZE},
	[TCP_OP_ATOMIC_REQ] = {"ATOMIC_REQ", true, TCP_F_CQ_DATA | TCP_F_COMMIT,
			       false, false, TCP_BODY_ATOMIC,
			       2 * TCP_ATOMIC_MAX},
	[TCP_OP_ATOMIC_RESP] = {"ATOMIC_RESP", true, 0, false, true,
				TCP_BODY_NONE, TCP_ATOMIC_MAX},
	[TCP_OP_ACK] = {"ACK", true, 0, false, true, TCP_BODY_NONE, 0},
	[TCP_OP_COMMIT] = {"COMMIT", true, 0, false, false, TCP_BODY_COMMIT, 0},
	[TCP_OP_COMMIT_RESP] = {"COMMIT_RESP", true, 0, false, true,
				TCP_BODY_NONE, 0},
};

const char *tcp_op_str(unsigned op)
{
	if (op >= TCP_OP_MAX)
		return "?";
	return tcp_op_rules[op].name;
}

/* The ops that may name a receive context (hdr.rx_ctx): requests. */
static bool tcp_op_has_rx_ctx(uint8_t op)
{
	switch (op) {
	case TCP_OP_MSG:
	case TCP_OP_TAGGED:
	case TCP_OP_WRITE_REQ:
	case TCP_OP_READ_REQ:
	case TCP_OP_ATOMIC_REQ:
	case TCP_OP_COMMIT:
		return true;
	default:
		return false;
	}
}

static int tcp_check_body_len(enum tcp_body_kind kind, uint16_t len)
{
	size_t n;

	switch (kind) {
	case TCP_BODY_NONE:
		return len == 0 ? 0 : -EPROTO;
	case TCP_BODY_CONN:
		return len == TCP_CONN_BODY_SIZE ? 0 : -EPROTO;
	case TCP_BODY_ATOMIC:
		if (len < TCP_ATOMIC_BODY_SIZE)
			return -EPROTO;
		len -= TCP_ATOMIC_BODY_SIZE;
		/* the rest is rma iovs, as for an RMA body */
		__attribute__((fallthrough));
	case TCP_BODY_RMA:
		if (len % TCP_RMA_IOV_SIZE)
			return -EPROTO;
		n = len / TCP_RMA_IOV_SIZE;
		return n >= 1 && n <= TCP_IOV_MAX ? 0 : -EINVAL;
	case TCP_BODY_COMMIT:
		if (len % TCP_RMA_IOV_SIZE)
			return -EPROTO;
		n = len / TCP_RMA_IOV_SIZE;
		return n >= 1 && n <= TCP_COMMIT_IOV_MAX ? 0 : -EINVAL;
	}
	return -EPROTO;
}

OFI_HOT int tcp_hdr_decode(const void *buf, size_t len,
			   struct tcp_hdr_view *out)
{
	const struct tcp_op_rule *rule;
	const uint8_t *p = buf;
	struct tcp_hdr_view v;
	int ret;

	if (!buf || !out)
		return -EINVAL;
	if (len < TCP_HDR_SIZE)
		return -EAGAIN;

	v.version = p[0];
	v.op = p[1];
	v.flags = tcp_ld16(p + 2);
	v.body_len = tcp_ld16(p + 4);
	v.status = tcp_ld16(p + 6);
	v.payload_len = tcp_ld64(p + 8);
	v.op_id = tcp_ld64(p + 16);
	v.tag = tcp_ld64(p + 24);
	v.data = tcp_ld64(p + 32);
	v.rx_ctx = tcp_ld16(p + TCP_HDR_RX_CTX_OFF);
	memset(v.pad, 0, sizeof(v.pad));

	if (v.version != TCP_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (v.op >= TCP_OP_MAX || !tcp_op_rules[v.op].valid)
		return -EPROTO;
	rule = &tcp_op_rules[v.op];
	if (tcp_ld16(p + 42) || tcp_ld32(p + 44) || (v.flags & ~rule->flags) ||
	    (v.rx_ctx && !tcp_op_has_rx_ctx(v.op)))
		return -EPROTO;
	if ((!rule->tag && v.tag) || (!(v.flags & TCP_F_CQ_DATA) && v.data))
		return -EPROTO;
	/* A message is made durable only if it is answered. */
	if ((v.op == TCP_OP_MSG || v.op == TCP_OP_TAGGED) &&
	    (v.flags & TCP_F_COMMIT) && !(v.flags & TCP_F_ACK_REQ))
		return -EPROTO;
	/* Nor is a write that nobody answers. */
	if ((v.flags & TCP_F_NO_RESP) && (v.flags & TCP_F_COMMIT))
		return -EPROTO;
	/* A batched answer answers writes answered at all, all landed. */
	if ((v.flags & TCP_F_BATCH) &&
	    (v.flags & (TCP_F_NO_RESP | TCP_F_COMMIT) || v.status))
		return -EPROTO;
	if (!rule->status && v.status)
		return -EPROTO;
	if (v.status > TCP_STATUS_MAX)
		return -EINVAL;
	ret = tcp_check_body_len(rule->body, v.body_len);
	if (ret)
		return ret;
	if (v.payload_len > rule->max_payload)
		return -EMSGSIZE;
	/* A failed read or fetch returns no data. */
	if (v.status && v.payload_len && v.op != TCP_OP_CONN_RESP)
		return -EPROTO;

	*out = v;
	return 0;
}

OFI_HOT void tcp_hdr_encode(void *buf, const struct tcp_hdr_view *v)
{
	uint8_t *p = buf;

	p[0] = TCP_WIRE_VERSION;
	p[1] = v->op;
	tcp_st16(p + 2, v->flags);
	tcp_st16(p + 4, v->body_len);
	tcp_st16(p + 6, v->status);
	tcp_st64(p + 8, v->payload_len);
	tcp_st64(p + 16, v->op_id);
	tcp_st64(p + 24, v->tag);
	tcp_st64(p + 32, v->data);
	tcp_st16(p + TCP_HDR_RX_CTX_OFF,
		 tcp_op_has_rx_ctx(v->op) ? v->rx_ctx : 0);
	tcp_st16(p + 42, 0);
	tcp_st32(p + 44, 0);
}

void tcp_hdr_set_rx_ctx(void *buf, uint16_t rx_ctx)
{
	tcp_st16((uint8_t *)buf + TCP_HDR_RX_CTX_OFF, rx_ctx);
}

/* ------------------------------------------------------------------ */
/* RMA iovs.                                                            */

/* Reads @count iovs; their byte total (overflow-free) into *@total. */
static OFI_HOT int tcp_iovs_decode(const uint8_t *p, size_t count,
				   struct tcp_rma_iov *iov, uint64_t *total)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < count; i++, p += TCP_RMA_IOV_SIZE) {
		iov[i].addr = tcp_ld64(p);
		iov[i].len = tcp_ld64(p + 8);
		iov[i].key = tcp_ld64(p + 16);
		/* Each len is bounded first, so the sum cannot wrap. */
		if (iov[i].len > TCP_MAX_MSG_SIZE)
			return -EMSGSIZE;
		sum += iov[i].len;
		if (sum > TCP_MAX_MSG_SIZE)
			return -EMSGSIZE;
		/* The region must not wrap the target's address space. */
		if (iov[i].len && iov[i].addr > UINT64_MAX - (iov[i].len - 1))
			return -EINVAL;
	}
	*total = sum;
	return 0;
}

static OFI_HOT size_t tcp_iovs_encode(uint8_t *p, const struct tcp_rma_iov *iov,
				      size_t count)
{
	size_t i;

	for (i = 0; i < count; i++, p += TCP_RMA_IOV_SIZE) {
		tcp_st64(p, iov[i].addr);
		tcp_st64(p + 8, iov[i].len);
		tcp_st64(p + 16, iov[i].key);
	}
	return count * TCP_RMA_IOV_SIZE;
}

OFI_HOT int tcp_rma_body_decode(const struct tcp_hdr_view *h, const void *body,
				size_t len, struct tcp_rma_iov *iov,
				size_t *count)
{
	uint64_t total;
	size_t n;
	int ret;

	if (!h || !body || !iov || !count)
		return -EINVAL;
	if (h->op != TCP_OP_WRITE_REQ && h->op != TCP_OP_READ_REQ)
		return -EINVAL;
	ret = tcp_check_body_len(TCP_BODY_RMA, h->body_len);
	if (ret)
		return ret;
	if (len < h->body_len)
		return -EAGAIN;
	n = h->body_len / TCP_RMA_IOV_SIZE;
	ret = tcp_iovs_decode(body, n, iov, &total);
	if (ret)
		return ret;
	if (h->op == TCP_OP_WRITE_REQ && total != h->payload_len)
		return -EPROTO;
	*count = n;
	return 0;
}

OFI_HOT size_t tcp_rma_body_encode(void *buf, const struct tcp_rma_iov *iov,
				   size_t count)
{
	return tcp_iovs_encode(buf, iov, count);
}

/* ------------------------------------------------------------------ */
/* Commit ranges.                                                       */

int tcp_commit_body_decode(const struct tcp_hdr_view *h, const void *body,
			   size_t len, struct tcp_rma_iov *iov, size_t *count)
{
	const uint8_t *p = body;
	size_t n, i;
	int ret;

	/*
	 * Any addr/len goes: the target judges each range against its
	 * registrations (ofi_commit_target), so a bad one, a wrapping one
	 * included, is the initiator's FI_EACCES, not a broken stream.
	 */
	if (!h || !body || !iov || !count || h->op != TCP_OP_COMMIT)
		return -EINVAL;
	ret = tcp_check_body_len(TCP_BODY_COMMIT, h->body_len);
	if (ret)
		return ret;
	if (len < h->body_len)
		return -EAGAIN;
	n = h->body_len / TCP_RMA_IOV_SIZE;
	for (i = 0; i < n; i++, p += TCP_RMA_IOV_SIZE) {
		iov[i].addr = tcp_ld64(p);
		iov[i].len = tcp_ld64(p + 8);
		iov[i].key = tcp_ld64(p + 16);
	}
	*count = n;
	return 0;
}

size_t tcp_commit_body_encode(void *buf, const struct tcp_rma_iov *iov,
			      size_t count)
{
	return tcp_iovs_encode(buf, iov, count);
}

/* ------------------------------------------------------------------ */
/* Atomics.                                                             */

/* Operand bytes the payload of @kind/@op carries for @total target bytes. */
static uint64_t tcp_atomic_payload(uint8_t kind, uint8_t op, uint64_t total)
{
	if (kind == TCP_ATOMIC_COMPARE)
		return 2 * total;
	if (kind == TCP_ATOMIC_FETCH && op == FI_ATOMIC_READ)
		return 0;
	return total;
}

int tcp_atomic_body_decode(const struct tcp_hdr_view *h, const void *body,
			   size_t len, struct tcp_atomic_view *out)
{
	const uint8_t *p = body;
	uint64_t total;
	size_t dt_size, i;
	int ret;

	if (!h || !body || !out || h->op != TCP_OP_ATOMIC_REQ)
		return -EINVAL;
	ret = tcp_check_body_len(TCP_BODY_ATOMIC, h->body_len);
	if (ret)
		return ret;
	if (len < h->body_len)
		return -EAGAIN;

	out->kind = p[0];
	out->op = p[1];
	out->datatype = p[2];
	out->iov_count = p[3];
	if (tcp_ld32(p + 4))
		return -EPROTO;
	if (out->iov_count !=
	    (size_t)(h->body_len - TCP_ATOMIC_BODY_SIZE) / TCP_RMA_IOV_SIZE)
		return -EPROTO;
	if (out->kind >= TCP_ATOMIC_KINDS)
		return -EINVAL;
	if (ofi_atomic_valid((enum ofi_atomic_kind)out->kind,
			     (enum fi_datatype)out->datatype,
			     (enum fi_op)out->op, 0, &dt_size, NULL))
		return -EINVAL;

	ret = tcp_iovs_decode(p + TCP_ATOMIC_BODY_SIZE, out->iov_count,
			      out->iov, &total);
	if (ret)
		return ret;
	if (total > TCP_ATOMIC_MAX)
		return -EMSGSIZE;
	for (i = 0; i < out->iov_count; i++) {
		if (out->iov[i].len % dt_size)
			return -EINVAL;
	}
	if (h->payload_len != tcp_atomic_payload(out->kind, out->op, total))
		return -EPROTO;
	out->dt_size = dt_size;
	out->total = (size_t)total;
	return 0;
}

size_t tcp_atomic_body_encode(void *buf, uint8_t kind, uint8_t op,
			      uint8_t datatype, const struct tcp_rma_iov *iov,
			      size_t count)
{
	uint8_t *p = buf;

	p[0] = kind;
	p[1] = op;
	p[2] = datatype;
	p[3] = (uint8_t)count;
	tcp_st32(p + 4, 0);
	return TCP_ATOMIC_BODY_SIZE +
	       tcp_iovs_encode(p + TCP_ATOMIC_BODY_SIZE, iov, count);
}

/* ------------------------------------------------------------------ */
/* Handshake.                                                           */

static bool tcp_all_zero(const uint8_t *p, size_t len)
{
	while (len--) {
		if (*p++)
			return false;
	}
	return true;
}

int tcp_conn_body_decode(const struct tcp_hdr_view *h, const void *body,
			 size_t len, struct tcp_conn_body *out)
{
	const uint8_t *p = body;
	struct tcp_conn_body c;

	if (!h || !body || !out)
		return -EINVAL;
	if (h->op != TCP_OP_CONN_REQ && h->op != TCP_OP_CONN_RESP)
		return -EINVAL;
	if (h->body_len != TCP_CONN_BODY_SIZE)
		return -EPROTO;
	if (len < TCP_CONN_BODY_SIZE)
		return -EAGAIN;

	c.magic = tcp_ld32(p);
	c.ep_type = p[4];
	c.family = p[5];
	c.port = tcp_ld16(p + 6);
	memcpy(c.addr, p + 8, sizeof(c.addr));
	c.scope_id = tcp_ld32(p + 24);
	c.reserved = tcp_ld32(p + 28);

	if (c.magic != TCP_CONN_MAGIC || c.reserved)
		return -EPROTO;
	if (c.ep_type != TCP_CONN_EP_MSG && c.ep_type != TCP_CONN_EP_RDM)
		return -EINVAL;
	switch (c.family) {
	case TCP_FAMILY_INET:
		if (!tcp_all_zero(c.addr + 4, 12) || c.scope_id)
			return -EPROTO;
		break;
	case TCP_FAMILY_INET6:
		break;
	default:
		return -EINVAL;
	}
	*out = c;
	return 0;
}

size_t tcp_conn_body_encode(void *buf, const struct tcp_conn_body *c)
{
	uint8_t *p = buf;

	tcp_st32(p, TCP_CONN_MAGIC);
	p[4] = c->ep_type;
	p[5] = c->family;
	tcp_st16(p + 6, c->port);
	memcpy(p + 8, c->addr, sizeof(c->addr));
	tcp_st32(p + 24, c->scope_id);
	tcp_st32(p + 28, 0);
	return TCP_CONN_BODY_SIZE;
}

/* ------------------------------------------------------------------ */

OFI_HOT int tcp_body_check(const void *buf, size_t len,
			   const struct tcp_hdr_view *h)
{
	const uint8_t *body = (const uint8_t *)buf + TCP_HDR_SIZE;
	struct tcp_atomic_view av;
	struct tcp_rma_iov iov[TCP_IOV_MAX];
	struct tcp_conn_body conn;
	size_t count;

	if (len < TCP_HDR_SIZE)
		return -EAGAIN;
	len -= TCP_HDR_SIZE;
	switch (tcp_op_rules[h->op].body) {
	case TCP_BODY_CONN:
		return tcp_conn_body_decode(h, body, len, &conn);
	case TCP_BODY_RMA:
		return tcp_rma_body_decode(h, body, len, iov, &count);
	case TCP_BODY_ATOMIC:
		return tcp_atomic_body_decode(h, body, len, &av);
	case TCP_BODY_COMMIT:
		return tcp_commit_body_decode(h, body, len, iov, &count);
	default:
		return 0;
	}
}

int tcp_frame_decode(const void *buf, size_t len, struct tcp_hdr_view *h)
{
	int ret;

	ret = tcp_hdr_decode(buf, len, h);
	if (ret)
		return ret;
	return tcp_body_check(buf, len, h);
}
