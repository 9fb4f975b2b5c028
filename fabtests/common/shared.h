/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fabtests common layer: option parsing, resource setup, out-of-band
 * address exchange, data-path helpers with bounded waits, data patterns,
 * timing/report output and the unit-test runner.  Only public rdma/ headers
 * headers are used so the programs build against any libfabric.
 */
#ifndef FT_SHARED_H
#define FT_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#ifndef FT_FIVERSION
#define FT_FIVERSION FI_VERSION(1, 17)
#endif

#define FT_DEFAULT_PORT	   9228
#define FT_DEFAULT_TIMEOUT 10 /* seconds, for every wait */
#define FT_MAX_SIZES	   32
#define FT_TAG		   0x5eedULL

struct ft_opts {
	const char *prov;
	const char *domain;
	const char *src_addr;
	const char *dst_addr; /* positional argument: set => client role */
	enum fi_ep_type ep_type;
	int iterations;
	int warmup;
	size_t sizes[FT_MAX_SIZES];
	int nsizes;
	bool check;
	bool tagged;
	int verbose;
	uint16_t port; /* OOB port; MSG CM listens on port + 1 */
	int timeout;   /* seconds */
};

extern struct ft_opts ft_opts;
extern const char *ft_prog;

/* fabric resources; only what a program opened is non-NULL */
struct ft_res {
	struct fi_info *hints;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *txcq;
	struct fid_cq *rxcq;
	struct fid_av *av;
	struct fid_cntr *cntr;
	struct fid_mr *mr;
	void *desc;
	char *buf; /* tx half then rx half */
	size_t buf_size;
	char *tx_buf;
	char *rx_buf;
	fi_addr_t peer;
	int oob_sock;
	uint64_t tx_seq, rx_seq, tx_done, rx_done;
	size_t last_rx_len;
	struct fi_context2 tx_ctx, rx_ctx;
};

extern struct ft_res ft;

#define FT_PRINTERR(call, ret)                                                 \
	fprintf(stderr, "%s: %s(): %s:%d, ret=%d (%s)\n", ft_prog, call,       \
		__FILE__, __LINE__, (int)(ret), fi_strerror((int)-(ret)))

