//! The one ask loop (docs/design/failure-policy.md#ask-loop), seen from outside: the real `pm-step`, `agent-turn`
//! and `agent-builder` programs talk to the scripted fake OpenAI server, and the requests are
//! counted at the server. The client owns transport retries (`--max-attempts`); the ask loop
//! adds exactly one retry, and only for an invalid answer.

use agent_meeting::model::{Board, Status, TurnStatus};
use serde_json::{json, Value};

use crate::fake_http::*;
use crate::fixtures as common;
use crate::harness::{cli, Cli};

const KEY: &str = "sk-test-ASKLOOP0123456789";

/// A program pointed at `server` as its OpenAI provider, with no backoff between attempts
/// (a server's Retry-After still counts) and nothing inherited from the environment.
fn program(name: &str, server: &FakeServer) -> Cli {
    let mut c = cli(name);
    c.env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("MEETING_RETRY_BASE_MS", "0")
        .env("AGENT_MEETING_NOW", common::NOW);
    c
}

/// The common board, asking the real OpenAI provider (the board's provider wins over flags).
fn openai(mut b: Board) -> Board {
    b.llm.provider = "openai".into();
    b
}

/// Run a board stage against `server`; the board it printed.
fn stage(name: &str, server: &FakeServer, board: &Board, max_attempts: u32) -> Board {
    program(name, server)
        .args(["--max-attempts", &max_attempts.to_string()])
        .stdin(serde_json::to_string(board).unwrap())
        .run()
        .success()
        .json()
}

fn ok_answer(v: &Value) -> Action {
    json(200, &openai_ok(&v.to_string(), Some((100, 20))))
}

fn ok_text(t: &str) -> Action {
    json(200, &openai_ok(t, Some((100, 20))))
}

fn unavailable() -> Action {
    json(
        503,
        &openai_error("The server is overloaded", "server_error"),
    )
}

/// The content of the last message of request `i`, which must be the user's.
fn last_user(server: &FakeServer, i: usize) -> String {
    let body = server.request(i).json();
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    last["content"].as_str().unwrap().to_string()
}

fn call(target: &str) -> Value {
    common::pm::call(target, "What does the cluster cost?")
}

fn finish() -> Value {
    common::pm::finish("### Executive Summary\nKeep Python.\n\n### Recommendation\nKeep Python.")
}

// --- pm-step ------------------------------------------------------------------------------

/// The last attempt does not wait out a Retry-After: here an hour, allowed by the cap, so a
/// program that waited would be killed by the harness's hang guard and the run fail as hung
/// (the client's recorded waits show the same in the library's own test).
#[test]
fn pm_rate_limited_on_its_only_attempt_is_asked_once_without_waiting() {
    let server = FakeServer::start(vec![
        with_header(
            429,
            "retry-after",
            "3600",
            &openai_error("Rate limit reached", "rate_limit_exceeded"),
        ),
        ok_answer(&call("arch")),
    ]);
    let b: Board = program("pm-step", &server)
        .env("MEETING_RETRY_MAX_SECS", "3600")
        .args(["--max-attempts", "1"])
        .stdin(serde_json::to_string(&openai(common::board())).unwrap())
        .run()
        .success()
        .json();
    assert_eq!(server.count(), 1, "one attempt, never re-sent");
    assert_eq!(
        (b.status, b.record.failed_rounds),
        (Status::Running, 1),
        "asked again next round"
    );
    assert!(b.pending_calls.is_empty());
    let err = b.last_error.as_deref().unwrap();
    assert!(err.starts_with("PM call failed: openai: HTTP 429"), "{err}");
    assert_eq!(b.usage.calls, 1);
}

