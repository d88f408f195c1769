//! The events and usage bookkeeping of the stages (docs/design/run-folder.md#events).
//!
//! Owns the clock (so tests and reproducible runs can pin timestamps with `AGENT_MEETING_NOW`),
//! the rule that fills every event's `ts`, `trace_id` and `loop`, the rule that a board carries
//! only the events of the stage that wrote it (`new_events`; the history is the run folder's
//! `events.jsonl`), the bounded `flow` the report's diagram is drawn from, and the accounting
//! of LLM calls into `board.usage` plus their `llm_call` events. The vocabulary is the closed
//! enum `model::EventType`; the report and the driver read it.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::llm::{LlmError, Reply};
use crate::model::{
    Board, Event, EventType, Flow, FlowKind, FlowStep, MessageKind, TurnStatus, FLOW_LOOPS,
    PM_CALLER,
};

/// Environment variable that pins the clock to one timestamp (reproducible runs and tests).
pub(crate) const NOW_ENV: &str = "AGENT_MEETING_NOW";

/// Where timestamps come from: RFC 3339, UTC.
pub trait Clock: Sync {
    fn now(&self) -> String;
}

/// The machine's clock, formatted without a date-time crate.
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> String {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        rfc3339_utc(d.as_secs() as i64, d.subsec_millis())
    }
}

/// Always the same timestamp.
pub struct FixedClock(pub String);

impl Clock for FixedClock {
    fn now(&self) -> String {
        self.0.clone()
    }
}

/// `AGENT_MEETING_NOW` when set and non-empty, else the system clock.
pub fn clock_from_env() -> Box<dyn Clock> {
    match std::env::var(NOW_ENV) {
        Ok(v) if !v.trim().is_empty() => Box::new(FixedClock(v.trim().to_string())),
        _ => Box::new(SystemClock),
    }
}

/// `2026-11-30T03:51:07.123Z` from seconds and milliseconds since the Unix epoch.
pub(crate) fn rfc3339_utc(secs: i64, millis: u32) -> String {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d as u32)
}

/// A bare event of `event_type` by `caller`; `push` fills the rest. The stages build their
/// events through the constructors below, one per kind, so each kind's shape (who sends it to
/// whom, which fields it carries) is written once (docs/design/run-folder.md#events).
pub fn event(event_type: EventType, caller: &str) -> Event {
    Event {
        event_type,
        caller: caller.to_string(),
        ..Event::default()
    }
}

/// An event that is a message between participants (`from` → `to`, of `kind`).
fn message(event_type: EventType, caller: &str, from: &str, to: &str, kind: MessageKind) -> Event {
    Event {
        from: Some(from.to_string()),
        to: Some(to.to_string()),
        kind: Some(kind),
        ..event(event_type, caller)
    }
}

/// Who sends the meeting's own control messages and corrections.
const RUNTIME: &str = "runtime";
/// Who receives the control messages that concern the whole meeting.
const MEETING: &str = "meeting";

/// `meeting_started`: `init-board` made the board (`what`: participants, limits, documents).
pub(crate) fn meeting_started(what: String) -> Event {
    Event {
        message: Some(what),
        ..event(EventType::MeetingStarted, "init-board")
    }
}

/// `board_merged`: `merge-board` folded a turn in (`what` it merged).
pub(crate) fn board_merged(what: String) -> Event {
    Event {
        message: Some(what),
        ..event(EventType::BoardMerged, "merge-board")
    }
}

/// `meeting_stalled`: answers in a row added nothing new (docs/design/pm-round.md#circles).
pub(crate) fn meeting_stalled(what: String) -> Event {
    Event {
        message: Some(what),
        ..event(EventType::MeetingStalled, "merge-board")
    }
}

/// `pm_decision` as a task: the PM asks `agent` its `question`.
pub(crate) fn pm_asks(agent: &str, question: &str) -> Event {
    Event {
        message: Some(question.to_string()),
        ..message(
            EventType::PmDecision,
            PM_CALLER,
            PM_CALLER,
            agent,
            MessageKind::Task,
        )
    }
}

/// Who asks the questions a flow script puts on the board by hand.
pub const FLOW: &str = "flow";

/// `flow_call`: a flow script asked `agent` its `question` by writing the call on the board
/// (docs/design/flows.md#hand-put-questions); a task like the PM's, so the diagram draws it.
pub(crate) fn flow_asks(agent: &str, question: &str) -> Event {
    Event {
        message: Some(question.to_string()),
        ..message(
            EventType::FlowCall,
            "agent-turn",
            FLOW,
            agent,
            MessageKind::Task,
        )
    }
}

/// `pm_decision` as control: the PM's FINISH.
pub(crate) fn pm_finishes() -> Event {
    Event {
        message: Some("FINISH".into()),
        ..message(
            EventType::PmDecision,
            PM_CALLER,
            PM_CALLER,
            MEETING,
            MessageKind::Control,
        )
    }
}

