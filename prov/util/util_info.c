/*
 * util_info.c - helpers for a provider's getinfo: the default source
 * address every returned fi_info carries when the caller named none.
 *
 * fi_getinfo(3) answers with the address "that corresponds to the
 * indicated fabric, domain, node, and/or service": with neither node nor
 * FI_SOURCE that is the address an endpoint opened from the entry would
 * start from. Each provider knows what that is; this only walks the list.
 */
#include <stdlib.h>

#include "ofi_util.h"

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
