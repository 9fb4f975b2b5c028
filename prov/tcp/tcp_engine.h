/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * tcp_engine.h - tcp's engine as the providers built on it see it: the
 * candidate fi_info and discovery, the fabric and domain calls, and the
 * description each provider gives of what it offers beyond tcp(7). A
 * provider built on the engine includes this header only; the engine's
 * objects (tcp.h) stay its own.
 *
 * The engine asks the description, never the provider's identity, where
 * what it answers depends on what the provider promises: scalable
 * endpoints (tcp_sep.c), named AVs shared between processes, receive
 * context bits in fi_addrs, triggered operations and deferred work
 * (util_trigger.c). The provider adds its own endpoint types (datagrams,
 * say) around the domain calls it takes from here.
 */
#ifndef TCP_ENGINE_H
#define TCP_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "ofi_util.h"

/* Also shm's (SHM_IOV_LIMIT): an op may take the same-host path. */
#define TCP_IOV_LIMIT 8
/* Unexpected payload bytes one endpoint buffers before it stalls. */
#define TCP_UNEXP_MAX (64ULL << 20)
/* Contexts of one scalable endpoint (tcp_sep.c). */
#define TCP_SEP_CTX_MAX OFI_SEP_CTX_MAX
/* The most fi_av_attr.rx_ctx_bits: the wire's rx_ctx is 16 bits. */
#define TCP_RX_CTX_BITS 16

/*
 * What a provider on the engine offers beyond tcp(7), given once per
 * provider at tcp_domain_open_as and read from its domains. tcp's own
 * offers none of it.
 */
struct tcp_engine_desc {
	/* fi_scalable_ep on RDM and MSG endpoints (tcp_sep.c) */
	bool scalable_ep;
	/* FI_SHARED_AV: named AVs shared between processes */
	bool shared_av;
	/* FI_TRIGGER, FI_FENCE and FI_QUEUE_WORK (util_trigger.c) */
	bool trigger;
	/* The most fi_av_attr.rx_ctx_bits its AVs take (FI_NAMED_RX_CTX),
	 * at most TCP_RX_CTX_BITS */
	uint8_t max_rx_ctx_bits;
};

/* tcp_init.c: tcp's candidate, discovery, parameters and fabric calls */
extern const struct fi_info tcp_info_template;
extern const struct fi_ops_fabric tcp_fabric_ops;
/* tcp's discovery for @prov (its name, parameters) with template @tmpl. */
int tcp_getinfo_as(struct fi_provider *prov, const struct fi_info *tmpl,
		   uint32_t version, const char *node, const char *service,
		   uint64_t flags, const struct fi_info *hints,
		   struct fi_info **info);
/* The candidate format and endpoint type (any) the hints and node ask. */
int tcp_hint_kind(const char *node, const struct fi_info *hints,
		  uint32_t *format, enum fi_ep_type *type);
/* One candidate of @type from @tmpl (trimmed to it) in @format. */
int tcp_getinfo_one(struct fi_provider *prov, const struct fi_info *tmpl,
		    uint32_t version, const char *node, const char *service,
		    uint64_t flags, const struct fi_info *hints,
		    uint32_t format, enum fi_ep_type type,
		    struct fi_info **info);
/* FI_<PROV>_IFACE, _MAX_UNEXP and _SHM, read per domain's provider. */
void tcp_define_params(struct fi_provider *prov);

/* tcp_domain.c */
extern const struct fi_ops_domain tcp_domain_ops;
/* A domain of the engine for the provider whose fabric @fabric is, with
 * what it offers (@desc, which must outlive the domain). */
int tcp_domain_open_as(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **domain, void *context,
		       const struct tcp_engine_desc *desc);

/* Whether @attr asks for FI_PROGRESS_AUTO (data or, with @control,
 * connection management): what fi_getinfo echoed from the hints. */
static inline bool tcp_attr_auto(const struct fi_domain_attr *attr, bool data,
				 bool control)
{
	return attr &&
	       ((data && attr->data_progress == FI_PROGRESS_AUTO) ||
		(control && attr->control_progress == FI_PROGRESS_AUTO));
}

#endif /* TCP_ENGINE_H */
