#!/bin/sh
# ask-all.sh — one question to every participant at once (a fan-out written by hand in
# `pending_calls`), then the PM runs the rest of the meeting and decides.
#
# Usage: share/flows/ask-all.sh MEETING_FILE AGENTS QUESTION [REPORT_FILE]
#   e.g. ask-all.sh meetings/demo.yaml arch,biz "What is the main risk of each option?"
# Environment: as share/flows/lib.sh.
set -eu
. "$(dirname "$0")/lib.sh"
usage='usage: ask-all.sh MEETING_FILE AGENTS QUESTION [REPORT_FILE]'
meeting_file=${1:?$usage}; agents=${2:?$usage}; question=${3:?$usage}
stem=$(basename "$meeting_file"); report=${4:-reports/${stem%.*}-ask-all.md}

# As many at once as there are participants (init-board allows 8).
n=$(printf '%s\n' "$agents" | tr ',' '\n' | grep -c .)
flow_start "$meeting_file" "$agents" --max-parallel "$n"
flow_put '.pending_calls = [.participants[] | {target_agent: ., prompt: $q}]' --arg q "$question"
flow_stage agent-turn
flow_stage merge-board
flow_until_report
flow_report "$report"
