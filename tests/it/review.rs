//! Reviewer mode (docs/design/review.md), driven by cassettes: the PM's FINISH goes to two
//! reviewers at once (a non-participant and the built-in devil's advocate); one objection
//! revises the decision, the other is overruled with a reason, both in the report's
//! Challenges; the meeting file's `review:` and `--review-by` give the same meeting; the shell
//! loop agrees with the driver; `--step` shows the reviewing state and a meeting stopped
//! mid-review resumes to the same report; a failed answer to the objections leaves them open.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::fixtures::pm::{self, With};
use crate::fixtures::{final_board, without_timings, Cassette, NOW};
use crate::harness::{cli, programs_path, root, Cli, Workdir};
use crate::harness::{skip_without, Tool};

const DOC: &str = "docs/timings.md";

const MEETING: &str = "topic: Move nightly reporting off the primary database?
decision_packet:
  decision_to_make: Where should nightly reporting run next quarter?
  options: [Tune the primary, Read replica]
  evaluation_dimensions: [Cost, Risk]
context_sources:
  - {type: file, path: docs/timings.md, purpose: Job timings}
";

const REVIEW: &str = "review: {by: [sre, devils-advocate], rounds: 1}\n";

/// A workdir with the meeting file (`review:` in it when `with_review`) and its document.
fn work(with_review: bool) -> Workdir {
    let work = Workdir::new();
    let text = if with_review {
        format!("{MEETING}{REVIEW}")
    } else {
        MEETING.to_string()
    };
    work.write("meeting.yaml", text);
    work.write(
        DOC,
        "The nightly run takes 3h40m and overran the 06:00 deadline 7 times in 90 days.\n\
         Replica lag reached 40 minutes during the March load test.\n",
    );
    work
}

fn finish(choice: &str, confidence: &str, summary: &str, responses: Value) -> Value {
    pm::finish(&format!("### Executive Summary\n{summary}\n### Recommendation\nRun the nightly jobs on a dedicated read replica."))
        .with("decision", json!({"choice": choice, "confidence": confidence, "revisit_if": "the replica lags"}))
        .with("objection_responses", responses)
}

/// The meeting up to the reviewers' verdicts: arch answers, the PM drafts, sre and the
/// devil's advocate object (a fan-out: calls 4 and 5).
fn to_objections() -> Cassette {
    Cassette::new()
        .pm(pm::call(
            "arch",
            "Does a read replica alone bring the run under the deadline?",
        ))
        .agent(
            "arch",
            json!({"response": "A replica removes the contention on the primary.",
            "key_points": ["A replica removes the contention on the primary"], "risks": [],
            "recommendations": ["Run the jobs on a read replica"],
            "citations": [{"document_id": DOC, "source_path": DOC,
                "quote": "overran the 06:00 deadline 7 times",
                "supports": "A replica removes the contention on the primary"}]}),
        )
        .pm(finish(
            "Read replica",
            "high",
            "Move reporting to a read replica.",
            Value::Null,
        ))
        .agent(
            "sre",
            json!({"verdict": "object", "objections": [{"about": "the decision's confidence",
            "why": "Replica lag reached 40 minutes in the load test, so the deadline is not safe on a replica alone.",
            "evidence": [{"document_id": DOC, "source_path": DOC,
                "quote": "Replica lag reached 40 minutes"}]}]}),
        )
        .agent(
            "devils-advocate",
            json!({"verdict": "object", "objections": [{
            "about": "the option of tuning the primary",
            "why": "Tuning the slowest jobs was dismissed without an estimate of its effect.",
            "evidence": []}]}),
        )
}

/// The PM revises for O1 and overrules O2.
fn answer() -> Value {
    finish(
        "Read replica, with lag monitoring",
        "medium",
        "Move reporting to a read replica and alarm on its lag.",
        json!([
            {"id": "O1", "resolution": "revise",
             "reason": "Confidence lowered to medium and a lag alarm added: the load test showed 40 minutes of lag."},
            {"id": "O2", "resolution": "overrule",
             "reason": "Tuning was tried last year and gained 10 minutes, far from the 2 hours needed."}
        ]),
    )
}

/// The PM overrules O1 and asks biz about O2.
fn ask_about_o2() -> Value {
    pm::call(
        "biz",
        "What would tuning the slowest jobs gain, in minutes?",
    )
    .with(
        "objection_responses",
        json!([
            {"id": "O1", "resolution": "overrule", "reason": "A lag alarm covers it; the deadline has 2 hours of margin."},
            {"id": "O2", "resolution": "ask", "reason": "The gain of tuning is what decides it."}]),
    )
}