/// `pm_invalid_output`: the PM's answer of `attempt` was not a valid decision (`error`).
pub(crate) fn pm_invalid_output(attempt: u32, error: &str) -> Event {
    Event {
        attempt: Some(attempt),
        error: Some(error.to_string()),
        ..message(
            EventType::PmInvalidOutput,
            PM_CALLER,
            RUNTIME,
            PM_CALLER,
            MessageKind::Feedback,
        )
    }
}

/// `pm_routing_error`: the PM's answer of `attempt` addressed `target`, who cannot be asked.
pub(crate) fn pm_routing_error(attempt: u32, target: &str, error: &str) -> Event {
    Event {
        attempt: Some(attempt),
        error: Some(error.to_string()),
        ..message(
            EventType::PmRoutingError,
            PM_CALLER,
            PM_CALLER,
            target,
            MessageKind::Feedback,
        )
    }
}

/// `pm_repeated_question`: the PM's answer of `attempt` asked `agent` what it had asked before
/// (docs/design/pm-round.md#circles).
pub(crate) fn pm_repeated_question(attempt: u32, agent: &str, error: &str) -> Event {
    Event {
        attempt: Some(attempt),
        error: Some(error.to_string()),
        ..message(
            EventType::PmRepeatedQuestion,
            PM_CALLER,
            PM_CALLER,
            agent,
            MessageKind::Feedback,
        )
    }
}

/// `pm_round_failed`: the round's retries are used up (`error`: why).
pub(crate) fn pm_round_failed(error: &str) -> Event {
    Event {
        error: Some(error.to_string()),
        ..message(
            EventType::PmRoundFailed,
            PM_CALLER,
            RUNTIME,
            MEETING,
            MessageKind::Control,
        )
    }
}

/// `forced_finish`: the meeting must close now, and why (docs/design/pm-round.md#pm-round).
pub(crate) fn forced_finish(why: String) -> Event {
    Event {
        message: Some(why),
        ..message(
            EventType::ForcedFinish,
            PM_CALLER,
            RUNTIME,
            PM_CALLER,
            MessageKind::Control,
        )
    }
}

/// `agent_retry`: `agent`'s answer of `attempt` was unusable and is asked again (`error`, as
/// the model is told).
pub(crate) fn agent_retry(agent: &str, attempt: u32, error: String) -> Event {
    Event {
        attempt: Some(attempt),
        error: Some(error),
        ..message(
            EventType::AgentRetry,
            agent,
            RUNTIME,
            agent,
            MessageKind::Feedback,
        )
    }
}

/// `agent_result`: `agent`'s turn ended with a checked answer (its `headline`).
pub(crate) fn agent_result(agent: &str, headline: String) -> Event {
    Event {
        status: Some(TurnStatus::Ok),
        message: Some(headline),
        ..message(
            EventType::AgentResult,
            agent,
            agent,
            PM_CALLER,
            MessageKind::Result,
        )
    }
}

/// `agent_error`: `agent`'s turn ended without a usable answer (`error`).
pub(crate) fn agent_error(agent: &str, error: &str) -> Event {
    Event {
        status: Some(TurnStatus::Error),
        error: Some(error.to_string()),
        ..message(
            EventType::AgentError,
            agent,
            agent,
            PM_CALLER,
            MessageKind::Result,
        )
    }
}

/// `llm_call`: one logical model call of `caller` (its `attempt` in the stage); its outcome is
/// filled by [`record_llm_call`].
fn llm_call(caller: &str, attempt: u32) -> Event {
    Event {
        attempt: Some(attempt),
        ..event(EventType::LlmCall, caller)
    }
}

/// Every stage starts here: the events of the stage before are replaced by this stage's own,
/// so a board stays the same size however long the meeting (docs/design/run-folder.md#events). Whoever runs
/// the pipeline appends each board's `new_events` to `events.jsonl`.
pub(crate) fn start_stage(board: &mut Board) {
    board.new_events.clear();
}

/// Append `ev` to the board's `new_events` with `ts`, `trace_id` and `loop` filled in, and its
/// step (if the diagram draws it) to the board's `flow`.
pub fn push(board: &mut Board, clock: &dyn Clock, ev: Event) {
    push_at(board, &clock.now(), ev);
}

/// [`push`] with the time already read: the pure stages take `now` from their caller.
pub(crate) fn push_at(board: &mut Board, now: &str, mut ev: Event) {
    ev.ts = now.to_string();
    ev.trace_id = board.trace_id.clone();
    ev.loop_no = board.current_loop();
    if let Some(step) = flow_step(&ev) {
        add_to_flow(&mut board.flow, step);
    }
    board.event_count += 1;
    board.new_events.push(ev);
}

