/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fabtests common layer: option parsing, fabric resource setup for RDM
 * (out-of-band address exchange) and MSG (connection manager) endpoints,
 * send/recv helpers whose waits are all bounded, data patterns, timing and
 * report output, and the single-process unit-test runner.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shared.h"

struct ft_opts ft_opts;
struct ft_res ft;
const char *ft_prog = "fabtests";

void ft_init_opts(const char *prog)
{
	const char *slash = strrchr(prog, '/');

	ft_prog = slash ? slash + 1 : prog;
	memset(&ft_opts, 0, sizeof(ft_opts));
	ft_opts.ep_type = FI_EP_RDM;
	ft_opts.iterations = 1000;
	ft_opts.warmup = 10;
	ft_opts.port = FT_DEFAULT_PORT;
	ft_opts.timeout = FT_DEFAULT_TIMEOUT;
	memset(&ft, 0, sizeof(ft));
	ft.oob_sock = -1;
	ft.peer = FI_ADDR_UNSPEC;
}

int ft_parse_ep_type(const char *s, enum fi_ep_type *type)
{
	if (!strcasecmp(s, "msg"))
		*type = FI_EP_MSG;
	else if (!strcasecmp(s, "rdm"))
		*type = FI_EP_RDM;
	else if (!strcasecmp(s, "dgram"))
		*type = FI_EP_DGRAM;
	else
		return -FI_EINVAL;
	return 0;
}

const char *ft_ep_type_str(enum fi_ep_type type)
{
	switch (type) {
	case FI_EP_MSG:
		return "msg";
	case FI_EP_RDM:
		return "rdm";
	case FI_EP_DGRAM:
		return "dgram";
	default:
		return "unspec";
	}
}

/* "-S all" runs powers of two; "-S a,b,c" an explicit list */
static int ft_parse_sizes(const char *arg)
{
	char *copy, *tok, *save = NULL, *end;
	size_t s;

	ft_opts.nsizes = 0;
	if (!strcmp(arg, "all")) {
		for (s = 1; s <= (1 << 16) && ft_opts.nsizes < FT_MAX_SIZES;
		     s <<= 1)
			ft_opts.sizes[ft_opts.nsizes++] = s;
		return 0;
	}
	copy = strdup(arg);
	if (!copy)
		return -FI_ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (ft_opts.nsizes == FT_MAX_SIZES)
			break;
		s = strtoull(tok, &end, 0);
		if (*end == 'k' || *end == 'K')
			s <<= 10;
		else if (*end == 'm' || *end == 'M')
			s <<= 20;
		ft_opts.sizes[ft_opts.nsizes++] = s;
	}
	free(copy);
	return ft_opts.nsizes ? 0 : -FI_EINVAL;
}

/* returns 0 when consumed, 1 for an unknown option, <0 on a bad value */
int ft_parse_opt(int op, const char *arg)
{
	switch (op) {
	case 'p':
		ft_opts.prov = arg;
		return 0;
	case 'e':
		return ft_parse_ep_type(arg, &ft_opts.ep_type);
	case 'd':
		ft_opts.domain = arg;
		return 0;
	case 's':
		ft_opts.src_addr = arg;
		return 0;
	case 'I':
		ft_opts.iterations = atoi(arg);
		return ft_opts.iterations > 0 ? 0 : -FI_EINVAL;
	case 'W':
		ft_opts.warmup = atoi(arg);
		return ft_opts.warmup >= 0 ? 0 : -FI_EINVAL;
	case 'S':
		return ft_parse_sizes(arg);
	case 'c':
		ft_opts.check = true;
		return 0;
	case 'm':
		if (!strcmp(arg, "tagged"))
			ft_opts.tagged = true;
		else if (!strcmp(arg, "msg"))
			ft_opts.tagged = false;
		else
			return -FI_EINVAL;
		return 0;
	case 'v':
		ft_opts.verbose++;
		return 0;
	case 'B':
	case 'P':
		ft_opts.port = (uint16_t)atoi(arg);
		return ft_opts.port ? 0 : -FI_EINVAL;
	case 'T':
		ft_opts.timeout = atoi(arg);
		return ft_opts.timeout > 0 ? 0 : -FI_EINVAL;
	default:
		return 1;
	}
}

void ft_usage(const char *desc, const char *extra)
{
	fprintf(stderr, "usage: %s [options] [server_address]\n  %s\n", ft_prog,
		desc);
	fprintf(stderr,
		"  -p PROV       provider name\n"
		"  -e msg|rdm|dgram endpoint type\n"
		"  -d DOMAIN     domain name\n"
		"  -s ADDR       source address (node for fi_getinfo)\n"
		"  -I N          iterations\n"
		"  -W N          warm-up iterations (not timed)\n"
		"  -S SIZE|all|a,b,c  message size(s)\n"
		"  -c            check transferred data\n"
		"  -m msg|tagged send/recv or tagged interface\n"
		"  -B/-P PORT    out-of-band port (MSG CM uses PORT+1)\n"
		"  -T SECS       timeout of every wait\n"
		"  -v            verbose\n"
		"  server_address  given => client role, else server\n");
	if (extra)
		fprintf(stderr, "%s", extra);
}

