#!/usr/bin/env python3
"""fp8_mma_precision.py - a CPU study of the numerics of an fp8-tensor-core MLA decode (issue 17).

The fp8 KV kernels of hip.flash decode every code to bf16 before the matrix products, and that
decode is most of their instructions (BENCHMARKS.md, 2026-12-04). The lead that removes it: the
tensor cores read the codes themselves (fp8 wgmma, e4m3 x e4m3 -> f32). This script asks, before
any GPU time is spent, whether such a kernel can meet the harness's parity tolerances at all:

  S = K Q^T  with K the raw codes read as e4m3fn (an fp8_e4m3_fnuz code is worth half its e4m3fn
             reading) and Q, per row scaled by a power of two into [128, 256), split into two
             e4m3fn parts Qh = e4m3(Q'), Ql = e4m3(Q' - Qh) (nearly exact: a bf16 value has 8
             significant bits, e4m3 4; only elements far below the row's largest lose bits);
  O = P V    per 64-key tile with P (fp32, at most 1) scaled by 2^8 and split the same way, into a
             fresh accumulator per tile that is added to the running O in fp32 (the online softmax
             as the kernels do it: running max, alpha, l summed from fp32 P).
The codes 0x80 (NaN) and 0x7F/0xFF (+-240, NaN when read as e4m3fn) cannot take that path: a tile
holding one takes the exact decode path of today's kernels, and so it is modelled here. The harness's
generator clamps values to [-1, 1] and sets +-1 once each (kv_scale 1/240), so +-240 codes are rare
in its N(0,1)/10 sets and about a third of all codes in its softmax sets (N(0,1)): there nearly
every tile is exact, and so is the one tile of a short sequence in both sets. `--data scaled`
draws the cache unclamped with a per-tensor kv_scale set for the whole model (5 standard deviations
at 240, values from 4.83 of them on rounding to it: a +-240 code in about one 64-key tile in 20),
so that short sequences and softmax-sized values take the fp8 path.

The fp8 matrix instruction's accumulation is modelled, since its exact behaviour is not documented:
each k32 step adds its 32 exact products to the accumulator after aligning all 33 terms to the
largest one's exponent and truncating each toward zero to F bits below it (F = 13 is the "about 14
bits" of DeepSeek-V3's report on H800; F = 23 is a full fp32 adder; tools/gpu/fp8_acc_probe.cu
measures it on the H200). S is accumulated four ways: one chain (hi and lo steps interleaved), two
chains (hi, lo) added in fp32, per step (a fresh accumulator for each k32 pair of hi and lo steps,
added in fp32: DeepSeek's promotion to CUDA cores), or per step split (hi and lo each in a fresh
accumulator per k32 step).

It compares out (bf16) and lse (fp32) with a float64 reference under the harness's parity rule
(harness/parity.c: an element passes when |err| <= atol or |err| <= rtol |e|; harness/plan.c: out
atol 8e-4 (x10 in a softmax set) or rtol 2.01/128, cos_diff at most 5e-6; lse atol 1e-5 or rtol
8.01/65536), over independent trials (inputs drawn as harness/task.c draws them). The "today" rows
model the decode-to-bf16 kernels (exact codes, Q bf16, P rounded to bf16, k16 steps): with the F of
the H200's bf16 path they must pass, a calibration.

  /usr/bin/python3 tools/fp8_mma_precision.py [--seqlens 1,64,1000,8192] [--trials 16,16,4,1]
      [--h-q 16] [--bits 13,16,18,23] [--data harness|scaled] [--seed N]
  (Debian's python3 with python3-numpy, which tools/install-deps installs; minutes)

Prints one line per (input set, seqlen, design, F): the trials whose out and lse both pass, the
worst lse and out margins (|err| / (atol + rtol |e|): 1 or more always fails; below 1 is necessary,
not sufficient), the worst out cos_diff, and the share of tiles on the fp8 path. A model, not a
measurement: only an H200 run says what the hardware does.
"""
import argparse
import math
import sys

import numpy as np

