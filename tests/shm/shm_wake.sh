#!/bin/sh
# make check wrapper (issue 16): tests/shm/shm_wake over shm, a reader
# asleep in fi_cq_sread, in epoll after fi_trywait and in fi_cntr_wait
# wakes when its peer sends (its wake socket poked), not after a nap;
# processes on any CPUs, then both on one CPU.
set -u
exec timeout 120 "${top_builddir:?}/tests/shm/shm_wake" shm
