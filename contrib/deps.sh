#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Installs, from Debian's packages, everything the build and the test suite
# need on a fresh machine. Debian's libfabric (headers, library, fi_info,
# fi_pingpong) is installed only as the test oracle and for interop runs.
# contrib/peers.sh builds the peer suites with the same autotools and Open
# MPI's mpicc, unpacks them with xz, and runs OpenSHMEM under mpirun.
# `deps.sh --list` prints the package list alone (.ci/run installs it).
set -e
pkgs="autoconf automake libtool pkg-config make gcc clang clang-format-14
      python3 binutils libcmocka-dev libfabric-dev libfabric-bin libze-dev libpmem-dev man-db groff-base
      valgrind bc openmpi-bin libopenmpi-dev iproute2 xz-utils"
if [ "${1:-}" = --list ]; then
	echo $pkgs
	exit 0
fi
[ "${OFI_SKIP_DEPS:-0}" = 1 ] && exit 0
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps: need root to install:$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends $missing
