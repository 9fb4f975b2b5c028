/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tests/tostr/tostr_test.c - differential test of src/tostr.c against
 * Debian's libfabric 1.17 fi_tostr().  src/tostr.c is compiled with its
 * entry points renamed to our_tostr/our_tostr_r and linked next to the
 * reference library, so both renderings of the same input are compared
 * byte for byte: every enum value, flag combinations, real fi_info lists
 * from the reference fi_getinfo(), fuzzed and hand-built fi_info structs,
 * and every truncation length of fi_tostr_r().
 */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

char *our_tostr(const void *data, enum fi_type datatype);
char *our_tostr_r(char *buf, size_t len, const void *data,
		  enum fi_type datatype);

#define COMMIT_MANUAL_BIT (1ULL << 50)
#define COMMIT_EVENT	  (FI_JOIN_COMPLETE + 1)
#define LAST_TYPE	  FI_TYPE_LOG_SUBSYS
#define MAX_REPORTS	  10
#define CANARY		  0x5a
#define TRUNC_MAX	  4096

static unsigned long checks, failures;
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Long renderings are reported from the first line that differs. */
static const char *first_diff_line(const char *a, const char *b)
{
	const char *line = a;
	size_t i;

	for (i = 0; a[i] && a[i] == b[i]; i++) {
		if (a[i] == '\n')
			line = a + i + 1;
	}
	return line;
}

static void fail(const char *what, const char *want, const char *got)
{
	failures++;
	if (failures > MAX_REPORTS)
		return;
	if (want && got) {
		size_t off = (size_t)(first_diff_line(want, got) - want);

		want += off;
		got += off;
	}
	printf("MISMATCH %s\n--- debian:\n%.400s\n--- ours:\n%.400s\n---\n",
	       what, want ? want : "(NULL)", got ? got : "(NULL)");
}

static void expect_str(const char *what, const char *want, const char *got)
{
	checks++;
	if (!want || !got) {
		if (want != got)
			fail(what, want, got);
		return;
	}
	if (strcmp(want, got))
		fail(what, want, got);
}

/* fi_tostr() returns a shared buffer: copy Debian's before calling ours. */
static void compare(const char *what, const void *data, enum fi_type type)
{
	char *want = NULL, *ref = fi_tostr(data, type);

	if (ref)
		want = strdup(ref);
	expect_str(what, want, our_tostr(data, type));
	free(want);
}

static void test_scalars(void)
{
	static const int extra[] = {-1,	 -2,  64,	  100,
				    255, 256, 0x7fffffff, (int)0x80000000};
	char what[64];
	int type, v;
	size_t i;

	for (type = FI_TYPE_INFO; type <= LAST_TYPE + 3; type++) {
		if (type == FI_TYPE_INFO || type == FI_TYPE_TX_ATTR ||
		    type == FI_TYPE_RX_ATTR || type == FI_TYPE_EP_ATTR ||
		    type == FI_TYPE_DOMAIN_ATTR ||
		    type == FI_TYPE_FABRIC_ATTR || type == FI_TYPE_FID)
			continue;
		for (v = 0; v < 64; v++) {
			uint64_t val = (uint64_t)v;

			if (type == FI_TYPE_EQ_EVENT && v == COMMIT_EVENT)
				continue;
			snprintf(what, sizeof(what), "type %d value %d", type,
				 v);
			compare(what, &val, type);
		}
		for (i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
			int64_t val = extra[i];

			if (type == FI_TYPE_MODE)
				val &= ~(int64_t)COMMIT_MANUAL_BIT;

			snprintf(what, sizeof(what), "type %d value %d", type,
				 extra[i]);
			compare(what, &val, type);
		}
	}
}

static uint64_t sparse_rnd(void)
{
	uint64_t v = rnd();

	switch (rnd() % 4) {
	case 0:
		return v & rnd();
	case 1:
		return v & rnd() & rnd();
	case 2:
		return 1ULL << (v % 64);
	default:
		return v;
	}
}

