#!/usr/bin/env python3
"""fp8_mma_layout.py - checks, on the CPU, the operand plumbing of tools/gpu/fp8_mma_proto.cu.

That prototype (issue 17) feeds fp8 V^T to wgmma from registers: for each warp, 16 dims x 32 keys of
the raw KV tile come from one ldmatrix .x4 .trans (four 8x8 blocks of b16, i.e. 8 keys x 16 bytes
each) and four byte permutes, in an order that is wgmma's register layout for A only after two
renumberings: the keys inside a k32 step (P^T is written in the same slot order) and the dims inside
the warp's 16 rows. This script emulates the three instructions element by element and compares
the product with V^T P^T computed directly, for every block, warp and k32 step of a 64-key tile:

  ldmatrix .trans (PTX ISA 9.7.14.5.15): lane l gives the row address of block l / 8, row l % 8;
      thread t receives, of block i, the b16 elements (row 2 (t % 4), column t / 4) and
      (row 2 (t % 4) + 1, column t / 4), in the low and high halves of register i;
  prmt.b32 d, a, b, sel (9.7.9.7): byte k of d is byte sel[4k + 3 : 4k] of the 8 bytes {b, a};
  wgmma m64nNk32 with A in registers, 8-bit types (CUTLASS cute/atom/mma_traits_sm90_gmma.hpp,
      ALayout_64x32): thread (t4, g, w) = (t % 4, (t / 4) % 8, t / 32), value (v0, v1, v2) of
      register v1 + 2 v2, byte v0: row m = 16 w + g + 8 v1, column k = 4 t4 + v0 + 16 v2.

Also checked: the fix-up path's S^T fragments (ldmatrix without .trans: each thread receives row
t / 4, bytes 4 (t % 4) .. + 3, which is the layout above with keys as rows), and fix240 on all 256
codes (the code kept, or made 0x7E / 0xFE with +-32 beside it, sums to twice the fnuz value, 0x80
aside).

  python3 tools/fp8_mma_layout.py     (a ctest; exit 1 on any mismatch)
"""
import math
import random
import sys


def key_slot(x):
    """The slot of key x (0..31) inside a k32 step: slot 4q + b + 16v holds key 16v + 8(b/2) + 2q + b%2
    (fp8_mma_proto.cu's key_slot)."""
    return 16 * (x >> 4) + 4 * ((x & 7) >> 1) + 2 * ((x >> 3) & 1) + (x & 1)


def prmt(a, b, sel):
    src = [(a >> (8 * i)) & 255 for i in range(4)] + [(b >> (8 * i)) & 255 for i in range(4)]
    return sum(src[(sel >> (4 * i)) & 7] << (8 * i) for i in range(4))


def e4m3fn(c):
    """OCP e4m3fn value of code c (bias 7, subnormals below 2^-6, 0x7F / 0xFF NaN)."""
    if c & 0x7F == 0x7F:
        return math.nan
    e, m = (c >> 3) & 15, c & 7
    v = math.ldexp(m, -9) if e == 0 else math.ldexp(1 + m / 8, e - 7)
    return -v if c & 0x80 else v


def fnuz(c):
    """fp8_e4m3_fnuz value of code c (bias 8, 0x80 NaN, 0x7F / 0xFF +-240)."""
    if c == 0x80:
        return math.nan
    e, m = (c >> 3) & 15, c & 7
    v = math.ldexp(m, -10) if e == 0 else math.ldexp(1 + m / 8, e - 8)
    return -v if c & 0x80 else v


def fix240(x):
    """fp8_mma_proto.cu's fix240 on one 32-bit word: (codes for the first operand, for the second)."""
    m = (((x & 0x7F7F7F7F) + 0x01010101) & 0x80808080) & 0xFFFFFFFF
    one = m >> 7
    return (x - one) & 0xFFFFFFFF, ((one * 0x60) | (x & m)) & 0xFFFFFFFF


