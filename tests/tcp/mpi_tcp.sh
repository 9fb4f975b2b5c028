#!/bin/sh
# mpi_tcp.sh - Debian's unmodified Open MPI over our tcp provider: builds
# tests/tcp/mpi_tcp.c with mpicc and runs it with -np 2 and -np 4 under
# --mca pml cm --mca mtl ofi, the provider forced to tcp and libfabric
# taken from this build (LD_LIBRARY_PATH). Skips (77) without mpicc and
# mpirun; fails unless every rank reports "bad 0" and mpirun exits 0.
set -u
LIBDIR=${OFI_LIBDIR:-${top_builddir:?}/.libs}
src=${top_srcdir:?}/tests/tcp/mpi_tcp.c
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
	{ echo "SKIP: no mpicc/mpirun (openmpi-bin, libopenmpi-dev)"; exit 77; }
# An ASan build's library cannot be loaded into uninstrumented mpirun jobs.
ldd "$LIBDIR/libfabric.so.1" 2>/dev/null | grep -q libasan &&
	{ echo "SKIP: $LIBDIR is an ASan build"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mpicc -o "$dir/mpi_tcp" "$src" || { echo "FAIL: mpicc"; exit 1; }
fail=0
for np in 2 4; do
	LD_LIBRARY_PATH=$LIBDIR timeout 120 mpirun --allow-run-as-root \
		--oversubscribe -np $np -x LD_LIBRARY_PATH -x FI_PROVIDER=tcp \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp \
		"$dir/mpi_tcp" >"$dir/log" 2>&1
	rc=$?
	good=$(grep -c '^rank [0-9]* bad 0$' "$dir/log")
	if [ $rc -ne 0 ] || [ "$good" -ne $np ]; then
		echo "FAIL: mpirun -np $np (rc $rc, $good of $np ranks good)"
		cat "$dir/log"
		fail=1
	else
		echo "PASS: mpirun -np $np, pml cm / mtl ofi / tcp"
	fi
done
exit $fail
