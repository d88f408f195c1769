//! `agent-meeting mcp` (docs/design/mcp.md): a meeting as a tool for coding agents, over the
//! Model Context Protocol's stdio transport — newline-delimited JSON-RPC 2.0 on stdin and
//! stdout, nothing else on stdout, logs on stderr. Both eras of the protocol are served on one
//! stream: the `initialize` handshake (2025-06-18, 2025-11-25) and the stateless revision
//! 2026-07-28 (`server/discover`, the protocol version in each request's `_meta`,
//! `resultType` on every result). Each `tools/call` runs on a thread of its own, so a
//! meeting in progress does not hold up `meeting_status`, a ping or a cancel.
//!
//! This file owns the stdio loop, the dispatch of each message by its method, the era rules,
//! and the state calls share (the calls in flight, the requests sent to the client); a tool
//! call is answered in `call.rs`, the tasks extension's methods in `tasks.rs`.

mod call;
mod elicit;
mod resources;
mod runs;
mod tasks;
mod tools;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use serde_json::{json, Value};

use crate::error::{Error, Result};
pub use runs::Place;
use tools::Tool;

/// The handshake-era revisions served, newest first (an `initialize` asking another gets
/// the newest).
const LEGACY_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// The stateless revisions served.
const STATELESS_VERSIONS: [&str; 1] = ["2026-07-28"];

const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
const SUBSCRIPTION_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// How long a client may keep `tools/list` and `server/discover` (the tools never change
/// while the server runs).
const TTL_MS: u64 = 3_600_000;

const INSTRUCTIONS: &str = "Decision meetings between LLM agents: a PM routes questions to specialists who answer from the documents you give, with checked citations, and every meeting ends with a Markdown decision record on disk. Use list_agents to choose participants; meeting_run blocks until the report is written (minutes); meeting_start, meeting_status and meeting_result run one in the background. Provider, model and keys are the server's own.";

/// JSON-RPC error codes (the JSON-RPC 2.0 ones, and MCP 2026-07-28's unsupported version).
mod code {
    pub const PARSE: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    pub const MISSING_CAPABILITY: i64 = -32021;
    pub const UNSUPPORTED_VERSION: i64 = -32022;
}

/// The era a request is served in: `Stateless` when its `_meta` names a protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Legacy,
    Stateless,
}

/// One message for stdout: a compact line (no embedded newline), written whole.
#[derive(Clone)]
struct Out(Arc<Mutex<Box<dyn Write + Send>>>);

impl Out {
    fn send(&self, msg: &Value) {
        let mut line = serde_json::to_string(msg).expect("JSON serialises");
        line.push('\n');
        let mut w = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // A client that went away: nothing more to say to it.
        let _ = w.write_all(line.as_bytes()).and_then(|()| w.flush());
    }

    fn result(&self, id: &Value, era: Era, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": stamped(result, era)}));
    }

