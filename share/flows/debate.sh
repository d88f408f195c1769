#!/bin/sh
# debate.sh — two participants answer each other for ROUNDS rounds (the first opens on the
# question; each answer after is a reply to the other's last one), then the PM decides.
#
# Usage: share/flows/debate.sh MEETING_FILE AGENT_A,AGENT_B QUESTION [REPORT_FILE]
#   e.g. ROUNDS=2 debate.sh meetings/demo.yaml arch,biz "Replica or warehouse?"
# Environment: ROUNDS (default 2: each speaks twice), and as share/flows/lib.sh (MAX_LOOPS
# must leave the PM a loop after the 2 × ROUNDS answers).
set -eu
. "$(dirname "$0")/lib.sh"
usage='usage: debate.sh MEETING_FILE AGENT_A,AGENT_B QUESTION [REPORT_FILE]'
meeting_file=${1:?$usage}; agents=${2:?$usage}; question=${3:?$usage}
stem=$(basename "$meeting_file"); report=${4:-reports/${stem%.*}-debate.md}
a=${agents%%,*}; b=${agents#*,}
case $b in ''|*,*|"$a") echo "debate.sh: AGENTS: expected two names, A,B (got $agents)" >&2; exit 2 ;; esac

flow_start "$meeting_file" "$agents"
flow_ask "$a" "$question"
round=1
while :; do
  flow_ask "$b" "$question

$a said: $(flow_answer "$a")
Answer it: where is it wrong or incomplete?"
  [ "$round" -lt "${ROUNDS:-2}" ] || break
  round=$((round + 1))
  flow_ask "$a" "$question

$b replied: $(flow_answer "$b")
Answer it: where is it wrong or incomplete?"
done
flow_until_report
flow_report "$report"
