//! Both real providers against a scripted local HTTP server: wire format, retries, faults,
//! tolerant parsing and secrets. No network beyond 127.0.0.1.

use std::time::Duration;

use crate::fake_http::*;
use agent_meeting::llm::anthropic::Anthropic;
use agent_meeting::llm::openai::OpenAi;
use agent_meeting::llm::replay::Recorder;
use agent_meeting::llm::{
    Client, ExpectedJson, LlmError, Message, Options, Provider, Request, RetryPolicy, Timeouts,
    SCHEMA_BLOCK_HEAD,
};
use agent_meeting::schema::validate;
use serde_json::{json, Value};

const KEY: &str = "sk-test-SECRET123456789012345";

#[derive(Clone, Copy, Debug)]
enum Kind {
    OpenAi,
    Anthropic,
}
use Kind::*;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "response": {"type": "string"},
            "key_points": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["response"]
    })
}

fn request() -> Request {
    Request {
        caller: "arch".into(),
        system: "You are the architect.".into(),
        messages: vec![Message::user("Which database?")],
        expect: Some(ExpectedJson {
            name: "agent_turn".into(),
            schema: schema(),
        }),
        facts: Default::default(),
    }
}

fn opts() -> Options {
    Options {
        model: "test-model".into(),
        temperature: Some(0.2),
        max_tokens: None,
    }
}

fn fast() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(20),
    }
}

fn provider(kind: Kind, server: &FakeServer, native: bool, read_ms: u64) -> Box<dyn Provider> {
    let t = Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_millis(read_ms),
    };
    match kind {
        OpenAi => Box::new(OpenAi::new(&format!("{}/v1", server.url), KEY, native, t)),
        Anthropic => Box::new(Anthropic::new(
            &format!("{}/anthropic", server.url),
            KEY,
            native,
            t,
        )),
    }
}

fn client(kind: Kind, server: &FakeServer) -> Client {
    Client::new(provider(kind, server, true, 5000), 0).with_policy(fast())
}

/// A success body in the provider's documented format carrying `answer` as the model's output.
fn ok(kind: Kind, answer: &Value, usage: Option<(u64, u64)>) -> Action {
    match kind {
        OpenAi => json(200, &openai_ok(&answer.to_string(), usage)),
        Anthropic => json(200, &anthropic_tool("agent_turn", answer.clone(), usage)),
    }
}

/// A success body whose model output is the raw `text` (for fences, trailing commas).
fn ok_text(kind: Kind, text: &str) -> Action {
    match kind {
        OpenAi => json(200, &openai_ok(text, Some((10, 5)))),
        Anthropic => json(200, &anthropic_text(text, Some((10, 5)))),
    }
}

fn error_body(kind: Kind, status: u16, message: &str) -> Action {
    match kind {
        OpenAi => json(status, &openai_error(message, "some_code")),
        Anthropic => json(status, &anthropic_error("api_error", message)),
    }
}

fn answer() -> Value {
    json!({"response": "Use Postgres.", "key_points": ["mature"]})
}

fn transient(r: Result<agent_meeting::llm::Reply, LlmError>) -> (String, u32) {
    match r {
        Err(LlmError::Transient {
            message, attempts, ..
        }) => (message, attempts),
        other => panic!("expected a transient error, got {other:?}"),
    }
}

#[test]
fn openai_request_shape() {
    let s = FakeServer::start(vec![ok(OpenAi, &answer(), Some((12, 5)))]);
    client(OpenAi, &s).call(&request(), &opts()).unwrap();
    let r = s.request(0);
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.json(),
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are the architect."},
                {"role": "user", "content": "Which database?"}
            ],
            "temperature": 0.2,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "agent_turn",
                "strict": true,
                "schema": {
                    "type": "object",
                    "properties": {
                        "response": {"type": "string"},
                        "key_points": {"type": ["array", "null"], "items": {"type": "string"}}
                    },
                    "required": ["response", "key_points"],
                    "additionalProperties": false
                }
            }}
        })
    );
}

