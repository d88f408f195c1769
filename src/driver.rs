//! The `meeting` driver (DESIGN.md#run-folder): takes the board through the stages (in-process,
//! `in_process`; a `--stage` override as a program) until the meeting ends, keeps the run folder (the latest stage outputs, `events.jsonl` appended with
//! each stage's events, `llm.jsonl`), resumes a killed meeting from its last complete board,
//! and reports progress.
//!
//! It owns nothing but the loop, the run folder and progress: every rule of the meeting lives in
//! the stages, which is why a user can swap any of them (`--stage NAME=COMMAND`).

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cli::BoardArgs;
use crate::error::{Error, Result};
use crate::in_process::{Made, Stages};
use crate::io::{os_error, to_json_line, write_atomic};
use crate::llm::LlmArgs;
use crate::model::{
    Board, Event, EventType, MeetingPacket, MeetingResult, ReportResult, Status, TurnStatus,
    PACKET_VERSION,
};
use crate::stage::Stage;
use crate::text::one_line;

/// Version of `meeting.json`; a run folder of another version cannot be resumed.
pub const SETTINGS_VERSION: u32 = 2;

/// Where a meeting's input comes from: `--meeting-file F` or `--topic T`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeetingSource {
    MeetingFile(PathBuf),
    Topic(String),
}

/// Everything a meeting run needs to go on after a restart, saved as `meeting.json` in the run
/// folder (DESIGN.md#run-folder): typed, versioned, absolute paths, no secrets (keys stay in
/// the environment). The stage programs still get what they need on their command line,
/// made from this in one place: [`RunSettings::stage_args`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSettings {
    pub settings_version: u32,
    pub source: MeetingSource,
    /// collect-context's `--allow-sensitive`.
    pub allow_sensitive: bool,
    /// collect-context's `--no-redact` (absent in older run folders: redaction on).
    #[serde(default)]
    pub no_redact: bool,
    /// collect-context's `--context-root` (absolute), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_root: Option<PathBuf>,
    /// collect-context's `--max-context-chars`, when not the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context_chars: Option<usize>,
    /// render-report's `--template` (absolute), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<PathBuf>,
    /// Participants, PM, loop limit and the (settled) trace id.
    pub board: BoardArgs,
    /// The LLM flags of the stages; `llm_log` is this run folder's `llm.jsonl`.
    pub llm: LlmArgs,
    pub report_file: PathBuf,
    /// Stages replaced by a user command run with `sh -c`.
    #[serde(default)]
    pub stage_overrides: BTreeMap<Stage, String>,
    /// The config file the stages read (`AGENT_MEETING_CONFIG`): the user's while the meeting
    /// starts, then the run folder's `config.yaml`, a copy, so a later edit of the user's file
    /// does not change a resumed meeting (DESIGN.md#config). None: no config file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_file: Option<PathBuf>,
    /// The user's own `--llm-log` / `MEETING_LLM_LOG`: every line the stages append to the
    /// run folder's `llm.jsonl` is appended here too (DESIGN.md#run-folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_llm_log: Option<PathBuf>,
    /// agent-turn's `--human-answers` (absolute), when given (DESIGN.md#a-human-at-the-table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_answers: Option<PathBuf>,
}

impl RunSettings {
    /// The command line of `stage`'s program: the one place the settings become flags.
    pub fn stage_args(&self, stage: Stage) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut flag = |name: &str, v: Option<String>| {
            if let Some(v) = v {
                out.extend([name.to_string(), v]);
            }
        };
        let path = |p: &Path| Some(p.display().to_string());
        let llm = &self.llm;
        match stage {
            Stage::CollectContext => {
                match &self.source {
                    MeetingSource::MeetingFile(f) => flag("--meeting-file", path(f)),
                    MeetingSource::Topic(t) => flag("--topic", Some(t.clone())),
                }
                flag(
                    "--context-root",
                    self.context_root.as_deref().and_then(path),
                );
                flag(
                    "--max-context-chars",
                    self.max_context_chars.map(|n| n.to_string()),
                );
            }
            Stage::InitBoard => {
                let b = &self.board;
                flag("--agents", Some(b.agents.join(",")));
                flag("--agents-dir", b.agents_dir.as_deref().and_then(path));
                flag("--max-loops", Some(b.max_loops.to_string()));
                flag("--max-parallel", Some(b.max_parallel.to_string()));
                flag(
                    "--max-total-tokens",
                    b.max_total_tokens.map(|n| n.to_string()),
                );
                flag("--trace-id", b.trace_id.clone());
                flag("--pm", b.pm.clone());
            }
            Stage::PmStep | Stage::AgentTurn => {
                let opt_path = |p: &Option<PathBuf>| p.as_deref().and_then(path);
                flag("--cassette", opt_path(&llm.cassette));
                flag("--record", opt_path(&llm.record));
                flag("--llm-log", opt_path(&llm.llm_log));
                flag("--connect-timeout", Some(llm.connect_timeout.to_string()));
                flag("--read-timeout", Some(llm.read_timeout.to_string()));
                flag("--max-attempts", Some(llm.max_attempts.to_string()));
                flag("--retry-base-ms", Some(llm.retry_base_ms.to_string()));
                flag("--retry-max-secs", Some(llm.retry_max_secs.to_string()));
                if stage == Stage::AgentTurn {
                    flag(
                        "--human-answers",
                        self.human_answers.as_deref().and_then(path),
                    );
                }
            }
            Stage::MergeBoard => {}
            Stage::RenderReport => {
                flag("--report-file", path(&self.report_file));
                flag("--template", self.template.as_deref().and_then(path));
            }
        }
        // The meeting-wide model defaults go on the board (init-board) and to the LLM stages.
        if matches!(stage, Stage::InitBoard | Stage::PmStep | Stage::AgentTurn) {
            flag("--provider", llm.provider.clone());
            flag("--model", llm.model.clone());
            flag("--temperature", llm.temperature.map(|t| t.to_string()));
            flag("--max-tokens", llm.max_tokens.map(|t| t.to_string()));
        }
        let switches: &[(bool, &str)] = match stage {
            Stage::CollectContext => &[
                (self.allow_sensitive, "--allow-sensitive"),
                (self.no_redact, "--no-redact"),
            ],
            Stage::PmStep | Stage::AgentTurn => &[
                (llm.strict_replay, "--strict-replay"),
                (llm.no_native_schema, "--no-native-schema"),
                (llm.no_response_format, "--no-response-format"),
                (llm.reuse_log, "--reuse-log"),
            ],
            _ => &[],
        };
        out.extend(
            switches
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, s)| s.to_string()),
        );
        out
    }
}

/// How the driver talks to the user.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ui {
    pub quiet: bool,
    pub step: bool,
    pub color: bool,
    /// Show an elapsed-time indicator while a stage runs (stderr is a terminal).
    pub ticker: bool,
}

impl Ui {
    /// The UI while the stage `board` is waiting for runs: no ticker during a human's turn,
    /// which would write over the person answering on the terminal.
    fn for_stage(self, board: &Board) -> Ui {
        Ui {
            ticker: self.ticker && !crate::stage::agent_turn::human::is_human_turn(board),
            ..self
        }
    }
}

/// Where the stage programs are: beside the driver's own executable, else on PATH.
pub(crate) fn stage_program(name: &str) -> PathBuf {
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            let beside = dir.join(name);
            if beside.is_file() {
                return beside;
            }
        }
    }
    PathBuf::from(name)
}

/// One stage's outcome.
pub(crate) struct StageOutput {
    pub stdout: Vec<u8>,
}

