#!/usr/bin/env python3
"""fp8_mma_precision.py - a CPU study of the numerics of an fp8-tensor-core MLA decode (issue 17).

The fp8 KV kernels of hip.flash decode every code to bf16 before the matrix products, and that
decode is most of their instructions (BENCHMARKS.md, 2026-12-04). The lead that removes it: the
tensor cores read the codes themselves (fp8 wgmma, e4m3 x e4m3 -> f32). This script asks, before
any GPU time is spent, whether such a kernel can meet the harness's parity tolerances at all:

  S = K Q^T  with K the raw codes read as e4m3fn (an fp8_e4m3_fnuz code is worth half its e4m3fn
             reading; 0x80 (NaN) and 0x7F/0xFF (+-240, NaN in e4m3fn) differ and are left to an
             exact path: the two +-240 codes of each set (the generator's extremes) are computed
             exactly here, as that path would)
             and Q, per row scaled by a power of two into [128, 256), split into two e4m3fn parts
             Qh = e4m3(Q'), Ql = e4m3(Q' - Qh);
  O = P V    per 64-key tile with P (fp32, at most 1) scaled by 2^8 and split the same way, into a
             fresh accumulator per tile that is added to the running O in fp32 (the online softmax
             as the kernels do it: running max, alpha, l summed from fp32 P).

The fp8 matrix instruction's accumulation is modelled, since its exact behaviour is not documented:
each k32 step adds its 32 exact products to the accumulator after aligning all 33 terms to the
largest one's exponent and truncating each toward zero to F bits below it (F = 13 is the "about 14
bits" of DeepSeek-V3's report on H800; F = 23 is a full fp32 adder). The S accumulation is modelled
three ways: one chain (hi and lo steps interleaved), two chains (hi, lo) added in fp32, or a fresh
accumulator per pair of k32 steps added in fp32 (DeepSeek's promotion to CUDA cores).

It compares out (bf16) and lse (fp32) with a float64 reference under the harness's tolerances
(harness/plan.c tolerances(): out atol 8e-4 (x10 in a softmax set) or rtol 2.01/128, cos_diff
5e-6; lse atol 1e-5 or rtol 8.01/65536), on inputs drawn as harness/task.c draws them (N(0, sd)
clamped to [-1, 1], sd 0.1 or 1 in a softmax set; the cache quantized to fp8_e4m3_fnuz with
kv_scale 1/240). The "today" rows model the decode-to-bf16 kernels (exact codes, Q bf16, P rounded
to bf16, f32 accumulation) as a calibration: they must pass with a margin.

  /usr/bin/python3 tools/fp8_mma_precision.py [--seqlens 1,64,1000,8192] [--h-q 16] [--bits 13,23]
  (Debian's python3 with python3-numpy, which tools/install-deps installs; about 2 minutes)

Prints one line per (input set, seqlen, design, F): worst |err| / (atol + rtol |e|) of out and lse
(the harness's margin, below 1 passes), the out cos_diff, and whether every element passes. A model,
not a measurement: only an H200 run says what the hardware does.
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


def round_e4m3fn(x):
    """float64 -> the nearest e4m3fn value (3 mantissa bits, normal from 2^-6, step 2^-9 below)."""
    a = np.abs(x)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    step = np.exp2(np.maximum(e, -6.0) - 3.0)
    r = np.round(x / step) * step
    if np.any(np.abs(r) > 448.0):
        raise ValueError("e4m3fn overflow: the scaling is wrong")
    return r


def round_fnuz(x):
    """float64 -> the nearest fp8_e4m3_fnuz value (bias 8: max 240, normal from 2^-7, step 2^-10 below)."""
    a = np.abs(x)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    step = np.exp2(np.maximum(e, -7.0) - 3.0)
    return np.clip(np.round(x / step) * step, -240.0, 240.0)


def mma_step(acc, prods, bits):
    """acc (float32 array [...]) + sum over the last axis of prods (exact products, float64), with
    every term aligned to the largest's exponent and truncated toward zero to `bits` bits below it."""
    terms = np.concatenate([acc[..., None].astype(np.float64), prods], axis=-1)
    mx = np.max(np.abs(terms), axis=-1, keepdims=True)
    e = np.floor(np.log2(np.where(mx > 0, mx, 1.0)))
    q = np.exp2(e - bits)
    return np.sum(np.trunc(terms / q) * q, axis=-1).astype(np.float32)


def draw(rng, h_q, n, sd):
    q = round_bf16(np.clip(rng.standard_normal((h_q, D_QK)) * sd, -1, 1))
    x = np.clip(rng.standard_normal((n, D_QK)) * sd, -1, 1)
    if x.size >= 2:  # the generator's extremes: +amax and -amax (harness/task.c fp8_extremes)
        flat = np.argsort(-np.abs(x), axis=None)
        x.flat[flat[0]] = 1.0
        x.flat[flat[1]] = -1.0
    codes = round_fnuz(x * 240.0)  # the fnuz value of each code; element = code * KV_SCALE
    return q, codes


def reference(q, codes):
    k = codes * KV_SCALE
    s = (q @ k.T) * SOFTMAX_SCALE
    m = s.max(axis=1, keepdims=True)
    w = np.exp(s - m)
    lse = (m[:, 0] + np.log(w.sum(axis=1)))
    out = (w @ k[:, :D_V]) / w.sum(axis=1, keepdims=True)
    return out, lse


