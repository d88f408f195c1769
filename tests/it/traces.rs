//! `meeting --otlp-endpoint`: the meeting's trace as OTLP/HTTP protobuf, received by the fake
//! server and decoded here by a small protobuf reader of our own (field numbers of
//! opentelemetry-proto's trace.proto and common.proto), so the test does not trust the encoder.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::fake_http::{json, FakeServer, Recorded};
use crate::fixtures::{demo_cassette, meeting_cmd, resume_cmd};
use crate::harness::Workdir;

enum Wire {
    Int(u64),
    Bytes(Vec<u8>),
}

/// The fields of one protobuf message, in order.
fn fields(mut buf: &[u8]) -> Vec<(u64, Wire)> {
    fn varint(buf: &mut &[u8]) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = buf[0];
            *buf = &buf[1..];
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    }
    let mut out = Vec::new();
    while !buf.is_empty() {
        let tag = varint(&mut buf);
        let value = match tag & 7 {
            0 => Wire::Int(varint(&mut buf)),
            1 => {
                let v = u64::from_le_bytes(buf[..8].try_into().unwrap());
                buf = &buf[8..];
                Wire::Int(v)
            }
            2 => {
                let len = varint(&mut buf) as usize;
                let v = buf[..len].to_vec();
                buf = &buf[len..];
                Wire::Bytes(v)
            }
            other => panic!("unexpected wire type {other}"),
        };
        out.push((tag >> 3, value));
    }
    out
}

fn sub(msg: &[u8], field: u64) -> Vec<Vec<u8>> {
    fields(msg)
        .into_iter()
        .filter_map(|(f, w)| match w {
            Wire::Bytes(b) if f == field => Some(b),
            _ => None,
        })
        .collect()
}

fn int(msg: &[u8], field: u64) -> u64 {
    fields(msg)
        .into_iter()
        .find_map(|(f, w)| match w {
            Wire::Int(v) if f == field => Some(v),
            _ => None,
        })
        .unwrap_or(0)
}

fn text(msg: &[u8], field: u64) -> String {
    sub(msg, field)
        .pop()
        .map(|b| String::from_utf8(b).unwrap())
        .unwrap_or_default()
}

