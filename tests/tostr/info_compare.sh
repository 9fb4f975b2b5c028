#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# tests/tostr/info_compare.sh - runs two fi_info binaries (e.g. Debian's
# /usr/bin/fi_info and ours) with the same library and the same argument
# sets and compares stdout byte for byte, stderr and the exit status.
# Usage: info_compare.sh REFERENCE_FI_INFO CANDIDATE_FI_INFO [LD_LIBRARY_PATH]
# An empty or missing LD_LIBRARY_PATH means the system library.
# Exit: 0 all equal, 1 a difference, 2 usage, 77 a binary is missing.

if [ $# -lt 2 ]; then
	echo "usage: $0 REFERENCE_FI_INFO CANDIDATE_FI_INFO [LD_LIBRARY_PATH]" >&2
	exit 2
fi
for bin in "$1" "$2"; do
	if [ ! -x "$bin" ]; then
		echo "SKIP: $bin is not an executable"
		exit 77
	fi
done
ref=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cand=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
libpath=${3:-}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# Same argv[0] for both, so usage and getopt messages are comparable.
mkdir "$tmp/ref" "$tmp/cand"
ln -s "$ref" "$tmp/ref/fi_info"
ln -s "$cand" "$tmp/cand/fi_info"

# One argument set per line; "ENV=value --" prefixes set the environment.
cat > "$tmp/cases" <<'CASES'

-v
-l
-p tcp -t FI_EP_MSG
-c FI_HMEM
-e
-g LOG
--getenv=LOG_LEVEL
FI_LOG_LEVEL=warn -- -g LOG_LEVEL
FI_LOG_PROV='a b' -- -e
-i FI_HMEM
--info=shm
-i NO_SUCH_TEXT
-v -p shm
-l -v
-l -e
-l -p tcp
-c 'FI_MSG|FI_RMA' -p shm
-c FI_MSG -c FI_TAGGED -p shm -v
-c fi_msg -p shm
-t fi_ep_rdm -p shm
-m FI_CONTEXT
-m ''
-c ''
-a FI_SOCKADDR_IN6 -p udp
-a FI_SOCKADDR_IN -t FI_EP_MSG -v
-s 127.0.0.1 -p tcp -t FI_EP_MSG
-n 127.0.0.1 -P 4000 -p tcp -t FI_EP_MSG -v
-d lo -p sockets
-f 127.0.0.1/32 -p tcp
-c FI_BOGUS
-c 'FI_MSG|FI_BOGUS'
-c FI_MSG,FI_RMA
-m FI_BOGUS
-t FI_EP_BOGUS
-a FI_ADDR_CXI
-p bogus
-v -p bogus
-e -p bogus
FI_PROVIDER=bogus --
-h
--help
-x
-g
--version
--ver
positional
CASES

# Runs in a subshell so the environment of one case never leaks.
run_one() (
	# $1 = ref|cand, $2 = argument line
	dir=$1
	line=$2
	envs=""
	case "$line" in
	*" -- "* | *" --")
		envs=${line%% --*}
		line=${line#*--}
		;;
	esac
	cd "$tmp/$dir" || exit 1
	if [ -n "$libpath" ]; then
		LD_LIBRARY_PATH=$libpath
		export LD_LIBRARY_PATH
	else
		unset LD_LIBRARY_PATH
	fi
	unset FI_PROVIDER FI_LOG_LEVEL FI_LOG_PROV
	[ -n "$envs" ] && eval "export $envs"
	eval "set -- $line"
	./fi_info "$@" > "$tmp/$dir.raw" 2> "$tmp/$dir.rawerr"
	echo $? > "$tmp/$dir.rc"
	# shm addresses and log prefixes embed the process id and the time,
	# the only fields that must vary between two runs.
	# The pid's digit count also shows in shm's address lengths; lengths
	# come from the library, which both binaries share.
	sed -e 's|fi_shm://[0-9]*|fi_shm://PID|g' \
		-e 's#^\( *\)\(src_addrlen\|dest_addrlen\): [0-9]*$#\1\2: N#' \
		"$tmp/$dir.raw" > "$tmp/$dir.out"
	sed 's|^libfabric:[0-9]*:[0-9]*:|libfabric:PID:TIME:|' \
		"$tmp/$dir.rawerr" > "$tmp/$dir.err"
)

total=0
bad=0
while IFS= read -r line; do
	total=$((total + 1))
	run_one ref "$line"
	run_one cand "$line"
	what=""
	cmp -s "$tmp/ref.out" "$tmp/cand.out" || what="$what stdout"
	cmp -s "$tmp/ref.err" "$tmp/cand.err" || what="$what stderr"
	cmp -s "$tmp/ref.rc" "$tmp/cand.rc" || what="$what exit-status"
	if [ -n "$what" ]; then
		bad=$((bad + 1))
		echo "DIFF fi_info $line:$what"
		diff "$tmp/ref.out" "$tmp/cand.out" | head -10
		diff "$tmp/ref.err" "$tmp/cand.err" | head -6
		echo "exit: $(cat "$tmp/ref.rc") vs $(cat "$tmp/cand.rc")"
	else
		echo "same fi_info $line ($(wc -l < "$tmp/ref.out") lines," \
			"exit $(cat "$tmp/ref.rc"))"
	fi
done < "$tmp/cases"

echo "info_compare: $total cases, $bad differ"
[ "$bad" -eq 0 ]
