#!/usr/bin/env python3
"""The quality benchmark (bench/quality/README.md): does a meeting beat one call? Every case is
run in four modes over the same documents and graded by grade.py against the answer key the
meetings never read. Python 3 standard library only; the programs do every model call.

  single   one call: the PM's closing round on a board whose loop allowance is spent
           (collect-context | init-board | pm-step | render-report): one prompt over the same
           context summary, answered in the same PMDecision form as a meeting's decision
  sc       self-consistency: K independent single calls, majority vote over the chosen options
  meeting  `meeting` with the case's agents, --max-total-tokens BUDGET
  council  `meeting --council`, the same budget ("not available" when the programs lack it)
  ceiling  one call as `single`, over the case's ceiling.yaml: every fact shared (the
           distributed condition's cases, hiddenbench.py; "not available" elsewhere)

The token budget per case is a cap every mode gets: FACTOR (--budget-factor, default 16) times
the tokens of that case's single call, or --budget N. Self-consistency takes K samples (default
5, fewer when K single calls would not fit); the meeting and the council get it as
--max-total-tokens, which they spend with their own look-ahead (docs/design/pm-round.md#token-budget).
The table shows what each mode actually spent.

Usage: python3 bench/quality/run.py [--offline] [--cases c01,c07] [--provider P --model M]
       [--k 3] [--modes single,sc,meeting,council] [--record DIR] [--out FILE] [-- FLAG...]
(`make bench-quality`, `make bench-quality OFFLINE=1`). Flags after `--` go to every program
that calls a model (e.g. -- --max-tokens 400 --temperature 0.7). The Markdown table goes to
stdout, the results as JSON to --out, a progress line per case to stderr.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import grade  # noqa: E402

CASES_DIR = os.path.join(HERE, "cases")
CASSETTES = os.path.join(HERE, "cassettes")
MODES = ["single", "sc", "meeting", "council", "ceiling"]
DEFAULT_MODES = ["single", "sc", "meeting", "council"]
NOT_AVAILABLE = "not available"


def case_ids(selected):
    ids = sorted(d for d in os.listdir(CASES_DIR) if os.path.isdir(os.path.join(CASES_DIR, d)))
    if not selected:
        return ids
    want = [s.strip() for s in selected.split(",") if s.strip()]
    out = [i for i in ids if any(i == w or i.startswith(w + "-") or i.startswith(w) for w in want)]
    if not out:
        sys.exit(f"run.py: --cases {selected}: no case matches (cases: {', '.join(ids)})")
    return out


def agents_of(meeting_file):
    """The case's participants, from its first line (`... agents: arch,sre`)."""
    with open(meeting_file, encoding="utf-8") as f:
        m = re.search(r"agents:\s*([\w,-]+)", f.readline())
    return m.group(1) if m else "arch,biz"


