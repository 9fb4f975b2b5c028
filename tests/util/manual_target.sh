#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/util/manual_target, under FI_PROGRESS_MANUAL a
# target of RMA and atomics that calls nothing is served, on every path
# (auto_paths.sh).
exec sh "$(dirname "$0")/auto_paths.sh" \
	"${top_builddir:?}/tests/util/manual_target" 60
