//! `agent-meeting mcp` (docs/design/mcp.md): scripted JSON-RPC sessions over stdio, as a coding
//! agent's MCP client speaks them — the handshake of both protocol eras, the tools and their
//! schemas, a meeting run with progress, a detached meeting followed by status and result, a
//! cancel that leaves a resumable meeting, a bad meeting file as a tool error, an unknown
//! method — and nothing but JSON-RPC on stdout. Meetings run on `--provider sample` (or a
//! replay of one, for a meeting slow enough to cancel).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};

use serde_json::{json, Value};

use crate::fixtures::{pm, Cassette, NOW};
use crate::harness::{clean_env, Workdir, HANG_GUARD};

/// A running server and the messages it wrote, one JSON document per stdout line.
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every stdout line, for the "nothing but JSON-RPC" check.
    seen: Vec<String>,
    next_id: u64,
    /// `tools/list`'s tools, asked once: the output schemas each result is checked against.
    tools: Option<Value>,
}

impl Session {
    /// `agent-meeting mcp` run in `work`, its run folders in `work/runs`, with `env` added.
    fn start(work: &Workdir, env: &[(&str, &str)]) -> Session {
        Session::spawn(Command::new(env!("CARGO_BIN_EXE_agent-meeting")), work, env)
    }

    /// The server as a script's `agent-meeting mcp &` starts it: SIGINT and SIGQUIT ignored,
    /// which its meetings inherit (and keep, as a well-behaved program does).
    fn start_in_background(work: &Workdir, env: &[(&str, &str)]) -> Session {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "trap '' INT QUIT; exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_agent-meeting"));
        Session::spawn(cmd, work, env)
    }

    /// [`Session::start`] with the server's stderr (its log, the meetings' lines) in `log`.
    fn start_logged(work: &Workdir, env: &[(&str, &str)], log: &std::path::Path) -> Session {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-meeting"));
        cmd.stderr(std::fs::File::create(log).unwrap());
        work.write("keep-stderr", "");
        Session::spawn(cmd, work, env)
    }

    fn spawn(mut cmd: Command, work: &Workdir, env: &[(&str, &str)]) -> Session {
        clean_env(&mut cmd);
        cmd.current_dir(work.path())
            .args(["mcp", "--run-dir", "runs"])
            .env("AGENT_MEETING_NOW", NOW)
            .env("XDG_DATA_HOME", work.join("data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if !work.join("keep-stderr").exists() {
            cmd.stderr(Stdio::null());
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("agent-meeting mcp starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Session {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
            next_id: 0,
            tools: None,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, msg: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    /// Send a request; its id.
    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The next message the server wrote.
    fn next(&mut self) -> Value {
        let line = match self.lines.recv_timeout(HANG_GUARD) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("the server said nothing for {HANG_GUARD:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed stdout"),
        };
        self.seen.push(line.clone());
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"))
    }

    /// The response to request `id`, and the notifications that came before it.
    fn response(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut notes = Vec::new();
        loop {
            let m = self.next();
            if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
                return (m, notes);
            }
            assert!(m.get("id").is_none(), "a response to another request: {m}");
            notes.push(m);
        }
    }

    /// Call a method and return its result (panicking on an error response).
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        let (m, _) = self.response(id);
        m.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method}: {m}"))
    }

    fn handshake(&mut self) -> Value {
        let r = self.call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    /// Call a tool; its structured content, whatever the meeting's status, validates against
    /// the output schema `tools/list` gives for the tool (a client's SDK checks it so).
    fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let result = self.call("tools/call", json!({"name": name, "arguments": arguments}));
        if let Some(content) = result.get("structuredContent") {
            if self.tools.is_none() {
                self.tools = Some(self.call("tools/list", json!({}))["tools"].clone());
            }
            let tools = self.tools.as_ref().unwrap();
            assert_valid(&tool_schema(tools, name, "outputSchema"), content, name);
        }
        result
    }

    /// Close stdin; every line the server wrote was a JSON-RPC 2.0 message.
    fn end(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(std::time::Duration::from_secs(5)) {
            self.seen.push(line);
        }
        for line in &self.seen {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("{line}"));
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
        }
        assert!(
            status.success(),
            "the server exits 0 when stdin ends: {status}"
        );
    }
}

/// The meeting every test runs: a topic, one document, two built-in agents, 3 loops.
fn meeting_args(work: &Workdir) -> Value {
    let doc = work.write(
        "docs/volumes.md",
        "# Support volumes\n\nThe team answered 3,800 emails last month and 140 of them were answered twice.\n",
    );
    json!({"topic": "Move support to a shared inbox tool?", "documents": [doc],
           "agents": ["arch", "biz"], "max_loops": 3})
}

/// `content` is valid against `schema` (JSON Schema 2020-12, the one MCP names).
fn assert_valid(schema: &Value, content: &Value, what: &str) {
    let validator = jsonschema::draft202012::new(schema)
        .unwrap_or_else(|e| panic!("{what}'s output schema is no JSON Schema: {e}: {schema}"));
    let errors: Vec<String> = validator
        .iter_errors(content)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}'s structured content breaks its output schema: {errors:?}\n{content}"
    );
}

fn tool_schema(tools: &Value, name: &str, key: &str) -> Value {
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))[key]
        .clone()
}

#[test]
fn both_eras_shake_hands_and_list_the_tools() {
    let work = Workdir::new();
    let mut s = Session::start(&work, &[]);
    let init = s.handshake();
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["serverInfo"]["name"], "agent-meeting");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    // A version it does not serve: answered with its newest, not an error.
    let other = s.call(
        "initialize",
        json!({"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(other["protocolVersion"], "2025-11-25");
    assert_eq!(s.call("ping", json!({})), json!({}));
    let tools = s.call("tools/list", json!({}))["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "meeting_run",
            "meeting_start",
            "meeting_status",
            "meeting_result",
            "list_agents"
        ]
    );
    for t in tools.as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert!(t["outputSchema"].is_object(), "{t}");
        assert!(t["annotations"]["openWorldHint"].is_boolean(), "{t}");
    }
    let run_input = tool_schema(&tools, "meeting_run", "inputSchema");
    assert!(
        run_input["properties"]["documents"].is_object(),
        "{run_input}"
    );
    // The stateless revision: discover, and every result says it is complete.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let found = s.call("server/discover", json!({"_meta": meta}));
    assert_eq!(found["resultType"], "complete");
    assert!(found["supportedVersions"]
        .as_array()
        .unwrap()
        .contains(&json!("2026-07-28")));
    assert!(
        found["ttlMs"].is_u64() && found["cacheScope"].is_string(),
        "{found}"
    );
    let listed = s.call("tools/list", json!({"_meta": meta}));
    assert_eq!(listed["resultType"], "complete");
    assert!(listed["ttlMs"].is_u64(), "{listed}");
    // A version nobody serves, a version without capabilities, a method nobody has, a line
    // that is no JSON: protocol errors with their codes.
    let id = s.request(
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01",
                         "io.modelcontextprotocol/clientCapabilities": {}}}),
    );
    let (e, _) = s.response(id);
    assert_eq!(e["error"]["code"], -32022, "{e}");
    assert_eq!(e["error"]["data"]["requested"], "1900-01-01");
    let id = s.request(
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    );
    assert_eq!(s.response(id).0["error"]["code"], -32602);
    let id = s.request("prompts/list", json!({}));
    assert_eq!(s.response(id).0["error"]["code"], -32601);
    s.stdin.as_mut().unwrap().write_all(b"{not json\n").unwrap();
    let e = s.next();
    assert_eq!(e["error"]["code"], -32700, "{e}");
    let agents = s.tool("list_agents", json!({}));
    let listed = agents["structuredContent"]["agents"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        listed
            .iter()
            .any(|a| a["name"] == "arch" && a["role"] == "Software Architect"),
        "{agents}"
    );
    s.end();
}

