/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * fabric.c - library set-up and the provider registry: built-in and
 * loadable providers, the FI_PROVIDER filter, and the entry points that
 * walk the registry (fi_getinfo, fi_fabric, fi_open, fi_version).
 * Matching of hints lives in getinfo_match.c, fi_info copies in info.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ofi.h"
#include "ofi_hmem.h"
#include "ofi_prov.h"

struct ofi_prov {
	struct dlist_entry entry;
	struct fi_provider *prov;
	const struct ofi_prov_alias *aliases; /* NULL: none */
	void *dlhandle;
};

static const struct {
	struct fi_provider *(*ini)(void);
	const struct ofi_prov_alias *aliases;
} ofi_builtins[] = {
#if defined(HAVE_SHM) && HAVE_SHM
	{ofi_shm_ini, NULL},
#endif
#if defined(HAVE_TCP) && HAVE_TCP
	{ofi_tcp_ini, ofi_tcp_aliases},
#endif
#if defined(HAVE_SOCKETS) && HAVE_SOCKETS
	{ofi_sockets_ini, NULL},
#endif
	{NULL, NULL}, /* keeps the table non-empty */
};

static struct dlist_entry ofi_prov_list = DLIST_HEAD_INIT(ofi_prov_list);
static pthread_rwlock_t ofi_prov_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct ofi_name_filter ofi_prov_filter;

static pthread_once_t ofi_init_once_ctl = PTHREAD_ONCE_INIT;
static __thread bool ofi_in_init;
static bool ofi_initialized;

uint32_t fi_version(void)
{
	return OFI_API_VERSION;
}

static struct ofi_prov *ofi_lookup(const char *name)
{
	struct dlist_entry *item;
	struct ofi_prov *entry;

	dlist_foreach(&ofi_prov_list, item) {
		entry = container_of(item, struct ofi_prov, entry);
		if (!strcasecmp(entry->prov->name, name))
			return entry;
	}
	return NULL;
}

/*
 * The @i-th name of a registry entry: 0 is the provider's own (all its
 * endpoint types, always listed), then its aliases. False past the last.
 */
static bool ofi_entry_name(const struct ofi_prov *entry, size_t i,
			   struct ofi_prov_alias *name)
{
	if (!i) {
		name->name = entry->prov->name;
		name->ep_types = ~0U;
		name->by_request = false;
		return true;
	}
	if (!entry->aliases || !entry->aliases[i - 1].name)
		return false;
	*name = entry->aliases[i - 1];
	return true;
}

/* The entry answering to @name, its own or an alias (case-insensitive). */
static struct ofi_prov *ofi_lookup_any(const char *name)
{
	struct dlist_entry *item;
	struct ofi_prov *entry;
	struct ofi_prov_alias one;
	size_t i;

	dlist_foreach(&ofi_prov_list, item) {
		entry = container_of(item, struct ofi_prov, entry);
		for (i = 0; ofi_entry_name(entry, i, &one); i++) {
			if (!strcasecmp(one.name, name))
				return entry;
		}
	}
	return NULL;
}

static int ofi_check_prov_version(const struct fi_provider *prov)
{
	if (FI_MAJOR(prov->fi_version) != FI_MAJOR_VERSION ||
	    prov->fi_version > OFI_API_VERSION) {
		FI_WARN(&ofi_core_prov, FI_LOG_CORE,
			"provider %s was built for API %u.%u, this library "
			"offers %u.%u: not loaded\n",
			prov->name, FI_MAJOR(prov->fi_version),
			FI_MINOR(prov->fi_version), FI_MAJOR_VERSION,
			FI_MINOR_VERSION);
		return -FI_ENOSYS;
	}
	return 0;
}

