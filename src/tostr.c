/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * src/tostr.c - owns fi_tostr() and fi_tostr_r(): the human-readable
 * rendering of every enum fi_type, byte-for-byte compatible with the text
 * libfabric 1.17 produces (fi_info -v and scripts parse it), plus our
 * extension values (FI_COMMIT_MANUAL mode bit, FI_COMMIT EQ event).
 */

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_trigger.h>
#include <rdma/providers/fi_log.h>

/* Extension values; fallbacks keep this file building on 1.17 headers. */
#ifndef FI_COMMIT_MANUAL
#define FI_COMMIT_MANUAL (1ULL << 50)
#endif
#ifndef FI_COMMIT
#define FI_COMMIT (FI_JOIN_COMPLETE + 1)
#endif
#ifndef FI_REVISION_VERSION
#define FI_REVISION_VERSION 0
#endif

#define TAB	       "    "
#define TOSTR_BUF_SIZE 8192

struct flag_name {
	uint64_t flag;
	const char *name;
};

/* clang-format off */
#define FLAG(f) { f, #f }
/* clang-format on */
#define NAME(v) [v] = #v

/*
 * Appends to the string already in buf.  The last byte of the buffer is
 * never handed to vsnprintf: 1.17 behaves that way, and reproducing it
 * keeps truncated output identical too.
 */
static void FI_FORMAT_PRINTF(3, 4)
	tostr_catf(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strnlen(buf, len);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used - 1, fmt, ap);
	va_end(ap);
}

static const char *str_or_null(const char *s)
{
	return s ? s : "(null)";
}

/* Lists are built as "A, B, " and the trailing separator is dropped. */
static void tostr_drop_comma(char *buf)
{
	size_t n = strlen(buf);

	if (n >= 2 && !strcmp(buf + n - 2, ", "))
		buf[n - 2] = '\0';
}

static void tostr_flags(char *buf, size_t len, uint64_t val,
			const struct flag_name *tab, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (val & tab[i].flag)
			tostr_catf(buf, len, "%s, ", tab[i].name);
	}
	tostr_drop_comma(buf);
}

static void tostr_enum(char *buf, size_t len, int val, const char *const *tab,
		       size_t count)
{
	const char *name = NULL;

	if (val >= 0 && (size_t)val < count)
		name = tab[val];
	tostr_catf(buf, len, "%s", name ? name : "Unknown");
}

/* Address formats and protocols reserve the high bit for providers. */
static void tostr_prov_enum(char *buf, size_t len, uint32_t val,
			    const char *const *tab, size_t count)
{
	if (val & FI_PROV_SPECIFIC) {
		tostr_catf(buf, len, "Provider specific");
		return;
	}
	tostr_enum(buf, len, (int)val, tab, count);
}

#define TOSTR_FLAGS(buf, len, val, tab)                                        \
	tostr_flags(buf, len, val, tab, sizeof(tab) / sizeof((tab)[0]))
#define TOSTR_ENUM(buf, len, val, tab)                                         \
	tostr_enum(buf, len, val, tab, sizeof(tab) / sizeof((tab)[0]))
#define TOSTR_PROV_ENUM(buf, len, val, tab)                                    \
	tostr_prov_enum(buf, len, val, tab, sizeof(tab) / sizeof((tab)[0]))

static const struct flag_name caps_names[] = {
	FLAG(FI_MSG),	       FLAG(FI_RMA),
	FLAG(FI_TAGGED),       FLAG(FI_ATOMIC),
	FLAG(FI_MULTICAST),    FLAG(FI_COLLECTIVE),
	FLAG(FI_READ),	       FLAG(FI_WRITE),
	FLAG(FI_RECV),	       FLAG(FI_SEND),
	FLAG(FI_REMOTE_READ),  FLAG(FI_REMOTE_WRITE),
	FLAG(FI_MULTI_RECV),   FLAG(FI_REMOTE_CQ_DATA),
	FLAG(FI_TRIGGER),      FLAG(FI_FENCE),
	FLAG(FI_VARIABLE_MSG), FLAG(FI_RMA_PMEM),
	FLAG(FI_SOURCE_ERR),   FLAG(FI_LOCAL_COMM),
	FLAG(FI_REMOTE_COMM),  FLAG(FI_SHARED_AV),
	FLAG(FI_RMA_EVENT),    FLAG(FI_SOURCE),
	FLAG(FI_NAMED_RX_CTX), FLAG(FI_DIRECTED_RECV),
	FLAG(FI_HMEM),
};

static const struct flag_name op_flag_names[] = {
	FLAG(FI_MULTICAST),
	FLAG(FI_MULTI_RECV),
	FLAG(FI_REMOTE_CQ_DATA),
	FLAG(FI_MORE),
	FLAG(FI_PEEK),
	FLAG(FI_TRIGGER),
	FLAG(FI_FENCE),
	FLAG(FI_COMPLETION),
	FLAG(FI_INJECT),
	FLAG(FI_INJECT_COMPLETE),
	FLAG(FI_TRANSMIT_COMPLETE),
	FLAG(FI_DELIVERY_COMPLETE),
	FLAG(FI_MATCH_COMPLETE),
	FLAG(FI_AFFINITY),
	FLAG(FI_CLAIM),
	FLAG(FI_DISCARD),
};

