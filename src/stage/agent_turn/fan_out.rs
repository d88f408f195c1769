//! A fan-out's agent turn (docs/design/agent-turn.md#fan-out): the calls of a CALL_AGENTS run concurrently,
//! one thread and one client each, each with its own ask loop, checks and retries, on its own
//! copy of the board; their outcomes are then put on the board in call order, whatever order
//! they finished in, so the events, the exchange log and the cassette read as if the calls had
//! run one by one.
//!
//! Call numbers are fixed before any call is sent (`Client::in_fan_out`): attempt k of call i
//! of n is number `base + k*n + i + 1`. Each call writes its exchange-log lines (and
//! `--record` lines) to a side file (`llm::resume::part_path`), appended to the log in call
//! order when every call has ended; a fan-out killed half-way leaves them, and the resumed
//! meeting answers the finished calls from them.

use std::path::Path;

use crate::error::{Error, Result};
use crate::llm::resume::{absorb_parts, drop_absorbed_parts, part_path};
use crate::llm::{client_for_caller, LlmConfig};
use crate::meeting::events::{self, Clock};
use crate::meeting::whiteboard::append_process;
use crate::model::{Board, PendingCall, Usage};

use super::run_call;

/// Whether the board waits for a fan-out's turn: more than one call.
pub fn is_fan_out(board: &Board) -> bool {
    board.pending_calls.len() > 1
}

/// The call waiting when it is the only one (the PM's CALL_AGENT, or a single reviewer's).
pub fn single_call(board: &Board) -> Option<&PendingCall> {
    match board.pending_calls.as_slice() {
        [call] => Some(call),
        _ => None,
    }
}

/// What one call of the fan-out left: its copy of the board, and the highest call number it
/// used.
struct Done {
    board: Board,
    last_seq: u64,
}

/// Run the fan-out in `pending_calls` (a board `check_turn` accepted) and return the board with `last_turns` in call order
/// and `pending_calls` cleared. Each call is asked like a single turn (`agent_turn`); a fatal
/// provider error in any call is `Error::Runtime` (the calls that finished are in the log, so
/// a resumed meeting does not ask them again).
pub fn fan_out(mut board: Board, llm: &LlmConfig, clock: &dyn Clock) -> Result<Board> {
    super::start(&mut board, clock);
    let calls = std::mem::take(&mut board.pending_calls);
    let n = calls.len() as u64;
    let base = board.usage.calls;
    for file in [&llm.llm_log, &llm.record].into_iter().flatten() {
        side_files(file, base, n, drop_absorbed_parts)?;
    }
    let results: Vec<Result<Done>> = std::thread::scope(|scope| {
        let handles: Vec<_> = calls
            .into_iter()
            .enumerate()
            .map(|(i, call)| {
                let board = &board;
                scope.spawn(move || one_call(board, call, llm, base, i as u64, n, clock))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|panic| {
                    let what = crate::error::panic_message(panic.as_ref());
                    Err(Error::Runtime(format!("a fan-out call panicked: {what}")))
                })
            })
            .collect()
    });
    // The side files, in call order, whatever happened (the log keeps what was asked).
    for file in [&llm.llm_log, &llm.record].into_iter().flatten() {
        side_files(file, base, n, absorb_parts)?;
    }
    let before = board.usage.clone();
    let mut last_seq = base;
    for done in results {
        let done = done?;
        last_seq = last_seq.max(done.last_seq);
        take_outcome(&mut board, &before, done.board);
    }
    board.usage.calls = board.usage.calls.max(last_seq);
    Ok(board)
}

/// Append the `n` calls' side files to `file` (the exchange log or the recording), in call
/// order (`absorb_parts`), or drop those a killed run had appended (`drop_absorbed_parts`).
fn side_files(
    file: &Path,
    base: u64,
    n: u64,
    act: fn(&Path, &[std::path::PathBuf]) -> std::io::Result<()>,
) -> Result<()> {
    let parts: Vec<_> = (1..=n).map(|i| part_path(file, base + i)).collect();
    act(file, &parts).map_err(|e| {
        Error::Runtime(format!(
            "the fan-out's side files beside {}: {}",
            file.display(),
            crate::io::os_error(&e)
        ))
    })
}

/// Call `index` of `n`, on its own copy of the board: its events carry the loop it counts as
/// (the fan-out's first loop + index), its usage starts from the meeting's (the token budget
/// sees what was used before the fan-out) with the call counter at 0.
fn one_call(
    board: &Board,
    call: PendingCall,
    llm: &LlmConfig,
    base: u64,
    index: u64,
    n: u64,
    clock: &dyn Clock,
) -> Result<Done> {
    let mut own = board.clone();
    // The events before the calls (the flow's questions) are the fan-out's board's already.
    own.new_events.clear();
    own.record.process.clear();
    own.flow = Default::default();
    own.usage.calls = 0;
    let agent = &board.agents[&call.target_agent];
    let first_seq = base + index + 1;
    let mut args = llm.clone();
    args.record = llm.record.as_deref().map(|r| part_path(r, first_seq));
    let (client, opts) = client_for_caller(&args, &board.llm, &agent.name, &agent.metadata, 0)?;
    let log = llm.llm_log.as_deref().map(|l| part_path(l, first_seq));
    let mut client = client.with_log(log).in_fan_out(base, index, n);
    // Reviewers' and council members' calls are no loops (docs/design/review.md#flow,
    // docs/design/council.md#flow): all stand in the loop they were asked in.
    let offset = if own.status == crate::model::Status::Reviewing
        || crate::meeting::council::active(&own).is_some()
    {
        0
    } else {
        index as u32
    };
    events::in_later_loop(&mut own, offset, |own| {
        run_call(own, call, &mut client, &opts, clock)
    })?;
    Ok(Done {
        last_seq: client.last_seq(),
        board: own,
    })
}

/// Put one call's outcome on the board: its events (and their flow steps), Process Note
/// entries, who answered, its usage (what its copy added to `before`) and its turn.
fn take_outcome(board: &mut Board, before: &Usage, own: Board) {
    for ev in own.new_events {
        if let Some(step) = events::flow_step(&ev) {
            events::add_to_flow(&mut board.flow, step);
        }
        board.event_count += 1;
        board.new_events.push(ev);
    }
    append_process(board, own.record.process);
    board.record.callers.extend(own.record.callers);
    add_usage(&mut board.usage, before, &own.usage);
    board.last_turns.extend(own.last_turns);
}

/// Add to `total` what `after` holds beyond `before` (tokens, time; `after.calls` and each
/// caller's calls are the call's attempts, counted from 0).
fn add_usage(total: &mut Usage, before: &Usage, after: &Usage) {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    total.tokens += after.tokens.since(before.tokens);
    for (caller, a) in &after.by_caller {
        let b = before.by_caller.get(caller).cloned().unwrap_or_default();
        let t = total.by_caller.entry(caller.clone()).or_default();
        t.calls += d(a.calls, b.calls);
        t.tokens += a.tokens.since(b.tokens);
        t.duration_ms += d(a.duration_ms, b.duration_ms);
        t.estimated |= a.estimated;
        t.max_prompt_tokens = t.max_prompt_tokens.max(a.max_prompt_tokens);
        if let Some(usd) = a.billed_usd {
            let added = usd - b.billed_usd.unwrap_or(0.0);
            *t.billed_usd.get_or_insert(0.0) += added;
        }
    }
}