class Runner:
    def __init__(self, args, work):
        self.args = args
        self.work = work
        self.bin = os.path.abspath(args.bin)
        # The agents of converted cases (hiddenbench.py), beside them.
        agents = os.path.join(args.cases_dir, "agents") if args.cases_dir else ""
        self.agents = ["--agents-dir", os.path.abspath(agents)] if agents and os.path.isdir(agents) else []
        self.rep = 1

    def dir_of(self, case, name):
        """A run's own folder (the repetition's number when --runs is above 1)."""
        return os.path.join(self.work, case if self.rep == 1 else f"{case}.run{self.rep}", name)

    def prog(self, name):
        return os.path.join(self.bin, name)

    def llm_flags(self, case, cassette_name, log):
        """The model flags of one run: replay from the shipped cassette offline, else the
        provider flags given, recording into the run's llm log (turned into a cassette by
        --record)."""
        flags = ["--llm-log", log]
        if self.args.offline:
            cassette = os.path.join(CASSETTES, case, cassette_name + ".jsonl")
            if not os.path.exists(cassette):
                return None
            return flags + ["--provider", "replay", "--cassette", cassette] + self.args.flags
        if self.args.provider:
            flags += ["--provider", self.args.provider]
        if self.args.model:
            flags += ["--model", self.args.model]
        return flags + self.args.flags

    def run(self, cmd, stdin=None, extra_env=None):
        env = dict(os.environ)
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "")
        env.update(extra_env or {})
        p = subprocess.run(cmd, input=stdin, capture_output=True, env=env, cwd=ROOT)
        return p.returncode, p.stdout, p.stderr.decode(errors="replace")

    def timed(self, fn, *a, **kw):
        """A run with its wall time (live runs only: offline the table stays byte-stable)."""
        t0 = time.monotonic()
        r = fn(*a, **kw)
        if not self.args.offline:
            r["wall_s"] = round(time.monotonic() - t0, 1)
        return r

    def single(self, case, name, file="meeting.yaml"):
        """One call: the PM's closing round over the case's context (see the module doc)."""
        mf = os.path.join(CASES_DIR, case, file)
        if not os.path.exists(mf):
            return {"error": NOT_AVAILABLE}
        d = self.dir_of(case, name)
        os.makedirs(d, exist_ok=True)
        log = os.path.join(d, "llm.jsonl")
        flags = self.llm_flags(case, name if name == "single" or not self.args.offline
                               else self._sc_cassette(case, name), log)
        if flags is None:
            return {"error": "no cassette"}
        rc, cc, err = self.run([self.prog("collect-context"), "--meeting-file", mf])
        if rc != 0:
            return {"error": f"collect-context exit {rc}: {err.strip()[-300:]}"}
        rc, board, err = self.run([self.prog("init-board"), "--agents", agents_of(mf),
                                   "--max-loops", "1", "--trace-id", f"{case}-{name}"] + self.agents,
                                  cc)
        if rc != 0:
            return {"error": f"init-board exit {rc}: {err.strip()[-300:]}"}
        b = json.loads(board)
        # The loop allowance spent before any turn: pm-step's next round is the closing round.
        b["loop_count"] = b["max_loops"]
        rc, out, err = self.run([self.prog("pm-step")] + flags, json.dumps(b).encode())
        if rc != 0:
            return {"error": f"pm-step exit {rc}: {err.strip()[-300:]}", "log": log}
        rc, rep, err = self.run([self.prog("render-report"), "--report-file",
                                 os.path.join(d, "report.md")], out)
        if rc != 0:
            return {"error": f"render-report exit {rc}: {err.strip()[-300:]}", "log": log}
        r = json.loads(rep)
        return {"board": r["board"], "markdown": r.get("markdown", ""), "kind": r.get("kind"),
                "log": log}

    def _sc_cassette(self, case, name):
        # Offline, a self-consistency sample replays its own cassette when one was recorded,
        # else the single call's (the sample provider answers the same prompt the same way).
        own = os.path.join(CASSETTES, case, name + ".jsonl")
        return name if os.path.exists(own) else "single"

    def meeting(self, case, name, budget, council=False):
        mf = os.path.join(CASES_DIR, case, "meeting.yaml")
        d = self.dir_of(case, name)
        os.makedirs(d, exist_ok=True)
        log = os.path.join(d, "llm.jsonl")
        flags = self.llm_flags(case, name, log)
        if flags is None:
            return {"error": "no cassette"}
        cmd = [self.prog("meeting"), "--meeting-file", mf, "--agents", agents_of(mf),
               "--max-loops", str(self.args.max_loops), "--max-parallel", str(self.args.max_parallel),
               "--max-total-tokens", str(budget),
               "--trace-id", f"{case}-{name}", "--run-dir", os.path.join(d, "runs"),
               "--report-file", os.path.join(d, "report.md"), "--quiet"] + self.agents + flags
        if council:
            cmd.append("--council")
        # How the meeting's PM reads the shared documents (docs/design/context.md#what-the-pm-reads);
        # the one calls read them whole whatever it is.
        rc, out, err = self.run(cmd, extra_env={"AGENT_MEETING_PM_READS": self.args.pm_reads})
        if rc not in (0, 3):
            return {"error": f"meeting exit {rc}: {err.strip()[-300:]}", "log": log}
        run_dir = os.path.join(d, "runs", f"{case}-{name}")
        reports = sorted(f for f in os.listdir(run_dir) if f.endswith("render-report.out.json"))
        if not reports:
            return {"error": "meeting left no report", "log": log}
        with open(os.path.join(run_dir, reports[-1]), encoding="utf-8") as f:
            r = json.load(f)
        return {"board": r["board"], "markdown": r.get("markdown", ""), "kind": r.get("kind"),
                "log": log}