static const struct flag_name msg_order_names[] = {
	FLAG(FI_ORDER_RAR),	   FLAG(FI_ORDER_RAW),
	FLAG(FI_ORDER_RAS),	   FLAG(FI_ORDER_WAR),
	FLAG(FI_ORDER_WAW),	   FLAG(FI_ORDER_WAS),
	FLAG(FI_ORDER_SAR),	   FLAG(FI_ORDER_SAW),
	FLAG(FI_ORDER_SAS),	   FLAG(FI_ORDER_RMA_RAR),
	FLAG(FI_ORDER_RMA_RAW),	   FLAG(FI_ORDER_RMA_WAR),
	FLAG(FI_ORDER_RMA_WAW),	   FLAG(FI_ORDER_ATOMIC_RAR),
	FLAG(FI_ORDER_ATOMIC_RAW), FLAG(FI_ORDER_ATOMIC_WAR),
	FLAG(FI_ORDER_ATOMIC_WAW),
};

static const struct flag_name mode_names[] = {
	FLAG(FI_CONTEXT),	  FLAG(FI_MSG_PREFIX),
	FLAG(FI_ASYNC_IOV),	  FLAG(FI_RX_CQ_DATA),
	FLAG(FI_LOCAL_MR),	  FLAG(FI_NOTIFY_FLAGS_ONLY),
	FLAG(FI_RESTRICTED_COMP), FLAG(FI_CONTEXT2),
	FLAG(FI_BUFFERED_RECV),	  FLAG(FI_COMMIT_MANUAL),
};

static const struct flag_name cq_flag_names[] = {
	FLAG(FI_SEND),
	FLAG(FI_RECV),
	FLAG(FI_RMA),
	FLAG(FI_ATOMIC),
	FLAG(FI_MSG),
	FLAG(FI_TAGGED),
	FLAG(FI_READ),
	FLAG(FI_WRITE),
	FLAG(FI_REMOTE_READ),
	FLAG(FI_REMOTE_WRITE),
	FLAG(FI_REMOTE_CQ_DATA),
	FLAG(FI_MULTI_RECV),
	FLAG(FI_MORE),
	FLAG(FI_CLAIM),
};

static const struct flag_name mr_mode_names[] = {
	FLAG(FI_MR_BASIC),    FLAG(FI_MR_SCALABLE),   FLAG(FI_MR_LOCAL),
	FLAG(FI_MR_RAW),      FLAG(FI_MR_VIRT_ADDR),  FLAG(FI_MR_ALLOCATED),
	FLAG(FI_MR_PROV_KEY), FLAG(FI_MR_MMU_NOTIFY), FLAG(FI_MR_RMA_EVENT),
	FLAG(FI_MR_ENDPOINT), FLAG(FI_MR_HMEM),	      FLAG(FI_MR_COLLECTIVE),
};

static const char *const ep_type_names[] = {
	NAME(FI_EP_UNSPEC), NAME(FI_EP_MSG),	     NAME(FI_EP_DGRAM),
	NAME(FI_EP_RDM),    NAME(FI_EP_SOCK_STREAM), NAME(FI_EP_SOCK_DGRAM),
};

static const char *const addr_format_names[] = {
	NAME(FI_FORMAT_UNSPEC), NAME(FI_SOCKADDR),    NAME(FI_SOCKADDR_IN),
	NAME(FI_SOCKADDR_IN6),	NAME(FI_SOCKADDR_IB), NAME(FI_ADDR_PSMX),
	NAME(FI_ADDR_GNI),	NAME(FI_ADDR_BGQ),    NAME(FI_ADDR_MLX),
	NAME(FI_ADDR_STR),	NAME(FI_ADDR_PSMX2),  NAME(FI_ADDR_IB_UD),
	NAME(FI_ADDR_EFA),	NAME(FI_ADDR_PSMX3),  NAME(FI_ADDR_OPX),
	NAME(FI_ADDR_CXI),
};

static const char *const threading_names[] = {
	NAME(FI_THREAD_UNSPEC),	    NAME(FI_THREAD_SAFE),
	NAME(FI_THREAD_FID),	    NAME(FI_THREAD_DOMAIN),
	NAME(FI_THREAD_COMPLETION), NAME(FI_THREAD_ENDPOINT),
};

static const char *const progress_names[] = {
	NAME(FI_PROGRESS_UNSPEC),
	NAME(FI_PROGRESS_AUTO),
	NAME(FI_PROGRESS_MANUAL),
};

static const char *const rm_names[] = {
	NAME(FI_RM_UNSPEC),
	NAME(FI_RM_DISABLED),
	NAME(FI_RM_ENABLED),
};