static void test_flags(void)
{
	static const enum fi_type types[] = {
		FI_TYPE_CAPS, FI_TYPE_OP_FLAGS,	      FI_TYPE_MSG_ORDER,
		FI_TYPE_MODE, FI_TYPE_CQ_EVENT_FLAGS, FI_TYPE_MR_MODE,
	};
	char what[96];
	uint64_t val;
	size_t t;
	int i;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		for (i = -2; i < 64 + 1000; i++) {
			if (i == -2)
				val = 0;
			else if (i == -1)
				val = ~0ULL;
			else if (i < 64)
				val = 1ULL << i;
			else
				val = sparse_rnd();
			if (types[t] == FI_TYPE_MODE)
				val &= ~COMMIT_MANUAL_BIT;
			if (types[t] == FI_TYPE_MR_MODE) {
				int mr = (int)val;

				snprintf(what, sizeof(what), "mr_mode 0x%x",
					 mr);
				compare(what, &mr, types[t]);
				continue;
			}
			snprintf(what, sizeof(what), "flags type %d 0x%llx",
				 types[t], (unsigned long long)val);
			compare(what, &val, types[t]);
		}
	}
}

/* Our extension values have no Debian counterpart: check them directly. */
static void test_extensions(void)
{
	uint64_t mode = COMMIT_MANUAL_BIT;
	int event = COMMIT_EVENT;
	char want[512];
	int i;

	expect_str("FI_COMMIT_MANUAL", "FI_COMMIT_MANUAL",
		   our_tostr(&mode, FI_TYPE_MODE));
	expect_str("FI_COMMIT", "FI_COMMIT",
		   our_tostr(&event, FI_TYPE_EQ_EVENT));
	for (i = 0; i < 200; i++) {
		mode = sparse_rnd() & ~COMMIT_MANUAL_BIT;
		snprintf(want, sizeof(want), "%s",
			 fi_tostr(&mode, FI_TYPE_MODE));
		if (want[0])
			strcat(want, ", ");
		strcat(want, "FI_COMMIT_MANUAL");
		mode |= COMMIT_MANUAL_BIT;
		expect_str("mode with FI_COMMIT_MANUAL", want,
			   our_tostr(&mode, FI_TYPE_MODE));
	}
}

static int fake_tostr(const struct fid *fid, char *buf, size_t len)
{
	size_t used = strnlen(buf, len);

	(void)fid;
	if (used + 1 < len)
		snprintf(buf + used, len - used, "<fid len %zu>\n", len);
	return 0;
}

static struct fi_ops fid_ops_tostr = {
	.size = sizeof(struct fi_ops),
	.tostr = fake_tostr,
};
static struct fi_ops fid_ops_plain = {.size = sizeof(struct fi_ops)};
static struct fi_ops fid_ops_short = {
	.size = offsetof(struct fi_ops, tostr),
	.tostr = fake_tostr,
};
static struct fid_nic fake_nics[3] = {
	{.fid = {.fclass = FI_CLASS_NIC, .ops = &fid_ops_tostr}},
	{.fid = {.fclass = FI_CLASS_NIC, .ops = &fid_ops_plain}},
	{.fid = {.fclass = FI_CLASS_NIC, .ops = &fid_ops_short}},
};

static void compare_info(const char *what, const struct fi_info *info)
{
	char label[200];

	compare(what, info, FI_TYPE_INFO);
	snprintf(label, sizeof(label), "%s tx_attr", what);
	compare(label, info->tx_attr, FI_TYPE_TX_ATTR);
	snprintf(label, sizeof(label), "%s rx_attr", what);
	compare(label, info->rx_attr, FI_TYPE_RX_ATTR);
	snprintf(label, sizeof(label), "%s ep_attr", what);
	compare(label, info->ep_attr, FI_TYPE_EP_ATTR);
	snprintf(label, sizeof(label), "%s domain_attr", what);
	compare(label, info->domain_attr, FI_TYPE_DOMAIN_ATTR);
	snprintf(label, sizeof(label), "%s fabric_attr", what);
	compare(label, info->fabric_attr, FI_TYPE_FABRIC_ATTR);
}