int ft_parse_args(int argc, char **argv, const char *extra_opts,
		  int (*extra)(int op, const char *arg))
{
	char optstr[128];
	int op, ret;

	snprintf(optstr, sizeof(optstr), "%s%s", FT_STD_OPTS,
		 extra_opts ? extra_opts : "");
	while ((op = getopt(argc, argv, optstr)) != -1) {
		if (op == 'h' || op == '?')
			return -FI_EINVAL;
		ret = ft_parse_opt(op, optarg);
		if (ret == 1 && extra)
			ret = extra(op, optarg);
		if (ret) {
			FT_ERR("bad value for -%c", op);
			return -FI_EINVAL;
		}
	}
	if (optind < argc)
		ft_opts.dst_addr = argv[optind];
	if (!ft_opts.nsizes) {
		ft_opts.sizes[0] = 64;
		ft_opts.nsizes = 1;
	}
	return 0;
}

uint64_t ft_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

bool ft_timed_out(uint64_t start_us, int timeout_s)
{
	return ft_now_us() - start_us > (uint64_t)timeout_s * 1000000;
}

static int ft_set_str(char **dst, const char *src)
{
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -FI_ENOMEM;
}

int ft_alloc_hints(uint64_t caps)
{
	ft.hints = fi_allocinfo();
	if (!ft.hints)
		return -FI_ENOMEM;
	ft.hints->caps = caps;
	ft.hints->mode = FI_CONTEXT | FI_CONTEXT2;
	ft.hints->ep_attr->type = ft_opts.ep_type;
	ft.hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
					 FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (ft_set_str(&ft.hints->fabric_attr->prov_name, ft_opts.prov) ||
	    ft_set_str(&ft.hints->domain_attr->name, ft_opts.domain))
		return -FI_ENOMEM;
	return 0;
}

int ft_getinfo(struct fi_info *hints, const char *node, const char *service,
	       uint64_t flags, struct fi_info **info)
{
	int ret;

	ret = fi_getinfo(FT_FIVERSION, node, service, flags, hints, info);
	if (ret) {
		FT_PRINTERR("fi_getinfo", ret);
		return ret;
	}
	FT_DEBUG("using provider %s, domain %s, ep %s",
		 (*info)->fabric_attr->prov_name, (*info)->domain_attr->name,
		 ft_ep_type_str((*info)->ep_attr->type));
	return 0;
}

int ft_open_fabric_domain(void)
{
	int ret;

	if (!ft.fabric) {
		ret = fi_fabric(ft.info->fabric_attr, &ft.fabric, NULL);
		if (ret) {
			FT_PRINTERR("fi_fabric", ret);
			return ret;
		}
	}
	ret = fi_domain(ft.fabric, ft.info, &ft.domain, NULL);
	if (ret)
		FT_PRINTERR("fi_domain", ret);
	return ret;
}

int ft_open_cq(enum fi_cq_format fmt, enum fi_wait_obj wait, size_t size,
	       struct fid_cq **cq)
{
	struct fi_cq_attr attr = {
		.format = fmt,
		.wait_obj = wait,
		.size = size,
	};
	int ret;

	ret = fi_cq_open(ft.domain, &attr, cq, NULL);
	if (ret)
		FT_PRINTERR("fi_cq_open", ret);
	return ret;
}

static bool ft_mr_local(void)
{
	return ft.info->domain_attr->mr_mode & (FI_MR_LOCAL | FI_LOCAL_MR);
}

int ft_alloc_msgs(size_t max_size)
{
	uint64_t access = FI_SEND | FI_RECV;
	long page = sysconf(_SC_PAGESIZE);
	int ret;

	ft.buf_size = 2 * max_size;
	if (posix_memalign((void **)&ft.buf, page, ft.buf_size ?: 1))
		return -FI_ENOMEM;
	memset(ft.buf, 0, ft.buf_size);
	ft.tx_buf = ft.buf;
	ft.rx_buf = ft.buf + max_size;
	if (!ft_mr_local())
		return 0;
	ret = fi_mr_reg(ft.domain, ft.buf, ft.buf_size, access, 0, 0xC0DE, 0,
			&ft.mr, NULL);
	if (ret) {
		FT_PRINTERR("fi_mr_reg", ret);
		return ret;
	}
	ft.desc = fi_mr_desc(ft.mr);
	return 0;
}