/// The whole meeting: the objections, then the PM's answer to them.
fn answered() -> Cassette {
    to_objections().pm(answer())
}

/// `meeting` on the workdir's meeting file with arch and biz, offline, clock and trace id pinned.
fn meeting(work: &Workdir, cassette: &Path, extra: &[&str]) -> Cli {
    let mut cmd = cli("meeting");
    cmd.current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--meeting-file", "meeting.yaml", "--agents", "arch,biz"])
        .args(["--provider", "replay", "--trace-id", "review-test"])
        .arg("--cassette")
        .arg(cassette)
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"))
        .args(extra);
    cmd
}

fn run_dir(work: &Workdir) -> PathBuf {
    work.join("runs/review-test")
}

#[test]
fn an_objection_revises_the_decision_and_another_is_overruled_both_in_the_report() {
    let work = work(true);
    let lines = answered();
    let c = lines.write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet"]).run().exit(0);
    let report = work.read("report.md");
    assert!(report.contains("## Challenges"), "{report}");
    assert!(
        report.contains("- **O1** raised by sre (review round 1) about the decision's confidence: Replica lag reached 40 minutes in the load test, so the deadline is not safe on a replica alone. [E2] — decision revised by the PM: Confidence lowered to medium"),
        "{report}"
    );
    assert!(
        report.contains("- **O2** raised by devils-advocate (review round 1) about the option of tuning the primary: Tuning the slowest jobs was dismissed without an estimate of its effect. — overruled by the PM: Tuning was tried last year and gained 10 minutes"),
        "{report}"
    );
    // The decision is the revised one, not the draft's.
    assert!(
        report.contains("**Decision:** Read replica, with lag monitoring (confidence: medium)"),
        "{report}"
    );
    assert!(!report.contains("confidence: high"), "{report}");
    // The reviewer's citation is evidence like any agent's, checked against the document.
    assert!(
        report.contains("Replica lag reached 40 minutes"),
        "{report}"
    );
    // The reviewers in the diagram, asked at once in the draft's loop.
    assert!(
        report.contains("    par L2 at once\n        PM->>sre: L2 Review"),
        "{report}"
    );
    let board = final_board(&run_dir(&work));
    assert_eq!(board["status"], "finished");
    assert_eq!(board["review_round"], 1);
    let statuses: Vec<&str> = board["objections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["revised", "overruled"]);
    assert_eq!(board["evidence"][1]["agent"], "sre");
    assert_eq!(board["evidence"][1]["verified"], true);
    // A review is no loop: the loop budget is the PM's questions'.
    assert_eq!(board["loop_count"], 1);
}

/// `--review-by` gives the same meeting as the meeting file's `review:`.
#[test]
fn review_by_flag_equals_the_meeting_files_review() {
    let lines = answered();
    let from_file = work(true);
    let c = lines.write(from_file.join("c.jsonl"));
    meeting(&from_file, &c, &["--quiet"]).run().exit(0);
    let from_flag = work(false);
    let c = lines.write(from_flag.join("c.jsonl"));
    meeting(
        &from_flag,
        &c,
        &["--quiet", "--review-by", "sre,devils-advocate"],
    )
    .run()
    .exit(0);
    assert_eq!(from_flag.read("report.md"), from_file.read("report.md"));
}

/// `share/meeting.sh` runs the review with the same stages the driver runs: the same board
/// and the same report.
#[test]
fn the_shell_loop_agrees_with_the_driver_through_a_review() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = work(true);
    let lines = answered();
    let c = lines.write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet"]).run().exit(0);
    let want_report = work.read("report.md");
    let want = without_timings(final_board(&run_dir(&work)));

    let mut sh = Cli::new(Command::new("sh"));
    sh.current_dir(work.path())
        .arg(root().join("share/meeting.sh"))
        .args(["meeting.yaml", "arch,biz"])
        .arg(work.join("sh-report.md"))
        .env("PATH", programs_path())
        .env("AGENT_MEETING_NOW", NOW)
        .env("AGENT_MEETING_PROVIDER", "replay")
        .env("MEETING_CASSETTE", &c)
        .env("TRACE_ID", "review-test")
        .env("BOARD_OUT", work.join("sh-board.json"));
    let out = sh.run();
    out.check(
        out.code() == Some(0),
        "the shell loop (jq must be installed)",
    );
    let mut got = without_timings(serde_json::from_str(&work.read("sh-board.json")).unwrap());
    let mut want = want;
    for b in [&mut got, &mut want] {
        b.as_object_mut().unwrap().remove("report_file");
    }
    assert_eq!(got, want, "shell loop and meeting disagree");
    assert_eq!(work.read("sh-report.md"), want_report);
}

