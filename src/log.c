/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * log.c - provider and core logging: fi_log_enabled, fi_log_ready, fi_log,
 * the FI_LOG_LEVEL / FI_LOG_PROV / FI_LOG_SUBSYS / FI_LOG_INTERVAL filters
 * and the "logging" named object through which fi_import_log() replaces
 * the output routines.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

#include <rdma/fi_ext.h>

#include "ofi.h"
#include "ofi_prov.h"

struct fi_provider ofi_core_prov = {
	.version = OFI_API_VERSION,
	.fi_version = OFI_API_VERSION,
	.name = OFI_CORE_PROV_NAME,
};

static const char *const ofi_level_names[] = {
	[FI_LOG_WARN] = "warn",
	[FI_LOG_TRACE] = "trace",
	[FI_LOG_INFO] = "info",
	[FI_LOG_DEBUG] = "debug",
};

static const char *const ofi_subsys_names[] = {
	[FI_LOG_CORE] = "core",	      [FI_LOG_FABRIC] = "fabric",
	[FI_LOG_DOMAIN] = "domain",   [FI_LOG_EP_CTRL] = "ep_ctrl",
	[FI_LOG_EP_DATA] = "ep_data", [FI_LOG_AV] = "av",
	[FI_LOG_CQ] = "cq",	      [FI_LOG_EQ] = "eq",
	[FI_LOG_MR] = "mr",	      [FI_LOG_CNTR] = "cntr",
};

/*
 * Filters are read at init and replaced as a whole by ofi_log_init(); the
 * hot path only reads plain integers, the provider filter is looked at
 * only for messages that pass the level and subsystem checks.
 */
/* Without FI_LOG_LEVEL nothing is logged, as by libfabric 1.17 (whose
 * help text says "default: warn"): its users' programs print nothing of
 * ours unless asked to. */
#define OFI_LOG_OFF (-1)
static int ofi_log_level = OFI_LOG_OFF;
static uint32_t ofi_log_subsys_mask = (1U << FI_LOG_SUBSYS_MAX) - 1;
static uint64_t ofi_log_interval_ms = 2000;
static struct ofi_name_filter ofi_log_prov_filter;
static pthread_mutex_t ofi_log_lock = PTHREAD_MUTEX_INITIALIZER;

static int ofi_default_enabled(const struct fi_provider *prov,
			       enum fi_log_level level,
			       enum fi_log_subsys subsys, uint64_t flags);
static int ofi_default_ready(const struct fi_provider *prov,
			     enum fi_log_level level, enum fi_log_subsys subsys,
			     uint64_t flags, uint64_t *showtime);
static void ofi_default_log(const struct fi_provider *prov,
			    enum fi_log_level level, enum fi_log_subsys subsys,
			    const char *func, int line, const char *msg);

static struct fi_ops_log ofi_default_log_ops = {
	.size = sizeof(struct fi_ops_log),
	.enabled = ofi_default_enabled,
	.ready = ofi_default_ready,
	.log = ofi_default_log,
};

static struct fi_ops_log *ofi_log_ops = &ofi_default_log_ops;

static int ofi_parse_level(const char *str)
{
	size_t i;

	for (i = 0; i < OFI_ARRAY_SIZE(ofi_level_names); i++) {
		if (!strcasecmp(str, ofi_level_names[i]))
			return (int)i;
	}
	/* An unknown level must not silence warnings. */
	return FI_LOG_WARN;
}

static uint32_t ofi_parse_subsys(const char *spec)
{
	struct ofi_name_filter filter;
	uint32_t mask = 0;
	size_t i;

	if (ofi_name_filter_init(&filter, spec))
		return (1U << FI_LOG_SUBSYS_MAX) - 1;
	for (i = 0; i < OFI_ARRAY_SIZE(ofi_subsys_names); i++) {
		if (ofi_name_filter_pass(&filter, ofi_subsys_names[i]))
			mask |= 1U << i;
	}
	ofi_name_filter_free(&filter);
	return mask;
}

