/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * providers/fi_log.h - logging for the core and providers: the level and
 * subsystem enums, the three core entry points and the FI_WARN / FI_INFO /
 * FI_DBG family of macros built on them.
 */
#ifndef FI_LOG_H
#define FI_LOG_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Values index FI_LOG_SUBSYS-style filters in the core: order is ABI. */
enum fi_log_subsys {
	FI_LOG_CORE,
	FI_LOG_FABRIC,
	FI_LOG_DOMAIN,
	FI_LOG_EP_CTRL,
	FI_LOG_EP_DATA,
	FI_LOG_AV,
	FI_LOG_CQ,
	FI_LOG_EQ,
	FI_LOG_MR,
	FI_LOG_CNTR,
	FI_LOG_SUBSYS_MAX
};

/* Lower value = more important; FI_LOG_LEVEL=x enables x and below. */
enum fi_log_level {
	FI_LOG_WARN,
	FI_LOG_TRACE,
	FI_LOG_INFO,
	FI_LOG_DEBUG,
	FI_LOG_MAX
};

/* Non-zero when a message at this level/subsystem would be printed. */
int fi_log_enabled(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys);

/*
 * As fi_log_enabled(), but also rate-limits: *showtime is the caller's
 * "next time allowed" stamp, advanced when this answers non-zero.
 */
int fi_log_ready(const struct fi_provider *prov, enum fi_log_level level,
		 enum fi_log_subsys subsys, uint64_t *showtime);

void fi_log(const struct fi_provider *prov, enum fi_log_level level,
	    enum fi_log_subsys subsys, const char *func, int line,
	    const char *fmt, ...) FI_FORMAT_PRINTF(6, 7);

/*
 * The enabled check comes first so disabled logging costs one call and
 * never formats; errno is saved because callers log between a failing
 * syscall and their own errno check.
 */
#define FI_LOG(prov, level, subsystem, ...)                                    \
	do {                                                                   \
		if (fi_log_enabled(prov, level, subsystem)) {                  \
			int fi_log_errno_ = errno;                             \
			fi_log(prov, level, subsystem, __func__, __LINE__,     \
			       __VA_ARGS__);                                   \
			errno = fi_log_errno_;                                 \
		}                                                              \
	} while (0)

/* One rate-limit stamp per call site, hence the static. */
#define FI_LOG_SPARSE(prov, level, subsystem, ...)                             \
	do {                                                                   \
		static uint64_t fi_log_showtime_;                              \
		if (fi_log_ready(prov, level, subsystem, &fi_log_showtime_)) { \
			int fi_log_errno_ = errno;                             \
			fi_log(prov, level, subsystem, __func__, __LINE__,     \
			       __VA_ARGS__);                                   \
			errno = fi_log_errno_;                                 \
		}                                                              \
	} while (0)

#define FI_WARN(prov, subsystem, ...)                                          \
	FI_LOG(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_WARN_SPARSE(prov, subsystem, ...)                                   \
	FI_LOG_SPARSE(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_TRACE(prov, subsystem, ...)                                         \
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#define FI_INFO(prov, subsystem, ...)                                          \
	FI_LOG(prov, FI_LOG_INFO, subsystem, __VA_ARGS__)

/* Debug chatter exists only in ENABLE_DEBUG builds; otherwise no code. */
#if defined(ENABLE_DEBUG) && ENABLE_DEBUG
#define FI_DBG(prov, subsystem, ...)                                           \
	FI_LOG(prov, FI_LOG_DEBUG, subsystem, __VA_ARGS__)
#define FI_DBG_TRACE(prov, subsystem, ...)                                     \
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#else
#define FI_DBG(prov, subsystem, ...)                                           \
	do {                                                                   \
	} while (0)
#define FI_DBG_TRACE(prov, subsystem, ...)                                     \
	do {                                                                   \
	} while (0)
#endif

/* Latched per call site, and only once the warning really went out. */
#define FI_WARN_ONCE(prov, subsystem, ...)                                     \
	do {                                                                   \
		static int fi_log_warned_;                                     \
		if (!fi_log_warned_ &&                                         \
		    fi_log_enabled(prov, FI_LOG_WARN, subsystem)) {            \
			int fi_log_errno_ = errno;                             \
			fi_log(prov, FI_LOG_WARN, subsystem, __func__,         \
			       __LINE__, __VA_ARGS__);                         \
			fi_log_warned_ = 1;                                    \
			errno = fi_log_errno_;                                 \
		}                                                              \
	} while (0)

#ifdef __cplusplus
}
#endif

#endif /* FI_LOG_H */
