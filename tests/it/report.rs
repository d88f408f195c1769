//! render-report (docs/design/report.md#report): golden reports of the three kinds, the parts each section comes
//! from, the evidence rule, the Mermaid diagram, saving, and the stage and version checks.
//!
//! Golden files live in tests/golden/; `AGENT_MEETING_BLESS=1 cargo test --test integration report::`
//! rewrites them. A missing golden file fails the test unless blessing.

use std::path::{Path, PathBuf};

use agent_meeting::model::{Board, Status};
use agent_meeting::stage::render_report::{self as report, ReportKind, UserTemplate};
use serde_json::{json, Value};

use crate::fixtures::boards::{base_board, board, event, fallback_board, forced_board};
use crate::fixtures::{section, sections};
use crate::harness::{cli, every_case, golden, Cli};

fn normal_board() -> Value {
    base_board()
}

fn render(v: &Value) -> report::Rendered {
    report::render(&board(v), None).unwrap()
}

#[test]
fn golden_normal_report() {
    let r = render(&normal_board());
    assert_eq!(r.kind, ReportKind::Normal);
    golden("report_normal.md", &r.markdown);
}

#[test]
fn golden_forced_report() {
    let r = render(&forced_board());
    assert_eq!(r.kind, ReportKind::Forced);
    golden("report_forced.md", &r.markdown);
}

#[test]
fn golden_fallback_report() {
    let r = render(&fallback_board());
    assert_eq!(r.kind, ReportKind::Fallback);
    golden("report_fallback.md", &r.markdown);
}

#[test]
fn every_section_present_per_kind() {
    let common_tail = ["## Appendix"];
    let normal = [
        "# Meeting Report",
        "## Topic",
        "## Executive Summary",
        "## Recommendation",
        "## Required Questions",
        "## Answered Questions",
        "## Open Questions",
        "## Key Findings",
        "## Risks",
        "## Proposals made during the meeting",
        "## Evidence Reviewed",
    ];
    // A normal meeting where a turn failed says so in a Process Note (docs/design/report.md#report); one without
    // failures has none.
    let md = render(&normal_board()).markdown;
    let expected: Vec<&str> = normal
        .iter()
        .chain(["## Process Note"].iter())
        .chain(common_tail.iter())
        .copied()
        .collect();
    assert_eq!(sections(&md), expected);
    let note = section(&md, "Process Note");
    assert!(note.contains(report::NORMAL_WITH_ERRORS_NOTE), "{note}");
    assert!(note.contains("- Agent biz failed: timeout"), "{note}");
    let mut clean = normal_board();
    clean["recent_errors"] = json!([]);
    let md = render(&clean).markdown;
    let expected: Vec<&str> = normal.iter().chain(common_tail.iter()).copied().collect();
    assert_eq!(sections(&md), expected);

    let md = render(&forced_board()).markdown;
    let expected: Vec<&str> = normal
        .iter()
        .chain(["## Process Note"].iter())
        .chain(common_tail.iter())
        .copied()
        .collect();
    assert_eq!(sections(&md), expected);
    assert!(section(&md, "Process Note").contains(report::FORCED_NOTE));

    let md = render(&fallback_board()).markdown;
    for s in [
        "# Meeting Report",
        "## Topic",
        "## Current Summary",
        "## Key Findings",
        "## Open Questions",
        "## Required Questions",
        "## Answered Questions",
        "## Proposals made during the meeting",
        "## Risks",
        "## Evidence Reviewed",
        "## Process Note",
        "## Appendix",
    ] {
        assert!(sections(&md).contains(&s), "fallback lacks {s}:\n{md}");
    }
    assert!(section(&md, "Process Note").contains(report::FALLBACK_NOTE));
    assert!(section(&md, "Process Note").contains("PM answer was not valid JSON"));
    assert!(md.contains("```mermaid\nsequenceDiagram\n"));
    assert!(md.ends_with("```\n") && !md.ends_with("\n\n"));
}

