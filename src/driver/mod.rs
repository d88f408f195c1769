//! The `meeting` driver (docs/design/run-folder.md#run-folder): takes the board through the stages until the
//! meeting ends, keeps the run folder, resumes a killed meeting from its last complete board,
//! and reports progress. It holds no rule of the meeting itself: those live in the stages,
//! which is why a user can swap any of them (`--stage NAME=COMMAND`).
//!
//! One file per concern:
//! - `settings`: what `meeting.json` holds (`RunSettings`, `MeetingSource`), `--stage` values
//! - `start`: a new meeting and `--dry-run`; how each caller's provider and model resolve
//! - `report_path`: where the report goes and what it must not overwrite
//! - `run_dir`: the run folder: lock, checkpoints, `events.jsonl`, the user's log copy
//! - `stages`: the stages run in-process, and a `--stage` command run as a process
//! - `drive`: the loop
//! - `resume`: `--resume`
//! - `trust`: the one reader of a run folder a user names, and the gate of what it asks for
//! - `fork`: `--fork DIR --at-loop N`, a new meeting answered from its parent's log up to loop N
//! - `progress`: what stderr shows, and `--step`'s prompt
//! - `outcome`: the tally of the events, the MeetingResult, a failed meeting's error
//! - `record`: the decision record a meeting owes (`--adr`), written once
//! - `stop`: Ctrl-C and SIGTERM while a meeting drives its folder

mod callers;
pub mod child;
mod drive;
mod fork;
pub mod history;
pub mod on_waiting;
mod outcome;
mod progress;
mod record;
mod report_path;
mod resume;
mod run_dir;
mod settings;
mod stages;
mod start;
mod stop;
mod trust;

use std::path::PathBuf;

pub use callers::callers_of_agents;
pub use drive::{drive, Run};
pub use fork::{compare, fork, ForkChanges};
pub use outcome::{final_line, Answers, Tally};
pub use progress::{loop_of_line, stderr_is_tty, Ui};
pub use record::written_record;
pub use report_path::is_within;
pub use resume::{resume, ResumeChanges};
pub use run_dir::{RunDir, KEEP_BOARDS, KEEP_BOARDS_ENV};
pub use settings::{absolute, AdrSettings};
pub use settings::{parse_stage_overrides, MeetingSource, RunSettings, SETTINGS_VERSION};
pub use start::{dry_run, start, DryRun, NewMeeting};
pub use stop::hint as resume_hint;
pub use trust::{Folder, GivenAgain};

use crate::error::{Error, Result};
use crate::model::MeetingResult;
use crate::note;

/// What `meeting` was asked to do.
pub enum Request {
    Start(NewMeeting),
    DryRun(NewMeeting),
    Resume {
        dir: PathBuf,
        changes: ResumeChanges,
    },
    Fork {
        parent: PathBuf,
        changes: ForkChanges,
    },
}

/// How `meeting` ended.
pub enum Outcome {
    /// `--dry-run`: what it prints.
    DryRun(Box<DryRun>),
    /// The meeting ended (or a `--step` user stopped it): the MeetingResult to print, and the
    /// error the program then exits with when the meeting failed (docs/design/failure-policy.md#failure-policy).
    Ended {
        result: Box<MeetingResult>,
        failure: Option<Error>,
        /// After the error: how to finish what the meeting still owes (its decision record).
        hint: Option<String>,
    },
    /// A stage failed with the run folder resumable: the error, then the hint
    /// ([`resume_hint`]) on how to go on (docs/design/run-folder.md#resume).
    Stopped { error: Error, run_dir: PathBuf },
}

/// Send the run folder's trace to the collector, however the meeting ended; a failure is a
/// warning, shown even with `--quiet`, and never the meeting's (docs/design/otel.md#traces).
fn export_traces(dir: &std::path::Path, target: &crate::otlp::OtlpSettings, ui: Ui) {
    match crate::otlp::export_run(dir, target) {
        Ok(n) if !ui.quiet => note!("traces: {n} spans sent to {}", target.traces_url),
        Ok(_) => {}
        Err(e) => note!("meeting: warning: traces not exported: {e}"),
    }
}

/// The decision record the meeting owes once its report is saved, written (or finished) while
/// the run folder is still locked; what was written is said on stderr.
fn owed_record(run: &Run, result: &MeetingResult) -> Result<()> {
    let dir = &run.dir.path;
    let (true, Some(report)) = (record::makes_record(result.status), &result.report_file) else {
        return Ok(());
    };
    if !record::owed(dir, &run.settings) {
        return Ok(());
    }
    let board = final_board(dir)?;
    if let Some(outcome) =
        record::write_owed(dir, &run.settings, &board, std::path::Path::new(report))?
    {
        note!(
            "{}",
            crate::stage::render_report::adr_note("meeting", &outcome)
        );
    }
    Ok(())
}

/// `meeting show-config --run-folder DIR`: every setting as the folder's meeting resolved it
/// when it started, with its source, read through the one reader of run folders.
pub fn resolved_settings(dir: &std::path::Path) -> Result<String> {
    let folder = trust::Folder::open(dir, "--run-folder")?;
    let rows = &folder.settings.resolved;
    if rows.is_empty() {
        return Err(Error::Usage(format!(
            "--run-folder: {} keeps no resolved settings (a meeting started by an earlier build, or a fork: its meeting.json holds its flags)",
            dir.display()
        )));
    }
    let head = format!(
        "# run folder: {} (the settings its meeting resolved when it started)\n",
        dir.display()
    );
    Ok(crate::text::sanitise(&crate::settings::render(&head, rows)).into_owned())
}

/// The board a run folder ended with, from its newest whole checkpoint (`meeting --adr`
/// writes the decision record from it).
pub fn final_board(dir: &std::path::Path) -> Result<crate::model::Board> {
    let run = RunDir {
        path: dir.to_path_buf(),
    };
    run.resume_point().map(|(_, _, board)| board)
}

/// Run what `meeting` was asked: start, resume or dry-run, then drive the meeting to its end.
pub fn meeting(request: Request, ui: Ui) -> Result<Outcome> {
    let run = match request {
        Request::DryRun(new) => return Ok(Outcome::DryRun(Box::new(dry_run(new, ui)?))),
        Request::Start(new) => start(new, ui)?,
        Request::Fork { parent, changes } => fork(&parent, changes, ui)?,
        Request::Resume { dir, changes } => {
            let run = resume(&dir, changes)?;
            if !ui.quiet {
                note!("{}", progress::resume_line(&run.board));
                note!("{}", progress::resume_uses(&run.settings));
            }
            run
        }
    };
    let driven = drive(&run, ui);
    if let Some(target) = &run.settings.otlp {
        export_traces(&run.dir.path, target, ui);
    }
    match driven {
        Ok(result) => {
            let mut failure = outcome::failure(&result, &run.settings, &run.dir.path);
            let mut hint = None;
            if let Err(e) = owed_record(&run, &result) {
                failure.get_or_insert(e);
                hint = run
                    .settings
                    .adr
                    .as_ref()
                    .map(|adr| record::resume_hint(&run.dir.path, adr));
            }
            Ok(Outcome::Ended {
                result: Box::new(result),
                failure,
                hint,
            })
        }
        Err(error) => Ok(Outcome::Stopped {
            error,
            run_dir: run.dir.path.clone(),
        }),
    }
}
