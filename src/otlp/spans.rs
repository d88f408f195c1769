//! The span tree of a meeting, made from its run folder's `events.jsonl` and `llm.jsonl`
//! (docs/design/otel.md#the-span-tree): a root span, a span per loop, under it a span per stage
//! (`invoke_agent NAME` for the PM's and each agent's turn), and a `chat MODEL` span per model
//! request under the turn that made it. Attributes follow the OpenTelemetry GenAI semantic
//! conventions; prompts, answers and error texts only with `content` (docs/design/otel.md#content).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::model::{Event, EventType, Tokens};

/// An attribute's value (OTLP `AnyValue`, the kinds used here).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Bool(bool),
    Int(i64),
    Double(f64),
    StrList(Vec<String>),
}

/// OTLP `Span.SpanKind`: a model request leaves the process, the rest happens in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal = 1,
    Client = 3,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub time_ns: u64,
    pub name: String,
    pub attrs: Vec<(String, Value)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub span_id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub name: String,
    pub kind: Kind,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attrs: Vec<(String, Value)>,
    pub events: Vec<SpanEvent>,
    /// Status ERROR with this message; None: status unset.
    pub error: Option<String>,
}

/// One message of a logged request.
#[derive(Debug, Clone, Deserialize)]
pub struct LoggedMessage {
    pub role: String,
    pub content: String,
}

/// One line of `llm.jsonl` (one HTTP request to a model), the fields a trace shows; other
/// fields are ignored, so an older or newer log still exports.
#[derive(Debug, Clone, Deserialize)]
pub struct Call {
    pub ts_ms: u64,
    #[serde(default)]
    pub attempt: u32,
    pub caller: String,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default)]
    pub messages: Vec<LoggedMessage>,
    #[serde(default)]
    pub response: Option<serde_json::Value>,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub error: Option<serde_json::Value>,
    #[serde(default)]
    pub usage: Option<Tokens>,
    #[serde(default)]
    pub duration_ms: u64,
}

/// A meeting's trace: its id and spans, the root first.
#[derive(Debug, Clone)]
pub struct Trace {
    pub trace_id: [u8; 16],
    pub spans: Vec<Span>,
}

/// The OTLP trace id of a meeting: the first 16 bytes of the SHA-256 of its trace id, so every
/// export of one run folder lands in one trace (docs/design/otel.md#ids).
pub fn trace_id_of(meeting: &str) -> [u8; 16] {
    let digest = Sha256::digest(meeting.as_bytes());
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest[..16]);
    id
}

fn span_id(meeting: &str, path: &str) -> [u8; 8] {
    let digest = Sha256::digest(format!("{meeting}/{path}").as_bytes());
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest[..8]);
    id
}

/// `2026-11-30T03:51:07.123Z` as nanoseconds since the Unix epoch; None if it is not that form.
pub fn parse_ts_ns(ts: &str) -> Option<u64> {
    let b = ts.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| ts.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let millis = match ts.get(19..20) {
        Some(".") => num(20..23).unwrap_or(0),
        _ => 0,
    };
    // Days from civil (Howard Hinnant's algorithm), the inverse of events::rfc3339_utc.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    u64::try_from(secs * 1000 + millis)
        .ok()
        .map(|ms| ms * 1_000_000)
}

fn s(key: &str, v: impl Into<String>) -> (String, Value) {
    (key.to_string(), Value::Str(v.into()))
}

fn int(key: &str, v: u64) -> (String, Value) {
    (
        key.to_string(),
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX)),
    )
}

/// Token counts as the GenAI attributes name them; cache counts only when there are some.
fn usage_attrs(t: Tokens) -> Vec<(String, Value)> {
    let mut attrs = vec![
        int("gen_ai.usage.input_tokens", t.prompt_tokens),
        int("gen_ai.usage.output_tokens", t.completion_tokens),
    ];
    if t.cached_tokens > 0 {
        attrs.push(int("gen_ai.usage.cache_read.input_tokens", t.cached_tokens));
    }
    if t.cache_creation_tokens > 0 {
        attrs.push(int(
            "gen_ai.usage.cache_creation.input_tokens",
            t.cache_creation_tokens,
        ));
    }
    attrs
}