#[test]
fn sections_come_from_the_board_lists() {
    let md = render(&normal_board()).markdown;
    assert!(section(&md, "Key Findings").contains("- Rust fits the latency budget "));
    // A multi-line item stays one list item.
    assert!(section(&md, "Key Findings")
        .contains("- Team has two Rust engineers\n  and a Go background "));
    assert!(section(&md, "Risks").contains("- Hiring is slow"));
    assert!(section(&md, "Open Questions").contains("- Q1: How long is the migration?"));
    let rec = section(&md, "Recommendation");
    assert!(
        rec.starts_with("\nPilot Rust on the invoice exporter first."),
        "{rec}"
    );
    // The agents' recommendations are proposals, never part of the decision.
    assert!(
        !rec.contains("Pilot Rust on the invoice exporter\n"),
        "{rec}"
    );
    assert!(section(&md, "Proposals made during the meeting")
        .contains("\n- Pilot Rust on the invoice exporter "));

    // The lists are the record's: without its questions and findings, none.
    let mut b = normal_board();
    b["record"]["questions"] = json!([]);
    b["record"]["findings"] = json!([]);
    let md = render(&b).markdown;
    for s in ["Key Findings", "Risks", "Proposals made during the meeting"] {
        assert_eq!(section(&md, s).trim(), "None recorded.", "{s}");
    }
    assert_eq!(section(&md, "Open Questions").trim(), "None.");
}

#[test]
fn evidence_lists_only_validated_citations() {
    let md = render(&normal_board()).markdown;
    let ev = section(&md, "Evidence Reviewed");
    // Bundle order, grouped by document, quotes deduplicated across agents.
    let costs = ev.find("### docs/costs.md").expect("costs cited");
    let perf = ev.find("### docs/perf.md").expect("perf cited");
    assert!(costs < perf);
    assert!(
        !ev.contains("uncited"),
        "an uncited document must not appear:\n{ev}"
    );
    assert!(
        !ev.contains("secret-plan"),
        "a citation to an unknown id must not appear"
    );
    assert!(
        !ev.contains("team.md") && !ev.contains("wrong path"),
        "a citation with a wrong path is invalid"
    );
    assert!(ev.contains("- Purpose: Performance budget"));
    assert!(ev.contains("\n- \"p99 must stay under 50 ms\" (arch, biz)\n"));
    assert!(ev.contains("\n- \"Go GC pauses reach 80 ms\" (unverified quote) (arch)\n"));
    // Never checked by agent-turn: checked here against the excerpt, whitespace folded.
    assert!(ev.contains("\n- \"Hosting costs 4k per month\" (biz)\n"));
    assert_eq!(ev.matches("(unverified quote)").count(), 1);

    let mut b = normal_board();
    b["latest_agent_outputs"] = json!({});
    let md = render(&b).markdown;
    assert_eq!(
        section(&md, "Evidence Reviewed").trim(),
        "No document was cited by a validated citation."
    );
}

