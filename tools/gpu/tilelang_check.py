#!/usr/bin/env python3
"""tilelang_check.py - standalone device check of kernels/tilelang/mla_decode.py (tilelang.mla_decode).

Runs on the GPU machine without the harness: builds harness-like inputs (q and cache N(0,1)/10 or
N(0,1), clamped to [-1, 1]; pages randomly permuted; NaN in every cache slot past a sequence's
length (0x80 for fp8); block_table entries past a sequence's pages hold a sentinel far outside the
cache), calls the module through the Python implementation contract (kernels/python/mla_decode.py:
args object, launch() under torch.cuda.stream(args.stream)), and checks against a float64 torch
reference with the harness's tolerances, for every config on the edge cases; then a capture check
(capture, replay, change seqlens/block_table in place, replay, check) and a benchmark of our kernel
against TileLang's own published paged example (carried as a file, run as published but switched to
bf16, num_split 1, BLOCK_N 64, BLOCK_H 64) on the four headline shapes.

The kernels compile in --jobs spawned processes (they fill TileLang's disk cache) while the main
process checks each case as soon as its kernels are built; --deadline stops every phase in time
(what did not run is named as skipped). --unlock runs the paths the module does not offer yet
(its OFFERED flags: pad, page16, page1, fp8); --old-module adds the module before a change to the
benchmark (same config as ours: a regression check).

Usage (device):  python3 tilelang_check.py --module PATH/mla_decode.py --example PATH/example.py
                 [--only-parity | --only-bench] [--jobs N] [--log DIR] [--unlock pad,page16,...]
                 [--old-module PATH] [--deadline S] [--compile-budget S] [--cases a,b]
                 python3 tilelang_check.py --module PATH/mla_decode.py --warm-plan PLAN.json --jobs N
"""

import argparse
import ast
import concurrent.futures as cf
import contextlib
import importlib.util
import json
import math
import multiprocessing as mp
import os
import struct
import sys
import time
import types

SCALE = 0.1352  # DeepSeek-V3-like explicit softmax scale
TOL = {"out": (8e-4, 2.01 / 128, 5e-6), "lse": (1e-5, 8.01 / 65536, None)}
SENTINEL = 0x3FFFFFF0


def out_tol(t):
	"""The harness's out tolerance (harness/measure.c out_tol()): FlashMLA's atol, calibrated on
	N(0,1)/10 inputs, times 10 for N(0,1) inputs (ten times larger V, ten times the absolute
	rounding error of the bf16 P.V product); rtol and cos_tol are scale-free."""
	atol, rtol, cos_tol = TOL["out"]
	return (atol * 10 if t._sigma >= 1 else atol, rtol, cos_tol)
FP8_SCALE = 1.0 / 240.0


def load_module(path, name):
	spec = importlib.util.spec_from_file_location(name, path)
	mod = importlib.util.module_from_spec(spec)
	sys.modules[name] = mod
	spec.loader.exec_module(mod)
	return mod


# --------------------------------------------------------------------------------------------
# fp8 e4m3 fnuz


def fnuz_table(torch):
	vals = []
	for c in range(256):
		s, e, m = c >> 7, (c >> 3) & 15, c & 7
		if c == 0x80:
			v = float("nan")
		elif e == 0:
			v = m * 2.0 ** -10
		else:
			v = (1 + m / 8) * 2.0 ** (e - 8)
		vals.append(-v if s else v)
	return torch.tensor(vals, dtype=torch.float64)


def fnuz_encode(torch, table, x):
	"""Nearest fnuz code of each element of x (float64, |x| <= 240); never 0x80."""
	codes = torch.tensor([c for c in range(256) if c != 0x80], dtype=torch.int64, device=x.device)
	v = table.to(x.device)[codes]
	order = torch.argsort(v)
	sv, sc = v[order], codes[order]
	idx = torch.searchsorted(sv, x.contiguous()).clamp(1, len(sv) - 1)
	lo, hi = sv[idx - 1], sv[idx]
	pick = torch.where((x - lo).abs() <= (hi - x).abs(), idx - 1, idx)
	return sc[pick].to(torch.uint8)


# --------------------------------------------------------------------------------------------
# tasks