#[test]
fn a_meeting_runs_to_its_report_with_progress() {
    let work = Workdir::new();
    let mut s = Session::start(&work, &[("AGENT_MEETING_PROVIDER", "sample")]);
    s.handshake();
    let tools = s.call("tools/list", json!({}))["tools"].clone();
    let id = s.request(
        "tools/call",
        json!({"name": "meeting_run", "arguments": meeting_args(&work),
               "_meta": {"progressToken": "run-1"}}),
    );
    let (response, notes) = s.response(id);
    let result = &response["result"];
    assert_eq!(result["isError"], false, "{result}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["status"], "finished", "{structured}");
    jsonschema::validate(
        &tool_schema(&tools, "meeting_run", "outputSchema"),
        structured,
    )
    .unwrap_or_else(|e| panic!("the result fits the outputSchema: {e}"));
    let report = structured["report_file"].as_str().unwrap();
    assert!(
        std::path::Path::new(report).starts_with(work.path()),
        "{report}"
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("Report: {report}")) && text.contains("## Recommendation"),
        "{text}"
    );
    // The document was read: the sample answers quote it.
    assert!(std::fs::read_to_string(report)
        .unwrap()
        .contains("docs/volumes.md"));
    // Progress: this call's token, rising, out of the loop limit, a line per stage.
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| &n["params"])
        .collect();
    assert!(progress.len() >= 3, "{notes:?}");
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    assert!(progress
        .iter()
        .all(|p| p["progressToken"] == "run-1" && p["total"] == 3 && p["message"].is_string()));
    s.end();
}

/// `council: true` opens the meeting with a council round: the report has its Council
/// section (the sample provider answers every vote and ranking).
#[test]
fn a_meeting_with_a_council_reports_it() {
    let work = Workdir::new();
    let mut s = Session::start(&work, &[("AGENT_MEETING_PROVIDER", "sample")]);
    s.handshake();
    let mut args = meeting_args(&work);
    args["agents"] = json!(["arch", "biz", "sre"]);
    args["council"] = json!(true);
    let result = s.tool("meeting_run", args);
    assert_eq!(result["isError"], false, "{result}");
    let report = result["structuredContent"]["report_file"].as_str().unwrap();
    let text = std::fs::read_to_string(report).unwrap();
    assert!(text.contains("## Council"), "{text}");
    assert_eq!(text.matches("Ranked by the others:").count(), 3, "{text}");
    // council_adaptive: the sample's members all vote for the first option with confidence,
    // so the first two agree and the third is never seated.
    let mut args = meeting_args(&work);
    args["agents"] = json!(["arch", "biz", "sre"]);
    args["council_adaptive"] = json!(true);
    let result = s.tool("meeting_run", args);
    let report = result["structuredContent"]["report_file"].as_str().unwrap();
    let text = std::fs::read_to_string(report).unwrap();
    assert!(
        text.contains("Adaptive council: arch and biz were seated first"),
        "{text}"
    );
    s.end();
}

#[test]
fn a_started_meeting_is_followed_to_its_result_and_a_bad_one_is_a_tool_error() {
    let work = Workdir::new();
    let mut s = Session::start(&work, &[("AGENT_MEETING_PROVIDER", "sample")]);
    s.handshake();
    // As a model or a generic client may send them: a number as text, names in one string.
    let mut args = meeting_args(&work);
    args["max_loops"] = json!("3");
    args["agents"] = json!("arch, biz");
    // A budget, as the command line sets one (MeetingOptions: the tool's schema is its).
    args["max_total_tokens"] = json!("400000");
    // An option added after the tools were written reaches them with no code of theirs.
    args["review_rounds"] = json!(2);
    let started = s.tool("meeting_start", args);
    assert_eq!(started["isError"], false, "{started}");
    let run_id = started["structuredContent"]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let saved: Value =
        serde_json::from_str(&work.read(format!("runs/{run_id}/meeting.json"))).unwrap();
    assert_eq!(saved["board"]["max_total_tokens"], 400000, "{saved}");
    assert_eq!(saved["board"]["review_rounds"], 2, "{saved}");
    let done = s.tool(
        "meeting_result",
        json!({"run_id": run_id, "wait_seconds": 50}),
    );
    assert_eq!(done["structuredContent"]["status"], "finished", "{done}");
    assert_eq!(done["structuredContent"]["trace_id"], run_id.as_str());
    let status = s.tool("meeting_status", json!({"run_id": run_id}));
    let st = &status["structuredContent"];
    assert_eq!(st["status"], "finished", "{status}");
    assert_eq!(
        (st["loop"].as_u64(), st["max_loops"].as_u64()),
        (Some(3), Some(3))
    );
    assert!(st["calls"].as_u64().unwrap() > 0 && st["last_event"].is_object());
    // Bad input is the tool's answer, with the program's own message.
    work.write("bad.yaml", "topic: [not, a, string]\n");
    let bad = s.tool(
        "meeting_run",
        json!({"meeting_file": "bad.yaml", "agents": ["arch"]}),
    );
    assert_eq!(bad["isError"], true, "{bad}");
    let said = bad["content"][0]["text"].as_str().unwrap();
    assert!(
        said.contains("bad.yaml") && said.contains("topic"),
        "{said}"
    );
    let unknown = s.tool("meeting_run", json!({"topic": "x", "agent": ["arch"]}));
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert!(
        unknown["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("agent"),
        "{unknown}"
    );
    let free = s.tool("meeting_run", json!({"topic": "x", "max_cost": 0}));
    assert_eq!(free["isError"], true, "{free}");
    assert!(
        free["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("max_cost"),
        "{free}"
    );
    let nothing = s.tool("meeting_status", json!({"run_id": "no-such-run"}));
    assert_eq!(nothing["isError"], true, "{nothing}");
    // An unknown tool is a protocol error.
    let id = s.request(
        "tools/call",
        json!({"name": "meeting_fly", "arguments": {}}),
    );
    assert_eq!(s.response(id).0["error"]["code"], -32602);
    s.end();
}

/// A cassette of the test meeting with every answer `delay_ms` late: a meeting slow enough
/// to cancel half-way. The first two answers are the slowest, so a cancel that a loaded
/// machine delivers late still lands while they are awaited, long before the meeting's end
/// (the cancel stops it at the next stage's end).
fn slow_cassette(work: &Workdir) -> std::path::PathBuf {
    let mut s = Session::start(work, &[("AGENT_MEETING_PROVIDER", "sample")]);
    s.handshake();
    let done = s.tool("meeting_run", meeting_args(work));
    let run = done["structuredContent"]["run_dir"]
        .as_str()
        .unwrap()
        .to_string();
    s.end();
    let log = std::fs::read_to_string(std::path::Path::new(&run).join("llm.jsonl")).unwrap();
    let lines: Vec<String> = log
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let v: Value = serde_json::from_str(l).unwrap();
            let delay_ms = if i < 2 { 1_500 } else { 150 };
            json!({"seq": v["seq"], "caller": v["caller"], "response": v["response"],
                   "delay_ms": delay_ms})
            .to_string()
        })
        .collect();
    work.write("slow.jsonl", lines.join("\n") + "\n")
}

