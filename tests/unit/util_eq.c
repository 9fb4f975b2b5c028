/*
 * util_eq.c - unit tests of util_eq: read with FI_PEEK, error precedence and
 * readerr err_data rules, user writes (FI_WRITE, flags, size limit), sread
 * timeouts, strerror and the handler-table slot.
 */
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
	assert_int_equal(fi_eq_read(eq, &event, small, sizeof(small), 0),
			 -FI_ETOOSMALL);
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
	assert_int_equal(fi_eq_register_handler(eq, FI_NOTIFY, NULL, NULL),
			 -FI_ENOSYS);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_peek),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_write_and_sread),
		cmocka_unit_test(test_busy),
	};

	return cmocka_run_group_tests_name("util_eq", tests, NULL, NULL);
}
