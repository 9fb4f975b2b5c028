/*
 * util_info.c - helpers for a provider's getinfo: the default source
 * address every returned fi_info carries when the caller named none, and
 * the modes echoed from the hints.
 *
 * fi_getinfo(3) answers with the address "that corresponds to the
 * indicated fabric, domain, node, and/or service": with neither node nor
 * FI_SOURCE that is the address an endpoint opened from the entry would
 * start from. Each provider knows what that is; this only walks the list.
 */
#include <stdlib.h>

#include "ofi_coll.h"

int ofi_info_default_src(struct fi_info *list, ofi_src_addr_fn make, void *arg)
{
	struct fi_info *fi;
	void *addr;
	size_t len;
	int ret;

	if (!make)
		return -FI_EINVAL;
	for (fi = list; fi; fi = fi->next) {
		if (fi->src_addr)
			continue;
		addr = NULL;
		len = 0;
		ret = make(fi, &addr, &len, arg);
		if (ret)
			return ret;
		if (!addr || !len) {
			free(addr);
			return -FI_EINVAL;
		}
		fi->src_addr = addr;
		fi->src_addrlen = len;
	}
	return 0;
}

/*
 * The core matches a candidate's mr_mode as bits the provider requires and
 * returns them. A provider that requires none (@honoured: the bits it can
 * work with when asked) echoes those asked for, or all of them for the
 * old FI_MR_BASIC. FI_COMMIT_MANUAL (fi_commit(3)) is echoed when the
 * provider offers persistent memory (@pmem).
 */
void ofi_info_hint_modes(uint32_t version, const struct fi_info *hints,
			 struct fi_info *fi, int honoured, bool pmem)
{
	int mr = hints->domain_attr ? hints->domain_attr->mr_mode : 0;

	if (FI_VERSION_GE(version, FI_VERSION(1, 5)) && mr != FI_MR_BASIC &&
	    mr != FI_MR_SCALABLE)
		fi->domain_attr->mr_mode = mr & honoured;
	else if (mr == FI_MR_BASIC)
		fi->domain_attr->mr_mode = honoured;
	if (pmem && (hints->mode & FI_COMMIT_MANUAL))
		fi->mode |= FI_COMMIT_MANUAL;
	ofi_coll_info(hints, fi);
}