#[test]
fn a_cancelled_meeting_stops_resumable_and_resumes_to_its_end() {
    let work = Workdir::new();
    let cassette = slow_cassette(&work);
    let cassette = cassette.to_str().unwrap();
    // Started in the background, where SIGINT is ignored: a cancel must still stop it.
    let mut s = Session::start_in_background(
        &work,
        &[
            ("AGENT_MEETING_PROVIDER", "replay"),
            ("MEETING_CASSETTE", cassette),
        ],
    );
    s.handshake();
    let id = s.request(
        "tools/call",
        json!({"name": "meeting_run", "arguments": meeting_args(&work),
               "_meta": {"progressToken": 7}}),
    );
    // The first progress line: the meeting runs. Then the client cancels it.
    let first = s.next();
    assert_eq!(first["method"], "notifications/progress", "{first}");
    s.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": id, "reason": "the user changed their mind"}}),
    );
    let runs: Vec<_> = std::fs::read_dir(work.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // The slow cassette's own meeting and this one.
    assert_eq!(runs.len(), 2, "{runs:?}");
    let before: Vec<String> = runs;
    // It stops between stages, resumable; the cancelled request gets no response.
    let mut status;
    let run_id = loop {
        let mut found = None;
        for r in &before {
            let st = s.tool("meeting_status", json!({"run_id": r}));
            if st["structuredContent"]["status"] != "finished" {
                found = Some((r.clone(), st));
            }
        }
        let (r, st) = found.expect("the cancelled meeting is not finished");
        status = st;
        if status["structuredContent"]["status"] != "running" {
            break r;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(status["structuredContent"]["status"], "stopped", "{status}");
    let resumed = s.tool("meeting_run", json!({"resume": run_id}));
    assert_eq!(
        resumed["structuredContent"]["status"], "finished",
        "{resumed}"
    );
    assert!(
        s.seen
            .iter()
            .all(|l| serde_json::from_str::<Value>(l).unwrap()["id"] != json!(id)),
        "no response to the cancelled call"
    );
    s.end();
}

/// A meeting that waits for a person (docs/design/agent-turn.md#waiting-for-a-person):
/// meeting_run says so, meeting_status shows the question and the template, and
/// meeting_run {resume, answer} finishes it with the answer.
#[test]
fn a_waiting_meeting_is_reported_and_takes_its_answer() {
    let work = Workdir::new();
    work.write(
        "cfg/agent-meeting/agents/ana.yaml",
        "name: ana\nkind: human\nrole: Ops lead\ndescription: Knows the nights on call.\n",
    );
    let c = Cassette::new()
        .pm(pm::call("ana", "Who gets paged at night?"))
        .at(3)
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let cassette = c.display().to_string();
    let cfg = work.join("cfg").display().to_string();
    let mut s = Session::start(
        &work,
        &[
            ("AGENT_MEETING_PROVIDER", "replay"),
            ("MEETING_CASSETTE", &cassette),
            ("XDG_CONFIG_HOME", &cfg),
            ("MEETING_HUMAN_TTY", "/nonexistent/tty"),
        ],
    );
    s.handshake();
    let ran = s.tool(
        "meeting_run",
        json!({"topic": "Who is on call?", "agents": ["arch", "ana"]}),
    );
    assert_eq!(ran["structuredContent"]["status"], "waiting", "{ran}");
    let run_id = ran["structuredContent"]["trace_id"]
        .as_str()
        .unwrap()
        .to_string();
    let text = ran["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("It waits for a person's answer"), "{text}");
    let status = s.tool("meeting_status", json!({"run_id": run_id}));
    let st = &status["structuredContent"];
    assert_eq!(st["status"], "waiting", "{status}");
    assert_eq!(st["waiting"]["agent"], "ana");
    assert_eq!(st["waiting"]["question"], "Who gets paged at night?");
    assert!(st["waiting"]["answer_text"]
        .as_str()
        .unwrap()
        .contains("[response]"));
    let result = s.tool("meeting_result", json!({"run_id": run_id}));
    assert_eq!(result["isError"], true);
    assert!(result["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("waits for ana's answer"));
    let done = s.tool(
        "meeting_run",
        json!({"resume": run_id, "answer": {"response": "Priya, by phone.", "key_points": ["Priya is paged"]}}),
    );
    assert_eq!(done["structuredContent"]["status"], "finished", "{done}");
    let report =
        std::fs::read_to_string(done["structuredContent"]["report_file"].as_str().unwrap())
            .unwrap();
    assert!(report.contains("The meeting waited for ana"), "{report}");
    s.end();
}

/// An MCP resume writes nothing outside the folders the server was started with
/// (docs/design/mcp.md#resume): a report path planted in one of its run folders becomes
/// `reports/<run id>.md` under the server's folder, and a run folder elsewhere is refused.
#[test]
fn a_resume_writes_nothing_outside_the_servers_folders() {
    let work = Workdir::new();
    crate::fixtures::stopped_run(work.path());
    let planted = work.join("home/.bash_aliases");
    std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
    let file = work.join("runs/demo-test/meeting.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["stage_overrides"] = json!({});
    v["report_file"] = json!(planted);
    std::fs::write(&file, v.to_string()).unwrap();
    let elsewhere = crate::harness::Workdir::new();
    std::fs::create_dir_all(elsewhere.join("x")).unwrap();
    std::fs::copy(&file, elsewhere.join("x/meeting.json")).unwrap();

    let mut s = Session::start(&work, &[]);
    s.handshake();
    // A template the folder names (a secret file) is not rendered as the report.
    let secret = work.write("home/.aws/credentials", "aws_secret_access_key = abc123\n");
    let mut tampered = v.clone();
    tampered["template"] = json!(secret);
    std::fs::write(&file, tampered.to_string()).unwrap();
    let read = s.tool("meeting_run", json!({"resume": "demo-test"}));
    assert_eq!(read["isError"], true, "{read}");
    assert!(read.to_string().contains("--template"), "{read}");
    assert!(!read.to_string().contains("abc123"), "{read}");
    std::fs::write(&file, v.to_string()).unwrap();
    let refused = s.tool(
        "meeting_run",
        json!({"resume": elsewhere.join("x").display().to_string()}),
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("is not one of this server's run folders"),
        "{refused}"
    );
    let resumed = s.tool("meeting_run", json!({"resume": "demo-test"}));
    assert_eq!(
        resumed["structuredContent"]["status"], "finished",
        "{resumed}"
    );
    assert!(
        !planted.exists(),
        "the report went where the run folder said"
    );
    let report = work.join("reports/demo-test.md");
    assert!(report.is_file(), "{resumed}");
    assert_eq!(
        resumed["structuredContent"]["report_file"],
        json!(report.display().to_string())
    );
    s.end();
}

/// What a client sends that is no request is answered, and the server goes on: a line that is
/// not UTF-8 (-32700), a line over the limit (-32600, not kept whole), an id that is neither a
/// string nor an integer (-32600); then a ping is still answered.
#[test]
fn bad_lines_and_ids_are_answered_and_the_server_goes_on() {
    let work = Workdir::new();
    let mut s = Session::start(&work, &[]);
    s.handshake();
    let ping = |s: &mut Session| {
        let id = s.request("ping", json!({}));
        let (m, _) = s.response(id);
        assert_eq!(m["result"], json!({}), "{m}");
    };
    s.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\xff\"}\n");
    let m = s.next();
    assert_eq!(m["error"]["code"], -32700, "{m}");
    assert!(m["id"].is_null());
    ping(&mut s);
    let mut long = vec![b' '; agent_meeting::mcp::MAX_LINE + 1];
    long.push(b'\n');
    s.send_raw(&long);
    let m = s.next();
    assert_eq!(m["error"]["code"], -32600, "{m}");
    assert!(
        m["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than"),
        "{m}"
    );
    ping(&mut s);
    for id in [
        json!({"a": 1}),
        json!([1]),
        json!(1.5),
        json!(true),
        json!(null),
    ] {
        s.send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let m = s.next();
        assert_eq!(m["error"]["code"], -32600, "id {id}: {m}");
        assert!(m["id"].is_null(), "{m}");
    }
    s.send(json!({"jsonrpc": "2.0", "id": "a-string", "method": "ping"}));
    assert_eq!(s.next()["id"], "a-string");
    ping(&mut s);
    s.end();
}

/// A finished call's thread is joined as the server goes, not kept until the client leaves:
/// 300 status calls leave the server's address space about as it was (each kept thread held
/// its stack, 2 MiB, until the end). One malloc arena (glibc's `MALLOC_ARENA_MAX`), so that
/// what grows is the threads' stacks, not arenas a busy machine makes on contention.
#[cfg(target_os = "linux")]
#[test]
fn a_long_session_keeps_no_finished_calls_thread() {
    let work = Workdir::new();
    let mut s = Session::start(&work, &[("MALLOC_ARENA_MAX", "1")]);
    s.handshake();
    let vm_size = |s: &Session| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", s.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let _ = s.tool("meeting_status", json!({"run_id": "none-such"}));
    let before = vm_size(&s);
    for _ in 0..300 {
        let _ = s.tool("meeting_status", json!({"run_id": "none-such"}));
    }
    let grown_kib = vm_size(&s).saturating_sub(before);
    assert!(
        grown_kib < 100 * 1024,
        "the address space grew {grown_kib} KiB over 300 calls"
    );
    s.end();
}

/// A `meeting_file` is one of the project's: a file outside the server's folder, or one named
/// like a secret, is refused before it is read — its values never come back in an error.
#[test]
fn a_meeting_file_outside_the_project_or_named_like_a_secret_is_refused() {
    let work = Workdir::new();
    let elsewhere = Workdir::new();
    let outside = elsewhere.write("m.yaml", "topic: 1\napi_key: tok_SECRET_outside\n");
    work.write("credentials.yaml", "topic: [tok_SECRET_inside]\n");
    let mut s = Session::start(&work, &[("AGENT_MEETING_PROVIDER", "sample")]);
    s.handshake();
    for (file, says) in [
        (
            outside.display().to_string(),
            "is outside this server's folder",
        ),
        (
            "credentials.yaml".to_string(),
            "is named like a file that holds secrets",
        ),
    ] {
        let out = s.tool(
            "meeting_run",
            json!({"meeting_file": file, "agents": ["arch"]}),
        );
        assert_eq!(out["isError"], true, "{out}");
        let text = out["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{text}");
        assert!(!text.contains("tok_SECRET"), "{text}");
    }
    s.end();
}

/// Cancels that race or name nothing change nothing: a cancel of an id never sent, of a call
/// already answered, twice, or with no requestId at all; the server answers the next call.
#[test]
fn cancels_of_nothing_or_of_a_finished_call_change_nothing() {
    let work = Workdir::new();
    let mut s = Session::start(&work, &[]);
    s.handshake();
    let done = s.request(
        "tools/call",
        json!({"name": "list_agents", "arguments": {}}),
    );
    let (answered, _) = s.response(done);
    assert!(answered.get("result").is_some(), "{answered}");
    for params in [
        json!({"requestId": 999}),
        json!({"requestId": done}),
        json!({"requestId": done}),
        json!({}),
        json!({"requestId": {"odd": true}}),
    ] {
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}));
    }
    let id = s.request("ping", json!({}));
    let (m, notes) = s.response(id);
    assert_eq!(m["result"], json!({}), "{m}");
    assert!(
        notes.is_empty(),
        "nothing answered a notification: {notes:?}"
    );
    s.end();
}

/// No progress work unasked: a meeting_run without a progress token, and every
/// meeting_start, run as `-q` does (no progress line drawn); with a token, progress as before.
#[test]
fn a_meeting_draws_progress_only_when_asked() {
    let work = Workdir::new();
    let log = work.join("server.log");
    let mut s = Session::start_logged(&work, &[("AGENT_MEETING_PROVIDER", "sample")], &log);
    s.handshake();
    let args = meeting_args(&work);
    let quiet = s.tool("meeting_run", args.clone());
    assert_eq!(quiet["structuredContent"]["status"], "finished", "{quiet}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(!said.contains("[loop "), "progress drawn unasked:\n{said}");
    let id = s.request(
        "tools/call",
        json!({"name": "meeting_run", "arguments": args, "_meta": {"progressToken": 1}}),
    );
    let (done, notes) = s.response(id);
    assert_eq!(
        done["result"]["structuredContent"]["status"], "finished",
        "{done}"
    );
    assert!(!notes.is_empty(), "asked for, progress comes");
    assert!(std::fs::read_to_string(&log).unwrap().contains("[loop "));
    s.end();
}

/// The client configurations the guide gives are well formed and in each client's shape:
/// Claude Code and Cursor `mcpServers`, VS Code `servers` with `inputs` for the key, Gemini CLI
/// `mcpServers` with a timeout in milliseconds; each starts `agent-meeting mcp`.
#[test]
fn the_guides_client_snippets_have_each_clients_shape() {
    let guide = std::fs::read_to_string(crate::harness::root().join("docs/GUIDE.md")).unwrap();
    let section = guide
        .split("## From your coding agent (MCP)")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    let blocks: Vec<Value> = section
        .split("```json\n")
        .skip(1)
        .map(|b| serde_json::from_str(b.split("\n```").next().unwrap()).expect("valid JSON"))
        .collect();
    assert_eq!(blocks.len(), 3, "Claude Code/Cursor, VS Code, Gemini CLI");
    // The one-line form: the npm package fetched and run on first use.
    let starts = |server: &Value| {
        assert_eq!(server["command"], "npx", "{server}");
        assert_eq!(
            server["args"],
            json!(["-y", "agent-meeting", "mcp"]),
            "{server}"
        );
    };
    starts(&blocks[0]["mcpServers"]["agent-meeting"]);
    let vscode = &blocks[1];
    assert!(
        vscode.get("mcpServers").is_none(),
        "VS Code's key is servers"
    );
    starts(&vscode["servers"]["agent-meeting"]);
    assert_eq!(vscode["servers"]["agent-meeting"]["type"], "stdio");
    let input = &vscode["inputs"][0];
    assert_eq!(
        (&input["type"], &input["password"]),
        (&json!("promptString"), &json!(true))
    );
    let key = vscode["servers"]["agent-meeting"]["env"]["OPENAI_API_KEY"]
        .as_str()
        .unwrap();
    assert_eq!(key, format!("${{input:{}}}", input["id"].as_str().unwrap()));
    let gemini = &blocks[2]["mcpServers"]["agent-meeting"];
    starts(gemini);
    assert!(
        gemini["timeout"].as_u64().unwrap() >= 60_000,
        "milliseconds"
    );
    assert!(section.contains("tool_timeout_sec"), "Codex's timeout");
    assert!(
        section.contains("claude mcp add agent-meeting -- npx -y agent-meeting mcp"),
        "Claude Code's one line"
    );
    // The npm package's launcher is named so: what `npx -y agent-meeting` runs.
    let package: Value = serde_json::from_str(
        &std::fs::read_to_string(
            crate::harness::root().join("packaging/npm/agent-meeting/package.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(package["name"], "agent-meeting");
    assert!(package["bin"]["agent-meeting"].is_string(), "{package}");
}

/// An ended meeting's report and result are resources: meeting_run links them
/// (`resource_link`), `resources/list` lists them, `resources/read` gives the report as it is on
/// disk; a URI outside the server's runs is not found (-32002); a 2025-03-26 client, which
/// knows no resource_link, gets none.
#[test]
fn an_ended_meetings_report_is_a_resource() {
    let work = Workdir::new();
    let mut s = Session::start(&work, &[("AGENT_MEETING_PROVIDER", "sample")]);
    let init = s.handshake();
    assert!(init["capabilities"]["resources"].is_object(), "{init}");
    let done = s.tool("meeting_run", meeting_args(&work));
    let result = &done["structuredContent"];
    assert_eq!(result["status"], "finished", "{done}");
    let id = result["trace_id"].as_str().unwrap();
    let report_uri = format!("agent-meeting://runs/{id}/report");
    let link = done["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "resource_link" && c["uri"] == report_uri.as_str())
        .unwrap_or_else(|| panic!("no link to the report: {done}"))
        .clone();
    assert_eq!(link["mimeType"], "text/markdown");
    let listed = s.call("resources/list", json!({}));
    assert!(
        listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == report_uri.as_str()),
        "{listed}"
    );
    let read = s.call("resources/read", json!({"uri": report_uri}));
    let on_disk = std::fs::read_to_string(result["report_file"].as_str().unwrap()).unwrap();
    assert_eq!(read["contents"][0]["text"], json!(on_disk));
    let read = s.call(
        "resources/read",
        json!({"uri": format!("agent-meeting://runs/{id}/result")}),
    );
    let kept: Value = serde_json::from_str(read["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(kept["trace_id"], id);
    for uri in [
        "agent-meeting://runs/../x/report".to_string(),
        "agent-meeting://runs/none-such/report".to_string(),
        "file:///etc/passwd".to_string(),
    ] {
        let req = s.request("resources/read", json!({"uri": uri}));
        let (m, _) = s.response(req);
        assert_eq!(m["error"]["code"], -32002, "{uri}: {m}");
    }
    s.end();
    // A client of 2025-03-26 knows no resource_link.
    let mut s = Session::start(&work, &[("AGENT_MEETING_PROVIDER", "sample")]);
    s.call(
        "initialize",
        json!({"protocolVersion": "2025-03-26", "capabilities": {},
               "clientInfo": {"name": "old", "version": "1"}}),
    );
    let done = s.tool("meeting_run", meeting_args(&work));
    assert!(
        done["content"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["type"] == "text"),
        "{done}"
    );
    s.end();
}

/// A session whose meeting waits for ana (a person, `kind: human`) at call 2, the PM finishing
/// at `finish_at` once she has answered.
fn ana_session(work: &Workdir, finish_at: u64) -> Session {
    work.write(
        "cfg/agent-meeting/agents/ana.yaml",
        "name: ana\nkind: human\nrole: Ops lead\ndescription: Knows the nights on call.\n",
    );
    let c = Cassette::new()
        .pm(pm::call("ana", "Who gets paged at night?"))
        .at(finish_at)
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let cassette = c.display().to_string();
    let cfg = work.join("cfg").display().to_string();
    Session::start(
        work,
        &[
            ("AGENT_MEETING_PROVIDER", "replay"),
            ("MEETING_CASSETTE", &cassette),
            ("XDG_CONFIG_HOME", &cfg),
            ("MEETING_HUMAN_TTY", "/nonexistent/tty"),
        ],
    )
}

impl Session {
    /// The next request the server sends the client (`method`), skipping notifications.
    fn server_request(&mut self, method: &str) -> Value {
        loop {
            let m = self.next();
            assert!(
                m.get("method").is_some(),
                "a response came before the server asked: {m}"
            );
            if m["method"] == method {
                assert!(m.get("id").is_some(), "a request has an id: {m}");
                return m;
            }
        }
    }

    fn reply_to(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }
}

/// A client that declared elicitation is asked for the waiting person's answer during the
/// same `meeting_run` (docs/design/mcp.md#elicitation): a flat form, an unusable answer asked
/// again once with its problem, and the accepted answer carries the meeting to its report.
#[test]
fn a_waiting_person_is_asked_through_elicitation_and_the_meeting_ends() {
    let work = Workdir::new();
    let mut s = ana_session(&work, 4);
    s.call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
               "clientInfo": {"name": "test", "version": "1"}}),
    );
    let call = s.request(
        "tools/call",
        json!({"name": "meeting_run",
               "arguments": {"topic": "Who is on call?", "agents": ["arch", "ana"]}}),
    );
    let ask = s.server_request("elicitation/create");
    let params = &ask["params"];
    assert_eq!(params["mode"], "form");
    assert!(
        params["message"]
            .as_str()
            .unwrap()
            .contains("Who gets paged at night?"),
        "{ask}"
    );
    assert_eq!(params["requestedSchema"]["required"], json!(["response"]));
    // A client that ignores the form's enum: a quote from a document there is not.
    s.reply_to(
        &ask,
        json!({"action": "accept", "content": {"response": "See the runbook.",
                                               "document": "nope", "quote": "page"}}),
    );
    let again = s.server_request("elicitation/create");
    assert_ne!(again["id"], ask["id"]);
    let message = again["params"]["message"].as_str().unwrap();
    assert!(message.contains("could not be used"), "{message}");
    assert_eq!(
        again["params"]["requestedSchema"]["properties"]["response"]["default"],
        "See the runbook."
    );
    s.reply_to(
        &again,
        json!({"action": "accept", "content": {"response": "Priya, by phone.",
                                               "key_points": "Priya is paged"}}),
    );
    let (done, _) = s.response(call);
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["status"], "finished", "{done}");
    let report = std::fs::read_to_string(result["report_file"].as_str().unwrap()).unwrap();
    assert!(report.contains("Priya is paged"), "{report}");
    assert!(report.contains("ana's answer was unusable"), "{report}");
    s.end();
}

/// A declined elicitation leaves the meeting waiting, resumable as a client without
/// elicitation finds it; a client that declared none is never asked.
#[test]
fn a_declined_elicitation_leaves_the_meeting_waiting() {
    let work = Workdir::new();
    let mut s = ana_session(&work, 3);
    s.call(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
               "clientInfo": {"name": "test", "version": "1"}}),
    );
    let call = s.request(
        "tools/call",
        json!({"name": "meeting_run",
               "arguments": {"topic": "Who is on call?", "agents": ["arch", "ana"]}}),
    );
    let ask = s.server_request("elicitation/create");
    s.reply_to(&ask, json!({"action": "decline"}));
    let (done, _) = s.response(call);
    let result = &done["result"]["structuredContent"];
    assert_eq!(result["status"], "waiting", "{done}");
    let id = result["trace_id"].as_str().unwrap().to_string();
    let status = s.tool("meeting_status", json!({"run_id": id}));
    assert_eq!(status["structuredContent"]["waiting"]["agent"], "ana");
    let resumed = s.tool(
        "meeting_run",
        json!({"resume": id, "answer": {"response": "Priya, by phone."}}),
    );
    assert_eq!(
        resumed["structuredContent"]["status"], "finished",
        "{resumed}"
    );
    s.end();
    // No elicitation declared: the meeting ends waiting, no request sent.
    let work = Workdir::new();
    let mut s = ana_session(&work, 3);
    s.handshake();
    let done = s.tool(
        "meeting_run",
        json!({"topic": "Who is on call?", "agents": ["arch", "ana"]}),
    );
    assert_eq!(done["structuredContent"]["status"], "waiting", "{done}");
    s.end();
}

/// 2026-07-28: a meeting waiting for a person comes back `input_required` with the form and a
/// `requestState`; the retry with the answer goes on to the report, a second retry with the
/// same state is refused (the answer was given), and a declined retry leaves it waiting.
#[test]
fn a_stateless_client_answers_an_input_required_result_on_its_retry() {
    let work = Workdir::new();
    let mut s = ana_session(&work, 3);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}});
    let args = json!({"topic": "Who is on call?", "agents": ["arch", "ana"]});
    let first = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run", "arguments": args}),
    );
    assert_eq!(first["resultType"], "input_required", "{first}");
    let asked = &first["inputRequests"]["answer"];
    assert_eq!(asked["method"], "elicitation/create");
    assert!(asked["params"]["message"]
        .as_str()
        .unwrap()
        .contains("Who gets paged at night?"));
    let state = first["requestState"].clone();
    assert!(state.is_string(), "{first}");
    let answer =
        json!({"answer": {"action": "accept", "content": {"response": "Priya, by phone."}}});
    let done = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run", "arguments": args,
               "inputResponses": answer, "requestState": state}),
    );
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(done["structuredContent"]["status"], "finished", "{done}");
    let twice = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run", "arguments": args,
               "inputResponses": answer, "requestState": state}),
    );
    assert_eq!(twice["isError"], true, "{twice}");
    assert!(twice["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no longer waits for this answer"));
    let forged = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run", "arguments": args,
               "inputResponses": answer, "requestState": "v1:../../etc:3"}),
    );
    assert_eq!(forged["isError"], true, "{forged}");
    s.end();
    // Declined: still waiting, and a client without elicitation gets no input_required.
    let work = Workdir::new();
    let mut s = ana_session(&work, 3);
    let first = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run", "arguments": args}),
    );
    let declined = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run", "arguments": args,
               "inputResponses": {"answer": {"action": "decline"}},
               "requestState": first["requestState"]}),
    );
    assert_eq!(
        declined["structuredContent"]["status"], "waiting",
        "{declined}"
    );
    let plain = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": {}});
    let other = s.call(
        "tools/call",
        json!({"_meta": plain, "name": "meeting_run", "arguments": args}),
    );
    assert_eq!(other["resultType"], "complete", "{other}");
    s.end();
}

