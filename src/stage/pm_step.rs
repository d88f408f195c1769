//! The `pm-step` stage (DESIGN.md#pm-round): one PM round — build the bounded PM input, ask the
//! PM for a decision through the ask loop (DESIGN.md#ask-loop), and apply the outcome to the
//! board.

use serde_json::{json, Map, Value};

use crate::ask::{ask, Asked, Asker};
use crate::budget;
use crate::circles::{self, GOING_IN_CIRCLES};
use crate::error::Result;
use crate::events::{self, Clock};
use crate::io::kind_of;
use crate::llm::{default_max_tokens, Client, ExpectedJson, Message, Options, Request, CUT_OFF};
use crate::model::{
    AskedQuestion, Board, NextAction, PendingCall, PmDecision, ProcessKind, Status,
    PM_DECISION_EXTRA_FIELDS, PM_DECISION_FIELDS,
};
use crate::model::{EventType, MessageKind, PM_CALLER};
use crate::prompts::{
    cut_list, decision_packet, meeting_brief, meeting_system, render, retry_message, whiteboard,
    Reader, ITEM_CHARS,
};
use crate::schema;
use crate::stage::Stage;
use crate::text::cut;
use crate::whiteboard::{
    apply_answers, note_caller, note_process, numbered_open_questions, summary_for_prompt,
    sync_questions, RECENT_ERRORS_CAP, SUMMARY_MAX_CHARS,
};

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

/// Refuse a board that is not `pm-step`'s turn, naming the stage that should run (exit 2).
pub fn check_turn(board: &Board) -> Result<()> {
    board.expect_stage(Stage::PmStep)?;
    // A hand-edited board can carry a PM config the loader would have refused.
    if let Some(cfg) = &board.pm {
        crate::loader::validate_agent(cfg, crate::loader::AgentKind::Pm)
            .map_err(|e| e.under("pm").in_file(""))?;
    }
    Ok(())
}

/// The `pm-step` program on a board: check it is the PM's turn, then ask the PM with its own
/// provider settings (its config's metadata); `llm` holds the flags and config defaults.
pub fn run(board: Board, llm: &crate::llm::LlmArgs) -> Result<Board> {
    check_turn(&board)?;
    let metadata = board.pm.as_ref().map(|p| p.metadata.clone());
    let caller = (PM_CALLER.to_string(), metadata.unwrap_or_default());
    super::run_llm(board, llm, caller, pm_step)
}

/// Everything the PM sees (DESIGN.md#pm-round), and nothing else: never the event log or raw agent
/// outputs; every list item cut to 500 characters so the prompt stays flat over many loops.
pub fn pm_input(board: &Board) -> Value {
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
    let skip = board.recent_errors.len().saturating_sub(RECENT_ERRORS_CAP);
    let recent: Vec<String> = board.recent_errors[skip..]
        .iter()
        .map(|s| cut(s, ITEM_CHARS))
        .collect();
    json!({
        "topic": board.topic.trim(),
        "decision_packet": decision_packet(board),
        "summary": cut(&summary_for_prompt(board), SUMMARY_MAX_CHARS),
        "key_points": cut_list(&board.key_points),
        "open_questions": cut_list(&numbered_open_questions(board)),
        "decisions": cut_list(&board.decisions),
        "risks": cut_list(&board.risks),
        "recent_errors": recent,
        "participants": participants,
        "mode": mode(board).as_str(),
        "remaining_loops": board.max_loops.saturating_sub(board.loop_count),
        "last_error": board.last_error.as_deref().map(|e| cut(e, ITEM_CHARS)),
        "stalled": circles::stalled(board),
    })
}

/// The PM's system message: the meeting's system message, the same bytes as every agent's
/// (DESIGN.md#prompt-layout), so every call of the meeting shares one prefix. The PM's role
/// and rules are in its own part of the user message ([`pm_user_message`]).
pub fn pm_system_prompt(_board: &Board, _schema_in_prompt: bool) -> Result<String> {
    meeting_system()
}

/// The PM's user message: the meeting block (topic, decision, documents: the same bytes in
/// every call of the meeting, the agents' included, marked as the stable prefix), the
/// whiteboard, then the PM's own part: its role (the PM config's `system_prompt`, else the
/// built-in one), the participants, the rules and the reply field guide — left out when the
/// provider appends the schema itself (`schema_in_prompt`), so the format is said once — the
/// recent errors and the mode.
pub fn pm_user_message(board: &Board, schema_in_prompt: bool) -> Result<Message> {
    let mut input = pm_input(board);
    let role = match &board.pm {
        Some(pm) => pm.system_prompt.trim_end().to_string(),
        None => render("pm_system.j2", &json!({}))?.trim_end().to_string(),
    };
    input["role"] = json!(role);
    input["schema_in_prompt"] = json!(schema_in_prompt);
    let offer = Offered::of(board);
    input["offer_answered"] = json!(offer.answered_questions);
    input["offer_assessments"] = json!(offer.option_assessments);
    input["max_calls"] = json!(offer.fan_out);
    Ok(Message::user_with_stable_prefix(
        meeting_brief(board)?,
        &(whiteboard(board, Reader::Pm)? + &render("pm_user.j2", &input)?),
    ))
}

/// The PM's user message as text, with native structured output (see [`pm_user_message`]).
pub fn render_pm_user(board: &Board) -> Result<String> {
    Ok(pm_user_message(board, false)?.content)
}

