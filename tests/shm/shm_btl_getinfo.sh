#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: Open MPI btl/ofi's fi_getinfo request finds shm.
set -u
exec timeout 60 "${top_builddir:?}/tests/shm/shm_btl_getinfo"
