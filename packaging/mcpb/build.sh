#!/usr/bin/env bash
# Makes a Claude Desktop bundle (.mcpb) per dist release archive: manifest.json (beside this
# script) with the archive's executable under server/, limited to the archive's platform,
# validated and packed by the bundle tool (`mcpb`, npm's @anthropic-ai/mcpb; MCPB names another
# command) into OUT/agent-meeting-<target>.mcpb. Used by `make test-dist` and the release workflow.
#   packaging/mcpb/build.sh OUT ARCHIVE...
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
mcpb=${MCPB:-mcpb}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for archive in "$@"; do
  name=$(basename "$archive")
  target=${name#agent-meeting-}
  target=${target%.tar.xz}
  target=${target%.zip}
  case "$target" in
    *-linux-*) platform=linux exe=agent-meeting ;;
    *-apple-darwin) platform=darwin exe=agent-meeting ;;
    *-windows-*) platform=win32 exe=agent-meeting.exe ;;
    *) echo "build.sh: no bundle platform for $name" >&2; exit 1 ;;
  esac
  dir="$work/$target"
  mkdir -p "$dir/server" "$work/unpacked-$target"
  case "$name" in
    *.zip) unzip -q -o "$archive" -d "$work/unpacked-$target" ;;
    *) tar -xJf "$archive" -C "$work/unpacked-$target" ;;
  esac
  cp "$(find "$work/unpacked-$target" -type f -name "$exe")" "$dir/server/$exe"
  chmod 755 "$dir/server/$exe"
  cp "$here/../../LICENSE" "$dir/"
  node -e '
    const fs = require("fs");
    const [from, to, platform, exe] = process.argv.slice(1);
    const m = JSON.parse(fs.readFileSync(from, "utf8"));
    m.server.entry_point = `server/${exe}`;
    m.compatibility.platforms = [platform];
    fs.writeFileSync(to, JSON.stringify(m, null, 2) + "\n");
  ' "$here/manifest.json" "$dir/manifest.json" "$platform" "$exe"
  $mcpb validate "$dir/manifest.json"
  $mcpb pack "$dir" "$out/agent-meeting-$target.mcpb"
done