/// `--step` shows the reviewing state; a meeting stopped with the reviewers' verdicts not yet
/// merged resumes to the same report as one never stopped, asking no call twice.
#[test]
fn step_shows_the_review_and_a_meeting_stopped_mid_review_resumes() {
    let lines = answered();
    let whole = work(true);
    let c = lines.write(whole.join("c.jsonl"));
    meeting(&whole, &c, &["--quiet"]).run().exit(0);

    let work = work(true);
    let c = lines.write(work.join("c.jsonl"));
    // pm-step, agent-turn, merge-board, pm-step (the draft), agent-turn (the reviews); stop.
    let out = meeting(&work, &c, &["--step"]).stdin("\n\n\n\n\nq\n").run();
    out.exit(130);
    let err = out.stderr();
    assert!(
        err.contains("next: agent-turn (loop 2/6, status reviewing)")
            && err.contains("sre: review: 1 objection"),
        "{err}"
    );
    assert!(err.contains("stopped before merge-board"), "{err}");
    let out = cli("meeting")
        .current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .arg("--resume")
        .arg(run_dir(&work))
        .arg("--quiet")
        .run();
    out.exit(0);
    assert_eq!(work.read("report.md"), whole.read("report.md"));
    let log = work.read("runs/review-test/llm.jsonl");
    assert_eq!(
        log.lines().count(),
        lines.lines().len(),
        "no call asked twice"
    );
}

/// A PM that cannot answer the objections (twice unusable) leaves the draft as the report,
/// its objections open and said so.
#[test]
fn a_failed_answer_to_the_objections_renders_the_draft_with_them_open() {
    let work = work(true);
    let unanswered = finish(
        "Read replica",
        "high",
        "Move reporting to a read replica.",
        Value::Null,
    );
    let c = to_objections()
        .pm(unanswered.clone())
        .pm(unanswered)
        .write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet"]).run().exit(0);
    let report = work.read("report.md");
    assert!(
        report.contains("**Decision:** Read replica (confidence: high)"),
        "{report}"
    );
    for id in ["O1", "O2"] {
        assert!(report.contains(&format!("**{id}** raised by")), "{report}");
    }
    assert_eq!(report.matches("left open").count(), 2, "{report}");
    assert!(
        report.contains("The PM's answer to the reviewers' objections failed"),
        "{report}"
    );
    let board = final_board(&run_dir(&work));
    assert_eq!(board["objections"][0]["status"], "open");
}

/// Two reviewers are asked at once, through the fan-out machinery: each reviewer's reply is
/// held until both requests are in the fake server together, which only a concurrent review
/// gets past.
#[test]
fn the_reviewers_are_asked_concurrently() {
    use crate::fake_http::{json as http, openai_ok, FakeServer};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let replies = answered().responses();
    let pm_rounds = AtomicUsize::new(0);
    let server = FakeServer::answering(move |req| {
        let body = req.body.as_str();
        let reply = |v: &str| http(200, &openai_ok(v, Some((100, 10))));
        if body.contains("review_verdict") {
            let sre = body.contains("site reliability engineer");
            return reply(&replies[if sre { 3 } else { 4 }]).together(2);
        }
        if body.contains("pm_decision") {
            let round = pm_rounds.fetch_add(1, Ordering::SeqCst);
            return reply(&replies[[0, 2, 5][round.min(2)]]);
        }
        reply(&replies[1])
    });
    let work = work(true);
    let mut cmd = cli("meeting");
    cmd.current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args(["--meeting-file", "meeting.yaml", "--agents", "arch,biz"])
        .args([
            "--provider",
            "openai",
            "--trace-id",
            "review-test",
            "--quiet",
        ])
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"));
    let out = cmd.run();
    out.check(out.code() == Some(0), "the meeting");
    assert!(server.missed().is_empty(), "{:?}", server.missed());
    assert_eq!(server.max_in_flight(), 2);
    let report = work.read("report.md");
    assert!(report.contains("decision revised by the PM"), "{report}");
    assert!(report.contains("overruled by the PM"), "{report}");
}

