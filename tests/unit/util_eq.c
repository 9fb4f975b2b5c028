/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util_eq.c - unit tests of util_eq: read with FI_PEEK, short and absent
 * buffers, error precedence and readerr err_data rules, user writes
 * (FI_WRITE, flags, size limit), sread timeouts, strerror, and the handler
 * registry: every event type, replace, remove, answers and the queue-or-not
 * rule, re-entry, concurrent use, and close while a handler runs; a read
 * that looks again after giving the core away.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "ofi_yield.h"
#include "util_common.h"

static struct fid_eq *eq_open(struct util_env *env, uint64_t flags,
			      enum fi_wait_obj wait, size_t size)
{
	struct fi_eq_attr attr = {
		.flags = flags,
		.wait_obj = wait,
		.size = size,
	};
	struct fid_eq *eq;

	assert_int_equal(fi_eq_open(&env->fabric->fabric_fid, &attr, &eq, NULL),
			 0);
	return eq;
}

static struct util_eq *ueq(struct fid_eq *eq)
{
	return container_of(eq, struct util_eq, eq_fid);
}

static void test_read_peek(void **state)
{
	struct util_env env;
	struct fi_eq_entry in = {.context = (void *)5, .data = 6}, out;
	struct fi_eq_attr bad = {.flags = FI_SEND};
	struct fid_eq *eq;
	uint32_t event = 0;
	char small[4];

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	assert_int_equal(fi_eq_open(&env.fabric->fabric_fid, &bad, &eq, NULL),
			 -FI_EINVAL);
	eq = eq_open(&env, 0, FI_WAIT_NONE, 0);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);
	assert_int_equal(ofi_eq_write(ueq(eq), FI_MR_COMPLETE, &in, sizeof(in)),
			 sizeof(in));
	/* A short peek copies what fits and leaves the event queued. */
	memset(small, 0x5a, sizeof(small));
	assert_int_equal(fi_eq_read(eq, &event, small, sizeof(small), FI_PEEK),
			 sizeof(small));
	assert_memory_equal(small, &in, sizeof(small));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), FI_SEND),
			 -FI_EINVAL);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK),
			 sizeof(out));
	assert_int_equal(event, FI_MR_COMPLETE);
	event = 0;
	memset(&out, 0, sizeof(out));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(event, FI_MR_COMPLETE);
	assert_ptr_equal(out.context, (void *)5);
	assert_int_equal(out.data, 6);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);
	/* Not opened with FI_WRITE: users may not write. */
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 -FI_EINVAL);
	assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 10, 0),
			 -FI_EINVAL);
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

