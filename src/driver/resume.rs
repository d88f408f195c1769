//! `meeting --resume` (docs/design/run-folder.md#resume): the settings a resume may change, and going on
//! from the last complete checkpoint of a run folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::drive::Run;
use super::report_path::{check_report_path, prove_writable};
use super::run_dir::RunDir;
use super::settings::{absolute, RunSettings};
use crate::error::{Error, Result};
use crate::io::to_json_line;
use crate::model::{Board, ReportResult, Status};
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
    /// Export the traces here (also a finished meeting's: docs/design/otel.md#traces).
    pub otlp: Option<crate::otlp::OtlpSettings>,
    /// `--header`s: not kept in `meeting.json`, given again to every resume, like keys
    /// (docs/design/llm.md#gateways).
    pub headers: Vec<String>,
    /// `--trust-run-dir`: use what the run folder asks for without it being given again, from
    /// a folder whoever may write (docs/design/run-folder.md#a-run-folder-is-input).
    pub trust_run_dir: bool,
    /// `--adr` (and `--supersedes`): the decision record to write, or to finish writing.
    pub adr: Option<super::settings::AdrSettings>,
    /// `--answer FILE`: the answer of the person the meeting waits for
    /// (docs/design/agent-turn.md#waiting-for-a-person).
    pub answer: Option<PathBuf>,
    /// `--answer-for CALL`: the call the answer is for; another one waiting is a usage error.
    pub answer_for: Option<u64>,
    /// `--template FILE`: the report's template, given again (a saved one is a path the run
    /// folder names: docs/design/run-folder.md#a-run-folder-is-input).
    pub template: Option<PathBuf>,
    /// `--human-answers FILE`, given again (the same).
    pub human_answers: Option<PathBuf>,
    /// `--on-waiting CMD` (else the user's config file's `on_waiting`, never the folder's).
    pub on_waiting: Option<String>,
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
        llm.read_timeout = self.read_timeout.or(llm.read_timeout);
        llm.max_attempts = self.max_attempts.unwrap_or(llm.max_attempts);
        if let Some(otlp) = self.otlp {
            settings.otlp = Some(otlp);
        }
        if let Some(t) = self.template {
            settings.template = Some(absolute(&t));
        }
        if let Some(f) = self.human_answers {
            settings.human_answers = Some(absolute(&f));
        }
        if let Some(adr) = self.adr {
            // The saved number stands unless another is given; the deciders are resolved
            // again with the flag, as at the start.
            let saved = settings.adr.take().and_then(|a| a.supersedes);
            settings.adr = Some(super::settings::AdrSettings {
                dir: absolute(&adr.dir),
                supersedes: adr.supersedes.or(saved),
                deciders: adr.deciders,
            });
        }
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
pub fn resume(dir: &Path, mut changes: ResumeChanges) -> Result<Run> {
    let answer = changes.answer.take();
    let answer_for = changes.answer_for.take();
    let folder = super::trust::Folder::open(dir, "--resume")?;
    let file = dir.join("meeting.json");
    let mut settings = folder.settings.clone();
    let run = &folder.run;
    let lock = run.lock()?;
    // The exchange log is the one of this run folder, wherever it has been moved or copied;
    // so is the config copy.
    settings.llm.llm_log = Some(absolute(&dir.join("llm.jsonl")));
    if settings.config_file.is_some() {
        settings.config_file = Some(absolute(&dir.join("config.yaml")));
    }
    cut_torn_line(&dir.join("llm.jsonl"))?;
    let (step, stage, mut board) = run.resume_point()?;
    // Read once: whether the saved settings still owe their decision record.
    let saved_adr_owed = super::record::owed(dir, &settings);
    let given = super::trust::GivenAgain {
        stages: changes.stage_overrides.clone(),
        otlp: changes.otlp.is_some(),
        report_file: changes.report_file.is_some(),
        adr: changes.adr.is_some() || !saved_adr_owed,
        template: changes.template.is_some(),
        human_answers: changes.human_answers.is_some(),
    };
    folder.gate(&settings, board.next_stage(), &given, changes.trust_run_dir)?;
    let adr_owed = saved_adr_owed || changes.adr.is_some();
    settings.llm.headers = std::mem::take(&mut changes.headers);
    let saved_report = settings.report_file.clone();
    let on_waiting = changes.on_waiting.take();
    let changed = changes.apply(&mut settings);
    super::fork::parent_share(&mut board, &settings);
    if board.next_stage().is_some() {
        // The same checks as a new meeting's, before any further model call.
        check_report_path(&settings, &board, &run.path)?;
        prove_writable(&settings.report_file)?;
        if let Some(file) = &settings.human_answers {
            crate::stage::agent_turn::human::answer_lines(file)?;
        }
    } else if board.status == Status::Finished && settings.report_file != saved_report {
        save_report_again(run, (step, stage), &settings, &board, &saved_report)?;
    }
    if let (Some(adr), true) = (&settings.adr, adr_owed) {
        // A folder the record cannot go to, or a wrong number, is found before any call.
        super::record::check(adr)?;
    }
    if changed {
        run.write(&file, to_json_line(&settings, true).as_bytes())?;
    }
    run.discard_after(step)?;
    let tally = run.resume_events(&board)?;
    let answer = match &answer {
        Some(file) => Some(given_answer(run, &board, file, answer_for)?),
        None => None,
    };
    let fork_at = super::fork::pending(&settings, &board);
    settings.on_waiting = crate::settings::on_waiting(on_waiting);
    let mut run = Run::new(folder.run, settings, board, step + 1, tally, lock);
    run.answer = answer;
    run.fork_at = fork_at;
    Ok(run)
}