#[test]
fn openai_plain_mode_describes_schema_in_prompt() {
    let s = FakeServer::start(vec![
        ok(OpenAi, &answer(), None),
        ok(OpenAi, &answer(), None),
    ]);
    let mut c = Client::new(provider(OpenAi, &s, false, 5000), 0).with_policy(fast());
    c.call(&request(), &opts()).unwrap();
    let body = s.request(0).json();
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    let t = Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_secs(5),
    };
    let bare = OpenAi::new(&format!("{}/v1", s.url), KEY, false, t)
        .with_mode(agent_meeting::llm::openai::JsonMode::Prompt);
    let mut c = Client::new(Box::new(bare), 0).with_policy(fast());
    c.call(&request(), &opts()).unwrap();
    let body = s.request(1).json();
    assert!(body.get("response_format").is_none());
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are the architect.") && system.contains("\"key_points\""),
        "{system}"
    );
}

#[test]
fn openai_strict_nulls_for_optional_fields_are_dropped() {
    let s = FakeServer::start(vec![ok(
        OpenAi,
        &json!({"response": "x", "key_points": null}),
        None,
    )]);
    let reply = client(OpenAi, &s).call(&request(), &opts()).unwrap();
    let v = reply.json.unwrap().unwrap();
    assert_eq!(v, json!({"response": "x"}));
    validate(&v, &schema()).unwrap();
}

