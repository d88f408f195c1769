//! `--provider gemini` (docs/design/llm.md#gemini): Google's OpenAI-compatible endpoint with
//! `GEMINI_API_KEY` as a bearer token, every schema in the subset Gemini takes (no null type,
//! no type list, no `additionalProperties`, never strict), priced from the table; proved by
//! what the fake server saw.

use serde_json::Value;

use crate::fake_http::{json, openai_ok, FakeServer, Recorded};
use crate::fixtures::pm;
use crate::harness::Workdir;

/// Every node of `v`, depth first.
fn nodes(v: &Value) -> Vec<&Value> {
    let mut out = vec![v];
    match v {
        Value::Object(m) => m.values().for_each(|c| out.extend(nodes(c))),
        Value::Array(a) => a.iter().for_each(|c| out.extend(nodes(c))),
        _ => {}
    }
    out
}

/// The meeting's replies: the PM asks arch, arch answers, the PM finishes once arch has
/// spoken.
fn reply(req: &Recorded) -> crate::fake_http::Action {
    let body = req.body.as_str();
    let v = if !body.contains("pm_decision") {
        pm::answer("A rewrite costs a quarter.", &["One quarter."])
    } else if body.contains("A rewrite costs a quarter.") {
        pm::done()
    } else {
        pm::call("arch", "What would a rewrite cost?")
    };
    json(
        200,
        &openai_ok(&v.to_string(), Some((body.len() as u64 / 4, 20))),
    )
}

#[test]
fn a_gemini_meeting_sends_gemini_schemas_and_is_priced() {
    let work = Workdir::new();
    let server = FakeServer::answering(reply);
    let out = work
        .cli("meeting")
        .env("GEMINI_BASE_URL", format!("{}/v1beta/openai", server.url))
        .env("GEMINI_API_KEY", "gemini-test-key")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "gemini", "--max-loops", "2", "--quiet"])
        .run();
    out.success();
    let requests = server.requests();
    assert!(requests.len() >= 3, "{}", out.stderr());
    for r in &requests {
        assert_eq!(r.path, "/v1beta/openai/chat/completions");
        assert_eq!(r.header("authorization"), Some("Bearer gemini-test-key"));
        let body = r.json();
        assert_eq!(body["model"], "gemini-flash-latest");
        let format = &body["response_format"]["json_schema"];
        assert_eq!(format["strict"], false, "never strict on Gemini");
        for n in nodes(&format["schema"]) {
            if let Value::Object(m) = n {
                assert!(!m.contains_key("additionalProperties"), "{format}");
                if let Some(t) = m.get("type") {
                    assert!(t.is_string() && t != "null", "type {t} in {format}");
                }
            }
        }
    }
    let result: Value = out.json();
    assert_eq!(result["status"], "finished");
    assert_eq!(result["forced"], false);
    assert!(
        result["cost"]["usd"].as_f64().is_some_and(|c| c > 0.0),
        "{result}"
    );
    assert!(!out.stderr().contains("gemini-test-key"));
}
