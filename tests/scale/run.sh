#!/bin/sh
# run.sh — `make test-scale` (docs/design/scale.md): a batch of six meetings as a Slurm job
# array on a single-node cluster started here, every call through a LiteLLM proxy
# (share/gateway/litellm.yaml) in front of a fake provider (tests/scale/fake_provider.py); one
# task is killed mid-meeting and requeued. Checks: every meeting ends with its report and its
# result, no answered call is asked again, the provider never sees more requests in flight than
# the proxy allows, the provider's 429 reaches the meetings through the proxy and their retries
# get past it, and the gateway's cost reaches every report. Prints summary.sh's table.
#
# Also checks share/k8s/'s indexed Job and Argo Workflow against their schemas. Installs what
# it needs where it can (Debian's slurm-wlm and munge with apt-get, as root; PyPI's
# litellm[proxy], kubernetes-validate and hera into SCALE_DIR/venv); where it cannot, it says which and exits 0
# (skipped), also under CI. Uses the programs in SCALE_BIN (default target/debug, which
# `make test-scale` builds).
# Environment: SCALE_DIR (default target/scale), SCALE_DELAY (the fake's seconds a request, 1.5).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${SCALE_DIR:-$root/target/scale}
skip() { echo "test-scale: skipped: $*" >&2; exit 0; }
# The proxy version the test was written against (its 429 at full slots, its cost header).
LITELLM_VERSION=1.108.7
fail() { echo "test-scale: FAILED: $*" >&2; exit 1; }

# The programs.
bin=${SCALE_BIN:-$root/target/debug}
[ -x "$bin/meeting" ] || fail "no meeting program in $bin (cargo build, or SCALE_BIN=DIR)"
command -v jq > /dev/null 2>&1 || skip "jq is not installed (apt-get install jq)"

# Slurm and munge.
PATH=$PATH:/usr/sbin
if ! command -v slurmctld > /dev/null 2>&1 || ! command -v munged > /dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null 2>&1; then
    echo "test-scale: installing slurm-wlm and munge (apt-get)" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge) > /dev/null 2>&1 || true
  fi
  command -v slurmctld > /dev/null 2>&1 && command -v munged > /dev/null 2>&1 \
    || skip "Slurm (Debian's slurm-wlm and munge) could not be installed"
fi
[ "$(id -u)" = 0 ] || skip "a single-node Slurm cluster needs root here (its daemons run as root)"

