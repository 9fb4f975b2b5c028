/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * eq_test: event queue open/close with each wait object, fi_eq_write/read,
 * FI_PEEK, ordering, readerr, sread timeout, size overflow and the FD wait
 * object, against the fabric of the provider given with -p.
 */
#include <poll.h>
#include <string.h>

#include "shared.h"

static struct fid_eq *eq;

static int open_eq(enum fi_wait_obj wait, size_t size)
{
	/* FI_WRITE: fi_eq_write must be supported (man fi_eq) */
	struct fi_eq_attr attr = {
		.size = size, .wait_obj = wait, .flags = FI_WRITE};
	int ret;

	ret = ft_unit_open(0);
	if (ret)
		return ret;
	return fi_eq_open(ft.fabric, &attr, &eq, NULL);
}

static void close_eq(void)
{
	FT_CLOSE_FID(eq);
	ft_free_res();
}

static ssize_t write_event(uint64_t data)
{
	struct fi_eq_entry e = {
		.fid = &ft.fabric->fid,
		.context = (void *)(uintptr_t)(0xc0000 + data),
		.data = data,
	};

	return fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), 0);
}

/* reads one event and checks it is the one write_event(data) produced */
static int read_check(uint64_t data, uint64_t flags)
{
	struct fi_eq_entry e = {0};
	uint32_t event = 0;
	ssize_t ret;

	ret = fi_eq_read(eq, &event, &e, sizeof(e), flags);
	if (ret != sizeof(e)) {
		fprintf(stderr, "  fi_eq_read returned %zd\n", ret);
		return -1;
	}
	if (event != FI_NOTIFY || e.data != data || e.fid != &ft.fabric->fid ||
	    e.context != (void *)(uintptr_t)(0xc0000 + data)) {
		fprintf(stderr, "  event %u data %llu does not match %llu\n",
			event, (unsigned long long)e.data,
			(unsigned long long)data);
		return -1;
	}
	return 0;
}

static enum ft_result t_open_close(void)
{
	const enum fi_wait_obj waits[] = {FI_WAIT_NONE, FI_WAIT_UNSPEC,
					  FI_WAIT_FD};
	enum ft_result res = FT_PASS;
	int i, ret;

	for (i = 0; i < 3; i++) {
		ret = open_eq(waits[i], 0);
		if (ret && i == 2 && ret == -FI_ENOSYS) {
			res = FT_NOTSUPP;
			goto out;
		}
		UT_EXPECT_RET(ret, 0);
		UT_EXPECT_RET(fi_close(&eq->fid), 0);
		eq = NULL;
		ft_free_res();
	}
out:
	close_eq();
	return res;
}

static enum ft_result t_write_read(void)
{
	enum ft_result res = FT_PASS;
	struct fi_eq_entry e;
	uint32_t event;

	UT_EXPECT_RET(open_eq(FI_WAIT_NONE, 0), 0);
	UT_EXPECT_RET(write_event(42), sizeof(struct fi_eq_entry));
	UT_CHECK(read_check(42, 0) == 0, "event mismatch");
	UT_EXPECT_RET(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);
out:
	close_eq();
	return res;
}

static enum ft_result t_read_empty(void)
{
	enum ft_result res = FT_PASS;
	struct fi_eq_err_entry err = {0};
	struct fi_eq_entry e;
	uint32_t event;

	UT_EXPECT_RET(open_eq(FI_WAIT_NONE, 0), 0);
	UT_EXPECT_RET(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);
	UT_EXPECT_RET(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
out:
	close_eq();
	return res;
}

static enum ft_result t_peek(void)
{
	enum ft_result res = FT_PASS;
	struct fi_eq_entry e;
	uint32_t event;

	UT_EXPECT_RET(open_eq(FI_WAIT_NONE, 0), 0);
	UT_EXPECT_RET(write_event(7), sizeof(struct fi_eq_entry));
	UT_CHECK(read_check(7, FI_PEEK) == 0, "first peek");
	UT_CHECK(read_check(7, FI_PEEK) == 0, "second peek");
	UT_CHECK(read_check(7, 0) == 0, "read after peek");
	UT_EXPECT_RET(fi_eq_read(eq, &event, &e, sizeof(e), 0), -FI_EAGAIN);
out:
	close_eq();
	return res;
}

static enum ft_result t_fifo(void)
{
	enum ft_result res = FT_PASS;
	uint64_t i;

	UT_EXPECT_RET(open_eq(FI_WAIT_NONE, 0), 0);
	for (i = 0; i < 5; i++)
		UT_EXPECT_RET(write_event(i), sizeof(struct fi_eq_entry));
	for (i = 0; i < 5; i++)
		UT_CHECK(read_check(i, 0) == 0, "entry %llu out of order",
			 (unsigned long long)i);
out:
	close_eq();
	return res;
}

static enum ft_result t_sread_timeout(void)
{
	enum ft_result res = FT_PASS;
	struct fi_eq_entry e;
	uint32_t event;
	uint64_t start, el;
	int ret;

