/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fuzz_av.c - libFuzzer harness over the address parsing of prov/util's
 * address vector (util_av.c) and each provider's address rules, through
 * the public API: fi_av_insert (FI_ADDR_STR names packed one after the
 * other or as an array of pointers; binary socket addresses of any
 * family), fi_av_insertsvc, fi_av_insertsym, fi_av_straddr and
 * fi_av_lookup on the addresses that went in. An address is application
 * input: besides "no crash, no sanitizer report" it checks that
 *  - every insert answers 0 entries or 1 for each address, and an
 *    inserted address reads back (fi_av_lookup) to what a later insert of
 *    the same bytes finds again;
 *  - fi_av_straddr always NUL-terminates within the length given and
 *    reports the length it needs;
 *  - nothing reads past what the API lets it read: count * addrlen bytes
 *    of packed names or binary addresses, addrlen bytes of one name (the
 *    harness hands over buffers of exactly that size).
 *
 * FUZZ_AV_FORMAT picks the format: "shm" (FI_ADDR_STR, fi_shm://pid:n),
 * "tcp" or "sockets" (FI_SOCKADDR_IN), "tcp6" or "sockets6"
 * (FI_SOCKADDR_IN6), "sockets-dgram" (FI_SOCKADDR_IN on a datagram
 * endpoint's domain). Name lookups are
 * numeric only (getaddrinfo is wrapped): a fuzzer must not query DNS.
 *
 * Input: byte 0 selects the operation, byte 1 a count, the rest is data.
 * Built by tests/util/fuzz_av.sh, with -DFUZZ_AV_MAIN as a plain program
 * that runs the inputs named on its command line (regression inputs).
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "fuzz_check.h"

#define MAX_COUNT    4
#define MIN_SZ(a, b) ((a) < (b) ? (a) : (b))

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *avs[2]; /* FI_AV_TABLE, FI_AV_MAP */
static size_t addrlen;
static int str_format;

/* Numeric only: a fuzzer must not send names to a resolver. */
int __real_getaddrinfo(const char *node, const char *service,
		       const struct addrinfo *hints, struct addrinfo **res);
int __wrap_getaddrinfo(const char *node, const char *service,
		       const struct addrinfo *hints, struct addrinfo **res)
{
	struct addrinfo h = {0};

	if (hints)
		h = *hints;
	h.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
	return __real_getaddrinfo(node, service, &h, res);
}

static void setup(void)
{
	const char *fmt = getenv("FUZZ_AV_FORMAT");
	struct fi_av_attr attr = {0};
	struct fi_info *hints, *info;
	int i;

	fmt = fmt ? fmt : "shm";
	hints = fi_allocinfo();
	CHECK(hints);
	/* FORMAT is PROV[6][-dgram]: the provider, IPv6, datagrams. */
	hints->fabric_attr->prov_name = strndup(fmt, strcspn(fmt, "6-"));
	hints->ep_attr->type = strstr(fmt, "-dgram") ? FI_EP_DGRAM : FI_EP_RDM;
	hints->addr_format = !strcmp(fmt, "shm") ? FI_ADDR_STR
			     : strchr(fmt, '6')	 ? FI_SOCKADDR_IN6
						 : FI_SOCKADDR_IN;
	CHECK(!fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	CHECK(info->addr_format == hints->addr_format);
	str_format = info->addr_format == FI_ADDR_STR;
	CHECK(!fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(!fi_domain(fabric, info, &domain, NULL));
	for (i = 0; i < 2; i++) {
		attr.type = i ? FI_AV_MAP : FI_AV_TABLE;
		CHECK(!fi_av_open(domain, &attr, &avs[i], NULL));
	}
	addrlen = str_format ? 64 : info->src_addrlen;
	if (!str_format)
		CHECK(addrlen == (info->addr_format == FI_SOCKADDR_IN6
					  ? sizeof(struct sockaddr_in6)
					  : sizeof(struct sockaddr_in)));
	fi_freeinfo(hints);
	fi_freeinfo(info);
}

/* A heap copy of exactly @n bytes, so that ASan sees any read past it. */
static void *exact(const void *data, size_t n)
{
	void *p = malloc(n ? n : 1);

	CHECK(p);
	memcpy(p, data, n);
	return p;
}

/* Up to @max NUL-separated strings of @data; a missing one is NULL. */
static size_t split(const uint8_t *data, size_t size, char **out, size_t max)
{
	size_t n = 0, len;

	while (n < max && size) {
		len = strnlen((const char *)data, size);
		out[n] = malloc(len + 1);
		CHECK(out[n]);
		memcpy(out[n], data, len);
		out[n][len] = '\0';
		n++;
		data += MIN_SZ(len + 1, size);
		size -= MIN_SZ(len + 1, size);
	}
	return n;
}

static void check_straddr(struct fid_av *av, const void *addr, size_t buflen)
{
	char buf[600];
	size_t len = buflen;
	const char *s;

	CHECK(buflen <= sizeof(buf));
	memset(buf, 'x', sizeof(buf));
	s = fi_av_straddr(av, addr, buflen ? buf : NULL, &len);
	if (!buflen)
		return;
	CHECK(s == buf);
	CHECK(memchr(buf, '\0', buflen));
	CHECK(len >= strlen(buf) + 1);
	CHECK(buf[buflen] == 'x');
}

/*
 * What went in reads back (also into a short buffer, which gets only what
 * fits), and inserting what read back stores the same bytes again.
 */
static void check_readback(struct fid_av *av, fi_addr_t fa, size_t salt)
{
	uint8_t *got = calloc(1, addrlen), *again_got = calloc(1, addrlen);
	size_t len = addrlen, len2 = addrlen, slen = salt % addrlen;
	fi_addr_t again = FI_ADDR_NOTAVAIL;
	const void *name = got;
	uint8_t *small;

	CHECK(got && again_got);
	CHECK(!fi_av_lookup(av, fa, got, &len));
	CHECK(len && len <= addrlen);
	CHECK(fi_av_insert(av, str_format ? (const void *)&name : got, 1,
			   &again, 0, NULL) == 1);
	CHECK(!fi_av_lookup(av, again, again_got, &len2));
	CHECK(len2 == len && !memcmp(got, again_got, len));
	fi_av_remove(av, &again, 1, 0);
	small = malloc(slen ? slen : 1);
	CHECK(small);
	len2 = slen;
	CHECK(!fi_av_lookup(av, fa, slen ? small : NULL, &len2));
	CHECK(len2 == len);
	CHECK(!memcmp(small, got, MIN_SZ(slen, len)));
	free(small);
	check_straddr(av, got, salt * 7 % 600);
	free(got);
	free(again_got);
}

static void finish(struct fid_av *av, fi_addr_t *fa, size_t n, int ret,
		   size_t shrink)
{
	size_t i, ok = 0;

	CHECK(ret >= 0 && (size_t)ret <= n);
	for (i = 0; i < n; i++) {
		if (fa[i] == FI_ADDR_NOTAVAIL)
			continue;
		ok++;
		check_readback(av, fa[i], shrink + i);
	}
	CHECK(ok == (size_t)ret);
	for (i = 0; i < n; i++) {
		if (fa[i] != FI_ADDR_NOTAVAIL)
			fi_av_remove(av, &fa[i], 1, 0);
	}
}

/*
 * Whether the library takes these 8 bytes for a pointer to a string (an
 * array of names, fi_av(3)), by its rule: a NUL among them and readable
 * memory where they point.
 */
static int reads_as_pointer(const uint8_t *buf)
{
	struct iovec local, remote;
	void *p;
	char c;

	if (!memchr(buf, 0, sizeof(p)))
		return 0;
	memcpy(&p, buf, sizeof(p));
	local.iov_base = &c;
	local.iov_len = 1;
	remote.iov_base = p;
	remote.iov_len = 1;
	return p && process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1;
}

/*
 * Names packed one after the other, exactly count * addrlen bytes. What
 * the library would take for a pointer array by its rule is turned into
 * a packed form (its top byte makes it a kernel address): only a real
 * array may be read as one.
 */
static void op_packed(struct fid_av *av, const uint8_t *data, size_t size,
		      size_t count)
{
	fi_addr_t fa[MAX_COUNT] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL,
				   FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
	size_t n = count * addrlen;
	uint8_t *buf = malloc(n);
	int ret;

	CHECK(buf);
	memset(buf, 0, n);
	memcpy(buf, data, MIN_SZ(size, n));
	if (str_format && reads_as_pointer(buf))
		buf[7] = 0x80;
	ret = fi_av_insert(av, buf, count, fa, 0, NULL);
	finish(av, fa, count, ret, size);
	free(buf);
}

/* FI_ADDR_STR names as an array of pointers, each of its own length. */
static void op_pointers(struct fid_av *av, const uint8_t *data, size_t size,
			size_t count)
{
	fi_addr_t fa[MAX_COUNT] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL,
				   FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
	char *names[MAX_COUNT];
	size_t n, i;
	int ret;

	n = split(data, size, names, count);
	if (!n)
		return;
	/* An unterminated name: its bytes alone, addrlen of them at most. */
	if (size && data[size - 1] && strlen(names[n - 1]) >= addrlen) {
		char *raw = exact(names[n - 1], addrlen);

		free(names[n - 1]);
		names[n - 1] = raw;
	}
	ret = fi_av_insert(av, names, n, fa, 0, NULL);
	finish(av, fa, n, ret, size);
	for (i = 0; i < n; i++)
		free(names[i]);
}

static void op_svc(struct fid_av *av, const uint8_t *data, size_t size,
		   uint8_t sel)
{
	char *s[2] = {NULL, NULL};
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	int ret;

	split(data, size, s, 2);
	ret = fi_av_insertsvc(av, sel & 1 ? NULL : s[0], sel & 2 ? NULL : s[1],
			      &fa, 0, NULL);
	finish(av, &fa, 1, ret < 0 ? 0 : ret, size);
	free(s[0]);
	free(s[1]);
}

static void op_sym(struct fid_av *av, const uint8_t *data, size_t size,
		   uint8_t sel)
{
	size_t nodecnt = (sel & 3) + 1, svccnt = ((sel >> 2) & 3) + 1;
	fi_addr_t fa[16];
	char *s[2] = {NULL, NULL};
	size_t i;
	int ret;

	split(data, size, s, 2);
	for (i = 0; i < 16; i++)
		fa[i] = FI_ADDR_NOTAVAIL;
	ret = fi_av_insertsym(av, s[0], nodecnt, s[1], svccnt, fa, 0, NULL);
	finish(av, fa, nodecnt * svccnt, ret < 0 ? 0 : ret, size);
	free(s[0]);
	free(s[1]);
}

static void op_straddr(struct fid_av *av, const uint8_t *data, size_t size,
		       uint8_t sel)
{
	uint8_t *buf = calloc(1, addrlen);

	CHECK(buf);
	memcpy(buf, data, MIN_SZ(size, addrlen));
	check_straddr(av, buf, (size_t)sel * 2 % 600);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fid_av *av;
	uint8_t op, sel;

	if (!domain)
		setup();
	if (size < 2)
		return 0;
	op = data[0];
	sel = data[1];
	av = avs[(op >> 4) & 1];
	data += 2;
	size -= 2;
	switch (op & 7) {
	case 0: /* FI_ADDR_STR: packed names; else binary addresses */
	case 1:
		op_packed(av, data, size, sel % MAX_COUNT + 1);
		break;
	case 2:
		if (str_format)
			op_pointers(av, data, size, sel % MAX_COUNT + 1);
		else
			op_packed(av, data, size, sel % MAX_COUNT + 1);
		break;
	case 3:
	case 4:
		op_svc(av, data, size, sel);
		break;
	case 5:
		op_sym(av, data, size, sel);
		break;
	default:
		op_straddr(av, data, size, sel);
		break;
	}
	return 0;
}

#ifdef FUZZ_AV_MAIN
/* Runs each file named as one input: the regression corpus, no fuzzing. */
int main(int argc, char **argv)
{
	printf("fuzz_av: %d inputs\n",
	       fuzz_run_files(argc, argv, LLVMFuzzerTestOneInput));
	return 0;
}
#endif
