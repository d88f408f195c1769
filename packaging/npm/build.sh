#!/usr/bin/env bash
# Makes the npm packages from dist's release archives: for each archive
# (agent-meeting-<target>.tar.xz or .zip) the platform package @agent-meeting/<os>-<arch> holding
# its executable, and the launcher package agent-meeting (packaging/npm/agent-meeting), each as
# the tarball `npm pack` makes, in OUT. Used by `make test-dist` and the release workflow.
#   packaging/npm/build.sh OUT ARCHIVE...
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
version=$(node -p "require('$here/agent-meeting/package.json').version")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for archive in "$@"; do
  name=$(basename "$archive")
  target=${name#agent-meeting-}
  target=${target%.tar.xz}
  target=${target%.zip}
  case "$target" in
    x86_64-unknown-linux-*) os=linux cpu=x64 ;;
    aarch64-unknown-linux-*) os=linux cpu=arm64 ;;
    x86_64-apple-darwin) os=darwin cpu=x64 ;;
    aarch64-apple-darwin) os=darwin cpu=arm64 ;;
    x86_64-pc-windows-msvc) os=win32 cpu=x64 ;;
    *) echo "build.sh: no npm platform for $name" >&2; exit 1 ;;
  esac
  exe=agent-meeting
  [ "$os" = win32 ] && exe=agent-meeting.exe
  dir="$work/$os-$cpu"
  mkdir -p "$dir/bin" "$work/unpacked-$target"
  case "$name" in
    *.zip) unzip -q -o "$archive" -d "$work/unpacked-$target" ;;
    *) tar -xJf "$archive" -C "$work/unpacked-$target" ;;
  esac
  found=$(find "$work/unpacked-$target" -type f -name "$exe")
  [ "$(printf '%s\n' "$found" | grep -c .)" = 1 ] || { echo "build.sh: want one $exe in $name, found: $found" >&2; exit 1; }
  cp "$found" "$dir/bin/$exe"
  cp "$here/../../LICENSE" "$dir/"
  chmod 755 "$dir/bin/$exe"
  cat > "$dir/package.json" <<JSON
{
  "name": "@agent-meeting/$os-$cpu",
  "version": "$version",
  "description": "The agent-meeting executable for $os $cpu ($target), run by the package agent-meeting",
  "license": "MIT",
  "repository": {
    "type": "git",
    "url": "git+https://github.com/agent-meeting/agent-meeting.git"
  },
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["bin/"],
  "preferUnplugged": true
}
JSON
  (cd "$dir" && npm pack --silent --pack-destination "$out" > /dev/null)
done
cp -R "$here/agent-meeting" "$work/agent-meeting"
cp "$here/../../LICENSE" "$work/agent-meeting/"
(cd "$work/agent-meeting" && npm pack --silent --pack-destination "$out" > /dev/null)
ls "$out"
