//! A tiny scripted HTTP server for LLM tests: each request gets the next scripted action (or
//! the one `answering` picks for it), served on its own thread so a held reply does not block
//! the next attempt, and every request is recorded for assertions. No network beyond
//! 127.0.0.1.
//!
//! What a test proves about time it proves here, by what the server saw, never by a clock:
//! requests that overlapped ([`Action::Together`], [`FakeServer::max_in_flight`]), a client
//! that gave up waiting ([`Action::HoldUntilClosed`]), answers sent in a chosen order
//! ([`Action::AfterResponses`], [`FakeServer::answer_order`]).
//! Every hold has a deadlock guard ([`GUARD`]): past it the server answers anyway and records
//! that the hold was not met ([`FakeServer::missed`]), so a broken client fails its test
//! instead of hanging it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a held reply waits for what it waits for before the server answers anyway.
pub const GUARD: Duration = Duration::from_secs(30);

#[derive(Clone)]
pub enum Action {
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Hold the reply until the client closes the connection (it gave up: a read timeout);
    /// nothing is sent then. Past [`GUARD`] the reply is sent after all and the miss recorded.
    HoldUntilClosed(Box<Action>),
    /// Hold the reply until this many requests with a `Together` action have arrived, so that
    /// they are all in flight at once; then answer. Past [`GUARD`] the server answers anyway,
    /// records the miss, and holds no later request.
    Together(usize, Box<Action>),
    /// Hold the reply until the server has answered this many requests.
    AfterResponses(usize, Box<Action>),
    /// Take this long to answer, on the reply's own thread: the request counts as in flight
    /// all the while (a delay in an `answering` closure runs before it is counted, so it
    /// proves nothing about requests in flight).
    Slow(Duration, Box<Action>),
    /// Announce `declared` bytes of body, send only `body`, then close.
    Truncated { declared: usize, body: String },
}

impl Action {
    /// This reply, held until the client hangs up (see [`Action::HoldUntilClosed`]).
    pub fn until_closed(self) -> Action {
        Action::HoldUntilClosed(Box::new(self))
    }

    /// This reply, held until `n` requests so marked are in flight together.
    pub fn together(self, n: usize) -> Action {
        Action::Together(n, Box::new(self))
    }

    /// This reply, held until the server has answered `n` requests.
    pub fn after_responses(self, n: usize) -> Action {
        Action::AfterResponses(n, Box::new(self))
    }

    /// This reply, sent `after` it came in (see [`Action::Slow`]).
    pub fn slow(self, after: Duration) -> Action {
        Action::Slow(after, Box::new(self))
    }
}

pub fn json(status: u16, body: &str) -> Action {
    Action::Respond {
        status,
        headers: vec![],
        body: body.to_string(),
    }
}

pub fn with_header(status: u16, name: &str, value: &str, body: &str) -> Action {
    Action::Respond {
        status,
        headers: vec![(name.to_string(), value.to_string())],
        body: body.to_string(),
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The body's bytes (a protobuf body is no text).
    pub raw: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }
}

/// What the server saw, shared by its threads.
#[derive(Default)]
struct Seen {
    requests: Vec<Recorded>,
    /// Requests read and not yet answered (nor hung up on).
    in_flight: usize,
    max_in_flight: usize,
    /// Requests that arrived at a [`Action::Together`] hold.
    together: usize,
    /// A `Together` hold timed out: later ones are not held.
    together_broken: bool,
    /// The index (in `requests`) of every answered request, in the order answers were sent.
    answered: Vec<usize>,
    /// Holds that ran past [`GUARD`], described.
    missed: Vec<String>,
    /// Held replies whose client closed the connection.
    hung_up: usize,
}

#[derive(Clone, Default)]
struct Shared(Arc<(Mutex<Seen>, Condvar)>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Seen> {
        self.0 .0.lock().unwrap()
    }

    /// Wait (at most [`GUARD`]) until `done` holds; whether it did.
    fn wait_until(&self, done: impl Fn(&Seen) -> bool) -> bool {
        let deadline = Instant::now() + GUARD;
        let mut seen = self.lock();
        while !done(&seen) {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            seen = self.0 .1.wait_timeout(seen, left).unwrap().0;
        }
        true
    }

    /// Change what the server saw and wake every waiting hold.
    fn update<R>(&self, f: impl FnOnce(&mut Seen) -> R) -> R {
        let r = f(&mut self.lock());
        self.0 .1.notify_all();
        r
    }
}

pub struct FakeServer {
    pub url: String,
    shared: Shared,
}

impl FakeServer {
    /// A server that answers the requests with `actions`, in the order they arrive.
    pub fn start(actions: Vec<Action>) -> FakeServer {
        let mut actions = actions.into_iter();
        FakeServer::serve(move |_| {
            actions.next().unwrap_or_else(|| {
                json(
                    500,
                    r#"{"error":{"message":"fake server: no scripted response left"}}"#,
                )
            })
        })
    }