/* FI_PROTO_MXM and FI_PROTO_MRAIL are retired: 1.17 prints them Unknown. */
static const char *const protocol_names[] = {
	NAME(FI_PROTO_UNSPEC),	 NAME(FI_PROTO_RDMA_CM_IB_RC),
	NAME(FI_PROTO_IWARP),	 NAME(FI_PROTO_IB_UD),
	NAME(FI_PROTO_PSMX),	 NAME(FI_PROTO_UDP),
	NAME(FI_PROTO_SOCK_TCP), NAME(FI_PROTO_IWARP_RDM),
	NAME(FI_PROTO_IB_RDM),	 NAME(FI_PROTO_GNI),
	NAME(FI_PROTO_RXM),	 NAME(FI_PROTO_RXD),
	NAME(FI_PROTO_MLX),	 NAME(FI_PROTO_NETWORKDIRECT),
	NAME(FI_PROTO_PSMX2),	 NAME(FI_PROTO_SHM),
	NAME(FI_PROTO_RSTREAM),	 NAME(FI_PROTO_RDMA_CM_IB_XRC),
	NAME(FI_PROTO_EFA),	 NAME(FI_PROTO_PSMX3),
	NAME(FI_PROTO_RXM_TCP),	 NAME(FI_PROTO_OPX),
	NAME(FI_PROTO_CXI),	 NAME(FI_PROTO_XNET),
};

static const char *const av_type_names[] = {
	NAME(FI_AV_UNSPEC),
	NAME(FI_AV_MAP),
	NAME(FI_AV_TABLE),
};

static const char *const atomic_type_names[] = {
	NAME(FI_INT8),		NAME(FI_UINT8),
	NAME(FI_INT16),		NAME(FI_UINT16),
	NAME(FI_INT32),		NAME(FI_UINT32),
	NAME(FI_INT64),		NAME(FI_UINT64),
	NAME(FI_FLOAT),		NAME(FI_DOUBLE),
	NAME(FI_FLOAT_COMPLEX), NAME(FI_DOUBLE_COMPLEX),
	NAME(FI_LONG_DOUBLE),	NAME(FI_LONG_DOUBLE_COMPLEX),
	NAME(FI_INT128),	NAME(FI_UINT128),
};

static const char *const atomic_op_names[] = {
	NAME(FI_MIN),	   NAME(FI_MAX),	 NAME(FI_SUM),
	NAME(FI_PROD),	   NAME(FI_LOR),	 NAME(FI_LAND),
	NAME(FI_BOR),	   NAME(FI_BAND),	 NAME(FI_LXOR),
	NAME(FI_BXOR),	   NAME(FI_ATOMIC_READ), NAME(FI_ATOMIC_WRITE),
	NAME(FI_CSWAP),	   NAME(FI_CSWAP_NE),	 NAME(FI_CSWAP_LE),
	NAME(FI_CSWAP_LT), NAME(FI_CSWAP_GE),	 NAME(FI_CSWAP_GT),
	NAME(FI_MSWAP),
};

static const char *const eq_event_names[] = {
	NAME(FI_NOTIFY),	NAME(FI_CONNREQ),     NAME(FI_CONNECTED),
	NAME(FI_SHUTDOWN),	NAME(FI_MR_COMPLETE), NAME(FI_AV_COMPLETE),
	NAME(FI_JOIN_COMPLETE), NAME(FI_COMMIT),
};

static const char *const op_type_names[] = {
	NAME(FI_OP_RECV),	    NAME(FI_OP_SEND),
	NAME(FI_OP_TRECV),	    NAME(FI_OP_TSEND),
	NAME(FI_OP_READ),	    NAME(FI_OP_WRITE),
	NAME(FI_OP_ATOMIC),	    NAME(FI_OP_FETCH_ATOMIC),
	NAME(FI_OP_COMPARE_ATOMIC), NAME(FI_OP_CNTR_SET),
	NAME(FI_OP_CNTR_ADD),
};

static const char *const collective_op_names[] = {
	NAME(FI_BARRIER),   NAME(FI_BROADCAST), NAME(FI_ALLTOALL),
	NAME(FI_ALLREDUCE), NAME(FI_ALLGATHER), NAME(FI_REDUCE_SCATTER),
	NAME(FI_REDUCE),    NAME(FI_SCATTER),	NAME(FI_GATHER),
};

static const char *const hmem_iface_names[] = {
	NAME(FI_HMEM_SYSTEM), NAME(FI_HMEM_CUDA),   NAME(FI_HMEM_ROCR),
	NAME(FI_HMEM_ZE),     NAME(FI_HMEM_NEURON), NAME(FI_HMEM_SYNAPSEAI),
};

static const char *const cq_format_names[] = {
	NAME(FI_CQ_FORMAT_UNSPEC), NAME(FI_CQ_FORMAT_CONTEXT),
	NAME(FI_CQ_FORMAT_MSG),	   NAME(FI_CQ_FORMAT_DATA),
	NAME(FI_CQ_FORMAT_TAGGED),
};

