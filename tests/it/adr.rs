//! Decision records (docs/design/report.md#adr): `render-report --adr DIR` writes the decision
//! as a MADR record numbered after the records in DIR, links the one it supersedes and marks
//! that one's status, and writes none for a fallback report.

use std::path::Path;

use crate::fixtures::boards::fallback_board;
use crate::fixtures::{demo_cassette, fault, final_board, meeting_cmd, Cassette};
use crate::harness::{cli, golden, Workdir};

/// The demo meeting's final board (replayed, fixed clock), as JSON text.
fn demo_board(work: &Workdir) -> String {
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"]).run();
    out.check(out.code() == Some(0), "the meeting");
    final_board(&work.join("runs/demo-test")).to_string()
}

/// An ADR folder holding records 0001 and 0002 (the second in MADR's front matter form).
fn adr_dir(work: &Workdir) -> std::path::PathBuf {
    work.write(
        "docs/adr/0001-record-architecture-decisions.md",
        "# 1. Record architecture decisions\n\n## Status\n\nAccepted\n",
    );
    work.write(
        "docs/adr/0002-run-reports-on-the-primary.md",
        "---\nstatus: accepted\ndate: 2025-01-10\n---\n# Run reports on the primary\n\nBody kept.\n",
    );
    work.write("docs/adr/README.md", "Not a record.\n");
    work.join("docs/adr")
}

/// `render-report --adr DIR` on `board`.
fn render_adr(dir: &Path, board: &serde_json::Value) -> crate::harness::Run {
    cli("render-report")
        .arg("--adr")
        .arg(dir)
        .stdin(board.to_string())
        .run()
}

