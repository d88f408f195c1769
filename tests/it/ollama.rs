//! `--provider ollama` (docs/design/llm.md#ollama) against a scripted server speaking Ollama's
//! native API: the request (`/api/chat`, no streaming, the schema as `format`, a context sized
//! to the prompt and the reply), `OLLAMA_HOST` as Ollama reads it, usage from its counts, a
//! reply stopped at `num_predict`, a model not pulled, the key and headers, `--record`, the
//! start's lines, and whole meetings ending in a report, with no price.

use std::time::Duration;

use crate::fake_http::{json as http, ollama_error, ollama_ok, Action, FakeServer, Recorded};
use crate::fixtures::{Cassette, NOW};
use crate::harness::{cli, Cli, Workdir};
use agent_meeting::llm::ollama::Ollama;
use agent_meeting::llm::openai::JsonMode;
use agent_meeting::llm::{
    Client, ExpectedJson, LlmError, Message, NoJson, Options, Request, Timeouts,
};
use serde_json::{json, Value};

fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"response": {"type": "string"}},
        "required": ["response"]
    })
}

fn request(document: &str) -> Request {
    Request {
        caller: "arch".into(),
        system: "You are the architect.".into(),
        messages: vec![Message::user(format!("Which database?\n{document}"))],
        expect: Some(ExpectedJson {
            name: "agent_turn".into(),
            schema: schema(),
        }),
        facts: Default::default(),
    }
}

fn opts(max_tokens: u32) -> Options {
    Options {
        model: "llama3.2".into(),
        temperature: Some(0.2),
        max_tokens: Some(max_tokens),
    }
}

/// A client of the Ollama provider at `server`, one attempt per call.
fn client(server: &FakeServer, key: &str) -> Client {
    let t = Timeouts {
        connect: Duration::from_secs(2),
        read: Duration::from_secs(10),
    };
    let ollama = Ollama::new(&server.url, key, JsonMode::Schema, 4096, t);
    Client::new(Box::new(ollama), 0)
}

/// The characters a request sends the model (every message's content), over four: the prompt
/// as the docs say the provider estimates it.
fn prompt_estimate(body: &Value) -> u64 {
    let chars: usize = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().chars().count())
        .sum();
    chars.div_ceil(4) as u64
}

/// Checks every request of a meeting makes of Ollama: the native path and shape, a context
/// that holds the prompt and the reply.
fn assert_native(r: &Recorded) {
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/api/chat"));
    let body = r.json();
    assert_eq!(body["stream"], false, "{body}");
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(body["format"].is_object(), "the schema as format: {body}");
    let options = &body["options"];
    let predict = options["num_predict"].as_u64().expect("num_predict");
    let ctx = options["num_ctx"].as_u64().expect("num_ctx");
    let need = prompt_estimate(&body) + predict;
    assert!(ctx >= need, "num_ctx {ctx} < {need}: {options}");
    assert_eq!(ctx % 1024, 0, "{ctx}");
}

