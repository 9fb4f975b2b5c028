/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * param.c - configuration parameters: fi_param_define / fi_param_get and
 * the fi_getparams listing behind `fi_info -e`. A parameter NAME of
 * provider PROV is read from the environment variable FI_PROV_NAME (core
 * parameters from FI_NAME), upper-cased, every time it is asked for, so a
 * setenv() between calls is seen.
 *
 * Every integer parameter of ours carries its range (ofi_param_define_range):
 * the one reader refuses a value outside it with a warning, so the caller
 * keeps its default, and the listing shows the range in the help text.
 */
#define _GNU_SOURCE /* vasprintf */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ofi.h"
#include "ofi_coll.h"
#include "ofi_prov.h"

struct ofi_param {
	struct dlist_entry entry;
	char *env_name;
	enum fi_param_type type;
	int64_t min; /* INT and SIZE_T values outside [min, max] are refused */
	uint64_t max;
	char *help;
};

static struct dlist_entry ofi_param_list = DLIST_HEAD_INIT(ofi_param_list);
static pthread_mutex_t ofi_param_lock = PTHREAD_MUTEX_INITIALIZER;

static bool ofi_is_core(const struct fi_provider *prov)
{
	return !prov || prov == &ofi_core_prov;
}

static void ofi_env_append(char *dst, const char *src)
{
	dst += strlen(dst);
	for (; *src; src++)
		*dst++ = isalnum((unsigned char)*src)
				 ? (char)toupper((unsigned char)*src)
				 : '_';
	*dst = '\0';
}

/* "FI_" [PROV "_"] NAME, upper-cased; NULL when out of memory. */
static char *ofi_param_env_name(const struct fi_provider *prov,
				const char *name)
{
	const char *pname = ofi_is_core(prov) ? NULL : prov->name;
	size_t len = 4 + strlen(name) + (pname ? strlen(pname) + 1 : 0);
	char *env = malloc(len);

	if (!env)
		return NULL;
	strcpy(env, "FI_");
	if (pname) {
		ofi_env_append(env, pname);
		strcat(env, "_");
	}
	ofi_env_append(env, name);
	return env;
}

static struct ofi_param *ofi_param_find(const char *env_name)
{
	struct dlist_entry *item;
	struct ofi_param *param;

	dlist_foreach(&ofi_param_list, item) {
		param = container_of(item, struct ofi_param, entry);
		if (!strcmp(param->env_name, env_name))
			return param;
	}
	return NULL;
}

/* "[PROV: ]TEXT[ (range: MIN..MAX)]", the range when @ranged. */
static char *ofi_param_help(const struct fi_provider *prov, bool ranged,
			    const struct ofi_param *param, const char *fmt,
			    va_list ap)
{
	const char *pname = ofi_is_core(prov) ? NULL : prov->name;
	char *text, *help;
	int ret;

	ret = vasprintf(&text, fmt, ap);
	if (ret < 0)
		return NULL;
	if (ranged)
		ret = asprintf(&help, "%s%s%s (range: %lld..%llu)",
			       pname ? pname : "", pname ? ": " : "", text,
			       (long long)param->min,
			       (unsigned long long)param->max);
	else if (pname)
		ret = asprintf(&help, "%s: %s", pname, text);
	else
		return text;
	free(text);
	return ret < 0 ? NULL : help;
}

/* The range a parameter of @type has when none is given. */
static void ofi_param_type_range(enum fi_param_type type, int64_t *min,
				 uint64_t *max)
{
	*min = type == FI_PARAM_INT ? INT32_MIN : 0;
	*max = type == FI_PARAM_INT ? INT32_MAX : SIZE_MAX;
}

