#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: endpoint close racing fi_cq_read progress in another
# thread (FI_THREAD_SAFE); meaningful under --enable-asan as well.
set -u
bin=${top_builddir:?}/tests/shm/shm_close_race
echo "== shm_close_race"
exec timeout 60 "$bin"