def cost_of(markdown):
    """The report's priced cost in USD (its `$0.0123` phrase), or None when unpriced."""
    for line in (markdown or "").splitlines():
        if "cost" in line.lower():
            m = re.search(r"\$([0-9]+(?:\.[0-9]+)?)", line)
            if m:
                return float(m.group(1))
    return None


def to_cassette(log, dest):
    """A run's llm log as a cassette (seq, caller, response, usage): what --record keeps."""
    if not log or not os.path.exists(log):
        return
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(log, encoding="utf-8") as f, open(dest, "w", encoding="utf-8") as out:
        for line in f:
            e = json.loads(line)
            if e.get("error"):
                continue
            u = e.get("usage") or {}
            c = {"seq": e["seq"], "caller": e["caller"], "response": e.get("response") or ""}
            if u:
                c["usage"] = {"prompt_tokens": u.get("prompt_tokens", 0),
                              "completion_tokens": u.get("completion_tokens", 0)}
            c["note"] = f"recorded by bench/quality/run.py --record ({e.get('provider')})"
            out.write(json.dumps(c, ensure_ascii=False) + "\n")


def graded(result, key, options):
    if "board" not in result:
        return {"error": result.get("error", "failed")}
    g = grade.grade(result["board"], key, options)
    # Wall time of a live run (offline it would make the table differ run to run).
    if result.get("wall_s") is not None:
        g["wall_s"] = result["wall_s"]
    g["cost_usd"] = cost_of(result.get("markdown"))
    # The report's kind: `fallback` is the program's report when the PM made no usable decision.
    g["report_kind"] = result.get("kind")
    return g


def vote(samples, options):
    """Self-consistency: the option most samples chose (ties: the one chosen first); the
    sample graded is the first that chose it. Samples that named no option do not vote."""
    ok = [s for s in samples if "error" not in s]
    if not ok:
        return samples[0] if samples else {"error": "no sample"}
    counts = collections.Counter(s["chosen_option"] for s in ok if s["chosen_option"])
    if counts:
        best = max(counts.values())
        winner = next(s["chosen_option"] for s in ok if counts.get(s["chosen_option"]) == best)
        pick = dict(next(s for s in ok if s["chosen_option"] == winner))
    else:
        pick = dict(ok[0])
    pick["votes"] = {o: counts[o] for o in sorted(counts)}
    # The reference was on the table when any sample chose it (or saw it proposed).
    pick["reference_proposed"] = any(s["correct"] or s.get("reference_proposed") for s in ok)
    pick["samples"] = len(samples)
    walls = [s.get("wall_s") for s in ok]
    pick["wall_s"] = round(sum(walls), 1) if all(w is not None for w in walls) else None
    pick["calls"] = sum(s.get("calls", 0) for s in ok)
    pick["tokens"] = sum(s.get("tokens", 0) for s in ok)
    costs = [s.get("cost_usd") for s in ok]
    pick["cost_usd"] = round(sum(costs), 6) if all(c is not None for c in costs) else None
    return pick


def council_available(runner):
    rc, out, _ = runner.run([runner.prog("meeting"), "--help"])
    return rc == 0 and b"--council" in out


def holders_heard(log, hidden_facts):
    """The distributed condition's own measure (issue #58): of the members who hold a fact of
    their own, how many the meeting asked, and how many of those said it — most of the fact's
    words (four letters or more) in one of their replies (response, key points, quotes)."""
    said, asked = collections.defaultdict(str), set()
    if log and os.path.exists(log):
        with open(log, encoding="utf-8") as f:
            for line in f:
                e = json.loads(line)
                if e.get("caller") not in hidden_facts or e.get("error"):
                    continue
                asked.add(e["caller"])
                try:
                    r = json.loads(e.get("response") or "")
                except json.JSONDecodeError:
                    r = {"response": e.get("response") or ""}
                if isinstance(r, dict):
                    parts = [r.get("response")] + list(r.get("key_points") or []) + [
                        c.get("quote") for c in r.get("citations") or [] if isinstance(c, dict)]
                    said[e["caller"]] += " " + " ".join(p for p in parts if isinstance(p, str))

    def states(text, fact):
        words = {w for w in grade.norm(fact).split(" ") if len(w) >= 4}
        have = set(grade.norm(text).split(" "))
        return bool(words) and len(words & have) * 10 >= len(words) * 6
    stated = [m for m in asked if any(states(said[m], f) for f in hidden_facts[m])]
    return {"holders": len(hidden_facts), "asked": len(asked), "stated": len(stated)}


