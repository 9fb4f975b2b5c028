#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs the peer suites, the test suites real users point at a libfabric,
# against our libfabric.so.1 and holds it to Debian's results:
#   - upstream fabtests 1.17.0, runfabtests.sh's quick set per provider,
#     compared test by test with ../shared/peers/fabtests-quick-PROV.debian.txt
#     (every test Debian's library passes must pass);
#   - fi_multinode_coll at 3 and 4 ranks on tcp and sockets;
#   - fi_ubertest with fabtests' own configs: at least Debian's success count
#     (measured on this kind of machine, below) and no -FI_EIO;
#   - Sandia OpenSHMEM 1.5.3's unit tests at 2 PEs through Open MPI's mpirun.
# tcp and sockets also run with their same-host path off (FI_TCP_SHM=0,
# FI_SOCKETS_SHM=0): a tag such as "tcp-noshm" names that setting. In the
# fabtests part such a tag runs the quick set less its FI_EP_MSG tests,
# which have no same-host path: the provider's own tag runs them.
# The suites are built outside the tree (contrib/peers-lib.sh). A fabtests
# or OpenSHMEM test that fails runs once more, alone, after the others
# (two cores shared by several runs can push a test past its time limit):
# a pass then counts and is printed as RETRIED. Failures listed in
# contrib/peers-known-failures.txt are reported as "known" and do not fail
# the run. Ends with "N passed, N failed"; exits non-zero on any
# unknown failure.
#
# usage: contrib/peers.sh [LIBDIR|debian]
# Environment (defaults in brackets):
#   PEERS_LIB       our libdir, as the argument [build-test/.libs, build/.libs]
#   PEERS_DIR       the suites [../shared/peers beside the checkout]
#   PEERS_WORK      scratch for builds, runs and logs [$TMPDIR/ofi-peers]
#   PEERS_FABTESTS  prefix of fabtests 1.17.0 built already [build one]
#   PEERS_JOBS      runs side by side [2]
#   PEERS_FT        fabtests tags [shm tcp sockets tcp-noshm sockets-noshm]
#   PEERS_MN        multinode runs [tcp:3 tcp:4 sockets:3 sockets:4]
#   PEERS_UBER      ubertest tags [shm sockets tcp]
#   PEERS_SOS       SOS tags [sockets tcp shm tcp-noshm sockets-noshm]
#   PEERS_KNOWN     the known-failures file [contrib/peers-known-failures.txt]
#   PEERS_UBER_TIMEOUT  seconds for one fi_ubertest config [shm 300, 900]
#   PEERS_BUDGET    seconds for the whole run, builds included [none]: a
#                   job still running then is stopped and what it had not
#                   finished counts as failed
#   PEERS_SOS_TIMEOUT, PEERS_SOS_BUDGET: see peers-lib.sh
# An empty list skips that part.
set -u
. "$(dirname "$0")/peers-lib.sh"

ft_tags=${PEERS_FT-shm tcp sockets tcp-noshm sockets-noshm}
mn_runs=${PEERS_MN-tcp:3 tcp:4 sockets:3 sockets:4}
uber_tags=${PEERS_UBER-shm sockets tcp}
sos_tags=${PEERS_SOS-sockets tcp shm tcp-noshm sockets-noshm}
known_file=${PEERS_KNOWN:-$peers_top/contrib/peers-known-failures.txt}
uber_tmo=${PEERS_UBER_TIMEOUT:-}

# Debian's fi_ubertest success counts (Debian 12, libfabric 1.17.0-3), per
# config; "contrib/peers.sh debian" prints them. Where none is recorded yet
# the run must succeed in some tests and see no -FI_EIO. sockets: all 200
# of its quick config. shm: Debian's hangs in test 299 of 1488 (an
# FI_INT128 atomic write completed by counter) until the time limit kills
# it, so it prints no totals: 298 is the successes its log shows before.
declare -A uber_cfg=([shm]=shm/quick.test [sockets]=sockets/quick.test
	[tcp]=tcp/all.test)
# Seconds a config may run. shm's 1488 tests take 5-16 minutes here (and
# Debian's stops at test 299): in 300 s ours passes Debian's count even
# at 0.65 s a test, and no more is asked of it.
declare -A uber_limit=([shm]=300 [sockets]=900 [tcp]=900)
declare -A uber_debian=([tcp]=376 [shm]=298 [sockets]=200)

