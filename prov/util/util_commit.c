/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_commit.c - the target side of fi_commit and of FI_COMMIT_COMPLETE
 * (persistent memory, fi_commit(3)), shared by every provider: the provider
 * carries the request and the answer; this file checks the named ranges
 * against the domain's MR map and then either makes them durable with
 * libpmem or, on an endpoint opened with FI_COMMIT_MANUAL, hands an
 * FI_COMMIT event to the application through the endpoint's EQ, whose
 * handler's return value (or the queueing of the event) is the answer.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_util.h"

/*
 * Every range is looked up and held before anything is persisted or
 * reported: a commit naming one bad range fails whole, with FI_EACCES.
 */
static int commit_hold(struct util_ep *ep, const struct fi_rma_iov *iov,
		       size_t count, struct ofi_mr_entry **ent, uintptr_t *addr)
{
	struct ofi_mr_map *map = &ep->domain->mr_map;
	size_t i;

	for (i = 0; i < count; i++) {
		addr[i] = (uintptr_t)iov[i].addr;
		if ((uint64_t)addr[i] != iov[i].addr ||
		    ofi_mr_map_get(map, &addr[i], iov[i].len, iov[i].key, 0,
				   &ent[i]))
			goto err;
		if (ent[i]->pmem == OFI_PMEM_NONE) {
			i++;
			goto err;
		}
	}
	return 0;
err:
	while (i)
		ofi_mr_map_put(map, ent[--i]);
	return -FI_EACCES;
}

static void commit_unhold(struct util_ep *ep, struct ofi_mr_entry **ent,
			  size_t count)
{
	while (count)
		ofi_mr_map_put(&ep->domain->mr_map, ent[--count]);
}

/*
 * FI_COMMIT_MANUAL: the application answers. A handler's return value is
 * the answer (negative: that error; -FI_EAGAIN declined, the event is
 * queued); a queued event answers success: the application was told.
 */
static int commit_event(struct util_ep *ep, const struct fi_rma_iov *iov,
			size_t count, uint64_t flags)
{
	struct fi_eq_commit_entry *c;
	ssize_t ret, answer = 0;
	size_t len = sizeof(*c) + count * sizeof(*iov);

	if (!ep->eq)
		return -FI_ENOEQ;
	c = malloc(len);
	if (!c)
		return -FI_ENOMEM;
	c->fid = &(ep->owner ? ep->owner : ep)->ep_fid.fid;
	c->iov = (const struct fi_rma_iov *)(c + 1);
	c->count = count;
	c->flags = flags;
	memcpy(c + 1, iov, count * sizeof(*iov));
	ret = ofi_eq_deliver(ep->eq, FI_COMMIT, c, len, 0, &answer);
	free(c);
	if (ret < 0)
		return (int)ret;
	if (ret == OFI_EQ_QUEUED || answer >= 0)
		return 0;
	return answer > -FI_ERRNO_MAX ? (int)answer : -FI_EIO;
}

int ofi_commit_target(struct util_ep *ep, const struct fi_rma_iov *iov,
		      size_t count, uint64_t flags)
{
	struct ofi_mr_entry *ent[OFI_COMMIT_IOV_MAX];
	uintptr_t addr[OFI_COMMIT_IOV_MAX];
	size_t i;
	int ret;

	if (!count || count > OFI_COMMIT_IOV_MAX || !iov)
		return -FI_EINVAL;
	ret = commit_hold(ep, iov, count, ent, addr);
	if (ret)
		return ret;
	if (ep->info->mode & FI_COMMIT_MANUAL) {
		/* A handler may close the MR: it must not wait on us. */
		commit_unhold(ep, ent, count);
		return commit_event(ep, iov, count, flags);
	}
	for (i = 0; i < count && !ret; i++)
		ret = ofi_mr_entry_persist(ent[i], addr[i], iov[i].len);
	commit_unhold(ep, ent, count);
	return ret;
}

int ofi_commit_complete(const struct ofi_mr_entry *entry, uintptr_t addr,
			size_t len)
{
	if (!entry || entry->pmem == OFI_PMEM_NONE)
		return 0;
	return ofi_mr_entry_persist(entry, addr, len);
}

void ofi_iov_pmem(uint8_t *pmem, void **desc, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++)
		pmem[i] = desc && desc[i] ? ofi_mr_from_desc(desc[i])->pmem
					  : OFI_PMEM_NONE;
}

int ofi_iov_persist(const struct iovec *iov, const uint8_t *pmem, size_t count,
		    size_t off, size_t len)
{
	size_t i, n;
	int ret;

	for (i = 0; i < count && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		n = OFI_MIN(iov[i].iov_len - off, len);
		if (pmem[i] != OFI_PMEM_NONE) {
			ret = ofi_pmem_persist((enum ofi_pmem_kind)pmem[i],
					       (char *)iov[i].iov_base + off,
					       n);
			if (ret)
				return ret;
		}
		len -= n;
		off = 0;
	}
	return 0;
}
