/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * sockets_attr.c - what the sockets provider
 * answers through the public API, in-process:
 *
 *  list       with no hints beyond the name: an FI_EP_RDM, an FI_EP_MSG,
 *             then an FI_EP_DGRAM entry (sockets_dgram.c tests it), the
 *             first two named sockets (provider, fabric, domain),
 *             FI_SOCKADDR_IN, FI_THREAD_SAFE, automatic control and data
 *             progress, FI_RM_ENABLED, mr_mode 0 with 8-byte keys,
 *             FI_TRIGGER and FI_FENCE; the datagram one with Debian's
 *             caps (FI_TRIGGER, FI_FENCE, FI_SHARED_AV, FI_NAMED_RX_CTX
 *             among them) and 16 contexts each way
 *  manual     FI_PROGRESS_MANUAL asked is answered, and its endpoint
 *             (messages only) starts no thread
 *  ipv6       FI_SOCKADDR_IN6 asked gives IN6 entries
 *  absent     what is not there yet is not offered: tcp has no
 *             FI_TRIGGER; FI_NAMED_RX_CTX gives RDM, MSG and DGRAM
 *             entries (scalable endpoints, 16 contexts each way);
 *             FI_SHARED_AV is listed, FI_SOURCE_ERR only when asked
 *             (in caps or rx_attr caps)
 *  mrmode     Debian's: sockets needs none of the 1.5 mr_mode bits and
 *             gives back none of them (user keys, offsets: what
 *             fi_multi_mr relies on) however many the hints accept;
 *             the old FI_MR_BASIC and FI_MR_SCALABLE are kept as asked
 *  tcp        tcp keeps its own name and manual progress by default
 *  iface      FI_SOCKETS_IFACE is sockets' own parameter: lo gives a
 *             127.0.0.1 source, a missing interface no entry
 *  objects    fabric, domain and an enabled RDM endpoint open on the
 *             entry, enabling starts one progress thread (automatic
 *             progress); fi_scalable_ep opens one; a tcp entry
 *             is refused by a sockets fabric's fi_domain (-FI_EINVAL)
 *
 * One line per case; exit 0 when every case passed, 77 when sockets is not
 * built. Data transfer is tested by fi_pingpong_sockets.sh and
 * sockets_data.sh.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "sockets_test.h"

static struct fi_info *hints_for(const char *prov)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		abort();
	hints->fabric_attr->prov_name = strdup(prov);
	hints->domain_attr->mr_mode = 0;
	return hints;
}

static int get(struct fi_info *hints, struct fi_info **info)
{
	int ret = fi_getinfo(SOCKETS_VER, NULL, NULL, 0, hints, info);

	fi_freeinfo(hints);
	return ret;
}

static int check_entry(const struct fi_info *fi, enum fi_ep_type type)
{
	REQUIRE(fi->ep_attr->type == type);
	REQUIRE(!strcmp(fi->fabric_attr->prov_name, "sockets"));
	REQUIRE(!strcmp(fi->fabric_attr->name, "sockets"));
	REQUIRE(!strcmp(fi->domain_attr->name, "sockets"));
	REQUIRE(fi->addr_format == FI_SOCKADDR_IN);
	REQUIRE(fi->domain_attr->threading == FI_THREAD_SAFE);
	REQUIRE(fi->domain_attr->control_progress == FI_PROGRESS_AUTO);
	REQUIRE(fi->domain_attr->data_progress == FI_PROGRESS_AUTO);
	REQUIRE(fi->domain_attr->resource_mgmt == FI_RM_ENABLED);
	REQUIRE(fi->domain_attr->mr_mode == 0);
	REQUIRE(fi->domain_attr->mr_key_size == 8);
	REQUIRE(fi->domain_attr->cq_data_size == 8);
	REQUIRE((fi->caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC)) ==
		(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC));
	REQUIRE((fi->caps & (FI_TRIGGER | FI_FENCE)) ==
		(FI_TRIGGER | FI_FENCE));
	/* scalable RDM and MSG endpoints name receive contexts */
	REQUIRE(fi->caps & FI_NAMED_RX_CTX);
	/* FI_SOURCE_ERR changes completions: only given when asked */
	REQUIRE(!(fi->caps & FI_SOURCE_ERR) && (fi->caps & FI_SHARED_AV));
	/* Debian's: 16 contexts each way on RDM and MSG, and 16 in the
	 * domain (OpenSHMEM's automatic STX management divides it among
	 * the node's processes) */
	REQUIRE(fi->ep_attr->tx_ctx_cnt == 16 && fi->ep_attr->rx_ctx_cnt == 16);
	REQUIRE(fi->domain_attr->max_ep_tx_ctx == 16 &&
		fi->domain_attr->max_ep_rx_ctx == 16);
	REQUIRE(fi->domain_attr->tx_ctx_cnt == 16 &&
		fi->domain_attr->rx_ctx_cnt == 16);
	return 0;
}

