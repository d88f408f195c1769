#!/bin/sh
# human-gate.sh — the meeting as share/meeting.sh runs it, with a pause before the report: a
# person edits the PM's decision (choice, confidence, revisit_if) in $VISUAL or $EDITOR, or
# GATE_JQ (a jq filter over the decision) edits it without a terminal. The report's Process
# Note says that a person edited the decision and what changed (or that they left it).
#
# Usage: share/flows/human-gate.sh MEETING_FILE AGENTS [REPORT_FILE]
#   e.g. EDITOR=nano human-gate.sh meetings/demo.yaml arch,biz
#        GATE_JQ='.confidence = "low"' human-gate.sh meetings/demo.yaml arch,biz
# With no GATE_JQ, no editor and no terminal the gate waits for its person, as `meeting` does
# for a participant (exit 4): the board and the decision to review are kept beside the report
# (REPORT.gate-board.json, REPORT.gate-decision.json); run again with GATE_BOARD and
# GATE_DECISION naming them (the decision edited) and the flow goes on from the gate, no call
# made again.
# Environment: GATE_JQ, GATE_BOARD, GATE_DECISION, VISUAL, EDITOR (default vi with a terminal),
# and as share/flows/lib.sh.
set -eu
. "$(dirname "$0")/lib.sh"
usage='usage: human-gate.sh MEETING_FILE AGENTS [REPORT_FILE]'
meeting_file=${1:?$usage}; agents=${2:?$usage}
stem=$(basename "$meeting_file"); report=${3:-reports/${stem%.*}.md}

if [ -n "${GATE_BOARD:-}" ]; then
  # A gate that waited: its board, the meeting's calls already made (docs/design/flows.md#human-gate).
  cp "$GATE_BOARD" "$board"
else
  flow_start "$meeting_file" "$agents"
  flow_until_report
fi
if [ "$(jq '.record.decision != null' "$board")" = true ]; then
  draft=$(mktemp); trap 'rm -f "$board" "$next" "$draft"' EXIT
  jq '.record.decision' "$board" > "$draft"
  if [ -n "${GATE_DECISION:-}" ]; then
    cp "$GATE_DECISION" "$draft"
  elif [ -n "${GATE_JQ:-}" ]; then
    jq "$GATE_JQ" "$draft" > "$next" && mv "$next" "$draft" && next=$(mktemp)
  elif [ -z "${VISUAL:-}${EDITOR:-}" ] && ! (: < /dev/tty) 2> /dev/null; then
    # No one to ask: wait for them, as `meeting` waits for a participant (exit 4).
    kept=${report%.*}.gate-board.json; decision=${report%.*}.gate-decision.json
    cp "$board" "$kept"; cp "$draft" "$decision"
    jq -c --arg d "$decision" --arg b "$kept" '{status: "waiting", loops: .loop_count,
        report_file: null, waiting_file: $d, board_file: $b, usage: {calls: .usage.calls}}' "$board"
    echo "human-gate.sh: waiting for a person to review the decision in $decision; go on with GATE_BOARD=$kept GATE_DECISION=$decision" >&2
    exit 4
  else
    # Stdout is the flow's JSON line: the editor gets the terminal, or stderr without one.
    if (: < /dev/tty) 2> /dev/null; then
      ${VISUAL:-${EDITOR:-vi}} "$draft" < /dev/tty > /dev/tty
    else
      ${VISUAL:-${EDITOR:-vi}} "$draft" >&2
    fi
  fi
  jq -e 'type == "object" and (.choice | type == "string" and test("\\S"))
         and (.confidence | IN("low", "medium", "high"))' "$draft" > /dev/null \
    || { echo "human-gate.sh: $draft: expected a decision {choice, confidence: low|medium|high, revisit_if}" >&2; exit 2; }
  flow_put '.record.decision as $was
    | ([($was | keys_unsorted[]), ($new | keys_unsorted[])] | unique
       | map(select($was[.] != $new[.]))) as $changed
    | .record.decision = $new
    | .record.process += [{loop: .loop_count, kind: "edited", text:
        (if $changed == [] then "A person reviewed the decision before the report and left it as the PM made it."
         else "A person edited the decision before the report: "
           + ($changed | map("\(.) was \($was[.] // "none" | tojson), now \($new[.] // "none" | tojson)") | join("; "))
           + "." end)}]' --argjson new "$(cat "$draft")"
else
  echo "human-gate.sh: the PM made no decision; nothing to edit" >&2
fi
flow_report "$report"