    fn error(&self, id: &Value, code: i64, message: &str, data: Option<Value>) {
        let mut error = json!({"code": code, "message": message});
        if let Some(d) = data {
            error["data"] = d;
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }
}

/// A result as its era shapes it: a stateless one says it is complete and who answered.
fn stamped(mut result: Value, era: Era) -> Value {
    if era == Era::Stateless {
        if let Some(o) = result.as_object_mut() {
            // An `input_required` result says so itself.
            o.entry("resultType").or_insert_with(|| json!("complete"));
            let meta = o.entry("_meta").or_insert_with(|| json!({}));
            meta[SERVER_INFO_KEY] = server_info();
        }
    }
    result
}

fn server_info() -> Value {
    json!({"name": "agent-meeting", "title": "agent-meeting", "version": crate::cli::VERSION})
}

/// The calls in flight that a cancel can stop: request id → the meeting's process id, once
/// it runs, and whether it was cancelled (then no response is sent).
#[derive(Default)]
struct InFlight(Mutex<BTreeMap<String, Call>>);

#[derive(Default, Clone, Copy)]
struct Call {
    pid: Option<u32>,
    cancelled: bool,
}

impl InFlight {
    fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<String, Call>) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Where the server runs meetings: the run folders under `run_dir` (else the config file's,
/// else `runs`), documents below `context_root` (else the nearest `.git` ancestor of the
/// current folder), `meeting` run from this executable, meeting files made for a topic with
/// documents kept in the user's data folder.
pub fn place(
    run_dir: Option<std::path::PathBuf>,
    context_root: Option<std::path::PathBuf>,
) -> Result<Place> {
    let abs = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let config = &crate::settings::config::load()?.config;
    let runs = abs(&crate::settings::run_dir(run_dir, config).0);
    let here = std::env::current_dir()
        .map_err(|e| Error::Runtime(format!("the current folder: {}", crate::io::os_error(&e))))?;
    let context_root = match context_root {
        Some(d) => abs(&d),
        None => crate::context::default_context_root(&here),
    };
    let exe = std::env::current_exe().map_err(|e| {
        Error::Runtime(format!(
            "cannot find this executable: {}",
            crate::io::os_error(&e)
        ))
    })?;
    let made = dirs::data_local_dir()
        .map(|d| d.join("agent-meeting").join("mcp"))
        .unwrap_or_else(|| runs.join(".mcp"));
    Ok(Place {
        reports: here.join("reports"),
        runs,
        context_root,
        exe,
        made,
    })
}

/// Serve MCP on `input`/`output` until the input ends (the client closed it). Meetings
/// started with `meeting_start` go on after that; a `meeting_run` still in progress is
/// interrupted, resumable.
pub fn serve(mut input: impl BufRead, output: Box<dyn Write + Send>, place: Place) -> Result<()> {
    let server = Arc::new(Server {
        out: Out(Arc::new(Mutex::new(output))),
        place,
        children: runs::Children::default(),
        in_flight: InFlight::default(),
        linkable: AtomicBool::new(true),
        elicits: AtomicBool::new(false),
        asked: Asked::default(),
        tasks: Mutex::default(),
        closing: AtomicBool::new(false),
    });
    let mut workers: Vec<std::thread::JoinHandle<()>> = Vec::new();
    while let Some(line) = next_line(&mut input, &server.out)? {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(worker) = server.clone().take(&line) {
            workers.push(worker);
        }
        // A finished call's thread is joined now, not when the client leaves: its stack is
        // freed only then (a long session of status calls grew without bound).
        let (done, running): (Vec<_>, Vec<_>) = workers.into_iter().partition(|w| w.is_finished());
        for w in done {
            let _ = w.join();
        }
        workers = running;
    }
    server.client_gone();
    for w in workers {
        let _ = w.join();
    }
    Ok(())
}

/// The next message line of `input`, `None` at its end; a line too long or not UTF-8 is
/// answered with an error here and skipped, and the line after it read.
fn next_line(input: &mut impl BufRead, out: &Out) -> Result<Option<String>> {
    loop {
        match read_line(input, MAX_LINE).map_err(|e| Error::Runtime(format!("stdin: {e}")))? {
            Line::End => return Ok(None),
            Line::TooLong => out.error(
                &Value::Null,
                code::INVALID_REQUEST,
                &format!("a message longer than {MAX_LINE} bytes (the most one line may hold)"),
                None,
            ),
            Line::Text(bytes) => match String::from_utf8(bytes) {
                Ok(line) => return Ok(Some(line)),
                Err(e) => {
                    let at = e.utf8_error().valid_up_to();
                    out.error(
                        &Value::Null,
                        code::PARSE,
                        &format!("parse error: not UTF-8 (byte {at})"),
                        None,
                    );
                }
            },
        }
    }
}

/// The longest message one line may hold: 4 MiB, far beyond any tool call (a meeting's
/// documents are named by path, not sent); a longer line is answered -32600 and skipped
/// without being kept.
pub const MAX_LINE: usize = 4 << 20;

/// One line of the input as [`read_line`] read it.
enum Line {
    Text(Vec<u8>),
    /// Longer than the limit: read to its end and dropped.
    TooLong,
    End,
}

/// The next line of `input` (without its `\n`), keeping at most `max` bytes of it.
fn read_line(input: &mut impl BufRead, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Text(line),
            });
        }
        let (part, found) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long && line.len() + part.len() <= max {
            line.extend_from_slice(part);
        } else {
            too_long = true;
            line = Vec::new();
        }
        let used = found.unwrap_or(buf.len());
        input.consume(used);
        if found.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            });
        }
    }
}

