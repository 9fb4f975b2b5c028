#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: tests/util/manual_target, under FI_PROGRESS_MANUAL a
# target of RMA and atomics that calls nothing is served, on every path
# (auto_paths.sh); then with FI_PROGRESS_TARGET=0, it is not.
paths="$(dirname "$0")/auto_paths.sh"
bin="${top_builddir:?}/tests/util/manual_target"
sh "$paths" "$bin" 60 || exit 1
FI_PROGRESS_TARGET=0 exec sh "$paths" "$bin" 60
