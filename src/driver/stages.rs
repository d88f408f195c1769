//! The stages of a meeting as the driver runs them (docs/design/run-folder.md#run-folder). A built-in stage
//! runs inside the `meeting` process: the same library function each program's `main` calls,
//! given the settings the program would get as flags. A stage process costs about a
//! millisecond of CPU to start (exec, dynamic linking, page faults), several times what a
//! replayed loop's own work costs, and the board no longer crosses a pipe twice per stage. A
//! stage replaced with `--stage NAME=COMMAND` runs as `sh -c COMMAND`, with the board on its
//! stdin and its output read back.

use std::io::{Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};

use super::progress::{Ticker, Ui};
use super::settings::{MeetingSource, RunSettings};
use super::stop::Watch;
use crate::context::InputFrom;
use crate::error::{Error, Result};
use crate::io::{os_error, to_json_line};
use crate::llm::{Clients, LlmConfig};
use crate::model::{Board, MeetingPacket, ReportResult, Status, PACKET_VERSION};
use crate::stage::init_board;
use crate::stage::{agent_turn, merge_board, pm_step, render_report, Stage};

/// What a stage of the loop run in-process made: a board, or render-report's result.
pub(super) enum Made {
    Board(Board),
    Report(ReportResult),
}

/// The four stages of the loop: what `Board::next_stage` names. collect-context and
/// init-board run once, before the loop ([`Stages::collect`], [`Stages::init`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LoopStage {
    PmStep,
    AgentTurn,
    MergeBoard,
    RenderReport,
}

impl LoopStage {
    /// The loop stage `stage` is; `None` for the two that run before the loop.
    pub(super) fn of(stage: Stage) -> Option<LoopStage> {
        match stage {
            Stage::PmStep => Some(LoopStage::PmStep),
            Stage::AgentTurn => Some(LoopStage::AgentTurn),
            Stage::MergeBoard => Some(LoopStage::MergeBoard),
            Stage::RenderReport => Some(LoopStage::RenderReport),
            Stage::CollectContext | Stage::InitBoard => None,
        }
    }

    pub(super) fn stage(self) -> Stage {
        match self {
            LoopStage::PmStep => Stage::PmStep,
            LoopStage::AgentTurn => Stage::AgentTurn,
            LoopStage::MergeBoard => Stage::MergeBoard,
            LoopStage::RenderReport => Stage::RenderReport,
        }
    }
}

/// How a stage of the loop ended.
pub(super) enum Ran {
    /// It made its output: the line the checkpoint keeps, and that output read.
    Made { text: String, made: Made },
    /// render-report could not save the report: its `failed` result, whose `last_error` says
    /// why, is kept and ends the meeting.
    Unsaved { text: String, report: ReportResult },
    /// It failed and handed over nothing to keep: the meeting stops, resumable.
    Failed(Error),
}

/// The settings every in-process stage of one run shares, read once: the run's pinned config
/// file (docs/design/agents-and-config.md#config), the LLM flags over it, and render-report's template.
pub(super) struct Stages<'a> {
    settings: &'a RunSettings,
    /// An unreadable file fails the stage that needs it, as it would fail the program.
    config: Result<crate::settings::config::Config>,
    /// The LLM flags over the config file's defaults, and each caller's client, kept for
    /// the run (docs/design/llm.md#llm-layer).
    llm: Result<std::cell::RefCell<Clients>>,
    template: Result<Option<render_report::UserTemplate>>,
    /// `--resume --answer`: the answer of the person the meeting waits for, given to the
    /// next person's turn only (docs/design/agent-turn.md#waiting-for-a-person).
    answer: std::cell::RefCell<Option<agent_turn::human::Given>>,
}