#[test]
fn pm_unavailable_costs_max_attempts_per_round() {
    let server = FakeServer::start(vec![unavailable(); 12]);
    let b = stage("pm-step", &server, &openai(common::board()), 3);
    assert_eq!(
        server.count(),
        3,
        "the normal round: the client's 3 attempts"
    );
    assert_eq!(
        (b.status, b.record.failed_rounds),
        (Status::Running, 1),
        "asked again next round"
    );
    let err = b.last_error.clone().unwrap();
    assert!(
        err.starts_with("PM call failed: openai: HTTP 503")
            && err.contains("gave up after 3 attempts"),
        "{err}"
    );
    let llm: Vec<_> = b
        .new_events
        .iter()
        .filter(|e| e.event_type.as_str() == "llm_call")
        .collect();
    assert_eq!(llm.len(), 1, "one logical call");
    assert_eq!(b.usage.calls, 3, "every attempt takes a call number");
    assert_eq!(b.usage.by_caller["pm"].calls, 3);

    // The next round asks again: 3 more, and a second failed round in a row closes the
    // meeting; the closing round: 3 more, then the fallback path.
    let b = stage("pm-step", &server, &b, 3);
    assert_eq!(server.count(), 6);
    assert_eq!((b.status, b.record.failed_rounds), (Status::Finishing, 2));
    let b = stage("pm-step", &server, &b, 3);
    assert_eq!(server.count(), 9);
    assert_eq!(b.status, Status::ForcedStop);
    assert_eq!(b.final_report, None);
    assert_eq!(b.usage.calls, 9);
}

#[test]
fn pm_context_length_error_is_asked_once() {
    let server = FakeServer::start(vec![
        json(
            400,
            &openai_error(
                "This model's maximum context length is 128000 tokens. Please reduce the length of the messages.",
                "context_length_exceeded",
            ),
        ),
        ok_answer(&call("arch")),
    ]);
    let b = stage("pm-step", &server, &openai(common::board()), 3);
    assert_eq!(server.count(), 1);
    assert_eq!(
        (b.status, b.record.failed_rounds),
        (Status::Running, 1),
        "asked again next round"
    );
    let err = b.last_error.as_deref().unwrap();
    assert!(
        err.starts_with("PM call failed: openai: HTTP 400") && err.contains("context length"),
        "{err}"
    );
}

#[test]
fn pm_not_json_is_retried_once_with_the_exact_error() {
    let server = FakeServer::start(vec![
        ok_text("Sure! I would ask arch about costs."),
        ok_answer(&call("arch")),
    ]);
    let b = stage("pm-step", &server, &openai(common::board()), 3);
    assert_eq!(server.count(), 2);
    assert_eq!(b.pending_calls[0].target_agent, "arch");
    let invalid: Vec<_> = b
        .new_events
        .iter()
        .filter(|e| e.event_type.as_str() == "pm_invalid_output")
        .collect();
    assert_eq!(invalid.len(), 1);
    assert_eq!(invalid[0].attempt, Some(1));
    let error = invalid[0].error.clone().unwrap();
    let retry = server.request(1).json();
    let messages = retry["messages"].as_array().unwrap();
    assert_eq!(
        messages[messages.len() - 2],
        json!({"role": "assistant", "content": "Sure! I would ask arch about costs."})
    );
    let fb = last_user(&server, 1);
    assert!(fb.contains(&error), "{error:?} not in {fb}");
}

#[test]
fn pm_unknown_target_twice_is_two_requests_and_ends_the_round() {
    // (Another reply in the retry: one that repeats the first word for word is asked once
    // more, a_retry_that_repeats_its_refused_reply_is_asked_once_more_warmer.)
    let again = common::pm::With::with(call("legal"), "analysis", "Legal must see it.");
    let server = FakeServer::start(vec![
        ok_answer(&call("legal")),
        ok_answer(&again),
        ok_answer(&call("arch")),
    ]);
    let b = stage("pm-step", &server, &openai(common::board()), 3);
    assert_eq!(server.count(), 2, "one retry, then the round fails");
    let error = "target_agent \"legal\" is not a participant (allowed: arch, biz)";
    let fb = last_user(&server, 1);
    assert!(fb.contains(error), "{fb}");
    assert_eq!(
        (b.status, b.record.failed_rounds),
        (Status::Running, 1),
        "asked again next round"
    );
    assert_eq!(
        b.last_error.as_deref(),
        Some(format!("PM routing failed: {error}").as_str())
    );
    let routing: Vec<_> = b
        .new_events
        .iter()
        .filter(|e| e.event_type.as_str() == "pm_routing_error")
        .map(|e| e.attempt)
        .collect();
    assert_eq!(routing, [Some(1), Some(2)]);
}