/* Log names are the spellings accepted by FI_LOG_LEVEL / FI_LOG_SUBSYS. */
static const char *const log_level_names[] = {
	[FI_LOG_WARN] = "warn",
	[FI_LOG_TRACE] = "trace",
	[FI_LOG_INFO] = "info",
	[FI_LOG_DEBUG] = "debug",
};

static const char *const log_subsys_names[] = {
	[FI_LOG_CORE] = "core",	      [FI_LOG_FABRIC] = "fabric",
	[FI_LOG_DOMAIN] = "domain",   [FI_LOG_EP_CTRL] = "ep_ctrl",
	[FI_LOG_EP_DATA] = "ep_data", [FI_LOG_AV] = "av",
	[FI_LOG_CQ] = "cq",	      [FI_LOG_EQ] = "eq",
	[FI_LOG_MR] = "mr",	      [FI_LOG_CNTR] = "cntr",
};

static void tostr_comp_order(char *buf, size_t len, uint64_t order)
{
	if (!(order & FI_ORDER_STRICT))
		tostr_catf(buf, len, "FI_ORDER_NONE, ");
	else if ((order & FI_ORDER_STRICT) == FI_ORDER_STRICT)
		tostr_catf(buf, len, "FI_ORDER_STRICT, ");
	if (order & FI_ORDER_DATA)
		tostr_catf(buf, len, "FI_ORDER_DATA, ");
	tostr_drop_comma(buf);
}

/*
 * A fid that can describe itself appends its own text; it gets the room
 * left counted the way 1.17 counts it so provider output lines up.
 */
static void tostr_fid(char *buf, size_t len, const char *label,
		      const struct fid *fid)
{
	if (!fid || !FI_CHECK_OP(fid->ops, struct fi_ops, tostr)) {
		tostr_catf(buf, len, "%s%p\n", label, (void *)fid);
		return;
	}
	fid->ops->tostr(fid, buf, len - strnlen(buf, len));
}

static void tostr_sin(char *out, size_t n, const void *addr)
{
	const struct sockaddr_in *sin = addr;
	char ip[INET6_ADDRSTRLEN];

	if (!inet_ntop(sin->sin_family, &sin->sin_addr, ip, sizeof(ip)))
		return;
	snprintf(out, n, "fi_sockaddr_in://%s:%" PRIu16, ip,
		 ntohs(sin->sin_port));
}

static void tostr_sin6(char *out, size_t n, const void *addr)
{
	const struct sockaddr_in6 *sin6 = addr;
	char ip[INET6_ADDRSTRLEN];

	if (!inet_ntop(sin6->sin6_family, &sin6->sin6_addr, ip, sizeof(ip)))
		return;
	snprintf(out, n, "fi_sockaddr_in6://[%s]:%" PRIu16, ip,
		 ntohs(sin6->sin6_port));
}

static uint64_t load_be64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

/* struct sockaddr_ib layout: family, pkey, flowinfo, gid, sid, mask, scope */
static void tostr_sib(char *out, size_t n, const uint8_t *addr)
{
	char gid[INET6_ADDRSTRLEN];
	uint16_t pkey;

	if (!inet_ntop(AF_INET6, addr + 8, gid, sizeof(gid)))
		return;
	pkey = (uint16_t)((addr[2] << 8) | addr[3]);
	snprintf(out, n,
		 "fi_sockaddr_ib://[%s]:0x%" PRIx16 ":0x%" PRIx16 ":0x%" PRIx8,
		 gid, pkey, (uint16_t)((load_be64(addr + 24) >> 16) & 0xfff),
		 (uint8_t)(load_be64(addr + 40) & 0xff));
}

static void tostr_sockaddr(char *out, size_t n, const void *addr)
{
	const struct sockaddr *sa = addr;

	if (sa->sa_family == AF_INET)
		tostr_sin(out, n, addr);
	else if (sa->sa_family == AF_INET6)
		tostr_sin6(out, n, addr);
}

static void tostr_ib_ud(char *out, size_t n, const void *addr)
{
	char gid[INET6_ADDRSTRLEN];
	uint32_t qpn;
	uint16_t lid, pkey;
	uint8_t sl;

	if (!inet_ntop(AF_INET6, addr, gid, sizeof(gid)))
		return;
	memcpy(&qpn, (const uint8_t *)addr + 16, sizeof(qpn));
	memcpy(&lid, (const uint8_t *)addr + 20, sizeof(lid));
	memcpy(&pkey, (const uint8_t *)addr + 22, sizeof(pkey));
	sl = ((const uint8_t *)addr)[26];
	snprintf(out, n,
		 "fi_addr_ib_ud://%s:%" PRIx32 "/%" PRIx16 "/%" PRIx16
		 "/%" PRIx8,
		 gid, qpn, lid, pkey, sl);
}

static void tostr_efa(char *out, size_t n, const void *addr)
{
	char gid[INET6_ADDRSTRLEN];
	uint16_t qpn;
	uint32_t qkey;

	if (!inet_ntop(AF_INET6, addr, gid, sizeof(gid)))
		return;
	memcpy(&qpn, (const uint8_t *)addr + 16, sizeof(qpn));
	memcpy(&qkey, (const uint8_t *)addr + 20, sizeof(qkey));
	snprintf(out, n, "fi_addr_efa://[%s]:%" PRIu16 ":%" PRIu32, gid, qpn,
		 qkey);
}

