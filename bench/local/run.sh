#!/bin/bash
# Meetings against a local OpenAI-compatible server, one after another, with default flags
# (bench/RESULTS.md, "Small local models"); outside CI. From the repository root:
#   bench/local/run.sh PORT MODEL OUT demo ci demo ci
# Each meeting leaves OUT/MODEL-N-NAME.{json,err,md,exit}; then bench/local/summary.py OUT...
set -u
port=$1 model=$2 out=$3; shift 3
mkdir -p "$out"
export OPENAI_BASE_URL=http://127.0.0.1:$port/v1
n=0
for name in "$@"; do
  n=$((n + 1))
  case $name in
    demo) file=meetings/demo.yaml ;;
    ci) file=bench/local/ci.yaml ;;
    *) echo "run.sh: unknown meeting $name (demo or ci)" >&2; exit 2 ;;
  esac
  base=$out/$model-$n-$name
  start=$(date +%s)
  meeting -f "$file" --agents arch,biz --provider openai --model "$model" \
    --report-file "$base.md" > "$base.json" 2> "$base.err"
  echo "{\"exit\": $?, \"secs\": $(( $(date +%s) - start ))}" > "$base.exit"
done
