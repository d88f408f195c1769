//! No report lost (docs/design/run-folder.md#run-folder): meetings started together claim
//! distinct default report files, a start that fails leaves no empty one behind, and a report
//! saved by `--resume` after a failed save reads as if the first save had worked.

use std::path::Path;

use crate::fixtures::{demo_cassette, final_board, meeting_cmd, resume_cmd, NOW};
use crate::harness::{bin_dir, root, Cli, Workdir};

/// `meeting` on the demo from `work`, its report at the default path (`reports/demo.md`, or
/// the next free numbered name), each with its own trace id.
fn default_report_meeting(work: &Workdir, cassette: &Path, trace_id: &str) -> Cli {
    let mut cmd = work.cli("meeting");
    cmd.env("AGENT_MEETING_NOW", NOW)
        .arg("--meeting-file")
        .arg(root().join("meetings/demo.yaml"))
        .args(["--agents", "arch,biz", "--provider", "replay", "--quiet"])
        .arg("--cassette")
        .arg(cassette)
        .args(["--run-dir", "runs", "--trace-id", trace_id]);
    cmd
}

fn reports(work: &Workdir) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(work.join("reports"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn meetings_started_together_claim_distinct_default_reports() {
    let work = Workdir::new();
    // Slow answers keep both meetings running at once.
    let cassette = crate::fixtures::slow_demo_cassette(work.path(), 50);
    std::thread::scope(|s| {
        let runs: Vec<_> = ["run-a", "run-b"]
            .map(|id| s.spawn(|| default_report_meeting(&work, &cassette, id).run()))
            .into_iter()
            .collect();
        for run in runs {
            run.join().unwrap().success();
        }
    });
    assert_eq!(reports(&work), ["demo-2.md", "demo.md"]);
    let first = work.read("reports/demo.md");
    let second = work.read("reports/demo-2.md");
    for report in [&first, &second] {
        assert!(report.starts_with("# ") && report.contains("## Process Note"));
    }
    // Both meetings said the same, so both complete reports are the same but for the trace id.
    let (a, b) = if first.contains("`run-a`") {
        ("`run-a`", "`run-b`")
    } else {
        ("`run-b`", "`run-a`")
    };
    assert_eq!(first.replace(a, "ID"), second.replace(b, "ID"));
}

#[test]
fn a_start_that_fails_after_claiming_its_report_leaves_no_empty_file() {
    let work = Workdir::new();
    default_report_meeting(&work, &demo_cassette(), "taken")
        .run()
        .success();
    assert_eq!(reports(&work), ["demo.md"]);
    // The same trace id again: the run folder holds a meeting, so the start fails after it
    // claimed `reports/demo-2.md`.
    let out = default_report_meeting(&work, &demo_cassette(), "taken").run();
    out.exit(2).stderr_has("already holds a meeting");
    assert_eq!(reports(&work), ["demo.md"], "no placeholder left");
}

/// The report saved by `--resume` after a failed save is the report the first save would have
/// written: its Process Note does not say the report was not saved.
#[test]
fn a_report_saved_on_resume_after_a_failed_save_reads_as_a_first_save() {
    let plain = Workdir::new();
    meeting_cmd(plain.path(), &demo_cassette(), &["--quiet"])
        .run()
        .success();
    let want = plain.read("report.md");

    let work = Workdir::new();
    // The report path turns into a folder during the meeting, so only the save at the end
    // fails.
    let report = work.join("report.md");
    let stage = format!(
        "merge-board=mkdir -p {} && exec {}",
        report.display(),
        bin_dir().join("merge-board").display()
    );
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", &stage],
    )
    .run();
    out.exit(1).stderr_has("report not saved");
    std::fs::remove_dir(&report).unwrap();
    resume_cmd(work.path(), work.join("runs/demo-test"))
        .run()
        .success();
    let got = work.read("report.md");
    assert!(!got.contains("not saved"), "{got}");
    assert_eq!(got, want);
    let board = final_board(&work.join("runs/demo-test"));
    assert_eq!(board["status"], "finished");
    assert!(board["last_error"].is_null(), "{}", board["last_error"]);
}
