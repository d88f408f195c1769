#!/bin/sh
# summary.sh — one table of many run folders (a batch's OUT_DIR/runs/*, or any `meeting` run
# folders): run, status, report kind, decision, confidence, loops, LLM calls, tokens, cost (US
# dollars at the price table's prices; `unpriced` for a model the table does not know, `-`
# with no live call: a replay). Each row
# is read from the folder's last render-report output (the ReportResult); a folder waiting
# for a person's answer is listed as `waiting` (`waiting for NAME`), one without a report
# (the meeting did not get that far) as `unfinished`.
#
# Usage: share/flows/summary.sh RUN_DIR...      (TSV with FORMAT=tsv; Markdown by default)
#   e.g. share/flows/summary.sh out/runs/*
set -eu
[ $# -gt 0 ] || { echo 'usage: summary.sh RUN_DIR...' >&2; exit 2; }
for dir in "$@"; do
  last=$(ls "$dir" 2>/dev/null | grep -- '-render-report\.out\.json$' | LC_ALL=C sort | tail -n 1 || true)
  if [ -f "$dir/waiting.json" ]; then
    # Stopped for a person with no one there (docs/design/agent-turn.md#waiting-for-a-person).
    jq -c --arg run "$(basename "$dir")" '{run: $run, status: "waiting", kind: "-",
        decision: ("waiting for " + .agent), confidence: "-", loops: "-", calls: (.call - 1),
        tokens: "-", cost: "-"}' "$dir/waiting.json"
  elif [ -n "$last" ]; then
    jq -c --arg run "$(basename "$dir")" '{run: $run, status, kind,
        decision: (.board.record.decision.choice // "-"), confidence: (.board.record.decision.confidence // "-"),
        loops: .board.loop_count, calls: .board.usage.calls,
        tokens: (.board.usage.prompt_tokens + .board.usage.completion_tokens),
        cost: (if .cost == null then "-" elif .cost.usd == null then "unpriced"
               else "$" + (.cost.usd * 10000 | round / 10000 | tostring) end)}' "$dir/$last"
  else
    jq -n -c --arg run "$(basename "$dir")" '{run: $run, status: "unfinished", kind: "-", decision: "-",
        confidence: "-", loops: "-", calls: "-", tokens: "-", cost: "-"}'
  fi
done | jq -s -r --arg format "${FORMAT:-markdown}" '
  ["run", "status", "kind", "decision", "confidence", "loops", "calls", "tokens", "cost"] as $cols
  | if $format == "tsv" then ($cols, (.[] | [.[$cols[]]])) | @tsv
    else ("| " + ($cols | join(" | ")) + " |"), ("|" + ($cols | map("---") | join("|")) + "|"),
      (.[] | [.[$cols[]] | tostring | gsub("\\|"; "\\|") | gsub("\n"; " ")] | "| " + join(" | ") + " |")
    end'
