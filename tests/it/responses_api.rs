//! OpenAI's Responses API (docs/design/llm.md#responses-api): a model the price table lists only
//! there meets on `/v1/responses` end to end (wire format, usage with its cached part, the
//! cost, the exchange log, a cassette recorded and replayed), a model on both APIs stays on
//! Chat Completions, `--openai-api` overrides the table, a reply stopped at
//! `max_output_tokens` is cut off, a failed response is retried or fatal by its code, and
//! `--dry-run` / `--show-config` say which API a caller uses. Azure OpenAI's v1 form
//! (docs/design/llm.md#azure): its path, no `api-version`, the model in the body, `api-key`.

use serde_json::Value;

use crate::fake_http::{
    json, openai_ok, responses_failed, responses_incomplete, responses_ok, Action, FakeServer,
    Recorded,
};
use crate::fixtures::{pm, run_events, Cassette, NOW};
use crate::harness::{cli, root, Cli, Run, Workdir};

const KEY: &str = "test-key-5f1e2d3c4b";

/// A responses-only model of the built-in table with a cached-read price, and one without.
const CODEX: &str = "gpt-5.1-codex";
const PRO: &str = "gpt-5-pro";

/// The answers of a meeting of one turn: the PM asks arch, arch answers, the PM finishes.
fn one_turn() -> Vec<String> {
    [
        pm::call("arch", "What would a rewrite cost?"),
        pm::answer(
            "A rewrite costs two engineers a quarter.",
            &["Two engineers, one quarter."],
        ),
        pm::finish("### Executive Summary\nRewrite.\n\n### Recommendation\nRewrite it."),
    ]
    .iter()
    .map(Value::to_string)
    .collect()
}

/// The one-turn answers as Responses API replies: 1,000 input tokens (600 of them cached) and
/// 100 output tokens a call.
fn as_responses() -> Vec<Action> {
    one_turn()
        .iter()
        .map(|r| json(200, &responses_ok(r, Some((1000, 600, 100)))))
        .collect()
}

/// The one-turn answers as Chat Completions replies.
fn as_chat() -> Vec<Action> {
    one_turn()
        .iter()
        .map(|r| json(200, &openai_ok(r, Some((1000, 100)))))
        .collect()
}

/// `meeting` on one topic with arch, `--provider openai --model model` on `server`, in `work`.
fn meeting(work: &Workdir, server: &FakeServer, model: &str, extra: &[&str]) -> Cli {
    let mut c = work.cli("meeting");
    c.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", KEY)
        .env("AGENT_MEETING_NOW", NOW)
        .env("MEETING_RETRY_BASE_MS", "1")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "openai", "--model", model])
        .args(["--trace-id", "resp-test", "--report-file", "report.md"])
        .args(extra);
    c
}

fn paths(server: &FakeServer) -> Vec<String> {
    server.requests().into_iter().map(|r| r.path).collect()
}

/// The built-in table's row of `model`.
fn table_row(model: &str) -> Value {
    let text = std::fs::read_to_string(root().join("share/prices/prices.json")).unwrap();
    let table: Value = serde_json::from_str(&text).unwrap();
    table["models"][model].clone()
}