/// An AnyValue as text: string, bool, int, or an array's values joined by commas.
fn any_value(v: &[u8]) -> String {
    match fields(v).into_iter().next() {
        Some((1, Wire::Bytes(b))) => String::from_utf8(b).unwrap(),
        Some((2 | 3, Wire::Int(i))) => i.to_string(),
        Some((4, Wire::Int(bits))) => f64::from_bits(bits).to_string(),
        Some((5, Wire::Bytes(arr))) => sub(&arr, 1)
            .iter()
            .map(|v| any_value(v))
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

fn attributes(msg: &[u8], field: u64) -> BTreeMap<String, String> {
    sub(msg, field)
        .iter()
        .map(|kv| {
            (
                text(kv, 1),
                any_value(&sub(kv, 2).pop().unwrap_or_default()),
            )
        })
        .collect()
}

#[derive(Debug)]
struct Span {
    trace_id: Vec<u8>,
    id: Vec<u8>,
    parent: Vec<u8>,
    name: String,
    kind: u64,
    attrs: BTreeMap<String, String>,
    events: Vec<(String, BTreeMap<String, String>)>,
    status: u64,
}

impl Span {
    fn attr(&self, key: &str) -> &str {
        self.attrs.get(key).map_or("", String::as_str)
    }
}

/// ExportTraceServiceRequest → ResourceSpans (1) → ScopeSpans (2) → Span (2).
fn decode(body: &[u8]) -> (BTreeMap<String, String>, Vec<Span>) {
    let rs = sub(body, 1);
    assert_eq!(rs.len(), 1, "one ResourceSpans");
    let resource = attributes(&sub(&rs[0], 1)[0], 1);
    let mut spans = Vec::new();
    for ss in sub(&rs[0], 2) {
        assert_eq!(
            text(&sub(&ss, 1)[0], 1),
            "agent-meeting",
            "the scope's name"
        );
        for s in sub(&ss, 2) {
            spans.push(Span {
                trace_id: sub(&s, 1).pop().unwrap(),
                id: sub(&s, 2).pop().unwrap(),
                parent: sub(&s, 4).pop().unwrap_or_default(),
                name: text(&s, 5),
                kind: int(&s, 6),
                attrs: attributes(&s, 9),
                events: sub(&s, 11)
                    .iter()
                    .map(|e| (text(e, 2), attributes(e, 3)))
                    .collect(),
                status: sub(&s, 15).pop().map_or(0, |st| int(&st, 3)),
            });
        }
    }
    (resource, spans)
}

/// The one export request the collector got.
fn the_export(server: &FakeServer) -> Recorded {
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one export request");
    let r = requests[0].clone();
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/traces"));
    assert_eq!(r.header("content-type"), Some("application/x-protobuf"));
    r
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

#[test]
fn the_demo_meeting_is_one_trace_of_loops_turns_and_model_calls() {
    let work = Workdir::new();
    let server = FakeServer::start(vec![json(200, "")]);
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--otlp-endpoint", &server.url],
    )
    .run();
    out.success().stderr_has("traces: ");
    let export = the_export(&server);
    let (resource, spans) = decode(&export.raw);
    assert_eq!(resource["service.name"], "agent-meeting");

    // One trace, its id derived from the meeting's trace id.
    let want = Sha256::digest(b"demo-test")[..16].to_vec();
    assert!(spans.iter().all(|s| s.trace_id == want), "one trace id");
    // A tree: one root, every other span's parent is a span of the trace.
    let ids: Vec<&Vec<u8>> = spans.iter().map(|s| &s.id).collect();
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent.is_empty()).collect();
    assert_eq!(roots.len(), 1);
    let root = roots[0];
    assert_eq!(root.name, "invoke_workflow meeting");
    assert_eq!(root.attr("gen_ai.conversation.id"), "demo-test");
    assert_eq!(root.attr("gen_ai.usage.input_tokens"), "27500");
    for s in spans.iter().filter(|s| !s.parent.is_empty()) {
        assert!(
            ids.contains(&&s.parent),
            "{} has no parent in the trace",
            s.name
        );
    }
    let by_id = |id: &Vec<u8>| spans.iter().find(|s| &s.id == id).unwrap();

    // A span per loop under the root; the turns and stages under their loop.
    for n in 1..=4 {
        let l = named(&spans, &format!("loop {n}"));
        assert_eq!(l.len(), 1, "loop {n}");
        assert_eq!(l[0].parent, root.id);
    }
    assert_eq!(named(&spans, "merge-board").len(), 3);
    let pm = named(&spans, "invoke_agent pm");
    assert_eq!(pm.len(), 4, "the PM's four rounds");
    let biz = named(&spans, "invoke_agent biz");
    assert_eq!(biz.len(), 1);
    let biz = biz[0];
    assert_eq!(by_id(&biz.parent).name, "loop 2");
    assert_eq!(biz.attr("gen_ai.operation.name"), "invoke_agent");
    assert_eq!(biz.attr("gen_ai.agent.name"), "biz");
    assert_eq!(biz.attr("gen_ai.conversation.id"), "demo-test");
    // biz's invalid first answer: a retry event, and both requests' tokens.
    let retry = biz.events.iter().find(|(n, _)| n == "agent_retry");
    assert_eq!(
        retry.expect("a retry event").1["agent_meeting.attempt"],
        "1"
    );
    assert_eq!(biz.attr("gen_ai.usage.input_tokens"), "8250");
    let finish = named(&spans, "invoke_agent pm")
        .into_iter()
        .flat_map(|s| s.events.iter())
        .filter(|(n, _)| n == "pm_decision")
        .count();
    assert_eq!(finish, 4, "each PM decision is an event");

    // A chat span per model request, under the turn that made it.
    let chats = named(&spans, "chat replay");
    assert_eq!(chats.len(), 8, "the eight requests of llm.jsonl");
    for c in &chats {
        let turn = by_id(&c.parent);
        assert_eq!(
            turn.name,
            format!("invoke_agent {}", c.attr("gen_ai.agent.name"))
        );
        assert_eq!(c.kind, 3, "a model request is a client span");
        assert_eq!(c.attr("gen_ai.operation.name"), "chat");
        assert_eq!(c.attr("gen_ai.provider.name"), "replay");
        assert_eq!(c.attr("gen_ai.request.model"), "replay");
        assert_eq!(c.attr("gen_ai.response.finish_reasons"), "stop");
        assert_eq!(c.status, 0);
    }
    let biz_chats: Vec<_> = chats.iter().filter(|c| c.parent == biz.id).collect();
    assert_eq!(biz_chats.len(), 2);
    assert_eq!(biz_chats[0].attr("gen_ai.usage.input_tokens"), "3950");
    assert_eq!(biz_chats[1].attr("gen_ai.usage.output_tokens"), "430");

    // No content without --otlp-content: no prompt, answer, question or error text.
    for s in &spans {
        for key in ["gen_ai.input.messages", "gen_ai.output.messages"] {
            assert!(!s.attrs.contains_key(key), "{} has {key}", s.name);
        }
    }
    for words in ["Ledgerly", "read replica", "pricing.md"] {
        let found = export
            .raw
            .windows(words.len())
            .any(|w| w == words.as_bytes());
        assert!(!found, "the export holds {words:?}");
    }
}

#[test]
fn otlp_content_puts_prompts_answers_and_errors_in_the_trace() {
    let work = Workdir::new();
    let server = FakeServer::start(vec![json(200, "")]);
    let flags = ["--otlp-endpoint", &server.url, "--otlp-content", "--quiet"];
    meeting_cmd(work.path(), &demo_cassette(), &flags)
        .run()
        .success();
    let (_, spans) = decode(&the_export(&server).raw);
    let chat = named(&spans, "chat replay")[0];
    let input: serde_json::Value =
        serde_json::from_str(chat.attr("gen_ai.input.messages")).unwrap();
    assert_eq!(input[0]["role"], "user");
    let prompt = input[0]["parts"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("Ledgerly"), "{prompt}");
    let output: serde_json::Value =
        serde_json::from_str(chat.attr("gen_ai.output.messages")).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["finish_reason"], "stop");
    assert!(chat
        .attr("gen_ai.system_instructions")
        .contains("decision meeting"));
    let biz = named(&spans, "invoke_agent biz")[0];
    let retry = &biz
        .events
        .iter()
        .find(|(n, _)| n == "agent_retry")
        .unwrap()
        .1;
    assert!(
        retry["agent_meeting.error"].contains("pricing.md"),
        "{retry:?}"
    );
}

