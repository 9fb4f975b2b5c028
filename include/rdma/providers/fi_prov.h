/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * providers/fi_prov.h - the provider-facing side of the core: struct
 * fi_provider (what a provider hands to the core), the entry point a
 * dlopen'ed provider exports, and the fi_param configuration calls.
 */
#ifndef FI_PROV_H
#define FI_PROV_H

#include <rdma/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Loadable providers are named lib<name>-fi.so; the core builds the file
 * name from these when it scans FI_PROVIDER_PATH.
 */
#define FI_LIB_EXTENSION "fi"
#define FI_LIB_SUFFIX	 FI_LIB_EXTENSION ".so"

/*
 * Declarator of the one symbol a loadable provider exports; forced to
 * default visibility so -fvisibility=hidden builds still expose it.
 */
#define FI_EXT_INI                                                             \
	__attribute__((visibility("default"),                                  \
		       EXTERNALLY_VISIBLE)) struct fi_provider *               \
	fi_prov_ini(void)

struct fi_provider {
	uint32_t version;    /* provider's own version, FI_VERSION() form */
	uint32_t fi_version; /* API level the provider was written against */
	struct fi_context context; /* reserved for the core */
	const char *name;
	int (*getinfo)(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info);
	int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context);
	void (*cleanup)(void);
};

/* Registers FI_<PROV>_<NAME> so fi_info -e can list it with its help. */
int fi_param_define(const struct fi_provider *provider, const char *param_name,
		    enum fi_param_type type, const char *help_string_fmt, ...);

/*
 * Reads a defined parameter from the environment into *value, whose type
 * follows the fi_param_type given at definition; -FI_ENODATA when unset.
 */
int fi_param_get(struct fi_provider *provider, const char *param_name,
		 void *value);

/* Typed front ends: they only let the compiler check the value pointer. */
static inline int fi_param_get_str(struct fi_provider *provider,
				   const char *param_name, char **value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int fi_param_get_int(struct fi_provider *provider,
				   const char *param_name, int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int fi_param_get_bool(struct fi_provider *provider,
				    const char *param_name, int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int fi_param_get_size_t(struct fi_provider *provider,
				      const char *param_name, size_t *value)
{
	return fi_param_get(provider, param_name, value);
}

#ifdef __cplusplus
}
#endif

#endif /* FI_PROV_H */
