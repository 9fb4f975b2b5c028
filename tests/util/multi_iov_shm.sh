#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: every data path of shm through several iovs, each
# byte and guard byte checked (tests/util/multi_iov.c): by default (inline,
# inject, segmented and, from 4 MiB, CMA transfers), then with every
# large transfer by CMA and with none; and RDM endpoints with message caps
# only (rdm-msg: no lock taken on FI_THREAD_DOMAIN).
. "${top_srcdir:?}/tests/util/multi_iov_lib.sh"
multi_iov_need shm
multi_iov_run "" shm rdm
multi_iov_run "FI_SHM_CMA_THRESHOLD=0 FI_SHM_ADAPT=0" shm rdm
multi_iov_run "FI_SHM_DISABLE_CMA=1" shm rdm
multi_iov_run "" shm rdm-msg
exit $fail