/// The optional PMDecision fields the PM is offered, in its prompt and its schema: answered
/// questions while the whiteboard has open ones, the options × dimensions assessment when the
/// meeting file names both. An answer may carry either anyway; it is used.
#[derive(Debug, Clone, Copy)]
struct Offered {
    answered_questions: bool,
    option_assessments: bool,
    /// Most calls a CALL_AGENTS may make (DESIGN.md#fan-out), 0 when it is not offered: the
    /// board's `max_parallel`, the loops left and the participants who can answer
    /// concurrently (people answer one at a time) all allow 2 or more.
    fan_out: u32,
}

impl Offered {
    fn of(board: &Board) -> Offered {
        let dp = &board.meeting_input.decision_packet;
        let most = if !pm_config_allows_fan_out(board) {
            0
        } else {
            board.max_parallel
        }
        .min(crate::model::MAX_PARALLEL)
        .min(board.max_loops.saturating_sub(board.loop_count))
        .min(fan_out_targets(board).len() as u32);
        Offered {
            answered_questions: !board.open_questions.is_empty(),
            option_assessments: !dp.options.is_empty() && !dp.evaluation_dimensions.is_empty(),
            fan_out: if most >= 2 && mode(board) == Mode::Normal {
                most
            } else {
                0
            },
        }
    }
}

/// Whether the PM config (when there is one) lets a CALL_AGENTS answer through its own
/// `output_schema`: `next_action` allows it, and `calls` is not an unknown key of a closed
/// object. A config written before fan-outs keeps its meeting one call at a time.
fn pm_config_allows_fan_out(board: &Board) -> bool {
    let Some(pm) = &board.pm else { return true };
    let schema = &pm.output_schema;
    let props = schema.get("properties").and_then(Value::as_object);
    let action_ok = props
        .and_then(|p| p.get("next_action"))
        .and_then(|a| a.get("enum"))
        .and_then(Value::as_array)
        .is_none_or(|e| e.iter().any(|v| v == "CALL_AGENTS"));
    let calls_ok = schema.get("additionalProperties") != Some(&Value::Bool(false))
        || props.is_some_and(|p| p.contains_key("calls"));
    action_ok && calls_ok
}

/// The participants a fan-out may ask: the models (a person answers one call at a time, at
/// the terminal; DESIGN.md#fan-out).
fn fan_out_targets(board: &Board) -> Vec<&String> {
    board
        .participants
        .iter()
        .filter(|p| {
            board
                .agents
                .get(*p)
                .is_none_or(|a| a.kind != crate::model::ParticipantKind::Human)
        })
        .collect()
}

/// The JSON the PM must return, sent to providers with native structured output: the
/// meeting's own (DESIGN.md#structured-output) — `target_agent` one of the participants or
/// null, and in forced-finish mode `next_action` only `FINISH` with no target or question — so
/// a schema-constrained server cannot mis-route. Hand-written rather than generated by
/// schemars so that it is "strict"-friendly (OpenAI strict mode wants every property required,
/// nullable ones typed `[T, "null"]`, no extra properties). The answer itself is still checked
/// by `check_decision`, which also accepts omitted nullable fields.
pub(crate) fn pm_expected_json(board: &Board, mode: Mode) -> ExpectedJson {
    let nullable = json!({"type": ["string", "null"]});
    let (actions, target, prompt, report) = match mode {
        // `anyOf` rather than `"type": ["string", "null"]` with the enum: grammar-constrained
        // local servers (llama.cpp's schema-to-grammar) read a type list before an enum and
        // would let any string through; OpenAI strict mode takes both forms.
        Mode::Normal => (
            {
                let fan_out = Offered::of(board).fan_out > 0;
                let names = NextAction::NAMES.iter();
                json!(names
                    .filter(|a| fan_out || **a != "CALL_AGENTS")
                    .collect::<Vec<_>>())
            },
            json!({"anyOf": [
                {"type": "string", "enum": board.participants},
                {"type": "null"},
            ]}),
            nullable.clone(),
            nullable,
        ),
        // The closing round must write the report: a string, never null.
        Mode::ForcedFinish => (
            json!(["FINISH"]),
            json!({"type": "null"}),
            json!({"type": "null"}),
            json!({"type": "string"}),
        ),
    };
    let object = |props: Value| {
        let required: Vec<&String> = props.as_object().map_or(Vec::new(), |m| m.keys().collect());
        json!({"type": "object", "properties": props, "required": required,
            "additionalProperties": false})
    };
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let string = json!({"type": "string"});
    let answered = json!({"type": "array", "items": object(json!({
        "question": string, "answer": string, "by": strings}))});
    let decision = json!({"anyOf": [object(json!({
        "choice": string,
        "confidence": {"type": "string", "enum": ["low", "medium", "high"]},
        "revisit_if": string})), {"type": "null"}]});
    let assessments = json!({"type": "array", "items": object(json!({
        "option": string, "dimension": string, "assessment": string}))});
    let calls = json!({"anyOf": [{"type": "array", "items": object(json!({
        "target_agent": {"type": "string", "enum": fan_out_targets(board)},
        "prompt_for_agent": string}))}, {"type": "null"}]});
    let mut properties = json!({
        "analysis": {"type": "string"},
        "next_action": {"type": "string", "enum": actions},
        "target_agent": target,
        "prompt_for_agent": prompt,
        "final_report": report,
    });
    // Offered only where they apply (DESIGN.md#prompt-layout): every field is paid for on
    // every call, and a field with nothing to say invites filler.
    let offer = Offered::of(board);
    let extra = [
        ("calls", calls, offer.fan_out > 0 && mode == Mode::Normal),
        ("answered_questions", answered, offer.answered_questions),
        ("decision", decision, true),
        ("option_assessments", assessments, offer.option_assessments),
    ];
    for (name, schema, offered) in extra {
        if offered {
            properties[name] = schema;
        }
    }
    let required: Vec<String> = properties
        .as_object()
        .map_or(Vec::new(), |m| m.keys().cloned().collect());
    ExpectedJson {
        name: "pm_decision".into(),
        schema: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
    }
}

