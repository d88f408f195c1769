"""The table of bench/RESULTS.md's "Small local models" from bench/local/run.sh's folders:
`summary.py OUT...`, one row per finished meeting."""
import collections, glob, json, os, sys

print('| model | meeting | ending (exit) | loops | usable / total calls | fan-outs | failed PM rounds | tokens | longest call s | wall s |')
print('|---|---|---|---:|---:|---:|---:|---:|---:|---:|')
for res in sorted(r for out in sys.argv[1:] for r in glob.glob(f'{out}/*.json')):
    if not os.path.exists(res[:-5] + ".exit"):
        continue  # still running
    base = res[:-5]
    model, _, name = os.path.basename(base).rsplit('-', 2)
    r = json.load(open(res))
    x = json.load(open(base + '.exit'))
    ev = [json.loads(l) for l in open(r['run_dir'] + '/events.jsonl')]
    calls = [json.loads(l) for l in open(r['run_dir'] + '/llm.jsonl')]
    pm = collections.Counter(e['ts'] for e in ev if e['type'] == 'pm_decision')  # a fan-out: one ts
    usable = len(pm) + sum(e['type'] == 'agent_result' for e in ev)
    total = sum(e['type'] == 'llm_call' for e in ev)
    fan = sum(n > 1 for n in pm.values())
    failed = sum(e['type'] == 'pm_round_failed' for e in ev)
    tokens = r['usage']['prompt_tokens'] + r['usage']['completion_tokens']
    longest = max((c.get('duration_ms') or 0 for c in calls), default=0) / 1000
    print(f"| {model} | {name} | {r['status']} ({x['exit']}) | {r['loops']} | {usable} / {total} | {fan} | {failed} | {tokens:,} | {longest:.0f} | {x['secs']} |")
