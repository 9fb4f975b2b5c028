#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/shm/shared_core over shm, both
# processes on one CPU, busy-polling fi_cq_read: 200 round trips of 8 B
# and 64 MiB as 1 MiB messages, window 16, each bounded in time (and the
# stream in handoffs); windowed RMA writes of 8 B and 4 KiB to a target
# that only polls its CQ, bounded in the times the target slept. It fails with FI_PROGRESS_SPIN=-1 (no yield) and
# with FI_SHM_ADAPT=0 (streams need four handoffs per message).
set -u
exec timeout 300 "${top_builddir:?}/tests/shm/shared_core" shm
