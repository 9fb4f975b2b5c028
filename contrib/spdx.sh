#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# spdx.sh - the licence line every source file we own carries (LICENSE:
# BSD-2-Clause or GPL-2.0, the user's choice, as libfabric's own).
#
#   contrib/spdx.sh --check   list the files without it; exit 1 if any
#   contrib/spdx.sh --add     give it to them, in the file's comment syntax
#
# The line is a file's first (a script's second, after its #! line), so
# that the comment after it still opens with what the file owns. Which
# files: those git tracks (or, outside a git checkout, those find sees)
# with the suffixes and names below; fuzz corpora, man pages (troff whose
# .so links must stay one line) and documents are not source. Run it again
# after a merge: --add touches only files that lack the line.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
id='SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only'

files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files
	else
		find . -type f ! -path './.git/*' | sed 's|^\./||'
	fi | grep -E '(\.(c|h|sh|py|am|ac|in|inc|map|allow|supp)|/Makefile|^\.ci/run|known-failures\.txt)$' |
		grep -v -E '(^|/)fuzz_[a-z]+_corpus/|^build|^install/|^test-logs/|^config/|^autom4te' |
		grep -v -E '(^|/)(Makefile\.in|configure|config\.h\.in)$'
}

# the comment that carries the line, by file kind
line_for() {
	case $1 in
	*.c | *.h | *.map) echo "/* $id */" ;;
	configure.ac) echo "dnl $id" ;;
	*) echo "# $id" ;;
	esac
}

has_id() {
	head -n 2 "$1" | grep -q -F "$id"
}

add() {
	f=$1
	l=$(line_for "$f")
	tmp=$f.spdx.$$
	if head -n 1 "$f" | grep -q '^#!'; then
		{ head -n 1 "$f"; echo "$l"; tail -n +2 "$f"; } >"$tmp"
	else
		{ echo "$l"; cat "$f"; } >"$tmp"
	fi
	# keep the mode (scripts stay executable)
	cat "$tmp" >"$f"
	rm -f "$tmp"
}

mode=${1:-}
case $mode in
--check | --add) ;;
*)
	echo "usage: $0 --check | --add" >&2
	exit 2
	;;
esac

missing=0
for f in $(files); do
	[ -f "$f" ] || continue
	has_id "$f" && continue
	if [ "$mode" = --add ]; then
		add "$f"
		echo "added: $f"
	else
		echo "no SPDX line: $f"
		missing=$((missing + 1))
	fi
done
if [ "$mode" = --check ] && [ "$missing" -gt 0 ]; then
	echo "$missing file(s) without '$id' (contrib/spdx.sh --add)" >&2
	exit 1
fi
exit 0