def summarize_run(results, mode):
    """One mode's row over one run's cases."""
    gs = [r["modes"][mode] for r in results]
    if all(g.get("error") == NOT_AVAILABLE for g in gs):
        return {"mode": mode, "available": False}
    ok = [g for g in gs if "error" not in g]
    n = len(gs)

    def mean(field):
        vals = [g[field] for g in ok if g.get(field) is not None]
        return round(sum(vals) / len(vals), 3) if vals else None
    req = sum(g["required_answered"] for g in ok)
    req_total = sum(g["required_total"] for g in ok)
    costs = [g.get("cost_usd") for g in ok]
    heard = [g["holders"] for g in ok if g.get("holders")]
    row = {
        "mode": mode, "available": True, "cases": n, "failed": n - len(ok),
        "correct": sum(1 for g in ok if g["correct"]),
        # A real choice only: the sample's placeholder and a fallback report decide nothing,
        # and "none of these" is counted apart (a run that found no option right).
        "decided": sum(1 for g in ok if g.get("report_kind") != "fallback"
                       and grade.is_decision(g.get("choice"))),
        "none_of_these": sum(1 for g in ok if g.get("report_kind") != "fallback"
                             and grade.is_none_of_these(g.get("choice"))),
        "required_answered": round(req / req_total, 3) if req_total else None,
        "citation_precision": mean("citation_precision"),
        "citation_recall": mean("citation_recall"),
        # The oracle gap: someone at the table (a participant, a council member, another
        # sample) named the reference option, but the decision did not take it.
        "oracle_gap": sum(1 for g in ok if g.get("reference_proposed") and not g["correct"]),
        "calls": sum(g["calls"] for g in ok), "tokens": sum(g["tokens"] for g in ok),
        "wall_s": (round(sum(g["wall_s"] for g in ok), 1)
                   if ok and all(g.get("wall_s") is not None for g in ok) else None),
        "cost_usd": round(sum(costs), 6) if ok and all(c is not None for c in costs) else None,
    }
    if heard:
        for f in ("holders", "asked", "stated"):
            row["holders_" + f] = sum(h[f] for h in heard)
    return row


def summarize(results, modes):
    """A row a mode. With repetitions (--runs), each field is the list of its values run by
    run (`per_run` holds the rows), so the table can show the mean and the range."""
    runs = sorted({r.get("run", 1) for r in results})
    if len(runs) <= 1:
        return [summarize_run(results, m) for m in modes]
    rows = []
    for m in modes:
        per = [summarize_run([r for r in results if r.get("run", 1) == k], m) for k in runs]
        if not all(p["available"] for p in per):
            rows.append({"mode": m, "available": False})
            continue
        row = {"mode": m, "available": True, "runs": len(per), "per_run": per}
        for f in per[0]:
            if f not in ("mode", "available"):
                row[f] = [p.get(f) for p in per]
        rows.append(row)
    return rows


def pct(x):
    return "–" if x is None else f"{100 * x:.0f}%"


def spread(v, fmt=str, suffix=""):
    """One cell: the value, or over several runs the mean and the range, `2.3/4 (2–3)`; the
    same value in every run is shown once."""
    if not isinstance(v, list):
        return fmt(v) + suffix
    vals = [x for x in v if x is not None]
    if not vals:
        return fmt(None) + suffix
    if len(set(vals)) == 1:
        return fmt(vals[0]) + suffix
    return f"{fmt(sum(vals) / len(vals))}{suffix} ({fmt(min(vals))}–{fmt(max(vals))})"


def total(v):
    """A count over every run (the holders columns: people asked, summed)."""
    return sum(x for x in v if x is not None) if isinstance(v, list) else v


def num(x):
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}".removesuffix(".0")
    return str(x)


