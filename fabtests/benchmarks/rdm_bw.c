/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rdm_bw: windowed bandwidth over FI_EP_RDM between a client and a server,
 * the way bandwidth benchmarks and MPI's non-blocking sends load a
 * provider: a window of operations (-w, 64) is in flight at once, the
 * initiator waits for all of them, then starts the next window.
 *
 * Modes (-o, all three by default):
 *   tagged  client fi_tsend x window; the server has the window's
 *           fi_trecv posted beforehand and, once they all completed,
 *           posts the next window's receives and sends a small ack
 *           (osu_bw's scheme, with the receives always pre-posted).
 *   write   client fi_write x window, each window waits for the local
 *           completions; the server only drives progress.
 *   read    client fi_read x window, likewise.
 * All operations of a window use the same source and destination buffer,
 * as osu_bw does, so the numbers measure the provider, not the caches'
 * capacity for window x size bytes.
 *
 * One-sided completion: a write's local completion does not promise by
 * itself that the data is visible at the target (FI_TRANSMIT_COMPLETE).
 * So a timed run ends only after a final control message round trip: the
 * client sends FIN after its last completion and stops the clock at the
 * server's reply; the server has seen FIN after every write's command, as
 * both shm providers complete RMA only after the target copy.  That costs
 * one round trip per run (>= 10 ms), and no per-window synchronisation
 * that the tagged mode does not also pay.
 *
 * Each size is timed for about -D milliseconds: short calibration runs
 * (which are the warm-up) pick the number of windows.  After the timed run
 * a validation round moves min(window, 4 MiB / size) operations at distinct
 * offsets with distinct patterns (and distinct tags) and checks every byte
 * at the receiver; a wrong byte fails the program.
 *
 * Control messages (BEGIN / READY / ACK / FIN) travel over the fabric
 * itself as fi_tinject with their own tag, so the data path under test
 * carries them and no out-of-band socket latency enters the timing.
 *
 * Output, from the client: one row per mode and size,
 *   mode  bytes  window  xfers  seconds  MB/s  Mxfers/s  check
 * (MB = 10^6 bytes), lines starting with '#' are comments.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_rma.h>

#include "shared.h"

#define BW_DEFAULT_WINDOW 64
#define BW_MAX_WINDOW	  1024
#define BW_DEFAULT_MS	  200
#define BW_CHECK_BYTES	  (4UL << 20) /* validation spread, and min buffer */
#define BW_CQ_BATCH	  32
#define BW_RMA_KEY	  0xB00DULL
#define BW_CTL_AREA	  4096 /* each control buffer, page aligned */

#define BW_TAG_DATA  0x1ULL
#define BW_TAG_CTL   0x2ULL
#define BW_TAG_CHECK 0x10000ULL /* + slot */

enum bw_mode { BW_TAGGED, BW_WRITE, BW_READ, BW_NMODES };
static const char *const bw_mode_names[] = {"tagged", "write", "read"};

enum bw_cmd {
	CMD_BEGIN = 1, /* a timed/calibration run: size, windows */
	CMD_CHECK,     /* a validation round: size, slots, seed */
	CMD_READY,     /* server: set up for what was asked */
	CMD_ACK,       /* server: a tagged window arrived */
	CMD_FIN,       /* client: run over; server replies with a status */
	CMD_DONE,      /* client: no more runs */
};

/* both ends run this binary: a fixed-width struct is the wire format */
struct bw_ctl {
	uint32_t cmd;
	uint32_t mode;
	uint64_t size;
	uint64_t count; /* windows (BEGIN) or slots (CHECK) */
	uint64_t seed;
	int64_t status; /* FIN reply: 0 or a negative fi_errno */
};

static struct {
	int window;
	int duration_ms;
	bool modes[BW_NMODES];
	size_t cap; /* bytes of each of the tx and rx areas */
	char *ctl_tx, *ctl_rx;
	uint64_t peer_key, peer_addr;
	char *ref;		 /* expected bytes of a written slot */
	struct fi_context2 *ctx; /* one per operation of a window */
	struct fi_context2 ctl_ctx;
	uint64_t tx_done, rx_done; /* data completions */
	size_t last_len[BW_MAX_WINDOW];
	struct bw_ctl mailbox;
	bool mail;
	bool failed; /* a validation failed: keep going, exit non-zero */
} bw;

static int bw_poll(void);

/*
 * Posts with expr, reading the CQs while the provider answers -FI_EAGAIN:
 * that drives progress and frees what the provider holds.
 */
#define BW_RETRY(ret, expr)                                                    \
	do {                                                                   \
		uint64_t _start = ft_now_us();                                 \
		int _pret;                                                     \
		while (((ret) = (expr)) == -FI_EAGAIN) {                       \
			_pret = bw_poll();                                     \
			if (_pret) {                                           \
				(ret) = _pret;                                 \
				break;                                         \
			}                                                      \
			if (ft_timed_out(_start, ft_opts.timeout)) {           \
				FT_ERR("provider stayed busy (-FI_EAGAIN)");   \
				(ret) = -FI_ETIMEDOUT;                         \
				break;                                         \
			}                                                      \
		}                                                              \
	} while (0)

/* ---- options --------------------------------------------------------- */

static void bw_default_sizes(void)
{
	size_t s;

	ft_opts.nsizes = 0;
	for (s = 8; s <= (4UL << 20); s <<= 1)
		ft_opts.sizes[ft_opts.nsizes++] = s;
}

static int bw_parse_modes(const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int m, ret = 0;

	if (!copy)
		return -FI_ENOMEM;
	memset(bw.modes, 0, sizeof(bw.modes));
	for (tok = strtok_r(copy, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			for (m = 0; m < BW_NMODES; m++)
				bw.modes[m] = true;
			continue;
		}
		for (m = 0; m < BW_NMODES; m++)
			if (!strcmp(tok, bw_mode_names[m]))
				break;
		if (m == BW_NMODES)
			ret = -FI_EINVAL;
		else
			bw.modes[m] = true;
	}
	free(copy);
	return ret;
}

static int bw_opt(int op, const char *arg)
{
	switch (op) {
	case 'o':
		return bw_parse_modes(arg);
	case 'w':
		bw.window = atoi(arg);
		return bw.window > 0 && bw.window <= BW_MAX_WINDOW ? 0
								   : -FI_EINVAL;
	case 'D':
		bw.duration_ms = atoi(arg);
		return bw.duration_ms > 0 ? 0 : -FI_EINVAL;
	default:
		return 1;
	}
}

/* ---- setup ----------------------------------------------------------- */

/* [tx area][rx area][ctl tx][ctl rx], one registration for all of it */
static int bw_alloc_mr(void)
{
	uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			  FI_REMOTE_READ | FI_REMOTE_WRITE;
	int ret;

	bw.cap = ft_max_size();
	if (bw.cap < BW_CHECK_BYTES)
		bw.cap = BW_CHECK_BYTES;
	ft.buf_size = 2 * bw.cap + 2 * BW_CTL_AREA;
	if (posix_memalign((void **)&ft.buf, 4096, ft.buf_size))
		return -FI_ENOMEM;
	/* fault every page in now, not inside the first timed run */
	memset(ft.buf, 0, ft.buf_size);
	ft.tx_buf = ft.buf;
	ft.rx_buf = ft.buf + bw.cap;
	bw.ctl_tx = ft.rx_buf + bw.cap;
	bw.ctl_rx = bw.ctl_tx + BW_CTL_AREA;
	bw.ctx = calloc((size_t)bw.window, sizeof(*bw.ctx));
	bw.ref = malloc(bw.cap);
	if (!bw.ctx || !bw.ref)
		return -FI_ENOMEM;
	ret = fi_mr_reg(ft.domain, ft.buf, ft.buf_size, access, 0, BW_RMA_KEY,
			0, &ft.mr, NULL);
	if (ret) {
		FT_PRINTERR("fi_mr_reg", ret);
		return ret;
	}
	ft.desc = fi_mr_desc(ft.mr);
	return 0;
}

/* endpoint names, MR key and the server's rx area as RMA addresses it */
static int bw_exchange(void)
{
	struct ft_rma_target t;
	int ret;

	ret = ft_exchange_rma(ft.rx_buf, bw.cap, bw.cap, &t);
	bw.peer_key = t.key;
	bw.peer_addr = t.addr;
	return ret;
}

static int bw_post_ctl_recv(void)
{
	ssize_t ret;

	BW_RETRY(ret, fi_trecv(ft.ep, bw.ctl_rx, sizeof(struct bw_ctl), ft.desc,
			       FI_ADDR_UNSPEC, BW_TAG_CTL, 0, &bw.ctl_ctx));
	if (ret)
		FT_PRINTERR("fi_trecv(ctl)", ret);
	return (int)ret;
}

static int bw_init(void)
{
	uint64_t caps = FI_TAGGED | FI_MSG | FI_RMA;
	uint64_t flags = ft_opts.src_addr ? FI_SOURCE : 0;
	int ret;

	ret = ft_alloc_hints(caps);
	if (ret)
		return ret;
	ret = ft_getinfo(ft.hints, ft_opts.src_addr, NULL, flags, &ft.info);
	if (ret)
		return ret;
	if (ft.info->tx_attr->inject_size < sizeof(struct bw_ctl)) {
		FT_ERR("inject_size %zu is below a control message",
		       ft.info->tx_attr->inject_size);
		return -FI_EOPNOTSUPP;
	}
	ret = ft_open_fabric_domain();
	if (!ret)
		ret = ft_open_ep_res_fmt(FI_CQ_FORMAT_TAGGED);
	if (!ret)
		ret = bw_alloc_mr();
	if (ret)
		return ret;
	ret = ft_is_server() ? ft_oob_listen_accept(ft_opts.port)
			     : ft_oob_connect(ft_opts.dst_addr, ft_opts.port);
	if (!ret)
		ret = bw_exchange();
	if (!ret)
		ret = bw_post_ctl_recv();
	return ret ? ret : ft_oob_sync();
}

/* ---- completions ----------------------------------------------------- */

static bool bw_is_data_ctx(void *ctx)
{
	return (char *)ctx >= (char *)bw.ctx &&
	       (char *)ctx < (char *)(bw.ctx + bw.window);
}

/* a control message arrived: into the mailbox, and re-arm the receive */
static int bw_take_ctl(void)
{
	if (bw.mail) {
		FT_ERR("control message while another is unread");
		return -FI_EOTHER;
	}
	memcpy(&bw.mailbox, bw.ctl_rx, sizeof(bw.mailbox));
	bw.mail = true;
	return bw_post_ctl_recv();
}

/* Reads both CQs once (which drives progress) and counts completions. */
static int bw_poll(void)
{
	struct fi_cq_tagged_entry e[BW_CQ_BATCH];
	ssize_t n, i;
	int ret;

	n = fi_cq_read(ft.txcq, e, BW_CQ_BATCH);
	if (n > 0) {
		/* only data operations ask for completions */
		bw.tx_done += (uint64_t)n;
	} else if (n == -FI_EAVAIL) {
		return ft_cq_error(ft.txcq, "tx");
	} else if (n != -FI_EAGAIN) {
		FT_PRINTERR("fi_cq_read(tx)", n);
		return (int)n;
	}
	n = fi_cq_read(ft.rxcq, e, BW_CQ_BATCH);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
		return ft_cq_error(ft.rxcq, "rx");
	if (n < 0) {
		FT_PRINTERR("fi_cq_read(rx)", n);
		return (int)n;
	}
	for (i = 0; i < n; i++) {
		if (e[i].op_context == &bw.ctl_ctx) {
			ret = bw_take_ctl();
			if (ret)
				return ret;
		} else if (bw_is_data_ctx(e[i].op_context)) {
			bw.last_len[(struct fi_context2 *)e[i].op_context -
				    bw.ctx] = e[i].len;
			bw.rx_done++;
		} else {
			FT_ERR("completion with unknown context %p",
			       e[i].op_context);
			return -FI_EOTHER;
		}
	}
	return 0;
}

/* polls until *counter reaches target, bounded by the timeout */
static int bw_wait(const uint64_t *counter, uint64_t target, const char *what)
{
	uint64_t start = ft_now_us();
	unsigned int spins = 0;
	int ret;

	while (*counter < target) {
		ret = bw_poll();
		if (ret)
			return ret;
		if (!(++spins & 1023) && ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("timeout waiting for %s (%" PRIu64 "/%" PRIu64
			       ")",
			       what, *counter, target);
			return -FI_ETIMEDOUT;
		}
	}
	return 0;
}

static int bw_recv_ctl(struct bw_ctl *c, uint32_t want)
{
	uint64_t start = ft_now_us();
	unsigned int spins = 0;
	int ret;

	while (!bw.mail) {
		ret = bw_poll();
		if (ret)
			return ret;
		if (!(++spins & 1023) && ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("timeout waiting for control message %u", want);
			return -FI_ETIMEDOUT;
		}
	}
	*c = bw.mailbox;
	bw.mail = false;
	if (want && c->cmd != want) {
		FT_ERR("control message %u, expected %u", c->cmd, want);
		return -FI_EOTHER;
	}
	return 0;
}

static int bw_send_ctl(const struct bw_ctl *c)
{
	ssize_t ret;

	memcpy(bw.ctl_tx, c, sizeof(*c));
	BW_RETRY(ret,
		 fi_tinject(ft.ep, bw.ctl_tx, sizeof(*c), ft.peer, BW_TAG_CTL));
	if (ret)
		FT_PRINTERR("fi_tinject(ctl)", ret);
	return (int)ret;
}

/* ---- data operations ------------------------------------------------- */

/* one operation of slot @i: the source/sink sits at @off of tx/rx */
static ssize_t bw_issue(enum bw_mode mode, size_t size, int i, size_t off,
			uint64_t tag)
{
	void *ctx = &bw.ctx[i];

	switch (mode) {
	case BW_TAGGED:
		return fi_tsend(ft.ep, ft.tx_buf + off, size, ft.desc, ft.peer,
				tag, ctx);
	case BW_WRITE:
		return fi_write(ft.ep, ft.tx_buf + off, size, ft.desc, ft.peer,
				bw.peer_addr + off, bw.peer_key, ctx);
	default:
		return fi_read(ft.ep, ft.rx_buf + off, size, ft.desc, ft.peer,
			       bw.peer_addr + off, bw.peer_key, ctx);
	}
}

static int bw_post(enum bw_mode mode, size_t size, int i, size_t off,
		   uint64_t tag)
{
	ssize_t ret;

	BW_RETRY(ret, bw_issue(mode, size, i, off, tag));
	if (ret)
		FT_PRINTERR(bw_mode_names[mode], ret);
	return (int)ret;
}

static int bw_post_recv(size_t size, int i, size_t off, uint64_t tag)
{
	ssize_t ret;

	BW_RETRY(ret, fi_trecv(ft.ep, ft.rx_buf + off, size, ft.desc,
			       FI_ADDR_UNSPEC, tag, 0, &bw.ctx[i]));
	if (ret)
		FT_PRINTERR("fi_trecv", ret);
	return (int)ret;
}

static int bw_post_window_recvs(size_t size)
{
	int i, ret;

	for (i = 0; i < bw.window; i++) {
		ret = bw_post_recv(size, i, 0, BW_TAG_DATA);
		if (ret)
			return ret;
	}
	return 0;
}

static uint64_t bw_seed(size_t size, int slot, uint64_t round)
{
	return (uint64_t)size * 0x9E3779B1ULL + round * 1000003ULL +
	       (uint64_t)slot;
}

static size_t bw_check_slots(size_t size)
{
	size_t n = BW_CHECK_BYTES / size;

	if (n < 1)
		n = 1;
	return n > (size_t)bw.window ? (size_t)bw.window : n;
}

/* ---- server ---------------------------------------------------------- */

static int srv_tagged_run(const struct bw_ctl *c)
{
	struct bw_ctl ack = {.cmd = CMD_ACK};
	uint64_t w;
	int ret;

	for (w = 0; w < c->count; w++) {
		ret = bw_wait(&bw.rx_done, (w + 1) * (uint64_t)bw.window,
			      "tagged receives");
		if (ret)
			return ret;
		if (w + 1 < c->count) {
			ret = bw_post_window_recvs(c->size);
			if (ret)
				return ret;
		}
		ret = bw_send_ctl(&ack);
		if (ret)
			return ret;
	}
	return 0;
}

static int srv_begin(const struct bw_ctl *c)
{
	struct bw_ctl r = {.cmd = CMD_READY};
	int ret;

	bw.rx_done = 0;
	if (c->mode == BW_TAGGED) {
		ret = bw_post_window_recvs(c->size);
		if (ret)
			return ret;
	}
	ret = bw_send_ctl(&r);
	if (ret)
		return ret;
	if (c->mode == BW_TAGGED)
		return srv_tagged_run(c);
	return 0;
}

/*
 * Writes may land after the initiator's completion: poll for them, for at
 * most half the timeout, so the client waiting for the verdict hears it.
 */
static int srv_wait_pattern(const struct bw_ctl *c)
{
	uint64_t start = ft_now_us(), seed;
	uint64_t limit = (uint64_t)ft_opts.timeout * 500000;
	char *slot;
	size_t i;
	int ret;

	for (i = 0; i < c->count; i++) {
		slot = ft.rx_buf + i * c->size;
		seed = bw_seed(c->size, (int)i, c->seed);
		ft_fill_buf(bw.ref, c->size, seed);
		while (memcmp(slot, bw.ref, c->size) &&
		       ft_now_us() - start < limit) {
			ret = bw_poll();
			if (ret)
				return ret;
		}
		ret = ft_check_buf(slot, c->size, seed);
		if (ret) {
			FT_ERR("slot %zu of %" PRIu64 ": written data wrong", i,
			       c->count);
			return ret;
		}
	}
	return 0;
}

static int srv_check_recvs(const struct bw_ctl *c)
{
	size_t i;
	int ret;

	ret = bw_wait(&bw.rx_done, c->count, "validation receives");
	if (ret)
		return ret;
	for (i = 0; i < c->count; i++) {
		if (bw.last_len[i] != c->size) {
			FT_ERR("slot %zu received %zu bytes, expected %" PRIu64,
			       i, bw.last_len[i], c->size);
			return -FI_EIO;
		}
		ret = ft_check_buf(ft.rx_buf + i * c->size, c->size,
				   bw_seed(c->size, (int)i, c->seed));
		if (ret) {
			FT_ERR("slot %zu of %" PRIu64 ": received data wrong",
			       i, c->count);
			return ret;
		}
	}
	return 0;
}

/* CHECK: set up, READY, wait for FIN, verify, reply with the verdict */
static int srv_check(const struct bw_ctl *c)
{
	struct bw_ctl r = {.cmd = CMD_READY}, fin;
	size_t i;
	int ret;

	if (c->count > (uint64_t)bw.window || c->size * c->count > bw.cap)
		return -FI_EINVAL;
	bw.rx_done = 0;
	memset(ft.rx_buf, 0, c->size * c->count);
	for (i = 0; i < c->count; i++) {
		bw.last_len[i] = 0;
		if (c->mode == BW_READ)
			ft_fill_buf(ft.rx_buf + i * c->size, c->size,
				    bw_seed(c->size, (int)i, c->seed));
		if (c->mode != BW_TAGGED)
			continue;
		ret = bw_post_recv(c->size, (int)i, i * c->size,
				   BW_TAG_CHECK + i);
		if (ret)
			return ret;
	}
	ret = bw_send_ctl(&r);
	if (!ret)
		ret = bw_recv_ctl(&fin, CMD_FIN);
	if (ret)
		return ret;
	if (c->mode == BW_TAGGED)
		r.status = srv_check_recvs(c);
	else if (c->mode == BW_WRITE)
		r.status = srv_wait_pattern(c);
	r.cmd = CMD_FIN;
	return bw_send_ctl(&r);
}

static int run_server(void)
{
	struct bw_ctl c, r;
	int ret;

	for (;;) {
		/* idle between runs may last the client's whole report */
		ret = bw_recv_ctl(&c, 0);
		if (ret)
			return ret;
		if (c.size > bw.cap || c.mode >= BW_NMODES)
			return -FI_EINVAL;
		switch (c.cmd) {
		case CMD_BEGIN:
			ret = srv_begin(&c);
			if (ret)
				return ret;
			ret = bw_recv_ctl(&c, CMD_FIN);
			r = (struct bw_ctl){.cmd = CMD_FIN};
			if (!ret)
				ret = bw_send_ctl(&r);
			break;
		case CMD_CHECK:
			ret = srv_check(&c);
			break;
		case CMD_DONE:
			/* the client's tinject may not have left it yet */
			return ft_oob_sync();
		default:
			FT_ERR("unexpected control message %u", c.cmd);
			return -FI_EOTHER;
		}
		if (ret)
			return ret;
	}
}

/* ---- client ---------------------------------------------------------- */

static int cli_call(struct bw_ctl *c, uint32_t reply)
{
	int ret = bw_send_ctl(c);

	return ret ? ret : bw_recv_ctl(c, reply);
}

static int cli_window(enum bw_mode mode, size_t size)
{
	struct bw_ctl ack;
	uint64_t target = bw.tx_done + (uint64_t)bw.window;
	int i, ret;

	for (i = 0; i < bw.window; i++) {
		ret = bw_post(mode, size, i, 0, BW_TAG_DATA);
		if (ret)
			return ret;
	}
	ret = bw_wait(&bw.tx_done, target, bw_mode_names[mode]);
	if (ret || mode != BW_TAGGED)
		return ret;
	return bw_recv_ctl(&ack, CMD_ACK);
}

/* one run of @windows windows; *usec from the first post to FIN's reply */
static int cli_run(enum bw_mode mode, size_t size, uint64_t windows,
		   uint64_t *usec)
{
	struct bw_ctl c = {
		.cmd = CMD_BEGIN, .mode = mode, .size = size, .count = windows};
	uint64_t w, start;
	int ret;

	ret = cli_call(&c, CMD_READY);
	if (ret)
		return ret;
	start = ft_now_us();
	for (w = 0; w < windows; w++) {
		ret = cli_window(mode, size);
		if (ret)
			return ret;
	}
	c = (struct bw_ctl){.cmd = CMD_FIN};
	ret = cli_call(&c, CMD_FIN);
	*usec = ft_now_us() - start;
	return ret;
}

static int cli_check(enum bw_mode mode, size_t size, uint64_t round)
{
	size_t n = bw_check_slots(size), i;
	struct bw_ctl c = {.cmd = CMD_CHECK,
			   .mode = mode,
			   .size = size,
			   .count = n,
			   .seed = round};
	uint64_t target;
	int ret;

	ret = cli_call(&c, CMD_READY);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (mode == BW_READ)
			memset(ft.rx_buf + i * size, 0, size);
		else
			ft_fill_buf(ft.tx_buf + i * size, size,
				    bw_seed(size, (int)i, round));
	}
	target = bw.tx_done + n;
	for (i = 0; i < n; i++) {
		ret = bw_post(mode, size, (int)i, i * size, BW_TAG_CHECK + i);
		if (ret)
			return ret;
	}
	ret = bw_wait(&bw.tx_done, target, "validation");
	if (ret)
		return ret;
	for (i = 0; mode == BW_READ && i < n; i++) {
		ret = ft_check_buf(ft.rx_buf + i * size, size,
				   bw_seed(size, (int)i, round));
		if (ret) {
			FT_ERR("slot %zu of %zu: read data wrong", i, n);
			/* the server still waits for FIN */
			c = (struct bw_ctl){.cmd = CMD_FIN};
			cli_call(&c, CMD_FIN);
			return ret;
		}
	}
	c = (struct bw_ctl){.cmd = CMD_FIN};
	ret = cli_call(&c, CMD_FIN);
	if (ret)
		return ret;
	if (c.status)
		FT_ERR("server found the %s data of %zu bytes wrong: %s",
		       bw_mode_names[mode], size, fi_strerror((int)-c.status));
	return (int)c.status;
}

