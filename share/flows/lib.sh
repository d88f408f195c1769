# lib.sh — what the flows in this folder share, sourced by them (not run on its own).
# A flow keeps the board in one file ($board); each stage program reads it and writes the
# next one; jq reads it and, where the flow decides something, writes it
# (docs/design/flows.md#board-fields). Needs the stage programs on PATH and jq.
#
# Environment, as share/meeting.sh: MAX_LOOPS (default 6), TRACE_ID, BOARD_OUT (keep the
# final board), EVENTS_OUT (the meeting's events, one JSON line each) and the provider
# variables (AGENT_MEETING_PROVIDER, MEETING_CASSETTE, OPENAI_API_KEY, ...).

board=$(mktemp); next=$(mktemp)
trap 'rm -f "$board" "$next"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# flow_events: append the board's new events to EVENTS_OUT (each stage's, once, in order).
flow_events() {
  if [ -n "${EVENTS_OUT:-}" ]; then jq -c '.new_events[]' "$board" >> "$EVENTS_OUT"; fi
}

# flow_start MEETING_FILE AGENTS [INIT_BOARD_FLAGS...]: a fresh board.
flow_start() {
  meeting_file=$1 agents=$2; shift 2
  if [ -n "${EVENTS_OUT:-}" ]; then : > "$EVENTS_OUT"; fi
  collect-context --meeting-file "$meeting_file" \
    | init-board --agents "$agents" --max-loops "${MAX_LOOPS:-6}" \
        ${TRACE_ID:+--trace-id "$TRACE_ID"} "$@" > "$board" || exit $?
  flow_events
}

# flow_stage PROGRAM [ARGS...]: run one stage on the board.
flow_stage() {
  "$@" < "$board" > "$next" || exit $?
  mv "$next" "$board"; next=$(mktemp)
  flow_events
  printf '%s: loop %s, status %s\n' "$1" "$(jq .loop_count "$board")" "$(jq -r .status "$board")" >&2
}

# flow_put JQ_FILTER [JQ_ARGS...]: change the board with jq (a call put on it by hand, an
# edit); the next stage checks what was written.
flow_put() {
  filter=$1; shift
  jq "$@" "$filter" "$board" > "$next" || exit 2
  mv "$next" "$board"; next=$(mktemp)
}

# flow_ask AGENT QUESTION: put one call on the board, let the agent answer, merge the answer.
flow_ask() {
  flow_put '.pending_calls = [{target_agent: $a, prompt: $q}]' --arg a "$1" --arg q "$2"
  flow_stage agent-turn
  flow_stage merge-board
}

# flow_answer AGENT: the agent's latest usable answer (empty when it has none).
flow_answer() {
  jq -r --arg a "$1" '.latest_agent_outputs[$a].response // ""' "$board"
}

# flow_until_report: run the stages next-stage names (the PM's rounds, its calls, their
# merges) until the report is next.
flow_until_report() {
  while :; do
    stage=$(next-stage < "$board") || exit $?
    case $stage in
      render-report|none) return 0 ;;
      *) flow_stage "$stage" ;;
    esac
  done
}

# flow_report REPORT_FILE: render and save the report, then print one JSON line about the
# meeting on stdout (status, loops, report file, the decision, LLM calls).
flow_report() {
  flow_stage render-report --report-file "$1" --board
  if [ -n "${BOARD_OUT:-}" ]; then cp "$board" "$BOARD_OUT"; fi
  jq -c --arg report "$1" '{status, loops: .loop_count, report_file: $report,
      decision: .record.decision.choice, usage: {calls: .usage.calls}}' "$board"
}