/// Run `f` with the board's loop numbering moved `offset` loops on: call `offset` of a fan-out
/// counts the loop it would have had if the calls had run one by one (docs/design/agent-turn.md#fan-out), for
/// its events and its records.
pub(crate) fn in_later_loop<R>(
    board: &mut Board,
    offset: u32,
    f: impl FnOnce(&mut Board) -> R,
) -> R {
    board.loop_count += offset;
    let r = f(board);
    board.loop_count -= offset;
    r
}

/// Longest text on a flow step: a question or an answer's first sentence.
pub(crate) const FLOW_TEXT_CHARS: usize = 60;
/// Longest reason on a flow step: why a turn failed or the meeting was made to close.
pub(crate) const FLOW_REASON_CHARS: usize = 40;

/// The step of the flow diagram an event stands for, if any: the PM's questions and FINISH,
/// the agents' answers and failures, forced finishes and failed rounds.
pub fn flow_step(ev: &Event) -> Option<FlowStep> {
    let msg = ev.message.as_deref().unwrap_or("");
    let (kind, agent, text) = match (ev.kind, ev.event_type) {
        (Some(MessageKind::Task), _) => (
            FlowKind::Ask,
            ev.to.clone()?,
            flow_text(msg, FLOW_TEXT_CHARS),
        ),
        (Some(MessageKind::Result), _) if ev.status == Some(TurnStatus::Error) => {
            let why = ev.error.as_deref().unwrap_or("");
            (
                FlowKind::Failed,
                ev.from.clone()?,
                flow_text(why, FLOW_REASON_CHARS),
            )
        }
        (Some(MessageKind::Result), _) => (
            FlowKind::Answer,
            ev.from.clone()?,
            flow_text(msg, FLOW_TEXT_CHARS),
        ),
        (_, EventType::ForcedFinish) => {
            return Some(step(
                ev,
                FlowKind::ForcedFinish,
                None,
                flow_text(msg, FLOW_REASON_CHARS),
            ))
        }
        (_, EventType::PmDecision) if msg.trim() == "FINISH" => {
            return Some(step(ev, FlowKind::Finish, None, String::new()))
        }
        (_, EventType::PmRoundFailed) => {
            return Some(step(ev, FlowKind::RoundFailed, None, String::new()))
        }
        _ => return None,
    };
    Some(step(ev, kind, Some(agent), text))
}

fn step(ev: &Event, kind: FlowKind, agent: Option<String>, text: String) -> FlowStep {
    FlowStep {
        loop_no: ev.loop_no,
        kind,
        agent,
        text,
    }
}

/// `text` on one line, cut to `max` characters with `...` marking the cut: what a flow step
/// keeps of a message (the diagram shows no more).
pub(crate) fn flow_text(text: &str, max: usize) -> String {
    let folded = crate::text::fold_ws(text);
    if folded.chars().count() <= max {
        return folded;
    }
    let mut s: String = folded.chars().take(max.saturating_sub(3)).collect();
    s = s.trim_end().to_string();
    s.push_str("...");
    s
}

/// Add `step` to `flow`, dropping the oldest loop's steps while more than [`FLOW_LOOPS`] loops
/// are kept: the board's part of the history stays bounded.
pub fn add_to_flow(flow: &mut Flow, step: FlowStep) {
    flow.steps.push(step);
    loop {
        // A fan-out's steps interleave its loops (questions L..L+n, then answers L..L+n).
        let loops: std::collections::BTreeSet<u32> = flow.steps.iter().map(|s| s.loop_no).collect();
        if loops.len() as u32 <= FLOW_LOOPS {
            return;
        }
        let oldest = *loops.first().expect("more loops than kept");
        flow.steps.retain(|s| s.loop_no != oldest);
        flow.loops_before += 1;
    }
}

/// The events of an events file (`events.jsonl`, one JSON event a line; blank lines skipped).
/// A line that is not an event is an input error naming the file, the line and the field.
pub fn read_events_file(path: &std::path::Path) -> crate::Result<Vec<Event>> {
    let text = crate::io::read_text_file(path)?;
    let label = path.display().to_string();
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let de = &mut serde_json::Deserializer::from_str(line);
        let ev: Event = serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            let at = if field == "." {
                format!("line {}", i + 1)
            } else {
                format!("line {}: {field}", i + 1)
            };
            crate::Error::input(&label, at, e.inner().to_string())
        })?;
        events.push(ev);
    }
    Ok(events)
}

/// The whole flow of a meeting from its events (`render-report --events FILE`): no loop dropped.
pub fn full_flow<'a>(events: impl IntoIterator<Item = &'a Event>) -> Flow {
    Flow {
        loops_before: 0,
        steps: events.into_iter().filter_map(flow_step).collect(),
    }
}

