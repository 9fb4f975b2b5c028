#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/util/auto_bigread, 16 MiB reads under
# FI_PROGRESS_AUTO awaited in fi_cntr_wait, data checked, bounded in the
# times the threads sleep per read, on every path (auto_paths.sh).
exec sh "$(dirname "$0")/auto_paths.sh" \
	"${top_builddir:?}/tests/util/auto_bigread" 300