struct Server {
    out: Out,
    place: Place,
    /// Whether tool results may carry `resource_link` items (the handshake's revision is
    /// 2025-06-18 or later; a stateless request always may).
    linkable: AtomicBool,
    /// Whether the handshake's client takes form-mode `elicitation/create` requests.
    elicits: AtomicBool,
    /// The requests this server sent the client, waiting for its responses.
    asked: Asked,
    /// What clients said of the tasks this server runs (docs/design/mcp.md#tasks).
    tasks: Mutex<tasks::Memory>,
    /// The client has gone: subscriptions end.
    closing: AtomicBool,
    children: runs::Children,
    in_flight: InFlight,
}

/// The server's own requests to the client (an `elicitation/create`) awaiting a response: each
/// id with the channel its caller waits on. Forgetting them all (the client left) wakes every
/// caller with no answer.
#[derive(Default)]
struct Asked {
    next: AtomicU64,
    waiting: Mutex<BTreeMap<String, mpsc::Sender<Value>>>,
}

impl Asked {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, mpsc::Sender<Value>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new request id and the channel its response will come on.
    fn open(&self) -> (Value, mpsc::Receiver<Value>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = json!(format!("agent-meeting-{n}"));
        let (tx, rx) = mpsc::channel();
        self.lock().insert(id.to_string(), tx);
        (id, rx)
    }

    /// A response came: to its asker, if one waits (a response to nothing asked is dropped).
    fn answered(&self, msg: &Value) {
        let key = msg.get("id").map(Value::to_string).unwrap_or_default();
        if let Some(tx) = self.lock().remove(&key) {
            let _ = tx.send(msg.clone());
        }
    }

    fn close(&self, id: &Value) {
        self.lock().remove(&id.to_string());
    }

    fn forget_all(&self) {
        self.lock().clear();
    }
}

impl Server {
    /// The client is gone: no one will answer what we asked it, subscriptions end, and a
    /// blocking meeting stops as with Ctrl-C, resumable.
    fn client_gone(&self) {
        self.closing.store(true, Ordering::Relaxed);
        self.asked.forget_all();
        self.in_flight.with(|calls| {
            calls
                .values()
                .filter_map(|c| c.pid)
                .for_each(runs::interrupt);
        });
    }