/// A whole meeting on a model served only by the Responses API: every request is a Responses
/// request to `/v1/responses` (instructions, input items, max_output_tokens, store false, the
/// strict schema under text.format), the cached tokens are counted and priced as cached, the
/// exchange log and a recorded cassette keep the answers, and the cassette replays the meeting.
#[test]
fn a_responses_only_model_meets_on_the_responses_api_end_to_end() {
    let work = Workdir::new();
    let server = FakeServer::start(as_responses());
    let out = meeting(&work, &server, CODEX, &["--record", "rec.jsonl"]).run();
    out.success();
    assert_eq!(paths(&server), ["/v1/responses"; 3], "{}", out.stderr());
    out.stderr_has(&format!(
        "models: openai {CODEX} via the Responses API (pm, arch)"
    ));
    let requests = server.requests();
    for (r, max) in requests.iter().zip([1500, 1200, 1500]) {
        let body = r.json();
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(body["model"], CODEX);
        assert!(!body["instructions"].as_str().unwrap().is_empty());
        assert_eq!(body["input"][0]["role"], "user");
        assert_eq!(body["max_output_tokens"], max, "each call kind's default");
        assert_eq!(body["store"], false);
        assert_eq!(body["text"]["format"]["type"], "json_schema");
        assert_eq!(body["text"]["format"]["strict"], true);
        for chat_only in ["messages", "max_tokens", "response_format"] {
            assert!(body.get(chat_only).is_none(), "{chat_only} in {body}");
        }
    }
    let result: Value = out.json();
    assert_eq!(result["status"], "finished", "{result}");
    assert_eq!(result["usage"]["prompt_tokens"], 3000);
    assert_eq!(result["usage"]["cached_tokens"], 1800);
    assert_eq!(result["usage"]["completion_tokens"], 300);
    let row = table_row(CODEX);
    let (input, cached, output) = (
        row["input"].as_f64().unwrap(),
        row["cache_read"].as_f64().unwrap(),
        row["output"].as_f64().unwrap(),
    );
    assert!(cached < input);
    let expected = 3.0 * (400.0 * input + 600.0 * cached + 100.0 * output);
    let usd = result["cost"]["usd"]
        .as_f64()
        .expect("priced from the table");
    assert!((usd - expected).abs() < 1e-12, "{usd} vs {expected}");
    // The exchange log and the cassette keep the text and the counts, whichever API spoke.
    let log = work.read("runs/resp-test/llm.jsonl");
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    for (line, answer) in lines.iter().zip(one_turn()) {
        let response: Value = serde_json::from_str(line["response"].as_str().unwrap()).unwrap();
        let sent: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(response["next_action"], sent["next_action"]);
        assert_eq!(line["usage"]["cached_tokens"], 600);
        assert_eq!(line["provider"], "openai");
    }
    let recorded = Cassette::read(work.join("rec.jsonl"));
    assert_eq!(recorded.lines().len(), 3);
    assert!(recorded
        .lines()
        .iter()
        .all(|l| l["usage"]["cached_tokens"] == 600));
    let tokens = "- Tokens: 3000 prompt (of which 1800 read from the provider's prompt cache), 300 completion";
    assert!(work.read("report.md").contains(tokens));
    let replayed = work
        .cli("meeting")
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "replay", "--cassette", "rec.jsonl"])
        .args(["--trace-id", "resp-test", "--strict-replay"])
        .args(["--run-dir", "replayed", "--report-file", "replayed.md"])
        .run();
    replayed.success();
    let report = work.read("replayed.md");
    assert!(
        report.contains("## Executive Summary\n\nRewrite.\n"),
        "{report}"
    );
    assert!(report.contains(tokens), "{report}");
    assert_eq!(server.count(), 3, "the replay called nobody");
}

