//! The `agent-turn` stage (docs/design/agent-turn.md#agent-turn): ask the specialist the PM chose through the
//! ask loop (docs/design/failure-policy.md#ask-loop), check its answer (its output schema, the AgentTurnResult
//! structure, the citations), and leave the outcome in `last_turns` for `merge-board`. A
//! `kind: human` agent is asked the same way, through a person instead of a model (`human`).

mod council;
pub mod fan_out;
pub mod human;
mod review;

pub use fan_out::{fan_out, is_fan_out, single_call};

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::io::kind_of;
use crate::llm::{
    default_max_tokens, Client, ExpectedJson, Facts, Message, NoJson, Options, Request,
};
use crate::meeting::ask::{ask, Asker};
use crate::meeting::events::{self, Clock};
use crate::meeting::prompts::{
    meeting_brief, meeting_system, render, retry_message, whiteboard, Reader,
};
use crate::meeting::whiteboard::{note_caller, note_process};
use crate::model::{
    AgentConfig, AgentTurnResult, Board, ContextDocument, LastTurn, ParticipantKind, PendingCall,
    TurnStatus, AGENT_TURN_FIELDS,
};
use crate::model::{Charge, FlowKind, ProcessKind};
use crate::schema;
use crate::stage::Stage;
use crate::text::{cut, verify_quote};

/// The `agent-turn` program on a board: check it is this stage's turn, then ask the agent the
/// PM chose with its own provider settings, or the person (`kind: human`, from
/// `human_answers` when given); each model's client comes from `clients`, except in a
/// fan-out, whose calls each write their own side files and so get a client of their own.
pub fn run(
    board: Board,
    clients: &mut crate::llm::Clients,
    human_answers: Option<&std::path::Path>,
    given: Option<human::Given>,
) -> Result<Board> {
    check_turn(&board)?;
    if is_fan_out(&board) {
        return fan_out(
            board,
            clients.args(),
            crate::meeting::events::clock_from_env().as_ref(),
        );
    }
    if human::is_human_turn(&board) {
        return human::turn(board, human_answers, given, clients.args());
    }
    let agent = single_call(&board).and_then(|c| board.agents.get(&c.target_agent));
    let caller = agent.map_or_else(Default::default, |a| (a.name.clone(), a.metadata.clone()));
    crate::stage::run_llm(board, clients, caller, agent_turn)
}

/// Refuse a board that is not `agent-turn`'s turn, naming the stage that should run (exit 2).
pub fn check_turn(board: &Board) -> Result<()> {
    // The guard also checks the board's invariants: one kind of call, each to a participant.
    board.expect_stage(Stage::AgentTurn)?;
    // A hand-edited board: no more calls than pm-step allows.
    let most = crate::model::MAX_PARALLEL as usize;
    if board.pending_calls.len() > most {
        return Err(Error::input(
            "",
            "pending_calls",
            format!(
                "{} calls; a fan-out has at most {most}",
                board.pending_calls.len()
            ),
        ));
    }
    for (i, call) in board.pending_calls.iter().enumerate() {
        let at = format!("pending_calls[{i}]");
        if !board.agents.contains_key(&call.target_agent) {
            let mut known: Vec<&str> = board.agents.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(Error::input(
                "",
                format!("{at}.target_agent"),
                format!(
                    "{:?} has no config in agents (known: {})",
                    call.target_agent,
                    known.join(", ")
                ),
            ));
        }
        // A hand-edited board can carry a config the loader would have refused; calling the
        // model with it would only waste the turn's attempts.
        let name = &call.target_agent;
        let agent = &board.agents[name];
        crate::loader::validate_agent(agent, crate::loader::AgentKind::Specialist)
            .map_err(|e| e.under(&format!("agents.{name}")).in_file(""))?;
        if is_fan_out(board) && agent.kind == ParticipantKind::Human {
            return Err(Error::input(
                "",
                format!("{at}.target_agent"),
                format!("{name:?} is a person, who cannot answer in a fan-out (pm-step never asks one there)"),
            ));
        }
        check_input(board, agent, call)?;
    }
    Ok(())
}

/// The runtime input must satisfy the agent's `input_schema` (a failure is the config's, exit 2).
fn check_input(board: &Board, agent: &AgentConfig, call: &PendingCall) -> Result<()> {
    let name = &agent.name;
    let input = agent_input(board, call);
    schema::validate(&input, &Value::Object(agent.input_schema.clone())).map_err(|e| {
        Error::input(
            "",
            format!("agents.{name}.input_schema"),
            format!("the runtime input {{prompt, meeting_summary, context_summary}} of agent {name} does not satisfy it: {e}"),
        )
    })
}

