//! The `pm-step` stage (SPEC §5): one PM round — build the bounded PM input, ask the PM for a
//! decision, check it, retry within the round's limits, and apply the outcome to the board.
//!
//! Also owns the prompt-template plumbing shared with `turn` (embedded minijinja templates, the
//! retry message, item cutting), because both stages follow the same retry-prompt rules.

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::events::{self, Clock, KIND_CONTROL, KIND_FEEDBACK, KIND_TASK};
use crate::io::kind_of;
use crate::llm::{self, Client, ExpectedJson, LlmError, Message, Options, Request};
use crate::model::{
    Board, NextAction, PendingCall, PmDecision, Status, LIST_CAP, PM_DECISION_FIELDS,
};

/// The caller name of every PM call (cassettes, usage, events).
pub const PM_CALLER: &str = "pm";
/// Every list item the PM sees is cut to this many characters (SPEC §5).
pub const ITEM_CHARS: usize = 500;
/// The whiteboard summary is at most 1200 characters after merge; cut defensively.
const SUMMARY_CHARS: usize = 1200;
/// The PM sees only the latest few recent errors.
const RECENT_ERRORS_SHOWN: usize = 5;

const PM_SYSTEM: &str = include_str!("../share/prompts/pm_system.j2");
const PM_USER: &str = include_str!("../share/prompts/pm_user.j2");
const AGENT_USER: &str = include_str!("../share/prompts/agent_user.j2");
const RETRY: &str = include_str!("../share/prompts/retry.j2");

/// Folder whose `<name>.j2` files replace the embedded prompt templates of the same name.
pub const PROMPTS_ENV: &str = "AGENT_MEETING_PROMPTS";

/// The prompt templates: embedded, each overridable by a file in `$AGENT_MEETING_PROMPTS`.
fn env() -> Result<&'static minijinja::Environment<'static>> {
    static ENV: OnceLock<std::result::Result<minijinja::Environment<'static>, Error>> =
        OnceLock::new();
    let built = ENV.get_or_init(|| {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .build()
                .expect("default delimiters are valid"),
        );
        let dir = std::env::var_os(PROMPTS_ENV).map(std::path::PathBuf::from);
        for (name, src) in [
            ("pm_system.j2", PM_SYSTEM),
            ("pm_user.j2", PM_USER),
            ("agent_user.j2", AGENT_USER),
            ("retry.j2", RETRY),
        ] {
            let user = dir.as_ref().map(|d| d.join(name)).filter(|p| p.is_file());
            match user {
                Some(path) => {
                    let label = path.display().to_string();
                    let text = crate::io::read_text_file(&path)?;
                    env.add_template_owned(name, text).map_err(|e| {
                        Error::input(&label, "", format!("template does not compile: {e}"))
                    })?;
                }
                None => env
                    .add_template(name, src)
                    .expect("embedded prompt templates compile"),
            }
        }
        Ok(env)
    });
    built.as_ref().map_err(Clone::clone)
}

/// Render one prompt template; a failure in an embedded template is a bug, in a user's
/// override it is bad input.
pub(crate) fn render<S: Serialize>(name: &str, ctx: &S) -> Result<String> {
    let tmpl = env()?
        .get_template(name)
        .map_err(|e| Error::Runtime(format!("prompt template {name}: {e}")))?;
    let mut s = tmpl.render(minijinja::value::Serde(ctx)).map_err(|e| {
        let msg = format!("prompt template {name}: {e:#}").replace('\n', " ");
        if std::env::var_os(PROMPTS_ENV).is_some() {
            Error::Usage(msg)
        } else {
            Error::Runtime(msg)
        }
    })?;
    if !s.ends_with('\n') {
        s.push('\n');
    }
    Ok(s)
}

/// The correction sent after an unusable reply: the exact error, the allowed values, and a
/// request for corrected JSON only (SPEC §12).
pub(crate) fn retry_message(
    error: &str,
    allowed_field: &str,
    allowed: &[String],
    note: &str,
) -> Result<String> {
    render(
        "retry.j2",
        &json!({"error": error, "allowed_field": allowed_field, "allowed": allowed, "note": note}),
    )
}

/// How much of an unusable reply is sent back with the correction. A runaway reply (a model
/// repeating itself up to megabytes) would otherwise be re-sent whole, costing its size again
/// in prompt tokens or overflowing the context window; real answers are far shorter.
const ECHO_CHARS: usize = 16_000;

