#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# coll-bench.sh - the collective benchmark, a report, never a
# test: fabtests/functional/rdm_coll.c built here against Debian's headers
# and run with -B (barrier, broadcast and allreduce, FI_SUM on doubles,
# the slowest rank's median per call) on our tcp (FI_TCP_SHM=0), our shm
# and Debian's tcp;ofi_rxm (up to 8 B: larger ones fail or hang there),
# at 2 and 4 processes; then tests/mpi/mpi_coll_bench.c under Open MPI
# over vader (--mca btl self,vader) for the same calls, and Open MPI's
# own collectives over its mtl/ofi (--mca pml cm --mca mtl ofi) on our
# tcp, its same-host path on (the "mtl" column). Ends with one
# table per process count and the targets as ratios: ours on tcp
# / Debian's tcp;ofi_rxm (<= 0.5), ours on shm / vader (<= 1.0), mtl/ofi
# on ours / vader (<= 1.2). And the
# floor of a barrier over loopback TCP, no library at all, placed and
# polled as rdm_coll is (fabtests/benchmarks/raw_tcp_barrier.c: the engine's
# schedule, 8-byte writes), beside ours on tcp.
#
# Ours on shm, vader and mtl/ofi run twice: ranks pinned round-robin over the
# CPUs, as mpirun binds them by default (rdm_coll -B pins so), then
# unpinned (rdm_coll -U, mpirun --bind-to none): the rows marked
# "unpinned".
#
# -Y: every caller busy-polls even when the ranks outnumber the CPUs, as
# the targets' reference figures were taken: rdm_coll -Y, and Open MPI with
# mpi_yield_when_idle 0. By default empty polls yield then, as Open
# MPI's own default (mpi_yield_when_idle, on when oversubscribed) does.
#
# -R RUNS: the whole benchmark RUNS times in a row (each run's tables
# printed as it ends), then the same tables again with every cell the
# median over the runs and its range, ratios taken run by run: this
# machine's figures move by phases, and one run's ratio is not the
# point's.
#
# usage: contrib/coll-bench.sh [-I ITERS] [-Y] [-R RUNS] [OUR_LIBDIR]
#        (default build/.libs)
set -u
iters=200 runs=1
busy= ompi_busy=
usage="usage: $0 [-I ITERS] [-Y] [-R RUNS] [OUR_LIBDIR]"
while getopts "I:YR:h" opt; do
	case $opt in
	I) iters=$OPTARG ;;
	Y) busy=-Y ompi_busy="--mca mpi_yield_when_idle 0" ;;
	R) runs=$OPTARG ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $runs in
''|*[!0-9]*|0) echo "$usage" >&2; exit 2 ;;
esac
src=$(cd "$(dirname "$0")/.." && pwd)
ours=$(cd "${1:-$src/build/.libs}" && pwd) || exit 2