/// A model the table lists on both APIs (gpt-5) stays on Chat Completions, the default.
#[test]
fn a_model_on_both_apis_stays_on_chat_completions() {
    assert!(table_row("gpt-5")["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "/v1/responses"));
    let work = Workdir::new();
    let server = FakeServer::start(as_chat());
    let out = meeting(&work, &server, "gpt-5", &[]).run();
    out.success()
        .stderr_has("models: openai gpt-5 (pm, arch)\n");
    assert_eq!(paths(&server), ["/v1/chat/completions"; 3]);
    assert!(server.request(0).json()["messages"].is_array());
}

/// `--openai-api` wins over the table both ways, and `meeting.json` keeps it, so a resume
/// calls the API the meeting started on (and `--resume` takes no other).
#[test]
fn the_flag_overrides_the_table() {
    let work = Workdir::new();
    let server = FakeServer::start(as_chat());
    meeting(&work, &server, PRO, &["--openai-api", "chat"])
        .run()
        .success()
        .stderr_has(&format!("models: openai {PRO} (pm, arch)\n"));
    assert_eq!(paths(&server), ["/v1/chat/completions"; 3]);
    let work = Workdir::new();
    let server = FakeServer::start(as_responses());
    meeting(
        &work,
        &server,
        "gpt-4o-mini",
        &["--openai-api", "responses"],
    )
    .run()
    .success()
    .stderr_has("models: openai gpt-4o-mini via the Responses API (pm, arch)");
    assert_eq!(paths(&server), ["/v1/responses"; 3]);
    let saved: Value = serde_json::from_str(&work.read("runs/resp-test/meeting.json")).unwrap();
    assert_eq!(saved["llm"]["openai_api"], "responses");
    cli("meeting")
        .arg("--resume")
        .arg(work.join("runs/resp-test"))
        .args(["--openai-api", "chat"])
        .run()
        .exit(2)
        .stderr_has("--openai-api cannot be used with meeting resume");
    cli("meeting")
        .args(["--openai-api", "both", "--show-config"])
        .run()
        .exit(2)
        .stderr_has("invalid value 'both' for '--openai-api <API>'");
}

/// A reply the Responses API stopped at `max_output_tokens` is the cut-off invalid answer (not
/// a parse error), and its retry carries the conversation as input items.
#[test]
fn a_reply_stopped_at_max_output_tokens_is_cut_off() {
    let work = Workdir::new();
    let runaway = format!("{{\"analysis\": \"{}", "cost ".repeat(300));
    let mut replies = vec![json(
        200,
        &responses_incomplete(&runaway, "max_output_tokens", Some((1000, 0, 1500))),
    )];
    replies.extend(as_responses());
    let server = FakeServer::start(replies);
    meeting(&work, &server, PRO, &[]).run().success();
    assert_eq!(paths(&server), ["/v1/responses"; 4]);
    let invalid: Vec<Value> = run_events(&work.join("runs/resp-test"))
        .into_iter()
        .filter(|e| e["type"] == "pm_invalid_output")
        .collect();
    let error = invalid[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("cut off at max_tokens (1500 tokens)")
            && error.contains("raise --max-tokens"),
        "{error}"
    );
    let retry = server.request(1).json();
    let input = retry["input"].as_array().unwrap();
    let roles: Vec<&str> = input.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert!(input[1]["content"]
        .as_str()
        .unwrap()
        .starts_with("{\"analysis\": \"cost cost"));
    assert!(input[2]["content"]
        .as_str()
        .unwrap()
        .contains("cut off at max_tokens"));
}

/// A failed response is an HTTP error of its kind: `server_error` is retried like a 500 (the
/// meeting goes on), an invalid prompt fails the call like a 400, in the server's words.
#[test]
fn a_failed_response_is_retried_or_fatal_by_its_code() {
    let work = Workdir::new();
    let mut replies = vec![json(
        200,
        &responses_failed("server_error", "The model broke."),
    )];
    replies.extend(as_responses());
    let server = FakeServer::start(replies);
    meeting(&work, &server, PRO, &[]).run().success();
    assert_eq!(server.count(), 4, "retried once");
    let work = Workdir::new();
    let server = FakeServer::start(vec![json(
        200,
        &responses_failed("invalid_prompt", "The prompt is not allowed."),
    )]);
    meeting(&work, &server, PRO, &[])
        .run()
        .exit(1)
        .stderr_has("the response failed")
        .stderr_has("The prompt is not allowed. (invalid_prompt)");
    assert_eq!(server.count(), 1, "not retried");
}

/// The value and source of `--show-config`'s row `name`.
fn show_row(stdout: &str, name: &str) -> (String, String) {
    let line = stdout
        .lines()
        .find(|l| l.split("  ").next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} row in {stdout}"));
    let mut parts = line[name.len()..]
        .split("  ")
        .map(str::trim)
        .filter(|p| !p.is_empty());
    (
        parts.next().unwrap().to_string(),
        parts.collect::<Vec<_>>().join("  "),
    )
}

/// `--dry-run` and `--show-config` say which API a caller uses and what chose it.
#[test]
fn dry_run_and_show_config_say_which_api() {
    let dry = |extra: &[&str]| {
        cli("meeting")
            .args(["--meeting-file", "meetings/demo.yaml", "--agents", "arch"])
            .args(["--provider", "openai", "--dry-run"])
            .args(extra)
            .run()
    };
    dry(&["--model", PRO]).success().stderr_has(&format!(
        "models: openai {PRO} via the Responses API (pm, arch)\n"
    ));
    dry(&["--model", PRO, "--openai-api", "chat"])
        .success()
        .stderr_has(&format!("models: openai {PRO} (pm, arch)\n"));
    let show = |extra: &[&str]| -> Run {
        let out = cli("meeting")
            .args(["--provider", "openai", "--show-config"])
            .args(extra)
            .run();
        out.success();
        out
    };
    let out = show(&["--model", PRO]);
    assert_eq!(
        show_row(&out.stdout(), "openai_api"),
        (
            "responses".into(),
            "price table (the model is served only by /v1/responses)".into()
        )
    );
    let out = show(&["--model", "gpt-4o-mini"]);
    assert_eq!(
        show_row(&out.stdout(), "openai_api"),
        ("chat".into(), "built-in default".into())
    );
    let out = show(&["--model", "gpt-4o-mini", "--openai-api", "responses"]);
    assert_eq!(
        show_row(&out.stdout(), "openai_api"),
        ("responses".into(), "flag".into())
    );
    let anthropic = cli("meeting")
        .args(["--provider", "anthropic", "--show-config"])
        .run();
    assert!(
        !anthropic.stdout().contains("openai_api"),
        "only OpenAI's wire format has one"
    );
}

/// The demo meeting on an Azure resource (`endpoint`, `version` if any, extra flags).
fn azure(work: &Workdir, endpoint: &str, version: Option<&str>, extra: &[&str]) -> Run {
    let mut c = work.cli("meeting");
    c.env("AZURE_OPENAI_ENDPOINT", endpoint)
        .env("AZURE_OPENAI_API_KEY", KEY)
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "azure", "--trace-id", "az-test"])
        .args(["--report-file", "report.md"])
        .args(extra);
    if let Some(v) = version {
        c.env("OPENAI_API_VERSION", v);
    }
    c.run()
}