/* calibration runs (the warm-up) size the timed run to about -D ms */
static int cli_size(enum bw_mode mode, size_t size, uint64_t round)
{
	uint64_t want = (uint64_t)bw.duration_ms * 1000, windows = 1, usec;
	uint64_t max = (uint64_t)ft_opts.iterations;
	double secs, bytes;
	int ret;

	/* the first run of a size is not counted: first touches, setup */
	ret = cli_run(mode, size, windows, &usec);
	for (;;) {
		if (ret)
			return ret;
		ret = cli_run(mode, size, windows, &usec);
		if (ret)
			return ret;
		if (usec * 10 >= want || windows >= max)
			break;
		windows *= 4;
	}
	windows = usec ? want * windows / usec : max;
	if (windows < 1)
		windows = 1;
	if (windows > max)
		windows = max;
	ret = cli_run(mode, size, windows, &usec);
	if (ret)
		return ret;
	ret = cli_check(mode, size, round);
	if (ret && ret != -FI_EIO)
		return ret;
	if (ret)
		bw.failed = true;
	secs = usec ? usec / 1e6 : 1e-6;
	bytes = (double)size * windows * bw.window;
	printf("%-7s %9zu %6d %10" PRIu64 " %8.4f %10.2f %9.4f %s\n",
	       bw_mode_names[mode], size, bw.window, windows * bw.window, secs,
	       bytes / secs / 1e6, windows * bw.window / secs / 1e6,
	       ret ? "FAIL" : "ok");
	fflush(stdout);
	return 0;
}