static void tostr_u64s(char *out, size_t n, const char *scheme,
		       const void *addr, int count)
{
	uint64_t v[4];

	memcpy(v, addr, sizeof(v[0]) * count);
	if (count == 1)
		snprintf(out, n, "%s://%" PRIx64, scheme, v[0]);
	else if (count == 2)
		snprintf(out, n, "%s://%" PRIx64 ":%" PRIx64, scheme, v[0],
			 v[1]);
	else
		snprintf(out, n,
			 "%s://%" PRIx64 ":%" PRIx64 ":%" PRIx64 ":%" PRIx64,
			 scheme, v[0], v[1], v[2], v[3]);
}

/* Writes the address text into out[0..n); unknown formats write nothing. */
static void tostr_addr_body(char *out, size_t n, uint32_t format,
			    const void *addr)
{
	uint64_t u64;
	uint32_t u32;

	switch (format) {
	case FI_SOCKADDR:
		tostr_sockaddr(out, n, addr);
		break;
	case FI_SOCKADDR_IN:
		tostr_sin(out, n, addr);
		break;
	case FI_SOCKADDR_IN6:
		tostr_sin6(out, n, addr);
		break;
	case FI_SOCKADDR_IB:
		tostr_sib(out, n, addr);
		break;
	case FI_ADDR_PSMX:
		tostr_u64s(out, n, "fi_addr_psmx", addr, 1);
		break;
	case FI_ADDR_GNI:
		tostr_u64s(out, n, "fi_addr_gni", addr, 1);
		break;
	case FI_ADDR_BGQ:
		snprintf(out, n, "fi_addr_bgq://%p", addr);
		break;
	case FI_ADDR_MLX:
		snprintf(out, n, "fi_addr_mlx://%p", addr);
		break;
	case FI_ADDR_STR:
		snprintf(out, n, "%s", (const char *)addr);
		break;
	case FI_ADDR_PSMX2:
		tostr_u64s(out, n, "fi_addr_psmx2", addr, 2);
		break;
	case FI_ADDR_IB_UD:
		tostr_ib_ud(out, n, addr);
		break;
	case FI_ADDR_EFA:
		tostr_efa(out, n, addr);
		break;
	case FI_ADDR_PSMX3:
		tostr_u64s(out, n, "fi_addr_psmx3", addr, 4);
		break;
	case FI_ADDR_OPX:
		memcpy(&u64, addr, sizeof(u64));
		snprintf(out, n, "fi_addr_opx://%016" PRIx64, u64);
		break;
	case FI_ADDR_CXI:
		memcpy(&u32, addr, sizeof(u32));
		snprintf(out, n, "fi_addr_cxi://0x%08" PRIx32, u32);
		break;
	default:
		break;
	}
}

static void tostr_addr(char *buf, size_t len, uint32_t format, const void *addr)
{
	size_t used = strnlen(buf, len);

	if (used >= len)
		return;
	if (!addr) {
		tostr_catf(buf + used, len - used, "(null)");
		return;
	}
	tostr_addr_body(buf + used, len - used, format, addr);
}

static void tostr_tx_attr(char *buf, size_t len, const struct fi_tx_attr *attr,
			  const char *prefix)
{
	if (!attr) {
		tostr_catf(buf, len, "%sfi_tx_attr: (null)\n", prefix);
		return;
	}
	tostr_catf(buf, len, "%sfi_tx_attr:\n", prefix);
	tostr_catf(buf, len, "%s%scaps: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->caps, caps_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%smode: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->mode, mode_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%sop_flags: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->op_flags, op_flag_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%smsg_order: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->msg_order, msg_order_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%scomp_order: [ ", prefix, TAB);
	tostr_comp_order(buf, len, attr->comp_order);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%sinject_size: %zu\n", prefix, TAB,
		   attr->inject_size);
	tostr_catf(buf, len, "%s%ssize: %zu\n", prefix, TAB, attr->size);
	tostr_catf(buf, len, "%s%siov_limit: %zu\n", prefix, TAB,
		   attr->iov_limit);
	tostr_catf(buf, len, "%s%srma_iov_limit: %zu\n", prefix, TAB,
		   attr->rma_iov_limit);
	tostr_catf(buf, len, "%s%stclass: 0x%" PRIx32 "\n", prefix, TAB,
		   attr->tclass);
}

