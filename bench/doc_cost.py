#!/usr/bin/env python3
"""What documents cost a meeting (bench/RESULTS.md#documents-only-some-participants-read-issue-56):
prompt characters per meeting — system and messages as sent, from the run folder's llm.jsonl —
for one 10 KB and one 100 KB document (generated numbered lines) in the same meeting of the
`sample` provider (its routing: 6 PM calls, 3 calls each of arch and biz), at
`--max-context-chars 64000` (the budget gpt-4o-mini's window gives), in each way the meeting
can read them, against one call given all of it (the PM's first prompt with a budget that holds
the whole document). No model, no network: byte-stable.

Usage: python3 bench/doc_cost.py [--bin target/release]   (a Markdown table on stdout)
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUDGET = 64000


def lines(n_chars, tag):
    out, i = [], 0
    while sum(len(x) for x in out) < n_chars:
        i += 1
        out.append(f"{tag} line {i:05d}: a measured fact about the ingest service, kept for the record.\n")
    return "".join(out)[:n_chars]


def meeting(bin_dir, work, docs, extra, trace, budget=BUDGET):
    cmd = [os.path.join(bin_dir, "meeting"), "--provider", "sample", "-a", "arch,biz", "-q",
           "--trace-id", trace, "--run-dir", os.path.join(work, "runs"), "--report-file",
           os.path.join(work, trace + ".md"), "--max-context-chars", str(budget)]
    for d in docs:
        cmd += ["--doc", d]
    cmd += extra + ["Adopt Rust for the ingest service?"]
    env = dict(os.environ, AGENT_MEETING_NOW="2026-12-07T00:00:00Z", NO_COLOR="1")
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 3):
        sys.exit(f"doc_cost.py: {' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    per = collections.Counter()
    first = None
    with open(os.path.join(work, "runs", trace, "llm.jsonl"), encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            n = len(e.get("system") or "") + sum(len(m.get("content") or "") for m in e["messages"])
            per[e["caller"]] += n
            first = n if first is None else first
    return per, first


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release"))
    args = ap.parse_args()
    bin_dir = os.path.abspath(args.bin)
    rows = []
    with tempfile.TemporaryDirectory(prefix="am-doc-cost-") as work:
        for size, name in ((10 * 1024, "10 KB"), (100 * 1024, "100 KB")):
            half = size // 2
            a, b = lines(half, "A"), lines(size - half, "B")
            for f, text in (("a.md", a), ("b.md", b), ("all.md", a + b)):
                with open(os.path.join(work, f), "w", encoding="utf-8") as out:
                    out.write(text)
            # One call given all of it: the PM's first prompt where the budget holds it whole.
            _, one = meeting(bin_dir, work, ["all.md"],
                             ["--share-docs"], f"one-{size}", budget=2 * size)
            ways = [
                ("everyone reads it (`--doc all.md --share-docs`)", ["all.md"], ["--share-docs"]),
                ("each reads a half (`--doc a.md:arch --doc b.md:biz`)", ["a.md:arch", "b.md:biz"], []),
                ("the meeting divides two files (`--doc a.md --doc b.md`)", ["a.md", "b.md"], []),
                ("the meeting divides one file (`--doc all.md`, the default)", ["all.md"], []),
            ]
            for i, (label, docs, extra) in enumerate(ways):
                per, _ = meeting(bin_dir, work, docs, extra, f"m{i}-{size}")
                total = sum(per.values())
                rows.append((name, label, per["pm"], per["arch"], per["biz"], total, total / one))
            rows.append((name, "one call given all of it (the PM's first prompt)", "", "", "", one, 1.0))
    print(f"| Document | Meeting | PM calls | arch calls | biz calls | Whole meeting | × one call |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        cells = [r[0], r[1]] + [f"{x:,}" if isinstance(x, int) else x for x in r[2:6]] + [f"{r[6]:.1f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
