//! The meetings the MCP server runs (docs/design/mcp.md#meetings): each one is the `meeting`
//! program, run as a child process of this executable with the flags a tool call settled, so a
//! meeting reached through MCP is the meeting a shell runs — same checks, same run folder, same
//! exit codes, resumable with `meeting --resume`. A blocking run reads the child's progress
//! lines from its stderr; a detached one (`meeting_start`) runs in its own process group and
//! outlives the server, and its state is read from its run folder.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::model::{MeetingResult, MeetingStatus};

/// Where the server runs meetings: the folder holding run folders, the context root for
/// documents named by a tool call, and the executable to run `meeting` from.
#[derive(Debug, Clone)]
pub struct Place {
    pub runs: PathBuf,
    /// Where its meetings' reports go: `reports/` of the folder the server runs in, as
    /// `meeting`'s default report path.
    pub reports: PathBuf,
    pub context_root: PathBuf,
    pub exe: PathBuf,
    /// Where meeting files made from a topic and documents are kept (one folder per run).
    pub made: PathBuf,
}

/// A `meeting` command line, ready to run.
#[derive(Debug, Clone)]
pub struct Launch {
    pub args: Vec<String>,
    /// The run folder it will use.
    pub run_dir: PathBuf,
    pub run_id: String,
    /// The caller's W3C `traceparent`: the meeting's trace becomes its child.
    pub traceparent: Option<String>,
}

impl Launch {
    pub fn with_traceparent(self, traceparent: Option<String>) -> Launch {
        Launch {
            traceparent,
            ..self
        }
    }
}

pub use crate::driver::child::Ended;

/// The children this server started and has not reaped yet, by run id.
#[derive(Default)]
pub struct Children {
    running: Mutex<BTreeMap<String, Child>>,
}

impl Children {
    /// Keep a detached child until it is reaped.
    fn keep(&self, id: &str, child: Child) {
        self.lock().insert(id.to_string(), child);
    }

    /// The process id of this server's child for `id`, while it runs.
    pub fn pid(&self, id: &str) -> Option<u32> {
        self.alive(id)
            .then(|| self.lock().get(id).map(Child::id))
            .flatten()
    }

    /// Whether this server's child for `id` is still running (reaping it when it has ended).
    pub fn alive(&self, id: &str) -> bool {
        let mut running = self.lock();
        let done = match running.get_mut(id) {
            None => return false,
            Some(child) => !matches!(child.try_wait(), Ok(None)),
        };
        if done {
            running.remove(id);
        }
        !done
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Child>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Run `launch` to its end, calling `progress` with each progress line (`[loop 2/6] …`), and
/// `started` with the child's process id once it runs (so a cancel can interrupt it).
pub fn run_blocking(
    place: &Place,
    launch: &Launch,
    started: impl FnOnce(u32),
    mut progress: impl FnMut(&str),
) -> Result<Ended> {
    let child = command(place, launch)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_error(place, &e))?;
    started(child.id());
    crate::driver::child::wait(child, 4, |line| progress(line))
}

/// Start `launch` detached (its own process group, no terminal, nothing of ours on its
/// stdin), and return once its run folder holds the meeting — or with its error when it
/// stops first (a bad meeting file, a missing key: before any call).
pub fn start_detached(place: &Place, launch: &Launch, children: &Children) -> Result<()> {
    let mut cmd = command(place, launch);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(|e| spawn_error(place, &e))?;
    // Its stderr goes on to ours while we run (a closed one does not stop the meeting).
    let said = Arc::new(Mutex::new(Vec::<String>::new()));
    let err = child.stderr.take().expect("piped");
    let lines = said.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
            crate::note!("{line}");
            lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    });
    let settings = launch.run_dir.join("meeting.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            // Let the reader take the last lines.
            std::thread::sleep(Duration::from_millis(50));
            // Ended already (waiting for a person, say): it started, its folder says the rest.
            if settings.exists() {
                return Ok(());
            }
            let said = said.lock().unwrap_or_else(|e| e.into_inner());
            let last: Vec<&str> = said
                .iter()
                .rev()
                .take(3)
                .rev()
                .map(String::as_str)
                .collect();
            return Err(Error::Runtime(if last.is_empty() {
                format!("meeting stopped before it started ({status})")
            } else {
                last.join("\n")
            }));
        }
        if settings.exists() {
            children.keep(&launch.run_id, child);
            return Ok(());
        }
        if Instant::now() > deadline {
            children.keep(&launch.run_id, child);
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn command(place: &Place, launch: &Launch) -> Command {
    let mut cmd = Command::new(&place.exe);
    cmd.arg("meeting").args(&launch.args).stdin(Stdio::null());
    // A person at the table is the client's user, asked through the client
    // (docs/design/mcp.md#elicitation): a meeting never reaches for the server's terminal or
    // editor, where no one is looking (and a detached one would stop on a terminal read).
    cmd.env_remove("VISUAL").env_remove("EDITOR").env(
        crate::stage::agent_turn::human::TTY_ENV,
        "/dev/null/no-terminal",
    );
    if let Some(tp) = &launch.traceparent {
        cmd.env(crate::otlp::TRACEPARENT_ENV, tp);
    }
    cmd
}

fn spawn_error(place: &Place, e: &std::io::Error) -> Error {
    Error::Runtime(format!(
        "cannot run {} meeting: {}",
        place.exe.display(),
        crate::io::os_error(e)
    ))
}

/// Stop a running meeting as Ctrl-C would: it stops between stages, resumable. With SIGTERM,
/// not SIGINT: a server started in the background (a script's `agent-meeting mcp &`) has
/// SIGINT ignored, its meetings inherit that and keep it (docs/design/mcp.md#meetings), while
/// SIGTERM is not ignored there.
pub fn interrupt(pid: u32) {
    #[cfg(unix)]
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// Whether a meeting drives the run folder: this server's child for `id`, or any process
/// holding the folder's lock. Reads no board, so it can be asked often.
pub fn running(run_dir: &Path, id: &str, children: &Children) -> bool {
    children.alive(id) || crate::driver::history::locked(run_dir)
}

/// What `meeting_start` answers: where the meeting it started runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Started {
    pub run_id: String,
    pub run_dir: String,
}

pub use crate::driver::history::RunState;

/// What `meeting_status` answers: its structured content, whose schema is the tool's output
/// schema.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusReport {
    pub run_id: String,
    pub run_dir: String,
    pub status: RunState,
    /// The loops the meeting has run.
    #[serde(rename = "loop")]
    pub loops: u32,
    pub max_loops: u32,
    /// LLM calls made.
    pub calls: u64,
    /// Tokens spent (prompt and completion).
    pub tokens: u64,
    /// The meeting's last event (a line of its events.jsonl), null before the first.
    pub last_event: Value,
    /// While `waiting`: what the person is asked, to answer with meeting_start
    /// {resume, answer} (docs/design/agent-turn.md#waiting-for-a-person).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Asked>,
}

