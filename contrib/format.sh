#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# format.sh - the C layout the in-tree .clang-format defines, on every C
# file git tracks (outside a git checkout, every one find sees).
#
#   contrib/format.sh --check   list the files clang-format would change;
#                               exit 1 if any
#   contrib/format.sh --fix     rewrite them in place
#
# clang-format's layout depends on its version: the tree follows the one
# Debian 12 ships (clang-format-14, contrib/deps.sh), and a run with no
# clang-format at all says so and passes, so that a build machine without
# it is not failed for layout.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

cf=
for c in clang-format-14 clang-format; do
	command -v "$c" >/dev/null 2>&1 && cf=$c && break
done
if [ -z "$cf" ]; then
	echo "format.sh: no clang-format here; layout not checked"
	exit 0
fi

files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files '*.c' '*.h'
	else
		find . -name '*.[ch]' ! -path './.git/*' | sed 's|^\./||'
	fi | grep -v -E '^(build|install|test-logs|config|autom4te)'
}

case ${1:-} in
--check)
	bad=0
	for f in $(files); do
		if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
			echo "$f"
			bad=1
		fi
	done
	[ $bad = 0 ] || echo "format.sh: run contrib/format.sh --fix" >&2
	exit $bad
	;;
--fix)
	files | xargs "$cf" -i
	;;
*)
	echo "usage: contrib/format.sh --check|--fix" >&2
	exit 2
	;;
esac