impl<'a> Stages<'a> {
    /// Read the run's config file and template once.
    pub fn new(settings: &'a RunSettings) -> Stages<'a> {
        let config =
            crate::settings::config::load_file(settings.config_file.as_deref()).map(|l| l.config);
        let llm = config.as_ref().map_err(Clone::clone).map(|config| {
            std::cell::RefCell::new(Clients::for_run(LlmConfig {
                config: config.llm_defaults(),
                ..settings.llm.clone()
            }))
        });
        let template = settings
            .template
            .as_deref()
            .map(render_report::UserTemplate::load)
            .transpose();
        Stages {
            settings,
            config,
            llm,
            template,
            answer: Default::default(),
        }
    }

    /// Give the next person's turn this answer (`meeting --resume --answer`).
    pub fn with_answer(self, answer: Option<agent_turn::human::Given>) -> Stages<'a> {
        *self.answer.borrow_mut() = answer;
        self
    }

    /// collect-context: the packet, and the lines it has for the user (skipped paths,
    /// redactions), each prefixed with the program's name as the program prints them.
    pub fn collect(&self) -> Result<(MeetingPacket, Vec<String>)> {
        let s = self.settings;
        let from = match &s.source {
            MeetingSource::MeetingFile(f) => InputFrom::MeetingFile(f.clone()),
            MeetingSource::Topic(t) => InputFrom::Topic(t.clone()),
        };
        let context = crate::context::ContextSettings {
            context_root: s.context_root.clone(),
            allow_sensitive: s.allow_sensitive,
            no_redact: s.no_redact,
            max_context_chars: s.max_context_chars,
            docs: s.docs.clone(),
            participants: if s.share_docs {
                Vec::new()
            } else {
                s.board.options.agents.clone()
            },
        };
        let stage = Stage::CollectContext;
        let (packet, notes) = guarded(stage, || {
            crate::context::packet(from, None, |base| context.options(base))
        })?;
        let notes = notes.iter().map(|l| format!("{stage}: {l}")).collect();
        Ok((packet, notes))
    }

    /// init-board on the packet: the first board.
    pub fn init(&self, packet: MeetingPacket) -> Result<Board> {
        let s = self.settings;
        guarded(Stage::InitBoard, || {
            // `meeting` settled the loop limit when it started (`settings_of`): its board
            // flags carry it, as given.
            let config = self.config.as_ref().map_err(Clone::clone)?;
            // The callers' LLM configuration as the run's clients get it (`Stages::new`).
            let llm = LlmConfig {
                config: config.llm_defaults(),
                ..s.llm.clone()
            };
            let args = crate::settings::init_args(&s.board, llm, config, &packet.meeting_input);
            init_board::run(packet, "<stdin>", args)
        })
    }

    /// Run a stage of the loop on `board`. Like a program that prints its board and exits
    /// non-zero, render-report hands over its `failed` result together with the error.
    pub fn run(&self, stage: LoopStage, board: &Board) -> Ran {
        let made = match guarded(stage.stage(), || self.body(stage, board.clone())) {
            Ok(made) => made,
            Err(e) => return Ran::Failed(e),
        };
        let text = match &made {
            Made::Board(b) => to_json_line(b, false),
            Made::Report(r) => to_json_line(r, false),
        };
        match made {
            Made::Report(report) if report.status == Status::Failed => {
                Ran::Unsaved { text, report }
            }
            made => Ran::Made { text, made },
        }
    }

    fn body(&self, stage: LoopStage, board: Board) -> Result<Made> {
        let s = self.settings;
        let llm = || self.llm.as_ref().map_err(Clone::clone);
        Ok(match stage {
            LoopStage::PmStep => Made::Board(pm_step::run(board, &mut llm()?.borrow_mut())?),
            LoopStage::AgentTurn => {
                let given = agent_turn::human::is_human_turn(&board)
                    .then(|| self.answer.borrow_mut().take())
                    .flatten();
                Made::Board(agent_turn::run(
                    board,
                    &mut llm()?.borrow_mut(),
                    s.human_answers.as_deref(),
                    given,
                )?)
            }
            LoopStage::MergeBoard => {
                let now = crate::meeting::events::clock_from_env().now();
                Made::Board(merge_board::merge(board, &now)?)
            }
            LoopStage::RenderReport => Made::Report(render_report::run(
                board,
                self.template.as_ref().map_err(Clone::clone)?.as_ref(),
                Some(&s.report_file),
            )?),
        })
    }
}

