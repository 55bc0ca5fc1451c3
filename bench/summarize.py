#!/usr/bin/env python3
"""Prints a markdown table of one or more bench/results JSON files (servekit bench moe output).

usage: bench/summarize.py bench/results/h200/*.json > table.md
"""
import json
import sys


def main(paths):
    print("| preset | quant | tokens | routing | path | µs | floor µs | time/floor | TFLOP/s "
          "| peer | peer µs | peer/ours | rel_l2 | file |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        name = path.split("/")[-1]
        for r in d["rows"]:
            if r.get("status") not in ("ok", "fail"):
                continue
            us, floor = r.get("us"), r.get("floor_us")
            peer_us = r.get("peer_us")
            cells = [
                r["preset"], r["quant"], str(r["tokens"]), r["routing"], r.get("path", ""),
                f"{us:.1f}", f"{floor:.1f}", f"{us / floor:.2f}",
                f"{r.get('tflops', 0):.0f}", r.get("peer", "none"),
                f"{peer_us:.1f}" if peer_us else "–",
                f"{peer_us / us:.2f}" if peer_us else "–",
                f"{r.get('rel_l2', float('nan')):.1e}", name,
            ]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