static int ofi_param_define_v(const struct fi_provider *provider,
			      const char *param_name, enum fi_param_type type,
			      bool ranged, int64_t min, uint64_t max,
			      const char *help_string_fmt, va_list ap)
{
	struct ofi_param *param;
	int64_t tmin;
	uint64_t tmax;
	int ret = 0;

	if (!param_name || !*param_name || !help_string_fmt ||
	    !*help_string_fmt || type > FI_PARAM_SIZE_T)
		return -FI_EINVAL;
	if (!ofi_is_core(provider) && !provider->name)
		return -FI_EINVAL;
	ofi_param_type_range(type, &tmin, &tmax);
	if (!ranged) {
		min = tmin;
		max = tmax;
	} else if ((type != FI_PARAM_INT && type != FI_PARAM_SIZE_T) ||
		   min < tmin || max > tmax ||
		   (min >= 0 && (uint64_t)min > max)) {
		return -FI_EINVAL;
	}

	param = calloc(1, sizeof(*param));
	if (!param)
		return -FI_ENOMEM;
	param->type = type;
	param->min = min;
	param->max = max;
	param->env_name = ofi_param_env_name(provider, param_name);
	param->help =
		ofi_param_help(provider, ranged, param, help_string_fmt, ap);
	if (!param->env_name || !param->help) {
		ret = -FI_ENOMEM;
		goto err;
	}

	pthread_mutex_lock(&ofi_param_lock);
	/* A provider that is initialised twice defines its params twice. */
	if (ofi_param_find(param->env_name)) {
		pthread_mutex_unlock(&ofi_param_lock);
		goto err;
	}
	dlist_insert_tail(&param->entry, &ofi_param_list);
	pthread_mutex_unlock(&ofi_param_lock);
	FI_INFO(&ofi_core_prov, FI_LOG_CORE, "defined %s\n", param->env_name);
	return 0;
err:
	free(param->env_name);
	free(param->help);
	free(param);
	return ret;
}

int fi_param_define(const struct fi_provider *provider, const char *param_name,
		    enum fi_param_type type, const char *help_string_fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, help_string_fmt);
	ret = ofi_param_define_v(provider, param_name, type, false, 0, 0,
				 help_string_fmt, ap);
	va_end(ap);
	return ret;
}

int ofi_param_define_range(const struct fi_provider *provider,
			   const char *param_name, enum fi_param_type type,
			   int64_t min, uint64_t max,
			   const char *help_string_fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, help_string_fmt);
	ret = ofi_param_define_v(provider, param_name, type, true, min, max,
				 help_string_fmt, ap);
	va_end(ap);
	return ret;
}

static const char *ofi_skip_space(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

static bool ofi_only_space(const char *s)
{
	return !*ofi_skip_space(s);
}

/* -FI_EINVAL: not a number; -FI_EOVERFLOW: a number outside [min, max]. */
static int ofi_parse_int(const char *str, int64_t min, uint64_t max, int *value)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(str, &end, 10);
	if (end == str || !ofi_only_space(end))
		return -FI_EINVAL;
	if (errno || v < min || (v > 0 && (unsigned long long)v > max))
		return -FI_EOVERFLOW;
	*value = (int)v;
	return 0;
}

static int ofi_parse_size(const char *str, int64_t min, uint64_t max,
			  size_t *value)
{
	unsigned long long v;
	char *end;

	str = ofi_skip_space(str);
	if (*str == '-') /* strtoull would negate it */
		return isdigit((unsigned char)str[1]) ? -FI_EOVERFLOW
						      : -FI_EINVAL;
	errno = 0;
	v = strtoull(str, &end, 10);
	if (end == str || !ofi_only_space(end))
		return -FI_EINVAL;
	if (errno || v > max || (min > 0 && v < (unsigned long long)min))
		return -FI_EOVERFLOW;
	*value = (size_t)v;
	return 0;
}

static int ofi_parse_bool(const char *str, int *value)
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};
	size_t i;

	str = ofi_skip_space(str);
	for (i = 0; i < OFI_ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(str, yes[i])) {
			*value = 1;
			return 0;
		}
		if (!strcasecmp(str, no[i])) {
			*value = 0;
			return 0;
		}
	}
	return -FI_EINVAL;
}

