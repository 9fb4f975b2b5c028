/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * ofi_hmem.h - the HMEM utility layer (src/hmem/): one struct ofi_hmem_ops
 * table per enum fi_hmem_iface, the dispatch helpers every provider moves
 * device memory through, the per-domain copy overrides and their rules,
 * the IPC handle cache and the fd-passing helpers for handles that carry
 * a file descriptor (Level Zero).
 *
 * Conventions: functions answer 0 (or a byte count for the iov helpers)
 * or a negative fi_errno. An interface that is compiled out, disabled by
 * its parameter or whose driver library is missing answers -FI_ENOSYS
 * everywhere and claims no address.
 */
#ifndef OFI_HMEM_H
#define OFI_HMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

/* One past the highest enum fi_hmem_iface value this layer knows. */
#define OFI_HMEM_MAX (FI_HMEM_SYNAPSEAI + 1)

/* Large enough for every interface's IPC handle (CUDA and ZE use 64). */
#define OFI_HMEM_MAX_HANDLE_SIZE 64

struct ofi_hmem_ops {
	bool initialized;
	const char *name;
	int (*init)(void);
	int (*cleanup)(void);
	int (*copy_to_hmem)(uint64_t device, void *dest, const void *src,
			    size_t size);
	int (*copy_from_hmem)(uint64_t device, void *dest, const void *src,
			      size_t size);
	/* Device-to-device (IPC) copy; either side may also be host memory. */
	int (*copy_dev_to_dev)(uint64_t device, void *dest, const void *src,
			       size_t size);
	bool (*is_addr_valid)(const void *addr, uint64_t *device,
			      uint64_t *flags);
	int (*get_base_addr)(const void *addr, size_t len, void **base,
			     size_t *size);
	int (*get_handle)(void *base, size_t size, void *handle);
	int (*open_handle)(void *handle, size_t size, uint64_t device,
			   void **mapped);
	int (*close_handle)(void *mapped);
	int (*get_handle_size)(size_t *size);
	int (*alloc)(uint64_t device, void **ptr, size_t size);
	int (*free)(void *ptr);
	int (*host_register)(void *addr, size_t size);
	int (*host_unregister)(void *addr);
};

/* Indexed by enum fi_hmem_iface. Read-only outside src/hmem/. */
extern struct ofi_hmem_ops ofi_hmem_ops[OFI_HMEM_MAX];

/*
 * Called once by the core's library init / fini. Defines the hmem
 * parameters and initialises every enabled interface; an interface whose
 * driver is missing stays unavailable (one FI_INFO line). Idempotent.
 */
void ofi_hmem_init(void);
void ofi_hmem_cleanup(void);

bool ofi_hmem_is_initialized(enum fi_hmem_iface iface);
/* True when a non-system interface is up (FI_HMEM can be reported). */
bool ofi_hmem_any_available(void);
/* False when FI_HMEM_DISABLE_P2P is set or the iface cannot export. */
bool ofi_hmem_is_ipc_enabled(enum fi_hmem_iface iface);
const char *ofi_hmem_iface_name(enum fi_hmem_iface iface);

/*
 * Which interface owns @addr: the first initialised device interface that
 * claims it, FI_HMEM_SYSTEM otherwise. @device and @flags may be NULL;
 * flags are FI_HMEM_DEVICE_ONLY / FI_HMEM_HOST_ALLOC.
 */
enum fi_hmem_iface ofi_get_hmem_iface(const void *addr, uint64_t *device,
				      uint64_t *flags);

/* Flat dispatch, never overridden. */
int ofi_copy_to_hmem(enum fi_hmem_iface iface, uint64_t device, void *dest,
		     const void *src, size_t size);
int ofi_copy_from_hmem(enum fi_hmem_iface iface, uint64_t device, void *dest,
		       const void *src, size_t size);
int ofi_copy_hmem_dev_to_dev(enum fi_hmem_iface iface, uint64_t device,
			     void *dest, const void *src, size_t size);