#[test]
fn pm_forced_round_is_retried_once_too() {
    let mut b0 = openai(common::board());
    b0.loop_count = b0.max_loops;
    let server = FakeServer::start(vec![ok_answer(&call("arch")), ok_answer(&finish())]);
    let b = stage("pm-step", &server, &b0, 3);
    assert_eq!(server.count(), 2);
    assert!(last_user(&server, 1).contains("CALL_AGENT is not allowed in forced_finish mode"));
    assert_eq!(b.status, Status::ForcedStop);
    assert!(b.final_report.is_some());
}

/// An OpenAI reply the model had to stop at max_tokens: `content` is all it wrote.
fn cut_at_max_tokens(content: &str) -> Action {
    let body = json!({"id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "length"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 1500}});
    json(200, &body.to_string())
}

#[test]
fn pm_reply_cut_at_max_tokens_says_so_and_the_retry_quotes_only_its_head() {
    let runaway = format!("{{\"analysis\": \"{}", "cost ".repeat(4000));
    let server = FakeServer::start(vec![cut_at_max_tokens(&runaway), ok_answer(&call("arch"))]);
    let b = stage("pm-step", &server, &openai(common::board()), 1);
    assert_eq!(b.pending_calls[0].target_agent, "arch");
    let invalid: Vec<_> = b
        .new_events
        .iter()
        .filter(|e| e.event_type.as_str() == "pm_invalid_output")
        .collect();
    let error = invalid[0].error.clone().unwrap();
    assert!(
        error.starts_with("cut off at max_tokens (1500 tokens)")
            && error.contains("raise --max-tokens"),
        "{error}"
    );
    let retry = server.request(1).json();
    let messages = retry["messages"].as_array().unwrap();
    let echoed = messages[messages.len() - 2]["content"].as_str().unwrap();
    assert!(
        echoed.starts_with("{\"analysis\": \"cost cost") && echoed.chars().count() < 1200,
        "the retry quotes a short head, not {} characters",
        echoed.chars().count()
    );
    assert!(last_user(&server, 1).contains("cut off at max_tokens"));

    // Cut twice: the round fails, and last_error says why in words a user can act on.
    let server = FakeServer::start(vec![
        cut_at_max_tokens(&runaway),
        cut_at_max_tokens(&runaway),
    ]);
    let b = stage("pm-step", &server, &openai(common::board()), 1);
    let err = b.last_error.as_deref().unwrap();
    assert!(
        err.starts_with("PM output was cut off at max_tokens")
            && err.contains("raise --max-tokens"),
        "{err}"
    );
    assert!(
        !err.contains("EOF") && !err.contains("not valid JSON"),
        "{err}"
    );
}

/// Every call kind sends its own default max_tokens (an unbounded local model generates until
/// its context is full); --max-tokens wins. The schema sent is the meeting's own.
#[test]
fn each_call_kind_sends_its_default_max_tokens_and_the_meetings_schema() {
    let agent_answer = json!({"response": "The cluster costs $4,000 per month.", "key_points": [],
        "risks": [], "recommendations": [], "citations": []});
    let server = FakeServer::start(vec![
        ok_answer(&call("arch")),
        ok_answer(&agent_answer),
        ok_answer(&finish()),
        ok_answer(&call("biz")),
    ]);
    let b = stage("pm-step", &server, &openai(common::board()), 1);
    let pm = server.request(0).json();
    assert_eq!(pm["max_tokens"], 1500);
    let schema = &pm["response_format"]["json_schema"]["schema"]["properties"];
    assert_eq!(
        schema["target_agent"],
        json!({"anyOf": [{"type": "string", "enum": ["arch", "biz"]}, {"type": "null"}]})
    );
    stage("agent-turn", &server, &b, 1);
    assert_eq!(server.request(1).json()["max_tokens"], 1200);
    let mut forced = openai(common::board());
    forced.loop_count = forced.max_loops;
    stage("pm-step", &server, &forced, 1);
    let closing = server.request(2).json();
    assert_eq!(closing["max_tokens"], 2000);
    let schema = &closing["response_format"]["json_schema"]["schema"]["properties"];
    assert_eq!(schema["next_action"]["enum"], json!(["FINISH"]));
    program("pm-step", &server)
        .args(["--max-attempts", "1", "--max-tokens", "300"])
        .stdin(serde_json::to_string(&openai(common::board())).unwrap())
        .run()
        .success();
    assert_eq!(server.request(3).json()["max_tokens"], 300);
}

// --- agent-turn ---------------------------------------------------------------------------

fn answer(citations: Value) -> Value {
    json!({"response": "The cluster costs $4,000 per month.", "key_points": [], "risks": [],
           "recommendations": [], "citations": citations})
}

#[test]
fn agent_invalid_citation_is_retried_once_with_the_exact_error() {
    let bad = answer(
        json!([{"document_id": "docs/secret.md", "source_path": "docs/secret.md",
                             "quote": "x"}]),
    );
    let server = FakeServer::start(vec![
        ok_answer(&bad),
        ok_answer(&answer(json!([]))),
        ok_answer(&answer(json!([]))),
    ]);
    let b = stage(
        "agent-turn",
        &server,
        &openai(common::board_with_call("arch")),
        3,
    );
    assert_eq!(server.count(), 2);
    let error = "citations[0].document_id: \"docs/secret.md\" is not one of the collected documents (allowed: docs/costs.md, docs/team.md)";
    assert!(last_user(&server, 1).contains(error));
    let turn = &b.last_turns[0];
    assert_eq!(turn.status, TurnStatus::Ok);
    let retry: Vec<_> = b
        .new_events
        .iter()
        .filter(|e| e.event_type.as_str() == "agent_retry")
        .collect();
    assert_eq!(retry.len(), 1);
    assert_eq!(
        (retry[0].attempt, retry[0].error.as_deref()),
        (Some(1), Some(error))
    );
}

#[test]
fn agent_invalid_twice_is_two_requests_and_an_error_turn() {
    let server = FakeServer::start(vec![ok_text("no idea"), ok_text("still no idea")]);
    let b = stage(
        "agent-turn",
        &server,
        &openai(common::board_with_call("arch")),
        3,
    );
    assert_eq!(server.count(), 2);
    let turn = &b.last_turns[0];
    assert_eq!(turn.status, TurnStatus::Error);
    assert!(turn.error.as_deref().unwrap().contains("not valid JSON"));
}

#[test]
fn agent_unavailable_costs_max_attempts_and_gives_an_error_turn() {
    let server = FakeServer::start(vec![unavailable(); 8]);
    let b = stage(
        "agent-turn",
        &server,
        &openai(common::board_with_call("arch")),
        3,
    );
    assert_eq!(server.count(), 3);
    let turn = &b.last_turns[0];
    assert_eq!(turn.status, TurnStatus::Error);
    let err = turn.error.as_deref().unwrap();
    assert!(
        err.starts_with("LLM call failed: openai: HTTP 503") && err.contains("after 3 attempts"),
        "{err}"
    );
    let types: Vec<&str> = b.new_events.iter().map(|e| e.event_type.as_str()).collect();
    assert_eq!(
        types,
        ["llm_call", "agent_error"],
        "no retry of a failed call"
    );
    assert_eq!(b.usage.calls, 3);
}

// --- agent-builder ------------------------------------------------------------------------

fn config(required: Value) -> Value {
    use agent_meeting::stage::agent_builder::{default_input_schema, default_output_schema};
    let mut output = default_output_schema();
    output["required"] = required;
    json!({
        "name": "cost", "role": "Cost analyst", "description": "Estimates costs.",
        "system_prompt": "You are the cost analyst.", "input_schema": default_input_schema(),
        "output_schema": output, "metadata": {}
    })
}

fn builder(server: &FakeServer, dir: &std::path::Path) -> Cli {
    let mut c = program("agent-builder", server);
    c.args([
        "--description",
        "Estimates costs",
        "--max-attempts",
        "3",
        "--output",
    ])
    .arg(dir.join("cost.json"));
    c
}

#[test]
fn builder_invalid_config_is_retried_once_with_the_exact_error() {
    let bad = config(json!(["response", "agent_name"]));
    let good = config(json!(["response"]));
    let server = FakeServer::start(vec![ok_answer(&bad), ok_answer(&good)]);
    let d = tempfile::tempdir().unwrap();
    builder(&server, d.path()).run().success();
    assert_eq!(server.count(), 2);
    let spec = agent_meeting::stage::agent_builder::BuildSpec {
        name: Some("cost".into()),
        ..Default::default()
    };
    let schema = agent_meeting::model::schemas()
        .into_iter()
        .find(|(n, _)| *n == "AgentConfig")
        .unwrap()
        .1;
    let error = agent_meeting::stage::agent_builder::check(bad, &spec, &schema).unwrap_err();
    let fb = last_user(&server, 1);
    assert!(fb.contains(&error), "{error:?} not in {fb}");
    assert!(d.path().join("cost.json").exists());
}

#[test]
fn builder_invalid_twice_is_two_requests_and_exit_1() {
    let bad = config(json!(["response", "agent_name"]));
    let server = FakeServer::start(vec![ok_answer(&bad), ok_answer(&bad), ok_answer(&bad)]);
    let d = tempfile::tempdir().unwrap();
    builder(&server, d.path())
        .run()
        .exit(1)
        .stderr_has("after 2 attempts");
    assert_eq!(server.count(), 2);
    assert!(!d.path().join("cost.json").exists());
}

/// With --no-native-schema the AgentConfig schema is in the system message once (the
/// provider's words), and the builder sends its own default max_tokens.
#[test]
fn builder_without_native_schema_sends_the_schema_once() {
    let server = FakeServer::start(vec![ok_answer(&config(json!(["response"])))]);
    let d = tempfile::tempdir().unwrap();
    builder(&server, d.path())
        .arg("--no-native-schema")
        .run()
        .success();
    let body = server.request(0).json();
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert_eq!(body["max_tokens"], 2500);
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(
        system.matches("\"system_prompt\":{").count(),
        1,
        "the schema once: {system}"
    );
    assert_eq!(system.matches("\"title\":\"AgentConfig\"").count(), 1);
    assert_eq!(
        system
            .matches(agent_meeting::llm::SCHEMA_BLOCK_HEAD)
            .count(),
        1
    );
}

#[test]
fn builder_unavailable_costs_max_attempts_and_exit_1() {
    let server = FakeServer::start(vec![unavailable(); 8]);
    let d = tempfile::tempdir().unwrap();
    builder(&server, d.path())
        .run()
        .exit(1)
        .stderr_has("HTTP 503");
    assert_eq!(server.count(), 3);
    assert!(!d.path().join("cost.json").exists());
}

/// A retry that gets the refused reply again word for word is asked once more with the one
/// thing that can change it, the temperature (a server on this machine takes one), and the
/// Process Note says so; a retry with another reply is not (issue #58: greedy decoding under
/// a grammar gave the same empty report twice, and the single call ended in the fallback).
#[test]
fn a_retry_that_repeats_its_refused_reply_is_asked_once_more_warmer() {
    let empty = common::pm::finish("").to_string();
    let mut closing = openai(common::board());
    closing.loop_count = closing.max_loops;
    let server = FakeServer::start(vec![ok_text(&empty), ok_text(&empty), ok_answer(&finish())]);
    let b = stage("pm-step", &server, &closing, 1);
    assert_eq!(server.count(), 3);
    let temperature = |i: usize| server.request(i).json()["temperature"].clone();
    assert_eq!(
        (temperature(0), temperature(1), temperature(2)),
        (Value::Null, Value::Null, json!(0.7))
    );
    assert_eq!(b.status, Status::ForcedStop);
    assert!(b.final_report.is_some(), "{:?}", b.process_note);
    let notes: Vec<&str> = b.record.process.iter().map(|e| e.text.as_str()).collect();
    assert!(
        notes.contains(&"The PM's retry repeated its refused reply word for word, so it was asked once more at temperature 0.7."),
        "{notes:?}"
    );
    // Another reply in the retry: the ask ends there.
    let server = FakeServer::start(vec![
        ok_text(&empty),
        ok_text("not json"),
        ok_answer(&finish()),
    ]);
    let b = stage("pm-step", &server, &closing, 1);
    assert_eq!(server.count(), 2);
    assert_eq!(b.final_report, None);
}