int fi_param_get(struct fi_provider *provider, const char *param_name,
		 void *value)
{
	struct ofi_param *param;
	enum fi_param_type type;
	int64_t min = 0;
	uint64_t max = 0;
	const char *str;
	char *env;
	int ret;

	if (!param_name || !value)
		return -FI_EINVAL;
	if (!ofi_is_core(provider) && !provider->name)
		return -FI_EINVAL;
	ofi_init();

	env = ofi_param_env_name(provider, param_name);
	if (!env)
		return -FI_ENOMEM;
	pthread_mutex_lock(&ofi_param_lock);
	param = ofi_param_find(env);
	ret = param ? 0 : -FI_ENOENT;
	if (param) {
		type = param->type;
		min = param->min;
		max = param->max;
	}
	pthread_mutex_unlock(&ofi_param_lock);
	if (ret) {
		FI_INFO(&ofi_core_prov, FI_LOG_CORE, "%s was never defined\n",
			env);
		goto out;
	}

	str = getenv(env);
	if (!str || !*str) {
		FI_INFO(&ofi_core_prov, FI_LOG_CORE, "%s is not set\n", env);
		ret = -FI_ENODATA;
		goto out;
	}

	switch (type) {
	case FI_PARAM_STRING:
		*(const char **)value = str;
		break;
	case FI_PARAM_INT:
		ret = ofi_parse_int(str, min, max, value);
		break;
	case FI_PARAM_BOOL:
		ret = ofi_parse_bool(str, value);
		break;
	case FI_PARAM_SIZE_T:
		ret = ofi_parse_size(str, min, max, value);
		break;
	default:
		ret = -FI_EINVAL;
		break;
	}
	if (ret == -FI_EOVERFLOW) {
		FI_WARN(&ofi_core_prov, FI_LOG_CORE,
			"%s=%s is outside %lld..%llu: the default is used\n",
			env, str, (long long)min, (unsigned long long)max);
		ret = -FI_EINVAL;
	} else if (ret)
		FI_WARN(&ofi_core_prov, FI_LOG_CORE,
			"%s: cannot use the value '%s': the default is used\n",
			env, str);
	else
		FI_INFO(&ofi_core_prov, FI_LOG_CORE, "%s=%s\n", env, str);
out:
	free(env);
	return ret;
}

static void ofi_free_param_array(struct fi_param *params, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		free((char *)params[i].name);
		free((char *)params[i].help_string);
		free((char *)params[i].value);
	}
	free(params);
}

void fi_freeparams(struct fi_param *params)
{
	int n = 0;

	if (!params)
		return;
	while (params[n].name)
		n++;
	ofi_free_param_array(params, n);
}

/* The array ends with an entry whose name is NULL. */
int fi_getparams(struct fi_param **params, int *count)
{
	struct dlist_entry *item;
	struct ofi_param *param;
	struct fi_param *out;
	const char *value;
	int n = 0, i = 0;

	if (!params || !count)
		return -FI_EINVAL;
	ofi_init();

	pthread_mutex_lock(&ofi_param_lock);
	dlist_foreach(&ofi_param_list, item)
		n++;
	out = calloc((size_t)n + 1, sizeof(*out));
	if (!out)
		goto nomem;
	dlist_foreach(&ofi_param_list, item) {
		param = container_of(item, struct ofi_param, entry);
		value = getenv(param->env_name);
		out[i].type = param->type;
		out[i].name = strdup(param->env_name);
		out[i].help_string = strdup(param->help);
		out[i].value = value ? strdup(value) : NULL;
		i++;
		if (!out[i - 1].name || !out[i - 1].help_string ||
		    (value && !out[i - 1].value))
			goto nomem;
	}
	pthread_mutex_unlock(&ofi_param_lock);
	*params = out;
	*count = n;
	return 0;
nomem:
	pthread_mutex_unlock(&ofi_param_lock);
	if (out)
		ofi_free_param_array(out, i);
	return -FI_ENOMEM;
}

