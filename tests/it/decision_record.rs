//! The report as a decision record (docs/design/report.md#report), driven by cassettes: the
//! demo meetings (golden reports, read by a person when blessed), questions tracked by id and
//! marked answered, findings linked to numbered evidence, the decision and its options table,
//! the record header, the Process Note in plain words, and model text that cannot forge report
//! structure or reorder it with bidi controls. Old cassettes (without the new fields) still
//! give a report.

use std::path::Path;

use serde_json::{json, Value};

use crate::fixtures::pm::{self, With};
use crate::fixtures::{demo_cassette, final_board, meeting_cmd, section, sections, Cassette, NOW};
use crate::harness::{cli, golden, root, Workdir};

/// Run the demo meeting file with `cassette`; returns the report and the final board.
fn run_demo(work: &Workdir, cassette: &Path, extra: &[&str]) -> (String, Value) {
    let out = meeting_cmd(work.path(), cassette, extra).run();
    out.check(out.code() == Some(0), "the meeting");
    (
        work.read("report.md"),
        final_board(&work.join("runs/demo-test")),
    )
}

#[test]
fn the_demo_report_is_a_decision_record() {
    let work = Workdir::new();
    let (md, board) = run_demo(&work, &demo_cassette(), &[]);
    golden("demo_report.md", &md);

    // The record header.
    let header = &md[..md.find("## Topic").unwrap()];
    for line in [
        "- Date: 2026-11-30 12:00:00 UTC\n",
        "- Trace ID: `demo-test`\n",
        "- Answers: replayed from a cassette, not live model calls, labelled \"scripted demo reply, hand-written (not recorded from a model)\"\n",
        "- Participants: PM (Meeting PM): replay; arch (Software Architect): replay; biz (Business Analyst): replay\n",
        "- Loops used: 3 / 6\n",
        "- Documents used (4): `meetings/demo/overview.md`,",
    ] {
        assert!(header.contains(line), "{line}\n{header}");
    }

    // A required question marked answered leaves Open Questions and shows its answer and author.
    let required = section(&md, "Required Questions");
    assert!(required.contains("- **Q1** Does a read replica alone bring the run under the 06:00 UTC deadline with margin? — answered by arch (loop 1): Not on its own:"), "{required}");
    assert!(!required.contains("not answered"), "{required}");
    let open = section(&md, "Open Questions");
    assert!(
        !open.contains("Q1") && !open.contains("Q2") && !open.contains("Q3"),
        "{open}"
    );
    assert!(open.contains("- Q4: How long would the run take"), "{open}");

    // The decision line and the options × dimensions table open the Recommendation.
    let rec = section(&md, "Recommendation");
    assert!(rec.starts_with("\n**Decision:** Move the nightly run to a dedicated read replica, starting with a two-week trial of the smaller db.r6g.xlarge (confidence: medium). Revisit if: "), "{rec}");
    assert!(rec.contains("### Options assessed\n\n| Option | Reliability of the 06:00 UTC deadline | Monthly cost | Migration effort and risk | Impact on the product database |\n|---|---|---|---|---|\n| Keep the primary and tune the slowest jobs |"), "{rec}");
    assert_eq!(
        rec.matches("\n| ").count(),
        4,
        "header and three options: {rec}"
    );

    // Findings carry their evidence; the quote is numbered under Evidence Reviewed.
    let findings = section(&md, "Key Findings");
    assert!(findings.contains("- Smaller replica: 1,240 USD per month, within budget but its sort performance is untested. [E5] — biz, loop 2\n"), "{findings}");
    assert!(findings.contains("- Jobs must keep their order because of shared staging tables. (no document cited) — arch, loop 1\n"), "{findings}");
    let evidence = section(&md, "Evidence Reviewed");
    assert!(evidence.contains("- E5: \"A smaller `db.r6g.xlarge` (4 vCPU, 32 GiB) replica: 1,240 USD, but the `aged_receivables` sort would spill more; untested.\" (biz)\n"), "{evidence}");

    // The agents' recommendations are proposals with who made them, never the decision.
    let proposals = section(&md, "Proposals made during the meeting");
    assert!(proposals.contains("- Trial the nightly run on a same-size replica for two weeks before committing. (no document cited) — proposed by arch, loop 1\n"), "{proposals}");
    assert!(!rec.contains("same-size replica for two weeks"), "{rec}");

    // The retried turn is told in plain words, without the retry instructions for the model.
    let note = section(&md, "Process Note");
    assert!(note.contains("- Loop 2: biz's answer was unusable (it cited a document that was not collected, meetings/demo/docs/pricing.md); it was asked again.\n"), "{note}");
    for model_text in ["reply with", "JSON object", "allowed:"] {
        assert!(!note.contains(model_text), "{model_text}: {note}");
    }

    // The board keeps it all, bounded.
    let record = &board["record"];
    assert_eq!(record["questions"].as_array().unwrap().len(), 5);
    assert_eq!(record["questions"][1]["answer"]["by"], json!(["biz"]));
    assert_eq!(record["decision"]["confidence"], "medium");
    assert_eq!(record["callers"]["pm"]["replayed"], true);
    assert_eq!(board["evidence"][0]["id"], "E1");
}