run_dir=$peers_work/run
res_dir=$run_dir/results

# tag_prov TAG and tag_env TAG: "tcp-noshm" is tcp with FI_TCP_SHM=0
tag_prov() {
	echo "${1%-noshm}"
}

tag_env() {
	local p
	p=$(tag_prov "$1")
	case $1 in
	*-noshm) echo "FI_${p^^}_SHM=0" ;;
	esac
}

# result STATUS ID DETAIL: one line of a job's results file
result() {
	echo "$1|$2|$3"
}

# ft_msg_only NAME: the quick-set test NAME (without its -p) uses
# FI_EP_MSG endpoints only, which never take the same-host path
ft_msg_only() {
	[[ "$1" =~ (^| )-e\ msg( |$) ||
		"$1" =~ ^fi_(msg|msg_pingpong|msg_bw|msg_epoll|msg_sockets|cm_data)( |$) ]]
}

# A -noshm tag runs what its setting can change: Debian's list less the
# FI_EP_MSG tests, which its same-host tag runs already. Prints Debian's
# list for the tag, and the runfabtests.sh -e regexes of what it leaves
# out in $dir/excl.
ft_tag_list() {
	local tag=$1 deb=$2 dir=$3 line name excl=()
	while IFS= read -r line; do
		name=${line%% -p \"*}
		if [[ "$tag" == *-noshm ]] && ft_msg_only "$name"; then
			excl+=("^${name//./\\.}\$")
			continue
		fi
		echo "$line"
	done <"$deb"
	(IFS=,; echo "${excl[*]}") >"$dir/excl"
}

# fabtests quick set on one tag, compared with Debian's list
run_fabtests() {
	local tag=$1 prov env dir deb excl
	prov=$(tag_prov "$tag")
	env=$(tag_env "$tag")
	dir=$run_dir/ft-$tag
	mkdir -p "$dir"
	deb=$dir/debian.txt
	ft_tag_list "$tag" "$peers_dir/fabtests-quick-$prov.debian.txt" \
		"$dir" >"$deb"
	excl=$(cat "$dir/excl")
	# runfabtests.sh writes its scratch files into the current directory
	# and reads exclude lists from ./test_configs: run where there are none,
	# as Debian's results were taken.
	(cd "$dir" && env $env "$ft/bin/runfabtests.sh" -v -p "$ft/bin" \
		-T 60 ${excl:+-e "$excl"} "$prov") \
		>"$dir/out.txt" 2>&1
	awk '/^- name: /{sub(/^- name: +/, ""); n = $0}
	     /^  result: /{sub(/^  result: +/, ""); print n " | " $0}' \
		"$dir/out.txt" >"$dir/ours.txt"
	{
		printf '   %-14s' "$tag"
		for f in "$dir/ours.txt" "$deb"; do
			[ "$f" = "$deb" ] && printf '   Debian'
			[ "$f" = "$deb" ] || printf ' ours'
			for r in Pass Fail Notrun; do
				printf ' %3s' "$(grep -c " | $r" "$f")"
			done
		done
		echo
	} >"$res_dir/ft-$tag.table"
	local cmd want got
	while IFS='|' read -r cmd want; do
		cmd=${cmd% }
		want=${want# }
		[ "$want" = Pass ] || continue
		got=$(grep -F -x -- "$cmd | Pass" "$dir/ours.txt")
		if [ -n "$got" ]; then
			result PASS "fabtests/$tag/$cmd" ""
			continue
		fi
		got=$(grep -F -- "$cmd | " "$dir/ours.txt" | head -1)
		got=${got##* | }
		result FAIL "fabtests/$tag/$cmd" \
			"${got:-missing}: $(ft_excerpt "$dir/out.txt" "$cmd")"
	done <"$deb" >"$res_dir/ft-$tag.res"
}

# the error lines of one test's block in runfabtests.sh's output, or how
# long it ran where it printed none (a hang runs into -T 60)
ft_excerpt() {
	local block lines
	block=$(awk -v n="$2" '/^- name: /{sub(/^- name: +/, "");
		on = ($0 == n)} on' "$1")
	lines=$(grep -i 'error\|fail\|fi_[a-z_]*():\|-FI_\|killed' <<<"$block" |
		grep -v '^  result:' | head -3 | sed 's/^ *//' | tr '\n' ' ' |
		cut -c1-300)
	echo "${lines:-no error printed, ran $(sed -n \
		's/^  time: *//p' <<<"$block")s}"
}

# fi_multinode_coll at N ranks: they meet on port 9248, the first one a
# second ahead
run_multinode() {
	local prov=${1%:*} n=${1#*:} dir i pids=() rc=0 tag=$1
	dir=$run_dir/mn-$prov-$n
	mkdir -p "$dir"
	for i in $(seq 1 "$n"); do
		timeout -s KILL 120 "$ft/bin/fi_multinode_coll" -n "$n" \
			-p "$prov" -s 127.0.0.1 >"$dir/rank$i.log" 2>&1 &
		pids+=($!)
		[ "$i" = 1 ] && sleep 1
	done
	local codes=
	for i in "${pids[@]}"; do
		wait "$i"
		codes="$codes $?"
		[[ $codes == *\ 0 ]] || rc=1
	done
	if [ $rc = 0 ]; then
		result PASS "multinode/$prov/$n" ""
	else
		result FAIL "multinode/$prov/$n" "exit codes$codes: $(grep -ih \
			'error\|fail\|-FI_' "$dir"/rank*.log | sort -u |
			head -3 | tr '\n' ' ' | cut -c1-300)"
	fi >"$res_dir/mn-$prov-$n.res"
}

# fi_ubertest: server -x, client -u CONFIG; the client prints the totals
run_ubertest() {
	local tag=$1 prov env dir cfg s_pid succ= eio= want tmo
	prov=$(tag_prov "$tag")
	env=$(tag_env "$tag")
	dir=$run_dir/uber-$tag
	cfg=$ft/share/fabtests/test_configs/${uber_cfg[$prov]}
	want=${uber_debian[$prov]:-1}
	tmo=${uber_tmo:-${uber_limit[$prov]:-900}}
	mkdir -p "$dir"
	# Line-buffered: a client the limit stops leaves every line it ended.
	env $env timeout -s KILL $((tmo + 10)) stdbuf -oL \
		"$ft/bin/fi_ubertest" -x >"$dir/server.log" 2>&1 &
	s_pid=$!
	sleep 1
	env $env timeout -s KILL "$tmo" stdbuf -oL "$ft/bin/fi_ubertest" \
		-u "$cfg" 127.0.0.1 >"$dir/client.log" 2>&1
	sleep 1
	kill "$s_pid" 2>/dev/null
	wait "$s_pid" 2>/dev/null
	succ=$(sed -n 's/^Success: *//p' "$dir/client.log")
	# A client the time limit stopped prints no totals: count its tests
	if [ -z "$succ" ]; then
		succ=$(grep -c 'Ending test.*result: Success' "$dir/client.log")
		eio=$(grep -c 'Ending test.*result: .*EIO' "$dir/client.log")
	fi
	[ -n "$eio" ] || eio=$(sed -n 's/^EIO *: *//p' "$dir/client.log")
	printf '   %-14s ours %4s  EIO %3s   Debian %4s\n' "$tag" \
		"${succ:--}" "${eio:--}" "${uber_debian[$prov]:--}" \
		>"$res_dir/uber-$tag.table"
	if [ -n "$succ" ] && [ "$succ" -ge "$want" ] && [ "$eio" = 0 ]; then
		result PASS "ubertest/$tag" ""
	else
		result FAIL "ubertest/$tag" "success ${succ:-none} (Debian's \
$want), EIO ${eio:-?}; failing: $(grep 'Ending test.*result:' \
			"$dir/client.log" | grep -v 'Success\|Skipped' |
			head -5 | sed 's/.*test \([0-9]*\).*result: /#\1 /' |
			tr '\n' ' ')"
	fi >"$res_dir/uber-$tag.res"
}

# OpenSHMEM's unit tests at 2 PEs in SOS's default configuration
run_sos() {
	local tag=$1 prov env t st detail
	prov=$(tag_prov "$tag")
	env=$(tag_env "$tag")
	peers_run_sos "$sos" "$prov" "$run_dir/sos-$tag" $env
	while IFS='|' read -r st t detail; do
		[ "$st" = SKIP ] && continue
		result "$st" "sos/$tag/$t" "$detail"
	done <"$run_dir/sos-$tag/results" >"$res_dir/sos-$tag.res"
	printf '   %-14s' "$tag" >"$res_dir/sos-$tag.table"
	for st in PASS FAIL SKIP; do
		printf ' %4s' "$(grep -c "^$st" "$run_dir/sos-$tag/results")"
	done >>"$res_dir/sos-$tag.table"
	echo >>"$res_dir/sos-$tag.table"
}

# retry_merge RES RETRY_RESULTS: marks RES's failures whose test passed
# in the retry (retry_key turns an id into the retry's line for a pass)
retry_merge() {
	local res=$1 again=$2 st id detail
	while IFS='|' read -r st id detail; do
		if [ "$st" = FAIL ] && grep -qF -x -- "$(retry_key "$id")" \
			"$again" 2>/dev/null; then
			result PASS "$id" "RETRIED: failed once ($detail)"
		else
			result "$st" "$id" "$detail"
		fi
	done <"$res" >"$res.new"
	mv "$res.new" "$res"
}

# runfabtests.sh runs one list; its -e takes regexes over the raw test
# names. Every test of the failed tests' programs runs again, the others
# are excluded by program name.
run_retry_fabtests() {
	local tag=$1 prov env dir deb res exes excl=() e
	prov=$(tag_prov "$tag")
	env=$(tag_env "$tag")
	dir=$run_dir/ft-$tag-retry
	deb=$peers_dir/fabtests-quick-$prov.debian.txt
	res=$res_dir/ft-$tag.res
	mkdir -p "$dir"
	exes=$(sed -n 's,^FAIL|fabtests/[^/]*/\([^ ]*\).*,\1,p' "$res" | sort -u)
	for e in $(awk '{print $1}' "$deb" | sort -u); do
		grep -qx -- "$e" <<<"$exes" || excl+=("^$e( |\$)")
	done
	(cd "$dir" && env $env "$ft/bin/runfabtests.sh" -v -p "$ft/bin" \
		-T 60 -e "$(IFS=,; echo "${excl[*]}")" "$prov") \
		>"$dir/out.txt" 2>&1
	awk '/^- name: /{sub(/^- name: +/, ""); n = $0}
	     /^  result: /{sub(/^  result: +/, ""); print n " | " $0}' \
		"$dir/out.txt" >"$dir/ours.txt"
	retry_key() { echo "${1#fabtests/*/} | Pass"; }
	retry_merge "$res" "$dir/ours.txt"
}

run_retry_sos() {
	local tag=$1 prov env res
	prov=$(tag_prov "$tag")
	env=$(tag_env "$tag")
	res=$res_dir/sos-$tag.res
	PEERS_SOS_ONLY=$(sed -n 's,^FAIL|sos/[^/]*/\([^|]*\)|.*,\1,p' "$res") \
		peers_run_sos "$sos" "$prov" "$run_dir/sos-$tag-retry" $env
	retry_key() { echo "PASS|${1#sos/*/}|"; }
	retry_merge "$res" "$run_dir/sos-$tag-retry/results"
}

# A job runs in a network namespace of its own: the script again, with the
# built suites' places in the environment.
if [ "${1:-}" = --job ]; then
	shift
	ft=$PEERS_FT_PREFIX
	sos=$PEERS_SOS_BUILD
	"$@"
	exit
fi

lib=$(peers_find_lib "${1:-}") || {
	echo "peers: no libfabric.so.1 found; build first or pass its dir" >&2
	echo "0 passed, 1 failed"
	exit 1
}
if [ "$lib" = debian ]; then
	unset LD_LIBRARY_PATH
	peers_log "running against Debian's library"
else
	export LD_LIBRARY_PATH=$lib
	peers_log "running against $lib/libfabric.so.1"
fi
rm -rf "$run_dir"
mkdir -p "$res_dir"
trap 'peers_cleanup_ns' EXIT

start=$(date +%s)
[ -n "${PEERS_BUDGET:-}" ] && peers_deadline=$((start + PEERS_BUDGET))
peers_ns_probe
ft=
if [ -n "$ft_tags$mn_runs$uber_tags" ]; then
	ft=$(peers_build_fabtests) || {
		echo "0 passed, 1 failed"
		exit 1
	}
fi
sos=
if [ -n "$sos_tags" ]; then
	sos=$(peers_build_sos default) || {
		echo "0 passed, 1 failed"
		exit 1
	}
fi
peers_log "built in $(($(date +%s) - start))s"
export PEERS_FT_PREFIX=$ft PEERS_SOS_BUILD=$sos
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

# spawn_all KIND TAG...: a job per tag, running run_KIND in the script again
spawned=()
spawn_all() {
	local kind=$1 t
	shift
	for t in "$@"; do
		peers_spawn "$kind-${t/:/-}" "$self" --job "run_$kind" "$t"
		spawned+=("$kind $t")
	done
}

# unfinished KIND TAG: the results of a job the budget stopped, or never
# started: what SOS had finished counts, the rest fails
unfinished() {
	local kind=$1 tag=$2 res part why
	why="not finished within PEERS_BUDGET (${PEERS_BUDGET:-}s)"
	case $kind in
	fabtests) res=ft-$tag ;;
	multinode) res=mn-${tag/:/-} ;;
	ubertest) res=uber-$tag ;;
	sos) res=sos-$tag ;;
	esac
	[ -f "$res_dir/$res.res" ] && return
	part=$run_dir/sos-$tag/results
	if [ "$kind" = sos ] && [ -f "$part" ]; then
		grep -v '^SKIP' "$part" | sed "s,^\([A-Z]*\)|,\1|sos/$tag/,"
	fi >"$res_dir/$res.res"
	result FAIL "$kind/$tag" "$why" >>"$res_dir/$res.res"
	printf '   %-14s %s\n' "$tag" "$why" >"$res_dir/$res.table"
}

