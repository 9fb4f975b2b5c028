/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * commit_bw: SHMEM's persistent-heap pattern over FI_EP_RDM, two ways.
 *   a  N puts (fi_writemsg, FI_DELIVERY_COMPLETE) to distinct offsets of a
 *      persistent registration, all in flight, then one fi_commit naming
 *      the N*SIZE bytes they covered; done when the commit completes;
 *   b  the same N puts each with FI_COMMIT_COMPLETE; done when all N
 *      completed.
 * For each SIZE (-S, default 64,1k,4k,64k) and N (-N, default 1,16,256)
 * the client times both, interleaved, -r times (default 7) and prints the
 * medians as microseconds per put and the ratio b/a.  The point of
 * fi_commit is that a is much cheaper than b as N grows.
 *
 * The server's region is a MAP_SHARED mapping of a file in -F DIR
 * (default $FT_PMEM_DIR, else /var/tmp: a disk filesystem, where
 * durability costs what it costs; /tmp is often tmpfs), registered with
 * FI_RMA_PMEM; the filesystem type is printed.  After each size the server
 * checks the first and the last chunk written.
 *
 * Exits 77 (skip) when no provider offers FI_RMA_PMEM.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "shared.h"

/*
 * Built against a libfabric without the persistent-memory extension
 * (fi_extensions(7)), e.g. Debian's 1.17 by the standalone Makefile: only
 * a skip.
 */
#ifndef FI_COMMIT_MANUAL
int main(void)
{
	printf("SKIP: commit_bw: this libfabric does not declare fi_commit\n");
	return FT_EXIT_NOTSUPP;
}
#else

#define CB_MAX_N    4096
#define CB_MAX_REPS 101
#define CB_RGN_KEY  0xBE11ULL
#define CB_SRC_KEY  0xBE22ULL

enum cb_cmd { CB_SIZE = 1, CB_CHECK, CB_DONE };

struct cb_ctl {
	uint32_t cmd;
	uint32_t pad;
	uint64_t size, n;
	int64_t status;
};

struct cb_wire {
	uint64_t addr, key, size;
	uint32_t name_len;
	uint32_t pad;
	char name[256];
};

static size_t nvals[16] = {1, 16, 256};
static int nn = 3;
static int reps = 7;
static const char *dir;
static uint8_t *rgn;
static size_t rgn_size;
static struct fid_mr *rgn_mr;
static uint64_t peer_addr, peer_key;
static struct fi_context2 put_ctx, commit_ctx;

static const char *fs_name(long type)
{
	switch ((unsigned long)type) {
	case 0xEF53:
		return "ext2/3/4";
	case 0x58465342:
		return "xfs";
	case 0x9123683E:
		return "btrfs";
	case 0x01021994:
		return "tmpfs";
	case 0x794C7630:
		return "overlayfs";
	case 0x2FC12FC1:
		return "zfs";
	case 0x6969:
		return "nfs";
	default:
		return "other";
	}
}

static void *map_region(size_t size)
{
	struct statfs sfs;
	char path[4096];
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/commit_bw.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		FT_ERR("mkstemp(%s) failed", path);
		return NULL;
	}
	unlink(path);
	if (!fstatfs(fd, &sfs))
		printf("# region: %zu bytes, file in %s on %s (f_type 0x%lx)\n",
		       size, dir, fs_name((long)sfs.f_type),
		       (unsigned long)sfs.f_type);
	if (ftruncate(fd, (off_t)size)) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	/* touch every page: allocation is not what is measured */
	memset(p, 0, size);
	msync(p, size, MS_SYNC);
	return p;
}

static size_t max_n(void)
{
	size_t m = 1;
	int i;

	for (i = 0; i < nn; i++)
		if (nvals[i] > m)
			m = nvals[i];
	return m;
}

