//! The run folders as a history (docs/design/run-folder.md#history): where each meeting stands
//! (`meeting list`, MCP's `meeting_status`), what it came to (`meeting show`), and what the
//! meetings started today cost (`--max-cost-per-day`).
//!
//! A run folder is input someone else could write: no link is followed, every file is read
//! up to the input bound, only the folder's own content is shown (never a file it names), and
//! its text is cleaned of terminal escapes before it reaches the terminal.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;

use super::run_dir::{read_checkpoint, RunDir};
use super::settings::RunSettings;
use crate::error::{Error, Result};
use crate::model::{Board, MeetingStatus, Status, WAITING_FILE};
use crate::stage::Stage;

/// Where a meeting stands, read from its run folder: a meeting's own status ([`MeetingStatus`],
/// by its own name: `running`, `waiting`, `finished`, `no_decision`, …), or what only a run
/// folder read from outside can be — `stopped` (resumable), `cancelled` (stopped by an MCP
/// client's cancel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Stopped,
    Cancelled,
    #[serde(untagged)]
    Meeting(MeetingStatus),
}

impl RunState {
    /// Every state.
    pub fn all() -> Vec<RunState> {
        let mut all = vec![RunState::Stopped, RunState::Cancelled];
        all.extend(MeetingStatus::ALL.map(RunState::Meeting));
        all
    }

    /// The state's name, as JSON spells it.
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The state named `name` (`meeting list --status`).
    pub fn parse(name: &str) -> Result<RunState> {
        RunState::all()
            .into_iter()
            .find(|s| s.name() == name.trim())
            .ok_or_else(|| {
                let names: Vec<String> = RunState::all().into_iter().map(|s| s.name()).collect();
                Error::Usage(format!(
                    "--status: unknown status {name:?} (one of {})",
                    names.join(", ")
                ))
            })
    }

    /// Where a meeting whose newest checkpoint is `board` stands: `running` while a process
    /// drives it, `waiting` while it waits for a person, `stopped` (or `cancelled`) when it can
    /// go on, else how it ended. The one rule of `meeting list` and `meeting_status`.
    pub fn of(board: &Board, running: bool, waiting: bool, cancelled: bool) -> RunState {
        if running {
            RunState::Meeting(MeetingStatus::Running)
        } else if waiting {
            RunState::Meeting(MeetingStatus::Waiting)
        } else if board.next_stage().is_some() && cancelled {
            RunState::Cancelled
        } else if board.next_stage().is_some() {
            RunState::Stopped
        } else {
            match board.status {
                Status::Finished
                    if crate::meeting::final_report::no_decision_reason(board).is_some() =>
                {
                    RunState::Meeting(MeetingStatus::NoDecision)
                }
                other => RunState::Meeting(other.into()),
            }
        }
    }
}

/// Whether another process holds the run folder (a meeting is driving it).
pub fn locked(run_dir: &Path) -> bool {
    let Ok(file) = std::fs::OpenOptions::new()
        .write(true)
        .open(run_dir.join(".lock"))
    else {
        return false;
    };
    // Taken here, the lock is let go with the file at once.
    file.try_lock().is_err()
}

/// One meeting of the history: a line of `meeting list`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunSummary {
    pub run_id: String,
    pub run_dir: String,
    /// When it started (its first event), UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    pub topic: String,
    pub status: RunState,
    /// The option it chose, when it decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    pub loops: u32,
    pub tokens: u64,
    /// What its live calls cost, where every model is priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The most bytes read of a first event line.
const FIRST_LINE_BYTES: u64 = 64 * 1024;

/// When the meeting in `dir` started: its first event's `ts`.
fn started(dir: &Path) -> Option<String> {
    let file = std::fs::File::open(dir.join("events.jsonl")).ok()?;
    let mut line = String::new();
    std::io::BufReader::new(file.take(FIRST_LINE_BYTES))
        .read_line(&mut line)
        .ok()?;
    let first: serde_json::Value = serde_json::from_str(&line).ok()?;
    first["ts"].as_str().map(str::to_string)
}

