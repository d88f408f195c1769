//! The MCP server's tools (docs/design/mcp.md#tools): their input schemas (from the argument
//! types, by schemars), their output schemas (from our own documents), and how each call
//! becomes a `meeting` command line or a look into a run folder. A meeting's provider, model
//! and keys come from the server's environment and config file, never from a tool argument.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::runs::{Launch, Place};
use crate::error::{Error, Result};
use crate::model::MeetingResult;
use crate::settings::options::{lenient, refuse_unknown_keys, MeetingOptions};

/// The arguments of `meeting_run` and `meeting_start`: what the meeting is about, or the
/// meeting to resume, and the meeting's options as every surface takes them
/// ([`MeetingOptions`]: its schema is this tool's, so whatever the command line can set, a
/// coding agent can).
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct MeetingArgs {
    /// The decision to make, in a sentence (instead of a meeting file).
    pub topic: Option<String>,
    /// A meeting file (.yaml, .yml or .json): topic, brief, decision packet, documents.
    pub meeting_file: Option<String>,
    /// Documents the participants may read and cite (paths, with a topic).
    #[serde(default, deserialize_with = "lenient::paths")]
    pub documents: Vec<String>,
    #[serde(flatten)]
    pub options: MeetingOptions,
    /// Continue a stopped meeting: its run_id (or run folder) instead of a new meeting.
    pub resume: Option<String>,
    /// With resume: the answer of the person a `waiting` meeting waits for (meeting_status
    /// shows the question and the template): an object like its answer_template, or the
    /// template's text form filled in.
    pub answer: Option<Value>,
}

/// The arguments of `meeting_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {
    /// The run_id meeting_start returned (or the run folder).
    pub run_id: String,
}

/// The arguments of `meeting_result`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultArgs {
    /// The run_id meeting_start returned (or the run folder).
    pub run_id: String,
    /// Wait up to this many seconds (at most 50) for the meeting to end; 0: do not wait.
    #[serde(default, deserialize_with = "lenient::number")]
    pub wait_seconds: Option<u32>,
}

/// The arguments of `list_agents` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The longest `wait_seconds`: every call ends well inside the minute some clients allow.
pub const MAX_WAIT_SECONDS: u32 = 50;

/// The tool names, in the order `tools/list` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    MeetingRun,
    MeetingStart,
    MeetingStatus,
    MeetingResult,
    ListAgents,
}

