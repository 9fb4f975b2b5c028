# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Shared by contrib/peers.sh and contrib/sos-matrix.sh: where the peer suites
# live, how they are unpacked and built outside the tree (against Debian's
# libfabric-dev headers, as a user's CI builds them), the pool that runs
# independent jobs side by side, each in a network namespace of its own, and
# the SOS unit-test runner. Sourced, never run.

peers_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
peers_dir=${PEERS_DIR:-$peers_top/../shared/peers}
peers_work=${PEERS_WORK:-${TMPDIR:-/tmp}/ofi-peers}
peers_jobs=${PEERS_JOBS:-2}
peers_make_jobs=${PEERS_MAKE_JOBS:-2}
# where SOS's build tree keeps the unit tests of tests-sos
peers_sos_unit=modules/tests-sos/test/unit

# Our library's directory: the argument, PEERS_LIB, or the build trees test.sh
# and the README use. "debian" runs everything against Debian's library.
peers_find_lib() {
	local d
	for d in "${1:-}" "${PEERS_LIB:-}" "$peers_top/build-test/.libs" \
		"$peers_top/build/.libs"; do
		[ -n "$d" ] || continue
		if [ "$d" = debian ]; then
			echo debian
			return 0
		fi
		if [ -e "$d/libfabric.so.1" ]; then
			(cd "$d" && pwd)
			return 0
		fi
	done
	return 1
}

peers_log() {
	echo "peers: $*" >&2
}

# peers_unpack TARBALL DEST: unpack once; DEST/.unpacked marks it done
peers_unpack() {
	local tarball=$1 dest=$2
	[ -f "$dest/.unpacked" ] && return 0
	rm -rf "$dest" && mkdir -p "$dest" &&
		tar -xf "$tarball" -C "$dest" --strip-components=1 &&
		touch "$dest/.unpacked"
}

# peers_build_fabtests: prints the install prefix; PEERS_FABTESTS names one
# already built the same way
peers_build_fabtests() {
	local src=$peers_work/src/fabtests prefix=$peers_work/fabtests
	if [ -n "${PEERS_FABTESTS:-}" ]; then
		echo "$PEERS_FABTESTS"
		return
	fi
	if [ ! -f "$prefix/.built" ]; then
		peers_log "building fabtests 1.17.0 in $prefix"
		peers_unpack "$peers_dir/fabtests-1.17.0.tar.xz" "$src" || return 1
		(cd "$src" && { [ -x configure ] || ./autogen.sh; } &&
			./configure -q --with-libfabric=/usr --prefix="$prefix" &&
			make -s -j"$peers_make_jobs" install) \
			>"$peers_work/fabtests-build.log" 2>&1 || {
			tail -n 30 "$peers_work/fabtests-build.log" >&2
			return 1
		}
		touch "$prefix/.built"
	fi
	echo "$prefix"
}

# peers_build_sos NAME CONFIGURE-OPTIONS...: SOS 1.5.3 with tests-sos in
# modules/tests-sos, configured with Open MPI's PMI and the options given,
# installed, and its unit tests built. Prints the build directory.
peers_build_sos() {
	local name=$1
	shift
	local src=$peers_work/src/sos bdir=$peers_work/sos-$name
	local stamp="$*"
	if [ ! -f "$bdir/.built" ] || [ "$(cat "$bdir/.built")" != "$stamp" ]; then
		peers_log "building SOS 1.5.3 ($name: $*) in $bdir"
		if [ ! -f "$src/.unpacked" ]; then
			peers_unpack "$peers_dir/sos-1.5.3.tar.xz" "$src" &&
				rm -rf "$src/modules/tests-sos" &&
				mkdir -p "$src/modules/tests-sos" &&
				tar -xf "$peers_dir"/tests-sos-*.tar.xz \
					-C "$src/modules/tests-sos" \
					--strip-components=1 &&
				(cd "$src" && ./autogen.sh) \
					>"$peers_work/sos-autogen.log" 2>&1 || {
				rm -f "$src/.unpacked"
				tail -n 30 "$peers_work/sos-autogen.log" >&2
				return 1
			}
		fi
		rm -rf "$bdir" && mkdir -p "$bdir" &&
			(cd "$bdir" &&
				"$src/configure" -q --with-ofi=/usr \
					--enable-pmi-mpi CC=mpicc \
					--disable-fortran \
					--prefix="$bdir/install" "$@" &&
				make -s -j"$peers_make_jobs" install &&
				make -s -j"$peers_make_jobs" -C "$peers_sos_unit" \
					check TESTS=) \
				>"$peers_work/sos-$name-build.log" 2>&1 || {
			tail -n 30 "$peers_work/sos-$name-build.log" >&2
			return 1
		}
		echo "$stamp" >"$bdir/.built"
	fi
	echo "$bdir"
}

# The job pool: peers_spawn NAME CMD... runs CMD in the background, at most
# peers_jobs at once, each in namespaces of its own: network (ports), PID
# (runfabtests.sh's cleanup after a failed test SIGKILLs every process whose
# name starts with fi_, which would take the tests of the runs beside it)
# and mount, with a /dev/shm of its own (shm names its regions after PIDs,
# which repeat across PID namespaces). Without namespaces, one job at a
# time. peers_wait_all waits for the lot.
peers_ns_ok=0
peers_ns_prefix=ofipeers$$
peers_ns_probe() {
	peers_ns_ok=1
	peers_in_ns probe true 2>/dev/null || peers_ns_ok=0
	if [ "$peers_ns_ok" != 1 ]; then
		peers_log "no namespaces here: running one job at a time"
		peers_jobs=1
	fi
}

