//! A tiny scripted HTTP server for LLM tests: each accepted connection gets the next scripted
//! action (served on its own thread, so a sleeping reply does not block the next attempt), and
//! every request is recorded for assertions. No network beyond 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone)]
pub enum Action {
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Wait, then respond (to trip a short read timeout).
    Sleep(Duration, Box<Action>),
    /// Announce `declared` bytes of body, send only `body`, then close.
    Truncated { declared: usize, body: String },
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

pub struct FakeServer {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Recorded>>>,
}

impl FakeServer {
    pub fn start(actions: Vec<Action>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let reqs = requests.clone();
        std::thread::spawn(move || {
            let mut actions = actions.into_iter();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let action = actions.next().unwrap_or_else(|| {
                    json(
                        500,
                        r#"{"error":{"message":"fake server: no scripted response left"}}"#,
                    )
                });
                let reqs = reqs.clone();
                std::thread::spawn(move || serve(stream, action, reqs));
            }
        });
        FakeServer { url, requests }
    }

    /// A server that answers each request by what it asks (`answer` sees the request), for
    /// requests that arrive concurrently in no fixed order (a fan-out's calls).
    pub fn answering(answer: impl Fn(&Recorded) -> Action + Send + Sync + 'static) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let reqs = requests.clone();
        let answer = Arc::new(answer);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (reqs, answer) = (reqs.clone(), answer.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    if let Some(req) = read_request(&mut reader) {
                        let action = answer(&req);
                        reqs.lock().unwrap().push(req);
                        respond(stream, action);
                    }
                });
            }
        });
        FakeServer { url, requests }
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn request(&self, i: usize) -> Recorded {
        self.requests.lock().unwrap()[i].clone()
    }
}

fn serve(stream: TcpStream, action: Action, reqs: Arc<Mutex<Vec<Recorded>>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let Some(req) = read_request(&mut reader) else {
        return;
    };
    reqs.lock().unwrap().push(req);
    respond(stream, action);
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
    })
}

fn respond(mut stream: TcpStream, action: Action) {
    match action {
        Action::Sleep(d, inner) => {
            std::thread::sleep(d);
            respond(stream, *inner);
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
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
        }
        Action::Truncated { declared, body } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\nconnection: close\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }
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