D_QK, D_V, BN = 576, 512, 64
SOFTMAX_SCALE = 192 ** -0.5 * (0.1 * math.log(40) + 1) ** 2  # DeepSeek-V3, as the plans
KV_SCALE = 1.0 / 240.0
LOG2E = 1.0 / math.log(2.0)


def round_bf16(x):
    """float64 -> the nearest bf16 value (round to nearest even), as float64."""
    f = np.asarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def round_e4m3(x, emin):
    """float64 -> the nearest value of an e4m3 format with no largest value (3 mantissa bits, normal
    from 2^emin, step 2^(emin - 3) below), round to nearest even."""
    a = np.abs(x)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    step = np.exp2(np.maximum(e, emin) - 3.0)
    return np.round(x / step) * step


def round_e4m3fn(x):
    """float64 -> the nearest e4m3fn value (bias 7: normal from 2^-6, max 448; overflow is an error)."""
    r = round_e4m3(x, -6.0)
    if np.any(np.abs(r) > 448.0):
        raise ValueError("e4m3fn overflow: the scaling is wrong")
    return r


def round_fnuz(x):
    """float64 -> the nearest fp8_e4m3_fnuz value (bias 8: normal from 2^-7, saturating at 240)."""
    return np.clip(round_e4m3(x, -7.0), -240.0, 240.0)


def mma_step(acc, prods, bits):
    """acc (float32 array [...]) + sum over the last axis of prods (exact products, float64), with
    every term aligned to the largest's exponent and truncated toward zero to `bits` bits below it."""
    terms = np.concatenate([acc[..., None].astype(np.float64), prods], axis=-1)
    mx = np.max(np.abs(terms), axis=-1, keepdims=True)
    e = np.floor(np.log2(np.where(mx > 0, mx, 1.0)))
    q = np.exp2(e - bits)
    return np.sum(np.trunc(terms / q) * q, axis=-1).astype(np.float32)


def draw(rng, h_q, n, sd, data):
    """q (bf16 values) and the cache's codes (fnuz values; element = code * kv_scale), kv_scale."""
    q = round_bf16(np.clip(rng.standard_normal((h_q, D_QK)) * sd, -1, 1))
    if data == "scaled":  # a model-wide per-tensor scale: 5 sd at 240, so +-240 codes are rare
        x = rng.standard_normal((n, D_QK)) * sd
        kv_scale = 5.0 * sd / 240.0
        return q, round_fnuz(np.clip(x / kv_scale, -240.0, 240.0)), kv_scale
    x = np.clip(rng.standard_normal((n, D_QK)) * sd, -1, 1)
    if x.size >= 2:  # the generator's extremes: +amax and -amax (harness/task.c fp8_extremes)
        flat = np.argsort(-np.abs(x), axis=None)
        x.flat[flat[0]] = 1.0
        x.flat[flat[1]] = -1.0
    return q, round_fnuz(x * 240.0), 1.0 / 240.0


def reference(q, codes, kv_scale):
    k = codes * kv_scale
    s = (q @ k.T) * SOFTMAX_SCALE
    m = s.max(axis=1, keepdims=True)
    w = np.exp(s - m)
    lse = m[:, 0] + np.log(w.sum(axis=1))
    out = (w @ k[:, :D_V]) / w.sum(axis=1, keepdims=True)
    return out, lse


def exact_tiles(codes):
    """Per key: whether its 64-key tile holds a code that the fp8 path cannot read (+-240; the
    generator draws no NaN code)."""
    bad = np.any(np.abs(codes) == 240.0, axis=1)
    tiles = np.repeat(np.add.reduceat(bad, np.arange(0, len(bad), BN)) > 0, BN)[:len(bad)]
    return tiles


