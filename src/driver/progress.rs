//! Progress on stderr (docs/design/run-folder.md#run-folder): the UI settings, the lines each stage's board
//! gets (PM and agent lines with their time, tokens and LLM calls; a retried call and the
//! closing round on lines of their own), the `--resume` header, the elapsed-time indicator,
//! the one loop numbering (`loop_tag`, `stage_tag`) and `--step`'s prompt.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::model::{Board, Event, EventType, ForcedReason, Status, PM_CALLER};
use crate::stage::Stage;
use crate::text::one_line;
use crate::text::plural;

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

/// What the elapsed-time indicator calls a stage about to run on `board`: the program, or the
/// PM's closing round by name (a forced finish is due: the board is `finishing` without a
/// report, or the loops are spent), so a long closing call is not taken for a stuck round.
pub(super) fn ticker_label(stage: Stage, board: &Board) -> String {
    let closing = board.status == Status::Finishing && !board.has_final_report()
        || board.loop_count >= board.max_loops;
    match stage {
        Stage::PmStep if closing => "pm closing round".to_string(),
        _ => stage.program().to_string(),
    }
}

/// A thread beside a running stage that waits between its rounds and stops the moment it is
/// dropped: dropping the sender wakes its wait at once. It is not joined — the stage's end
/// never waits for another thread to be scheduled (docs/design/run-folder.md#progress) — so
/// what must happen before the next line (a last read of the log, wiping the ticker) is done
/// by the dropping thread itself, under the lock the two share ([`Shared`]).
struct Beside {
    _stop: mpsc::Sender<()>,
}

/// What a [`Beside`] thread waits on.
struct Stop(mpsc::Receiver<()>);

impl Stop {
    /// Wait up to `d`; `false` once the stage has ended (the thread should finish).
    fn wait(&self, d: Duration) -> bool {
        matches!(self.0.recv_timeout(d), Err(mpsc::RecvTimeoutError::Timeout))
    }
}

impl Beside {
    fn spawn(run: impl FnOnce(Stop) + Send + 'static) -> Beside {
        let (tx, rx) = mpsc::channel();
        idle_thread(Box::new(move || run(Stop(rx))));
        Beside { _stop: tx }
    }
}

/// A job for a progress thread.
type Job = Box<dyn FnOnce() + Send>;

/// Run `job` on an idle progress thread, else on a new one: threads are kept for the next
/// stage, so a stage's progress costs no thread creation (two a stage in a terminal).
fn idle_thread(job: Job) {
    static IDLE: std::sync::Mutex<Vec<mpsc::Sender<Job>>> = std::sync::Mutex::new(Vec::new());
    let mut job = Some(job);
    while let Some(worker) = IDLE.lock().unwrap_or_else(|e| e.into_inner()).pop() {
        match worker.send(job.take().expect("a job")) {
            Ok(()) => return,
            // A worker that has gone (it panicked): try the next.
            Err(mpsc::SendError(back)) => job = Some(back),
        }
    }
    let (tx, rx) = mpsc::channel::<Job>();
    let first = job.take().expect("a job");
    std::thread::spawn(move || {
        let mut next = Some(first);
        while let Some(job) = next.take() {
            job();
            // Idle again: offer this thread to the next stage, and wait for its job.
            IDLE.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(tx.clone());
            next = rx.recv().ok();
        }
    });
}

/// The state a progress thread and the stage's end share: whoever holds the lock acts; once
/// `ended`, the thread does nothing more.
struct Shared<T> {
    state: std::sync::Mutex<(bool, T)>,
}

impl<T> Shared<T> {
    fn new(t: T) -> std::sync::Arc<Shared<T>> {
        std::sync::Arc::new(Shared {
            state: std::sync::Mutex::new((false, t)),
        })
    }