impl Tool {
    pub const ALL: [Tool; 5] = [
        Tool::MeetingRun,
        Tool::MeetingStart,
        Tool::MeetingStatus,
        Tool::MeetingResult,
        Tool::ListAgents,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tool::MeetingRun => "meeting_run",
            Tool::MeetingStart => "meeting_start",
            Tool::MeetingStatus => "meeting_status",
            Tool::MeetingResult => "meeting_result",
            Tool::ListAgents => "list_agents",
        }
    }

    pub fn of(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    fn description(self) -> &'static str {
        match self {
            Tool::MeetingRun => "Run a decision meeting between LLM agents to its end and return its decision record: a PM routes questions to specialists (list_agents), who answer from the documents with checked citations; the Markdown report is written to disk. Blocks until the report is written (minutes); sends progress when asked. Give a topic (and documents) or a meeting file, and agents. Use resume to continue a stopped meeting.",
            Tool::MeetingStart => "Start a decision meeting (as meeting_run) and return at once with its run_id; it runs on in its run folder even if this client goes away. Follow it with meeting_status and meeting_result.",
            Tool::MeetingStatus => "Where a meeting started with meeting_start stands: running, waiting (for a person's answer: the question and its template), stopped (resumable), cancelled, finished, no_decision or failed; loop and max, LLM calls, tokens, the last event.",
            Tool::MeetingResult => "The result of a meeting started with meeting_start: the MeetingResult and the report's decision summary once it has ended, waiting up to wait_seconds (at most 50) for it.",
            Tool::ListAgents => "The agents a meeting can use (built-in and this project's), with their roles and where each is found.",
        }
    }

    fn input_schema(self) -> Value {
        let schema = match self {
            Tool::MeetingRun | Tool::MeetingStart => schemars::schema_for!(MeetingArgs),
            Tool::MeetingStatus => schemars::schema_for!(StatusArgs),
            Tool::MeetingResult => schemars::schema_for!(ResultArgs),
            Tool::ListAgents => schemars::schema_for!(NoArgs),
        };
        plain(schema.to_value())
    }

    fn output_schema(self) -> Value {
        match self {
            Tool::MeetingRun | Tool::MeetingResult => {
                plain(schemars::schema_for!(MeetingResult).to_value())
            }
            Tool::MeetingStart => plain(schemars::schema_for!(super::runs::Started).to_value()),
            Tool::MeetingStatus => {
                plain(schemars::schema_for!(super::runs::StatusReport).to_value())
            }
            Tool::ListAgents => plain(schemars::schema_for!(AgentList).to_value()),
        }
    }

    /// What the tool does to the world: MCP's hints (a meeting writes a run folder and a
    /// report, and calls the network; status, result and the list only read).
    fn annotations(self) -> Value {
        let reads = matches!(
            self,
            Tool::MeetingStatus | Tool::MeetingResult | Tool::ListAgents
        );
        json!({
            "readOnlyHint": reads,
            "destructiveHint": false,
            "idempotentHint": reads,
            "openWorldHint": !reads,
        })
    }

    /// The tool as `tools/list` shows it.
    pub fn listed(self) -> Value {
        json!({
            "name": self.name(),
            "title": self.name().replace('_', " "),
            "description": self.description(),
            "inputSchema": self.input_schema(),
            "outputSchema": self.output_schema(),
            "annotations": self.annotations(),
        })
    }
}

/// A schema as a tool shows it: without `$schema` and `title` (the tool has its own), and
/// without schemars' own integer formats (`uint32`, `int64`, `double`: no JSON Schema format,
/// which a client's validator warns about; the `minimum` beside them says what matters).
fn plain(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
    }
    drop_number_formats(&mut v);
    v
}

fn drop_number_formats(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let numeric = o.get("format").and_then(Value::as_str).is_some_and(|f| {
                matches!(f, "float" | "double")
                    || f.strip_prefix("uint")
                        .or_else(|| f.strip_prefix("int"))
                        .is_some_and(|bits| bits.chars().all(|c| c.is_ascii_digit()))
            });
            if numeric {
                o.remove("format");
            }
            o.values_mut().for_each(drop_number_formats);
        }
        Value::Array(a) => a.iter_mut().for_each(drop_number_formats),
        _ => {}
    }
}

/// A tool's arguments, or the message a caller can fix them by.
pub fn args<T: for<'de> Deserialize<'de> + JsonSchema>(v: &Value) -> Result<T> {
    let v = if v.is_null() { json!({}) } else { v.clone() };
    refuse_unknown_keys::<T>("arguments", &v)?;
    serde_path_to_error::deserialize(v).map_err(|e| {
        let at = e.path().to_string();
        let at = if at == "." {
            String::new()
        } else {
            format!("{at}: ")
        };
        Error::Usage(format!("arguments: {at}{}", e.inner()))
    })
}

/// The run folder a `run_id` (or a path) names.
pub fn run_dir_of(place: &Place, id: &str) -> Result<(PathBuf, String)> {
    let as_path = Path::new(id);
    if id.contains('/') || as_path.join("meeting.json").exists() {
        let dir = std::path::absolute(as_path).unwrap_or_else(|_| as_path.to_path_buf());
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        return Ok((dir, name));
    }
    if id.is_empty() || id.contains(['\\', '\0']) || id.starts_with('.') {
        return Err(Error::Usage(format!("run_id: {id:?} names no meeting")));
    }
    Ok((place.runs.join(id), id.to_string()))
}

