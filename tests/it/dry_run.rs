//! `meeting --dry-run`: no key needed, which provider and model each caller
//! would use, a warning for the missing key, and the PM's first prompt exactly as it would be
//! sent (`--json`: the PM's input document); no call, no run folder.

use serde_json::Value;

use crate::fixtures::{demo_cassette, meeting_cmd};
use crate::harness::{root, Workdir};

fn dry(work: &Workdir, extra: &[&str]) -> crate::harness::Run {
    work.cli("meeting")
        .arg("--meeting-file")
        .arg(root().join("meetings/demo.yaml"))
        .args(["--agents", "arch,biz", "--dry-run"])
        .args(extra)
        .run()
}

#[test]
fn without_a_key_it_says_what_would_run_and_warns() {
    let work = Workdir::new();
    let out = dry(&work, &["--provider", "openai"]);
    out.success()
        .stderr_has("models: openai gpt-4o-mini (pm, arch, biz)\n")
        .stderr_has("meeting: warning: OPENAI_API_KEY is not set: a real meeting would stop here");
    assert!(
        out.stdout().starts_with("----- system -----\n"),
        "{}",
        out.stdout()
    );
    assert!(out.stdout().contains("\n----- user -----\n# Meeting: "));
    assert!(!work.join("runs").exists() && !work.join("reports").exists());
    // No provider at all: still a dry run, with the reason a real one would stop.
    let out = dry(&work, &[]);
    out.success()
        .stderr_has("models: none (no provider configured)")
        .stderr_has("meeting: warning: no LLM provider configured");
    // What cannot be right without a call is still refused.
    dry(&work, &["--provider", "nope"])
        .exit(2)
        .stderr_has("unknown provider");
    dry(&work, &["--agents", "nosuch"])
        .exit(2)
        .stderr_has("unknown agent");
}

#[test]
fn the_prompt_is_the_one_the_first_pm_call_sends() {
    // The demo, replayed: its first exchange (llm.jsonl) is the PM's first call.
    let work = Workdir::new();
    meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .run()
        .success();
    let log = work.read("runs/demo-test/llm.jsonl");
    let first: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(first["caller"], "pm");
    let want = format!(
        "----- system -----\n{}\n----- user -----\n{}\n",
        first["system"].as_str().unwrap().trim_end(),
        first["messages"][0]["content"].as_str().unwrap().trim_end()
    );
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--dry-run"]).run();
    out.success();
    assert_eq!(out.stdout(), want);
    // --json: the PM's input document instead.
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--dry-run", "--json"]).run();
    let input: Value = out.json();
    assert_eq!(input["mode"], "normal");
}

#[test]
fn the_prompt_follows_the_providers_structured_output() {
    // Without native structured output the reply format is described in the prompt.
    let work = Workdir::new();
    let native = dry(&work, &["--provider", "openai", "--quiet"]);
    let in_prompt = dry(
        &work,
        &["--provider", "openai", "--quiet", "--no-native-schema"],
    );
    assert_ne!(native.stdout(), in_prompt.stdout());
    // The schema spelled out in the system message, the field guide left out of the user one.
    let system = |s: String| s.split("----- user -----").next().unwrap().to_string();
    assert!(system(in_prompt.stdout()).len() > system(native.stdout()).len());
    assert!(in_prompt.stdout().contains("next_action"));
}
