/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rdm_atomic: two-process atomic test over FI_EP_RDM.  For each datatype the
 * client runs fi_atomic FI_SUM, fi_fetch_atomic FI_SUM (every fetched value
 * checked) and fi_compare_atomic FI_CSWAP (matching and stale compares) on a
 * slot of the server's memory; the server checks the slot, and that nothing
 * around it changed, after an out-of-band sync.  Combinations the provider
 * rejects through fi_query_atomic / fi_*atomicvalid print NOTSUPP.  The
 * server keeps reading its CQs until the client says done, so targets of
 * manual-progress providers move too.
 */
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>

#include "shared.h"

#define AT_KEY	  0xA70DULL
#define AT_REGION 4096 /* local scratch, then the target region */
#define AT_SLOT	  64
#define AT_MAX_N  10000 /* keeps float sums exact */
#define AT_INIT	  5
#define AT_ADDEND 3

enum ctl_cmd { CTL_PREP = 1, CTL_CHECK, CTL_DONE };

/* same binary on both ends: a fixed-width struct is the wire format */
struct ctl {
	uint32_t cmd;
	uint32_t len;	 /* bytes of the slot */
	uint64_t offset; /* slot offset in the target region */
	uint64_t value;	 /* raw bytes: initial or expected value */
	uint64_t actual; /* reply: the slot's raw bytes */
	int64_t status;	 /* reply: 0 or a negative fi_errno */
};

struct at_type {
	enum fi_datatype dt;
	const char *name;
	size_t size;
};

static const struct at_type at_types[] = {
	{FI_UINT64, "uint64", 8}, {FI_INT64, "int64", 8},
	{FI_INT32, "int32", 4},	  {FI_UINT32, "uint32", 4},
	{FI_DOUBLE, "double", 8}, {FI_FLOAT, "float", 4},
};

#define AT_NTYPES (sizeof(at_types) / sizeof(at_types[0]))

static uint64_t peer_key, peer_addr;
static uint64_t tgt_other;
static char *operand, *compare, *result;
static int n_run, n_notsupp;

/* values are small integers: exact in every type used here */
static uint64_t at_encode(const struct at_type *t, int64_t v)
{
	uint64_t raw = 0;
	int32_t i32 = (int32_t)v;
	float f = (float)v;
	double d = (double)v;

	switch (t->dt) {
	case FI_INT32:
	case FI_UINT32:
		memcpy(&raw, &i32, 4);
		break;
	case FI_FLOAT:
		memcpy(&raw, &f, 4);
		break;
	case FI_DOUBLE:
		memcpy(&raw, &d, 8);
		break;
	default:
		memcpy(&raw, &v, 8);
		break;
	}
	return raw;
}

static double at_decode(const struct at_type *t, uint64_t raw)
{
	int32_t i32;
	float f;
	double d;

	switch (t->dt) {
	case FI_INT32:
		memcpy(&i32, &raw, 4);
		return i32;
	case FI_UINT32:
		memcpy(&i32, &raw, 4);
		return (uint32_t)i32;
	case FI_FLOAT:
		memcpy(&f, &raw, 4);
		return f;
	case FI_DOUBLE:
		memcpy(&d, &raw, 8);
		return d;
	case FI_INT64:
		return (double)(int64_t)raw;
	default:
		return (double)raw;
	}
}

/* one registration: operand/compare/result scratch, then the target region */
static int at_alloc_mr(void)
{
	uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	int ret;

	ft.buf_size = 2 * AT_REGION;
	if (posix_memalign((void **)&ft.buf, 4096, ft.buf_size))
		return -FI_ENOMEM;
	memset(ft.buf, 0, ft.buf_size);
	ft.tx_buf = ft.buf;
	ft.rx_buf = ft.buf + AT_REGION;
	operand = ft.tx_buf;
	compare = ft.tx_buf + AT_SLOT;
	result = ft.tx_buf + 2 * AT_SLOT;
	ret = fi_mr_reg(ft.domain, ft.buf, ft.buf_size, access, 0, AT_KEY, 0,
			&ft.mr, NULL);
	if (ret) {
		FT_PRINTERR("fi_mr_reg", ret);
		return ret;
	}
	ft.desc = fi_mr_desc(ft.mr);
	return 0;
}

