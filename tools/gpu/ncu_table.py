#!/usr/bin/env python3
"""ncu_table.py NCU_TXT... - one markdown table per file of Nsight Compute's text output over
tools/gpu/triton_ncu.py: per config, the report of its second launch (launch()'s; the first is
prepare()'s), paired with the "launched CONFIG" lines in order. Columns: ncu's Duration (at ncu's
locked SM clock, so longer than a timed run), Compute (SM) and DRAM Throughput (% of peak), L2 hit
rate, issued IPC, eligible warps per scheduler, cycles with no eligible warp (%), local-memory spill
requests, achieved occupancy, the most utilized pipeline and the top stall that ncu's rules name.
A file ending in .gz is read compressed (results/bench keeps them so)."""
import gzip
import re
import sys


def metric(text, label):
    m = re.search(r"^\s+" + re.escape(label) + r"\s+(?:\S+\s+)?([\d,\.]+)\s*$", text, re.M)
    return m.group(1).replace(",", "") if m else "-"


def rows(path):
    names, reports, cur = [], [], None
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        lines = f.read().splitlines()
    for ln in lines:
        m = re.match(r"^launched (\S+)", ln)
        if m:
            names.append(m.group(1))
        elif re.match(r"^  _mla_decode_kernel", ln):
            cur = []
            reports.append(cur)
        elif cur is not None:
            cur.append(ln)
    if len(reports) != 2 * len(names):
        raise SystemExit("%s: %d reports for %d configs (expected two each)" % (path, len(reports), len(names)))
    for i, name in enumerate(names):
        t = "\n".join(reports[2 * i + 1])
        flat = " ".join(t.split())
        pipe = re.search(r"(\w+) is the highest-utilized pipeline \(([\d\.]+)%\)", flat)
        stall = re.search(r"spends ([\d\.]+) cycles being stalled (.*?)\.", flat)
        yield (name, metric(t, "Duration"), metric(t, "Compute (SM) Throughput"), metric(t, "DRAM Throughput"),
               metric(t, "L2 Hit Rate"), metric(t, "Issued Ipc Active"), metric(t, "Eligible Warps Per Scheduler"),
               metric(t, "No Eligible"), metric(t, "Local Memory Spilling Requests"), metric(t, "Achieved Occupancy"),
               "%s %s" % pipe.groups() if pipe else "-",
               "%s cycles %s" % (stall.group(1), stall.group(2)[:60]) if stall else "-")


def main():
    for path in sys.argv[1:]:
        print("%s\n" % path)
        print("| config | ms (ncu) | SM % | DRAM % | L2 hit % | IPC | eligible | no eligible % | spill req | occupancy % "
              "| top pipe % | top stall |")
        print("|" + "---|" * 12)
        for r in rows(path):
            print("| " + " | ".join(r) + " |")
        print()
    return 0 if len(sys.argv) > 1 else 2


if __name__ == "__main__":
    sys.exit(main())