#[test]
fn anthropic_request_shape() {
    let s = FakeServer::start(vec![ok(Anthropic, &answer(), Some((12, 5)))]);
    client(Anthropic, &s).call(&request(), &opts()).unwrap();
    let r = s.request(0);
    assert_eq!(r.path, "/anthropic/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.json(),
        json!({
            "model": "test-model",
            "max_tokens": 4096,
            "system": [{"type": "text", "text": "You are the architect.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "Which database?"}],
            "temperature": 0.2,
            "tools": [{
                "name": "agent_turn",
                "description": "Give your answer as this tool's input. The input is the whole answer.",
                "input_schema": schema()
            }],
            "tool_choice": {"type": "tool", "name": "agent_turn"}
        })
    );
}

#[test]
fn anthropic_plain_mode_has_no_tools() {
    let s = FakeServer::start(vec![ok_text(Anthropic, &answer().to_string())]);
    let mut c = Client::new(provider(Anthropic, &s, false, 5000), 0).with_policy(fast());
    let o = Options {
        max_tokens: Some(900),
        ..opts()
    };
    let reply = c.call(&request(), &o).unwrap();
    assert_eq!(reply.json.unwrap().unwrap(), answer());
    let body = s.request(0).json();
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    assert_eq!(body["max_tokens"], 900);
    assert!(body["system"][0]["text"]
        .as_str()
        .unwrap()
        .contains(SCHEMA_BLOCK_HEAD));
}

fn success(kind: Kind) {
    let s = FakeServer::start(vec![ok(kind, &answer(), Some((12, 5)))]);
    let mut c = Client::new(provider(kind, &s, true, 5000), 41).with_policy(fast());
    let reply = c.call(&request(), &opts()).unwrap();
    assert_eq!(reply.json, Some(Ok(answer())));
    assert_eq!(
        serde_json::from_str::<Value>(&reply.text).unwrap(),
        answer()
    );
    assert_eq!(
        (
            reply.usage.tokens.prompt_tokens,
            reply.usage.tokens.completion_tokens,
            reply.usage.estimated
        ),
        (12, 5, false)
    );
    assert_eq!(reply.attempts, 1);
    assert_eq!(c.calls(), 42);
    validate(reply.json.as_ref().unwrap().as_ref().unwrap(), &schema()).unwrap();
}

fn rate_limited_then_ok(kind: Kind) {
    let s = FakeServer::start(vec![
        with_header(
            429,
            "retry-after",
            "0",
            &match kind {
                OpenAi => openai_error("Rate limit reached", "rate_limit_exceeded"),
                Anthropic => anthropic_error("rate_limit_error", "Rate limited"),
            },
        ),
        ok(kind, &answer(), Some((1, 1))),
    ]);
    let mut c = client(kind, &s);
    let reply = c.call(&request(), &opts()).unwrap();
    assert_eq!((reply.attempts, c.calls(), s.count()), (2, 2, 2));
    assert_eq!(c.waits(), [Duration::ZERO], "Retry-After: 0 is honoured");
}

/// A Retry-After above the cap fails the call at once, with the provider's wait in the
/// message: retrying at the cap would come before the server is ready. One within the cap is
/// waited out.
fn retry_after_above_the_cap_fails_at_once(kind: Kind) {
    let s = FakeServer::start(vec![
        with_header(429, "retry-after", "30", "{}"),
        ok(kind, &answer(), None),
    ]);
    let mut c = client(kind, &s);
    let e = c.call(&request(), &opts()).unwrap_err();
    let LlmError::Transient {
        message, attempts, ..
    } = e
    else {
        panic!("{e:?}")
    };
    assert_eq!((attempts, s.count()), (1, 1), "never re-sent early");
    assert_eq!(c.waits(), [], "no wait");
    assert!(
        message.contains("HTTP 429")
            && message
                .contains("the provider asks to wait 30 s before a retry, longer than the 0.02 s"),
        "{message}"
    );
    let s = FakeServer::start(vec![
        with_header(429, "retry-after", "0.01", "{}"),
        ok(kind, &answer(), None),
    ]);
    let mut c = client(kind, &s);
    c.call(&request(), &opts()).unwrap();
    assert_eq!(c.waits(), [Duration::from_millis(10)]);
    assert_eq!(s.count(), 2);
}

fn server_error_then_ok(kind: Kind) {
    let s = FakeServer::start(vec![
        error_body(kind, 500, "internal"),
        ok(kind, &answer(), None),
    ]);
    let reply = client(kind, &s).call(&request(), &opts()).unwrap();
    assert_eq!(reply.attempts, 2);
}

fn unavailable_until_attempts_run_out(kind: Kind) {
    let s = FakeServer::start(vec![
        error_body(kind, 503, "overloaded now"),
        error_body(kind, 503, "overloaded now"),
        error_body(kind, 503, "overloaded now"),
        ok(kind, &answer(), None),
    ]);
    let mut c = client(kind, &s);
    let (message, attempts) = transient(c.call(&request(), &opts()));
    let name = if matches!(kind, OpenAi) {
        "openai"
    } else {
        "anthropic"
    };
    assert!(
        message.starts_with(&format!("{name}: HTTP 503: overloaded now")),
        "{message}"
    );
    assert!(message.contains("after 3 attempts"), "{message}");
    assert_eq!((attempts, c.calls(), s.count()), (3, 3, 3));
}

/// A reply that does not come within the read timeout is given up on: the server holds it
/// until the client hangs up (a client that kept waiting would get it after the server's
/// guard, and the test would see an answer instead of a timeout). The fake server is on this
/// machine, like a model on a CPU that is still generating the abandoned answer: nothing more
/// is sent to it (a server that handles one request at a time would queue a retry behind the
/// abandoned one), and the call fails for good with the remedy
/// (docs/design/failure-policy.md#local-servers), whatever `--max-attempts` allows.
fn read_timeout(kind: Kind) {
    let slow = ok(kind, &answer(), None).until_closed();
    let s = FakeServer::start(vec![slow, ok(kind, &answer(), None)]);
    let mut c = Client::new(provider(kind, &s, true, 200), 0).with_policy(fast());
    let message = match c.call(&request(), &opts()) {
        Err(LlmError::Fatal(m)) => m,
        other => panic!("expected a fatal error, got {other:?}"),
    };
    assert_eq!((s.count(), s.hung_up(), c.calls()), (1, 1, 1), "{message}");
    assert!(s.missed().is_empty(), "{:?}", s.missed());
    assert!(
        message.contains("timeout")
            && message.contains("still generating")
            && message.contains("raise --read-timeout"),
        "{message}"
    );
}

fn closed_mid_body(kind: Kind) {
    let s = FakeServer::start(vec![
        Action::Truncated {
            declared: 5000,
            body: "{\"id\": \"x\", \"cho".into(),
        },
        ok(kind, &answer(), None),
    ]);
    let reply = client(kind, &s).call(&request(), &opts()).unwrap();
    assert_eq!(reply.attempts, 2);

    let s = FakeServer::start(vec![Action::Truncated {
        declared: 5000,
        body: "{\"id\": ".into(),
    }]);
    let mut c = client(kind, &s).with_policy(RetryPolicy {
        max_attempts: 1,
        ..fast()
    });
    let (message, _) = transient(c.call(&request(), &opts()));
    assert!(message.contains("network error"), "{message}");
}

fn non_json_body(kind: Kind) {
    let html = json(200, "<html><body>502 Bad Gateway</body></html>");
    let s = FakeServer::start(vec![html.clone(), html.clone(), html]);
    let (message, attempts) = transient(client(kind, &s).call(&request(), &opts()));
    assert!(
        message.contains("not JSON") && message.contains("Bad Gateway"),
        "{message}"
    );
    assert_eq!(attempts, 3);
}

fn unauthorized_is_fatal(kind: Kind) {
    let body = match kind {
        OpenAi => openai_error(
            "Incorrect API key provided: sk-test-****2345.",
            "invalid_api_key",
        ),
        Anthropic => anthropic_error("authentication_error", "invalid x-api-key"),
    };
    let s = FakeServer::start(vec![json(401, &body), ok(kind, &answer(), None)]);
    let mut c = client(kind, &s);
    let err = c.call(&request(), &opts()).unwrap_err();
    let LlmError::Fatal(message) = err else {
        panic!("expected fatal, got {err:?}")
    };
    match kind {
        OpenAi => assert_eq!(
            message,
            "openai: HTTP 401: Incorrect API key provided: sk-test-****2345. (invalid_api_key)"
        ),
        Anthropic => assert_eq!(message, "anthropic: HTTP 401: invalid x-api-key"),
    }
    assert_eq!(s.count(), 1, "a 401 is never retried");
    assert_eq!(c.calls(), 1);
}

fn context_length_is_transient(kind: Kind) {
    let s = FakeServer::start(vec![error_body(
        kind,
        400,
        "prompt is too long: 210000 tokens > 200000 maximum",
    )]);
    let (message, attempts) = transient(client(kind, &s).call(&request(), &opts()));
    assert!(
        message.contains("HTTP 400") && message.contains("prompt is too long"),
        "{message}"
    );
    assert_eq!((attempts, s.count()), (1, 1));
}

fn other_4xx_is_fatal(kind: Kind) {
    let s = FakeServer::start(vec![error_body(
        kind,
        404,
        "model test-model does not exist",
    )]);
    let err = client(kind, &s).call(&request(), &opts()).unwrap_err();
    assert!(
        matches!(&err, LlmError::Fatal(m) if m.contains("404") && m.contains("does not exist")),
        "{err:?}"
    );
}

fn fenced_reply(kind: Kind) {
    let s = FakeServer::start(vec![ok_text(
        kind,
        "Here you go:\n```json\n{\"response\": \"ok\"}\n```\n",
    )]);
    let mut c = Client::new(provider(kind, &s, false, 5000), 0).with_policy(fast());
    let reply = c.call(&request(), &opts()).unwrap();
    assert_eq!(reply.json, Some(Ok(json!({"response": "ok"}))));
    assert!(reply.text.contains("```json"), "raw text is kept as sent");
}

fn trailing_commas(kind: Kind) {
    let s = FakeServer::start(vec![ok_text(
        kind,
        "{\"response\": \"a, b,\", \"key_points\": [\"x\",],}",
    )]);
    let mut c = Client::new(provider(kind, &s, false, 5000), 0).with_policy(fast());
    let reply = c.call(&request(), &opts()).unwrap();
    assert_eq!(
        reply.json,
        Some(Ok(json!({"response": "a, b,", "key_points": ["x"]})))
    );
}

fn schema_invalid(kind: Kind) {
    let s = FakeServer::start(vec![ok(
        kind,
        &json!({"response": 7, "key_points": ["a", 3]}),
        None,
    )]);
    let reply = client(kind, &s).call(&request(), &opts()).unwrap();
    let v = reply.json.unwrap().expect("valid JSON");
    let e = validate(&v, &schema()).unwrap_err();
    assert!(
        e.contains("at /response: 7 is not of type \"string\""),
        "{e}"
    );
    assert!(
        e.contains("at /key_points/1: 3 is not of type \"string\""),
        "{e}"
    );
}

fn not_json_reply(kind: Kind) {
    let s = FakeServer::start(vec![ok_text(kind, "I think Postgres is best.")]);
    let mut c = Client::new(provider(kind, &s, false, 5000), 0).with_policy(fast());
    let reply = c.call(&request(), &opts()).unwrap();
    let e = reply.json.unwrap().unwrap_err().to_string();
    assert!(e.contains("no JSON object"), "{e}");
}

fn no_usage_is_estimated(kind: Kind) {
    let s = FakeServer::start(vec![ok(kind, &answer(), None)]);
    let reply = client(kind, &s).call(&request(), &opts()).unwrap();
    assert!(reply.usage.estimated);
    assert!(reply.usage.tokens.prompt_tokens > 0 && reply.usage.tokens.completion_tokens > 0);
    assert_eq!(
        reply.usage.tokens.completion_tokens as usize,
        reply.text.chars().count().div_ceil(4)
    );
}

fn plain_text_call(kind: Kind) {
    let s = FakeServer::start(vec![ok_text(kind, "Just prose."), ok_text(kind, "  ")]);
    let mut c = client(kind, &s);
    let req = Request {
        expect: None,
        ..request()
    };
    let reply = c.call(&req, &opts()).unwrap();
    assert_eq!(
        (reply.text.as_str(), reply.json.is_none()),
        ("Just prose.", true)
    );
    let (message, _) = transient(c.call(&req, &opts()));
    assert!(message.contains("empty reply"), "{message}");
}

/// The key may appear in nothing we write or say, even when the server echoes it back.
fn secret_never_leaks(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("rec.jsonl");
    let log = dir.path().join("llm.jsonl");
    let echo = format!("Incorrect API key provided: {KEY}");
    let s = FakeServer::start(vec![
        error_body(kind, 500, &echo),
        ok(kind, &answer(), Some((1, 1))),
        error_body(kind, 401, &echo),
    ]);
    let inner = provider(kind, &s, true, 5000);
    let mut c = Client::new(Box::new(Recorder::new(inner, &cassette)), 0)
        .with_policy(fast())
        .with_log(Some(log.clone()));
    let reply = c.call(&request(), &opts()).unwrap();
    let err = c.call(&request(), &opts()).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("[redacted]"), "{message}");
    for text in [
        message,
        format!("{err:?}"),
        format!("{reply:?}"),
        std::fs::read_to_string(&cassette).unwrap(),
        std::fs::read_to_string(&log).unwrap(),
    ] {
        assert!(
            !text.contains(KEY) && !text.contains("SECRET123"),
            "key leaked: {text}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&cassette).unwrap().lines().count(),
        3
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 3);
}

/// A reply the server stopped short of the max_tokens sent (a local server whose context
/// window filled up) blames the window and names its remedy, not --max-tokens.
#[test]
fn a_reply_cut_by_the_context_window_says_so() {
    let head = "{\"response\": \"Use Postgres because";
    let body = json!({"id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": head},
                     "finish_reason": "length"}],
        "usage": {"prompt_tokens": 931, "completion_tokens": 93}});
    let s = FakeServer::start(vec![json(200, &body.to_string())]);
    let mut c = Client::new(provider(OpenAi, &s, false, 5000), 0).with_policy(fast());
    let o = Options {
        max_tokens: Some(1500),
        ..opts()
    };
    let e = c
        .call(&request(), &o)
        .unwrap()
        .json
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("cut off by the server's context window after 93 of the 1500 reply tokens allowed (the prompt took 931)")
            && e.contains("OLLAMA_CONTEXT_LENGTH")
            && !e.contains("raise --max-tokens"),
        "{e}"
    );
}

