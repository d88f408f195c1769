//! A model server on this machine (docs/design/llm.md#local-servers): a loopback base URL
//! (127.0.0.1, ::1, localhost) gets a read timeout that fits a model on a CPU, said at the start
//! and by `--show-config` with its source, the user's flag winning; and a read timeout sends nothing more to a server that may still be
//! generating the abandoned answer (docs/design/failure-policy.md#local-servers), proved by the
//! requests the fake server saw.

use crate::fake_http::{json, openai_ok, FakeServer};
use crate::harness::{cli, Cli, Workdir};

/// `meeting --show-config` for arch with the OpenAI provider at `base`, plus `extra`.
fn show_config(base: &str, extra: &[&str]) -> String {
    let out = cli("meeting")
        .env("OPENAI_BASE_URL", base)
        .args(["--show-config", "--agents", "arch", "--provider", "openai"])
        .args(extra)
        .run();
    out.success();
    // One space between columns, so rows compare whatever the widths.
    out.stdout()
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_loopback_server_gets_local_defaults_and_the_flags_win() {
    for base in [
        "http://127.0.0.1:9/v1",
        "http://[::1]:9/v1",
        "http://localhost:11434/v1",
    ] {
        let shown = show_config(base, &[]);
        let row = "read_timeout 600 s local server default";
        assert!(shown.contains(row), "{base}: {row}\n{shown}");
    }
    // The user's flag wins.
    let shown = show_config("http://127.0.0.1:9/v1", &["--read-timeout", "30"]);
    assert!(shown.contains("read_timeout 30 s flag"), "{shown}");
    // A server elsewhere keeps the built-in defaults.
    let shown = show_config("https://llm.example.com/v1", &[]);
    for row in [
        "read_timeout 120 s built-in default",
        "pm.max_tokens 1500 built-in default",
    ] {
        assert!(shown.contains(row), "{row}\n{shown}");
    }
}

/// `meeting --dry-run` at a local server says so in its start lines.
#[test]
fn the_start_says_which_local_defaults_apply() {
    let out = cli("meeting")
        .env("OPENAI_BASE_URL", "http://localhost:9/v1")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "openai", "--dry-run"])
        .run();
    out.success();
    out.stderr_has("local server: read timeout 600 s (the default for a model on this machine; --read-timeout wins), max_tokens 1200 per agent turn, 1500 per PM step, 2000 for the closing round");
    let out = cli("meeting")
        .env("OPENAI_BASE_URL", "http://localhost:9/v1")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "openai", "--dry-run"])
        .args(["--max-tokens", "512"])
        .run();
    out.success();
    out.stderr_has("local server: read timeout 600 s (the default for a model on this machine; --read-timeout wins), max_tokens 512 (flag)");
    let out = cli("meeting")
        .env("OPENAI_BASE_URL", "http://localhost:9/v1")
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch"])
        .args(["--provider", "openai", "--dry-run", "--read-timeout", "900"])
        .run();
    out.success();
    out.stderr_lacks("local server:");
}

/// The meeting against `server` (on this machine), from `work`.
fn local_meeting(work: &Workdir, server: &FakeServer) -> Cli {
    let mut cmd = work.cli("meeting");
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .args(["--topic", "Adopt Rust for ingest?", "--agents", "arch,biz"])
        .args(["--provider", "openai", "--trace-id", "local-test"])
        // Attempts to spare and a short wait: the timeout comes at once, and no attempt
        // count makes a second request.
        .args(["--read-timeout", "0.5", "--max-attempts", "3", "--quiet"]);
    cmd
}

/// The first request is held until the client gives up (the server is still generating):
/// the meeting sends nothing more — no retry, no next round that would wait behind the
/// abandoned answer — and stops, resumable, with the remedy.
#[test]
fn a_read_timeout_sends_nothing_more_to_a_local_server() {
    let work = Workdir::new();
    let pm = crate::fixtures::pm::finish("x").to_string();
    let server = FakeServer::answering(move |_| json(200, &openai_ok(&pm, None)).until_closed());
    let out = local_meeting(&work, &server).run();
    out.exit(1);
    assert_eq!(server.count(), 1, "one request, never a second");
    assert_eq!(server.hung_up(), 1, "the client gave up on it");
    assert!(server.missed().is_empty(), "{:?}", server.missed());
    out.stderr_has("still generating");
    out.stderr_has("raise --read-timeout");
    out.stderr_has("meeting resume ");
}

/// A meeting whose prompts carry the default 24,000 characters of context (ten documents of
/// nights of an ingest job), against a fake server that counts its prompts as `count(honest)`
/// tokens, `honest` being a fair count of the request (a token per 4 characters of its body).
fn long_prompt_meeting(work: &Workdir, count: fn(u64) -> u64) -> (crate::harness::Run, FakeServer) {
    for d in 0..10 {
        let nights: String = (0..60)
            .map(|i| {
                format!(
                    "Night {d}-{i}: the ingest read {} GB and ended at 05:{i:02} UTC.\n",
                    40 + i
                )
            })
            .collect();
        work.write(format!("docs/week{d}.md"), nights);
    }
    work.write(
        "m.yaml",
        "topic: Adopt Rust for ingest?\ncontext_sources:\n  - type: directory\n    path: docs\n    purpose: the job\n",
    );
    let server = FakeServer::answering(move |req| {
        use crate::fixtures::pm;
        let reply = if req.body.contains("Mode: forced_finish") {
            pm::done()
        } else if req.body.contains("pm_decision") {
            pm::call("arch", "What would a rewrite cost?")
        } else {
            pm::answer("A rewrite costs a quarter.", &["One quarter."])
        }
        .to_string();
        let honest = req.body.len() as u64 / 4;
        json(200, &openai_ok(&reply, Some((count(honest), 20))))
    });
    let out = work
        .cli("meeting")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args(["--meeting-file", "m.yaml", "--agents", "arch"])
        .args([
            "--provider",
            "openai",
            "--model",
            "llama3.2",
            "--max-loops",
            "1",
        ])
        .args(["--max-attempts", "3", "--quiet"])
        .run();
    (out, server)
}

/// A server that read only part of the prompt (Ollama's `/v1` cuts every prompt to its
/// default context, 4,096 tokens, without a word) is caught by the count it reports: the call
/// fails at once, not retried, and the meeting stops with the cause and the remedy instead of
/// going on without the documents. A server that counts the whole prompt is not (docs/design/llm.md#truncation).
#[test]
fn a_prompt_the_server_cut_to_its_context_stops_the_meeting_with_the_remedy() {
    let work = Workdir::new();
    let (out, server) = long_prompt_meeting(&work, |honest| honest.min(4096));
    out.exit(1)
        .stderr_has("the server counted 4096 prompt tokens of a prompt of ")
        .stderr_has("OLLAMA_CONTEXT_LENGTH")
        .stderr_has("--max-context-chars");
    assert_eq!(server.count(), 1, "no retry, no further call");

    let work = Workdir::new();
    let (out, server) = long_prompt_meeting(&work, |honest| honest);
    out.success();
    assert!(server.count() >= 2, "the meeting went on: {}", out.stderr());
}
