#!/usr/bin/env python3
"""Loops of each kernel in `cuobjdump -sass` text, with the opcodes that matter for the static
GEMMs' k-loops: where the local-memory traffic (LDL / STL: spills, stack) sits relative to the
loops that hold the tensor-core instructions (HMMA).

A loop is the address range [target, branch] of a backward branch (BRA to an address at or before
its own). Every loop with at least --min-mma HMMA is printed with its instruction count and its
HMMA, LDL, STL, LDG, LDS, BAR counts; the function's own totals come first. Nested loops are
printed each (an outer loop's counts include its inner loops').

Usage: zcat sass-ab-3ctas-int4_g128.txt.gz | bench/sass_loops.py [--min-mma 1] [--filter NAME]
       bench/sass_loops.py --self-test
The SASS of the trees of an A/B comes back from bench/runs/ab-trees.sh with SASS=1.
"""
import argparse
import re
import sys

ADDR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
FUNC = re.compile(r"Function\s*:\s*(\S+)")
TARGET = re.compile(r"\b(?:BRA|BRX|JMP)[.A-Z0-9]*\s+(?:`\()?(0x[0-9a-f]+|\.L_x_\d+)")
KEEP = ("HMMA", "LDL", "STL", "LDG", "LDS", "BAR")


def opcode(text):
    text = re.sub(r"^@!?U?P[0-9T]\s+", "", text)
    return text.split()[0].split(".")[0] if text.split() else ""


def parse(lines):
    """{function: [(address, opcode, text)]} and {function: {label: address}}."""
    funcs, labels = {}, {}
    name, pending = None, []
    for line in lines:
        m = FUNC.search(line)
        if m:
            name = m.group(1)
            funcs[name], labels[name], pending = [], {}, []
            continue
        if name is None:
            continue
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = ADDR.match(line)
        if m:
            addr = int(m.group(1), 16)
            for lab in pending:
                labels[name][lab] = addr
            pending = []
            funcs[name].append((addr, opcode(m.group(2)), m.group(2)))
    return funcs, labels


def loops(insts, labels):
    """[(start, end)] of the backward branches, innermost (shortest) first."""
    out = set()
    for addr, op, text in insts:
        if op not in ("BRA", "BRX", "JMP"):
            continue
        m = TARGET.search(text)
        if not m:
            continue
        t = m.group(1)
        target = int(t, 16) if t.startswith("0x") else labels.get(t)
        if target is not None and target <= addr:
            out.add((target, addr))
    return sorted(out, key=lambda r: (r[1] - r[0], r[0]))


def counts(insts, start, end):
    c = {k: 0 for k in KEEP}
    n = 0
    for addr, op, _ in insts:
        if start <= addr <= end:
            n += 1
            if op in c:
                c[op] += 1
    return n, c


def report(funcs, labels, min_mma, name_filter, out):
    for name, insts in funcs.items():
        if name_filter and name_filter not in name:
            continue
        lo, hi = (insts[0][0], insts[-1][0]) if insts else (0, -1)
        n, c = counts(insts, lo, hi)
        out.write(f"{name}\n  function: {n} instructions, "
                  + " ".join(f"{k} {v}" for k, v in c.items()) + "\n")
        for start, end in loops(insts, labels[name]):
            n, c = counts(insts, start, end)
            if c["HMMA"] < min_mma:
                continue
            out.write(f"  loop {start:#06x}-{end:#06x}: {n} instructions, "
                      + " ".join(f"{k} {v}" for k, v in c.items()) + "\n")


SAMPLE = """
        code for sm_90a
                Function : _Z6kernelv
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   STL [R1], R2 ;
        /*0020*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
.L_x_1:
        /*0030*/                   HMMA.16816.F32.BF16 R8, R4, R6, R8 ;
        /*0040*/                   LDL R3, [R1] ;
        /*0050*/                   HMMA.16816.F32.BF16 R8, R4, R6, R8 ;
        /*0060*/               @P0 BRA `(.L_x_1) ;
        /*0070*/                   LDS.128 R4, [R0] ;
        /*0080*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0090*/              @!P1 BRA 0x20 ;
        /*00a0*/                   EXIT ;
"""


def self_test():
    funcs, labels = parse(SAMPLE.splitlines())
    insts = funcs["_Z6kernelv"]
    assert len(insts) == 11, insts
    assert labels["_Z6kernelv"][".L_x_1"] == 0x30
    assert loops(insts, labels["_Z6kernelv"]) == [(0x30, 0x60), (0x20, 0x90)]
    n, c = counts(insts, 0x30, 0x60)
    assert n == 4 and c["HMMA"] == 2 and c["LDL"] == 1 and c["STL"] == 0, (n, c)
    n, c = counts(insts, 0x20, 0x90)
    assert n == 8 and c["LDS"] == 1 and c["BAR"] == 1 and c["LDG"] == 1, (n, c)
    print("sass_loops self-test passed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min-mma", type=int, default=1, help="print loops with at least this HMMA")
    ap.add_argument("--filter", default="", help="only functions whose name contains this")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return
    funcs, labels = parse(sys.stdin)
    report(funcs, labels, a.min_mma, a.filter, sys.stdout)


if __name__ == "__main__":
    main()
