#!/bin/sh
# make check wrapper (issue 16): tests/shm/shm_wake over tcp's same-host
# path (through shm): a reader asleep in fi_cq_sread, in epoll after
# fi_trywait and in fi_cntr_wait wakes when its peer sends (tcp's wait fd
# holds shm's wake socket), not after a nap. Skipped without shm.
# FI_TCP_SHM=1: make check turns the path off for every other test.
set -u
bin=${top_builddir:?}/tests/shm/shm_wake
[ -x "$bin" ] || exit 77
export FI_TCP_SHM=1
exec timeout 120 "$bin" tcp