/// The `max_tokens` of a PM call when nothing set one: a closing round always writes the
/// whole report.
fn pm_max_tokens(mode: Mode) -> u32 {
    match mode {
        Mode::Normal => default_max_tokens::PM_STEP,
        Mode::ForcedFinish => default_max_tokens::PM_CLOSING,
    }
}

/// Why a PM answer cannot be used; each kind leaves its own event (DESIGN.md#pm-round).
#[derive(Debug, Clone, PartialEq)]
enum Invalid {
    Json(String),
    /// Not a valid decision: what the model is told, and the same in plain words.
    Schema(String, String),
    /// A target that cannot be asked: not a participant, or in a fan-out asked twice or a
    /// person (the name, the error, the same in plain words).
    Routing(String, String, String),
    /// A question that nearly repeats one already asked of the same participant.
    Repeat(AskedQuestion),
}

impl Invalid {
    /// The line stored in `last_error` when this answer ends the round.
    fn describe(&self) -> String {
        match self {
            Invalid::Json(e) if e.starts_with(CUT_OFF) => format!("PM output was {e}"),
            Invalid::Json(e) => format!("PM output was not valid JSON: {e}"),
            Invalid::Schema(e, _) => format!("PM decision invalid: {e}"),
            Invalid::Routing(_, e, _) => format!("PM routing failed: {e}"),
            Invalid::Repeat(a) => format!(
                "PM repeated its loop {} question to {}: {GOING_IN_CIRCLES}",
                a.loop_no, a.agent
            ),
        }
    }

    /// What the model is told when it is asked again.
    fn for_model(&self) -> String {
        match self {
            Invalid::Json(e) if e.starts_with(CUT_OFF) => format!("it was {e}"),
            Invalid::Json(e) => format!("it was not valid JSON ({e})"),
            Invalid::Schema(e, _) | Invalid::Routing(_, e, _) => e.clone(),
            Invalid::Repeat(a) => format!(
                "you asked {} nearly the same in loop {}: {:?}; the answer was: {:?}. Ask something new, or someone else, or FINISH",
                a.agent,
                a.loop_no,
                a.question,
                a.answer.as_deref().unwrap_or("(not answered yet)")
            ),
        }
    }

    /// The same for the report's reader (DESIGN.md#report: no instruction meant for a model).
    fn for_reader(&self) -> String {
        match self {
            Invalid::Json(e) if e.starts_with(CUT_OFF) => {
                "it was cut off at the token limit".into()
            }
            Invalid::Json(_) => "it was not valid JSON".into(),
            Invalid::Schema(_, plain) => {
                format!("it was not a valid decision: {plain}")
            }
            Invalid::Routing(_, _, plain) => format!("it addressed {plain}"),
            Invalid::Repeat(a) => format!(
                "it asked {} nearly what it had asked in loop {}",
                a.agent, a.loop_no
            ),
        }
    }
}

/// A decision-shape error whose model text is also fit for the reader.
fn schema_error(e: String) -> Invalid {
    let plain = cut(&e, 160);
    Invalid::Schema(e, plain)
}

/// The PM's side of the ask loop (DESIGN.md#ask-loop): the decision checks, the correction
/// offering the participants, and the `pm_invalid_output` / `pm_routing_error` events.
struct PmAsk<'a> {
    board: &'a mut Board,
    clock: &'a dyn Clock,
    mode: Mode,
    /// Tokens a normal round keeps for the closing round (0: none, or this is it).
    reserve: u64,
}

