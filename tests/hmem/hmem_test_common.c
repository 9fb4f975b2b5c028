/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_test_common.c - shared code of the hmem test programs: library
 * selection for the fake (or real) drivers, patterns, and both sides of
 * the two-process IPC exchange. The child is a fresh exec of the test
 * binary, as a CUDA process may not fork and keep using the driver.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hmem_test.h"
#include "ofi_prov.h"

/*
 * Stands in for the library's init when this program is linked with the
 * core's param/log objects rather than the whole library.
 */
__attribute__((weak)) void ofi_init(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	ofi_param_init();
	ofi_log_init();
}

bool hmem_test_pick_lib(const char *env_var, const char *libname)
{
	const char *dir = getenv("HMEM_FAKE_DIR");
	char path[4096];

	if (getenv(env_var) && *getenv(env_var))
		return true;
#ifdef HMEM_FAKE_DIR
	if (!dir)
		dir = HMEM_FAKE_DIR;
#endif
	if (!dir)
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, libname);
	if (access(path, R_OK))
		return false;
	setenv(env_var, path, 1);
	return true;
}

static void *hmem_test_sym(const char *env_var, const char *sym)
{
	const char *path = getenv(env_var);
	void *lib, *fn;

	if (!path)
		return NULL;
	/*
	 * Only look inside what the layer already loaded, and hold no
	 * reference: the pointer is good until ofi_hmem_cleanup().
	 */
	lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (!lib)
		return NULL;
	fn = dlsym(lib, sym);
	dlclose(lib);
	return fn;
}

hmem_fake_calls_fn hmem_test_fake_calls(const char *env_var, const char *sym)
{
	return (hmem_fake_calls_fn)hmem_test_sym(env_var, sym);
}

hmem_fake_fail_fn hmem_test_fake_fail(const char *env_var, const char *sym)
{
	return (hmem_fake_fail_fn)hmem_test_sym(env_var, sym);
}

void hmem_test_fill(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 31 + (i >> 8));
}

bool hmem_test_check(const void *buf, size_t len, unsigned seed)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] != (unsigned char)(seed + i * 31 + (i >> 8))) {
			fprintf(stderr, "mismatch at %zu: %u\n", i, p[i]);
			return false;
		}
	}
	return true;
}

#define IPC_SIZE   (256 * 1024 + 100)
#define IPC_OFFSET 4096 /* the child reaches the data through base + off */
#define SEED_A	   7
#define SEED_B	   101
#define SEED_C	   55

struct ipc_msg {
	uint8_t handle[OFI_HMEM_MAX_HANDLE_SIZE];
	uint64_t handle_size;
	uint64_t size;
	uint64_t offset;
};

struct ipc_reply {
	int32_t status; /* 0, or the step that failed */
	int32_t err;
};

static int ipc_send_msg(enum fi_hmem_iface iface, int sock, struct ipc_msg *msg)
{
	int fd = -1, ret;

	if (ofi_hmem_handle_get_fd(iface, msg->handle, &fd))
		fd = -1;
	ret = ofi_hmem_send_fd(sock, fd, msg, sizeof(*msg));
	/* The exporter's copy of a handle fd is ours to close once sent. */
	if (fd >= 0)
		close(fd);
	return ret;
}