/// Run a stage's body: its error, or a panic in it, as the driver's message for a failed stage.
fn guarded<T>(stage: Stage, body: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(made)) => Ok(made),
        Ok(Err(e)) => Err(failed(stage, e.or_file("<stdin>"))),
        Err(panic) => {
            let what = crate::error::panic_message(panic.as_ref());
            let e = Error::Runtime(format!("panicked: {what}"));
            Err(with_code(stage, 101, &e))
        }
    }
}

/// The driver's message for a stage that failed, worded as for a stage process that exited
/// with the error's code and printed `<program>: <message>`.
fn failed(stage: Stage, e: Error) -> Error {
    with_code(stage, e.exit_code(), &e)
}

fn with_code(stage: Stage, code: u8, e: &Error) -> Error {
    // Not a failure: the meeting waits for a person, and the driver keeps what they are asked.
    if let Error::Waiting { .. } = e {
        return e.clone();
    }
    let name = stage.program();
    let msg = format!("stage {name} failed (exit {code}): {name}: {e}");
    match e {
        Error::NotResumable(_) => Error::NotResumable(msg),
        _ if code == 2 => Error::Usage(msg),
        _ => Error::Runtime(msg),
    }
}

/// Run one stage of the loop on `board`: in this process when it is a built-in stage, else its
/// command with the board on stdin, its output read back (a user's stage prints the
/// pipeline's own data: output that is not a board is a runtime failure of that stage, exit 1,
/// not bad input from the user).
pub(super) fn run_loop_stage(
    stages: &Stages,
    loop_stage: LoopStage,
    board: &Board,
    ui: Ui,
    watch: &Watch,
) -> Result<Ran> {
    let stage = loop_stage.stage();
    let Some(command) = stages.settings.stage_overrides.get(&stage) else {
        let _ticker = Ticker::start(ui, &super::progress::ticker_label(stage, board));
        return Ok(stages.run(loop_stage, board));
    };
    let input = to_json_line(board, false);
    let settings = stages.settings;
    let (stdout, failure) =
        run_command(stage, command, settings, input.as_bytes(), ui, Some(watch))?;
    let label = format!("{stage} output");
    let text = String::from_utf8_lossy(&stdout).into_owned();
    let unreadable =
        |e: Error| Error::Runtime(format!("stage {stage} wrote an unusable board: {e}"));
    if let Some(e) = failure {
        // An agent-turn with no one there to answer prints what the person is asked (exit 4):
        // the meeting waits, as with the built-in stage.
        if stage == Stage::AgentTurn && serde_json::from_str::<crate::model::Waiting>(&text).is_ok()
        {
            return Ok(Ran::Failed(Error::Waiting {
                message: e.to_string(),
                document: text,
            }));
        }
        // A render-report that could not save the report still prints the `failed` result.
        let report = (stage == Stage::RenderReport)
            .then(|| crate::io::parse_doc::<ReportResult>(&label, &text, crate::io::Format::Json))
            .and_then(|r| r.ok())
            .filter(|r| r.status == Status::Failed);
        return Ok(match report {
            Some(report) => Ran::Unsaved { text, report },
            None => Ran::Failed(e),
        });
    }
    if std::str::from_utf8(&stdout).is_err() {
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
    Ok(Ran::Made { text, made })
}

/// collect-context or init-board replaced by the user's `command`, before the run folder
/// exists: what it printed, or its failure.
pub(super) fn run_first_command(
    stage: Stage,
    command: &str,
    settings: &RunSettings,
    input: &[u8],
    ui: Ui,
) -> Result<String> {
    let (stdout, failure) = run_command(stage, command, settings, input, ui, None)?;
    match failure {
        Some(e) => Err(e),
        None => Ok(String::from_utf8_lossy(&stdout).into_owned()),
    }
}

/// A collect-context replaced by the user's command: what it printed must be a packet.
pub(super) fn parse_packet(text: &str) -> Result<MeetingPacket> {
    crate::io::parse_versioned(
        "collect-context output",
        text,
        "packet_version",
        PACKET_VERSION,
    )
}

/// Run the user's `command` for `stage` (`sh -c`, docs/design/run-folder.md#run-folder) with `input` on stdin.
/// A non-zero exit still hands over what it printed (a render-report that could not save the
/// report prints the `failed` board), with an error carrying its own message and exit code.
fn run_command(
    stage: Stage,
    command: &str,
    settings: &RunSettings,
    input: &[u8],
    ui: Ui,
    watch: Option<&Watch>,
) -> Result<(Vec<u8>, Option<Error>)> {
    let name = stage.program();
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command);
    // The meeting's config file, pinned; empty: none (docs/design/agents-and-config.md#config).
    cmd.env(
        crate::settings::config::CONFIG_ENV,
        settings.config_file.as_deref().unwrap_or(Path::new("")),
    );
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    // Its own process group: a stop of the meeting stops the command and everything it
    // started (a shell's `agent-turn` and its calls), not only the shell (docs/design/run-folder.md#run-folder).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // Our own programs started by the command die with their parent too (`cli::main_with`).
    cmd.env(crate::cli::STAGE_CHILD_ENV, std::process::id().to_string());
    let started = match watch {
        Some(w) => w
            .spawn(&mut cmd)
            .map(|(child, running)| (child, Some(running))),
        None => cmd.spawn().map(|child| (child, None)),
    };
    let (mut child, running) = started.map_err(|e| {
        Error::Runtime(format!(
            "cannot start {name}: {} (install the programs with `cargo install --path .` or put them on PATH)",
            os_error(&e)
        ))
    })?;
    let (status, stdout, err_lines) = {
        let _running = running;
        let _ticker = Ticker::start(ui, name);
        exchange(&mut child, input)
    };
    let status = status.map_err(|e| Error::Runtime(format!("{name}: {}", os_error(&e))))?;
    let stdout = stdout
        .map_err(|e| Error::Runtime(format!("{name}: cannot read its output: {}", os_error(&e))))?;
    let mut err_lines: Vec<String> = err_lines
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .collect();
    if status.success() {
        if !ui.quiet {
            err_lines.iter().for_each(|l| crate::note!("{l}"));
        }
        return Ok((stdout, None));
    }
    // A stage that died with the driver's Ctrl-C or SIGTERM did not fail: the meeting stops.
    if let Some(w) = watch {
        w.after_child(&status);
    }
    let e = command_failure(name, &status, &mut err_lines);
    if !ui.quiet {
        err_lines.iter().for_each(|l| crate::note!("{l}"));
    }
    Ok((stdout, Some(e)))
}

