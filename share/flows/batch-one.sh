#!/bin/sh
# batch-one.sh — meeting number INDEX of OUT_DIR/jobs.jsonl (written by batch.sh): the one
# job of GNU parallel, a Slurm array task or a Kubernetes indexed Job (docs/design/flows.md#batch).
#
# Usage: share/flows/batch-one.sh OUT_DIR INDEX [MEETING_FLAGS...]
# Writes OUT_DIR/runs/NAME/ (the run folder), reports/NAME.md and results/NAME.json (the
# MeetingResult); resumes the meeting when its run folder exists, with OUT_DIR/answers/NAME.json
# or NAME.txt as the answer when it waits for a person. Exits as `meeting` does (4: waiting).
set -eu
usage='usage: batch-one.sh OUT_DIR INDEX [MEETING_FLAGS...]'
out=${1:?$usage}; index=${2:?$usage}; shift 2
job=$(sed -n "${index}p" "$out/jobs.jsonl")
[ -n "$job" ] || { echo "batch-one.sh: $out/jobs.jsonl: no meeting on line $index" >&2; exit 2; }
name=$(printf '%s\n' "$job" | jq -r --arg i "$index" '.name // $i | tostring')
case $name in */*|.*|'') echo "batch-one.sh: $out/jobs.jsonl: line $index: name: expected a file name, got \"$name\"" >&2; exit 2 ;; esac
result=$out/results/$name.json

set +e
if [ -d "$out/runs/$name" ]; then
  # A meeting waiting for a person goes on with their answer, when it is there.
  set --
  for answer in "$out/answers/$name.json" "$out/answers/$name.txt"; do
    if [ -f "$answer" ] && [ -f "$out/runs/$name/waiting.json" ]; then set -- --answer "$answer"; break; fi
  done
  meeting resume "$out/runs/$name" --quiet "$@" > "$result.tmp"
else
  set -- --run-dir "$out/runs" --trace-id "$name" --report-file "$out/reports/$name.md" --quiet "$@"
  cassette=$(printf '%s\n' "$job" | jq -r '.cassette // ""')
  if [ -n "$cassette" ]; then set -- "$@" --cassette "$cassette"; fi
  # The rest of the line is the meeting's options (agents, max_cost, ...), under the flags.
  options=$(printf '%s\n' "$job" | jq -c 'del(.topic, .meeting_file, .name, .cassette)')
  if [ "$options" != "{}" ]; then set -- "$@" --options "$options"; fi
  topic=$(printf '%s\n' "$job" | jq -r '.topic // ""')
  if [ -n "$topic" ]; then
    meeting --topic "$topic" "$@" > "$result.tmp"
  else
    meeting --meeting-file "$(printf '%s\n' "$job" | jq -r '.meeting_file')" "$@" > "$result.tmp"
  fi
fi
rc=$?
set -e
# The MeetingResult, whole or not at all (a meeting that printed none leaves no result).
if [ -s "$result.tmp" ]; then mv "$result.tmp" "$result"; else rm -f "$result.tmp"; fi
exit $rc
