/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_prov.h - the contract between the libfabric core (src/) and the
 * providers: the built-in provider entry points, the provider registry,
 * the hint-matching helpers the core applies to every provider's answers,
 * and the core's parameter/logging internals.
 *
 * How fi_getinfo works, so providers know what to return:
 *
 *   1. The core picks the providers that pass FI_PROVIDER and
 *      hints->fabric_attr->prov_name (under their own name or an alias,
 *      see struct ofi_prov_alias) and whose fi_version is at least the
 *      API version asked for.
 *   2. It calls each provider's getinfo(version, node, service, flags,
 *      hints, &list). A provider returns its candidate fi_info list: one
 *      entry per fabric/domain/endpoint type it can offer, filled with
 *      what it supports at most (all caps it can do, its required mode
 *      and mr_mode bits in 1.5 form, its maximum sizes). It may use node,
 *      service, hints and flags to resolve addresses (src_addr/dest_addr)
 *      and it may already leave out what it can never offer, but it does
 *      not have to match the rest of the hints.
 *   3. The core runs ofi_check_info() on every candidate and drops the
 *      ones that do not satisfy the hints, then ofi_alter_info() trims the
 *      survivors to what the application asked for (caps, mode, mr_mode
 *      for old API versions, threading/progress/av_type, auth keys) and
 *      fills fabric_attr->prov_name/prov_version/api_version.
 *
 * A provider reading an info back in fi_fabric/fi_domain should convert
 * domain_attr->mr_mode with ofi_mr_mode_bits() to get the 1.5-style bits.
 */
#ifndef OFI_PROV_H
#define OFI_PROV_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

/*
 * Built-in providers: configure defines HAVE_<NAME> to 1 when the provider's
 * sources are built into the library.
 */
#if defined(HAVE_SHM) && HAVE_SHM
struct fi_provider *ofi_shm_ini(void);
#endif
#if defined(HAVE_TCP) && HAVE_TCP
struct fi_provider *ofi_tcp_ini(void);
#endif
#if defined(HAVE_SOCKETS) && HAVE_SOCKETS
struct fi_provider *ofi_sockets_ini(void);
#endif

/*
 * Other names a built-in provider answers to: the names Debian's library
 * offers the same endpoints under ("net", "tcp;ofi_rxm"), so that scripts
 * (FI_PROVIDER), hints and MPI libraries selecting by those names find
 * ours. fi_getinfo returns a provider's candidates once per name that the
 * request wants, each copy carrying that name in fabric_attr->prov_name
 * (fi_fabric maps it back). A name is wanted when FI_PROVIDER lets it
 * through and the prov_name hint, if any, matches it; a @by_request name
 * only when the hint or FI_PROVIDER spells it out in full. A table ends
 * with a NULL name.
 */
#define OFI_EP_BIT(type) (1U << (type))
struct ofi_prov_alias {
	const char *name;
	uint32_t ep_types; /* OFI_EP_BIT()s of the endpoint types offered */
	bool by_request;   /* left out of lists that do not name it */
};

#if defined(HAVE_TCP) && HAVE_TCP
extern const struct ofi_prov_alias ofi_tcp_aliases[];
#endif

/* Where loadable providers live unless FI_PROVIDER_PATH says otherwise. */
#ifndef PROVDLDIR
#define PROVDLDIR "/usr/local/lib/libfabric"
#endif

/* The API level this library implements. */
#define OFI_API_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/*
 * The version built-in providers report (fi_info -l, prov_version), in
 * libfabric's convention: the library's MAJOR*100+MINOR, then REVISION*10
 * (117.0 for 1.17.0).
 */
#define OFI_PROV_VERSION                                                       \
	FI_VERSION(FI_MAJOR_VERSION * 100 + FI_MINOR_VERSION,                  \
		   FI_REVISION_VERSION * 10)

/* The name the core logs and defines its parameters under. */
#define OFI_CORE_PROV_NAME "core"

/* Capability groups (fi_getinfo(3)). */
#define OFI_PRIMARY_CAPS                                                       \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST |              \
	 FI_NAMED_RX_CTX | FI_DIRECTED_RECV | FI_VARIABLE_MSG | FI_HMEM |      \
	 FI_COLLECTIVE | FI_XPU_TRIGGER)
#define OFI_CAP_MODIFIERS                                                      \
	(FI_READ | FI_WRITE | FI_RECV | FI_SEND | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE)
#define OFI_SECONDARY_CAPS                                                     \
	(FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT | FI_SHARED_AV |             \
	 FI_TRIGGER | FI_FENCE | FI_LOCAL_COMM | FI_REMOTE_COMM |              \
	 FI_SOURCE_ERR | FI_RMA_PMEM | FI_AV_USER_ID | FI_PEER)
/* Capabilities that make sense on a transmit / receive context. */
#define OFI_TX_CAPS                                                            \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_READ | FI_WRITE |        \
	 FI_SEND | FI_HMEM | FI_TRIGGER | FI_FENCE | FI_MULTICAST |            \
	 FI_RMA_PMEM | FI_NAMED_RX_CTX | FI_COLLECTIVE | FI_XPU_TRIGGER)
#define OFI_RX_CAPS                                                            \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_REMOTE_READ |            \
	 FI_REMOTE_WRITE | FI_RECV | FI_HMEM | FI_TRIGGER | FI_RMA_PMEM |      \
	 FI_DIRECTED_RECV | FI_VARIABLE_MSG | FI_MULTI_RECV | FI_SOURCE |      \
	 FI_RMA_EVENT | FI_SOURCE_ERR | FI_COLLECTIVE | FI_XPU_TRIGGER)
