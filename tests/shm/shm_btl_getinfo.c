/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * shm_btl_getinfo.c - the fi_getinfo request Open MPI 4.1's btl/ofi makes
 * (one-sided support: FI_RMA | FI_ATOMIC on FI_EP_RDM, mr_mode
 * FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, mode FI_CONTEXT |
 * FI_CONTEXT2, iov limits 1, FI_DELIVERY_COMPLETE as default tx op flag,
 * progress left unspecified, API 1.5) must return shm, with the requested
 * mr_mode bits echoed, no FI_REMOTE_COMM, manual data progress (shm's
 * default), and a domain btl/ofi would keep (its validate step takes
 * mr_mode made only of those three bits). The same request asking
 * automatic data progress finds shm with FI_PROGRESS_AUTO echoed (a
 * progress thread per endpoint, fi_shm(7)). Then the returned info is
 * usable: fabric, domain, endpoint and a registration with a provider key
 * open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define BTL_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL line %d: ", __LINE__);           \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			failures++;                                            \
		}                                                              \
	} while (0)

static struct fi_info *btl_hints(enum fi_progress progress)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(2);
	h->caps = FI_RMA | FI_ATOMIC;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->addr_format = FI_FORMAT_UNSPEC;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = BTL_MR_MODE;
	h->domain_attr->control_progress = progress;
	h->domain_attr->data_progress = progress;
	h->tx_attr->iov_limit = 1;
	h->rx_attr->iov_limit = 1;
	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	return h;
}

static struct fi_info *find_shm(struct fi_info *list)
{
	for (; list; list = list->next) {
		if (list->fabric_attr && list->fabric_attr->prov_name &&
		    !strcmp(list->fabric_attr->prov_name, "shm"))
			return list;
	}
	return NULL;
}

static void check_usable(struct fi_info *fi)
{
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_ep *ep;
	struct fid_mr *mr;
	static char buf[4096];
	int ret;

	ret = fi_fabric(fi->fabric_attr, &fab, NULL);
	CHECK(!ret, "fi_fabric: %d", ret);
	if (ret)
		return;
	ret = fi_domain(fab, fi, &dom, NULL);
	CHECK(!ret, "fi_domain: %d", ret);
	if (!ret) {
		ret = fi_mr_reg(dom, buf, sizeof(buf),
				FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
				NULL);
		CHECK(!ret, "fi_mr_reg: %d", ret);
		if (!ret)
			fi_close(&mr->fid);
		ret = fi_endpoint(dom, fi, &ep, NULL);
		CHECK(!ret, "fi_endpoint: %d", ret);
		if (!ret)
			fi_close(&ep->fid);
		fi_close(&dom->fid);
	}
	fi_close(&fab->fid);
}

int main(void)
{
	struct fi_info *hints = btl_hints(FI_PROGRESS_UNSPEC), *list = NULL;
	struct fi_info *fi;
	int ret, mr;

	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &list);
	CHECK(!ret, "fi_getinfo: %s", fi_strerror(-ret));
	fi = find_shm(list);
	CHECK(fi, "shm not in the btl/ofi answer");
	if (fi) {
		mr = fi->domain_attr->mr_mode;
		CHECK(mr == BTL_MR_MODE, "mr_mode %#x, asked %#x", mr,
		      BTL_MR_MODE);
		CHECK((fi->caps & (FI_RMA | FI_ATOMIC)) == (FI_RMA | FI_ATOMIC),
		      "caps %#llx", (unsigned long long)fi->caps);
		CHECK(!(fi->caps & FI_REMOTE_COMM), "claims FI_REMOTE_COMM");
		CHECK(fi->ep_attr->type == FI_EP_RDM, "ep type");
		CHECK(fi->domain_attr->data_progress == FI_PROGRESS_MANUAL,
		      "data progress %d by default, want manual",
		      fi->domain_attr->data_progress);
		CHECK(!(fi->mode & ~(uint64_t)(FI_CONTEXT | FI_CONTEXT2)),
		      "needs mode %#llx", (unsigned long long)fi->mode);
		CHECK(fi->tx_attr->op_flags & FI_DELIVERY_COMPLETE,
		      "tx op_flags %#llx",
		      (unsigned long long)fi->tx_attr->op_flags);
		check_usable(fi);
	}
	fi_freeinfo(list);
	fi_freeinfo(hints);

	/* btl_ofi_progress_mode=auto: shm runs a thread when asked. */
	hints = btl_hints(FI_PROGRESS_AUTO);
	list = NULL;
	fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, hints, &list);
	fi = find_shm(list);
	CHECK(fi, "shm does not offer automatic data progress when asked");
	if (fi) {
		CHECK(fi->domain_attr->data_progress == FI_PROGRESS_AUTO,
		      "data progress %d, asked auto",
		      fi->domain_attr->data_progress);
		check_usable(fi);
	}
	fi_freeinfo(list);
	fi_freeinfo(hints);

	printf("shm_btl_getinfo: %s\n", failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