/// What a waiting meeting asks its person.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Asked {
    pub agent: String,
    pub role: String,
    pub question: String,
    pub asked_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub documents: Vec<crate::model::WaitingDocument>,
    /// The answer to fill in (an AgentTurnResult).
    pub answer_template: Value,
    /// The same in its text form.
    pub answer_text: String,
}

/// What `meeting_status` says of a run folder: where the meeting stands, from its newest
/// checkpoint and last event, and whether something is driving it (`cancelled`: the client
/// cancelled it, so a stop is its cancel).
pub fn status(
    run_dir: &Path,
    id: &str,
    children: &Children,
    cancelled: bool,
) -> Result<StatusReport> {
    if !run_dir.join("meeting.json").exists() {
        return Err(Error::Usage(format!(
            "no meeting {id}: {} holds no run folder",
            run_dir.display()
        )));
    }
    let running = running(run_dir, id, children);
    let board = crate::driver::final_board(run_dir)?;
    let waiting = crate::driver::RunDir {
        path: run_dir.to_path_buf(),
    }
    .waiting()?
    .filter(|_| !running);
    let state = RunState::of(&board, running, waiting.is_some(), cancelled);
    Ok(StatusReport {
        run_id: id.to_string(),
        run_dir: run_dir.display().to_string(),
        status: state,
        loops: board.loop_count,
        max_loops: board.max_loops,
        calls: board.usage.calls,
        tokens: board.usage.tokens.prompt_tokens + board.usage.tokens.completion_tokens,
        last_event: last_line(&run_dir.join("events.jsonl")),
        waiting: waiting.map(|w| Asked {
            agent: w.agent,
            role: w.role,
            question: w.question,
            asked_at: w.asked_at,
            problem: w.problem,
            documents: w.documents,
            answer_template: w.answer_template,
            answer_text: w.answer_text,
        }),
    })
}

/// The last whole line of a JSONL file, parsed.
fn last_line(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null)
}

/// The MeetingResult of an ended meeting's run folder, as `meeting --resume` prints it (no
/// call is made: the meeting has ended). `None` while it has not ended.
pub fn ended_result(run_dir: &Path) -> Result<Option<MeetingResult>> {
    let board = crate::driver::final_board(run_dir)?;
    if board.next_stage().is_some() {
        return Ok(None);
    }
    let ui = crate::driver::Ui::new(true, false);
    let request = crate::driver::Request::Resume {
        dir: run_dir.to_path_buf(),
        changes: Default::default(),
    };
    match crate::driver::meeting(request, ui)? {
        crate::driver::Outcome::Ended { result, .. } => Ok(Some(*result)),
        crate::driver::Outcome::Stopped { error, .. } => Err(error),
        crate::driver::Outcome::DryRun(_) => Ok(None),
    }
}

/// Whether a meeting that ended so is an error for the tool's caller.
pub fn is_error(status: MeetingStatus) -> bool {
    matches!(status, MeetingStatus::Failed)
}
