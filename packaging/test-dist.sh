#!/usr/bin/env bash
# `make test-dist`: builds this machine's release packages as the release does (dist's archive and
# shell installer, the wheel, the npm packages, the .mcpb bundle), installs each where no Rust is
# on PATH (a clean venv, uvx, pipx, an npm prefix, an unpacked bundle and archive, the shell
# installer and the Action's download step against a local HTTP server) and runs through each
# `--version`, a sample meeting and an MCP initialize + tools/list. Also checks the release config:
# `dist plan` (one executable per archive, release.yml up to date) and server.json against the
# MCP registry's schema. Its tools (dist, maturin, uv, pipx, mcpb, the schema) go under
# target/dist-tools; one that cannot be installed fails the run, naming it. Times and sizes
# are printed at the end and kept in target/test-dist/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/target/dist-tools
out=$root/target/test-dist
target=$(rustc -vV | sed -n 's/^host: //p')
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
rm -rf "$out"
mkdir -p "$out" "$tools"
summary=$out/summary.txt
t0=$(date +%s)
lap=$t0
step() {
  local now
  now=$(date +%s)
  [ -z "${current:-}" ] || echo "$current: $((now - lap)) s" >> "$summary"
  current=$1
  lap=$now
  printf '\n== test-dist: %s\n' "$1"
}
fail() {
  echo "test-dist: $*" >&2
  exit 1
}

step "tools (target/dist-tools)"
for tool in python3 node npm curl tar xz unzip sha256sum; do
  command -v "$tool" > /dev/null || fail "$tool is required (apt-get install python3-venv nodejs npm curl xz-utils unzip)"
done
[ -x "$tools/venv/bin/python" ] || python3 -m venv "$tools/venv" || fail "python3 -m venv failed"
"$tools/venv/bin/pip" install -q --disable-pip-version-check maturin==1.16.0 \
  astral-dev-toolchain-cargo-dist==0.33.0 uv==0.13.10 pipx==1.18.4 check-jsonschema==0.39.0 ||
  fail "cannot install maturin, dist (astral-dev-toolchain-cargo-dist), uv, pipx and check-jsonschema from PyPI"
npm install -q --no-audit --no-fund --prefix "$tools/npm" @anthropic-ai/mcpb@2.1.2 > /dev/null ||
  fail "cannot install the bundle tool mcpb (@anthropic-ai/mcpb) from npm"
# The MCP registry's server.json schema (2025-12-11) as PyPI's mcp-registry-sdk ships it; that
# package wants Python 3.13, so its wheel is fetched and opened, not installed.
schema=$tools/server.schema.json
if [ ! -s "$schema" ]; then
  "$tools/venv/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.13 -d "$tools/sdk" mcp-registry-sdk==0.1.0 ||
    fail "cannot fetch mcp-registry-sdk (the MCP registry's server.json schema) from PyPI"
  unzip -p "$tools"/sdk/mcp_registry_sdk-0.1.0-*.whl mcpreg/_spec/server.schema.snapshot.json > "$schema"
fi
export PATH="$tools/venv/bin:$tools/npm/node_modules/.bin:$PATH"

step "release config: dist plan, server.json"
dist plan --output-format=json > "$out/plan.json" 2> "$out/plan.err" ||
  fail "dist plan: $(cat "$out/plan.err") (after a change to dist-workspace.toml: dist generate)"
python3 - "$out/plan.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))
archives = {a["target_triples"][0]: a for a in plan["artifacts"].values() if a["kind"] == "executable-zip"}
want = {"x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl", "x86_64-apple-darwin",
        "aarch64-apple-darwin", "x86_64-pc-windows-msvc"}
assert set(archives) == want, f"archives for {sorted(archives)}, want {sorted(want)}"
for target, a in archives.items():
    exes = [x["name"] for x in a["assets"] if x["kind"] == "executable"]
    assert exes == ["agent-meeting"], f"{target}: executables {exes}"
