#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: every data path of tcp through several iovs, each
# byte and guard byte checked (tests/util/multi_iov.c): RDM endpoints on
# the same-host path and over TCP (FI_TCP_SHM=0), MSG endpoints connected
# over loopback.
. "${top_srcdir:?}/tests/util/multi_iov_lib.sh"
multi_iov_need tcp
multi_iov_run "FI_TCP_SHM=1" tcp rdm
multi_iov_run "FI_TCP_SHM=0" tcp rdm
multi_iov_run "" tcp msg
multi_iov_run "FI_TCP_SHM=1" tcp rdm-msg
multi_iov_run "FI_TCP_SHM=0" tcp rdm-msg
exit $fail