# The Python packages, in a venv of their own: the manifests' validators and the LiteLLM proxy.
rm -rf "$work/out" "$work/meetings" "$work/slurm" "$work"/*.log "$work"/*.json
mkdir -p "$work/meetings"
py=$work/venv/bin/python
if [ ! -x "$work/venv/bin/litellm" ] || ! "$py" -c 'import kubernetes_validate, hera' 2> /dev/null; then
  echo "test-scale: installing litellm[proxy], kubernetes-validate and hera into $work/venv (pip)" >&2
  python3 -m venv "$work/venv" > /dev/null 2>&1 && "$work/venv/bin/pip" install -q "litellm[proxy]==$LITELLM_VERSION" \
    kubernetes-validate==1.37.0 hera==7.1.0 pyyaml > "$work/pip.log" 2>&1 || true
fi
"$py" -c 'import kubernetes_validate, hera' 2> /dev/null \
  || skip "the manifests' validators (PyPI kubernetes-validate, hera) could not be installed (see $work/pip.log)"
[ -x "$work/venv/bin/litellm" ] || skip "LiteLLM's proxy (PyPI litellm[proxy]) could not be installed (see $work/pip.log)"
litellm=$work/venv/bin/litellm

# Kubernetes and Argo on paper: the manifests valid for their schemas, strictly.
"$py" "$root/tests/scale/validate_k8s.py" "$root"/share/k8s/*.yaml || fail "share/k8s/: not valid (above)"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fake_port=$(port); proxy_port=$(port)
pids=
cleanup() {
  for p in $pids; do kill "$p" 2> /dev/null || true; done
  sh "$root/tests/scale/slurm.sh" down "$work/slurm" || true
}
trap cleanup EXIT INT TERM

python3 "$root/tests/scale/fake_provider.py" "$fake_port" "$work/provider.json" \
  --delay "${SCALE_DELAY:-1.5}" --fail-on scale-meeting-5 > "$work/provider.log" 2>&1 &
pids="$pids $!"
UPSTREAM_BASE=http://127.0.0.1:$fake_port/v1 UPSTREAM_KEY=sk-upstream-not-on-nodes LITELLM_MASTER_KEY=sk-batch-scale \
  "$litellm" --config "$root/share/gateway/litellm.yaml" --host 127.0.0.1 --port "$proxy_port" > "$work/litellm.log" 2>&1 &
pids="$pids $!"
i=0
until python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=2)" \
  "http://127.0.0.1:$proxy_port/health/liveliness" 2> /dev/null; do
  i=$((i + 1)); [ "$i" -le 90 ] || fail "the LiteLLM proxy did not start in 90 s ($work/litellm.log)"
  sleep 1
done

# The cluster.
eval "$(sh "$root/tests/scale/slurm.sh" up "$work/slurm")" || fail "Slurm did not start ($work/slurm/log)"
export SLURM_CONF

# Six meetings, each with options, as a folder of meeting files.
for i in 1 2 3 4 5 6; do
  cat > "$work/meetings/m$i.yaml" <<YAML
topic: "scale-meeting-$i: which queue should service $i use?"
decision_packet:
  decision_to_make: "Pick the queue for service $i."
  options:
    - "Option A managed queue"
    - "Option B self-hosted queue"
YAML
done
n=$(BATCH_PREPARE=1 sh "$root/share/flows/batch.sh" "$work/meetings" "$work/out")
[ "$n" = 6 ] || fail "batch.sh prepared $n meetings, expected 6"

# Every node's meetings go to the gateway, with the gateway's key only.
cd "$work"
PATH=$bin:$PATH OPENAI_BASE_URL=http://127.0.0.1:$proxy_port/v1 OPENAI_API_KEY=sk-batch-scale \
  AGENT_MEETING_FLOWS=$root/share/flows \
  sbatch --parsable --array=1-"$n" --output="$work/out/slurm-%a.log" \
  "$root/share/flows/slurm-array.sbatch" "$work/out" --agents arch,biz --provider openai --model batch-model \
  --max-attempts 8 \
  > "$work/job_id" || fail "sbatch"
job=$(cat "$work/job_id")
echo "test-scale: job array $job: $n meetings through the proxy at :$proxy_port" >&2

# Kill task 2 mid-meeting (its first call answered, its report not written) and requeue it.
i=0
until [ -s "$work/out/runs/m2/llm.jsonl" ]; do
  i=$((i + 1)); [ "$i" -le 300 ] || fail "task 2 made no call in 150 s"
  sleep 0.5
done
[ ! -f "$work/out/reports/m2.md" ] || fail "task 2 ended before it could be killed (SCALE_DELAY too short)"
calls_before=$(grep -c . "$work/out/runs/m2/llm.jsonl")
scontrol requeue "${job}_2" || fail "scontrol requeue ${job}_2"
# Slurm holds a requeued job two minutes before it may start again; now will do here.
scontrol update JobId="${job}_2" StartTime=now > /dev/null 2>&1 || true
echo "test-scale: task 2 killed after $calls_before logged call(s) and requeued" >&2

# Wait for the array.
i=0
while [ -n "$(squeue -h -j "$job" 2> /dev/null)" ]; do
  i=$((i + 1)); [ "$i" -le 600 ] || fail "the array did not end in 300 s (squeue -j $job)"
  sleep 0.5
done
sleep 1

# Checks.
status=0
check() { if eval "$1"; then echo "ok: $2"; else echo "FAILED: $2" >&2; status=1; fi; }
for i in 1 2 3 4 5 6; do
  check "[ -s out/reports/m$i.md ] && [ \"\$(jq -r .status out/results/m$i.json)\" = finished ]" \
    "meeting m$i ended with its report and result"
  check "grep -q 'as the gateway billed it' out/reports/m$i.md" "m$i's report carries the gateway's cost"
done
check "grep -q 'restart 1' out/slurm-2.log" "task 2 ran again after its requeue (its log: restart 1)"
# The answers the meetings logged (an attempt that failed logs its error instead).
used=$(cat out/runs/*/llm.jsonl | jq -s 'map(select(.error == null)) | length')
answered=$(jq .answered provider.json)
dups=$(jq '.duplicates | length' provider.json)
# The one call in flight when task 2 was killed never reached its meeting: asked again, once.
check "[ $dups -le 1 ] && [ $answered -eq $((used + dups)) ]" \
  "no answered call asked again: the provider answered $answered, the meetings logged $used answers, $dups asked again (in flight at the kill)"
max=$(jq .max_in_flight provider.json)
# How many meetings were under way at once: their first to last logged call, overlapped.
at_once=$(for f in out/runs/*/llm.jsonl; do jq -s '[(map(.ts_ms) | min), 1], [(map(.ts_ms) | max), -1]' "$f"; done \
  | jq -s 'sort | reduce .[] as $e ({n: 0, most: 0}; .n += $e[1] | .most = ([.most, .n] | max)) | .most')
check "[ $max -le 2 ] && [ $at_once -gt 2 ]" \
  "the provider saw at most $max requests in flight (the proxy allows 2) while $at_once meetings ran at once"
check "[ \"\$(jq .rate_limited provider.json)\" = 1 ] && grep -q 'rate limited (fake)' out/runs/m5/llm.jsonl" \
  "the provider's 429 (m5's first request) reached m5 through the proxy, and its retry got past it"
busy=$(cat out/runs/*/llm.jsonl | jq -s 'map(select((.error // "") | test("HTTP 429"))) | length')
echo "the proxy answered $busy attempt(s) 429 (its slots full, or the provider's); every meeting paced and retried past them"
echo
sh "$root/share/flows/summary.sh" out/runs/*
exit "$status"