fn records(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const NEW: &str = "0003-move-nightly-batch-reporting-off-the-primary-postgres.md";

#[test]
fn the_demo_decision_is_the_next_record_and_supersedes_the_old_one() {
    let work = Workdir::new();
    let board = demo_board(&work);
    let dir = adr_dir(&work);
    let out = cli("render-report")
        .arg("--report-file")
        .arg(work.join("reports/demo.md"))
        .arg("--adr")
        .arg(&dir)
        .args(["--supersedes", "0002"])
        .stdin(board.clone())
        .run();
    out.success()
        .stderr_has("render-report: wrote the decision record");
    assert_eq!(
        records(&dir),
        [
            "0001-record-architecture-decisions.md",
            "0002-run-reports-on-the-primary.md",
            NEW,
            "README.md"
        ]
    );
    let record = std::fs::read_to_string(dir.join(NEW)).unwrap();
    golden("demo_adr.md", &record);
    assert!(record.contains("Supersedes [ADR-0002](0002-run-reports-on-the-primary.md)."));
    assert!(record.contains("* Full report: [../../reports/demo.md](../../reports/demo.md)"));
    // The superseded record says so; the rest of it is as it was.
    assert_eq!(
        std::fs::read_to_string(dir.join("0002-run-reports-on-the-primary.md")).unwrap(),
        format!("---\nstatus: \"superseded by [ADR-0003]({NEW})\"\ndate: 2025-01-10\n---\n# Run reports on the primary\n\nBody kept.\n")
    );
    // The next meeting takes the next number, never this one.
    cli("render-report")
        .arg("--adr")
        .arg(&dir)
        .stdin(board)
        .run()
        .success();
    assert!(records(&dir)
        .iter()
        .any(|n| n == "0004-move-nightly-batch-reporting-off-the-primary-postgres.md"));
}

/// MADR 4 as its readers take it (docs/design/report.md#adr): the agents who took part are
/// `consulted` — a participant the PM never called is not — and no agent is a decision-maker;
/// with no person named, the record names no decision-makers.
#[test]
fn the_agents_are_consulted_and_never_decision_makers() {
    let work = Workdir::new();
    let mut board: serde_json::Value = serde_json::from_str(&demo_board(&work)).unwrap();
    board["participants"]
        .as_array_mut()
        .unwrap()
        .push("sre".into());
    board["agents"]["sre"] = board["agents"]["arch"].clone();
    board["agents"]["sre"]["name"] = "sre".into();
    let dir = work.join("adr");
    render_adr(&dir, &board).success();
    let record = std::fs::read_to_string(dir.join(records(&dir)[0].as_str())).unwrap();
    assert!(record.contains("\nconsulted: PM, arch, biz\n"), "{record}");
    assert!(!record.contains("decision-makers"), "{record}");
    assert!(record.starts_with("---\nstatus: proposed\n"), "{record}");
}

/// The decision-makers are people: `--decider` (repeatable, comma-separated), else the config
/// file's `deciders`, else git's user.name — one line each way, never the agents.
#[test]
fn the_decision_makers_are_the_people_named() {
    let work = Workdir::new();
    let board = demo_board(&work);
    let front = |dir: &Path| -> String {
        let text = std::fs::read_to_string(dir.join(records(dir)[0].as_str())).unwrap();
        text.split("\n---\n").next().unwrap().to_string()
    };
    let flag = work.join("flag");
    cli("render-report")
        .arg("--adr")
        .arg(&flag)
        .args(["--decider", "Ana Ops,Bo", "--decider", "Cy\nD, e"])
        .stdin(board.clone())
        .run()
        .success();
    assert!(
        front(&flag).contains("\ndecision-makers: Ana Ops, Bo, Cy D, e\nconsulted: PM, arch, biz"),
        "{}",
        front(&flag)
    );
    work.write("cfg/agent-meeting/config.yaml", "deciders: [Priya Raman]\n");
    let config = work.join("config");
    cli("render-report")
        .arg("--adr")
        .arg(&config)
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .stdin(board.clone())
        .run()
        .success();
    assert!(front(&config).contains("\ndecision-makers: Priya Raman\n"));
    let gitconfig = work.write(".gitconfig", "[user]\n\tname = Git Person\n");
    let git = work.join("git");
    cli("render-report")
        .arg("--adr")
        .arg(&git)
        .env("GIT_CONFIG_GLOBAL", &gitconfig)
        .stdin(board)
        .run()
        .success();
    assert!(
        front(&git).contains("\ndecision-makers: Git Person\n"),
        "{}",
        front(&git)
    );
}

#[test]
fn a_fallback_report_writes_no_record() {
    let work = Workdir::new();
    let dir = adr_dir(&work);
    let before = records(&dir);
    cli("render-report")
        .arg("--report-file")
        .arg(work.join("report.md"))
        .arg("--adr")
        .arg(&dir)
        .stdin(fallback_board().to_string())
        .run()
        .success()
        .stderr_has("no decision record written: the report is a fallback");
    assert_eq!(records(&dir), before);
}

#[test]
fn superseding_a_record_that_is_not_there_is_refused() {
    let work = Workdir::new();
    let board = demo_board(&work);
    let dir = adr_dir(&work);
    cli("render-report")
        .arg("--adr")
        .arg(&dir)
        .args(["--supersedes", "7"])
        .stdin(board)
        .run()
        .exit(2)
        .stderr_has("--supersedes: expected the number of a record in");
    assert_eq!(records(&dir).len(), 3, "no record written");
}

/// `meeting --adr DIR --supersedes N` writes the record of the meeting it ran, linking the
/// report it saved.
#[test]
fn a_meeting_writes_its_record() {
    let work = Workdir::new();
    let dir = adr_dir(&work);
    let dir_arg = dir.to_string_lossy().into_owned();
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--adr", &dir_arg, "--supersedes", "1"],
    )
    .run();
    out.check(out.code() == Some(0), "the meeting")
        .stderr_has("meeting: wrote the decision record");
    let record = std::fs::read_to_string(dir.join(NEW)).unwrap();
    assert!(record.contains("* Full report: [../../report.md](../../report.md)"));
    assert!(record.contains("Supersedes [ADR-0001](0001-record-architecture-decisions.md)."));
    assert!(
        std::fs::read_to_string(dir.join("0001-record-architecture-decisions.md"))
            .unwrap()
            .contains(&format!("## Status\n\nSuperseded by [ADR-0003]({NEW})\n"))
    );
}