    /// Run `f` on the state unless the stage has ended; `false` once it has.
    fn while_running(&self, f: impl FnOnce(&mut T)) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if g.0 {
            return false;
        }
        f(&mut g.1);
        true
    }

    /// Mark the stage ended and run `f` on the state one last time, here.
    fn end(&self, f: impl FnOnce(&mut T)) {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if !g.0 {
            g.0 = true;
            f(&mut g.1);
        }
    }
}

/// The elapsed-time indicator of a running stage (`  pm-step … 1.4 s`), shown after 0.6 s
/// when the UI has a ticker; it stops and wipes its line when dropped.
pub(super) struct Ticker {
    running: Option<(Beside, std::sync::Arc<Shared<bool>>)>,
}

impl Ticker {
    pub(super) fn start(ui: Ui, name: &str) -> Ticker {
        let name = name.to_string();
        Ticker {
            running: ui.ticker.then(|| {
                let shown = Shared::new(false);
                let s = shown.clone();
                (Beside::spawn(move |stop| tick(&name, &stop, &s)), shown)
            }),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if let Some((_, shown)) = self.running.take() {
            shown.end(|shown| {
                if *shown {
                    crate::io::redraw_note(None);
                }
            });
        }
    }
}

fn tick(name: &str, stop: &Stop, shown: &Shared<bool>) {
    let start = Instant::now();
    while stop.wait(Duration::from_millis(200)) {
        if start.elapsed() <= Duration::from_millis(600) {
            continue;
        }
        let line = format!("  {name} … {:.1} s ", start.elapsed().as_secs_f64());
        let drawn = shown.while_running(|shown| {
            crate::io::redraw_note(Some(&line));
            *shown = true;
        });
        if !drawn {
            return;
        }
    }
}

/// Failed model requests shown as they happen, while a stage runs (docs/design/run-folder.md#run-folder): a
/// slow model's timeout and the retry behind it get a line of their own at once, not only
/// the elapsed counter. Read from the exchange log the stage appends to (one line per
/// request, synced as it comes), from `from` on; when dropped, the last lines are read by
/// the dropping thread, so none written before the stage ended is missed or comes after the
/// stage's own line.
pub(super) struct LiveLines {
    running: Option<(Beside, std::sync::Arc<Shared<LogTail>>)>,
}

impl LiveLines {
    pub(super) fn start(ui: Ui, log: Option<&Path>, from: u64, before: &Board) -> LiveLines {
        let running = match log {
            Some(log) if !ui.quiet => {
                let tag = paint(ui, "2", &format!("[{}]", loop_tag(before)));
                let tail = Shared::new(LogTail {
                    log: log.to_path_buf(),
                    pos: from,
                    pending: Vec::new(),
                    ui,
                    tag,
                });
                let t = tail.clone();
                let beside = Beside::spawn(move |stop| {
                    while t.while_running(LogTail::show_new)
                        && stop.wait(Duration::from_millis(100))
                    {}
                });
                Some((beside, tail))
            }
            _ => None,
        };
        LiveLines { running }
    }
}

impl Drop for LiveLines {
    fn drop(&mut self) {
        if let Some((_, tail)) = self.running.take() {
            tail.end(LogTail::show_new);
        }
    }
}

/// Where the live lines stand in the exchange log.
struct LogTail {
    log: std::path::PathBuf,
    pos: u64,
    pending: Vec<u8>,
    ui: Ui,
    tag: String,
}

impl LogTail {
    fn show_new(&mut self) {
        let (ui, tag) = (self.ui, self.tag.clone());
        read_new_lines(&self.log, &mut self.pos, &mut self.pending, |line| {
            if let Some(text) = failed_request_line(line, ui) {
                // Over the elapsed counter's line, which the next tick redraws.
                let wipe = if ui.ticker { "\r\x1b[2K" } else { "" };
                crate::note!("{wipe}{tag} {text}");
            }
        });
    }
}

/// Call `each` with every whole line appended to `log` after byte `pos` (moved past them; a
/// partial last line waits in `pending` for its end).
fn read_new_lines(log: &Path, pos: &mut u64, pending: &mut Vec<u8>, mut each: impl FnMut(&str)) {
    use std::io::{Read, Seek, SeekFrom};
    if let Ok(mut f) = std::fs::File::open(log) {
        if f.seek(SeekFrom::Start(*pos)).is_ok() {
            let mut bytes = Vec::new();
            if let Ok(n) = f.read_to_end(&mut bytes) {
                *pos += n as u64;
                pending.extend_from_slice(&bytes);
            }
        }
    }
    while let Some(end) = pending.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = pending.drain(..=end).collect();
        each(&String::from_utf8_lossy(&line));
    }
}

