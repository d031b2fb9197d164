#!/usr/bin/env python3
"""workload_groups.py EVAL_DIR - a workload run's tasks grouped by concurrency, as the markdown table
rows of BENCHMARKS.md (2026-12-06): keys per step (min-max of the tasks' total keys), per kv dtype
the group's workload speedup sum(w x t_base) / sum(w x t_cand) over its tasks' medians, the e2e
stage's e2e_pct and the attention's share of the model step (min-max over the group's timed e2e
tasks), the share of the baseline's weighted workload time that lies in the group, and the first
timed reference's t_ref / t_cand (min-max of the medians' ratio); then each side's setup_ms
summed over the run's tasks.

Reads the eval dir's plan.json (each task's workload weight and concurrency) and result.json (the
medians validate_skill --run measured). The speedups with CIs, per concurrency and per kv dtype,
are validate_skill's own (result.json overall.workload, --report); this prints the ratios of sums
of medians the tool has no field for, nothing else.
"""
import collections
import json
import os
import sys


def span(xs, fmt):
    return (fmt % min(xs) + ".." + fmt % max(xs)) if xs else "-"


def main(d):
    r = json.load(open(os.path.join(d, "result.json")))
    p = json.load(open(os.path.join(d, "plan.json")))
    spec = {t["spec"]["name"]: t for t in p["tasks"]}
    dtypes = []
    base = collections.Counter()
    cand = collections.Counter()
    group = collections.defaultdict(lambda: {"keys": [], "e2e": [], "share": [], "ref": []})
    total = 0.0
    for t in r["tasks"]:
        s = spec[t["name"]]
        c, w, dt = s["workload"]["concurrency"], s["workload"]["weight"], s["spec"]["kv_dtype"]
        if dt not in dtypes:
            dtypes.append(dt)
        tb, tc = t["baseline"]["timing"]["median_ms"], t["candidate"]["timing"]["median_ms"]
        base[(c, dt)] += w * tb
        cand[(c, dt)] += w * tc
        total += w * tb
        g = group[c]
        g["keys"].append(sum(s["spec"]["seqlens"]))
        e = t.get("e2e") or {}
        if e.get("status") == "timed":
            g["e2e"].append(e["e2e_pct"]["estimate"])
            g["share"].append(100 * e["baseline"]["attention_share"])
        refs = [x for x in t.get("references") or [] if x.get("status") == "timed"]
        if refs:
            g["ref"].append(refs[0]["timing"]["median_ms"] / tc)
    print("| concurrency | keys per step | " + " | ".join(dt + " speedup" for dt in dtypes) +
          " | e2e_pct | attention share of the step (%) | baseline's time share | t_ref / t_cand |")
    print("|---" * (6 + len(dtypes)) + "|")
    for c in sorted(group):
        g = group[c]
        sp = [("%.3f" % (base[(c, dt)] / cand[(c, dt)])) if cand[(c, dt)] else "-" for dt in dtypes]
        share = sum(base[(c, dt)] for dt in dtypes) / total
        print("| %d | %s | %s | %s | %s | %.1f%% | %s |" % (
            c, span(g["keys"], "%d"), " | ".join(sp), span(g["e2e"], "%+.1f"), span(g["share"], "%.0f"),
            100 * share, span(g["ref"], "%.2f")))
    print("\nsetup (setup_ms summed over %d tasks): baseline %s %.1f s, candidate %s %.2f s" % (
        len(r["tasks"]), r["baseline"], sum(t["baseline"]["setup_ms"] for t in r["tasks"]) / 1e3,
        r["candidate"], sum(t["candidate"]["setup_ms"] for t in r["tasks"]) / 1e3))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: workload_groups.py EVAL_DIR")
    main(sys.argv[1])
