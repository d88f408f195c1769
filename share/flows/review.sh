#!/bin/sh
# review.sh — reviewer mode by hand: REVIEWERS challenge the PM's draft before the report
# (init-board --review-by; docs/design/review.md). The flow drives the stages with next-stage
# and, after each, shows on stderr what it did to the review: the draft a round sends out,
# each reviewer's verdict, each objection as it is filed and as the PM resolves it (revised,
# overruled, or asked about, then the answer). The report's Challenges section keeps them.
#
# Usage: share/flows/review.sh MEETING_FILE AGENTS REVIEWERS [REPORT_FILE]
#   e.g. review.sh meetings/demo.yaml arch,biz sre,devils-advocate
# Environment: as share/flows/lib.sh (reviews spend no loops; the meeting file's
# `review.rounds` says how many drafts are reviewed, default 1).
set -eu
. "$(dirname "$0")/lib.sh"
usage='usage: review.sh MEETING_FILE AGENTS REVIEWERS [REPORT_FILE]'
meeting_file=${1:?$usage}; agents=${2:?$usage}; reviewers=${3:?$usage}
stem=$(basename "$meeting_file"); report=${4:-reports/${stem%.*}-review.md}

flow_start "$meeting_file" "$agents" --review-by "$reviewers"
was=$(mktemp); trap 'rm -f "$board" "$next" "$was"' EXIT
while :; do
  stage=$(next-stage < "$board") || exit $?
  case $stage in render-report|none) break ;; esac
  cp "$board" "$was"
  flow_stage "$stage"
  jq -r --slurpfile was "$was" --arg stage "$stage" '$was[0] as $w
    | ($w.objections // [] | map({key: .id, value: .}) | from_entries) as $before
    | (select((.review_round // 0) > ($w.review_round // 0))
       | "review round \(.review_round), the draft: \(.record.decision.choice) (confidence: \(.record.decision.confidence))"),
      ($w.last_turns[] | select(.review and $stage == "merge-board")
       | "\(.agent_name): \(.review.verdict)"),
      (.objections[]? | select($before[.id] == null) | "  \(.id) by \(.by), about \(.about): \(.why)"),
      (.objections[]? | select($before[.id] != null and $before[.id].status != .status)
       | "  \(.id) \(.status)\(if .asked then " (\(.asked) asked)" else "" end): \(.resolution)"),
      (select($w.status == "reviewing" and .record.decision and .record.decision != $w.record.decision)
       | "the decision now: \(.record.decision.choice) (confidence: \(.record.decision.confidence))"),
      (.objections[]? | select(.answer and $before[.id].answer == null) | "  \(.id) answered by \(.asked): \(.answer)")
  ' "$board" >&2
done
flow_report "$report"