/* Short and absent buffers still take the event, as libfabric 1.17 does. */
static void test_read_short_or_null(void **state)
{
	struct util_env env;
	struct fi_eq_entry in = {.context = (void *)5, .data = 6}, out;
	struct fid_eq *eq;
	uint32_t event;
	char small[4];

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	eq = eq_open(&env, FI_WRITE, FI_WAIT_UNSPEC, 0);

	/* No buffer: the event type alone, 0 bytes; a peek keeps it. */
	assert_int_equal(fi_eq_write(eq, FI_JOIN_COMPLETE, &in, sizeof(in), 0),
			 sizeof(in));
	event = ~0u;
	assert_int_equal(fi_eq_read(eq, &event, NULL, 0, FI_PEEK), 0);
	assert_int_equal(event, FI_JOIN_COMPLETE);
	event = ~0u;
	assert_int_equal(fi_eq_read(eq, &event, NULL, 0, 0), 0);
	assert_int_equal(event, FI_JOIN_COMPLETE);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);

	/* A length with no buffer copies nothing. */
	fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	assert_int_equal(fi_eq_read(eq, &event, NULL, sizeof(out), 0), 0);
	assert_int_equal(fi_eq_read(eq, NULL, NULL, 0, 0), -FI_EAGAIN);

	/* A buffer of length 0 takes the event too. */
	fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	assert_int_equal(fi_eq_read(eq, &event, &out, 0, 0), 0);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);

	/* A short buffer: a truncated copy, and the event is gone. */
	in.fid = (fid_t)0x11223344;
	fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	memset(small, 0, sizeof(small));
	assert_int_equal(fi_eq_read(eq, &event, small, sizeof(small), 0),
			 sizeof(small));
	assert_memory_equal(small, &in, sizeof(small));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);

	/* The blocking form likewise. */
	fi_eq_write(eq, FI_JOIN_COMPLETE, &in, sizeof(in), 0);
	event = ~0u;
	assert_int_equal(fi_eq_sread(eq, &event, NULL, 0, 100, FI_PEEK), 0);
	assert_int_equal(event, FI_JOIN_COMPLETE);
	assert_int_equal(fi_eq_sread(eq, &event, NULL, 0, 100, 0), 0);
	fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	assert_int_equal(fi_eq_sread(eq, &event, small, sizeof(small), 100, 0),
			 sizeof(small));
	assert_int_equal(fi_eq_sread(eq, &event, NULL, 0, 10, 0), -FI_EAGAIN);

	/* A pending error still comes first. */
	fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	ofi_eq_write_error(ueq(eq), &eq->fid, NULL, 0, FI_EIO, 0, NULL, 0);
	assert_int_equal(fi_eq_read(eq, &event, NULL, 0, 0), -FI_EAVAIL);

	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

static void test_errors(void **state)
{
	struct util_env env;
	struct fi_eq_entry in = {.data = 1}, out;
	struct fi_eq_err_entry err;
	struct fid_eq *eq;
	uint32_t event;
	char blob[6] = "hello", user[16];

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	eq = eq_open(&env, 0, FI_WAIT_NONE, 0);
	assert_int_equal(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
	ofi_eq_write(ueq(eq), FI_NOTIFY, &in, sizeof(in));
	assert_true(ofi_eq_write_error(ueq(eq), &eq->fid, (void *)3, 4, FI_EIO,
				       -2, blob, sizeof(blob)) > 0);
	ofi_eq_write_error(ueq(eq), &eq->fid, (void *)8, 9, FI_ENOENT, 0, blob,
			   sizeof(blob));
	/* A pending error blocks reads until it is taken. */
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	err.err_data = user;
	err.err_data_size = sizeof(user);
	assert_int_equal(fi_eq_readerr(eq, &err, FI_PEEK), sizeof(err));
	assert_int_equal(err.err, FI_EIO);
	memset(&err, 0, sizeof(err));
	err.err_data = user;
	err.err_data_size = sizeof(user);
	assert_int_equal(fi_eq_readerr(eq, &err, 0), sizeof(err));
	assert_int_equal(err.err, FI_EIO);
	assert_int_equal(err.prov_errno, -2);
	assert_ptr_equal(err.context, (void *)3);
	assert_int_equal(err.data, 4);
	assert_ptr_equal(err.fid, &eq->fid);
	assert_ptr_equal(err.err_data, user);
	assert_int_equal(err.err_data_size, sizeof(blob));
	assert_string_equal(user, "hello");

	memset(&err, 0, sizeof(err));
	assert_int_equal(fi_eq_readerr(eq, &err, 0), sizeof(err));
	assert_int_equal(err.err, FI_ENOENT);
	assert_non_null(err.err_data);
	assert_int_equal(err.err_data_size, sizeof(blob));
	assert_string_equal(err.err_data, "hello");

	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(out.data, 1);
	assert_string_equal(fi_eq_strerror(eq, FI_EIO, NULL, NULL, 0),
			    fi_strerror(FI_EIO));
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

static void test_write_and_sread(void **state)
{
	struct util_env env;
	struct fi_eq_entry in = {.data = 1}, out;
	struct fid_eq *eq;
	uint32_t event;
	uint64_t start;
	char big[8192];

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	eq = eq_open(&env, FI_WRITE, FI_WAIT_UNSPEC, 2);
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), FI_PEEK),
			 -FI_EINVAL);
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, NULL, sizeof(in), 0),
			 -FI_EINVAL);
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, big, sizeof(big), 0),
			 -FI_EINVAL);
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	in.data = 2;
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	/* The EQ holds attr.size user events. */
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 10, 0),
			 sizeof(out));
	assert_int_equal(out.data, 1);
	assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 10, 0),
			 sizeof(out));
	assert_int_equal(out.data, 2);
	start = ofi_gettime_ms();
	assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 50, 0),
			 -FI_EAGAIN);
	assert_true(ofi_gettime_ms() - start >= 45);
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

