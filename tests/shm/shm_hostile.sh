#!/bin/sh
# make check wrapper: the hostile-peer test of shm's trust boundary.
# Cases listed in SHM_HOSTILE_XFAIL are expected to fail on this tree
# (message-path validation that lands with the shm_msg.c rework); they
# are reported as XFAIL/XPASS and do not fail the run. Empty the list to
# hold every case to the bar.
set -u
bin=${top_builddir:?}/tests/shm/shm_hostile
: "${SHM_HOSTILE_XFAIL=}"
export SHM_HOSTILE_XFAIL
exec timeout 300 "$bin"