/// The meeting file's `supersedes:` is the same as the flag.
#[test]
fn the_meeting_files_supersedes_links_the_old_record() {
    let work = Workdir::new();
    let mut board: serde_json::Value = serde_json::from_str(&demo_board(&work)).unwrap();
    board["meeting_input"]["supersedes"] = serde_json::json!("0002");
    let dir = adr_dir(&work);
    render_adr(&dir, &board).success();
    let record = std::fs::read_to_string(dir.join(NEW)).unwrap();
    assert!(record.contains("Supersedes [ADR-0002](0002-run-reports-on-the-primary.md)."));
    board["meeting_input"]["supersedes"] = serde_json::json!("0009");
    render_adr(&dir, &board)
        .exit(2)
        .stderr_has("the meeting file's supersedes: expected the number of a record in");
}

/// The guide's context source recipe, as written there, gives a meeting the earlier records.
#[test]
fn the_guides_recipe_collects_the_newest_records() {
    let readme = std::fs::read_to_string(crate::harness::root().join("docs/GUIDE.md")).unwrap();
    let after = &readme[readme
        .find("To let a meeting read the earlier decisions")
        .expect("the recipe")..];
    let start = after.find("```yaml\n").unwrap() + "```yaml\n".len();
    let recipe = &after[start..start + after[start..].find("```").unwrap()];
    let work = Workdir::new();
    adr_dir(&work);
    for n in 3..=6 {
        work.write(
            format!("docs/adr/000{n}-decision-{n}.md"),
            "---\nstatus: accepted\n---\n# A later decision\n",
        );
    }
    work.write(
        "meeting.yaml",
        format!("topic: Replace the reporting database?\ndecision_packet:\n  decision_to_make: Replace it?\n{recipe}"),
    );
    let out = work
        .cli("collect-context")
        .args(["--meeting-file", "meeting.yaml"])
        .run();
    out.success();
    let packet: serde_json::Value = serde_json::from_str(&out.stdout()).unwrap();
    let paths: Vec<&str> = packet["context_bundle"]["documents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["source_path"].as_str())
        .collect();
    // The newest four, oldest first; the two oldest are left out.
    assert_eq!(
        paths,
        [
            "docs/adr/0003-decision-3.md",
            "docs/adr/0004-decision-4.md",
            "docs/adr/0005-decision-5.md",
            "docs/adr/0006-decision-6.md"
        ]
    );
}

/// A meeting that ends without a PM decision (exit 3, a fallback report) writes no record and
/// says so.
#[test]
fn a_meeting_without_a_decision_writes_no_record() {
    let work = Workdir::new();
    // The PM's first call, then arch fails (3 attempts), then every PM round fails.
    let mut callers = vec!["arch"; 3];
    callers.extend(["pm"; 9]);
    let cassette = callers
        .iter()
        .fold(Cassette::demo().take(1), |c, caller| {
            c.fault(caller, fault::http(500, "overloaded"))
        })
        .write(work.join("flaky.jsonl"));
    let dir = adr_dir(&work);
    let before = records(&dir);
    let dir_arg = dir.to_string_lossy().into_owned();
    meeting_cmd(work.path(), &cassette, &["--quiet", "--adr", &dir_arg])
        .run()
        .exit(3)
        .stderr_has("meeting: no decision record written: the report is a fallback");
    assert_eq!(records(&dir), before);
}

/// A record whose write fails after the meeting (the superseded record cannot be read when
/// its status is to be marked): the result is printed, then the error and the resume that
/// finishes it; that resume only marks the superseded record — it writes no second record —
/// and a plain resume does not use the saved `--adr` unless it is given again.
#[test]
fn a_record_that_fails_after_the_meeting_is_finished_by_the_resume_it_names() {
    let work = Workdir::new();
    let dir = adr_dir(&work);
    let old = dir.join("0002-run-reports-on-the-primary.md");
    let kept = work.join("kept.md");
    // During the meeting the superseded record turns into a link to nothing.
    let break_it = format!(
        "merge-board=[ -L {old} ] || {{ mv {old} {kept}; ln -s /nonexistent {old}; }}; exec {bin}",
        old = old.display(),
        kept = kept.display(),
        bin = crate::harness::bin("merge-board").display()
    );
    let adr = dir.display().to_string();
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &[
            "--quiet",
            "--adr",
            &adr,
            "--supersedes",
            "0002",
            "--stage",
            &break_it,
        ],
    )
    .run();
    out.check(out.code() != Some(0), "the record's write fails");
    let result: serde_json::Value = out.json();
    assert_eq!(result["status"], "finished", "the result is printed first");
    let run = work.join("runs/demo-test");
    out.stderr_has(&format!(
        "is written but the record it supersedes is not marked: finish it with  meeting resume {} --adr {adr}",
        run.display()
    ));
    assert!(dir.join(NEW).exists());
    std::fs::remove_file(&old).unwrap();
    std::fs::rename(&kept, &old).unwrap();
    // A plain resume does not write into a folder the run folder names.
    let run_s = run.display().to_string();
    let plain = cli("meeting").args(["--resume", &run_s, "--quiet"]).run();
    assert_eq!(plain.code(), Some(2), "{}", plain.stderr());
    plain.stderr_has(&format!("asks for what you did not give: --adr {adr}"));
    let finish = cli("meeting")
        .args(["--resume", &run_s, "--quiet", "--adr", &adr])
        .run();
    finish
        .success()
        .stderr_has("(marked ")
        .stderr_has("superseded)");
    assert!(std::fs::read_to_string(&old)
        .unwrap()
        .contains(&format!("superseded by [ADR-0003]({NEW})")));
    // Done: again, nothing is written, not a second record.
    cli("meeting")
        .args(["--resume", &run_s, "--quiet"])
        .run()
        .success();
    cli("meeting")
        .args(["--resume", &run_s, "--quiet", "--adr", &adr])
        .run()
        .success();
    assert_eq!(
        records(&dir),
        [
            "0001-record-architecture-decisions.md",
            "0002-run-reports-on-the-primary.md",
            NEW,
            "README.md"
        ]
    );
}

