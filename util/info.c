/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * util/info.c - owns the fi_info program: queries fi_getinfo() with the
 * filters given on the command line and prints the result in the short,
 * verbose (fi_tostr), provider-list or environment-variable form.  The
 * options, output and exit codes follow libfabric 1.17's fi_info so that
 * scripts written against it keep working.  Only the public API is used.
 */

#define _GNU_SOURCE /* strcasestr */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#ifndef FI_COMMIT_MANUAL
#define FI_COMMIT_MANUAL (1ULL << 50)
#endif
#ifndef FI_PMEM
#define FI_PMEM FI_RMA_PMEM
#endif
#ifndef FI_REVISION_VERSION
#define FI_REVISION_VERSION 0
#endif

#define STR_(x) #x
#define STR(x)	STR_(x)
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION                                                        \
	STR(FI_MAJOR_VERSION)                                                  \
	"." STR(FI_MINOR_VERSION) "." STR(FI_REVISION_VERSION)
#endif

struct name_val {
	const char *name;
	uint64_t val;
};

/* clang-format off */
#define NV(x) { #x, x }
/* clang-format on */

/* The names 1.17's fi_info accepts, plus our FI_PMEM / FI_COMMIT_MANUAL. */
static const struct name_val cap_names[] = {
	NV(FI_MSG),	      NV(FI_RMA),
	NV(FI_TAGGED),	      NV(FI_ATOMIC),
	NV(FI_MULTICAST),     NV(FI_COLLECTIVE),
	NV(FI_READ),	      NV(FI_WRITE),
	NV(FI_RECV),	      NV(FI_SEND),
	NV(FI_REMOTE_READ),   NV(FI_REMOTE_WRITE),
	NV(FI_MULTI_RECV),    NV(FI_REMOTE_CQ_DATA),
	NV(FI_MORE),	      NV(FI_PEEK),
	NV(FI_TRIGGER),	      NV(FI_FENCE),
	NV(FI_LOCAL_COMM),    NV(FI_REMOTE_COMM),
	NV(FI_SHARED_AV),     NV(FI_RMA_EVENT),
	NV(FI_SOURCE),	      NV(FI_NAMED_RX_CTX),
	NV(FI_DIRECTED_RECV), NV(FI_SOURCE_ERR),
	NV(FI_HMEM),	      NV(FI_PMEM),
	NV(FI_RMA_PMEM),
};

static const struct name_val mode_names[] = {
	NV(FI_CONTEXT),		NV(FI_MSG_PREFIX), NV(FI_ASYNC_IOV),
	NV(FI_RX_CQ_DATA),	NV(FI_LOCAL_MR),   NV(FI_NOTIFY_FLAGS_ONLY),
	NV(FI_RESTRICTED_COMP), NV(FI_CONTEXT2),   NV(FI_COMMIT_MANUAL),
};

static const struct name_val ep_type_names[] = {
	NV(FI_EP_UNSPEC), NV(FI_EP_MSG),	 NV(FI_EP_DGRAM),
	NV(FI_EP_RDM),	  NV(FI_EP_SOCK_STREAM), NV(FI_EP_SOCK_DGRAM),
};

static const struct name_val addr_format_names[] = {
	NV(FI_FORMAT_UNSPEC), NV(FI_SOCKADDR),	  NV(FI_SOCKADDR_IN),
	NV(FI_SOCKADDR_IN6),  NV(FI_SOCKADDR_IB), NV(FI_ADDR_PSMX),
	NV(FI_ADDR_GNI),      NV(FI_ADDR_BGQ),	  NV(FI_ADDR_MLX),
	NV(FI_ADDR_STR),      NV(FI_ADDR_PSMX2),  NV(FI_ADDR_EFA),
};

struct name_table {
	const struct name_val *names;
	size_t count;
	const char *what;
};

/* clang-format off */
#define TABLE(t, what) { t, sizeof(t) / sizeof((t)[0]), what }
/* clang-format on */

static const struct name_table caps_table = TABLE(cap_names, "capability");
static const struct name_table mode_table = TABLE(mode_names, "mode");
static const struct name_table ep_table = TABLE(ep_type_names, "endpoint type");
static const struct name_table addr_table =
	TABLE(addr_format_names, "address format");

struct options {
	struct fi_info *hints;
	int use_hints;
	const char *node;
	const char *port;
	uint64_t flags;
	const char *env_filter;
	const char *info_filter;
	int env;
	int list;
	int verbose;
	int version;
};

static int lookup(const struct name_table *t, const char *name, uint64_t *val)
{
	size_t i;

	for (i = 0; i < t->count; i++) {
		if (!strcasecmp(t->names[i].name, name)) {
			*val = t->names[i].val;
			return 0;
		}
	}
	fprintf(stderr, "error: Unrecognized %s: %s\n", t->what, name);
	return -EINVAL;
}

