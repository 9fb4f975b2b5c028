/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * hmem_fd.c - passing a file descriptor with a few bytes of data over a
 * Unix socket (SCM_RIGHTS). Level Zero IPC handles hold an fd that means
 * nothing in another process; the exporter sends it beside the handle and
 * the importer patches the received fd into its copy of the handle.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ofi.h"
#include "ofi_hmem.h"

union ofi_fd_cmsg {
	struct cmsghdr hdr;
	char buf[CMSG_SPACE(sizeof(int))];
};

int ofi_hmem_send_fd(int sock, int fd, const void *data, size_t len)
{
	union ofi_fd_cmsg cmsg;
	struct msghdr msg = {0};
	struct cmsghdr *c;
	struct iovec iov;
	char dummy = 0;
	ssize_t ret;

	/* At least one data byte must travel for the fd to go with it. */
	iov.iov_base = len ? (void *)data : &dummy;
	iov.iov_len = len ? len : 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		memset(&cmsg, 0, sizeof(cmsg));
		msg.msg_control = cmsg.buf;
		msg.msg_controllen = sizeof(cmsg.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}

	do {
		ret = sendmsg(sock, &msg, MSG_NOSIGNAL);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	return (size_t)ret == iov.iov_len ? 0 : -FI_EIO;
}

static int ofi_fd_from_msg(struct msghdr *msg)
{
	struct cmsghdr *c;
	int fd = -1;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	}
	return fd;
}

int ofi_hmem_recv_fd(int sock, int *fd, void *data, size_t len)
{
	union ofi_fd_cmsg cmsg;
	struct msghdr msg = {0};
	struct iovec iov;
	char dummy;
	ssize_t ret;

	*fd = -1;
	iov.iov_base = len ? data : &dummy;
	iov.iov_len = len ? len : 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cmsg.buf;
	msg.msg_controllen = sizeof(cmsg.buf);

	do {
		ret = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	*fd = ofi_fd_from_msg(&msg);
	if ((size_t)ret == iov.iov_len && !(msg.msg_flags & MSG_CTRUNC))
		return 0;
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return ret ? -FI_EIO : -FI_ECONNRESET;
}

/* Level Zero keeps the exporter's fd in the first bytes of the handle. */
int ofi_hmem_handle_get_fd(enum fi_hmem_iface iface, const void *handle,
			   int *fd)
{
	if (iface != FI_HMEM_ZE)
		return -FI_ENOSYS;
	memcpy(fd, handle, sizeof(*fd));
	return 0;
}

int ofi_hmem_handle_set_fd(enum fi_hmem_iface iface, void *handle, int fd)
{
	if (iface != FI_HMEM_ZE)
		return -FI_ENOSYS;
	memcpy(handle, &fd, sizeof(fd));
	return 0;
}