def scores_fp8(q, codes, bits, mode):
    """S / kv_scale (float64 [h_q, n]) as the fp8 kernel would: K as e4m3fn (2 x code), Q split in
    two; and the largest |Q' - Qh - Ql| over max |Q'|."""
    h_q = q.shape[0]
    e = 7.0 - np.floor(np.log2(np.max(np.abs(q), axis=1, keepdims=True)))  # max |Q'| in [128, 256)
    qs = q * np.exp2(e)
    qh = round_e4m3fn(qs)
    ql = round_e4m3fn(qs - qh)
    split_err = float(np.max(np.abs(qs - qh - ql)) / np.max(np.abs(qs)))
    kf = np.clip(2.0 * codes, -448.0, 448.0)  # e4m3fn reading (+-240 tiles take the exact path)
    n = codes.shape[0]
    acc = [np.zeros((h_q, n), np.float32) for _ in range(2)]
    total = np.zeros((h_q, n), np.float32)
    z = np.zeros((h_q, n), np.float32)
    for c in range(0, D_QK, 32):
        kc = kf[:, c:c + 32]
        ph = qh[:, None, c:c + 32] * kc[None, :, :]
        pl = ql[:, None, c:c + 32] * kc[None, :, :]
        if mode == "one-chain":
            acc[0] = mma_step(mma_step(acc[0], ph, bits), pl, bits)
        elif mode == "two-chains":
            acc[0] = mma_step(acc[0], ph, bits)
            acc[1] = mma_step(acc[1], pl, bits)
        elif mode == "per-step":
            total = (total + mma_step(mma_step(z, ph, bits), pl, bits)).astype(np.float32)
        else:  # per-step-split
            total = (total + mma_step(z, ph, bits)).astype(np.float32)
            total = (total + mma_step(z, pl, bits)).astype(np.float32)
    sp = total if mode.startswith("per-step") else (acc[0] + acc[1]).astype(np.float32)
    return sp.astype(np.float64) * np.exp2(-e) * 0.5, split_err


def scores_today(q, codes, bits):
    """S / kv_scale as the decode-to-bf16 kernels: exact codes, bf16 Q, k16 steps into one f32 chain."""
    acc = np.zeros((q.shape[0], codes.shape[0]), np.float32)
    for c in range(0, D_QK, 16):
        acc = mma_step(acc, q[:, None, c:c + 16] * codes[None, :, c:c + 16], bits)
    return acc.astype(np.float64)


def attend(s, codes, kv_scale, bits, fp8, exact, bits_exact):
    """Online softmax over 64-key tiles (as the kernels: running max, alpha, l from fp32 P), P V per
    tile into a fresh accumulator added to the running O in fp32. On the fp8 path (fp8 and the tile
    not exact) P x 2^8 is split in two e4m3 parts against V read as e4m3fn (k32 steps, F = bits);
    else P is rounded to bf16 against the exact codes (k16 steps, F = bits_exact), as today."""
    h_q, n = s.shape
    t = (s * kv_scale * SOFTMAX_SCALE * LOG2E).astype(np.float32).astype(np.float64)  # log2 domain
    m_run = np.full(h_q, -np.inf)
    l_run = np.zeros(h_q, np.float32)
    o = np.zeros((h_q, D_V), np.float32)  # in units of kv_scale
    for t0 in range(0, n, BN):
        tt = t[:, t0:t0 + BN]
        m_new = np.maximum(m_run, tt.max(axis=1))
        alpha = np.exp2(m_run - m_new).astype(np.float32)
        p = np.exp2(tt - m_new[:, None]).astype(np.float32).astype(np.float64)
        l_run = (l_run * alpha + p.sum(axis=1)).astype(np.float32)
        vt = codes[t0:t0 + BN, :D_V]
        ot = np.zeros((h_q, D_V), np.float32)
        if fp8 and not exact[t0]:
            ph = round_e4m3fn(p * 256.0)
            parts, v, step, b, unit = [ph, round_e4m3fn(p * 256.0 - ph)], 2.0 * vt, 32, bits, 512.0
        else:
            parts, v, step, b, unit = [round_bf16(p)], vt, 16, bits_exact, 1.0
        for part in parts:
            for c in range(0, v.shape[0], step):
                prods = part[:, None, c:c + step] * v[None, c:c + step, :].transpose(0, 2, 1)
                ot = mma_step(ot, prods, b)
        o = (o * alpha[:, None] + (ot / np.float32(unit))).astype(np.float32)
        m_run = m_new
    out = round_bf16(o.astype(np.float64) / l_run.astype(np.float64)[:, None] * kv_scale)
    lse = ((m_run + np.log2(l_run.astype(np.float64))) * math.log(2.0)).astype(np.float32)
    return out, lse.astype(np.float64)