/// Run one stage with `input` on stdin. A non-zero exit becomes an error carrying the stage's
/// own message and exit code.
pub(crate) fn run_stage(
    stage: Stage,
    settings: &RunSettings,
    input: &[u8],
    ui: Ui,
) -> Result<StageOutput> {
    let (out, failure) = run_stage_outcome(stage, settings, input, ui)?;
    match failure {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Like [`run_stage`], but a stage that exits non-zero still hands over what it printed (a
/// render-report that could not save the report prints the `failed` board).
pub(crate) fn run_stage_outcome(
    stage: Stage,
    settings: &RunSettings,
    input: &[u8],
    ui: Ui,
) -> Result<(StageOutput, Option<Error>)> {
    let name = stage.program();
    let mut cmd = match settings.stage_overrides.get(&stage) {
        Some(user) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(user);
            c
        }
        None => {
            let mut c = Command::new(stage_program(name));
            c.args(settings.stage_args(stage));
            // The settings travel as flags; the variables behind the same flags must not
            // change a resumed meeting (DESIGN.md#resume).
            for var in crate::llm::args::flag_env_vars() {
                c.env_remove(var);
            }
            c.env_remove(crate::stage::agent_turn::human::ANSWERS_ENV);
            c
        }
    };
    // The meeting's config file, pinned; empty: none (DESIGN.md#config).
    cmd.env(
        crate::config::CONFIG_ENV,
        settings.config_file.as_deref().unwrap_or(Path::new("")),
    );
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        Error::Runtime(format!(
            "cannot start {name}: {} (install the programs with `cargo install --path .` or put them on PATH)",
            os_error(&e)
        ))
    })?;
    stop::running(Some(child.id()));
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        // A stage may exit without reading all of stdin; its exit status tells what happened.
        let _ = stdin.write_all(&input);
    });
    // A stage's stderr is held until it ends: on success its warnings are shown, on failure
    // its last line becomes the driver's one-line message.
    let mut stderr = child.stderr.take().expect("piped stderr");
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text.lines().map(str::to_string).collect::<Vec<String>>()
    });
    let done = Arc::new(AtomicBool::new(false));
    let ticker = ui
        .ticker
        .then(|| spawn_ticker(name.to_string(), done.clone()));
    let mut stdout = Vec::new();
    let read = child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_end(&mut stdout);
    let status = child.wait();
    stop::running(None);
    done.store(true, Ordering::Relaxed);
    if let Some(t) = ticker {
        let _ = t.join();
    }
    let _ = writer.join();
    let err_lines = err_reader.join().unwrap_or_default();
    let status = status.map_err(|e| Error::Runtime(format!("{name}: {}", os_error(&e))))?;
    read.map_err(|e| Error::Runtime(format!("{name}: cannot read its output: {}", os_error(&e))))?;
    let mut err_lines: Vec<String> = err_lines
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .collect();
    if !status.success() {
        // A stage that died with the driver's Ctrl-C or SIGTERM did not fail: the meeting stops.
        stop::check_after_child(&status);
        let code = status.code().unwrap_or(1);
        // A panic (exit 101) ends with a backtrace hint: its own message is what tells.
        let panic = (code == 101)
            .then(|| err_lines.iter().position(|l| l.contains("panicked at")))
            .flatten()
            .map(|i| err_lines[i..(i + 2).min(err_lines.len())].join(" "));
        let last = err_lines.pop().unwrap_or_else(|| "no message".to_string());
        let last = panic.unwrap_or(last);
        if !ui.quiet {
            err_lines.iter().for_each(|l| crate::note!("{l}"));
        }
        let msg = format!("stage {name} failed (exit {code}): {last}");
        let e = if code == 2 {
            Error::Usage(msg)
        } else {
            Error::Runtime(msg)
        };
        return Ok((StageOutput { stdout }, Some(e)));
    }
    if !ui.quiet {
        err_lines.iter().for_each(|l| crate::note!("{l}"));
    }
    Ok((StageOutput { stdout }, None))
}

/// What a stage handed over: its output line (the checkpoint) and that output read.
type Handed = Option<(String, Made)>;

/// Run one stage of the loop on `board`: in this process when it is a built-in stage, else its
/// command with the board on stdin, its output read back (a user's stage prints the
/// pipeline's own data: output that is not a board is a runtime failure of that stage, exit 1,
/// not bad input from the user).
fn run_loop_stage(
    stages: &Stages,
    stage: Stage,
    board: &Board,
    ui: Ui,
) -> Result<(Handed, Option<Error>)> {
    if stages.runs(stage) {
        let done = Arc::new(AtomicBool::new(false));
        let ticker = ui
            .ticker
            .then(|| spawn_ticker(stage.program().to_string(), done.clone()));
        let (made, failure) = stages.run(stage, board);
        done.store(true, Ordering::Relaxed);
        if let Some(t) = ticker {
            let _ = t.join();
        }
        let handed = made.map(|m| {
            let text = match &m {
                Made::Board(b) => to_json_line(b, false),
                Made::Report(r) => to_json_line(r, false),
            };
            (text, m)
        });
        return Ok((handed, failure));
    }
    let input = to_json_line(board, false);
    let (out, failure) = run_stage_outcome(stage, stages.settings(), input.as_bytes(), ui)?;
    let label = format!("{stage} output");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let unreadable =
        |e: Error| Error::Runtime(format!("stage {stage} wrote an unusable board: {e}"));
    if let Some(e) = failure {
        // A render-report that could not save the report still prints the `failed` result.
        let report = (stage == Stage::RenderReport)
            .then(|| crate::io::parse_doc::<ReportResult>(&label, &text, crate::io::Format::Json))
            .and_then(|r| r.ok())
            .map(|r| (text.clone(), Made::Report(r)));
        return Ok((report, Some(e)));
    }
    if std::str::from_utf8(&out.stdout).is_err() {
        return Err(Error::Runtime(format!(
            "stage {stage} wrote output that is not UTF-8"
        )));
    }
    let made = if stage == Stage::RenderReport {
        Made::Report(
            crate::io::parse_doc(&label, &text, crate::io::Format::Json).map_err(unreadable)?,
        )
    } else {
        Made::Board(crate::io::parse_board(&label, &text).map_err(unreadable)?)
    };
    Ok((Some((text, made)), None))
}

/// A stage must not outlive a killed driver: an orphan could still write to the run folder
/// (its exchange log) while a resumed meeting runs the same stage again.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: prctl and getppid are async-signal-safe and touch no memory of the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The driver died before the line above: no signal will come, so do not start.
            if libc::getppid() as u32 != parent {
                return Err(std::io::Error::other("the meeting process is gone"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

fn spawn_ticker(name: String, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let start = Instant::now();
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            if start.elapsed() > Duration::from_millis(600) {
                crate::note_inline!("\r  {name} … {:.1} s ", start.elapsed().as_secs_f64());
            }
        }
        if start.elapsed() > Duration::from_millis(600) {
            crate::note_inline!("\r\x1b[2K");
        }
    })
}

/// How long taking a run folder waits for another process to let go of it.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// The run folder of one meeting: `NNNN-<stage>.out.json` (the packet, the first board and
/// the last [`KEEP_BOARDS`]), `events.jsonl`, `meeting.json`. Every checkpoint is written
/// atomically before the next stage starts.
pub struct RunDir {
    pub path: PathBuf,
}

impl RunDir {
    /// Take the run folder for this process (created if needed): one meeting at a time may
    /// write into it, whether it was just started or resumed. Held until the process ends.
    pub fn lock(&self) -> Result<std::fs::File> {
        std::fs::create_dir_all(&self.path).map_err(|e| {
            Error::Runtime(format!(
                "{}: cannot create: {}",
                self.path.display(),
                os_error(&e)
            ))
        })?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.path.join(".lock"))
            .map_err(|e| {
                Error::Runtime(format!(
                    "{}: cannot lock: {}",
                    self.path.display(),
                    os_error(&e)
                ))
            })?;
        // A meeting killed a moment ago may still hold the lock for a few milliseconds (a
        // stage it was starting has a copy of the descriptor until its exec closes it), so a
        // resume right after a kill waits briefly before it calls the folder taken.
        let start = Instant::now();
        while file.try_lock().is_err() {
            if start.elapsed() >= LOCK_WAIT {
                return Err(Error::Usage(format!(
                    "{} is in use by another meeting process",
                    self.path.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(file)
    }

    pub fn file(&self, step: u32, stage: Stage, dir: &str) -> PathBuf {
        self.path.join(format!("{step:04}-{stage}.{dir}.json"))
    }

    pub fn write(&self, name: &Path, bytes: &[u8]) -> Result<()> {
        write_atomic(name, bytes)
    }

    /// The last complete output: (step number, stage, path).
    pub(crate) fn last_output(&self) -> Result<Option<(u32, Stage, PathBuf)>> {
        Ok(self.outputs()?.into_iter().max_by_key(|(n, _, _)| *n))
    }

    /// Every complete output in the folder: (step number, stage, path), in no order.
    fn outputs(&self) -> Result<Vec<(u32, Stage, PathBuf)>> {
        let entries = std::fs::read_dir(&self.path).map_err(|e| {
            Error::Usage(format!(
                "--resume: cannot read {}: {}",
                self.path.display(),
                os_error(&e)
            ))
        })?;
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".out.json") else {
                continue;
            };
            let Some((num, stage)) = stem.split_once('-') else {
                continue;
            };
            let (Ok(n), Some(stage)) = (num.parse::<u32>(), Stage::from_program(stage)) else {
                continue;
            };
            found.push((n, stage, entry.path()));
        }
        Ok(found)
    }

    /// Append a stage's `new_events` to `events.jsonl` (DESIGN.md#events), synced: the boards
    /// before the last few are removed ([`RunDir::prune`]), so this file is the history.
    pub(crate) fn append_events(&self, events: &[Event]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for ev in events {
            text.push_str(&to_json_line(ev, false));
        }
        let path = self.path.join("events.jsonl");
        open_append(&path)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.sync_data()
            })
            .map_err(|e| {
                Error::Runtime(format!(
                    "{}: cannot write: {}",
                    path.display(),
                    os_error(&e)
                ))
            })
    }

