#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: the symbol test on the library just built.
exec "$top_srcdir/tests/abi/symbols_test.sh" "$OFI_LIBDIR/libfabric.so.1"
