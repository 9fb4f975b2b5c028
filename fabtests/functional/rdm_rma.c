/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rdm_rma: two-process RMA test over FI_EP_RDM.  The client drives fi_write,
 * fi_read, fi_writedata (remote CQ data checked at the target) and
 * fi_inject_write over a size sweep, then a write with a wrong key that must
 * fail with FI_EACCES (any error with -E) and leave the target intact.
 * Remote CQ data is checked by count, min, max and sum.  The server is a
 * passive target: it answers prepare/check commands on the out-of-band socket
 * and keeps reading its CQs in between, so manual-progress providers move.
 * One report line and one "ft_result:" line per operation and size.
 */
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>

#include "shared.h"

#define RMA_KEY	      0xC0DEULL
#define RMA_DATA_BASE 0x1000ULL
#define RMA_NEG_SIZE  4096

enum ctl_cmd { CTL_PREP = 1, CTL_CHECK, CTL_DONE };

/* CTL_PREP modes */
enum { PREP_ZERO, PREP_PATTERN, PREP_PATTERN_NEG };
/* CTL_CHECK modes */
enum { CHK_NONE, CHK_PATTERN, CHK_SUM };

/* same binary on both ends: a fixed-width struct is the wire format */
struct ctl {
	uint32_t cmd;
	uint32_t mode;
	uint64_t size;
	uint64_t seed;
	uint64_t count; /* remote CQ data entries the target must have seen */
	uint64_t base;	/* their first data value */
	int64_t status; /* reply: 0 or a negative fi_errno */
};

/* what the target saw on its receive CQ since the last prepare */
struct target_log {
	uint64_t sum;
	uint64_t ndata, dsum, dmin, dmax;
	uint64_t other;
	uint64_t bad_flags;
	bool tolerate_err;
};

static size_t max_size;
static char *ref_buf;
static uint64_t peer_key, peer_addr, data_mask;
static struct target_log tgt;
static bool writedata_ok = true;
static bool any_key_err;

static void rma_default_sizes(void)
{
	static const size_t def[] = {8, 64, 512, 4096, 65536, 1 << 20, 4 << 20};
	size_t i;

	for (i = 0; i < sizeof(def) / sizeof(def[0]); i++)
		ft_opts.sizes[i] = def[i];
	ft_opts.nsizes = (int)i;
}

