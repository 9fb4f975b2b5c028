#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: every data path of sockets through several iovs,
# each byte and guard byte checked (tests/util/multi_iov.c): RDM endpoints
# on the same-host path and over TCP (FI_SOCKETS_SHM=0), MSG endpoints
# connected over loopback; and RDM endpoints with message caps only, both
# paths (rdm-msg: on FI_THREAD_DOMAIN, no lock taken without a progress
# thread).
. "${top_srcdir:?}/tests/util/multi_iov_lib.sh"
multi_iov_need sockets
multi_iov_run "FI_SOCKETS_SHM=1" sockets rdm
multi_iov_run "FI_SOCKETS_SHM=0" sockets rdm
multi_iov_run "" sockets msg
multi_iov_run "FI_SOCKETS_SHM=1" sockets rdm-msg
multi_iov_run "FI_SOCKETS_SHM=0" sockets rdm-msg
exit $fail