    /// Handle one line; a `tools/call` returns the thread that answers it.
    fn take(self: Arc<Self>, line: &str) -> Option<std::thread::JoinHandle<()>> {
        let msg: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                self.out.error(
                    &Value::Null,
                    code::PARSE,
                    &format!("parse error: {e}"),
                    None,
                );
                return None;
            }
        };
        let Some(obj) = msg.as_object() else {
            // Batches went in 2025-06-18.
            self.out.error(
                &Value::Null,
                code::INVALID_REQUEST,
                "expected one JSON-RPC message (an object) per line",
                None,
            );
            return None;
        };
        let Some(method) = obj.get("method").and_then(Value::as_str) else {
            // A response: to a request of ours, or to nothing (dropped).
            self.asked.answered(&msg);
            return None;
        };
        let params = obj.get("params").cloned().unwrap_or(json!({}));
        let Some(id) = obj.get("id").cloned() else {
            self.notified(method, &params);
            return None;
        };
        // JSON-RPC 2.0: a request's id is a string or an integer (null is for errors).
        if !(id.is_string() || id.is_i64() || id.is_u64()) {
            self.out.error(
                &Value::Null,
                code::INVALID_REQUEST,
                &format!("id: {id} (expected a string or an integer)"),
                None,
            );
            return None;
        }
        let era = match self.era(&id, &params) {
            Ok(era) => era,
            Err(()) => return None,
        };
        self.request(method, id, era, params)
    }

    /// Answer request `id` (its era settled) by the method it names; a `tools/call` or a
    /// `subscriptions/listen` returns the thread that answers it.
    fn request(
        self: Arc<Self>,
        method: &str,
        id: Value,
        era: Era,
        params: Value,
    ) -> Option<std::thread::JoinHandle<()>> {
        match method {
            "initialize" => {
                let result = initialize(&params);
                // resource_link items came with 2025-06-18: an older client gets none.
                let linkable = result["protocolVersion"] != "2025-03-26";
                self.linkable.store(linkable, Ordering::Relaxed);
                let elicits = elicit::form_allowed(params.get("capabilities"));
                self.elicits.store(elicits, Ordering::Relaxed);
                self.out.result(&id, Era::Legacy, result)
            }
            "resources/list" => self.out.result(&id, era, resources::list(&self.place)),
            "resources/read" => {
                let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
                match resources::read(&self.place, uri) {
                    Ok(result) => self.out.result(&id, era, result),
                    Err((code, message)) => {
                        self.out
                            .error(&id, code, &message, Some(json!({"uri": uri})))
                    }
                }
            }
            "ping" => self.out.result(&id, era, json!({})),
            "server/discover" => self.out.result(&id, Era::Stateless, discover()),
            "tools/list" => self.out.result(&id, era, tools_list(era)),
            "tools/call" => return Some(self.call(id, era, params)),
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                match self.task_method(method, &params) {
                    Ok(result) => self.out.result(&id, era, result),
                    Err((code, message)) => self.out.error(&id, code, &message, None),
                }
            }
            "subscriptions/listen" => return self.clone().listen(id, params),
            other => self.out.error(
                &id,
                code::METHOD_NOT_FOUND,
                &format!("method not found: {other}"),
                None,
            ),
        }
        None
    }

    /// The era of a request, or `Err` once the error is sent: a protocol version in `_meta`
    /// must be one served and come with the client's capabilities.
    fn era(&self, id: &Value, params: &Value) -> std::result::Result<Era, ()> {
        let meta = params.get("_meta");
        let Some(version) = meta.and_then(|m| m.get(VERSION_KEY)) else {
            return Ok(Era::Legacy);
        };
        let requested = version.as_str().unwrap_or_default();
        if !STATELESS_VERSIONS.contains(&requested) {
            let supported: Vec<&str> = STATELESS_VERSIONS
                .iter()
                .chain(&LEGACY_VERSIONS)
                .copied()
                .collect();
            self.out.error(
                id,
                code::UNSUPPORTED_VERSION,
                "Unsupported protocol version",
                Some(json!({"supported": supported, "requested": version})),
            );
            return Err(());
        }
        if meta.and_then(|m| m.get(CAPABILITIES_KEY)).is_none() {
            self.out.error(
                id,
                code::INVALID_PARAMS,
                &format!("params._meta: {CAPABILITIES_KEY} is required with {VERSION_KEY}"),
                None,
            );
            return Err(());
        }
        Ok(Era::Stateless)
    }

    fn notified(&self, method: &str, params: &Value) {
        if method == "notifications/cancelled" {
            let Some(id) = params.get("requestId") else {
                return;
            };
            let key = id.to_string();
            let pid = self.in_flight.with(|calls| {
                calls.get_mut(&key).map(|c| {
                    c.cancelled = true;
                    c.pid
                })
            });
            if let Some(Some(pid)) = pid {
                runs::interrupt(pid);
            }
        }
        // notifications/initialized and the rest: nothing to do.
    }

    /// Ask the client and wait for its response's `result`; `None` when it answered with an
    /// error, the call was cancelled, or the client left.
    fn ask(&self, key: &str, method: &str, params: Value) -> Option<Value> {
        let (id, rx) = self.asked.open();
        self.out
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let got = loop {
            match rx.recv_timeout(std::time::Duration::from_millis(200)) {
                Ok(msg) => break msg.get("result").cloned(),
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let cancelled = self
                        .in_flight
                        .with(|calls| calls.get(key).is_none_or(|c| c.cancelled));
                    if cancelled {
                        break None;
                    }
                }
            }
        };
        self.asked.close(&id);
        got
    }
}

fn now() -> String {
    crate::meeting::events::clock_from_env().now()
}

/// The `initialize` result: the client's version when served, else the newest.
fn initialize(params: &Value) -> Value {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = if LEGACY_VERSIONS.contains(&asked) {
        asked
    } else {
        LEGACY_VERSIONS[0]
    };
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}, "resources": {"listChanged": false}},
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

/// The `tools/list` result; a stateless client may keep it (the tools never change).
fn tools_list(era: Era) -> Value {
    let tools: Vec<Value> = Tool::ALL.into_iter().map(Tool::listed).collect();
    let mut result = json!({ "tools": tools });
    if era == Era::Stateless {
        result["ttlMs"] = json!(TTL_MS);
        result["cacheScope"] = json!("public");
    }
    result
}

/// The `server/discover` result (2026-07-28).
fn discover() -> Value {
    let mut supported: Vec<&str> = STATELESS_VERSIONS.to_vec();
    supported.extend(LEGACY_VERSIONS);
    json!({
        "supportedVersions": supported,
        "capabilities": {"tools": {}, "resources": {},
                         "extensions": {tasks::EXTENSION: {}}},
        "instructions": INSTRUCTIONS,
        "ttlMs": TTL_MS,
        "cacheScope": "public",
    })
}
