//! The one stage rule seen from outside: `next-stage` names the program a board waits for, and
//! every stage program refuses a board that is not its turn with the same wording. A `failed`
//! board (its report could not be saved) goes to render-report everywhere, which retries it.

use serde_json::{json, Value};

use crate::fixtures::{held_demo_cassette, NOW};
use crate::harness::{cli, every_case, root, wait_for, Cli};
use crate::harness::{skip_without, Tool};

fn program(name: &str) -> Cli {
    let mut c = cli(name);
    c.env("AGENT_MEETING_NOW", NOW);
    c
}

/// A fresh running board, made by the real collect-context and init-board.
fn running_board() -> Value {
    let packet = program("collect-context")
        .args(["--topic", "Adopt Rust for the ingest service?"])
        .run()
        .success()
        .stdout();
    program("init-board")
        .args(["--agents", "arch,biz", "--trace-id", "t-next"])
        .stdin(packet)
        .run()
        .success()
        .json()
}

fn next_stage(board: &Value) -> String {
    program("next-stage")
        .stdin(board.to_string())
        .run()
        .success()
        .stdout()
}

/// Offline flags for the LLM stages (the guard refuses before any call).
fn llm_flags(stage: &str) -> &'static [&'static str] {
    match stage {
        "merge-board" => &[],
        _ => &[
            "--provider",
            "replay",
            "--cassette",
            "meetings/demo.cassette.jsonl",
        ],
    }
}

fn with(board: &Value, edit: &[(&str, Value)]) -> Value {
    let mut b = board.clone();
    for (k, v) in edit {
        b[*k] = v.clone();
    }
    b
}

#[test]
fn next_stage_names_the_program_for_every_state() {
    let b = running_board();
    let call = json!({"target_agent": "arch", "prompt": "q"});
    let turn = json!({"agent_name": "arch", "status": "error", "prompt": "q", "error": "x"});
    let cases = [
        (vec![], "pm-step"),
        (vec![("pending_calls", json!([call]))], "agent-turn"),
        (vec![("last_turns", json!([turn]))], "merge-board"),
        (vec![("status", json!("finishing"))], "pm-step"),
        (
            vec![
                ("status", json!("finishing")),
                ("final_report", json!("Go.")),
            ],
            "render-report",
        ),
        (vec![("status", json!("forced_stop"))], "render-report"),
        (vec![("status", json!("failed"))], "render-report"),
        // Reviewer mode (docs/design/review.md#flow): the draft in final_report.
        (
            vec![
                ("status", json!("reviewing")),
                ("final_report", json!("Go.")),
            ],
            "pm-step",
        ),
        (
            vec![
                ("status", json!("reviewing")),
                ("final_report", json!("Go.")),
                (
                    "pending_calls",
                    json!([{"target_agent": "biz", "prompt": "Review."}]),
                ),
            ],
            "agent-turn",
        ),
        (
            vec![
                ("status", json!("reviewing")),
                ("final_report", json!("Go.")),
                (
                    "last_turns",
                    json!([{"agent_name": "biz", "status": "error", "prompt": "q", "error": "x"}]),
                ),
            ],
            "merge-board",
        ),
        (vec![("status", json!("finished"))], "none"),
    ];
    every_case(
        cases,
        |(edit, want)| format!("{edit:?} → {want}"),
        |(edit, want)| {
            assert_eq!(
                next_stage(&with(&b, &edit)),
                format!("{want}\n"),
                "{edit:?}"
            );
        },
    );
}

