#!/bin/sh
# batch.sh — many meetings at once with GNU parallel, each in its own run folder, resumable.
#
# Usage: share/flows/batch.sh INPUT OUT_DIR [MEETING_FLAGS...]
#   INPUT    a JSONL file, one meeting a line: {"topic": "..."} (meeting --topic) or
#            {"meeting_file": "path"}, each with an optional "name" (default: the line number),
#            "cassette" (its own replay cassette) and any of the meeting's options ("agents",
#            "max_cost", "reviewers", ...: meeting --options; MEETING_FLAGS win); or a folder of meeting files
#            (*.yaml, *.yml, *.json), each named after its file
#   OUT_DIR  gets jobs.jsonl (the meetings, numbered by line), joblog (GNU parallel's),
#            runs/NAME/ (each meeting's run folder), reports/NAME.md and results/NAME.json
#            (each meeting's MeetingResult); nothing else is written, so names never collide;
#            answers/NAME.json or NAME.txt (yours) answers a meeting waiting for a person
#   MEETING_FLAGS  given to every meeting: --agents arch,biz --provider replay ...
#   e.g. JOBS=4 share/flows/batch.sh topics.jsonl out --agents arch,biz --model gpt-4o-mini
# Environment: JOBS (meetings at once, default 4); BATCH_PREPARE=1 writes OUT_DIR/jobs.jsonl,
# prints how many meetings it holds and runs none (a scheduler runs them, one task each:
# share/flows/slurm-array.sbatch, share/k8s/); and what `meeting` reads (keys, provider,
# MEETING_CASSETTE, ...); AGENT_MEETING_MAX_IN_FLIGHT=N keeps the whole batch (its fan-outs
# too) to N requests in flight per provider, and a 429 one meeting meets makes all of them
# wait (docs/design/llm.md#pace).
#
# Run it again to go on: the joblog skips the meetings that ended well (--resume-failed runs
# the failed ones again), and a meeting whose run folder exists is resumed
# (`meeting resume`), its paid answers taken from its llm.jsonl. Exit: 0 when every meeting
# ended well, else the number of meetings that did not (at most 101), as GNU parallel says.
# The table of all of them: share/flows/summary.sh OUT_DIR/runs/* (docs/design/flows.md#batch).
set -eu
usage='usage: batch.sh INPUT OUT_DIR [MEETING_FLAGS...]'
input=${1:?$usage}; out=${2:?$usage}; shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/runs" "$out/reports" "$out/results"

# The job list, written once: a second run (resume) must see the same meetings, numbered the same.
if [ ! -f "$out/jobs.jsonl" ]; then
  if [ -d "$input" ]; then
    find "$input" -maxdepth 1 -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) | LC_ALL=C sort \
      | jq -R -c '{meeting_file: ., name: (split("/") | last | sub("\\.(ya?ml|json)$"; ""))}'
  else
    jq -c 'if type == "object" and ((.topic | type) == "string" or (.meeting_file | type) == "string")
           then . else error("expected {\"topic\": TEXT} or {\"meeting_file\": PATH}") end' "$input"
  fi > "$out/jobs.jsonl.tmp" || { echo "batch.sh: $input: not a folder of meeting files or a JSONL of meetings" >&2; exit 2; }
  jq -s -r 'to_entries[] | (.value.name // "\(.key + 1)") | tostring' "$out/jobs.jsonl.tmp" | sort | uniq -d | grep . \
    && { echo "batch.sh: $input: the names above are given to more than one meeting" >&2; rm -f "$out/jobs.jsonl.tmp"; exit 2; }
  mv "$out/jobs.jsonl.tmp" "$out/jobs.jsonl"
fi

n=$(grep -c . "$out/jobs.jsonl" || true)
if [ "${BATCH_PREPARE:-}" = 1 ]; then echo "$n"; exit 0; fi
command -v parallel > /dev/null 2>&1 || { echo "batch.sh: GNU parallel is not installed (apt-get install parallel)" >&2; exit 2; }
status=0
seq 1 "$n" | parallel --jobs "${JOBS:-4}" --joblog "$out/joblog" --resume-failed \
  -q sh "$here/batch-one.sh" "$out" {} "$@" || status=$?
# The meetings waiting for a person, each with where its answer goes (docs/design/flows.md#batch).
for waiting in "$out"/runs/*/waiting.json; do
  [ -f "$waiting" ] || continue
  name=$(basename "$(dirname "$waiting")")
  echo "batch.sh: $name waits for $(jq -r .agent "$waiting"): put their answer in $out/answers/$name.txt ($out/runs/$name/answer.txt filled in) or $name.json, then run it again" >&2
done
# One line on how it went, success or not (stdout stays free for whoever pipes it).
if [ "$status" -eq 0 ]; then
  echo "batch.sh: $n meetings ended well; reports in $out/reports, results in $out/results (table: share/flows/summary.sh $out/runs/*)" >&2
else
  echo "batch.sh: $status of $n meetings did not end well (their lines in $out/joblog); run it again to resume them" >&2
fi
exit "$status"
