/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_dgram_wire.c - encoder and decoder of the datagram header
 * (sockets_dgram_wire.h, which states the rules). Pure functions over
 * bytes: no provider state, so the fuzz harness links this file alone.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "sockets_dgram_wire.h"

void sock_dg_encode(void *buf, const struct sock_dg_view *v)
{
	struct sock_dg_hdr h = {
		.magic = htole32(SOCK_DG_MAGIC),
		.version = SOCK_DG_VERSION,
		.op = v->op,
		.flags = htole16(v->flags),
		.len = htole32(v->len),
		.rx_ctx = htole16(v->rx_ctx),
		.tag = htole64(v->tag),
		.data = htole64(v->data),
	};

	memcpy(buf, &h, sizeof(h));
}

int sock_dg_decode(const void *buf, size_t n, struct sock_dg_view *v)
{
	struct sock_dg_hdr h;

	if (n < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (le32toh(h.magic) != SOCK_DG_MAGIC)
		return -EPROTO;
	if (h.version != SOCK_DG_VERSION)
		return -EPROTONOSUPPORT;
	v->op = h.op;
	v->flags = le16toh(h.flags);
	v->len = le32toh(h.len);
	v->rx_ctx = le16toh(h.rx_ctx);
	v->tag = le64toh(h.tag);
	v->data = le64toh(h.data);
	if (v->op == SOCK_DG_OP_INVALID || v->op >= SOCK_DG_OP_MAX ||
	    (v->flags & ~SOCK_DG_F_ALL) || h.reserved ||
	    v->rx_ctx >= SOCK_DG_CTX_MAX)
		return -EPROTO;
	if ((v->op != SOCK_DG_OP_TAGGED && v->tag) ||
	    (!(v->flags & SOCK_DG_F_CQ_DATA) && v->data))
		return -EPROTO;
	if (v->len > SOCK_DG_MAX_MSG || v->len != n - sizeof(h))
		return -EMSGSIZE;
	return 0;
}