/// A reply the model had to stop at max_tokens says so, instead of "EOF while parsing".
fn cut_at_max_tokens(kind: Kind) {
    let head = "{\"response\": \"Use Postgres because";
    let body = match kind {
        OpenAi => json!({"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": head},
                         "finish_reason": "length"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 50}}),
        Anthropic => json!({"id": "m", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": head}], "stop_reason": "max_tokens",
            "usage": {"input_tokens": 10, "output_tokens": 50}}),
    };
    let s = FakeServer::start(vec![
        json(200, &body.to_string()),
        ok_text(kind, &answer().to_string()),
    ]);
    let mut c = Client::new(provider(kind, &s, false, 5000), 0).with_policy(fast());
    let o = Options {
        max_tokens: Some(50),
        ..opts()
    };
    let reply = c.call(&request(), &o).unwrap();
    assert!(reply.truncated);
    let e = reply.json.unwrap().unwrap_err().to_string();
    assert!(
        e.starts_with("cut off at max_tokens (50 tokens)") && e.contains("raise --max-tokens"),
        "{e}"
    );
    assert!(!e.contains("EOF"), "{e}");
    let reply = c.call(&request(), &o).unwrap();
    assert!(!reply.truncated);
    assert_eq!(reply.json, Some(Ok(answer())));
}

