//! Progress on stderr (docs/design/run-folder.md#run-folder): the UI settings, the line each stage's board
//! gets, the elapsed-time indicator, the one loop numbering (`loop_tag`) and `--step`'s prompt.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::model::{Board, EventType, Status};
use crate::stage::Stage;
use crate::text::one_line;

/// How the driver talks to the user.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ui {
    pub quiet: bool,
    pub step: bool,
    pub color: bool,
    /// Show an elapsed-time indicator while a stage runs (stderr is a terminal).
    pub ticker: bool,
}

impl Ui {
    /// The UI of a meeting run from a shell: colour and the ticker when stderr is a terminal.
    pub fn new(quiet: bool, step: bool) -> Ui {
        Ui {
            quiet,
            step,
            color: crate::cli::stderr_color(),
            ticker: !quiet && stderr_is_tty(),
        }
    }

    /// The UI while the stage `board` is waiting for runs: no ticker during a human's turn,
    /// which would write over the person answering on the terminal.
    pub(super) fn for_stage(self, board: &Board) -> Ui {
        Ui {
            ticker: self.ticker && !crate::stage::agent_turn::human::is_human_turn(board),
            ..self
        }
    }
}

/// Whether stderr is a terminal (for the elapsed-time indicator).
pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// The elapsed-time indicator of a running stage (`  pm-step … 1.4 s`), shown after 0.6 s
/// when the UI has a ticker; it stops and wipes its line when dropped.
pub(super) struct Ticker {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    pub(super) fn start(ui: Ui, name: &str) -> Ticker {
        let done = Arc::new(AtomicBool::new(false));
        let thread = ui
            .ticker
            .then(|| spawn_ticker(name.to_string(), done.clone()));
        Ticker { done, thread }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn spawn_ticker(name: String, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let start = Instant::now();
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            if start.elapsed() > Duration::from_millis(600) {
                let line = format!("  {name} … {:.1} s ", start.elapsed().as_secs_f64());
                crate::io::redraw_note(Some(&line));
            }
        }
        if start.elapsed() > Duration::from_millis(600) {
            crate::io::redraw_note(None);
        }
    })
}

/// Where a stage stands in the meeting, in the one loop numbering of progress, `--step`, the
/// final line and the report: `loop N/M` is the loop in progress (the PM's question, the
/// answer, its merge), N = loops done + 1; a stage that may close the meeting (`pm-step`
/// closing it, `render-report`) stands `after N/M loops`, the count the final line, the
/// MeetingResult and the report's "Loops used" give.
fn loop_tag(board: &Board, in_a_loop: bool) -> String {
    let fan_out = board.pending_calls.len().max(board.last_turns.len()) as u32;
    if in_a_loop && fan_out > 1 {
        // A fan-out's calls count one loop each (docs/design/agent-turn.md#fan-out).
        let first = board.loop_count + 1;
        format!(
            "loops {first}-{}/{}",
            (first + fan_out - 1).min(board.max_loops),
            board.max_loops
        )
    } else if in_a_loop {
        format!(
            "loop {}/{}",
            (board.loop_count + 1).min(board.max_loops),
            board.max_loops
        )
    } else {
        format!("after {}/{} loops", board.loop_count, board.max_loops)
    }
}

/// Ask before a stage in `--step` mode: Enter runs it, `q` (or end of input) stops, `p` prints
/// the board's summary and the path of the stage's input (`next_input`: the last output in the
/// run folder). `false` means the user chose to stop.
pub(super) fn confirm_step(
    stage: Stage,
    board: &Board,
    next_input: &dyn Fn() -> Result<PathBuf>,
) -> Result<bool> {
    let in_a_loop = matches!(stage, Stage::AgentTurn | Stage::MergeBoard);
    loop {
        crate::note_inline!(
            "next: {stage} ({}, status {}) — Enter to run, p to print the board, q to stop: ",
            loop_tag(board, in_a_loop),
            board.status.as_str()
        );
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => return Ok(false),
            Ok(_) => {}
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "q" => return Ok(false),
            "p" => {
                crate::note!("{}", board_summary(board));
                crate::note!("next input: {}", next_input()?.display());
            }
            _ => return Ok(true),
        }
    }
}

/// What `p` prints at a `--step` prompt: the whiteboard's summary and where the meeting is.
fn board_summary(board: &Board) -> String {
    let mut out = board.summary.trim().to_string();
    out.push_str(&format!(
        "\nstatus {}, {} loops done of {}, {} LLM attempts, {} tokens",
        board.status.as_str(),
        board.loop_count,
        board.max_loops,
        board.usage.attempts(),
        board.usage.tokens.total()
    ));
    for call in board.pending() {
        out.push_str(&format!(
            "\npending: pm → {}: {}",
            call.target_agent,
            one_line(&call.prompt, 200)
        ));
    }
    out
}

