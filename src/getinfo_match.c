/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * getinfo_match.c - hint matching for fi_getinfo, done once in the core
 * for every provider: ofi_check_info() decides whether a provider's
 * candidate satisfies the application's hints, ofi_alter_info() trims a
 * match to what was asked for. Also the name-list filters (FI_PROVIDER,
 * FI_LOG_PROV, prov_name hints). The rules follow fi_getinfo(3),
 * fi_domain(3), fi_endpoint(3) and fi_mr(3); see include/ofi_prov.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "ofi.h"
#include "ofi_prov.h"

/* Splits @spec at any of @seps into a NULL-terminated array. */
static char **ofi_split(const char *spec, const char *seps)
{
	char *copy, *tok, *save = NULL, **names;
	size_t n = 0, max = 2;
	const char *p;

	for (p = spec; *p; p++)
		max += strchr(seps, *p) ? 1 : 0;
	names = calloc(max, sizeof(*names));
	copy = strdup(spec);
	if (!names || !copy)
		goto err;
	for (tok = strtok_r(copy, seps, &save); tok;
	     tok = strtok_r(NULL, seps, &save)) {
		while (*tok == ' ' || *tok == '\t')
			tok++;
		if (!*tok)
			continue;
		names[n] = strdup(tok);
		if (!names[n])
			goto err;
		n++;
	}
	free(copy);
	return names;
err:
	while (names && n)
		free(names[--n]);
	free(names);
	free(copy);
	return NULL;
}