# The tables of several runs' outputs as one: median (min-max) per cell.
summarize() {
	awk -v nruns="$#" '
	/^== [0-9]+ processes, us/ { n = $2; hdr = 1; next }
	hdr { hdr = 0; next } # the column names
	n && /^targets:/ { next }
	n && /^floor:/ {
		if (match($0, /: [0-9.]+ us/))
			add(n, "floor", 1, substr($0, RSTART + 2, RLENGTH - 5))
		if (match($0, /floor [0-9.]+$/))
			add(n, "floor", 2, substr($0, RSTART + 6))
		n = 0; next
	}
	n && NF >= 9 {
		m = $1
		for (i = 2; i <= NF - 8; i++)
			m = m " " $i
		if (!((n, m) in seen)) {
			seen[n, m] = 1; rows[n] = rows[n] SUBSEP m
		}
		for (i = 1; i <= 8; i++)
			if ($(NF - 8 + i) != "-")
				add(n, m, i, $(NF - 8 + i))
	}
	function add(n, m, c, x, k) {
		k = (n SUBSEP m SUBSEP c)
		cnt[k]++; val[k, cnt[k]] = x + 0
		if (!(n in ns)) { ns[n] = 1; order[++nn] = n }
	}
	function cell(n, m, c, ratio, k, j, l, t, x, med) {
		k = (n SUBSEP m SUBSEP c)
		if (!cnt[k])
			return "-"
		for (j = 1; j <= cnt[k]; j++) # insertion sort
			for (l = j; l > 1 && val[k, l - 1] > val[k, l]; l--) {
				t = val[k, l]; val[k, l] = val[k, l - 1]
				val[k, l - 1] = t
			}
		x = cnt[k]
		med = x % 2 ? val[k, (x + 1) / 2] : 			(val[k, x / 2] + val[k, x / 2 + 1]) / 2
		if (!ratio)
			return sprintf("%.3f", med)
		return sprintf("%.2f (%.2f-%.2f)", med, val[k, 1], val[k, x])
	}
	END {
		for (o = 1; o <= nn; o++) {
			n = order[o]
			printf "\n== %d processes, us: median over %d runs, " \
				"ratios median (min-max)\n", n, nruns
			printf "%-18s %9s %9s %17s %9s %9s %17s %9s %17s\n", \
				"", "tcp", "rxm", "tcp/rxm", "shm", "vader", \
				"shm/vader", "mtl", "mtl/vader"
			k = split(rows[n], r, SUBSEP)
			for (i = 2; i <= k; i++)
				printf "%-18s %9s %9s %17s %9s %9s %17s %9s" \
					" %17s\n", \
					r[i], cell(n, r[i], 1), \
					cell(n, r[i], 2), cell(n, r[i], 3, 1), \
					cell(n, r[i], 4), cell(n, r[i], 5), \
					cell(n, r[i], 6, 1), cell(n, r[i], 7), \
					cell(n, r[i], 8, 1)
			printf "floor: raw loopback TCP barrier %s us; " \
				"ours tcp / floor %s\n", cell(n, "floor", 1), \
				cell(n, "floor", 2, 1)
		}
		print "targets: tcp/rxm <= 0.5 where Debian works," \
			" shm/vader <= 1.0, mtl/vader <= 1.2"
	}' "$@"
}

if [ "$runs" -gt 1 ]; then
	all=$(mktemp -d)
	trap 'rm -rf "$all"' EXIT
	i=0
	while [ "$i" -lt "$runs" ]; do
		i=$((i + 1))
		echo "== run $i of $runs, $(date -u +%H:%M:%S) UTC"
		sh "$0" -I "$iters" $busy "$ours" >"$all/run$i" 2>&1
		sed -n '/^== [0-9]* processes, us/,$p' "$all/run$i"
	done
	summarize "$all"/run*
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -std=gnu11 -o "$work/rdm_coll" "$src/fabtests/functional/rdm_coll.c" \
	-lfabric || exit 1