/// The PM may ask a participant about an objection (loops permitting): the objection is
/// addressed by that participant's answer; its next FINISH, with the review rounds spent, is
/// the report.
#[test]
fn an_objection_asked_about_is_addressed_by_the_answer() {
    let work = work(true);
    let c = to_objections()
        .pm(ask_about_o2())
        .agent(
            "biz",
            pm::answer(
                "Tuning gains about 10 minutes a night.",
                &["Tuning gains about 10 minutes a night"],
            ),
        )
        .pm(finish(
            "Read replica",
            "high",
            "Move reporting to a read replica.",
            Value::Null,
        ))
        .write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet"]).run().exit(0);
    let report = work.read("report.md");
    assert!(
        report.contains("— addressed: the PM asked biz (The gain of tuning is what decides it.); biz answered: Tuning gains about 10 minutes a night."),
        "{report}"
    );
    assert!(
        report.contains("— overruled by the PM: A lag alarm covers it"),
        "{report}"
    );
    let board = final_board(&run_dir(&work));
    assert_eq!(board["loop_count"], 2, "the question about O2 took a loop");
    assert_eq!(
        board["review_round"], 1,
        "one round: the second FINISH is final"
    );
}

/// With two review rounds the revised FINISH is reviewed again; both approving, it is the
/// report, and the round-1 objections keep their resolutions.
#[test]
fn a_second_round_reviews_the_revised_draft() {
    let work = work(false);
    let text = format!("{MEETING}review: {{by: [sre, devils-advocate], rounds: 2}}\n");
    work.write("meeting.yaml", text);
    let mut lines = answered();
    for who in ["sre", "devils-advocate"] {
        lines = lines.agent(who, json!({"verdict": "approve", "objections": null}));
    }
    let c = lines.write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet"]).run().exit(0);
    let board = final_board(&run_dir(&work));
    assert_eq!(board["review_round"], 2);
    assert_eq!(board["objections"].as_array().unwrap().len(), 2);
    let report = work.read("report.md");
    assert!(
        report.contains("**Decision:** Read replica, with lag monitoring (confidence: medium)"),
        "{report}"
    );
    assert!(report.contains("decision revised by the PM"), "{report}");
}

/// Bad review settings stop the meeting before any call, one line naming the field (exit 2).
#[test]
fn bad_review_settings_are_refused_naming_the_field() {
    let c = PathBuf::from("/nonexistent-cassette.jsonl");
    for (review, says) in [
        (
            "review: {by: [nobody]}\n",
            "review.by[0]: unknown agent \"nobody\"",
        ),
        (
            "review: {rounds: 0}\n",
            "review.rounds: 0 (expected 1 to 5)",
        ),
        (
            "review: {by: [sre, sre]}\n",
            "review.by[1]: \"sre\" is named twice",
        ),
        (
            "review: {by: [pm]}\n",
            "review.by[0]: \"pm\" is not an agent name a reviewer may have",
        ),
        (
            "review: {by: [ana]}\n",
            "review.by[0]: \"ana\" is a person; reviewers are models",
        ),
    ] {
        let work = work(false);
        work.write(
            "agents/ana.yaml",
            "name: ana\nkind: human\nrole: Ops lead\ndescription: Knows the nights on call.\n",
        );
        work.write("meeting.yaml", format!("{MEETING}{review}"));
        let out = meeting(&work, &c, &["--quiet"]).run();
        out.exit(2);
        let err = out.stderr();
        assert!(err.contains(says), "{review}: {err}");
        assert_eq!(err.lines().count(), 1, "{review}: {err}");
    }
}

/// A question about an objection that spends the last loop leads to the closing round; when
/// that fails too, the fallback report still shows the challenges and how far each got.
#[test]
fn the_fallback_report_shows_the_challenges() {
    let work = work(true);
    let c = to_objections()
        .pm(ask_about_o2())
        .agent(
            "biz",
            pm::answer("Tuning gains about 10 minutes a night.", &[]),
        )
        .pm(json!("not a decision"))
        .pm(json!("not a decision"))
        .write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet", "--max-loops", "2"])
        .run()
        .exit(3);
    let report = work.read("report.md");
    assert!(report.contains("## Challenges"), "{report}");
    assert!(
        report.contains("biz answered: Tuning gains about 10 minutes a night."),
        "{report}"
    );
    assert!(report.contains("overruled by the PM"), "{report}");
}