/* Debian's datagram caps, and scalable datagram endpoints. */
#define DGRAM_CAPS                                                             \
	(FI_MSG | FI_TAGGED | FI_RECV | FI_SEND | FI_MULTI_RECV | FI_TRIGGER | \
	 FI_FENCE | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV |            \
	 FI_SOURCE | FI_NAMED_RX_CTX | FI_DIRECTED_RECV)

static int check_dgram(const struct fi_info *fi)
{
	REQUIRE(fi->ep_attr->type == FI_EP_DGRAM);
	REQUIRE(!strcmp(fi->fabric_attr->prov_name, "sockets"));
	REQUIRE((fi->caps & DGRAM_CAPS) == DGRAM_CAPS);
	REQUIRE(fi->tx_attr->caps & FI_TRIGGER && fi->tx_attr->caps & FI_FENCE);
	REQUIRE(fi->rx_attr->caps & FI_TRIGGER);
	REQUIRE(fi->ep_attr->tx_ctx_cnt == 16 && fi->ep_attr->rx_ctx_cnt == 16);
	REQUIRE(fi->domain_attr->max_ep_tx_ctx == 16 &&
		fi->domain_attr->max_ep_rx_ctx == 16);
	REQUIRE(fi->domain_attr->tx_ctx_cnt == 16 &&
		fi->domain_attr->rx_ctx_cnt == 16);
	return 0;
}

static int case_list(void)
{
	struct fi_info *info;
	int ret;

	REQUIRE(!get(hints_for("sockets"), &info));
	ret = check_entry(info, FI_EP_RDM);
	if (!ret)
		REQUIRE(info->next);
	if (!ret)
		ret = check_entry(info->next, FI_EP_MSG);
	if (!ret)
		REQUIRE(info->next->next && !info->next->next->next);
	if (!ret)
		ret = check_dgram(info->next->next);
	fi_freeinfo(info);
	return ret;
}

static int open_objects(struct fi_info *info, struct fi_info *tcp, bool thread);

static int case_manual(void)
{
	struct fi_info *hints = hints_for("sockets");
	struct fi_info *info;
	int ok;

	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	hints->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	hints->ep_attr->type = FI_EP_RDM;
	/* not an RMA target, which gets a thread all the same */
	hints->caps = FI_MSG | FI_TAGGED;
	REQUIRE(!get(hints, &info));
	ok = info->domain_attr->data_progress == FI_PROGRESS_MANUAL &&
	     info->domain_attr->control_progress == FI_PROGRESS_MANUAL &&
	     !open_objects(info, NULL, false);
	fi_freeinfo(info);
	REQUIRE(ok);
	return 0;
}

static int case_ipv6(void)
{
	struct fi_info *hints = hints_for("sockets");
	struct fi_info *info;
	int ok;

	hints->addr_format = FI_SOCKADDR_IN6;
	REQUIRE(!get(hints, &info));
	ok = info->addr_format == FI_SOCKADDR_IN6 && info->next &&
	     info->next->addr_format == FI_SOCKADDR_IN6;
	fi_freeinfo(info);
	REQUIRE(ok);
	return 0;
}

static int case_absent(void)
{
	struct fi_info *hints, *info = NULL;
	int ok;

	/* tcp's engine offers triggers only under sockets' name */
	hints = hints_for("tcp");
	hints->caps = FI_MSG | FI_TRIGGER;
	REQUIRE(get(hints, &info) == -FI_ENODATA);
	hints = hints_for("sockets");
	hints->caps = FI_MSG | FI_NAMED_RX_CTX;
	REQUIRE(!get(hints, &info));
	ok = info->ep_attr->type == FI_EP_RDM && info->next &&
	     info->next->ep_attr->type == FI_EP_MSG && info->next->next &&
	     info->next->next->ep_attr->type == FI_EP_DGRAM &&
	     !info->next->next->next;
	fi_freeinfo(info);
	REQUIRE(ok);
	/* FI_SOURCE_ERR is a receive cap: asking in rx_attr is asking */
	hints = hints_for("sockets");
	hints->ep_attr->type = FI_EP_RDM;
	hints->rx_attr->caps = FI_MSG | FI_SOURCE_ERR;
	REQUIRE(!get(hints, &info));
	ok = (info->caps & FI_SOURCE_ERR) &&
	     (info->rx_attr->caps & FI_SOURCE_ERR);
	fi_freeinfo(info);
	REQUIRE(ok);
	return 0;
}

static int mr_mode_for(int asked, enum fi_ep_type type)
{
	struct fi_info *hints = hints_for("sockets");
	struct fi_info *info;
	int mode;

	hints->caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
	hints->ep_attr->type = type;
	hints->domain_attr->mr_mode = asked;
	if (get(hints, &info))
		return -1;
	mode = info->domain_attr->mr_mode;
	fi_freeinfo(info);
	return mode;
}