# The long runs first so that the pool ends together.
spawn_all sos $sos_tags
spawn_all ubertest $uber_tags
spawn_all fabtests $ft_tags
spawn_all multinode $mn_runs
peers_wait_all
for job in "${spawned[@]}"; do
	unfinished $job
done

# A fabtests or SOS failure is run once more, alone, after the pool: on two
# cores beside other jobs a pingpong can run past its time limit with no
# bug at all. A test that passes then counts, and is printed as RETRIED so
# that an intermittent failure stays visible.
spawned=()
for f in "$res_dir"/ft-*.res "$res_dir"/sos-*.res; do
	[ -f "$f" ] && grep -q '^FAIL|' "$f" || continue
	t=${f##*/}
	t=${t%.res}
	case $t in
	ft-*) spawn_all retry_fabtests "${t#ft-}" ;;
	sos-*) spawn_all retry_sos "${t#sos-}" ;;
	esac
done
peers_wait_all

# Known failures: "ID | reason" per line, ID a shell pattern
known=()
if [ -f "$known_file" ]; then
	while IFS= read -r line; do
		line=${line%%#*}
		line=${line%%|*}
		line=${line%"${line##*[![:space:]]}"}
		[ -n "$line" ] && known+=("$line")
	done <"$known_file"
fi
# is_known ID: sets known_hit to the pattern that lists ID
known_hit=
is_known() {
	local k
	for k in "${known[@]}"; do
		# shellcheck disable=SC2053
		[[ $1 == $k ]] && known_hit=$k && return 0
	done
	return 1
}
declare -A known_count=()

passed=0
failed=0
nknown=0
fixed=()
echo
# table HEADING KIND: the lines the jobs of one kind wrote for the tables
table() {
	echo "== $1"
	cat "$res_dir"/"$2"-*.table 2>/dev/null
}
table "fabtests quick set: ours (pass fail notrun) vs Debian's" ft
table "fi_ubertest: ours (success, EIO) vs Debian's success" uber
table "OpenSHMEM unit tests at 2 PEs (pass fail skip)" sos
echo "== results"
for f in "$res_dir"/*.res; do
	[ -f "$f" ] || continue
	while IFS='|' read -r st id detail; do
		case $st in
		PASS)
			passed=$((passed + 1))
			# a known failure that needed its retry is not fixed
			[ -z "$detail" ] && is_known "$id" && fixed+=("$id")
			[ -n "$detail" ] && echo "   $detail: $id"
			;;
		FAIL)
			if is_known "$id"; then
				nknown=$((nknown + 1))
				known_count[$known_hit]=$((${known_count[$known_hit]:-0} + 1))
			else
				failed=$((failed + 1))
				echo "   FAIL: $id"
				echo "      $detail"
			fi
			;;
		esac
	done <"$f"
done
for k in "${!known_count[@]}"; do
	echo "   KNOWN: ${known_count[$k]} x $k"
done
for id in "${fixed[@]}"; do
	echo "   FIXED (remove from the known list): $id"
done
echo "== $nknown known failures; logs under $run_dir; took $(($(date +%s) - start))s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