/// The newest whole checkpoint of a run folder, without reading its event log (which has no
/// bound): what the history shows. A resume checks the events too ([`RunDir::resume_point`]).
fn newest_board(dir: &RunDir) -> Result<Board> {
    let mut outputs = dir.outputs()?;
    outputs.sort_by_key(|(n, _, _)| std::cmp::Reverse(*n));
    for (_, stage, path) in outputs {
        if stage == Stage::CollectContext {
            break;
        }
        let Ok(text) = crate::io::read_text_file(&path) else {
            continue;
        };
        if let Ok(board) = read_checkpoint(stage, &path, &text) {
            return Ok(board);
        }
    }
    Err(Error::Usage(format!(
        "{}: holds no whole checkpoint",
        dir.path.display()
    )))
}

/// A run folder's line in the history. `Err` for a folder that is not a readable one.
pub fn summary(dir: &Path) -> Result<RunSummary> {
    let run = RunDir::given(dir, "meeting list")?;
    let board = newest_board(&run)?;
    let waiting = run.path.join(WAITING_FILE).is_file();
    let status = RunState::of(&board, locked(dir), waiting, false);
    let clean = |s: &str| crate::text::fold_ws(&crate::text::sanitise(s));
    Ok(RunSummary {
        run_id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        run_dir: super::absolute(dir).display().to_string(),
        started: started(dir).map(|s| clean(&s)),
        topic: clean(&board.topic),
        status,
        decision: board
            .record
            .decision
            .as_ref()
            .map(|d| clean(&d.choice))
            .filter(|_| status == RunState::Meeting(MeetingStatus::Finished)),
        loops: board.loop_count,
        tokens: board.usage.tokens.total(),
        cost_usd: crate::meeting::budget::live_cost(&board).and_then(|c| c.usd),
    })
}

/// The run folders under `runs`: real folders (no link) holding a `meeting.json`.
fn run_folders(runs: &Path) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(runs) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::Usage(format!(
                "{}: cannot read: {}",
                runs.display(),
                crate::io::os_error(&e)
            )))
        }
    };
    Ok(entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| std::fs::symlink_metadata(p.join("meeting.json")).is_ok_and(|m| m.is_file()))
        .collect())
}

/// `meeting list`: the newest `limit` meetings under `runs` (of the given states, when some
/// are), newest first; and how many folders could not be read.
pub fn list(runs: &Path, states: &[RunState], limit: usize) -> Result<(Vec<RunSummary>, usize)> {
    // Newest first by start; a folder whose start is unknown goes last.
    let mut folders: Vec<(Option<String>, PathBuf)> = run_folders(runs)?
        .into_iter()
        .map(|p| (started(&p), p))
        .collect();
    folders.sort_by(|a, b| b.cmp(a));
    let mut rows = Vec::new();
    let mut unreadable = 0;
    for (_, dir) in folders {
        if rows.len() >= limit {
            break;
        }
        match summary(&dir) {
            Ok(row) if states.is_empty() || states.contains(&row.status) => rows.push(row),
            Ok(_) => {}
            Err(_) => unreadable += 1,
        }
    }
    Ok((rows, unreadable))
}

