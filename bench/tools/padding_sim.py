#!/usr/bin/env python3
"""Tensor work a grouped GEMM does over the routed rows' own, for a token tile of t rows.

Each expert's rows are rounded up to whole tiles: sum(ceil(m_e / t) * t) / sum(m_e), under
uniform routing (each token picks top_k distinct experts at random, as `servekit bench moe
--routing uniform` does in distribution). Pure Python, no GPU.

  bench/tools/padding_sim.py --tokens 2048 --experts 128 --top-k 8 --tiles 64,128,144,160,192
"""
import argparse
import math
import random


def padding(tokens, experts, top_k, tiles, draws, seed):
    rng = random.Random(seed)
    work = {t: 0 for t in tiles}
    rows = 0
    for _ in range(draws):
        count = [0] * experts
        for _ in range(tokens):
            for e in rng.sample(range(experts), top_k):
                count[e] += 1
        rows += sum(count)
        for t in tiles:
            work[t] += sum(math.ceil(c / t) * t for c in count)
    return {t: work[t] / rows for t in tiles}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, required=True)
    p.add_argument("--experts", type=int, required=True)
    p.add_argument("--top-k", type=int, required=True)
    p.add_argument("--tiles", default="64,128,144,160,192,256")
    p.add_argument("--draws", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.top_k > a.experts or min(a.tokens, a.experts, a.top_k, a.draws) < 1:
        p.error("need 1 <= top-k <= experts, tokens >= 1, draws >= 1")
    tiles = [int(t) for t in a.tiles.split(",")]
    for t, x in padding(a.tokens, a.experts, a.top_k, tiles, a.draws, a.seed).items():
        print(f"tile {t:4d}: {x:.3f}x the rows")


if __name__ == "__main__":
    main()