static int at_exchange(void)
{
	struct ft_rma_target t;
	int ret;

	ret = ft_exchange_rma(ft.rx_buf, AT_REGION, AT_REGION, &t);
	peer_key = t.key;
	peer_addr = t.addr;
	return ret;
}

static int at_init(void)
{
	uint64_t flags = ft_opts.src_addr ? FI_SOURCE : 0;
	int ret;

	ret = ft_alloc_hints(FI_ATOMIC);
	if (ret)
		return ret;
	ret = ft_getinfo(ft.hints, ft_opts.src_addr, NULL, flags, &ft.info);
	if (ret)
		return ret;
	ret = ft_open_fabric_domain();
	if (!ret)
		ret = ft_open_ep_res_fmt(FI_CQ_FORMAT_DATA);
	if (!ret)
		ret = at_alloc_mr();
	if (ret)
		return ret;
	ret = ft_is_server() ? ft_oob_listen_accept(ft_opts.port)
			     : ft_oob_connect(ft_opts.dst_addr, ft_opts.port);
	if (!ret)
		ret = at_exchange();
	return ret ? ret : ft_oob_sync();
}

/* the client calls this with nothing outstanding: its tx CQ stays empty */
static int at_progress(void)
{
	struct fi_cq_data_entry e;
	ssize_t n;

	n = fi_cq_read(ft.txcq, &e, 1);
	if (n == -FI_EAVAIL)
		return ft_cq_error(ft.txcq, "tx");
	if (n > 0) {
		FT_ERR("unexpected tx completion");
		return -FI_EOTHER;
	}
	while ((n = fi_cq_read(ft.rxcq, &e, 1)) > 0)
		tgt_other++;
	if (n == -FI_EAVAIL)
		return ft_cq_error(ft.rxcq, "rx");
	if (n < 0 && n != -FI_EAGAIN) {
		FT_PRINTERR("fi_cq_read", n);
		return (int)n;
	}
	return 0;
}

