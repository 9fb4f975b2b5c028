/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fuzz_dgram.c - libFuzzer harness over the sockets datagram decoder
 * (prov/sockets/sockets_dgram_wire.c): every input is one whole UDP
 * datagram as anyone on the network could send it to a DGRAM endpoint.
 * Besides "no crash, no sanitizer report", it checks what the receive
 * path relies on:
 *  - canonical: a datagram the decoder accepts re-encodes to exactly its
 *    header bytes (no field ignored or silently normalised);
 *  - bounded: an accepted datagram's payload is exactly the bytes after
 *    the header and within SOCK_DG_MAX_MSG, its op a known one, a tag only
 *    on a tagged message, data only with the CQ data flag, its receive
 *    context index one a scalable endpoint can have.
 *
 * Built twice by tests/sockets/fuzz_dgram.sh: with -fsanitize=fuzzer as
 * the harness, and with -DSOCK_DG_FUZZ_SEEDS as a program that writes a
 * seed corpus of valid datagrams made by the encoder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sockets_dgram_wire.h"

#include "../util/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t again[SOCK_DG_HDR_SIZE];
	struct sock_dg_view v;

	if (sock_dg_decode(data, size, &v))
		return 0;
	CHECK(size >= SOCK_DG_HDR_SIZE);
	CHECK(v.len == size - SOCK_DG_HDR_SIZE && v.len <= SOCK_DG_MAX_MSG);
	CHECK(v.op == SOCK_DG_OP_MSG || v.op == SOCK_DG_OP_TAGGED);
	CHECK(v.op == SOCK_DG_OP_TAGGED || !v.tag);
	CHECK(!(v.flags & ~SOCK_DG_F_ALL));
	CHECK((v.flags & SOCK_DG_F_CQ_DATA) || !v.data);
	CHECK(v.rx_ctx < SOCK_DG_CTX_MAX);
	sock_dg_encode(again, &v);
	CHECK(!memcmp(again, data, SOCK_DG_HDR_SIZE));
	return 0;
}

#ifdef SOCK_DG_FUZZ_SEEDS
/* Valid datagrams of each op, with and without data, for receive
 * context 0 and the last one, into argv[1]. */
int main(int argc, char **argv)
{
	uint8_t buf[SOCK_DG_HDR_SIZE + 16];
	struct sock_dg_view v;
	char path[4096];
	int n = 0, op, k, ctx;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (op = SOCK_DG_OP_MSG; op < SOCK_DG_OP_MAX; op++) {
		for (k = 0; k < 4; k++) {
			ctx = k & 2 ? SOCK_DG_CTX_MAX - 1 : 0;
			v = (struct sock_dg_view){
				.op = (uint8_t)op,
				.flags = k & 1 ? SOCK_DG_F_CQ_DATA : 0,
				.rx_ctx = (uint16_t)ctx,
				.len = 16,
				.tag = op == SOCK_DG_OP_TAGGED ? 0x1234 : 0,
				.data = k & 1 ? 0xabcd : 0,
			};
			sock_dg_encode(buf, &v);
			memset(buf + SOCK_DG_HDR_SIZE, 0x5a, 16);
			CHECK(!LLVMFuzzerTestOneInput(buf, sizeof(buf)));
			snprintf(path, sizeof(path), "%s/seed-%03d", argv[1],
				 n++);
			f = fopen(path, "wb");
			CHECK(f &&
			      fwrite(buf, 1, sizeof(buf), f) == sizeof(buf));
			fclose(f);
		}
	}
	return 0;
}
#endif