	ret = open_eq(FI_WAIT_UNSPEC, 0);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	start = ft_now_us();
	UT_EXPECT_RET(fi_eq_sread(eq, &event, &e, sizeof(e), 200, 0),
		      -FI_EAGAIN);
	el = ft_now_us() - start;
	UT_CHECK(el >= 150000 && el < 3000000, "waited %llu us for 200 ms",
		 (unsigned long long)el);
out:
	close_eq();
	return res;
}

static enum ft_result t_sread_ready(void)
{
	enum ft_result res = FT_PASS;
	struct fi_eq_entry e;
	uint32_t event;
	uint64_t start;
	int ret;

	ret = open_eq(FI_WAIT_UNSPEC, 0);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_EXPECT_RET(write_event(9), sizeof(e));
	start = ft_now_us();
	UT_EXPECT_RET(fi_eq_sread(eq, &event, &e, sizeof(e), 2000, 0),
		      sizeof(e));
	UT_CHECK(ft_now_us() - start < 1000000, "sread blocked with data");
	UT_CHECK(event == FI_NOTIFY && e.data == 9, "wrong event");
out:
	close_eq();
	return res;
}

/*
 * A small EQ fed more events than its size either keeps them all or
 * refuses writes (-FI_EAGAIN / -FI_EOVERRUN); accepted events stay intact.
 */
static enum ft_result t_overflow(void)
{
	enum ft_result res = FT_PASS;
	uint64_t i, written = 0;
	ssize_t ret;

	UT_EXPECT_RET(open_eq(FI_WAIT_NONE, 4), 0);
	for (i = 0; i < 64; i++) {
		ret = write_event(i);
		if (ret < 0) {
			UT_CHECK(ret == -FI_EAGAIN || ret == -FI_EOVERRUN,
				 "write %llu failed with %zd",
				 (unsigned long long)i, ret);
			break;
		}
		UT_CHECK(ret == sizeof(struct fi_eq_entry), "short write");
		written++;
	}
	UT_CHECK(written >= 4, "only %llu writes fit a size-4 eq",
		 (unsigned long long)written);
	for (i = 0; i < written; i++)
		UT_CHECK(read_check(i, 0) == 0, "entry %llu lost",
			 (unsigned long long)i);
	if (ft_opts.verbose)
		printf("  overflow: %llu of 64 writes accepted\n",
		       (unsigned long long)written);
out:
	close_eq();
	return res;
}

static enum ft_result t_wait_fd(void)
{
	enum ft_result res = FT_PASS;
	struct pollfd pfd = {.events = POLLIN};
	int fd = -1, ret;

	ret = open_eq(FI_WAIT_FD, 0);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	ret = fi_control(&eq->fid, FI_GETWAIT, &fd);
	if (ret) {
		res = ft_ret_notsupp(ret);
		goto out;
	}
	UT_CHECK(fd >= 0, "fd %d", fd);
	pfd.fd = fd;
	UT_EXPECT_RET(write_event(3), sizeof(struct fi_eq_entry));
	UT_CHECK(poll(&pfd, 1, 1000) == 1, "fd not readable after write");
	UT_CHECK(read_check(3, 0) == 0, "event mismatch");
out:
	close_eq();
	return res;
}

static enum ft_result t_strerror(void)
{
	enum ft_result res = FT_PASS;
	const char *s;

	UT_EXPECT_RET(open_eq(FI_WAIT_NONE, 0), 0);
	s = fi_eq_strerror(eq, 0, NULL, NULL, 0);
	UT_CHECK(s != NULL, "NULL string");
out:
	close_eq();
	return res;
}

static const struct ft_unit_test tests[] = {
	{"open_close", t_open_close, "open with WAIT_NONE/UNSPEC/FD"},
	{"write_read", t_write_read, "write then read returns the entry"},
	{"read_empty", t_read_empty, "read/readerr on empty -> -FI_EAGAIN"},
	{"peek", t_peek, "FI_PEEK leaves the entry queued"},
	{"fifo", t_fifo, "events come back in write order"},
	{"sread_timeout", t_sread_timeout, "sread 200ms -> -FI_EAGAIN"},
	{"sread_ready", t_sread_ready, "sread returns a queued event"},
	{"overflow", t_overflow, "writes beyond size: kept or refused"},
	{"wait_fd", t_wait_fd, "FI_GETWAIT fd becomes readable"},
	{"strerror", t_strerror, "fi_eq_strerror returns a string"},
	{NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	return ft_run_unit("eq_test", tests, argc, argv);
}