/// The whiteboard as the agent sees it (see [`crate::meeting::prompts::whiteboard`]).
pub fn meeting_summary(board: &Board) -> String {
    whiteboard(board, Reader::Agent)
        .map(|s| {
            s.trim()
                .trim_start_matches("# Whiteboard")
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// The runtime agent input `{prompt, meeting_summary, context_summary}` (docs/design/agent-turn.md#agent-turn), validated
/// against the agent's `input_schema` before the call.
pub fn agent_input(board: &Board, call: &PendingCall) -> Value {
    json!({
        "prompt": call.prompt,
        "meeting_summary": meeting_summary(board),
        "context_summary": board.context_bundle.summary,
    })
}

/// Every agent's system message: the meeting's, the same bytes as the PM's
/// (docs/design/prompts.md#prompt-layout). The agent's role and rules are in its own part of the user
/// message ([`agent_user_message`]).
pub fn agent_system_prompt(_schema_in_prompt: bool) -> Result<String> {
    meeting_system()
}

/// The agent's user message: the meeting's stable block (the same bytes in every call of the
/// meeting, marked as the stable prefix), the whiteboard, then this agent's own part: its role
/// prompt, the rules, the reply field guide (left out when the provider appends the schema
/// itself: `schema_in_prompt`) and the PM's question.
pub fn agent_user_message(
    board: &Board,
    call: &PendingCall,
    schema_in_prompt: bool,
) -> Result<Message> {
    let agent = board.agents.get(&call.target_agent);
    let rest = render(
        "agent_user.j2",
        &json!({
            "role_prompt": agent.map_or("", |a| a.system_prompt.trim()),
            "has_documents": board
                .context_bundle
                .readable_by(&call.target_agent)
                .next()
                .is_some(),
            // A holder of documents others do not read is told to say what only it knows
            // (docs/design/context.md#documents-only-some-participants-read).
            "holds_documents": !board
                .context_bundle
                .own_documents(&call.target_agent)
                .is_empty(),
            "schema_in_prompt": schema_in_prompt,
            "prompt": call.prompt,
        }),
    )?;
    Ok(Message::user_with_stable_prefix(
        meeting_brief(board, Some(&call.target_agent))?,
        &(whiteboard(board, Reader::Agent)? + &rest),
    ))
}

/// The agent's user message as text, with native structured output (see [`agent_user_message`]).
pub fn render_agent_user(board: &Board, call: &PendingCall) -> Result<String> {
    Ok(agent_user_message(board, call, false)?.content)
}

/// Why an agent's answer cannot be used: said to the model exactly (the retry's correction,
/// `last_turns[i].error`) and to the report's reader in plain words.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AnswerError {
    /// The reply has no JSON object (the parse error, or the cut-off message).
    NotJson(NoJson),
    /// It breaks the agent's own output schema, or the AgentTurnResult structure.
    Shape(String),
    /// A citation names a document that was not collected (index, id, the allowed ids).
    UnknownDocument(usize, String, String),
    /// A citation's source_path is not its document's (index, path, id, expected path).
    WrongPath(usize, String, String, String),
}

impl AnswerError {
    /// What the model is told (and `last_turns[i].error` keeps).
    pub(crate) fn for_model(&self) -> String {
        match self {
            AnswerError::NotJson(e) => format!("the reply was {}", e.what()),
            AnswerError::Shape(e) => e.clone(),
            AnswerError::UnknownDocument(i, id, allowed) => format!(
                "citations[{i}].document_id: {id:?} is not one of the collected documents (allowed: {allowed})"
            ),
            AnswerError::WrongPath(i, path, id, expected) => format!(
                "citations[{i}].source_path: {path:?} does not match document {id:?} (expected {expected:?})"
            ),
        }
    }

    /// What the report's reader is told (docs/design/report.md#report: no instruction meant for a model).
    pub(crate) fn for_reader(&self) -> String {
        match self {
            AnswerError::NotJson(e) => e.for_reader().into(),
            AnswerError::Shape(e) => {
                format!("it had the wrong structure: {}", cut(e, 160))
            }
            AnswerError::UnknownDocument(_, id, _) => {
                format!("it cited a document that was not collected, {id}")
            }
            AnswerError::WrongPath(_, path, id, _) => {
                format!("it cited {id} under another path, {path}")
            }
        }
    }

    fn is_citation(&self) -> bool {
        matches!(
            self,
            AnswerError::UnknownDocument(..) | AnswerError::WrongPath(..)
        )
    }
}

/// Check one parsed answer of `agent`: its `output_schema`, the AgentTurnResult structure
/// (keys outside it dropped, `agent_name` set by the runtime), and every citation against the
/// collected documents. Quotes are marked verified or not; only unknown ids and mismatched
/// paths fail.
pub(crate) fn check_answer(
    board: &Board,
    agent: &AgentConfig,
    value: &Value,
) -> std::result::Result<AgentTurnResult, AnswerError> {
    schema::validate(value, &Value::Object(agent.output_schema.clone()))
        .map_err(|e| AnswerError::Shape(format!("does not match the output schema: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(AnswerError::Shape(format!(
            "expected a JSON object, got {}",
            kind_of(value)
        )));
    };
    let obj: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| AGENT_TURN_FIELDS.contains(&k.as_str()) && k.as_str() != "agent_name")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut result: AgentTurnResult =
        crate::schema::shaped(Value::Object(obj)).map_err(AnswerError::Shape)?;
    if result.response.trim().is_empty() {
        return Err(AnswerError::Shape("response: must not be empty".into()));
    }
    // A placeholder (`[PM]`, `N/A`, `...`) with nothing in any list is no answer: counting it
    // usable would turn a meeting nobody answered into a report (docs/design/agent-turn.md#agent-turn).
    let words = result
        .response
        .split_whitespace()
        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2)
        .count();
    let nothing_listed = result.key_points.is_empty()
        && result.risks.is_empty()
        && result.recommendations.is_empty();
    if words < 2 && nothing_listed {
        return Err(AnswerError::Shape(format!(
            "response: {:?} answers nothing and every list is empty: answer the question in a sentence",
            crate::text::cut(result.response.trim(), 40)
        )));
    }
    // Findings, risks and the questions among them must be content, by the PM's own rule
    // (docs/design/pm-round.md#content); an option named as written is content, however
    // short ("Vue", refused as a placeholder in a live run).
    let options = &board.meeting_input.decision_packet.options;
    let an_option = |item: &str| {
        let item = item.trim().trim_end_matches('.');
        options.iter().any(|o| o.trim().eq_ignore_ascii_case(item))
    };
    for (field, items) in [
        ("key_points", &result.key_points),
        ("risks", &result.risks),
        ("recommendations", &result.recommendations),
    ] {
        for (i, item) in items.iter().enumerate() {
            if an_option(item) {
                continue;
            }
            if let Some(why) = crate::model::not_content(item, &board.participants) {
                return Err(AnswerError::Shape(format!("{field}[{i}]: {why}")));
            }
        }
    }
    result.agent_name = agent.name.clone();
    // Only what it read: a document some others read is not its to cite
    // (docs/design/context.md#documents-only-some-participants-read).
    let docs: Vec<ContextDocument> = board
        .context_bundle
        .readable_by(&agent.name)
        .cloned()
        .collect();
    let docs = &docs;
    for (i, c) in result.citations.iter_mut().enumerate() {
        let Some(doc) = docs.iter().find(|d| d.document_id == c.document_id) else {
            return Err(AnswerError::UnknownDocument(
                i,
                c.document_id.clone(),
                allowed_ids(docs),
            ));
        };
        if c.source_path != doc.source_path {
            return Err(AnswerError::WrongPath(
                i,
                c.source_path.clone(),
                doc.document_id.clone(),
                doc.source_path.clone(),
            ));
        }
        c.verified = Some(verify_quote(&doc.excerpt, &c.quote));
    }
    Ok(result)
}