    /// Make `events.jsonl` hold exactly the events up to `board`, the checkpoint `--resume`
    /// goes on from: its first `event_count - new_events` lines, then the board's
    /// `new_events`. A kill can leave the last stage's events missing, half written or (when
    /// it struck between the append and the checkpoint) once too many; this repairs all three.
    /// Returns the tally of the events kept.
    pub(crate) fn resume_events(&self, board: &Board) -> Result<Tally> {
        let path = self.path.join("events.jsonl");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                return Err(Error::Runtime(format!(
                    "{}: cannot read: {}",
                    path.display(),
                    os_error(&e)
                )))
            }
        };
        let before = board
            .event_count
            .saturating_sub(board.new_events.len() as u64);
        let mut kept = String::new();
        let mut tally = Tally::default();
        let mut n = 0u64;
        // Only complete lines count: a kill mid-append leaves a line without its newline.
        for line in text.split_inclusive('\n').filter(|l| l.ends_with('\n')) {
            if n == before {
                break;
            }
            if let Ok(ev) = serde_json::from_str::<Event>(line) {
                tally.add(std::slice::from_ref(&ev));
            }
            kept.push_str(line);
            n += 1;
        }
        if n < before {
            crate::note!(
                "{}: {} events before the last checkpoint are missing (lost in a crash)",
                path.display(),
                before - n
            );
        }
        for ev in &board.new_events {
            kept.push_str(&to_json_line(ev, false));
        }
        tally.add(&board.new_events);
        write_atomic(&path, kept.as_bytes())?;
        Ok(tally)
    }

    /// Remove the boards older than the last [`KEEP_BOARDS`] stage outputs (the packet and the
    /// first board stay), once the board of `step` is on disk: `--resume` needs only the last,
    /// and the history is `events.jsonl` and `llm.jsonl` (DESIGN.md#run-folder).
    /// `AGENT_MEETING_KEEP_BOARDS=all` keeps every one, for debugging a stage by hand.
    pub(crate) fn prune(&self, step: u32) -> Result<()> {
        if std::env::var(KEEP_BOARDS_ENV).is_ok_and(|v| v.trim() == "all") {
            return Ok(());
        }
        for (n, _, path) in self.outputs()? {
            if n > 2 && n + KEEP_BOARDS <= step {
                std::fs::remove_file(&path).map_err(|e| {
                    Error::Runtime(format!(
                        "{}: cannot remove: {}",
                        path.display(),
                        os_error(&e)
                    ))
                })?;
            }
        }
        Ok(())
    }
}

/// How many of the latest stage outputs a run folder keeps besides the packet and the first
/// board: one loop's (pm-step, agent-turn, merge-board).
pub const KEEP_BOARDS: u32 = 3;

/// `all` keeps every stage output in the run folder.
pub const KEEP_BOARDS_ENV: &str = "AGENT_MEETING_KEEP_BOARDS";

/// The events a stage added: the last of its board's `new_events`, as many as `event_count`
/// grew. A user's stage (`--stage`) that hands on the events of the stage before adds none, so
/// none is recorded twice (DESIGN.md#events).
fn added_events<'a>(before: &Board, after: &'a Board) -> &'a [Event] {
    let n = after.event_count.saturating_sub(before.event_count);
    let events = &after.new_events;
    &events[events
        .len()
        .saturating_sub(usize::try_from(n).unwrap_or(usize::MAX))..]
}

/// The board a checkpoint (a stage's `.out.json`) holds.
fn read_checkpoint(stage: Stage, path: &Path) -> Result<Board> {
    let text = crate::io::read_text_file(path)?;
    let label = path.display().to_string();
    match stage {
        Stage::RenderReport => {
            Ok(crate::io::parse_doc::<ReportResult>(&label, &text, crate::io::Format::Json)?.board)
        }
        _ => crate::io::parse_board(&label, &text),
    }
}

/// Where a stage stands in the meeting, in the one loop numbering of progress, `--step`, the
/// final line and the report: `loop N/M` is the loop in progress (the PM's question, the
/// answer, its merge), N = loops done + 1; a stage that may close the meeting (`pm-step`
/// closing it, `render-report`) stands `after N/M loops`, the count the final line, the
/// MeetingResult and the report's "Loops used" give.
fn loop_tag(board: &Board, in_a_loop: bool) -> String {
    let fan_out = board.pending_calls.len().max(board.last_turns.len()) as u32;
    if in_a_loop && fan_out > 1 {
        // A fan-out's calls count one loop each (DESIGN.md#fan-out).
        let first = board.loop_count + 1;
        format!(
            "loops {first}-{}/{}",
            (first + fan_out - 1).min(board.max_loops),
            board.max_loops
        )
    } else if in_a_loop {
        format!(
            "loop {}/{}",
            (board.loop_count + 1).min(board.max_loops),
            board.max_loops
        )
    } else {
        format!("after {}/{} loops", board.loop_count, board.max_loops)
    }
}

/// Ask before a stage in `--step` mode: Enter runs it, `q` (or end of input) stops, `p` prints
/// the board's summary and the path of the stage's input (`next_input`: the last output in the
/// run folder). `false` means the user chose to stop.
fn confirm_step(
    stage: Stage,
    board: &Board,
    next_input: &dyn Fn() -> Result<PathBuf>,
) -> Result<bool> {
    let in_a_loop = matches!(stage, Stage::AgentTurn | Stage::MergeBoard);
    loop {
        crate::note_inline!(
            "next: {stage} ({}, status {}) — Enter to run, p to print the board, q to stop: ",
            loop_tag(board, in_a_loop),
            board.status.as_str()
        );
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => return Ok(false),
            Ok(_) => {}
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "q" => return Ok(false),
            "p" => {
                crate::note!("{}", board_summary(board));
                crate::note!("next input: {}", next_input()?.display());
            }
            _ => return Ok(true),
        }
    }
}

/// What `p` prints at a `--step` prompt: the whiteboard's summary and where the meeting is.
fn board_summary(board: &Board) -> String {
    let mut out = board.summary.trim().to_string();
    out.push_str(&format!(
        "\nstatus {}, {} loops done of {}, {} LLM attempts, {} tokens",
        board.status.as_str(),
        board.loop_count,
        board.max_loops,
        board.usage.attempts(),
        board.usage.tokens.total()
    ));
    for call in board.pending() {
        out.push_str(&format!(
            "\npending: pm → {}: {}",
            call.target_agent,
            one_line(&call.prompt, 200)
        ));
    }
    out
}