static void tostr_rx_attr(char *buf, size_t len, const struct fi_rx_attr *attr,
			  const char *prefix)
{
	if (!attr) {
		tostr_catf(buf, len, "%sfi_rx_attr: (null)\n", prefix);
		return;
	}
	tostr_catf(buf, len, "%sfi_rx_attr:\n", prefix);
	tostr_catf(buf, len, "%s%scaps: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->caps, caps_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%smode: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->mode, mode_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%sop_flags: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->op_flags, op_flag_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%smsg_order: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->msg_order, msg_order_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%scomp_order: [ ", prefix, TAB);
	tostr_comp_order(buf, len, attr->comp_order);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%stotal_buffered_recv: %zu\n", prefix, TAB,
		   attr->total_buffered_recv);
	tostr_catf(buf, len, "%s%ssize: %zu\n", prefix, TAB, attr->size);
	tostr_catf(buf, len, "%s%siov_limit: %zu\n", prefix, TAB,
		   attr->iov_limit);
}

static void tostr_ctx_cnt(char *buf, size_t len, const char *prefix,
			  const char *name, size_t cnt)
{
	if (cnt == FI_SHARED_CONTEXT)
		tostr_catf(buf, len, "%s%s%s: FI_SHARED_CONTEXT\n", prefix, TAB,
			   name);
	else
		tostr_catf(buf, len, "%s%s%s: %zu\n", prefix, TAB, name, cnt);
}

static void tostr_ep_attr(char *buf, size_t len, const struct fi_ep_attr *attr,
			  const char *prefix)
{
	if (!attr) {
		tostr_catf(buf, len, "%sfi_ep_attr: (null)\n", prefix);
		return;
	}
	tostr_catf(buf, len, "%sfi_ep_attr:\n", prefix);
	tostr_catf(buf, len, "%s%stype: ", prefix, TAB);
	TOSTR_ENUM(buf, len, attr->type, ep_type_names);
	tostr_catf(buf, len, "\n");
	tostr_catf(buf, len, "%s%sprotocol: ", prefix, TAB);
	TOSTR_PROV_ENUM(buf, len, attr->protocol, protocol_names);
	tostr_catf(buf, len, "\n");
	tostr_catf(buf, len, "%s%sprotocol_version: %d\n", prefix, TAB,
		   (int)attr->protocol_version);
	tostr_catf(buf, len, "%s%smax_msg_size: %zu\n", prefix, TAB,
		   attr->max_msg_size);
	tostr_catf(buf, len, "%s%smsg_prefix_size: %zu\n", prefix, TAB,
		   attr->msg_prefix_size);
	tostr_catf(buf, len, "%s%smax_order_raw_size: %zu\n", prefix, TAB,
		   attr->max_order_raw_size);
	tostr_catf(buf, len, "%s%smax_order_war_size: %zu\n", prefix, TAB,
		   attr->max_order_war_size);
	tostr_catf(buf, len, "%s%smax_order_waw_size: %zu\n", prefix, TAB,
		   attr->max_order_waw_size);
	tostr_catf(buf, len, "%s%smem_tag_format: 0x%016" PRIx64 "\n", prefix,
		   TAB, attr->mem_tag_format);
	tostr_ctx_cnt(buf, len, prefix, "tx_ctx_cnt", attr->tx_ctx_cnt);
	tostr_ctx_cnt(buf, len, prefix, "rx_ctx_cnt", attr->rx_ctx_cnt);
	tostr_catf(buf, len, "%s%sauth_key_size: %zu\n", prefix, TAB,
		   attr->auth_key_size);
}

static void tostr_domain_enums(char *buf, size_t len,
			       const struct fi_domain_attr *attr,
			       const char *prefix)
{
	tostr_catf(buf, len, "%s%sthreading: ", prefix, TAB);
	TOSTR_ENUM(buf, len, attr->threading, threading_names);
	tostr_catf(buf, len, "\n");
	tostr_catf(buf, len, "%s%scontrol_progress: ", prefix, TAB);
	TOSTR_ENUM(buf, len, attr->control_progress, progress_names);
	tostr_catf(buf, len, "\n");
	tostr_catf(buf, len, "%s%sdata_progress: ", prefix, TAB);
	TOSTR_ENUM(buf, len, attr->data_progress, progress_names);
	tostr_catf(buf, len, "\n");
	tostr_catf(buf, len, "%s%sresource_mgmt: ", prefix, TAB);
	TOSTR_ENUM(buf, len, attr->resource_mgmt, rm_names);
	tostr_catf(buf, len, "\n");
	tostr_catf(buf, len, "%s%sav_type: ", prefix, TAB);
	TOSTR_ENUM(buf, len, attr->av_type, av_type_names);
	tostr_catf(buf, len, "\n");
	tostr_catf(buf, len, "%s%smr_mode: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, (uint64_t)(unsigned int)attr->mr_mode,
		    mr_mode_names);
	tostr_catf(buf, len, " ]\n");
}