    /// A server that answers each request by what it asks (`answer` sees the request), for
    /// requests that arrive concurrently in no fixed order (a fan-out's calls).
    pub fn answering(answer: impl Fn(&Recorded) -> Action + Send + 'static) -> FakeServer {
        FakeServer::serve(answer)
    }

    /// Accept connections and read each request on a thread of its own; `next` picks the
    /// actions in one place, in the order the requests are read, and each reply is served on
    /// a thread of its own.
    fn serve(mut next: impl FnMut(&Recorded) -> Action + Send + 'static) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Shared::default();
        let (tx, rx) = std::sync::mpsc::channel::<(TcpStream, Recorded)>();
        let sh = shared.clone();
        std::thread::spawn(move || {
            for (stream, req) in rx {
                let action = next(&req);
                let index = sh.update(|seen| {
                    seen.requests.push(req);
                    seen.in_flight += 1;
                    seen.max_in_flight = seen.max_in_flight.max(seen.in_flight);
                    seen.requests.len() - 1
                });
                let sh = sh.clone();
                std::thread::spawn(move || {
                    let answered = respond(&stream, action, &sh);
                    sh.update(|seen| {
                        seen.in_flight -= 1;
                        match answered {
                            true => seen.answered.push(index),
                            false => seen.hung_up += 1,
                        }
                    });
                });
            }
        });
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    if let Some(req) = read_request(&mut reader) {
                        let _ = tx.send((stream, req));
                    }
                });
            }
        });
        FakeServer { url, shared }
    }

    pub fn count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    pub fn request(&self, i: usize) -> Recorded {
        self.shared.lock().requests[i].clone()
    }

    /// Every request so far, in the order they arrived.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// What the server saw once every request is settled (answered, or hung up on): a
    /// reply's bookkeeping ends just after the client has it, so it is read after that.
    fn settled(&self) -> MutexGuard<'_, Seen> {
        let settled = self.shared.wait_until(|s| s.in_flight == 0);
        assert!(settled, "a request of the fake server never settled");
        self.shared.lock()
    }

    /// The most requests that were in flight at once (read, not yet answered).
    pub fn max_in_flight(&self) -> usize {
        self.settled().max_in_flight
    }

    /// The holds that ran past [`GUARD`] (empty when every hold was met).
    pub fn missed(&self) -> Vec<String> {
        self.settled().missed.clone()
    }

    /// How many held replies the client hung up on.
    pub fn hung_up(&self) -> usize {
        self.settled().hung_up
    }

    /// The answered requests (their index in arrival order), in the order answers were sent.
    pub fn answer_order(&self) -> Vec<usize> {
        self.settled().answered.clone()
    }
}

/// One HTTP request: method, path, headers, the body its content-length announces.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = Vec::new();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_lowercase(), v.trim().to_string());
            if k == "content-length" {
                len = v.parse().unwrap_or(0);
            }
            headers.push((k, v));
        }
    }
    let mut body = vec![0u8; len];
    let _ = reader.read_exact(&mut body);
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        raw: body,
    })
}

/// Send `action`'s reply; false when the client hung up on a held reply and none was sent.
fn respond(stream: &TcpStream, action: Action, shared: &Shared) -> bool {
    match action {
        Action::HoldUntilClosed(inner) => {
            if client_hangs_up(stream) {
                return false;
            }
            shared.update(|s| {
                s.missed.push(format!(
                    "the client kept waiting {GUARD:?} for a held reply"
                ))
            });
            respond(stream, *inner, shared)
        }
        Action::Together(n, inner) => {
            let broken = shared.update(|s| {
                s.together += 1;
                s.together_broken
            });
            if !broken && !shared.wait_until(|s| s.together >= n || s.together_broken) {
                shared.update(|s| {
                    s.together_broken = true;
                    s.missed.push(format!(
                        "only {} of {n} requests were in flight together within {GUARD:?}",
                        s.together
                    ));
                });
            }
            respond(stream, *inner, shared)
        }
        Action::Slow(after, inner) => {
            std::thread::sleep(after);
            respond(stream, *inner, shared)
        }
        Action::AfterResponses(n, inner) => {
            if !shared.wait_until(|s| s.answered.len() >= n) {
                shared.update(|s| {
                    s.missed.push(format!(
                        "a reply held for {n} answers went out after {} within {GUARD:?}",
                        s.answered.len()
                    ))
                });
            }
            respond(stream, *inner, shared)
        }
        Action::Respond {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let mut stream = stream;
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
            true
        }
        Action::Truncated { declared, body } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\nconnection: close\r\n\r\n"
            );
            let mut stream = stream;
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
            let _ = stream.shutdown(std::net::Shutdown::Both);
            true
        }
    }
}