impl Asker for PmAsk<'_> {
    type Answer = PmDecision;
    type Invalid = Invalid;

    fn check(&mut self, json: Result<&Value, &str>) -> Result<PmDecision, Invalid> {
        let value = json.map_err(|e| Invalid::Json(e.to_string()))?;
        let d = check_decision(self.board, self.mode, value)?;
        let n = d.calls.len();
        if d.next_action == NextAction::CallAgents
            && !budget::fan_out_fits(self.board, self.reserve, n)
        {
            return Err(Invalid::Schema(
                format!("calls: the token budget has no room for {n} calls at once: ask fewer participants"),
                format!("its {n} calls at once did not fit the token budget"),
            ));
        }
        Ok(d)
    }

    fn correction(&self, invalid: &Invalid) -> Result<String> {
        let error = invalid.for_model();
        // In forced_finish mode no target is allowed, so no names are offered.
        let (allowed, note): (&[String], &str) = match self.mode {
            Mode::Normal => (&self.board.participants, ""),
            Mode::ForcedFinish => (
                &[],
                "The meeting is in forced_finish mode: next_action must be \"FINISH\" with a final_report.",
            ),
        };
        retry_message(&error, "target_agent", allowed, note)
    }

    fn ledger(&mut self) -> Option<(&mut Board, &dyn Clock)> {
        Some((&mut *self.board, self.clock))
    }

    fn refuse(&self, request: &Request, opts: &Options) -> Option<String> {
        budget::refuse(self.board, request, opts, self.reserve)
    }

    fn rejected(&mut self, attempt: u32, invalid: &Invalid, retried: bool) {
        if let Invalid::Repeat(a) = invalid {
            note_process(
                self.board,
                ProcessKind::Circles,
                format!(
                    "The PM asked {} nearly what it had asked in loop {}; {}.",
                    a.agent,
                    a.loop_no,
                    if retried {
                        "it was shown the earlier question and answer and asked again"
                    } else {
                        "it did so again after seeing the earlier answer"
                    }
                ),
            );
        } else if retried {
            note_process(
                self.board,
                ProcessKind::Retried,
                format!(
                    "The PM's answer was unusable ({}); it was asked again.",
                    invalid.for_reader()
                ),
            );
        }
        let mut ev = match invalid {
            Invalid::Json(e) | Invalid::Schema(e, _) => {
                let mut ev = events::message(
                    EventType::PmInvalidOutput,
                    PM_CALLER,
                    "runtime",
                    "pm",
                    MessageKind::Feedback,
                );
                ev.error = Some(e.clone());
                ev
            }
            Invalid::Repeat(a) => {
                let mut ev = events::message(
                    EventType::PmRepeatedQuestion,
                    PM_CALLER,
                    "pm",
                    &a.agent,
                    MessageKind::Feedback,
                );
                ev.error = Some(invalid.describe());
                ev
            }
            Invalid::Routing(target, e, _) => {
                let mut ev = events::message(
                    EventType::PmRoutingError,
                    PM_CALLER,
                    "pm",
                    target,
                    MessageKind::Feedback,
                );
                ev.error = Some(e.clone());
                ev
            }
        };
        ev.attempt = Some(attempt);
        events::push(self.board, self.clock, ev);
    }
}