pub(super) fn paint(ui: Ui, code: &str, text: &str) -> String {
    if ui.color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Whether the meeting was closed for its token budget (the record says why it was forced).
fn by_budget(after: &Board) -> bool {
    after.record.forced == Some(crate::model::ForcedReason::TokenBudget)
}

/// The progress line for a board a stage just produced.
pub(super) fn progress_line(stage: Stage, after: &Board, ui: Ui) -> Option<String> {
    let tag = paint(ui, "2", &format!("[{}]", loop_tag(after, true)));
    let closing = paint(ui, "2", &format!("[{}]", loop_tag(after, false)));
    match stage {
        Stage::PmStep => {
            if !after.pending_calls.is_empty() {
                // A fan-out: its calls together, one line each under the header.
                let names: Vec<&str> = after
                    .pending_calls
                    .iter()
                    .map(|c| c.target_agent.as_str())
                    .collect();
                let mut text = format!(
                    "{tag} {} → {} at once",
                    paint(ui, "1;36", "pm"),
                    paint(ui, "1;33", &names.join(", "))
                );
                for call in &after.pending_calls {
                    text.push_str(&format!(
                        "\n    → {}: {}",
                        paint(ui, "1;33", &call.target_agent),
                        one_line(&call.prompt, 81)
                    ));
                }
                Some(text)
            } else if let Some(call) = &after.pending_call {
                Some(format!(
                    "{tag} {} → {}: {}",
                    paint(ui, "1;36", "pm"),
                    paint(ui, "1;33", &call.target_agent),
                    one_line(&call.prompt, 81)
                ))
            } else if after.has_final_report() {
                Some(format!(
                    "{closing} {}: FINISH{}",
                    paint(ui, "1;36", "pm"),
                    match after.status {
                        Status::ForcedStop if by_budget(after) => " (forced: token budget)",
                        Status::ForcedStop => " (forced)",
                        _ => "",
                    }
                ))
            } else if after.status == Status::ForcedStop {
                Some(format!(
                    "{closing} {}: no valid report, using the fallback report{}",
                    paint(ui, "1;31", "pm"),
                    if by_budget(after) {
                        " (token budget)"
                    } else {
                        ""
                    }
                ))
            } else if after.status == Status::Finishing {
                Some(format!(
                    "{closing} {}: round failed ({}), closing the meeting",
                    paint(ui, "1;31", "pm"),
                    // Whole: the telling part of a reason ("dns error") is often at its end.
                    one_line(after.last_error.as_deref().unwrap_or("?"), usize::MAX)
                ))
            } else {
                None
            }
        }
        Stage::AgentTurn if !after.last_turns.is_empty() => {
            let lines: Vec<String> = after
                .last_turns
                .iter()
                .map(|turn| turn_line(turn, after, "    ", ui))
                .collect();
            Some(format!("{tag} answers\n{}", lines.join("\n")))
        }
        Stage::AgentTurn => {
            let turn = after.last_turn.as_ref()?;
            Some(turn_line(turn, after, &format!("{tag} "), ui))
        }
        _ => None,
    }
}

/// One agent turn's progress line (`lead` before the name): its findings, or why it failed,
/// with the time, tokens and retries of its own calls.
fn turn_line(turn: &crate::model::LastTurn, after: &Board, lead: &str, ui: Ui) -> String {
    let new_events: Vec<&crate::model::Event> = after
        .new_events
        .iter()
        .filter(|e| e.caller == turn.agent_name)
        .collect();
    let (ms, tokens) = new_events
        .iter()
        .filter(|e| e.event_type == EventType::LlmCall)
        .fold((0, 0), |(ms, t), e| {
            (
                ms + e.duration_ms.unwrap_or(0),
                t + e.tokens.map_or(0, crate::model::Tokens::total),
            )
        });
    let retries = new_events
        .iter()
        .filter(|e| e.event_type == EventType::AgentRetry)
        .count();
    let retry_note = match retries {
        0 => String::new(),
        1 => ", 1 retry".to_string(),
        n => format!(", {n} retries"),
    };
    let stats = format!("({:.1} s, {tokens} tokens{retry_note})", ms as f64 / 1000.0);
    let name = paint(ui, "1;33", &turn.agent_name);
    match &turn.result {
        Some(r) => format!(
            "{lead}{name}: {} key points, {} risk{}, {} citation{} {stats}",
            r.key_points.len(),
            r.risks.len(),
            if r.risks.len() == 1 { "" } else { "s" },
            r.citations.len(),
            if r.citations.len() == 1 { "" } else { "s" },
        ),
        None => format!(
            "{lead}{name}: {} {}",
            paint(ui, "1;31", "failed:"),
            one_line(turn.error.as_deref().unwrap_or("?"), usize::MAX)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ticker pauses while a human answers (docs/design/agent-turn.md#a-human-at-the-table).
    #[test]
    fn no_ticker_during_a_humans_turn() {
        let mut board = crate::stage::fixtures::board(&[]);
        let ui = Ui {
            ticker: true,
            ..Ui::default()
        };
        board.pending_call = Some(crate::model::PendingCall {
            target_agent: "arch".into(),
            prompt: "q".into(),
            analysis: String::new(),
            reserve_tokens: None,
        });
        assert!(ui.for_stage(&board).ticker);
        board.agents.get_mut("arch").unwrap().kind = crate::model::ParticipantKind::Human;
        assert!(!ui.for_stage(&board).ticker);
        assert!(!Ui::default().for_stage(&board).ticker);
    }
}