/// Every request of an Azure v1 meeting: `path`, no query, the deployment as the body's
/// model, the key in `api-key` and no bearer token.
fn assert_v1(requests: &[Recorded], path: &str, model: &str) {
    assert_eq!(requests.len(), 3);
    for r in requests {
        assert_eq!(r.path, path);
        assert!(!r.path.contains('?'), "no api-version: {}", r.path);
        assert_eq!(r.json()["model"], model);
        assert_eq!(r.header("api-key"), Some(KEY));
        assert_eq!(r.header("authorization"), None);
    }
}

/// Azure's v1 form: an endpoint ending in /openai/v1, or OPENAI_API_VERSION=v1 on the
/// resource's root, posts to /openai/v1/chat/completions with the deployment in the body and
/// no api-version; azure stays on chat for a deployment named like a responses-only model;
/// `--openai-api responses` takes /openai/v1/responses; on the deployment form it is refused
/// before any call, and the deployment form is as before.
#[test]
fn azure_v1_form_takes_the_model_in_the_body_and_no_api_version() {
    let work = Workdir::new();
    let server = FakeServer::start(as_chat());
    let endpoint = format!("{}/openai/v1/", server.url);
    azure(&work, &endpoint, Some("2024-10-21"), &["--model", PRO]).success();
    assert_v1(&server.requests(), "/openai/v1/chat/completions", PRO);

    let work = Workdir::new();
    let server = FakeServer::start(as_chat());
    azure(&work, &server.url, Some("v1"), &["--model", "team-gpt5"]).success();
    assert_v1(
        &server.requests(),
        "/openai/v1/chat/completions",
        "team-gpt5",
    );

    let work = Workdir::new();
    let server = FakeServer::start(as_responses());
    let endpoint = format!("{}/openai/v1", server.url);
    let extra = ["--model", "team-codex", "--openai-api", "responses"];
    azure(&work, &endpoint, None, &extra).success();
    assert_v1(&server.requests(), "/openai/v1/responses", "team-codex");

    let work = Workdir::new();
    let server = FakeServer::start(as_chat());
    azure(&work, &server.url, None, &extra)
        .exit(2)
        .stderr_has("Responses API on its v1 endpoint only")
        .one_stderr_line();
    assert_eq!(server.count(), 0);
    azure(&work, &server.url, None, &["--model", "team-gpt4o"]).success();
    let deployment = format!(
        "/openai/deployments/team-gpt4o/chat/completions?api-version={}",
        agent_meeting::llm::resolve::AZURE_API_VERSION
    );
    assert!(server.requests().iter().all(|r| r.path == deployment));

    let shown = cli("meeting")
        .env(
            "AZURE_OPENAI_ENDPOINT",
            "https://res.openai.azure.com/openai/v1/",
        )
        .env("OPENAI_API_VERSION", "2024-10-21")
        .args([
            "--provider",
            "azure",
            "--model",
            "team-gpt5",
            "--show-config",
        ])
        .run();
    shown.success();
    assert_eq!(
        show_row(&shown.stdout(), "azure api-version"),
        (
            "none (the v1 endpoint)".into(),
            "environment (AZURE_OPENAI_ENDPOINT)".into()
        )
    );
}