fn add_tokens(a: Tokens, b: Tokens) -> Tokens {
    Tokens {
        prompt_tokens: a.prompt_tokens.saturating_add(b.prompt_tokens),
        completion_tokens: a.completion_tokens.saturating_add(b.completion_tokens),
        cached_tokens: a.cached_tokens.saturating_add(b.cached_tokens),
        cache_creation_tokens: a
            .cache_creation_tokens
            .saturating_add(b.cache_creation_tokens),
    }
}

fn text_of(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The content attributes of a chat span, in the conventions' message shape (role, parts).
fn content_attrs(call: &Call, finish: &str) -> Vec<(String, Value)> {
    let mut attrs = Vec::new();
    if let Some(system) = &call.system {
        let parts = json!([{"type": "text", "content": system}]);
        attrs.push(s("gen_ai.system_instructions", parts.to_string()));
    }
    let input: Vec<_> = call
        .messages
        .iter()
        .map(|m| json!({"role": m.role, "parts": [{"type": "text", "content": m.content}]}))
        .collect();
    attrs.push(s("gen_ai.input.messages", json!(input).to_string()));
    if let Some(response) = &call.response {
        let output = json!([{"role": "assistant",
            "parts": [{"type": "text", "content": text_of(response)}], "finish_reason": finish}]);
        attrs.push(s("gen_ai.output.messages", output.to_string()));
    }
    attrs
}

/// The `chat` span of one logged request.
fn chat_span(meeting: &str, index: usize, call: &Call, parent: [u8; 8], content: bool) -> Span {
    let end_ns = call.ts_ms.saturating_mul(1_000_000);
    let start_ns = end_ns.saturating_sub(call.duration_ms.saturating_mul(1_000_000));
    let finish = if call.truncated { "length" } else { "stop" };
    let mut attrs = vec![
        s("gen_ai.operation.name", "chat"),
        s("gen_ai.provider.name", call.provider.as_str()),
        // The name before the conventions' v1.37; Phoenix and older receivers read it.
        s("gen_ai.system", call.provider.as_str()),
        s("gen_ai.request.model", call.model.as_str()),
        s("gen_ai.agent.name", call.caller.as_str()),
        s("gen_ai.conversation.id", meeting),
        int("agent_meeting.attempt", u64::from(call.attempt)),
    ];
    if let Some(t) = call.temperature {
        attrs.push(("gen_ai.request.temperature".into(), Value::Double(t)));
    }
    if let Some(n) = call.max_tokens {
        attrs.push(int("gen_ai.request.max_tokens", n));
    }
    if let Some(usage) = call.usage {
        attrs.extend(usage_attrs(usage));
    }
    let error = call.error.as_ref().filter(|e| !e.is_null());
    if error.is_none() {
        attrs.push((
            "gen_ai.response.finish_reasons".into(),
            Value::StrList(vec![finish.into()]),
        ));
    } else {
        attrs.push(s("error.type", "llm_request_failed"));
    }
    if content {
        attrs.extend(content_attrs(call, finish));
    }
    Span {
        span_id: span_id(meeting, &format!("call/{index}")),
        parent: Some(parent),
        name: format!("chat {}", call.model),
        kind: Kind::Client,
        start_ns,
        end_ns,
        attrs,
        events: Vec::new(),
        error: error.map(|e| if content { text_of(e) } else { "failed".into() }),
    }
}

/// Events that are no model call and no step of their own: shown as span events of the
/// span of their loop and caller (refusals, retries, routing errors, the decision).
fn span_event(ev: &Event, time_ns: u64, content: bool) -> SpanEvent {
    let mut attrs = Vec::new();
    if let Some(a) = ev.attempt {
        attrs.push(int("agent_meeting.attempt", u64::from(a)));
    }
    if let Some(to) = &ev.to {
        attrs.push(s("agent_meeting.to", to.as_str()));
    }
    if content {
        if let Some(m) = &ev.message {
            attrs.push(s("agent_meeting.message", m.as_str()));
        }
        if let Some(e) = &ev.error {
            attrs.push(s("agent_meeting.error", e.as_str()));
        }
    }
    SpanEvent {
        time_ns,
        name: ev.event_type.as_str().to_string(),
        attrs,
    }
}

/// Whether a caller's span is an agent's turn (`invoke_agent`): it asked a model or answered.
fn is_turn(ev: &Event) -> bool {
    matches!(
        ev.event_type,
        EventType::LlmCall
            | EventType::PmDecision
            | EventType::AgentResult
            | EventType::AgentError
            | EventType::AgentRetry
            | EventType::PmInvalidOutput
            | EventType::PmRoutingError
            | EventType::PmRoundFailed
    )
}

/// The span of one caller in one loop, while it is put together.
struct Group {
    loop_no: u32,
    caller: String,
    turn: bool,
    times: Vec<u64>,
    events: Vec<SpanEvent>,
    error: Option<String>,
    tokens: Tokens,
    provider: Option<String>,
    model: Option<String>,
}

/// The spans of each caller in each loop, from the events; per caller, the span of each of
/// its `llm_call` events in order.
fn collect_groups(
    events: &[Event],
    content: bool,
    fallback: u64,
) -> (Vec<Group>, BTreeMap<String, Vec<usize>>) {
    let mut groups: Vec<Group> = Vec::new();
    let mut index: BTreeMap<(u32, String), usize> = BTreeMap::new();
    let mut call_groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for ev in events {
        let g = *index
            .entry((ev.loop_no, ev.caller.clone()))
            .or_insert_with(|| {
                groups.push(Group {
                    loop_no: ev.loop_no,
                    caller: ev.caller.clone(),
                    turn: false,
                    times: Vec::new(),
                    events: Vec::new(),
                    error: None,
                    tokens: Tokens::default(),
                    provider: None,
                    model: None,
                });
                groups.len() - 1
            });
        let group = &mut groups[g];
        let time = parse_ts_ns(&ev.ts).unwrap_or(fallback);
        group.times.push(time);
        group.turn |= is_turn(ev);
        match ev.event_type {
            EventType::LlmCall => call_groups.entry(ev.caller.clone()).or_default().push(g),
            EventType::AgentError | EventType::PmRoundFailed => {
                group.error = Some(match (&ev.error, content) {
                    (Some(e), true) => e.clone(),
                    _ => ev.event_type.as_str().to_string(),
                });
                group.events.push(span_event(ev, time, content));
            }
            _ => group.events.push(span_event(ev, time, content)),
        }
    }
    (groups, call_groups)
}

fn group_id(meeting: &str, g: &Group) -> [u8; 8] {
    span_id(meeting, &format!("loop/{}/{}", g.loop_no, g.caller))
}

/// The `chat` spans, each under the turn that made its request: the k-th logical call of a
/// caller (a request with attempt 1 starts one) is its k-th `llm_call` event
/// (docs/design/otel.md#the-span-tree); a call with no event goes under the root.
fn chat_spans(
    meeting: &str,
    calls: &[Call],
    groups: &mut [Group],
    call_groups: &BTreeMap<String, Vec<usize>>,
    content: bool,
) -> Vec<Span> {
    let root_id = span_id(meeting, "meeting");
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut spans = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let n = seen.entry(call.caller.as_str()).or_insert(0);
        if call.attempt <= 1 || *n == 0 {
            *n += 1;
        }
        let g = call_groups
            .get(&call.caller)
            .and_then(|gs| gs.get(*n - 1))
            .copied();
        let parent = g.map_or(root_id, |g| group_id(meeting, &groups[g]));
        let span = chat_span(meeting, i, call, parent, content);
        if let Some(g) = g {
            let group = &mut groups[g];
            group.times.extend([span.start_ns, span.end_ns]);
            group.tokens = add_tokens(group.tokens, call.usage.unwrap_or_default());
            group.provider.get_or_insert_with(|| call.provider.clone());
            group.model.get_or_insert_with(|| call.model.clone());
        }
        spans.push(span);
    }
    spans
}