# peers_deadline, when set, is the time (seconds since the epoch) by which
# every job must be done: a job still running then is killed, the whole of
# its PID namespace with it, and one that has not started is not started.
peers_deadline=
peers_left() {
	echo $((peers_deadline - $(date +%s)))
}

peers_in_ns() {
	local name=$1 ns rc lim=()
	shift
	if [ -n "$peers_deadline" ]; then
		[ "$(peers_left)" -gt 0 ] || return 124
		lim=(timeout -k 10 "$(peers_left)")
	fi
	if [ "$peers_ns_ok" != 1 ]; then
		"${lim[@]}" "$@"
		return
	fi
	ns=$peers_ns_prefix-$name
	ip netns add "$ns" && ip -n "$ns" link set lo up || return 1
	"${lim[@]}" ip netns exec "$ns" unshare --pid --kill-child \
		--mount-proc sh -c \
		'mount -t tmpfs -o mode=1777 peers /dev/shm && exec "$@"' \
		peers "$@"
	rc=$?
	ip netns del "$ns"
	return $rc
}

peers_spawn() {
	local name=$1
	shift
	while [ "$(jobs -rp | wc -l)" -ge "$peers_jobs" ]; do
		wait -n
	done
	peers_log "start $name"
	peers_in_ns "$name" "$@" &
}

peers_wait_all() {
	wait
}

peers_cleanup_ns() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		case $ns in
		"$peers_ns_prefix"*) ip netns del "$ns" ;;
		esac
	done
}

# peers_sos_tests BDIR: the unit tests of a built SOS, in make's order
peers_sos_tests() {
	printf 'peers-print:\n\t@echo $(TESTS)\n' |
		make -s -C "$1/$peers_sos_unit" -f Makefile -f - peers-print
}

# peers_run_sos BDIR PROV OUTDIR [ENV=VALUE...]: runs SOS's unit tests at
# 2 PEs through Open MPI's mpirun, with Open MPI's own OFI components off so
# that only SOS loads libfabric. Each test goes through automake's
# test-driver, so its result lands in OUTDIR/TEST.trs. PEERS_SOS_TIMEOUT is
# the per-test limit (60 s: bigget's 16 GiB of gets take 10-30 s here
# beside another run, Debian's sockets 36-75 s); once PEERS_SOS_BUDGET seconds are spent the remaining
# tests are not started and count as failed. Writes OUTDIR/results:
# "STATUS|TEST|first lines of the log". PEERS_SOS_ONLY, when set, names
# the tests to run instead of all of them; PEERS_SOS_WRAP, a command
# (with its arguments) that each PE runs under.
peers_run_sos() {
	local bdir=$1 prov=$2 out=$3
	shift 3
	local t0 t rc res envs=() e
	local tmo=${PEERS_SOS_TIMEOUT:-60} budget=${PEERS_SOS_BUDGET:-600}
	local driver
	driver=$peers_work/src/sos/config/test-driver
	# Open MPI keeps its session under TMPDIR, named after mpirun's PID,
	# which repeats across PID namespaces: one TMPDIR per run.
	mkdir -p "$out/tmp"
	: >"$out/results"
	envs+=(-x SHMEM_OFI_PROVIDER="$prov")
	[ -n "${LD_LIBRARY_PATH:-}" ] && envs+=(-x LD_LIBRARY_PATH)
	for e in "$@"; do
		envs+=(-x "$e")
	done
	t0=$(date +%s)
	for t in ${PEERS_SOS_ONLY:-$(peers_sos_tests "$bdir")}; do
		if [ $(($(date +%s) - t0)) -ge "$budget" ]; then
			echo "FAIL|$t|not run: the ${budget}s budget is spent" \
				>>"$out/results"
			continue
		fi
		(cd "$bdir/$peers_sos_unit" &&
			TMPDIR=$out/tmp OMPI_ALLOW_RUN_AS_ROOT=1 \
				OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
				timeout -s KILL $((tmo + 15)) \
				"$driver" --test-name "$t" \
				--log-file "$out/$t.log" --trs-file "$out/$t.trs" \
				--color-tests no --enable-hard-errors yes \
				--expect-failure no -- \
				mpirun --oversubscribe -np 2 --mca pml ob1 \
				--mca btl self,vader --mca mtl ^ofi "${envs[@]}" \
				${PEERS_SOS_WRAP:-} \
				timeout --signal=ABRT "$tmo" "./$t") \
			>/dev/null 2>&1
		res=$(sed -n 's/^:test-result: //p' "$out/$t.trs" 2>/dev/null)
		case $res in
		PASS) echo "PASS|$t|" ;;
		SKIP) echo "SKIP|$t|" ;;
		*)
			echo "FAIL|$t|${res:-no result}: $(grep -v '^\s*$' \
				"$out/$t.log" 2>/dev/null | grep -iv \
				'^\(PASS\|FAIL\|ERROR\)' | head -3 | tr '\n' ' ' |
				cut -c1-300)"
			;;
		esac >>"$out/results"
	done
}