/// Account one logical LLM call: `usage.calls` becomes the client's counter (`calls_after`),
/// the attempts it took are charged to `caller`, tokens and time are added, and an `llm_call`
/// event is logged. `attempt` is the logical attempt within the stage (1, 2, ...).
pub(crate) fn record_llm_call(
    board: &mut Board,
    clock: &dyn Clock,
    calls_after: u64,
    caller: &str,
    attempt: u32,
    outcome: Result<&Reply, &LlmError>,
) {
    // Charging the counter's delta charges every attempt, also when the transport retried
    // inside one logical call (a fan-out charges its calls' own attempts: Usage::attempts).
    let delta = calls_after.saturating_sub(board.usage.calls);
    board.usage.calls = board.usage.calls.max(calls_after);
    let mut ev = llm_call(caller, attempt);
    let entry = board.usage.by_caller.entry(caller.to_string()).or_default();
    entry.calls += delta;
    match outcome {
        Ok(reply) => {
            let u = reply.usage;
            entry.tokens += u.tokens;
            entry.duration_ms += reply.duration_ms;
            entry.estimated |= u.estimated;
            entry.max_prompt_tokens = entry.max_prompt_tokens.max(u.tokens.prompt_tokens);
            if let Some(usd) = u.billed_usd {
                *entry.billed_usd.get_or_insert(0.0) += usd;
            }
            board.usage.tokens += u.tokens;
            ev.status = Some(TurnStatus::Ok);
            ev.duration_ms = Some(reply.duration_ms);
            ev.tokens = Some(u.tokens);
        }
        Err(e) => {
            let duration = match e {
                LlmError::Transient { duration_ms, .. } => *duration_ms,
                LlmError::Fatal(_) | LlmError::OutOfStep(_) => 0,
            };
            entry.duration_ms += duration;
            ev.status = Some(TurnStatus::Error);
            ev.duration_ms = Some(duration);
            ev.error = Some(e.to_string());
        }
    }
    push(board, clock, ev);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_utc(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_utc(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339_utc(1_700_000_000, 0), "2023-11-14T22:13:20.000Z");
        assert_eq!(rfc3339_utc(4_102_444_799, 999), "2099-12-31T23:59:59.999Z");
        assert_eq!(rfc3339_utc(-1, 0), "1969-12-31T23:59:59.000Z");
    }

    /// The flow keeps the steps of the last FLOW_LOOPS loops and counts the loops it dropped.
    #[test]
    fn the_flow_keeps_the_last_loops() {
        let mut flow = Flow::default();
        let ask = |loop_no: u32| FlowStep {
            loop_no,
            kind: FlowKind::Ask,
            agent: Some("arch".into()),
            text: format!("q{loop_no}"),
        };
        for l in 1..=FLOW_LOOPS {
            add_to_flow(&mut flow, ask(l));
            add_to_flow(&mut flow, ask(l));
        }
        assert_eq!(
            (flow.loops_before, flow.steps.len()),
            (0, 2 * FLOW_LOOPS as usize)
        );
        add_to_flow(&mut flow, ask(FLOW_LOOPS + 1));
        assert_eq!(flow.loops_before, 1);
        assert_eq!(flow.steps[0].loop_no, 2);
        assert_eq!(flow.steps.len(), 2 * FLOW_LOOPS as usize - 1);
        // Fan-outs of 3 (questions of loops L..L+2, then their answers) keep 30 loops too.
        let mut flow = Flow::default();
        for first in (1..=FLOW_LOOPS).step_by(3) {
            for l in (first..first + 3).chain(first..first + 3) {
                add_to_flow(&mut flow, ask(l));
            }
        }
        assert_eq!((flow.loops_before, flow.steps.len()), (0, 60));
        for l in (31..34).chain(31..34) {
            add_to_flow(&mut flow, ask(l));
        }
        assert_eq!(flow.loops_before, 3);
        assert_eq!(flow.steps.iter().map(|s| s.loop_no).min(), Some(4));
    }

    /// What a step keeps of a message is what the diagram shows: cutting again changes nothing.
    #[test]
    fn flow_text_is_cut_once() {
        let long = "word ".repeat(40);
        let cut = flow_text(&long, FLOW_TEXT_CHARS);
        assert_eq!(cut.chars().count(), FLOW_TEXT_CHARS);
        assert!(cut.ends_with("..."));
        assert_eq!(flow_text(&cut, FLOW_TEXT_CHARS), cut);
        assert_eq!(flow_text("a\n  b", FLOW_TEXT_CHARS), "a b");
    }

    #[test]
    fn system_clock_looks_like_rfc3339() {
        let s = SystemClock.now();
        assert_eq!(s.len(), 24, "{s}");
        assert!(s.ends_with('Z') && s.as_bytes()[10] == b'T', "{s}");
    }
}