/// Give `child` its input and read what it prints: its exit status, its stdout and its stderr
/// lines. Its stderr is held until it ends: on success its warnings are shown, on failure its
/// last line becomes the driver's one-line message.
fn exchange(
    child: &mut Child,
    input: &[u8],
) -> (
    std::io::Result<ExitStatus>,
    std::io::Result<Vec<u8>>,
    Vec<String>,
) {
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        // A stage may exit without reading all of stdin; its exit status tells what happened.
        let _ = stdin.write_all(&input);
    });
    let mut stderr = child.stderr.take().expect("piped stderr");
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text.lines().map(str::to_string).collect::<Vec<String>>()
    });
    let mut stdout = Vec::new();
    let read = child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_end(&mut stdout);
    let status = child.wait();
    let _ = writer.join();
    let err_lines = err_reader.join().unwrap_or_default();
    (status, read.map(|_| stdout), err_lines)
}

/// The driver's error for a command that exited non-zero: its last stderr line (taken from
/// `err_lines`), or a panic's own message, with its exit code (2: usage, else runtime).
fn command_failure(name: &str, status: &ExitStatus, err_lines: &mut Vec<String>) -> Error {
    let code = status.code().unwrap_or(1);
    // A panic (exit 101) ends with a backtrace hint: its own message is what tells.
    let panic = (code == 101)
        .then(|| err_lines.iter().position(|l| l.contains("panicked at")))
        .flatten()
        .map(|i| err_lines[i..(i + 2).min(err_lines.len())].join(" "));
    let last = err_lines.pop().unwrap_or_else(|| "no message".to_string());
    let last = panic.unwrap_or(last);
    let msg = format!("stage {name} failed (exit {code}): {last}");
    if code == 2 {
        Error::Usage(msg)
    } else {
        Error::Runtime(msg)
    }
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