def check_fix240():
    bad = 0
    for c in range(256):
        if c == 0x80:
            continue
        word = c | (0x38 << 8) | (c << 16) | (0x7F << 24)  # neighbours must not leak
        k, r = fix240(word)
        for byte in (0, 2):
            got = e4m3fn((k >> (8 * byte)) & 255) + e4m3fn((r >> (8 * byte)) & 255)
            bad += got != 2 * fnuz(c)
        bad += (k >> 8) & 255 != 0x38 or (r >> 8) & 255 != 0
    return bad


def check_s_fix_fragments(rng):
    """ldmatrix .x4 (no .trans) at the addresses s_fix gives, against wgmma's A layout (keys as rows)."""
    kt = [[rng.randrange(256) for _ in range(576)] for _ in range(64)]
    bad = 0
    for w in range(4):
        for kk in range(18):
            rows = {}
            for lane in range(32):
                i = lane >> 3
                key = 16 * w + 8 * (i & 1) + (lane & 7)
                ch = 2 * kk + (i >> 1)
                rows[(i, lane & 7)] = kt[key][16 * ch:16 * ch + 16]
            for t in range(32):
                g, t4 = t >> 2, t & 3
                for j in range(4):  # register j = matrix j: row g, b16 column t4
                    reg = rows[(j, g)][4 * t4:4 * t4 + 4]
                    for v0 in range(4):
                        m = g + 8 * (j & 1)
                        k = 4 * t4 + v0 + 16 * (j >> 1)
                        bad += reg[v0] != kt[16 * w + m][32 * kk + k]
    return bad


def main():
    rng = random.Random(17)
    v = [[rng.randrange(256) for _ in range(576)] for _ in range(64)]  # the tile: 64 keys x 576 codes
    p = [[rng.randrange(1, 7) for _ in range(64)] for _ in range(32)]  # P^T: 32 columns x 64 keys
    if sorted(key_slot(x) for x in range(32)) != list(range(32)):
        print("key_slot is not a permutation of 0..31")
        return 1
    pt = [[0] * 64 for _ in range(32)]  # P^T as written: column n, slot 32 kk + key_slot(key % 32)
    for n in range(32):
        for key in range(64):
            pt[n][32 * (key >> 5) + key_slot(key & 31)] = p[n][key]
    bad = 0
    for a in range(8):  # blocks of 64 dims
        for w in range(4):  # warp w: dims 64 a + 16 w + [0, 16)
            d = {}
            for kk in range(2):  # k32 steps of the tile
                base = 64 * a + 16 * w
                rows = {(lane >> 3, lane & 7): v[32 * kk + 8 * (lane >> 3) + (lane & 7)][base:base + 16]
                        for lane in range(32)}
                for t in range(32):
                    g, t4 = t >> 2, t & 3
                    reg = []
                    for i in range(4):
                        def el(r, c, i=i):
                            return rows[(i, r)][2 * c] | (rows[(i, r)][2 * c + 1] << 8)
                        reg.append(el(2 * t4, g) | (el(2 * t4 + 1, g) << 16))
                    frag = [prmt(reg[0], reg[1], 0x6420), prmt(reg[0], reg[1], 0x7531),
                            prmt(reg[2], reg[3], 0x6420), prmt(reg[2], reg[3], 0x7531)]
                    for j in range(4):
                        for v0 in range(4):
                            m = g + 8 * (j & 1)
                            k = 4 * t4 + v0 + 16 * (j >> 1)
                            av = (frag[j] >> (8 * v0)) & 255
                            for n in range(32):
                                d[(m, n)] = d.get((m, n), 0) + av * pt[n][32 * kk + k]
            for m in range(16):
                dim = 64 * a + 16 * w + 2 * (m & 7) + (m >> 3)  # row g <- dim 2g, row g + 8 <- 2g + 1
                for n in range(32):
                    want = sum(v[key][dim] * p[n][key] for key in range(64))
                    if d[(m, n)] != want:
                        bad += 1
    bad_s = check_s_fix_fragments(rng)
    bad_f = check_fix240()
    print(f"fp8_mma_layout: {8 * 4 * 16 * 32} elements of V^T P^T, {bad} mismatches; "
          f"{4 * 18 * 32 * 16} bytes of S^T fragments, {bad_s} mismatches; fix240, {bad_f} mismatches")
    return 1 if bad or bad_s or bad_f else 0


if __name__ == "__main__":
    sys.exit(main())