fn allowed_ids(docs: &[ContextDocument]) -> String {
    if docs.is_empty() {
        "none: no documents were collected, so citations must be an empty list".into()
    } else {
        docs.iter()
            .map(|d| d.document_id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Most items of each list an agent's reply may hold, as sent in its schema where its config
/// sets no bound (docs/design/prompts.md#structured-output).
const AGENT_LIST_MAX: usize = 8;

/// The JSON the agent must return: its own `output_schema`, with `citations[].document_id` and
/// `citations[].source_path` kept to the collected documents' values when there are any, and
/// `citations` kept empty (its item shape left out) when there are none
/// (docs/design/prompts.md#structured-output), so a schema-constrained server cannot invent a
/// source. The answer is still checked against the
/// agent's own schema and the documents (`check_answer`).
pub(crate) fn agent_expected_json(agent: &AgentConfig, docs: &[ContextDocument]) -> ExpectedJson {
    let mut schema = Value::Object(agent.output_schema.clone());
    // Every list bounded where the config leaves it open, so a grammar-constrained small
    // model cannot run on inside one to max_tokens (seen with SmolLM2-135M: a `risks` list
    // repeated until the reply was cut off). A bound for decoding, not a rule: the answer
    // is checked against the config's own schema, and the whiteboard keeps its own caps.
    for list in ["key_points", "risks", "recommendations", "citations"] {
        let open = schema
            .pointer_mut(&format!("/properties/{list}"))
            .and_then(Value::as_object_mut)
            .filter(|l| l.get("type") == Some(&json!("array")) && !l.contains_key("maxItems"));
        if let Some(l) = open {
            l.insert("maxItems".into(), json!(AGENT_LIST_MAX));
        }
    }
    if docs.is_empty() {
        let citations = schema
            .pointer_mut("/properties/citations")
            .and_then(Value::as_object_mut)
            .filter(|c| c.get("type") == Some(&json!("array")));
        if let Some(c) = citations {
            c.extend(crate::meeting::prompts::no_citations());
        }
    } else {
        let ids: Vec<&str> = docs.iter().map(|d| d.document_id.as_str()).collect();
        let paths = crate::model::source_paths(docs);
        let root = schema.clone();
        if let Some(item) = citation_item_schema(&mut schema, &root) {
            restrict_to(item, "document_id", &ids);
            restrict_to(item, "source_path", &paths);
            // What the quote backs (docs/design/whiteboard.md#findings-and-evidence): offered even when the
            // agent's own schema predates it, so a strict server lets it through.
            if let Some(props) = item.get_mut("properties").and_then(Value::as_object_mut) {
                props
                    .entry("supports")
                    .or_insert_with(|| json!({"type": "string"}));
            }
        }
    }
    ExpectedJson {
        name: "agent_turn_result".into(),
        schema,
    }
}

/// The object schema of one citation inside `schema` (`properties.citations.items`, through
/// one local `$ref` when the items are a reference).
fn citation_item_schema<'a>(schema: &'a mut Value, root: &Value) -> Option<&'a mut Value> {
    let items = schema.pointer("/properties/citations/items")?;
    let pointer = match items.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let target = r.strip_prefix('#')?.to_string();
            root.pointer(&target)?;
            target
        }
        None => "/properties/citations/items".to_string(),
    };
    schema.pointer_mut(&pointer)
}

