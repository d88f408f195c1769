//! The loop (docs/design/run-folder.md#run-folder): a started or resumed meeting taken through its stages,
//! each stage's output checked and checkpointed before the next starts, until the report is
//! saved or a `--step` user stops it.

use std::path::PathBuf;

use super::outcome::{final_line, result_of, Answers, Tally};
use super::progress::{confirm_step, progress_line, LiveLines, Ui};
use super::run_dir::RunDir;
use super::run_dir::{added_events, copy_log_tail};
use super::settings::RunSettings;
use super::stages::{run_loop_stage, LoopStage, Made, Ran, Stages};
use super::stop::Watch;
use crate::error::{Error, Result};
use crate::model::{Board, MeetingResult, Status};
use crate::stage::Stage;

/// A run ready to drive: its folder (locked for this process), settings, the board to go on
/// from and the number of the next stage file.
pub struct Run {
    pub dir: RunDir,
    pub settings: RunSettings,
    pub board: Board,
    pub step: u32,
    /// The answers of the meeting so far (from `events.jsonl`), kept up by the driver.
    pub tally: Tally,
    /// `--resume --answer`: the answer of the person the meeting waits for.
    pub answer: Option<crate::stage::agent_turn::human::Given>,
    /// A fork before its loop: the loop at which its log is cut back (docs/design/run-folder.md#fork).
    pub fork_at: Option<u32>,
    /// Held until the process ends: one meeting process at a time writes a run folder.
    _lock: std::fs::File,
}

impl Run {
    pub(super) fn new(
        dir: RunDir,
        settings: RunSettings,
        board: Board,
        step: u32,
        tally: Tally,
        lock: std::fs::File,
    ) -> Run {
        Run {
            dir,
            settings,
            board,
            step,
            tally,
            answer: None,
            fork_at: None,
            _lock: lock,
        }
    }
}

/// Where the loop stands: the last board, the number of the next stage file, the tally.
struct Position<'a> {
    run: &'a RunDir,
    settings: &'a RunSettings,
    board: Board,
    step: u32,
    tally: Tally,
}

impl Position<'_> {
    /// The stage's events appended to `events.jsonl`, then its output written as checkpoint
    /// `step`, the boards before the last few removed. Events first: a kill between the two
    /// leaves them once too many, which `--resume` cuts by the checkpoint's `event_count`.
    /// Neither is synced: what must survive a crash of the machine is the model's answers,
    /// synced in `llm.jsonl` as they come; `--resume` derives lost boards from them
    /// (docs/design/run-folder.md#resume).
    fn checkpoint(&mut self, stage: Stage, next: &Board, text: &str) -> Result<()> {
        let run = self.run;
        let added = added_events(&self.board, next);
        run.append_events(added, false)?;
        run.write_checkpoint(self.step, stage, text)?;
        run.prune(self.step)?;
        self.tally.add(added);
        Ok(())
    }

    fn result(&self, board: &Board) -> MeetingResult {
        result_of(board, &self.tally, self.settings, &self.run.path)
    }
}

