#!/bin/sh
# summary.sh — one table of many run folders (a batch's OUT_DIR/runs/*, or any `meeting` run
# folders): run, status, report kind, decision, confidence, loops, LLM calls, tokens. Each row
# is read from the folder's last render-report output (the ReportResult); a folder without
# one (the meeting did not get that far) is listed as `unfinished`.
#
# Usage: share/flows/summary.sh RUN_DIR...      (TSV with FORMAT=tsv; Markdown by default)
#   e.g. share/flows/summary.sh out/runs/*
set -eu
[ $# -gt 0 ] || { echo 'usage: summary.sh RUN_DIR...' >&2; exit 2; }
for dir in "$@"; do
  last=$(ls "$dir" 2>/dev/null | grep -- '-render-report\.out\.json$' | LC_ALL=C sort | tail -n 1 || true)
  if [ -n "$last" ]; then
    jq -c --arg run "$(basename "$dir")" '{run: $run, status, kind,
        decision: (.board.record.decision.choice // "-"), confidence: (.board.record.decision.confidence // "-"),
        loops: .board.loop_count, calls: .board.usage.calls,
        tokens: (.board.usage.prompt_tokens + .board.usage.completion_tokens)}' "$dir/$last"
  else
    jq -n -c --arg run "$(basename "$dir")" '{run: $run, status: "unfinished", kind: "-", decision: "-",
        confidence: "-", loops: "-", calls: "-", tokens: "-"}'
  fi
done | jq -s -r --arg format "${FORMAT:-markdown}" '
  ["run", "status", "kind", "decision", "confidence", "loops", "calls", "tokens"] as $cols
  | if $format == "tsv" then ($cols, (.[] | [.[$cols[]]])) | @tsv
    else ("| " + ($cols | join(" | ")) + " |"), ("|" + ($cols | map("---") | join("|")) + "|"),
      (.[] | [.[$cols[]] | tostring | gsub("\\|"; "\\|") | gsub("\n"; " ")] | "| " + join(" | ") + " |")
    end'
