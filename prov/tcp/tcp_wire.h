/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_wire.h - the tcp provider's wire format: the fixed frame header, the
 * operation codes and flags, the per-operation bodies (RMA iovs, atomic
 * descriptor, connection handshake), their limits, and the pure encoders
 * and decoders over byte buffers (prov/tcp/tcp_wire.c).
 *
 * Standalone on purpose (standard headers only): a unit test and a
 * libFuzzer harness include it without the provider.
 *
 * A frame on the stream is
 *
 *	struct tcp_hdr (48 bytes) | body (body_len bytes) | payload
 *
 * The body describes the operation (what the receiver must know before it
 * can place a single payload byte: RMA iovs, atomic descriptor, handshake
 * addresses); the payload is user data, which the receiver reads straight
 * into the destination the upper layer picks. Frames never interleave on
 * one connection: a frame is written whole before the next one starts.
 *
 * Byte order: every multi-byte field is little-endian on the wire (the
 * hosts we run on are, so encoding is a plain store there); the codecs
 * read and write bytes through memcpy, never through a cast of the
 * buffer, so neither alignment nor host order matters. The structs below
 * document the layout (offsets and sizes are asserted); code never
 * overlays them on received bytes.
 *
 * Trust rules: everything a peer sends is hostile until tcp_hdr_decode()
 * and the body decoder of its op accepted it. They bound every field:
 * version, op, flags allowed for the op, reserved bits and fields zero,
 * tag/data/status zero where the op has none, body size exact for the op,
 * payload size against the op's limit and against the body (RMA: the iov
 * lengths add up to the payload; atomics: operands match the datatype and
 * element counts). What they cannot check (keys, registered ranges, the
 * buffer posted, the request a response answers) is the upper layer's,
 * before it touches memory. A decoder failure means the byte stream can no
 * longer be trusted: the connection is dropped, its pending ops fail.
 *
 * Errors (negative errno values, equal to the fi_errno ones):
 *	-EPROTONOSUPPORT  the peer speaks another wire version
 *	-EPROTO		  not a frame of ours: unknown or reserved op, bad
 *			  magic, reserved bits/fields set, field set that the
 *			  op does not carry, body size wrong for the op
 *	-EMSGSIZE	  a size beyond the protocol's limits
 *	-EINVAL		  a value out of its range (iov count, atomic
 *			  op/datatype/kind, status, address family)
 *	-EAGAIN		  fewer bytes than the header/body (need more)
 *
 * Versioning: TCP_WIRE_VERSION changes whenever a layout or rule here
 * changes incompatibly; the handshake carries it in the header like every
 * frame, and an acceptor answers a foreign version by closing the
 * connection (it cannot parse the request's body anyway).
 */
#ifndef TCP_WIRE_H
#define TCP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 2: TCP_OP_COMMIT / TCP_OP_COMMIT_RESP defined, TCP_F_COMMIT added.
 * 3: rx_ctx taken from the reserved field (scalable endpoints).
 * 4: TCP_F_NO_RESP added (WRITE_REQ answered by nobody).
 * 5: TCP_F_BATCH added (WRITE_REQ/WRITE_RESP answered together). */
#define TCP_WIRE_VERSION 5
#define TCP_CONN_MAGIC	 0x5449464fU /* bytes "OFIT" read as le32 */

/* Limits (what fi_getinfo will advertise derives from these). */
#define TCP_MAX_MSG_SIZE   ((uint64_t)UINT32_MAX) /* payload of one frame */
#define TCP_IOV_MAX	   8			  /* rma_iov_limit */
#define TCP_ATOMIC_MAX	   65536 /* operand bytes of one atomic */
#define TCP_CONN_DATA_MAX  256	 /* FI_OPT_CM_DATA_SIZE */
#define TCP_STATUS_MAX	   511	 /* positive fi_errno codes */
#define TCP_COMMIT_IOV_MAX 4	 /* ranges of one fi_commit (fi_commit(3)) */
#define TCP_BODY_MAX	   (TCP_ATOMIC_BODY_SIZE + TCP_IOV_MAX * TCP_RMA_IOV_SIZE)

/* ------------------------------------------------------------------ */
/* Header.                                                              */

enum tcp_op {
	TCP_OP_INVALID = 0, /* never sent: a zeroed buffer is not a frame */
	TCP_OP_CONN_REQ, /* connector -> acceptor, body conn, payload cm data */
	TCP_OP_CONN_RESP, /* acceptor -> connector, status 0: accepted */
	TCP_OP_MSG,
	TCP_OP_TAGGED,
	TCP_OP_WRITE_REQ,   /* body rma iovs, payload the data */
	TCP_OP_WRITE_RESP,  /* status of the write */
	TCP_OP_READ_REQ,    /* body rma iovs, no payload */
	TCP_OP_READ_RESP,   /* payload the data read (none on error) */
	TCP_OP_ATOMIC_REQ,  /* body atomic + rma iovs, payload operands */
	TCP_OP_ATOMIC_RESP, /* payload the fetched values (fetch/compare) */
	TCP_OP_ACK,	    /* MSG/TAGGED delivered (TCP_F_ACK_REQ) */
	TCP_OP_COMMIT,	    /* fi_commit: body rma iovs, no payload */
	TCP_OP_COMMIT_RESP, /* the target's answer: status, nothing else */
	TCP_OP_MAX,
};

/* Header flags; any bit not listed, or not allowed for the op, is -EPROTO. */
#define TCP_F_CQ_DATA (1U << 0) /* hdr.data is remote CQ data */
#define TCP_F_ACK_REQ                                                          \
	(1U << 1) /* MSG/TAGGED: answer with TCP_OP_ACK once
				 * the data sits in the receive buffer
				 * (FI_DELIVERY_COMPLETE) */
/*
 * FI_COMMIT_COMPLETE: the target makes what the frame wrote durable
 * (persistent registrations; for MSG/TAGGED the filled part of a receive
 * buffer registered so) before it answers. WRITE_REQ and ATOMIC_REQ are
 * always answered; MSG/TAGGED carry it only together with TCP_F_ACK_REQ.
 */
#define TCP_F_COMMIT (1U << 2)
#define TCP_F_ALL    (TCP_F_CQ_DATA | TCP_F_ACK_REQ | TCP_F_COMMIT)
/*
 * WRITE_REQ only: the target sends no WRITE_RESP; the initiator's write
 * completed once the frame was on the stream (the collective engine's
 * writes, whose landing the remote CQ data already signals). Never
 * together with TCP_F_COMMIT, which is an answer's promise.
 */
#define TCP_F_NO_RESP (1U << 3)
/*
 * WRITE_REQ: the initiator takes an answer that covers several writes
 * (never with TCP_F_NO_RESP or TCP_F_COMMIT). WRITE_RESP, status 0 only:
 * the answer to op_id and to every TCP_F_BATCH write this connection
 * carried before it that is still unanswered: they all landed (the
 * target answers a failed one at once, alone, so its error arrives
 * first). The target owes at most one such answer per connection and
 * sends it by the end of the progress pass that landed the writes.
 */
#define TCP_F_BATCH (1U << 4)

/* The header as it sits on the wire (little-endian fields). */
struct tcp_hdr {
	uint8_t version;      /* TCP_WIRE_VERSION */
	uint8_t op;	      /* enum tcp_op */
	uint16_t flags;	      /* TCP_F_* */
	uint16_t body_len;    /* bytes of op body after the header */
	uint16_t status;      /* responses: 0 or a positive fi_errno */
	uint64_t payload_len; /* bytes of payload after the body */
	uint64_t op_id;	      /* initiator's cookie, echoed by responses */
	uint64_t tag;	      /* TCP_OP_TAGGED only */
	uint64_t data;	      /* with TCP_F_CQ_DATA only */
	uint16_t rx_ctx;      /* requests: the target's receive context */
	uint16_t reserved16;  /* zero */
	uint32_t reserved;    /* zero */
};

#define TCP_HDR_SIZE 48
_Static_assert(sizeof(struct tcp_hdr) == TCP_HDR_SIZE, "tcp_hdr size");
_Static_assert(offsetof(struct tcp_hdr, body_len) == 4, "body_len");
_Static_assert(offsetof(struct tcp_hdr, status) == 6, "status");
_Static_assert(offsetof(struct tcp_hdr, payload_len) == 8, "payload_len");
_Static_assert(offsetof(struct tcp_hdr, op_id) == 16, "op_id");
_Static_assert(offsetof(struct tcp_hdr, tag) == 24, "tag");
_Static_assert(offsetof(struct tcp_hdr, data) == 32, "data");
_Static_assert(offsetof(struct tcp_hdr, rx_ctx) == 40, "rx_ctx");
_Static_assert(offsetof(struct tcp_hdr, reserved16) == 42, "reserved16");
_Static_assert(offsetof(struct tcp_hdr, reserved) == 44, "reserved");
/* Where tcp_hdr_set_rx_ctx patches an encoded header. */
#define TCP_HDR_RX_CTX_OFF 40

/* A header in host order: what the decoder fills, the encoder reads. */
struct tcp_hdr_view {
	uint8_t version; /* the encoder writes TCP_WIRE_VERSION regardless */
	uint8_t op;
	uint16_t flags;
	uint16_t body_len;
	uint16_t status;
	uint64_t payload_len;
	uint64_t op_id;
	uint64_t tag;
	uint64_t data;
	/*
	 * The receive context of a scalable endpoint a request (MSG, TAGGED,
	 * WRITE/READ/ATOMIC_REQ, COMMIT) is for: fi_rx_addr's index, 0 for
	 * a plain endpoint. Responses carry 0 (they name their request by
	 * op_id). The receiver checks it against its contexts.
	 */
	uint16_t rx_ctx;
	uint16_t pad[3]; /* zero: views compare whole */
};

/* ------------------------------------------------------------------ */
/* Bodies.                                                              */

/* One target region of an RMA or atomic: bytes at addr under key. */
struct tcp_rma_iov {
	uint64_t addr;
	uint64_t len; /* bytes (atomics too: a multiple of the datatype) */
	uint64_t key;
};

#define TCP_RMA_IOV_SIZE 24
_Static_assert(sizeof(struct tcp_rma_iov) == TCP_RMA_IOV_SIZE, "rma iov");
_Static_assert(TCP_COMMIT_IOV_MAX <= TCP_IOV_MAX, "commit iovs");

/* Atomic families, the same order as enum ofi_atomic_kind. */
enum tcp_atomic_kind {
	TCP_ATOMIC_WRITE,   /* payload: operands */
	TCP_ATOMIC_FETCH,   /* payload: operands (none for FI_ATOMIC_READ) */
	TCP_ATOMIC_COMPARE, /* payload: operands, then compare values */
	TCP_ATOMIC_KINDS,
};

/* Precedes iov_count struct tcp_rma_iov in an ATOMIC_REQ body. */
struct tcp_atomic_body {
	uint8_t kind;	  /* enum tcp_atomic_kind */
	uint8_t op;	  /* enum fi_op */
	uint8_t datatype; /* enum fi_datatype */
	uint8_t iov_count;
	uint32_t reserved; /* zero */
};

#define TCP_ATOMIC_BODY_SIZE 8
_Static_assert(sizeof(struct tcp_atomic_body) == TCP_ATOMIC_BODY_SIZE,
	       "atomic body");

/* Decoded atomic request. */
struct tcp_atomic_view {
	uint8_t kind;
	uint8_t op;
	uint8_t datatype;
	size_t dt_size; /* bytes of one element */
	size_t total;	/* operand bytes == sum of iov lens */
	size_t iov_count;
	struct tcp_rma_iov iov[TCP_IOV_MAX];
};

/* Address families of the handshake (not the host's AF_* values). */
#define TCP_FAMILY_INET	 4
#define TCP_FAMILY_INET6 6

/* Endpoint types of the handshake: both ends must agree. */
#define TCP_CONN_EP_MSG 1
#define TCP_CONN_EP_RDM 2

/*
 * Body of CONN_REQ and CONN_RESP: who is talking. The connector sends its
 * listening address (RDM: the address the acceptor's AV knows it by, so
 * the acceptor maps the socket to that AV entry; MSG: informational), the
 * acceptor its own. Connection data follows as the payload.
 */
struct tcp_conn_body {
	uint32_t magic;	   /* TCP_CONN_MAGIC */
	uint8_t ep_type;   /* TCP_CONN_EP_* */
	uint8_t family;	   /* TCP_FAMILY_* */
	uint16_t port;	   /* host order value, le on the wire */
	uint8_t addr[16];  /* INET: 4 bytes, the other 12 zero */
	uint32_t scope_id; /* INET6 only, else zero */
	uint32_t reserved; /* zero */
};

#define TCP_CONN_BODY_SIZE 32
_Static_assert(sizeof(struct tcp_conn_body) == TCP_CONN_BODY_SIZE, "conn body");
_Static_assert(offsetof(struct tcp_conn_body, addr) == 8, "conn addr");

/* ------------------------------------------------------------------ */
/* Codecs.                                                              */

/*
 * Validates the TCP_HDR_SIZE bytes at @buf (@len may be larger) and fills
 * @out in host order. Checks everything the header alone decides: version,
 * op, flags for the op, reserved zero, tag/data/status only where the op
 * carries them, body_len exact (or within the iov range) for the op and
 * payload_len within the op's limit. 0 or a negative errno (see above).
 */
int tcp_hdr_decode(const void *buf, size_t len, struct tcp_hdr_view *out);

/* Writes @v as TCP_HDR_SIZE bytes at @buf (version: TCP_WIRE_VERSION). */
void tcp_hdr_encode(void *buf, const struct tcp_hdr_view *v);
/* Sets rx_ctx of the request header encoded at @buf. */
void tcp_hdr_set_rx_ctx(void *buf, uint16_t rx_ctx);

/*
 * Body of WRITE_REQ / READ_REQ (@h decoded): @body holds h->body_len
 * bytes. Fills @iov (TCP_IOV_MAX entries) and *@count; checks that the
 * lengths add up, without overflow, to the payload (write) or stay within
 * TCP_MAX_MSG_SIZE (read).
 */
int tcp_rma_body_decode(const struct tcp_hdr_view *h, const void *body,
			size_t len, struct tcp_rma_iov *iov, size_t *count);
/* Writes @count iovs at @buf; returns the bytes (the body_len to send). */
size_t tcp_rma_body_encode(void *buf, const struct tcp_rma_iov *iov,
			   size_t count);

/*
 * Body of ATOMIC_REQ: kind, op and datatype against the atomic table
 * (the combination must be one the executor runs for that kind), every
 * iov a whole number of elements, the total within TCP_ATOMIC_MAX and
 * the payload exactly the operands the kind needs.
 */
int tcp_atomic_body_decode(const struct tcp_hdr_view *h, const void *body,
			   size_t len, struct tcp_atomic_view *out);
size_t tcp_atomic_body_encode(void *buf, uint8_t kind, uint8_t op,
			      uint8_t datatype, const struct tcp_rma_iov *iov,
			      size_t count);

/*
 * Body of COMMIT: 1..TCP_COMMIT_IOV_MAX ranges, no payload. Addresses and
 * lengths are not bounded here (a commit may name a whole large
 * registration, and a range that wraps is the initiator's FI_EACCES, not
 * a broken stream): the target judges every range against its
 * registrations before touching anything.
 */
int tcp_commit_body_decode(const struct tcp_hdr_view *h, const void *body,
			   size_t len, struct tcp_rma_iov *iov, size_t *count);
size_t tcp_commit_body_encode(void *buf, const struct tcp_rma_iov *iov,
			      size_t count);

/* Body of CONN_REQ / CONN_RESP: magic, ep type, family, zero padding. */
int tcp_conn_body_decode(const struct tcp_hdr_view *h, const void *body,
			 size_t len, struct tcp_conn_body *out);
size_t tcp_conn_body_encode(void *buf, const struct tcp_conn_body *c);

/*
 * A whole frame head in @buf: header, then the body its op carries
 * (-EAGAIN when @len holds less than both). The receive path decodes
 * the header, then checks the body once it is in (tcp_parse).
 */
int tcp_frame_decode(const void *buf, size_t len, struct tcp_hdr_view *h);
/* The body part of tcp_frame_decode, for a header @h already decoded from
 * the same @buf. */
int tcp_body_check(const void *buf, size_t len, const struct tcp_hdr_view *h);

/* Printable name of an op code (logs); "?" for unknown values. */
const char *tcp_op_str(unsigned op);

#endif /* TCP_WIRE_H */