/// Check one parsed PM answer: the PM config's output schema (if any), the PMDecision
/// structure and its conditional rules, the forced-finish rule, then the routing target.
fn check_decision(board: &Board, mode: Mode, value: &Value) -> Result<PmDecision, Invalid> {
    if let Some(pm) = &board.pm {
        // The meeting's schema has every field, null when unused (strict structured output
        // sends them all): a null field the config does not require is an absent one to it,
        // so a config that leaves out `decision` or types `calls` as an array still takes a
        // CALL_AGENT.
        let required = |k: &str| {
            let req = pm.output_schema.get("required").and_then(Value::as_array);
            req.is_some_and(|r| r.iter().any(|f| f == k))
        };
        let value = match value {
            Value::Object(obj) => Value::Object(
                obj.iter()
                    .filter(|(k, v)| !v.is_null() || required(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            other => other.clone(),
        };
        schema::validate(&value, &Value::Object(pm.output_schema.clone())).map_err(|e| {
            Invalid::Schema(
                format!("does not match the PM output schema: {e}"),
                "it did not match the PM's output schema".into(),
            )
        })?;
    }
    let Value::Object(obj) = value else {
        return Err(schema_error(format!(
            "expected a JSON object, got {}",
            kind_of(value)
        )));
    };
    // Keys outside PMDecision are dropped rather than refused: the PM config's own schema
    // decides whether extra keys matter, and a retry for a stray key wastes a call.
    // A null optional field is an absent one (structured output sends every field).
    let obj: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| {
            PM_DECISION_FIELDS.contains(&k.as_str())
                || PM_DECISION_EXTRA_FIELDS.contains(&k.as_str())
        })
        .filter(|(k, v)| !(v.is_null() && k.as_str() != "next_action"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let decision: PmDecision =
        serde_path_to_error::deserialize(Value::Object(obj)).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.inner().to_string();
            schema_error(if path == "." {
                inner
            } else {
                format!("{path}: {inner}")
            })
        })?;
    decision.validate().map_err(|e| {
        let plain = format!("its {} was missing or unusable", e.path);
        Invalid::Schema(e.to_string(), plain)
    })?;
    let action = match decision.next_action {
        NextAction::Finish => return Ok(decision),
        NextAction::CallAgent => "CALL_AGENT",
        NextAction::CallAgents => "CALL_AGENTS",
    };
    if mode == Mode::ForcedFinish {
        return Err(Invalid::Schema(
            format!(
                "next_action {action} is not allowed in forced_finish mode: the meeting must end now, \
                 so reply with next_action \"FINISH\" and a final_report"
            ),
            "it asked for another agent call when no loops were left".into(),
        ));
    }
    match decision.next_action {
        NextAction::CallAgents => check_fan_out(board, decision),
        _ => check_call(board, decision),
    }
}

/// A `target_agent` must name a participant (else a routing error).
fn check_target(board: &Board, at: &str, target: &str) -> Result<(), Invalid> {
    if board.participants.iter().any(|p| p == target) {
        return Ok(());
    }
    Err(Invalid::Routing(
        target.to_string(),
        format!(
            "{at} {target:?} is not a participant (allowed: {})",
            board.participants.join(", ")
        ),
        format!("{:?}, who is not a participant", cut(target, 60)),
    ))
}

/// The fan-out rules (DESIGN.md#fan-out): CALL_AGENTS only where it is offered, at most the
/// offered number of calls, each to a different participant who is a model, none repeating an
/// earlier question. One call is taken as the CALL_AGENT it is.
fn check_fan_out(board: &Board, mut d: PmDecision) -> Result<PmDecision, Invalid> {
    let most = Offered::of(board).fan_out;
    if most == 0 {
        return Err(Invalid::Schema(
            "next_action CALL_AGENTS is not available in this meeting: ask one participant with CALL_AGENT".into(),
            "it asked several participants at once, which this meeting does not allow".into(),
        ));
    }
    if d.calls.len() == 1 {
        let call = d.calls.remove(0);
        d.next_action = NextAction::CallAgent;
        d.target_agent = Some(call.target_agent);
        d.prompt_for_agent = Some(call.prompt_for_agent);
        return check_call(board, d);
    }
    if d.calls.len() > most as usize {
        return Err(Invalid::Schema(
            format!(
                "calls: {} calls, but at most {most} are allowed now (each call uses one loop)",
                d.calls.len()
            ),
            format!("it made {} calls where {most} were allowed", d.calls.len()),
        ));
    }
    for (i, call) in d.calls.iter().enumerate() {
        let at = format!("calls[{i}].target_agent");
        let target = call.target_agent.as_str();
        check_target(board, &at, target)?;
        if d.calls[..i].iter().any(|c| c.target_agent == target) {
            return Err(Invalid::Routing(
                target.to_string(),
                format!(
                    "{at} {target:?} is asked twice: each call goes to a different participant"
                ),
                format!("{target} twice in one round"),
            ));
        }
        if !fan_out_targets(board).iter().any(|p| *p == target) {
            return Err(Invalid::Routing(
                target.to_string(),
                format!("{at} {target:?} is a person, who answers one question at a time: ask them with CALL_AGENT"),
                format!("{target}, a person, among parallel calls"),
            ));
        }
        if let Some(earlier) = circles::earlier_ask(board, target, &call.prompt_for_agent) {
            return Err(Invalid::Repeat(earlier.clone()));
        }
    }
    Ok(d)
}

/// A CALL_AGENT's routing: a participant, and not a question asked of them before.
fn check_call(board: &Board, d: PmDecision) -> Result<PmDecision, Invalid> {
    let target = d.target_agent.as_deref().unwrap_or_default();
    check_target(board, "target_agent", target)?;
    let question = d.prompt_for_agent.as_deref().unwrap_or_default();
    if let Some(earlier) = circles::earlier_ask(board, target, question) {
        return Err(Invalid::Repeat(earlier.clone()));
    }
    Ok(d)
}

/// The `pm_round_failed` control event: the round's retries are used up.
fn push_round_failed(board: &mut Board, clock: &dyn Clock, error: &str) {
    let mut ev = events::message(
        EventType::PmRoundFailed,
        PM_CALLER,
        "runtime",
        "meeting",
        MessageKind::Control,
    );
    ev.error = Some(error.to_string());
    events::push(board, clock, ev);
}

/// Why the meeting is closing, for `process_note` on the forced path (for the reader: what
/// went wrong in the failed round is in the record's process entries).
fn forced_reason(board: &Board) -> String {
    if board.status == Status::Finishing {
        match &board.last_error {
            Some(e) if e.ends_with(GOING_IN_CIRCLES) => format!(
                "The PM kept asking what it had asked before: {GOING_IN_CIRCLES}, so it was closed early."
            ),
            Some(_) => "A PM round failed, so the meeting was closed early.".into(),
            None => "The meeting was closed early before full convergence.".into(),
        }
    } else {
        format!(
            "Meeting stopped after reaching max loop limit ({}/{}) before full convergence.",
            board.loop_count, board.max_loops
        )
    }
}

/// Run one PM round on `board` (DESIGN.md#pm-round) and return the board with its outcome applied:
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
    events::start_stage(&mut board);
    sync_questions(&mut board);
    if board.record.started_at.is_none() {
        board.record.started_at = Some(clock.now());
    }
    let mut mode = mode(&board);
    // Under a token budget: what an agent turn leaves for the closing round, and the Process
    // Note when the budget closes the meeting (DESIGN.md#token-budget).
    let mut reserve = 0;
    let mut budget_note = None;
    let mut over_budget = false;
    if mode == Mode::ForcedFinish && board.status == Status::Running {
        let why = format!(
            "max loops reached ({}/{})",
            board.loop_count, board.max_loops
        );
        push_forced_finish(&mut board, clock, why);
    } else if mode == Mode::Normal && board.max_total_tokens.is_some() {
        match budget_look_ahead(&board, opts, client.schema_in_prompt())? {
            budget::NextRound::Go { reserve: r } => reserve = r,
            budget::NextRound::Stop(stop) => {
                push_forced_finish(&mut board, clock, stop.event_message());
                budget_note = Some(stop.process_note());
                // The PM's closing round, now: mode() reads `finishing` without a report.
                board.status = Status::Finishing;
                mode = Mode::ForcedFinish;
            }
        }
    }
    let request = pm_request(&board, mode, client.schema_in_prompt())?;
    let opts = &opts.or_max_tokens(pm_max_tokens(mode));
    let mut pm = PmAsk {
        board: &mut board,
        clock,
        mode,
        reserve,
    };
    let calls_before = client.calls();
    // `Err`: why the round failed, as `last_error` words it and for the reader.
    let mut circling = false;
    let outcome: Result<PmDecision, (String, String)> = match ask(client, opts, request, &mut pm)? {
        Asked::Answer(d) => Ok(d),
        Asked::Invalid(invalid) => {
            circling = matches!(invalid, Invalid::Repeat(_));
            Err((
                invalid.describe(),
                crate::ask::unusable_for_reader(&invalid.for_reader()),
            ))
        }
        Asked::Failed(e) => Err((
            format!("PM call failed: {e}"),
            crate::ask::failed_for_reader(&e),
        )),
        Asked::OverBudget(why) => {
            over_budget = true;
            Err((why.clone(), why))
        }
    };
    if client.calls() > calls_before {
        note_caller(&mut board, PM_CALLER, client, opts);
    }
    // Questions the PM marks answered: merge-board applies them after the agent's turn (the
    // agent sees the whiteboard the PM saw); a FINISH has no turn after it.
    if let Ok(d) = &outcome {
        if d.next_action != NextAction::Finish {
            board.record.pending_answers = d.answered_questions.clone();
        } else {
            apply_answers(&mut board, &d.answered_questions);
        }
    }
    let forced_reason = |board: &Board| budget_note.clone().unwrap_or_else(|| forced_reason(board));

    match (mode, outcome) {
        (Mode::Normal, Ok(d)) => {
            board.last_error = None;
            match d.next_action {
                NextAction::CallAgent => {
                    let target = d.target_agent.unwrap_or_default();
                    let prompt = d.prompt_for_agent.unwrap_or_default();
                    let mut ev = events::message(
                        EventType::PmDecision,
                        PM_CALLER,
                        "pm",
                        &target,
                        MessageKind::Task,
                    );
                    ev.message = Some(prompt.clone());
                    events::push(&mut board, clock, ev);
                    circles::record_ask(&mut board, &target, &prompt);
                    board.pending_call = Some(PendingCall {
                        target_agent: target,
                        prompt,
                        analysis: d.analysis,
                        reserve_tokens: board.max_total_tokens.map(|_| reserve),
                    });
                }
                NextAction::CallAgents => {
                    let n = d.calls.len();
                    let reserve_tokens = board
                        .max_total_tokens
                        .map(|_| budget::fan_out_reserve(&board, reserve, n));
                    for (i, call) in d.calls.into_iter().enumerate() {
                        // Call i of the fan-out counts loop L+i, as if the calls ran one by
                        // one (DESIGN.md#fan-out).
                        events::in_later_loop(&mut board, i as u32, |board| {
                            let mut ev = events::message(
                                EventType::PmDecision,
                                PM_CALLER,
                                "pm",
                                &call.target_agent,
                                MessageKind::Task,
                            );
                            ev.message = Some(call.prompt_for_agent.clone());
                            events::push(board, clock, ev);
                            circles::record_ask(board, &call.target_agent, &call.prompt_for_agent);
                        });
                        board.pending_calls.push(PendingCall {
                            target_agent: call.target_agent,
                            prompt: call.prompt_for_agent,
                            analysis: if i == 0 {
                                d.analysis.clone()
                            } else {
                                String::new()
                            },
                            reserve_tokens,
                        });
                    }
                }
                NextAction::Finish => {
                    push_finish_decision(&mut board, clock);
                    board.status = Status::Finishing;
                    keep_decision(&mut board, &d, clock);
                    board.final_report = d.final_report;
                }
            }
        }
        (Mode::Normal, Err((error, _))) if circling => {
            note_process(
                &mut board,
                ProcessKind::Circles,
                format!("The meeting was closed early: {GOING_IN_CIRCLES}."),
            );
            push_round_failed(&mut board, clock, &error);
            push_forced_finish(&mut board, clock, GOING_IN_CIRCLES.to_string());
            board.status = Status::Finishing;
            board.last_error = Some(error);
        }
        (Mode::Normal, Err((error, plain))) => {
            note_process(
                &mut board,
                ProcessKind::RoundFailed,
                format!("The PM's round failed: {plain}; the PM was given one closing round."),
            );
            push_round_failed(&mut board, clock, &error);
            push_forced_finish(&mut board, clock, format!("PM round failed: {error}"));
            board.status = Status::Finishing;
            board.last_error = Some(error);
        }
        (Mode::ForcedFinish, Ok(d)) => {
            push_finish_decision(&mut board, clock);
            board.process_note = Some(forced_reason(&board));
            board.status = Status::ForcedStop;
            keep_decision(&mut board, &d, clock);
            board.final_report = d.final_report;
        }
        (Mode::ForcedFinish, Err((error, plain))) => {
            push_round_failed(&mut board, clock, &error);
            board.record.closed_at = Some(clock.now());
            let reason = forced_reason(&board);
            board.process_note = Some(if over_budget {
                format!(
                    "{reason} The PM was not asked for its closing report ({plain}): no valid PM report, fallback report generated."
                )
            } else {
                format!(
                    "{reason} The PM's closing round failed: {plain}; no valid PM report, fallback report generated."
                )
            });
            board.status = Status::ForcedStop;
            board.final_report = None;
            board.last_error = Some(error);
        }
    }
    Ok(board)
}

/// Keep a FINISH's decision and option assessments (blank cells dropped) and the closing time.
fn keep_decision(board: &mut Board, d: &PmDecision, clock: &dyn Clock) {
    board.record.closed_at = Some(clock.now());
    board.record.decision = d.decision.clone().filter(|x| !x.choice.trim().is_empty());
    board.record.option_assessments = d
        .option_assessments
        .iter()
        .filter(|a| {
            !(a.option.trim().is_empty()
                || a.dimension.trim().is_empty()
                || a.assessment.trim().is_empty())
        })
        .take(OPTION_ASSESSMENTS_CAP)
        .cloned()
        .collect();
}

/// Most option assessments kept (options × dimensions of any real meeting fit).
const OPTION_ASSESSMENTS_CAP: usize = 60;

/// The PM's request in `mode` on this board.
fn pm_request(board: &Board, mode: Mode, schema_in_prompt: bool) -> Result<Request> {
    Ok(Request {
        caller: PM_CALLER.into(),
        system: pm_system_prompt(board, schema_in_prompt)?,
        messages: vec![pm_user_message(board, schema_in_prompt)?],
        expect: Some(pm_expected_json(board, mode)),
    })
}

/// The token budget's look-ahead for a normal round (DESIGN.md#token-budget): this round and
/// the agent turn it leads to, priced with the closing round's reserve.
fn budget_look_ahead(
    board: &Board,
    opts: &Options,
    schema_in_prompt: bool,
) -> Result<budget::NextRound> {
    let normal = opts.or_max_tokens(pm_max_tokens(Mode::Normal));
    let closing_opts = opts.or_max_tokens(pm_max_tokens(Mode::ForcedFinish));
    let mut closing = board.clone();
    closing.status = Status::Finishing;
    let pm_cost = budget::call_cost(&pm_request(board, Mode::Normal, schema_in_prompt)?, &normal);
    let closing_cost = budget::call_cost(
        &pm_request(&closing, Mode::ForcedFinish, schema_in_prompt)?,
        &closing_opts,
    );
    Ok(budget::next_round(
        board,
        pm_cost,
        closing_cost,
        closing_opts.max_tokens.unwrap_or(0),
    ))
}

/// The `forced_finish` control event: the meeting must close now, and why.
fn push_forced_finish(board: &mut Board, clock: &dyn Clock, why: String) {
    let mut ev = events::message(
        EventType::ForcedFinish,
        PM_CALLER,
        "runtime",
        "pm",
        MessageKind::Control,
    );
    ev.message = Some(why);
    events::push(board, clock, ev);
}

fn push_finish_decision(board: &mut Board, clock: &dyn Clock) {
    let mut ev = events::message(
        EventType::PmDecision,
        PM_CALLER,
        "pm",
        "meeting",
        MessageKind::Control,
    );
    ev.message = Some("FINISH".into());
    events::push(board, clock, ev);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema sent is the meeting's own: the participants (or null) as targets, and only
    /// FINISH with no target or question in forced-finish mode. OpenAI's strict conversion
    /// keeps the enums, and both forms compile as JSON Schema (Anthropic's tool input).
    #[test]
    fn the_schema_sent_names_the_participants_and_the_mode() {
        let mut board = crate::stage::fixtures::board(&["Which is cheaper?"]);
        let dp = &mut board.meeting_input.decision_packet;
        dp.options = vec!["A".into(), "B".into()];
        dp.evaluation_dimensions = vec!["Cost".into()];
        let normal = pm_expected_json(&board, Mode::Normal).schema;
        assert_eq!(
            normal["properties"]["target_agent"],
            json!({"anyOf": [{"type": "string", "enum": ["arch", "biz"]}, {"type": "null"}]})
        );
        assert_eq!(
            normal["properties"]["next_action"]["enum"],
            json!(["CALL_AGENT", "FINISH"])
        );
        let forced = pm_expected_json(&board, Mode::ForcedFinish).schema;
        assert_eq!(
            forced["properties"]["next_action"]["enum"],
            json!(["FINISH"])
        );
        assert_eq!(
            forced["properties"]["target_agent"],
            json!({"type": "null"})
        );
        assert_eq!(
            forced["properties"]["final_report"],
            json!({"type": "string"})
        );
        for schema in [normal, forced] {
            let strict = crate::llm::openai::to_strict(&schema).expect("strict-able");
            assert_eq!(
                strict["properties"]["next_action"]["enum"],
                schema["properties"]["next_action"]["enum"]
            );
            assert_eq!(
                strict["properties"]["target_agent"],
                schema["properties"]["target_agent"]
            );
            for s in [&schema, &strict] {
                let v = jsonschema::validator_for(s).unwrap();
                let finish = json!({"analysis": "a", "next_action": "FINISH", "target_agent": null,
                    "prompt_for_agent": null, "final_report": "r",
                    "answered_questions": [{"question": "Q1", "answer": "Yes.", "by": ["arch"]}],
                    "decision": {"choice": "B", "confidence": "high", "revisit_if": "x"},
                    "option_assessments": [{"option": "B", "dimension": "Cost", "assessment": "ok"}]});
                assert!(v.is_valid(&finish));
                let mut bad = finish.clone();
                bad["decision"]["confidence"] = json!("certain");
                assert!(!v.is_valid(&bad), "confidence is one of low, medium, high");
                let misrouted = json!({"analysis": "a", "next_action": "CALL_AGENT",
                    "target_agent": "...", "prompt_for_agent": "q", "final_report": null,
                    "answered_questions": [], "decision": null, "option_assessments": []});
                assert!(!v.is_valid(&misrouted));
            }
        }
    }

    /// A PM config closed to extra keys takes the null fields the meeting's own schema adds
    /// (`calls`, `decision`), as long as it does not require them; a null it requires as a
    /// string is still refused.
    #[test]
    fn a_closed_pm_config_takes_the_null_fields_the_meeting_adds() {
        let mut b = crate::stage::fixtures::board(&[]);
        let mut pm = crate::stage::fixtures::agent("pm");
        let maybe = json!({"type": ["string", "null"]});
        pm.output_schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"analysis": {"type": "string"},
                "next_action": {"type": "string", "enum": ["CALL_AGENT", "CALL_AGENTS", "FINISH"]},
                "target_agent": maybe, "prompt_for_agent": maybe, "final_report": maybe,
                "calls": {"type": "array", "items": {"type": "object"}}},
            "required": ["analysis", "next_action", "target_agent", "prompt_for_agent", "final_report"]})
        .as_object()
        .unwrap()
        .clone();
        b.pm = Some(pm);
        let mut answer = json!({"analysis": "a", "next_action": "CALL_AGENT",
            "target_agent": "arch", "prompt_for_agent": "What does the nightly run cost?",
            "final_report": null, "calls": null, "decision": null});
        assert!(check_decision(&b, Mode::Normal, &answer).is_ok());
        answer["analysis"] = Value::Null;
        assert!(check_decision(&b, Mode::Normal, &answer).is_err());
    }

    /// A fan-out is offered with 2 or more participants who are models, `max_parallel` of 2
    /// or more and 2 or more loops left; its schema stays strict-able and takes a CALL_AGENTS.
    #[test]
    fn call_agents_is_offered_where_it_can_run() {
        let mut board = crate::stage::fixtures::board(&[]);
        let offered = |b: &Board| Offered::of(b).fan_out;
        assert_eq!(offered(&board), 0, "max_parallel 1");
        board.max_parallel = 3;
        assert_eq!(offered(&board), 2, "two participants");
        board.loop_count = 5;
        assert_eq!(offered(&board), 0, "one loop left");
        board.loop_count = 0;
        let mut many = board.clone();
        (many.max_parallel, many.max_loops) = (50, 50);
        for i in 0..10 {
            let name = format!("a{i}");
            many.agents
                .insert(name.clone(), crate::stage::fixtures::agent(&name));
            many.participants.push(name);
        }
        assert_eq!(
            offered(&many),
            crate::model::MAX_PARALLEL,
            "a hand-edited max_parallel"
        );
        board.agents.get_mut("biz").unwrap().kind = crate::model::ParticipantKind::Human;
        assert_eq!(offered(&board), 0, "one model: biz is a person");
        board.agents.get_mut("biz").unwrap().kind = crate::model::ParticipantKind::Llm;
        let mut pm = crate::stage::fixtures::agent("pm");
        pm.output_schema = json!({"type": "object", "properties": {"next_action":
            {"type": "string", "enum": ["CALL_AGENT", "FINISH"]}}})
        .as_object()
        .unwrap()
        .clone();
        board.pm = Some(pm);
        assert_eq!(offered(&board), 0, "the PM config predates fan-outs");
        board.pm = None;
        let schema = pm_expected_json(&board, Mode::Normal).schema;
        let strict = crate::llm::openai::to_strict(&schema).expect("strict-able");
        let fan = json!({"analysis": "a", "next_action": "CALL_AGENTS", "target_agent": null,
            "prompt_for_agent": null, "final_report": null, "decision": null,
            "calls": [{"target_agent": "arch", "prompt_for_agent": "Cost?"},
                      {"target_agent": "biz", "prompt_for_agent": "Risk?"}]});
        for s in [&schema, &strict] {
            assert!(jsonschema::validator_for(s).unwrap().is_valid(&fan), "{s}");
        }
        let d = check_decision(&board, Mode::Normal, &fan).unwrap();
        assert_eq!(d.calls.len(), 2);
        assert!(
            pm_expected_json(&board, Mode::ForcedFinish).schema["properties"]
                .get("calls")
                .is_none()
        );
    }

    /// The optional fields are offered where they apply, in the schema and the rules alike.
    #[test]
    fn answered_questions_and_assessments_are_offered_where_they_apply() {
        let fields = |b: &Board| -> Vec<String> {
            let s = pm_expected_json(b, Mode::Normal).schema;
            let keys: Vec<String> = s["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            assert_eq!(
                s["required"],
                json!(keys),
                "strict: every property required"
            );
            keys
        };
        let bare = crate::stage::fixtures::board(&[]);
        assert_eq!(
            fields(&bare),
            [
                "analysis",
                "next_action",
                "target_agent",
                "prompt_for_agent",
                "final_report",
                "decision"
            ]
        );
        let text = render_pm_user(&bare).unwrap();
        assert!(!text.contains("answered_questions") && !text.contains("option_assessments"));
        assert!(text.contains("A FINISH adds decision."), "{text}");
        let mut full = crate::stage::fixtures::board(&["Which is cheaper?"]);
        full.meeting_input.decision_packet.options = vec!["A".into(), "B".into()];
        let dims_only = fields(&full);
        assert!(dims_only.contains(&"answered_questions".to_string()));
        assert!(
            !dims_only.contains(&"option_assessments".to_string()),
            "options need dimensions"
        );
        full.meeting_input.decision_packet.evaluation_dimensions = vec!["Cost".into()];
        assert!(fields(&full).contains(&"option_assessments".to_string()));
        let text = render_pm_user(&full).unwrap();
        assert!(
            text.contains("In answered_questions put") && text.contains("option_assessments (each")
        );
    }
}