static void tostr_domain_counts(char *buf, size_t len,
				const struct fi_domain_attr *attr,
				const char *prefix)
{
	static const struct {
		const char *name;
		size_t offset;
	} fields[] = {
#define DOM_FIELD(f) {#f, offsetof(struct fi_domain_attr, f)}
		DOM_FIELD(mr_key_size),	   DOM_FIELD(cq_data_size),
		DOM_FIELD(cq_cnt),	   DOM_FIELD(ep_cnt),
		DOM_FIELD(tx_ctx_cnt),	   DOM_FIELD(rx_ctx_cnt),
		DOM_FIELD(max_ep_tx_ctx),  DOM_FIELD(max_ep_rx_ctx),
		DOM_FIELD(max_ep_stx_ctx), DOM_FIELD(max_ep_srx_ctx),
		DOM_FIELD(cntr_cnt),	   DOM_FIELD(mr_iov_limit),
#undef DOM_FIELD
	};
	size_t i, val;

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		memcpy(&val, (const char *)attr + fields[i].offset,
		       sizeof(val));
		tostr_catf(buf, len, "%s%s%s: %zu\n", prefix, TAB,
			   fields[i].name, val);
	}
}

static void tostr_domain_attr(char *buf, size_t len,
			      const struct fi_domain_attr *attr,
			      const char *prefix)
{
	if (!attr) {
		tostr_catf(buf, len, "%sfi_domain_attr: (null)\n", prefix);
		return;
	}
	tostr_catf(buf, len, "%sfi_domain_attr:\n", prefix);
	/* 1.17 shows only the low 32 bits of the domain pointer. */
	tostr_catf(buf, len, "%s%sdomain: 0x%x\n", prefix, TAB,
		   (unsigned int)(uintptr_t)attr->domain);
	tostr_catf(buf, len, "%s%sname: %s\n", prefix, TAB,
		   str_or_null(attr->name));
	tostr_domain_enums(buf, len, attr, prefix);
	tostr_domain_counts(buf, len, attr, prefix);
	tostr_catf(buf, len, "%s%scaps: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->caps, caps_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%smode: [ ", prefix, TAB);
	TOSTR_FLAGS(buf, len, attr->mode, mode_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%s%sauth_key_size: %zu\n", prefix, TAB,
		   attr->auth_key_size);
	tostr_catf(buf, len, "%s%smax_err_data: %zu\n", prefix, TAB,
		   attr->max_err_data);
	tostr_catf(buf, len, "%s%smr_cnt: %zu\n", prefix, TAB, attr->mr_cnt);
	tostr_catf(buf, len, "%s%stclass: 0x%" PRIx32 "\n", prefix, TAB,
		   attr->tclass);
}

static void tostr_fabric_attr(char *buf, size_t len,
			      const struct fi_fabric_attr *attr,
			      const char *prefix)
{
	if (!attr) {
		tostr_catf(buf, len, "%sfi_fabric_attr: (null)\n", prefix);
		return;
	}
	tostr_catf(buf, len, "%sfi_fabric_attr:\n", prefix);
	tostr_catf(buf, len, "%s%sname: %s\n", prefix, TAB,
		   str_or_null(attr->name));
	tostr_catf(buf, len, "%s%sprov_name: %s\n", prefix, TAB,
		   str_or_null(attr->prov_name));
	tostr_catf(buf, len, "%s%sprov_version: %" PRIu32 ".%" PRIu32 "\n",
		   prefix, TAB, FI_MAJOR(attr->prov_version),
		   FI_MINOR(attr->prov_version));
	tostr_catf(buf, len, "%s%sapi_version: %" PRIu32 ".%" PRIu32 "\n",
		   prefix, TAB, FI_MAJOR(attr->api_version),
		   FI_MINOR(attr->api_version));
}