static int test_getinfo(struct fi_info **list)
{
	struct fi_info *cur;
	char what[128];
	int ret, n = 0;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, list);
	if (ret) {
		printf("reference fi_getinfo failed: %d\n", ret);
		return ret;
	}
	for (cur = *list; cur; cur = cur->next, n++) {
		snprintf(what, sizeof(what), "getinfo #%d %s", n,
			 cur->fabric_attr->prov_name);
		compare_info(what, cur);
	}
	printf("compared %d fi_info entries from the reference fi_getinfo\n",
	       n);
	return n ? 0 : -1;
}

/* Sizes with the special values fi_tostr spells out by name. */
static size_t rnd_size(void)
{
	switch (rnd() % 5) {
	case 0:
		return SIZE_MAX;
	case 1:
		return 0;
	case 2:
		return rnd() % 1000;
	default:
		return rnd();
	}
}

static int rnd_enum(void)
{
	switch (rnd() % 4) {
	case 0:
		return -(int)(rnd() % 3) - 1;
	case 1:
		return (int)(rnd() % 40);
	default:
		return (int)(rnd() % 8);
	}
}

static char *rnd_name(char *store, size_t size)
{
	size_t i, n = rnd() % (size - 1);

	if (rnd() % 5 == 0)
		return NULL;
	for (i = 0; i < n; i++)
		store[i] = (char)(' ' + rnd() % 95);
	store[n] = '\0';
	return store;
}

static void fill_addr(uint8_t *addr, size_t size, uint32_t format)
{
	static const sa_family_t fams[] = {AF_INET, AF_INET6, AF_UNIX, 27, 0};
	size_t i;

	for (i = 0; i < size; i++)
		addr[i] = (uint8_t)rnd();
	if (format <= FI_SOCKADDR_IN6 && rnd() % 4) {
		sa_family_t fam = fams[rnd() % 5];

		memcpy(addr, &fam, sizeof(fam));
	}
	if (format == FI_ADDR_STR) {
		for (i = 0; i < 40; i++)
			addr[i] = (uint8_t)(' ' + addr[i] % 95);
		addr[40] = '\0';
	}
}

struct fuzz_info {
	struct fi_info info;
	struct fi_tx_attr tx;
	struct fi_rx_attr rx;
	struct fi_ep_attr ep;
	struct fi_domain_attr dom;
	struct fi_fabric_attr fab;
	uint8_t src[160], dest[160];
	char dom_name[48], fab_name[48], prov_name[48];
};

static void fuzz_attrs(struct fuzz_info *f)
{
	f->tx = (struct fi_tx_attr){
		sparse_rnd(), sparse_rnd() & ~COMMIT_MANUAL_BIT,
		sparse_rnd(), sparse_rnd(),
		sparse_rnd(), rnd_size(),
		rnd_size(),   rnd_size(),
		rnd_size(),   (uint32_t)sparse_rnd()};
	f->rx = (struct fi_rx_attr){
		sparse_rnd(), sparse_rnd() & ~COMMIT_MANUAL_BIT,
		sparse_rnd(), sparse_rnd(),
		sparse_rnd(), rnd_size(),
		rnd_size(),   rnd_size()};
	f->ep.type = rnd_enum();
	f->ep.protocol = (uint32_t)rnd_enum();
	f->ep.protocol_version = (uint32_t)rnd();
	f->ep.max_msg_size = rnd_size();
	f->ep.msg_prefix_size = rnd_size();
	f->ep.max_order_raw_size = rnd_size();
	f->ep.max_order_war_size = rnd_size();
	f->ep.max_order_waw_size = rnd_size();
	f->ep.mem_tag_format = sparse_rnd();
	f->ep.tx_ctx_cnt = rnd_size();
	f->ep.rx_ctx_cnt = rnd_size();
	f->ep.auth_key_size = rnd() % 3;
	f->ep.auth_key = f->ep.auth_key_size ? f->src : NULL;
}