/// The `meeting` command line of a meeting call: a resume, a meeting file, a topic, or a
/// topic with documents (a meeting file made for it, kept under `place.made`).
pub fn launch(place: &Place, a: &MeetingArgs, now: &str) -> Result<Launch> {
    if let Some(id) = &a.resume {
        let (run_dir, run_id) = run_dir_of(place, id)?;
        let mut args = vec!["resume".into(), run_dir.display().to_string()];
        if let Some(report) = resume_report(place, &run_dir, &run_id)? {
            args.extend(["--report-file".into(), report.display().to_string()]);
        }
        if let Some(answer) = &a.answer {
            let file = answer_file(place, &run_id, answer, now)?;
            args.extend(["--answer".into(), file.display().to_string()]);
        }
        return Ok(Launch {
            args,
            run_dir,
            run_id,
            traceparent: None,
        });
    }
    let run_id = crate::stage::init_board::new_trace_id(now);
    let mut args: Vec<String> = Vec::new();
    let topic = a.topic.as_deref().map(str::trim).filter(|t| !t.is_empty());
    match (&a.meeting_file, topic) {
        (Some(_), Some(_)) => {
            return Err(Error::Usage(
                "give a topic or a meeting_file, not both (a meeting file holds its own topic)"
                    .into(),
            ))
        }
        (Some(_), None) if !a.documents.is_empty() => {
            return Err(Error::Usage(
                "documents go with a topic; a meeting file lists its own context_sources".into(),
            ))
        }
        (Some(f), None) => args.extend(["--meeting-file".into(), meeting_file(place, f)?]),
        (None, Some(t)) if a.documents.is_empty() => args.extend(["--topic".into(), t.into()]),
        (None, Some(t)) => {
            let file = made_meeting_file(place, &run_id, t, &a.documents)?;
            args.extend(["--meeting-file".into(), file.display().to_string()]);
            args.extend([
                "--context-root".into(),
                place.context_root.display().to_string(),
            ]);
        }
        (None, None) => {
            return Err(Error::Usage(
                "a topic or a meeting_file is required (or resume)".into(),
            ))
        }
    }
    if a.answer.is_some() {
        return Err(Error::Usage(
            "answer goes with resume: the run_id of the meeting waiting for it".into(),
        ));
    }
    let mut options = a.options.clone();
    options.check("arguments")?;
    if let Some(dir) = &options.adr {
        options.adr = Some(adr_dir(place, &dir.display().to_string())?.into());
    }
    args.extend(options.to_args());
    args.extend(["--run-dir".into(), place.runs.display().to_string()]);
    args.extend(["--trace-id".into(), run_id.clone()]);
    Ok(Launch {
        run_dir: place.runs.join(&run_id),
        run_id,
        args,
        traceparent: None,
    })
}

/// A `meeting_file` a tool call names: one of the project's (below the server's context root,
/// as its documents must be) and not named like a secret — a call could otherwise have any
/// YAML or JSON file on the disk read, and its values quoted back in the error.
fn meeting_file(place: &Place, f: &str) -> Result<String> {
    let file = PathBuf::from(absolute(f));
    if !crate::driver::is_within(&file, &place.context_root) {
        return Err(Error::Usage(format!(
            "meeting_file: {f} is outside this server's folder {} (a meeting file is one of the project's)",
            place.context_root.display()
        )));
    }
    if crate::context::is_secret_path(&file, &place.context_root) {
        return Err(Error::Usage(format!(
            "meeting_file: {f} is named like a file that holds secrets; a meeting file is not one"
        )));
    }
    Ok(file.display().to_string())
}