/* "A|B|C": every token must be known; the values are OR-ed into *flags. */
static int parse_flags(const struct name_table *t, char *arg, uint64_t *flags)
{
	char *save = NULL, *tok;
	uint64_t val;
	int ret;

	for (tok = strtok_r(arg, "|", &save); tok;
	     tok = strtok_r(NULL, "|", &save)) {
		ret = lookup(t, tok, &val);
		if (ret)
			return ret;
		*flags |= val;
	}
	return 0;
}

static void usage(const char *prog)
{
	printf("Usage: %s\n", prog);
	printf("  -h, --help\t\t\tdisplay this help and exit\n"
	       "  -s, --src_addr=ADDR\t\tsource name or address\n"
	       "  -n, --node=NAME\t\tdest node name or address\n"
	       "  -P, --port=PNUM\t\tport number\n"
	       "  -c, --caps=CAP1|CAP2..\tone or more capabilities: "
	       "FI_MSG|FI_RMA...\n"
	       "  -m, --mode=MOD1|MOD2..\tone or more modes, default all "
	       "modes\n"
	       "  -t, --ep_type=EPTYPE\t\tspecify single endpoint type: "
	       "FI_EP_MSG, FI_EP_DGRAM...\n"
	       "  -d, --domain=DOMAIN\t\tspecify the domain name\n"
	       "  -f, --fabric=FABRIC\t\tspecify the fabric name\n"
	       "  -a, --addr_format=FMT\t\tspecify accepted address format: "
	       "FI_FORMAT_UNSPEC, FI_SOCKADDR...\n"
	       "  -p, --provider=PROV\t\tspecify provider explicitly\n"
	       "  -e, --env\t\t\tprint libfabric environment variables\n"
	       "  -g, --getenv=SUBSTR\t\tprint libfabric environment "
	       "variables with substr\n"
	       "  -i, --info=\t\tprint fi_info structures containing substr\n"
	       "  -l, --list\t\t\tlist available libfabric providers\n"
	       "  -v, --verbose\t\t\tverbose output\n"
	       "  --version\t\t\tprint version info and exit\n");
}

static void print_version(const char *prog)
{
	uint32_t api = fi_version();
	int dummy = 0;

	printf("%s: %s\n", prog, PACKAGE_VERSION);
	printf("libfabric: %s\n", fi_tostr(&dummy, FI_TYPE_VERSION));
	printf("libfabric api: %u.%u\n", FI_MAJOR(api), FI_MINOR(api));
}

static void print_short(const struct fi_info *info)
{
	const struct fi_info *cur;

	for (cur = info; cur; cur = cur->next) {
		printf("provider: %s\n", cur->fabric_attr->prov_name);
		printf("    fabric: %s\n", cur->fabric_attr->name);
		printf("    domain: %s\n", cur->domain_attr->name);
		printf("    version: %u.%u\n",
		       FI_MAJOR(cur->fabric_attr->prov_version),
		       FI_MINOR(cur->fabric_attr->prov_version));
		printf("    type: %s\n",
		       fi_tostr(&cur->ep_attr->type, FI_TYPE_EP_TYPE));
		printf("    protocol: %s\n",
		       fi_tostr(&cur->ep_attr->protocol, FI_TYPE_PROTOCOL));
	}
}

static void print_list(const struct fi_info *info)
{
	const struct fi_info *cur;

	for (cur = info; cur; cur = cur->next) {
		printf("%s:\n", cur->fabric_attr->prov_name);
		printf("    version: %u.%u\n",
		       FI_MAJOR(cur->fabric_attr->prov_version),
		       FI_MINOR(cur->fabric_attr->prov_version));
	}
}

static void print_verbose(const struct fi_info *info, const char *filter)
{
	const struct fi_info *cur;
	const char *text;

	for (cur = info; cur; cur = cur->next) {
		text = fi_tostr(cur, FI_TYPE_INFO);
		if (!text || (filter && !strcasestr(text, filter)))
			continue;
		printf("---\n%s", text);
	}
}

static const char *param_type_name(enum fi_param_type type)
{
	switch (type) {
	case FI_PARAM_STRING:
		return "String";
	case FI_PARAM_INT:
		return "Integer";
	case FI_PARAM_BOOL:
		return "Boolean (0/1, on/off, true/false, yes/no)";
	case FI_PARAM_SIZE_T:
		return "size_t";
	default:
		return "Unknown";
	}
}

/*
 * A value without a space is framed by NUL bytes rather than quotes:
 * 1.17 writes it that way and `fi_info -e` output is compared byte-wise.
 */
static void print_param_value(const struct fi_param *param)
{
	char delim = strchr(param->value, ' ') ? '"' : '\0';

	printf("%s=", param->name);
	putchar(delim);
	fputs(param->value, stdout);
	putchar(delim);
	putchar('\n');
}

static int print_env(const char *filter)
{
	struct fi_param *params = NULL;
	int count = 0, i, ret;

	ret = fi_getparams(&params, &count);
	if (ret) {
		fprintf(stderr, "fi_getparams: %d\n", ret);
		return ret;
	}
	for (i = 0; i < count; i++) {
		if (filter && !strcasestr(params[i].name, filter))
			continue;
		printf("# %s: %s\n", params[i].name,
		       param_type_name(params[i].type));
		printf("# %s\n", params[i].help_string);
		if (params[i].value)
			print_param_value(&params[i]);
		printf("\n");
	}
	fi_freeparams(params);
	return 0;
}