/// The trace of a meeting from its events and its exchange log.
pub fn build(meeting: &str, events: &[Event], calls: &[Call], content: bool) -> Trace {
    let root_id = span_id(meeting, "meeting");
    let fallback = calls
        .first()
        .map_or(0, |c| c.ts_ms.saturating_mul(1_000_000));
    let (mut groups, call_groups) = collect_groups(events, content, fallback);
    let mut spans = chat_spans(meeting, calls, &mut groups, &call_groups, content);
    let mut loops: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for g in &groups {
        let span = group_span(meeting, g);
        let times = loops.entry(g.loop_no).or_default();
        times.extend([span.start_ns, span.end_ns]);
        spans.push(span);
    }
    let mut all: Vec<u64> = spans
        .iter()
        .filter(|s| s.parent == Some(root_id))
        .flat_map(|s| [s.start_ns, s.end_ns])
        .collect();
    for (loop_no, times) in &loops {
        let (start_ns, end_ns) = bounds(times, fallback);
        all.extend([start_ns, end_ns]);
        spans.push(Span {
            span_id: span_id(meeting, &format!("loop/{loop_no}")),
            parent: Some(root_id),
            name: format!("loop {loop_no}"),
            kind: Kind::Internal,
            start_ns,
            end_ns,
            attrs: vec![int("agent_meeting.loop", u64::from(*loop_no))],
            events: Vec::new(),
            error: None,
        });
    }
    let (start_ns, end_ns) = bounds(&all, fallback);
    let total = calls.iter().fold(Tokens::default(), |t, c| {
        add_tokens(t, c.usage.unwrap_or_default())
    });
    let mut attrs = vec![
        s("gen_ai.operation.name", "invoke_workflow"),
        s("gen_ai.agent.name", "meeting"),
        s("gen_ai.conversation.id", meeting),
        int(
            "agent_meeting.loops",
            loops.keys().max().copied().unwrap_or(0).into(),
        ),
        int("agent_meeting.llm_requests", calls.len() as u64),
    ];
    attrs.extend(usage_attrs(total));
    let root = Span {
        span_id: root_id,
        parent: None,
        name: "invoke_workflow meeting".into(),
        kind: Kind::Internal,
        start_ns,
        end_ns,
        attrs,
        events: Vec::new(),
        error: None,
    };
    spans.insert(0, root);
    Trace {
        trace_id: trace_id_of(meeting),
        spans,
    }
}

