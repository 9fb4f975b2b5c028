#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: FI_DELIVERY_COMPLETE on the shm message path.
set -u
bin=${top_builddir:?}/tests/shm/shm_dc
echo "== shm_dc"
exec timeout 120 "$bin"