/* a client phase stops at half the timeout: twice it bounds this wait */
static int ctl_recv(struct ctl *c)
{
	struct pollfd pfd = {.fd = ft.oob_sock, .events = POLLIN};
	uint64_t start = ft_now_us();
	int ret;

	for (;;) {
		ret = at_progress();
		if (ret)
			return ret;
		if (poll(&pfd, 1, 0) > 0)
			return ft_oob_recv(c, sizeof(*c));
		if (ft_timed_out(start, 2 * ft_opts.timeout)) {
			FT_ERR("timeout waiting for the peer's command");
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
}

static int ctl_call(struct ctl *c)
{
	int ret;

	ret = ft_oob_send(c, sizeof(*c));
	if (!ret)
		ret = ctl_recv(c);
	return ret ? ret : (int)c->status;
}

/* server side */

static bool tgt_bad_len(const struct ctl *c)
{
	return c->len > sizeof(c->value) || c->offset % AT_SLOT ||
	       c->offset + AT_SLOT > AT_REGION;
}

static int tgt_prep(const struct ctl *c)
{
	memset(ft.rx_buf, 0, AT_REGION);
	memcpy(ft.rx_buf + c->offset, &c->value, c->len);
	tgt_other = 0;
	return 0;
}

static bool tgt_only_slot_set(const struct ctl *c)
{
	size_t i;

	for (i = 0; i < AT_REGION; i++)
		if ((i < c->offset || i >= c->offset + c->len) && ft.rx_buf[i])
			return false;
	return true;
}

/* the update may land after the initiator's completion: poll for it */
static int tgt_check(struct ctl *c)
{
	uint64_t start = ft_now_us();
	int ret;

	while (memcmp(ft.rx_buf + c->offset, &c->value, c->len)) {
		ret = at_progress();
		if (ret)
			return ret;
		if (ft_timed_out(start, ft_opts.timeout))
			break;
		sched_yield();
	}
	c->actual = 0;
	memcpy(&c->actual, ft.rx_buf + c->offset, c->len);
	if (memcmp(&c->actual, &c->value, c->len))
		return -FI_EIO;
	if (!tgt_only_slot_set(c)) {
		FT_ERR("bytes around the target slot changed");
		return -FI_EIO;
	}
	if (tgt_other) {
		FT_ERR("%" PRIu64 " unexpected target completions", tgt_other);
		return -FI_EIO;
	}
	return 0;
}

static int run_server(void)
{
	struct ctl c;
	int ret;

	for (;;) {
		ret = ctl_recv(&c);
		if (ret)
			return ret;
		if (c.cmd == CTL_DONE)
			c.status = 0;
		else if (tgt_bad_len(&c))
			c.status = -FI_EINVAL;
		else if (c.cmd == CTL_PREP)
			c.status = tgt_prep(&c);
		else if (c.cmd == CTL_CHECK)
			c.status = tgt_check(&c);
		else
			c.status = -FI_EINVAL;
		ret = ft_oob_send(&c, sizeof(c));
		if (ret || c.cmd == CTL_DONE)
			return ret;
	}
}

/* client side */

static uint64_t slot_off(const struct at_type *t)
{
	return (uint64_t)(t - at_types + 1) * AT_SLOT;
}

static int at_prep(const struct at_type *t, int64_t v)
{
	struct ctl c = {.cmd = CTL_PREP,
			.len = (uint32_t)t->size,
			.offset = slot_off(t),
			.value = at_encode(t, v)};

	return ctl_call(&c);
}

static int at_check(const struct at_type *t, const char *op, int64_t want)
{
	struct ctl c = {.cmd = CTL_CHECK,
			.len = (uint32_t)t->size,
			.offset = slot_off(t),
			.value = at_encode(t, want)};
	int ret;

	ret = ctl_call(&c);
	if (ret == -FI_EIO && c.status == -FI_EIO)
		FT_ERR("%s %s: target holds %g, expected %" PRId64, op, t->name,
		       at_decode(t, c.actual), want);
	return ret;
}

static int at_check_result(const struct at_type *t, const char *op, int i,
			   int64_t want)
{
	uint64_t raw = 0;

	memcpy(&raw, result, t->size);
	if (raw == at_encode(t, want))
		return 0;
	FT_ERR("%s %s iteration %d: fetched %g, expected %" PRId64, op, t->name,
	       i, at_decode(t, raw), want);
	return -FI_EIO;
}

static int at_wait(const char *what)
{
	ft.tx_seq++;
	return ft_wait_cq(ft.txcq, &ft.tx_done, ft.tx_seq, what);
}

static void at_show_perf(const char *op, const struct at_type *t, int iters,
			 uint64_t start, uint64_t end)
{
	double usec = end > start ? (double)(end - start) : 1;

	printf("%-10zu%-8d%-10zu%-10.2f%-12.2f%-12.2f%-12.2f  %s_%s\n", t->size,
	       iters, t->size * iters, usec / 1e6, t->size * iters / usec,
	       usec / iters, iters / usec, op, t->name);
	printf("ft_result: test=rdm_atomic prov=%s ep=rdm op=%s_%s size=%zu "
	       "iters=%d usec_per_xfer=%.3f mb_per_sec=%.3f\n",
	       ft.info->fabric_attr->prov_name, op, t->name, t->size, iters,
	       usec / iters, t->size * iters / usec);
	fflush(stdout);
}

typedef int (*at_iter_fn)(const struct at_type *t, int i);

/*
 * Warm-up plus timed iterations, at most AT_MAX_N, stopping early past half
 * the timeout.  Returns how many ran: the expected target value follows.
 */
static int at_loop(const char *op, const struct at_type *t, at_iter_fn fn)
{
	uint64_t cap = (uint64_t)ft_opts.timeout * 500000, begin, start = 0;
	int total = ft_opts.warmup + ft_opts.iterations, i, ret;

	if (total > AT_MAX_N)
		total = AT_MAX_N;
	begin = ft_now_us();
	for (i = 0; i < total; i++) {
		if (i == ft_opts.warmup)
			start = ft_now_us();
		ret = fn(t, i);
		if (ret) {
			FT_ERR("%s %s iteration %d failed", op, t->name, i);
			return ret;
		}
		if (i > ft_opts.warmup && ft_now_us() - begin > cap) {
			i++;
			break;
		}
	}
	if (i > ft_opts.warmup)
		at_show_perf(op, t, i - ft_opts.warmup, start, ft_now_us());
	return i;
}

static int iter_sum(const struct at_type *t, int i)
{
	ssize_t ret;

	FT_POST_RETRY(ret, fi_atomic(ft.ep, operand, 1, ft.desc, ft.peer,
				     peer_addr + slot_off(t), peer_key, t->dt,
				     FI_SUM, &ft.tx_ctx));
	if (ret) {
		FT_PRINTERR("fi_atomic", ret);
		return (int)ret;
	}
	return at_wait("atomic");
}

static int iter_fetch_sum(const struct at_type *t, int i)
{
	ssize_t ret;

	memset(result, 0xff, AT_SLOT);
	FT_POST_RETRY(ret,
		      fi_fetch_atomic(ft.ep, operand, 1, ft.desc, result,
				      ft.desc, ft.peer, peer_addr + slot_off(t),
				      peer_key, t->dt, FI_SUM, &ft.tx_ctx));
	if (ret) {
		FT_PRINTERR("fi_fetch_atomic", ret);
		return (int)ret;
	}
	ret = at_wait("fetch_atomic");
	if (ret)
		return (int)ret;
	return at_check_result(t, "fetch_sum", i,
			       AT_INIT + (int64_t)i * AT_ADDEND);
}

/* iteration i swaps AT_INIT + i for AT_INIT + i + 1 */
static int cswap(const struct at_type *t, int i, int64_t cmp, int64_t swap,
		 int64_t want)
{
	uint64_t c = at_encode(t, cmp), s = at_encode(t, swap);
	ssize_t ret;

	memcpy(compare, &c, t->size);
	memcpy(operand, &s, t->size);
	memset(result, 0xff, AT_SLOT);
	FT_POST_RETRY(ret,
		      fi_compare_atomic(ft.ep, operand, 1, ft.desc, compare,
					ft.desc, result, ft.desc, ft.peer,
					peer_addr + slot_off(t), peer_key,
					t->dt, FI_CSWAP, &ft.tx_ctx));
	if (ret) {
		FT_PRINTERR("fi_compare_atomic", ret);
		return (int)ret;
	}
	ret = at_wait("compare_atomic");
	if (ret)
		return (int)ret;
	return at_check_result(t, "cswap", i, want);
}

static int iter_cswap(const struct at_type *t, int i)
{
	return cswap(t, i, AT_INIT + i, AT_INIT + i + 1, AT_INIT + i);
}

/* 0 when supported, 1 when not, <0 when the two answers disagree */
static int at_supported(const struct at_type *t, enum fi_op op, uint64_t kind)
{
	struct fi_atomic_attr attr = {0};
	size_t count = 0;
	int vret, qret;

	if (kind == FI_COMPARE_ATOMIC)
		vret = fi_compare_atomicvalid(ft.ep, t->dt, op, &count);
	else if (kind == FI_FETCH_ATOMIC)
		vret = fi_fetch_atomicvalid(ft.ep, t->dt, op, &count);
	else
		vret = fi_atomicvalid(ft.ep, t->dt, op, &count);
	qret = fi_query_atomic(ft.domain, t->dt, op, &attr, kind);
	if (vret || !count)
		count = 0;
	/* a provider without fi_query_atomic leaves the answer to valid */
	if (qret == -FI_ENOSYS)
		return count ? 0 : 1;
	if (!qret != !!count) {
		FT_ERR("%s op %d: fi_query_atomic says %s, the valid call "
		       "says %s",
		       t->name, (int)op, qret ? fi_strerror(-qret) : "ok",
		       count ? "ok" : "unsupported");
		return -FI_EOTHER;
	}
	if (!qret && attr.size != t->size) {
		FT_ERR("%s: fi_query_atomic size %zu, expected %zu", t->name,
		       attr.size, t->size);
		return -FI_EOTHER;
	}
	return count ? 0 : 1;
}

/* -> 0 ran, 1 not supported, <0 failure */
static int at_gate(const struct at_type *t, const char *op, enum fi_op fop,
		   uint64_t kind)
{
	int ret = at_supported(t, fop, kind);

	if (ret == 1) {
		printf("NOTSUPP %s_%s\n", op, t->name);
		n_notsupp++;
	} else if (!ret) {
		n_run++;
	}
	return ret;
}

static int test_sum(const struct at_type *t)
{
	uint64_t add = at_encode(t, AT_ADDEND);
	int n, ret;

	ret = at_gate(t, "atomic_sum", FI_SUM, 0);
	if (ret)
		return ret > 0 ? 0 : ret;
	memcpy(operand, &add, t->size);
	ret = at_prep(t, AT_INIT);
	if (ret)
		return ret;
	n = at_loop("atomic_sum", t, iter_sum);
	if (n < 0)
		return n;
	return at_check(t, "atomic_sum", AT_INIT + (int64_t)n * AT_ADDEND);
}

static int test_fetch_sum(const struct at_type *t)
{
	uint64_t add = at_encode(t, AT_ADDEND);
	int n, ret;

	ret = at_gate(t, "fetch_sum", FI_SUM, FI_FETCH_ATOMIC);
	if (ret)
		return ret > 0 ? 0 : ret;
	memcpy(operand, &add, t->size);
	ret = at_prep(t, AT_INIT);
	if (ret)
		return ret;
	n = at_loop("fetch_sum", t, iter_fetch_sum);
	if (n < 0)
		return n;
	return at_check(t, "fetch_sum", AT_INIT + (int64_t)n * AT_ADDEND);
}

static int test_cswap(const struct at_type *t)
{
	int n, ret;

	ret = at_gate(t, "cswap", FI_CSWAP, FI_COMPARE_ATOMIC);
	if (ret)
		return ret > 0 ? 0 : ret;
	ret = at_prep(t, AT_INIT);
	if (ret)
		return ret;
	n = at_loop("cswap", t, iter_cswap);
	if (n < 0)
		return n;
	ret = at_check(t, "cswap", AT_INIT + n);
	if (ret)
		return ret;
	/* a stale compare: the old value comes back, the target stays */
	ret = cswap(t, n, AT_INIT, 1000, AT_INIT + n);
	if (!ret)
		ret = at_check(t, "cswap_fail", AT_INIT + n);
	return ret;
}

static int run_client(void)
{
	size_t i;
	int ret;

	printf("%-10s%-8s%-10s%-10s%-12s%-12s%-12s  %s\n", "bytes", "iters",
	       "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec", "op");
	for (i = 0; i < AT_NTYPES; i++) {
		ret = test_sum(&at_types[i]);
		if (!ret)
			ret = test_fetch_sum(&at_types[i]);
		if (!ret)
			ret = test_cswap(&at_types[i]);
		if (ret) {
			FT_ERR("%s failed: %s", at_types[i].name,
			       fi_strerror(-ret));
			return ret;
		}
	}
	ret = ctl_call(&(struct ctl){.cmd = CTL_DONE});
	if (ret)
		return ret;
	printf("%d combinations passed, %d not supported\n", n_run, n_notsupp);
	return n_run ? 0 : -FI_EOPNOTSUPP;
}

int main(int argc, char **argv)
{
	int ret;

	ft_init_opts(argv[0]);
	ft_opts.iterations = 100;
	if (ft_parse_args(argc, argv, NULL, NULL)) {
		ft_usage("atomic SUM / fetch SUM / CSWAP over reliable "
			 "datagram endpoints (-I default 100, at most 10000)",
			 NULL);
		return 2;
	}
	if (ft_opts.ep_type != FI_EP_RDM) {
		FT_ERR("rdm_atomic runs over FI_EP_RDM only");
		return 2;
	}
	ret = at_init();
	if (!ret)
		ret = ft_is_server() ? run_server() : run_client();
	ft_free_res();
	return ft_exit_code(ret);
}
