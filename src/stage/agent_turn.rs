//! The `agent-turn` stage (DESIGN.md#agent-turn): call the specialist the PM chose, check its answer (its
//! output schema, the AgentTurnResult structure, the citations), retry once with the precise
//! error, and leave the outcome in `last_turn` for `merge-board`.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::events::{self, Clock, KIND_FEEDBACK, KIND_RESULT};
use crate::io::kind_of;
use crate::llm::{Client, ExpectedJson, LlmError, Message, Options, Request};
use crate::model::{
    AgentConfig, AgentTurnResult, Board, ContextDocument, LastTurn, PendingCall, Status,
    TurnStatus, AGENT_TURN_FIELDS,
};
use crate::prompts::{cut_list, echo_reply, render, retry_message};
use crate::schema;
use crate::stage::Stage;
use crate::text::{cut, verify_quote};

/// Longest first sentence carried in an `agent_result` event.
const SENTENCE_CHARS: usize = 300;

/// Refuse a board that is not `agent-turn`'s turn, naming the stage that should run (exit 2).
pub fn check_turn(board: &Board) -> Result<()> {
    board.expect_stage(Stage::AgentTurn)?;
    let call = board
        .pending_call
        .as_ref()
        .expect("agent-turn runs only on a board with a pending_call");
    if board.status != Status::Running {
        return Err(Error::Usage(format!(
            "board has a pending_call but status {} (expected running): the board is inconsistent, not agent-turn",
            board.status.as_str()
        )));
    }
    if !board.agents.contains_key(&call.target_agent) {
        let mut known: Vec<&str> = board.agents.keys().map(String::as_str).collect();
        known.sort_unstable();
        return Err(Error::input(
            "",
            "pending_call.target_agent",
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
    crate::loader::validate_agent(&board.agents[name], crate::loader::AgentKind::Specialist)
        .map_err(|e| e.under(&format!("agents.{name}")).in_file(""))?;
    Ok(())
}

/// The whiteboard as the agent sees it: the summary, then the non-empty lists, items cut.
pub fn meeting_summary(board: &Board) -> String {
    let mut s = if board.summary.trim().is_empty() {
        "(no participant has spoken yet)".to_string()
    } else {
        board.summary.trim().to_string()
    };
    for (title, items) in [
        ("Key points", &board.key_points),
        ("Open questions", &board.open_questions),
        ("Candidate decisions", &board.decisions),
        ("Risks", &board.risks),
    ] {
        if items.is_empty() {
            continue;
        }
        s.push_str(&format!("\n{title}:"));
        for i in cut_list(items) {
            s.push_str("\n- ");
            s.push_str(&i);
        }
    }
    s
}

/// The runtime agent input `{prompt, meeting_summary, context_summary}` (SPEC §3), validated
/// against the agent's `input_schema` before the call.
pub fn agent_input(board: &Board, call: &PendingCall) -> Value {
    json!({
        "prompt": call.prompt,
        "meeting_summary": meeting_summary(board),
        "context_summary": board.context_bundle.summary,
    })
}

/// The agent's user message: the PM's question, the whiteboard, the fenced documents, the
/// rules and the reply format.
pub fn render_agent_user(board: &Board, call: &PendingCall) -> Result<String> {
    let agent = board.agents.get(&call.target_agent);
    let input = agent_input(board, call);
    let required: Vec<String> = agent
        .and_then(|a| a.output_schema.get("required"))
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_else(|| vec!["response".to_string()]);
    let documents: Vec<Value> = board
        .context_bundle
        .documents
        .iter()
        .map(|d| {
            json!({
                "document_id": d.document_id,
                "source_path": d.source_path,
            })
        })
        .collect();
    render(
        "agent_user.j2",
        &json!({
            "prompt": input["prompt"],
            "meeting_summary": input["meeting_summary"],
            // Bounded by collect-context's --max-context-chars, with the brief and every
            // document fenced and labelled as untrusted data.
            "context_summary": input["context_summary"],
            "decision": board.meeting_input.decision_packet.decision_to_make,
            "documents": documents,
            "required": required,
            "output_schema_description": agent.map_or("", |a| a.output_schema_description.trim()),
        }),
    )
}

/// The first sentence of `text` (up to `.`, `!`, `?` followed by a space, or `。！？`), cut
/// to 300 characters.
pub fn first_sentence(text: &str) -> String {
    cut(&crate::text::first_sentence(text), SENTENCE_CHARS)
}

/// Check one parsed answer of `agent`: its `output_schema`, the AgentTurnResult structure
/// (keys outside it dropped, `agent_name` set by the runtime), and every citation against the
/// collected documents. Quotes are marked verified or not; only unknown ids and mismatched
/// paths fail.
pub fn check_answer(
    board: &Board,
    agent: &AgentConfig,
    value: &Value,
) -> std::result::Result<AgentTurnResult, String> {
    schema::validate(value, &Value::Object(agent.output_schema.clone()))
        .map_err(|e| format!("does not match the output schema: {e}"))?;
    let Value::Object(obj) = value else {
        return Err(format!("expected a JSON object, got {}", kind_of(value)));
    };
    let obj: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| AGENT_TURN_FIELDS.contains(&k.as_str()) && k.as_str() != "agent_name")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut result: AgentTurnResult = serde_path_to_error::deserialize(Value::Object(obj))
        .map_err(|e| {
            let path = e.path().to_string();
            let inner = e.inner().to_string();
            if path == "." {
                inner
            } else {
                format!("{path}: {inner}")
            }
        })?;
    if result.response.trim().is_empty() {
        return Err("response: must not be empty".into());
    }
    result.agent_name = agent.name.clone();
    let docs = &board.context_bundle.documents;
    for (i, c) in result.citations.iter_mut().enumerate() {
        let Some(doc) = docs.iter().find(|d| d.document_id == c.document_id) else {
            return Err(format!(
                "citations[{i}].document_id: {:?} is not one of the collected documents (allowed: {})",
                c.document_id,
                allowed_ids(docs)
            ));
        };
        if c.source_path != doc.source_path {
            return Err(format!(
                "citations[{i}].source_path: {:?} does not match document {:?} (expected {:?})",
                c.source_path, doc.document_id, doc.source_path
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

/// The JSON the agent must return: its own `output_schema`.
pub fn agent_expected_json(agent: &AgentConfig) -> ExpectedJson {
    ExpectedJson {
        name: "agent_turn_result".into(),
        schema: Value::Object(agent.output_schema.clone()),
    }
}

/// Run the agent turn the board's `pending_call` asks for and return the board with
/// `last_turn` set (ok or error) and `pending_call` cleared. One retry with the precise error;
/// a second failure is an error turn, not a program failure. A fatal provider error is
/// `Error::Runtime`; an input that breaks the agent's `input_schema` is `Error::Input`.
pub fn agent_turn(
    mut board: Board,
    client: &mut Client,
    opts: &Options,
    clock: &dyn Clock,
) -> Result<Board> {
    check_turn(&board)?;
    let call = board
        .pending_call
        .clone()
        .expect("check_turn ensures a pending_call");
    let agent = board.agents[&call.target_agent].clone();
    let name = agent.name.clone();
    let input = agent_input(&board, &call);
    schema::validate(&input, &Value::Object(agent.input_schema.clone())).map_err(|e| {
        Error::input(
            "",
            format!("agents.{name}.input_schema"),
            format!("the runtime input {{prompt, meeting_summary, context_summary}} of agent {name} does not satisfy it: {e}"),
        )
    })?;

    let mut messages = vec![Message::user(render_agent_user(&board, &call)?)];
    let doc_ids: Vec<String> = board
        .context_bundle
        .documents
        .iter()
        .map(|d| d.document_id.clone())
        .collect();
    let mut outcome = Err(String::new());
    for attempt in 1..=2u32 {
        let req = Request {
            caller: name.clone(),
            system: agent.system_prompt.clone(),
            messages: messages.clone(),
            expect: Some(agent_expected_json(&agent)),
        };
        let res = client.call(&req, opts);
        events::record_llm_call(
            &mut board,
            clock,
            client.calls(),
            &name,
            attempt,
            res.as_ref(),
        );
        let (error, reply_text) = match res {
            // Provider errors already name the provider (`openai: HTTP 401: ...`).
            Err(LlmError::Fatal(m)) => return Err(Error::Runtime(m)),
            Err(e @ LlmError::Transient { .. }) => (format!("LLM call failed: {e}"), None),
            Ok(reply) => {
                let checked = match &reply.json {
                    Some(Ok(v)) => check_answer(&board, &agent, v),
                    Some(Err(e)) => Err(format!("the reply was not valid JSON ({e})")),
                    None => Err("the reply carried no JSON object".into()),
                };
                match checked {
                    Ok(r) => {
                        outcome = Ok(r);
                        break;
                    }
                    Err(e) => (e, Some(reply.text)),
                }
            }
        };
        outcome = Err(error.clone());
        if attempt == 2 {
            break;
        }
        let mut ev = events::message("agent_retry", &name, "runtime", &name, KIND_FEEDBACK);
        ev.attempt = Some(attempt);
        ev.error = Some(error.clone());
        events::push(&mut board, clock, ev);
        // A failed call has no reply to correct: the same request is simply sent again.
        if let Some(text) = reply_text {
            let allowed = if error.starts_with("citations[") {
                doc_ids.as_slice()
            } else {
                &[]
            };
            messages.push(echo_reply(text));
            messages.push(Message::user(retry_message(
                &error,
                "document_id",
                allowed,
                "",
            )?));
        }
    }

    board.pending_call = None;
    match outcome {
        Ok(result) => {
            let mut ev = events::message("agent_result", &name, &name, "pm", KIND_RESULT);
            ev.status = Some("ok".into());
            ev.message = Some(first_sentence(&result.response));
            events::push(&mut board, clock, ev);
            board.last_turn = Some(LastTurn {
                agent_name: name,
                status: TurnStatus::Ok,
                prompt: call.prompt,
                result: Some(result),
                error: None,
            });
        }
        Err(error) => {
            let mut ev = events::message("agent_error", &name, &name, "pm", KIND_RESULT);
            ev.status = Some("error".into());
            ev.error = Some(error.clone());
            events::push(&mut board, clock, ev);
            board.last_turn = Some(LastTurn {
                agent_name: name,
                status: TurnStatus::Error,
                prompt: call.prompt,
                result: None,
                error: Some(error),
            });
        }
    }
    Ok(board)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences() {
        assert_eq!(first_sentence("Go with B. It is cheaper."), "Go with B.");
        assert_eq!(
            first_sentence("Version 2.1 is fine! Yes"),
            "Version 2.1 is fine!"
        );
        assert_eq!(first_sentence("选择方案B。因为更便宜"), "选择方案B。");
        assert_eq!(first_sentence("no stop at all"), "no stop at all");
        assert_eq!(first_sentence(&"x".repeat(400)).chars().count(), 300);
    }
}