fn paint(ui: Ui, code: &str, text: &str) -> String {
    if ui.color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Whether the meeting was closed for its token budget (the record says why it was forced).
fn by_budget(after: &Board) -> bool {
    after.record.forced == Some(crate::model::ForcedReason::TokenBudget)
}

/// The progress line for a board a stage just produced.
pub(crate) fn progress_line(stage: Stage, after: &Board, ui: Ui) -> Option<String> {
    let tag = paint(ui, "2", &format!("[{}]", loop_tag(after, true)));
    let closing = paint(ui, "2", &format!("[{}]", loop_tag(after, false)));
    match stage {
        Stage::PmStep => {
            if !after.pending_calls.is_empty() {
                // A fan-out: its calls together, one line each under the header.
                let names: Vec<&str> = after
                    .pending_calls
                    .iter()
                    .map(|c| c.target_agent.as_str())
                    .collect();
                let mut text = format!(
                    "{tag} {} → {} at once",
                    paint(ui, "1;36", "pm"),
                    paint(ui, "1;33", &names.join(", "))
                );
                for call in &after.pending_calls {
                    text.push_str(&format!(
                        "\n    → {}: {}",
                        paint(ui, "1;33", &call.target_agent),
                        one_line(&call.prompt, 81)
                    ));
                }
                Some(text)
            } else if let Some(call) = &after.pending_call {
                Some(format!(
                    "{tag} {} → {}: {}",
                    paint(ui, "1;36", "pm"),
                    paint(ui, "1;33", &call.target_agent),
                    one_line(&call.prompt, 81)
                ))
            } else if after.has_final_report() {
                Some(format!(
                    "{closing} {}: FINISH{}",
                    paint(ui, "1;36", "pm"),
                    match after.status {
                        Status::ForcedStop if by_budget(after) => " (forced: token budget)",
                        Status::ForcedStop => " (forced)",
                        _ => "",
                    }
                ))
            } else if after.status == Status::ForcedStop {
                Some(format!(
                    "{closing} {}: no valid report, using the fallback report{}",
                    paint(ui, "1;31", "pm"),
                    if by_budget(after) {
                        " (token budget)"
                    } else {
                        ""
                    }
                ))
            } else if after.status == Status::Finishing {
                Some(format!(
                    "{closing} {}: round failed ({}), closing the meeting",
                    paint(ui, "1;31", "pm"),
                    // Whole: the telling part of a reason ("dns error") is often at its end.
                    one_line(after.last_error.as_deref().unwrap_or("?"), usize::MAX)
                ))
            } else {
                None
            }
        }
        Stage::AgentTurn if !after.last_turns.is_empty() => {
            let lines: Vec<String> = after
                .last_turns
                .iter()
                .map(|turn| turn_line(turn, after, "    ", ui))
                .collect();
            Some(format!("{tag} answers\n{}", lines.join("\n")))
        }
        Stage::AgentTurn => {
            let turn = after.last_turn.as_ref()?;
            Some(turn_line(turn, after, &format!("{tag} "), ui))
        }
        _ => None,
    }
}

/// One agent turn's progress line (`lead` before the name): its findings, or why it failed,
/// with the time, tokens and retries of its own calls.
fn turn_line(turn: &crate::model::LastTurn, after: &Board, lead: &str, ui: Ui) -> String {
    let new_events: Vec<&crate::model::Event> = after
        .new_events
        .iter()
        .filter(|e| e.caller == turn.agent_name)
        .collect();
    let (ms, tokens) = new_events
        .iter()
        .filter(|e| e.event_type == EventType::LlmCall)
        .fold((0, 0), |(ms, t), e| {
            (
                ms + e.duration_ms.unwrap_or(0),
                t + e.tokens.map_or(0, crate::model::Tokens::total),
            )
        });
    let retries = new_events
        .iter()
        .filter(|e| e.event_type == EventType::AgentRetry)
        .count();
    let retry_note = match retries {
        0 => String::new(),
        1 => ", 1 retry".to_string(),
        n => format!(", {n} retries"),
    };
    let stats = format!("({:.1} s, {tokens} tokens{retry_note})", ms as f64 / 1000.0);
    let name = paint(ui, "1;33", &turn.agent_name);
    match &turn.result {
        Some(r) => format!(
            "{lead}{name}: {} key points, {} risk{}, {} citation{} {stats}",
            r.key_points.len(),
            r.risks.len(),
            if r.risks.len() == 1 { "" } else { "s" },
            r.citations.len(),
            if r.citations.len() == 1 { "" } else { "s" },
        ),
        None => format!(
            "{lead}{name}: {} {}",
            paint(ui, "1;31", "failed:"),
            one_line(turn.error.as_deref().unwrap_or("?"), usize::MAX)
        ),
    }
}

/// Drive a started or resumed meeting from its board until the report is saved (or a `--step`
/// user stops it).
pub fn drive(run: &Run, ui: Ui) -> Result<MeetingResult> {
    let _signals = stop::watch(&run.dir.path);
    crate::io::hold_stage_warnings(ui.quiet);
    let (settings, mut board, mut step) = (&run.settings, run.board.clone(), run.step);
    let mut tally = run.tally.clone();
    let run = &run.dir;
    // Every loop takes pm-step, agent-turn and merge-board, plus PM-only rounds and the report:
    // far fewer stages than this, unless a (user's) stage keeps handing the board back.
    let max_steps = step + 4 * board.max_loops.min(100_000) + 20;
    let stages = Stages::new(settings);
    loop {
        let Some(stage) = board.next_stage() else {
            let result = result_of(&board, &tally, settings, run);
            if !ui.quiet {
                crate::note!("{}", final_line(&result, &Answers::of(&board, &tally), ui));
            }
            return Ok(result);
        };
        if step > max_steps {
            return Err(Error::Runtime(format!(
                "the meeting made no progress after {step} stages (last: {stage}); see {}",
                run.path.display()
            )));
        }
        // The stage's input is the last output in the folder (DESIGN.md#run-folder).
        let next_input = || -> Result<PathBuf> {
            Ok(run
                .last_output()?
                .map_or_else(|| run.path.clone(), |(_, _, path)| path))
        };
        if ui.step && !confirm_step(stage, &board, &next_input)? {
            // A clean stop: the run folder holds the last complete board, ready to resume.
            crate::note!(
                "stopped before {stage}; continue with: meeting --resume {}",
                run.path.display()
            );
            return Ok(result_of(&board, &tally, settings, run));
        }
        let log = settings.llm.llm_log.as_deref();
        let log_len = log
            .and_then(|l| std::fs::metadata(l).ok())
            .map_or(0, |m| m.len());
        let outcome = run_loop_stage(&stages, stage, &board, ui.for_stage(&board));
        // Failed attempts are logged too: copy whatever the stage appended, however it ended.
        if let (Some(log), Some(user)) = (log, settings.user_llm_log.as_deref()) {
            copy_log_tail(log, log_len, user)?;
        }
        let (handed, failure) = outcome?;
        if let Some(e) = failure {
            // Even the report could not be saved: keep the `failed` board, end the meeting.
            let Some((text, Made::Report(report))) = handed else {
                return Err(e);
            };
            if report.status != Status::Failed {
                return Err(e);
            }
            let added = added_events(&board, &report.board);
            run.append_events(added)?;
            run.write(&run.file(step, stage, "out"), text.as_bytes())?;
            run.prune(step)?;
            tally.add(added);
            return Ok(result_of(&report.board, &tally, settings, run));
        }
        let Some((out_text, made)) = handed else {
            unreachable!("a stage that did not fail handed its output over")
        };
        let next = match made {
            Made::Board(b) => b,
            Made::Report(r) => r.board,
        };
        if stage != Stage::RenderReport && matches!(next.status, Status::Finished | Status::Failed)
        {
            return Err(Error::Runtime(format!(
                "stage {stage} set status {} but only render-report may (the report is not saved)",
                next.status.as_str()
            )));
        }
        if next == board {
            return Err(Error::Runtime(format!(
                "stage {stage} made no progress: its output board is its input"
            )));
        }
        // Events first: a kill between the two leaves them once too many, which `--resume`
        // cuts by the checkpoint's `event_count`; never missing from a synced checkpoint.
        let added = added_events(&board, &next);
        run.append_events(added)?;
        run.write(&run.file(step, stage, "out"), out_text.as_bytes())?;
        run.prune(step)?;
        tally.add(added);
        if !ui.quiet {
            if let Some(line) = progress_line(stage, &next, ui) {
                crate::note!("{line}");
            }
        }
        board = next;
        step += 1;
    }
}

/// Append what the stages added to the run's exchange log since `from` (bytes) to the user's
/// own log (`--llm-log`): the stages write one log, the driver keeps the second in step.
fn copy_log_tail(log: &Path, from: u64, user: &Path) -> Result<()> {
    use std::io::Seek;
    let fail = |e: std::io::Error| {
        Error::Runtime(format!("--llm-log: {}: {}", user.display(), os_error(&e)))
    };
    let Ok(mut f) = std::fs::File::open(log) else {
        return Ok(()); // no call made yet
    };
    let mut tail = Vec::new();
    f.seek(std::io::SeekFrom::Start(from))
        .and_then(|_| f.read_to_end(&mut tail))
        .map_err(fail)?;
    if tail.is_empty() {
        return Ok(());
    }
    open_append(user)
        .map_err(fail)?
        .write_all(&tail)
        .map_err(fail)
}

fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// A run ready to drive: its folder (locked for this process), settings, the board to go on
/// from and the number of the next stage file.
pub struct Run {
    pub dir: RunDir,
    pub settings: RunSettings,
    pub board: Board,
    pub step: u32,
    /// The answers of the meeting so far (from `events.jsonl`), kept up by the driver.
    pub tally: Tally,
    /// Held until the process ends: one meeting process at a time writes a run folder.
    _lock: std::fs::File,
}

/// What `meeting` was asked to start.
pub struct NewMeeting {
    pub source: MeetingSource,
    /// collect-context's flags, passed on.
    pub context: crate::cli::ContextArgs,
    /// render-report's `--template`.
    pub template: Option<PathBuf>,
    pub board: BoardArgs,
    pub llm: LlmArgs,
    /// Default: `reports/<meeting stem>.md` or `reports/<topic slug>.md`.
    pub report_file: Option<PathBuf>,
    /// The folder holding run folders.
    pub run_dir: PathBuf,
    pub stage_overrides: BTreeMap<Stage, String>,
    /// The environment variables that set an LLM flag (`AGENT_MEETING_PROVIDER`,
    /// `MEETING_CASSETTE`, ...): the start line names them, and warns when they chose replay.
    pub llm_from_env: Vec<String>,
    /// agent-turn's `--human-answers`.
    pub human_answers: Option<PathBuf>,
}

/// What `--dry-run` prints: the PM's first prompt as it would be sent, and its input
/// document (`--json`).
pub struct DryRun {
    pub pm_input: serde_json::Value,
    /// The system message, then the user message, each under a marker line.
    pub prompt: String,
}

/// How a start ended: a run ready to drive, or (`--dry-run`) the PM's first input.
pub enum Started {
    Run(Box<Run>),
    DryRun(Box<DryRun>),
}

/// Start a new meeting: collect, init (in memory, so bad input leaves no run folder), check
/// every caller's provider configuration, then create and fill the run folder.
pub fn start(new: NewMeeting, dry_run: bool, ui: Ui) -> Result<Started> {
    if new.board.agents.iter().all(|a| a.trim().is_empty()) {
        return Err(Error::Usage(
            "--agents: at least one agent is required (e.g. --agents arch,biz)".into(),
        ));
    }
    let now = crate::events::clock_from_env().now();
    let mut board_args = new.board;
    board_args.agents_dir = board_args.agents_dir.as_deref().map(absolute);
    let source = match new.source {
        MeetingSource::MeetingFile(f) => MeetingSource::MeetingFile(absolute(&f)),
        topic => topic,
    };
    board_args.trace_id = Some(
        board_args
            .trace_id
            .unwrap_or_else(|| crate::stage::init_board::new_trace_id(&now)),
    );
    // meeting.json keeps absolute paths, so `--resume` works from any folder. A report already
    // at the default path is kept: this meeting's gets the next free numbered name. A path the
    // user named is theirs to replace.
    let (report_file, numbered_from) = match new.report_file {
        Some(f) => (absolute(&f), None),
        None => {
            let default = absolute(Path::new(&default_report_file(&source)));
            let free = free_report_name(&default);
            let kept = (free != default).then_some(default);
            (free, kept)
        }
    };
    let mut llm = new.llm;
    // The stages log into the run folder; the user's own log gets a copy of every line.
    let user_llm_log = llm.llm_log.take().map(|l| absolute(&l));
    let mut settings = RunSettings {
        settings_version: SETTINGS_VERSION,
        source,
        allow_sensitive: new.context.allow_sensitive,
        no_redact: new.context.no_redact,
        context_root: new.context.context_root.as_deref().map(absolute),
        max_context_chars: (new.context.max_context_chars
            != crate::context::DEFAULT_MAX_CONTEXT_CHARS)
            .then_some(new.context.max_context_chars),
        template: new.template.as_deref().map(absolute),
        board: board_args,
        llm,
        report_file,
        stage_overrides: new.stage_overrides,
        config_file: crate::config::load()?.file.as_deref().map(absolute),
        user_llm_log,
        human_answers: new.human_answers.as_deref().map(absolute),
    };
    let (packet_text, board_text, board) = first_board(&settings, ui)?;
    // A missing key or a broken cassette is found now, before any run folder exists; a dry
    // run only warns of a missing key (DESIGN.md#run-folder).
    let missing = check_llm_config(&settings.llm, &board, dry_run)?;
    let models = models_line(&settings.llm, &board)?;
    if dry_run {
        if !ui.quiet {
            crate::note!("{models}");
        }
        for m in &missing {
            crate::note!("meeting: warning: {m}");
        }
    }
    if let Some(w) = replay_from_env_warning(&settings.llm, &new.llm_from_env) {
        crate::note!("{w}");
    }
    let dir = RunDir {
        path: new.run_dir.join(&board.trace_id),
    };
    check_report_path(&settings, &board, &dir.path)?;
    if dry_run {
        return Ok(Started::DryRun(Box::new(dry_run_prompt(
            &settings.llm,
            &board,
        )?)));
    }
    // Before any model call: the report's folder exists and takes a file, and the user's
    // exchange log opens (DESIGN.md#run-folder).
    prove_writable(&settings.report_file)?;
    if let Some(user) = &settings.user_llm_log {
        open_append(user).map_err(|e| {
            Error::Usage(format!("--llm-log: {}: {}", user.display(), os_error(&e)))
        })?;
    }
    let lock = dir.lock()?;
    if dir.path.join("meeting.json").exists() {
        return Err(Error::Usage(format!(
            "{} already holds a meeting; use --resume {} or another --trace-id",
            dir.path.display(),
            dir.path.display()
        )));
    }
    settings
        .stage_overrides
        .retain(|k, _| !matches!(k, Stage::CollectContext | Stage::InitBoard));
    // The run's exchange log doubles as a cache of completed calls, so a resumed meeting
    // repeats none of them.
    let llm = &mut settings.llm;
    llm.llm_log = Some(absolute(&dir.path.join("llm.jsonl")));
    llm.reuse_log = true;
    llm.cassette = llm.cassette.as_deref().map(absolute);
    llm.record = llm.record.as_deref().map(absolute);
    if settings.config_file.is_some() {
        // The stages of this run read the settings as they were at its start.
        let copy = dir.path.join("config.yaml");
        let text = serde_yaml::to_string(&crate::config::load()?.config)
            .map_err(|e| Error::Runtime(format!("config.yaml: {e}")))?;
        dir.write(&copy, text.as_bytes())?;
        settings.config_file = Some(absolute(&copy));
    }
    dir.write(
        &dir.path.join("meeting.json"),
        to_json_line(&settings, true).as_bytes(),
    )?;
    dir.write(
        &dir.file(1, Stage::CollectContext, "out"),
        packet_text.as_bytes(),
    )?;
    dir.write(&dir.file(2, Stage::InitBoard, "out"), board_text.as_bytes())?;
    // A folder that held a meeting had a meeting.json (refused above): this file is new.
    let _ = std::fs::remove_file(dir.path.join("events.jsonl"));
    dir.append_events(&board.new_events)?;
    let mut tally = Tally::default();
    tally.add(&board.new_events);
    if let (Some(kept), false) = (&numbered_from, ui.quiet) {
        crate::note!(
            "{} exists and is kept; this meeting's report goes to {}",
            kept.display(),
            settings.report_file.display()
        );
    }
    if !ui.quiet {
        crate::note!(
            "meeting {}: {} documents, participants {}, max {} loops, run folder {}",
            board.trace_id,
            board.context_bundle.documents.len(),
            board.participants.join(", "),
            board.max_loops,
            dir.path.display()
        );
        crate::note!("{models}");
    }
    Ok(Started::Run(Box::new(Run {
        dir,
        settings,
        board,
        step: 3,
        tally,
        _lock: lock,
    })))
}

/// collect-context, then init-board, in memory (nothing is written yet): the packet and the
/// first board as their checkpoints will hold them, and the board.
fn first_board(settings: &RunSettings, ui: Ui) -> Result<(String, String, Board)> {
    crate::io::hold_stage_warnings(ui.quiet);
    let stages = Stages::new(settings);
    let quiet_ui = Ui {
        ticker: false,
        ..ui
    };
    let run_program = |stage: Stage, input: &[u8]| -> Result<String> {
        let out = run_stage(stage, settings, input, quiet_ui)?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (packet, packet_text) = if stages.runs(Stage::CollectContext) {
        let (packet, notes) = stages.collect()?;
        if !ui.quiet {
            notes.iter().for_each(|l| crate::note!("{l}"));
        }
        let text = to_json_line(&packet, false);
        (packet, text)
    } else {
        // A user's command: what it printed must be a packet.
        let text = run_program(Stage::CollectContext, b"")?;
        let packet: MeetingPacket = crate::io::parse_versioned(
            "collect-context output",
            &text,
            "packet_version",
            PACKET_VERSION,
        )?;
        (packet, text)
    };
    let (board, board_text) = if stages.runs(Stage::InitBoard) {
        let board = stages.init(packet)?;
        let text = to_json_line(&board, false);
        (board, text)
    } else {
        let text = run_program(Stage::InitBoard, packet_text.as_bytes())?;
        (crate::io::parse_board("init-board output", &text)?, text)
    };
    Ok((packet_text, board_text, board))
}

/// Resolve the provider of the PM and of every participant once, as the stages will. With
/// `allow_missing_keys` (a dry run) a missing key or no provider at all is not an error: what
/// a real run would stop on is returned, one line each; everything else is still checked.
fn check_llm_config(llm: &LlmArgs, board: &Board, allow_missing_keys: bool) -> Result<Vec<String>> {
    let mut missing: Vec<String> = Vec::new();
    for (name, meta) in callers(board) {
        if allow_missing_keys {
            let gap = match crate::llm::args::provider_and_model(llm, &board.llm, &name, &meta) {
                Err(e) => Some(e.to_string()),
                Ok((provider, _)) => crate::llm::args::missing_key(llm, &provider).map(|var| {
                    format!(
                        "{var} is not set: a real meeting would stop here ({provider} needs it)"
                    )
                }),
            };
            if let Some(gap) = gap {
                if !missing.contains(&gap) {
                    missing.push(gap);
                }
                continue;
            }
        }
        crate::llm::client_for_caller(llm, &board.llm, &name, &meta, 0)?;
    }
    Ok(missing)
}

/// The PM's first prompt exactly as the PM's provider would be sent it (the reply schema in
/// the prompt or not, as that provider takes it), and its input document.
fn dry_run_prompt(llm: &LlmArgs, board: &Board) -> Result<DryRun> {
    let pm_meta = board
        .pm
        .as_ref()
        .map(|p| p.metadata.clone())
        .unwrap_or_default();
    let in_prompt =
        crate::llm::args::provider_and_model(llm, &board.llm, crate::model::PM_CALLER, &pm_meta)
            .map(|(provider, _)| crate::llm::args::schema_in_prompt(llm, &provider))
            .unwrap_or(false);
    use crate::stage::pm_step;
    let request = crate::llm::Request {
        caller: crate::model::PM_CALLER.into(),
        system: pm_step::pm_system_prompt(board, in_prompt)?,
        messages: vec![pm_step::pm_user_message(board, in_prompt)?],
        expect: Some(pm_step::pm_expected_json(board, pm_step::mode(board))),
    };
    // The system message as the provider sends it: with the schema in words when it is not
    // sent natively.
    let system = crate::llm::system_text(&request, in_prompt);
    let user = &request.messages[0];
    Ok(DryRun {
        pm_input: crate::stage::pm_step::pm_input(board),
        prompt: format!(
            "----- system -----\n{}\n----- user -----\n{}\n",
            system.trim_end(),
            user.content.trim_end()
        ),
    })
}

/// The model callers of a meeting, PM first, with their metadata (a `kind: human` participant
/// calls no model: it needs no provider or key).
fn callers(board: &Board) -> Vec<(String, serde_json::Map<String, serde_json::Value>)> {
    let pm_meta = board
        .pm
        .as_ref()
        .map(|p| p.metadata.clone())
        .unwrap_or_default();
    let mut out = vec![(crate::model::PM_CALLER.to_string(), pm_meta)];
    for name in board.participants.iter().filter(|n| !is_human(board, n)) {
        let meta = board
            .agents
            .get(name)
            .map(|a| a.metadata.clone())
            .unwrap_or_default();
        out.push((name.clone(), meta));
    }
    out
}

fn is_human(board: &Board, name: &str) -> bool {
    board
        .agents
        .get(name)
        .is_some_and(|a| a.kind == crate::model::ParticipantKind::Human)
}

/// The start line's second line: which provider and model each caller uses, callers that
/// share both named together (`models: openai gpt-4o-mini: pm, arch; anthropic ...: biz`);
/// a replayed meeting names its cassette instead of a model.
pub(crate) fn models_line(llm: &LlmArgs, board: &Board) -> Result<String> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (name, meta) in callers(board) {
        let Ok((provider, model)) =
            crate::llm::args::provider_and_model(llm, &board.llm, &name, &meta)
        else {
            // No provider at all: only a dry run gets this far.
            return Ok("models: none (no provider configured)".to_string());
        };
        let what = if provider == "replay" {
            let cassette = llm.cassette.as_deref().unwrap_or(Path::new("?"));
            format!("replay of {}", cassette.display())
        } else {
            format!("{provider} {model}")
        };
        match groups.iter_mut().find(|(w, _)| *w == what) {
            Some((_, names)) => names.push(name),
            None => groups.push((what, vec![name])),
        }
    }
    let people: Vec<String> = board
        .participants
        .iter()
        .filter(|n| is_human(board, n))
        .cloned()
        .collect();
    if !people.is_empty() {
        groups.push((crate::model::HUMAN_PROVIDER.to_string(), people));
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(what, names)| format!("{what} ({})", names.join(", ")))
        .collect();
    Ok(format!("models: {}", parts.join("; ")))
}

/// A visible warning when the environment, not a flag, made this meeting a replay: a variable
/// left over from the README's offline example must not pass for a real meeting.
pub(crate) fn replay_from_env_warning(llm: &LlmArgs, from_env: &[String]) -> Option<String> {
    let replay = llm.provider.as_deref().map(str::trim) == Some("replay");
    let var = from_env.iter().find(|v| *v == "AGENT_MEETING_PROVIDER")?;
    replay.then(|| {
        format!(
            "meeting: warning: replaying a recording, no model is asked: {var}=replay is set in the environment{}; unset it (or pass --provider) for a real meeting",
            if from_env.iter().any(|v| v == "MEETING_CASSETTE") {
                " (and the cassette comes from MEETING_CASSETTE)"
            } else {
                ""
            }
        )
    })
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `path` as the file system will find it: links of its existing part resolved, `.` and `..`
/// of the rest folded, so two spellings of one file compare equal.
fn resolved(path: &Path) -> PathBuf {
    use std::path::Component;
    let path = absolute(path);
    let parts: Vec<Component> = path.components().collect();
    for keep in (1..=parts.len()).rev() {
        let Ok(mut out) = parts[..keep].iter().collect::<PathBuf>().canonicalize() else {
            continue;
        };
        for part in &parts[keep..] {
            match part {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                p => out.push(p),
            }
        }
        return out;
    }
    path
}

/// The first of `path`, `<stem>-2.<ext>`, `<stem>-3.<ext>`, ... that does not exist.
fn free_report_name(path: &Path) -> PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    (2u32..)
        .map(|n| path.with_file_name(format!("{stem}-{n}{ext}")))
        .find(|p| !p.exists())
        .expect("some numbered name is free")
}

/// Refuse (exit 2, before any model call) a report path that would overwrite an input of the
/// meeting — the meeting file, an agent or PM config, a collected document, the cassette or
/// recording, the user's exchange log — or land in the run folder (DESIGN.md#run-folder).
fn check_report_path(settings: &RunSettings, board: &Board, run_dir: &Path) -> Result<()> {
    let report = &settings.report_file;
    if report.is_dir() {
        return Err(Error::Usage(format!(
            "--report-file: {} is a folder (expected a Markdown file path)",
            report.display()
        )));
    }
    let mut inputs: Vec<(&str, PathBuf)> = Vec::new();
    if let MeetingSource::MeetingFile(f) = &settings.source {
        inputs.push(("meeting file", f.clone()));
        // collect-context's context root, where the document paths start.
        let root = settings.context_root.clone().unwrap_or_else(|| {
            crate::context::default_context_root(f.parent().unwrap_or(Path::new("/")))
        });
        for doc in &board.context_bundle.documents {
            inputs.push(("collected document", root.join(&doc.source_path)));
        }
    }
    let search = crate::loader::AgentSearch::new(
        settings.board.agents_dir.as_deref(),
        // On --resume the user's config file is not the meeting's: a broken one must not stop
        // it, the default folder is guarded then.
        crate::config::user_agents_dir()
            .unwrap_or_else(|_| crate::config::config_dir().map(|d| d.join("agents"))),
    );
    let pm = board
        .pm
        .as_ref()
        .map(|_| settings.board.pm.clone().unwrap_or_else(|| "pm".into()));
    let configs = board
        .participants
        .iter()
        .map(|n| ("agent config", n.clone()))
        .chain(pm.map(|n| ("PM config", n)));
    for (what, name) in configs {
        // Every folder of the lookup order and every extension: a file there would change
        // which config the next meeting finds.
        for dir in search.places.iter().filter_map(|p| p.dir()) {
            for ext in ["yaml", "yml", "json"] {
                inputs.push((what, dir.join(format!("{name}.{ext}"))));
            }
        }
    }
    let llm = &settings.llm;
    inputs.extend(llm.cassette.clone().map(|c| ("cassette", c)));
    inputs.extend(settings.template.clone().map(|t| ("report template", t)));
    inputs.extend(llm.record.clone().map(|c| ("recording (--record)", c)));
    inputs.extend(
        settings
            .user_llm_log
            .clone()
            .map(|c| ("exchange log (--llm-log)", c)),
    );
    let target = resolved(report);
    for (what, input) in inputs {
        if resolved(&input) == target {
            return Err(Error::Usage(format!(
                "--report-file: {} is the meeting's {what}; the report would overwrite it (choose another path)",
                report.display()
            )));
        }
    }
    if target.starts_with(resolved(run_dir)) {
        return Err(Error::Usage(format!(
            "--report-file: {} is inside the run folder {}; choose a path outside it",
            report.display(),
            run_dir.display()
        )));
    }
    Ok(())
}

/// Create the report's folder and prove a file can be made there (created and removed), so a
/// bad path costs no model call.
fn prove_writable(report: &Path) -> Result<()> {
    let dir = report
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let fail = |e: std::io::Error| {
        Error::Usage(format!(
            "--report-file: cannot write a file in {}: {}",
            dir.display(),
            os_error(&e)
        ))
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    tempfile::Builder::new()
        .prefix(".agent-meeting-check")
        .tempfile_in(dir)
        .map_err(fail)?
        .close()
        .map_err(fail)
}

/// What `--resume` may change: settings that do not change what the meeting is
/// (DESIGN.md#resume). `None` keeps the saved value.
#[derive(Debug, Clone, Default)]
pub struct ResumeChanges {
    pub report_file: Option<PathBuf>,
    pub connect_timeout: Option<f64>,
    pub read_timeout: Option<f64>,
    pub max_attempts: Option<u32>,
    /// Replace these stages' overrides; an empty command restores the built-in program.
    pub stage_overrides: BTreeMap<Stage, String>,
}

impl ResumeChanges {
    /// Apply to `settings`; whether anything changed.
    fn apply(self, settings: &mut RunSettings) -> bool {
        let before = settings.clone();
        if let Some(f) = self.report_file {
            settings.report_file = absolute(&f);
        }
        let llm = &mut settings.llm;
        llm.connect_timeout = self.connect_timeout.unwrap_or(llm.connect_timeout);
        llm.read_timeout = self.read_timeout.unwrap_or(llm.read_timeout);
        llm.max_attempts = self.max_attempts.unwrap_or(llm.max_attempts);
        for (stage, cmd) in self.stage_overrides {
            if cmd.trim().is_empty() {
                settings.stage_overrides.remove(&stage);
            } else {
                settings.stage_overrides.insert(stage, cmd);
            }
        }
        *settings != before
    }
}

/// Go on with a killed or stopped meeting from the last complete output in its run folder,
/// with `changes` applied and saved back to `meeting.json`.
pub fn resume(dir: &Path, changes: ResumeChanges) -> Result<Run> {
    let file = dir.join("meeting.json");
    let text = crate::io::read_text_file(&file)?;
    let mut settings: RunSettings = crate::io::parse_versioned(
        &file.display().to_string(),
        &text,
        "settings_version",
        SETTINGS_VERSION,
    )?;
    let run = RunDir {
        path: dir.to_path_buf(),
    };
    let lock = run.lock()?;
    // The exchange log is the one of this run folder, wherever it has been moved or copied;
    // so is the config copy.
    settings.llm.llm_log = Some(absolute(&dir.join("llm.jsonl")));
    if settings.config_file.is_some() {
        settings.config_file = Some(absolute(&dir.join("config.yaml")));
    }
    let Some((step, stage, path)) = run.last_output()? else {
        return Err(Error::Usage(format!(
            "--resume: {} holds no stage output to continue from",
            dir.display()
        )));
    };
    if stage == Stage::CollectContext {
        return Err(Error::Usage(format!(
            "--resume: {} stopped before init-board; start the meeting again",
            dir.display()
        )));
    }
    let board = read_checkpoint(stage, &path)?;
    let changed = changes.apply(&mut settings);
    if board.next_stage().is_some() {
        // The same checks as a new meeting's, before any further model call.
        check_report_path(&settings, &board, &run.path)?;
        prove_writable(&settings.report_file)?;
    }
    if changed {
        run.write(&file, to_json_line(&settings, true).as_bytes())?;
    }
    let tally = run.resume_events(&board)?;
    Ok(Run {
        dir: run,
        settings,
        board,
        step: step + 1,
        tally,
        _lock: lock,
    })
}

/// What the meeting's events say about its model calls, counted as the events go by (the
/// board keeps no history, DESIGN.md#events): constant work per stage, and rebuilt from
/// `events.jsonl` on `--resume`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Logical calls (`llm_call` events).
    pub calls: usize,
    /// Of those, the ones that brought a reply back.
    pub answered: usize,
    /// Answers a stage accepted: PM decisions and agent results.
    pub usable: usize,
    /// The last failed call's error.
    pub last_call_error: Option<String>,
}

impl Tally {
    /// Count a stage's `new_events`.
    pub fn add(&mut self, events: &[Event]) {
        for e in events {
            match e.event_type {
                EventType::LlmCall => {
                    self.calls += 1;
                    if e.status == Some(TurnStatus::Ok) {
                        self.answered += 1;
                    }
                    if let Some(err) = &e.error {
                        self.last_call_error = Some(err.clone());
                    }
                }
                EventType::PmDecision | EventType::AgentResult => self.usable += 1,
                _ => {}
            }
        }
    }
}

/// How the models answered over a whole meeting, from the board and the tally of its events
/// (its `llm_call` events, accepted answers and usage): the one place that knows whether any
/// answer was usable (DESIGN.md#failure-policy).
#[derive(Debug, Clone, PartialEq)]
pub struct Answers {
    /// HTTP attempts, retries included: the attempts charged to the callers (`usage.calls`,
    /// the global call counter, but for the numbers a fan-out fixed for retries it did not
    /// need: DESIGN.md#fan-out).
    pub attempts: u64,
    /// Logical calls (`llm_call` events).
    pub calls: usize,
    /// Attempts that brought a reply back (each logical call that did ends on one).
    pub answered: usize,
    /// Answers a stage accepted: PM decisions and agent results.
    pub usable: usize,
    /// The last failed call's error, else the board's `last_error`.
    pub last_error: Option<String>,
    /// The PM's own report is on the board (not the fallback built without it).
    pub pm_report: bool,
}

impl Answers {
    pub fn of(board: &Board, tally: &Tally) -> Answers {
        Answers {
            attempts: board.usage.attempts(),
            calls: tally.calls,
            answered: tally.answered,
            usable: tally.usable,
            last_error: tally
                .last_call_error
                .clone()
                .or_else(|| board.last_error.clone()),
            pm_report: board.has_final_report(),
        }
    }

    /// Why a meeting whose report is saved still failed: not one model call returned a usable
    /// answer, so the report holds nothing a model said. A meeting with no call at all fails
    /// too when its report is the fallback (e.g. a token budget too small for any call); a
    /// user's own stage that wrote the PM's report without a model call does not.
    pub fn failure(&self) -> Option<String> {
        if self.usable > 0 || (self.calls == 0 && self.pm_report) {
            return None;
        }
        let last = self.last_error.as_deref().unwrap_or("none recorded");
        Some(if self.calls == 0 {
            format!("no model call was made; {last}")
        } else {
            format!(
                "no model call returned a usable answer ({} of {} attempts answered); last error: {last}",
                self.answered, self.attempts
            )
        })
    }
}

/// The MeetingResult printed on stdout. Its status is the board's, except that a saved report
/// no model contributed to is `failed` too (DESIGN.md#statuses); `report_file` is set whenever
/// the report is on disk.
pub(crate) fn result_of(
    board: &Board,
    tally: &Tally,
    settings: &RunSettings,
    run: &RunDir,
) -> MeetingResult {
    let finished = board.status == Status::Finished;
    let no_answer = finished
        .then(|| Answers::of(board, tally).failure())
        .flatten();
    MeetingResult {
        status: if no_answer.is_some() {
            Status::Failed
        } else {
            board.status
        },
        report_file: finished.then(|| settings.report_file.display().to_string()),
        // Both paths absolute (one rule), whatever folder the meeting was started from.
        run_dir: Some(absolute(&run.path).display().to_string()),
        trace_id: board.trace_id.clone(),
        loops: board.loop_count,
        forced: board.process_note.is_some(),
        usage: board.usage.clone(),
        last_error: match board.status {
            Status::Failed => board.last_error.clone(),
            _ => no_answer,
        },
    }
}

/// The final progress line: logical calls and HTTP attempts counted apart.
pub fn final_line(result: &MeetingResult, answers: &Answers, ui: Ui) -> String {
    let mut tokens = format!("{} tokens", result.usage.tokens.total());
    if result.usage.tokens.cached_tokens > 0 {
        tokens.push_str(&format!(" ({} cached)", result.usage.tokens.cached_tokens));
    }
    let (status, colour) = match (result.status, result.forced) {
        (Status::Failed, _) => ("failed", "1;31"),
        (_, true) => ("finished (forced)", "1;32"),
        _ => ("finished", "1;32"),
    };
    format!(
        "{} {} loops, {} LLM calls, {} of {} attempts answered, {tokens} → {}",
        paint(ui, colour, &format!("{status}:")),
        result.loops,
        answers.calls,
        answers.answered,
        answers.attempts,
        result.report_file.as_deref().unwrap_or("-")
    )
}

/// What `meeting --list-agents` prints: the lookup order, then one line per agent (name, role,
/// where it is found; the PM too, the built-in PM prompt when no place defines `pm`).
pub fn list_agents(search: &crate::loader::AgentSearch) -> String {
    let mut out = String::from("# lookup order (first wins):");
    for (i, place) in search.places.iter().enumerate() {
        out.push_str(&format!(" {}. {}", i + 1, place.label()));
    }
    out.push('\n');
    let mut rows: Vec<[String; 3]> = vec![["NAME".into(), "ROLE".into(), "FOUND IN".into()]];
    let listed = search.list();
    for a in &listed {
        let role = match &a.role {
            Ok(r) => r.clone(),
            Err(e) => format!("(invalid: {})", one_line(e, 60)),
        };
        let mut place = a.place.label();
        if a.shadows > 0 {
            place.push_str(&format!(" (hides {} more)", a.shadows));
        }
        rows.push([a.name.clone(), role, place]);
    }
    if !listed.iter().any(|a| a.name == "pm") {
        rows.push([
            "pm".into(),
            "Meeting PM".into(),
            "built-in (PM prompt)".into(),
        ]);
    }
    let w0 = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r[1].chars().count()).max().unwrap_or(0);
    for [name, role, place] in rows {
        out.push_str(&format!("{name:w0$}  {role:w1$}  {place}\n"));
    }
    out
}

