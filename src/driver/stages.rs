//! The built-in stages of a meeting, run inside the `meeting` process (DESIGN.md#run-folder): the
//! same library function each program's `main` calls, given the settings the program would get
//! as flags. A stage process costs about a millisecond of CPU to start (exec, dynamic linking,
//! page faults), several times what a replayed loop's own work costs, and the board no longer
//! crosses a pipe twice per stage. A stage replaced with `--stage NAME=COMMAND` still runs as a
//! process.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{MeetingSource, RunSettings};
use crate::cli::ContextArgs;
use crate::context::InputFrom;
use crate::error::{Error, Result};
use crate::llm::LlmArgs;
use crate::model::{Board, LlmSettings, MeetingPacket, ReportResult, Status};
use crate::stage::init_board::{self, InitArgs};
use crate::stage::{agent_turn, merge_board, pm_step, render_report, Stage};

/// What a stage of the loop run in-process made: a board, or render-report's result.
pub(crate) enum Made {
    Board(Board),
    Report(ReportResult),
}

/// The settings every in-process stage of one run shares, read once: the run's pinned config
/// file (DESIGN.md#config), the LLM flags over it, and render-report's template.
pub(crate) struct Stages<'a> {
    settings: &'a RunSettings,
    /// An unreadable file fails the stage that needs it, as it would fail the program.
    config: Result<crate::config::Config>,
    llm: Result<LlmArgs>,
    template: Result<Option<render_report::UserTemplate>>,
}

impl<'a> Stages<'a> {
    /// Read the run's config file and template once.
    pub fn new(settings: &'a RunSettings) -> Stages<'a> {
        let config = crate::config::load_file(settings.config_file.as_deref()).map(|l| l.config);
        let llm = config.as_ref().map_err(Clone::clone).map(|config| LlmArgs {
            config: config.llm_defaults(),
            ..settings.llm.clone()
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
        }
    }

    pub fn settings(&self) -> &RunSettings {
        self.settings
    }

    /// Whether `stage` runs here: a built-in one (no `--stage` override).
    pub fn runs(&self, stage: Stage) -> bool {
        !self.settings.stage_overrides.contains_key(&stage)
    }

    /// collect-context: the packet, and the lines it has for the user (skipped paths,
    /// redactions), each prefixed with the program's name as the program prints them.
    pub fn collect(&self) -> Result<(MeetingPacket, Vec<String>)> {
        let s = self.settings;
        let from = match &s.source {
            MeetingSource::MeetingFile(f) => InputFrom::MeetingFile(f.clone()),
            MeetingSource::Topic(t) => InputFrom::Topic(t.clone()),
        };
        let context = ContextArgs {
            context_root: s.context_root.clone(),
            allow_sensitive: s.allow_sensitive,
            no_redact: s.no_redact,
            max_context_chars: s
                .max_context_chars
                .unwrap_or(crate::context::DEFAULT_MAX_CONTEXT_CHARS),
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
            let args = InitArgs {
                board: &s.board,
                llm: LlmSettings {
                    provider: s.llm.provider.clone().unwrap_or_default(),
                    model: s.llm.model.clone(),
                    temperature: s.llm.temperature,
                    max_tokens: s.llm.max_tokens,
                },
                // The program is always given `--max-loops` (RunSettings::stage_args).
                max_loops_given: true,
                config: self.config.as_ref().map_err(Clone::clone)?,
            };
            init_board::run(packet, "<stdin>", args)
        })
    }

    /// Run a stage of the loop on `board`. Like a program that prints its board and exits
    /// non-zero, render-report hands over its `failed` result together with the error.
    pub fn run(&self, stage: Stage, board: &Board) -> (Option<Made>, Option<Error>) {
        match guarded(stage, || self.body(stage, board.clone())) {
            Ok(Made::Report(r)) if r.status == Status::Failed => {
                let why = r.board.last_error.clone().unwrap_or_default();
                let e = failed(stage, Error::Runtime(why));
                (Some(Made::Report(r)), Some(e))
            }
            Ok(made) => (Some(made), None),
            Err(e) => (None, Some(e)),
        }
    }

    fn body(&self, stage: Stage, board: Board) -> Result<Made> {
        let s = self.settings;
        let llm = || self.llm.as_ref().map_err(Clone::clone);
        Ok(match stage {
            Stage::PmStep => Made::Board(pm_step::run(board, llm()?)?),
            Stage::AgentTurn => {
                Made::Board(agent_turn::run(board, llm()?, s.human_answers.as_deref())?)
            }
            Stage::MergeBoard => {
                let now = crate::events::clock_from_env().now();
                Made::Board(merge_board::merge(board, &now)?)
            }
            Stage::RenderReport => Made::Report(render_report::run(
                board,
                self.template.as_ref().map_err(Clone::clone)?.as_ref(),
                Some(&s.report_file),
            )?),
            Stage::CollectContext | Stage::InitBoard => {
                unreachable!("{stage} runs once, before the loop (Stages::collect, init)")
            }
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
    let name = stage.program();
    let msg = format!("stage {name} failed (exit {code}): {name}: {e}");
    if code == 2 {
        Error::Usage(msg)
    } else {
        Error::Runtime(msg)
    }
}
