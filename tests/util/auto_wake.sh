#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/util/auto_wake, a reader asleep in
# fi_cntr_wait and fi_cq_sread under FI_PROGRESS_AUTO is woken by the
# completion itself, not by a timer, on every path (auto_paths.sh).
exec sh "$(dirname "$0")/auto_paths.sh" \
	"${top_builddir:?}/tests/util/auto_wake" 150
