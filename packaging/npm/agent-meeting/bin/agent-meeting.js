#!/usr/bin/env node
// The `agent-meeting` command of the npm package: runs the executable of this platform's package
// (@agent-meeting/<os>-<arch>, the optional dependency npm installed here) with the same
// arguments, standard streams and exit status.
"use strict";
const { spawnSync } = require("child_process");

const pkg = `@agent-meeting/${process.platform}-${process.arch}`;
const exe = process.platform === "win32" ? "agent-meeting.exe" : "agent-meeting";
let path;
try {
  path = require.resolve(`${pkg}/bin/${exe}`);
} catch {
  console.error(
    `agent-meeting: no executable for ${process.platform}-${process.arch}: the package ${pkg} ` +
      "is not installed (optional dependencies left out, or no build for this platform); " +
      "other ways to install: https://github.com/agent-meeting/agent-meeting"
  );
  process.exit(1);
}
const run = spawnSync(path, process.argv.slice(2), { stdio: "inherit" });
if (run.error) {
  console.error(`agent-meeting: cannot run ${path}: ${run.error.message}`);
  process.exit(1);
}
if (run.signal) {
  process.kill(process.pid, run.signal);
}
process.exit(run.status ?? 1);