/// A sample run decides nothing: `--adr` with `--provider sample` is refused before the
/// meeting starts, and render-report refuses a board every answer of which was the sample's;
/// nothing is written into the team's records.
#[test]
fn a_sample_run_writes_no_decision_record() {
    let work = Workdir::new();
    let dir = adr_dir(&work);
    let adr = dir.display().to_string();
    let out = cli("meeting")
        .args([
            "--topic",
            "Adopt Rust?",
            "--agents",
            "arch",
            "--provider",
            "sample",
        ])
        .args(["--adr", &adr, "--quiet"])
        .arg("--run-dir")
        .arg(work.join("runs"))
        .run();
    out.exit(2)
        .stderr_has("a sample run (--provider sample) makes no decision");
    assert!(
        !work.join("runs").exists(),
        "refused before the meeting started"
    );
    // A sample meeting's board given to render-report --adr.
    cli("meeting")
        .args([
            "--topic",
            "Adopt Rust?",
            "--agents",
            "arch",
            "--provider",
            "sample",
        ])
        .args(["--quiet", "--trace-id", "s1", "--report-file"])
        .arg(work.join("r.md"))
        .arg("--run-dir")
        .arg(work.join("runs"))
        .run()
        .success();
    let board = final_board(&work.join("runs/s1")).to_string();
    cli("render-report")
        .arg("--report-file")
        .arg(work.join("r2.md"))
        .args(["--adr", &adr])
        .stdin(board)
        .run()
        .exit(2)
        .stderr_has("makes no decision");
    assert_eq!(
        records(&dir).len(),
        3,
        "no record written: {:?}",
        records(&dir)
    );
}
