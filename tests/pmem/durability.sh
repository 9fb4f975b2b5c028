#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/pmem/durability with a small number of trials
# (PMEM_DURABILITY_TRIALS, default 7: one of each kind). The full 100-trial
# run is contrib/pmem-durability.sh. Exit 77 (skip) is passed through when
# the library offers no FI_RMA_PMEM (built without libpmem).
set -u
bld=${top_builddir:?}
export LD_LIBRARY_PATH="$OFI_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PMEM_SHIM="$bld/tests/pmem/.libs/persist_shim.so"
export PMEM_DURABILITY_TRIALS=${PMEM_DURABILITY_TRIALS:-7}
exec timeout 120 "$bld/tests/pmem/durability" -K "$@"