int ft_open_ep_res_fmt(enum fi_cq_format fmt)
{
	struct fi_av_attr av_attr = {0};
	int ret;

	ret = ft_open_cq(fmt, FI_WAIT_NONE, 0, &ft.txcq);
	if (ret)
		return ret;
	ret = ft_open_cq(fmt, FI_WAIT_NONE, 0, &ft.rxcq);
	if (ret)
		return ret;
	ret = fi_endpoint(ft.domain, ft.info, &ft.ep, NULL);
	if (ret) {
		FT_PRINTERR("fi_endpoint", ret);
		return ret;
	}
	if (ft.info->ep_attr->type != FI_EP_MSG) {
		av_attr.type = ft.info->domain_attr->av_type;
		if (av_attr.type == FI_AV_UNSPEC)
			av_attr.type = FI_AV_TABLE;
		ret = fi_av_open(ft.domain, &av_attr, &ft.av, NULL);
		if (ret) {
			FT_PRINTERR("fi_av_open", ret);
			return ret;
		}
		ret = fi_ep_bind(ft.ep, &ft.av->fid, 0);
		if (ret) {
			FT_PRINTERR("fi_ep_bind(av)", ret);
			return ret;
		}
	} else {
		ret = fi_ep_bind(ft.ep, &ft.eq->fid, 0);
		if (ret) {
			FT_PRINTERR("fi_ep_bind(eq)", ret);
			return ret;
		}
	}
	ret = fi_ep_bind(ft.ep, &ft.txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(ft.ep, &ft.rxcq->fid, FI_RECV);
	if (ret) {
		FT_PRINTERR("fi_ep_bind(cq)", ret);
		return ret;
	}
	ret = fi_enable(ft.ep);
	if (ret)
		FT_PRINTERR("fi_enable", ret);
	return ret;
}

static int ft_open_ep_res(void)
{
	return ft_open_ep_res_fmt(FI_CQ_FORMAT_TAGGED);
}

size_t ft_max_size(void)
{
	size_t max = 0;
	int i;

	for (i = 0; i < ft_opts.nsizes; i++)
		if (ft_opts.sizes[i] > max)
			max = ft_opts.sizes[i];
	return max;
}

static uint64_t ft_caps(void)
{
	return FI_MSG | (ft_opts.tagged ? FI_TAGGED : 0);
}

static int ft_exchange_addrs(void)
{
	char local[256], remote[256];
	size_t len = sizeof(local);
	uint32_t wire_len, peer_len;
	int ret;

	ret = fi_getname(&ft.ep->fid, local, &len);
	if (ret) {
		FT_PRINTERR("fi_getname", ret);
		return ret;
	}
	wire_len = (uint32_t)len;
	ret = ft_oob_send(&wire_len, sizeof(wire_len));
	if (!ret)
		ret = ft_oob_send(local, len);
	if (!ret)
		ret = ft_oob_recv(&peer_len, sizeof(peer_len));
	if (ret)
		return ret;
	if (peer_len == 0 || peer_len > sizeof(remote)) {
		FT_ERR("peer address length %u out of range", peer_len);
		return -FI_EINVAL;
	}
	ret = ft_oob_recv(remote, peer_len);
	if (ret)
		return ret;
	ret = fi_av_insert(ft.av, remote, 1, &ft.peer, 0, NULL);
	if (ret != 1) {
		FT_PRINTERR("fi_av_insert", ret);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	return 0;
}

int ft_init_rdm(void)
{
	uint64_t flags = ft_opts.src_addr ? FI_SOURCE : 0;
	int ret;

	ret = ft_alloc_hints(ft_caps());
	if (ret)
		return ret;
	ret = ft_getinfo(ft.hints, ft_opts.src_addr, NULL, flags, &ft.info);
	if (ret)
		return ret;
	ret = ft_open_fabric_domain();
	if (!ret)
		ret = ft_open_ep_res();
	if (!ret)
		ret = ft_alloc_msgs(ft_max_size());
	if (ret)
		return ret;
	ret = ft_is_server() ? ft_oob_listen_accept(ft_opts.port)
			     : ft_oob_connect(ft_opts.dst_addr, ft_opts.port);
	if (ret)
		return ret;
	ret = ft_exchange_addrs();
	if (ret)
		return ret;
	ret = ft_post_rx(ft_max_size());
	if (ret)
		return ret;
	return ft_oob_sync();
}

/* polls rather than fi_eq_sread: reading drives CM progress everywhere */
static int ft_eq_wait(uint32_t want, struct fi_eq_cm_entry *entry)
{
	struct fi_eq_err_entry err = {0};
	uint64_t start = ft_now_us();
	uint32_t event;
	ssize_t rd;

	for (;;) {
		rd = fi_eq_read(ft.eq, &event, entry, sizeof(*entry), 0);
		if (rd >= 0)
			break;
		if (rd == -FI_EAVAIL) {
			fi_eq_readerr(ft.eq, &err, 0);
			FT_ERR("eq error: %s (prov: %s)", fi_strerror(err.err),
			       fi_eq_strerror(ft.eq, err.prov_errno,
					      err.err_data, NULL, 0));
			return -(err.err ? err.err : FI_EIO);
		}
		if (rd != -FI_EAGAIN) {
			FT_PRINTERR("fi_eq_read", rd);
			return (int)rd;
		}
		if (ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("timeout waiting for eq event %u", want);
			return -FI_ETIMEDOUT;
		}
		usleep(100);
	}
	if (event != want) {
		FT_ERR("unexpected eq event %u (wanted %u)", event, want);
		return -FI_EOTHER;
	}
	return 0;
}

static int ft_open_eq(void)
{
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_UNSPEC};
	int ret;

	ret = fi_eq_open(ft.fabric, &attr, &ft.eq, NULL);
	if (ret)
		FT_PRINTERR("fi_eq_open", ret);
	return ret;
}

static int ft_msg_server(const char *service)
{
	struct fi_eq_cm_entry entry = {0};
	int ret;

	ret = ft_getinfo(ft.hints, ft_opts.src_addr, service, FI_SOURCE,
			 &ft.info);
	if (ret)
		return ret;
	ret = fi_fabric(ft.info->fabric_attr, &ft.fabric, NULL);
	if (ret) {
		FT_PRINTERR("fi_fabric", ret);
		return ret;
	}
	ret = ft_open_eq();
	if (ret)
		return ret;
	ret = fi_passive_ep(ft.fabric, ft.info, &ft.pep, NULL);
	if (ret) {
		FT_PRINTERR("fi_passive_ep", ret);
		return ret;
	}
	ret = fi_pep_bind(ft.pep, &ft.eq->fid, 0);
	if (!ret)
		ret = fi_listen(ft.pep);
	if (ret) {
		FT_PRINTERR("fi_listen", ret);
		return ret;
	}
	ret = ft_oob_listen_accept(ft_opts.port);
	if (!ret)
		ret = ft_oob_sync();
	if (!ret)
		ret = ft_eq_wait(FI_CONNREQ, &entry);
	if (ret)
		return ret;
	/* the connection request carries the info to build the ep from */
	fi_freeinfo(ft.info);
	ft.info = entry.info;
	ret = ft_open_fabric_domain();
	if (!ret)
		ret = ft_open_ep_res();
	if (!ret)
		ret = ft_alloc_msgs(ft_max_size());
	if (!ret)
		ret = ft_post_rx(ft_max_size());
	if (ret)
		return ret;
	ret = fi_accept(ft.ep, NULL, 0);
	if (ret) {
		FT_PRINTERR("fi_accept", ret);
		return ret;
	}
	return ft_eq_wait(FI_CONNECTED, &entry);
}

static int ft_msg_client(const char *service)
{
	struct fi_eq_cm_entry entry = {0};
	int ret;

	/* getinfo first so an unsupported setup fails fast on both sides */
	ret = ft_getinfo(ft.hints, ft_opts.dst_addr, service, 0, &ft.info);
	if (!ret)
		ret = ft_oob_connect(ft_opts.dst_addr, ft_opts.port);
	if (!ret)
		ret = ft_oob_sync();
	if (!ret)
		ret = ft_open_fabric_domain();
	if (!ret)
		ret = ft_open_eq();
	if (!ret)
		ret = ft_open_ep_res();
	if (!ret)
		ret = ft_alloc_msgs(ft_max_size());
	if (!ret)
		ret = ft_post_rx(ft_max_size());
	if (ret)
		return ret;
	ret = fi_connect(ft.ep, ft.info->dest_addr, NULL, 0);
	if (ret) {
		FT_PRINTERR("fi_connect", ret);
		return ret;
	}
	return ft_eq_wait(FI_CONNECTED, &entry);
}

int ft_init_msg(void)
{
	char service[16];
	int ret;

	ret = ft_alloc_hints(ft_caps());
	if (ret)
		return ret;
	snprintf(service, sizeof(service), "%u", ft_opts.port + 1);
	ret = ft_is_server() ? ft_msg_server(service) : ft_msg_client(service);
	if (ret)
		return ret;
	return ft_oob_sync();
}

void ft_free_res(void)
{
	FT_CLOSE_FID(ft.ep);
	FT_CLOSE_FID(ft.pep);
	FT_CLOSE_FID(ft.mr);
	FT_CLOSE_FID(ft.av);
	FT_CLOSE_FID(ft.txcq);
	FT_CLOSE_FID(ft.rxcq);
	FT_CLOSE_FID(ft.cntr);
	FT_CLOSE_FID(ft.eq);
	FT_CLOSE_FID(ft.domain);
	FT_CLOSE_FID(ft.fabric);
	if (ft.info)
		fi_freeinfo(ft.info);
	if (ft.hints)
		fi_freeinfo(ft.hints);
	ft.info = ft.hints = NULL;
	free(ft.buf);
	ft.buf = NULL;
	if (ft.oob_sock >= 0)
		close(ft.oob_sock);
	ft.oob_sock = -1;
}

/* out-of-band TCP socket: bounded by ft_opts.timeout everywhere */

static int ft_poll_fd(int fd, short events, uint64_t start)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	int ret;

	do {
		if (ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("timeout on out-of-band socket");
			return -FI_ETIMEDOUT;
		}
		ret = poll(&pfd, 1, 100);
	} while (ret == 0 || (ret < 0 && errno == EINTR));
	return ret < 0 ? -errno : 0;
}

