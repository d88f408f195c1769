//! Meetings as tasks (docs/design/mcp.md#tasks): the `io.modelcontextprotocol/tasks`
//! extension of 2026-07-28. A `meeting_run` from a client that declares the extension starts
//! the meeting detached (as `meeting_start`) and returns a task whose id is the run id; the
//! task's state is read from the run folder each time it is asked — so a task outlives the
//! server that started it — and from what this server was told about it (a cancel, a
//! declined or given answer), kept in [`Memory`]. The extension's methods are here too:
//! `tasks/get`, `tasks/update` (a person's answer), `tasks/cancel`, and the
//! `subscriptions/listen` loop that notifies a client of its tasks' changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{json, Value};

use super::runs::{self, RunState};
use super::tools::{self, Tool};
use super::{code, elicit, now, resources, Call, Server, CAPABILITIES_KEY, SUBSCRIPTION_KEY};
use crate::error::{Error, Result};
use crate::model::{MeetingStatus, Waiting};

/// The extension's identifier, in capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// How often a client is asked to poll: a meeting's stages take seconds to minutes.
pub const POLL_MS: u64 = 2_000;

/// Whether a request's client capabilities declare the extension.
pub fn negotiated(capabilities: Option<&Value>) -> bool {
    capabilities
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some()
}

/// What this server was told about its tasks, beyond what their run folders say.
#[derive(Debug, Default)]
pub struct Memory {
    /// Tasks a `tasks/cancel` asked to stop.
    pub cancelled: BTreeSet<String>,
    /// The call whose answer was declined, by task: the task is over, the meeting waits.
    pub declined: BTreeMap<String, u64>,
    /// The call whose answer was given, by task: working until the meeting takes it.
    pub answered: BTreeMap<String, u64>,
}

/// Where a task stands.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Working(String),
    /// The meeting waits for a person the client can be asked about.
    InputRequired(Box<Waiting>),
    /// Ended: the CallToolResult `meeting_run` would have returned.
    Completed(Value),
    Cancelled(String),
}

impl State {
    pub fn status(&self) -> &'static str {
        match self {
            State::Working(_) => "working",
            State::InputRequired(_) => "input_required",
            State::Completed(_) => "completed",
            State::Cancelled(_) => "cancelled",
        }
    }
}

/// The key of the input request for a person's answer to call `call`: unique over the task's
/// life, as the extension asks (a second chance after an unusable answer is a new call).
pub fn input_key(call: u64) -> String {
    format!("answer-{call}")
}

/// The task as `tasks/get` and `notifications/tasks` give it (a DetailedTask).
pub fn detailed(task_id: &str, state: &State, created: &str, updated: &str) -> Value {
    let mut t = json!({
        "taskId": task_id,
        "status": state.status(),
        "createdAt": created,
        "lastUpdatedAt": updated,
        "ttlMs": null,
        "pollIntervalMs": POLL_MS,
    });
    match state {
        State::Working(message) | State::Cancelled(message) => {
            t["statusMessage"] = json!(message);
        }
        State::InputRequired(w) => {
            t["statusMessage"] = json!(format!("waiting for {}'s answer", w.agent));
            t["inputRequests"] = json!({
                input_key(w.call): {"method": "elicitation/create", "params": elicit::form(w)}
            });
        }
        State::Completed(result) => {
            t["result"] = result.clone();
        }
    }
    t
}

/// When a run was created, from its id (`YYYYMMDDhhmmss-…`, the meeting's clock), as RFC 3339;
/// `None` for an id of another shape.
pub fn created_at(run_id: &str) -> Option<String> {
    let digits = run_id.split('-').next()?;
    if digits.len() != 14 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let d = |a: usize, b: usize| &digits[a..b];
    Some(format!(
        "{}-{}-{}T{}:{}:{}Z",
        d(0, 4),
        d(4, 6),
        d(6, 8),
        d(8, 10),
        d(10, 12),
        d(12, 14)
    ))
}

impl Server {
    /// The `meeting` command line of a tool call. A resume is the meeting's task taken up
    /// again: a cancel or a declined answer of before is over, so its task asks and works
    /// again.
    pub(super) fn launch(
        &self,
        a: &tools::MeetingArgs,
        traceparent: Option<String>,
    ) -> Result<runs::Launch> {
        let launch = tools::launch(&self.place, a, &now())?.with_traceparent(traceparent);
        if a.resume.is_some() {
            let mut m = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
            m.cancelled.remove(&launch.run_id);
            m.declined.remove(&launch.run_id);
        }
        Ok(launch)
    }

