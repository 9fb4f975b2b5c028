#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Symbol-version comparison behind symbols_test.sh: reads `objdump -T` of
# the reference and of our library and checks the exported fi_* symbols,
# their version nodes and default (@@) vs compat (@) status.
#
#   symbols_check.py REF_OBJDUMP.txt OURS_OBJDUMP.txt ALLOW

import re
import sys

# addr, 7 flag columns, section<TAB>size, optional version, name
LINE_RE = re.compile(r"^([0-9a-fA-F]+) (.{7}) (\S+)\t([0-9a-fA-F]+)\s+(.*)$")


def parse(path):
    """Return {key: type}; key is name@@node (default) or name@node."""
    syms, others = {}, []
    with open(path) as f:
        for line in f:
            m = LINE_RE.match(line.rstrip("\n"))
            if not m or m.group(3) == "*UND*":
                continue
            flags, rest = m.group(2), m.group(5).split()
            if not rest:
                continue
            name, ver = rest[-1], rest[0] if len(rest) > 1 else ""
            if "l" in flags[0]:
                continue
            if not name.startswith("fi_"):
                if not re.match(r"^FABRIC_\d", name) and name != ver:
                    others.append(name)
                continue
            if ver.startswith("(") and ver.endswith(")"):
                key = "%s@%s" % (name, ver[1:-1])
            elif ver and ver != "Base":
                key = "%s@@%s" % (name, ver)
            else:
                key = name
            syms[key] = "F" if "F" in flags else "O" if "O" in flags \
                else flags.strip()
    return syms, others


def read_allow(path):
    allow = set()
    try:
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    allow.add(line)
    except OSError:
        pass
    return allow


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: symbols_check.py REF OURS [ALLOW]\n")
        return 2
    ref, _ = parse(argv[1])
    ours, others = parse(argv[2])
    allow = read_allow(argv[3]) if len(argv) > 3 else set()
    if not ref:
        sys.stderr.write("symbols: no fi_* symbols in the reference\n")
        return 2
    bad = 0
    for k in sorted(ref):
        if k not in ours:
            name = k.split("@")[0]
            have = sorted(o for o in ours if o.split("@")[0] == name)
            print("MISSING: %s (ours has: %s)"
                  % (k, ", ".join(have) if have else "nothing"))
            bad += 1
        elif ours[k] != ref[k]:
            print("TYPE: %s: ref %s, ours %s" % (k, ref[k], ours[k]))
            bad += 1
    for k in sorted(set(ours) - set(ref)):
        if k in allow or k.split("@")[0] in allow:
            print("allowed: %s" % k)
            continue
        print("EXTRA: %s" % k)
        bad += 1
    if others:
        print("note: %d non-fi_* symbols exported, e.g. %s"
              % (len(others), " ".join(sorted(others)[:5])))
    print("symbols: %d reference fi_* symbols, %d in ours, %d problems"
          % (len(ref), len(ours), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
