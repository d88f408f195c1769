//! One loop numbering everywhere: progress, `--step`, the final line, the
//! MeetingResult and the report agree (a line's loop is the one its events are stamped with,
//! the report's Process Note and diagram give the same); `--step`'s `p`; the MeetingResult's
//! paths absolute.

use serde_json::Value;

use crate::fixtures::{demo_cassette, meeting_cmd};
use crate::harness::Workdir;

#[test]
fn progress_final_line_result_and_report_count_loops_alike() {
    let work = Workdir::new();
    let out = meeting_cmd(work.path(), &demo_cassette(), &[]).run();
    out.success();
    let err = out.stderr();
    let result: Value = out.json();
    let loops = result["loops"].as_u64().unwrap();
    assert_eq!(loops, 3);
    // Loops 1..=3 ran, each tagged with its number; the PM's FINISH opens loop 4, as
    // events.jsonl and the report's diagram number it; 3 loops were used.
    for n in 1..=loops {
        assert!(err.contains(&format!("[loop {n}/6] pm → ")), "{err}");
    }
    assert!(err.contains("[loop 4/6] pm: FINISH ("), "{err}");
    let report = work.read("report.md");
    assert!(report.contains("Note over PM: L4 FINISH"), "{report}");
    assert!(!report.contains("L5"), "{report}");
    assert!(
        err.lines()
            .last()
            .unwrap()
            .starts_with("finished: 3 loops,"),
        "{err}"
    );
    assert!(report.contains("Loops used: 3 / 6"));
}

#[test]
fn step_p_prints_the_board_summary_and_the_next_input() {
    let work = Workdir::new();
    // p at the first prompt, then q.
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--step"])
        .stdin("p\nq\n")
        .run();
    out.exit(130);
    let err = out.stderr();
    // The next stage's input is the last output in the run folder.
    let input = work.join("runs/demo-test/0002-init-board.out.json");
    assert!(
        err.contains("Enter to run, p to print the board, q to stop"),
        "{err}"
    );
    assert!(
        err.contains("status running, 0 loops done of 6, 0 LLM calls"),
        "{err}"
    );
    assert!(
        err.contains(&format!("next input: {}\n", input.display())),
        "{err}"
    );
    // The file is the board the stage gets, and the prompt came back after p.
    let board: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    assert_eq!(board["status"], "running");
    assert_eq!(err.matches("next: pm-step").count(), 2, "{err}");
    assert!(err.contains("stopped before pm-step"), "{err}");
}

#[test]
fn meeting_result_paths_are_both_absolute() {
    let work = Workdir::new();
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .arg("--meeting-file")
        .arg(crate::harness::root().join("meetings/demo.yaml"))
        .args(["--agents", "arch,biz", "--quiet"])
        .args([
            "--provider",
            "replay",
            "--run-dir",
            "r",
            "--report-file",
            "out/x.md",
        ])
        .arg("--cassette")
        .arg(demo_cassette())
        .run();
    out.success();
    let result: Value = out.json();
    for key in ["run_dir", "report_file"] {
        let p = result[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: {result}"));
        assert!(std::path::Path::new(p).is_absolute(), "{key}: {p}");
    }
}