/*
 * Reads the filters from the environment. Called at library init; tests
 * call it again after changing the environment.
 */
void ofi_log_init(void)
{
	struct ofi_name_filter prov_filter = {0};
	char *str = NULL;
	int interval;

	ofi_log_level = OFI_LOG_OFF;
	if (!fi_param_get_str(NULL, "log_level", &str))
		ofi_log_level = ofi_parse_level(str);

	ofi_log_subsys_mask = (1U << FI_LOG_SUBSYS_MAX) - 1;
	str = NULL;
	if (!fi_param_get_str(NULL, "log_subsys", &str))
		ofi_log_subsys_mask = ofi_parse_subsys(str);

	ofi_log_interval_ms = 2000;
	if (!fi_param_get_int(NULL, "log_interval", &interval) && interval >= 0)
		ofi_log_interval_ms = (uint64_t)interval;

	str = NULL;
	fi_param_get_str(NULL, "log_prov", &str);
	ofi_name_filter_init(&prov_filter, str);
	pthread_mutex_lock(&ofi_log_lock);
	ofi_name_filter_free(&ofi_log_prov_filter);
	ofi_log_prov_filter = prov_filter;
	pthread_mutex_unlock(&ofi_log_lock);
}

void ofi_log_fini(void)
{
	pthread_mutex_lock(&ofi_log_lock);
	ofi_name_filter_free(&ofi_log_prov_filter);
	ofi_log_ops = &ofi_default_log_ops;
	pthread_mutex_unlock(&ofi_log_lock);
}

static bool ofi_prov_filtered(const struct fi_provider *prov)
{
	bool pass;

	if (!ofi_log_prov_filter.names)
		return false;
	pthread_mutex_lock(&ofi_log_lock);
	pass = ofi_name_filter_pass(&ofi_log_prov_filter,
				    prov && prov->name ? prov->name : "");
	pthread_mutex_unlock(&ofi_log_lock);
	return !pass;
}

static int ofi_default_enabled(const struct fi_provider *prov,
			       enum fi_log_level level,
			       enum fi_log_subsys subsys, uint64_t flags)
{
	if ((int)level > ofi_log_level || (unsigned)subsys >= FI_LOG_SUBSYS_MAX)
		return 0;
	if (!(ofi_log_subsys_mask & (1U << subsys)))
		return 0;
	return !(flags & FI_LOG_PROV_FILTERED);
}

static uint64_t ofi_log_flags(const struct fi_provider *prov,
			      enum fi_log_level level,
			      enum fi_log_subsys subsys)
{
	/* Skip the name lookup for messages the level rules out anyway. */
	if (ofi_log_ops == &ofi_default_log_ops && (int)level > ofi_log_level)
		return 0;
	return ofi_prov_filtered(prov) ? FI_LOG_PROV_FILTERED : 0;
}

int fi_log_enabled(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys)
{
	struct fi_ops_log *ops = ofi_log_ops;

	return ops->enabled(prov, level, subsys,
			    ofi_log_flags(prov, level, subsys));
}

static int ofi_default_ready(const struct fi_provider *prov,
			     enum fi_log_level level, enum fi_log_subsys subsys,
			     uint64_t flags, uint64_t *showtime)
{
	uint64_t now;

	if (!ofi_default_enabled(prov, level, subsys, flags))
		return 0;
	now = ofi_gettime_ms();
	if (showtime && now < *showtime)
		return 0;
	if (showtime)
		*showtime = now + ofi_log_interval_ms;
	return 1;
}

int fi_log_ready(const struct fi_provider *prov, enum fi_log_level level,
		 enum fi_log_subsys subsys, uint64_t *showtime)
{
	struct fi_ops_log *ops = ofi_log_ops;

	return ops->ready(prov, level, subsys,
			  ofi_log_flags(prov, level, subsys), showtime);
}