static void test_busy(void **state)
{
	struct util_env env;
	struct fid_eq *eq;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	eq = eq_open(&env, 0, FI_WAIT_NONE, 0);
	assert_int_equal(fi_close(&env.fabric->fabric_fid.fid), -FI_EBUSY);
	assert_int_equal(fi_domain_bind(&env.domain->domain_fid, &eq->fid, 0),
			 0);
	assert_int_equal(fi_domain_bind(&env.domain->domain_fid, &eq->fid, 0),
			 -FI_EINVAL);
	assert_int_equal(fi_close(&eq->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&env.domain->domain_fid.fid), 0);
	assert_int_equal(fi_close(&eq->fid), 0);
	assert_int_equal(fi_close(&env.fabric->fabric_fid.fid), 0);
	fi_freeinfo(env.info);
}

/* ---- handler registry ---- */

struct hstate {
	atomic_int calls;
	uint64_t last_type;
	uint64_t last_len;
	uint64_t last_data;
	struct fid_eq *last_eq;
	void *last_ctx;
	ssize_t ret; /* what the handler answers */
};

static ssize_t record(struct fid_eq *eq, uint64_t type, void *data,
		      uint64_t len, void *context)
{
	struct hstate *st = context;
	struct fi_eq_entry *e = data;

	atomic_fetch_add(&st->calls, 1);
	st->last_eq = eq;
	st->last_type = type;
	st->last_len = len;
	st->last_ctx = context;
	st->last_data = len >= sizeof(*e) ? e->data : 0;
	if (st->ret == -FI_EAGAIN)
		e->data += 1000; /* a pass-through may edit the entry */
	return st->ret;
}

static void test_handler_every_type(void **state)
{
	struct fi_eq_entry in = {.context = (void *)7}, out;
	struct fi_eq_err_entry err = {0};
	struct hstate st = {0};
	struct util_env env;
	struct fid_eq *eq;
	uint32_t event;
	ssize_t answer;
	uint64_t type;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	eq = eq_open(&env, FI_WRITE, FI_WAIT_NONE, 0);
	assert_int_equal(FI_COMMIT, 7);
	for (type = FI_NOTIFY; type <= FI_COMMIT; type++) {
		assert_int_equal(fi_eq_register_handler(eq, type, record, &st),
				 0);
		st.ret = 100 + type;
		in.data = type;
		answer = 0;
		assert_int_equal(ofi_eq_deliver(ueq(eq), type, &in, sizeof(in),
						0, &answer),
				 OFI_EQ_HANDLED);
		assert_int_equal(answer, 100 + type);
		assert_int_equal(st.calls, type + 1);
		assert_int_equal(st.last_type, type);
		assert_int_equal(st.last_len, sizeof(in));
		assert_int_equal(st.last_data, type);
		assert_ptr_equal(st.last_eq, eq);
		assert_ptr_equal(st.last_ctx, &st);
		/* ofi_eq_write is the same path without the answer. */
		assert_int_equal(ofi_eq_write(ueq(eq), type, &in, sizeof(in)),
				 sizeof(in));
		assert_int_equal(st.calls, type + 2);
		st.calls = type + 1;
		/* Consumed: nothing reaches the queue. */
		assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
				 -FI_EAGAIN);
	}
	/* Only 0 .. FI_COMMIT are event types. */
	assert_int_equal(fi_eq_register_handler(eq, FI_COMMIT + 1, record, &st),
			 -FI_EINVAL);
	assert_int_equal(fi_eq_register_handler(eq, ~0ULL, NULL, NULL),
			 -FI_EINVAL);
	assert_int_equal(ofi_eq_deliver(ueq(eq), FI_NOTIFY, &in, sizeof(in),
					FI_PEEK, NULL),
			 -FI_EINVAL);
	assert_int_equal(ofi_eq_deliver(ueq(eq), FI_NOTIFY, NULL, 0, 0, NULL),
			 -FI_EINVAL);
	/* An event of an unknown type is queued, never handled. */
	assert_int_equal(ofi_eq_deliver(ueq(eq), 42, &in, sizeof(in), 0, NULL),
			 OFI_EQ_QUEUED);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(event, 42);

	/* Application writes and error entries bypass handlers. */
	st.calls = 0;
	in.data = 55;
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	assert_true(ofi_eq_write_error(ueq(eq), &eq->fid, NULL, 0, FI_EIO, 0,
				       NULL, 0) > 0);
	assert_int_equal(st.calls, 0);
	assert_int_equal(fi_eq_readerr(eq, &err, 0), sizeof(err));
	assert_int_equal(err.err, FI_EIO);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(out.data, 55);
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