static int cb_setup(void)
{
	struct cb_wire mine = {0}, theirs = {0};
	size_t len = sizeof(mine.name), size = ft_max_size();
	uint64_t access = FI_REMOTE_WRITE | FI_REMOTE_READ;
	int ret;

	rgn_size = size * max_n();
	ft.buf_size = size;
	if (posix_memalign((void **)&ft.buf, 4096, size))
		return -FI_ENOMEM;
	ft.tx_buf = ft.buf;
	ret = fi_mr_reg(ft.domain, ft.buf, size, FI_WRITE, 0, CB_SRC_KEY, 0,
			&ft.mr, NULL);
	if (ret) {
		FT_PRINTERR("fi_mr_reg", ret);
		return ret;
	}
	ft.desc = fi_mr_desc(ft.mr);
	if (ft_is_server()) {
		rgn = map_region(rgn_size);
		if (!rgn)
			return -FI_ENOMEM;
		ret = fi_mr_reg(ft.domain, rgn, rgn_size, access, 0, CB_RGN_KEY,
				FI_RMA_PMEM, &rgn_mr, NULL);
		if (ret) {
			FT_PRINTERR("fi_mr_reg(FI_RMA_PMEM)", ret);
			return ret;
		}
		mine.key = fi_mr_key(rgn_mr);
		if (ft.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
			mine.addr = (uint64_t)(uintptr_t)rgn;
	}
	ret = fi_getname(&ft.ep->fid, mine.name, &len);
	if (ret) {
		FT_PRINTERR("fi_getname", ret);
		return ret;
	}
	mine.name_len = (uint32_t)len;
	mine.size = rgn_size;
	ret = ft_is_server() ? ft_oob_listen_accept(ft_opts.port)
			     : ft_oob_connect(ft_opts.dst_addr, ft_opts.port);
	if (!ret)
		ret = ft_oob_send(&mine, sizeof(mine));
	if (!ret)
		ret = ft_oob_recv(&theirs, sizeof(theirs));
	if (ret)
		return ret;
	if (!theirs.name_len || theirs.name_len > sizeof(theirs.name) ||
	    theirs.size != rgn_size) {
		FT_ERR("peer setup mismatch: same -S and -N on both sides?");
		return -FI_EINVAL;
	}
	peer_addr = theirs.addr;
	peer_key = theirs.key;
	ret = fi_av_insert(ft.av, theirs.name, 1, &ft.peer, 0, NULL);
	if (ret != 1) {
		FT_PRINTERR("fi_av_insert", ret);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	return ft_oob_sync();
}

static int cb_init(void)
{
	uint64_t flags = ft_opts.src_addr ? FI_SOURCE : 0;
	int ret;

	ret = ft_alloc_hints(FI_RMA | FI_PMEM);
	if (ret)
		return ret;
	ret = fi_getinfo(FT_FIVERSION, ft_opts.src_addr, NULL, flags, ft.hints,
			 &ft.info);
	if (ret == -FI_ENODATA) {
		printf("SKIP: no provider%s%s offers FI_RMA|FI_RMA_PMEM; is "
		       "the library built with libpmem?\n",
		       ft_opts.prov ? " named " : "",
		       ft_opts.prov ? ft_opts.prov : "");
		return ret;
	}
	if (ret) {
		FT_PRINTERR("fi_getinfo", ret);
		return ret;
	}
	/* the region is written back-to-back: allow the whole window */
	ret = ft_open_fabric_domain();
	if (!ret)
		ret = ft_open_ep_res_fmt(FI_CQ_FORMAT_CONTEXT);
	return ret ? ret : cb_setup();
}

/* server: drive progress, answer commands */
static int cb_server(void)
{
	struct pollfd pfd = {.fd = ft.oob_sock, .events = POLLIN};
	struct fi_cq_entry e;
	uint64_t start = ft_now_us(), seed;
	struct cb_ctl c;
	int ret;

	for (;;) {
		if (fi_cq_read(ft.txcq, &e, 1) == -FI_EAVAIL)
			return ft_cq_error(ft.txcq, "server tx");
		if (fi_cq_read(ft.rxcq, &e, 1) == -FI_EAVAIL)
			return ft_cq_error(ft.rxcq, "server rx");
		if (poll(&pfd, 1, 0) <= 0) {
			if (ft_timed_out(start, 30 * ft_opts.timeout)) {
				FT_ERR("timeout waiting for the client");
				return -FI_ETIMEDOUT;
			}
			sched_yield();
			continue;
		}
		ret = ft_oob_recv(&c, sizeof(c));
		if (ret)
			return ret;
		start = ft_now_us();
		c.status = 0;
		if (c.cmd == CB_CHECK) {
			seed = c.size;
			if (!c.n || c.size * c.n > rgn_size)
				c.status = -FI_EINVAL;
			else
				c.status =
					ft_check_buf(rgn, c.size, seed)
						?: ft_check_buf(
							   rgn + (c.n -
								  1) * c.size,
							   c.size, seed);
		}
		ret = ft_oob_send(&c, sizeof(c));
		if (ret || c.cmd == CB_DONE)
			return ret;
	}
}

static int cb_call(uint32_t cmd, uint64_t size, uint64_t n)
{
	struct cb_ctl c = {.cmd = cmd, .size = size, .n = n};
	int ret;

	ret = ft_oob_send(&c, sizeof(c));
	if (!ret)
		ret = ft_oob_recv(&c, sizeof(c));
	return ret ? ret : (int)c.status;
}

/* one completion; its context, or an error */
static int cb_reap(void **context, bool *got)
{
	struct fi_cq_entry e;
	ssize_t n;

	*got = false;
	n = fi_cq_read(ft.txcq, &e, 1);
	if (n == 1) {
		*context = e.op_context;
		*got = true;
		return 0;
	}
	if (n == -FI_EAVAIL)
		return ft_cq_error(ft.txcq, "put/commit");
	return n == -FI_EAGAIN ? 0 : (int)n;
}

/* waits until *done reaches @want */
static int cb_drain(uint64_t *done, uint64_t want, bool *commit_done)
{
	uint64_t start = ft_now_us();
	void *context;
	bool got;
	int ret;

	while (*done < want || (commit_done && !*commit_done)) {
		ret = cb_reap(&context, &got);
		if (ret)
			return ret;
		if (got && context == &commit_ctx)
			*commit_done = true;
		else if (got)
			(*done)++;
		else if (ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("timeout: %" PRIu64 " of %" PRIu64 " puts",
			       *done, want);
			return -FI_ETIMEDOUT;
		}
	}
	return 0;
}

/* N puts to distinct offsets, at most as many in flight as the tx queue */
static int cb_puts(size_t size, size_t n, uint64_t flags, uint64_t *done)
{
	struct iovec iov = {.iov_base = ft.buf, .iov_len = size};
	struct fi_rma_iov rma = {.len = size, .key = peer_key};
	struct fi_msg_rma msg = {.msg_iov = &iov,
				 .desc = &ft.desc,
				 .iov_count = 1,
				 .addr = ft.peer,
				 .rma_iov = &rma,
				 .rma_iov_count = 1,
				 .context = &put_ctx};
	uint64_t start = ft_now_us();
	void *context;
	bool got;
	size_t i;
	ssize_t ret;

	for (i = 0; i < n; i++) {
		rma.addr = peer_addr + i * size;
		while ((ret = fi_writemsg(ft.ep, &msg,
					  flags | FI_COMPLETION)) ==
		       -FI_EAGAIN) {
			ret = cb_reap(&context, &got);
			if (ret)
				return (int)ret;
			if (got)
				(*done)++;
			if (ft_timed_out(start, ft_opts.timeout))
				return -FI_ETIMEDOUT;
		}
		if (ret) {
			FT_PRINTERR("fi_writemsg", ret);
			return (int)ret;
		}
	}
	return 0;
}

/* a: delivery complete puts, then one commit; microseconds */
static int cb_run_a(size_t size, size_t n, double *usec)
{
	struct fi_rma_iov iov = {
		.addr = peer_addr, .len = size * n, .key = peer_key};
	uint64_t start = ft_now_us(), done = 0;
	bool commit_done = false;
	ssize_t ret;

	ret = cb_puts(size, n, FI_DELIVERY_COMPLETE, &done);
	if (ret)
		return (int)ret;
	/* the commit is ordered after the puts: no need to wait for them */
	FT_POST_RETRY(ret, fi_commit(ft.ep, &iov, 1, ft.peer, 0, &commit_ctx));
	if (ret) {
		FT_PRINTERR("fi_commit", ret);
		return (int)ret;
	}
	ret = cb_drain(&done, n, &commit_done);
	*usec = (double)(ft_now_us() - start);
	return (int)ret;
}

/* b: every put FI_COMMIT_COMPLETE */
static int cb_run_b(size_t size, size_t n, double *usec)
{
	uint64_t start = ft_now_us(), done = 0;
	int ret;

	ret = cb_puts(size, n, FI_COMMIT_COMPLETE, &done);
	if (!ret)
		ret = cb_drain(&done, n, NULL);
	*usec = (double)(ft_now_us() - start);
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cb_client(void)
{
	double ta[CB_MAX_REPS], tb[CB_MAX_REPS], ma, mb;
	size_t size, n;
	int s, k, r, ret;

	printf("# provider %s; medians of %d runs; a: N puts "
	       "FI_DELIVERY_COMPLETE + 1 fi_commit, b: N puts "
	       "FI_COMMIT_COMPLETE\n",
	       ft.info->fabric_attr->prov_name, reps);
	printf("%-8s %-6s %14s %14s %8s\n", "bytes", "N", "a_us_per_put",
	       "b_us_per_put", "b/a");
	for (s = 0; s < ft_opts.nsizes; s++) {
		size = ft_opts.sizes[s];
		ft_fill_buf(ft.buf, size, size);
		for (k = 0; k < nn; k++) {
			n = nvals[k];
			/* one untimed round of each warms the pages */
			ret = cb_run_a(size, n, &ma);
			if (!ret)
				ret = cb_run_b(size, n, &mb);
			for (r = 0; r < reps && !ret; r++) {
				/* interleaved, alternating first */
				if (r % 2) {
					ret = cb_run_b(size, n, &tb[r]);
					if (!ret)
						ret = cb_run_a(size, n, &ta[r]);
				} else {
					ret = cb_run_a(size, n, &ta[r]);
					if (!ret)
						ret = cb_run_b(size, n, &tb[r]);
				}
			}
			if (ret)
				return ret;
			ma = median(ta, reps) / (double)n;
			mb = median(tb, reps) / (double)n;
			printf("%-8zu %-6zu %14.2f %14.2f %8.2f\n", size, n, ma,
			       mb, mb / ma);
			printf("ft_result: test=commit_bw prov=%s size=%zu "
			       "n=%zu a_usec_per_put=%.3f "
			       "b_usec_per_put=%.3f ratio=%.3f\n",
			       ft.info->fabric_attr->prov_name, size, n, ma, mb,
			       mb / ma);
			fflush(stdout);
			ret = cb_call(CB_CHECK, size, n);
			if (ret) {
				FT_ERR("data at the target wrong after "
				       "size %zu N %zu",
				       size, n);
				return ret;
			}
		}
	}
	return cb_call(CB_DONE, 0, 0);
}

static int cb_parse_n(const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;

	if (!copy)
		return -FI_ENOMEM;
	nn = 0;
	for (tok = strtok_r(copy, ",", &save); tok && nn < 16;
	     tok = strtok_r(NULL, ",", &save)) {
		nvals[nn] = strtoul(tok, NULL, 0);
		if (!nvals[nn] || nvals[nn] > CB_MAX_N) {
			free(copy);
			return -FI_EINVAL;
		}
		nn++;
	}
	free(copy);
	return nn ? 0 : -FI_EINVAL;
}

static int cb_opt(int op, const char *arg)
{
	switch (op) {
	case 'N':
		return cb_parse_n(arg);
	case 'r':
		reps = atoi(arg);
		return reps > 0 && reps <= CB_MAX_REPS ? 0 : -FI_EINVAL;
	case 'F':
		dir = arg;
		return 0;
	default:
		return 1;
	}
}

int main(int argc, char **argv)
{
	static const size_t def[] = {64, 1024, 4096, 65536};
	size_t i;
	int ret;

	ft_init_opts(argv[0]);
	for (i = 0; i < sizeof(def) / sizeof(def[0]); i++)
		ft_opts.sizes[i] = def[i];
	ft_opts.nsizes = (int)i;
	dir = getenv("FT_PMEM_DIR");
	if (!dir)
		dir = "/var/tmp";
	if (ft_parse_args(argc, argv, "N:r:F:", cb_opt)) {
		ft_usage("N puts + one fi_commit against N FI_COMMIT_COMPLETE "
			 "puts, to a file-backed FI_RMA_PMEM region",
			 "  -N a,b,c      puts per round (default 1,16,256)\n"
			 "  -r REPS       timed rounds per point (default 7)\n"
			 "  -F DIR        directory of the server's file "
			 "(default $FT_PMEM_DIR, else /var/tmp)\n");
		return 2;
	}
	ret = cb_init();
	if (!ret)
		ret = ft_is_server() ? cb_server() : cb_client();
	FT_CLOSE_FID(ft.ep);
	FT_CLOSE_FID(rgn_mr);
	ft_free_res();
	if (rgn)
		munmap(rgn, rgn_size);
	return ft_exit_code(ret);
}

#endif /* FI_COMMIT_MANUAL */