/// An `adr` folder a tool call names: one of the project's (below the server's context root),
/// so a call writes its record nowhere else.
fn adr_dir(place: &Place, dir: &str) -> Result<String> {
    let path = PathBuf::from(absolute(dir));
    if !crate::driver::is_within(&path, &place.context_root) {
        return Err(Error::Usage(format!(
            "adr: {dir} is outside this server's folder {} (decision records go in one of the project's folders)",
            place.context_root.display()
        )));
    }
    Ok(path.display().to_string())
}

/// A resume writes nothing outside the folders the server was started with
/// (docs/design/mcp.md#resume): the run folder must be one of its own, and a report path the
/// folder names elsewhere (whoever could write the folder chose it) becomes
/// `reports/<run id>.md`, given to the resume as `--report-file`. None: the saved one stands.
fn resume_report(place: &Place, run_dir: &Path, run_id: &str) -> Result<Option<PathBuf>> {
    if !crate::driver::is_within(run_dir, &place.runs) {
        return Err(Error::Usage(format!(
            "resume: {} is not one of this server's run folders (they are under {})",
            run_dir.display(),
            place.runs.display()
        )));
    }
    let folder = crate::driver::Folder::open(run_dir, "resume")?;
    let saved = &folder.settings.report_file;
    if crate::driver::is_within(saved, &place.reports) {
        return Ok(None);
    }
    Ok(Some(place.reports.join(format!("{run_id}.md"))))
}

/// The answer a tool call gives a waiting meeting, kept as the file `meeting --answer` reads
/// (under `place.made`, one per call): an object as JSON, a string as the template's text.
fn answer_file(place: &Place, run_id: &str, answer: &Value, now: &str) -> Result<PathBuf> {
    let (text, ext) = match answer {
        Value::Object(_) => (answer.to_string(), "json"),
        Value::String(s) => (s.clone(), "txt"),
        _ => {
            return Err(Error::Usage(
                "answer: expected an object (like the answer_template meeting_status shows) or the template's text".into(),
            ))
        }
    };
    let dir = place.made.join(run_id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Runtime(format!("{}: {}", dir.display(), crate::io::os_error(&e))))?;
    let stamp: String = now.chars().filter(char::is_ascii_digit).collect();
    let file = dir.join(format!("answer-{stamp}.{ext}"));
    crate::io::write_atomic(&file, text.as_bytes())?;
    Ok(file)
}

fn absolute(p: &str) -> String {
    std::path::absolute(p)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| p.to_string())
}

/// A meeting file for a topic and documents: each document a `file` source, by its absolute
/// path (under the server's context root, as any meeting's documents must be).
fn made_meeting_file(place: &Place, run_id: &str, topic: &str, docs: &[String]) -> Result<PathBuf> {
    let sources: Vec<Value> = docs
        .iter()
        .map(|d| json!({"type": "file", "path": absolute(d)}))
        .collect();
    let meeting = json!({"topic": topic, "context_sources": sources});
    let dir = place.made.join(run_id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Runtime(format!("{}: {}", dir.display(), crate::io::os_error(&e))))?;
    let file = dir.join(format!("{}.json", crate::text::slug(topic)));
    crate::io::write_atomic(&file, crate::io::to_json_line(&meeting, true).as_bytes())?;
    Ok(file)
}

/// What `list_agents` answers.
#[derive(Debug, serde::Serialize, JsonSchema)]
pub struct AgentList {
    pub agents: Vec<ListedAgent>,
}

/// One agent a meeting can name.
#[derive(Debug, serde::Serialize, JsonSchema)]
pub struct ListedAgent {
    pub name: String,
    pub role: String,
    /// Where it is found (built in, the project's agents folder, the user's).
    pub found_in: String,
}

/// `list_agents`: every agent the lookup finds from the server's folder, with its role.
pub fn list_agents() -> Result<Value> {
    let search = crate::loader::AgentSearch::new(None, crate::settings::config::user_agents_dir()?);
    let agents = search
        .list()
        .into_iter()
        .map(|a| ListedAgent {
            name: a.name,
            role: a.role.unwrap_or_else(|e| format!("(invalid: {e})")),
            found_in: a.place.label(),
        })
        .collect();
    Ok(serde_json::to_value(AgentList { agents }).unwrap_or_default())
}