/// A W3C `traceparent` (`00-<trace id>-<span id>-<flags>`): its trace and span ids.
pub fn parse_traceparent(tp: &str) -> Option<([u8; 16], [u8; 8])> {
    let parts: Vec<&str> = tp.trim().split('-').collect();
    let [version, trace, span, flags] = parts.as_slice() else {
        return None;
    };
    let hex = |s: &str, out: &mut [u8]| -> Option<()> {
        if s.len() != out.len() * 2 {
            return None;
        }
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(())
    };
    let (mut t, mut sp, mut v, mut f) = ([0u8; 16], [0u8; 8], [0u8; 1], [0u8; 1]);
    hex(version, &mut v)?;
    hex(flags, &mut f)?;
    hex(trace, &mut t)?;
    hex(span, &mut sp)?;
    // All-zero ids are invalid (W3C Trace Context), and version ff is forbidden.
    if v[0] == 0xff || t == [0; 16] || sp == [0; 8] {
        return None;
    }
    Some((t, sp))
}

impl Trace {
    /// The meeting's cost on its root span: `agent_meeting.cost.usd`, or
    /// `agent_meeting.cost.unpriced` naming the callers the price table does not know.
    pub fn add_cost(&mut self, cost: &Option<crate::model::Cost>) {
        let (Some(cost), Some(root)) = (cost, self.spans.first_mut()) else {
            return;
        };
        match cost.usd {
            Some(usd) => root
                .attrs
                .push(("agent_meeting.cost.usd".into(), Value::Double(usd))),
            None => root.attrs.push((
                "agent_meeting.cost.unpriced".into(),
                Value::StrList(cost.unpriced.clone()),
            )),
        }
        root.attrs.push((
            "agent_meeting.cost.prices".into(),
            Value::Str(cost.prices.clone()),
        ));
    }