/// A call's `adr` folder gets the meeting's decision record, served as the run's `adr`
/// resource and linked from the result; a folder outside the project is refused.
#[test]
fn a_meetings_decision_record_is_a_resource_and_stays_in_the_project() {
    let work = Workdir::new();
    let c = Cassette::new()
        .pm(pm::call("arch", "How long does the run take?"))
        .agent("arch", pm::answer("About 3h40m.", &["Run takes 3h40m."]))
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let cassette = c.display().to_string();
    work.write(".git/HEAD", "ref: refs/heads/main\n");
    let mut s = Session::start(
        &work,
        &[
            ("AGENT_MEETING_PROVIDER", "replay"),
            ("MEETING_CASSETTE", &cassette),
        ],
    );
    s.handshake();
    let outside = s.tool(
        "meeting_run",
        json!({"topic": "Keep the nightly run?", "agents": ["arch"], "adr": "/tmp"}),
    );
    assert_eq!(outside["isError"], true, "{outside}");
    assert!(outside["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("outside this server's folder"));
    let done = s.tool(
        "meeting_run",
        json!({"topic": "Keep the nightly run?", "agents": ["arch"], "adr": "docs/decisions"}),
    );
    let result = &done["structuredContent"];
    assert_eq!(result["status"], "finished", "{done}");
    let id = result["trace_id"].as_str().unwrap();
    let uri = format!("agent-meeting://runs/{id}/adr");
    assert!(
        done["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "resource_link" && c["uri"] == uri.as_str()),
        "{done}"
    );
    let read = s.call("resources/read", json!({"uri": uri}));
    let records: Vec<_> = std::fs::read_dir(work.join("docs/decisions"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(records.len(), 1);
    let on_disk = std::fs::read_to_string(records[0].path()).unwrap();
    assert_eq!(read["contents"][0]["text"], json!(on_disk));
    assert!(on_disk.contains("status: proposed"), "{on_disk}");
    s.end();
}

/// Client capabilities of a 2026-07-28 request: the tasks extension, and elicitation when
/// `elicits`.
fn task_meta(elicits: bool) -> Value {
    let mut caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    if elicits {
        caps["elicitation"] = json!({});
    }
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": caps})
}

impl Session {
    /// `tasks/get` until the task leaves `working`.
    fn task_until_settled(&mut self, meta: &Value, task: &str) -> Value {
        loop {
            let t = self.call("tasks/get", json!({"_meta": meta, "taskId": task}));
            assert_eq!(t["resultType"], "complete", "{t}");
            if t["status"] != "working" {
                return t;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// A client that declares the tasks extension gets a task for `meeting_run`
/// (docs/design/mcp.md#tasks): `tasks/get` says `working`, then `completed` with the result the
/// call would have returned; a cancelled task stops its meeting resumable.
#[test]
fn a_meeting_runs_as_a_task_to_its_result_and_another_is_cancelled_resumable() {
    let work = Workdir::new();
    let cassette = slow_cassette(&work);
    let cassette = cassette.to_str().unwrap();
    let mut s = Session::start(
        &work,
        &[
            ("AGENT_MEETING_PROVIDER", "replay"),
            ("MEETING_CASSETTE", cassette),
        ],
    );
    let meta = task_meta(false);
    let discovered = s.call("server/discover", json!({"_meta": meta}));
    assert!(
        discovered["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{discovered}"
    );
    let task = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run", "arguments": meeting_args(&work)}),
    );
    assert_eq!(task["resultType"], "task", "{task}");
    assert_eq!(task["status"], "working");
    let id = task["taskId"].as_str().unwrap().to_string();
    assert!(task["pollIntervalMs"].as_u64().unwrap() > 0);
    // At work on its first loop (its board is on disk: a cancel during the collection would
    // leave nothing to resume), then cancelled.
    let mut polls = 0;
    loop {
        let t = s.call("tasks/get", json!({"_meta": meta, "taskId": id}));
        assert_eq!(
            t["status"], "working",
            "a slow meeting is still at work: {t}"
        );
        if t["statusMessage"]
            .as_str()
            .is_some_and(|m| m.starts_with("loop "))
        {
            break;
        }
        polls += 1;
        assert!(polls < 600, "the meeting never started its first loop: {t}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    s.call("tasks/cancel", json!({"_meta": meta, "taskId": id}));
    let cancelled = s.task_until_settled(&meta, &id);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    // Stopped by the client's cancel: meeting_status says so (and it stays resumable).
    let status = s.tool("meeting_status", json!({"run_id": id}));
    assert_eq!(
        status["structuredContent"]["status"], "cancelled",
        "{status}"
    );
    // Resumed as a task too, to its end: the result is meeting_run's.
    let again = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run", "arguments": {"resume": id}}),
    );
    assert_eq!(again["resultType"], "task", "{again}");
    assert_eq!(again["taskId"], json!(id));
    let done = s.task_until_settled(&meta, &id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["status"], "finished",
        "{done}"
    );
    assert!(done["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "resource_link"));
    // A meeting that stopped before it began (no board: a cancel during the collection) is a
    // state of its task, not a protocol error.
    work.write("runs/20261130120000-deadbeef/meeting.json", "{}");
    let early = s.call(
        "tasks/get",
        json!({"_meta": meta, "taskId": "20261130120000-deadbeef"}),
    );
    assert_eq!(early["status"], "completed", "{early}");
    assert_eq!(early["result"]["isError"], true, "{early}");
    let unknown = s.request("tasks/get", json!({"_meta": meta, "taskId": "../etc"}));
    let (m, _) = s.response(unknown);
    assert_eq!(m["error"]["code"], -32602, "{m}");
    // Without the extension: no task, the call blocks to its result as before.
    let plain = s.call(
        "tools/call",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {}},
               "name": "meeting_run", "arguments": {"resume": id}}),
    );
    assert_eq!(plain["resultType"], "complete", "{plain}");
    s.end();
}

/// A task whose meeting waits for a person is `input_required` with the form; `tasks/update`
/// carries the answer and the task completes with the report; a subscription follows it with
/// a `notifications/tasks` on each change.
#[test]
fn a_tasks_waiting_person_answers_through_tasks_update_and_notifications_follow() {
    let work = Workdir::new();
    let mut s = ana_session(&work, 3);
    let meta = task_meta(true);
    let task = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run",
               "arguments": {"topic": "Who is on call?", "agents": ["arch", "ana"]}}),
    );
    let id = task["taskId"].as_str().unwrap().to_string();
    let listen = s.request(
        "subscriptions/listen",
        json!({"_meta": meta, "notifications": {"taskIds": [id]}}),
    );
    // The subscription: acknowledged first, then each state the task passes through; the
    // person's form comes in the notification (and in tasks/get), and stays until answered.
    // Notifications may arrive while a call waits for its response: every line is kept in
    // `seen`, so they are looked for there, in the order they came.
    let subscription = |s: &Session| -> Vec<Value> {
        s.seen
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|m| {
                m["method"] == "notifications/tasks"
                    || m["method"] == "notifications/subscriptions/acknowledged"
            })
            .collect()
    };
    let until = |s: &mut Session, status: &str| loop {
        if let Some(m) = subscription(s)
            .into_iter()
            .find(|m| m["params"]["status"] == status)
        {
            return m;
        }
        s.next();
    };
    let asked_note = until(&mut s, "input_required");
    let waiting = s.call("tasks/get", json!({"_meta": meta, "taskId": id}));
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let asked = &waiting["inputRequests"]["answer-2"];
    assert_eq!(asked, &asked_note["params"]["inputRequests"]["answer-2"]);
    assert_eq!(asked["method"], "elicitation/create", "{waiting}");
    assert!(asked["params"]["message"]
        .as_str()
        .unwrap()
        .contains("Who gets paged at night?"));
    let ack = s.call(
        "tasks/update",
        json!({"_meta": meta, "taskId": id, "inputResponses":
               {"answer-2": {"action": "accept", "content": {"response": "Priya, by phone."}}}}),
    );
    assert_eq!(ack["resultType"], "complete");
    let done = until(&mut s, "completed");
    assert_eq!(
        done["params"]["result"]["structuredContent"]["status"],
        "finished"
    );
    let got = s.call("tasks/get", json!({"_meta": meta, "taskId": id}));
    assert_eq!(got["status"], "completed", "{got}");
    let notes = subscription(&s);
    assert_eq!(
        notes[0]["method"], "notifications/subscriptions/acknowledged",
        "{notes:?}"
    );
    assert_eq!(notes[0]["params"]["notifications"]["taskIds"], json!([id]));
    for n in &notes {
        assert_eq!(
            n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            json!(listen)
        );
    }
    let seen: Vec<&str> = notes[1..]
        .iter()
        .map(|n| {
            assert_eq!(n["params"]["taskId"], json!(id));
            n["params"]["status"].as_str().unwrap()
        })
        .collect();
    assert!(
        seen.windows(2).all(|w| w[0] != w[1] || w[0] == "working"),
        "{seen:?}"
    );
    assert!(seen.contains(&"input_required"), "{seen:?}");
    s.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": listen}}),
    );
    // A subscription to tasks needs the extension.
    let refused = s.request(
        "subscriptions/listen",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                         "io.modelcontextprotocol/clientCapabilities": {}},
               "notifications": {"taskIds": [id]}}),
    );
    let (m, _) = s.response(refused);
    assert_eq!(m["error"]["code"], -32021, "{m}");
    s.end();
}

/// A task cancelled while its meeting waits for a person, then resumed as its own message
/// says, is taken up again: it asks the person again (input_required), and their answer
/// through tasks/update ends the meeting — the cancel is over.
#[test]
fn a_cancelled_task_resumed_asks_again() {
    let work = Workdir::new();
    let mut s = ana_session(&work, 3);
    let meta = task_meta(true);
    let task = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run",
               "arguments": {"topic": "Who is on call?", "agents": ["arch", "ana"]}}),
    );
    let id = task["taskId"].as_str().unwrap().to_string();
    assert_eq!(s.task_until_settled(&meta, &id)["status"], "input_required");
    s.call("tasks/cancel", json!({"_meta": meta, "taskId": id}));
    let cancelled = s.task_until_settled(&meta, &id);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let again = s.call(
        "tools/call",
        json!({"_meta": meta, "name": "meeting_run", "arguments": {"resume": id}}),
    );
    assert_eq!(again["taskId"], json!(id), "{again}");
    let asked = s.task_until_settled(&meta, &id);
    assert_eq!(asked["status"], "input_required", "{asked}");
    let key = asked["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    s.call(
        "tasks/update",
        json!({"_meta": meta, "taskId": id, "inputResponses":
               {key: {"action": "accept", "content": {"response": "Priya, by phone."}}}}),
    );
    let done = s.task_until_settled(&meta, &id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["status"], "finished",
        "{done}"
    );
    s.end();
}