    /// `meeting_run` as a task: the meeting started detached, the task's first state.
    pub(super) fn task_start(&self, args: &Value, traceparent: Option<String>) -> Result<Value> {
        let a: tools::MeetingArgs = tools::args(args)?;
        let mut launch = self.launch(&a, traceparent)?;
        launch.args.push("--quiet".into());
        runs::start_detached(&self.place, &launch, &self.children)?;
        let created = created_at(&launch.run_id).unwrap_or_else(now);
        let state = State::Working("the meeting has started".into());
        let mut task = detailed(&launch.run_id, &state, &created, &created);
        task["resultType"] = json!("task");
        Ok(task)
    }

    /// `tasks/get`, `tasks/update` and `tasks/cancel` (the tasks extension).
    pub(super) fn task_method(
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
        match method {
            "tasks/get" => {
                let created = created_at(id).unwrap_or_else(|| updated.clone());
                Ok(detailed(id, &state, &created, &updated))
            }
            "tasks/cancel" => {
                self.remember(|m| {
                    m.cancelled.insert(id.to_string());
                });
                if let Some(pid) = self.children.pid(id) {
                    runs::interrupt(pid);
                }
                Ok(json!({}))
            }
            _ => self.task_update(id, &state, params),
        }
    }

    /// `tasks/update`: only the outstanding request's answer counts; others are ignored, as
    /// the extension asks. An answer resumes the meeting, detached; a declined one leaves it
    /// waiting and ends the task.
    fn task_update(
        &self,
        id: &str,
        state: &State,
        params: &Value,
    ) -> std::result::Result<Value, (i64, String)> {
        let State::InputRequired(w) = state else {
            return Ok(json!({}));
        };
        let Some(response) = params
            .get("inputResponses")
            .and_then(|r| r.get(input_key(w.call)))
        else {
            return Ok(json!({}));
        };
        match elicit::reply(response, w) {
            elicit::Reply::Answer(answer) => {
                let internal = |e: Error| (code::INTERNAL, e.to_string());
                let mut launch = self.answered(id, answer, w.call, None).map_err(internal)?;
                launch.args.push("--quiet".into());
                runs::start_detached(&self.place, &launch, &self.children).map_err(internal)?;
                self.remember(|m| {
                    m.answered.insert(id.to_string(), w.call);
                });
            }
            elicit::Reply::NoAnswer => self.remember(|m| {
                m.declined.insert(id.to_string(), w.call);
            }),
        }
        Ok(json!({}))
    }