/* The exported buffer holds pattern A at @off; the child leaves B there. */
int hmem_test_ipc_parent(enum fi_hmem_iface iface, const char *self)
{
	struct ipc_msg msg = {0};
	struct ipc_reply reply = {-1, 0};
	char *host = NULL, iface_arg[16], sock_arg[16];
	void *dev = NULL, *base;
	size_t base_size;
	int sv[2] = {-1, -1}, ret, status;
	pid_t pid;

	host = malloc(IPC_SIZE);
	ret = ofi_hmem_alloc(iface, 0, &dev, IPC_SIZE + IPC_OFFSET);
	if (!host || ret)
		goto out;
	hmem_test_fill(host, IPC_SIZE, SEED_A);
	ret = ofi_copy_to_hmem(iface, 0, (char *)dev + IPC_OFFSET, host,
			       IPC_SIZE);
	if (!ret)
		ret = ofi_hmem_get_base_addr(iface, (char *)dev + IPC_OFFSET,
					     IPC_SIZE, &base, &base_size);
	if (!ret)
		ret = ofi_hmem_get_handle_size(iface, &msg.handle_size);
	if (!ret)
		ret = ofi_hmem_get_handle(iface, base, base_size, msg.handle);
	if (ret)
		goto out;
	msg.size = IPC_SIZE;
	msg.offset = (char *)dev + IPC_OFFSET - (char *)base;

	ret = -errno;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		goto out;
	pid = fork();
	if (pid < 0)
		goto out;
	if (!pid) {
		close(sv[0]);
		snprintf(iface_arg, sizeof(iface_arg), "%d", (int)iface);
		snprintf(sock_arg, sizeof(sock_arg), "%d", sv[1]);
		execl(self, self, "--ipc-child", iface_arg, sock_arg,
		      (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	sv[1] = -1;
	ret = ipc_send_msg(iface, sv[0], &msg);
	if (!ret && read(sv[0], &reply, sizeof(reply)) != sizeof(reply))
		ret = -FI_EIO;
	waitpid(pid, &status, 0);
	if (ret)
		goto out;
	if (reply.status || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "ipc child failed at step %d (%d), exit %d\n",
			reply.status, reply.err, WEXITSTATUS(status));
		ret = -FI_EOTHER;
		goto out;
	}
	memset(host, 0, IPC_SIZE);
	ret = ofi_copy_from_hmem(iface, 0, host, (char *)dev + IPC_OFFSET,
				 IPC_SIZE);
	if (!ret && !hmem_test_check(host, IPC_SIZE, SEED_B))
		ret = -FI_EOTHER;
out:
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	if (dev)
		ofi_hmem_free(iface, dev);
	free(host);
	return ret;
}

/* Returns 0 or the number of the failed step; *err gets its code. */
static int ipc_child_steps(enum fi_hmem_iface iface, int sock, int *err)
{
	struct ipc_msg msg;
	char *host = NULL;
	void *mapped = NULL, *own = NULL, *data;
	int fd = -1, step = 1;

	*err = ofi_hmem_recv_fd(sock, &fd, &msg, sizeof(msg));
	if (*err)
		return step;
	step++;
	if (fd >= 0)
		ofi_hmem_handle_set_fd(iface, msg.handle, fd);
	host = malloc(msg.size);
	*err = host ? 0 : -FI_ENOMEM;
	if (!*err)
		*err = ofi_hmem_open_handle(iface, msg.handle, msg.handle_size,
					    0, &mapped);
	if (fd >= 0)
		close(fd);
	if (*err)
		goto out;
	data = (char *)mapped + msg.offset;

	step++;
	*err = ofi_copy_from_hmem(iface, 0, host, data, msg.size);
	if (*err || !hmem_test_check(host, msg.size, SEED_A))
		goto out;

	/* Device to device: the peer's buffer through a local one. */
	step++;
	*err = ofi_hmem_alloc(iface, 0, &own, msg.size);
	if (!*err)
		*err = ofi_copy_hmem_dev_to_dev(iface, 0, own, data, msg.size);
	if (!*err) {
		memset(host, 0, msg.size);
		*err = ofi_copy_from_hmem(iface, 0, host, own, msg.size);
	}
	if (*err || !hmem_test_check(host, msg.size, SEED_A))
		goto out;

	step++;
	hmem_test_fill(host, msg.size, SEED_C);
	*err = ofi_copy_to_hmem(iface, 0, own, host, msg.size);
	if (!*err) {
		hmem_test_fill(host, msg.size, SEED_B);
		*err = ofi_copy_to_hmem(iface, 0, data, host, msg.size);
	}
	if (*err)
		goto out;

	step++;
	*err = ofi_hmem_close_handle(iface, mapped);
	mapped = NULL;
	if (*err)
		goto out;
	step = 0;
out:
	if (mapped)
		ofi_hmem_close_handle(iface, mapped);
	if (own)
		ofi_hmem_free(iface, own);
	free(host);
	return step;
}

int hmem_test_ipc_child(int argc, char **argv)
{
	struct ipc_reply reply = {0};
	enum fi_hmem_iface iface;
	int sock;

	if (argc < 4 || strcmp(argv[1], "--ipc-child"))
		return -1;
	iface = (enum fi_hmem_iface)atoi(argv[2]);
	sock = atoi(argv[3]);
	ofi_hmem_init();
	if (!ofi_hmem_is_initialized(iface)) {
		reply.status = 100;
		reply.err = -FI_ENOSYS;
	} else {
		reply.status = ipc_child_steps(iface, sock, &reply.err);
	}
	if (write(sock, &reply, sizeof(reply)) != sizeof(reply))
		reply.status = 101;
	ofi_hmem_cleanup();
	return reply.status ? 1 : 0;
}