static void ft_oob_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int ft_oob_listen_accept(uint16_t port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int one = 1, lfd, ret;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 1)) {
		ret = -errno;
		FT_ERR("oob bind/listen on port %u: %s", port, strerror(-ret));
		goto out;
	}
	ret = ft_poll_fd(lfd, POLLIN, ft_now_us());
	if (ret)
		goto out;
	ft.oob_sock = accept(lfd, NULL, NULL);
	if (ft.oob_sock < 0)
		ret = -errno;
	else
		ft_oob_tune(ft.oob_sock);
out:
	close(lfd);
	return ret;
}

/* the server may not be listening yet: retry until the timeout */
int ft_oob_connect(const char *addr, uint16_t port)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai;
	uint64_t start = ft_now_us();
	char service[16];
	int fd, ret;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(addr, service, &hints, &ai);
	if (ret) {
		FT_ERR("getaddrinfo(%s): %s", addr, gai_strerror(ret));
		return -FI_EINVAL;
	}
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			ft.oob_sock = fd;
			ft_oob_tune(fd);
			ret = 0;
			break;
		}
		close(fd);
		if (ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("oob connect to %s:%u timed out", addr, port);
			ret = -FI_ETIMEDOUT;
			break;
		}
		usleep(20000);
	}
	freeaddrinfo(ai);
	return ret;
}

