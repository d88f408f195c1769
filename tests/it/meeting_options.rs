//! `meeting` passes its stages' options on: collect-context's
//! `--context-root` and `--max-context-chars`, render-report's `--template`; each reaches the
//! stage and is kept in `meeting.json`.

use serde_json::Value;

use crate::fixtures::{demo_cassette, meeting_cmd};
use crate::harness::Workdir;

fn packet(work: &Workdir) -> Value {
    let text = work.read("runs/demo-test/0001-collect-context.out.json");
    serde_json::from_str(&text).unwrap()
}

#[test]
fn context_options_reach_collect_context() {
    // A context root that holds none of the demo's documents: a source outside it stops the
    // meeting before any call, naming the flag (a document the meeting names is not dropped).
    let work = Workdir::new();
    let elsewhere = work.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .arg("--context-root")
        .arg(&elsewhere)
        .run()
        .exit(2)
        .stderr_has("is outside the context root")
        .stderr_has("--context-root");
    // The root given is kept in meeting.json.
    let work = Workdir::new();
    let root = crate::harness::root();
    meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", "pm-step=exit 1"],
    )
    .arg("--context-root")
    .arg(&root)
    .run()
    .exit(1);
    assert!(!packet(&work)["context_bundle"]["documents"]
        .as_array()
        .unwrap()
        .is_empty());
    let settings: Value = serde_json::from_str(&work.read("runs/demo-test/meeting.json")).unwrap();
    assert_eq!(settings["context_root"], root.display().to_string());

    // A smaller summary bound.
    let work = Workdir::new();
    meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", "pm-step=exit 1"],
    )
    .args(["--max-context-chars", "300"])
    .run()
    .exit(1);
    let summary = packet(&work)["context_bundle"]["summary"]
        .as_str()
        .unwrap()
        .chars()
        .count();
    assert!(summary <= 300, "summary of {summary} characters");
}

#[test]
fn template_reaches_render_report_and_is_not_overwritten() {
    let work = Workdir::new();
    let template = work.write("mine.md.j2", "# Custom {{ kind }} report\n");
    meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .arg("--template")
        .arg(&template)
        .run()
        .success();
    assert_eq!(work.read("report.md"), "# Custom normal report\n");
    // The template is an input of the meeting: the report may not land on it.
    let work = Workdir::new();
    let template = work.write("mine.md.j2", "x");
    let mut cmd = crate::harness::cli("meeting");
    cmd.args([
        "--meeting-file",
        "meetings/demo.yaml",
        "--agents",
        "arch,biz",
    ])
    .args(["--provider", "replay", "--quiet"])
    .arg("--cassette")
    .arg(demo_cassette())
    .arg("--run-dir")
    .arg(work.join("runs"))
    .arg("--template")
    .arg(&template)
    .arg("--report-file")
    .arg(&template);
    cmd.run()
        .exit(2)
        .stderr_has("is the meeting's report template");
    assert_eq!(std::fs::read_to_string(&template).unwrap(), "x");
}