    /// Record what the client told this server of a task.
    fn remember(&self, f: impl FnOnce(&mut Memory)) {
        f(&mut self.tasks.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// What the client told this server of task `id`: whether it cancelled it, and the call
    /// whose answer it declined, and the one whose answer it gave.
    fn told(&self, id: &str) -> (bool, Option<u64>, Option<u64>) {
        let m = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        (
            m.cancelled.contains(id),
            m.declined.get(id).copied(),
            m.answered.get(id).copied(),
        )
    }

    /// Whether the client cancelled the meeting of run `id` (a task's cancel).
    pub(super) fn cancelled(&self, id: &str) -> bool {
        let m = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        m.cancelled.contains(id)
    }

    /// Where task `id` stands, and when it last changed: its run folder read as
    /// `meeting_status` reads it, with what the client told this server.
    fn task_state(
        &self,
        id: &str,
        elicits: bool,
    ) -> std::result::Result<(State, String), (i64, String)> {
        let unknown = || (code::INVALID_PARAMS, format!("unknown task {id:?}"));
        let dir = self.place.runs.join(id);
        if !resources::safe_id(id) || !dir.join("meeting.json").is_file() {
            return Err(unknown());
        }
        // What the client told this server is read after the run folder: a cancel is recorded
        // before its signal, so a meeting that stopped of it is never taken for one that ended.
        let status = match runs::status(&dir, id, &self.children, false) {
            Ok(status) => status,
            Err(e) => return Ok(self.before_board(&dir, id, e)),
        };
        let updated = status.last_event["ts"]
            .as_str()
            .map(str::to_string)
            .or_else(|| created_at(id))
            .unwrap_or_else(now);
        let (cancelled, declined, answered) = self.told(id);
        let resume = format!("resumable: meeting_run {{\"resume\": \"{id}\"}}");
        let state = match status.status {
            RunState::Meeting(MeetingStatus::Running) if cancelled => {
                State::Working("stopping".into())
            }
            RunState::Meeting(MeetingStatus::Running) => {
                State::Working(format!("loop {} of {}", status.loops, status.max_loops))
            }
            RunState::Meeting(MeetingStatus::Waiting) => {
                let w = crate::driver::RunDir { path: dir }
                    .waiting()
                    .ok()
                    .flatten()
                    .ok_or_else(unknown)?;
                if cancelled {
                    State::Cancelled(format!("cancelled while waiting for {}; {resume}", w.agent))
                } else if answered == Some(w.call) {
                    State::Working(format!("{}'s answer given", w.agent))
                } else if elicits && declined != Some(w.call) {
                    State::InputRequired(Box::new(w))
                } else {
                    State::Completed(self.result_of(id))
                }
            }
            RunState::Stopped if cancelled => State::Cancelled(format!("stopped; {resume}")),
            _ => State::Completed(self.result_of(id)),
        };
        Ok((state, updated))
    }

    /// Where task `id` stands while its run folder has no board yet (`e` says why): still
    /// starting, or stopped before it began (a cancel that came during the collection) — a
    /// state of the task, not a protocol error.
    fn before_board(&self, dir: &Path, id: &str, e: Error) -> (State, String) {
        let at = created_at(id).unwrap_or_else(now);
        let state = if runs::running(dir, id, &self.children) {
            State::Working("starting".into())
        } else if self.told(id).0 {
            State::Cancelled(format!(
                "stopped before the meeting began ({e}); start it again"
            ))
        } else {
            let done: Result<(String, Value, bool)> = Err(e);
            State::Completed(self.tool_result(Tool::MeetingResult, true, done))
        };
        (state, at)
    }

    /// The CallToolResult of a meeting that will not go on by itself: `meeting_result`'s.
    fn result_of(&self, id: &str) -> Value {
        let done = self.meeting_result(&json!({"run_id": id}));
        self.tool_result(Tool::MeetingResult, true, done)
    }

    /// `subscriptions/listen` for task status: acknowledged with the task ids it will follow,
    /// then a `notifications/tasks` whenever one's status (or its message) changes, until the
    /// client cancels the request or leaves.
    pub(super) fn listen(
        self: Arc<Self>,
        id: Value,
        params: Value,
    ) -> Option<std::thread::JoinHandle<()>> {
        let capabilities = params.get("_meta").and_then(|m| m.get(CAPABILITIES_KEY));
        let asked: Vec<String> = params["notifications"]["taskIds"]
            .as_array()
            .map(|ids| {
                ids.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if !asked.is_empty() && !negotiated(capabilities) {
            self.out.error(
                &id,
                code::MISSING_CAPABILITY,
                "Missing required client capability",
                Some(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}})),
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
                self.notify_changes(&followed, elicits, &meta, &mut last);
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            self.in_flight.with(|calls| calls.remove(&key));
        }))
    }

    /// One look of a subscription at its tasks: a `notifications/tasks` for each one whose
    /// status (or its message) is not the one `last` saw; one that ended is not read again.
    fn notify_changes(
        &self,
        followed: &[String],
        elicits: bool,
        meta: &Value,
        last: &mut BTreeMap<String, (String, Value)>,
    ) {
        for t in followed {
            if last
                .get(t)
                .is_some_and(|(s, _)| matches!(s.as_str(), "completed" | "cancelled" | "failed"))
            {
                continue;
            }
            let Ok((state, updated)) = self.task_state(t, elicits) else {
                continue;
            };
            let created = created_at(t).unwrap_or_else(|| updated.clone());
            let mut task = detailed(t, &state, &created, &updated);
            let seen = (state.status().to_string(), task["statusMessage"].clone());
            if last.get(t) == Some(&seen) {
                continue;
            }
            last.insert(t.clone(), seen);
            task["_meta"] = meta.clone();
            self.out
                .send(&json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": task}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_shaped_per_status() {
        let working = detailed("r1", &State::Working("loop 1 of 6".into()), "a", "b");
        assert_eq!(working["status"], "working");
        assert_eq!(working["statusMessage"], "loop 1 of 6");
        assert_eq!(working["ttlMs"], Value::Null);
        assert!(working.get("result").is_none());
        let done = detailed("r1", &State::Completed(json!({"isError": false})), "a", "b");
        assert_eq!(done["result"]["isError"], false);
        assert_eq!(
            detailed("r1", &State::Cancelled("x".into()), "a", "b")["status"],
            "cancelled"
        );
    }

    #[test]
    fn created_at_reads_the_run_ids_clock() {
        assert_eq!(
            created_at("20261204064124-91d9d924").as_deref(),
            Some("2026-12-04T06:41:24Z")
        );
        assert_eq!(created_at("demo-test"), None);
        assert_eq!(created_at("2026120406412-x"), None);
    }

    #[test]
    fn the_extension_is_read_from_the_capabilities() {
        assert!(negotiated(Some(&json!({"extensions": {EXTENSION: {}}}))));
        assert!(!negotiated(Some(&json!({"extensions": {}}))));
        assert!(!negotiated(Some(&json!({"tasks": {}}))));
        assert!(!negotiated(None));
    }
}