static int run(const struct options *opt)
{
	struct fi_info *info = NULL;
	uint64_t flags = opt->flags;
	int ret;

	if (opt->list)
		flags |= FI_PROV_ATTR_ONLY;
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
			 opt->node, opt->port, flags,
			 opt->use_hints ? opt->hints : NULL, &info);
	if (ret) {
		fprintf(stderr, "fi_getinfo: %d\n", ret);
		return ret;
	}

	if (opt->env)
		ret = print_env(opt->env_filter);
	else if (opt->verbose)
		print_verbose(info, opt->info_filter);
	else if (opt->list)
		print_list(info);
	else
		print_short(info);
	fi_freeinfo(info);
	return ret;
}

static int set_string(char **field, const char *val)
{
	free(*field);
	*field = strdup(val);
	return *field ? 0 : -ENOMEM;
}

static const struct option long_opts[] = {
	{"help", no_argument, NULL, 'h'},
	{"src_addr", required_argument, NULL, 's'},
	{"node", required_argument, NULL, 'n'},
	{"port", required_argument, NULL, 'P'},
	{"caps", required_argument, NULL, 'c'},
	{"mode", required_argument, NULL, 'm'},
	{"ep_type", required_argument, NULL, 't'},
	{"domain", required_argument, NULL, 'd'},
	{"fabric", required_argument, NULL, 'f'},
	{"addr_format", required_argument, NULL, 'a'},
	{"provider", required_argument, NULL, 'p'},
	{"env", no_argument, NULL, 'e'},
	{"getenv", required_argument, NULL, 'g'},
	{"info", required_argument, NULL, 'i'},
	{"list", no_argument, NULL, 'l'},
	{"verbose", no_argument, NULL, 'v'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

/* Returns 0 to go on, a positive exit status to stop. */
static int parse_hint_opt(struct options *opt, int op, char *arg)
{
	struct fi_info *hints = opt->hints;
	uint64_t val = 0;
	int ret = 0;

	opt->use_hints = 1;
	switch (op) {
	case 'c':
		ret = parse_flags(&caps_table, arg, &hints->caps);
		break;
	case 'm':
		hints->mode = 0;
		ret = parse_flags(&mode_table, arg, &hints->mode);
		break;
	case 't':
		ret = lookup(&ep_table, arg, &val);
		hints->ep_attr->type = (enum fi_ep_type)val;
		break;
	case 'a':
		ret = lookup(&addr_table, arg, &val);
		hints->addr_format = (uint32_t)val;
		break;
	case 'p':
		ret = set_string(&hints->fabric_attr->prov_name, arg);
		break;
	case 'd':
		ret = set_string(&hints->domain_attr->name, arg);
		break;
	default: /* 'f' */
		ret = set_string(&hints->fabric_attr->name, arg);
		break;
	}
	return ret ? -ret : 0;
}

static int parse_opts(struct options *opt, int argc, char **argv)
{
	int op;

	while ((op = getopt_long(argc, argv, "s:n:P:c:m:t:a:p:d:f:eg:i:lhv",
				 long_opts, NULL)) != -1) {
		switch (op) {
		case 's':
			opt->node = optarg;
			opt->flags |= FI_SOURCE;
			break;
		case 'n':
			opt->node = optarg;
			break;
		case 'P':
			opt->port = optarg;
			break;
		case 'c':
		case 'm':
		case 't':
		case 'a':
		case 'p':
		case 'd':
		case 'f':
			if (parse_hint_opt(opt, op, optarg))
				return EINVAL;
			break;
		case 'g':
			opt->env_filter = optarg;
			opt->env = 1;
			break;
		case 'e':
			opt->env = 1;
			break;
		case 'i':
			opt->info_filter = optarg;
			opt->verbose = 1;
			break;
		case 'l':
			opt->list = 1;
			break;
		case 'v':
			opt->verbose = 1;
			break;
		case 'V':
			opt->version = 1;
			break;
		default:
			usage(argv[0]);
			return EXIT_FAILURE;
		}
	}
	return 0;
}

static struct fi_info *alloc_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	/* Accept every mode and MR mode unless the user narrows them. */
	hints->mode = ~0ULL;
	hints->domain_attr->mode = ~0ULL;
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	return hints;
}

int main(int argc, char **argv)
{
	struct options opt = {0};
	int ret;

	opt.hints = alloc_hints();
	if (!opt.hints) {
		fprintf(stderr, "fi_info: out of memory\n");
		return EXIT_FAILURE;
	}
	ret = parse_opts(&opt, argc, argv);
	if (ret)
		goto out;
	if (opt.version) {
		print_version(argv[0]);
		goto out;
	}
	ret = -run(&opt);
out:
	fi_freeinfo(opt.hints);
	return ret;
}