static uint64_t rma_checksum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (len--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

/* one registration: local half (source/sink) then the remote-access half */
static int rma_alloc_mr(void)
{
	uint64_t access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	int ret;

	ft.buf_size = 2 * max_size;
	if (posix_memalign((void **)&ft.buf, 4096, ft.buf_size))
		return -FI_ENOMEM;
	ref_buf = malloc(max_size);
	if (!ref_buf)
		return -FI_ENOMEM;
	memset(ft.buf, 0, ft.buf_size);
	ft.tx_buf = ft.buf;
	ft.rx_buf = ft.buf + max_size;
	ret = fi_mr_reg(ft.domain, ft.buf, ft.buf_size, access, 0, RMA_KEY, 0,
			&ft.mr, NULL);
	if (ret) {
		FT_PRINTERR("fi_mr_reg", ret);
		return ret;
	}
	ft.desc = fi_mr_desc(ft.mr);
	return 0;
}

static int rma_exchange(void)
{
	struct ft_rma_target t;
	int ret;

	ret = ft_exchange_rma(ft.rx_buf, max_size, max_size, &t);
	peer_key = t.key;
	peer_addr = t.addr;
	return ret;
}

static int rma_init(void)
{
	uint64_t flags = ft_opts.src_addr ? FI_SOURCE : 0;
	size_t cq_data;
	int ret;

	max_size = ft_max_size();
	if (max_size < RMA_NEG_SIZE)
		max_size = RMA_NEG_SIZE;
	ret = ft_alloc_hints(FI_RMA);
	if (ret)
		return ret;
	ret = ft_getinfo(ft.hints, ft_opts.src_addr, NULL, flags, &ft.info);
	if (ret)
		return ret;
	cq_data = ft.info->domain_attr->cq_data_size;
	data_mask = cq_data >= 8 ? ~0ULL : (1ULL << (8 * cq_data)) - 1;
	ret = ft_open_fabric_domain();
	if (!ret)
		ret = ft_open_ep_res_fmt(FI_CQ_FORMAT_DATA);
	if (!ret)
		ret = rma_alloc_mr();
	if (ret)
		return ret;
	ret = ft_is_server() ? ft_oob_listen_accept(ft_opts.port)
			     : ft_oob_connect(ft_opts.dst_addr, ft_opts.port);
	if (!ret)
		ret = rma_exchange();
	return ret ? ret : ft_oob_sync();
}

static void rma_log_data(const struct fi_cq_data_entry *e)
{
	uint64_t d = e->data & data_mask;

	if (!(e->flags & FI_REMOTE_CQ_DATA)) {
		tgt.other++;
		return;
	}
	if (!(e->flags & FI_REMOTE_WRITE))
		tgt.bad_flags++;
	if (!tgt.ndata || d < tgt.dmin)
		tgt.dmin = d;
	if (!tgt.ndata || d > tgt.dmax)
		tgt.dmax = d;
	tgt.dsum += d;
	tgt.ndata++;
}

static int rma_cq_err(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err = {0};
	ssize_t ret;

	ret = fi_cq_readerr(cq, &err, 0);
	if (ret < 0) {
		FT_PRINTERR("fi_cq_readerr", ret);
		return (int)ret;
	}
	if (tgt.tolerate_err) {
		FT_DEBUG("%s error entry during bad-key test: %s", what,
			 fi_strerror(err.err));
		return 0;
	}
	FT_ERR("%s completion error: %s (prov: %s)", what, fi_strerror(err.err),
	       fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
	return -(err.err ? err.err : FI_EIO);
}

/*
 * Drives progress; target-side entries are logged.  The client calls this
 * only when it has no completion outstanding, so its tx CQ stays empty.
 */
static int rma_progress(void)
{
	struct fi_cq_data_entry e;
	ssize_t n;

	n = fi_cq_read(ft.txcq, &e, 1);
	if (n == -FI_EAVAIL)
		return rma_cq_err(ft.txcq, "tx");
	if (n > 0) {
		FT_ERR("unexpected tx completion");
		return -FI_EOTHER;
	}
	while ((n = fi_cq_read(ft.rxcq, &e, 1)) > 0)
		rma_log_data(&e);
	if (n == -FI_EAVAIL)
		return rma_cq_err(ft.rxcq, "rx");
	if (n < 0 && n != -FI_EAGAIN) {
		FT_PRINTERR("fi_cq_read", n);
		return (int)n;
	}
	return 0;
}

/*
 * A client phase is capped at half the timeout, and one of its waits lasts at
 * most the timeout, so twice the timeout bounds the server's wait.
 */
static int ctl_recv(struct ctl *c)
{
	struct pollfd pfd = {.fd = ft.oob_sock, .events = POLLIN};
	uint64_t start = ft_now_us();
	int ret;

	for (;;) {
		ret = rma_progress();
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

static int ctl_call(uint32_t cmd, uint32_t mode, size_t size, uint64_t seed,
		    uint64_t count, uint64_t base)
{
	struct ctl c = {.cmd = cmd,
			.mode = mode,
			.size = size,
			.seed = seed,
			.count = count,
			.base = base};
	int ret;

	ret = ft_oob_send(&c, sizeof(c));
	if (!ret)
		ret = ctl_recv(&c);
	if (ret)
		return ret;
	return (int)c.status;
}

/* server side */

static int tgt_prep(const struct ctl *c)
{
	memset(&tgt, 0, sizeof(tgt));
	if (c->mode == PREP_ZERO) {
		memset(ft.rx_buf, 0, c->size);
	} else {
		ft_fill_buf(ft.rx_buf, c->size, c->seed);
		tgt.tolerate_err = c->mode == PREP_PATTERN_NEG;
	}
	tgt.sum = rma_checksum(ft.rx_buf, c->size);
	return 0;
}

/* the data may land after the initiator's completion: poll for it */
static int tgt_wait_pattern(const struct ctl *c)
{
	uint64_t start = ft_now_us();
	int ret;

	ft_fill_buf(ref_buf, c->size, c->seed);
	while (memcmp(ft.rx_buf, ref_buf, c->size)) {
		ret = rma_progress();
		if (ret)
			return ret;
		if (ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("target data of %" PRIu64 " bytes wrong",
			       c->size);
			return ft_check_buf(ft.rx_buf, c->size, c->seed)
				       ?: -FI_EIO;
		}
		sched_yield();
	}
	return 0;
}

static int tgt_check_data(const struct ctl *c)
{
	uint64_t start = ft_now_us(), i, sum = 0;
	int ret;

	while (tgt.ndata < c->count) {
		ret = rma_progress();
		if (ret)
			return ret;
		if (ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("got %" PRIu64 " of %" PRIu64
			       " remote CQ data completions",
			       tgt.ndata, c->count);
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
	for (i = 0; i < c->count; i++)
		sum += (c->base + i) & data_mask;
	if (tgt.ndata != c->count ||
	    (c->count && (tgt.dmin != (c->base & data_mask) ||
			  tgt.dmax != ((c->base + c->count - 1) & data_mask) ||
			  tgt.dsum != sum))) {
		FT_ERR("remote CQ data: %" PRIu64 " entries in [0x%" PRIx64
		       ", 0x%" PRIx64 "], expected %" PRIu64 " in [0x%" PRIx64
		       ", ...]",
		       tgt.ndata, tgt.dmin, tgt.dmax, c->count, c->base);
		return -FI_EIO;
	}
	if (tgt.bad_flags) {
		FT_ERR("%" PRIu64
		       " remote CQ data entries lack FI_REMOTE_WRITE",
		       tgt.bad_flags);
		return -FI_EIO;
	}
	if (tgt.other) {
		FT_ERR("%" PRIu64 " unexpected target completions", tgt.other);
		return -FI_EIO;
	}
	return 0;
}

static int tgt_check(const struct ctl *c)
{
	int ret = 0;

	if (c->mode == CHK_PATTERN) {
		ret = tgt_wait_pattern(c);
	} else if (c->mode == CHK_SUM &&
		   rma_checksum(ft.rx_buf, c->size) != tgt.sum) {
		FT_ERR("target buffer changed by a write with a wrong key");
		ret = -FI_EIO;
	}
	return ret ? ret : tgt_check_data(c);
}

static int run_server(void)
{
	struct ctl c;
	int ret;

	for (;;) {
		ret = ctl_recv(&c);
		if (ret)
			return ret;
		if (c.size > max_size)
			c.status = -FI_EINVAL;
		else if (c.cmd == CTL_PREP)
			c.status = tgt_prep(&c);
		else if (c.cmd == CTL_CHECK)
			c.status = tgt_check(&c);
		else if (c.cmd == CTL_DONE)
			c.status = 0;
		else
			c.status = -FI_EINVAL;
		ret = ft_oob_send(&c, sizeof(c));
		if (ret || c.cmd == CTL_DONE)
			return ret;
	}
}

/* client side */

/* 4194304 -> "4m", 1536 -> "1.5k": keeps the report columns aligned */
static void rma_fmt(char *buf, size_t len, double v)
{
	static const char units[] = " kmgt";
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%.0f", v);
	else if (v == (uint64_t)v)
		snprintf(buf, len, "%.0f%c", v, units[u]);
	else
		snprintf(buf, len, "%.1f%c", v, units[u]);
}

/* client only: the server never times anything */
static void rma_show_perf(const char *op, size_t size, int iters,
			  uint64_t start, uint64_t end)
{
	double usec = end > start ? (double)(end - start) : 1;
	double bytes = (double)size * iters;
	char sz[16], tot[16];

	rma_fmt(sz, sizeof(sz), (double)size);
	rma_fmt(tot, sizeof(tot), bytes);
	printf("%-10s%-8d%-10s%-10.2f%-12.2f%-12.2f%-12.2f  %s\n", sz, iters,
	       tot, usec / 1e6, bytes / usec, usec / iters, iters / usec, op);
	printf("ft_result: test=rdm_rma prov=%s ep=rdm op=%s size=%zu "
	       "iters=%d usec_per_xfer=%.3f mb_per_sec=%.3f\n",
	       ft.info->fabric_attr->prov_name, op, size, iters, usec / iters,
	       bytes / usec);
	fflush(stdout);
}

static uint64_t rma_seed(size_t size, int i)
{
	return (uint64_t)size * 1000003 + (uint64_t)i;
}

typedef int (*rma_iter_fn)(size_t size, int i);

/*
 * Warm-up plus timed iterations; stops early past half the timeout so the
 * passive server's wait stays bounded.  Returns the iterations run, 0 when
 * the first one found the operation unsupported (fn returned 1).
 */
static int rma_loop(const char *op, size_t size, rma_iter_fn fn, bool timed)
{
	uint64_t cap = (uint64_t)ft_opts.timeout * 500000, begin, start = 0;
	int i, total = ft_opts.warmup + ft_opts.iterations, ret;

	begin = ft_now_us();
	for (i = 0; i < total; i++) {
		if (i == ft_opts.warmup)
			start = ft_now_us();
		ret = fn(size, i);
		if (ret > 0)
			return 0; /* operation not supported */
		if (ret) {
			FT_ERR("%s of %zu bytes, iteration %d failed", op, size,
			       i);
			return ret;
		}
		if (i > ft_opts.warmup && ft_now_us() - begin > cap)
			break;
	}
	if (i == total)
		i--;
	if (timed && i >= ft_opts.warmup)
		rma_show_perf(op, size, i + 1 - ft_opts.warmup, start,
			      ft_now_us());
	return i + 1;
}

static int rma_wait_tx(const char *what)
{
	ft.tx_seq++;
	return ft_wait_cq(ft.txcq, &ft.tx_done, ft.tx_seq, what);
}

static int iter_write(size_t size, int i)
{
	ssize_t ret;

	if (ft_opts.check)
		ft_fill_buf(ft.tx_buf, size, rma_seed(size, i));
	FT_POST_RETRY(ret, fi_write(ft.ep, ft.tx_buf, size, ft.desc, ft.peer,
				    peer_addr, peer_key, &ft.tx_ctx));
	if (ret) {
		FT_PRINTERR("fi_write", ret);
		return (int)ret;
	}
	return rma_wait_tx("write");
}

static int iter_read(size_t size, int i)
{
	ssize_t ret;

	if (ft_opts.check)
		memset(ft.tx_buf, 0, size);
	FT_POST_RETRY(ret, fi_read(ft.ep, ft.tx_buf, size, ft.desc, ft.peer,
				   peer_addr, peer_key, &ft.tx_ctx));
	if (ret) {
		FT_PRINTERR("fi_read", ret);
		return (int)ret;
	}
	ret = rma_wait_tx("read");
	if (ret || !ft_opts.check)
		return (int)ret;
	return ft_check_buf(ft.tx_buf, size, rma_seed(size, -1));
}

static int iter_writedata(size_t size, int i)
{
	ssize_t ret;

	if (ft_opts.check)
		ft_fill_buf(ft.tx_buf, size, rma_seed(size, i));
	FT_POST_RETRY(ret, fi_writedata(ft.ep, ft.tx_buf, size, ft.desc,
					RMA_DATA_BASE + i, ft.peer, peer_addr,
					peer_key, &ft.tx_ctx));
	if (ret) {
		if (i == 0 && (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP)) {
			writedata_ok = false;
			return 1;
		}
		FT_PRINTERR("fi_writedata", ret);
		return (int)ret;
	}
	return rma_wait_tx("writedata");
}

/* no completion: the target polls until the last pattern shows up */
static int iter_inject(size_t size, int i)
{
	ssize_t ret;

	FT_POST_RETRY(ret, fi_inject_write(ft.ep, ft.tx_buf, size, ft.peer,
					   peer_addr, peer_key));
	if (ret)
		FT_PRINTERR("fi_inject_write", ret);
	return (int)ret;
}

static int test_write(size_t size)
{
	int n, ret;

	ret = ctl_call(CTL_PREP, PREP_ZERO, size, 0, 0, 0);
	if (ret)
		return ret;
	n = rma_loop("write", size, iter_write, true);
	if (n < 0)
		return n;
	return ctl_call(CTL_CHECK, ft_opts.check ? CHK_PATTERN : CHK_NONE, size,
			rma_seed(size, n - 1), 0, 0);
}

static int test_read(size_t size)
{
	int n, ret;

	ret = ctl_call(CTL_PREP, PREP_PATTERN, size, rma_seed(size, -1), 0, 0);
	if (ret)
		return ret;
	n = rma_loop("read", size, iter_read, true);
	if (n < 0)
		return n;
	return ctl_call(CTL_CHECK, CHK_NONE, size, 0, 0, 0);
}

static int test_writedata(size_t size)
{
	int n, ret;

	if (!writedata_ok)
		return 0;
	ret = ctl_call(CTL_PREP, PREP_ZERO, size, 0, 0, 0);
	if (ret)
		return ret;
	n = rma_loop("writedata", size, iter_writedata, true);
	if (n < 0)
		return n;
	if (!n) {
		printf("NOTSUPP writedata: fi_writedata not supported\n");
		return ctl_call(CTL_CHECK, CHK_NONE, size, 0, 0, 0);
	}
	return ctl_call(CTL_CHECK, ft_opts.check ? CHK_PATTERN : CHK_NONE, size,
			rma_seed(size, n - 1), n, RMA_DATA_BASE);
}

static int test_inject(size_t size)
{
	int n, ret;

	if (size > ft.info->tx_attr->inject_size)
		return 0;
	ret = ctl_call(CTL_PREP, PREP_ZERO, size, 0, 0, 0);
	if (ret)
		return ret;
	ft_fill_buf(ft.tx_buf, size, rma_seed(size, 0));
	n = rma_loop("inject_write", size, iter_inject, true);
	if (n < 0)
		return n;
	return ctl_call(CTL_CHECK, CHK_PATTERN, size, rma_seed(size, 0), 0, 0);
}

/* the error code of the wrong-key write's completion goes to *err_out */
static int neg_wait(int *err_out)
{
	struct fi_cq_err_entry err = {0};
	struct fi_cq_data_entry e;
	uint64_t start = ft_now_us();
	ssize_t n;

	for (;;) {
		n = fi_cq_read(ft.txcq, &e, 1);
		if (n > 0) {
			FT_ERR("write with a wrong key completed successfully");
			return -FI_EIO;
		}
		if (n == -FI_EAVAIL)
			break;
		if (n != -FI_EAGAIN) {
			FT_PRINTERR("fi_cq_read", n);
			return (int)n;
		}
		if (ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("no completion for a write with a wrong key");
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
	n = fi_cq_readerr(ft.txcq, &err, 0);
	if (n < 0) {
		FT_PRINTERR("fi_cq_readerr", n);
		return (int)n;
	}
	ft.tx_done++;
	*err_out = err.err;
	return 0;
}

static int test_bad_key(void)
{
	size_t size = RMA_NEG_SIZE;
	uint64_t seed = rma_seed(size, 77);
	struct iovec iov = {.iov_base = ft.tx_buf, .iov_len = size};
	struct fi_rma_iov rma = {
		.addr = peer_addr, .len = size, .key = ~peer_key};
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .desc = &ft.desc,
				 .iov_count = 1,
				 .addr = ft.peer,
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = &ft.tx_ctx};
	int ret, cret, err = 0;
	ssize_t pret;

	ret = ctl_call(CTL_PREP, PREP_PATTERN_NEG, size, seed, 0, 0);
	if (ret)
		return ret;
	ft_fill_buf(ft.tx_buf, size, seed + 1);
	/* only a delivery-complete write waits for the target's verdict */
	FT_POST_RETRY(pret, fi_writemsg(ft.ep, &msg,
					FI_COMPLETION | FI_DELIVERY_COMPLETE));
	if (pret) {
		FT_ERR("fi_writemsg with a wrong key: post failed with %s, "
		       "expected an FI_EACCES completion",
		       fi_strerror((int)-pret));
		return -FI_EIO;
	}
	ft.tx_seq++;
	ret = neg_wait(&err);
	/* the target's buffer is checked whatever the initiator saw */
	cret = ctl_call(CTL_CHECK, CHK_SUM, size, 0, 0, 0);
	if (!ret && err != FI_EACCES) {
		FT_ERR("wrong-key write failed with %d (%s), expected "
		       "FI_EACCES%s",
		       err, fi_strerror(err),
		       any_key_err ? ": accepted (-E)" : "");
		if (!any_key_err)
			ret = -FI_EIO;
	}
	ret = ret ?: cret;
	printf("%s bad_key_write (FI_EACCES at the initiator, "
	       "target untouched)\n",
	       ret ? "FAIL" : "PASS");
	return ret;
}

static int run_client(void)
{
	size_t max_msg = ft.info->ep_attr->max_msg_size, size;
	int s, ret;

	if (!ft.info->domain_attr->cq_data_size) {
		printf("NOTSUPP writedata: cq_data_size is 0\n");
		writedata_ok = false;
	}
	printf("%-10s%-8s%-10s%-10s%-12s%-12s%-12s  %s\n", "bytes", "iters",
	       "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec", "op");
	for (s = 0; s < ft_opts.nsizes; s++) {
		size = ft_opts.sizes[s];
		if (max_msg && size > max_msg) {
			printf("size %zu above max_msg_size %zu: skipped\n",
			       size, max_msg);
			continue;
		}
		ret = test_write(size);
		if (!ret)
			ret = test_read(size);
		if (!ret)
			ret = test_writedata(size);
		if (!ret)
			ret = test_inject(size);
		if (ret) {
			FT_ERR("size %zu failed: %s", size, fi_strerror(-ret));
			return ret;
		}
	}
	/* last: some providers drop the connection after a protection error */
	ret = test_bad_key();
	if (ret)
		return ret;
	return ctl_call(CTL_DONE, 0, 0, 0, 0, 0);
}

static int rma_opt(int op, const char *arg)
{
	if (op != 'E')
		return 1;
	any_key_err = true;
	return 0;
}

int main(int argc, char **argv)
{
	int ret;

	ft_init_opts(argv[0]);
	rma_default_sizes();
	if (ft_parse_args(argc, argv, "E", rma_opt)) {
		ft_usage(
			"RMA write/read/writedata/inject over reliable "
			"datagram endpoints (default sizes 8..4m)",
			"  -E            the wrong-key write may fail with any "
			"error\n"
			"                (default: FI_EACCES only)\n");
		return 2;
	}
	if (ft_opts.ep_type != FI_EP_RDM) {
		FT_ERR("rdm_rma runs over FI_EP_RDM only");
		return 2;
	}
	ret = rma_init();
	if (!ret)
		ret = ft_is_server() ? run_server() : run_client();
	ft_free_res();
	free(ref_buf);
	return ft_exit_code(ret);
}
