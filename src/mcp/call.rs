//! A `tools/call` (docs/design/mcp.md#tools): each call answered on a thread of its own, the
//! tool it names run — `meeting_run` to the meeting's end (asking a waiting person through the
//! client where it can, or handing back `input_required` for the call's retry to answer),
//! `meeting_start` detached, `meeting_status` and `meeting_result` read from the run folder —
//! and what it came to shaped as a CallToolResult. A `meeting_run` from a client that takes
//! tasks becomes a task instead (`tasks.rs`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{json, Value};

use super::runs::{self, RunState};
use super::tools::{self, Tool};
use super::{code, elicit, now, resources, tasks, Call, Era, Server, CAPABILITIES_KEY};
use crate::error::{Error, Result};
use crate::model::MeetingStatus;

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
    /// Answer a `tools/call` on a thread of its own.
    pub(super) fn call(
        self: Arc<Self>,
        id: Value,
        era: Era,
        params: Value,
    ) -> std::thread::JoinHandle<()> {
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
        let asking = self.asking(era, capabilities);
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
            Tool::MeetingStatus => self.meeting_status(&args),
            Tool::MeetingResult => self.meeting_result(&args),
            Tool::ListAgents => tools::args::<tools::NoArgs>(&args)
                .and_then(|_| tools::list_agents())
                .map(|v| (v.to_string(), v, false)),
        };
        let linkable = era == Era::Stateless || self.linkable.load(Ordering::Relaxed);
        Ok(self.tool_result(tool, linkable, done))
    }

    /// How a `meeting_run` in `era` may ask a waiting person: as the handshake's client
    /// declared, or as this request's capabilities do.
    fn asking(&self, era: Era, capabilities: Option<&Value>) -> Asking {
        match era {
            Era::Legacy if self.elicits.load(Ordering::Relaxed) => Asking::Request,
            Era::Stateless if elicit::form_allowed(capabilities) => Asking::InputRequired,
            _ => Asking::No,
        }
    }

    /// A tool's answer as a CallToolResult: the text, the structured content, and — for an
    /// ended meeting, where the client knows them — links to its resources.
    pub(super) fn tool_result(
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

    fn meeting_run(
        &self,
        key: &str,
        args: &Value,
        token: Option<Value>,
        traceparent: Option<String>,
        asking: Asking,
    ) -> Result<Ran> {
        let a: tools::MeetingArgs = tools::args(args)?;
        let launch = self.launch(&a, traceparent)?;
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
            launch = self.answered(&launch.run_id, answer, w.call, launch.traceparent.clone())?;
        }
    }

    /// The `meeting resume` of a waiting meeting with a person's answer to call `call`: the
    /// meeting refuses it when it waits for another call by then (another client, or the
    /// command line, answered first and the meeting asks a new question).
    pub(super) fn answered(
        &self,
        run_id: &str,
        answer: Value,
        call: u64,
        traceparent: Option<String>,
    ) -> Result<runs::Launch> {
        let a = tools::MeetingArgs {
            resume: Some(run_id.to_string()),
            answer: Some(answer),
            ..Default::default()
        };
        let mut launch = tools::launch(&self.place, &a, &now())?.with_traceparent(traceparent);
        launch
            .args
            .extend(["--answer-for".into(), call.to_string()]);
        Ok(launch)
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
            Some(elicit::Reply::Answer(answer)) => self.answered(&run_id, answer, call, None)?,
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
            let Some(step) = progress_step(*last, n) else {
                return;
            };
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
        let mut launch = self.launch(&a, traceparent)?;
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

    fn meeting_status(&self, args: &Value) -> Result<(String, Value, bool)> {
        let a: tools::StatusArgs = tools::args(args)?;
        let (dir, id) = tools::run_dir_of(&self.place, &a.run_id)?;
        let cancelled = self.cancelled(&id);
        let report = runs::status(&dir, &id, &self.children, cancelled)?;
        let v = to_value(&report);
        Ok((v.to_string(), v, false))
    }

    pub(super) fn meeting_result(&self, args: &Value) -> Result<(String, Value, bool)> {
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
        if status.status == RunState::Meeting(MeetingStatus::Running) {
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

/// The progress a line of loop `n` reports after `last`, or `None` where it would not move
/// forward. Monotonic: within a loop each line moves a little further, never to the next.
fn progress_step(last: f64, n: u32) -> Option<f64> {
    let base = n.saturating_sub(1) as f64;
    let step = if last >= base && last < base + 1.0 {
        last + (base + 1.0 - last) / 2.0
    } else {
        base + 0.5
    };
    if step <= last {
        return None;
    }
    Some(step)
}

/// A tool's structured content (our own types, which always serialize).
fn to_value(result: &impl serde::Serialize) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_moves_on_within_a_loop_and_never_back() {
        assert_eq!(progress_step(0.0, 1), Some(0.5));
        assert_eq!(progress_step(0.5, 1), Some(0.75));
        // The next loop starts halfway into its own step.
        assert_eq!(progress_step(0.75, 2), Some(1.5));
        // A line of an earlier loop moves nothing.
        assert_eq!(progress_step(1.5, 1), None);
    }
}