static int run_client(void)
{
	size_t max_msg = ft.info->ep_attr->max_msg_size;
	struct bw_ctl done = {.cmd = CMD_DONE};
	uint64_t round = 0;
	int m, s, ret;

	printf("# rdm_bw prov=%s window=%d duration_ms=%d "
	       "(MB = 10^6 bytes)\n",
	       ft.info->fabric_attr->prov_name, bw.window, bw.duration_ms);
	printf("# %-5s %9s %6s %10s %8s %10s %9s %s\n", "mode", "bytes",
	       "window", "xfers", "seconds", "MB/s", "Mxfers/s", "check");
	for (m = 0; m < BW_NMODES; m++) {
		if (!bw.modes[m])
			continue;
		for (s = 0; s < ft_opts.nsizes; s++) {
			if (max_msg && ft_opts.sizes[s] > max_msg) {
				printf("# %s %zu: above max_msg_size %zu\n",
				       bw_mode_names[m], ft_opts.sizes[s],
				       max_msg);
				continue;
			}
			ret = cli_size((enum bw_mode)m, ft_opts.sizes[s],
				       ++round);
			if (ret) {
				FT_ERR("%s of %zu bytes failed: %s",
				       bw_mode_names[m], ft_opts.sizes[s],
				       fi_strerror(-ret));
				return ret;
			}
		}
	}
	ret = bw_send_ctl(&done);
	if (!ret)
		ret = ft_oob_sync();
	if (!ret && bw.failed)
		ret = -FI_EIO;
	return ret;
}