int ofi_hmem_get_base_addr(enum fi_hmem_iface iface, const void *addr,
			   size_t len, void **base, size_t *size);
int ofi_hmem_get_handle(enum fi_hmem_iface iface, void *base, size_t size,
			void *handle);
int ofi_hmem_open_handle(enum fi_hmem_iface iface, void *handle, size_t size,
			 uint64_t device, void **mapped);
int ofi_hmem_close_handle(enum fi_hmem_iface iface, void *mapped);
int ofi_hmem_get_handle_size(enum fi_hmem_iface iface, size_t *size);
int ofi_hmem_alloc(enum fi_hmem_iface iface, uint64_t device, void **ptr,
		   size_t size);
int ofi_hmem_free(enum fi_hmem_iface iface, void *ptr);
int ofi_hmem_host_register(void *addr, size_t size);
int ofi_hmem_host_unregister(void *addr);

/*
 * Host<->device copy overrides of DESIGN.md section 2, one set per domain.
 * Members have exactly the signatures of union fi_override_op.
 */
struct ofi_hmem_override {
	ssize_t (*copy_from_hmem_iov)(void *dest, size_t size,
				      enum fi_hmem_iface iface, uint64_t device,
				      const struct iovec *hmem_iov,
				      size_t hmem_iov_count,
				      uint64_t hmem_iov_offset);
	ssize_t (*copy_to_hmem_iov)(enum fi_hmem_iface iface, uint64_t device,
				    const struct iovec *hmem_iov,
				    size_t hmem_iov_count,
				    uint64_t hmem_iov_offset, const void *src,
				    size_t size);
};

/*
 * Bytes in @iov from @iov_offset on, capped at @size: what a copy must
 * move. 0 when the offset is past the end.
 */
size_t ofi_hmem_iov_span(const struct iovec *iov, size_t iov_count,
			 uint64_t iov_offset, size_t size);

/*
 * Copy between a host buffer and an iov of @iface memory starting
 * @iov_offset bytes into the iov. @ovr may be NULL. When the matching
 * override slot is set it is called instead of the interface ops (for
 * FI_HMEM_SYSTEM too): a negative answer passes through, any count other
 * than ofi_hmem_iov_span() becomes -FI_EIO. Otherwise the iov is walked
 * and each segment goes through ofi_hmem_ops[iface]. Returns the bytes
 * copied (0 for nothing) or a negative fi_errno.
 */
ssize_t ofi_copy_from_hmem_iov(const struct ofi_hmem_override *ovr, void *dest,
			       size_t size, enum fi_hmem_iface iface,
			       uint64_t device, const struct iovec *iov,
			       size_t iov_count, uint64_t iov_offset);
ssize_t ofi_copy_to_hmem_iov(const struct ofi_hmem_override *ovr,
			     enum fi_hmem_iface iface, uint64_t device,
			     const struct iovec *iov, size_t iov_count,
			     uint64_t iov_offset, const void *src, size_t size);

/*
 * IPC copy between mapped peer memory @dev_buf and a local iov, never
 * overridden. @to_iov: dev_buf -> iov, else iov -> dev_buf. Returns bytes
 * copied or a negative fi_errno.
 */
ssize_t ofi_copy_hmem_iov_dev_to_dev(enum fi_hmem_iface iface, uint64_t device,
				     const struct iovec *iov, size_t iov_count,
				     uint64_t iov_offset, void *dev_buf,
				     size_t size, bool to_iov);

/*
 * The rules behind fi_set_op() on a domain: flags != 0 -> -FI_EINVAL,
 * unknown op -> -FI_ENOSYS, @locked (an endpoint of the domain is enabled)
 * -> -FI_EBUSY; a NULL @fn or NULL function restores the default.
 */
int ofi_hmem_override_set(struct ofi_hmem_override *ovr, bool locked,
			  enum fi_set_op op, union fi_override_op *fn,
			  uint64_t flags);
