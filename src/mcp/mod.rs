//! `agent-meeting mcp` (docs/design/mcp.md): a meeting as a tool for coding agents, over the
//! Model Context Protocol's stdio transport — newline-delimited JSON-RPC 2.0 on stdin and
//! stdout, nothing else on stdout, logs on stderr. Both eras of the protocol are served on one
//! stream: the `initialize` handshake (2025-06-18, 2025-11-25) and the stateless revision
//! 2026-07-28 (`server/discover`, the protocol version in each request's `_meta`,
//! `resultType` on every result). Each `tools/call` runs on a thread of its own, so a
//! meeting in progress does not hold up `meeting_status`, a ping or a cancel.

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
use runs::RunState;
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
    loop {
        let line = match read_line(&mut input, MAX_LINE)
            .map_err(|e| Error::Runtime(format!("stdin: {e}")))?
        {
            Line::End => break,
            Line::TooLong => {
                server.out.error(
                    &Value::Null,
                    code::INVALID_REQUEST,
                    &format!("a message longer than {MAX_LINE} bytes (the most one line may hold)"),
                    None,
                );
                continue;
            }
            Line::Text(bytes) => match String::from_utf8(bytes) {
                Ok(line) => line,
                Err(e) => {
                    let at = e.utf8_error().valid_up_to();
                    server.out.error(
                        &Value::Null,
                        code::PARSE,
                        &format!("parse error: not UTF-8 (byte {at})"),
                        None,
                    );
                    continue;
                }
            },
        };
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
    // The client is gone: no one will answer what we asked it, and a blocking meeting stops
    // as with Ctrl-C, resumable.
    server.closing.store(true, Ordering::Relaxed);
    server.asked.forget_all();
    server.in_flight.with(|calls| {
        calls
            .values()
            .filter_map(|c| c.pid)
            .for_each(runs::interrupt);
    });
    for w in workers {
        let _ = w.join();
    }
    Ok(())
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

/// How a `meeting_run` may ask a person the meeting waits for
/// (docs/design/mcp.md#elicitation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asking {
    /// The client takes no elicitation: the meeting ends waiting, resumable.
    No,
    /// An `elicitation/create` request during the call (handshake era).
    Request,
    /// An `input_required` result, answered by the call's retry (2026-07-28).
    InputRequired,
}

/// How many times one `meeting_run` asks through elicitation: a person's turns and one
/// second chance each, well past any meeting's loops, but never a loop with a client whose
/// every answer is unusable.
const MAX_ASKS: u32 = 16;

/// What a `meeting_run` came to: a tool result, or an `input_required` result.
enum Ran {
    Ended(String, Value, bool),
    InputRequired(Value),
}

impl Server {
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
            "tools/list" => {
                let tools: Vec<Value> = Tool::ALL.into_iter().map(Tool::listed).collect();
                let mut result = json!({ "tools": tools });
                if era == Era::Stateless {
                    result["ttlMs"] = json!(TTL_MS);
                    result["cacheScope"] = json!("public");
                }
                self.out.result(&id, era, result);
            }
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

    /// Answer a `tools/call` on a thread of its own.
    fn call(self: Arc<Self>, id: Value, era: Era, params: Value) -> std::thread::JoinHandle<()> {
        let key = id.to_string();
        self.in_flight
            .with(|calls| calls.insert(key.clone(), Call::default()));
        std::thread::spawn(move || {
            let answer = self.tool(&key, era, &params);
            let cancelled = self
                .in_flight
                .with(|calls| calls.remove(&key).is_some_and(|c| c.cancelled));
            // A cancelled request gets no response (the client has moved on).
            if cancelled {
                return;
            }
            match answer {
                Ok(result) => self.out.result(&id, era, result),
                Err((code, message)) => self.out.error(&id, code, &message, None),
            }
        })
    }