def scores_fp8(q, codes, bits, mode):
    """S (float64 [h_q, n]) as the fp8 kernel would: K as e4m3fn (2 x code), Q split in two."""
    h_q = q.shape[0]
    e = 7.0 - np.floor(np.log2(np.max(np.abs(q), axis=1, keepdims=True)))  # max |Q'| in [128, 256)
    qs = q * np.exp2(e)
    qh = round_e4m3fn(qs)
    ql = round_e4m3fn(qs - qh)
    split_err = float(np.max(np.abs(qs - qh - ql)) / np.max(np.abs(qs)))
    kf = 2.0 * codes  # e4m3fn reading of each code
    n = codes.shape[0]
    acc = [np.zeros((h_q, n), np.float32) for _ in range(2)]
    total = np.zeros((h_q, n), np.float32)
    for c in range(0, D_QK, 32):
        kc = kf[:, c:c + 32]
        ph = qh[:, None, c:c + 32] * kc[None, :, :]
        pl = ql[:, None, c:c + 32] * kc[None, :, :]
        if mode == "one-chain":
            acc[0] = mma_step(mma_step(acc[0], ph, bits), pl, bits)
        elif mode == "two-chains":
            acc[0] = mma_step(acc[0], ph, bits)
            acc[1] = mma_step(acc[1], pl, bits)
        else:  # per-step: a fresh accumulator for each k32 pair, added in fp32
            z = np.zeros((h_q, n), np.float32)
            total = (total + mma_step(mma_step(z, ph, bits), pl, bits)).astype(np.float32)
    sp = total if mode == "per-step" else (acc[0] + acc[1]).astype(np.float32)
    s = sp.astype(np.float64) * np.exp2(-e) * 0.5 * KV_SCALE
    return s, split_err


def scores_today(q, codes, bits):
    """S as the decode-to-bf16 kernels: exact codes, bf16 Q, k16 steps into one f32 chain."""
    k = codes  # decoded exactly (the scale folded into the score scale)
    acc = np.zeros((q.shape[0], codes.shape[0]), np.float32)
    for c in range(0, D_QK, 16):
        acc = mma_step(acc, q[:, None, c:c + 16] * k[None, :, c:c + 16], bits)
    return acc.astype(np.float64) * KV_SCALE


def attend(s, codes, bits, fp8_p):
    """Online softmax over 64-key tiles (as the kernels: running max, alpha, l from fp32 P), P V per
    tile into a fresh accumulator added to the running O in fp32. fp8_p: P x 2^8 split in two e4m3
    parts and V read as e4m3fn; else P rounded to bf16 and V exact (today's kernels)."""
    h_q, n = s.shape
    t = (s * SOFTMAX_SCALE * LOG2E).astype(np.float32).astype(np.float64)  # log2 domain, fp32
    m_run = np.full(h_q, -np.inf)
    l_run = np.zeros(h_q, np.float32)
    o = np.zeros((h_q, D_V), np.float32)
    v = (2.0 * codes[:, :D_V]) if fp8_p else codes[:, :D_V]
    for t0 in range(0, n, BN):
        tt = t[:, t0:t0 + BN]
        m_new = np.maximum(m_run, tt.max(axis=1))
        alpha = np.exp2(m_run - m_new).astype(np.float32)
        p = np.exp2(tt - m_new[:, None]).astype(np.float32).astype(np.float64)
        l_run = (l_run * alpha + p.sum(axis=1)).astype(np.float32)
        parts = [round_e4m3fn(p * 256.0)]
        if fp8_p:
            parts.append(round_e4m3fn(p * 256.0 - parts[0]))
        else:
            parts = [round_bf16(p)]
        vt = v[t0:t0 + BN]
        ot = np.zeros((h_q, D_V), np.float32)
        step = 32 if fp8_p else 16
        for part in parts:
            for c in range(0, vt.shape[0], step):
                prods = part[:, None, c:c + step] * vt[None, c:c + step, :].transpose(0, 2, 1)
                ot = mma_step(ot, prods, bits)
        o = (o * alpha[:, None] + ot).astype(np.float32)
        m_run = m_new
    scale = (KV_SCALE * (2.0 ** -8) * 0.5) if fp8_p else KV_SCALE
    out = round_bf16(o.astype(np.float64) / l_run.astype(np.float64)[:, None] * scale)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seqlens", default="1,64,1000,8192")
    ap.add_argument("--h-q", type=int, default=16)
    ap.add_argument("--bits", default="13,23")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    seqlens = [int(x) for x in args.seqlens.split(",")]
    bits = [int(x) for x in args.bits.split(",")]
    rng = np.random.default_rng(args.seed)
    print("set      seqlen  design            F   out margin  lse margin  out cos_diff  pass")
    for sd in (0.1, 1.0):
        out_atol = 8e-4 * (10.0 if sd == 1.0 else 1.0)
        for n in seqlens:
            q, codes = draw(rng, args.h_q, n, sd)
            ro, rl = reference(q, codes)
            designs = [("today (bf16)", None)] + [("fp8 " + m, m) for m in ("one-chain", "two-chains", "per-step")]
            for name, mode in designs:
                for b in bits:
                    if mode is None:
                        s = scores_today(q, codes, b)
                        o, l = attend(s, codes, b, False)
                        split = 0.0
                    else:
                        s, split = scores_fp8(q, codes, b, mode)
                        o, l = attend(s, codes, b, True)
                    mo, oko = margin(o, ro, out_atol, 2.01 / 128)
                    ml, okl = margin(l, rl, 1e-5, 8.01 / 65536)
                    cd = cos_diff(o, ro)
                    ok = oko and okl and cd <= 5e-6
                    print(f"{'softmax' if sd == 1.0 else 'N/10':7s} {n:7d}  {name:17s} {b:2d}  {mo:10.3f}  "
                          f"{ml:10.3f}  {cd:12.2e}  {'PASS' if ok else 'FAIL'}"
                          f"{'' if not split else f'  (Q - Qh - Ql: {split:.1e} of max |Q|)'}")
                    sys.stdout.flush()


if __name__ == "__main__":
    main()