#[test]
fn a_collector_that_fails_or_is_not_there_only_warns() {
    for failing in [true, false] {
        let work = Workdir::new();
        let server = FakeServer::start(vec![json(503, "busy")]);
        // Port 1 on this machine: nothing listens, the connection is refused.
        let url = if failing {
            server.url.clone()
        } else {
            "http://127.0.0.1:1".into()
        };
        let out = meeting_cmd(
            work.path(),
            &demo_cassette(),
            &["--otlp-endpoint", &url, "-q"],
        )
        .run();
        out.success()
            .one_stderr_line()
            .stderr_has("meeting: warning: traces not exported: http://127.0.0.1:");
        if failing {
            out.stderr_has("HTTP 503 busy");
        }
        assert!(work.join("report.md").exists(), "the report is saved");
    }
}

#[test]
fn a_finished_run_folder_exports_the_same_trace_after_the_fact() {
    let work = Workdir::new();
    let live = FakeServer::start(vec![json(200, "")]);
    meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--otlp-endpoint", &live.url, "-q"],
    )
    .run()
    .success();
    let run_dir = work.join("runs/demo-test");
    let saved = std::fs::read_to_string(run_dir.join("meeting.json")).unwrap();
    assert!(
        saved.contains(&format!("{}/v1/traces", live.url)),
        "{saved}"
    );
    // Later, to another collector named by the standard variables, with a header.
    let later = FakeServer::start(vec![json(200, "")]);
    resume_cmd(work.path(), &run_dir)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &later.url)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-team=ops%20east")
        .run()
        .success();
    let again = the_export(&later);
    assert_eq!(again.header("x-team"), Some("ops east"));
    assert!(
        again.raw == the_export(&live).raw,
        "the same spans, ids and times"
    );
}

