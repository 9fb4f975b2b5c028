#!/bin/sh
# make check wrapper (issue 16): tests/shm/shm_wake over tcp, a reader
# asleep in fi_cq_sread, in epoll after fi_trywait and in fi_cntr_wait
# wakes when its peer sends, not after a nap: over the same-host path
# (FI_TCP_SHM=1: tcp's wait fd holds shm's wake socket; skipped without
# shm) and over TCP alone (FI_TCP_SHM=0: the sockets' epoll fd, armed
# "sound" by tcp_wait_arm when nothing waits to be sent).
set -u
bin=${top_builddir:?}/tests/shm/shm_wake
[ -x "$bin" ] || exit 77
FI_TCP_SHM=0 timeout 120 "$bin" tcp || exit 1
# make check turns the path off for every other test.
export FI_TCP_SHM=1
exec timeout 120 "$bin" tcp
