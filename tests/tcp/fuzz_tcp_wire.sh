#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fuzz_tcp_wire.sh - the libFuzzer harness over the tcp wire decoders
# (tests/tcp/fuzz_tcp_wire.c), run from a seed corpus the encoders write;
# building, running and the make check / make fuzz knobs are
# tests/util/fuzz_wire_lib.sh's.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/util/fuzz_wire_lib.sh
. "$src/tests/util/fuzz_wire_lib.sh"
# -max_len covers a full frame head (header + the largest body) and more.
fuzz_wire fuzz_tcp_wire tests/tcp \
	"$src/tests/tcp/fuzz_tcp_wire.c $src/prov/tcp/tcp_wire.c
	 $src/prov/util/util_atomic.c" \
	"-I$src/include -I$src/prov/tcp" TCP_FUZZ_SEEDS 512
