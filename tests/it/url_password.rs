//! A password in a provider's base URL (`http://user:pw@host/v1`, a gateway's credentials) is
//! shown nowhere: not on stderr, not in the run folder, the report or `--show-config`.

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