/// Give the string property `field` of an object schema an `enum` of `values` (kept to the
/// values it already allowed when it has an enum of its own and they overlap).
fn restrict_to(object: &mut Value, field: &str, values: &[&str]) {
    let Some(prop) = object
        .get_mut("properties")
        .and_then(|p| p.get_mut(field))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let mut allowed: Vec<Value> = Vec::new();
    for v in values {
        let v = json!(v);
        if !allowed.contains(&v) {
            allowed.push(v);
        }
    }
    if let Some(Value::Array(own)) = prop.get("enum") {
        allowed.retain(|v| own.contains(v));
        if allowed.is_empty() {
            return;
        }
    }
    prop.insert("enum".into(), Value::Array(allowed));
}

/// The agent's side of the ask loop (docs/design/failure-policy.md#ask-loop): its answer checks, the correction
/// (offering the document ids after a citation error), and the `agent_retry` event.
struct TurnAsk<'a> {
    board: &'a mut Board,
    clock: &'a dyn Clock,
    agent: &'a AgentConfig,
    /// What to leave for the PM's closing round (the pending call's `reserve`).
    reserve: Charge,
}

impl TurnAsk<'_> {
    fn is_human(&self) -> bool {
        self.agent.kind == ParticipantKind::Human
    }
}

impl Asker for TurnAsk<'_> {
    type Answer = AgentTurnResult;
    type Invalid = AnswerError;

    fn check(&mut self, json: Result<&Value, &NoJson>) -> Result<AgentTurnResult, AnswerError> {
        let value = json.map_err(|e| AnswerError::NotJson(e.clone()))?;
        check_answer(self.board, self.agent, value)
    }

    fn correction(&self, error: &AnswerError) -> Result<String> {
        let ids: Vec<String> = if error.is_citation() {
            let reader = &self.agent.name;
            let docs = self.board.context_bundle.readable_by(reader);
            docs.map(|d| d.document_id.clone()).collect()
        } else {
            Vec::new()
        };
        retry_message(&error.for_model(), "document_id", &ids, "")
    }

    fn ledger(&mut self) -> Option<(&mut Board, &dyn Clock)> {
        Some((&mut *self.board, self.clock))
    }

    fn refuse(&self, request: &Request, opts: &Options) -> Option<String> {
        // A person's answer costs no tokens.
        if self.is_human() {
            return None;
        }
        crate::meeting::budget::refuse(self.board, request, opts, self.reserve)
    }

    fn rejected(&mut self, attempt: u32, error: &AnswerError, retried: bool) {
        // Only an answer that is asked again is a retry; the last one becomes the error turn.
        if !retried {
            return;
        }
        let name = &self.agent.name;
        note_process(
            self.board,
            ProcessKind::Retried,
            format!(
                "{name}'s answer was unusable ({}); it was asked again.",
                error.for_reader()
            ),
        );
        let ev = events::agent_retry(name, attempt, error.for_model());
        events::push(self.board, self.clock, ev);
    }
}

