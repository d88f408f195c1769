//! Cached tokens as the providers report them (docs/design/llm.md#llm-layer): parsed from both wire
//! formats (scripted HTTP server), kept by `--record` and replay, and carried into the
//! exchange log, the board's usage per caller, the `llm_call` events, the MeetingResult, the
//! report's appendix and the final progress line.

use std::time::Duration;

use crate::fake_http::*;
use crate::fixtures::{final_board, meeting_cmd, Cassette};
use crate::harness::Workdir;
use agent_meeting::llm::anthropic::Anthropic;
use agent_meeting::llm::openai::OpenAi;
use agent_meeting::llm::replay::{Recorder, Replay};
use agent_meeting::llm::{Client, Message, Options, Provider, Request, RetryPolicy, Timeouts};
use serde_json::{json, Value};

fn request() -> Request {
    Request {
        caller: "arch".into(),
        system: "You are the architect.".into(),
        messages: vec![Message::user("Which database?")],
        expect: None,
        facts: Default::default(),
    }
}

fn opts() -> Options {
    Options {
        model: "test-model".into(),
        temperature: None,
        max_tokens: Some(100),
    }
}

fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_secs(5),
    }
}

/// One call through `provider`, recorded to a cassette and logged; returns the reply's usage
/// as (prompt, completion, cached, cache writes), the log line's usage and the cassette's.
fn call_and_record(
    provider: Box<dyn Provider>,
    work: &Workdir,
) -> ((u64, u64, u64, u64), Value, Value) {
    let cassette = work.join("rec.jsonl");
    let log = work.join("llm.jsonl");
    let mut client = Client::new(Box::new(Recorder::new(provider, &cassette)), 0)
        .with_policy(RetryPolicy::immediate(1))
        .with_log(Some(log.clone()));
    let u = client.call(&request(), &opts()).unwrap().usage;
    assert!(!u.estimated);
    let line: Value = serde_json::from_str(work.read("llm.jsonl").lines().next().unwrap()).unwrap();
    let rec: Value = serde_json::from_str(work.read("rec.jsonl").lines().next().unwrap()).unwrap();
    (
        (
            u.tokens.prompt_tokens,
            u.tokens.completion_tokens,
            u.tokens.cached_tokens,
            u.tokens.cache_creation_tokens,
        ),
        line["usage"].clone(),
        rec["usage"].clone(),
    )
}

/// Replaying the recorded cassette gives the same counts back.
fn replayed(work: &Workdir) -> (u64, u64, u64, u64) {
    let replay = Replay::open(&work.join("rec.jsonl"), false).unwrap();
    let mut client = Client::new(Box::new(replay), 0);
    let u = client.call(&request(), &opts()).unwrap().usage;
    (
        u.tokens.prompt_tokens,
        u.tokens.completion_tokens,
        u.tokens.cached_tokens,
        u.tokens.cache_creation_tokens,
    )
}

/// OpenAI: `prompt_tokens` already includes `prompt_tokens_details.cached_tokens`.
#[test]
fn openai_cached_tokens_are_counted() {
    let work = Workdir::new();
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Postgres."},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                  "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 0}}
    });
    let s = FakeServer::start(vec![json(200, &body.to_string())]);
    let p = Box::new(OpenAi::new(&format!("{}/v1", s.url), "k", true, timeouts()));
    let (usage, logged, recorded) = call_and_record(p, &work);
    assert_eq!(usage, (2006, 300, 1920, 0));
    let want = json!({"prompt_tokens": 2006, "completion_tokens": 300, "cached_tokens": 1920});
    assert_eq!(logged, want);
    assert_eq!(recorded, want);
    assert_eq!(replayed(&work), usage);
}