/// The exchange log holds the system message exactly as sent, with the schema in words when
/// native structured output is off.
fn logged_system_is_the_one_sent(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("llm.jsonl");
    for native in [true, false] {
        let s = FakeServer::start(vec![ok_text(kind, &answer().to_string())]);
        let _ = std::fs::remove_file(&log);
        let mut c = Client::new(provider(kind, &s, native, 5000), 0)
            .with_policy(fast())
            .with_log(Some(log.clone()));
        c.call(&request(), &opts()).unwrap();
        let body = s.request(0).json();
        let sent = match kind {
            OpenAi => body["messages"][0]["content"].clone(),
            Anthropic => body["system"][0]["text"].clone(),
        };
        let line: Value =
            serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
        assert_eq!(line["system"], sent, "native {native}");
        assert_eq!(
            sent.as_str().unwrap().contains(SCHEMA_BLOCK_HEAD),
            !native,
            "{sent}"
        );
    }
}

macro_rules! both {
    ($($f:ident),* $(,)?) => {
        mod openai_cases { $( #[test] fn $f() { super::$f(super::Kind::OpenAi) } )* }
        mod anthropic_cases { $( #[test] fn $f() { super::$f(super::Kind::Anthropic) } )* }
    };
}

both!(
    success,
    rate_limited_then_ok,
    retry_after_above_the_cap_fails_at_once,
    server_error_then_ok,
    unavailable_until_attempts_run_out,
    read_timeout,
    closed_mid_body,
    non_json_body,
    unauthorized_is_fatal,
    context_length_is_transient,
    other_4xx_is_fatal,
    fenced_reply,
    trailing_commas,
    schema_invalid,
    not_json_reply,
    no_usage_is_estimated,
    plain_text_call,
    secret_never_leaks,
    cut_at_max_tokens,
    logged_system_is_the_one_sent,
);

/// `--no-response-format` describes the schema in the system message, and the log shows it.
#[test]
fn openai_prompt_mode_logs_the_system_message_sent() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("llm.jsonl");
    let s = FakeServer::start(vec![ok(OpenAi, &answer(), None)]);
    let t = Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_secs(5),
    };
    let bare = OpenAi::new(&format!("{}/v1", s.url), KEY, false, t)
        .with_mode(agent_meeting::llm::openai::JsonMode::Prompt);
    let mut c = Client::new(Box::new(bare), 0)
        .with_policy(fast())
        .with_log(Some(log.clone()));
    c.call(&request(), &opts()).unwrap();
    let body = s.request(0).json();
    let line: Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(line["system"], body["messages"][0]["content"]);
    assert_eq!(line["messages"][0], body["messages"][1]);
}

/// Strict mode needs every array's `items`: an output schema with an array of anything is
/// sent non-strict, as the agent wrote it.
#[test]
fn openai_array_without_items_is_sent_non_strict() {
    let s = FakeServer::start(vec![ok(OpenAi, &answer(), None)]);
    let loose = json!({"type": "object", "properties": {
        "response": {"type": "string"}, "citations": {"type": "array"}}, "required": ["response"]});
    let req = Request {
        expect: Some(ExpectedJson {
            name: "agent_turn".into(),
            schema: loose.clone(),
        }),
        ..request()
    };
    client(OpenAi, &s).call(&req, &opts()).unwrap();
    let format = &s.request(0).json()["response_format"]["json_schema"];
    assert_eq!(format["strict"], false);
    assert_eq!(format["schema"], loose);
}

/// Nothing listens: the provider is unreachable, which is a runtime failure after the retries
/// (exit 1 in the programs), not a meeting event.
#[test]
fn unreachable_provider_is_fatal_after_retries() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_secs(2),
    };
    for p in [
        Box::new(OpenAi::new(
            &format!("http://127.0.0.1:{port}/v1"),
            KEY,
            true,
            t,
        )) as Box<dyn Provider>,
        Box::new(Anthropic::new(
            &format!("http://127.0.0.1:{port}"),
            KEY,
            true,
            t,
        )),
    ] {
        let mut c = Client::new(p, 0).with_policy(fast());
        match c.call(&request(), &opts()) {
            Err(LlmError::Fatal(m)) => {
                assert!(
                    m.contains("provider unreachable") && m.contains("gave up after 3 attempts"),
                    "{m}"
                );
                assert!(!m.contains(KEY));
            }
            other => panic!("expected a fatal error, got {other:?}"),
        }
        assert_eq!(c.calls(), 3, "every attempt was made");
    }
}