static void test_handler_replace_remove(void **state)
{
	struct fi_eq_entry in = {.data = 9}, out;
	struct hstate a = {0}, b = {0};
	struct util_env env;
	struct fid_eq *eq;
	uint32_t event;
	ssize_t answer;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	eq = eq_open(&env, 0, FI_WAIT_NONE, 0);
	/* Removing what was never registered is harmless. */
	assert_int_equal(fi_eq_register_handler(eq, FI_SHUTDOWN, NULL, NULL),
			 0);
	assert_int_equal(fi_eq_register_handler(eq, FI_SHUTDOWN, record, &a),
			 0);
	assert_int_equal(ofi_eq_deliver(ueq(eq), FI_SHUTDOWN, &in, sizeof(in),
					0, &answer),
			 OFI_EQ_HANDLED);
	assert_int_equal(fi_eq_register_handler(eq, FI_SHUTDOWN, record, &b),
			 0);
	assert_int_equal(ofi_eq_deliver(ueq(eq), FI_SHUTDOWN, &in, sizeof(in),
					0, &answer),
			 OFI_EQ_HANDLED);
	assert_int_equal(a.calls, 1);
	assert_int_equal(b.calls, 1);
	/* Another type's handler is separate. */
	assert_int_equal(ofi_eq_deliver(ueq(eq), FI_CONNECTED, &in, sizeof(in),
					0, &answer),
			 OFI_EQ_QUEUED);
	assert_int_equal(fi_eq_register_handler(eq, FI_SHUTDOWN, NULL, &a), 0);
	assert_int_equal(ofi_eq_deliver(ueq(eq), FI_SHUTDOWN, &in, sizeof(in),
					0, &answer),
			 OFI_EQ_QUEUED);
	assert_int_equal(a.calls + b.calls, 2);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(event, FI_CONNECTED);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(event, FI_SHUTDOWN);
	assert_int_equal(out.data, 9);
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

static void test_handler_answers(void **state)
{
	struct fi_eq_entry in = {.data = 1}, out;
	struct hstate st = {0};
	struct util_env env;
	struct fid_eq *eq;
	uint32_t event;
	ssize_t answer;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	eq = eq_open(&env, 0, FI_WAIT_NONE, 0);
	assert_int_equal(fi_eq_register_handler(eq, FI_COMMIT, record, &st), 0);
	/* -FI_EAGAIN: queued as if no handler, edits included. */
	st.ret = -FI_EAGAIN;
	assert_int_equal(
		ofi_eq_deliver(ueq(eq), FI_COMMIT, &in, sizeof(in), 0, &answer),
		OFI_EQ_QUEUED);
	assert_int_equal(answer, -FI_EAGAIN);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(event, FI_COMMIT);
	assert_int_equal(out.data, 1001);
	assert_int_equal(in.data, 1); /* the caller's buffer is untouched */
	/* Another error: consumed, the error is the answer. */
	st.ret = -FI_EACCES;
	assert_int_equal(
		ofi_eq_deliver(ueq(eq), FI_COMMIT, &in, sizeof(in), 0, &answer),
		OFI_EQ_HANDLED);
	assert_int_equal(answer, -FI_EACCES);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);
	/* ofi_eq_write reports success either way: the event went somewhere. */
	assert_int_equal(ofi_eq_write(ueq(eq), FI_COMMIT, &in, sizeof(in)),
			 sizeof(in));
	st.ret = 0;
	assert_int_equal(
		ofi_eq_deliver(ueq(eq), FI_COMMIT, &in, sizeof(in), 0, &answer),
		OFI_EQ_HANDLED);
	assert_int_equal(answer, 0);
	assert_int_equal(st.calls, 4);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

/* FI_COMMIT entries: iov points at the array right after the entry. */
static const void *commit_seen;

static ssize_t commit_peek(struct fid_eq *eq, uint64_t type, void *data,
			   uint64_t len, void *context)
{
	struct fi_eq_commit_entry *c = data;

	(void)eq;
	(void)type;
	(void)len;
	(void)context;
	commit_seen = c->iov == (const void *)(c + 1) ? c->iov : NULL;
	return -FI_EAGAIN;
}

static void test_commit_iov_rebase(void **state)
{
	struct {
		struct fi_eq_commit_entry c;
		struct fi_rma_iov iov[2];
	} in, out;
	struct util_env env;
	struct fid_eq *eq;
	uint32_t event;
	ssize_t answer;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	eq = eq_open(&env, 0, FI_WAIT_NONE, 0);
	memset(&in, 0, sizeof(in));
	in.c.iov = (void *)0x1; /* the sender's pointer means nothing here */
	in.c.count = 2;
	in.iov[0].key = 7;
	in.iov[1].key = 9;
	assert_int_equal(
		fi_eq_register_handler(eq, FI_COMMIT, commit_peek, NULL), 0);
	commit_seen = NULL;
	assert_int_equal(
		ofi_eq_deliver(ueq(eq), FI_COMMIT, &in, sizeof(in), 0, &answer),
		OFI_EQ_QUEUED);
	assert_non_null(commit_seen);
	memset(&out, 0xff, sizeof(out));
	/* Too short for the array: the entry, no pointer into the queue. */
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out.c), FI_PEEK),
			 sizeof(out.c));
	assert_null(out.c.iov);
	assert_int_equal(out.c.count, 2);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(event, FI_COMMIT);
	assert_ptr_equal(out.c.iov, out.iov);
	assert_int_equal(out.c.iov[1].key, 9);
	/* A count that does not match the length is left alone. */
	in.c.count = 5;
	assert_int_equal(
		ofi_eq_deliver(ueq(eq), FI_COMMIT, &in, sizeof(in), 0, &answer),
		OFI_EQ_QUEUED);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_ptr_equal(out.c.iov, (void *)0x1);
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