    /// The trace as a child of another's span: its trace id, the root span's parent.
    pub fn put_under(&mut self, (trace_id, span_id): ([u8; 16], [u8; 8])) {
        self.trace_id = trace_id;
        for s in self.spans.iter_mut().filter(|s| s.parent.is_none()) {
            s.parent = Some(span_id);
        }
    }
}

fn bounds(times: &[u64], fallback: u64) -> (u64, u64) {
    let start = times.iter().min().copied().unwrap_or(fallback);
    let end = times.iter().max().copied().unwrap_or(fallback);
    (start, end)
}

/// A caller's span in a loop, under the loop's span: an agent's turn (`invoke_agent`), or a
/// deterministic stage named after it (init-board, merge-board, ...).
fn group_span(meeting: &str, g: &Group) -> Span {
    let (start_ns, end_ns) = bounds(&g.times, 0);
    let mut attrs = vec![int("agent_meeting.loop", u64::from(g.loop_no))];
    let name = if g.turn {
        attrs.extend([
            s("gen_ai.operation.name", "invoke_agent"),
            s("gen_ai.agent.name", g.caller.as_str()),
            s("gen_ai.conversation.id", meeting),
        ]);
        if let Some(p) = &g.provider {
            attrs.push(s("gen_ai.provider.name", p.as_str()));
        }
        if let Some(m) = &g.model {
            attrs.push(s("gen_ai.request.model", m.as_str()));
        }
        if g.tokens != Tokens::default() {
            attrs.extend(usage_attrs(g.tokens));
        }
        format!("invoke_agent {}", g.caller)
    } else {
        g.caller.clone()
    };
    Span {
        span_id: group_id(meeting, g),
        parent: Some(span_id(meeting, &format!("loop/{}", g.loop_no))),
        name,
        kind: Kind::Internal,
        start_ns,
        end_ns,
        attrs,
        events: g.events.clone(),
        error: g.error.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Event;

    /// The meeting's cost goes on its root span: the dollars, or who is unpriced.
    #[test]
    fn the_cost_is_on_the_root_span() {
        let mut t = build("m", &[], &[], false);
        t.add_cost(&Some(crate::model::Cost {
            usd: Some(0.25),
            prices: "LiteLLM of 2026-12-03".into(),
            ..Default::default()
        }));
        let attr = |t: &Trace, k: &str| {
            t.spans[0]
                .attrs
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            attr(&t, "agent_meeting.cost.usd"),
            Some(Value::Double(0.25))
        );
        let mut u = build("m", &[], &[], false);
        u.add_cost(&Some(crate::model::Cost {
            unpriced: vec!["arch (openai qwen3:8b)".into()],
            ..Default::default()
        }));
        assert_eq!(attr(&u, "agent_meeting.cost.usd"), None);
        assert_eq!(
            attr(&u, "agent_meeting.cost.unpriced"),
            Some(Value::StrList(vec!["arch (openai qwen3:8b)".into()]))
        );
    }

    /// A W3C traceparent is read strictly; a trace put under it takes its trace id, and its
    /// root (only) hangs under its span.
    #[test]
    fn a_trace_goes_under_a_traceparent() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        let (trace, span) = parse_traceparent(tp).unwrap();
        assert_eq!(trace[0], 0x0a);
        assert_eq!(span, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c8031zz-00f067aa0ba902b7-01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
        let mut t = build("m", &[], &[], false);
        let roots_before = t.spans.iter().filter(|s| s.parent.is_none()).count();
        assert_eq!(roots_before, 1);
        t.put_under((trace, span));
        assert_eq!(t.trace_id, trace);
        assert_eq!(t.spans[0].parent, Some(span));
    }

    fn ev(loop_no: u32, event_type: EventType, caller: &str) -> Event {
        Event {
            ts: format!("2026-01-01T00:00:0{loop_no}.000Z"),
            trace_id: "t".into(),
            loop_no,
            event_type,
            caller: caller.into(),
            error: Some("why".into()),
            ..Event::default()
        }
    }

    fn call(caller: &str, attempt: u32, error: Option<&str>) -> Call {
        serde_json::from_value(json!({"ts_ms": 1_767_225_601_000u64, "attempt": attempt,
            "caller": caller, "provider": "openai", "model": "m", "error": error,
            "response": error.is_none().then_some("{}"), "duration_ms": 5}))
        .unwrap()
    }

    fn find<'a>(t: &'a Trace, name: &str) -> Vec<&'a Span> {
        t.spans.iter().filter(|s| s.name == name).collect()
    }

    /// A request asked again after a failure (attempt 2) belongs to the same logical call,
    /// under the same turn; a logged request with no event goes under the root.
    #[test]
    fn retried_requests_stay_under_their_turn() {
        let events = [
            ev(1, EventType::LlmCall, "pm"),
            ev(1, EventType::PmDecision, "pm"),
            ev(1, EventType::LlmCall, "arch"),
            ev(1, EventType::AgentError, "arch"),
        ];
        let calls = [
            call("pm", 1, None),
            call("arch", 1, Some("HTTP 429 slow down")),
            call("arch", 2, Some("HTTP 429 slow down")),
            call("pm", 1, None),
        ];
        let t = build("t", &events, &calls, false);
        let arch = find(&t, "invoke_agent arch")[0];
        assert_eq!(arch.error.as_deref(), Some("agent_error"));
        let chats = find(&t, "chat m");
        assert_eq!(chats.len(), 4);
        assert!(chats[1..3].iter().all(|c| c.parent == Some(arch.span_id)));
        assert_eq!(chats[1].error.as_deref(), Some("failed"));
        assert!(!chats[1]
            .attrs
            .iter()
            .any(|(k, _)| k == "gen_ai.response.finish_reasons"));
        assert_eq!(
            chats[3].parent,
            Some(t.spans[0].span_id),
            "no event: under the root"
        );
        assert_eq!(chats[0].start_ns + 5_000_000, chats[0].end_ns);
        // With content, the error texts are there.
        let t = build("t", &events, &calls, true);
        let chats = find(&t, "chat m");
        assert_eq!(chats[1].error.as_deref(), Some("HTTP 429 slow down"));
        assert_eq!(
            find(&t, "invoke_agent arch")[0].error.as_deref(),
            Some("why")
        );
    }

    #[test]
    fn ids_are_derived_and_stable() {
        let a = build(
            "t",
            &[ev(1, EventType::LlmCall, "pm")],
            &[call("pm", 1, None)],
            false,
        );
        let b = build(
            "t",
            &[ev(1, EventType::LlmCall, "pm")],
            &[call("pm", 1, None)],
            false,
        );
        assert_eq!(a.trace_id, b.trace_id);
        assert_eq!(a.spans, b.spans);
        assert_ne!(trace_id_of("t"), trace_id_of("u"));
        let ids: std::collections::BTreeSet<_> = a.spans.iter().map(|s| s.span_id).collect();
        assert_eq!(ids.len(), a.spans.len(), "span ids are unique");
    }
}
