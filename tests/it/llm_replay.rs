//! Replay cassettes: call numbering across processes, injected faults through the retry
//! policy, out-of-step and missing entries, record → replay round trip and drift checks.

use std::path::Path;
use std::time::Duration;

use crate::fake_http::*;
use agent_meeting::llm::openai::OpenAi;
use agent_meeting::llm::replay::{Recorder, Replay};
use agent_meeting::llm::{
    Client, ExpectedJson, LlmError, Message, Options, Request, RetryPolicy, Timeouts,
};
use serde_json::json;

fn req(caller: &str, text: &str) -> Request {
    Request {
        caller: caller.into(),
        system: format!("system of {caller}"),
        messages: vec![Message::user(text)],
        expect: Some(ExpectedJson {
            name: "x".into(),
            schema: json!({"type": "object"}),
        }),
        facts: Default::default(),
    }
}

fn opts() -> Options {
    Options {
        model: "m".into(),
        temperature: None,
        max_tokens: None,
    }
}

fn write(dir: &Path, lines: &[serde_json::Value]) -> std::path::PathBuf {
    let p = dir.join("cassette.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&p, text).unwrap();
    p
}

fn replay_client(path: &Path, calls: u64) -> Client {
    Client::new(Box::new(Replay::open(path, false).unwrap()), calls)
        .with_policy(RetryPolicy::immediate(3))
}

#[test]
fn cassette_drives_separate_clients_in_step() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        &[
            json!({"seq": 1, "caller": "pm", "response": "{\"next_action\": \"CALL_AGENT\"}", "usage": {"prompt_tokens": 100, "completion_tokens": 10}}),
            json!({"seq": 2, "caller": "arch", "error": {"kind": "http", "status": 429, "retry_after": 20}}),
            json!({"seq": 3, "caller": "arch", "error": {"kind": "timeout"}}),
            json!({"seq": 4, "caller": "arch", "response": "```json\n{\"response\": \"ok\",}\n```"}),
            json!({"seq": 5, "caller": "pm", "response": "{\"next_action\": \"FINISH\"}", "usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
        ],
    );
    // "pm-step" process: board usage.calls = 0.
    let mut pm = replay_client(&p, 0);
    let r = pm.call(&req("pm", "route"), &opts()).unwrap();
    assert_eq!(r.json, Some(Ok(json!({"next_action": "CALL_AGENT"}))));
    assert_eq!(
        (r.usage.tokens.prompt_tokens, r.usage.estimated),
        (100, false)
    );
    assert_eq!(pm.calls(), 1);

    // "agent-turn" process: two injected faults go through the retry policy without waiting.
    let mut arch = replay_client(&p, pm.calls());
    let r = arch.call(&req("arch", "which db?"), &opts()).unwrap();
    assert_eq!(
        arch.waits(),
        [Duration::ZERO; 2],
        "replay never sleeps, even on Retry-After"
    );
    assert_eq!(r.attempts, 3);
    assert_eq!(r.json, Some(Ok(json!({"response": "ok"}))));
    assert!(r.usage.estimated);
    assert_eq!(arch.calls(), 4);

    let mut pm2 = replay_client(&p, arch.calls());
    let r = pm2.call(&req("pm", "route again"), &opts()).unwrap();
    assert_eq!(r.json, Some(Ok(json!({"next_action": "FINISH"}))));
    assert_eq!(pm2.calls(), 5);
}

#[test]
fn faults_exhaust_attempts_like_real_ones() {
    let d = tempfile::tempdir().unwrap();
    let lines: Vec<_> = (1..=3)
        .map(|i| json!({"seq": i, "caller": "arch", "error": {"kind": "http", "status": 503, "message": "overloaded"}}))
        .collect();
    let p = write(d.path(), &lines);
    let err = replay_client(&p, 0)
        .call(&req("arch", "q"), &opts())
        .unwrap_err();
    match err {
        LlmError::Transient {
            message, attempts, ..
        } => {
            assert_eq!(attempts, 3);
            assert!(
                message.starts_with("replay: HTTP 503: overloaded (gave up after 3 attempts"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    let p = write(
        d.path(),
        &[
            json!({"seq": 1, "caller": "arch", "error": {"kind": "http", "status": 401, "message": "bad key"}}),
        ],
    );
    let err = replay_client(&p, 0)
        .call(&req("arch", "q"), &opts())
        .unwrap_err();
    assert_eq!(err, LlmError::Fatal("replay: HTTP 401: bad key".into()));
}

#[test]
fn caller_mismatch_names_the_call() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        &[
            json!({"seq": 1, "caller": "pm", "response": "{}"}),
            json!({"seq": 2, "caller": "arch", "response": "{}"}),
        ],
    );
    let err = replay_client(&p, 1)
        .call(&req("pm", "q"), &opts())
        .unwrap_err();
    // Typed apart from other fatal errors: resuming would meet it again.
    let LlmError::OutOfStep(m) = err else {
        panic!("{err:?}")
    };
    assert!(
        m.starts_with(
            "replay: cassette out of step at call 2: expected caller pm, cassette has arch"
        ),
        "{m}"
    );
}

#[test]
fn missing_entry_names_call_and_file() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        &[json!({"seq": 1, "caller": "pm", "response": "{}"})],
    );
    let err = replay_client(&p, 1)
        .call(&req("pm", "q"), &opts())
        .unwrap_err();
    // Typed apart from other fatal errors: resuming would meet it again.
    let LlmError::OutOfStep(m) = err else {
        panic!("{err:?}")
    };
    assert!(
        m.contains("no entry for call 2") && m.contains(&p.display().to_string()),
        "{m}"
    );
}

#[test]
fn malformed_cassette_is_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("c.jsonl");
    std::fs::write(&p, "{\"seq\": 1, \"caller\": \"pm\", \"response\": \"{}\"}\n{\"seq\": 2, \"caller\": \"pm\"}\n").unwrap();
    let e = Replay::open(&p, false).err().unwrap();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string().contains("line 2") && e.to_string().contains("exactly one of"),
        "{e}"
    );
    std::fs::write(
        &p,
        "{\"seq\": 1, \"caller\": \"pm\", \"error\": {\"kind\": \"boom\"}}\n",
    )
    .unwrap();
    assert!(Replay::open(&p, false)
        .err()
        .unwrap()
        .to_string()
        .contains("unknown fault kind"));
    assert_eq!(
        Replay::open(&d.path().join("nope.jsonl"), false)
            .err()
            .unwrap()
            .exit_code(),
        2
    );
}

