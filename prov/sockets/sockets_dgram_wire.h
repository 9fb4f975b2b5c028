/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_dgram_wire.h - the wire format of the sockets provider's
 * FI_EP_DGRAM endpoints (sockets_dgram.c): one UDP datagram carries one
 * message, a fixed 32-byte header followed by the payload, and the pure
 * encoder and decoder over byte buffers (sockets_dgram_wire.c).
 *
 * Standalone on purpose (standard headers only): the libFuzzer harness
 * (tests/sockets/fuzz_dgram.c) includes it without the provider.
 *
 * Byte order: every multi-byte field is little-endian on the wire; the
 * codecs go through memcpy and <endian.h>, never through a cast of the
 * received bytes, so neither alignment nor host order matters. The struct
 * documents the layout (asserted); code never overlays it on input.
 *
 * Trust rules: anything that arrives on the socket is hostile until
 * sock_dg_decode() accepted it. It checks the magic, the version, the op,
 * that no unknown flag or reserved field is set, that the receive context
 * index is one a scalable endpoint can have (below SOCK_DG_CTX_MAX), that an untagged message
 * carries no tag and a message without FI_REMOTE_CQ_DATA no data, and that
 * the announced payload length is exactly what the datagram holds (a
 * datagram cut by the kernel or padded is not a message). A datagram the
 * decoder refuses is dropped and counted by the endpoint, never delivered.
 *
 * Errors (negative errno values, equal to the fi_errno ones):
 *	-EPROTONOSUPPORT  another wire version
 *	-EPROTO		  not a datagram of ours (short, bad magic, op,
 *			  flags, reserved fields, context index, tag/data
 *			  where none)
 *	-EMSGSIZE	  payload length beyond SOCK_DG_MAX_MSG, or not the
 *			  datagram's remaining bytes
 */
#ifndef SOCKETS_DGRAM_WIRE_H
#define SOCKETS_DGRAM_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* 2: the receive context index (scalable endpoints) in the former
 * reserved field. */
#define SOCK_DG_VERSION 2
#define SOCK_DG_MAGIC	0x4744534fU /* bytes "OSDG" read as le32 */

/*
 * The datagram limit: the largest UDP payload over IPv4 (65535 less the
 * 20-byte IP and 8-byte UDP headers) less our header. IPv6 allows 20
 * bytes more; one limit for both keeps max_msg_size one number.
 */
#define SOCK_DG_UDP_MAX	 65507
#define SOCK_DG_HDR_SIZE 32
#define SOCK_DG_MAX_MSG	 (SOCK_DG_UDP_MAX - SOCK_DG_HDR_SIZE)
/* Receive contexts of a scalable endpoint: the indexes the wire carries. */
#define SOCK_DG_CTX_MAX 16

enum sock_dg_op {
	SOCK_DG_OP_INVALID = 0, /* a zeroed buffer is not a message */
	SOCK_DG_OP_MSG,
	SOCK_DG_OP_TAGGED,
	SOCK_DG_OP_MAX,
};

#define SOCK_DG_F_CQ_DATA (1U << 0) /* data is remote CQ data */
#define SOCK_DG_F_ALL	  SOCK_DG_F_CQ_DATA

/* The header as it sits on the wire (little-endian fields). */
struct sock_dg_hdr {
	uint32_t magic;	   /* SOCK_DG_MAGIC */
	uint8_t version;   /* SOCK_DG_VERSION */
	uint8_t op;	   /* enum sock_dg_op */
	uint16_t flags;	   /* SOCK_DG_F_* */
	uint32_t len;	   /* payload bytes after the header */
	uint16_t rx_ctx;   /* receive context index, < SOCK_DG_CTX_MAX */
	uint16_t reserved; /* zero */
	uint64_t tag;	   /* SOCK_DG_OP_TAGGED only */
	uint64_t data;	   /* with SOCK_DG_F_CQ_DATA only */
};

_Static_assert(sizeof(struct sock_dg_hdr) == SOCK_DG_HDR_SIZE, "hdr size");
_Static_assert(offsetof(struct sock_dg_hdr, version) == 4, "version");
_Static_assert(offsetof(struct sock_dg_hdr, op) == 5, "op");
_Static_assert(offsetof(struct sock_dg_hdr, flags) == 6, "flags");
_Static_assert(offsetof(struct sock_dg_hdr, len) == 8, "len");
_Static_assert(offsetof(struct sock_dg_hdr, rx_ctx) == 12, "rx_ctx");
_Static_assert(offsetof(struct sock_dg_hdr, reserved) == 14, "reserved");
_Static_assert(offsetof(struct sock_dg_hdr, tag) == 16, "tag");
_Static_assert(offsetof(struct sock_dg_hdr, data) == 24, "data");
_Static_assert(SOCK_DG_MAX_MSG + SOCK_DG_HDR_SIZE <= 65507, "udp payload");

/* The header in host order: what the decoder fills, the encoder reads. */
struct sock_dg_view {
	uint8_t op;
	uint16_t flags;
	uint16_t rx_ctx;
	uint32_t len;
	uint64_t tag;
	uint64_t data;
};

/* Writes @v as a header into @buf (SOCK_DG_HDR_SIZE bytes). */
void sock_dg_encode(void *buf, const struct sock_dg_view *v);
/*
 * Validates the @n bytes of one whole datagram at @buf and fills @v:
 * 0, or one of the negative errors above (nothing of @v to be used).
 */
int sock_dg_decode(const void *buf, size_t n, struct sock_dg_view *v);

#endif /* SOCKETS_DGRAM_WIRE_H */