/// Run the one agent turn the board's `pending_calls` ask for and return the board with its
/// turn in `last_turns` (ok or error) and no call pending. An invalid answer gets the ask
/// loop's one retry; an answer still invalid, or a call that failed after the client's
/// attempts, is an error turn, not a program failure. A fatal provider error is
/// `Error::Runtime`; an input that breaks the agent's `input_schema` is `Error::Input`.
pub fn agent_turn(
    mut board: Board,
    client: &mut Client,
    opts: &Options,
    clock: &dyn Clock,
) -> Result<Board> {
    check_turn(&board)?;
    start(&mut board, clock);
    let call = take_single_call(&mut board)?;
    run_call(&mut board, call, client, opts, clock)?;
    Ok(board)
}

/// The start of every agent turn: the last stage's events cleared, then each waiting call the
/// PM did not make (a flow script wrote it on the board, docs/design/flows.md#hand-put-questions)
/// put on the record as the PM's are: a `flow_call` event (a step of the report's diagram) and
/// a question asked (the repeated-question measure). A call is the PM's when the flow holds
/// its question, to its agent, in its loop (call i of a fan-out counts loop L + i).
pub(crate) fn start(board: &mut Board, clock: &dyn Clock) {
    events::start_stage(board);
    if review::is_review(board) || council::is_council(board) {
        // Reviewers' and council members' calls are the program's, on the record already,
        // and take no loop (docs/design/review.md, docs/design/council.md#flow).
        return;
    }
    let calls: Vec<(String, String)> = board
        .pending_calls
        .iter()
        .map(|c| (c.target_agent.clone(), c.prompt.clone()))
        .collect();
    for (i, (agent, question)) in calls.into_iter().enumerate() {
        events::in_later_loop(board, i as u32, |board| {
            let (loop_no, text) = (
                board.current_loop(),
                events::flow_text(&question, events::FLOW_TEXT_CHARS),
            );
            let asked = board.flow.steps.iter().any(|s| {
                s.kind == FlowKind::Ask
                    && s.loop_no == loop_no
                    && s.agent.as_deref() == Some(agent.as_str())
                    && s.text == text
            });
            if !asked {
                events::push(board, clock, events::flow_asks(&agent, &question));
                crate::meeting::circles::record_ask(board, &agent, &question);
            }
        });
    }
}

/// Ask `call`'s agent and add the outcome to `last_turns` (the body of [`agent_turn`], and of
/// each call of a fan-out, on its own copy of the board).
fn run_call(
    board: &mut Board,
    call: PendingCall,
    client: &mut Client,
    opts: &Options,
    clock: &dyn Clock,
) -> Result<()> {
    if review::is_review(board) {
        return review::review_call(board, call, client, opts, clock);
    }
    if council::is_council(board) {
        return council::council_call(board, call, client, opts, clock);
    }
    let agent = board.agents[&call.target_agent].clone();
    let name = agent.name.clone();
    let request = if agent.kind == ParticipantKind::Human {
        human::request(board, &call)?
    } else {
        Request {
            caller: name.clone(),
            system: agent_system_prompt(client.schema_in_prompt())?,
            messages: vec![agent_user_message(board, &call, client.schema_in_prompt())?],
            expect: Some(agent_expected_json(
                &agent,
                &board
                    .context_bundle
                    .readable_by(&name)
                    .cloned()
                    .collect::<Vec<_>>(),
            )),
            facts: Facts {
                question: Some(crate::text::fold_ws(&call.prompt)),
                ..crate::meeting::prompts::facts(board)
            },
        }
    };
    let opts = &opts.or_max_tokens(default_max_tokens::AGENT_TURN);
    let mut turn = TurnAsk {
        board: &mut *board,
        clock,
        agent: &agent,
        reserve: call.reserve.unwrap_or_default(),
    };
    let calls_before = client.calls();
    // `Err`: why the turn failed, for the model and `last_turns` and for the report's reader.
    let outcome = ask(client, opts, request, &mut turn)?.into_turn(|error| {
        (
            error.for_model(),
            crate::meeting::ask::unusable_for_reader(&error.for_reader()),
        )
    });
    if client.calls() > calls_before {
        note_caller(board, &name, client, opts);
    }

    match outcome {
        Ok(result) => {
            let ev = events::agent_result(&name, crate::text::headline(&result.response));
            events::push(board, clock, ev);
            board.last_turns.push(LastTurn {
                agent_name: name,
                status: TurnStatus::Ok,
                prompt: call.prompt,
                result: Some(result),
                error: None,
                review: None,
                council: None,
            });
        }
        Err((error, plain)) => error_turn(board, clock, call, &error, &plain),
    }
    Ok(())
}

