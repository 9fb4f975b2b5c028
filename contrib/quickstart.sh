#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The main job on a fresh machine: install build deps, build and install
# into ./install, list the providers with our fi_info, then run a pingpong
# between two processes through our library.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh contrib/deps.sh
./autogen.sh
mkdir -p build
cd build
../configure --prefix="$top/install" --enable-debug=no
make -j2
make install
cd "$top"
export LD_LIBRARY_PATH="$top/install/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "== fi_info --version"
install/bin/fi_info --version
echo "== fi_info -l"
install/bin/fi_info -l
sh contrib/pingpong.sh "$top/install"
