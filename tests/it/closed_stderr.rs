//! A closed stderr is ignored like a closed stdout (progress, hints and warnings are
//! best-effort): `meeting … 2>&1 | head -3` still runs the meeting to its report, and every
//! program keeps its own exit code instead of panicking (exit 101).

use crate::fixtures::{demo_cassette, meeting_cmd};
use crate::harness::{cli, every_case, root, Workdir, PROGRAMS};

#[test]
fn a_meeting_runs_to_its_report_with_stderr_closed() {
    let work = Workdir::new();
    let run = meeting_cmd(work.path(), &demo_cassette(), &[]).run_with_stderr_closed();
    run.success().stdout_has("\"status\":\"finished\"");
    assert!(work.join("report.md").is_file());
}

#[test]
fn every_program_keeps_its_exit_code_with_stderr_closed() {
    let work = Workdir::new();
    // A warning on success: a document with a secret in it (collect-context says it redacted it).
    work.write("m/docs/a.md", format!("token: ghp_{}\n", "a1B2".repeat(9)));
    let meeting = work.write(
        "m/meeting.yaml",
        "topic: T?\ndecision_packet: {decision_to_make: T?}\ncontext_sources:\n  - {type: file, path: docs/a.md, purpose: p}\n",
    );
    std::fs::create_dir_all(work.join(".git")).unwrap();
    work.cli("collect-context")
        .arg("--meeting-file")
        .arg(&meeting)
        .run_with_stderr_closed()
        .success()
        .stdout_has("[REDACTED:github-token]");
    // Errors: the one-line message cannot be written, the exit code still tells.
    every_case(
        PROGRAMS,
        |p| p.to_string(),
        |program| {
            let mut cmd = cli(program);
            match program {
                // An --agents given empty (without --agents, the default panel is seated).
                "meeting" => cmd.args(["--topic", "T?", "--agents", ""]),
                "agent-builder" => cmd.arg("--no-such-flag"),
                _ => cmd.stdin("not json"),
            };
            cmd.run_with_stderr_closed().exit(2).stdout_is("");
        },
    );
    // The driver relays a stage's failure; a closed stderr must not turn exit 1 into a panic.
    cli("meeting")
        .current_dir(root())
        .args([
            "--meeting-file",
            "meetings/demo.yaml",
            "--agents",
            "arch,biz",
        ])
        .args(["--provider", "replay", "--cassette", "/nonexistent.jsonl"])
        .run_with_stderr_closed()
        .exit(2);
}