/// Drive a started or resumed meeting from its board until the report is saved (or a `--step`
/// user stops it).
pub fn drive(run: &Run, ui: Ui) -> Result<MeetingResult> {
    let watch = Watch::start(&run.dir.path);
    crate::io::hold_stage_warnings(ui.quiet);
    let settings = &run.settings;
    let mut at = Position {
        run: &run.dir,
        settings,
        board: run.board.clone(),
        step: run.step,
        tally: run.tally.clone(),
    };
    // Every loop takes pm-step, agent-turn and merge-board, plus PM-only rounds and the report:
    // far fewer stages than this, unless a (user's) stage keeps handing the board back.
    let max_steps = at.step + 4 * at.board.max_loops.min(100_000) + 20;
    let mut stages = Stages::new(settings).with_answer(run.answer.clone());
    let mut fork_at = run.fork_at;
    loop {
        let Some(stage) = at.board.next_stage() else {
            let result = at.result(&at.board);
            if !ui.quiet {
                let answers = Answers::of(&at.board, &at.tally);
                crate::note!("{}", final_line(&result, &answers, ui));
            }
            return Ok(result);
        };
        if at.step > max_steps {
            return Err(Error::Runtime(format!(
                "the meeting made no progress after {} stages (last: {stage}); see {}",
                at.step,
                at.run.path.display()
            )));
        }
        if ui.step && !confirm_step(stage, &at.board, &|| next_input(at.run))? {
            // A clean stop: the run folder holds the last complete board, ready to resume
            // (the exit, 130, is said by `outcome::failure`).
            crate::note!("stopped before {stage}");
            return Ok(at.result(&at.board));
        }
        let log = settings.llm.llm_log.as_deref();
        if let (Some(n), Some(log)) = (fork_at, log) {
            if at.board.current_loop() >= n {
                // The fork's loop: from here every call is asked live, none from the parent.
                super::run_dir::cut_log(log, at.board.usage.calls)?;
                stages = Stages::new(settings);
                fork_at = None;
                // What the parent paid for, on the board the loop's first stage carries on
                // (a fork killed before that stage's board is written cuts and says it again).
                at.board.record.from_parent = Some(at.board.usage.clone());
            }
        }
        let log_len = log
            .and_then(|l| std::fs::metadata(l).ok())
            .map_or(0, |m| m.len());
        let Some(loop_stage) = LoopStage::of(stage) else {
            return Err(Error::Runtime(format!(
                "the board asks for {stage}, which runs only before the meeting's loop"
            )));
        };
        let outcome = {
            let _live = LiveLines::start(ui.for_stage(&at.board), log, log_len, &at.board);
            run_loop_stage(
                &stages,
                loop_stage,
                &at.board,
                ui.for_stage(&at.board),
                &watch,
            )
        };
        // Failed attempts are logged too: copy whatever the stage appended, however it ended.
        if let (Some(log), Some(user)) = (log, settings.user_llm_log.as_deref()) {
            copy_log_tail(log, log_len, user)?;
        }
        let (out_text, made) = match outcome? {
            Ran::Made { text, made } => (text, made),
            // No one there to answer a person: the meeting stops, resumable with the answer.
            Ran::Failed(Error::Waiting { message, document }) => {
                return waiting(&at, &message, &document, ui);
            }
            Ran::Failed(e) => return Err(e),
            // The `failed` result of a report that could not be saved is kept and ends the
            // meeting.
            Ran::Unsaved { text, report } => {
                at.checkpoint(stage, &report.board, &text)?;
                return Ok(at.result(&report.board));
            }
        };
        let next = checked_output(stage, made, &at.board)?;
        at.checkpoint(stage, &next, &out_text)?;
        if stage == Stage::AgentTurn {
            // The person the meeting waited for has answered (or a model took the turn).
            at.run.answered()?;
        }
        if !ui.quiet {
            if let Some(line) = progress_line(stage, &at.board, &next, ui) {
                crate::note!("{line}");
            }
        }
        at.board = next;
        at.step += 1;
    }
}

/// A meeting that stops for a person: `waiting.json` and the answer's text form
/// (`answer.txt`) written into the run folder, the MeetingResult `waiting` naming them
/// (docs/design/agent-turn.md#waiting-for-a-person).
fn waiting(at: &Position, message: &str, document: &str, ui: Ui) -> Result<MeetingResult> {
    let file = at.run.write_waiting(document)?;
    if let Some(command) = &at.settings.on_waiting {
        let call = serde_json::from_str::<crate::model::Waiting>(document).map_or(0, |w| w.call);
        // What the file holds, byte for byte.
        let text = format!("{}\n", document.trim_end());
        super::on_waiting::notify(&at.run.path, command, &text, call);
    }
    let mut result = at.result(&at.board);
    result.status = crate::model::MeetingStatus::Waiting;
    result.last_error = Some(message.to_string());
    result.waiting_file = Some(super::settings::absolute(&file).display().to_string());
    if !ui.quiet {
        let answers = Answers::of(&at.board, &at.tally);
        crate::note!("{}", final_line(&result, &answers, ui));
    }
    Ok(result)
}

/// The input of the next stage: the last output in the folder (docs/design/run-folder.md#run-folder).
fn next_input(run: &RunDir) -> Result<PathBuf> {
    Ok(run
        .last_output()?
        .map_or_else(|| run.path.clone(), |(_, _, path)| path))
}

/// The board a stage made, refused when it breaks the driver's rules: only render-report may
/// end the meeting, and a stage must change the board.
fn checked_output(stage: Stage, made: Made, board: &Board) -> Result<Board> {
    let next = match made {
        Made::Board(b) => b,
        Made::Report(r) => r.board,
    };
    if stage != Stage::RenderReport && matches!(next.status, Status::Finished | Status::Failed) {
        return Err(Error::Runtime(format!(
            "stage {stage} set status {} but only render-report may (the report is not saved)",
            next.status.as_str()
        )));
    }
    if next == *board {
        return Err(Error::Runtime(format!(
            "stage {stage} made no progress: its output board is its input"
        )));
    }
    Ok(next)
}
