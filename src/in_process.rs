//! The built-in stages of a meeting's loop, run inside the `meeting` process (DESIGN.md#run-folder):
//! the same library function each program's `main` calls, given the settings the program would
//! get as flags. A stage process costs about a millisecond of CPU to start (exec, dynamic
//! linking, page faults), several times what a replayed loop's own work costs, and the board
//! no longer crosses a pipe twice per stage. A stage replaced with `--stage NAME=COMMAND` still
//! runs as a process.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::driver::RunSettings;
use crate::error::{Error, Result};
use crate::llm::LlmArgs;
use crate::model::{Board, ReportResult, Status};
use crate::stage::{agent_turn, merge_board, pm_step, render_report, Stage};

/// What a stage run in-process made: a board, or render-report's result.
pub(crate) enum Made {
    Board(Board),
    Report(ReportResult),
}

/// The settings every in-process stage of one drive shares, read once: the LLM flags with the
/// run's pinned config file under them (DESIGN.md#config), and render-report's template.
pub(crate) struct Stages<'a> {
    settings: &'a RunSettings,
    /// An unreadable file fails the stage that needs it, as it would fail the program.
    llm: Result<LlmArgs>,
    template: Result<Option<render_report::UserTemplate>>,
}

impl<'a> Stages<'a> {
    /// Read the run's config file and template once.
    pub fn new(settings: &'a RunSettings) -> Stages<'a> {
        let llm = crate::config::load_file(settings.config_file.as_deref()).map(|loaded| LlmArgs {
            config: loaded.config.llm_defaults(),
            ..settings.llm.clone()
        });
        let template = settings
            .template
            .as_deref()
            .map(render_report::UserTemplate::load)
            .transpose();
        Stages {
            settings,
            llm,
            template,
        }
    }

    pub fn settings(&self) -> &RunSettings {
        self.settings
    }

    /// Whether `stage` runs here: a built-in stage of the loop (or the report).
    pub fn runs(&self, stage: Stage) -> bool {
        matches!(
            stage,
            Stage::PmStep | Stage::AgentTurn | Stage::MergeBoard | Stage::RenderReport
        ) && !self.settings.stage_overrides.contains_key(&stage)
    }

    /// Run `stage` on `board`. Like a program that prints its board and exits non-zero,
    /// render-report hands over its `failed` result together with the error.
    pub fn run(&self, stage: Stage, board: &Board) -> (Option<Made>, Option<Error>) {
        let ran = catch_unwind(AssertUnwindSafe(|| self.body(stage, board.clone())));
        match ran {
            Ok(Ok(Made::Report(r))) if r.status == Status::Failed => {
                let why = r.board.last_error.clone().unwrap_or_default();
                (
                    Some(Made::Report(r)),
                    Some(failed(stage, Error::Runtime(why))),
                )
            }
            Ok(Ok(made)) => (Some(made), None),
            Ok(Err(e)) => (None, Some(failed(stage, e.or_file("<stdin>")))),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let e = Error::Runtime(format!("panicked: {what}"));
                (None, Some(with_code(stage, 101, &e)))
            }
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
                unreachable!("{stage} runs as a program (Stages::runs)")
            }
        })
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