/// The line for an exchange-log entry that is a failed request (`caller: request N failed
/// after S s: error`); none for an answer.
fn failed_request_line(line: &str, ui: Ui) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let error = v.get("error")?.as_str()?;
    let caller = v.get("caller")?.as_str()?;
    Some(format!(
        "{} request {} failed after {:.1} s: {}",
        paint(ui, "1;31", &format!("{caller}:")),
        v.get("attempt")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(1),
        v.get("duration_ms")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0) as f64
            / 1000.0,
        one_line(error, usize::MAX)
    ))
}

/// The loop a board stands in, in the one loop numbering of progress, `--step`, events.jsonl
/// and the report's Process Note and diagram (docs/design/flow.md#loop-numbers): `loop N/M` is
/// the loop in progress, N = loops done + 1 (`Board::current_loop`), and a fan-out waiting for
/// its answers stands `loops A-B/M`, one loop per call (docs/design/agent-turn.md#fan-out).
fn loop_tag(board: &Board) -> String {
    let first = board.current_loop();
    // Reviewers' and council members' calls are no loops (docs/design/review.md#flow,
    // docs/design/council.md#flow).
    let council = board
        .council
        .as_ref()
        .is_some_and(|c| c.phase != crate::model::CouncilPhase::Done)
        && !(board.pending_calls.is_empty() && board.last_turns.is_empty());
    let fan_out = match board.status {
        _ if council => 1,
        Status::Reviewing => 1,
        _ => board.pending_calls.len().max(board.last_turns.len()) as u32,
    };
    let last = (first + fan_out.saturating_sub(1)).min(board.max_loops.max(1));
    range_tag(first, last, board.max_loops)
}

fn range_tag(first: u32, last: u32, max: u32) -> String {
    if last > first {
        format!("loops {first}-{last}/{max}")
    } else {
        format!("loop {first}/{max}")
    }
}

/// The loops a progress line on stderr stands in, read back from its `[loop 2/6]` or
/// `[loops 1-2/6]` tag ([`range_tag`]): `(last, max)`. For whoever watches a meeting's stderr
/// (the MCP server's progress notifications).
pub fn loop_of_line(line: &str) -> Option<(u32, u32)> {
    let tag = line.strip_prefix('[')?.split(']').next()?;
    let range = tag
        .strip_prefix("loops ")
        .or_else(|| tag.strip_prefix("loop "))?;
    let (span, max) = range.split_once('/')?;
    let last = span.rsplit('-').next()?;
    Some((last.parse().ok()?, max.parse().ok()?))
}

/// The loop of a stage's line: the loops its own events are stamped with (the numbers the
/// report shows for them), else the loop its board stands in.
fn stage_tag(after: &Board) -> String {
    let stamps = after.new_events.iter().map(|e| e.loop_no);
    match (stamps.clone().min(), stamps.max()) {
        (Some(first), Some(last)) => range_tag(first, last, after.max_loops),
        _ => loop_tag(after),
    }
}

/// The header `meeting --resume` prints before it goes on: where the meeting stands and the
/// LLM calls already made (the one count, `usage.attempts()`).
pub(super) fn resume_line(board: &Board) -> String {
    let calls = plural(board.usage.attempts(), "LLM call");
    match board.next_stage() {
        Some(next) => format!(
            "resuming {}: {}, {calls} done, next: {next}",
            board.trace_id,
            loop_tag(board)
        ),
        None => format!(
            "resuming {}: the meeting has ended ({} done, {calls})",
            board.trace_id,
            plural(board.loop_count, "loop")
        ),
    }
}