/* Registration, with the provider's other names (NULL: none). */
static int ofi_register(struct fi_provider *prov, void *dlhandle,
			const struct ofi_prov_alias *aliases)
{
	struct ofi_prov *entry;
	int ret;

	ofi_init();
	if (!prov || !prov->name || !*prov->name || !prov->getinfo ||
	    !prov->fabric) {
		FI_WARN(&ofi_core_prov, FI_LOG_CORE,
			"ignoring an incomplete provider\n");
		return -FI_EINVAL;
	}
	ret = ofi_check_prov_version(prov);
	if (ret)
		return ret;

	entry = calloc(1, sizeof(*entry));
	if (!entry)
		return -FI_ENOMEM;
	entry->prov = prov;
	entry->aliases = aliases;
	entry->dlhandle = dlhandle;

	pthread_rwlock_wrlock(&ofi_prov_lock);
	if (ofi_lookup(prov->name)) {
		pthread_rwlock_unlock(&ofi_prov_lock);
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,
			"provider %s already registered, ignoring the "
			"second one\n",
			prov->name);
		free(entry);
		return -FI_EALREADY;
	}
	dlist_insert_tail(&entry->entry, &ofi_prov_list);
	pthread_rwlock_unlock(&ofi_prov_lock);
	FI_INFO(&ofi_core_prov, FI_LOG_CORE, "registered provider %s %u.%u\n",
		prov->name, FI_MAJOR(prov->version), FI_MINOR(prov->version));
	return 0;
}

int ofi_register_provider(struct fi_provider *prov, void *dlhandle)
{
	return ofi_register(prov, dlhandle, NULL);
}

static void ofi_release(struct ofi_prov *entry)
{
	if (entry->prov->cleanup)
		entry->prov->cleanup();
	if (entry->dlhandle)
		dlclose(entry->dlhandle);
	free(entry);
}

int ofi_unregister_provider(const char *name)
{
	struct ofi_prov *entry;

	if (!name)
		return -FI_EINVAL;
	pthread_rwlock_wrlock(&ofi_prov_lock);
	entry = ofi_lookup(name);
	if (entry)
		dlist_remove(&entry->entry);
	pthread_rwlock_unlock(&ofi_prov_lock);
	if (!entry)
		return -FI_ENOENT;
	ofi_release(entry);
	return 0;
}

struct fi_provider *ofi_find_provider(const char *name)
{
	struct ofi_prov *entry;

	if (!name)
		return NULL;
	ofi_init();
	pthread_rwlock_rdlock(&ofi_prov_lock);
	entry = ofi_lookup(name);
	pthread_rwlock_unlock(&ofi_prov_lock);
	return entry ? entry->prov : NULL;
}

int ofi_set_provider_filter(const char *spec)
{
	struct ofi_name_filter filter;
	int ret;

	ret = ofi_name_filter_init(&filter, spec);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&ofi_prov_lock);
	ofi_name_filter_free(&ofi_prov_filter);
	ofi_prov_filter = filter;
	pthread_rwlock_unlock(&ofi_prov_lock);
	return 0;
}

/* Caller holds ofi_prov_lock. */
bool ofi_provider_allowed(const char *prov_name)
{
	return ofi_name_filter_pass(&ofi_prov_filter, prov_name);
}

static int ofi_dl_filter(const struct dirent *de)
{
	size_t len = strlen(de->d_name);
	static const char suffix[] = "-" FI_LIB_SUFFIX;

	return len > 3 + sizeof(suffix) - 1 && !strncmp(de->d_name, "lib", 3) &&
	       !strcmp(de->d_name + len - (sizeof(suffix) - 1), suffix);
}

static void ofi_load_one(const char *dir, const char *file)
{
	struct fi_provider *(*ini)(void);
	struct fi_provider *prov;
	char path[PATH_MAX];
	void *handle;
	int ret;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path))
		return;
	handle = dlopen(path, RTLD_NOW);
	if (!handle) {
		FI_WARN(&ofi_core_prov, FI_LOG_CORE, "cannot load %s: %s\n",
			path, dlerror());
		return;
	}
	ini = (struct fi_provider * (*)(void)) dlsym(handle, "fi_prov_ini");
	prov = ini ? ini() : NULL;
	if (!prov) {
		FI_WARN(&ofi_core_prov, FI_LOG_CORE,
			"%s: no provider from fi_prov_ini\n", path);
		dlclose(handle);
		return;
	}
	ret = ofi_register_provider(prov, handle);
	if (!ret)
		return;
	/* Only a provider that passed the checks was ever set up. */
	if (ret == -FI_EALREADY && prov->cleanup)
		prov->cleanup();
	dlclose(handle);
}

static void ofi_load_dir(const char *dir)
{
	struct dirent **list;
	int n, i;

	n = scandir(dir, &list, ofi_dl_filter, alphasort);
	if (n < 0) {
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,
			"no provider directory %s\n", dir);
		return;
	}
	for (i = 0; i < n; i++) {
		ofi_load_one(dir, list[i]->d_name);
		free(list[i]);
	}
	free(list);
}