/// What a coding agent reads of an ended meeting: where the report is, then its decision
/// summary (Executive Summary and Recommendation), not the whole report.
pub fn summary_text(result: &MeetingResult) -> String {
    let mut out = format!(
        "Meeting {}: {}, {}",
        result.trace_id,
        result.status.as_str(),
        crate::text::plural(result.loops, "loop")
    );
    if let Some(e) = &result.last_error {
        out.push_str(&format!(" ({e})"));
    }
    out.push('\n');
    if result.status == crate::model::MeetingStatus::Waiting {
        out.push_str(&format!(
            "It waits for a person's answer: meeting_status {{\"run_id\": \"{}\"}} shows the question and the template; give it with meeting_start {{\"resume\": \"{}\", \"answer\": ...}}.\n",
            result.trace_id, result.trace_id
        ));
    }
    let Some(path) = &result.report_file else {
        return out;
    };
    out.push_str(&format!("Report: {path}\n"));
    let report = std::fs::read_to_string(path).unwrap_or_default();
    for title in ["Executive Summary", "Recommendation"] {
        if let Some(body) = crate::text::markdown::report_section(&report, title) {
            out.push_str(&format!("\n## {title}\n\n{}\n", body.trim()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::runs::{Asked, RunState, StatusReport};
    use crate::model::MeetingStatus;

    fn valid(tool: Tool, content: &Value) {
        let schema = tool.output_schema();
        let v = jsonschema::draft202012::new(&schema).expect("a JSON Schema");
        let errors: Vec<String> = v.iter_errors(content).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}: {content}", tool.name());
    }

    /// Every status a meeting can reach — each `RunState` — is one `meeting_status`'s output
    /// schema takes, with what a waiting meeting asks; and every `MeetingStatus` one the
    /// tools that return a MeetingResult take (the schemas are the types that print them).
    #[test]
    fn every_status_validates_against_its_tools_output_schema() {
        for state in RunState::all() {
            let report = StatusReport {
                run_id: "r1".into(),
                run_dir: "/runs/r1".into(),
                status: state,
                loops: 1,
                max_loops: 6,
                calls: 3,
                tokens: 900,
                last_event: json!({"ts": "2026-01-01T00:00:00Z", "kind": "turn"}),
                waiting: (state == RunState::Meeting(MeetingStatus::Waiting)).then(|| Asked {
                    agent: "ana".into(),
                    role: "Analyst".into(),
                    question: "Which?".into(),
                    asked_at: "2026-01-01T00:00:00Z".into(),
                    problem: None,
                    documents: vec![],
                    answer_template: json!({"response": ""}),
                    answer_text: "[response]\n".into(),
                }),
            };
            valid(Tool::MeetingStatus, &serde_json::to_value(&report).unwrap());
        }
        let result = MeetingResult {
            status: MeetingStatus::Finished,
            report_file: Some("/reports/r1.md".into()),
            run_dir: Some("/runs/r1".into()),
            trace_id: "r1".into(),
            loops: 2,
            forced: false,
            usage: Default::default(),
            last_error: None,
            cost: None,
            waiting_file: None,
            forked_from: None,
        };
        for status in MeetingStatus::ALL {
            let mut r = serde_json::to_value(&result).unwrap();
            r["status"] = json!(status.as_str());
            valid(Tool::MeetingRun, &r);
            valid(Tool::MeetingResult, &r);
        }
        let started = serde_json::to_value(crate::mcp::runs::Started {
            run_id: "r1".into(),
            run_dir: "/runs/r1".into(),
        });
        valid(Tool::MeetingStart, &started.unwrap());
        valid(Tool::ListAgents, &list_agents().unwrap());
    }
}