run() { # KEY LABEL ENV... : output also kept in $work/KEY
	key=$1 label=$2
	shift 2
	echo "== $label"
	env "$@" >"$work/$key" 2>&1 || echo "   (failed or timed out: rc $?)" \
		>>"$work/$key"
	cat "$work/$key"
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (a busy machine makes every" \
	"number noisy)"
for n in 2 4; do
	run "tcp$n" "ours tcp (FI_TCP_SHM=0), $n processes" FI_TCP_SHM=0 \
		LD_LIBRARY_PATH="$ours" timeout 300 "$work/rdm_coll" -p tcp \
		-N $n -B -I "$iters" $busy
	run "rxm$n" "Debian tcp;ofi_rxm, $n processes (8 B only)" timeout 120 \
		"$work/rdm_coll" -p "tcp;ofi_rxm" -N $n -B -I "$iters" -M 8 $busy
	run "shm$n" "ours shm, $n processes" LD_LIBRARY_PATH="$ours" \
		timeout 300 "$work/rdm_coll" -p shm -N $n -B -I "$iters" $busy
	run "shmU$n" "ours shm, $n processes, unpinned" \
		LD_LIBRARY_PATH="$ours" timeout 300 "$work/rdm_coll" -p shm \
		-N $n -B -U -I "$iters" $busy
done
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
	mpicc -O2 -o "$work/mpi_coll_bench" "$src/tests/mpi/mpi_coll_bench.c" ||
		exit 1
	for n in 2 4; do
		run "vader$n" "Open MPI vader, np $n" timeout 300 mpirun \
			--allow-run-as-root --oversubscribe -np $n --mca pml ob1 \
			--mca btl self,vader $ompi_busy \
			"$work/mpi_coll_bench" "$iters"
		run "vaderU$n" "Open MPI vader, np $n, --bind-to none" \
			timeout 300 mpirun --allow-run-as-root --oversubscribe \
			--bind-to none -np $n --mca pml ob1 \
			--mca btl self,vader $ompi_busy \
			"$work/mpi_coll_bench" "$iters"
		for k in mtl mtlU; do
			label="Open MPI mtl/ofi on our tcp, np $n" bind=
			if [ $k = mtlU ]; then
				bind="--bind-to none"
				label="$label, $bind"
			fi
			run "$k$n" "$label" FI_PROVIDER=tcp FI_TCP_SHM=1 \
				LD_LIBRARY_PATH="$ours" timeout 300 mpirun \
				--allow-run-as-root --oversubscribe $bind -np $n \
				--mca pml cm --mca mtl ofi \
				--mca mtl_ofi_provider_include tcp \
				-x FI_PROVIDER -x FI_TCP_SHM -x LD_LIBRARY_PATH \
				$ompi_busy "$work/mpi_coll_bench" "$iters"
		done
	done
fi
# The unpinned figures as rows of their own in the shm and vader columns.
for n in 2 4; do
	for k in shm vader mtl; do
		[ -f "$work/$k""U$n" ] || continue
		sed -n 's/^\([a-z].*[^ ]\)  *\([0-9.][0-9.]* us .*\)$/\1 unpinned \2/p' \
			"$work/$k""U$n" >>"$work/$k$n"
	done
done
floor2= floor4=
if cc -O2 -o "$work/raw_tcp_barrier" \
	"$src/fabtests/benchmarks/raw_tcp_barrier.c"; then
	for n in 2 4; do
		f=$(timeout 120 "$work/raw_tcp_barrier" -N $n -I "$((iters * 10))" \
			$busy | sed -n 's/.*us=\([0-9.]*\).*/\1/p')
		eval "floor$n=\$f"
	done
fi
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
# The table: us per call, '-' where a run gave no figure.
for n in 2 4; do
	echo
	echo "== $n processes, us (slowest rank's median)"
	for k in tcp rxm shm vader mtl; do
		touch "$work/$k$n"
	done
	awk -v n=$n '
	FNR == 1 { k++ }
	/ us / {
		m = $0; sub(/ +[0-9.]+ us.*/, "", m)
		v[m, k] = $(NF - 4) + 0; seen[m] = 1
		if (!(m in ord)) { ord[m] = ++nm; name[nm] = m }
	}
	function f(x) { return x == "" ? "-" : sprintf("%.3f", x) }
	function r(a, b) { return a == "" || b == "" || !b ? "-" : \
		sprintf("%.2f", a / b) }
	END {
		printf "%-18s %9s %9s %9s %9s %9s %9s %9s %9s\n", "", \
			"tcp", "rxm", "tcp/rxm", "shm", "vader", "shm/vader", \
			"mtl", "mtl/vader"
		for (i = 1; i <= nm; i++) {
			m = name[i]
			printf "%-18s %9s %9s %9s %9s %9s %9s %9s %9s\n", m, \
				f(v[m, 1]), f(v[m, 2]), r(v[m, 1], v[m, 2]), \
				f(v[m, 3]), f(v[m, 4]), r(v[m, 3], v[m, 4]), \
				f(v[m, 5]), r(v[m, 5], v[m, 4])
		}
		print "targets: tcp/rxm <= 0.5 where Debian works," \
			" shm/vader <= 1.0, mtl/vader <= 1.2"
	}' "$work/tcp$n" "$work/rxm$n" "$work/shm$n" "$work/vader$n" \
		"$work/mtl$n"
	eval "f=\${floor$n:-}"
	awk -v f="$f" '/^barrier / { b = $(NF - 4) }
	END {
		printf "floor: raw loopback TCP barrier (no library): %s us", \
			f == "" ? "-" : f
		if (f != "" && b != "" && f > 0)
			printf "; ours tcp / floor %.2f", b / f
		print ""
	}' "$work/tcp$n"
done
