//! A provider's base URL: a password in it (`http://user:pw@host/v1`, a gateway's credentials) is
//! shown nowhere: not on stderr, not in the run folder, the report or `--show-config`; one that
//! is no http(s) URL is refused before any call.

use crate::harness::Workdir;

const PASSWORD: &str = "s3cret/Pw";

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

#[test]
fn a_base_url_password_is_never_shown() {
    let work = Workdir::new();
    // Port 9 (discard) refuses: the provider is unreachable, and the error names the URL.
    let url = format!("http://gateway-user:{PASSWORD}@127.0.0.1:9/v1");
    let out = work
        .cli("meeting")
        .env("OPENAI_BASE_URL", &url)
        .env("OPENAI_API_KEY", "test-key-not-real")
        .args([
            "--topic",
            "Adopt Rust?",
            "--agents",
            "arch,biz",
            "--provider",
            "openai",
        ])
        .run();
    out.exit(1).stderr_has("gateway-user:***@127.0.0.1:9");
    let shown = work
        .cli("meeting")
        .env("OPENAI_BASE_URL", &url)
        .arg("--show-config")
        .run();
    shown
        .success()
        .stdout_has("http://gateway-user:***@127.0.0.1:9/v1");
    for (what, text) in [
        ("stderr", out.stderr()),
        ("stdout", out.stdout()),
        ("--show-config", shown.stdout()),
        ("files", everything_written(&work)),
    ] {
        assert!(
            !text.contains(PASSWORD),
            "{what} shows the password: {text}"
        );
    }
}

/// A base URL that is no http(s) URL is refused up front (exit 2, naming where it was set),
/// not retried as a network error.
#[test]
fn a_base_url_that_is_no_url_is_refused_naming_where_it_was_set() {
    let work = Workdir::new();
    work.cli("meeting")
        .env("OPENAI_BASE_URL", "localhost:11434/v1")
        .env("OPENAI_API_KEY", "test-key-not-real")
        .args([
            "--topic",
            "Adopt Rust?",
            "--agents",
            "arch",
            "--provider",
            "openai",
        ])
        .run()
        .exit(2)
        .stderr_has("OPENAI_BASE_URL: expected an http(s) URL with a host")
        .one_stderr_line();
    assert!(
        !work.join("runs").exists(),
        "no run folder for a refused start"
    );
    work.write(
        "cfg/agent-meeting/config.yaml",
        "base_urls: {anthropic: 'api.anthropic.com'}\n",
    );
    work.cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .arg("--show-config")
        .run()
        .exit(2)
        .stderr_has("config.yaml: base_urls.anthropic: expected an http(s) URL with a host");
    // URLs the HTTP client cannot parse: refused up front too, not retried as network errors.
    for bad in ["http://[::1/v1", "http://h:99999/v1"] {
        work.write(
            "cfg/agent-meeting/config.yaml",
            format!("base_urls: {{openai: '{bad}'}}\n"),
        );
        work.cli("meeting")
            .env("XDG_CONFIG_HOME", work.join("cfg"))
            .arg("--show-config")
            .run()
            .exit(2)
            .stderr_has("config.yaml: base_urls.openai: expected an http(s) URL with a host");
    }
}