static void tostr_info(char *buf, size_t len, const struct fi_info *info)
{
	tostr_catf(buf, len, "fi_info:\n");
	tostr_catf(buf, len, "%scaps: [ ", TAB);
	TOSTR_FLAGS(buf, len, info->caps, caps_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%smode: [ ", TAB);
	TOSTR_FLAGS(buf, len, info->mode, mode_names);
	tostr_catf(buf, len, " ]\n");
	tostr_catf(buf, len, "%saddr_format: ", TAB);
	TOSTR_PROV_ENUM(buf, len, info->addr_format, addr_format_names);
	tostr_catf(buf, len, "\n");
	tostr_catf(buf, len, "%ssrc_addrlen: %zu\n", TAB, info->src_addrlen);
	tostr_catf(buf, len, "%sdest_addrlen: %zu\n", TAB, info->dest_addrlen);
	tostr_catf(buf, len, "%ssrc_addr: ", TAB);
	tostr_addr(buf, len, info->addr_format, info->src_addr);
	tostr_catf(buf, len, "\n");
	tostr_catf(buf, len, "%sdest_addr: ", TAB);
	tostr_addr(buf, len, info->addr_format, info->dest_addr);
	tostr_catf(buf, len, "\n");
	tostr_fid(buf, len, TAB "handle: ", info->handle);
	tostr_tx_attr(buf, len, info->tx_attr, TAB);
	tostr_rx_attr(buf, len, info->rx_attr, TAB);
	tostr_ep_attr(buf, len, info->ep_attr, TAB);
	tostr_domain_attr(buf, len, info->domain_attr, TAB);
	tostr_fabric_attr(buf, len, info->fabric_attr, TAB);
	tostr_fid(buf, len, TAB "nic: ", (const struct fid *)info->nic);
}

static void tostr_scalar(char *buf, size_t len, const void *data,
			 enum fi_type type)
{
	int val = *(const int *)data;

	switch (type) {
	case FI_TYPE_EP_TYPE:
		TOSTR_ENUM(buf, len, val, ep_type_names);
		break;
	case FI_TYPE_ADDR_FORMAT:
		TOSTR_PROV_ENUM(buf, len, (uint32_t)val, addr_format_names);
		break;
	case FI_TYPE_THREADING:
		TOSTR_ENUM(buf, len, val, threading_names);
		break;
	case FI_TYPE_PROGRESS:
		TOSTR_ENUM(buf, len, val, progress_names);
		break;
	case FI_TYPE_PROTOCOL:
		TOSTR_PROV_ENUM(buf, len, (uint32_t)val, protocol_names);
		break;
	case FI_TYPE_AV_TYPE:
		TOSTR_ENUM(buf, len, val, av_type_names);
		break;
	case FI_TYPE_ATOMIC_TYPE:
		TOSTR_ENUM(buf, len, val, atomic_type_names);
		break;
	case FI_TYPE_ATOMIC_OP:
		TOSTR_ENUM(buf, len, val, atomic_op_names);
		break;
	case FI_TYPE_EQ_EVENT:
		TOSTR_ENUM(buf, len, val, eq_event_names);
		break;
	case FI_TYPE_OP_TYPE:
		TOSTR_ENUM(buf, len, val, op_type_names);
		break;
	case FI_TYPE_COLLECTIVE_OP:
		TOSTR_ENUM(buf, len, val, collective_op_names);
		break;
	case FI_TYPE_HMEM_IFACE:
		TOSTR_ENUM(buf, len, val, hmem_iface_names);
		break;
	case FI_TYPE_CQ_FORMAT:
		TOSTR_ENUM(buf, len, val, cq_format_names);
		break;
	case FI_TYPE_LOG_LEVEL:
		TOSTR_ENUM(buf, len, val, log_level_names);
		break;
	case FI_TYPE_LOG_SUBSYS:
		TOSTR_ENUM(buf, len, val, log_subsys_names);
		break;
	case FI_TYPE_MR_MODE:
		TOSTR_FLAGS(buf, len, (uint64_t)(unsigned int)val,
			    mr_mode_names);
		break;
	default:
		tostr_catf(buf, len, "Unknown type");
		break;
	}
}

static void tostr_flag_type(char *buf, size_t len, uint64_t val,
			    enum fi_type type)
{
	switch (type) {
	case FI_TYPE_CAPS:
		TOSTR_FLAGS(buf, len, val, caps_names);
		break;
	case FI_TYPE_OP_FLAGS:
		TOSTR_FLAGS(buf, len, val, op_flag_names);
		break;
	case FI_TYPE_MSG_ORDER:
		TOSTR_FLAGS(buf, len, val, msg_order_names);
		break;
	case FI_TYPE_MODE:
		TOSTR_FLAGS(buf, len, val, mode_names);
		break;
	default:
		TOSTR_FLAGS(buf, len, val, cq_flag_names);
		break;
	}
}

char *fi_tostr_r(char *buf, size_t len, const void *data, enum fi_type datatype)
{
	uint64_t val64;

	if (!buf || !len || !data)
		return NULL;

	buf[0] = '\0';
	switch (datatype) {
	case FI_TYPE_INFO:
		tostr_info(buf, len, data);
		break;
	case FI_TYPE_TX_ATTR:
		tostr_tx_attr(buf, len, data, "");
		break;
	case FI_TYPE_RX_ATTR:
		tostr_rx_attr(buf, len, data, "");
		break;
	case FI_TYPE_EP_ATTR:
		tostr_ep_attr(buf, len, data, "");
		break;
	case FI_TYPE_DOMAIN_ATTR:
		tostr_domain_attr(buf, len, data, "");
		break;
	case FI_TYPE_FABRIC_ATTR:
		tostr_fabric_attr(buf, len, data, "");
		break;
	case FI_TYPE_CAPS:
	case FI_TYPE_OP_FLAGS:
	case FI_TYPE_MSG_ORDER:
	case FI_TYPE_MODE:
	case FI_TYPE_CQ_EVENT_FLAGS:
		memcpy(&val64, data, sizeof(val64));
		tostr_flag_type(buf, len, val64, datatype);
		break;
	case FI_TYPE_VERSION:
		tostr_catf(buf, len, "%d.%d.%d", FI_MAJOR_VERSION,
			   FI_MINOR_VERSION, FI_REVISION_VERSION);
		break;
	case FI_TYPE_FID:
		tostr_fid(buf, len, "fid: ", data);
		break;
	default:
		tostr_scalar(buf, len, data, datatype);
		break;
	}
	return buf;
}

char *fi_tostr(const void *data, enum fi_type datatype)
{
	static __thread char buf[TOSTR_BUF_SIZE];

	return fi_tostr_r(buf, sizeof(buf), data, datatype);
}
