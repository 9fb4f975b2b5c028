/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * rdm_pingpong: two-process ping-pong over FI_EP_RDM with fi_send/fi_recv or
 * the tagged calls (-m tagged), optional data check (-c) and a size sweep
 * (-S).  Doubles as the latency/bandwidth benchmark: one report line per
 * size plus a machine-readable "ft_result:" line.
 */
#include <stdlib.h>

#include "shared.h"

int main(int argc, char **argv)
{
	int ret;

	ft_init_opts(argv[0]);
	if (ft_parse_args(argc, argv, NULL, NULL)) {
		ft_usage("ping-pong over reliable datagram endpoints", NULL);
		return 2;
	}
	if (ft_opts.ep_type == FI_EP_MSG) {
		FT_ERR("use msg_pingpong for FI_EP_MSG");
		return 2;
	}
	ret = ft_init_rdm();
	if (!ret)
		ret = ft_pingpong("rdm_pingpong");
	ft_free_res();
	return ft_exit_code(ret);
}