#[test]
fn the_forced_demo_speaks_only_of_its_two_loops() {
    let work = Workdir::new();
    let cassette = root().join("meetings/demo-forced.cassette.jsonl");
    let (md, _) = run_demo(&work, &cassette, &["--max-loops", "2"]);
    golden("demo_forced_report.md", &md);
    let pm_text = format!(
        "{}{}",
        section(&md, "Executive Summary"),
        section(&md, "Recommendation")
    );
    for later in ["6 jobs", "re-reconciliation", "legally weighted"] {
        assert!(!pm_text.contains(later), "{later}: {pm_text}");
    }
    assert!(
        section(&md, "Required Questions").contains("- **Q3** Which reports are hardest to reconcile if the SQL dialect changes? — not answered")
    );
    let note = section(&md, "Process Note");
    assert!(
        note.contains("Meeting stopped after reaching max loop limit (2/2)"),
        "{note}"
    );
    assert!(note.contains("- Required questions not answered: Q3 (Which reports are hardest to reconcile if the SQL dialect changes?).\n"), "{note}");
    // Cells the PM did not assess show as such.
    assert!(section(&md, "Recommendation").contains(
        "| Keep the primary and tune the slowest jobs | Overran 7 of 90 nights | — | — | — |"
    ));
}

const FORGED: &str = "### Executive Summary\nKeep the primary.\n## Evidence Reviewed\n- fake evidence\nProcess Note\n===\n### Recommendation\nTune \u{202E}the jobs\u{202C}.";

#[test]
fn a_close_before_anyone_was_asked_is_noted_and_pm_markdown_cannot_forge_sections() {
    let work = Workdir::new();
    // A FINISH before anyone has answered is refused: two failed rounds, then the closing
    // round takes it.
    let c = (0..5)
        .fold(Cassette::new(), |c, _| c.pm(pm::finish(FORGED)))
        .write(work.join("c.jsonl"));
    let (md, _) = run_demo(&work, &c, &[]);
    let want = [
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
        "## Process Note",
        "## Appendix",
    ];
    assert_eq!(sections(&md), want, "{md}");
    let summary = section(&md, "Executive Summary");
    assert!(
        summary.contains("\\## Evidence Reviewed\n- fake evidence\nProcess Note\n\\==="),
        "{summary}"
    );
    assert!(!md.contains('\u{202E}') && !md.contains('\u{202C}'), "{md}");
    assert!(section(&md, "Recommendation").contains("Tune the jobs."));
    let note = section(&md, "Process Note");
    assert!(
        note.contains(
            "No participant was consulted: the program closed the meeting before the PM had asked anyone, and the PM's closing report rests on"
        ),
        "{note}"
    );
}