/* A handler that uses its own EQ: the EQ lock is not held around it. */
static ssize_t reenter(struct fid_eq *eq, uint64_t type, void *data,
		       uint64_t len, void *context)
{
	struct fi_eq_entry out, in = {.data = 77};
	uint32_t event;
	int *step = context;

	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	/* Closing from inside would wait for ourselves. */
	assert_int_equal(fi_close(&eq->fid), -FI_EBUSY);
	/* Unregistering ourselves does not wait for ourselves. */
	assert_int_equal(fi_eq_register_handler(eq, type, NULL, NULL), 0);
	(*step)++;
	return 0;
}

static void test_handler_reentry(void **state)
{
	struct fi_eq_entry in = {.data = 1}, out;
	struct util_env env;
	struct fid_eq *eq;
	uint32_t event;
	int step = 0;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	eq = eq_open(&env, FI_WRITE, FI_WAIT_NONE, 0);
	assert_int_equal(fi_eq_register_handler(eq, FI_CONNREQ, reenter, &step),
			 0);
	assert_int_equal(
		ofi_eq_deliver(ueq(eq), FI_CONNREQ, &in, sizeof(in), 0, NULL),
		OFI_EQ_HANDLED);
	assert_int_equal(step, 1);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(out.data, 77);
	/* It unregistered itself. */
	assert_int_equal(
		ofi_eq_deliver(ueq(eq), FI_CONNREQ, &in, sizeof(in), 0, NULL),
		OFI_EQ_QUEUED);
	assert_int_equal(step, 1);
	assert_int_equal(fi_close(&eq->fid), 0);
	util_env_close(&env);
}

