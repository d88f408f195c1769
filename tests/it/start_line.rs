//! What `meeting` says before the first call: the provider and model of the
//! PM and of each participant, and a visible warning when replay comes from the environment
//! rather than a flag.

use crate::harness::{root, Workdir};

/// A meeting in an empty folder on the built-in agents; `pm-step` is replaced by a command
/// that fails, so nothing is asked of any provider after the start lines.
fn start(work: &Workdir, extra: &[&str]) -> crate::harness::Run {
    std::fs::create_dir_all(work.join("cfg")).unwrap();
    work.cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .args(["--topic", "Adopt Rust?", "--agents", "arch,biz"])
        .args(["--stage", "pm-step=echo stopped-here >&2; exit 1"])
        .args(extra)
        .run()
}

#[test]
fn start_line_names_provider_and_model_per_caller() {
    let work = Workdir::new();
    // biz's own metadata picks another provider and model; the PM and arch take the flags.
    let biz = std::fs::read_to_string(root().join("share/agents/biz.yaml"))
        .unwrap()
        .replace(
            "metadata:\n  style: business_case",
            "metadata:\n  provider: anthropic\n  model: claude-test",
        );
    work.write("agents/biz.yaml", biz);
    let out = {
        let mut c = work.cli("meeting");
        std::fs::create_dir_all(work.join("cfg")).unwrap();
        c.env("XDG_CONFIG_HOME", work.join("cfg"))
            .env("OPENAI_API_KEY", "sk-test")
            .env("ANTHROPIC_API_KEY", "sk-ant-test")
            .args(["--topic", "Adopt Rust?", "--agents", "arch,biz"])
            .args(["--provider", "openai", "--model", "gpt-test"])
            .args(["--stage", "pm-step=echo stopped-here >&2; exit 1"]);
        c.run()
    };
    out.exit(1)
        .stderr_has("models: openai gpt-test (pm, arch); anthropic claude-test (biz)\n")
        .stderr_lacks("warning");
    assert!(
        !out.stderr().contains("sk-"),
        "a key leaked: {}",
        out.stderr()
    );
}

#[test]
fn replay_by_flag_names_the_cassette_without_a_warning() {
    let work = Workdir::new();
    let cassette = root().join("meetings/demo.cassette.jsonl");
    let out = start(
        &work,
        &[
            "--provider",
            "replay",
            "--cassette",
            cassette.to_str().unwrap(),
        ],
    );
    out.exit(1)
        .stderr_has(&format!(
            "models: replay of {} (pm, arch, biz)\n",
            cassette.display()
        ))
        .stderr_lacks("warning");
}

#[test]
fn replay_from_the_environment_is_a_visible_warning_even_when_quiet() {
    let work = Workdir::new();
    let cassette = root().join("meetings/demo.cassette.jsonl");
    std::fs::create_dir_all(work.join("cfg")).unwrap();
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .env("AGENT_MEETING_PROVIDER", "replay")
        .env("MEETING_CASSETTE", &cassette)
        .args(["--topic", "Adopt Rust?", "--agents", "arch,biz", "--quiet"])
        .args(["--stage", "pm-step=exit 1"])
        .run();
    out.exit(1).stderr_starts_with(
        "meeting: warning: replaying a recording, no model is asked: AGENT_MEETING_PROVIDER=replay \
         is set in the environment (and the cassette comes from MEETING_CASSETTE); unset it (or \
         pass --provider) for a real meeting\n",
    );
    // The same replay asked for with a flag: no warning.
    let out = start(
        &work,
        &[
            "--provider",
            "replay",
            "--quiet",
            "--cassette",
            cassette.to_str().unwrap(),
        ],
    );
    out.exit(1).stderr_lacks("warning");
}