static void ofi_free_names(char **names)
{
	size_t i;

	for (i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}

static bool ofi_names_contain(char *const *names, const char *name)
{
	size_t i;

	for (i = 0; names && names[i]; i++) {
		if (!strcasecmp(names[i], name))
			return true;
	}
	return false;
}

int ofi_name_filter_init(struct ofi_name_filter *filter, const char *spec)
{
	filter->names = NULL;
	filter->negated = false;
	if (!spec)
		return 0;
	while (*spec == ' ')
		spec++;
	if (*spec == '^') {
		filter->negated = true;
		spec++;
	}
	if (!*spec && !filter->negated)
		return 0;
	filter->names = ofi_split(spec, ",");
	return filter->names ? 0 : -FI_ENOMEM;
}

void ofi_name_filter_free(struct ofi_name_filter *filter)
{
	ofi_free_names(filter->names);
	filter->names = NULL;
	filter->negated = false;
}

bool ofi_name_filter_names(const struct ofi_name_filter *filter,
			   const char *name)
{
	return !filter->negated && ofi_names_contain(filter->names, name);
}

/*
 * A layered name "a;b" passes an inclusion list naming it or any of its
 * parts and fails an exclusion list naming it or any of them.
 */
bool ofi_name_filter_pass(const struct ofi_name_filter *filter,
			  const char *name)
{
	char **parts;
	bool hit = false;
	size_t i;

	if (!filter->names)
		return true;
	if (name && ofi_names_contain(filter->names, name))
		return !filter->negated;
	parts = ofi_split(name ? name : "", ";");
	if (!parts)
		return !filter->negated;
	for (i = 0; parts[i] && !hit; i++)
		hit = ofi_names_contain(filter->names, parts[i]);
	if (!parts[0])
		hit = ofi_names_contain(filter->names, "");
	ofi_free_names(parts);
	return filter->negated ? !hit : hit;
}

static bool ofi_layer_match(const char *alt, char *const *parts)
{
	char **want = ofi_split(alt, ";");
	size_t i, n = 0;
	bool ok = true;

	if (!want)
		return false;
	for (i = 0; want[i]; i++, n++)
		ok = ok && ofi_names_contain(parts, want[i]);
	/* "a;b" names a whole stack: no extra layers allowed. */
	if (ok && n > 1) {
		for (i = 0; parts[i]; i++)
			;
		ok = i == n;
	}
	ofi_free_names(want);
	return ok && n;
}

bool ofi_prov_name_match(const char *want, const char *prov_name)
{
	struct ofi_name_filter filter;
	char **parts;
	bool hit = false;
	size_t i;

	if (!want || !*want)
		return true;
	if (!prov_name)
		return false;
	if (ofi_name_filter_init(&filter, want))
		return false;
	parts = ofi_split(prov_name, ";");
	for (i = 0; parts && filter.names && filter.names[i] && !hit; i++)
		hit = ofi_layer_match(filter.names[i], parts);
	ofi_free_names(parts);
	hit = filter.negated ? !hit : hit;
	ofi_name_filter_free(&filter);
	return hit;
}

int ofi_mr_mode_bits(uint32_t api_version, int mr_mode)
{
	if (mr_mode == FI_MR_BASIC)
		return OFI_MR_BASIC_MAP;
	if (mr_mode == FI_MR_SCALABLE || mr_mode == FI_MR_UNSPEC)
		return 0;
	if (FI_VERSION_LT(api_version, FI_VERSION(1, 5)))
		return mr_mode & (FI_MR_BASIC | FI_MR_SCALABLE)
			       ? OFI_MR_BASIC_MAP
			       : 0;
	return mr_mode & ~(FI_MR_BASIC | FI_MR_SCALABLE);
}

#define OFI_NOMATCH(prov, fmt, ...)                                            \
	do {                                                                   \
		FI_INFO(&ofi_core_prov, FI_LOG_CORE, "%s: " fmt, prov,         \
			##__VA_ARGS__);                                        \
		return -FI_ENODATA;                                            \
	} while (0)

/* True when the application used the pre-1.5 mr_mode values. */
static bool ofi_mr_old_style(uint32_t api_version, int user_mr)
{
	return FI_VERSION_LT(api_version, FI_VERSION(1, 5)) ||
	       user_mr == FI_MR_BASIC || user_mr == FI_MR_SCALABLE;
}

/* The provider's mr_mode bits that matter for the caps asked for. */
static int ofi_prov_mr_bits(const struct fi_info *info, uint64_t caps)
{
	int bits = info->domain_attr
			   ? ofi_mr_mode_bits(OFI_API_VERSION,
					      info->domain_attr->mr_mode)
			   : 0;

	if (!(caps & FI_HMEM))
		bits &= ~FI_MR_HMEM;
	if (!(caps & FI_COLLECTIVE))
		bits &= ~FI_MR_COLLECTIVE;
	if (!(caps & FI_RMA_EVENT))
		bits &= ~FI_MR_RMA_EVENT;
	return bits;
}

/*
 * Caps that take part in matching. When the hints leave caps open, caps
 * whose mr_mode bit the application did not accept are simply not offered
 * rather than ruling the provider out.
 */
static uint64_t ofi_hint_caps(const struct fi_info *hints,
			      const struct fi_info *info)
{
	static const struct {
		uint64_t cap;
		int mr_bit;
	} cond[] = {
		{FI_HMEM, FI_MR_HMEM},
		{FI_COLLECTIVE, FI_MR_COLLECTIVE},
		{FI_RMA_EVENT, FI_MR_RMA_EVENT},
	};
	uint64_t caps = info->caps;
	int user;
	size_t i;

	if (!hints)
		return caps;
	if (hints->caps)
		return hints->caps;
	user = hints->domain_attr ? hints->domain_attr->mr_mode : 0;
	if (user == FI_MR_BASIC || user == FI_MR_SCALABLE)
		user = 0;
	for (i = 0; i < OFI_ARRAY_SIZE(cond); i++) {
		if (!(user & cond[i].mr_bit))
			caps &= ~cond[i].cap;
	}
	return caps;
}

/* Mode bits the provider needs from an application of this version. */
static uint64_t ofi_prov_mode(uint32_t api_version, const struct fi_info *info,
			      const struct fi_info *hints)
{
	uint64_t mode = info->mode;
	int user_mr = hints && hints->domain_attr ? hints->domain_attr->mr_mode
						  : FI_MR_UNSPEC;
	int bits = ofi_prov_mr_bits(info, ofi_hint_caps(hints, info));

	if (ofi_mr_old_style(api_version, user_mr) && (bits & FI_MR_LOCAL))
		mode |= FI_LOCAL_MR;
	else if (!ofi_mr_old_style(api_version, user_mr))
		mode &= ~FI_LOCAL_MR;
	return mode;
}

static int ofi_check_mr_mode(const char *name, uint32_t api_version,
			     const struct fi_info *info,
			     const struct fi_info *hints, uint64_t caps)
{
	int prov = ofi_prov_mr_bits(info, caps);
	int user =
		hints->domain_attr ? hints->domain_attr->mr_mode : FI_MR_UNSPEC;

	if (ofi_mr_old_style(api_version, user)) {
		/* FI_MR_LOCAL travels as the FI_LOCAL_MR mode bit here. */
		prov &= ~FI_MR_LOCAL;
		if (prov & ~OFI_MR_BASIC_MAP)
			OFI_NOMATCH(name,
				    "mr_mode bits %#x have no pre-1.5 "
				    "form\n",
				    prov);
		if (user == FI_MR_SCALABLE && prov)
			OFI_NOMATCH(name, "FI_MR_SCALABLE not supported\n");
		return 0;
	}
	if (prov & ~user)
		OFI_NOMATCH(name, "needs mr_mode bits %#x\n", prov & ~user);
	return 0;
}

static int ofi_check_caps(const char *name, const struct fi_info *info,
			  const struct fi_info *hints)
{
	if (hints->caps & ~info->caps)
		OFI_NOMATCH(name, "lacks caps %#llx\n",
			    (unsigned long long)(hints->caps & ~info->caps));
	return 0;
}

static int ofi_check_mode(const char *name, uint64_t needed, uint64_t given)
{
	if (needed & ~given)
		OFI_NOMATCH(name, "needs mode bits %#llx\n",
			    (unsigned long long)(needed & ~given));
	return 0;
}

#define OFI_CHECK_LIMIT(name, user, prov, field)                               \
	do {                                                                   \
		if ((user)->field > (prov)->field)                             \
			OFI_NOMATCH(name, #field " %zu above maximum %zu\n",   \
				    (size_t)(user)->field,                     \
				    (size_t)(prov)->field);                    \
	} while (0)

#define OFI_CHECK_BITS(name, user, prov, field)                                \
	do {                                                                   \
		if ((user)->field & ~(prov)->field)                            \
			OFI_NOMATCH(name, #field " lacks %#llx\n",             \
				    (unsigned long long)((user)->field &       \
							 ~(prov)->field));     \
	} while (0)

static int ofi_check_tx_attr(const char *name, const struct fi_info *info,
			     const struct fi_info *hints)
{
	const struct fi_tx_attr *user = hints->tx_attr;
	const struct fi_tx_attr *prov = info->tx_attr;
	uint64_t mode, flags;

	if (!user)
		return 0;
	if (!prov)
		OFI_NOMATCH(name, "no tx attributes\n");
	if (user->caps & ~(prov->caps ? prov->caps : info->caps))
		OFI_NOMATCH(name, "tx caps lack %#llx\n",
			    (unsigned long long)user->caps);
	mode = user->mode ? user->mode : hints->mode;
	if (ofi_check_mode(name, prov->mode, mode))
		return -FI_ENODATA;
	/* FI_INJECT is honoured wherever there is an inject size
	 * (util's ofi_ep_tx_dflags), listed by the candidate or not. */
	flags = prov->op_flags | (prov->inject_size ? FI_INJECT : 0);
	if (user->op_flags & ~flags)
		OFI_NOMATCH(name, "op_flags lack %#llx\n",
			    (unsigned long long)(user->op_flags & ~flags));
	OFI_CHECK_BITS(name, user, prov, msg_order);
	OFI_CHECK_BITS(name, user, prov, comp_order);
	OFI_CHECK_LIMIT(name, user, prov, inject_size);
	OFI_CHECK_LIMIT(name, user, prov, size);
	OFI_CHECK_LIMIT(name, user, prov, iov_limit);
	OFI_CHECK_LIMIT(name, user, prov, rma_iov_limit);
	return 0;
}

static int ofi_check_rx_attr(const char *name, const struct fi_info *info,
			     const struct fi_info *hints)
{
	const struct fi_rx_attr *user = hints->rx_attr;
	const struct fi_rx_attr *prov = info->rx_attr;
	uint64_t mode;

	if (!user)
		return 0;
	if (!prov)
		OFI_NOMATCH(name, "no rx attributes\n");
	if (user->caps & ~(prov->caps ? prov->caps : info->caps))
		OFI_NOMATCH(name, "rx caps lack %#llx\n",
			    (unsigned long long)user->caps);
	mode = user->mode ? user->mode : hints->mode;
	if (ofi_check_mode(name, prov->mode, mode))
		return -FI_ENODATA;
	OFI_CHECK_BITS(name, user, prov, op_flags);
	OFI_CHECK_BITS(name, user, prov, msg_order);
	OFI_CHECK_BITS(name, user, prov, comp_order);
	OFI_CHECK_LIMIT(name, user, prov, total_buffered_recv);
	OFI_CHECK_LIMIT(name, user, prov, size);
	OFI_CHECK_LIMIT(name, user, prov, iov_limit);
	return 0;
}

static int ofi_top_bit(uint64_t v)
{
	return v ? 64 - __builtin_clzll(v) : 0;
}

static int ofi_check_ep_attr(const char *name, const struct fi_info *info,
			     const struct fi_info *hints)
{
	const struct fi_ep_attr *user = hints->ep_attr;
	const struct fi_ep_attr *prov = info->ep_attr;

	if (!user)
		return 0;
	if (!prov)
		OFI_NOMATCH(name, "no endpoint attributes\n");
	if (user->type != FI_EP_UNSPEC && user->type != prov->type)
		OFI_NOMATCH(name, "endpoint type %d, not %d\n", prov->type,
			    user->type);
	if (user->protocol != FI_PROTO_UNSPEC &&
	    user->protocol != prov->protocol)
		OFI_NOMATCH(name, "protocol %u, not %u\n", prov->protocol,
			    user->protocol);
	OFI_CHECK_LIMIT(name, user, prov, protocol_version);
	OFI_CHECK_LIMIT(name, user, prov, max_msg_size);
	OFI_CHECK_LIMIT(name, user, prov, max_order_raw_size);
	OFI_CHECK_LIMIT(name, user, prov, max_order_war_size);
	OFI_CHECK_LIMIT(name, user, prov, max_order_waw_size);
	if (ofi_top_bit(user->mem_tag_format) >
	    ofi_top_bit(prov->mem_tag_format))
		OFI_NOMATCH(name, "tag format too wide\n");
	if (user->tx_ctx_cnt != FI_SHARED_CONTEXT)
		OFI_CHECK_LIMIT(name, user, prov, tx_ctx_cnt);
	if (user->rx_ctx_cnt != FI_SHARED_CONTEXT)
		OFI_CHECK_LIMIT(name, user, prov, rx_ctx_cnt);
	if (user->auth_key_size && !prov->auth_key_size)
		OFI_NOMATCH(name, "no endpoint authorization keys\n");
	OFI_CHECK_LIMIT(name, user, prov, auth_key_size);
	return 0;
}

/* Numerically larger threading models promise more serialization. */
static int ofi_check_domain_modes(const char *name,
				  const struct fi_domain_attr *user,
				  const struct fi_domain_attr *prov)
{
	if (user->threading != FI_THREAD_UNSPEC &&
	    user->threading < prov->threading)
		OFI_NOMATCH(name, "threading %d not offered\n",
			    user->threading);
	if (user->control_progress == FI_PROGRESS_AUTO &&
	    prov->control_progress == FI_PROGRESS_MANUAL)
		OFI_NOMATCH(name, "no automatic control progress\n");
	if (user->data_progress == FI_PROGRESS_AUTO &&
	    prov->data_progress == FI_PROGRESS_MANUAL)
		OFI_NOMATCH(name, "no automatic data progress\n");
	if (user->resource_mgmt == FI_RM_ENABLED &&
	    prov->resource_mgmt == FI_RM_DISABLED)
		OFI_NOMATCH(name, "no resource management\n");
	if (user->av_type != FI_AV_UNSPEC && prov->av_type != FI_AV_UNSPEC &&
	    user->av_type != prov->av_type)
		OFI_NOMATCH(name, "av_type %d, not %d\n", prov->av_type,
			    user->av_type);
	return 0;
}

static int ofi_check_domain_attr(const char *name, const struct fi_info *info,
				 const struct fi_info *hints)
{
	const struct fi_domain_attr *user = hints->domain_attr;
	const struct fi_domain_attr *prov = info->domain_attr;

	if (!user)
		return 0;
	if (!prov)
		OFI_NOMATCH(name, "no domain attributes\n");
	if (user->name && (!prov->name || strcmp(user->name, prov->name)))
		OFI_NOMATCH(name, "domain %s, not %s\n",
			    prov->name ? prov->name : "(none)", user->name);
	if (ofi_check_domain_modes(name, user, prov))
		return -FI_ENODATA;
	OFI_CHECK_LIMIT(name, user, prov, mr_key_size);
	OFI_CHECK_LIMIT(name, user, prov, cq_data_size);
	OFI_CHECK_LIMIT(name, user, prov, cq_cnt);
	OFI_CHECK_LIMIT(name, user, prov, ep_cnt);
	OFI_CHECK_LIMIT(name, user, prov, tx_ctx_cnt);
	OFI_CHECK_LIMIT(name, user, prov, rx_ctx_cnt);
	OFI_CHECK_LIMIT(name, user, prov, max_ep_tx_ctx);
	OFI_CHECK_LIMIT(name, user, prov, max_ep_rx_ctx);
	OFI_CHECK_LIMIT(name, user, prov, max_ep_stx_ctx);
	OFI_CHECK_LIMIT(name, user, prov, max_ep_srx_ctx);
	OFI_CHECK_LIMIT(name, user, prov, cntr_cnt);
	OFI_CHECK_LIMIT(name, user, prov, mr_iov_limit);
	OFI_CHECK_LIMIT(name, user, prov, max_err_data);
	OFI_CHECK_LIMIT(name, user, prov, mr_cnt);
	OFI_CHECK_BITS(name, user, prov, caps);
	if (ofi_check_mode(name, prov->mode, user->mode))
		return -FI_ENODATA;
	if (user->auth_key_size && !prov->auth_key_size)
		OFI_NOMATCH(name, "no domain authorization keys\n");
	OFI_CHECK_LIMIT(name, user, prov, auth_key_size);
	return 0;
}

static int ofi_check_fabric_attr(const char *name, const struct fi_info *info,
				 const struct fi_info *hints)
{
	const struct fi_fabric_attr *user = hints->fabric_attr;
	const struct fi_fabric_attr *prov = info->fabric_attr;

	if (!user)
		return 0;
	if (!prov)
		OFI_NOMATCH(name, "no fabric attributes\n");
	if (user->name && (!prov->name || strcmp(user->name, prov->name)))
		OFI_NOMATCH(name, "fabric %s, not %s\n",
			    prov->name ? prov->name : "(none)", user->name);
	if (!ofi_prov_name_match(user->prov_name, prov->prov_name))
		OFI_NOMATCH(name, "not provider %s\n", user->prov_name);
	if (user->prov_version > prov->prov_version)
		OFI_NOMATCH(name, "provider version %#x too old\n",
			    prov->prov_version);
	return 0;
}

static bool ofi_addr_format_ok(uint32_t user, uint32_t prov)
{
	if (user == FI_FORMAT_UNSPEC || user == prov)
		return true;
	/* FI_SOCKADDR stands for any socket address family. */
	if (user == FI_SOCKADDR)
		return prov == FI_SOCKADDR_IN || prov == FI_SOCKADDR_IN6 ||
		       prov == FI_SOCKADDR_IB;
	if (prov == FI_SOCKADDR)
		return user == FI_SOCKADDR_IN || user == FI_SOCKADDR_IN6 ||
		       user == FI_SOCKADDR_IB;
	return false;
}

int ofi_check_info(const struct fi_provider *prov, uint32_t api_version,
		   const struct fi_info *info, const struct fi_info *hints)
{
	const char *name = prov && prov->name ? prov->name : "provider";

	if (!info)
		return -FI_EINVAL;
	if (!hints)
		return ofi_mr_old_style(api_version, FI_MR_UNSPEC)
			       ? ofi_check_mr_mode(name, api_version, info,
						   &(struct fi_info){0},
						   info->caps)
			       : 0;
	if (ofi_check_caps(name, info, hints))
		return -FI_ENODATA;
	if (ofi_check_mode(name, ofi_prov_mode(api_version, info, hints),
			   hints->mode))
		return -FI_ENODATA;
	if (!ofi_addr_format_ok(hints->addr_format, info->addr_format))
		OFI_NOMATCH(name, "address format %u, not %u\n",
			    info->addr_format, hints->addr_format);
	if (ofi_check_fabric_attr(name, info, hints) ||
	    ofi_check_domain_attr(name, info, hints) ||
	    ofi_check_ep_attr(name, info, hints) ||
	    ofi_check_tx_attr(name, info, hints) ||
	    ofi_check_rx_attr(name, info, hints))
		return -FI_ENODATA;
	return ofi_check_mr_mode(name, api_version, info, hints,
				 ofi_hint_caps(hints, info));
}

/*
 * Modifiers the application did not name are all implied for the primary
 * caps they modify (fi_getinfo(3), "primary modifiers").
 */
static uint64_t ofi_default_modifiers(uint64_t primary, uint64_t offered)
{
	uint64_t mods = 0;

	if (primary & (FI_MSG | FI_TAGGED | FI_MULTICAST | FI_COLLECTIVE |
		       FI_VARIABLE_MSG))
		mods |= FI_SEND | FI_RECV;
	if (primary & (FI_RMA | FI_ATOMIC))
		mods |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	return mods & offered;
}

static uint64_t ofi_trim_caps(uint64_t want, uint64_t offered)
{
	uint64_t primary = want & OFI_PRIMARY_CAPS;
	uint64_t mods = want & OFI_CAP_MODIFIERS;

	if (!mods)
		mods = ofi_default_modifiers(primary, offered);
	return primary | mods | (want & OFI_SECONDARY_CAPS) |
	       (offered & OFI_SECONDARY_CAPS);
}

static int ofi_dup_key(uint8_t **dst, size_t *dst_size, const uint8_t *key,
		       size_t size)
{
	uint8_t *copy;

	if (!key || !size)
		return 0;
	copy = malloc(size);
	if (!copy)
		return -FI_ENOMEM;
	memcpy(copy, key, size);
	free(*dst);
	*dst = copy;
	*dst_size = size;
	return 0;
}

static void ofi_alter_domain(uint32_t api_version, const struct fi_info *hints,
			     struct fi_info *info, uint64_t caps)
{
	struct fi_domain_attr *attr = info->domain_attr;
	const struct fi_domain_attr *user = hints ? hints->domain_attr : NULL;
	int bits = ofi_prov_mr_bits(info, caps);
	int user_mr = user ? user->mr_mode : FI_MR_UNSPEC;

	if (ofi_mr_old_style(api_version, user_mr)) {
		bits &= ~FI_MR_LOCAL;
		attr->mr_mode = bits ? FI_MR_BASIC : FI_MR_SCALABLE;
		if (user_mr == FI_MR_BASIC || user_mr == FI_MR_SCALABLE)
			attr->mr_mode = user_mr;
	} else {
		attr->mr_mode = bits;
	}
	attr->caps &= caps | OFI_DOMAIN_CAPS;
	if (!user)
		return;
	if (user->threading != FI_THREAD_UNSPEC)
		attr->threading = user->threading;
	if (user->control_progress != FI_PROGRESS_UNSPEC)
		attr->control_progress = user->control_progress;
	if (user->data_progress != FI_PROGRESS_UNSPEC)
		attr->data_progress = user->data_progress;
	if (user->resource_mgmt != FI_RM_UNSPEC)
		attr->resource_mgmt = user->resource_mgmt;
	if (user->av_type != FI_AV_UNSPEC)
		attr->av_type = user->av_type;
	if (user->caps)
		attr->caps = user->caps | (attr->caps & OFI_SECONDARY_CAPS);
	if (user->domain)
		attr->domain = user->domain;
}

int ofi_alter_info(const struct fi_provider *prov, uint32_t api_version,
		   const struct fi_info *hints, struct fi_info *info)
{
	uint64_t caps;
	int ret = 0;

	caps = hints && hints->caps
		       ? ofi_trim_caps(hints->caps, info->caps) & info->caps
		       : ofi_hint_caps(hints, info);
	info->caps = caps;
	info->mode = ofi_prov_mode(api_version, info, hints);
	if (info->tx_attr) {
		info->tx_attr->caps = (info->tx_attr->caps ? info->tx_attr->caps
							   : OFI_TX_CAPS) &
				      caps & OFI_TX_CAPS;
		if (hints && hints->tx_attr && hints->tx_attr->caps)
			info->tx_attr->caps &= ofi_trim_caps(
				hints->tx_attr->caps, info->tx_attr->caps);
		info->tx_attr->mode &= info->mode | ~(uint64_t)FI_LOCAL_MR;
		/* A candidate lists the flags it supports; the result
		 * carries the defaults asked for, none otherwise. */
		info->tx_attr->op_flags =
			hints && hints->tx_attr ? hints->tx_attr->op_flags : 0;
	}
	if (info->rx_attr) {
		info->rx_attr->caps = (info->rx_attr->caps ? info->rx_attr->caps
							   : OFI_RX_CAPS) &
				      caps & OFI_RX_CAPS;
		if (hints && hints->rx_attr && hints->rx_attr->caps)
			info->rx_attr->caps &= ofi_trim_caps(
				hints->rx_attr->caps, info->rx_attr->caps);
		info->rx_attr->mode &= info->mode | ~(uint64_t)FI_LOCAL_MR;
		info->rx_attr->op_flags =
			hints && hints->rx_attr ? hints->rx_attr->op_flags : 0;
	}
	if (info->domain_attr)
		ofi_alter_domain(api_version, hints, info, caps);

	if (hints && hints->handle && hints->handle->fclass == FI_CLASS_PEP)
		info->handle = hints->handle;
	if (hints && hints->ep_attr && info->ep_attr) {
		if (hints->ep_attr->mem_tag_format)
			info->ep_attr->mem_tag_format =
				hints->ep_attr->mem_tag_format;
		if (hints->ep_attr->tx_ctx_cnt)
			info->ep_attr->tx_ctx_cnt = hints->ep_attr->tx_ctx_cnt;
		if (hints->ep_attr->rx_ctx_cnt)
			info->ep_attr->rx_ctx_cnt = hints->ep_attr->rx_ctx_cnt;
		ret = ofi_dup_key(&info->ep_attr->auth_key,
				  &info->ep_attr->auth_key_size,
				  hints->ep_attr->auth_key,
				  hints->ep_attr->auth_key_size);
	}
	if (!ret && hints && hints->domain_attr && info->domain_attr)
		ret = ofi_dup_key(&info->domain_attr->auth_key,
				  &info->domain_attr->auth_key_size,
				  hints->domain_attr->auth_key,
				  hints->domain_attr->auth_key_size);
	if (ret)
		return ret;

	if (info->fabric_attr) {
		info->fabric_attr->prov_version = prov->version;
		info->fabric_attr->api_version = api_version;
	}
	return 0;
}
