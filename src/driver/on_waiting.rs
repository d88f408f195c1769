//! `--on-waiting CMD` (docs/design/agent-turn.md#a-ping-when-a-person-is-needed): when a meeting
//! stops for a person, tell someone. The command runs once per question — `sh -c CMD`, the
//! run folder's `waiting.json` on stdin, the run folder in `AGENT_MEETING_RUN_DIR` — for at
//! most [`TIMEOUT`]; its output goes to stderr (stdout is the MeetingResult's). It never
//! stops the meeting: a failure is one line on stderr. A resume that finds the meeting still
//! waiting for the same call runs nothing again (`on-waiting.done` in the run folder keeps
//! the call told about).
//!
//! The command is the user's own (a flag, or their config file), never the run folder's: a
//! folder restores content, not a command (docs/design/run-folder.md#a-run-folder-is-input).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the command may run before it is stopped.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// `AGENT_MEETING_ON_WAITING_TIMEOUT_MS`: a shorter limit, for the tests of the limit.
const TIMEOUT_ENV: &str = "AGENT_MEETING_ON_WAITING_TIMEOUT_MS";

/// The file that keeps the call last told about.
pub const DONE_FILE: &str = "on-waiting.done";

/// The run folder, in the command's environment.
pub const RUN_DIR_ENV: &str = "AGENT_MEETING_RUN_DIR";

/// Tell `command` that the meeting in `run_dir` waits for the person of `call` (`waiting`:
/// the waiting.json text). What went wrong is said on stderr and otherwise ignored.
pub fn notify(run_dir: &Path, command: &str, waiting: &str, call: u64) {
    let done = run_dir.join(DONE_FILE);
    if std::fs::read_to_string(&done).is_ok_and(|t| t.trim() == call.to_string()) {
        return;
    }
    // Marked first: a command that fails or hangs is not run again by a resume either.
    if let Err(e) = crate::io::write_atomic(&done, format!("{call}\n").as_bytes()) {
        crate::note!("meeting: --on-waiting: not run: {e}");
        return;
    }
    if let Err(why) = run(run_dir, command, waiting) {
        crate::note!("meeting: --on-waiting: {why} (the meeting waits all the same)");
    }
}

fn run(run_dir: &Path, command: &str, waiting: &str) -> Result<(), String> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .env(RUN_DIR_ENV, super::absolute(run_dir))
        .stdin(Stdio::piped())
        .stdout(stderr_for_child())
        .stderr(Stdio::inherit());
    // Its own process group: stopped at the limit with whatever it started.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start sh: {}", crate::io::os_error(&e)))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is fine.
        let _ = stdin.write_all(waiting.as_bytes());
    }
    let limit = std::env::var(TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(TIMEOUT, Duration::from_millis);
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("`{command}` failed ({status})")),
            Ok(None) if started.elapsed() >= limit => {
                stop(&mut child);
                return Err(format!(
                    "`{command}` still ran after {} s: stopped",
                    limit.as_secs_f64()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(crate::io::os_error(&e)),
        }
    }
}

/// The command's stdout: this process's stderr (stdout holds the MeetingResult).
fn stderr_for_child() -> Stdio {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
            return Stdio::from(fd);
        }
    }
    Stdio::null()
}

/// Stop the command and its process group.
fn stop(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}