/// The report path when none is given: `reports/<meeting stem>.md` or `reports/<topic slug>.md`.
pub(crate) fn default_report_file(source: &MeetingSource) -> String {
    let stem = match source {
        MeetingSource::MeetingFile(f) => f
            .file_stem()
            .map_or_else(|| slug(""), |s| s.to_string_lossy().into_owned()),
        MeetingSource::Topic(t) => slug(t),
    };
    format!("reports/{stem}.md")
}

/// A filename-safe slug: lowercase letters and digits (any script) joined by `-`, at most 60
/// characters, so topics in other languages get reports of their own.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.chars().count() >= 60 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "meeting".to_string()
    } else {
        out
    }
}

/// Whether stderr is a terminal (for the elapsed-time indicator).
pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// Ctrl-C and SIGTERM while a meeting drives its run folder (DESIGN.md#resume): the meeting
/// stops where it is — every file is written atomically, so the folder holds complete
/// checkpoints whatever the moment — says how to continue, and dies of the same signal, so a
/// shell sees exit 130 / 143 as before. A watcher thread acts on the signal (a handler may
/// only set a flag), so a driver blocked on a stage or on `--step`'s prompt stops too.
#[cfg(unix)]
mod stop {
    use std::path::Path;
    use std::process::ExitStatus;
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    /// The signal received, or 0.
    static SIGNAL: AtomicI32 = AtomicI32::new(0);
    /// The running stage's process id, or 0.
    static CHILD: AtomicI32 = AtomicI32::new(0);
    /// Set by the one thread that stops the process.
    static STOPPING: AtomicBool = AtomicBool::new(false);
    /// Set when the drive is over: the watcher ends.
    static DONE: AtomicBool = AtomicBool::new(false);
    /// The line that says how to continue.
    static HINT: OnceLock<String> = OnceLock::new();