/// What a resume will write to and run, said before its first call (a run folder is input:
/// docs/design/run-folder.md#a-run-folder-is-input): the report path, the stage commands, the
/// decision record's folder, the trace collector.
pub(super) fn resume_uses(settings: &super::settings::RunSettings) -> String {
    let mut uses = vec![format!("report {}", settings.report_file.display())];
    for (stage, cmd) in &settings.stage_overrides {
        uses.push(format!("--stage {stage}={cmd}"));
    }
    if let Some(adr) = &settings.adr {
        uses.push(format!("--adr {}", adr.dir.display()));
    }
    if let Some(otlp) = &settings.otlp {
        uses.push(format!("traces to {}", otlp.traces_url));
    }
    format!("resume uses: {}", uses.join(", "))
}

/// Ask before a stage in `--step` mode: Enter runs it, `q` (or end of input) stops, `p` prints
/// the board's summary and the path of the stage's input (`next_input`: the last output in the
/// run folder). `false` means the user chose to stop.
pub(super) fn confirm_step(
    stage: Stage,
    board: &Board,
    next_input: &dyn Fn() -> Result<PathBuf>,
) -> Result<bool> {
    loop {
        // A council's round says which (docs/design/council.md#flow).
        let council = match board.council.as_ref().map(|c| c.phase) {
            Some(crate::model::CouncilPhase::Vote) => ", council: the blind votes",
            Some(crate::model::CouncilPhase::Rank) => ", council: the rankings",
            _ => "",
        };
        crate::note_inline!(
            "next: {stage} ({}, status {}{council}) — Enter to run, p to print the board, q to stop: ",
            loop_tag(board),
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
        "\nstatus {}, {} done of {}, {}, {} tokens",
        board.status.as_str(),
        plural(board.loop_count, "loop"),
        board.max_loops,
        plural(board.usage.attempts(), "LLM call"),
        board.usage.tokens.total()
    ));
    for call in &board.pending_calls {
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

/// Why the meeting was made to close, for the closing round's line (the record's typed fact).
fn forced_why(after: &Board) -> &'static str {
    match after.record.forced {
        Some(ForcedReason::TokenBudget) => "token budget",
        Some(ForcedReason::CostBudget) => "cost budget",
        Some(ForcedReason::MaxLoops) => "loop limit",
        Some(ForcedReason::Circles) => "going in circles",
        Some(ForcedReason::RoundFailed) => "PM round failed",
        None => "closing",
    }
}

/// The progress lines for the board a stage just made from `before`: a PM line or an agent
/// line with the time, tokens and LLM calls of its own calls, each retried call on a line of
/// its own before it.
pub(super) fn progress_line(stage: Stage, before: &Board, after: &Board, ui: Ui) -> Option<String> {
    let tag = paint(ui, "2", &format!("[{}]", stage_tag(after)));
    match stage {
        Stage::PmStep => {
            let line = pm_line(before, after, ui)?;
            let mut lines = retry_lines(after, PM_CALLER, &format!("{tag} "), ui);
            lines.push(format!("{tag} {line}"));
            Some(lines.join("\n"))
        }
        Stage::AgentTurn if after.last_turns.len() > 1 => {
            let lines: Vec<String> = after
                .last_turns
                .iter()
                .map(|turn| turn_lines(turn, before, after, "    ", ui))
                .collect();
            Some(format!("{tag} answers\n{}", lines.join("\n")))
        }
        Stage::AgentTurn => {
            let turn = after.last_turns.first()?;
            Some(turn_lines(turn, before, after, &format!("{tag} "), ui))
        }
        _ => None,
    }
}

/// What the PM's round came to (without the loop tag), with its calls' figures.
fn pm_line(before: &Board, after: &Board, ui: Ui) -> Option<String> {
    let stats = stats(before, after, PM_CALLER);
    let pm = paint(ui, "1;36", "pm");
    let closing = paint(ui, "1;36", "pm closing round");
    let failed = paint(ui, "1;31", "pm");
    // Whole: the telling part of a reason ("dns error") is often at its end.
    let why = || one_line(after.last_error.as_deref().unwrap_or("?"), usize::MAX);
    Some(if let [call] = after.pending_calls.as_slice() {
        format!(
            "{pm} → {}: {} {stats}",
            paint(ui, "1;33", &call.target_agent),
            one_line(&call.prompt, 81)
        )
    } else if !after.pending_calls.is_empty() {
        // A fan-out: its calls together, one line each under the header.
        let names: Vec<&str> = after
            .pending_calls
            .iter()
            .map(|c| c.target_agent.as_str())
            .collect();
        let mut text = format!(
            "{pm} → {} at once {stats}",
            paint(ui, "1;33", &names.join(", "))
        );
        for call in &after.pending_calls {
            text.push_str(&format!(
                "\n    → {}: {}",
                paint(ui, "1;33", &call.target_agent),
                one_line(&call.prompt, 81)
            ));
        }
        text
    } else if after.status == Status::ForcedStop && after.has_final_report() {
        format!("{closing} ({}): FINISH {stats}", forced_why(after))
    } else if after.status == Status::ForcedStop {
        format!(
            "{} ({}): no usable report ({}); the fallback report is written {stats}",
            paint(ui, "1;31", "pm closing round"),
            forced_why(after),
            why()
        )
    } else if after.has_final_report() {
        format!("{pm}: FINISH {stats}")
    } else if after.status == Status::Finishing {
        format!(
            "{failed}: round failed ({}); the PM gets a closing round {stats}",
            why()
        )
    } else if after.record.failed_rounds > 0 {
        // docs/design/pm-round.md#failed-rounds: the next round asks again.
        format!(
            "{failed}: round failed ({}); the PM is asked again {stats}",
            why()
        )
    } else {
        return None;
    })
}

/// The figures of `caller`'s calls in the stage that made `after` from `before`: the time and
/// tokens of its `llm_call` events, and the LLM calls charged to it when more than one
/// (retries, transport retries included: the one count, docs/design/failure-policy.md#failure-policy).
fn stats(before: &Board, after: &Board, caller: &str) -> String {
    let (ms, tokens) = after
        .new_events
        .iter()
        .filter(|e| e.caller == caller && e.event_type == EventType::LlmCall)
        .fold((0, 0), |(ms, t), e| {
            (
                ms + e.duration_ms.unwrap_or(0),
                t + e.tokens.map_or(0, crate::model::Tokens::total),
            )
        });
    let charged = |b: &Board| b.usage.by_caller.get(caller).map_or(0, |u| u.calls);
    let calls = charged(after).saturating_sub(charged(before));
    let calls_note = if calls > 1 {
        format!(", {calls} LLM calls")
    } else {
        String::new()
    };
    format!("({:.1} s, {tokens} tokens{calls_note})", ms as f64 / 1000.0)
}

/// One line per call of `caller` in this stage that was asked again (`lead` before each):
/// why its reply was refused, with its own time and tokens.
fn retry_lines(after: &Board, caller: &str, lead: &str, ui: Ui) -> Vec<String> {
    let calls: Vec<&Event> = after
        .new_events
        .iter()
        .filter(|e| e.caller == caller && e.event_type == EventType::LlmCall)
        .collect();
    let Some((_, retried)) = calls.split_last() else {
        return Vec::new();
    };
    retried
        .iter()
        .map(|call| {
            let refused = after.new_events.iter().find(|e| {
                e.caller == caller
                    && e.attempt == call.attempt
                    && matches!(
                        e.event_type,
                        EventType::PmInvalidOutput
                            | EventType::PmRoutingError
                            | EventType::PmRepeatedQuestion
                            | EventType::AgentRetry
                    )
            });
            let why = refused
                .and_then(|e| e.error.as_deref())
                .or(call.error.as_deref())
                .unwrap_or("unusable");
            format!(
                "{lead}{} reply {} refused ({}), asked again ({:.1} s, {} tokens)",
                paint(ui, "1;31", &format!("{caller}:")),
                call.attempt.unwrap_or(0),
                one_line(why, usize::MAX),
                call.duration_ms.unwrap_or(0) as f64 / 1000.0,
                call.tokens.map_or(0, crate::model::Tokens::total)
            )
        })
        .collect()
}

/// One agent turn's progress lines (`lead` before the name): its retried calls, then its
/// findings, or why it failed, with the time, tokens and LLM calls of its own calls.
fn turn_lines(
    turn: &crate::model::LastTurn,
    before: &Board,
    after: &Board,
    lead: &str,
    ui: Ui,
) -> String {
    let name = paint(ui, "1;33", &turn.agent_name);
    let stats = stats(before, after, &turn.agent_name);
    let mut lines = retry_lines(after, &turn.agent_name, lead, ui);
    lines.push(match (&turn.result, &turn.review) {
        _ if turn.council.is_some() => format!(
            "{lead}{name}: council {} {stats}",
            match &turn.council {
                Some(crate::model::CouncilAnswer::Vote(v)) => format!(
                    "vote: {} ({})",
                    one_line(&v.choice, 60),
                    v.confidence.as_str()
                ),
                Some(crate::model::CouncilAnswer::Ranking(r)) =>
                    format!("ranking: {}", r.ranking.join(", ")),
                None => String::new(),
            }
        ),
        (_, Some(v)) => format!(
            "{lead}{name}: review: {} {stats}",
            match v.verdict {
                crate::model::Verdict::Approve => "approve".to_string(),
                crate::model::Verdict::Object => plural(v.objections.len() as u64, "objection"),
            }
        ),
        (Some(r), _) => format!(
            "{lead}{name}: {}, {}, {} {stats}",
            plural(r.key_points.len() as u64, "key point"),
            plural(r.risks.len() as u64, "risk"),
            plural(r.citations.len() as u64, "citation"),
        ),
        (None, None) => format!(
            "{lead}{name}: {} {} {stats}",
            paint(ui, "1;31", "failed:"),
            one_line(turn.error.as_deref().unwrap_or("?"), usize::MAX)
        ),
    });
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A progress line's tag reads back as the loops it was written from.
    #[test]
    fn a_line_says_its_loop() {
        for (first, last, max) in [(2, 2, 6), (1, 3, 6), (12, 12, 20)] {
            let line = format!("[{}] pm → arch: why?", range_tag(first, last, max));
            assert_eq!(loop_of_line(&line), Some((last, max)), "{line}");
        }
        assert_eq!(loop_of_line("finished: 3 loops"), None);
        assert_eq!(loop_of_line("[sample] x"), None);
    }

    /// The closing round is named while it runs; other stages by their program.
    #[test]
    fn the_closing_round_is_named_while_it_runs() {
        let mut board = crate::stage::fixtures::board(&[]);
        board.max_loops = 6;
        assert_eq!(ticker_label(Stage::PmStep, &board), "pm-step");
        board.status = Status::Finishing;
        assert_eq!(ticker_label(Stage::PmStep, &board), "pm closing round");
        assert_eq!(ticker_label(Stage::RenderReport, &board), "render-report");
        board.status = Status::Running;
        board.loop_count = 6;
        assert_eq!(ticker_label(Stage::PmStep, &board), "pm closing round");
    }

    /// Dropping a progress thread wakes its wait and does not wait for it: each round here
    /// waits an hour, so only the wake can end the thread; the receivers' 60 s are deadlock
    /// guards, never reached when the rule holds.
    #[test]
    fn a_progress_thread_stops_when_dropped_not_when_its_wait_runs_out() {
        let (rounds_tx, rounds) = mpsc::channel();
        let beside = Beside::spawn(move |stop| {
            rounds_tx.send("started").unwrap();
            while stop.wait(Duration::from_secs(3600)) {
                rounds_tx.send("woke by timeout").unwrap();
            }
            rounds_tx.send("stopped").unwrap();
        });
        let guard = Duration::from_secs(60);
        assert_eq!(rounds.recv_timeout(guard).unwrap(), "started");
        drop(beside);
        assert_eq!(rounds.recv_timeout(guard).unwrap(), "stopped");
        assert!(rounds.try_iter().next().is_none());
    }

    /// A progress thread whose job has ended runs the next stage's: no thread is made a stage.
    #[test]
    fn an_idle_progress_thread_takes_the_next_job() {
        let guard = Duration::from_secs(60);
        let (tx, rx) = mpsc::channel();
        let t = tx.clone();
        idle_thread(Box::new(move || {
            t.send(std::thread::current().id()).unwrap()
        }));
        let first = rx.recv_timeout(guard).unwrap();
        // Let it go idle (it offers itself after its job), then give it the next one.
        let mut second = None;
        for _ in 0..600 {
            std::thread::sleep(Duration::from_millis(10));
            let t = tx.clone();
            idle_thread(Box::new(move || {
                t.send(std::thread::current().id()).unwrap()
            }));
            let id = rx.recv_timeout(guard).unwrap();
            if id == first {
                second = Some(id);
                break;
            }
        }
        assert_eq!(second, Some(first), "the idle thread was never reused");
    }

    /// Once the stage's end has taken the shared state, the thread does nothing more; the
    /// end's own last action runs once.
    #[test]
    fn after_the_end_a_progress_thread_does_nothing() {
        let shared = Shared::new(0);
        assert!(shared.while_running(|n| *n += 1));
        shared.end(|n| *n += 10);
        shared.end(|n| *n += 100);
        assert!(!shared.while_running(|n| *n += 1000));
        assert_eq!(shared.state.lock().unwrap().1, 11);
    }

    /// The log is read from where the last read stopped: a whole line once, a partial one
    /// when it ends.
    #[test]
    fn the_log_is_read_line_by_line_from_where_it_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("llm.jsonl");
        let (mut pos, mut pending, mut seen) = (4, Vec::new(), Vec::<String>::new());
        std::fs::write(&log, "old\nnew\npart").unwrap();
        read_new_lines(&log, &mut pos, &mut pending, |l| seen.push(l.to_string()));
        assert_eq!(seen, ["new\n"]);
        std::fs::write(&log, "old\nnew\npartial\n").unwrap();
        read_new_lines(&log, &mut pos, &mut pending, |l| seen.push(l.to_string()));
        assert_eq!(seen, ["new\n", "partial\n"]);
    }

    #[test]
    fn counts_take_their_plural() {
        assert_eq!(plural(1u64, "key point"), "1 key point");
        assert_eq!(plural(0u64, "risk"), "0 risks");
        assert_eq!(plural(2u32, "loop"), "2 loops");
    }

    /// The ticker pauses while a human answers (docs/design/agent-turn.md#a-human-at-the-table).
    #[test]
    fn no_ticker_during_a_humans_turn() {
        let mut board = crate::stage::fixtures::board(&[]);
        let ui = Ui {
            ticker: true,
            ..Ui::default()
        };
        board.pending_calls = vec![crate::model::PendingCall {
            target_agent: "arch".into(),
            prompt: "q".into(),
            analysis: String::new(),
            reserve: None,
        }];
        assert!(ui.for_stage(&board).ticker);
        board.agents.get_mut("arch").unwrap().kind = crate::model::ParticipantKind::Human;
        assert!(!ui.for_stage(&board).ticker);
        assert!(!Ui::default().for_stage(&board).ticker);
    }
}
