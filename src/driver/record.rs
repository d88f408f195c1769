//! The decision record a meeting owes (`--adr`, docs/design/report.md#adr): written from the
//! final board once the report is saved, once per meeting. `adr.json` in the run folder says
//! what was written, so a resume after a write that failed finishes it — the record, then
//! the superseded record's status — and never writes a second record.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::settings::{AdrSettings, RunSettings};
use crate::error::Result;
use crate::model::{Board, MeetingStatus};
use crate::stage::render_report::{self as report, AdrOutcome, AdrRequest};

/// What the run folder's `adr.json` says was written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Written {
    record: PathBuf,
    /// The superseded record's status is amended (or there is none to amend).
    #[serde(default)]
    done: bool,
}

const FILE: &str = "adr.json";

fn written(run_dir: &Path) -> Option<Written> {
    let text = std::fs::read_to_string(run_dir.join(FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The decision record a run folder's meeting wrote, once it is written whole.
pub fn written_record(run_dir: &Path) -> Option<PathBuf> {
    written(run_dir)
        .filter(|w| w.done && w.record.is_file())
        .map(|w| w.record)
}

fn keep(run_dir: &Path, w: &Written) -> Result<()> {
    let text = crate::io::to_json_line(w, true);
    crate::io::write_atomic(&run_dir.join(FILE), text.as_bytes())
}

/// Whether a meeting that ends `status` makes a record (a saved report with a decision; a
/// fallback says it makes none).
pub(super) fn makes_record(status: MeetingStatus) -> bool {
    matches!(status, MeetingStatus::Finished | MeetingStatus::NoDecision)
}

/// Whether the run folder still owes the record its settings ask for: nothing written yet,
/// or the superseded record's status not yet amended.
pub(super) fn owed(run_dir: &Path, settings: &RunSettings) -> bool {
    settings.adr.is_some() && !written(run_dir).is_some_and(|w| w.done && w.record.exists())
}

/// Write the record the settings ask for, or finish the one a stopped write left; `None`
/// when none is owed. The report must be saved (`report_file`).
pub(super) fn write_owed(
    run_dir: &Path,
    settings: &RunSettings,
    board: &Board,
    report_file: &Path,
) -> Result<Option<AdrOutcome>> {
    let Some(adr) = &settings.adr else {
        return Ok(None);
    };
    let req = AdrRequest {
        dir: &adr.dir,
        report_file: Some(report_file),
        supersedes: adr.supersedes.as_deref(),
        deciders: &adr.deciders,
    };
    match written(run_dir).filter(|w| w.record.exists()) {
        Some(w) if w.done => Ok(None),
        Some(w) => {
            let amended = report::amend_superseded(board, &req, &w.record)?;
            keep(
                run_dir,
                &Written {
                    done: true,
                    ..w.clone()
                },
            )?;
            Ok(Some(AdrOutcome::Written {
                path: w.record,
                amended,
            }))
        }
        None => {
            let outcome = report::write_adr_noting(board, &req, |path| {
                keep(
                    run_dir,
                    &Written {
                        record: path.to_path_buf(),
                        done: false,
                    },
                )
            })?;
            if let AdrOutcome::Written { path, .. } = &outcome {
                keep(
                    run_dir,
                    &Written {
                        record: path.clone(),
                        done: true,
                    },
                )?;
            }
            Ok(Some(outcome))
        }
    }
}

/// Refuse a record folder the record cannot go to, or a superseded number it does not hold
/// (exit 2), before any call.
pub(super) fn check(adr: &AdrSettings) -> Result<()> {
    report::check_adr_dir(&adr.dir)?;
    match &adr.supersedes {
        Some(n) => report::check_supersedes(&adr.dir, n),
        None => Ok(()),
    }
}

/// How to finish the record after a write failed: the resume that writes it.
pub(super) fn resume_hint(run_dir: &Path, adr: &AdrSettings) -> String {
    let what = match written(run_dir).filter(|w| w.record.exists()) {
        Some(w) => format!(
            "the decision record {} is written but the record it supersedes is not marked",
            w.record.display()
        ),
        None => "the decision record is not written".to_string(),
    };
    format!(
        "{what}: finish it with  meeting resume {} --adr {}",
        run_dir.display(),
        adr.dir.display()
    )
}