#define FT_ERR(fmt, ...)                                                       \
	fprintf(stderr, "%s: error: " fmt "\n", ft_prog, ##__VA_ARGS__)

#define FT_DEBUG(fmt, ...)                                                     \
	do {                                                                   \
		if (ft_opts.verbose)                                           \
			fprintf(stderr, "%s: " fmt "\n", ft_prog,              \
				##__VA_ARGS__);                                \
	} while (0)

#define FT_CLOSE_FID(fd)                                                       \
	do {                                                                   \
		if (fd) {                                                      \
			int _r = fi_close(&(fd)->fid);                         \
			if (_r)                                                \
				FT_PRINTERR("fi_close", _r);                   \
			fd = NULL;                                             \
		}                                                              \
	} while (0)

/* options */
#define FT_STD_OPTS "p:e:d:s:I:S:cm:vB:P:T:W:h"
void ft_init_opts(const char *prog);
int ft_parse_opt(int op, const char *arg);
int ft_parse_args(int argc, char **argv, const char *extra_opts,
		  int (*extra)(int op, const char *arg));
void ft_usage(const char *desc, const char *extra);
int ft_parse_ep_type(const char *s, enum fi_ep_type *type);
const char *ft_ep_type_str(enum fi_ep_type type);
static inline bool ft_is_server(void)
{
	return ft_opts.dst_addr == NULL;
}

/* time */
uint64_t ft_now_us(void);
bool ft_timed_out(uint64_t start_us, int timeout_s);

/* resources */
int ft_alloc_hints(uint64_t caps);
int ft_getinfo(struct fi_info *hints, const char *node, const char *service,
	       uint64_t flags, struct fi_info **info);
int ft_open_fabric_domain(void);
/* CQs of @fmt, the endpoint, and its AV (RDM) or EQ (MSG), enabled. */
int ft_open_ep_res_fmt(enum fi_cq_format fmt);
int ft_open_cq(enum fi_cq_format fmt, enum fi_wait_obj wait, size_t size,
	       struct fid_cq **cq);
int ft_alloc_msgs(size_t max_size);
/* The largest of ft_opts.sizes. */
size_t ft_max_size(void);

/* What ft_exchange_rma() learned of the peer's RMA target area. */
struct ft_rma_target {
	uint64_t key;
	uint64_t addr; /* as RMA calls must name it */
};

/*
 * RMA set-up over the OOB channel: sends our endpoint name, ft.mr's key and
 * our target area (@area, or @offset into ft.mr without FI_MR_VIRT_ADDR)
 * of @size bytes, receives the peer's, checks that its size matches
 * (both sides must be run with the same sizes), and inserts the peer into
 * the AV as ft.peer.
 */
int ft_exchange_rma(void *area, uint64_t offset, uint64_t size,
		    struct ft_rma_target *peer);
int ft_init_rdm(void);
int ft_init_msg(void);
void ft_free_res(void);

/* out-of-band socket */
int ft_oob_listen_accept(uint16_t port);
int ft_oob_connect(const char *addr, uint16_t port);
int ft_oob_send(const void *buf, size_t len);
int ft_oob_recv(void *buf, size_t len);
int ft_oob_sync(void);
bool ft_oob_peer_gone(void);

/* data path */
int ft_post_tx(size_t size);
int ft_post_rx(size_t size);
/* Reads and reports @cq's error entry; its negated code (or -FI_EIO). */
int ft_cq_error(struct fid_cq *cq, const char *what);
int ft_wait_cq(struct fid_cq *cq, uint64_t *done, uint64_t target,
	       const char *what);
int ft_tx(size_t size);
int ft_rx(size_t size);

/* two-process ping-pong over every size; client prints the report */
int ft_pingpong(const char *test);
/* exit status: 0 ok, FT_EXIT_NOTSUPP when the provider lacks support */
#define FT_EXIT_NOTSUPP 77
int ft_exit_code(int ret);

/* data patterns */
void ft_fill_buf(void *buf, size_t size, uint64_t seed);
int ft_check_buf(const void *buf, size_t size, uint64_t seed);

/* reporting */
void ft_show_header(void);
void ft_show_perf(const char *test, size_t size, int iters, uint64_t start,
		  uint64_t end, int xfers_per_iter);

/* unit tests */
enum ft_result { FT_PASS, FT_FAIL, FT_SKIP, FT_NOTSUPP };

struct ft_unit_test {
	const char *name;
	enum ft_result (*fn)(void);
	const char *desc;
	/* argument checks the design demands beyond Debian 1.17: run with -x */
	bool strict;
};

int ft_run_unit(const char *suite, const struct ft_unit_test *tests, int argc,
		char **argv);
enum ft_result ft_ret_notsupp(int ret);
/* hints from the options, fi_getinfo, fabric + domain into ft */
int ft_unit_open(uint64_t caps);
/* as ft_unit_open plus an enabled connectionless ep with cqs and av */
int ft_unit_open_ep(uint64_t caps);

/* posts expr, retrying -FI_EAGAIN while driving progress, bounded */
#define FT_POST_RETRY(ret, expr)                                               \
	do {                                                                   \
		uint64_t _start = ft_now_us();                                 \
		while (((ret) = (expr)) == -FI_EAGAIN &&                       \
		       !ft_timed_out(_start, ft_opts.timeout)) {               \
			if (ft.txcq)                                           \
				fi_cq_read(ft.txcq, NULL, 0);                  \
			if (ft.rxcq)                                           \
				fi_cq_read(ft.rxcq, NULL, 0);                  \
		}                                                              \
	} while (0)

/* checks inside unit tests: print the failing expression and bail out */
#define UT_CHECK(cond, fmt, ...)                                               \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr,                                        \
				"  %s:%d: check '%s' failed: " fmt "\n",       \
				__FILE__, __LINE__, #cond, ##__VA_ARGS__);     \
			res = FT_FAIL;                                         \
			goto out;                                              \
		}                                                              \
	} while (0)

#define UT_EXPECT_RET(expr, want)                                              \
	do {                                                                   \
		long _got = (long)(expr);                                      \
		if (_got != (long)(want)) {                                    \
			fprintf(stderr,                                        \
				"  %s:%d: %s returned %ld (%s), "              \
				"expected %ld\n",                              \
				__FILE__, __LINE__, #expr, _got,               \
				_got < 0 ? fi_strerror((int)-_got) : "",       \
				(long)(want));                                 \
			res = FT_FAIL;                                         \
			goto out;                                              \
		}                                                              \
	} while (0)

#endif /* FT_SHARED_H */