/* Help texts follow the wording of our man pages, not upstream's. */
void ofi_param_init(void)
{
	fi_param_define(NULL, "provider", FI_PARAM_STRING,
			"Comma-separated list of providers to use, or to skip "
			"when the list starts with '^' (default: all)");
	fi_param_define(NULL, "provider_path", FI_PARAM_STRING,
			"Colon-separated directories searched for loadable "
			"providers (lib<name>-fi.so); a leading '@' is "
			"accepted and ignored (default: %s)",
			PROVDLDIR);
	fi_param_define(NULL, "log_level", FI_PARAM_STRING,
			"Most verbose messages logged: warn, trace, info or "
			"debug; any other value: warn (default: none, nothing "
			"is logged)");
	fi_param_define(NULL, "log_prov", FI_PARAM_STRING,
			"Comma-separated providers whose messages are logged, "
			"or '^' followed by providers to silence (default: "
			"all)");
	fi_param_define(NULL, "log_subsys", FI_PARAM_STRING,
			"Comma-separated subsystems to log (core, fabric, "
			"domain, ep_ctrl, ep_data, av, cq, eq, mr, cntr), or "
			"'^' followed by subsystems to silence (default: all)");
	ofi_param_define_range(
		NULL, "log_interval", FI_PARAM_INT, 0, 3600000,
		"Milliseconds between two messages of a rate-limited "
		"log site (default: 2000)");
	ofi_param_define_range(
		NULL, "progress_spin", FI_PARAM_INT, -1, 1000000,
		"Microseconds a progress call that finds nothing to "
		"do keeps polling before it yields the CPU, then "
		"sleeps as idleness grows; -1: never yield "
		"(default: 20)");
	fi_param_define(NULL, "progress_migrate", FI_PARAM_BOOL,
			"Whether a thread the application did not pin, whose "
			"waits keep ending only after it handed its CPU to "
			"its peer, leaves that CPU for a moment (its "
			"affinity without it, then back) so that the "
			"scheduler parts the pair (default: 1)");
	fi_param_define(NULL, "progress_target", FI_PARAM_BOOL,
			"Whether, under FI_PROGRESS_MANUAL, an endpoint that "
			"can be the target of RMA or atomics runs a progress "
			"thread, so that it is served while its application "
			"makes no call (default: 1)");
	ofi_param_define_range(
		NULL, "coll_fanout", FI_PARAM_SIZE_T, 1, OFI_COLL_FANOUT_MAX,
		"Children of each member in the collective engine's "
		"broadcast tree (default: 2)");
	ofi_param_define_range(
		NULL, "coll_slot_size", FI_PARAM_SIZE_T, 64,
		OFI_COLL_SLOT_SIZE_MAX,
		"Bytes of a collective group's per-peer slot: the "
		"largest chunk one RMA write moves, a multiple of 64 "
		"(default: 65536, 32768 in groups of more than 32 "
		"members)");
	ofi_param_define_range(
		NULL, "coll_probe_timeout", FI_PARAM_SIZE_T, 0, 86400000,
		"Milliseconds a collective member that others wait "
		"on may leave their liveness probe unanswered before "
		"the operation fails with FI_ETIMEDOUT, and a member "
		"not joined yet may stay unreachable before the join "
		"fails with FI_EIO; 0 waits for ever (default: 4000)");
	ofi_param_define_range(
		NULL, "coll_direct_min", FI_PARAM_SIZE_T, 0, SIZE_MAX,
		"Bytes from which a collective's transfer between two "
		"members skips the slots: the receiver registers its "
		"destination and the sender writes there directly; "
		"the same on every member, 0 never (default: 262144)");
	fi_param_define(NULL, "coll_shared", FI_PARAM_BOOL,
			"Whether a collective group's memory is shared with "
			"peers on the same host where the provider offers it "
			"(shm): small transfers become stores into the "
			"peer's memory instead of RMA writes (default: 1)");
	fi_param_define(NULL, "coll_fold", FI_PARAM_BOOL,
			"Whether collective members pinned to one CPU fold "
			"into one for barriers and small allreduces where "
			"every write is a socket's (tcp, sockets): the first "
			"gathers the others and answers them (default: 1)");
}

void ofi_param_fini(void)
{
	struct dlist_entry *item;
	struct ofi_param *param;

	pthread_mutex_lock(&ofi_param_lock);
	while ((item = dlist_pop_front(&ofi_param_list))) {
		param = container_of(item, struct ofi_param, entry);
		free(param->env_name);
		free(param->help);
		free(param);
	}
	pthread_mutex_unlock(&ofi_param_lock);
}
