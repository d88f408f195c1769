//! Meetings as tasks (docs/design/mcp.md#tasks): the `io.modelcontextprotocol/tasks`
//! extension of 2026-07-28. A `meeting_run` from a client that declares the extension starts
//! the meeting detached (as `meeting_start`) and returns a task whose id is the run id; the
//! task's state is read from the run folder each time it is asked — so a task outlives the
//! server that started it — and from what this server was told about it (a cancel, a
//! declined or given answer), kept in [`Memory`].

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use crate::model::Waiting;

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
                input_key(w.call): {"method": "elicitation/create", "params": super::elicit::form(w)}
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
