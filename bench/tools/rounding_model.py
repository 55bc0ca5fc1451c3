#!/usr/bin/env python3
"""Where the dynamic path's relative L2 error comes from: a numerical model in pure Python.

The bench checks each layer output against the fp64 reference (cpu/moe_reference.cpp), which
rounds the intermediate to bf16 as the kernels do and nothing else. The H200 rows show rel_l2
~1.6e-3 on the static path, ~4.2e-3 on the dynamic path with bf16 weights and ~5.1e-3 with int4
weights. This model runs one small MoE layer (random bf16 tokens, int4 weights with bf16 group
scales, top-k softmax routing, SwiGLU) with the rounding points of each path switched on:
  - out:     the layer output rounded to bf16 (every path);
  - gemm:    GEMM1's gate/up and GEMM2's per-expert output rounded to bf16 before the activation
             and before the weighted sum (the dynamic path's bf16 D tensors; the fused epilogue
             rounds gate and up to bf16 too, to match the pass bit for bit);
  - weights: each dequantized weight (code x scale) rounded to bf16 (the int4 GEMM's mainloop
             feeds wgmma bf16 weights; about a third of the products need more than bf16's 8 bits).
Usage: python3 bench/tools/rounding_model.py [seed]   (a few seconds; no packages needed)
"""
import math
import random
import struct
import sys


def bf16(x):
    """x rounded to the nearest bf16 (ties to even), as a float."""
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def main(seed):
    rng = random.Random(seed)
    T, H, I, E, K, G = 24, 256, 128, 8, 4, 64  # tokens, hidden, intermediate, experts, top-k, group

    def int4_matrix(rows, cols):
        scales = [[bf16(rng.uniform(0.5, 1.5) / (8 * math.sqrt(cols))) for _ in range(cols // G)]
                  for _ in range(rows)]
        return [[rng.randint(-8, 7) * scales[r][c // G] for c in range(cols)] for r in range(rows)]

    x = [[bf16(rng.gauss(0, 1)) for _ in range(H)] for _ in range(T)]
    w13 = [int4_matrix(2 * I, H) for _ in range(E)]
    w2 = [int4_matrix(H, I) for _ in range(E)]
    rounded = lambda w: [[[bf16(v) for v in row] for row in m] for m in w]
    w13_bf, w2_bf = rounded(w13), rounded(w2)
    changed = sum(v != bf16(v) for m in w13 for row in m for v in row) / (E * 2 * I * H)
    routes = []
    for _ in range(T):
        logits = [rng.gauss(0, 1) for _ in range(E)]
        top = sorted(range(E), key=lambda e: -logits[e])[:K]
        z = [math.exp(logits[e]) for e in top]
        routes.append([(e, w / sum(z)) for e, w in zip(top, z)])

    def layer(gemm, weights, out):
        a13, a2 = (w13_bf, w2_bf) if weights else (w13, w2)
        result = []
        for t in range(T):
            acc = [0.0] * H
            for e, w in routes[t]:
                gu = [sum(p * q for p, q in zip(row, x[t])) for row in a13[e]]
                if gemm:
                    gu = [bf16(v) for v in gu]
                h = [bf16(g / (1 + math.exp(-g)) * u) for g, u in zip(gu[:I], gu[I:])]
                y = [sum(p * q for p, q in zip(row, h)) for row in a2[e]]
                if gemm:
                    y = [bf16(v) for v in y]
                acc = [a + w * v for a, v in zip(acc, y)]
            result.append([bf16(v) for v in acc] if out else acc)
        return result

    ref = layer(False, False, False)

    def rel_l2(o):
        err = sum((a - b) ** 2 for ro, rr in zip(o, ref) for a, b in zip(ro, rr))
        norm = sum(b * b for rr in ref for b in rr)
        return math.sqrt(err / norm)

    print(f"weights whose code x scale is not a bf16: {changed:.0%}")
    for name, gemm, weights in [("out only (static path)", False, False),
                                ("out + gemm (dynamic, bf16 weights)", True, False),
                                ("out + gemm + weights (dynamic, int4 GEMM)", True, True)]:
        print(f"{name:44s} rel_l2 {rel_l2(layer(gemm, weights, True)):.2e}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