#[test]
fn summary_and_recommendation_from_many_heading_styles() {
    let cases = [
        (
            "### Executive Summary\nGo with Rust.\n### Recommendation\nPilot first.",
            "Go with Rust.",
            "Pilot first.",
        ),
        (
            "# Executive summary\n\nGo with Rust.\n\n# RECOMMENDATION\n\nPilot first.\n",
            "Go with Rust.",
            "Pilot first.",
        ),
        (
            "**Executive Summary**\nGo with Rust.\n\n**Recommendation**\nPilot first.",
            "Go with Rust.",
            "Pilot first.",
        ),
        (
            "Executive Summary: Go with Rust.\nRecommendation: Pilot first.",
            "Go with Rust.",
            "Pilot first.",
        ),
        (
            "## 1. Summary\nGo with Rust.\n## 2. Recommendations\nPilot first.",
            "Go with Rust.",
            "Pilot first.",
        ),
        (
            "## 执行摘要\nGo with Rust.\n## 建议\nPilot first.",
            "Go with Rust.",
            "Pilot first.",
        ),
    ];
    every_case(
        cases,
        |(text, ..)| format!("{text:?}"),
        |(text, exec, rec)| {
            let parts = report::split_final_report(text);
            assert_eq!(parts.executive_summary, exec, "{text}");
            assert_eq!(parts.recommendation, rec, "{text}");
        },
    );

    // Sub-sections stay with the part they follow; a level-2 one is text, not structure.
    let parts = report::split_final_report(
        "# Report\n\n## Executive Summary\nYes.\n\n## Recommendation\nPilot.\n\n## What is still uncertain\n- Time.\n### Caveats\n- Few.",
    );
    assert_eq!(parts.executive_summary, "Yes.");
    assert_eq!(
        parts.recommendation,
        "Pilot.\n\n\\## What is still uncertain\n- Time.\n### Caveats\n- Few."
    );

    // A heading inside a code block is not a label.
    let parts = report::split_final_report(
        "## Summary\n```\n## Recommendation\n```\n## Recommendation\nGo.",
    );
    assert_eq!(parts.executive_summary, "```\n## Recommendation\n```");
    assert_eq!(parts.recommendation, "Go.");

    // No recognisable parts: the whole report is the summary.
    let parts = report::split_final_report("We should adopt Rust.\n\n## Notes\nCheap.");
    assert_eq!(
        parts.executive_summary,
        "We should adopt Rust.\n\n\\## Notes\nCheap."
    );
    assert_eq!(parts.recommendation, report::SEE_SUMMARY);

    // Only a summary: the recommendation points to it.
    let parts = report::split_final_report("## Executive Summary\nAdopt.");
    assert_eq!(parts.recommendation, report::SEE_SUMMARY);

    let mut b = normal_board();
    b["final_report"] = json!("Plain text only.");
    let md = render(&b).markdown;
    assert_eq!(section(&md, "Executive Summary").trim(), "Plain text only.");
    assert!(section(&md, "Recommendation")
        .trim()
        .starts_with(report::SEE_SUMMARY));
}

#[test]
fn mermaid_has_one_arrow_per_task_and_result() {
    let m = report::mermaid(&board(&normal_board()));
    let lines: Vec<&str> = m.lines().collect();
    assert_eq!(
        lines,
        [
            "sequenceDiagram",
            "    participant PM",
            "    participant arch",
            "    participant biz",
            "    PM->>arch: L1 What latency can Rust give us#59; is it below 50 ms #35;p99?",
            "    arch-->>PM: L1 Rust fits the latency budget.",
            "    PM->>biz: L2 What does hosting cost per month?",
            "    biz--xPM: L2 failed (timeout)",
            "    Note over PM: L3 FINISH",
        ]
    );
    let m = report::mermaid(&board(&forced_board()));
    assert!(
        m.ends_with("    Note over PM: L6 forced finish (max_loops reached)"),
        "{m}"
    );

    // Names Mermaid would misread get an alias; long questions are cut.
    let mut b = normal_board();
    // `A1` is a plain name of its own: an alias must never collide with it.
    b["participants"] = json!(["data-eng", "end", "A1"]);
    b["new_events"] = json!([
        event(
            0,
            "pm_decision",
            json!({"from": "pm", "to": "data-eng", "kind": "task", "message": "q ".repeat(50)})
        ),
        event(
            0,
            "agent_result",
            json!({"from": "data-eng", "to": "pm", "kind": "result", "status": "ok", "message": "a\nb"})
        ),
    ]);
    let m = report::mermaid(&board(&b));
    assert!(
        m.contains(
            "    participant _a1 as data-eng\n    participant _a2 as end\n    participant A1\n"
        ),
        "{m}"
    );
    assert!(m.contains("    _a1-->>PM: L1 a b"), "{m}");
    let ask = m
        .lines()
        .find(|l| l.starts_with("    PM->>_a1: L1 "))
        .unwrap();
    assert!(ask.ends_with("...") && ask.len() < 90, "{ask}");
}

#[test]
fn appendix_has_counts() {
    let md = render(&normal_board()).markdown;
    let header = &md[..md.find("## Topic").unwrap()];
    assert!(
        header.contains(
            "- Participants: PM (built-in PM); arch (Architect); biz (Business analyst)\n"
        ),
        "{header}"
    );
    assert!(header.contains("- Loops used: 2 / 6\n"), "{header}");
    let a = section(&md, "Appendix");
    assert!(a.contains("- LLM calls: 5\n"));
    assert!(a.contains("- Tokens: 1200 prompt, 340 completion\n"));
    assert!(a.contains("| pm | 2 | 500 | 200 |"));
}

