#!/usr/bin/env python3
"""What documents cost a meeting (bench/RESULTS.md#documents-only-some-participants-read-issue-56):
prompt characters per meeting — system and messages as sent, from the run folder's llm.jsonl —
for one 10 KB and one 100 KB document (generated numbered lines) in the same meeting of the
`sample` provider (its routing: 6 PM calls, 3 calls each of arch and biz), at
`--max-context-chars 64000` (the budget gpt-4o-mini's window gives), in each way the meeting
can read them, against one call given all of it (the PM's first prompt with a budget that holds
the whole document). Then the three ways the PM can read the documents everyone reads
(docs/design/context.md#what-the-pm-reads: `AGENT_MEETING_PM_READS`; the rows above use the
default, `first`), for those documents and
for the 22 cases of the quality bench (their meeting files, 4 loops, each case's agents).
No model, no network: byte-stable.

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


PM_WAYS = ("all", "index", "first")
CASES = os.path.join(ROOT, "bench", "quality", "cases")


def meeting(bin_dir, work, docs, extra, trace, budget=BUDGET, pm_reads="first",
            source=("Adopt Rust for the ingest service?",), agents="arch,biz"):
    cmd = [os.path.join(bin_dir, "meeting"), "--provider", "sample", "-a", agents, "-q",
           "--trace-id", trace, "--run-dir", os.path.join(work, "runs"), "--report-file",
           os.path.join(work, trace + ".md")]
    if budget:
        cmd += ["--max-context-chars", str(budget)]
    for d in docs:
        cmd += ["--doc", d]
    cmd += extra + list(source)
    env = dict(os.environ, AGENT_MEETING_NOW="2026-12-07T00:00:00Z", NO_COLOR="1",
               AGENT_MEETING_PM_READS=pm_reads)
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
            for way in ("all", "index"):
                per, _ = meeting(bin_dir, work, ["all.md"], ["--share-docs"], f"{way}-{size}",
                                 pm_reads=way)
                total = sum(per.values())
                rows.append((name, f"everyone reads it, the PM `{way}`", per["pm"], per["arch"],
                             per["biz"], total, total / one))
            rows.append((name, "one call given all of it (the PM's first prompt)", "", "", "", one, 1.0))
        cases = pm_ways_on_cases(bin_dir, work)
    print(f"| Document | Meeting | PM calls | arch calls | biz calls | Whole meeting | × one call |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        cells = [r[0], r[1]] + [f"{x:,}" if isinstance(x, int) else x for x in r[2:6]] + [f"{r[6]:.1f}"]
        print("| " + " | ".join(cells) + " |")
    print()
    print("| The 22 quality cases | PM calls | Participants' calls | Whole meetings | × the PM reading all |")
    print("|---|---:|---:|---:|---:|")
    base = sum(cases["all"])
    for way in PM_WAYS:
        pm, others = cases[way]
        print(f"| the PM `{way}` | {pm:,} | {others:,} | {pm + others:,} | {(pm + others) / base:.2f} |")


def pm_ways_on_cases(bin_dir, work):
    """Prompt characters of the PM and of the participants over the quality bench's cases, in
    each way the PM reads (the `sample` provider's routing, 4 loops, each case's agents)."""
    sys.path.insert(0, os.path.join(ROOT, "bench", "quality"))
    from run import agents_of  # noqa: E402 (the bench's own reading of a case's agents)
    out = {}
    for way in PM_WAYS:
        pm = others = 0
        for case in sorted(os.listdir(CASES)):
            mf = os.path.join(CASES, case, "meeting.yaml")
            per, _ = meeting(bin_dir, work, [], ["--max-loops", "4"], f"{way}-{case}", budget=None,
                             pm_reads=way, source=("--meeting-file", mf), agents=agents_of(mf))
            pm += per["pm"]
            others += sum(n for c, n in per.items() if c != "pm")
        out[way] = (pm, others)
    return out


if __name__ == "__main__":
    main()