static const char *ofi_name_of(const char *const *names, size_t n, unsigned idx)
{
	return idx < n && names[idx] ? names[idx] : "unknown";
}

/* libfabric:PID:SECONDS::PROV:SUBSYS:FUNC():LINE<LEVEL> MESSAGE */
static void ofi_default_log(const struct fi_provider *prov,
			    enum fi_log_level level, enum fi_log_subsys subsys,
			    const char *func, int line, const char *msg)
{
	size_t len = strlen(msg);

	fprintf(stderr, "libfabric:%d:%ld::%s:%s:%s():%d<%s> %s%s",
		(int)getpid(), (long)time(NULL),
		prov && prov->name ? prov->name : "unknown",
		ofi_name_of(ofi_subsys_names, OFI_ARRAY_SIZE(ofi_subsys_names),
			    (unsigned)subsys),
		func ? func : "", line,
		ofi_name_of(ofi_level_names, OFI_ARRAY_SIZE(ofi_level_names),
			    (unsigned)level),
		msg, len && msg[len - 1] == '\n' ? "" : "\n");
}

void fi_log(const struct fi_provider *prov, enum fi_log_level level,
	    enum fi_log_subsys subsys, const char *func, int line,
	    const char *fmt, ...)
{
	struct fi_ops_log *ops = ofi_log_ops;
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ops->log(prov, level, subsys, func, line, buf);
}

/*
 * The "logging" named object: fi_import_log() opens it, binds the
 * application's fid_logging to it (which installs its ops) and closes it.
 */
struct ofi_log_obj {
	struct fid fid;
};

static bool ofi_log_obj_open;

static int ofi_log_obj_close(struct fid *fid)
{
	pthread_mutex_lock(&ofi_log_lock);
	ofi_log_obj_open = false;
	pthread_mutex_unlock(&ofi_log_lock);
	free(container_of(fid, struct ofi_log_obj, fid));
	return 0;
}

static int ofi_log_obj_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct fid_logging *user = (struct fid_logging *)bfid;
	struct fi_ops_log *ops;

	if (!bfid || bfid->fclass != FI_CLASS_LOG || flags)
		return -FI_EINVAL;
	ops = user->ops;
	if (!ops || ops->size < sizeof(struct fi_ops_log) || !ops->enabled ||
	    !ops->ready || !ops->log)
		return -FI_EINVAL;
	ofi_log_ops = ops;
	return 0;
}

static int ofi_log_obj_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

static int ofi_log_obj_ops_open(struct fid *fid, const char *name,
				uint64_t flags, void **ops, void *context)
{
	return -FI_ENOSYS;
}

static int ofi_log_obj_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

static int ofi_log_obj_ops_set(struct fid *fid, const char *name,
			       uint64_t flags, void *ops, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops ofi_log_obj_ops = {
	.size = sizeof(struct fi_ops),
	.close = ofi_log_obj_close,
	.bind = ofi_log_obj_bind,
	.control = ofi_log_obj_control,
	.ops_open = ofi_log_obj_ops_open,
	.tostr = ofi_log_obj_tostr,
	.ops_set = ofi_log_obj_ops_set,
};

int ofi_open_log(uint32_t version, void *attr, size_t attr_len, uint64_t flags,
		 struct fid **fid, void *context)
{
	struct ofi_log_obj *obj;

	if (attr || attr_len || flags)
		return -FI_EINVAL;
	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return -FI_ENOMEM;
	pthread_mutex_lock(&ofi_log_lock);
	if (ofi_log_obj_open) {
		pthread_mutex_unlock(&ofi_log_lock);
		free(obj);
		return -FI_EBUSY;
	}
	ofi_log_obj_open = true;
	pthread_mutex_unlock(&ofi_log_lock);
	obj->fid.fclass = FI_CLASS_LOG;
	obj->fid.context = context;
	obj->fid.ops = &ofi_log_obj_ops;
	*fid = &obj->fid;
	return 0;
}