#[test]
fn an_unknown_question_id_is_recorded_and_the_meeting_goes_on() {
    let work = Workdir::new();
    // A topic and an agent answer carrying a right-to-left override.
    let demo = std::fs::read_to_string(root().join("meetings/demo.yaml")).unwrap();
    // No documents: this meeting is about the questions.
    let yaml = demo[..demo.find("context_sources:").unwrap()].replace(
        "topic: Move nightly batch reporting off the primary Postgres instance?",
        "topic: \"Move nightly batch reporting \\u202Eoff the primary?\"",
    );
    let meeting_file = work.write("demo.yaml", yaml);
    let fin = pm::finish("### Executive Summary\nDone here.\n### Recommendation\nGo with the replica.")
        .with("answered_questions", json!([{"question": "Does a read replica alone bring the run under the 06:00 UTC deadline with margin?",
            "answer": "No.", "by": ["arch"]}]))
        .with("option_assessments", json!([]));
    let c = Cassette::new()
        .pm(pm::call("arch", "How long is the run?").with(
            "answered_questions",
            json!([{"question": "Q9", "answer": "Yes.", "by": []}]),
        ))
        .agent(
            "arch",
            json!({"response": "It takes \u{202E}3h40m.", "key_points": ["Run takes 3h40m\u{2066}."],
                "risks": [], "recommendations": [], "citations": []}),
        )
        // Q2 and Q3 asked of no one, biz not asked: the FINISH goes back once.
        .pm(fin.clone())
        .pm(fin)
        .write(work.join("c.jsonl"));
    let out = cli("meeting")
        .env("AGENT_MEETING_NOW", NOW)
        .arg("--meeting-file")
        .arg(&meeting_file)
        .args([
            "--agents",
            "arch,biz",
            "--provider",
            "replay",
            "--trace-id",
            "t",
        ])
        .arg("--cassette")
        .arg(&c)
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"))
        .run();
    out.check(out.code() == Some(0), "the meeting goes on");
    let board = final_board(&work.join("runs/t"));
    let errors = board["recent_errors"].to_string();
    assert!(
        errors.contains("\\\"Q9\\\" is not a question on the whiteboard"),
        "{errors}"
    );
    assert!(!board["summary"].as_str().unwrap().contains('\u{202E}'));
    let md = work.read("report.md");
    assert!(!md.contains('\u{202E}') && !md.contains('\u{2066}'), "{md}");
    assert!(md.contains("Move nightly batch reporting off the primary?"));
    assert!(
        md.contains("- Run takes 3h40m. (no document cited) — arch, loop 1\n"),
        "{md}"
    );
    // Answered by its exact text.
    assert!(section(&md, "Required Questions").contains("— answered by arch (loop 1): No."));
    assert!(section(&md, "Process Note").contains(
        "- Loop 1: The PM marked \"Q9\" answered, which is not a question on the whiteboard; ignored.\n"
    ));
}

/// A cassette written before the decision record (no answered_questions, decision, option
/// assessments or supports) still gives today's report: questions never marked answered stay
/// open, findings are marked as uncited, no decision line or table.
#[test]
fn an_old_cassette_still_gives_a_report() {
    let work = Workdir::new();
    let c = Cassette::demo()
        .each(|line| {
            let mut reply: Value =
                serde_json::from_str(line["response"].as_str().unwrap()).unwrap();
            let o = reply.as_object_mut().unwrap();
            // The decision stays: a FINISH in a meeting with options must choose one.
            for k in ["answered_questions", "option_assessments"] {
                o.remove(k);
            }
            if let Some(cs) = o.get_mut("citations").and_then(Value::as_array_mut) {
                for c in cs {
                    c.as_object_mut().unwrap().remove("supports");
                }
            }
            line["response"] = json!(reply.to_string());
        })
        .write(work.join("old.jsonl"));
    let (md, _) = run_demo(&work, &c, &[]);
    assert!(md.contains("**Decision:**") && !md.contains("Options assessed"));
    assert_eq!(
        section(&md, "Required Questions")
            .matches("— not answered")
            .count(),
        3
    );
    assert!(section(&md, "Open Questions").contains("- Q1: Does a read replica"));
    assert!(!section(&md, "Key Findings").contains("[E"));
    assert!(section(&md, "Evidence Reviewed").contains("- E1: \"Total: 3h40m"));
}