/* ---- concurrent use ---- */

#define CONC_EVENTS 20000

struct conc {
	struct fid_eq *eq;
	atomic_int handled[2];
	atomic_int running[2];
	atomic_int torn;
	atomic_int queued;
	atomic_int read;
	atomic_int stale_run;
	atomic_int passed;
	atomic_bool done;
	int delivered;
	int tag[2];
};

static struct conc *conc_global;

static ssize_t conc_h(int which, void *context, struct fi_eq_entry *e)
{
	struct conc *c = conc_global;

	/* Context and function always come from the same registration. */
	if (context != &c->tag[which])
		atomic_fetch_add(&c->torn, 1);
	atomic_fetch_add(&c->running[which], 1);
	if (!(e->data % 64))
		usleep(50);
	atomic_fetch_add(&c->handled[which], 1);
	atomic_fetch_sub(&c->running[which], 1);
	/* Some events are passed on to the reader. */
	if (e->data % 5)
		return 0;
	atomic_fetch_add(&c->passed, 1);
	return -FI_EAGAIN;
}

static ssize_t conc_h0(struct fid_eq *eq, uint64_t type, void *data,
		       uint64_t len, void *context)
{
	return conc_h(0, context, data);
}

static ssize_t conc_h1(struct fid_eq *eq, uint64_t type, void *data,
		       uint64_t len, void *context)
{
	return conc_h(1, context, data);
}

static void *conc_deliver(void *arg)
{
	struct conc *c = arg;
	struct fi_eq_entry in = {0};
	ssize_t ret, answer;
	int i;

	/*
	 * At least CONC_EVENTS, and on until both handlers have run: on a
	 * loaded machine the registering thread may not be scheduled at all
	 * during the first batch.
	 */
	for (i = 0; i < CONC_EVENTS || ((!atomic_load(&c->handled[0]) ||
					 !atomic_load(&c->handled[1])) &&
					i < 1000 * CONC_EVENTS);
	     i++) {
		in.data = i;
		answer = 1;
		ret = ofi_eq_deliver(ueq(c->eq), FI_NOTIFY, &in, sizeof(in), 0,
				     &answer);
		if (ret == OFI_EQ_QUEUED)
			atomic_fetch_add(&c->queued, 1);
		else if (ret != OFI_EQ_HANDLED || answer != 0)
			atomic_fetch_add(&c->torn, 1);
		if (i >= CONC_EVENTS && !(i % 64))
			sched_yield();
	}
	c->delivered = i;
	atomic_store(&c->done, true);
	return NULL;
}

static void *conc_register(void *arg)
{
	struct conc *c = arg;
	int i, which;

	for (i = 0; !atomic_load(&c->done); i++) {
		which = i % 3;
		if (which == 2)
			fi_eq_register_handler(c->eq, FI_NOTIFY, NULL, NULL);
		else
			fi_eq_register_handler(c->eq, FI_NOTIFY,
					       which ? conc_h1 : conc_h0,
					       &c->tag[which]);
		/* The replaced handler has finished when we get here. */
		if (which != 0 && atomic_load(&c->running[0]))
			atomic_fetch_add(&c->stale_run, 1);
		if (which != 1 && atomic_load(&c->running[1]))
			atomic_fetch_add(&c->stale_run, 1);
		if (!(i % 16))
			usleep(20);
	}
	return NULL;
}