#[test]
fn finish_saves_atomically_and_marks_finished() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reports/demo.md");
    let b = board(&fallback_board());
    let result = report::run(b.clone(), None, Some(&path)).unwrap();
    assert_eq!(result.status, Status::Finished);
    assert_eq!(result.board.status, Status::Finished);
    assert_eq!(result.kind, ReportKind::Fallback);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), result.markdown);
    // The default note is kept on the finished board, so a re-render says the same.
    assert_eq!(
        result.board.process_note.as_deref(),
        Some(report::FALLBACK_NOTE)
    );
    let again = report::render(&result.board, None).unwrap();
    assert_eq!(again.kind, ReportKind::Fallback);
    assert_eq!(again.markdown, result.markdown);
    assert_eq!(
        std::fs::read_dir(dir.path().join("reports"))
            .unwrap()
            .count(),
        1,
        "no temporary file left"
    );

    // Without a report file nothing changes but the events: render-report records none.
    let result = report::run(b.clone(), None, None).unwrap();
    assert_eq!(result.status, Status::ForcedStop);
    assert_eq!(
        result.board,
        Board {
            new_events: vec![],
            ..b
        }
    );
    assert_eq!(result.report_file, None);
}

#[test]
fn rerender_keeps_kind() {
    for (v, kind) in [
        (normal_board(), ReportKind::Normal),
        (forced_board(), ReportKind::Forced),
    ] {
        let saved = report::run(
            board(&v),
            None,
            Some(&tempfile::tempdir().unwrap().path().join("r.md")),
        )
        .unwrap();
        let again = report::render(&saved.board, None).unwrap();
        assert_eq!(again.kind, kind);
        assert_eq!(again.markdown, saved.markdown);
        // A board whose report could not be saved can be rendered again.
        let mut failed = saved.board.clone();
        failed.status = Status::Failed;
        assert_eq!(report::render(&failed, None).unwrap().kind, kind);
    }
}

// ---------------------------------------------------------------------------------------------
// The program

fn cmd() -> Cli {
    cli("render-report")
}

/// The board as a stage would print it: its `flow` made from its events, as in [`board`].
fn stdin_of(v: &Value) -> String {
    let mut v = v.clone();
    if let Ok(events) =
        serde_json::from_value::<Vec<agent_meeting::model::Event>>(v["new_events"].clone())
    {
        v["flow"] =
            serde_json::to_value(agent_meeting::meeting::events::full_flow(&events)).unwrap();
    }
    serde_json::to_string(&v).unwrap()
}

#[test]
fn cli_writes_report_and_prints_finished_board() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out/demo.md");
    let out = cmd()
        .arg("--report-file")
        .arg(&path)
        .stdin(stdin_of(&normal_board()))
        .run();
    let text = out.success().stdout();
    assert_eq!(text.lines().count(), 1, "one JSON line");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["report_version"], 1);
    assert_eq!(v["status"], "finished");
    assert_eq!(v["board"]["status"], "finished");
    assert_eq!(v["kind"], "normal");
    assert_eq!(v["report_file"], path.display().to_string());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        v["markdown"].as_str().unwrap()
    );
}

/// A pipe (or a device) at --report-file is refused (exit 2) and stays what it is: the save's
/// rename would replace it by a regular file.
#[test]
fn cli_refuses_a_pipe_as_report_file() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = dir.path().join("p.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(made.success());
    let out = cmd()
        .arg("--report-file")
        .arg(&pipe)
        .stdin(stdin_of(&normal_board()))
        .run();
    out.exit(2)
        .one_stderr_line()
        .stderr_starts_with("render-report: --report-file:")
        .stderr_has("is not a regular file");
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::symlink_metadata(&pipe).unwrap().file_type();
    assert!(kind.is_fifo(), "the pipe was replaced");
}

#[test]
fn cli_markdown_flag_prints_markdown() {
    let expected = render(&forced_board()).markdown;
    cmd()
        .arg("--markdown")
        .stdin(stdin_of(&forced_board()))
        .run()
        .success()
        .stdout_is(&expected);
}