static void ofi_load_dl_providers(void)
{
	char *path = NULL, *copy, *dir, *save = NULL;

	if (fi_param_get_str(NULL, "provider_path", &path) || !path)
		path = PROVDLDIR;
	/* '@' asks for discovery-order preference, which is what we do. */
	if (*path == '@')
		path++;
	copy = strdup(path);
	if (!copy)
		return;
	for (dir = strtok_r(copy, ":", &save); dir;
	     dir = strtok_r(NULL, ":", &save))
		ofi_load_dir(dir);
	free(copy);
}

static void ofi_register_builtins(void)
{
	struct fi_provider *prov;
	size_t i;
	int ret;

	for (i = 0; ofi_builtins[i].ini; i++) {
		prov = ofi_builtins[i].ini();
		if (!prov)
			continue;
		ret = ofi_register(prov, NULL, ofi_builtins[i].aliases);
		if (ret == -FI_EALREADY && prov->cleanup)
			prov->cleanup();
	}
}

static bool ofi_known_name(const char *name)
{
	struct dlist_entry *item;
	struct ofi_prov *entry;
	struct ofi_name_filter one = {0};
	char *names[2] = {(char *)name, NULL};
	struct ofi_prov_alias alias;
	bool hit = false;
	size_t i;

	one.names = names;
	dlist_foreach(&ofi_prov_list, item) {
		entry = container_of(item, struct ofi_prov, entry);
		for (i = 0; ofi_entry_name(entry, i, &alias); i++)
			hit = hit || ofi_name_filter_pass(&one, alias.name);
	}
	return hit;
}

static void ofi_verify_filter_names(void)
{
	size_t i;

	for (i = 0; ofi_prov_filter.names && ofi_prov_filter.names[i]; i++) {
		if (!ofi_known_name(ofi_prov_filter.names[i]))
			FI_WARN(&ofi_core_prov, FI_LOG_CORE,
				"FI_PROVIDER names %s, which is not an "
				"available provider\n",
				ofi_prov_filter.names[i]);
	}
}

static void ofi_init_once(void)
{
	char *spec = NULL;

	ofi_in_init = true;
	ofi_param_init();
	ofi_log_init();
	/* Device memory must be known before providers report FI_HMEM. */
	ofi_hmem_init();
	fi_param_get_str(NULL, "provider", &spec);
	ofi_set_provider_filter(spec);
	ofi_register_builtins();
	ofi_load_dl_providers();
	ofi_verify_filter_names();
	ofi_initialized = true;
	ofi_in_init = false;
}

void ofi_init(void)
{
	if (ofi_in_init)
		return;
	pthread_once(&ofi_init_once_ctl, ofi_init_once);
}

__attribute__((destructor)) static void ofi_fini(void)
{
	struct dlist_entry *item;

	if (!ofi_initialized)
		return;
	pthread_rwlock_wrlock(&ofi_prov_lock);
	while ((item = dlist_pop_front(&ofi_prov_list))) {
		pthread_rwlock_unlock(&ofi_prov_lock);
		ofi_release(container_of(item, struct ofi_prov, entry));
		pthread_rwlock_wrlock(&ofi_prov_lock);
	}
	ofi_name_filter_free(&ofi_prov_filter);
	pthread_rwlock_unlock(&ofi_prov_lock);
	ofi_hmem_cleanup();
	ofi_log_fini();
	ofi_param_fini();
}

/* True when the prov_name hint @want spells out @name in full. */
static bool ofi_want_names(const char *want, const char *name)
{
	struct ofi_name_filter filter;
	bool hit;

	if (ofi_name_filter_init(&filter, want))
		return false;
	hit = ofi_name_filter_names(&filter, name);
	ofi_name_filter_free(&filter);
	return hit;
}

/*
 * Whether a provider is asked under @name (see struct ofi_prov_alias).
 * Under its own name (@own) it is also asked for a layered prov_name hint:
 * it may answer under a layered name of its own.
 */
static bool ofi_name_wanted(const struct ofi_prov_alias *name, bool own,
			    const struct fi_info *hints)
{
	const char *want = hints && hints->fabric_attr
				   ? hints->fabric_attr->prov_name
				   : NULL;

	if (want && !*want)
		want = NULL;
	if (!ofi_provider_allowed(name->name))
		return false;
	if (name->by_request)
		return want ? ofi_want_names(want, name->name)
			    : ofi_name_filter_names(&ofi_prov_filter,
						    name->name);
	if (!want || (own && strchr(want, ';')))
		return true;
	return ofi_prov_name_match(want, name->name);
}