int ft_oob_send(const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(ft.oob_sock, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			FT_ERR("oob send failed");
			return -FI_EIO;
		}
		p += n;
		len -= n;
	}
	return 0;
}

int ft_oob_recv(void *buf, size_t len)
{
	uint64_t start = ft_now_us();
	char *p = buf;
	ssize_t n;
	int ret;

	while (len) {
		ret = ft_poll_fd(ft.oob_sock, POLLIN, start);
		if (ret)
			return ret;
		n = recv(ft.oob_sock, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			FT_ERR("oob peer closed or failed");
			return -FI_EIO;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* EOF on the out-of-band socket: the peer has failed and exited */
bool ft_oob_peer_gone(void)
{
	char c;

	if (ft.oob_sock < 0)
		return false;
	return recv(ft.oob_sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

int ft_oob_sync(void)
{
	char c = 's', r = 0;
	int ret;

	ret = ft_oob_send(&c, 1);
	if (!ret)
		ret = ft_oob_recv(&r, 1);
	if (!ret && r != c)
		ret = -FI_EIO;
	return ret;
}

/* data path */

static ssize_t ft_post_retry(bool tx, size_t size)
{
	uint64_t start = ft_now_us();
	struct fid_cq *cq = tx ? ft.txcq : ft.rxcq;
	ssize_t ret;

	for (;;) {
		if (tx && ft_opts.tagged)
			ret = fi_tsend(ft.ep, ft.tx_buf, size, ft.desc, ft.peer,
				       FT_TAG, &ft.tx_ctx);
		else if (tx)
			ret = fi_send(ft.ep, ft.tx_buf, size, ft.desc, ft.peer,
				      &ft.tx_ctx);
		else if (ft_opts.tagged)
			ret = fi_trecv(ft.ep, ft.rx_buf, size, ft.desc,
				       FI_ADDR_UNSPEC, FT_TAG, 0, &ft.rx_ctx);
		else
			ret = fi_recv(ft.ep, ft.rx_buf, size, ft.desc,
				      FI_ADDR_UNSPEC, &ft.rx_ctx);
		if (ret != -FI_EAGAIN)
			return ret;
		/* queue full: drive progress, then retry */
		fi_cq_read(cq, NULL, 0);
		if (ft_timed_out(start, ft_opts.timeout))
			return -FI_ETIMEDOUT;
	}
}

int ft_post_tx(size_t size)
{
	ssize_t ret;

	if (ft_opts.check)
		ft_fill_buf(ft.tx_buf, size, ft.tx_seq ^ size);
	ret = ft_post_retry(true, size);
	if (ret) {
		FT_PRINTERR(ft_opts.tagged ? "fi_tsend" : "fi_send", ret);
		return (int)ret;
	}
	ft.tx_seq++;
	return 0;
}

int ft_post_rx(size_t size)
{
	ssize_t ret;

	ret = ft_post_retry(false, size);
	if (ret) {
		FT_PRINTERR(ft_opts.tagged ? "fi_trecv" : "fi_recv", ret);
		return (int)ret;
	}
	ft.rx_seq++;
	return 0;
}

int ft_cq_error(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err = {0};
	ssize_t ret;

	ret = fi_cq_readerr(cq, &err, 0);
	if (ret < 0) {
		FT_PRINTERR("fi_cq_readerr", ret);
		return (int)ret;
	}
	FT_ERR("%s completion error: %s (prov: %s)", what, fi_strerror(err.err),
	       fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
	return -(err.err ? err.err : FI_EIO);
}

int ft_wait_cq(struct fid_cq *cq, uint64_t *done, uint64_t target,
	       const char *what)
{
	struct fi_cq_tagged_entry entry;
	uint64_t start = ft_now_us();
	unsigned spins = 0;
	ssize_t ret;

	while (*done < target) {
		ret = fi_cq_read(cq, &entry, 1);
		if (ret > 0) {
			(*done)++;
			if (cq == ft.rxcq)
				ft.last_rx_len = entry.len;
			continue;
		}
		if (ret == -FI_EAVAIL)
			return ft_cq_error(cq, what);
		if (ret != -FI_EAGAIN) {
			FT_PRINTERR("fi_cq_read", ret);
			return (int)ret;
		}
		/* few cores: let the peer and provider threads run */
		sched_yield();
		if ((++spins & 0xff) == 0 && ft_oob_peer_gone()) {
			FT_ERR("peer exited while waiting for %s completion",
			       what);
			return -FI_ECONNABORTED;
		}
		if ((spins & 0xff) == 0 &&
		    ft_timed_out(start, ft_opts.timeout)) {
			FT_ERR("timeout waiting for %s completion "
			       "(%" PRIu64 "/%" PRIu64 ")",
			       what, *done, target);
			return -FI_ETIMEDOUT;
		}
	}
	return 0;
}

int ft_tx(size_t size)
{
	int ret;

	ret = ft_post_tx(size);
	if (ret)
		return ret;
	return ft_wait_cq(ft.txcq, &ft.tx_done, ft.tx_seq, "send");
}

/* completes the receive posted earlier, checks it, then re-posts */
int ft_rx(size_t size)
{
	int ret;

	ret = ft_wait_cq(ft.rxcq, &ft.rx_done, ft.rx_seq, "recv");
	if (ret)
		return ret;
	if (ft_opts.check) {
		if (ft.last_rx_len != size) {
			FT_ERR("received %zu bytes, expected %zu",
			       ft.last_rx_len, size);
			return -FI_EIO;
		}
		ret = ft_check_buf(ft.rx_buf, size, (ft.rx_done - 1) ^ size);
		if (ret)
			return ret;
	}
	return ft_post_rx(ft.buf_size / 2);
}

static int ft_pingpong_iter(size_t size)
{
	int ret;

	if (ft_is_server()) {
		ret = ft_rx(size);
		return ret ? ret : ft_tx(size);
	}
	ret = ft_tx(size);
	return ret ? ret : ft_rx(size);
}

int ft_pingpong(const char *test)
{
	size_t max = ft.info->ep_attr->max_msg_size;
	uint64_t start = 0, end;
	int i, s, ret;

	ft_show_header();
	for (s = 0; s < ft_opts.nsizes; s++) {
		if (max && ft_opts.sizes[s] > max) {
			printf("size %zu above max_msg_size %zu: skipped\n",
			       ft_opts.sizes[s], max);
			continue;
		}
		for (i = 0; i < ft_opts.warmup + ft_opts.iterations; i++) {
			if (i == ft_opts.warmup)
				start = ft_now_us();
			ret = ft_pingpong_iter(ft_opts.sizes[s]);
			if (ret) {
				FT_ERR("size %zu iteration %d failed",
				       ft_opts.sizes[s], i);
				return ret;
			}
		}
		end = ft_now_us();
		ft_show_perf(test, ft_opts.sizes[s], ft_opts.iterations, start,
			     end, 2);
	}
	/* do not tear down while the peer still waits for our last reply */
	return ft_oob_sync();
}

int ft_exit_code(int ret)
{
	if (!ret)
		return 0;
	if (ret == -FI_ENODATA || ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP) {
		printf("%s: NOTSUPP: %s\n", ft_prog, fi_strerror(-ret));
		return FT_EXIT_NOTSUPP;
	}
	return 1;
}

/* data patterns: position- and seed-dependent so shifts are caught too */

static inline uint8_t ft_pattern(size_t i, uint64_t seed)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ULL ^ (seed * 0xff51afd7ULL);

	return (uint8_t)(x >> 29 ^ x);
}

void ft_fill_buf(void *buf, size_t size, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < size; i++)
		p[i] = ft_pattern(i, seed);
}

int ft_check_buf(const void *buf, size_t size, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < size; i++) {
		if (p[i] != ft_pattern(i, seed)) {
			FT_ERR("data check failed at byte %zu of %zu: got "
			       "0x%02x expected 0x%02x",
			       i, size, p[i], ft_pattern(i, seed));
			return -FI_EIO;
		}
	}
	return 0;
}

/* reporting */

static void ft_fmt_count(char *buf, size_t len, uint64_t n)
{
	static const char units[] = "kmg";
	int u = -1;
	double v = (double)n;

	while (v >= 1024 && u < 2) {
		v /= 1024;
		u++;
	}
	if (u >= 0 && v == (uint64_t)v)
		snprintf(buf, len, "%" PRIu64 "%c", (uint64_t)v, units[u]);
	else if (u >= 0)
		snprintf(buf, len, "%.1f%c", v, units[u]);
	else
		snprintf(buf, len, "%" PRIu64, n);
}

/* the client reports; the server only with -v */
static bool ft_reporter(void)
{
	return !ft_is_server() || ft_opts.verbose;
}

void ft_show_header(void)
{
	if (!ft_reporter())
		return;
	printf("%-10s%-8s%-10s%-10s%-12s%-12s%-12s\n", "bytes", "iters",
	       "total", "time", "MB/sec", "usec/xfer", "Mxfers/sec");
}

void ft_show_perf(const char *test, size_t size, int iters, uint64_t start,
		  uint64_t end, int xfers_per_iter)
{
	uint64_t xfers = (uint64_t)iters * xfers_per_iter;
	uint64_t bytes = xfers * size;
	double usec = (double)(end - start);
	char sz[16], it[16], tot[16];

	if (!ft_reporter())
		return;
	if (usec <= 0)
		usec = 1;
	ft_fmt_count(sz, sizeof(sz), size);
	ft_fmt_count(it, sizeof(it), iters);
	ft_fmt_count(tot, sizeof(tot), bytes);
	printf("%-10s%-8s%-10s%-10.2f%-12.2f%-12.2f%-12.2f\n", sz, it, tot,
	       usec / 1e6, bytes / usec, usec / xfers, xfers / usec);
	printf("ft_result: test=%s prov=%s ep=%s op=%s size=%zu iters=%d "
	       "usec_per_xfer=%.3f mb_per_sec=%.3f\n",
	       test, ft.info ? ft.info->fabric_attr->prov_name : "?",
	       ft_ep_type_str(ft_opts.ep_type),
	       ft_opts.tagged ? "tagged" : "msg", size, iters, usec / xfers,
	       bytes / usec);
	fflush(stdout);
}

/* unit-test runner */

enum ft_result ft_ret_notsupp(int ret)
{
	if (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP || ret == -FI_ENODATA)
		return FT_NOTSUPP;
	return FT_FAIL;
}

static const char *ft_result_str(enum ft_result r)
{
	static const char *const names[] = {"PASS", "FAIL", "SKIP", "NOTSUPP"};

	return names[r];
}

/*
 * Each sub-test runs in a child so a hang or a crash inside the provider
 * costs that sub-test only; the wait is bounded by a per-test limit.
 */
static enum ft_result ft_run_isolated(const struct ft_unit_test *t)
{
	uint64_t start = ft_now_us();
	int status;
	pid_t pid, w;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return t->fn();
	if (pid == 0)
		_exit((int)t->fn());
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0)
			return FT_FAIL;
		if (ft_timed_out(start, ft_opts.timeout * 2)) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fprintf(stderr, "  %s: timed out after %d s\n", t->name,
				ft_opts.timeout * 2);
			return FT_FAIL;
		}
		usleep(2000);
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "  %s: killed by signal %d\n", t->name,
			WTERMSIG(status));
		return FT_FAIL;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) > FT_NOTSUPP)
		return FT_FAIL;
	return (enum ft_result)WEXITSTATUS(status);
}