/* fi_set_ops(FI_SET_OPS_HMEM_OVERRIDE): both slots, same rules. */
int ofi_hmem_override_set_ops(struct ofi_hmem_override *ovr, bool locked,
			      const struct fi_hmem_override_ops *ops);

/*
 * File descriptors inside IPC handles (Level Zero): the fd is only valid in
 * the exporting process, so it travels beside the handle bytes over a Unix
 * socket (SCM_RIGHTS) and the receiver patches it into its copy.
 */
int ofi_hmem_send_fd(int sock, int fd, const void *data, size_t len);
/* Receives exactly @len bytes of data and one fd (-1 when none came). */
int ofi_hmem_recv_fd(int sock, int *fd, void *data, size_t len);
/* -FI_ENOSYS for interfaces whose handles carry no fd. */
int ofi_hmem_handle_get_fd(enum fi_hmem_iface iface, const void *handle,
			   int *fd);
int ofi_hmem_handle_set_fd(enum fi_hmem_iface iface, void *handle, int fd);

/*
 * IPC handle cache shared by providers: (peer, iface, device, base, handle
 * bytes) -> address mapped in this process. Thread-safe.
 */
struct ofi_ipc_cache;
struct ofi_ipc_entry;

struct ofi_ipc_key {
	uint64_t peer_id;
	enum fi_hmem_iface iface;
	uint64_t device;
	uint64_t base; /* exporter's base address of the allocation */
	/*
	 * Bytes the exporter says the allocation has (0: not said). Part of
	 * the key so that a provider that checks the claim against the real
	 * mapping when the handle is opened never meets a larger claim for
	 * the same mapping on a cache hit.
	 */
	uint64_t size;
	size_t handle_size;
	uint8_t handle[OFI_HMEM_MAX_HANDLE_SIZE];
};

/* How the cache maps and unmaps; NULL means ofi_hmem_open/close_handle. */
struct ofi_ipc_cache_ops {
	int (*open)(enum fi_hmem_iface iface, void *handle, size_t size,
		    uint64_t device, void **mapped);
	int (*close)(enum fi_hmem_iface iface, void *mapped);
};

struct ofi_ipc_cache_stats {
	uint64_t hits;
	uint64_t misses;
	uint64_t evictions;
	size_t entries;
};

int ofi_ipc_cache_open(struct ofi_ipc_cache **cache, size_t max_entries,
		       const struct ofi_ipc_cache_ops *ops);
/* Unmaps everything, referenced or not. */
void ofi_ipc_cache_close(struct ofi_ipc_cache *cache);
/*
 * Maps the key's handle, once per key: *mapped is the local address of
 * key->base, *entry the reference to drop with ofi_ipc_cache_put().
 * -FI_EAGAIN when the cache is full of referenced entries.
 */
int ofi_ipc_cache_get(struct ofi_ipc_cache *cache,
		      const struct ofi_ipc_key *key, void **mapped,
		      struct ofi_ipc_entry **entry);
void ofi_ipc_cache_put(struct ofi_ipc_cache *cache,
		       struct ofi_ipc_entry *entry);
/* Drops a departed peer's entries (referenced ones on their last put). */
void ofi_ipc_cache_remove_peer(struct ofi_ipc_cache *cache, uint64_t peer_id);
void ofi_ipc_cache_get_stats(struct ofi_ipc_cache *cache,
			     struct ofi_ipc_cache_stats *stats);

/* Per-interface tables, defined in hmem_<iface>.c. */
extern const struct ofi_hmem_ops ofi_hmem_system_ops;
extern const struct ofi_hmem_ops ofi_hmem_cuda_ops;
extern const struct ofi_hmem_ops ofi_hmem_ze_ops;

/* Parameters read by the interfaces (defined by ofi_hmem_init). */
bool ofi_hmem_iface_enabled(const char *param, enum fi_hmem_iface iface);
const char *ofi_hmem_library(const char *param, const char *dflt);

#endif /* OFI_HMEM_H */
