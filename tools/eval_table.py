#!/usr/bin/env python3
"""eval_table.py [--side-by-side] EVAL_DIR... - print an eval dir's per-task numbers as markdown
tables (BENCHMARKS.md).
eval_table.py --compare IMPL OLD_EVAL_DIR NEW_EVAL_DIR - one implementation's median per task in two
runs of the same card (the ratio new / old), beside every implementation's median in the new one.

Reads result.json only (the numbers validate_skill --run measured); nothing is computed here, the
per-implementation GB/s, TFLOPS and the paired ratios included: result.json holds them. The default
table is the A/B (baseline against candidate) plus the references' ratios; --side-by-side prints
one row per task and implementation (baseline, candidate, references) from the same run.
"""
import json
import sys


def side_by_side(d, r):
    print(f"Eval dir `{d}` ({r['device']['name']}, finished {r['finished']}, kernels tree "
          f"{r['tool']['kernels_tree'][:12]}): every implementation of the run, median of the paired "
          f"samples; ratio = t(impl) / t({r['candidate']}) per task, paired, with its 95% CI.\n")
    print("| task | implementation | role | config | ms (p10-p90) | GB/s | TFLOPS | t / t(candidate) [95% CI] |")
    print("|---|---|---|---|---|---|---|---|")
    for t in r["tasks"]:
        rows = [(r["baseline"], "baseline", t["baseline"], t.get("speedup")),
                (r["candidate"], "candidate", t["candidate"], None)]
        rows += [(x["impl"], "reference", x, x.get("ratio")) for x in t.get("references", [])]
        for name, role, side, ratio in rows:
            tm = side.get("timing") if side else None
            if not tm:
                why = (side or {}).get("status") or t.get("error") or "not timed"
                print(f"| {t['name']} | {name} | {role} | | {why} | | | |")
                continue
            rs = "1" if role == "candidate" else (
                f"{ratio['estimate']:.3f} [{ratio['ci95'][0]:.3f}, {ratio['ci95'][1]:.3f}]" if ratio else "")
            print(f"| {t['name']} | {name} | {role} | {side.get('chosen', '')} | {tm['median_ms']:.4f} "
                  f"({tm['p10_ms']:.4f}-{tm['p90_ms']:.4f}) | {tm['gbps']:.4g} | {tm['tflops']:.4g} | {rs} |")
    print()


def medians(r):
    """{(task, implementation): median ms of its timed pairs} from a result.json."""
    out = {}
    for t in r["tasks"]:
        for side in [t["baseline"], t["candidate"]] + t.get("references", []):
            if side and side.get("timing"):
                out[(t["name"], side["impl"])] = side["timing"]["median_ms"]
    return out


def compare(impl, old_dir, new_dir):
    with open(f"{old_dir}/result.json") as f:
        old = medians(json.load(f))
    with open(f"{new_dir}/result.json") as f:
        r = json.load(f)
    new = medians(r)
    others = sorted({i for (_, i) in new if i != impl})
    print(f"| task | {impl} old | {impl} new | new / old | " + " | ".join(others) + " | fastest (new) |")
    print("|" + "---|" * (5 + len(others)))
    for t in r["tasks"]:
        n = t["name"]
        if (n, impl) not in new:
            continue
        o = old.get((n, impl))
        row = [n, f"{o:.4f}" if o else "-", f"{new[(n, impl)]:.4f}", f"{new[(n, impl)] / o:.3f}" if o else "-"]
        row += [f"{new[(n, i)]:.4f}" if (n, i) in new else "-" for i in others]
        row.append(min((v, i) for (m, i), v in new.items() if m == n)[1])
        print("| " + " | ".join(row) + " |")


def main(dirs):
    if dirs[:1] == ["--compare"]:
        if len(dirs) != 4:
            sys.exit("usage: eval_table.py --compare IMPL OLD_EVAL_DIR NEW_EVAL_DIR")
        compare(*dirs[1:])
        return
    sbs = "--side-by-side" in dirs
    dirs = [d for d in dirs if d != "--side-by-side"]
    for d in dirs:
        if sbs:
            with open(f"{d}/result.json") as f:
                side_by_side(d, json.load(f))
            continue
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