int main(int argc, char **argv)
{
	int m, ret;

	ft_init_opts(argv[0]);
	ft_opts.iterations = INT_MAX; /* -I: most windows of a timed run */
	bw.window = BW_DEFAULT_WINDOW;
	bw.duration_ms = BW_DEFAULT_MS;
	for (m = 0; m < BW_NMODES; m++)
		bw.modes[m] = true;
	bw_default_sizes();
	if (ft_parse_args(argc, argv, "o:w:D:", bw_opt)) {
		ft_usage(
			"windowed bandwidth over reliable datagram endpoints "
			"(default sizes 8..4m)",
			"  -o MODES      tagged,write,read or all (default "
			"all)\n"
			"  -w N          operations in flight (default 64)\n"
			"  -D MS         time per size and mode (default 200)\n"
			"  -I N          at most N windows per timed run\n"
			"  (-W is unused: calibration runs are the warm-up)\n");
		return 2;
	}
	if (ft_opts.ep_type != FI_EP_RDM) {
		FT_ERR("rdm_bw runs over FI_EP_RDM only");
		return 2;
	}
	ret = bw_init();
	if (!ret)
		ret = ft_is_server() ? run_server() : run_client();
	ft_free_res();
	free(bw.ctx);
	free(bw.ref);
	return ft_exit_code(ret);
}
