//! Gateways (docs/design/llm.md#gateways): `--header`s and `AGENT_MEETING_HEADERS` reach every
//! request, `${VAR}` reads the environment, and no header value is shown anywhere: stderr,
//! stdout, `--show-config`, `--dry-run`, the run folder, the report. Azure OpenAI
//! (docs/design/llm.md#azure): the deployment path, `api-version` and the `api-key` header.

use crate::fake_http::{json as http, openai_error, openai_ok, Action, FakeServer};
use crate::fixtures::{Cassette, NOW};
use crate::harness::{cli, Cli, Workdir};

/// Read from the environment by `${GW_TOKEN}`.
const TOKEN: &str = "gw-token-7f3a9c21e0";
/// Given literally, on the command line.
const LITERAL: &str = "team-literal-5c8d2b";

/// The demo cassette's answers, as a live OpenAI server would give them.
fn demo_answers() -> Vec<Action> {
    Cassette::demo()
        .responses()
        .iter()
        .map(|r| http(200, &openai_ok(r, Some((4000, 10)))))
        .collect()
}

/// The demo meeting with its run folder and report in `work`.
fn demo(work: &Workdir) -> Cli {
    let mut c = cli("meeting");
    c.env("AGENT_MEETING_NOW", NOW)
        .args([
            "--meeting-file",
            "meetings/demo.yaml",
            "--agents",
            "arch,biz",
            "--trace-id",
            "gw-test",
        ])
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"));
    c
}

/// Every file under `work`, as text.
fn everything_written(work: &Workdir) -> String {
    let mut all = String::new();
    for entry in walkdir::WalkDir::new(work.path()).into_iter().flatten() {
        if entry.file_type().is_file() {
            all.push_str(&String::from_utf8_lossy(
                &std::fs::read(entry.path()).unwrap(),
            ));
        }
    }
    all
}

fn assert_hidden(what: &str, text: impl AsRef<str>) {
    let text = text.as_ref();
    for secret in [TOKEN, LITERAL] {
        assert!(!text.contains(secret), "{what} shows {secret}: {text}");
    }
}