#[test]
fn cli_template_override() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("mine.md.j2");
    std::fs::write(
        &t,
        "# {{ kind }}: {{ topic }}\n{% for d in evidence %}* {{ d.document_id }}\n{% endfor %}",
    )
    .unwrap();
    cmd()
        .arg("--markdown")
        .arg("--template")
        .arg(&t)
        .stdin(stdin_of(&normal_board()))
        .run()
        .success()
        .stdout_is(
            "# normal: Adopt Rust for the billing service?\n* docs/costs.md\n* docs/perf.md\n",
        );

    // The library takes the same override.
    let ut = UserTemplate::load(&t).unwrap();
    assert!(report::render(&board(&fallback_board()), Some(&ut))
        .unwrap()
        .markdown
        .starts_with("# fallback: "));

    // Undefined variables are errors naming the template file (exit 2).
    std::fs::write(&t, "{{ no_such_variable }}").unwrap();
    cmd()
        .arg("--markdown")
        .arg("--template")
        .arg(&t)
        .stdin(stdin_of(&normal_board()))
        .run()
        .exit(2)
        .stdout_is("")
        .stderr_starts_with("render-report: ")
        .stderr_has("mine.md.j2");
    cmd()
        .arg("--template")
        .arg(dir.path().join("missing.j2"))
        .stdin(stdin_of(&normal_board()))
        .run()
        .exit(2);
}

#[test]
fn cli_wrong_stage_exits_2_naming_next_stage() {
    let mut running = normal_board();
    running["status"] = json!("running");
    running["final_report"] = json!(null);
    let mut pending = running.clone();
    pending["pending_calls"] = json!([{"target_agent": "arch", "prompt": "q"}]);
    let mut merged = running.clone();
    merged["last_turns"] = json!([{"agent_name": "arch", "status": "ok", "prompt": "q", "result": {"response": "r"}, "error": null}]);
    let mut finishing = running.clone();
    finishing["status"] = json!("finishing");
    for (b, stage) in [
        (running, "pm-step should run next"),
        (pending, "agent-turn should run next"),
        (merged, "merge-board should run next"),
        (finishing, "pm-step (forced finish) should run next"),
    ] {
        cmd()
            .stdin(stdin_of(&b))
            .run()
            .exit(2)
            .stdout_is("")
            .stderr_starts_with("render-report: ")
            .stderr_has(stage);
    }
}

#[test]
fn cli_write_failure_exits_1_without_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    for target in [blocker.join("r.md"), PathBuf::from("/dev/null/x.md")] {
        let out = cmd()
            .arg("--report-file")
            .arg(&target)
            .stdin(stdin_of(&normal_board()))
            .run();
        out.exit(1)
            .stderr_starts_with("render-report: ")
            .stderr_has("report not saved");
        // The board says the meeting failed, and why (docs/design/flow.md#statuses: `failed` only when even the
        // report cannot be written).
        let result: Value = out.json();
        assert_eq!(result["status"], "failed");
        assert_eq!(result["board"]["status"], "failed");
        assert!(result["report_file"].is_null());
        assert!(result["board"]["last_error"]
            .as_str()
            .unwrap()
            .starts_with("report not saved"));
        assert!(!Path::new(&target).exists());
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing else written"
    );
    assert_eq!(std::fs::read_to_string(&blocker).unwrap(), "x");
}

#[test]
fn cli_refuses_unknown_board_version_and_bad_input() {
    let mut b = normal_board();
    b["board_version"] = json!(agent_meeting::model::BOARD_VERSION + 1);
    cmd().stdin(stdin_of(&b)).run().exit(2).stderr_has(&format!(
        "board_version: version {} is not supported",
        agent_meeting::model::BOARD_VERSION + 1
    ));
    let mut b = normal_board();
    b["topik"] = json!("x");
    cmd().stdin(stdin_of(&b)).run().exit(2).stderr_has("topik");
    cmd().stdin("").run().exit(2);
}

#[test]
fn cli_help_has_example() {
    cmd()
        .arg("--help")
        .run()
        .success()
        .stdout_has("Example:")
        .stdout_has("render-report --report-file reports/demo.md");
}
