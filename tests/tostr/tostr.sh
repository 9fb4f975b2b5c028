#!/bin/sh
# make check wrapper: src/tostr.c, compiled against our headers, against
# Debian's fi_tostr.
exec "$top_srcdir/tests/tostr/tostr_test.sh" "-I$top_srcdir/include"