/// The modes are subcommands (`meeting resume DIR`, `compare A B`, `show-config`,
/// `list-agents`), and the flag spellings still work and mean the same; a flag a mode does not
/// take is refused by the parser, naming the mode and why.
#[test]
fn modes_are_subcommands_and_their_flags_still_work() {
    let work = Workdir::new();
    let run = crate::fixtures::stopped_run(work.path());
    let meeting = |args: &[&str]| {
        let mut cmd = work.cli("meeting");
        cmd.env("AGENT_MEETING_NOW", crate::fixtures::NOW)
            .args(args);
        cmd.run()
    };
    let dir = run.display().to_string();
    meeting(&["resume", &dir, "--model", "gpt-4o"])
        .exit(2)
        .one_stderr_line()
        .stderr_has("--model cannot be used with meeting resume: the run folder's meeting.json holds the meeting")
        .stderr_has("(see meeting resume --help)");
    let resumed = meeting(&["resume", &dir, "--stage", "agent-turn=", "--quiet"]);
    resumed.success();
    let again = meeting(&["--quiet", "--resume", &dir]);
    again.success();
    assert_eq!(
        resumed.stdout(),
        again.stdout(),
        "an ended meeting's result"
    );
    let compared = meeting(&["compare", &dir, &dir]);
    compared.success();
    assert_eq!(
        compared.stdout(),
        meeting(&["--compare", &dir, &dir]).stdout()
    );
    let listed = meeting(&["list-agents"]);
    listed.success();
    assert!(listed.stdout().contains("arch"), "{}", listed.stdout());
    assert_eq!(listed.stdout(), meeting(&["--list-agents"]).stdout());
    let flags = [
        "--agents",
        "arch,biz",
        "--provider",
        "sample",
        "--max-loops",
        "4",
    ];
    let shown = meeting(&[&["show-config"][..], &flags].concat());
    shown.success();
    assert!(shown.stdout().contains("max_loops"), "{}", shown.stdout());
    assert_eq!(
        shown.stdout(),
        meeting(&[&flags[..], &["--topic", "x", "--show-config"]].concat()).stdout()
    );
}

/// `--options JSON`: the meeting's options as one object (as an MCP tool or a batch line gives
/// them), under the flags; a key no option has, or a value an option refuses, is exit 2 naming
/// it, before anything runs.
#[test]
fn options_as_json_are_the_flags_under_the_flags() {
    let work = Workdir::new();
    meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .args(["--options", r#"{"max_cots": 1}"#])
        .run()
        .exit(2)
        .one_stderr_line()
        .stderr_has("--options: max_cots: unknown field `max_cots`");
    meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .args(["--options", r#"{"max_parallel": 0}"#])
        .run()
        .exit(2)
        .stderr_has("--options: max_parallel: expected 1 to 8");
    assert!(!work.join("runs").exists(), "nothing ran");
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--show-config"])
        .args([
            "--options",
            r#"{"max_loops": "3", "max_total_tokens": 9000}"#,
        ])
        .args(["--max-total-tokens", "8000"])
        .run();
    out.success();
    let line = |name: &str| {
        out.stdout()
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(line("max_loops"), "max_loops 3 flag");
    assert_eq!(
        line("budget.max_total_tokens"),
        "budget.max_total_tokens 8000 flag"
    );
}

/// `meeting "topic"` with no `--agents` seats the default panel (arch, biz: the forges' too)
/// and says so on stderr; an `--agents` given empty is still refused.
#[test]
fn a_topic_alone_gets_the_default_panel() {
    let work = Workdir::new();
    let out = work
        .cli("meeting")
        .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .args([
            "--provider",
            "sample",
            "--trace-id",
            "t1",
            "Adopt Rust for ingest?",
        ])
        .run();
    out.success()
        .stderr_has("meeting: no --agents given: the default panel, arch, biz");
    let saved: Value = serde_json::from_str(&work.read("runs/t1/meeting.json")).unwrap();
    assert_eq!(saved["board"]["agents"], serde_json::json!(["arch", "biz"]));
    work.cli("meeting")
        .args(["--provider", "sample", "--agents", "", "Adopt?"])
        .run()
        .exit(2)
        .stderr_has("at least one agent");
}

/// `--report-file -`: the Markdown report on stdout, not mixed with the MeetingResult (none is
/// printed), and still saved at the default path.
#[test]
fn report_file_dash_prints_the_report() {
    let work = Workdir::new();
    let out = work
        .cli("meeting")
        .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .args(["--provider", "sample", "-a", "arch", "--report-file", "-"])
        .arg("Adopt Rust for ingest?")
        .run();
    out.success();
    let md = out.stdout();
    assert!(md.starts_with("# Meeting Report\n"), "{md}");
    assert!(!md.contains("\"status\""), "{md}");
    assert_eq!(work.read("reports/adopt-rust-for-ingest.md"), md);
    assert!(!work.join("-").exists());
}