    const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

    extern "C" fn record(sig: libc::c_int) {
        SIGNAL.store(sig, Ordering::SeqCst);
    }

    /// What the user reads after a stop: the command that continues the meeting.
    pub fn hint(run_dir: &Path) -> String {
        format!(
            "stopped: continue with  meeting --resume {}",
            run_dir.display()
        )
    }

    /// While the guard lives, SIGINT and SIGTERM stop the meeting as described above. A
    /// signal the process was started ignoring (`nohup`, a background job) stays ignored.
    pub(crate) fn watch(run_dir: &Path) -> Guard {
        let _ = HINT.set(hint(run_dir));
        for sig in SIGNALS {
            // SAFETY: `record` only stores to an atomic, which is async-signal-safe.
            unsafe {
                let handler = record as extern "C" fn(libc::c_int) as libc::sighandler_t;
                if libc::signal(sig, handler) == libc::SIG_IGN {
                    libc::signal(sig, libc::SIG_IGN);
                }
            }
        }
        DONE.store(false, Ordering::SeqCst);
        std::thread::spawn(|| {
            while !DONE.load(Ordering::SeqCst) {
                let sig = SIGNAL.load(Ordering::SeqCst);
                if sig != 0 {
                    stop_now(sig);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Guard
    }

    pub(crate) struct Guard;

    impl Drop for Guard {
        /// The drive is over: a signal from now on acts as it would without the driver.
        fn drop(&mut self) {
            DONE.store(true, Ordering::SeqCst);
            for sig in SIGNALS {
                // SAFETY: restoring the default disposition of a signal we handled.
                unsafe {
                    if libc::signal(sig, libc::SIG_DFL) == libc::SIG_IGN {
                        libc::signal(sig, libc::SIG_IGN);
                    }
                }
            }
            let sig = SIGNAL.load(Ordering::SeqCst);
            if sig != 0 {
                stop_now(sig);
            }
        }
    }

    /// The stage now running (its pid), or none.
    pub(crate) fn running(pid: Option<u32>) {
        CHILD.store(pid.map_or(0, |p| p as i32), Ordering::SeqCst);
    }

    /// A stage that died of SIGINT/SIGTERM most likely got the terminal's Ctrl-C with the
    /// driver: give the driver's own signal a moment to arrive, then stop rather than report
    /// a failed stage.
    pub(crate) fn check_after_child(status: &ExitStatus) {
        use std::os::unix::process::ExitStatusExt;
        let by_signal = status.signal().is_some_and(|s| SIGNALS.contains(&s));
        let start = Instant::now();
        while by_signal && start.elapsed() < Duration::from_millis(200) {
            if SIGNAL.load(Ordering::SeqCst) != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let sig = SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            stop_now(sig);
        }
    }

    /// End the process: stop the running stage, say how to continue, die of `sig`. Only one
    /// thread does it; another that gets here waits for the end.
    fn stop_now(sig: libc::c_int) -> ! {
        if STOPPING.swap(true, Ordering::SeqCst) {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        let child = CHILD.load(Ordering::SeqCst);
        // SAFETY: plain system calls; `child` is our own stage process (or 0: none).
        unsafe {
            if child > 0 {
                libc::kill(child, libc::SIGTERM);
            }
        }
        if let Some(hint) = HINT.get() {
            crate::note!("{hint}");
        }
        // SAFETY: as above; with the default disposition restored the signal ends the process.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        std::process::exit(128 + sig);
    }
}

/// Elsewhere signals keep their default action; the hint still follows a failed stage.
#[cfg(not(unix))]
mod stop {
    use std::path::Path;

    pub fn hint(run_dir: &Path) -> String {
        format!(
            "stopped: continue with  meeting --resume {}",
            run_dir.display()
        )
    }
    pub(crate) fn watch(_run_dir: &Path) {}
    pub(crate) fn running(_pid: Option<u32>) {}
    pub(crate) fn check_after_child(_status: &std::process::ExitStatus) {}
}

pub use stop::hint as resume_hint;

#[cfg(test)]
mod tests {
    /// The ticker pauses while a human answers (DESIGN.md#a-human-at-the-table).
    #[test]
    fn no_ticker_during_a_humans_turn() {
        let mut board = crate::stage::fixtures::board(&[]);
        let ui = Ui {
            ticker: true,
            ..Ui::default()
        };
        board.pending_call = Some(crate::model::PendingCall {
            target_agent: "arch".into(),
            prompt: "q".into(),
            analysis: String::new(),
            reserve_tokens: None,
        });
        assert!(ui.for_stage(&board).ticker);
        board.agents.get_mut("arch").unwrap().kind = crate::model::ParticipantKind::Human;
        assert!(!ui.for_stage(&board).ticker);
        assert!(!Ui::default().for_stage(&board).ticker);
    }

    use super::*;

    fn settings() -> RunSettings {
        RunSettings {
            settings_version: SETTINGS_VERSION,
            source: MeetingSource::MeetingFile("/m/demo.yaml".into()),
            allow_sensitive: true,
            no_redact: true,
            context_root: Some("/m".into()),
            max_context_chars: Some(900),
            template: Some("/m/t.md.j2".into()),
            board: BoardArgs {
                agents: vec!["arch".into(), "biz".into()],
                agents_dir: Some("/m/agents".into()),
                pm: None,
                max_loops: 4,
                max_parallel: 3,
                max_total_tokens: None,
                trace_id: Some("t-1".into()),
            },
            llm: LlmArgs {
                provider: Some("replay".into()),
                cassette: Some("/m/c.jsonl".into()),
                llm_log: Some("/runs/t-1/llm.jsonl".into()),
                reuse_log: true,
                ..LlmArgs::default()
            },
            report_file: "/m/report.md".into(),
            stage_overrides: BTreeMap::from([(Stage::MergeBoard, "cat".to_string())]),
            config_file: None,
            user_llm_log: None,
            human_answers: Some("/m/answers.jsonl".into()),
        }
    }

    #[test]
    fn meeting_json_is_typed_and_versioned() {
        let s = settings();
        let text = to_json_line(&s, true);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["settings_version"], 2);
        assert_eq!(v["source"]["meeting_file"], "/m/demo.yaml");
        assert_eq!(v["stage_overrides"]["merge-board"], "cat");
        assert_eq!(v["llm"]["max_attempts"], 3);
        let back: RunSettings =
            crate::io::parse_versioned("meeting.json", &text, "settings_version", 2).unwrap();
        assert_eq!(back, s);
        // A run folder of the first version kept argv strings: refused, naming the version.
        let old = r#"{"trace_id": "t", "report_file": "r", "collect_args": [], "init_args": [], "llm_args": []}"#;
        let e =
            crate::io::parse_versioned::<RunSettings>("meeting.json", old, "settings_version", 2)
                .unwrap_err()
                .to_string();
        assert!(e.contains("settings_version"), "{e}");
    }

    #[test]
    fn each_stage_gets_its_command_line_from_the_settings() {
        let s = settings();
        assert_eq!(
            s.stage_args(Stage::CollectContext),
            [
                "--meeting-file",
                "/m/demo.yaml",
                "--context-root",
                "/m",
                "--max-context-chars",
                "900",
                "--allow-sensitive",
                "--no-redact"
            ]
        );
        assert_eq!(
            s.stage_args(Stage::InitBoard),
            [
                "--agents",
                "arch,biz",
                "--agents-dir",
                "/m/agents",
                "--max-loops",
                "4",
                "--max-parallel",
                "3",
                "--trace-id",
                "t-1",
                "--provider",
                "replay"
            ]
        );
        let llm = s.stage_args(Stage::PmStep);
        let mut turn = s.stage_args(Stage::AgentTurn);
        assert!(turn.join(" ").contains("--human-answers /m/answers.jsonl"));
        let at = turn.iter().position(|a| a == "--human-answers").unwrap();
        turn.drain(at..at + 2);
        assert_eq!(llm, turn);
        for want in [
            "--cassette /m/c.jsonl",
            "--llm-log /runs/t-1/llm.jsonl",
            "--max-attempts 3",
            "--provider replay",
            "--reuse-log",
        ] {
            assert!(llm.join(" ").contains(want), "{want} in {llm:?}");
        }
        assert!(s.stage_args(Stage::MergeBoard).is_empty());
        assert_eq!(
            s.stage_args(Stage::RenderReport),
            ["--report-file", "/m/report.md", "--template", "/m/t.md.j2"]
        );
    }

    #[test]
    fn report_paths_compare_resolved_and_defaults_are_numbered() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("demo.md"), "kept").unwrap();
        assert_eq!(
            resolved(&d.join("a/../demo.md")),
            resolved(&d.join("./demo.md"))
        );
        assert_eq!(
            resolved(&d.join("new/x/../r.md")),
            resolved(d).join("new/r.md")
        );
        assert_eq!(free_report_name(&d.join("demo.md")), d.join("demo-2.md"));
        std::fs::write(d.join("demo-2.md"), "kept").unwrap();
        assert_eq!(free_report_name(&d.join("demo.md")), d.join("demo-3.md"));
        assert_eq!(free_report_name(&d.join("other.md")), d.join("other.md"));
    }

    #[test]
    fn a_meeting_needs_one_usable_answer() {
        let mut board = crate::stage::fixtures::board(&[]);
        board.usage.calls = 3;
        let call = |status: TurnStatus, error: Option<&str>| crate::model::Event {
            event_type: EventType::LlmCall,
            status: Some(status),
            error: error.map(str::to_string),
            ..crate::events::event(EventType::LlmCall, "pm")
        };
        let mut tally = Tally::default();
        tally.add(&[call(TurnStatus::Error, Some("HTTP 500: down"))]);
        let a = Answers::of(&board, &tally);
        assert_eq!((a.attempts, a.calls, a.answered, a.usable), (3, 1, 0, 0));
        let why = a.failure().unwrap();
        assert!(
            why.contains("(0 of 3 attempts answered); last error: HTTP 500: down"),
            "{why}"
        );
        // A reply that was not usable is answered, not usable.
        tally.add(&[call(TurnStatus::Ok, None)]);
        assert_eq!(Answers::of(&board, &tally).answered, 1);
        assert!(Answers::of(&board, &tally).failure().is_some());
        tally.add(&[crate::events::event(EventType::PmDecision, "pm")]);
        assert_eq!(Answers::of(&board, &tally).failure(), None);
        // No call at all: failed when the report is the fallback (a budget too small for any
        // call), not when a user's own stage wrote the PM's report without a model.
        let tally = Tally::default();
        board.usage.calls = 0;
        board.last_error = Some("token budget: used 0 of 900 tokens".into());
        let why = Answers::of(&board, &tally).failure().unwrap();
        assert_eq!(
            why,
            "no model call was made; token budget: used 0 of 900 tokens"
        );
        board.final_report = Some("### Executive Summary\nGo.\n### Recommendation\nGo.".into());
        assert_eq!(Answers::of(&board, &tally).failure(), None);
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("Should we adopt Rust?"), "should-we-adopt-rust");
        assert_eq!(slug("是否迁移到云端?"), "是否迁移到云端");
        assert_eq!(slug("Нужно ли Rust?"), "нужно-ли-rust");
        assert_eq!(slug("?!"), "meeting");
        assert_eq!(
            default_report_file(&MeetingSource::MeetingFile("meetings/demo.yaml".into())),
            "reports/demo.md"
        );
        assert_eq!(
            default_report_file(&MeetingSource::Topic("Go or Rust".into())),
            "reports/go-or-rust.md"
        );
    }
}
