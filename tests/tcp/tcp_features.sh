#!/bin/sh
# make check wrapper: the provider-neutral feature test (built with shm's
# tests, tests/shm/shm_features.c) over the tcp provider: every size,
# tagged matching, directed receive and FI_SOURCE, unexpected messages,
# FI_PEEK/FI_CLAIM/FI_DISCARD, cancel, truncation, multi-receive,
# injectdata, a peer killed mid-transfer. Run with the default unexpected
# bound, then with 4 KiB and 0, so unexpected messages take the path
# where their connection stalls and the payload goes straight into the
# receive that later matches (peek, claim and discard included).
set -u
bin=${top_builddir:?}/tests/shm/shm_features
[ -x "$bin" ] || { echo "SKIP: $bin not built (shm disabled)"; exit 77; }
fail=0
for cfg in "" "FI_TCP_MAX_UNEXP=4096" "FI_TCP_MAX_UNEXP=0"; do
	echo "== shm_features tcp ${cfg:-(defaults)}"
	env $cfg timeout 120 "$bin" tcp || fail=1
done
exit $fail