#[test]
fn next_stage_refuses_what_is_not_a_board() {
    program("next-stage")
        .stdin(r#"{"packet_version": 1}"#)
        .run()
        .exit(2)
        .stdout_is("")
        .stderr_is("next-stage: <stdin>: this is a MeetingPacket (collect-context's output), not a Board: pipe it into init-board\n");
    program("next-stage")
        .stdin(r#"{"status": "running"}"#)
        .run()
        .exit(2)
        .stdout_is("")
        .stderr_starts_with("next-stage: <stdin>: board_version: missing");
}

#[test]
fn a_failed_board_goes_to_render_report_everywhere() {
    let failed = with(
        &running_board(),
        &[
            ("status", json!("failed")),
            ("last_error", json!("report not saved: disk full")),
        ],
    );
    every_case(
        ["pm-step", "agent-turn", "merge-board"],
        |s| s.to_string(),
        |stage| {
            program(stage)
                .args(llm_flags(stage))
                .stdin(failed.to_string())
                .run()
                .exit(2)
                .stdout_is("")
                .stderr_is(&format!(
                    "{stage}: render-report should run next, not {stage}\n"
                ));
        },
    );
    // render-report retries the save: this time it lands and the meeting is over.
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.md");
    let result: Value = program("render-report")
        .arg("--report-file")
        .arg(&report)
        .stdin(failed.to_string())
        .run()
        .success()
        .json();
    assert_eq!(result["status"], "finished");
    assert!(report.is_file());
    assert_eq!(next_stage(&result["board"]), "none\n");
}

#[test]
fn a_finished_board_is_over_for_every_stage_but_a_re_render() {
    let finished = with(
        &running_board(),
        &[
            ("status", json!("finished")),
            ("final_report", json!("Go.")),
        ],
    );
    every_case(
        ["pm-step", "merge-board"],
        |s| s.to_string(),
        |stage| {
            program(stage)
                .args(llm_flags(stage))
                .stdin(finished.to_string())
                .run()
                .exit(2)
                .stderr_is(&format!(
                    "{stage}: the meeting is over; {stage} has nothing to do\n"
                ));
        },
    );
    program("render-report")
        .arg("--markdown")
        .stdin(finished.to_string())
        .run()
        .success();
}

/// The shell loop asks `next-stage`; when the report cannot be saved, render-report's exit 1
/// ends the loop (it does not retry forever).
#[test]
fn the_shell_loop_stops_when_the_report_cannot_be_saved() {
    if skip_without(Tool::Jq) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = crate::harness::programs_path();
    let mut sh = std::process::Command::new("sh");
    sh.arg("share/meeting.sh")
        .arg("meetings/demo.yaml")
        .arg("arch,biz")
        .arg(dir.path()); // a folder: the report cannot be written there
    Cli::new(sh)
        .env("PATH", path)
        .env("AGENT_MEETING_NOW", NOW)
        .env("AGENT_MEETING_PROVIDER", "replay")
        .env(
            "MEETING_CASSETTE",
            root().join("meetings/demo.cassette.jsonl"),
        )
        .run()
        .exit(1)
        .stderr_has("render-report: ");
}

/// Ctrl-C (SIGINT to the whole process group, as a terminal sends it) or SIGTERM during the
/// shell loop: it exits 130 / 143 and leaves none of its temporary boards behind (dash runs no
/// EXIT trap for a signal unless the signal is trapped).
#[cfg(unix)]
#[test]
fn the_shell_loop_cleans_up_on_ctrl_c_and_sigterm() {
    if skip_without(Tool::Jq) {
        return;
    }
    use std::os::unix::process::CommandExt;
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let tmp = tempfile::tempdir().unwrap();
        // The PM's first call takes ten minutes: the loop is surely running when signalled.
        let slow = held_demo_cassette(tmp.path(), Some(1));
        let temp = tmp.path().join("t");
        std::fs::create_dir(&temp).unwrap();
        let path = crate::harness::programs_path();
        let mut sh = std::process::Command::new("sh");
        sh.arg("share/meeting.sh")
            .arg("meetings/demo.yaml")
            .arg("arch,biz")
            .arg(tmp.path().join("report.md"))
            .env("TMPDIR", &temp)
            .env("PATH", path)
            .env("AGENT_MEETING_PROVIDER", "replay")
            .env("MEETING_CASSETTE", &slow)
            .process_group(0);
        // As a terminal's foreground job has it: a test run started in the background (`cmd &`
        // in a script) inherits SIGINT ignored, and a shell cannot trap a signal ignored on entry.
        // SAFETY: signal(2) is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            sh.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = Cli::new(sh).spawn();
        // Ready: a temporary board has content. The script makes its temporary files before
        // it traps the signals, and writes the first board only after.
        wait_for("the shell loop's first board", || {
            std::fs::read_dir(&temp)
                .unwrap()
                .any(|e| e.unwrap().metadata().is_ok_and(|m| m.len() > 0))
        });
        assert!(
            child.try_wait().unwrap().is_none(),
            "still running when signalled"
        );
        // SAFETY: kill(2) on the process group we just created.
        unsafe { libc::kill(-(child.id() as i32), signal) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "signal {signal}");
        let left: Vec<_> = std::fs::read_dir(&temp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(left.is_empty(), "temporary boards left behind: {left:?}");
    }
}