int ft_run_unit(const char *suite, const struct ft_unit_test *tests, int argc,
		char **argv)
{
	int count[4] = {0};
	const char *only = NULL;
	bool strict = getenv("FT_STRICT") && atoi(getenv("FT_STRICT"));
	const struct ft_unit_test *t;
	enum ft_result r;
	int op, ret;

	ft_init_opts(argv[0]);
	ft_opts.ep_type = FI_EP_UNSPEC;
	ft_opts.timeout = 5;
	while ((op = getopt(argc, argv, "p:e:d:s:t:xvh")) != -1) {
		if (op == 't') {
			only = optarg;
			continue;
		}
		if (op == 'x') {
			strict = true;
			continue;
		}
		ret = (op == 'h' || op == '?') ? 1 : ft_parse_opt(op, optarg);
		if (ret) {
			fprintf(stderr,
				"usage: %s -p PROV [-e msg|rdm|dgram] "
				"[-d DOMAIN] [-s ADDR] [-t TEST] [-x] [-v]\n"
				"  -x: also run strict argument checks\n",
				ft_prog);
			for (t = tests; t->name; t++)
				fprintf(stderr, "  %-28s %s\n", t->name,
					t->desc);
			return 2;
		}
	}
	if (!ft_opts.prov)
		fprintf(stderr, "%s: warning: no -p, any provider matches\n",
			ft_prog);
	for (t = tests; t->name; t++) {
		if (only && strcmp(only, t->name))
			continue;
		r = (t->strict && !strict) ? FT_SKIP : ft_run_isolated(t);
		count[r]++;
		printf("%-10s %-30s %s\n", ft_result_str(r), t->name,
		       ft_opts.verbose ? t->desc : "");
		fflush(stdout);
	}
	printf("%s: %d passed, %d failed, %d skipped, %d notsupp\n", suite,
	       count[FT_PASS], count[FT_FAIL], count[FT_SKIP],
	       count[FT_NOTSUPP]);
	return count[FT_FAIL] ? 1 : 0;
}

