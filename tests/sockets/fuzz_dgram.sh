#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fuzz_dgram.sh - the libFuzzer harness over the sockets datagram decoder
# (tests/sockets/fuzz_dgram.c), run from a seed corpus the encoder
# writes; building, running and the make check / make fuzz knobs are
# tests/util/fuzz_wire_lib.sh's.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/util/fuzz_wire_lib.sh
. "$src/tests/util/fuzz_wire_lib.sh"
# -max_len: a header and some payload; the length rules do not need more.
fuzz_wire fuzz_dgram tests/sockets \
	"$src/tests/sockets/fuzz_dgram.c $src/prov/sockets/sockets_dgram_wire.c" \
	"-I$src/prov/sockets" SOCK_DG_FUZZ_SEEDS 256
