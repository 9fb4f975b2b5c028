#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/shm/shm_wake over tcp, a reader
# asleep in fi_cq_sread, in epoll after fi_trywait and in fi_cntr_wait
# wakes when its peer sends, not after a nap: over TCP alone
# (FI_TCP_SHM=0: the sockets' epoll fd, armed "sound" by tcp_wait_arm
# when nothing waits to be sent), also in fi_wait on a FI_WAIT_MUTEX_COND
# wait set the CQ is bound to; then over the same-host path (FI_TCP_SHM=1:
# tcp's wait fd holds shm's wake socket). The receiver spins on its CQ
# before each sleep, so over TCP its lone connection has left the epoll
# set (util_sock's quiet) and the sleep must put it back: tcp_wait_arm,
# and sockets' progress thread (its arm, and the wake when a connection
# leaves; FI_SOCKETS_SHM=0); and ("polled") a reader asleep while another
# thread of it polls, whose polls take the connection out, is woken to put
# it back, over TCP and over the same-host path. Skipped without shm
# (the program lives there).
set -u
bin=${top_builddir:?}/tests/shm/shm_wake
[ -x "$bin" ] || exit 77
FI_TCP_SHM=0 timeout 120 "$bin" tcp polled || exit 1
FI_TCP_SHM=0 timeout 120 "$bin" tcp set-mc || exit 1
FI_SOCKETS_SHM=0 timeout 120 "$bin" sockets polled || exit 1
# make check turns the path off for every other test.
export FI_TCP_SHM=1
exec timeout 120 "$bin" tcp polled
