//! The run folder (docs/design/run-folder.md#run-folder): its lock, the numbered checkpoints (the packet, the
//! first board and the last loop's boards), `events.jsonl` appended with each stage's events,
//! the copy of the exchange log for the user's `--llm-log`, and reading a checkpoint back.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::outcome::Tally;
use crate::error::{Error, Result};
use crate::io::{os_error, to_json_line, write_atomic};
use crate::model::{Board, Event, ReportResult, Waiting, ANSWER_TEXT_FILE, WAITING_FILE};
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
    /// The run folder a user named with `flag` (`--resume`, `--fork`, `--compare`,
    /// `--run-folder`): refused (exit 2, naming the flag) when it does not exist or holds no
    /// `meeting.json` — the one check of them all.
    pub fn given(path: &Path, flag: &str) -> Result<RunDir> {
        if !path.join("meeting.json").is_file() {
            let what = if path.is_dir() {
                "is not a run folder (it holds no meeting.json)"
            } else {
                "does not exist"
            };
            return Err(Error::Usage(format!(
                "{flag}: {} {what}; a run folder is runs/<trace id> (the run folder line of the \
                 meeting's start, or its MeetingResult's run_dir)",
                path.display()
            )));
        }
        Ok(RunDir {
            path: path.to_path_buf(),
        })
    }

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

    /// A meeting waiting for a person (docs/design/agent-turn.md#waiting-for-a-person):
    /// `waiting.json`, and `answer.txt` (its `answer_text`, to copy and fill); the path of the
    /// first.
    pub fn write_waiting(&self, document: &str) -> Result<PathBuf> {
        let file = self.path.join(WAITING_FILE);
        write_atomic(&file, format!("{}\n", document.trim_end()).as_bytes())?;
        let waiting: Waiting = serde_json::from_str(document)
            .map_err(|e| Error::Runtime(format!("{}: {e}", file.display())))?;
        write_atomic(
            &self.path.join(ANSWER_TEXT_FILE),
            waiting.answer_text.as_bytes(),
        )?;
        Ok(file)
    }

    /// What the meeting waits for, when it waits (`waiting.json`).
    pub fn waiting(&self) -> Result<Option<Waiting>> {
        let file = self.path.join(WAITING_FILE);
        if !file.is_file() {
            return Ok(None);
        }
        let text = crate::io::read_text_file(&file)?;
        crate::io::parse_versioned(
            &file.display().to_string(),
            &text,
            "waiting_version",
            crate::model::WAITING_VERSION,
        )
        .map(Some)
    }

    /// The person's turn has run: the meeting no longer waits.
    pub fn answered(&self) -> Result<()> {
        for name in [WAITING_FILE, ANSWER_TEXT_FILE] {
            match std::fs::remove_file(self.path.join(name)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::Runtime(format!(
                        "{}: cannot remove {name}: {}",
                        self.path.display(),
                        os_error(&e)
                    )))
                }
                _ => {}
            }
        }
        Ok(())
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
    pub(super) fn outputs(&self) -> Result<Vec<(u32, Stage, PathBuf)>> {
        let entries = std::fs::read_dir(&self.path).map_err(|e| {
            Error::Usage(format!(
                "cannot read the run folder {}: {}",
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

    /// Append a stage's `new_events` to `events.jsonl` (docs/design/run-folder.md#events): the boards before
    /// the last few are removed ([`RunDir::prune`]), so this file is the history. Synced only
    /// with `sync` (the start): what a crash of the machine loses of it, `--resume` writes again
    /// as it derives the lost boards (docs/design/run-folder.md#resume).
    pub(super) fn append_events(&self, events: &[Event], sync: bool) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for ev in events {
            text.push_str(&to_json_line(ev, false));
        }
        let path = self.events_file();
        open_append(&path)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                if sync {
                    f.sync_data()?;
                }
                Ok(())
            })
            .map_err(|e| {
                Error::Runtime(format!(
                    "{}: cannot write: {}",
                    path.display(),
                    os_error(&e)
                ))
            })
    }

    /// Write a stage's output as checkpoint `step`, atomically but not synced: a killed
    /// meeting never leaves half a checkpoint, and one a crash of the machine loses is derived
    /// again from the synced exchange log by `--resume` (docs/design/run-folder.md#resume).
    pub(super) fn write_checkpoint(&self, step: u32, stage: Stage, text: &str) -> Result<()> {
        crate::io::write_atomic_unsynced(&self.file(step, stage, "out"), text.as_bytes())
    }

    fn events_file(&self) -> PathBuf {
        self.path.join("events.jsonl")
    }

    /// The whole lines at the head of `events.jsonl`, in order, each with its event when it
    /// reads as one: the lines up to the first that is cut short or is not JSON (a kill
    /// mid-append, or a crash that lost the file's tail).
    fn whole_events(&self) -> Result<Vec<(String, Option<Event>)>> {
        let path = self.events_file();
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
        Ok(text
            .split_inclusive('\n')
            .take_while(|line| {
                line.ends_with('\n') && serde_json::from_str::<serde::de::IgnoredAny>(line).is_ok()
            })
            .map(|line| (line.to_string(), serde_json::from_str::<Event>(line).ok()))
            .collect())
    }

    /// The checkpoint `--resume` goes on from (docs/design/run-folder.md#resume): the newest that is whole and
    /// whose earlier events are all in `events.jsonl`. Checkpoints are not synced, so a crash
    /// of the machine can lose the newest or leave them empty: an older one is taken then, at
    /// worst init-board's (synced at the start), and the stages after it run again, their
    /// model calls answered from `llm.jsonl`. A checkpoint that is JSON but not a board of
    /// this release is refused, naming it.
    pub(super) fn resume_point(&self) -> Result<(u32, Stage, Board)> {
        let mut outputs = self.outputs()?;
        if outputs.is_empty() {
            return Err(Error::Usage(format!(
                "--resume: {} holds no stage output to continue from",
                self.path.display()
            )));
        }
        outputs.sort_by_key(|(n, _, _)| std::cmp::Reverse(*n));
        let events = self.whole_events()?.len() as u64;
        for (step, stage, path) in outputs {
            if stage == Stage::CollectContext {
                return Err(Error::Usage(format!(
                    "--resume: {} stopped before init-board; start the meeting again",
                    self.path.display()
                )));
            }
            let text = crate::io::read_text_file(&path)?;
            if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_err() {
                crate::note!(
                    "{}: not a whole checkpoint (lost in a crash); going on from an earlier one",
                    path.display()
                );
                continue;
            }
            let board = read_checkpoint(stage, &path, &text)?;
            let before = board
                .event_count
                .saturating_sub(board.new_events.len() as u64);
            if events < before {
                crate::note!(
                    "{}: {} of the events before it are missing (lost in a crash); going on from an earlier checkpoint",
                    path.display(),
                    before - events
                );
                continue;
            }
            return Ok((step, stage, board));
        }
        Err(Error::Usage(format!(
            "--resume: {} holds no whole checkpoint to continue from",
            self.path.display()
        )))
    }

    /// Remove the checkpoints after `step`, the one `--resume` goes on from: those a crash
    /// left unusable, which the stages run again will write anew.
    pub(super) fn discard_after(&self, step: u32) -> Result<()> {
        for (n, _, path) in self.outputs()? {
            if n > step {
                remove(&path)?;
            }
        }
        Ok(())
    }

    /// The tally of the whole events in `events.jsonl`, read only (`meeting show --json`).
    pub(super) fn tally(&self) -> Result<Tally> {
        let mut tally = Tally::default();
        for (_, ev) in self.whole_events()? {
            tally.add(ev.as_slice());
        }
        Ok(tally)
    }

    /// Make `events.jsonl` hold exactly the events up to `board`, the checkpoint `--resume`
    /// goes on from: its first `event_count - new_events` lines, then the board's
    /// `new_events`. A kill can leave the last stage's events missing, half written or (when
    /// it struck between the append and the checkpoint) once too many; this repairs all three.
    /// Returns the tally of the events kept.
    pub(super) fn resume_events(&self, board: &Board) -> Result<Tally> {
        let before = board
            .event_count
            .saturating_sub(board.new_events.len() as u64);
        let mut kept = String::new();
        let mut tally = Tally::default();
        let whole = self.whole_events()?;
        for (line, ev) in whole
            .iter()
            .take(usize::try_from(before).unwrap_or(usize::MAX))
        {
            tally.add(ev.as_slice());
            kept.push_str(line);
        }
        if (whole.len() as u64) < before {
            crate::note!(
                "{}: {} events before the last checkpoint are missing (lost in a crash)",
                self.events_file().display(),
                before - whole.len() as u64
            );
        }
        for ev in &board.new_events {
            kept.push_str(&to_json_line(ev, false));
        }
        tally.add(&board.new_events);
        write_atomic(&self.events_file(), kept.as_bytes())?;
        Ok(tally)
    }

    /// Remove the boards older than the last [`KEEP_BOARDS`] stage outputs (the packet and the
    /// first board stay), once the board of `step` is on disk: `--resume` needs only the last,
    /// and the history is `events.jsonl` and `llm.jsonl` (docs/design/run-folder.md#run-folder).
    /// `AGENT_MEETING_KEEP_BOARDS=all` keeps every one, for debugging a stage by hand.
    pub(super) fn prune(&self, step: u32) -> Result<()> {
        if std::env::var(KEEP_BOARDS_ENV).is_ok_and(|v| v.trim() == "all") {
            return Ok(());
        }
        for (n, _, path) in self.outputs()? {
            if n > 2 && n + KEEP_BOARDS <= step {
                remove(&path)?;
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
/// none is recorded twice (docs/design/run-folder.md#events).
pub(super) fn added_events<'a>(before: &Board, after: &'a Board) -> &'a [Event] {
    let n = after.event_count.saturating_sub(before.event_count);
    let events = &after.new_events;
    &events[events
        .len()
        .saturating_sub(usize::try_from(n).unwrap_or(usize::MAX))..]
}

fn remove(path: &Path) -> Result<()> {
    std::fs::remove_file(path).map_err(|e| {
        Error::Runtime(format!(
            "{}: cannot remove: {}",
            path.display(),
            os_error(&e)
        ))
    })
}

/// The board a checkpoint (a stage's `.out.json`, its `text` read) holds.
pub(super) fn read_checkpoint(stage: Stage, path: &Path, text: &str) -> Result<Board> {
    let label = path.display().to_string();
    match stage {
        Stage::RenderReport => {
            Ok(crate::io::parse_doc::<ReportResult>(&label, text, crate::io::Format::Json)?.board)
        }
        _ => crate::io::parse_board(&label, text),
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

/// The fork has reached its loop: its log keeps only the calls made so far (numbers up to
/// `calls`), so every later call is asked live.
pub(super) fn cut_log(log: &Path, calls: u64) -> Result<()> {
    let text = match std::fs::read_to_string(log) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::Runtime(format!(
                "{}: {}",
                log.display(),
                crate::io::os_error(&e)
            )))
        }
    };
    #[derive(serde::Deserialize)]
    struct Seq {
        seq: Option<u64>,
    }
    let kept: String = text
        .split_inclusive('\n')
        .filter(|l| {
            serde_json::from_str::<Seq>(l)
                .ok()
                .and_then(|s| s.seq)
                .is_some_and(|s| s <= calls)
        })
        .collect();
    crate::io::write_atomic(log, kept.as_bytes())
}
