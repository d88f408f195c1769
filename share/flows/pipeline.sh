#!/bin/sh
# pipeline.sh — each participant in turn, each given the previous one's answer (the first
# gets the question alone), then the PM runs the rest of the meeting and decides.
#
# Usage: share/flows/pipeline.sh MEETING_FILE AGENTS QUESTION [REPORT_FILE]
#   e.g. pipeline.sh meetings/demo.yaml arch,biz "Which option fits the deadline?"
# Environment: as share/flows/lib.sh (MAX_LOOPS must leave the PM a loop after the agents).
set -eu
. "$(dirname "$0")/lib.sh"
usage='usage: pipeline.sh MEETING_FILE AGENTS QUESTION [REPORT_FILE]'
meeting_file=${1:?$usage}; agents=${2:?$usage}; question=${3:?$usage}
stem=$(basename "$meeting_file"); report=${4:-reports/${stem%.*}-pipeline.md}

flow_start "$meeting_file" "$agents"
prompt=$question; previous=
for agent in $(printf '%s\n' "$agents" | tr ',' ' '); do
  flow_ask "$agent" "$prompt"
  previous=$(flow_answer "$agent")
  prompt="$question

$agent answered before you: $previous
Build on that answer: say where you agree, where you do not, and what it leaves out."
done
flow_until_report
flow_report "$report"