/// Anthropic: `input_tokens` excludes cache reads and writes; `prompt_tokens` adds them back,
/// so it means the same as OpenAI's.
#[test]
fn anthropic_cache_reads_and_writes_are_counted() {
    let work = Workdir::new();
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Postgres."}], "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 50, "cache_creation_input_tokens": 200,
                  "cache_read_input_tokens": 1800, "output_tokens": 300}
    });
    let s = FakeServer::start(vec![json(200, &body.to_string())]);
    let p = Box::new(Anthropic::new(
        &format!("{}/anthropic", s.url),
        "k",
        true,
        timeouts(),
    ));
    let (usage, logged, recorded) = call_and_record(p, &work);
    assert_eq!(usage, (2050, 300, 1800, 200));
    let want = json!({"prompt_tokens": 2050, "completion_tokens": 300, "cached_tokens": 1800,
                      "cache_creation_tokens": 200});
    assert_eq!(logged, want);
    assert_eq!(recorded, want);
    assert_eq!(replayed(&work), usage);
}

/// Without cache counts nothing new appears: no key in the log line or the cassette.
#[test]
fn no_cache_counts_no_new_keys() {
    for (kind, body) in [
        ("openai", openai_ok("Postgres.", Some((12, 5)))),
        ("anthropic", anthropic_text("Postgres.", Some((12, 5)))),
    ] {
        let work = Workdir::new();
        let s = FakeServer::start(vec![json(200, &body)]);
        let p: Box<dyn Provider> = match kind {
            "openai" => Box::new(OpenAi::new(&format!("{}/v1", s.url), "k", true, timeouts())),
            _ => Box::new(Anthropic::new(
                &format!("{}/a", s.url),
                "k",
                true,
                timeouts(),
            )),
        };
        let (usage, logged, recorded) = call_and_record(p, &work);
        assert_eq!(usage, (12, 5, 0, 0), "{kind}");
        let want = json!({"prompt_tokens": 12, "completion_tokens": 5});
        assert_eq!((logged, recorded), (want.clone(), want), "{kind}");
    }
}

/// A replayed meeting whose cassette reports cached tokens: they reach the board's usage per
/// caller, the `llm_call` events, the MeetingResult, the exchange log, the appendix and the
/// final line; the totals are the cassette's sums.
#[test]
fn cached_tokens_reach_the_result_and_the_report() {
    let work = Workdir::new();
    let cassette = work.join("cached.jsonl");
    let (mut cached, mut written) = (0u64, 0u64);
    Cassette::demo()
        .each(|v| {
            let seq = v["seq"].as_u64().unwrap();
            let prompt = v["usage"]["prompt_tokens"].as_u64().unwrap();
            if seq == 1 {
                v["usage"]["cache_creation_tokens"] = json!(2000);
                written += 2000;
            } else {
                v["usage"]["cached_tokens"] = json!(prompt - 400);
                cached += prompt - 400;
            }
        })
        .write(&cassette);

    let run = meeting_cmd(work.path(), &cassette, &[]).run();
    run.success();
    let result: Value = run.json();
    assert_eq!(result["usage"]["cached_tokens"], json!(cached));
    assert_eq!(result["usage"]["cache_creation_tokens"], json!(written));
    let by_caller = result["usage"]["by_caller"].as_object().unwrap();
    let sum: u64 = by_caller
        .values()
        .map(|u| u["cached_tokens"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(sum, cached);
    assert_eq!(by_caller["pm"]["cache_creation_tokens"], json!(2000));
    run.stderr_has(&format!("({cached} cached)"));

    let run_dir = work.join("runs/demo-test");
    let board = final_board(&run_dir);
    assert_eq!(board["usage"], result["usage"]);
    let events: Vec<Value> = crate::fixtures::run_events(&run_dir)
        .into_iter()
        .filter(|e| e["type"] == "llm_call")
        .collect();
    assert_eq!(events[0]["cache_creation_tokens"], json!(2000));
    assert!(events[0].get("cached_tokens").is_none());
    let from_events: u64 = events
        .iter()
        .map(|e| e["cached_tokens"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(from_events, cached);
    let logged: u64 = std::fs::read_to_string(run_dir.join("llm.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["usage"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0)
        })
        .sum();
    assert_eq!(logged, cached);

    let report = work.read("report.md");
    assert!(
        report.contains(&format!(
            "(of which {cached} read from the provider's prompt cache, 2000 written to it)"
        )),
        "{report}"
    );
    assert!(
        report.contains(
            "| Caller | Calls | Prompt tokens | Cached (read) | Cache writes | Completion tokens |"
        ),
        "{report}"
    );
}