static void fuzz_domain(struct fuzz_info *f)
{
	size_t *counts = &f->dom.mr_key_size;
	int i;

	f->dom.domain = (struct fid_domain *)(uintptr_t)(rnd() % 3 ? 0 : rnd());
	f->dom.name = rnd_name(f->dom_name, sizeof(f->dom_name));
	f->dom.threading = rnd_enum();
	f->dom.control_progress = rnd_enum();
	f->dom.data_progress = rnd_enum();
	f->dom.resource_mgmt = rnd_enum();
	f->dom.av_type = rnd_enum();
	f->dom.mr_mode = (int)sparse_rnd();
	/* mr_key_size .. mr_iov_limit are consecutive size_t fields */
	for (i = 0; i < 12; i++)
		counts[i] = rnd_size();
	f->dom.caps = sparse_rnd();
	f->dom.mode = sparse_rnd() & ~COMMIT_MANUAL_BIT;
	f->dom.auth_key_size = rnd() % 3;
	f->dom.max_err_data = rnd_size();
	f->dom.mr_cnt = rnd_size();
	f->dom.tclass = (uint32_t)sparse_rnd();
	f->fab.name = rnd_name(f->fab_name, sizeof(f->fab_name));
	f->fab.prov_name = rnd_name(f->prov_name, sizeof(f->prov_name));
	f->fab.prov_version = (uint32_t)rnd();
	f->fab.api_version = (uint32_t)sparse_rnd();
}

static void fuzz_info(struct fuzz_info *f, unsigned int null_mask)
{
	memset(f, 0, sizeof(*f));
	fuzz_attrs(f);
	fuzz_domain(f);
	f->info.caps = sparse_rnd();
	f->info.mode = sparse_rnd() & ~COMMIT_MANUAL_BIT;
	f->info.addr_format = (uint32_t)(rnd() % 18);
	f->info.src_addrlen = rnd() % 200;
	f->info.dest_addrlen = rnd() % 200;
	fill_addr(f->src, sizeof(f->src), f->info.addr_format);
	fill_addr(f->dest, sizeof(f->dest), f->info.addr_format);
	f->info.src_addr = rnd() % 4 ? f->src : NULL;
	f->info.dest_addr = rnd() % 4 ? f->dest : NULL;
	f->info.handle = rnd() % 3 ? NULL : &fake_nics[rnd() % 3].fid;
	f->info.nic = rnd() % 3 ? NULL : &fake_nics[rnd() % 3];
	f->info.tx_attr = null_mask & 1 ? NULL : &f->tx;
	f->info.rx_attr = null_mask & 2 ? NULL : &f->rx;
	f->info.ep_attr = null_mask & 4 ? NULL : &f->ep;
	f->info.domain_attr = null_mask & 8 ? NULL : &f->dom;
	f->info.fabric_attr = null_mask & 16 ? NULL : &f->fab;
}

static void test_fuzzed_infos(void)
{
	struct fuzz_info f;
	char what[64];
	int i;

	for (i = 0; i < 3000; i++) {
		fuzz_info(&f, i < 64 ? (unsigned int)i : 0);
		snprintf(what, sizeof(what), "fuzzed info #%d", i);
		compare(what, &f.info, FI_TYPE_INFO);
		if (f.info.tx_attr)
			compare(what, &f.tx, FI_TYPE_TX_ATTR);
		if (f.info.rx_attr)
			compare(what, &f.rx, FI_TYPE_RX_ATTR);
		if (f.info.ep_attr)
			compare(what, &f.ep, FI_TYPE_EP_ATTR);
		if (f.info.domain_attr)
			compare(what, &f.dom, FI_TYPE_DOMAIN_ATTR);
		if (f.info.fabric_attr)
			compare(what, &f.fab, FI_TYPE_FABRIC_ATTR);
	}
	for (i = 0; i < 3; i++) {
		snprintf(what, sizeof(what), "fid #%d", i);
		compare(what, &fake_nics[i].fid, FI_TYPE_FID);
	}
}