kinds = sorted({a["kind"] for a in plan["artifacts"].values()})
assert "installer" in kinds and "checksum" in kinds, kinds
print(f"dist plan: {len(archives)} archives of one executable each, {', '.join(kinds)}")
PY
check-jsonschema --schemafile "$schema" server.json

step "dist build (this machine's archive, $target)"
# "host" mode: the archive of this machine's target (in the release, each runner builds its own
# with --artifacts=local --target=...), the shell installer and the source tarball.
dist build > "$out/dist-build.log" 2>&1 ||
  { tail -30 "$out/dist-build.log"; fail "dist build failed"; }
archive=target/distrib/agent-meeting-$target.tar.xz
[ -f "$archive" ] || fail "no $archive"
tar -tJf "$archive" > "$out/archive-files.txt"
[ "$(grep -c '/agent-meeting$' "$out/archive-files.txt")" = 1 ] && [ "$(grep -vc '/$' "$out/archive-files.txt")" = 3 ] ||
  fail "the archive should hold agent-meeting, LICENSE and README.md: $(cat "$out/archive-files.txt")"
(cd target/distrib && sha256sum -c "agent-meeting-$target.tar.xz.sha256" > /dev/null) ||
  fail "the archive does not match its .sha256"

step "wheel (maturin)"
# The dist profile and the target of dist's build, so cargo reuses that build.
(cd packaging/pypi && maturin build --locked --profile dist --target "$target" --out "$out/wheel") \
  > "$out/maturin.log" 2>&1 || { tail -30 "$out/maturin.log"; fail "maturin build failed"; }
wheel=$(ls "$out"/wheel/agent_meeting-"$version"-*.whl)
[ "$(unzip -l "$wheel" | grep -c '\.data/scripts/')" = 1 ] || fail "the wheel should carry one executable"

step "npm packages and the .mcpb bundle"
packaging/npm/build.sh "$out/npm" "$archive" > /dev/null
MCPB=mcpb packaging/mcpb/build.sh "$out/mcpb" "$archive" > "$out/mcpb.log" 2>&1 ||
  { cat "$out/mcpb.log"; fail "the bundle failed"; }
bundle=$out/mcpb/agent-meeting-$target.mcpb

# A local stand-in for the GitHub Release: /<tag>/<file>, as in .../releases/download/<tag>/<file>.
mkdir -p "$out/releases/v$version"
cp target/distrib/agent-meeting-"$target".tar.xz* target/distrib/agent-meeting-installer.sh "$out/releases/v$version/"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$out/releases" "$port" > "$out/http.log" 2>&1 &
server=$!
trap 'kill $server 2> /dev/null || true' EXIT
releases=http://127.0.0.1:$port
for _ in $(seq 50); do curl -fs -o /dev/null "$releases/" && break; sleep 0.1; done

# No Rust from here on: PATH without cargo's and rustup's folders.
clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -e '\.cargo' -e '\.rustup' | paste -sd: -)
check() { # NAME COMMAND...: --version, a sample meeting, MCP initialize + tools/list
  local name=$1 dir
  shift
  dir=$(mktemp -d "$out/run-XXXX")
  (
    cd "$dir"
    export PATH=$clean_path
    ! command -v cargo > /dev/null || fail "cargo is still on PATH"
    "$@" --version | grep -q "$version" || fail "$name: --version does not say $version"
    "$@" meeting --provider sample -a arch,biz "Adopt Rust?" > meeting.json 2> meeting.err ||
      fail "$name: the sample meeting failed: $(cat meeting.err)"
    grep -q '"status":"finished"' meeting.json && [ -s reports/adopt-rust.md ] ||
      fail "$name: the sample meeting wrote no report"
    python3 "$root/packaging/mcp_smoke.py" "$@" mcp 2> mcp.err || fail "$name: MCP: $(cat mcp.err)"
  ) | sed "s/^/$name: /"
  echo "$name: --version, sample meeting, MCP ok"
}

