/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util/strerror.c - owns the fi_strerror program: prints fi_strerror() for
 * error codes given as numbers (decimal, hex or octal, sign ignored) or as
 * names (FI_ENODATA, ENODATA, FI_ETRUNC).  With one numeric argument the
 * output and exit status match libfabric 1.17's fi_strerror; names and
 * several codes in one call are our additions.
 */

#define _GNU_SOURCE /* strerrorname_np */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#if defined(__GLIBC__) &&                                                      \
	(__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
#define HAVE_STRERRORNAME_NP 1
#endif

struct fi_err_name {
	const char *name;
	int code;
};

/* clang-format off */
#define ERR(x) { #x, x }
/* clang-format on */

/* Codes of libfabric's own range; the rest share the system's names. */
static const struct fi_err_name fi_err_names[] = {
	ERR(FI_SUCCESS),     ERR(FI_EOTHER),   ERR(FI_ETOOSMALL),
	ERR(FI_EOPBADSTATE), ERR(FI_EAVAIL),   ERR(FI_EBADFLAGS),
	ERR(FI_ENOEQ),	     ERR(FI_EDOMAIN),  ERR(FI_ENOCQ),
	ERR(FI_ECRC),	     ERR(FI_ETRUNC),   ERR(FI_ENOKEY),
	ERR(FI_ENOAV),	     ERR(FI_EOVERRUN), ERR(FI_ENORX),
};

static void usage(const char *prog)
{
	printf("Usage: %s FI_ERROR_CODE\n", prog);
	printf("\n"
	       "Displays the error string for the given numeric "
	       "FI_ERROR_CODE.\n"
	       "FI_ERROR_CODE may be a hexadecimal, octal, or decimal "
	       "constant.\n"
	       "For convenience, the absolute value of FI_ERROR_CODE will "
	       "be used.\n");
}

static int name_to_code(const char *arg, int *code)
{
	const char *bare = arg;
	size_t i;

	for (i = 0; i < sizeof(fi_err_names) / sizeof(fi_err_names[0]); i++) {
		if (!strcasecmp(arg, fi_err_names[i].name) ||
		    !strcasecmp(arg, fi_err_names[i].name + 3)) {
			*code = fi_err_names[i].code;
			return 0;
		}
	}
#ifdef HAVE_STRERRORNAME_NP
	if (!strncasecmp(bare, "FI_", 3))
		bare += 3;
	for (i = 1; i < FI_ERRNO_OFFSET; i++) {
		const char *name = strerrorname_np((int)i);

		if (name && !strcasecmp(bare, name)) {
			*code = (int)i;
			return 0;
		}
	}
#else
	(void)bare;
#endif
	return -1;
}

/* Returns 0 and sets *code, or prints why arg was refused and returns 1. */
static int parse_code(const char *arg, int *code)
{
	char *end;
	long val;

	errno = 0;
	val = strtol(arg, &end, 0);
	if (end == arg || *end) {
		if (!name_to_code(arg, code))
			return 0;
		printf("ERROR: unable to parse '%s'\n\n", arg);
		return 1;
	}
	if (errno == ERANGE || val > INT_MAX || val < INT_MIN) {
		printf("ERROR: '%s' is out of range\n\n", arg);
		return 1;
	}
	/* abs(INT_MIN) stays negative; fi_strerror reports it as unknown. */
	*code = val == INT_MIN ? INT_MIN : abs((int)val);
	return 0;
}

int main(int argc, char **argv)
{
	int i, code;

	if (argc < 2) {
		usage(argv[0]);
		return EXIT_FAILURE;
	}
	if (argc == 2 && !strcmp(argv[1], "-h")) {
		usage(argv[0]);
		return EXIT_SUCCESS;
	}
	for (i = 1; i < argc; i++) {
		if (parse_code(argv[i], &code)) {
			usage(argv[0]);
			return EXIT_FAILURE;
		}
		printf("%s\n", fi_strerror(code));
	}
	return EXIT_SUCCESS;
}