int ft_unit_open(uint64_t caps)
{
	uint64_t flags = ft_opts.src_addr ? FI_SOURCE : 0;
	int ret;

	ret = ft_alloc_hints(caps);
	if (ret)
		return ret;
	ret = fi_getinfo(FT_FIVERSION, ft_opts.src_addr, NULL, flags, ft.hints,
			 &ft.info);
	if (ret) {
		FT_DEBUG("fi_getinfo: %s", fi_strerror(-ret));
		return ret;
	}
	return ft_open_fabric_domain();
}

int ft_unit_open_ep(uint64_t caps)
{
	enum fi_ep_type saved = ft_opts.ep_type;
	int ret;

	/* connectionless unless the user asked otherwise */
	if (saved == FI_EP_UNSPEC)
		ft_opts.ep_type = FI_EP_RDM;
	ret = ft_unit_open(caps);
	ft_opts.ep_type = saved;
	if (ret)
		return ret;
	if (ft.info->ep_attr->type == FI_EP_MSG)
		return -FI_EOPNOTSUPP;
	return ft_open_ep_res();
}

/* ------------------------------------------------------------------ */
/* RMA set-up shared by the RMA, atomic and bandwidth programs.         */

#define FT_RMA_NAME_LEN 256

struct ft_rma_wire {
	uint64_t key;
	uint64_t addr;
	uint64_t size;
	uint32_t name_len;
	uint32_t pad;
	char name[FT_RMA_NAME_LEN];
};

