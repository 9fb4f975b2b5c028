/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * msg_pingpong: two-process ping-pong over connected FI_EP_MSG endpoints set
 * up through the connection manager (passive endpoint, FI_CONNREQ, accept,
 * FI_CONNECTED); same options and report format as rdm_pingpong.
 */
#include <stdlib.h>

#include "shared.h"

int main(int argc, char **argv)
{
	int ret;

	ft_init_opts(argv[0]);
	ft_opts.ep_type = FI_EP_MSG;
	if (ft_parse_args(argc, argv, NULL, NULL)) {
		ft_usage("ping-pong over connected message endpoints", NULL);
		return 2;
	}
	ft_opts.ep_type = FI_EP_MSG;
	ret = ft_init_msg();
	if (!ret)
		ret = ft_pingpong("msg_pingpong");
	ft_free_res();
	return ft_exit_code(ret);
}