#[test]
fn headers_reach_every_request_and_no_value_is_shown() {
    let work = Workdir::new();
    let server = FakeServer::start(demo_answers());
    let out = demo(&work)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("GW_TOKEN", TOKEN)
        .args(["--provider", "openai"])
        .args(["--header", "X-Gateway-Key: Bearer ${GW_TOKEN}"])
        .args(["--header", &format!("X-Team: {LITERAL}")])
        .run();
    out.exit(0);
    let requests = server.requests();
    assert!(requests.len() >= 3, "{}", requests.len());
    for r in &requests {
        assert_eq!(
            r.header("x-gateway-key"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(r.header("x-team"), Some(LITERAL));
    }
    assert_hidden("stderr", out.stderr());
    assert_hidden("stdout", out.stdout());
    assert_hidden("the run folder and report", everything_written(&work));

    // --show-config and --dry-run name the headers, never their values.
    let shown = cli("meeting")
        .env("GW_TOKEN", TOKEN)
        .args(["--header", "X-Gateway-Key: Bearer ${GW_TOKEN}"])
        .args(["--header", &format!("X-Team: {LITERAL}")])
        .arg("--show-config")
        .run();
    shown
        .success()
        .stdout_has("header X-Gateway-Key")
        .stdout_has("*** (from $GW_TOKEN)");
    assert_hidden("--show-config", shown.stdout());
    let dry = demo(&work)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("GW_TOKEN", TOKEN)
        .args(["--provider", "openai", "--dry-run"])
        .args(["--header", "X-Gateway-Key: Bearer ${GW_TOKEN}"])
        .args(["--header", &format!("X-Team: {LITERAL}")])
        .run();
    dry.success()
        .stderr_has("headers: X-Gateway-Key: *** (from $GW_TOKEN); X-Team: ***");
    assert_hidden("--dry-run stderr", dry.stderr());
    assert_hidden("--dry-run stdout", dry.stdout());
    assert_eq!(server.count(), requests.len(), "a dry run calls nothing");
}

/// `AGENT_MEETING_HEADERS` holds one header per line (a value may hold commas); a server
/// that echoes a header's value in its error is scrubbed before anything shows it.
#[test]
fn the_variable_gives_headers_and_an_echoing_server_is_scrubbed() {
    let work = Workdir::new();
    let echo = openai_error(&format!("gateway rejected key {TOKEN}"), "bad_key");
    let server = FakeServer::start(vec![http(401, &echo)]);
    let out = demo(&work)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("GW_TOKEN", TOKEN)
        .env(
            "AGENT_MEETING_HEADERS",
            "X-Gateway-Key: Bearer ${GW_TOKEN}\nX-Tags: a, b\n",
        )
        .args(["--provider", "openai"])
        .run();
    out.exit(1).stderr_has("gateway rejected key [redacted]");
    let r = server.request(0);
    assert_eq!(
        r.header("x-gateway-key"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(r.header("x-tags"), Some("a, b"));
    assert_hidden("stderr", out.stderr());
    assert_hidden("the run folder", everything_written(&work));
}

/// A `${VAR}` that is not set is a usage error naming the header and the variable, before any
/// call or run folder; a header that is no `Name: value` is refused without repeating it.
#[test]
fn an_unset_variable_or_a_malformed_header_is_refused_up_front() {
    let work = Workdir::new();
    let server = FakeServer::start(vec![]);
    demo(&work)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args(["--provider", "openai"])
        .args(["--header", "X-Gateway-Key: ${GW_UNSET_TOKEN}"])
        .run()
        .exit(2)
        .stderr_has("X-Gateway-Key")
        .stderr_has("GW_UNSET_TOKEN is not set")
        .one_stderr_line();
    let bad = demo(&work)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args(["--provider", "openai", "--dry-run"])
        .args(["--header", &format!("X-Team {LITERAL}")])
        .run();
    bad.exit(2).stderr_has("--header: expected 'Name: value'");
    assert_hidden("stderr", bad.stderr());
    assert_eq!(server.count(), 0);
    assert!(!work.join("runs").exists(), "no run folder");
}

/// `--provider azure`: the model names the deployment; the request goes to the endpoint's
/// deployment path with `api-version`, the key in `api-key` and no bearer token.
#[test]
fn azure_calls_the_deployment_path_with_its_api_key() {
    let work = Workdir::new();
    const KEY: &str = "azure-key-0b1c2d3e4f";
    let server = FakeServer::start(demo_answers());
    let out = demo(&work)
        .env("AZURE_OPENAI_ENDPOINT", format!("{}/", server.url))
        .env("AZURE_OPENAI_API_KEY", KEY)
        .env("OPENAI_API_VERSION", "2024-06-01")
        .args(["--provider", "azure", "--model", "team-gpt4o"])
        .run();
    out.exit(0);
    for r in server.requests() {
        assert_eq!(
            r.path,
            "/openai/deployments/team-gpt4o/chat/completions?api-version=2024-06-01"
        );
        assert_eq!(r.header("api-key"), Some(KEY));
        assert_eq!(r.header("authorization"), None);
    }
    assert!(!everything_written(&work).contains(KEY));
    // Without a version the default one is sent; --show-config says which and why.
    let shown = cli("meeting")
        .env(
            "AZURE_OPENAI_ENDPOINT",
            "https://example-resource.openai.azure.com",
        )
        .env("AZURE_OPENAI_API_KEY", KEY)
        .args([
            "--provider",
            "azure",
            "--model",
            "team-gpt4o",
            "--show-config",
        ])
        .run();
    shown
        .success()
        .stdout_has("https://example-resource.openai.azure.com")
        .stdout_has(agent_meeting::llm::resolve::AZURE_API_VERSION);
    assert!(!shown.stdout().contains(KEY));
}

/// Azure has no default model (the deployment is the user's) nor endpoint: each is asked for.
#[test]
fn azure_without_a_deployment_or_endpoint_says_what_is_missing() {
    let work = Workdir::new();
    demo(&work)
        .env("AZURE_OPENAI_ENDPOINT", "http://127.0.0.1:9")
        .env("AZURE_OPENAI_API_KEY", "k")
        .args(["--provider", "azure"])
        .run()
        .exit(2)
        .stderr_has("provider azure needs the deployment's name as the model");
    demo(&work)
        .env("AZURE_OPENAI_API_KEY", "k")
        .args(["--provider", "azure", "--model", "d"])
        .run()
        .exit(1)
        .stderr_has("provider azure needs AZURE_OPENAI_ENDPOINT");
}

/// The demo cassette's answers as Anthropic text replies (the schema in the prompt).
fn demo_answers_anthropic() -> Vec<Action> {
    Cassette::demo()
        .responses()
        .iter()
        .map(|r| http(200, &crate::fake_http::anthropic_text(r, Some((100, 10)))))
        .collect()
}

/// Anthropic requests carry the headers too; a header named like the provider's own
/// credential header replaces it (one `x-api-key`, the gateway's).
#[test]
fn anthropic_requests_carry_the_headers_and_one_may_replace_the_key_header() {
    let work = Workdir::new();
    let server = FakeServer::start(demo_answers_anthropic());
    demo(&work)
        .env("ANTHROPIC_BASE_URL", &server.url)
        .env("ANTHROPIC_API_KEY", "anthropic-key-not-real")
        .env("GW_TOKEN", TOKEN)
        .args(["--provider", "anthropic", "--no-native-schema"])
        .args(["--header", "X-Api-Key: ${GW_TOKEN}"])
        .args(["--header", &format!("X-Team: {LITERAL}")])
        .run()
        .exit(0);
    let requests = server.requests();
    assert!(requests.len() >= 3);
    for r in requests {
        let keys: Vec<&str> = r
            .headers
            .iter()
            .filter(|(k, _)| k == "x-api-key")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(keys, [TOKEN], "{:?}", r.headers);
        assert_eq!(r.header("x-team"), Some(LITERAL));
        assert!(r.header("anthropic-version").is_some());
    }
}

/// `meeting.json` keeps no header: a resumed meeting sends the `--header`s it is given.
#[test]
fn a_resume_sends_the_headers_it_is_given() {
    let work = Workdir::new();
    // The first call is refused: the meeting stops, resumable.
    let refusing = FakeServer::start(vec![http(401, &openai_error("no", "bad_key"))]);
    demo(&work)
        .env("OPENAI_BASE_URL", format!("{}/v1", refusing.url))
        .env("GW_TOKEN", TOKEN)
        .args(["--provider", "openai"])
        .args(["--header", "X-Gateway-Key: ${GW_TOKEN}"])
        .run()
        .exit(1);
    let run = work.join("runs/gw-test");
    assert!(!std::fs::read_to_string(run.join("meeting.json"))
        .unwrap()
        .contains("X-Gateway-Key"));
    let server = FakeServer::start(demo_answers());
    cli("meeting")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("GW_TOKEN", TOKEN)
        .arg("--resume")
        .arg(&run)
        .args(["--header", "X-Gateway-Key: ${GW_TOKEN}", "--quiet"])
        .run()
        .exit(0);
    assert!(server.count() >= 3);
    for r in server.requests() {
        assert_eq!(r.header("x-gateway-key"), Some(TOKEN));
    }
}

/// A base URL that answers with a redirect: nothing is sent to where it points — not the key,
/// not a header, not the prompt — for every provider and every redirect status; the meeting
/// stops at once (no retry re-sends the key) with the status, the target and the remedy.
#[test]
fn a_redirect_is_not_followed_and_no_credential_reaches_the_other_host() {
    const KEY: &str = "provider-key-9d8c7b6a5f";
    for (provider, status, extra) in [
        ("openai", 301, &[][..]),
        ("openai", 307, &[]),
        ("anthropic", 302, &[]),
        ("azure", 308, &["--model", "team-gpt4o"]),
        ("openai", 303, &[]),
        // The providers of round 4: the Responses API, Gemini, Ollama's own API.
        ("openai", 302, &["--openai-api", "responses"]),
        ("gemini", 307, &[]),
        ("ollama", 301, &["--model", "llama3.2"]),
    ] {
        let work = Workdir::new();
        let elsewhere = FakeServer::start(vec![]);
        let target = format!("{}/v1/chat/completions", elsewhere.url);
        let redirecting = FakeServer::answering(move |_| {
            crate::fake_http::with_header(status, "location", &target, "")
        });
        let mut c = demo(&work);
        c.env("GW_TOKEN", TOKEN)
            .env("OPENAI_API_KEY", KEY)
            .env("ANTHROPIC_API_KEY", KEY)
            .env("AZURE_OPENAI_API_KEY", KEY)
            .env("GEMINI_API_KEY", KEY)
            .env("OLLAMA_API_KEY", KEY)
            .env("OPENAI_BASE_URL", format!("{}/v1", redirecting.url))
            .env("ANTHROPIC_BASE_URL", &redirecting.url)
            .env("AZURE_OPENAI_ENDPOINT", &redirecting.url)
            .env(
                "GEMINI_BASE_URL",
                format!("{}/v1beta/openai", redirecting.url),
            )
            .env("OLLAMA_HOST", &redirecting.url)
            .args([
                "--provider",
                provider,
                "--header",
                "X-Gateway-Key: ${GW_TOKEN}",
            ])
            .args(extra);
        let out = c.run();
        let case = format!("{provider} {status} {extra:?}");
        out.exit(1)
            .stderr_has(&format!("HTTP {status} redirect to {}", elsewhere.url))
            .stderr_has("not followed")
            .stderr_has("set --base-url");
        assert_eq!(elsewhere.count(), 0, "{case}: the other host saw a request");
        assert_eq!(
            redirecting.count(),
            1,
            "{case}: a refused redirect is not retried"
        );
        assert!(!out.stderr().contains(KEY), "{case}");
        assert_hidden("stderr", out.stderr());
    }
}