int ft_exchange_rma(void *area, uint64_t offset, uint64_t size,
		    struct ft_rma_target *peer)
{
	struct ft_rma_wire mine = {0}, theirs = {0};
	size_t len = sizeof(mine.name);
	int ret;

	ret = fi_getname(&ft.ep->fid, mine.name, &len);
	if (ret) {
		FT_PRINTERR("fi_getname", ret);
		return ret;
	}
	mine.name_len = (uint32_t)len;
	mine.key = fi_mr_key(ft.mr);
	mine.size = size;
	/* without FI_MR_VIRT_ADDR the address is an offset into the MR */
	if (ft.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		mine.addr = (uint64_t)(uintptr_t)area;
	else
		mine.addr = offset;
	ret = ft_oob_send(&mine, sizeof(mine));
	if (!ret)
		ret = ft_oob_recv(&theirs, sizeof(theirs));
	if (ret)
		return ret;
	if (!theirs.name_len || theirs.name_len > FT_RMA_NAME_LEN ||
	    theirs.size != size) {
		FT_ERR("peer info mismatch (name %u bytes, area %" PRIu64
		       ", ours %" PRIu64 "): same -S on both sides?",
		       theirs.name_len, theirs.size, size);
		return -FI_EINVAL;
	}
	peer->key = theirs.key;
	peer->addr = theirs.addr;
	FT_DEBUG("peer key 0x%" PRIx64 " addr 0x%" PRIx64, peer->key,
		 peer->addr);
	ret = fi_av_insert(ft.av, theirs.name, 1, &ft.peer, 0, NULL);
	if (ret != 1) {
		FT_PRINTERR("fi_av_insert", ret);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	return 0;
}
