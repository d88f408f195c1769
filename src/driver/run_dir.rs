//! The run folder (DESIGN.md#run-folder): its lock, the numbered checkpoints (the packet, the
//! first board and the last loop's boards), `events.jsonl` appended with each stage's events,
//! the copy of the exchange log for the user's `--llm-log`, and reading a checkpoint back.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::outcome::Tally;
use crate::error::{Error, Result};
use crate::io::{os_error, to_json_line, write_atomic};
use crate::model::{Board, Event, ReportResult};
use crate::stage::Stage;

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
    pub(super) fn last_output(&self) -> Result<Option<(u32, Stage, PathBuf)>> {
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
    pub(super) fn append_events(&self, events: &[Event]) -> Result<()> {
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
    pub(super) fn resume_events(&self, board: &Board) -> Result<Tally> {
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
    pub(super) fn prune(&self, step: u32) -> Result<()> {
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
pub(super) fn added_events<'a>(before: &Board, after: &'a Board) -> &'a [Event] {
    let n = after.event_count.saturating_sub(before.event_count);
    let events = &after.new_events;
    &events[events
        .len()
        .saturating_sub(usize::try_from(n).unwrap_or(usize::MAX))..]
}

/// The board a checkpoint (a stage's `.out.json`) holds.
pub(super) fn read_checkpoint(stage: Stage, path: &Path) -> Result<Board> {
    let text = crate::io::read_text_file(path)?;
    let label = path.display().to_string();
    match stage {
        Stage::RenderReport => {
            Ok(crate::io::parse_doc::<ReportResult>(&label, &text, crate::io::Format::Json)?.board)
        }
        _ => crate::io::parse_board(&label, &text),
    }
}

/// Append what the stages added to the run's exchange log since `from` (bytes) to the user's
/// own log (`--llm-log`): the stages write one log, the driver keeps the second in step.
pub(super) fn copy_log_tail(log: &Path, from: u64, user: &Path) -> Result<()> {
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

pub(super) fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}
