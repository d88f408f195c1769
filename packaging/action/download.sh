#!/usr/bin/env bash
# The Action's fast path (action.yml): fetch the release archive of agent-meeting for this
# runner and the action's ref from the GitHub Release dist made, check it against its .sha256,
# and put the executable in DEST. Prints downloaded=true, or downloaded=false where the ref has
# no release (a branch, a commit) or the release no archive for this platform: action.yml then
# builds from source. A checksum that does not match fails (exit 1), never falls back.
#   download.sh REF DEST
# AGENT_MEETING_RELEASES: the base URL of the releases' files (default: from GITHUB_ACTION_PATH,
# .../_actions/OWNER/REPO/REF, https://github.com/OWNER/REPO/releases/download);
# AGENT_MEETING_TARGET: the target triple (default: this runner's, from RUNNER_OS/RUNNER_ARCH
# or uname).
set -euo pipefail
ref=${1:-}
dest=$2
action_path=${GITHUB_ACTION_PATH:-}
[ -n "$ref" ] || ref=$(basename "$action_path")
base=${AGENT_MEETING_RELEASES:-}
if [ -z "$base" ] && [ -n "$action_path" ]; then
  repo=$(basename "$(dirname "$action_path")")
  owner=$(basename "$(dirname "$(dirname "$action_path")")")
  base="https://github.com/$owner/$repo/releases/download"
fi

target=${AGENT_MEETING_TARGET:-}
if [ -z "$target" ]; then
  os=${RUNNER_OS:-$(uname -s)}
  arch=${RUNNER_ARCH:-$(uname -m)}
  case "$os/$arch" in
    Linux/X64 | Linux/x86_64) target=x86_64-unknown-linux-musl ;;
    Linux/ARM64 | Linux/aarch64) target=aarch64-unknown-linux-musl ;;
    macOS/X64 | Darwin/x86_64) target=x86_64-apple-darwin ;;
    macOS/ARM64 | Darwin/arm64) target=aarch64-apple-darwin ;;
    Windows/X64) target=x86_64-pc-windows-msvc ;;
  esac
fi

say() { echo "downloaded=$1"; [ -z "${GITHUB_OUTPUT:-}" ] || echo "downloaded=$1" >> "$GITHUB_OUTPUT"; }
if [ -z "$target" ] || [ -z "$ref" ] || [ -z "$base" ]; then
  echo "download.sh: no release archive to look for (target '$target', ref '$ref'): building" >&2
  say false
  exit 0
fi

archive=agent-meeting-$target.tar.xz
exe=agent-meeting
case "$target" in *-windows-*) archive=agent-meeting-$target.zip exe=agent-meeting.exe ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! curl -fsSL --retry 3 -o "$work/$archive" "$base/$ref/$archive"; then
  echo "download.sh: no $archive in the release $ref: building" >&2
  say false
  exit 0
fi
curl -fsSL --retry 3 -o "$work/$archive.sha256" "$base/$ref/$archive.sha256"
want=$(cut -d ' ' -f 1 < "$work/$archive.sha256")
if command -v sha256sum > /dev/null; then
  got=$(sha256sum "$work/$archive" | cut -d ' ' -f 1)
else
  got=$(shasum -a 256 "$work/$archive" | cut -d ' ' -f 1)
fi
if [ "$got" != "$want" ]; then
  echo "download.sh: $archive has SHA-256 $got, its .sha256 says $want" >&2
  exit 1
fi
mkdir -p "$work/x" "$dest"
case "$archive" in
  *.zip) unzip -q "$work/$archive" -d "$work/x" ;;
  *) tar -xJf "$work/$archive" -C "$work/x" ;;
esac
cp "$(find "$work/x" -type f -name "$exe")" "$dest/$exe"
chmod 755 "$dest/$exe"
echo "download.sh: agent-meeting $ref ($target) from $base, SHA-256 $got" >&2
say true