    /// A tool's result; `Err` only for a call that names no tool (a protocol error).
    fn tool(
        &self,
        key: &str,
        era: Era,
        params: &Value,
    ) -> std::result::Result<Value, (i64, String)> {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(tool) = Tool::of(name) else {
            let names: Vec<&str> = Tool::ALL.iter().map(|t| t.name()).collect();
            return Err((
                code::INVALID_PARAMS,
                format!("unknown tool {name:?} (tools: {})", names.join(", ")),
            ));
        };
        let args = params.get("arguments").cloned().unwrap_or(Value::Null);
        let token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .cloned();
        let traceparent = params
            .get("_meta")
            .and_then(|m| m.get("traceparent"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let capabilities = params.get("_meta").and_then(|m| m.get(CAPABILITIES_KEY));
        let asking = match era {
            Era::Legacy if self.elicits.load(Ordering::Relaxed) => Asking::Request,
            Era::Stateless if elicit::form_allowed(capabilities) => Asking::InputRequired,
            _ => Asking::No,
        };
        let as_task = era == Era::Stateless
            && tasks::negotiated(capabilities)
            && params.get("requestState").is_none();
        let done = match tool {
            // A client that takes tasks gets one for a meeting: it polls, the call returns.
            Tool::MeetingRun if as_task => match self.task_start(&args, traceparent) {
                Ok(task) => return Ok(task),
                Err(e) => Err(e),
            },
            Tool::MeetingRun => {
                let ran = match params.get("requestState") {
                    // The retry of a call that asked for a person's answer.
                    Some(state) if era == Era::Stateless => {
                        self.answer_retry(key, state, params.get("inputResponses"), token)
                    }
                    _ => self.meeting_run(key, &args, token, traceparent, asking),
                };
                match ran {
                    Ok(Ran::InputRequired(result)) => return Ok(result),
                    Ok(Ran::Ended(text, v, e)) => Ok((text, v, e)),
                    Err(e) => Err(e),
                }
            }
            Tool::MeetingStart => self.meeting_start(&args, traceparent),
            Tool::MeetingStatus => tools::args::<tools::StatusArgs>(&args).and_then(|a| {
                let (dir, id) = tools::run_dir_of(&self.place, &a.run_id)?;
                let cancelled = self.cancelled(&id);
                let report = runs::status(&dir, &id, &self.children, cancelled)?;
                let v = to_value(&report);
                Ok((v.to_string(), v, false))
            }),
            Tool::MeetingResult => self.meeting_result(&args),
            Tool::ListAgents => tools::args::<tools::NoArgs>(&args)
                .and_then(|_| tools::list_agents())
                .map(|v| (v.to_string(), v, false)),
        };
        let linkable = era == Era::Stateless || self.linkable.load(Ordering::Relaxed);
        Ok(self.tool_result(tool, linkable, done))
    }

    /// A tool's answer as a CallToolResult: the text, the structured content, and — for an
    /// ended meeting, where the client knows them — links to its resources.
    fn tool_result(
        &self,
        tool: Tool,
        linkable: bool,
        done: Result<(String, Value, bool)>,
    ) -> Value {
        match done {
            Ok((text, structured, is_error)) => {
                let mut content = vec![json!({"type": "text", "text": text})];
                // A meeting that ended: its report and result as resources.
                let ended = matches!(tool, Tool::MeetingRun | Tool::MeetingResult);
                if let (true, true, Ok(result)) = (
                    ended,
                    linkable,
                    serde_json::from_value::<crate::model::MeetingResult>(structured.clone()),
                ) {
                    content.extend(resources::links(&self.place, &result));
                }
                json!({
                    "content": content,
                    "structuredContent": structured,
                    "isError": is_error,
                })
            }
            // A meeting that cannot run is the tool's answer, not a protocol error.
            Err(e) => json!({
                "content": [{"type": "text", "text": e.to_string()}],
                "isError": true,
            }),
        }
    }

    /// `meeting_run` as a task: the meeting started detached, the task's first state.
    fn task_start(&self, args: &Value, traceparent: Option<String>) -> Result<Value> {
        let a: tools::MeetingArgs = tools::args(args)?;
        let mut launch = tools::launch(&self.place, &a, &now())?.with_traceparent(traceparent);
        launch.args.push("--quiet".into());
        runs::start_detached(&self.place, &launch, &self.children)?;
        let created = tasks::created_at(&launch.run_id).unwrap_or_else(now);
        let state = tasks::State::Working("the meeting has started".into());
        let mut task = tasks::detailed(&launch.run_id, &state, &created, &created);
        task["resultType"] = json!("task");
        Ok(task)
    }

    /// `tasks/get`, `tasks/update` and `tasks/cancel` (the tasks extension).
    fn task_method(
        &self,
        method: &str,
        params: &Value,
    ) -> std::result::Result<Value, (i64, String)> {
        let id = params.get("taskId").and_then(Value::as_str).ok_or((
            code::INVALID_PARAMS,
            "taskId: expected a string".to_string(),
        ))?;
        let elicits =
            elicit::form_allowed(params.get("_meta").and_then(|m| m.get(CAPABILITIES_KEY)));
        let (state, updated) = self.task_state(id, elicits)?;
        let memory = |f: &mut dyn FnMut(&mut tasks::Memory)| {
            f(&mut self.tasks.lock().unwrap_or_else(|e| e.into_inner()))
        };
        match method {
            "tasks/get" => {
                let created = tasks::created_at(id).unwrap_or_else(|| updated.clone());
                Ok(tasks::detailed(id, &state, &created, &updated))
            }
            "tasks/cancel" => {
                memory(&mut |m| {
                    m.cancelled.insert(id.to_string());
                });
                if let Some(pid) = self.children.pid(id) {
                    runs::interrupt(pid);
                }
                Ok(json!({}))
            }
            _ => {
                // tasks/update: only the outstanding request's answer counts; others are
                // ignored, as the extension asks.
                let tasks::State::InputRequired(w) = &state else {
                    return Ok(json!({}));
                };
                let Some(response) = params
                    .get("inputResponses")
                    .and_then(|r| r.get(tasks::input_key(w.call)))
                else {
                    return Ok(json!({}));
                };
                match elicit::reply(response, w) {
                    elicit::Reply::Answer(answer) => {
                        let internal = |e: Error| (code::INTERNAL, e.to_string());
                        let mut launch = self.answered(id, answer, None).map_err(internal)?;
                        launch.args.push("--quiet".into());
                        runs::start_detached(&self.place, &launch, &self.children)
                            .map_err(internal)?;
                        memory(&mut |m| {
                            m.answered.insert(id.to_string(), w.call);
                        });
                    }
                    elicit::Reply::NoAnswer => memory(&mut |m| {
                        m.declined.insert(id.to_string(), w.call);
                    }),
                }
                Ok(json!({}))
            }
        }
    }

    /// Whether the client cancelled the meeting of run `id` (a task's cancel).
    fn cancelled(&self, id: &str) -> bool {
        let m = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        m.cancelled.contains(id)
    }

    /// Where task `id` stands, and when it last changed: its run folder read as
    /// `meeting_status` reads it, with what the client told this server.
    fn task_state(
        &self,
        id: &str,
        elicits: bool,
    ) -> std::result::Result<(tasks::State, String), (i64, String)> {
        let unknown = || (code::INVALID_PARAMS, format!("unknown task {id:?}"));
        let dir = self.place.runs.join(id);
        if !resources::safe_id(id) || !dir.join("meeting.json").is_file() {
            return Err(unknown());
        }
        // What the client told this server is read after the run folder: a cancel is recorded
        // before its signal, so a meeting that stopped of it is never taken for one that ended.
        let told = || {
            let m = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
            (
                m.cancelled.contains(id),
                m.declined.get(id).copied(),
                m.answered.get(id).copied(),
            )
        };
        let status = match runs::status(&dir, id, &self.children, false) {
            Ok(status) => status,
            // No board yet: still starting, or stopped before it began (a cancel that came
            // during the collection) — a state of the task, not a protocol error.
            Err(e) => {
                let at = tasks::created_at(id).unwrap_or_else(now);
                let state = if runs::running(&dir, id, &self.children) {
                    tasks::State::Working("starting".into())
                } else if told().0 {
                    tasks::State::Cancelled(format!(
                        "stopped before the meeting began ({e}); start it again"
                    ))
                } else {
                    let done: Result<(String, Value, bool)> = Err(e);
                    tasks::State::Completed(self.tool_result(Tool::MeetingResult, true, done))
                };
                return Ok((state, at));
            }
        };
        let updated = status.last_event["ts"]
            .as_str()
            .map(str::to_string)
            .or_else(|| tasks::created_at(id))
            .unwrap_or_else(now);
        let (cancelled, declined, answered) = told();
        let resume = format!("resumable: meeting_run {{\"resume\": \"{id}\"}}");
        let state = match status.status {
            RunState::Running if cancelled => tasks::State::Working("stopping".into()),
            RunState::Running => {
                tasks::State::Working(format!("loop {} of {}", status.loops, status.max_loops))
            }
            RunState::Waiting => {
                let w = crate::driver::RunDir { path: dir }
                    .waiting()
                    .ok()
                    .flatten()
                    .ok_or_else(unknown)?;
                if cancelled {
                    tasks::State::Cancelled(format!(
                        "cancelled while waiting for {}; {resume}",
                        w.agent
                    ))
                } else if answered == Some(w.call) {
                    tasks::State::Working(format!("{}'s answer given", w.agent))
                } else if elicits && declined != Some(w.call) {
                    tasks::State::InputRequired(Box::new(w))
                } else {
                    tasks::State::Completed(self.result_of(id))
                }
            }
            RunState::Stopped if cancelled => tasks::State::Cancelled(format!("stopped; {resume}")),
            _ => tasks::State::Completed(self.result_of(id)),
        };
        Ok((state, updated))
    }

    /// The CallToolResult of a meeting that will not go on by itself: `meeting_result`'s.
    fn result_of(&self, id: &str) -> Value {
        let done = self.meeting_result(&json!({"run_id": id}));
        self.tool_result(Tool::MeetingResult, true, done)
    }

    /// `subscriptions/listen` for task status: acknowledged with the task ids it will follow,
    /// then a `notifications/tasks` whenever one's status (or its message) changes, until the
    /// client cancels the request or leaves.
    fn listen(self: Arc<Self>, id: Value, params: Value) -> Option<std::thread::JoinHandle<()>> {
        let capabilities = params.get("_meta").and_then(|m| m.get(CAPABILITIES_KEY));
        let asked: Vec<String> = params["notifications"]["taskIds"]
            .as_array()
            .map(|ids| {
                ids.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if !asked.is_empty() && !tasks::negotiated(capabilities) {
            self.out.error(
                &id,
                code::MISSING_CAPABILITY,
                "Missing required client capability",
                Some(json!({"requiredCapabilities": {"extensions": {tasks::EXTENSION: {}}}})),
            );
            return None;
        }
        let elicits = elicit::form_allowed(capabilities);
        let followed: Vec<String> = asked
            .into_iter()
            .filter(|t| self.task_state(t, elicits).is_ok())
            .collect();
        let key = id.to_string();
        self.in_flight
            .with(|calls| calls.insert(key.clone(), Call::default()));
        let meta = json!({ SUBSCRIPTION_KEY: id });
        let mut ack = json!({"_meta": meta, "notifications": {}});
        if !followed.is_empty() {
            ack["notifications"]["taskIds"] = json!(followed);
        }
        self.out.send(&json!({"jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged", "params": ack}));
        Some(std::thread::spawn(move || {
            let mut last: BTreeMap<String, (String, Value)> = BTreeMap::new();
            loop {
                let stop = self.closing.load(Ordering::Relaxed)
                    || self
                        .in_flight
                        .with(|calls| calls.get(&key).is_none_or(|c| c.cancelled));
                if stop {
                    break;
                }
                for t in &followed {
                    if last.get(t).is_some_and(|(s, _)| {
                        matches!(s.as_str(), "completed" | "cancelled" | "failed")
                    }) {
                        continue;
                    }
                    let Ok((state, updated)) = self.task_state(t, elicits) else {
                        continue;
                    };
                    let created = tasks::created_at(t).unwrap_or_else(|| updated.clone());
                    let mut task = tasks::detailed(t, &state, &created, &updated);
                    let seen = (state.status().to_string(), task["statusMessage"].clone());
                    if last.get(t) == Some(&seen) {
                        continue;
                    }
                    last.insert(t.clone(), seen);
                    task["_meta"] = meta.clone();
                    self.out
                        .send(&json!({"jsonrpc": "2.0", "method": "notifications/tasks",
                        "params": task}));
                }
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            self.in_flight.with(|calls| calls.remove(&key));
        }))
    }

    fn meeting_run(
        &self,
        key: &str,
        args: &Value,
        token: Option<Value>,
        traceparent: Option<String>,
        asking: Asking,
    ) -> Result<Ran> {
        let a: tools::MeetingArgs = tools::args(args)?;
        let launch = tools::launch(&self.place, &a, &now())?.with_traceparent(traceparent);
        self.run_to_end(key, launch, token, asking)
    }

    /// Run a meeting to its end; one that waits for a person asks them through the client
    /// where it can (`asking`), and goes on with their answer.
    fn run_to_end(
        &self,
        key: &str,
        mut launch: runs::Launch,
        token: Option<Value>,
        asking: Asking,
    ) -> Result<Ran> {
        let mut last = 0.0f64;
        let mut asked = 0;
        loop {
            let result = self.run_once(key, &launch, &token, &mut last)?;
            let waiting = match (result.status, asking) {
                (crate::model::MeetingStatus::Waiting, Asking::Request | Asking::InputRequired) => {
                    crate::driver::RunDir {
                        path: launch.run_dir.clone(),
                    }
                    .waiting()?
                }
                _ => None,
            };
            let Some(w) = waiting.filter(|_| asked < MAX_ASKS) else {
                return Ok(ended(&result));
            };
            asked += 1;
            if asking == Asking::InputRequired {
                return Ok(Ran::InputRequired(input_required(&launch.run_id, &w)));
            }
            let reply = self
                .ask(key, "elicitation/create", elicit::form(&w))
                .map(|r| elicit::reply(&r, &w));
            let Some(elicit::Reply::Answer(answer)) = reply else {
                // Declined, cancelled, or the client left: the meeting waits, resumable.
                return Ok(ended(&result));
            };
            launch = self.answered(&launch.run_id, answer, launch.traceparent.clone())?;
        }
    }

    /// The `meeting resume` of a waiting meeting with a person's answer.
    fn answered(
        &self,
        run_id: &str,
        answer: Value,
        traceparent: Option<String>,
    ) -> Result<runs::Launch> {
        let a = tools::MeetingArgs {
            resume: Some(run_id.to_string()),
            answer: Some(answer),
            ..Default::default()
        };
        Ok(tools::launch(&self.place, &a, &now())?.with_traceparent(traceparent))
    }

    /// The retry of a `meeting_run` that came back `input_required` (2026-07-28): the answer
    /// in `inputResponses` goes to the meeting `requestState` names, if it still waits for
    /// that answer; declined, the meeting stays waiting.
    fn answer_retry(
        &self,
        key: &str,
        state: &Value,
        responses: Option<&Value>,
        token: Option<Value>,
    ) -> Result<Ran> {
        let bad = || {
            Error::Usage(
                "requestState: not one this server gave (retry with the requestState of its input_required result)"
                    .into(),
            )
        };
        let (run_id, call) = state
            .as_str()
            .and_then(elicit::parse_state)
            .ok_or_else(bad)?;
        let (dir, run_id) = tools::run_dir_of(&self.place, &run_id)?;
        let waiting = crate::driver::RunDir { path: dir }
            .waiting()?
            .filter(|w| w.call == call);
        let Some(w) = waiting else {
            return Err(Error::Usage(format!(
                "meeting {run_id} no longer waits for this answer (it was given, or the meeting moved on); meeting_status shows where it stands"
            )));
        };
        let reply = responses
            .and_then(|r| r.get(elicit::INPUT_KEY))
            .map(|r| elicit::reply(r, &w));
        let launch = match reply {
            Some(elicit::Reply::Answer(answer)) => self.answered(&run_id, answer, None)?,
            // No answer: the meeting is asked where it stands, and still waits.
            _ => {
                let a = tools::MeetingArgs {
                    resume: Some(run_id.clone()),
                    ..Default::default()
                };
                let launch = tools::launch(&self.place, &a, &now())?;
                return self.run_to_end(key, launch, token, Asking::No);
            }
        };
        self.run_to_end(key, launch, token, Asking::InputRequired)
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

    /// Run one `meeting` command line to its end, sending progress where a token asks for it.
    fn run_once(
        &self,
        key: &str,
        launch: &runs::Launch,
        token: &Option<Value>,
        last: &mut f64,
    ) -> Result<crate::model::MeetingResult> {
        let mut launch = launch.clone();
        if token.is_none() {
            // No one asked for progress: the meeting runs as `-q` does, drawing none.
            launch.args.push("--quiet".into());
        }
        let progress = |line: &str| {
            let (Some(token), Some((n, max))) = (token, crate::driver::loop_of_line(line)) else {
                return;
            };
            // Monotonic: within a loop each line moves a little further, never to the next.
            let base = n.saturating_sub(1) as f64;
            let step = if *last >= base && *last < base + 1.0 {
                *last + (base + 1.0 - *last) / 2.0
            } else {
                base + 0.5
            };
            if step <= *last {
                return;
            }
            *last = step;
            self.out.send(
                &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": step, "total": max,
                           "message": line}}),
            );
        };
        let ended = runs::run_blocking(
            &self.place,
            &launch,
            |pid| {
                self.in_flight.with(|calls| {
                    if let Some(c) = calls.get_mut(key) {
                        c.pid = Some(pid);
                    }
                })
            },
            progress,
        )?;
        ended.result.ok_or_else(|| {
            Error::Runtime(if ended.said.is_empty() {
                format!("meeting stopped (exit {:?})", ended.code)
            } else {
                ended.said.join("\n")
            })
        })
    }

    fn meeting_start(
        &self,
        args: &Value,
        traceparent: Option<String>,
    ) -> Result<(String, Value, bool)> {
        let a: tools::MeetingArgs = tools::args(args)?;
        let mut launch = tools::launch(&self.place, &a, &now())?.with_traceparent(traceparent);
        // Its progress is read from the run folder (meeting_status), not drawn: `-q`.
        launch.args.push("--quiet".into());
        runs::start_detached(&self.place, &launch, &self.children)?;
        let v = to_value(&runs::Started {
            run_id: launch.run_id.clone(),
            run_dir: launch.run_dir.display().to_string(),
        });
        Ok((
            format!(
                "Meeting {} started in {}; ask meeting_status or meeting_result (wait_seconds up to {}).",
                launch.run_id,
                launch.run_dir.display(),
                tools::MAX_WAIT_SECONDS
            ),
            v,
            false,
        ))
    }

    fn meeting_result(&self, args: &Value) -> Result<(String, Value, bool)> {
        let a: tools::ResultArgs = tools::args(args)?;
        let (dir, id) = tools::run_dir_of(&self.place, &a.run_id)?;
        let seconds = a.wait_seconds.unwrap_or(0).min(tools::MAX_WAIT_SECONDS);
        let wait = std::time::Duration::from_secs(seconds.into());
        let until = std::time::Instant::now() + wait;
        // Only the lock and the child are watched while waiting; the board is read once.
        while runs::running(&dir, &id, &self.children) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let status = runs::status(&dir, &id, &self.children, false)?;
        if status.status == RunState::Running {
            return Err(Error::Runtime(format!(
                "meeting {id} is still running (loop {} of {}); ask again with wait_seconds",
                status.loops, status.max_loops
            )));
        }
        match runs::ended_result(&dir)? {
            Some(result) => {
                let error = runs::is_error(result.status);
                Ok((tools::summary_text(&result), to_value(&result), error))
            }
            None => match &status.waiting {
                Some(w) => Err(Error::Runtime(format!(
                    "meeting {id} waits for {}'s answer to: {}; meeting_status shows the template; answer with meeting_start {{\"resume\": \"{id}\", \"answer\": ...}}",
                    w.agent, w.question
                ))),
                None => Err(Error::Runtime(format!(
                    "meeting {id} has stopped before its end ({} of {} loops); continue it with meeting_start {{\"resume\": \"{id}\"}}",
                    status.loops, status.max_loops
                ))),
            },
        }
    }
}

/// An ended meeting as a tool's answer.
fn ended(result: &crate::model::MeetingResult) -> Ran {
    Ran::Ended(
        tools::summary_text(result),
        to_value(result),
        runs::is_error(result.status),
    )
}

/// The `input_required` result of a meeting waiting for `w` (2026-07-28): the form, and the
/// state the retry brings back.
fn input_required(run_id: &str, w: &crate::model::Waiting) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {elicit::INPUT_KEY: {"method": "elicitation/create", "params": elicit::form(w)}},
        "requestState": elicit::state(run_id, w),
    })
}

/// A tool's structured content (our own types, which always serialize).
fn to_value(result: &impl serde::Serialize) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
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
