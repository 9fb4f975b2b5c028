#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/shm/shm_wake over shm, a reader
# asleep in fi_cq_sread, in epoll after fi_trywait and in fi_cntr_wait
# wakes when its peer sends (its wake socket poked), not after a nap;
# processes on any CPUs, then both on one CPU. Then fi_wait on a
# FI_WAIT_FD wait set the CQ is bound to (tcp_wake.sh: FI_WAIT_MUTEX_COND).
set -u
bin=${top_builddir:?}/tests/shm/shm_wake
# "polled": also a reader asleep while another thread of it polls
timeout 120 "$bin" shm polled || exit 1
exec timeout 120 "$bin" shm set-fd