/// Record a failed turn of the pending call's agent: `error` for the PM and `last_turns`,
/// `plain` for the report's reader.
fn error_turn(board: &mut Board, clock: &dyn Clock, call: PendingCall, error: &str, plain: &str) {
    let name = call.target_agent.clone();
    note_process(
        board,
        ProcessKind::TurnFailed,
        format!("{name}'s turn failed: {plain}; the findings lack its answer."),
    );
    events::push(board, clock, events::agent_error(&name, error));
    board
        .last_turns
        .push(LastTurn::failed(name, call.prompt, error.to_string()));
}

/// The one call of a board `check_turn` accepted, taken off it; a fan-out's calls are
/// [`fan_out`]'s, so more than one is a caller's mistake, refused like a wrong stage.
fn take_single_call(board: &mut Board) -> Result<PendingCall> {
    match <[PendingCall; 1]>::try_from(std::mem::take(&mut board.pending_calls)) {
        Ok([call]) => Ok(call),
        Err(calls) => {
            let n = calls.len();
            board.pending_calls = calls;
            Err(Error::Usage(format!(
                "agent_turn runs one call; this board has {n} (a fan-out runs in fan_out)"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call a flow wrote on the board is put on the record as the PM's are (an ask in the
    /// flow, a `flow_call` event, a question asked); the PM's own call, already in the flow,
    /// is not recorded twice.
    #[test]
    fn a_hand_put_call_is_recorded_and_the_pms_is_not_doubled() {
        let clock = events::FixedClock(crate::stage::fixtures::NOW.into());
        let call = |agent: &str, q: &str| PendingCall {
            target_agent: agent.into(),
            prompt: q.into(),
            analysis: String::new(),
            reserve: None,
        };
        let mut b = crate::stage::fixtures::board(&[]);
        b.max_parallel = 2;
        events::push(&mut b, &clock, events::pm_asks("arch", "Cost?"));
        b.pending_calls = vec![call("arch", "Cost?"), call("biz", "Risk?")];
        start(&mut b, &clock);
        let asks: Vec<(u32, Option<&str>, &str)> = b
            .flow
            .steps
            .iter()
            .map(|s| (s.loop_no, s.agent.as_deref(), s.text.as_str()))
            .collect();
        assert_eq!(
            asks,
            [(1, Some("arch"), "Cost?"), (2, Some("biz"), "Risk?")]
        );
        let ev = &b.new_events[..];
        assert_eq!(ev.len(), 1, "{ev:?}");
        assert_eq!(ev[0].event_type, crate::model::EventType::FlowCall);
        assert_eq!(
            (ev[0].from.as_deref(), ev[0].to.as_deref(), ev[0].loop_no),
            (Some("flow"), Some("biz"), 2)
        );
        assert_eq!(b.record.asked.len(), 1);
        assert_eq!(b.record.asked[0].agent, "biz");
    }

    /// A board with a pending call (and nothing to merge) is agent-turn's while the PM has not
    /// closed the meeting: the guard is the one stage rule, with no status check of its own.
    #[test]
    fn a_pending_call_is_agent_turns_while_the_meeting_is_not_over() {
        let mut b = crate::stage::fixtures::board(&[]);
        b.pending_calls = vec![PendingCall {
            target_agent: "arch".into(),
            prompt: "q".into(),
            analysis: String::new(),
            reserve: None,
        }];
        for status in [
            crate::model::Status::Running,
            crate::model::Status::Finishing,
        ] {
            b.status = status;
            assert!(b.expect_stage(Stage::AgentTurn).is_ok(), "{status:?}");
        }
        b.status = crate::model::Status::ForcedStop;
        assert!(b.expect_stage(Stage::AgentTurn).is_err());
    }

    /// The schema sent keeps citations to the collected documents (an enum of their ids and
    /// paths); without documents it is the agent's own. OpenAI's strict conversion keeps the
    /// enums, and the schema compiles as JSON Schema (Anthropic's tool input).
    /// A hand-edited board cannot hold more calls than a fan-out may.
    #[test]
    fn a_board_with_too_many_calls_is_refused() {
        let mut b = crate::stage::fixtures::board(&[]);
        let call = |agent: &str| crate::model::PendingCall {
            target_agent: agent.into(),
            prompt: "What does it cost?".into(),
            analysis: String::new(),
            reserve: None,
        };
        let names: Vec<String> = (0..9).map(|i| format!("a{i}")).collect();
        for n in &names {
            b.participants.push(n.clone());
            b.agents.insert(n.clone(), crate::stage::fixtures::agent(n));
        }
        b.pending_calls = names.iter().map(|n| call(n)).collect();
        let e = check_turn(&b).unwrap_err().to_string();
        assert!(e.contains("9 calls; a fan-out has at most 8"), "{e}");
    }

    #[test]
    fn the_schema_sent_keeps_citations_to_the_documents() {
        let mut agent = crate::stage::fixtures::agent("arch");
        let cite = json!({"type": "object", "properties": {
            "document_id": {"type": "string"}, "source_path": {"type": "string"},
            "quote": {"type": "string"}}, "required": ["document_id", "source_path", "quote"]});
        agent.output_schema = json!({"type": "object", "properties": {
            "response": {"type": "string"},
            "citations": {"type": "array", "items": cite}}, "required": ["response"]})
        .as_object()
        .unwrap()
        .clone();
        let doc = |id: &str| ContextDocument {
            document_id: id.into(),
            source_path: id.into(),
            source_type: crate::model::DocumentSource::DirectoryFile,
            purpose: String::new(),
            excerpt: "x".into(),
            char_count: 1,
            shown_chars: None,
            redactions: 0,
            readers: Vec::new(),
        };
        let docs = [doc("docs/a.md"), doc("docs/b.md")];
        let sent = agent_expected_json(&agent, &docs).schema;
        let item = &sent["properties"]["citations"]["items"]["properties"];
        assert_eq!(
            item["document_id"]["enum"],
            json!(["docs/a.md", "docs/b.md"])
        );
        assert_eq!(
            item["source_path"]["enum"],
            json!(["docs/a.md", "docs/b.md"])
        );
        assert_eq!(item["quote"].get("enum"), None);
        assert_eq!(item["supports"], json!({"type": "string"}));
        let strict = crate::llm::json_format::to_strict(&sent).expect("strict-able");
        assert_eq!(
            strict["properties"]["citations"]["items"]["properties"]["document_id"]["enum"],
            json!(["docs/a.md", "docs/b.md"])
        );
        for s in [&sent, &strict] {
            let v = jsonschema::validator_for(s).unwrap();
            let cited = |id: &str| {
                json!({"response": "r", "citations": [
                {"document_id": id, "source_path": id, "quote": "x", "supports": "r"}]})
            };
            assert!(v.is_valid(&cited("docs/a.md")));
            assert!(!v.is_valid(&cited("docs/invented.md")));
        }
        // Through a $ref; without documents no citation at all, also for a strict server (the
        // notation without native structured output says `[]`: llm::notation's tests).
        let mut by_ref = agent.clone();
        by_ref.output_schema = json!({"type": "object", "$defs": {"C": cite},
            "properties": {"response": {"type": "string"},
                "citations": {"type": "array", "items": {"$ref": "#/$defs/C"}}}})
        .as_object()
        .unwrap()
        .clone();
        let sent = agent_expected_json(&by_ref, &docs).schema;
        assert_eq!(
            sent["$defs"]["C"]["properties"]["document_id"]["enum"],
            json!(["docs/a.md", "docs/b.md"])
        );
        let none = agent_expected_json(&agent, &[]).schema;
        assert_eq!(none["properties"]["citations"]["maxItems"], json!(0));
        // No item can be sent, so its shape is not paid for on every call.
        assert_eq!(
            none["properties"]["citations"]["items"],
            json!({"type": "string"})
        );
        let strict = crate::llm::json_format::to_strict(&none).expect("strict-able");
        for s in [&none, &strict] {
            let v = jsonschema::validator_for(s).unwrap();
            assert!(v.is_valid(&json!({"response": "r", "citations": []})));
            assert!(!v.is_valid(&cited_of(s)));
        }
    }

    /// Every list of the agent's reply is bounded in the schema sent, where its config leaves
    /// it open; a bound of the config's own stays.
    #[test]
    fn every_agent_list_is_bounded() {
        let mut agent = crate::stage::fixtures::agent("arch");
        let list = json!({"type": "array", "items": {"type": "string"}});
        agent.output_schema = json!({"type": "object", "properties": {
            "response": {"type": "string"}, "key_points": list, "risks": list,
            "recommendations": list, "citations": {"type": "array", "items": {"type": "object",
                "properties": {"document_id": {"type": "string"}}}}}})
        .as_object()
        .unwrap()
        .clone();
        let sent = agent_expected_json(&agent, &[]).schema;
        for list in ["key_points", "risks", "recommendations"] {
            assert_eq!(
                sent["properties"][list]["maxItems"],
                json!(AGENT_LIST_MAX),
                "{list}"
            );
        }
        let strict = crate::llm::json_format::to_strict(&sent).expect("strict-able");
        assert_eq!(
            strict["properties"]["risks"]["maxItems"],
            json!(AGENT_LIST_MAX)
        );
        agent.output_schema["properties"]["risks"]["maxItems"] = json!(3);
        let sent = agent_expected_json(&agent, &[]).schema;
        assert_eq!(sent["properties"]["risks"]["maxItems"], json!(3));
        assert_eq!(sent["properties"]["citations"]["maxItems"], json!(0));
    }

    /// An answer with one citation, shaped for `schema` (strict schemas require `supports`).
    fn cited_of(schema: &Value) -> Value {
        let mut c = json!({"document_id": "d", "source_path": "d", "quote": "x"});
        if schema
            .pointer("/properties/citations/items/properties/supports")
            .is_some()
        {
            c["supports"] = json!(null);
        }
        json!({"response": "r", "citations": [c]})
    }

    /// Findings, risks and the questions among them that are not content (an id, a yes or
    /// no, a participant's name) are refused with the reason, so the ask loop asks again.
    #[test]
    fn findings_that_are_not_content_are_refused() {
        let board = crate::stage::fixtures::board(&["Which is cheaper?"]);
        let agent = crate::stage::fixtures::agent("arch");
        let answer = |field: &str, item: &str| {
            let mut v = serde_json::json!({"response": "B is cheaper.",
                "key_points": ["B costs half of A."], "risks": [], "recommendations": []});
            v[field] = serde_json::json!(["Moving takes a quarter.", item]);
            v
        };
        assert!(check_answer(&board, &agent, &answer("risks", "Moving may slip.")).is_ok());
        for (field, item, why) in [
            ("key_points", "Q1", "only an id"),
            ("key_points", "Yes", "bare yes/no"),
            ("risks", "No.", "bare yes/no"),
            ("risks", "biz?", "participant's name"),
            ("recommendations", "arch", "participant's name"),
        ] {
            let e = check_answer(&board, &agent, &answer(field, item)).unwrap_err();
            let text = e.for_model();
            assert!(
                text.starts_with(&format!("{field}[1]: ")) && text.contains(why),
                "{text}"
            );
        }
    }

    /// A document only some participants read is theirs to cite: another's citation of it is
    /// refused, naming the documents it may cite; a reader's passes.
    #[test]
    fn a_citation_of_a_document_its_author_could_not_read_is_refused() {
        let mut board = crate::stage::fixtures::board(&[]);
        let doc = |id: &str, readers: &[&str]| ContextDocument {
            document_id: id.into(),
            source_path: id.into(),
            source_type: crate::model::DocumentSource::File,
            purpose: String::new(),
            excerpt: "The vendor charges 9,000 EUR a month.".into(),
            char_count: 37,
            shown_chars: None,
            redactions: 0,
            readers: readers.iter().map(|r| r.to_string()).collect(),
        };
        board.context_bundle.documents = vec![doc("shared.md", &[]), doc("vendor.md", &["biz"])];
        let answer = serde_json::json!({"response": "The vendor costs 9,000 EUR a month.",
            "key_points": ["The vendor costs 9,000 EUR a month."],
            "citations": [{"document_id": "vendor.md", "source_path": "vendor.md",
                "quote": "9,000 EUR a month"}]});
        let arch = crate::stage::fixtures::agent("arch");
        let e = check_answer(&board, &arch, &answer).unwrap_err();
        assert_eq!(
            e.for_model(),
            "citations[0].document_id: \"vendor.md\" is not one of the collected documents (allowed: shared.md)"
        );
        let biz = crate::stage::fixtures::agent("biz");
        assert!(check_answer(&board, &biz, &answer).is_ok());
    }
}
