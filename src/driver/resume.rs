//! `meeting --resume` (docs/design/run-folder.md#resume): the settings a resume may change, and going on
//! from the last complete checkpoint of a run folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::drive::Run;
use super::report_path::{check_report_path, prove_writable};
use super::run_dir::RunDir;
use super::settings::{absolute, RunSettings, SETTINGS_VERSION};
use crate::error::Result;
use crate::io::to_json_line;
use crate::stage::Stage;

/// What `--resume` may change: settings that do not change what the meeting is
/// (docs/design/run-folder.md#resume). `None` keeps the saved value.
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
    let (step, _, board) = run.resume_point()?;
    let changed = changes.apply(&mut settings);
    if board.next_stage().is_some() {
        // The same checks as a new meeting's, before any further model call.
        check_report_path(&settings, &board, &run.path)?;
        prove_writable(&settings.report_file)?;
    }
    if changed {
        run.write(&file, to_json_line(&settings, true).as_bytes())?;
    }
    run.discard_after(step)?;
    let tally = run.resume_events(&board)?;
    Ok(Run::new(run, settings, board, step + 1, tally, lock))
}
