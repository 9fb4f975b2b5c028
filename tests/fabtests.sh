#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# make check wrapper: runfabtests.sh over every provider this build has.
# The test provider is in-process only, so it runs the unit programs; the
# built-in providers run everything, client/server pairs included.
set -u
bld=${top_builddir:?}
src=${top_srcdir:?}
run=$src/fabtests/scripts/runfabtests.sh
bin=$bld/fabtests/bin
# libtool wrappers live in bin/, real binaries in bin/.libs: both work
export LD_LIBRARY_PATH="$OFI_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fail=0
# what the providers here are known to support in full
req='unit/poll_test'
FI_PROVIDER_PATH=$bld/tests/prov/.libs "$run" -x -t unit -r "$req" -b "$bin" \
	testprov || fail=1
for prov in shm tcp sockets; do
	grep -q "define HAVE_$(echo $prov | tr a-z A-Z) 1" "$bld/config.h" ||
		continue
	case $prov in
	shm) r='unit/(poll|ep)_test|functional/rdm_coll_.*' ;;
	# FI_EP_MSG must run whole; tcp takes copy overrides and stages
	# every payload through them (fi_tcp(7)): no sub-test may be NOTSUPP;
	# sockets runs on tcp's engine (fi_sockets(7)): the same
	tcp | sockets) r='functional/msg_pingpong.*|unit/hmem_override_test|functional/rdm_coll_.*' ;;
	esac
	# built with libpmem, shm, tcp and sockets claim FI_RMA_PMEM: the
	# commit tests must run
	if grep -q "define HAVE_LIBPMEM 1" "$bld/config.h"; then
		r="${r:+$r|}functional/(rdm_commit_.*|commit_bw)"
	fi
	"$run" -x -r "$r" -b "$bin" "$prov" || fail=1
done
exit $fail