#define OFI_DOMAIN_CAPS                                                        \
	(FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SHARED_AV | FI_AV_USER_ID)

/* FI_MR_BASIC expressed in 1.5 mr_mode bits. */
#define OFI_MR_BASIC_MAP (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

/*
 * Library set-up. ofi_init() is idempotent and thread-safe; every public
 * entry point that needs the registry calls it. Calls made from inside the
 * initialisation (a provider's ini calling fi_param_define) return at once.
 */
void ofi_init(void);

/*
 * Adds @prov to the registry. @dlhandle is the dlopen handle of a loadable
 * provider (dlclose'd at unregister/exit) or NULL for a built-in or test
 * provider. Returns 0, -FI_EINVAL for an incomplete provider, -FI_ENOSYS
 * when its fi_version is not usable by this library, -FI_EALREADY when a
 * provider of that name is already registered (the first one wins).
 * On failure the caller still owns @prov and @dlhandle.
 */
int ofi_register_provider(struct fi_provider *prov, void *dlhandle);

/*
 * Removes the named provider from the registry, calling its cleanup.
 * Used by tests and at exit. Returns 0 or -FI_ENOENT.
 */
int ofi_unregister_provider(const char *name);

/* The registered provider of that name (case-insensitive), or NULL. */
struct fi_provider *ofi_find_provider(const char *name);

/*
 * Replaces the FI_PROVIDER filter (read from the environment at init).
 * NULL or "" lets every provider through. Meant for tests.
 */
int ofi_set_provider_filter(const char *spec);

/* True when FI_PROVIDER lets a provider of that (maybe layered) name in. */
bool ofi_provider_allowed(const char *prov_name);

/*
 * Name lists as FI_PROVIDER, FI_LOG_PROV and FI_LOG_SUBSYS take them:
 * "a,b,c" lets only those names through, "^a,b" lets all but those.
 */
struct ofi_name_filter {
	char **names; /* NULL-terminated; NULL means "all" */
	bool negated;
};

int ofi_name_filter_init(struct ofi_name_filter *filter, const char *spec);
void ofi_name_filter_free(struct ofi_name_filter *filter);
bool ofi_name_filter_pass(const struct ofi_name_filter *filter,
			  const char *name);
/* True when an inclusion list spells out @name in full. */
bool ofi_name_filter_names(const struct ofi_name_filter *filter,
			   const char *name);

/*
 * hints->fabric_attr->prov_name matching: @want is a ','-separated list of
 * alternatives, each a ';'-separated set of provider names ("tcp;ofi_rxm");
 * an alternative matches when every name in it is one of the ';'-separated
 * components of @prov_name. A single name matches a layered provider that
 * contains it. A leading '^' inverts the whole list.
 */
bool ofi_prov_name_match(const char *want, const char *prov_name);

/*
 * Returns 0 when @info (a provider candidate, with fabric_attr->prov_name
 * already filled) satisfies @hints for @api_version, -FI_ENODATA otherwise;
 * the reason is logged at FI_LOG_INFO. @hints may be NULL.
 */
int ofi_check_info(const struct fi_provider *prov, uint32_t api_version,
		   const struct fi_info *info, const struct fi_info *hints);

/*
 * Trims a matching candidate to what was asked for and fills the fabric
 * attributes. Returns 0 or -FI_ENOMEM.
 */
int ofi_alter_info(const struct fi_provider *prov, uint32_t api_version,
		   const struct fi_info *hints, struct fi_info *info);

/*
 * 1.5-style mr_mode bits for a domain_attr->mr_mode value as an
 * application of @api_version gave it: FI_MR_BASIC becomes
 * OFI_MR_BASIC_MAP, FI_MR_SCALABLE and FI_MR_UNSPEC become 0. The old
 * FI_LOCAL_MR mode bit is the caller's business (it maps to FI_MR_LOCAL).
 */
int ofi_mr_mode_bits(uint32_t api_version, int mr_mode);

/*
 * Binds @impl as the default (@@) version @node (a string) of the exported
 * @api, and declares @impl with @api's prototype. Exported functions with older
 * versions are defined this way (src/fabric.c, src/info.c); the older
 * versions themselves are in src/abi_compat.c.
 */
#define OFI_DEFAULT_SYMVER(impl, api, node)                                    \
	__asm__(".symver " #impl ", " #api "@@" node);                         \
	extern __typeof__(api) impl

/* Core parameters and logging (src/param.c, src/log.c). */
void ofi_param_init(void);
/*
 * fi_param_define of an FI_PARAM_INT or FI_PARAM_SIZE_T parameter that only
 * takes values in [@min, @max]: fi_param_get refuses any other with a
 * warning (-FI_EINVAL, so the reader keeps its default), and the help text
 * fi_getparams lists ends with "(range: MIN..MAX)".
 */
int ofi_param_define_range(const struct fi_provider *provider,
			   const char *param_name, enum fi_param_type type,
			   int64_t min, uint64_t max,
			   const char *help_string_fmt, ...)
	__attribute__((format(printf, 6, 7)));
void ofi_param_fini(void);
void ofi_log_init(void);
void ofi_log_fini(void);

/* Named object "logging" for fi_open(). */
int ofi_open_log(uint32_t version, void *attr, size_t attr_len, uint64_t flags,
		 struct fid **fid, void *context);

/* Deep copy of a fid_nic into a core-owned object closed by fi_close. */
struct fid_nic *ofi_nic_dup(const struct fid_nic *nic);

#endif /* OFI_PROV_H */