/// `agent-meeting mcp -C DIR` serves as if started in DIR (a client that cannot set the
/// server's folder: Claude Desktop's bundle): its run folders and reports go there; a folder
/// that is not there is a usage error.
#[test]
fn the_server_runs_in_the_folder_it_is_given() {
    use std::io::Write as _;
    let work = Workdir::new();
    let elsewhere = Workdir::new();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-meeting"));
    clean_env(&mut cmd);
    let mut child = cmd
        .current_dir(elsewhere.path())
        .arg("mcp")
        .arg("-C")
        .arg(work.path())
        .env("AGENT_MEETING_PROVIDER", "sample")
        .env("AGENT_MEETING_NOW", NOW)
        .env("XDG_DATA_HOME", work.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "meeting_run",
            "arguments": {"topic": "Adopt Rust?", "agents": ["arch"], "max_loops": 1}}}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let last: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    let report = last["result"]["structuredContent"]["report_file"]
        .as_str()
        .unwrap_or_else(|| panic!("{last}"))
        .to_string();
    assert!(
        report.starts_with(&work.path().display().to_string()),
        "{report}"
    );
    assert!(work.join("runs").is_dir());
    assert!(!elsewhere.join("runs").exists() && !elsewhere.join("reports").exists());
    let missing = crate::harness::Cli::new(Command::new(env!("CARGO_BIN_EXE_agent-meeting")))
        .args(["mcp", "-C", "/nonexistent/folder"])
        .run();
    missing
        .exit(2)
        .stderr_has("--directory: /nonexistent/folder");
}