#[test]
fn the_request_is_ollamas_native_chat_with_a_context_that_fits() {
    let server = FakeServer::start(vec![http(
        200,
        &ollama_ok(r#"{"response": "Postgres."}"#, Some((9000, 12)), "stop"),
    )]);
    // 30,000 characters: more than Ollama's default context of 4,096 tokens holds.
    let document = "The nightly run takes 3h40m. ".repeat(1000);
    let reply = client(&server, "")
        .call(&request(&document), &opts(1200))
        .unwrap();
    assert_eq!(reply.json.unwrap().unwrap()["response"], "Postgres.");
    let r = server.request(0);
    assert_native(&r);
    let body = r.json();
    assert_eq!(body["model"], "llama3.2");
    assert_eq!(body["messages"][0]["content"], "You are the architect.");
    assert_eq!(body["messages"][1]["role"], "user");
    let mut sent = schema();
    sent.as_object_mut().unwrap().remove("$schema");
    assert_eq!(body["format"], sent, "the schema, without its meta keys");
    assert_eq!(body["options"]["num_predict"], 1200);
    assert_eq!(body["options"]["temperature"], 0.2);
    let ctx = body["options"]["num_ctx"].as_u64().unwrap();
    assert!(ctx > 8192, "the documents need more than 8k: {ctx}");
    assert_eq!(r.header("authorization"), None, "no key, no header");
    // Usage is the server's counts, not an estimate.
    assert_eq!(
        (
            reply.usage.tokens.prompt_tokens,
            reply.usage.tokens.completion_tokens,
            reply.usage.estimated
        ),
        (9000, 12, false)
    );
}

/// `done_reason: length` is a reply stopped at `num_predict` (cut off: raise --max-tokens),
/// or, stopped well short of it, by a full context (a larger context, not more tokens).
#[test]
fn a_reply_stopped_at_its_limit_is_cut_off() {
    let head = r#"{"response": "Postgres, beca"#;
    let server = FakeServer::start(vec![
        http(200, &ollama_ok(head, Some((900, 100)), "length")),
        http(200, &ollama_ok(head, Some((4000, 30)), "length")),
    ]);
    let mut c = client(&server, "");
    let reply = c.call(&request(""), &opts(100)).unwrap();
    assert!(reply.truncated);
    let e = reply.json.unwrap().unwrap_err();
    assert_eq!(e, NoJson::CutOff(Some(100)));
    assert!(e.to_string().contains("raise --max-tokens"), "{e}");
    let reply = c.call(&request(""), &opts(100)).unwrap();
    let e = reply.json.unwrap().unwrap_err();
    assert!(matches!(e, NoJson::WindowFull { reply: 30, .. }), "{e:?}");
}

/// A model the server has not pulled is a fatal error that says how to get it; a 404 with no
/// model named is the wrong address; Ollama's `{"error": "..."}` words reach the message; a
/// redirect is refused.
#[test]
fn a_model_not_pulled_names_ollama_pull() {
    let server = FakeServer::start(vec![
        http(
            404,
            &ollama_error(r#"model "llama3.2" not found, try pulling it first"#),
        ),
        Action::Respond {
            status: 404,
            headers: vec![],
            body: "404 page not found".into(),
        },
        http(400, &ollama_error("invalid options: num_ctx")),
        Action::Respond {
            status: 302,
            headers: vec![(
                "location".into(),
                "http://elsewhere.example/api/chat".into(),
            )],
            body: String::new(),
        },
    ]);
    let mut c = client(&server, "");
    let LlmError::Fatal(e) = c.call(&request(""), &opts(10)).unwrap_err() else {
        panic!("not fatal")
    };
    assert!(e.contains("HTTP 404"), "{e}");
    assert!(e.contains(r#"model "llama3.2" not found"#), "{e}");
    assert!(e.contains("`ollama pull llama3.2`"), "{e}");
    let LlmError::Fatal(e) = c.call(&request(""), &opts(10)).unwrap_err() else {
        panic!("not fatal")
    };
    assert!(
        e.contains("no Ollama API at") && e.contains("without /v1"),
        "{e}"
    );
    assert!(!e.contains("ollama pull"), "{e}");
    let LlmError::Fatal(e) = c.call(&request(""), &opts(10)).unwrap_err() else {
        panic!("not fatal")
    };
    assert!(e.ends_with("HTTP 400: invalid options: num_ctx"), "{e}");
    // A redirect is not followed (it would take the key and the prompt elsewhere).
    let LlmError::Fatal(e) = c.call(&request(""), &opts(10)).unwrap_err() else {
        panic!("not fatal")
    };
    assert!(
        e.contains("HTTP 302 redirect to http://elsewhere.example/api/chat not followed"),
        "{e}"
    );
    assert_eq!(server.count(), 4);
    // A meeting stops on it with the remedy.
    let work = Workdir::new();
    let server = FakeServer::start(vec![http(
        404,
        &ollama_error(r#"model "llama3.2" not found, try pulling it first"#),
    )]);
    let out = demo(&work, &server.url).run();
    out.exit(1).stderr_has("`ollama pull llama3.2`");
    assert_eq!(server.count(), 1, "not retried");
}

/// `OLLAMA_API_KEY` goes as a bearer token (a hosted or proxied Ollama) and is scrubbed from
/// what the server says back.
#[test]
fn the_optional_key_is_a_bearer_token_never_shown() {
    const KEY: &str = "ollama-key-5f1e9a3b7c";
    let server = FakeServer::start(vec![http(
        401,
        &ollama_error(&format!("unauthorized: {KEY}")),
    )]);
    let LlmError::Fatal(e) = client(&server, KEY)
        .call(&request(""), &opts(10))
        .unwrap_err()
    else {
        panic!("not fatal")
    };
    assert_eq!(
        server.request(0).header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!e.contains(KEY) && e.contains("[redacted]"), "{e}");
}

/// The demo meeting's answers, as Ollama gives them, each call counting 1,000 prompt and 100
/// reply tokens.
fn demo_answers() -> Vec<Action> {
    Cassette::demo()
        .responses()
        .iter()
        .map(|r| http(200, &ollama_ok(r, Some((4000, 100)), "stop")))
        .collect()
}

/// The demo meeting against `host` (`OLLAMA_HOST`) with `--provider ollama`, writing into
/// `work`.
fn demo(work: &Workdir, host: &str) -> Cli {
    let mut c = demo_with(work, &["--provider", "ollama", "--model", "llama3.2"]);
    c.env("OLLAMA_HOST", host);
    c
}

/// The demo meeting with these provider flags, writing into `work`.
fn demo_with(work: &Workdir, provider: &[&str]) -> Cli {
    let mut c = cli("meeting");
    c.env("AGENT_MEETING_NOW", NOW)
        .args([
            "--meeting-file",
            "meetings/demo.yaml",
            "--agents",
            "arch,biz",
        ])
        .args(provider)
        .args(["--trace-id", "ollama-test"])
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"));
    c
}

/// `OLLAMA_HOST` as `host:port` (no scheme, as Ollama's own client takes it); the whole demo
/// meeting runs on the native API and ends with its report; the usage is Ollama's counts,
/// and a local model is not priced (no cost, not "unpriced").
#[test]
fn a_meeting_on_ollama_ends_with_a_report() {
    let work = Workdir::new();
    let server = FakeServer::start(demo_answers());
    let host = server.url.trim_start_matches("http://").to_string();
    let out = demo(&work, &host).run();
    out.success();
    let requests = server.requests();
    let calls = requests.len() as u64;
    assert!(calls >= 3, "{calls}");
    for r in &requests {
        assert_native(r);
        assert_eq!(r.json()["model"], "llama3.2");
    }
    let result: Value = out.json();
    assert_eq!(result["status"], "finished", "{result}");
    assert_eq!(result["usage"]["prompt_tokens"], 4000 * calls, "{result}");
    assert_eq!(result["usage"]["completion_tokens"], 100 * calls);
    assert!(result.get("cost").is_none(), "not priced: {result}");
    let board = crate::fixtures::final_board(&work.join("runs/ollama-test"));
    let by_caller = board["usage"]["by_caller"].as_object().unwrap();
    let prompt: u64 = by_caller
        .values()
        .map(|u| u["prompt_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(prompt, 4000 * calls, "{by_caller:?}");
    let report = work.read("report.md");
    assert!(report.contains("## Recommendation"), "{report}");
    assert!(!report.contains("unpriced") && !report.contains("- Cost:"));
    out.stderr_lacks("unpriced");
    // The exchange log names the provider.
    let log = work.read("runs/ollama-test/llm.jsonl");
    let first: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(first["provider"], "ollama");
}

/// `--record` keeps an Ollama meeting as a cassette that replays it (its prompts unchanged:
/// `--strict-replay`), with the same report.
#[test]
fn an_ollama_meeting_records_a_cassette_that_replays_it() {
    let work = Workdir::new();
    let server = FakeServer::start(demo_answers());
    let cassette = work.join("ollama.jsonl");
    let out = demo(&work, &server.url)
        .arg("--record")
        .arg(&cassette)
        .run();
    out.success();
    let live = work.read("report.md");
    let recorded = Cassette::read(&cassette);
    assert_eq!(recorded.lines().len(), server.count());
    assert_eq!(recorded.lines()[0]["usage"]["prompt_tokens"], 4000);
    let again = Workdir::new();
    let replay = demo_with(&again, &["--provider", "replay", "--strict-replay"])
        .arg("--cassette")
        .arg(&cassette)
        .run();
    replay.success();
    // The same report but its header, which says the answers were replayed.
    let body = |r: &str| r.split_once("## Topic").unwrap().1.to_string();
    assert_eq!(body(&again.read("report.md")), body(&live));
}

/// `--header`s reach Ollama's requests too (a proxy in front of it).
#[test]
fn headers_reach_ollama() {
    let work = Workdir::new();
    let server = FakeServer::start(demo_answers());
    demo(&work, &server.url)
        .args(["--header", "X-Team: platform"])
        .run()
        .success();
    for r in server.requests() {
        assert_eq!(r.header("x-team"), Some("platform"));
    }
}

/// Ollama has no default model: without one the start stops (exit 2) naming where to set
/// it; `OLLAMA_MODEL` names one.
#[test]
fn the_model_is_named_or_the_start_says_where() {
    let out = cli("meeting")
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "ollama", "--dry-run"])
        .run();
    out.exit(2)
        .one_stderr_line()
        .stderr_has("provider ollama needs a model")
        .stderr_has("--model NAME (or OLLAMA_MODEL")
        .stderr_has("ollama list");
    let out = cli("meeting")
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .env("OLLAMA_MODEL", "qwen3:8b")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "ollama", "--dry-run"])
        .run();
    out.success()
        .stderr_has("models: ollama qwen3:8b (pm, arch)")
        .stderr_has("local server: read timeout 600 s")
        .stderr_has("ollama: num_ctx ")
        .stderr_has(" for the PM's first call (its prompt of about ")
        .stderr_has(" tokens, 1500 for the reply;");
}

/// `--show-config` shows Ollama's address as read from `OLLAMA_HOST` (no scheme), the local
/// server's read timeout and whether a key is set; the config file's `base_urls.ollama` is
/// below the variable; `OLLAMA_CONTEXT_LENGTH` that is no number is bad input.
#[test]
fn show_config_names_ollamas_address_and_its_source() {
    let rows = |out: &crate::harness::Run| -> String {
        out.stdout()
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let out = cli("meeting")
        .env("OLLAMA_HOST", "0.0.0.0:11500")
        .args(["--show-config", "--agents", "arch", "--provider", "ollama"])
        .args(["--model", "llama3.2"])
        .run();
    out.success();
    let shown = rows(&out);
    for row in [
        "base_urls.ollama http://127.0.0.1:11500 environment (OLLAMA_HOST)",
        "read_timeout 600 s local server default",
        "provider ollama flag",
        "OLLAMA_API_KEY not set",
    ] {
        assert!(shown.contains(row), "{row}\n{shown}");
    }
    let work = Workdir::new();
    let config = work.write(
        "config.yaml",
        "provider: ollama\nmodel: llama3.2\nbase_urls: {ollama: 'http://gpu-box:11434'}\n",
    );
    let out = cli("meeting")
        .env("AGENT_MEETING_CONFIG", &config)
        .args(["--show-config", "--agents", "arch"])
        .run();
    out.success();
    let shown = rows(&out);
    for row in [
        "provider ollama config file",
        "base_urls.ollama http://gpu-box:11434 config file",
        "read_timeout 120 s built-in default",
    ] {
        assert!(shown.contains(row), "{row}\n{shown}");
    }
    let bad = work.write("bad.yaml", "base_urls: {ollama: 'gpu-box:11434'}\n");
    cli("meeting")
        .env("AGENT_MEETING_CONFIG", &bad)
        .arg("--show-config")
        .run()
        .exit(2)
        .stderr_has("base_urls.ollama");
    let out = cli("meeting")
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .env("OLLAMA_CONTEXT_LENGTH", "lots")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "ollama", "--model", "llama3.2", "--dry-run"])
        .run();
    out.exit(2)
        .one_stderr_line()
        .stderr_has("OLLAMA_CONTEXT_LENGTH: expected a number of tokens");
}

/// `OLLAMA_CONTEXT_LENGTH` in this environment is the smallest context sent: a user who gave
/// the model a larger one gets no smaller from a request.
#[test]
fn ollama_context_length_is_the_smallest_context_sent() {
    let work = Workdir::new();
    let server = FakeServer::start(demo_answers());
    demo(&work, &server.url)
        .env("OLLAMA_CONTEXT_LENGTH", "32768")
        .run()
        .success();
    for r in server.requests() {
        assert_eq!(r.json()["options"]["num_ctx"], 32768);
    }
}