/* Writes past len, a missing NUL, or output unlike Debian's all fail. */
static void check_truncation(const char *what, const void *data,
			     enum fi_type type)
{
	static char ours[TRUNC_MAX + 64], ref[TRUNC_MAX + 64];
	size_t full, len, i;
	char *r;

	r = fi_tostr_r(ref, sizeof(ref), data, type);
	full = r ? strlen(ref) : 0;
	for (len = 1; len <= full + 2 && len <= TRUNC_MAX; len++) {
		memset(ours, CANARY, sizeof(ours));
		r = our_tostr_r(ours, len, data, type);
		checks++;
		if (r != ours || !memchr(ours, '\0', len)) {
			fail(what, "NUL-terminated within len", "overflow");
			continue;
		}
		for (i = len; i < sizeof(ours); i++) {
			if (ours[i] != CANARY)
				break;
		}
		if (i != sizeof(ours)) {
			fail(what, "untouched bytes past len", "overwritten");
			continue;
		}
		fi_tostr_r(ref, len, data, type);
		expect_str(what, ref, ours);
	}
}

static void test_truncation(struct fi_info *list)
{
	struct fuzz_info f;
	uint64_t caps = ~0ULL;
	char buf[16];
	int i;

	checks += 4;
	if (our_tostr_r(buf, 0, &caps, FI_TYPE_CAPS) ||
	    our_tostr_r(NULL, 16, &caps, FI_TYPE_CAPS) ||
	    our_tostr_r(buf, 16, NULL, FI_TYPE_CAPS) ||
	    our_tostr(NULL, FI_TYPE_INFO))
		fail("NULL/zero-length arguments", "NULL", "non-NULL");
	if (list)
		check_truncation("truncated getinfo", list, FI_TYPE_INFO);
	check_truncation("truncated caps", &caps, FI_TYPE_CAPS);
	for (i = 0; i < 12; i++) {
		fuzz_info(&f, 0);
		check_truncation("truncated fuzzed info", &f.info,
				 FI_TYPE_INFO);
		check_truncation("truncated fuzzed domain", &f.dom,
				 FI_TYPE_DOMAIN_ATTR);
	}
}

static void *thread_tostr(void *arg)
{
	uint64_t caps = FI_RMA;

	(void)arg;
	return our_tostr(&caps, FI_TYPE_CAPS);
}

/* fi_tostr's buffer is per thread: results must not alias across threads. */
static void test_threads(void)
{
	uint64_t caps = FI_MSG;
	char *mine = our_tostr(&caps, FI_TYPE_CAPS);
	pthread_t tid;
	void *theirs = NULL;

	checks++;
	if (pthread_create(&tid, NULL, thread_tostr, NULL) ||
	    pthread_join(tid, &theirs) || theirs == mine ||
	    strcmp(mine, "FI_MSG"))
		fail("thread-local buffer", "distinct buffers", "shared");
}

int main(void)
{
	struct fi_info *list = NULL;
	int ret;

	test_scalars();
	test_flags();
	test_extensions();
	ret = test_getinfo(&list);
	test_fuzzed_infos();
	test_truncation(list);
	test_threads();
	if (list)
		fi_freeinfo(list);
	if (ret) {
		failures++;
		printf("FAIL: no fi_info list from the reference library\n");
	}
	printf("tostr: %lu checks, %lu mismatches\n", checks, failures);
	return failures ? 1 : 0;
}
