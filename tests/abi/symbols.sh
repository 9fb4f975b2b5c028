#!/bin/sh
# make check wrapper: the symbol test on the library just built.
exec "$top_srcdir/tests/abi/symbols_test.sh" "$OFI_LIBDIR/libfabric.so.1"