static void *conc_read(void *arg)
{
	struct conc *c = arg;
	struct fi_eq_entry out;
	uint32_t event;
	ssize_t ret;

	for (;;) {
		ret = fi_eq_read(c->eq, &event, &out, sizeof(out), 0);
		if (ret == sizeof(out)) {
			atomic_fetch_add(&c->read, 1);
			continue;
		}
		if (ret != -FI_EAGAIN) {
			atomic_fetch_add(&c->torn, 1);
			break;
		}
		if (atomic_load(&c->done) &&
		    atomic_load(&c->read) == atomic_load(&c->queued))
			break;
		sched_yield();
	}
	return NULL;
}

static void test_handler_concurrent(void **state)
{
	struct conc c = {.tag = {0, 1}};
	struct util_env env;
	pthread_t t[3];
	int i, handled;

	conc_global = &c;
	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	c.eq = eq_open(&env, 0, FI_WAIT_NONE, 0);
	assert_int_equal(pthread_create(&t[0], NULL, conc_register, &c), 0);
	assert_int_equal(pthread_create(&t[1], NULL, conc_read, &c), 0);
	assert_int_equal(pthread_create(&t[2], NULL, conc_deliver, &c), 0);
	for (i = 2; i >= 0; i--)
		pthread_join(t[i], NULL);
	assert_int_equal(c.torn, 0);
	assert_int_equal(c.stale_run, 0);
	handled = c.handled[0] + c.handled[1];
	assert_true(c.handled[0] > 0 && c.handled[1] > 0);
	/* Each event was consumed by a handler or queued, and each queued
	 * one was read. */
	assert_int_equal(c.read, c.queued);
	assert_int_equal(handled - c.passed + c.queued, c.delivered);
	assert_int_equal(fi_close(&c.eq->fid), 0);
	util_env_close(&env);
}

/* ---- close while a handler runs ---- */

struct slow {
	struct fid_eq *eq;
	atomic_int calls;
	atomic_bool entered;
	atomic_bool finished;
	atomic_bool late_done;
	ssize_t late_ret;
};

static bool wait_flag(atomic_bool *flag, int ms)
{
	while (!atomic_load(flag) && ms-- > 0)
		usleep(1000);
	return atomic_load(flag);
}

static ssize_t slow_handler(struct fid_eq *eq, uint64_t type, void *data,
			    uint64_t len, void *context)
{
	struct slow *s = context;

	atomic_fetch_add(&s->calls, 1);
	atomic_store(&s->entered, true);
	/* Hold the close open until the late delivery has happened. */
	wait_flag(&s->late_done, 2000);
	usleep(50000);
	atomic_store(&s->finished, true);
	return 0;
}

static void *slow_first(void *arg)
{
	struct slow *s = arg;
	struct fi_eq_entry in = {0};

	ofi_eq_deliver(ueq(s->eq), FI_MR_COMPLETE, &in, sizeof(in), 0, NULL);
	return NULL;
}

static void *slow_late(void *arg)
{
	struct slow *s = arg;
	struct fi_eq_entry in = {0};
	struct util_eq *eq = ueq(s->eq);
	bool closing = false;
	int ms;

	for (ms = 0; ms < 2000 && !closing; ms++) {
		pthread_mutex_lock(&eq->lock);
		closing = eq->closing;
		pthread_mutex_unlock(&eq->lock);
		if (!closing)
			usleep(1000);
	}
	/* Close has begun: no new handler call, the event is queued. */
	s->late_ret =
		ofi_eq_deliver(eq, FI_MR_COMPLETE, &in, sizeof(in), 0, NULL);
	atomic_store(&s->late_done, true);
	return NULL;
}

