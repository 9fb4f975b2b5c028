#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: AV address reuse and peer-slot reuse across processes.
set -u
bin=${top_builddir:?}/tests/shm/shm_av_reuse
echo "== shm_av_reuse"
exec timeout 60 "$bin"