/// `--answer FILE`: the answer of the person the run folder's meeting waits for, read
/// (JSON or the template's text form) before anything runs; a meeting that waits for no one
/// is a usage error.
fn given_answer(
    run: &RunDir,
    board: &Board,
    file: &Path,
    answer_for: Option<u64>,
) -> Result<crate::stage::agent_turn::human::Given> {
    let waiting = run.waiting()?.filter(|w| {
        crate::stage::agent_turn::human::is_human_turn(board)
            && board
                .pending_calls
                .first()
                .is_some_and(|c| c.target_agent == w.agent)
    });
    let Some(waiting) = waiting else {
        return Err(Error::Usage(format!(
            "--answer: the meeting in {} is not waiting for anyone's answer (its run folder holds no waiting.json for the next turn)",
            run.path.display()
        )));
    };
    if let Some(call) = answer_for.filter(|c| *c != waiting.call) {
        return Err(Error::Usage(format!(
            "--answer-for: the answer is for call {call}, but the meeting in {} now waits for call {} ({}'s answer to: {}); it was answered, and the meeting moved on",
            run.path.display(),
            waiting.call,
            waiting.agent,
            waiting.question
        )));
    }
    Ok(crate::stage::agent_turn::human::Given {
        text: crate::stage::agent_turn::human::read_answer(file, &waiting)?,
        asked_at: waiting.asked_at,
    })
}

/// An ended meeting given a new `--report-file`: its saved report (the render-report
/// checkpoint's Markdown, byte for byte) is written there too, with the checks and the atomic
/// write of a normal save, so the MeetingResult never names a report that is not on disk
/// (docs/design/run-folder.md#resume).
fn save_report_again(
    run: &RunDir,
    (step, stage): (u32, Stage),
    settings: &RunSettings,
    board: &Board,
    saved: &Path,
) -> Result<()> {
    let report = &settings.report_file;
    check_report_path(settings, board, &run.path)?;
    prove_writable(report)?;
    let checkpoint = run.file(step, stage, "out");
    let markdown = match stage {
        Stage::RenderReport => {
            let text = crate::io::read_text_file(&checkpoint)?;
            crate::io::parse_doc::<ReportResult>(
                &checkpoint.display().to_string(),
                &text,
                crate::io::Format::Json,
            )?
            .markdown
        }
        _ => {
            return Err(Error::Usage(format!(
                "--report-file: the meeting in {} has ended and its report is at {}; the run folder holds no copy of it to save at {}",
                run.path.display(),
                saved.display(),
                report.display()
            )))
        }
    };
    crate::io::write_atomic(report, markdown.as_bytes())
}

/// A crash or a full disk may leave the exchange log's last line torn: it is cut at the last
/// newline before anything is appended, so every line stays one whole document
/// (docs/design/run-folder.md#resume).
fn cut_torn_line(log: &Path) -> Result<()> {
    let fail = |e: std::io::Error| {
        crate::error::Error::Runtime(format!("{}: {}", log.display(), crate::io::os_error(&e)))
    };
    let Some(bytes) = crate::io::read_if_exists(log)? else {
        return Ok(());
    };
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return Ok(());
    }
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(log)
        .map_err(fail)?;
    file.set_len(keep as u64).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    crate::note!(
        "meeting: {}: cut a torn last line ({} bytes, lost in a crash)",
        log.display(),
        bytes.len() - keep
    );
    Ok(())
}