/// `meeting list` as a table for the terminal: one line per meeting.
pub fn table(rows: &[RunSummary]) -> String {
    let id_width = rows
        .iter()
        .map(|r| r.run_id.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut out = format!(
        "{:<16}  {:<11}  {:>5}  {:>7}  {:>6}  {:<id_width$}  TOPIC → DECISION\n",
        "STARTED (UTC)", "STATUS", "LOOPS", "TOKENS", "COST", "RUN ID"
    );
    for r in rows {
        let started = r
            .started
            .as_deref()
            .map(|s| s.get(..16).unwrap_or(s).replace('T', " "))
            .unwrap_or_else(|| "-".into());
        let cost = r
            .cost_usd
            .map_or_else(|| "-".into(), |c| format!("${c:.2}"));
        let decision = r
            .decision
            .as_deref()
            .map(|d| format!(" → {}", crate::text::cut(d, 41)))
            .unwrap_or_default();
        out.push_str(&format!(
            "{started:<16}  {:<11}  {:>5}  {:>7}  {cost:>6}  {:<id_width$}  {}{decision}\n",
            r.status.name(),
            r.loops,
            r.tokens,
            r.run_id,
            crate::text::cut(&r.topic, 61),
        ));
    }
    out
}

/// The run folder `meeting show` means by `id`: a folder path, else a run id under `runs`.
pub fn find(runs: &Path, id: &str) -> Result<PathBuf> {
    let given = Path::new(id);
    if given.join("meeting.json").is_file() {
        return Ok(given.to_path_buf());
    }
    // A run id is one path component: `../x` names no run.
    let one = given.components().count() == 1
        && matches!(
            given.components().next(),
            Some(std::path::Component::Normal(_))
        );
    let dir = runs.join(id);
    if one && dir.join("meeting.json").is_file() {
        return Ok(dir);
    }
    Err(Error::Usage(format!(
        "no meeting {id:?}: neither a run folder nor a run id under {} (meeting list lists them)",
        runs.display()
    )))
}

/// `meeting show`: the report a run folder's meeting saved, from its own last checkpoint
/// (render-report's output keeps it), cleaned for the terminal. Never the file its
/// `meeting.json` names: a run folder restores content, not a place.
pub fn report(dir: &Path) -> Result<String> {
    let run = RunDir::given(dir, "meeting show")?;
    let mut outputs = run.outputs()?;
    outputs.sort_by_key(|(n, _, _)| std::cmp::Reverse(*n));
    let newest = outputs
        .into_iter()
        .find(|(_, stage, _)| *stage == Stage::RenderReport)
        .ok_or_else(|| {
            Error::Usage(format!(
                "{} has no report yet (meeting list shows where it stands; meeting resume {} goes on)",
                dir.display(),
                dir.display()
            ))
        })?;
    let path = newest.2;
    let text = crate::io::read_text_file(&path)?;
    let result: crate::model::ReportResult =
        crate::io::parse_doc(&path.display().to_string(), &text, crate::io::Format::Json)?;
    Ok(crate::text::sanitise(&result.markdown).into_owned())
}

/// `meeting show --json`: the MeetingResult of a run folder's meeting as it stands, read
/// without writing anything.
pub fn result(dir: &Path) -> Result<crate::model::MeetingResult> {
    let run = RunDir::given(dir, "meeting show")?;
    let settings = RunSettings::read(dir)?;
    let board = newest_board(&run)?;
    let tally = run.tally()?;
    let mut result = super::outcome::result_of(&board, &tally, &settings, dir);
    let waiting = dir.join(WAITING_FILE);
    if waiting.is_file() {
        result.status = MeetingStatus::Waiting;
        result.waiting_file = Some(super::absolute(&waiting).display().to_string());
    }
    // The report file it names is shown only when the meeting saved one (and as a path only).
    if board.status != Status::Finished {
        result.report_file = None;
    }
    Ok(result)
}

/// What the meetings started on a UTC day cost, as `--max-cost-per-day` counts it: an ended
/// meeting its priced cost; one not ended (running, waiting, stopped) the most it may still
/// cost — its dollar cap, when it has one — so that meetings started at the same time cannot
/// together pass the day's cap (docs/design/run-folder.md#a-spending-cap-per-day).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DaySpend {
    pub usd: f64,
    pub meetings: usize,
}

/// [`DaySpend`] of the meetings under `runs` started on `day` (`YYYY-MM-DD`).
pub fn spent_on(runs: &Path, day: &str) -> Result<DaySpend> {
    let mut spend = DaySpend::default();
    for dir in run_folders(runs)? {
        if !started(&dir).is_some_and(|s| s.starts_with(day)) {
            continue;
        }
        let Ok(board) = newest_board(&RunDir { path: dir.clone() }) else {
            continue;
        };
        let cost = crate::meeting::budget::live_cost(&board)
            .and_then(|c| c.usd)
            .unwrap_or(0.0);
        let reserved = match (board.next_stage(), &board.max_cost) {
            (Some(_), Some(cap)) => cap.usd.max(cost),
            _ => cost,
        };
        spend.usd += reserved;
        spend.meetings += 1;
    }
    Ok(spend)
}