#[test]
fn record_then_replay_gives_same_results_and_checks_drift() {
    let s = FakeServer::start(vec![
        json(200, &openai_ok("{\"a\": 1}", Some((11, 2)))),
        json(500, &openai_error("boom", "server_error")),
        json(200, &openai_ok("{\"b\": [1,]}", None)),
    ]);
    let d = tempfile::tempdir().unwrap();
    let cassette = d.path().join("rec.jsonl");
    let policy = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    };
    let t = Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_secs(5),
    };
    let real = OpenAi::new(
        &format!("{}/v1", s.url),
        "sk-test-SECRET123456789012345",
        true,
        t,
    );
    let mut rec =
        Client::new(Box::new(Recorder::new(Box::new(real), &cassette)), 0).with_policy(policy);
    let live = [
        rec.call(&req("pm", "one"), &opts()).unwrap(),
        rec.call(&req("arch", "two"), &opts()).unwrap(),
    ];
    assert_eq!(rec.calls(), 3);

    let text = std::fs::read_to_string(&cassette).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[1]["error"],
        json!({"kind": "http", "status": 500, "message": "boom (server_error)"})
    );
    assert!(lines
        .iter()
        .all(|l| l["request_sha256"].as_str().is_some_and(|h| h.len() == 64)));
    assert!(
        lines[2].get("usage").is_none(),
        "an estimated usage is not recorded as real"
    );

    let mut rep = replay_client(&cassette, 0);
    let replayed = [
        rep.call(&req("pm", "one"), &opts()).unwrap(),
        rep.call(&req("arch", "two"), &opts()).unwrap(),
    ];
    for (a, b) in live.iter().zip(&replayed) {
        assert_eq!(
            (&a.text, &a.json, a.usage, a.attempts),
            (&b.text, &b.json, b.usage, b.attempts)
        );
    }

    // A changed prompt warns by default and fails with --strict-replay.
    let mut drift = replay_client(&cassette, 0);
    assert!(drift.call(&req("pm", "one, changed"), &opts()).is_ok());
    let mut strict = Client::new(Box::new(Replay::open(&cassette, true).unwrap()), 0);
    let err = strict
        .call(&req("pm", "one, changed"), &opts())
        .unwrap_err();
    assert!(
        matches!(&err, LlmError::Fatal(m) if m.contains("drift at call 1")),
        "{err:?}"
    );
}

