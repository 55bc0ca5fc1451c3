#!/usr/bin/env python3
"""Rows of several bench JSON files side by side, one line per (preset, quant, tokens):
`tag=us/time-over-floor/status` for each file, the tag being the file name without .json.
usage: bench/runs/tag_rows.py FILE.json...   (the device scripts of bench/runs/ call it)"""
import json
import os
import sys

rows = {}
for f in sys.argv[1:]:
    tag = os.path.basename(f)[:-5]
    for r in json.load(open(f))["rows"]:
        rows.setdefault((r["preset"], r["quant"], r["tokens"]), []).append(
            f"{tag}={r['us']:.1f}/{r['us'] / r['floor_us']:.2f}/{r['status']}")
for k, v in rows.items():
    print(*k, " ".join(v))
