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
    out.stderr_has("meeting --resume");
}