/// The model's unusable reply as echoed in the retry conversation, cut to `ECHO_CHARS`.
pub(crate) fn echo_reply(text: String) -> Message {
    let total = text.chars().count();
    if total <= ECHO_CHARS {
        return Message::assistant(text);
    }
    let head: String = text.chars().take(ECHO_CHARS).collect();
    Message::assistant(format!(
        "{head}\n[… reply cut here: {} more characters not shown]",
        total - ECHO_CHARS
    ))
}

/// `s` cut to at most `max` characters (an ellipsis marks the cut); never splits a character.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

pub(crate) fn cut_list(items: &[String]) -> Vec<String> {
    items
        .iter()
        .take(LIST_CAP)
        .map(|s| cut(s, ITEM_CHARS))
        .collect()
}

/// Whether the PM may still call agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    ForcedFinish,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::ForcedFinish => "forced_finish",
        }
    }
}

/// `forced_finish` when the board is `finishing` without a report or the loop budget is spent.
pub fn mode(board: &Board) -> Mode {
    if board.status == Status::Finishing || board.loop_count >= board.max_loops {
        Mode::ForcedFinish
    } else {
        Mode::Normal
    }
}

/// The stage a board is waiting for, when the board's status alone decides it; shared by both
/// LLM stages so their refusals name the same next step.
pub(crate) fn terminal_stage(board: &Board) -> Option<String> {
    match board.status {
        Status::Finished | Status::Failed => Some(format!(
            "the meeting is over (status {}); nothing runs next",
            board.status.as_str()
        )),
        Status::ForcedStop => {
            Some("board status is forced_stop: render-report should run next".into())
        }
        Status::Finishing if board.has_final_report() => Some(
            "board status is finishing with a final report: render-report should run next".into(),
        ),
        _ => None,
    }
}

/// Refuse a board that is not `pm-step`'s turn, naming the stage that should run (exit 2).
pub fn check_turn(board: &Board) -> Result<()> {
    let wrong = |why: String| Err(Error::Usage(format!("{why}, not pm-step")));
    if let Some(why) = terminal_stage(board) {
        return wrong(why);
    }
    if board.pending_call.is_some() {
        return wrong("board has a pending_call: agent-turn should run next".into());
    }
    if board.last_turn.is_some() {
        return wrong("board has a last_turn: merge-board should run next".into());
    }
    // A hand-edited board can carry a PM config the loader would have refused.
    if let Some(cfg) = &board.pm {
        crate::loader::validate_agent(cfg, crate::loader::AgentKind::Pm)
            .map_err(|e| e.under("pm").in_file(""))?;
    }
    Ok(())
}

/// Everything the PM sees (SPEC §5), and nothing else: never the event log or raw agent
/// outputs; every list item cut to 500 characters so the prompt stays flat over many loops.
pub fn pm_input(board: &Board) -> Value {
    let dp = &board.meeting_input.decision_packet;
    let participants: Vec<Value> = board
        .participants
        .iter()
        .map(|name| {
            let a = board.agents.get(name);
            json!({
                "name": name,
                "role": cut(a.map_or("", |a| a.role.as_str()), ITEM_CHARS),
                "description": cut(a.map_or("", |a| a.description.as_str()), ITEM_CHARS),
            })
        })
        .collect();
    let skip = board
        .recent_errors
        .len()
        .saturating_sub(RECENT_ERRORS_SHOWN);
    let recent: Vec<String> = board.recent_errors[skip..]
        .iter()
        .map(|s| cut(s, ITEM_CHARS))
        .collect();
    json!({
        "topic": board.topic,
        "decision_packet": {
            "decision_to_make": dp.decision_to_make,
            "options": cut_list(&dp.options),
            "evaluation_dimensions": cut_list(&dp.evaluation_dimensions),
            "required_questions": cut_list(&dp.required_questions),
            "risk_tolerance": cut(&dp.risk_tolerance, ITEM_CHARS),
            "time_horizon": cut(&dp.time_horizon, ITEM_CHARS),
        },
        "summary": cut(&board.summary, SUMMARY_CHARS),
        "key_points": cut_list(&board.key_points),
        "open_questions": cut_list(&board.open_questions),
        "decisions": cut_list(&board.decisions),
        "risks": cut_list(&board.risks),
        "recent_errors": recent,
        "participants": participants,
        "mode": mode(board).as_str(),
        "remaining_loops": board.max_loops.saturating_sub(board.loop_count),
        "last_error": board.last_error.as_deref().map(|e| cut(e, ITEM_CHARS)),
    })
}

