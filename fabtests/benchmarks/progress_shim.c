/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * progress_shim: an LD_PRELOAD library for contrib/bench.sh -P. It wraps
 * fi_getinfo so that an unmodified program (fi_pingpong, rdm_bw) asks for
 * the progress mode named by BENCH_PROGRESS (auto or manual) for data and
 * control: two providers whose defaults differ (sockets: automatic, tcp:
 * manual) are then compared in the same mode. Without BENCH_PROGRESS, or
 * without hints, it passes the call through unchanged.
 *
 *   cc -shared -fPIC -o progress_shim.so progress_shim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const struct fi_info *, struct fi_info **);

int fi_getinfo(uint32_t version, const char *node, const char *service,
	       uint64_t flags, const struct fi_info *hints,
	       struct fi_info **info)
{
	static getinfo_fn real;
	const char *mode = getenv("BENCH_PROGRESS");
	enum fi_progress p;
	struct fi_info *h;
	int ret;

	if (!real)
		real = (getinfo_fn)dlsym(RTLD_NEXT, "fi_getinfo");
	if (!real)
		return -FI_ENOSYS;
	if (!mode || !hints || !hints->domain_attr)
		return real(version, node, service, flags, hints, info);
	p = strcmp(mode, "auto") ? FI_PROGRESS_MANUAL : FI_PROGRESS_AUTO;
	h = fi_dupinfo(hints);
	if (!h)
		return -FI_ENOMEM;
	h->domain_attr->data_progress = p;
	h->domain_attr->control_progress = p;
	ret = real(version, node, service, flags, h, info);
	fi_freeinfo(h);
	return ret;
}
