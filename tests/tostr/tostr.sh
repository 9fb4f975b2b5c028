#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: src/tostr.c, compiled against our headers, against
# Debian's fi_tostr.
exec "$top_srcdir/tests/tostr/tostr_test.sh" "-I$top_srcdir/include"