#[test]
fn an_endpoint_with_a_password_is_refused() {
    let work = Workdir::new();
    let url = "http://user:pw@127.0.0.1:1";
    meeting_cmd(work.path(), &demo_cassette(), &["--otlp-endpoint", url])
        .run()
        .exit(2)
        .stderr_has("OTEL_EXPORTER_OTLP_HEADERS");
    assert!(!work.join("runs").exists(), "no run folder");
}

#[test]
fn the_flag_wins_and_the_traces_variable_is_used_as_it_is() {
    let work = Workdir::new();
    let server = FakeServer::start(vec![json(200, ""), json(200, "")]);
    // The flag wins over the variables.
    meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--otlp-endpoint", &server.url, "-q"],
    )
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    .run()
    .success();
    // The traces endpoint gets no /v1/traces added, and wins over the general one.
    let work = Workdir::new();
    meeting_cmd(work.path(), &demo_cassette(), &["-q"])
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{}/otlp/spans", server.url),
        )
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
        .run()
        .success()
        .stderr_is("");
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/traces", "/otlp/spans"]);
    // A bad variable is named.
    meeting_cmd(work.path(), &demo_cassette(), &[])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")
        .run()
        .exit(2)
        .stderr_has("OTEL_EXPORTER_OTLP_ENDPOINT: expected an http(s) URL");
}

/// A collector that redirects gets nothing more: its target sees no request (the headers are
/// the collector's credentials), and the warning names the status, the target and the remedy;
/// a collector whose error echoes a header value has it scrubbed.
#[test]
fn a_collector_redirect_is_not_followed_and_an_echoed_header_is_scrubbed() {
    const KEY: &str = "collector-key-4e5f6a7b8c";
    let work = Workdir::new();
    let elsewhere = FakeServer::start(vec![]);
    let target = format!("{}/v1/traces", elsewhere.url);
    let redirecting = FakeServer::start(vec![crate::fake_http::with_header(
        307, "location", &target, "",
    )]);
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--otlp-endpoint", &redirecting.url, "-q"],
    )
    .env("OTEL_EXPORTER_OTLP_HEADERS", format!("x-api-key={KEY}"))
    .run();
    out.success()
        .one_stderr_line()
        .stderr_has(&format!("HTTP 307 redirect to {target} not followed"))
        .stderr_has("set --otlp-endpoint");
    assert_eq!(elsewhere.count(), 0, "the other host saw a request");
    assert_eq!(redirecting.count(), 1);

    let work = Workdir::new();
    let echoing = FakeServer::start(vec![json(401, &format!("bad key {KEY}"))]);
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--otlp-endpoint", &echoing.url, "-q"],
    )
    .env("OTEL_EXPORTER_OTLP_HEADERS", format!("x-api-key={KEY}"))
    .run();
    out.success().stderr_has("HTTP 401 bad key [redacted]");
    assert!(!out.stderr().contains(KEY), "{}", out.stderr());
}
