#!/usr/bin/env python3
"""eval_table.py EVAL_DIR... - print an eval dir's per-task numbers as a markdown table (BENCHMARKS.md).

Reads result.json only (the numbers validate_skill --run measured); no number is computed here but
the per-implementation GB/s and TFLOPS, which result.json already holds.
"""
import json
import sys


def main(dirs):
    for d in dirs:
        with open(f"{d}/result.json") as f:
            r = json.load(f)
        dev = r["device"]
        print(f"Eval dir `{d}`: {dev['name']} ({dev['gen']}, {dev['driver']}), {r['baseline']} vs "
              f"{r['candidate']}, plan `{r['plan']['path']}` (tier {r['plan']['tier']}), finished "
              f"{r['finished']}, kernels tree {r['tool']['kernels_tree'][:12]}"
              f"{' (dirty)' if r['tool']['kernels_dirty'] else ''}, verdict **{r['verdict']}**.\n")
        print("| task | baseline config | baseline ms (p10-p90) | base GB/s | base TFLOPS | candidate config "
              "| candidate ms (p10-p90) | cand. GB/s | cand. TFLOPS | speedup [95% CI] | pairs | parity |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for t in r["tasks"]:
            b, c = t["baseline"], t["candidate"]
            if not t.get("complete"):
                print(f"| {t['name']} | | | | | | | | | not timed: {t.get('error', 'no passing config')} | | "
                      f"{t['parity']} |")
                continue
            bt, ct, s = b["timing"], c["timing"], t["speedup"]
            print(f"| {t['name']} | {b['chosen']} | {bt['median_ms']:.4f} ({bt['p10_ms']:.4f}-{bt['p90_ms']:.4f}) "
                  f"| {bt['gbps']:.4g} | {bt['tflops']:.4g} | {c['chosen']} | {ct['median_ms']:.4f} ({ct['p10_ms']:.4f}-{ct['p90_ms']:.4f}) "
                  f"| {ct['gbps']:.4g} | {ct['tflops']:.4g} | {s['estimate']:.3f} [{s['ci95'][0]:.3f}, "
                  f"{s['ci95'][1]:.3f}] | {t['pairs']} | {t['parity']} |")
        ov = r["overall"]["isolated"]
        if ov:
            print(f"\nOverall isolated speedup (geometric mean over {r['overall']['tasks_timed']} tasks): "
                  f"**{ov['estimate']:.3f}** [{ov['ci95'][0]:.3f}, {ov['ci95'][1]:.3f}]; gates: "
                  + ", ".join(f"{k} {'pass' if v['pass'] else 'FAIL'}" for k, v in r["gates"].items()))
        for fl in r.get("flags", []):
            print(f"- flagged: {fl}")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