/// The PM config's role prompt, or the built-in default PM prompt.
pub fn pm_system_prompt(board: &Board) -> Result<String> {
    match &board.pm {
        Some(pm) => Ok(pm.system_prompt.clone()),
        None => render("pm_system.j2", &json!({})),
    }
}

/// The PM's user message: the PM input laid out with the rules and the reply format.
pub fn render_pm_user(board: &Board) -> Result<String> {
    render("pm_user.j2", &pm_input(board))
}

/// The JSON the PM must return, sent to providers with native structured output. Hand-written
/// rather than generated by schemars so that it is "strict"-friendly (OpenAI strict mode wants
/// every property required, nullable ones typed `[T, "null"]`, no extra properties). The
/// answer itself is checked by `check_decision`, which also accepts omitted nullable fields.
pub fn pm_expected_json() -> ExpectedJson {
    let nullable = json!({"type": ["string", "null"]});
    ExpectedJson {
        name: "pm_decision".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "analysis": {"type": "string"},
                "next_action": {"type": "string", "enum": ["CALL_AGENT", "FINISH"]},
                "target_agent": nullable,
                "prompt_for_agent": nullable,
                "final_report": nullable,
            },
            "required": PM_DECISION_FIELDS,
            "additionalProperties": false,
        }),
    }
}

/// Why one PM attempt could not be used.
#[derive(Debug, Clone, PartialEq)]
enum Failure {
    /// The call itself failed after transport retries (counted like invalid JSON).
    Call(String),
    Json(String),
    Schema(String),
    /// An unknown `target_agent` (the name, the error).
    Routing(String, String),
}

impl Failure {
    /// The line stored in `last_error` when this failure ends the round.
    fn describe(&self) -> String {
        match self {
            Failure::Call(e) => format!("PM call failed: {e}"),
            Failure::Json(e) => format!("PM output was not valid JSON: {e}"),
            Failure::Schema(e) => format!("PM decision invalid: {e}"),
            Failure::Routing(_, e) => format!("PM routing failed: {e}"),
        }
    }
}

/// Check one parsed PM answer: the PM config's output schema (if any), the PMDecision
/// structure and its conditional rules, the forced-finish rule, then the routing target.
fn check_decision(board: &Board, mode: Mode, value: &Value) -> Result<PmDecision, Failure> {
    if let Some(pm) = &board.pm {
        llm::validate(value, &Value::Object(pm.output_schema.clone()))
            .map_err(|e| Failure::Schema(format!("does not match the PM output schema: {e}")))?;
    }
    let Value::Object(obj) = value else {
        return Err(Failure::Schema(format!(
            "expected a JSON object, got {}",
            kind_of(value)
        )));
    };
    // Keys outside PMDecision are dropped rather than refused: the PM config's own schema
    // decides whether extra keys matter, and a retry for a stray key wastes a call.
    let mut obj: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| PM_DECISION_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if obj.get("analysis").is_some_and(Value::is_null) {
        obj.remove("analysis");
    }
    let decision: PmDecision =
        serde_path_to_error::deserialize(Value::Object(obj)).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.inner().to_string();
            Failure::Schema(if path == "." {
                inner
            } else {
                format!("{path}: {inner}")
            })
        })?;
    decision
        .validate()
        .map_err(|e| Failure::Schema(e.to_string()))?;
    if decision.next_action == NextAction::CallAgent {
        if mode == Mode::ForcedFinish {
            return Err(Failure::Schema(
                "next_action CALL_AGENT is not allowed in forced_finish mode: the meeting must end now, \
                 so reply with next_action \"FINISH\" and a final_report"
                    .into(),
            ));
        }
        let target = decision.target_agent.as_deref().unwrap_or_default();
        if !board.participants.iter().any(|p| p == target) {
            return Err(Failure::Routing(
                target.to_string(),
                format!(
                    "target_agent {target:?} is not a participant (allowed: {})",
                    board.participants.join(", ")
                ),
            ));
        }
    }
    Ok(decision)
}