/// Wait for the client to close its end of `stream` (end of file or a reset); false past
/// [`GUARD`].
fn client_hangs_up(stream: &TcpStream) -> bool {
    let deadline = Instant::now() + GUARD;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = [0u8; 256];
    let mut stream = stream;
    let hung_up = loop {
        if Instant::now() >= deadline {
            break false;
        }
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break true,
        }
    };
    let _ = stream.set_read_timeout(None);
    hung_up
}

/// OpenAI Chat Completions success body, as documented.
pub fn openai_ok(content: &str, usage: Option<(u64, u64)>) -> String {
    let mut v = serde_json::json!({
        "id": "chatcmpl-abc123", "object": "chat.completion", "created": 1_700_000_000, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null},
                     "logprobs": null, "finish_reason": "stop"}],
    });
    if let Some((p, c)) = usage {
        v["usage"] =
            serde_json::json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c});
    }
    v.to_string()
}

/// OpenAI Responses API success body, as documented: a reasoning item, then the assistant's
/// message with `content` as its `output_text` (no top-level `output_text`: that is only the
/// SDKs' shorthand); `usage` is (input, cached of it, output) tokens.
pub fn responses_ok(content: &str, usage: Option<(u64, u64, u64)>) -> String {
    responses_body(content, "completed", None, usage)
}

/// A Responses API reply stopped early: `status: incomplete` for `reason`
/// (`max_output_tokens`, `content_filter`), with what the model wrote so far.
pub fn responses_incomplete(content: &str, reason: &str, usage: Option<(u64, u64, u64)>) -> String {
    responses_body(content, "incomplete", Some(reason), usage)
}

/// A Responses API reply whose response failed: `status: failed` with `error`.
pub fn responses_failed(code: &str, message: &str) -> String {
    serde_json::json!({
        "id": "resp_abc123", "object": "response", "created_at": 1_700_000_000, "status": "failed",
        "model": "gpt-5-pro", "output": [], "incomplete_details": null,
        "error": {"code": code, "message": message},
    })
    .to_string()
}

fn responses_body(
    content: &str,
    status: &str,
    reason: Option<&str>,
    usage: Option<(u64, u64, u64)>,
) -> String {
    let mut v = serde_json::json!({
        "id": "resp_abc123", "object": "response", "created_at": 1_700_000_000, "status": status,
        "model": "gpt-5-pro", "error": null,
        "incomplete_details": reason.map(|r| serde_json::json!({"reason": r})),
        "output": [
            {"type": "reasoning", "id": "rs_abc123", "summary": []},
            {"type": "message", "id": "msg_abc123", "status": status, "role": "assistant",
             "content": [{"type": "output_text", "text": content, "annotations": []}]}
        ],
    });
    if let Some((input, cached, output)) = usage {
        v["usage"] = serde_json::json!({
            "input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + output,
        });
    }
    v.to_string()
}

/// Anthropic Messages success body with a text block.
pub fn anthropic_text(text: &str, usage: Option<(u64, u64)>) -> String {
    anthropic_body(
        serde_json::json!([{"type": "text", "text": text}]),
        "end_turn",
        usage,
    )
}

/// Anthropic Messages success body with the forced tool's input.
pub fn anthropic_tool(name: &str, input: serde_json::Value, usage: Option<(u64, u64)>) -> String {
    anthropic_body(
        serde_json::json!([{"type": "tool_use", "id": "toolu_01A", "name": name, "input": input}]),
        "tool_use",
        usage,
    )
}

fn anthropic_body(content: serde_json::Value, stop: &str, usage: Option<(u64, u64)>) -> String {
    let mut v = serde_json::json!({
        "id": "msg_01XYZ", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": stop, "stop_sequence": null,
    });
    if let Some((p, c)) = usage {
        v["usage"] = serde_json::json!({"input_tokens": p, "output_tokens": c});
    }
    v.to_string()
}

pub fn openai_error(message: &str, code: &str) -> String {
    serde_json::json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}}).to_string()
}

pub fn anthropic_error(kind: &str, message: &str) -> String {
    serde_json::json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

/// Ollama's native `/api/chat` success body (`stream: false`), as documented: the reply in
/// `message.content`, why it stopped in `done_reason`, the counts as `prompt_eval_count` and
/// `eval_count`.
pub fn ollama_ok(content: &str, usage: Option<(u64, u64)>, done_reason: &str) -> String {
    let mut v = serde_json::json!({
        "model": "llama3.2", "created_at": "2024-12-06T00:46:58.265747Z",
        "message": {"role": "assistant", "content": content},
        "done_reason": done_reason, "done": true,
        "total_duration": 2_254_970_291u64, "load_duration": 574_751_416u64,
        "prompt_eval_duration": 1_502_000_000u64, "eval_duration": 175_000_000u64,
    });
    if let Some((p, c)) = usage {
        v["prompt_eval_count"] = p.into();
        v["eval_count"] = c.into();
    }
    v.to_string()
}

/// Ollama's error body: `{"error": "..."}`.
pub fn ollama_error(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}