step "install and run: archive"
mkdir -p "$out/archive" && tar -xJf "$archive" -C "$out/archive"
check archive "$out/archive/agent-meeting-$target/agent-meeting"

step "install and run: shell installer (from the local release)"
AGENT_MEETING_DOWNLOAD_URL=$releases/v$version AGENT_MEETING_UNMANAGED_INSTALL=$out/installer \
  sh target/distrib/agent-meeting-installer.sh --quiet > "$out/installer.log" 2>&1 ||
  { cat "$out/installer.log"; fail "the shell installer failed"; }
[ -L "$out/installer/meeting" ] || [ -x "$out/installer/meeting" ] || fail "the installer made no link 'meeting'"
check installer "$out/installer/agent-meeting"
# A program's own name: the installer's link runs that program.
(PATH=$out/installer:$clean_path && cd "$(mktemp -d "$out/run-XXXX")" &&
  meeting --version | grep -q "^meeting $version" &&
  meeting --provider sample -a arch,biz "Adopt Rust?" > /dev/null 2>&1 && [ -s reports/adopt-rust.md ]) ||
  fail "the installer's link 'meeting' does not run the meeting"
echo "installer: the link 'meeting' runs a sample meeting"

step "install and run: wheel in a clean venv, uvx, pipx"
python3 -m venv "$out/venv"
"$out/venv/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
check venv "$out/venv/bin/agent-meeting"
check uvx env UV_CACHE_DIR="$out/uv-cache" UV_TOOL_DIR="$out/uv-tools" uvx --offline --from "$wheel" agent-meeting
PIPX_HOME=$out/pipx PIPX_BIN_DIR=$out/pipx/bin pipx install -q "$wheel" > /dev/null 2>&1 ||
  PIPX_HOME=$out/pipx PIPX_BIN_DIR=$out/pipx/bin pipx install "$wheel"
check pipx "$out/pipx/bin/agent-meeting"

step "install and run: npm (launcher + platform package), npx"
mkdir -p "$out/npm-prefix"
(cd "$out/npm-prefix" && npm init -y > /dev/null &&
  npm install -q --no-audit --no-fund "$out"/npm/agent-meeting-"$version".tgz "$out"/npm/agent-meeting-linux-*-"$version".tgz > /dev/null) ||
  fail "npm install failed"
check npm "$out/npm-prefix/node_modules/.bin/agent-meeting"
check npx npx --prefix "$out/npm-prefix" --no -- agent-meeting

step "install and run: .mcpb bundle"
mcpb info "$bundle" > "$out/mcpb-info.txt"
mcpb unpack "$bundle" "$out/mcpb-unpacked" > /dev/null
mkdir -p "$out/workspace"
PATH=$clean_path python3 packaging/mcp_smoke.py --mcpb "$out/mcpb-unpacked" "$out/workspace" | sed 's/^/mcpb (as its manifest runs it): /'
check mcpb "$out/mcpb-unpacked/server/agent-meeting"

step "the Action's download step (local release)"
a0=$(date +%s%N)
AGENT_MEETING_RELEASES=$releases AGENT_MEETING_TARGET=$target \
  packaging/action/download.sh "v$version" "$out/action-bin" > "$out/action.out"
a1=$(date +%s%N)
grep -q downloaded=true "$out/action.out" || fail "the Action downloaded nothing: $(cat "$out/action.out")"
check action "$out/action-bin/agent-meeting"
AGENT_MEETING_RELEASES=$releases AGENT_MEETING_TARGET=$target \
  packaging/action/download.sh main "$out/action-none" 2> /dev/null | grep -q downloaded=false ||
  fail "the Action should build where the ref has no release"
echo "action download path: $(((a1 - a0) / 1000000)) ms" >> "$summary"

step "done"
{
  echo "total: $(($(date +%s) - t0)) s"
  for f in "$archive" "$wheel" "$out"/npm/*.tgz "$bundle"; do
    echo "size $(basename "$f"): $(du -k "$f" | cut -f1) KiB"
  done
} >> "$summary"
echo
cat "$summary"