/// The `pm_round_failed` control event: the round's retries are used up.
fn push_round_failed(board: &mut Board, clock: &dyn Clock, error: &str) {
    let mut ev = events::message(
        "pm_round_failed",
        PM_CALLER,
        "runtime",
        "meeting",
        KIND_CONTROL,
    );
    ev.error = Some(error.to_string());
    events::push(board, clock, ev);
}

/// Why the meeting is closing, for `process_note` on the forced path.
fn forced_reason(board: &Board) -> String {
    if board.status == Status::Finishing {
        match &board.last_error {
            Some(e) => format!("{e}; the meeting was closed early."),
            None => "The meeting was closed early before full convergence.".into(),
        }
    } else {
        format!(
            "Meeting stopped after reaching max loop limit ({}/{}) before full convergence.",
            board.loop_count, board.max_loops
        )
    }
}

/// Run one PM round on `board` (SPEC §5) and return the board with its outcome applied:
/// `pending_call` (CALL_AGENT), `finishing` + `final_report` (FINISH), `finishing` +
/// `last_error` (round failed), or `forced_stop` with or without a report (forced_finish mode).
/// Never changes `loop_count`. A fatal provider error is `Error::Runtime`.
pub fn pm_step(
    mut board: Board,
    client: &mut Client,
    opts: &Options,
    clock: &dyn Clock,
) -> Result<Board> {
    check_turn(&board)?;
    let mode = mode(&board);
    if mode == Mode::ForcedFinish && board.status == Status::Running {
        let mut ev = events::message("forced_finish", PM_CALLER, "runtime", "pm", KIND_CONTROL);
        ev.message = Some(format!(
            "max loops reached ({}/{})",
            board.loop_count, board.max_loops
        ));
        events::push(&mut board, clock, ev);
    }
    let system = pm_system_prompt(&board)?;
    let mut messages = vec![Message::user(render_pm_user(&board)?)];
    let forced_note = match mode {
        Mode::ForcedFinish => "The meeting is in forced_finish mode: next_action must be \"FINISH\" with a final_report.",
        Mode::Normal => "",
    };

    let mut json_retries = 1u32;
    let mut schema_retries = 1u32;
    let mut routing_errors = 0u32;
    let mut attempt = 0u32;
    let outcome: Result<PmDecision, Failure> = loop {
        attempt += 1;
        let req = Request {
            caller: PM_CALLER.into(),
            system: system.clone(),
            messages: messages.clone(),
            expect: Some(pm_expected_json()),
        };
        let res = client.call(&req, opts);
        events::record_llm_call(
            &mut board,
            clock,
            client.calls(),
            PM_CALLER,
            attempt,
            res.as_ref(),
        );
        let (failure, reply_text) = match res {
            // Provider errors already name the provider (`openai: HTTP 401: ...`).
            Err(LlmError::Fatal(m)) => return Err(Error::Runtime(m)),
            Err(e @ LlmError::Transient { .. }) => (Failure::Call(e.to_string()), None),
            Ok(reply) => {
                let checked = match reply.json {
                    Some(Ok(ref v)) => check_decision(&board, mode, v),
                    Some(Err(ref e)) => Err(Failure::Json(e.clone())),
                    None => Err(Failure::Json("the reply carried no JSON object".into())),
                };
                match checked {
                    Ok(d) => break Ok(d),
                    Err(f) => (f, Some(reply.text)),
                }
            }
        };
        let may_retry = match &failure {
            Failure::Call(_) | Failure::Json(_) => {
                routing_errors = 0;
                std::mem::replace(&mut json_retries, 0) > 0
            }
            Failure::Schema(_) => {
                routing_errors = 0;
                std::mem::replace(&mut schema_retries, 0) > 0
            }
            Failure::Routing(..) => {
                routing_errors += 1;
                routing_errors < 2
            }
        };
        match &failure {
            Failure::Call(_) => {}
            Failure::Json(e) | Failure::Schema(e) => {
                let mut ev = events::message(
                    "pm_invalid_output",
                    PM_CALLER,
                    "runtime",
                    "pm",
                    KIND_FEEDBACK,
                );
                ev.attempt = Some(attempt);
                ev.error = Some(e.clone());
                events::push(&mut board, clock, ev);
            }
            Failure::Routing(target, e) => {
                let mut ev =
                    events::message("pm_routing_error", PM_CALLER, "pm", target, KIND_FEEDBACK);
                ev.attempt = Some(attempt);
                ev.error = Some(e.clone());
                events::push(&mut board, clock, ev);
            }
        }
        if !may_retry {
            break Err(failure);
        }
        // A failed call has no reply to correct: the same request is simply sent again.
        if let Some(text) = reply_text {
            let error = match &failure {
                Failure::Json(e) => format!("it was not valid JSON ({e})"),
                Failure::Schema(e) | Failure::Routing(_, e) | Failure::Call(e) => e.clone(),
            };
            messages.push(echo_reply(text));
            // In forced_finish mode no target is allowed, so no names are offered.
            let allowed: &[String] = match mode {
                Mode::Normal => &board.participants,
                Mode::ForcedFinish => &[],
            };
            messages.push(Message::user(retry_message(
                &error,
                "target_agent",
                allowed,
                forced_note,
            )?));
        }
    };

    match (mode, outcome) {
        (Mode::Normal, Ok(d)) => {
            board.last_error = None;
            match d.next_action {
                NextAction::CallAgent => {
                    let target = d.target_agent.unwrap_or_default();
                    let prompt = d.prompt_for_agent.unwrap_or_default();
                    let mut ev =
                        events::message("pm_decision", PM_CALLER, "pm", &target, KIND_TASK);
                    ev.message = Some(prompt.clone());
                    events::push(&mut board, clock, ev);
                    board.pending_call = Some(PendingCall {
                        target_agent: target,
                        prompt,
                        analysis: d.analysis,
                    });
                }
                NextAction::Finish => {
                    push_finish_decision(&mut board, clock);
                    board.status = Status::Finishing;
                    board.final_report = d.final_report;
                }
            }
        }
        (Mode::Normal, Err(f)) => {
            let error = f.describe();
            push_round_failed(&mut board, clock, &error);
            let mut ev = events::message("forced_finish", PM_CALLER, "runtime", "pm", KIND_CONTROL);
            ev.message = Some(format!("PM round failed: {error}"));
            events::push(&mut board, clock, ev);
            board.status = Status::Finishing;
            board.last_error = Some(error);
        }
        (Mode::ForcedFinish, Ok(d)) => {
            push_finish_decision(&mut board, clock);
            board.process_note = Some(forced_reason(&board));
            board.status = Status::ForcedStop;
            board.final_report = d.final_report;
        }
        (Mode::ForcedFinish, Err(f)) => {
            let error = f.describe();
            push_round_failed(&mut board, clock, &error);
            let reason = forced_reason(&board);
            board.process_note = Some(format!(
                "{reason} The PM's closing answer was unusable ({error}): no valid PM report, fallback report generated."
            ));
            board.status = Status::ForcedStop;
            board.final_report = None;
            board.last_error = Some(error);
        }
    }
    Ok(board)
}