static struct fi_info *ofi_attr_only_info(const struct fi_provider *prov,
					  const char *name, uint32_t version)
{
	struct fi_info *info = fi_dupinfo(NULL);

	if (!info)
		return NULL;
	info->fabric_attr->prov_name = strdup(name);
	if (!info->fabric_attr->prov_name) {
		fi_freeinfo(info);
		return NULL;
	}
	info->fabric_attr->prov_version = prov->version;
	info->fabric_attr->api_version = version;
	return info;
}

/* Keeps the candidates of one provider that match, appending to @tail. */
static struct fi_info **ofi_take_matches(const struct fi_provider *prov,
					 uint32_t version,
					 const struct fi_info *hints,
					 struct fi_info *list,
					 struct fi_info **tail)
{
	struct fi_info *cur;

	while ((cur = list)) {
		list = cur->next;
		cur->next = NULL;
		if (cur->fabric_attr) {
			cur->fabric_attr->prov_version = prov->version;
			if (!cur->fabric_attr->prov_name)
				cur->fabric_attr->prov_name =
					strdup(prov->name);
		}
		if (!cur->fabric_attr || !cur->fabric_attr->prov_name ||
		    ofi_check_info(prov, version, cur, hints) ||
		    ofi_alter_info(prov, version, hints, cur)) {
			fi_freeinfo(cur);
			continue;
		}
		*tail = cur;
		tail = &cur->next;
	}
	return tail;
}

/*
 * Copies of the candidates in @list that offer an endpoint type of @name,
 * renamed to it unless it is the provider's own (@own: the provider's
 * names stay as given); NULL (nothing left over) when none or out of
 * memory.
 */
static struct fi_info *ofi_copy_as(const struct fi_info *list,
				   const struct ofi_prov_alias *name, bool own)
{
	struct fi_info *head = NULL, **tail = &head, *dup;
	const struct fi_info *cur;

	for (cur = list; cur; cur = cur->next) {
		if (!cur->ep_attr || !cur->fabric_attr ||
		    !(name->ep_types & OFI_EP_BIT(cur->ep_attr->type)))
			continue;
		dup = fi_dupinfo(cur);
		if (!dup)
			break;
		*tail = dup;
		tail = &dup->next;
		if (own)
			continue;
		free(dup->fabric_attr->prov_name);
		dup->fabric_attr->prov_name = strdup(name->name);
		if (!dup->fabric_attr->prov_name)
			break;
	}
	if (cur) {
		fi_freeinfo(head);
		return NULL;
	}
	return head;
}

/*
 * Asks one provider, once, and appends its matching candidates under each
 * of its names the request wants.
 */
static struct fi_info **ofi_getinfo_prov(const struct ofi_prov *entry,
					 uint32_t version, const char *node,
					 const char *service, uint64_t flags,
					 const struct fi_info *hints,
					 struct fi_info **tail)
{
	struct fi_provider *prov = entry->prov;
	struct fi_info *list = NULL, *one;
	struct ofi_prov_alias name;
	bool asked = false;
	size_t i;
	int ret;

	for (i = 0; ofi_entry_name(entry, i, &name); i++) {
		if (!ofi_name_wanted(&name, !i, hints))
			continue;
		if (flags & FI_PROV_ATTR_ONLY) {
			one = ofi_attr_only_info(prov, name.name, version);
			if (one) {
				*tail = one;
				tail = &one->next;
			}
			continue;
		}
		if (!asked) {
			asked = true;
			ret = prov->getinfo(version, node, service, flags,
					    hints, &list);
			if (ret) {
				FI_INFO(&ofi_core_prov, FI_LOG_CORE,
					"%s getinfo: %s\n", prov->name,
					fi_strerror(ret));
				fi_freeinfo(list);
				return tail;
			}
		}
		one = ofi_copy_as(list, &name, !i);
		tail = ofi_take_matches(prov, version, hints, one, tail);
	}
	fi_freeinfo(list);
	return tail;
}

