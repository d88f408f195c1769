#!/bin/sh
# meeting.sh — the whole meeting as a plain POSIX shell loop over the stage programs.
# It does what `meeting` does (without the run folder and resume), and is the model for
# scripting your own flows: the board is a JSON file, jq reads it, each stage rewrites it.
#
# Usage: share/meeting.sh MEETING_FILE AGENTS [REPORT_FILE]
#   e.g. AGENT_MEETING_PROVIDER=replay MEETING_CASSETTE=meetings/demo.cassette.jsonl \
#        share/meeting.sh meetings/demo.yaml arch,biz reports/demo.md
# Environment: MAX_LOOPS (default 6), MAX_PARALLEL (init-board's --max-parallel: most
# participants the PM may ask at once, default 3), COUNCIL (set: init-board's --council, the
# council round, docs/design/council.md), COUNCIL_MODELS (its --council-models), TRACE_ID (optional), BOARD_OUT (keep the final board),
# EVENTS_OUT (write the meeting's events there, one JSON line each, as `meeting` writes
# events.jsonl), MEETING_HUMAN_ANSWERS (the answers of `kind: human` participants, as
# `meeting --human-answers`: agent-turn reads it; with no one there to answer, the meeting
# stops `waiting`, exit 4, what they are asked in WAITING_OUT, default REPORT_FILE's name
# with .waiting.json), and the provider variables
# (AGENT_MEETING_PROVIDER, AGENT_MEETING_MODEL, MEETING_CASSETTE, OPENAI_API_KEY, ...).
set -eu

meeting_file=${1:?usage: meeting.sh MEETING_FILE AGENTS [REPORT_FILE]}
agents=${2:?usage: meeting.sh MEETING_FILE AGENTS [REPORT_FILE]}
stem=$(basename "$meeting_file"); stem=${stem%.*}
report=${3:-reports/$stem.md}

board=$(mktemp); next=$(mktemp)
trap 'rm -f "$board" "$next" "$next.report"' EXIT
# dash runs no EXIT trap when a signal kills it: turn Ctrl-C and SIGTERM into an exit.
trap 'exit 130' INT
trap 'exit 143' TERM

collect-context --meeting-file "$meeting_file" \
  | init-board --agents "$agents" --max-loops "${MAX_LOOPS:-6}" \
      ${MAX_PARALLEL:+--max-parallel "$MAX_PARALLEL"} ${TRACE_ID:+--trace-id "$TRACE_ID"} \
      ${COUNCIL:+--council} ${COUNCIL_MODELS:+--council-models "$COUNCIL_MODELS"} \
  > "$board"
# A board carries only the events of the stage that wrote it (`new_events`, docs/design/run-folder.md#events):
# appending each board's keeps every event exactly once, in order.
# The driver's tally (docs/design/flow.md#statuses): model calls made, and answers a stage accepted.
calls=0; usable=0
events() {
  if [ -n "${EVENTS_OUT:-}" ]; then jq -c '.new_events[]' "$board" >> "$EVENTS_OUT"; fi
  set -- $(jq -r '([.new_events[] | select(.type == "llm_call")] | length),
    ([.new_events[] | select(.type == "pm_decision" or .type == "agent_result")] | length)' "$board")
  calls=$((calls + $1)); usable=$((usable + $2))
}
if [ -n "${EVENTS_OUT:-}" ]; then : > "$EVENTS_OUT"; fi
events

while :; do
  # What runs next is derivable from the board alone, by one rule (docs/design/flow.md#state-machine).
  stage=$(next-stage < "$board")
  case $stage in
    none) break ;;
    render-report)
      # No pipefail in POSIX sh: keep the stage's own output and exit status.
      render-report --report-file "$report" < "$board" > "$next.report" || exit $?
      jq '.board' "$next.report" > "$next" && rm -f "$next.report" ;;
    *)
      rc=0; "$stage" < "$board" > "$next" || rc=$?
      if [ "$rc" -eq 4 ] && [ "$stage" = agent-turn ]; then
        # A person with no one there to answer: agent-turn printed what they are asked; the
        # meeting stops `waiting` (exit 4), as `meeting` does (docs/design/agent-turn.md#waiting-for-a-person).
        waiting=${WAITING_OUT:-${report%.*}.waiting.json}
        mv "$next" "$waiting"
        if [ -n "${BOARD_OUT:-}" ]; then cp "$board" "$BOARD_OUT"; fi
        jq -c --arg w "$waiting" '{status: "waiting", loops: .loop_count, report_file: null,
          waiting_file: $w, usage: {calls: .usage.calls}}' "$board"
        echo "meeting.sh: waiting for $(jq -r .agent "$waiting"): what they are asked is in $waiting; run it again with their answer as a line of MEETING_HUMAN_ANSWERS" >&2
        exit 4
      fi
      [ "$rc" -eq 0 ] || exit "$rc" ;;
  esac
  mv "$next" "$board"; next=$(mktemp)
  events
  printf '%s: loop %s, status %s\n' "$stage" "$(jq .loop_count "$board")" "$(jq -r .status "$board")" >&2
done

if [ -n "${BOARD_OUT:-}" ]; then cp "$board" "$BOARD_OUT"; fi
# `usage.calls` is the LLM calls made, as the callers were charged (the report's count too).
# A saved report no model contributed to is a failed meeting (exit 1); a fallback report, with
# no PM decision, ends `no_decision` (exit 3), as `meeting` says (docs/design/flow.md#statuses).
status=$(jq -r '.status' "$board")
has_report=$(jq '.final_report // "" | test("\\S")' "$board")
if [ "$usable" -eq 0 ] && { [ "$calls" -gt 0 ] || [ "$has_report" = false ]; }; then
  status=failed
elif [ "$status" = finished ] && [ "$has_report" = false ]; then
  status=no_decision
fi
jq -c --arg report "$report" --arg status "$status" \
  '([.usage.by_caller[].calls] | add // 0) as $charged
   | {status: $status, loops: .loop_count, report_file: $report,
      usage: {calls: (if $charged > 0 then $charged else .usage.calls end)}}' "$board"
case $status in
  failed)
    echo "meeting.sh: the meeting failed: no model call returned a usable answer; the fallback report is $report" >&2
    exit 1 ;;
  no_decision)
    echo "meeting.sh: no decision: the PM made none; the fallback report is $report" >&2
    exit 3 ;;
esac
