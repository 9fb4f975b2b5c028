#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""footprint.py - the cache lines and pages one barrier call touches, from
a valgrind lackey trace (--trace-mem=yes --trace-syscalls=yes) of one
rank of `rdm_coll -B`.

A call's time, once the socket's syscalls are taken out, goes mostly to
lines the kernel evicted since the last call (timestamps along the path
said about 3 ns a line on this project's 2-vCPU VMs), so the count of
distinct 64-byte code and data lines between two barrier calls measures
what the library costs on the critical path, without the noise.

Pages: where the kernel isolates its page tables (PTI) and the CPU has no
PCID, as on these VMs, every syscall flushes the user TLB, and each page
touched after it costs a page walk. So pages are counted per stretch
between two syscalls (clock reads, vDSO calls natively, and the EAGAIN
reads valgrind's slowness adds are not counted as syscalls), and summed
over the call. See OFI_HOT in include/ofi.h.

usage: footprint.py TRACE MARK LIB [TOP]
  TRACE  lackey log of one rank
  MARK   the address rdm_coll prints for RDM_COLL_MARK (coll_barrier)
  LIB    the libfabric.so the trace ran (its symbols name the code lines)
  TOP    how many functions to list (default 25)
"""
import bisect
import collections
import subprocess
import sys


def symbols(lib):
    out = subprocess.run(['nm', '-S', '--defined-only', lib],
                         capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in 'tTwW':
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    return sorted(syms)


def flushes(line):
    """Whether a --trace-syscalls line ends a syscall that runs natively
    (see the module's comment)."""
    if '-->' not in line or line.rstrip().endswith('...'):
        return False  # not the end of one
    return 'clock_gettime' not in line and 'Failure(0xb)' not in line


def calls(trace, mark):
    """Per call: ({code line: an address run there}, {data lines}, page
    walks), from one mark to the next."""
    cur = None
    cpages, dpages, walks = set(), set(), 0
    with open(trace) as f:
        for line in f:
            kind = line[:2]
            if kind == 'I ':
                a = int(line[3:line.index(',')], 16)
                if a == mark:
                    if cur:
                        yield cur + (walks,)
                    cur = ({}, set())
                    walks = 0
                if cur:
                    cur[0].setdefault(a >> 6, a)
                    if a >> 12 not in cpages:
                        cpages.add(a >> 12)
                        walks += 1
            elif cur and kind in (' L', ' S', ' M'):
                a = int(line[3:line.index(',')], 16)
                cur[1].add(a >> 6)
                if a >> 12 not in dpages:
                    dpages.add(a >> 12)
                    walks += 1
            elif line.startswith('SYSCALL') and flushes(line):
                cpages, dpages = set(), set()


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    trace, mark, lib = sys.argv[1], int(sys.argv[2], 16), sys.argv[3]
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 25
    syms = symbols(lib)
    off = [s[2] for s in syms].index('coll_barrier')
    base = mark - syms[off][0]
    starts = [s[0] for s in syms]
    ops = list(calls(trace, mark))[10:-1]  # warm-up out, and the last
    if not ops:
        sys.exit('no barrier calls between two marks in ' + trace)
    ops.sort(key=lambda o: len(o[0]) + len(o[1]))
    med = ops[len(ops) // 2]
    walks = sorted(o[2] for o in ops)
    print('calls %d  median: %d code lines, %d data lines, %d page walks' %
          (len(ops), len(med[0]), len(med[1]), walks[len(walks) // 2]))
    per = collections.Counter()
    for addr in med[0].values():
        a = addr - base
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and a < syms[i][0] + syms[i][1]:
            per[syms[i][2]] += 1
        else:
            per['(outside the library\'s functions)'] += 1
    for name, n in per.most_common(top):
        print('%4d  %s' % (n, name))


if __name__ == '__main__':
    main()