fn push_finish_decision(board: &mut Board, clock: &dyn Clock) {
    let mut ev = events::message("pm_decision", PM_CALLER, "pm", "meeting", KIND_CONTROL);
    ev.message = Some("FINISH".into());
    events::push(board, clock, ev);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_counts_characters() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "ab…");
        assert_eq!(cut("是否可以吗", 4).chars().count(), 4);
    }

    #[test]
    fn templates_compile() {
        for name in ["pm_system.j2", "pm_user.j2", "agent_user.j2", "retry.j2"] {
            env().unwrap().get_template(name).unwrap();
        }
        let s = retry_message("bad", "target_agent", &["a".into(), "b".into()], "").unwrap();
        assert!(s.contains("bad") && s.contains("a, b"), "{s}");
    }

    #[test]
    fn runaway_replies_are_cut_when_echoed() {
        let short = "{\"a\": 1".to_string();
        assert_eq!(echo_reply(short.clone()).content, short);
        let long = "é".repeat(ECHO_CHARS + 10);
        let m = echo_reply(long).content;
        assert!(m.starts_with(&"é".repeat(ECHO_CHARS)), "keeps the head");
        assert!(
            m.ends_with("[… reply cut here: 10 more characters not shown]"),
            "{}",
            &m[m.len() - 80..]
        );
    }
}