def table(rows):
    holders = any(r.get("holders_holders") for r in rows)
    out = ["| Mode | Correct | Decided | None of these | Oracle gap | Required questions answered "
           "| Citation precision | Citation recall | Calls | Tokens | Cost | Wall | Failed runs |"
           + (" Holders asked | Said their fact |" if holders else ""),
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if holders else "")]
    for r in rows:
        if not r["available"]:
            out.append(f"| {r['mode']} | {NOT_AVAILABLE} | | | | | | | | | | | |" + (" | |" if holders else ""))
            continue
        cost = spread(r["cost_usd"], lambda c: "unpriced" if c is None else f"${c:.4f}")
        wall = spread(r.get("wall_s"), lambda w: "–" if w is None else f"{w:.0f} s")
        cases = r["cases"][0] if isinstance(r["cases"], list) else r["cases"]
        line = (f"| {r['mode']} | {spread(r['correct'], num, f'/{cases}')} "
                f"| {spread(r['decided'], num, f'/{cases}')} "
                f"| {spread(r['none_of_these'], num, f'/{cases}')} "
                f"| {spread(r.get('oracle_gap', 0), num)} | {spread(r['required_answered'], pct)} "
                f"| {spread(r['citation_precision'], pct)} | {spread(r['citation_recall'], pct)} "
                f"| {spread(r['calls'], num)} | {spread(r['tokens'], num)} | {cost} | {wall} "
                f"| {spread(r['failed'], num)} |")
        if holders:
            if r.get("holders_holders"):
                line += (f" {total(r['holders_asked'])}/{total(r['holders_holders'])} "
                         f"| {total(r['holders_stated'])}/{total(r['holders_asked'])} |")
            else:
                line += " – | – |"
        out.append(line)
    return "\n".join(out)


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--offline", action="store_true", help="replay the shipped cassettes")
    ap.add_argument("--cases", default="", help="comma-separated case ids or prefixes (c01,c07)")
    ap.add_argument("--provider", default="")
    ap.add_argument("--model", default="")
    ap.add_argument("--k", type=int, default=5, help="self-consistency samples (default 5)")
    ap.add_argument("--runs", type=int, default=1,
                    help="run every mode over every case R times (default 1); the table shows each "
                         "cell's mean and its range over the runs")
    ap.add_argument("--budget", type=int, default=0, help="token budget per case (default: FACTOR x the single call's tokens)")
    ap.add_argument("--budget-factor", type=int, default=16, help="the budget in single calls (default 16)")
    ap.add_argument("--max-loops", type=int, default=4, help="meeting and council loop limit")
    ap.add_argument("--pm-reads", choices=["all", "index", "first"], default="all",
                    help="how a meeting's PM reads the documents everyone reads: their text every "
                    "round, an index and the checked quotes, or the text until someone has "
                    "answered it (docs/design/context.md#what-the-pm-reads)")
    ap.add_argument("--max-parallel", type=int, default=1,
                    help="meeting and council fan-out width (default 1: under a budget of a few calls the look-ahead refuses a wider fan-out)")
    ap.add_argument("--modes", default=",".join(DEFAULT_MODES),
                    help=f"comma-separated, of {', '.join(MODES)} (default {','.join(DEFAULT_MODES)})")
    ap.add_argument("--cases-dir", default="",
                    help="run the cases (cases/, keys.json, agents/) hiddenbench.py wrote in DIR")
    ap.add_argument("--tasks", default="",
                    help="hidden-profile tasks in HiddenBench's format (hidden/tasks.json: ours): "
                         "converted by hiddenbench.py, then run as --cases-dir")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release"))
    ap.add_argument("--record", default="", help="write each run's calls as cassettes under DIR")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench-quality", "results.json"))
    ap.add_argument("--keep", default="", help="keep the run folders in DIR")
    ap.add_argument("--table", default="", help="print the table of a results file and exit")
    ap.add_argument("--setup", default="", help="how the model was served, for the record beside the table "
                    "(e.g. 'llama-cpp-python 0.3.36, CPU, 2 threads, ctx 16384')")
    args = ap.parse_args(argv)
    if args.table:
        with open(args.table, encoding="utf-8") as f:
            doc = json.load(f)
        doc["summary"] = summarize(doc["cases"], doc.get("modes") or list(doc["cases"][0]["modes"]))
        print_table(doc)
        return
    args.flags = extra
    settings = os.path.join(args.record or CASSETTES, "recorded.json")
    if args.offline:
        # Replay with the settings the cassettes were recorded with: the budget's look-ahead
        # reads --max-tokens, so the same calls are made in the same order.
        with open(settings, encoding="utf-8") as f:
            rec = json.load(f)
        args.flags, args.k = rec["flags"], rec["k"]
        args.budget_factor, args.max_loops = rec["budget_factor"], rec["max_loops"]
        args.max_parallel = rec["max_parallel"]
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"run.py: --modes: {m}: expected one of {', '.join(MODES)}")
    if not os.path.exists(os.path.join(args.bin, "meeting")):
        sys.exit(f"run.py: --bin {args.bin}: no `meeting` program there (make build)")
    if not args.offline and not args.provider:
        print("run.py: no --provider: the programs choose from the environment", file=sys.stderr)
    global CASES_DIR
    if args.tasks:
        import hiddenbench  # noqa: E402 (beside this file)
        args.cases_dir = tempfile.mkdtemp(prefix="am-bench-hidden-")
        hiddenbench.convert(hiddenbench.load(args.tasks), args.cases_dir)
    if args.cases_dir:
        CASES_DIR = os.path.join(os.path.abspath(args.cases_dir), "cases")
        keys = grade.load_keys(os.path.join(args.cases_dir, "keys.json"))
    else:
        keys = grade.load_keys()
    ids = case_ids(args.cases)
    work = args.keep or tempfile.mkdtemp(prefix="am-bench-quality-")
    runner = Runner(args, work)
    has_council = council_available(runner)
    results = []
    try:
        for rep in range(1, max(1, args.runs) + 1):
            # Run-major: a run stopped half way keeps whole runs over every case before it.
            runner.rep = rep
            for n, case in enumerate(ids, 1):
                t0 = time.monotonic()
                mf = os.path.join(CASES_DIR, case, "meeting.yaml")
                options = grade.options_of(mf)
                key = keys[case]
                modes_out, logs = {}, {}
                single_raw = runner.timed(runner.single, case, "single") if {"single", "sc"} & set(modes) or not args.budget else None
                single = graded(single_raw, key, options) if single_raw else None
                logs["single"] = (single_raw or {}).get("log")
                one = (single or {}).get("tokens", 0)
                budget = args.budget or max(args.budget_factor * one, 1)
                k = max(1, min(args.k, budget // one)) if one else args.k
                if "single" in modes:
                    modes_out["single"] = single
                if "sc" in modes:
                    samples = [single]
                    for i in range(2, k + 1):
                        raw = runner.timed(runner.single, case, f"sc-{i}")
                        logs[f"sc-{i}"] = raw.get("log")
                        samples.append(graded(raw, key, options))
                    modes_out["sc"] = vote(samples, options)
                if "meeting" in modes:
                    raw = runner.timed(runner.meeting, case, "meeting", budget)
                    logs["meeting"] = raw.get("log")
                    modes_out["meeting"] = graded(raw, key, options)
                if "council" in modes:
                    if not has_council:
                        modes_out["council"] = {"error": NOT_AVAILABLE}
                    else:
                        raw = runner.timed(runner.meeting, case, "council", budget, council=True)
                        logs["council"] = raw.get("log")
                        # Offline, a council with no recorded cassette is not available either.
                        modes_out["council"] = ({"error": NOT_AVAILABLE}
                                                if raw.get("error") == "no cassette"
                                                else graded(raw, key, options))
                if "ceiling" in modes:
                    raw = runner.timed(runner.single, case, "ceiling", "ceiling.yaml")
                    logs["ceiling"] = raw.get("log")
                    modes_out["ceiling"] = ({"error": NOT_AVAILABLE}
                                            if raw.get("error") in (NOT_AVAILABLE, "no cassette")
                                            else graded(raw, key, options))
                if args.record:
                    for name, log in logs.items():
                        to_cassette(log, os.path.join(args.record, case, name + ".jsonl"))
                    single_c = os.path.join(args.record, case, "single.jsonl")
                    for name in logs:
                        # A sample identical to the single call is not kept: offline it replays
                        # the single call's cassette (_sc_cassette).
                        own = os.path.join(args.record, case, name + ".jsonl")
                        if name.startswith("sc-") and os.path.exists(own) and os.path.exists(single_c):
                            with open(own, "rb") as a, open(single_c, "rb") as b:
                                if a.read() == b.read():
                                    os.unlink(own)
                entry = {"case": case, "reference": key["reference"], "budget_tokens": budget,
                         "modes": modes_out}
                if args.runs > 1:
                    entry["run"] = rep
                if key.get("hidden_facts"):
                    # The distributed condition: which holders the meeting asked, which said their fact.
                    for m in ("meeting", "council"):
                        if logs.get(m) and "error" not in modes_out.get(m, {"error": 1}):
                            modes_out[m]["holders"] = holders_heard(logs[m], key["hidden_facts"])
                if not args.offline:
                    entry["seconds"] = round(time.monotonic() - t0, 1)
                results.append(entry)
                marks = " ".join(
                    f"{m}={'n/a' if g.get('error') == NOT_AVAILABLE else ('ERR' if 'error' in g else ('ok' if g['correct'] else 'x'))}"
                    for m, g in modes_out.items())
                save(args, modes, results)
                print(f"[{'run ' + str(rep) + ' ' if args.runs > 1 else ''}{n}/{len(ids)}] {case}: {marks} (budget {budget} tokens, "
                      f"{time.monotonic() - t0:.1f} s)", file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.record:
        os.makedirs(args.record, exist_ok=True)
        with open(settings, "w", encoding="utf-8") as f:
            json.dump({"provider": args.provider, "model": args.model, "flags": args.flags,
                       "k": args.k, "budget_factor": args.budget_factor,
                       "max_loops": args.max_loops, "max_parallel": args.max_parallel},
                      f, indent=1)
            f.write("\n")
    doc = save(args, modes, results)
    print_table(doc)
    print(f"\nresults: {args.out}", file=sys.stderr)


def run_record(args):
    """What a live table needs beside it to be repeated: the programs' commit, the model, the
    server (its base URL from the environment), every setting, and the seed (none is sent: the
    programs have no seed flag, so a server samples with its own)."""
    if args.offline:
        return None
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    server = {k: os.environ[k] for k in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OLLAMA_HOST")
              if os.environ.get(k)}
    return {"date": time.strftime("%Y-%m-%d", time.gmtime()),
            "commit": git.stdout.strip() or None, "provider": args.provider or "(environment)",
            "model": args.model, "server": server, "setup": args.setup, "pm_reads": args.pm_reads,
            "flags": args.flags, "k": args.k, "budget_factor": args.budget_factor,
            "budget": args.budget or None, "max_loops": args.max_loops,
            "max_parallel": args.max_parallel, "runs": args.runs, "seed": None}


def save(args, modes, results):
    """Write the results so far (after every case: a long live run stopped half way keeps what
    it measured; --table FILE prints its table)."""
    doc = {"bench": "quality", "offline": args.offline, "run": run_record(args),
           "provider": "replay" if args.offline else (args.provider or "(environment)"),
           "model": "" if args.offline else args.model, "k": args.k,
           "budget_factor": args.budget_factor, "modes": modes,
           "flags": [] if args.offline else args.flags,
           "summary": summarize(results, modes), "cases": results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return doc


def print_table(doc):
    who = "offline replay" if doc["offline"] else f"{doc['provider']} {doc['model']}".strip()
    ids = list(dict.fromkeys(c["case"] for c in doc["cases"]))
    runs = len({c.get("run", 1) for c in doc["cases"]})
    print(f"## Decision quality: {len(ids)} case(s){f' × {runs} runs (mean, range)' if runs > 1 else ''}, "
          f"{who}, k={doc['k']}\n")
    print(table(doc["summary"]))
    run = doc.get("run")
    if run:
        server = ", ".join(f"{k}={v}" for k, v in run["server"].items()) or "the provider's default"
        print(f"\nRun {run['date']} at {run['commit']}: {run['provider']} {run['model']} via {server}"
              f"{'; ' + run['setup'] if run['setup'] else ''}; flags {' '.join(run['flags']) or '(none)'}; "
              f"k={run['k']}, budget {run['budget'] or str(run['budget_factor']) + ' single calls'}, "
              f"max loops {run['max_loops']}, max parallel {run['max_parallel']}; seed: none sent "
              f"(the server's own). Cases: {', '.join(ids)}.")


if __name__ == "__main__":
    main()