def make_task(torch, dev, batch, s_q, h_q, lens, page_size, kv_dtype, sigma=0.1, seed=0,
		spare_pages=3, max_pages=None, num_pages=None):
	g = torch.Generator(device=dev).manual_seed(seed)
	pages_per = [max(1, math.ceil(n / page_size)) for n in lens]
	if max_pages is None:
		max_pages = max(pages_per) + 1
	if num_pages is None:
		num_pages = sum(pages_per) + spare_pages
	assert num_pages >= sum(pages_per) and max_pages >= max(pages_per)
	perm = torch.randperm(num_pages, generator=g, device=dev)
	bt = torch.full((batch, max_pages), SENTINEL, dtype=torch.int32, device=dev)
	p = 0
	for b, n in enumerate(lens):
		need = math.ceil(n / page_size)
		bt[b, :need] = perm[p:p + need].to(torch.int32)
		p += pages_per[b]
	q = (torch.randn(batch, s_q, h_q, 576, generator=g, device=dev) * sigma).clamp(-1, 1)
	vals = torch.randn(num_pages * page_size, 576, generator=g, device=dev) * sigma
	vals = vals.clamp(-1, 1)
	visible = torch.zeros(num_pages * page_size, dtype=torch.bool, device=dev)
	for b, n in enumerate(lens):
		j = torch.arange(n, device=dev)
		rows = bt[b, (j // page_size)].to(torch.int64) * page_size + j % page_size
		visible[rows] = True
	t = types.SimpleNamespace(batch=batch, s_q=s_q, h_q=h_q, num_pages=num_pages,
		page_size=page_size, max_pages=max_pages, kv_dtype=kv_dtype, softmax_scale=SCALE,
		kv_scale=1.0, num_cus=torch.cuda.get_device_properties(dev).multi_processor_count)
	if kv_dtype == "fp8_e4m3_fnuz":
		table = fnuz_table(torch).to(dev)
		t.kv_scale = FP8_SCALE  # a fixed legal scale (the clamp bound / 240): kernels precompile
		codes = fnuz_encode(torch, table, (vals.double() / t.kv_scale).clamp(-240, 240))
		# the extreme codes 0x7F / 0xFF in visible rows
		vis_rows = visible.nonzero().flatten()
		if len(vis_rows) >= 2:
			codes[vis_rows[0], 3] = 0x7F
			codes[vis_rows[-1], 5] = 0xFF
		codes[~visible] = 0x80
		cache = codes.view(num_pages, page_size, 1, 576)
		t._ref_kv = (table[codes.to(torch.int64)] * t.kv_scale)
	else:
		kvb = vals.to(torch.bfloat16)
		del vals
		kvb[~visible] = float("nan")
		cache = kvb.view(num_pages, page_size, 1, 576)
		t._ref_kv = kvb  # converted to float64 per sequence by the reference
	t.q = q.to(torch.bfloat16)
	t.kv_cache = cache
	t.block_table = bt
	t.seqlens = torch.tensor(lens, dtype=torch.int32, device=dev)
	t.out = torch.full((batch, s_q, h_q, 512), float("nan"), dtype=torch.bfloat16, device=dev)
	t.lse = torch.full((batch, h_q, s_q), float("nan"), dtype=torch.float32, device=dev)
	t.workspace = None
	t.stream = None
	t.device = dev
	t._lens = list(lens)
	t._sigma = sigma
	return t


def reference(torch, t, nb=None):
	"""float64 out [b, s_q, h_q, 512], lse [b, h_q, s_q] (natural log, +inf with no key), for
	the first nb sequences (all by default)."""
	dev = t.q.device
	nb = t.batch if nb is None else nb
	out = torch.zeros(nb, t.s_q, t.h_q, 512, dtype=torch.float64, device=dev)
	lse = torch.full((nb, t.h_q, t.s_q), float("inf"), dtype=torch.float64, device=dev)
	bt = t.block_table.to(torch.int64)
	ps = t.page_size
	kvf = t._ref_kv.view(-1, 576)
	for b, n in enumerate(t._lens[:nb]):
		if n <= 0:
			continue
		j = torch.arange(n, device=dev)
		rows = bt[b, j // ps] * ps + j % ps
		k = kvf[rows]
		if getattr(t, "_ref_table", None) is not None:       # codes decoded here (bench tasks)
			k = t._ref_table[k.long()] * t.kv_scale
		k = k.double()                                        # [n, 576]
		qb = t.q[b].double()                                  # [s_q, h_q, 576]
		s = torch.einsum("shd,nd->shn", qb, k) * t.softmax_scale
		for i in range(t.s_q):
			nv = n - t.s_q + 1 + i
			if nv <= 0:
				continue
			si = s[i, :, :nv]
			l = torch.logsumexp(si, dim=-1)
			lse[b, :, i] = l
			out[b, i] = torch.exp(si - l[:, None]) @ k[:nv, :512]
	return out, lse


def compare(torch, got, ref, atol, rtol, cos_tol):
	"""The harness's rule: |err| <= atol or rel <= rtol per element, cos diff, non-finite masks."""
	g = got.double()
	r = ref
	fg, fr = torch.isfinite(g), torch.isfinite(r)
	res = {"ok": True}
	if not torch.equal(fg, fr):
		bad = (fg != fr).nonzero()
		w = tuple(bad[0].tolist())
		res.update(ok=False, why="non-finite mask differs at %d elements, first %s (got %s, "
			"expected %s)" % (len(bad), w, g[w].item(), r[w].item()))
		return res
	if not torch.equal(g[~fg], r[~fr]):
		res.update(ok=False, why="non-finite values differ")
		return res
	x, y = g[fg], r[fr]
	err = (x - y).abs()
	rel = err / y.abs()
	fail = ~((err <= atol) | (rel <= rtol))
	den = (x * x + y * y).sum().item()
	cosd = 1 - 2 * (x * y).sum().item() / den if den > 0 else 0.0
	res["max_abs"] = err.max().item() if err.numel() else 0.0
	res["cos"] = cosd
	if fail.any():
		w = torch.argmax(torch.where(fail, err, torch.zeros_like(err)))
		full = tuple(fg.nonzero()[w].tolist())
		res.update(ok=False, why="%d elements out of tolerance, worst %s got %.6g expected %.6g"
			% (int(fail.sum()), full, g[full].item(), r[full].item()))
	elif cos_tol is not None and cosd > cos_tol:
		res.update(ok=False, why="cos diff %.3g > %.3g" % (cosd, cos_tol))
	return res


def bits(torch, x):
	return x.contiguous().view(torch.uint8).clone()


def run_launch(torch, M, t, cfg, stream):
	with torch.cuda.stream(stream):
		M.launch(t, cfg)


def check_case(torch, M, t, cfg, stream, ref=None):
	"""Poison, launch, compare; relaunch into other buffers and require bit-identical output."""
	if ref is None:
		ref = reference(torch, t)
	ws = M.workspace_size(t, cfg) if hasattr(M, "workspace_size") else 0
	t.workspace = torch.full((ws,), 0xFF, dtype=torch.uint8, device=t.device) if ws else None
	t.stream = torch.cuda.ExternalStream(stream.cuda_stream)
	ins = [bits(torch, x) for x in (t.q, t.kv_cache, t.block_table, t.seqlens)]
	t.out.fill_(float("nan"))
	t.lse.fill_(float("nan"))
	with torch.cuda.stream(t.stream):
		M.prepare(t, cfg)
		M.launch(t, cfg)
	torch.cuda.synchronize()
	r_out = compare(torch, t.out.float(), ref[0], *out_tol(t))
	r_lse = compare(torch, t.lse, ref[1], *TOL["lse"])
	o1, l1 = t.out.clone(), t.lse.clone()
	# second launch into other, poisoned buffers
	keep = (t.out, t.lse)
	t.out = torch.full_like(keep[0], float("nan"))
	t.lse = torch.full_like(keep[1], float("nan"))
	with torch.cuda.stream(t.stream):
		M.launch(t, cfg)
	torch.cuda.synchronize()
	det = torch.equal(bits(torch, t.out), bits(torch, o1)) and torch.equal(bits(torch, t.lse),
		bits(torch, l1))
	t.out, t.lse = keep
	same_in = all(torch.equal(a, bits(torch, x)) for a, x in
		zip(ins, (t.q, t.kv_cache, t.block_table, t.seqlens)))
	return r_out, r_lse, det, same_in


# --------------------------------------------------------------------------------------------
# cases


def cases():
	"""(name, task kwargs, configs): configs "all" or "sp1" (the split path is shared by every
	dtype and page size; it is checked on a subset)."""
	r = []
	add = lambda name, csel="all", **kw: r.append((name, kw, csel))
	bf, f8 = "bf16", "fp8_e4m3_fnuz"
	# bf16, the paths past the example (the card's standard tier: causal-h7-ps16, h24-ragged,
	# h64-sq2-ps16, h32-ps1)
	add("h7_sq2_p16", batch=3, s_q=2, h_q=7, lens=[0, 65, 513], page_size=16, kv_dtype=bf)
	add("h7_sq2_p16_edge", batch=8, s_q=2, h_q=7, lens=[0, 1, 2, 15, 16, 17, 64, 1000],
		page_size=16, kv_dtype=bf)
	add("h24_p64", batch=6, s_q=1, h_q=24, lens=[0, 1, 63, 64, 65, 4096], page_size=64,
		kv_dtype=bf)
	add("h64_sq2_p16", batch=4, s_q=2, h_q=64, lens=[1, 64, 1031, 2048], page_size=16,
		kv_dtype=bf)
	add("h32_p1", batch=4, s_q=1, h_q=32, lens=[1, 100, 333, 64], page_size=1, kv_dtype=bf)
	add("h32_p1_edge", batch=6, s_q=1, h_q=32, lens=[0, 1, 2, 63, 64, 65], page_size=1,
		kv_dtype=bf)
	# bf16 page 64 (the example's path): the edge lengths
	add("ragged0_p64_h16", "sp1", batch=8, s_q=1, h_q=16, lens=[0, 1, 63, 64, 129, 777, 0, 5000],
		page_size=64, kv_dtype=bf)
	add("ragged0_p64_h128", batch=8, s_q=1, h_q=128, lens=[0, 1, 63, 64, 65, 1000, 0, 4097],
		page_size=64, kv_dtype=bf)
	add("sq2_p64_h128", "sp1", batch=8, s_q=2, h_q=128, lens=[0, 1, 2, 3, 64, 65, 200, 1025],
		page_size=64, kv_dtype=bf)
	# fp8 e4m3 fnuz: every slot past a length holds 0x80 (NaN), 0x7F / 0xFF (+-240) in visible rows
	add("fp8_p64_h128", batch=8, s_q=1, h_q=128, lens=[0, 1, 63, 64, 65, 1000, 0, 4097],
		page_size=64, kv_dtype=f8)
	add("fp8_h7_sq2_p16", batch=8, s_q=2, h_q=7, lens=[0, 1, 2, 15, 16, 17, 65, 513],
		page_size=16, kv_dtype=f8)
	add("fp8_h32_p1", batch=6, s_q=1, h_q=32, lens=[0, 1, 2, 64, 100, 333], page_size=1,
		kv_dtype=f8)
	add("fp8_p64_h16", "sp1", batch=8, s_q=1, h_q=16, lens=[0, 1, 63, 64, 65, 127, 1000, 4099],
		page_size=64, kv_dtype=f8)
	add("fp8_sigma1_p64_h16", "sp1", batch=4, s_q=1, h_q=16, lens=[3, 100, 2048, 4100],
		page_size=64, kv_dtype=f8, sigma=1.0)
	add("fp8_sq2_p64_h16", "sp1", batch=8, s_q=2, h_q=16, lens=[0, 1, 2, 63, 64, 65, 127, 4099],
		page_size=64, kv_dtype=f8)
	add("fp8_h24_p64", "sp1", batch=6, s_q=1, h_q=24, lens=[0, 1, 63, 64, 65, 4096],
		page_size=64, kv_dtype=f8)
	add("fp8_h64_sq2_p16", "sp1", batch=4, s_q=2, h_q=64, lens=[1, 64, 1031, 2048],
		page_size=16, kv_dtype=f8)
	add("fp8_sq2_p64_h128", "sp1", batch=4, s_q=2, h_q=128, lens=[0, 2, 65, 4096],
		page_size=64, kv_dtype=f8)
	# fp8 with whole-tile pages through the row gather instead (the module's FP8_BULK False)
	add("fp8_p64_h128_rows", batch=8, s_q=1, h_q=128, lens=[0, 1, 63, 64, 65, 1000, 0, 4097],
		page_size=64, kv_dtype=f8, _var={"FP8_BULK": False})
	add("fp8_sq2_p64_h16_rows", "sp1", batch=8, s_q=2, h_q=16,
		lens=[0, 1, 2, 63, 64, 65, 127, 4099], page_size=64, kv_dtype=f8, _var={"FP8_BULK": False})
	# the module's other decode / gather variants (FP8_DECODE, GATHER_PREFETCH)
	add("fp8_p64_h128_chunk", batch=8, s_q=1, h_q=128, lens=[0, 1, 63, 64, 65, 1000, 0, 4097],
		page_size=64, kv_dtype=f8, _var={"FP8_DECODE": "chunk"})
	add("fp8_h64_sq2_p16_nopf", "sp1", batch=4, s_q=2, h_q=64, lens=[1, 64, 1031, 2048],
		page_size=16, kv_dtype=f8, _var={"GATHER_PREFETCH": False})
	add("fp8_h32_p1_nopf", "sp1", batch=6, s_q=1, h_q=32, lens=[0, 1, 2, 64, 100, 333],
		page_size=1, kv_dtype=f8, _var={"GATHER_PREFETCH": False})
	add("h64_sq2_p16_nopf", "sp1", batch=4, s_q=2, h_q=64, lens=[1, 64, 1031, 2048],
		page_size=16, kv_dtype=bf, _var={"GATHER_PREFETCH": False})
	add("h32_p1_nopf", "sp1", batch=4, s_q=1, h_q=32, lens=[1, 100, 333, 64], page_size=1,
		kv_dtype=bf, _var={"GATHER_PREFETCH": False})
	return r


# fp8 decode checks: every visible row holds the same codes (V columns: every code but 0x80, each
# twice; rope columns 0x30..0x6F), so every score of a row is equal, softmax is uniform and out is
# the decoded V row itself: out must equal fnuz(code) * kv_scale to a bf16 rounding, code by code
# (a wrong code, a flushed subnormal, a wrong sign is off by far more).  Sequence 4 has one 0x80 in
# a visible row: its lse must not be finite (the kernel's reading of a NaN sum), which a decode of
# 0x80 as -0 would not give.  (name, page_size, h_q, s_q, module switches)
CODES = [
	("codes_p64_h16", 64, 16, 1, {}),
	("codes_p64_h128", 64, 128, 1, {}),
	("codes_p16_h64_sq2", 16, 64, 2, {}),
	("codes_p1_h32", 1, 32, 1, {}),
	("codes_p64_h16_chunk", 64, 16, 1, {"FP8_DECODE": "chunk"}),
	("codes_p64_h16_rows", 64, 16, 1, {"FP8_BULK": False}),
	("codes_p16_h64_sq2_nopf", 16, 64, 2, {"GATHER_PREFETCH": False}),
	("codes_p1_h32_nopf", 1, 32, 1, {"GATHER_PREFETCH": False}),
]
CODES_LENS = [64, 1, 128, 200, 64, 0]
CODES_NAN = 4


def codes_task(torch, dev, page_size, h_q, s_q, seed):
	t = make_task(torch, dev, batch=len(CODES_LENS), s_q=s_q, h_q=h_q, lens=CODES_LENS,
		page_size=page_size, kv_dtype="fp8_e4m3_fnuz", seed=seed)
	table = fnuz_table(torch).to(dev)
	row = torch.arange(576, device=dev) % 256
	row[row == 0x80] = 0x00
	row[512:] = torch.arange(0x30, 0x70, device=dev)
	codes = t.kv_cache.view(-1, 576)
	bt = t.block_table.to(torch.int64)
	for b, n in enumerate(CODES_LENS):
		j = torch.arange(n, device=dev)
		rows = bt[b, j // page_size] * page_size + j % page_size
		codes[rows] = row.to(torch.uint8)
		if b == CODES_NAN:
			codes[rows[10], 5] = 0x80
	t._ref_kv = table[codes.to(torch.int64)] * t.kv_scale
	t._expect_v = (table[row] * t.kv_scale).float()  # [576]; the V part is [:512]
	return t


def check_codes(torch, M, t, cfg, stream):
	"""None if the decode checks pass, else why not."""
	ws = M.workspace_size(t, cfg)
	t.workspace = torch.full((ws,), 0xFF, dtype=torch.uint8, device=t.device) if ws else None
	t.stream = torch.cuda.ExternalStream(stream.cuda_stream)
	t.out.fill_(float("nan"))
	t.lse.fill_(float("nan"))
	with torch.cuda.stream(t.stream):
		M.prepare(t, cfg)
		M.launch(t, cfg)
	torch.cuda.synchronize()
	why = []
	ev = t._expect_v[:512]
	for b, n in enumerate(CODES_LENS):
		o = t.out[b].float()  # [s_q, h_q, 512]
		l = t.lse[b]
		if b == CODES_NAN:
			if torch.isfinite(l).any():
				why.append("seq %d (0x80 visible): lse finite at %d of %d (0x80 not decoded as NaN?)"
					% (b, int(torch.isfinite(l).sum()), l.numel()))
			continue
		for i in range(t.s_q):
			nv = n - t.s_q + 1 + i
			oi = o[i]
			if nv <= 0:
				if not torch.equal(oi, torch.zeros_like(oi)):
					why.append("seq %d query %d (no key): out not 0" % (b, i))
				continue
			if not torch.isfinite(oi).all():
				why.append("seq %d query %d: out not finite" % (b, i))
				continue
			err = (oi - ev).abs()
			bad = err > ev.abs() * 2.0 ** -7
			if bad.any():
				w = tuple(bad.nonzero()[0].tolist())
				code = int((torch.arange(512) % 256)[w[-1]])
				why.append("seq %d query %d: %d elements off, first head %d col %d (code 0x%02x): "
					"got %.8g expected %.8g" % (b, i, int(bad.sum()), w[0], w[1], code,
					oi[w].item(), ev[w[1]].item()))
			if not torch.isfinite(l[:, i]).all():
				why.append("seq %d query %d: lse not finite" % (b, i))
	return "; ".join(why) or None


# the old-vs-new benchmark of the paths past the example (--bench-paths): (kv_dtype, h_q, batch,
# keys per sequence, page_size, s_q), equal lengths
PATH_BENCH = [
	("fp8_e4m3_fnuz", 16, 128, 32768, 64, 1),
	("fp8_e4m3_fnuz", 128, 128, 8192, 64, 1),
	("bf16", 64, 32, 4096, 16, 2),
	("fp8_e4m3_fnuz", 64, 32, 4096, 16, 2),
	("bf16", 32, 32, 4096, 1, 1),
	("fp8_e4m3_fnuz", 32, 32, 4096, 1, 1),
]


def bench_task(torch, dev, kv_dtype, h_q, b, n, page_size, s_q, seed=7):
	"""Equal lengths, every page used once (random permutation); fp8 codes uniform over every
	code but 0x80, decoded by the reference only for the sequences it checks."""
	if kv_dtype == "bf16":
		return make_task(torch, dev, batch=b, s_q=s_q, h_q=h_q, lens=[n] * b, page_size=page_size,
			kv_dtype="bf16", seed=seed, spare_pages=0, max_pages=n // page_size)
	g = torch.Generator(device=dev).manual_seed(seed)
	npg = b * n // page_size
	perm = torch.randperm(npg, generator=g, device=dev).to(torch.int32)
	codes = torch.randint(0, 256, (npg * page_size, 576), generator=g, device=dev,
		dtype=torch.int32).to(torch.uint8)
	codes[codes == 0x80] = 0
	t = types.SimpleNamespace(batch=b, s_q=s_q, h_q=h_q, num_pages=npg, page_size=page_size,
		max_pages=n // page_size, kv_dtype=kv_dtype, softmax_scale=SCALE, kv_scale=FP8_SCALE,
		num_cus=torch.cuda.get_device_properties(dev).multi_processor_count)
	t.q = (torch.randn(b, s_q, h_q, 576, generator=g, device=dev) * 0.1).clamp(-1, 1).to(
		torch.bfloat16)
	t.kv_cache = codes.view(npg, page_size, 1, 576)
	t.block_table = perm.view(b, n // page_size).contiguous()
	t.seqlens = torch.full((b,), n, dtype=torch.int32, device=dev)
	t.out = torch.full((b, s_q, h_q, 512), float("nan"), dtype=torch.bfloat16, device=dev)
	t.lse = torch.full((b, h_q, s_q), float("nan"), dtype=torch.float32, device=dev)
	t.workspace = None
	t.stream = None
	t.device = dev
	t._lens = [n] * b
	t._sigma = 0.1
	t._ref_kv = codes
	t._ref_table = fnuz_table(torch).to(dev)
	return t


@contextlib.contextmanager
def variant(M, kw):
	"""The module's switches set as a case asks (kw["_var"]), restored after."""
	var = kw.get("_var", {})
	old = {k: getattr(M, k) for k in var}
	for k, v in var.items():
		setattr(M, k, v)
	try:
		yield {k: v for k, v in kw.items() if k != "_var"}
	finally:
		for k, v in old.items():
			setattr(M, k, v)


# capture checks: (name, kwargs, lens after the in-place change); max_pages 40, num_pages 120
CAPTURE = [
	("bf16_p64_h128_sq2", dict(batch=8, s_q=2, h_q=128, page_size=64, kv_dtype="bf16",
		lens=[0, 5, 64, 65, 300, 1000, 2049, 77]), [2500, 0, 1, 640, 63, 2, 1111, 2200]),
	("bf16_p16_h7_sq2", dict(batch=8, s_q=2, h_q=7, page_size=16, kv_dtype="bf16",
		lens=[0, 5, 16, 17, 65, 100, 513, 77]), [500, 0, 1, 64, 15, 2, 111, 220]),
	("fp8_p1_h32", dict(batch=6, s_q=1, h_q=32, page_size=1, kv_dtype="fp8_e4m3_fnuz",
		lens=[0, 1, 2, 39, 40, 33]), [20, 0, 1, 38, 40, 13]),
]


HEADLINE = [(128, 128, 8192), (128, 64, 8192), (16, 128, 32768), (16, 128, 4096)]


# --------------------------------------------------------------------------------------------
# parallel precompile (spawned processes fill TileLang's disk cache)


SETTINGS = {}  # --set: module switches, applied to our module here and in every compile worker


def _pc_worker(job):
	kind, path, key = job[:3]
	t0 = time.time()
	try:
		if kind in ("ours", "old"):
			M = load_module(path, "tl_mla_pc")
			if kind == "ours":
				for k, v in (job[3] if len(job) > 3 else {}).items():
					setattr(M, k, v)
			M._build(*key)
		else:
			E = load_module(path, "tl_example_pc")
			E.mla_decode_tilelang(*key)
		return (kind, key, None, time.time() - t0)
	except Exception as e:  # reported, the check goes on
		return (kind, key, "%s: %s" % (type(e).__name__, str(e)[-400:]), time.time() - t0)


class Precompile:
	"""Jobs compiled in n spawned processes, in the order given; wait(job) blocks until that job
	is done or the compile deadline passes, and returns None or the reason it cannot be used."""

	def __init__(self, jobs, n, deadline):
		self.deadline = deadline
		self.ex = cf.ProcessPoolExecutor(max_workers=n, mp_context=mp.get_context("spawn"))
		self.futs = {}
		for j in jobs:
			if (j[0], j[2]) not in self.futs:
				self.futs[(j[0], j[2])] = self.ex.submit(_pc_worker, tuple(j) + (dict(SETTINGS),))
		self.errs = {}

	def wait(self, kind, key):
		k = (kind, key)
		if k in self.errs:
			return self.errs[k]
		f = self.futs.get(k)
		if f is None:
			return None  # not precompiled: built on first use
		try:
			_, _, err, dt = f.result(timeout=max(0.0, self.deadline - time.time()))
		except cf.TimeoutError:
			err = "compile not done by the check's compile deadline"
			print("%s precompile %s %s NOT DONE: skipped" % (stamp(), kind, key), flush=True)
		else:
			if err:
				err = "compile failed: " + err
				print("%s precompile %s %s FAILED (%.0fs): %s" % (stamp(), kind, key, dt, err),
					flush=True)
			else:
				print("%s compiled %s %s in %.0fs" % (stamp(), kind, key, dt), flush=True)
		self.errs[k] = err
		return err

	def close(self):
		# leave the stragglers behind: kill the workers instead of waiting for them
		for p in list(getattr(self.ex, "_processes", {}).values()):
			p.kill()
		self.ex.shutdown(wait=False, cancel_futures=True)


T_START = time.time()


def stamp():
	return "[%6.1fs]" % (time.time() - T_START)


# --------------------------------------------------------------------------------------------


def bench_one(torch, tt, fn, stream, graph_of=None):
	"""Median ms of fn by do_bench (L2 flush); with graph_of, also of a CUDA graph of it."""
	with torch.cuda.stream(stream):
		ms = tt.do_bench(fn, warmup=25, rep=200, return_mode="median")
	ms_g = None
	if graph_of is not None:
		g = torch.cuda.CUDAGraph()
		with torch.cuda.graph(g, stream=stream):
			graph_of()
		ms_g = tt.do_bench(lambda: g.replay(), warmup=25, rep=200, return_mode="median")
	return ms, ms_g


def checked_bench(torch, tt, K, t, c, ref, nb, stream, graph=False):
	"""One config of a module on task t for a benchmark: its workspace, prepare(), one launch into
	NaN-filled out / lse checked against ref on the first nb sequences, then bench_one (with graph:
	also a CUDA graph of the launch). Returns ms, ms_graph (None without graph) and the out and lse
	comparisons."""
	ws = K.workspace_size(t, c)
	t.workspace = torch.empty((ws,), dtype=torch.uint8, device=t.q.device) if ws else None
	with torch.cuda.stream(t.stream):
		K.prepare(t, c)
	t.out.fill_(float("nan"))
	t.lse.fill_(float("nan"))
	with torch.cuda.stream(t.stream):
		K.launch(t, c)
	torch.cuda.synchronize()
	ro = compare(torch, t.out[:nb].float(), ref[0], *out_tol(t))
	rl = compare(torch, t.lse[:nb], ref[1], *TOL["lse"])

	def graphed():
		with torch.cuda.stream(t.stream):
			K.launch(t, c)
	ms, ms_g = bench_one(torch, tt, lambda: K.launch(t, c), stream, graphed if graph else None)
	return ms, ms_g, ro, rl


def f32(x):
	"""x rounded to float32, as the harness hands its float scalars to a Python kernel."""
	return struct.unpack("f", struct.pack("f", x))[0]


def _c_eval(expr, env):
	"""A TileLang-generated CUDA index expression (ints, + - * >> & |, casts) evaluated in Python."""
	import re
	e = re.sub(r"\(\((int|int64_t)\)threadIdx\.x\)", "tid", expr)
	e = re.sub(r"\((int|int64_t|uint)\)", "", e)
	return eval(e, {}, env)


def layout_check(opt):
	"""Compile (for sm_90a, no GPU needed) the variants whose shared-memory addresses TileLang
	computes, and check them against the fixed layouts of the module's CUDA (tl_fnuz_tile,
	tl_fnuz_gather, tl_fnuz_store, tl_bf16_gather): bf16 tile [64][512] as 64-column panels with the
	128-byte swizzle, rope [64][64] likewise, codes as two [64][256] boxes and [64][64]."""
	import re
	M = load_module(opt.module, "tl_mla")
	M._TARGET = {"kind": "cuda", "arch": "sm_90a"}
	swz = lambda j, c, panel: (c >> 3) * 4096 * panel + j * 64 + ((c & 7) ^ (j & 7)) * 8
	bad = 0
	# the bulk fp8 tile, both head tiles (16 and 64 rows): FP8_DECODE "chunk"
	for h_q, bh in ((16, 16), (128, 64)):
		key = (1, h_q, 64, True, 64, bh, 1, 2, 256, SCALE, FP8_SCALE, True, "chunk", False)
		src = M._build(*key).get_kernel_source()
		for buf8, buf, n_it, ncol in (("KV8_shared", "KV_shared", 16, 64), ("KV8pe_shared",
				"K_pe_shared", 2, 8)):
			line = [l for l in src.splitlines() if "tl_fnuz8_bf16((&(((uchar*)%s)" % buf8 in l][0]
			m = re.search(r"%s\)\[(.*?)\]\)\), \(&\(\(\(bfloat16_t\*\)%s\)\[(.*)\]\)\)\);"
				% (buf8, buf), line)
			a, b = m.group(1), m.group(2)
			iv = sorted(set(re.findall(r"\bi_\d+\b", a + b)))
			kv = set(re.findall(r"\bk(?:_\d+)?\b", a + b))
			assert len(iv) == 1, iv
			seen = set()
			for tid in range(128, 384):
				for it in range(n_it):
					env = {"tid": tid, iv[0]: it}
					env.update({k: 0 for k in kv})
					sa, da = _c_eval(a, env), _c_eval(b, env)
					if ncol == 64:
						box, rest = divmod(sa, 16384)
						j, cc = divmod(rest, 256)
						col = box * 256 + cc
					else:
						j, col = divmod(sa, 64)
					c = col // 8
					seen.add((j, c))
					if col % 8 or da != swz(j, c, 1 if ncol == 64 else 0):
						bad += 1
			print("%s h_q %d %s: %d chunks, %d addresses off" % (stamp(), h_q, buf, len(seen), bad),
				flush=True)
			bad += 0 if len(seen) == 64 * ncol else 1
	# the gather's bf16 tile: the bf16 row gather of TileLang (GATHER_PREFETCH False)
	for ps, h_q, bh in ((16, 64, 64), (1, 32, 16)):
		key = (1, h_q, ps, False, 64, bh, 1, 2, 256, SCALE, 1.0, True, "scalar", False)
		src = M._build(*key).get_kernel_source()
		for buf, n_it, ncol in (("KV_shared", 16, 64), ("K_pe_shared", 2, 8)):
			lines = src.splitlines()
			k = [i for i, l in enumerate(lines) if "*(uint4*)(((bfloat16_t*)%s) + " % buf in l][0]
			st = re.search(r"%s\) \+ (.*)\) = condval_\d+;" % buf, lines[k]).group(1)
			ld = [l for l in lines[k - 6:k] if "*(uint4*)(KV + " in l][0]
			m = re.search(r"\(int64_t\*\)R_s\)\[(.*?)\] \* \(int64_t\)576\) \+ (.*);", ld)
			je, ce = m.group(1), m.group(2)
			depth = 0
			for i, ch in enumerate(ce):  # the column: the balanced expression after "576) + "
				depth += {"(": 1, ")": -1}.get(ch, 0)
				if depth < 0:
					ce = ce[:i]
					break
			iv = sorted(set(re.findall(r"\bi_\d+\b", st + je + ce)))
			assert len(iv) == 1, iv
			seen = set()
			for tid in range(256):
				for it in range(n_it):
					env = {"tid": tid, iv[0]: it}
					j, col = _c_eval(je, env), _c_eval(ce, env)  # rope: + 512 outside it
					c = col // 8
					seen.add((j, c))
					if col % 8 or _c_eval(st, env) != swz(j, c, 1 if ncol == 64 else 0):
						bad += 1
			print("%s gather p%d h_q %d %s: %d chunks, %d addresses off" % (stamp(), ps, h_q, buf,
				len(seen), bad), flush=True)
			bad += 0 if len(seen) == 64 * ncol else 1
	# the variants run read the bf16 tiles as the checked ones do (the same wgmma descriptors, or
	# for 16-row head tiles the same ldmatrix addresses): the same layouts
	desc = lambda src: sorted(set(re.findall(r"initialize_wgmma_descriptor<[^>]*>\(desc_b\w*, "
		r"\(&\(\(\(bfloat16_t\*\)(?:KV_shared|K_pe_shared)\)", src) + re.findall(
		r"ptx_ldmatrix_x\d\(\(&\(\(\(bfloat16_t\*\)(?:KV_shared|K_pe_shared)\)\[[^;]*", src)))
	for ka, kb in (((1, 16, 64, True, 64, 16, 1, 2, 256, SCALE, FP8_SCALE, True, "chunk", False),
			(1, 16, 64, True, 64, 16, 1, 2, 256, SCALE, FP8_SCALE, True, "tile", False)),
			((1, 128, 64, True, 64, 64, 1, 2, 256, SCALE, FP8_SCALE, True, "chunk", False),
			(1, 128, 64, True, 64, 64, 1, 2, 256, SCALE, FP8_SCALE, True, "tile", False)),
			((1, 64, 16, False, 64, 64, 1, 2, 256, SCALE, 1.0, True, "scalar", False),
			(1, 64, 16, True, 64, 64, 1, 2, 256, SCALE, FP8_SCALE, True, "tile", True)),
			((1, 64, 16, False, 64, 64, 1, 2, 256, SCALE, 1.0, True, "scalar", False),
			(1, 64, 16, False, 64, 64, 1, 2, 256, SCALE, 1.0, True, "scalar", True))):
		da, db = desc(M._build(*ka).get_kernel_source()), desc(M._build(*kb).get_kernel_source())
		same = da == db and len(da) > 0
		bad += 0 if same else 1
		print("%s descriptors of %s vs %s: %s" % (stamp(), ka[12:], kb[12:], "same" if same else
			"DIFFER: %s | %s" % (da, db)), flush=True)
	print("%s layout check: %s" % (stamp(), "ok" if not bad else "%d FAILURES" % bad), flush=True)
	os._exit(0 if not bad else 1)


def warm_plan(opt):
	"""Compile the kernels of every task and config of the plans (the harness's scalars: softmax_scale
	and kv_scale = 1/240 as float32), in parallel processes: TileLang's disk cache then serves the
	harness's prepare() calls, which compile one kernel at a time. A plan given as PLAN=PREFIX warms
	only its tasks whose names start with PREFIX (what a --run --task PREFIX will run)."""
	M = load_module(opt.module, "tl_mla")
	jobs = []
	for arg in opt.warm_plan:
		path, _, prefix = arg.partition("=")
		with open(path) as f:
			plan = json.load(f)
		cfgs = M.configs(plan.get("gen", "sm_90"))
		for t in plan["tasks"]:
			sp = t["spec"]
			if not sp["name"].startswith(prefix):
				continue
			sh = types.SimpleNamespace(batch=sp["batch"], s_q=sp["s_q"], h_q=sp["h_q"],
				page_size=sp["page_size"], kv_dtype=sp["kv_dtype"], num_pages=sp["num_pages"],
				max_pages=sp["max_pages"], softmax_scale=f32(sp["softmax_scale"]),
				kv_scale=f32(1.0 / 240.0) if sp["kv_dtype"] != "bf16" else 1.0)
			why = M.supports(sh)
			if why:
				print("%s %s: not offered (%s)" % (stamp(), sp["name"], why), flush=True)
				continue
			for c in cfgs:
				jobs.append(("ours", opt.module, M._key(sh, c)))
	pc = Precompile(jobs, opt.jobs, T_START + opt.compile_budget)
	print("%s compiling %d kernels with %d processes" % (stamp(), len(pc.futs), opt.jobs), flush=True)
	bad = sum(1 for kind, key in pc.futs if pc.wait(kind, key))
	print("%s warm: %d of %d kernels compiled" % (stamp(), len(pc.futs) - bad, len(pc.futs)),
		flush=True)
	pc.close()
	sys.stdout.flush()
	os._exit(0 if not bad else 1)


def main():
	ap = argparse.ArgumentParser()
	ap.add_argument("--module", required=True)
	ap.add_argument("--example", default=None, help="TileLang's paged example (the bench, the parity)")
	ap.add_argument("--warm-plan", action="append", default=[], help="only compile, in --jobs "
		"processes, every kernel the tasks of this plan need (fills TileLang's disk cache before a card "
		"run), then exit; repeatable; PLAN=PREFIX: only the tasks whose names start with PREFIX")
	ap.add_argument("--old-module", default=None, help="the module before a change: benchmarked too")
	ap.add_argument("--jobs", type=int, default=12)
	ap.add_argument("--compile-budget", type=int, default=120,
		help="seconds from the start for the parallel precompile; kernels not done by then are skipped")
	ap.add_argument("--deadline", type=int, default=100000,
		help="seconds from the start: no phase starts a new case after it")
	ap.add_argument("--log", default=None)
	ap.add_argument("--only-parity", action="store_true")
	ap.add_argument("--only-bench", action="store_true")
	ap.add_argument("--cases", default=None, help="comma list of case names (parity and capture)")
	ap.add_argument("--unlock", default="", help="comma list of the module's OFFERED flags to set")
	ap.add_argument("--bench-configs", default="sp1", help="comma list of config name parts, or all")
	ap.add_argument("--set", default="", help="module switches NAME=VALUE,... (Python literals), e.g. "
		"Q_FENCE_ONCE=True: set in our module and in the compile workers")
	ap.add_argument("--bench-paths", action="store_true", help="benchmark our module against "
		"--old-module on PATH_BENCH (fp8 pages of 64, pages of 16 and 1) in the same call")
	ap.add_argument("--bench-variants", default="", help="with --bench-paths: our module also "
		"with these switches, ';'-separated sets of NAME=VALUE,... (Python literals), e.g. "
		"\"GATHER_PREFETCH=False;FP8_DECODE='chunk'\"")
	ap.add_argument("--bench-first", action="store_true", help="compile for and run --bench-paths "
		"before the parity checks")
	ap.add_argument("--no-headline", action="store_true", help="skip the benchmark against "
		"TileLang's example on the four bf16 headline shapes")
	ap.add_argument("--no-codes", action="store_true", help="skip the fp8 decode checks (CODES)")
	ap.add_argument("--layout-check", action="store_true", help="no GPU needed: compile the "
		"module's FP8_DECODE 'chunk' variant for sm_90a and check that the shared-memory addresses "
		"TileLang computes are those tl_fnuz_tile / tl_fnuz_gather / tl_bf16_gather assume, then exit")
	opt = ap.parse_args()
	if opt.layout_check:
		layout_check(opt)
		return
	if opt.warm_plan:
		warm_plan(opt)
		return
	if not opt.example:
		ap.error("--example is required (but with --warm-plan)")
	deadline = T_START + opt.deadline
	late = lambda: time.time() > deadline

	import torch
	dev = torch.device("cuda")
	M = load_module(opt.module, "tl_mla")
	unlock = [u for u in opt.unlock.split(",") if u]
	for u in unlock:
		M.OFFERED[u] = True
	for kv in [x for x in opt.set.split(",") if x]:
		k, v = kv.split("=", 1)
		SETTINGS[k] = ast.literal_eval(v)
		setattr(M, k, SETTINGS[k])
	arch = "sm_%d%d" % torch.cuda.get_device_capability(dev)
	cfgs = M.configs(arch)
	short = lambda c: c["name"].split("_")[2]
	print("%s device %s arch %s configs %s unlocked %s set %s" % (stamp(),
		torch.cuda.get_device_name(dev), arch, [c["name"] for c in cfgs], unlock, SETTINGS), flush=True)
	log = {"configs": cfgs, "unlocked": unlock, "set": SETTINGS, "parity": [], "capture": [],
		"bench": [], "codes": [], "bench_paths": []}
	sel = cases()
	cap = CAPTURE
	if opt.cases:
		want = opt.cases.split(",")
		sel = [c for c in sel if c[0] in want]
		cap = [c for c in CAPTURE if c[0] in want]
	case_cfgs = lambda sel_: [c for c in cfgs if sel_ == "all" or short(c) == sel_]
	bcfgs = [c for c in cfgs if opt.bench_configs == "all" or short(c) in opt.bench_configs.split(",")]
	O = load_module(opt.old_module, "tl_mla_old") if opt.old_module and not opt.only_parity else None

	def shape_of(kw, scale):
		return types.SimpleNamespace(batch=kw["batch"], s_q=kw["s_q"], h_q=kw["h_q"],
			page_size=kw["page_size"], kv_dtype=kw["kv_dtype"], softmax_scale=scale,
			kv_scale=FP8_SCALE if kw["kv_dtype"] != "bf16" else 1.0, num_pages=1, max_pages=1)

	# ---- precompile in parallel, in the order the checks use them: parity, capture, bench
	jobs = []
	if not opt.only_bench:
		for name, kw0, csel in sel:
			with variant(M, kw0) as kw:
				sh = shape_of(kw, SCALE)
				if M.supports(sh):
					continue
				for c in case_cfgs(csel):
					jobs.append(("ours", opt.module, M._key(sh, c)))
		for name, kw, _ in cap:
			sh = shape_of(kw, SCALE)
			if not M.supports(sh):
				for c in cfgs:
					jobs.append(("ours", opt.module, M._key(sh, c)))
	if not opt.only_bench and not opt.no_codes:
		for name, ps, h_q, s_q, var in CODES:
			with variant(M, {"_var": var}):
				sh = types.SimpleNamespace(batch=1, s_q=s_q, h_q=h_q, page_size=ps,
					kv_dtype="fp8_e4m3_fnuz", softmax_scale=SCALE, kv_scale=FP8_SCALE, num_pages=1,
					max_pages=1)
				if not M.supports(sh):
					for c in cfgs:
						jobs.append(("ours", opt.module, M._key(sh, c)))
	bvars = []  # (label, switches) of the --bench-variants
	for vs in [x for x in opt.bench_variants.split(";") if x.strip()]:
		var = {}
		for kv in vs.split(","):
			k, v = kv.split("=", 1)
			var[k.strip()] = ast.literal_eval(v.strip())
		bvars.append(("ours[%s]" % ",".join("%s=%s" % kv for kv in var.items()), var))
	bjobs = []
	if opt.bench_paths and not opt.only_parity:
		n0 = len(jobs)
		for kvd, h_q, b, n, ps, s_q in PATH_BENCH:
			sh = types.SimpleNamespace(batch=b, s_q=s_q, h_q=h_q, page_size=ps, kv_dtype=kvd,
				softmax_scale=SCALE, kv_scale=FP8_SCALE if kvd != "bf16" else 1.0, num_pages=1,
				max_pages=1)
			for c in bcfgs:
				jobs.append(("ours", opt.module, M._key(sh, c)))
				for _, var in bvars:
					with variant(M, {"_var": var}):
						jobs.append(("ours", opt.module, M._key(sh, c)))
				if O is not None:
					jobs.append(("old", opt.old_module, O._key(sh, c)))
		bjobs = jobs[n0:]
	if not opt.only_parity and not opt.no_headline:
		bsh = [types.SimpleNamespace(batch=b, s_q=1, h_q=h_q, page_size=64, kv_dtype="bf16",
			softmax_scale=576 ** -0.5, kv_scale=1.0, num_pages=1, max_pages=1) for h_q, b, n in HEADLINE]
		for sh in bsh:
			for c in bcfgs:
				jobs.append(("ours", opt.module, M._key(sh, c)))
		for h_q, b, n in HEADLINE:
			jobs.append(("example", opt.example,
				(b, h_q, 1, n, 512, 64, 64, min(64, h_q), 1, 64, 576 ** -0.5)))
		if O is not None:
			for sh in bsh:
				for c in bcfgs:
					jobs.append(("old", opt.old_module, O._key(sh, c)))
	if opt.bench_first:
		jobs = [j for j in jobs if j in bjobs] + [j for j in jobs if j not in bjobs]
	pc = Precompile(jobs, opt.jobs, T_START + opt.compile_budget)
	print("%s precompiling %d kernels with %d processes (compile deadline %ds)" % (stamp(),
		len(pc.futs), opt.jobs, opt.compile_budget), flush=True)

	stream = torch.cuda.Stream()

	# ---- benchmark: ours against the old module on the paths past the example, same tasks
	def bench_paths():
		"""The old-vs-new benchmark (--bench-paths)."""
		import triton.testing as tt
		print("%s bench-paths (do_bench, L2 flush, median ms; equal lengths, random page "
			"permutation; module switches: %s)" % (stamp(), {k: getattr(M, k, None) for k in
			("FP8_DECODE", "GATHER_PREFETCH", "FP8_BULK", "Q_FENCE_ONCE")}), flush=True)
		print("%-34s %-30s %9s %8s %7s" % ("shape", "impl", "ms", "TFLOPS", "TB/s"), flush=True)
		for kvd, h_q, b, n, ps, s_q in PATH_BENCH:
			shape = "%s_h%d_sq%d_b%d_%dk_p%d" % ("fp8" if kvd != "bf16" else kvd, h_q, s_q, b,
				n // 1024, ps)
			if late():
				print("%s %-34s SKIPPED: past the deadline" % (stamp(), shape), flush=True)
				continue
			try:
				t = bench_task(torch, dev, kvd, h_q, b, n, ps, s_q)
			except Exception as e:
				print("%-34s task ERROR %s: %s" % (shape, type(e).__name__, str(e)[-300:]), flush=True)
				continue
			if kvd != "bf16":
				t._sigma = 1.0  # codes uniform over the whole range: the N(0,1) tolerance
			flops = 2 * s_q * h_q * b * n * 1088
			byts = b * n * 576 * (1 if kvd != "bf16" else 2) + t.q.numel() * 2 + t.out.numel() * 2
			NB = 2
			ref = reference(torch, t, NB)
			t.stream = torch.cuda.ExternalStream(stream.cuda_stream)
			row = {"shape": shape}
			impls = [("ours", M, c, {}, "ours") for c in bcfgs]
			impls += [("ours", M, c, var, lab) for c in bcfgs for lab, var in bvars]
			impls += [("old", O, c, {}, "old") for c in bcfgs] if O else []
			for kind, K, c, var, lab in impls:
				with variant(K, {"_var": var}):
					label = "%s %s" % (lab, c["name"])
					skip = pc.wait(kind, K._key(t, c))
					if skip or late():
						print("%-34s %-30s SKIPPED: %s" % (shape, label, skip or "deadline"), flush=True)
						continue
					try:
						ms, _, ro, rl = checked_bench(torch, tt, K, t, c, ref, NB, stream)
						okp = ro["ok"] and rl["ok"]
						print("%-34s %-30s %9.4f %8.1f %7.2f%s" % (shape, label, ms, flops / ms / 1e9,
							byts / ms / 1e9, "" if okp else " PARITY FAIL: %s | %s" % (ro.get("why", "ok"),
							rl.get("why", "ok"))), flush=True)
						row[label] = {"ms": ms, "parity": okp}
					except Exception as e:
						print("%-34s %s ERROR %s: %s" % (shape, label, type(e).__name__, str(e)[-400:]),
							flush=True)
			for c in bcfgs:
				o = row.get("old %s" % c["name"])
				for lab in ["ours"] + [lab for lab, _ in bvars]:
					a = row.get("%s %s" % (lab, c["name"]))
					if a and o:
						print("%-34s %s: %s/old time %.3f%s" % (shape, c["name"], "new" if lab ==
							"ours" else lab, a["ms"] / o["ms"], "" if a["parity"] and o["parity"] else
							" (a parity failure above)"), flush=True)
			log["bench_paths"].append(row)
			del t
			torch.cuda.empty_cache()

	if opt.bench_paths and opt.bench_first and not opt.only_parity:
		bench_paths()

	# ---- parity
	if not opt.only_bench:
		nfail = 0
		for ci, (name, kw0, csel) in enumerate(sel):
			with variant(M, kw0) as kw:
				if late():
					print("%s %-20s SKIPPED: past the deadline" % (stamp(), name), flush=True)
					log["parity"].append({"case": name, "skipped": "deadline"})
					continue
				t = make_task(torch, dev, seed=ci + 1, **kw)
				why = M.supports(t)
				if why:
					print("%s %-20s REFUSED: %s" % (stamp(), name, why), flush=True)
					log["parity"].append({"case": name, "refused": why})
					continue
				ref = reference(torch, t)
				line = []
				for c in case_cfgs(csel):
					skip = pc.wait("ours", M._key(t, c))
					if skip or late():
						skip = skip or "deadline"
						line.append("%s SKIP" % short(c))
						log["parity"].append({"case": name, "config": c["name"], "skipped": skip})
						continue
					try:
						ro, rl, det, same = check_case(torch, M, t, c, stream, ref)
						ok = ro["ok"] and rl["ok"] and det and same
						rec = {"case": name, "config": c["name"], "ok": ok, "out": ro, "lse": rl,
							"deterministic": det, "inputs_unchanged": same}
						if ok:
							line.append("%s ok(%.1e,%.1e)" % (short(c), ro["max_abs"], rl["max_abs"]))
						else:
							nfail += 1
							line.append("%s FAIL" % short(c))
							print("  FAIL %s %s: out %s | lse %s | det %s | inputs %s" % (name,
								c["name"], ro.get("why", "ok"), rl.get("why", "ok"), det, same),
								flush=True)
					except Exception as e:
						nfail += 1
						rec = {"case": name, "config": c["name"], "ok": False,
							"error": "%s: %s" % (type(e).__name__, str(e)[-600:])}
						line.append("%s ERROR" % short(c))
						print("  ERROR %s %s: %s" % (name, c["name"], rec["error"]), flush=True)
					log["parity"].append(rec)
				print("%s %-20s %s" % (stamp(), name, " ".join(line)), flush=True)
		print("%s parity: %d failures" % (stamp(), nfail), flush=True)

		# ---- fp8 decode, code by code (CODES)
		nbad = 0
		for ci, (name, ps, h_q, s_q, var) in enumerate([] if opt.no_codes else CODES):
			with variant(M, {"_var": var}):
				if late():
					print("%s %-22s SKIPPED: past the deadline" % (stamp(), name), flush=True)
					continue
				t = codes_task(torch, dev, ps, h_q, s_q, seed=300 + ci)
				why = M.supports(t)
				if why:
					print("%s %-22s REFUSED: %s" % (stamp(), name, why), flush=True)
					continue
				line = []
				for c in cfgs:
					skip = pc.wait("ours", M._key(t, c))
					if skip or late():
						line.append("%s SKIP" % short(c))
						continue
					try:
						bad = check_codes(torch, M, t, c, stream)
					except Exception as e:
						bad = "%s: %s" % (type(e).__name__, str(e)[-400:])
					log["codes"].append({"case": name, "config": c["name"], "ok": bad is None,
						"why": bad})
					if bad:
						nbad += 1
						line.append("%s FAIL" % short(c))
						print("  FAIL %s %s: %s" % (name, c["name"], bad[:1500]), flush=True)
					else:
						line.append("%s ok" % short(c))
				print("%s %-22s %s" % (stamp(), name, " ".join(line)), flush=True)
				del t
		print("%s codes: %d failures" % (stamp(), nbad), flush=True)

		# ---- capture: capture, replay, change seqlens/block_table in place, replay, check
		for cname, kw, lens2 in cap:
			for c in cfgs:
				tag = "%s %s" % (cname, c["name"])
				if late():
					print("%s capture %s SKIPPED: past the deadline" % (stamp(), tag), flush=True)
					continue
				try:
					t = make_task(torch, dev, seed=101, max_pages=40, num_pages=120, **kw)
					why = M.supports(t)
					if why:
						print("%s capture %s REFUSED: %s" % (stamp(), tag, why), flush=True)
						continue
					skip = pc.wait("ours", M._key(t, c))
					if skip:
						print("%s capture %s SKIPPED: %s" % (stamp(), tag, skip), flush=True)
						continue
					ref = reference(torch, t)
					ws = M.workspace_size(t, c)
					t.workspace = torch.full((ws,), 0xFF, dtype=torch.uint8, device=dev) if ws else None
					t.stream = torch.cuda.ExternalStream(stream.cuda_stream)
					with torch.cuda.stream(t.stream):
						M.prepare(t, c)
						M.launch(t, c)
					torch.cuda.synchronize()
					g = torch.cuda.CUDAGraph()
					with torch.cuda.graph(g, stream=stream):
						with torch.cuda.stream(t.stream):
							M.launch(t, c)
					t.out.fill_(float("nan"))
					t.lse.fill_(float("nan"))
					g.replay()
					torch.cuda.synchronize()
					a1 = compare(torch, t.out.float(), ref[0], *out_tol(t))["ok"] and \
						compare(torch, t.lse, ref[1], *TOL["lse"])["ok"]
					# new lengths and pages, same buffers
					t2 = make_task(torch, dev, seed=202, max_pages=40, num_pages=120,
						**dict(kw, lens=lens2))
					assert t2.kv_cache.shape == t.kv_cache.shape, (t2.kv_cache.shape, t.kv_cache.shape)
					t.kv_cache.copy_(t2.kv_cache)
					t.block_table.copy_(t2.block_table)
					t.seqlens.copy_(t2.seqlens)
					t2.q = t.q
					t2.kv_cache, t2.block_table, t2.seqlens = t.kv_cache, t.block_table, t.seqlens
					ref2 = reference(torch, t2)
					t.out.fill_(float("nan"))
					t.lse.fill_(float("nan"))
					g.replay()
					torch.cuda.synchronize()
					a2 = compare(torch, t.out.float(), ref2[0], *out_tol(t))["ok"] and \
						compare(torch, t.lse, ref2[1], *TOL["lse"])["ok"]
					print("%s capture %s: replay %s, after in-place change %s" % (stamp(), tag,
						"ok" if a1 else "FAIL", "ok" if a2 else "FAIL"), flush=True)
					log["capture"].append({"case": cname, "config": c["name"], "replay": a1,
						"changed": a2})
				except Exception as e:
					print("%s capture %s ERROR %s: %s" % (stamp(), tag, type(e).__name__,
						str(e)[-600:]), flush=True)
					log["capture"].append({"case": cname, "config": c["name"], "error": str(e)[-600:]})

	if opt.bench_paths and not opt.bench_first and not opt.only_parity:
		bench_paths()

	# ---- benchmark: ours (and the old module) vs TileLang's published paged example
	if not opt.only_parity and not opt.no_headline:
		import triton.testing as tt
		E = load_module(opt.example, "tl_example")
		print("%s bench (do_bench, L2 flush, median ms; bf16 page 64 s_q 1 equal lengths, random "
			"page permutation)" % stamp(), flush=True)
		print("%-18s %-30s %9s %8s %7s" % ("shape", "impl", "ms", "TFLOPS", "TB/s"), flush=True)
		for h_q, b, n in HEADLINE:
			shape = "h%d_b%d_%dk" % (h_q, b, n // 1024)
			if late():
				print("%s %-18s SKIPPED: past the deadline" % (stamp(), shape), flush=True)
				continue
			lens = [n] * b
			kw = dict(batch=b, s_q=1, h_q=h_q, lens=lens, page_size=64, kv_dtype="bf16")
			t = make_task(torch, dev, seed=7, spare_pages=0, max_pages=n // 64, **kw)
			t.softmax_scale = 576 ** -0.5
			flops = 2 * 1 * h_q * sum(lens) * 1088
			byts = sum(lens) * 576 * 2 + t.q.numel() * 2 + t.out.numel() * 2
			row = {"shape": shape}
			NB = 4  # parity of the benchmark runs on the first sequences (float64 is slow)
			ref = reference(torch, t, NB)
			t.stream = torch.cuda.ExternalStream(stream.cuda_stream)
			impls = [("ours", M, c) for c in bcfgs] + ([("old", O, c) for c in bcfgs] if O else [])
			for kind, K, c in impls:
				label = "%s %s" % (kind, c["name"])
				skip = pc.wait(kind, K._key(t, c))
				if skip or late():
					print("%-18s %-30s SKIPPED: %s" % (shape, label, skip or "deadline"), flush=True)
					continue
				try:
					ms, ms_g, ro, rl = checked_bench(torch, tt, K, t, c, ref, NB, stream,
						graph=kind == "ours")
					okp = ro["ok"] and rl["ok"]
					print("%-18s %-30s %9.4f %8.1f %7.2f%s%s" % (shape, label, ms, flops / ms / 1e9,
						byts / ms / 1e9, "" if okp else " PARITY FAIL",
						"  (graph replay %.4f ms)" % ms_g if ms_g else ""), flush=True)
					row[label] = {"ms": ms, "ms_graph": ms_g, "parity": okp}
				except Exception as e:
					print("%-18s %s ERROR %s" % (shape, label, str(e)[-400:]), flush=True)
			# TileLang's example, as published (its own input layout: split nope / rope tensors)
			ekey = (b, h_q, 1, n, 512, 64, 64, min(64, h_q), 1, 64, 576 ** -0.5)
			skip = pc.wait("example", ekey)
			if skip or late():
				print("%-18s %-30s SKIPPED: %s" % (shape, "tilelang example", skip or "deadline"),
					flush=True)
			else:
				try:
					kern = E.mla_decode_tilelang(*ekey)
					kvf = t.kv_cache.view(-1, 576)
					npg = b * n // 64
					assert t.num_pages == npg, (t.num_pages, npg)
					qn = t.q[:, 0, :, :512].contiguous()
					qp = t.q[:, 0, :, 512:].contiguous()
					kn = kvf[:, :512].contiguous().view(-1, 1, 512)
					kp = kvf[:, 512:].contiguous().view(-1, 1, 64)
					glse = torch.empty(b, h_q, 1, dtype=torch.bfloat16, device=dev)
					opart = torch.empty(b, h_q, 1, 512, dtype=torch.bfloat16, device=dev)
					fn = lambda: kern(qn, qp, kn, kp, t.block_table, t.seqlens, glse, opart)
					with torch.cuda.stream(stream):
						o = fn()
						torch.cuda.synchronize()
					eo = compare(torch, o[:NB].float().view(NB, 1, h_q, 512), ref[0], *out_tol(t))
					ms, _ = bench_one(torch, tt, fn, stream)
					print("%-18s %-30s %9.4f %8.1f %7.2f  (example out vs ref: %s)" % (shape,
						"tilelang example", ms, flops / ms / 1e9, byts / ms / 1e9,
						"ok" if eo["ok"] else eo.get("why")), flush=True)
					row["example"] = {"ms": ms, "parity": eo["ok"]}
				except Exception as e:
					print("%-18s example ERROR %s: %s" % (shape, type(e).__name__, str(e)[-600:]),
						flush=True)
			for kind in ("ours", "old"):
				best = min((v["ms"] for k, v in row.items() if k.startswith(kind + " ")
					and v.get("parity")), default=None)
				if best and "example" in row:
					print("%-18s floor: best %s %.4f ms vs example %.4f ms: %s/example time %.3f "
						"(%s)" % (shape, kind, best, row["example"]["ms"], kind,
						best / row["example"]["ms"], "within 5%" if best <= 1.05 * row["example"]["ms"]
						else "NOT within 5%"), flush=True)
			log["bench"].append(row)
			del t
			torch.cuda.empty_cache()
	print("%s total" % stamp(), flush=True)
	if opt.log:
		os.makedirs(opt.log, exist_ok=True)
		with open(os.path.join(opt.log, "tilelang_check.json"), "w") as f:
			json.dump(log, f, indent=1, default=str)
	pc.close()
	sys.stdout.flush()
	os._exit(0)  # the killed compile workers must not hold the exit


if __name__ == "__main__":
	main()