static int ofi_check_getinfo_args(uint32_t version, const char *node,
				  const char *service, uint64_t flags,
				  const struct fi_info *hints)
{
	if (FI_MAJOR(version) != FI_MAJOR_VERSION ||
	    version > OFI_API_VERSION) {
		FI_WARN(&ofi_core_prov, FI_LOG_CORE,
			"API version %u.%u is not supported\n",
			FI_MAJOR(version), FI_MINOR(version));
		return -FI_ENOSYS;
	}
	if ((flags & FI_SOURCE) && !node && !service)
		return -FI_EINVAL;
	if (hints && hints->dest_addr && !hints->dest_addrlen)
		return -FI_EINVAL;
	if (hints && hints->src_addr && !hints->src_addrlen &&
	    !(flags & FI_SOURCE))
		return -FI_EINVAL;
	return 0;
}

/*
 * The current versions of fi_getinfo and fi_fabric are bound to their
 * default version node here; the older ones live in abi_compat.c. Calls to
 * the plain names, inside the library and from programs, get these.
 */
OFI_DEFAULT_SYMVER(ofi_getinfo_1_3, fi_getinfo, "FABRIC_1.3");
int ofi_getinfo_1_3(uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    struct fi_info **info)
{
	struct fi_info *head = NULL, **tail = &head;
	struct dlist_entry *item;
	struct ofi_prov *entry;
	struct fi_provider *prov;
	int ret;

	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	ret = ofi_check_getinfo_args(version, node, service, flags, hints);
	if (ret)
		return ret;
	ofi_init();

	pthread_rwlock_rdlock(&ofi_prov_lock);
	dlist_foreach(&ofi_prov_list, item) {
		entry = container_of(item, struct ofi_prov, entry);
		prov = entry->prov;
		if (FI_VERSION_LT(prov->fi_version, version)) {
			FI_INFO(&ofi_core_prov, FI_LOG_CORE,
				"%s supports API %u.%u only\n", prov->name,
				FI_MAJOR(prov->fi_version),
				FI_MINOR(prov->fi_version));
			continue;
		}
		tail = ofi_getinfo_prov(entry, version, node, service, flags,
					hints, tail);
	}
	pthread_rwlock_unlock(&ofi_prov_lock);

	*info = head;
	return head ? 0 : -FI_ENODATA;
}

/*
 * Finds the provider for a fabric: its full name or an alias, else any
 * layer of it. FI_PROVIDER applies to the name the fabric was found under.
 */
static struct fi_provider *ofi_fabric_provider(const char *prov_name)
{
	struct dlist_entry *item;
	struct ofi_prov *entry;
	struct fi_provider *prov = NULL;

	pthread_rwlock_rdlock(&ofi_prov_lock);
	entry = ofi_lookup_any(prov_name);
	if (entry) {
		prov = entry->prov;
	} else {
		dlist_foreach(&ofi_prov_list, item) {
			entry = container_of(item, struct ofi_prov, entry);
			if (ofi_prov_name_match(entry->prov->name, prov_name)) {
				prov = entry->prov;
				break;
			}
		}
	}
	if (prov && !ofi_provider_allowed(prov_name))
		prov = NULL;
	pthread_rwlock_unlock(&ofi_prov_lock);
	return prov;
}

OFI_DEFAULT_SYMVER(ofi_fabric_1_1, fi_fabric, "FABRIC_1.1");
int ofi_fabric_1_1(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		   void *context)
{
	struct fi_provider *prov;
	int ret;

	if (!attr || !attr->prov_name || !attr->name || !fabric)
		return -FI_EINVAL;
	ofi_init();
	prov = ofi_fabric_provider(attr->prov_name);
	if (!prov) {
		FI_INFO(&ofi_core_prov, FI_LOG_CORE,
			"no provider %s for fabric %s\n", attr->prov_name,
			attr->name);
		return -FI_ENODEV;
	}
	ret = prov->fabric(attr, fabric, context);
	if (!ret && *fabric)
		(*fabric)->api_version = attr->api_version ? attr->api_version
							   : prov->fi_version;
	return ret;
}

int fi_open(uint32_t version, const char *name, void *attr, size_t attr_len,
	    uint64_t flags, struct fid **fid, void *context)
{
	if (!name || !fid)
		return -FI_EINVAL;
	if (FI_MAJOR(version) != FI_MAJOR_VERSION || version > OFI_API_VERSION)
		return -FI_ENOSYS;
	ofi_init();
	if (!strcasecmp(name, "logging"))
		return ofi_open_log(version, attr, attr_len, flags, fid,
				    context);
	/* "mr_cache" belongs to the MR cache, which is not built yet. */
	return -FI_ENOSYS;
}