static void test_handler_close_waits(void **state)
{
	struct slow s = {0};
	struct util_env env;
	pthread_t t1, t2;
	uint64_t start;

	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	s.eq = eq_open(&env, 0, FI_WAIT_NONE, 0);
	assert_int_equal(
		fi_eq_register_handler(s.eq, FI_MR_COMPLETE, slow_handler, &s),
		0);
	assert_int_equal(pthread_create(&t1, NULL, slow_first, &s), 0);
	assert_true(wait_flag(&s.entered, 2000));
	assert_int_equal(pthread_create(&t2, NULL, slow_late, &s), 0);
	start = ofi_gettime_ms();
	assert_int_equal(fi_close(&s.eq->fid), 0);
	/* Close returned only after the running handler did. */
	assert_true(atomic_load(&s.finished));
	assert_true(ofi_gettime_ms() - start >= 45);
	assert_true(atomic_load(&s.late_done));
	assert_int_equal(s.late_ret, OFI_EQ_QUEUED);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	usleep(20000);
	assert_int_equal(atomic_load(&s.calls), 1);
	util_env_close(&env);
}

/* The connection progress pass that writes an event: never before set. */
static int late_calls, late_at = -1;
static struct fid_eq *late_eq;

static void late_progress(struct util_eq_prog *prog)
{
	struct fi_eq_entry e = {.context = (void *)91};

	(void)prog;
	if (++late_calls == late_at)
		assert_int_equal(
			fi_eq_write(late_eq, FI_NOTIFY, &e, sizeof(e), 0),
			sizeof(e));
}

/*
 * A read that gave the core away progresses and reads again before it
 * answers (util_cq's read_after_yield: the read must be past the spin
 * budget and follow the one before at once, so a few tries).
 */
static void test_read_after_yield(void **state)
{
	struct util_eq_prog prog = {.progress = late_progress};
	struct fi_eq_entry e;
	struct util_env env;
	int64_t spin = ofi_yield_spin_ns();
	ssize_t ret = -FI_EAGAIN;
	uint32_t event;
	uint64_t t0;
	int tries;

	(void)state;
	if (spin < 0) /* FI_PROGRESS_SPIN=-1 never yields */
		skip();
	util_env_open(&env, FI_VERSION(1, 17), 0, FI_MSG, FI_FORMAT_UNSPEC);
	late_eq = eq_open(&env, FI_WRITE, FI_WAIT_NONE, 0);
	ofi_eq_prog_add(ueq(late_eq), &prog);
	for (tries = 0; tries < 50 && ret == -FI_EAGAIN; tries++) {
		late_at = -1;
		t0 = ofi_gettime_ns();
		while (ofi_gettime_ns() - t0 < 2 * (uint64_t)spin + 50000)
			assert_int_equal(
				fi_eq_read(late_eq, &event, &e, sizeof(e), 0),
				-FI_EAGAIN);
		late_at = late_calls + 2;
		ret = fi_eq_read(late_eq, &event, &e, sizeof(e), 0);
	}
	assert_int_equal(ret, sizeof(e));
	assert_int_equal(event, FI_NOTIFY);
	assert_ptr_equal(e.context, (void *)91);
	assert_int_equal(late_calls, late_at);
	ofi_eq_prog_del(ueq(late_eq), &prog);
	assert_int_equal(fi_close(&late_eq->fid), 0);
	util_env_close(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_peek),
		cmocka_unit_test(test_read_short_or_null),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_write_and_sread),
		cmocka_unit_test(test_busy),
		cmocka_unit_test(test_handler_every_type),
		cmocka_unit_test(test_handler_replace_remove),
		cmocka_unit_test(test_handler_answers),
		cmocka_unit_test(test_commit_iov_rebase),
		cmocka_unit_test(test_handler_reentry),
		cmocka_unit_test(test_handler_concurrent),
		cmocka_unit_test(test_handler_close_waits),
		cmocka_unit_test(test_read_after_yield),
	};

	return cmocka_run_group_tests_name("util_eq", tests, NULL, NULL);
}