def margin(a, e, atol, rtol):
    err = np.abs(a - e)
    worst = float(np.max(err / (atol + rtol * np.abs(e))))
    ok = bool(np.all((err <= atol) | (err <= rtol * np.abs(e))))
    return worst, ok


def cos_diff(a, e):
    sxx = float(np.sum(a * a + e * e))
    return 1.0 - 2.0 * float(np.sum(a * e)) / sxx if sxx > 0 else 0.0


DESIGNS = ("today", "one-chain", "two-chains", "per-step", "per-step-split")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seqlens", default="1,64,1000,8192")
    ap.add_argument("--trials", default="16,16,4,1", help="trials per seqlen (one number: all)")
    ap.add_argument("--h-q", type=int, default=16)
    ap.add_argument("--bits", default="13,16,18,23")
    ap.add_argument("--bits-today", type=int, default=23, help="F of the exact path's bf16 products")
    ap.add_argument("--data", choices=("harness", "scaled"), default="harness")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    seqlens = [int(x) for x in args.seqlens.split(",")]
    trials = [int(x) for x in args.trials.split(",")]
    trials = trials * len(seqlens) if len(trials) == 1 else trials
    if len(trials) != len(seqlens):
        ap.error("--trials: one number, or one per seqlen")
    bits = [int(x) for x in args.bits.split(",")]
    print(f"data {args.data}, h_q {args.h_q}, exact path F {args.bits_today}, seed {args.seed}")
    print("set      seqlen  design          F  pass    lse margin  out margin  out cos_diff  fp8 tiles  split")
    for si, sd in enumerate((0.1, 1.0)):
        out_atol = 8e-4 * (10.0 if sd == 1.0 else 1.0)
        for n, nt in zip(seqlens, trials):
            draws = []
            for k in range(nt):  # every (set, seqlen, trial) its own stream: any subset reproduces
                rng = np.random.default_rng([args.seed, si, n, k])
                q, codes, kv_scale = draw(rng, args.h_q, n, sd, args.data)
                exact = exact_tiles(codes)  # its tiles' S on the exact path, the same for every design
                draws.append((q, codes, kv_scale, exact, scores_today(q, codes, args.bits_today),
                              reference(q, codes, kv_scale)))
            for name in DESIGNS:
                for b in bits:
                    npass, wl, wo, wc, split, share = 0, 0.0, 0.0, 0.0, 0.0, 0.0
                    for q, codes, kv_scale, exact, s_exact, (ro, rl) in draws:
                        if name == "today":
                            sv, se = scores_today(q, codes, b), 0.0
                            o, l = attend(sv, codes, kv_scale, b, False, exact, b)
                        else:
                            sv, se = scores_fp8(q, codes, b, name)
                            sv = np.where(exact[None, :], s_exact, sv)
                            o, l = attend(sv, codes, kv_scale, b, True, exact, args.bits_today)
                            share += float(np.mean(~exact)) / len(draws)
                        mo, oko = margin(o, ro, out_atol, 2.01 / 128)
                        ml, okl = margin(l, rl, 1e-5, 8.01 / 65536)
                        cd = cos_diff(o, ro)
                        npass += oko and okl and cd <= 5e-6
                        wl, wo, wc, split = max(wl, ml), max(wo, mo), max(wc, cd), max(split, se)
                    print(f"{'softmax' if sd == 1.0 else 'N/10':7s} {n:7d}  {name:14s} {b:2d}  {npass:2d}/{nt:<2d}  "
                          f"{wl:10.3f}  {wo:10.3f}  {wc:12.2e}  "
                          f"{'-' if name == 'today' else f'{100 * share:.0f}%':>9s}  "
                          f"{'-' if name == 'today' else f'{split:.1e}'}")
                    sys.stdout.flush()


if __name__ == "__main__":
    main()
