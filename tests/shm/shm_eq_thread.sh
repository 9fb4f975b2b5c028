#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: an FI_THREAD_DOMAIN endpoint driven by an EQ reader
# on a second thread beside the application's traffic (tests/shm/
# shm_eq_thread.c); meaningful under --enable-tsan as well.
set -u
bin=${top_builddir:?}/tests/shm/shm_eq_thread
echo "== shm_eq_thread"
exec timeout 60 "$bin"