#[test]
fn exchange_log_has_full_prompt_and_response() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        &[json!({"seq": 1, "caller": "pm", "response": "{\"x\": 1}"})],
    );
    let log = d.path().join("run/llm.jsonl");
    let mut c = replay_client(&p, 0).with_log(Some(log.clone()));
    c.call(&req("pm", "the question"), &opts()).unwrap();
    let line: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(line["seq"], 1);
    assert_eq!(line["caller"], "pm");
    assert_eq!(line["system"], "system of pm");
    assert_eq!(
        line["messages"],
        json!([{"role": "user", "content": "the question"}])
    );
    assert_eq!(line["response"], "{\"x\": 1}");
}

/// The path the stages take: `client_for` with replay applies `--max-attempts` to injected
/// faults, without waiting.
#[test]
fn client_for_replay_applies_max_attempts() {
    let d = tempfile::tempdir().unwrap();
    let fault = |i: u64| json!({"seq": i, "caller": "pm", "error": {"kind": "http", "status": 503, "retry_after": 30}});
    let p = write(
        d.path(),
        &[
            fault(4),
            fault(5),
            json!({"seq": 6, "caller": "pm", "response": "{}"}),
        ],
    );
    let board = agent_meeting::model::LlmSettings::default();
    let mut args = agent_meeting::llm::LlmConfig {
        provider: Some("replay".into()),
        cassette: Some(p.clone()),
        ..Default::default()
    };
    let (mut c, o) = agent_meeting::llm::client_for(&args, &board, &Default::default(), 3).unwrap();
    let r = c.call(&req("pm", "q"), &o).unwrap();
    assert_eq!((r.attempts, c.calls()), (3, 6));
    assert_eq!(c.waits(), [Duration::ZERO; 2], "no waiting in replay");

    args.max_attempts = 2;
    let (mut c, o) = agent_meeting::llm::client_for(&args, &board, &Default::default(), 3).unwrap();
    let err = c.call(&req("pm", "q"), &o).unwrap_err();
    assert!(
        matches!(err, LlmError::Transient { attempts: 2, .. }),
        "{err:?}"
    );
    assert_eq!(c.calls(), 5);
}

/// A cassette's `delay_ms` longer than the read timeout is a timeout, as a slow server's is:
/// the wait is bounded by `--read-timeout` (here 50 ms against a delay of 10^15 ms), and the
/// error says which delay and what helps (a retry would be the cassette's next line).
#[test]
fn a_delay_past_the_read_timeout_is_a_timeout() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        &[
            json!({"seq": 1, "caller": "pm", "response": "{}", "delay_ms": 1_000_000_000_000_000u64}),
        ],
    );
    let replay = Replay::open(&p, false)
        .unwrap()
        .with_read_timeout(std::time::Duration::from_millis(50));
    let err = Client::new(Box::new(replay), 0)
        .with_policy(RetryPolicy::immediate(1))
        .call(&req("pm", "q"), &opts())
        .unwrap_err();
    let LlmError::Transient {
        message, attempts, ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!(attempts, 1);
    assert!(
        message.contains("delay_ms 1000000000000000") && message.contains("--read-timeout"),
        "{message}"
    );
}
