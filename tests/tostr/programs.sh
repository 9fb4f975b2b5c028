#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: our fi_info and fi_strerror must print exactly what
# Debian's do, first on Debian's library, then both on ours (with the test
# provider loaded, so there is something to list).
set -u
bld=${top_builddir:?}
src=${top_srcdir:?}
info=$bld/util/.libs/fi_info
[ -x "$info" ] || info=$bld/util/fi_info
serr=$bld/util/.libs/fi_strerror
[ -x "$serr" ] || serr=$bld/util/fi_strerror
debian=/usr/lib/x86_64-linux-gnu
fail=0
"$src/tests/tostr/info_compare.sh" /usr/bin/fi_info "$info" "$debian" ||
	fail=1
FI_PROVIDER_PATH=$bld/tests/prov/.libs \
	"$src/tests/tostr/info_compare.sh" /usr/bin/fi_info "$info" \
	"$OFI_LIBDIR" || fail=1
"$src/tests/tostr/strerror_compare.sh" /usr/bin/fi_strerror "$serr" \
	"$OFI_LIBDIR" || fail=1
exit $fail