static int case_mrmode(void)
{
	/* fabtests' default hints */
	const int all = FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_VIRT_ADDR |
			FI_MR_ALLOCATED | FI_MR_PROV_KEY;

	REQUIRE(mr_mode_for(all, FI_EP_RDM) == 0);
	REQUIRE(mr_mode_for(all, FI_EP_MSG) == 0);
	REQUIRE(mr_mode_for(all | FI_MR_RAW | FI_MR_RMA_EVENT, FI_EP_RDM) == 0);
	REQUIRE(mr_mode_for(FI_MR_VIRT_ADDR, FI_EP_RDM) == 0);
	REQUIRE(mr_mode_for(FI_MR_PROV_KEY, FI_EP_MSG) == 0);
	REQUIRE(mr_mode_for(FI_MR_BASIC, FI_EP_RDM) == FI_MR_BASIC);
	REQUIRE(mr_mode_for(FI_MR_SCALABLE, FI_EP_RDM) == FI_MR_SCALABLE);
	return 0;
}

static int case_tcp(void)
{
	struct fi_info *info;
	int ok;

	REQUIRE(!get(hints_for("tcp"), &info));
	ok = !strcmp(info->domain_attr->name, "tcp") &&
	     info->domain_attr->data_progress == FI_PROGRESS_MANUAL;
	fi_freeinfo(info);
	REQUIRE(ok);
	return 0;
}

static int case_iface(void)
{
	struct fi_info *info = NULL;
	const struct sockaddr_in *sin;
	int ret, ok;

	setenv("FI_SOCKETS_IFACE", "lo", 1);
	ret = get(hints_for("sockets"), &info);
	unsetenv("FI_SOCKETS_IFACE");
	REQUIRE(!ret);
	sin = info->src_addr;
	ok = info->src_addrlen == sizeof(*sin) &&
	     sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
	fi_freeinfo(info);
	REQUIRE(ok);
	setenv("FI_SOCKETS_IFACE", "no-such-iface0", 1);
	ret = get(hints_for("sockets"), &info);
	unsetenv("FI_SOCKETS_IFACE");
	REQUIRE(ret == -FI_ENODATA);
	return 0;
}

/* The threads of this process (/proc/self/status). */
static int threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	int n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* @tcp: an entry to be refused, or NULL; @thread: whether enabling the
 * endpoint must start a progress thread. */
static int open_objects(struct fi_info *info, struct fi_info *tcp, bool thread)
{
	struct fid_fabric *fabric;
	struct fid_domain *domain, *other;
	struct fid_ep *ep, *sep;
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED};
	struct fid_av *av;
	struct fid_cq *cq;
	int ret = -1, before;

	REQUIRE(!fi_fabric(info->fabric_attr, &fabric, NULL));
	if (fi_domain(fabric, info, &domain, NULL))
		goto out_fabric;
	if (tcp && fi_domain(fabric, tcp, &other, NULL) != -FI_EINVAL)
		goto out_domain;
	if (fi_scalable_ep(domain, info, &sep, NULL))
		goto out_domain;
	if (fi_close(&sep->fid))
		goto out_domain;
	if (fi_av_open(domain, &av_attr, &av, NULL))
		goto out_domain;
	if (fi_cq_open(domain, &cq_attr, &cq, NULL))
		goto out_av;
	if (fi_endpoint(domain, info, &ep, NULL))
		goto out_cq;
	before = threads();
	if (!fi_ep_bind(ep, &av->fid, 0) &&
	    !fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) &&
	    !fi_enable(ep) && (threads() > before) == thread)
		ret = 0;
	fi_close(&ep->fid);
out_cq:
	fi_close(&cq->fid);
out_av:
	fi_close(&av->fid);
out_domain:
	fi_close(&domain->fid);
out_fabric:
	fi_close(&fabric->fid);
	REQUIRE(!ret);
	return 0;
}

static int case_objects(void)
{
	struct fi_info *info, *tcp;
	struct fi_info *hints = hints_for("sockets");
	int ret;

	hints->ep_attr->type = FI_EP_RDM;
	REQUIRE(!get(hints, &info));
	hints = hints_for("tcp");
	hints->ep_attr->type = FI_EP_RDM;
	if (get(hints, &tcp)) {
		fi_freeinfo(info);
		REQUIRE(0);
	}
	ret = open_objects(info, tcp, true);
	fi_freeinfo(info);
	fi_freeinfo(tcp);
	return ret;
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{"list", case_list},	 {"manual", case_manual},   {"ipv6", case_ipv6},
	{"absent", case_absent}, {"mrmode", case_mrmode},   {"tcp", case_tcp},
	{"iface", case_iface},	 {"objects", case_objects},
};

int main(void)
{
	struct fi_info *info;
	size_t i;

	unsetenv("FI_PROVIDER");
	unsetenv("FI_SOCKETS_IFACE");
	if (get(hints_for("sockets"), &info)) {
		printf("SKIP: no sockets provider\n");
		return 77;
	}
	fi_freeinfo(info);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		printf("%s: %s\n", cases[i].fn() ? "FAIL" : "PASS",
		       cases[i].name);
	return failed;
}
