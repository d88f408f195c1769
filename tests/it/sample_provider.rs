//! `--provider sample` (docs/design/llm.md#sample-provider): a meeting of the user's own, with no
//! key and no server, runs on answers the program makes from the meeting's documents and
//! questions: a fan-out, a person at the table, the closing round, a PM decision; every answer
//! marked, the report's header saying no model was called, the same report every time. And a
//! cassette played on a meeting it was not recorded from says what can help instead.

use std::path::Path;

use serde_json::Value;

use crate::fixtures::NOW;
use crate::harness::{Cli, Workdir};

/// A meeting that is not the demo: its own topic, brief, questions and two documents.
const MEETING: &str = "topic: Move customer support from email to a shared inbox tool?
brief:
  project_background: >
    A support team of six answers about 900 customer emails a week from one shared mailbox.
  current_state: >
    Emails are tagged by hand and nobody can see who is answering what.
decision_packet:
  decision_to_make: Which tool should support use from next month?
  options:
    - Keep the shared mailbox with stricter tagging rules
    - Adopt a hosted shared inbox tool
  evaluation_dimensions:
    - Response time
    - Monthly cost
  required_questions:
    - How many emails are answered twice today?
    - What would a hosted tool cost for six seats?
context_sources:
  - type: directory
    path: support
    purpose: Support numbers and prices
";

const VOLUMES: &str = "# Support volumes

The team answered 3,800 emails last month and 140 of them were answered twice by mistake.
Median first response time was 9 hours during the week.
";

const PRICES: &str = "# Tool prices

A hosted shared inbox costs 19 EUR per seat per month on the yearly plan.
Migration of the old mailbox takes about two days of one engineer.
";

/// A person at the table.
const PAT: &str =
    "name: pat\nkind: human\nrole: Support lead\ndescription: Runs the support rota.\n";

/// The meeting in `work`, its agents (arch, biz; the built-in PM, which offers CALL_AGENTS)
/// in `work/agents`.
fn setup(work: &Workdir) {
    work.write("meeting.yaml", MEETING);
    work.write("support/volumes.md", VOLUMES);
    work.write("support/prices.md", PRICES);
    let agents = work.copy_agents("agents");
    std::fs::remove_file(agents.join("pm.yaml")).unwrap();
}

/// `meeting --provider sample` on the meeting, from `work`, fixed clock and trace id.
fn sample_meeting(work: &Workdir, agents: &str, extra: &[&str]) -> Cli {
    let mut cmd = work.cli("meeting");
    cmd.env("AGENT_MEETING_NOW", NOW)
        .args(["--meeting-file", "meeting.yaml", "--agents", agents])
        .args(["--agents-dir", "agents", "--provider", "sample"])
        .args(["--trace-id", "sample-test", "--quiet"])
        .args(extra);
    cmd
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const REPORT: &str = "reports/meeting.md";
const RUN: &str = "runs/sample-test";

#[test]
fn a_meeting_of_ones_own_runs_on_sample_answers_to_a_pm_decision() {
    let work = Workdir::new();
    setup(&work);
    let out = sample_meeting(&work, "arch,biz", &[]).run();
    out.success();
    let result: Value = out.json();
    assert_eq!(result["status"], "finished", "{result}");
    let report = work.read(REPORT);
    // The header says first that no model was called; the PM's own report and decision.
    assert!(
        report.contains("- Answers: Sample run: no model was called"),
        "{report}"
    );
    assert!(report.contains("**Decision:** [sample]"), "{report}");
    assert!(
        report.contains("## Executive Summary\n\n[sample]"),
        "{report}"
    );
    // Citations quote the meeting's own documents, each of them, and check out.
    for doc in ["support/volumes.md", "support/prices.md"] {
        assert!(report.contains(&format!("{doc} says")), "{report}");
    }
    // The good path: each required question answered from the document that holds its
    // words, quoted, by the participant asked it.
    assert!(
        report.contains("- **Q1** How many emails are answered twice today? — answered by arch")
            && report.contains("support/volumes.md says \"The team answered 3,800 emails"),
        "{report}"
    );
    assert!(
        report.contains("- **Q2** What would a hosted tool cost for six seats? — answered by")
            && report.contains("support/prices.md says \"A hosted shared inbox costs 19 EUR"),
        "{report}"
    );
    assert!(report.contains("[E1"), "{report}");
    assert!(!report.contains("unverified quote"), "{report}");
    let events = jsonl(&work.join(RUN).join("events.jsonl"));
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    // The fan-out: the PM's first round asks two participants before any answers.
    let first_answer = kinds.iter().position(|k| *k == "agent_result").unwrap();
    let tasks = kinds[..first_answer]
        .iter()
        .filter(|k| **k == "pm_decision")
        .count();
    assert_eq!(tasks, 2, "{kinds:?}");
    // A normal ending: the required questions answered, the PM finished before the loops ran
    // out, with its own report.
    assert!(!kinds.contains(&"forced_finish"), "{kinds:?}");
    assert!(report.contains("- Report kind: normal"), "{report}");
    let log = jsonl(&work.join(RUN).join("llm.jsonl"));
    let last = log.last().unwrap();
    assert_eq!(last["caller"], "pm");
    let finish: Value = serde_json::from_str(last["response"].as_str().unwrap()).unwrap();
    assert_eq!(finish["next_action"], "FINISH");
    // Every answer is marked as not a model's: the PM's analysis, the agents' responses.
    for line in &log {
        let answer: Value = serde_json::from_str(line["response"].as_str().unwrap()).unwrap();
        let text = answer
            .get("analysis")
            .or_else(|| answer.get("response"))
            .and_then(Value::as_str)
            .unwrap();
        assert!(text.starts_with("[sample] "), "{text}");
        assert_eq!(line["provider"], "sample");
    }
}

/// The README's second step (a topic of one's own, no documents, no required questions, the
/// default loops) ends as a meeting should: the fan-out, then one participant at a time, then
/// the PM's own FINISH once it has nothing new to ask — no question the circles check refuses,
/// no forced close. So does the GUIDE's batch topic; with three participants the loops may run
/// out first, but nothing is asked twice.
#[test]
fn a_topic_alone_ends_with_the_pms_finish_not_in_circles() {
    for (topic, agents, normal) in [
        (
            "Should we move our CI from Jenkins to GitHub Actions?",
            "arch,biz",
            true,
        ),
        ("Adopt Rust for ingest?", "arch,biz", true),
        ("Adopt Rust for ingest?", "arch,biz,sre", false),
    ] {
        let work = Workdir::new();
        let out = work
            .cli("meeting")
            .env("AGENT_MEETING_NOW", NOW)
            .args(["--topic", topic, "--agents", agents, "--provider", "sample"])
            .args(["--trace-id", "topic-only", "--report-file", "first-run.md"])
            .run();
        out.success();
        let result: Value = out.json();
        assert_eq!(result["status"], "finished", "{result}");
        let events = jsonl(&work.join("runs/topic-only/events.jsonl"));
        let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        for refused in [
            "pm_repeated_question",
            "pm_invalid_output",
            "pm_round_failed",
        ] {
            assert!(
                !kinds.contains(&refused),
                "{refused} in {kinds:?}\n{}",
                out.stderr()
            );
        }
        // After the fan-out's answers, at least one participant asked on their own.
        let fanned = agents.split(',').count();
        let first_answer = kinds.iter().position(|k| *k == "agent_result").unwrap();
        let later = kinds[first_answer + fanned..]
            .iter()
            .filter(|k| **k == "agent_result")
            .count();
        assert!(later >= 1, "{kinds:?}");
        if normal {
            assert_eq!(result["forced"], false, "{topic}: {}", out.stderr());
            assert!(work.read("first-run.md").contains("- Report kind: normal"));
        }
    }
}

/// A question the PM marks answered is asked of nobody after, in that reply or later: the demo
/// meeting's required questions each answered once (the council's too), the meeting closed by
/// the PM's FINISH.
#[test]
fn an_answered_question_is_not_asked_again() {
    let demo = crate::harness::root().join("meetings/demo.yaml");
    for extra in [&[][..], &["--council"][..]] {
        let work = Workdir::new();
        let out = work
            .cli("meeting")
            .env("AGENT_MEETING_NOW", NOW)
            .args([
                "--meeting-file",
                demo.to_str().unwrap(),
                "--agents",
                "arch,biz,sre",
            ])
            .args([
                "--provider",
                "sample",
                "--trace-id",
                "demo",
                "--report-file",
                "demo.md",
            ])
            .args(extra)
            .run();
        out.success();
        let board = crate::fixtures::run_folder::final_board(&work.join("runs/demo"));
        let text_of = |id: &Value| {
            board["record"]["questions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|q| &q["id"] == id)
                .map(|q| q["text"].as_str().unwrap().to_string())
                .unwrap()
        };
        let mut answered: Vec<String> = Vec::new();
        for line in jsonl(&work.join("runs/demo/llm.jsonl")) {
            if line["caller"] != "pm" {
                continue;
            }
            let reply: Value = serde_json::from_str(line["response"].as_str().unwrap()).unwrap();
            if let Some(marks) = reply["answered_questions"].as_array() {
                answered.extend(marks.iter().map(|m| text_of(&m["question"])));
            }
            let asked: Vec<&str> = reply["calls"]
                .as_array()
                .into_iter()
                .flatten()
                .chain([&reply])
                .filter_map(|c| c["prompt_for_agent"].as_str())
                .collect();
            for q in asked {
                assert!(
                    !answered.iter().any(|a| q.contains(a.as_str())),
                    "{extra:?}: {q:?} asked after it was answered\n{}",
                    out.stderr()
                );
            }
        }
        assert_eq!(answered.len(), 3, "{extra:?}: {answered:?}");
        assert_eq!(
            out.json::<Value>()["forced"],
            false,
            "{extra:?}: {}",
            out.stderr()
        );
    }
}

/// `--record` with no model to record (the sample, a replay) is said, not silently ignored:
/// exit 2 before the run folder is made, and no cassette.
#[test]
fn record_without_a_model_is_refused() {
    let work = Workdir::new();
    setup(&work);
    sample_meeting(&work, "arch,biz", &["--record", "rec.jsonl"])
        .run()
        .exit(2)
        .one_stderr_line()
        .stderr_has("--record rec.jsonl: --provider sample makes no model call to record");
    assert!(!work.join(RUN).exists() && !work.join("rec.jsonl").exists());
}

/// The same meeting twice, in two folders: the same report, byte for byte.
#[test]
fn the_same_meeting_gives_the_same_report() {
    let reports: Vec<String> = (0..2)
        .map(|_| {
            let work = Workdir::new();
            setup(&work);
            sample_meeting(&work, "arch,biz", &[]).run().success();
            work.read(REPORT)
        })
        .collect();
    assert_eq!(reports[0], reports[1]);
}

/// The sample answers from what the prompt is made of, not its words: prompt templates that
/// say everything differently (`AGENT_MEETING_PROMPTS`) give the same report.
#[test]
fn reworded_prompt_templates_change_no_sample_answer() {
    let reports: Vec<String> = [false, true]
        .into_iter()
        .map(|reworded| {
            let work = Workdir::new();
            setup(&work);
            let mut cmd = sample_meeting(&work, "arch,biz", &[]);
            if reworded {
                let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("share/prompts");
                for name in [
                    "meeting_brief.j2",
                    "whiteboard.j2",
                    "pm_user.j2",
                    "agent_user.j2",
                ] {
                    let text = std::fs::read_to_string(shipped.join(name)).unwrap();
                    let reworded = text
                        .replace("# Meeting: ", "Topic of the day — ")
                        .replace("Mode: normal. Remaining loops: ", "Loops still to go: ")
                        .replace("Latest: ", "Most recently, ")
                        .replace("# Question from the PM", "The PM asks:")
                        .replace("document_id \"", "id=\"")
                        .replace(":\n{% for", " —\n{% for");
                    assert_ne!(text, reworded, "{name} is reworded");
                    work.write(format!("prompts/{name}"), &reworded);
                }
                cmd.env("AGENT_MEETING_PROMPTS", work.join("prompts"));
            }
            cmd.run().success();
            // The appendix's token estimates follow the prompts' length; the answers do not.
            let report = work.read(REPORT);
            report[..report.find("## Appendix").unwrap()].to_string()
        })
        .collect();
    assert_eq!(reports[0], reports[1]);
}

/// With a person at the table, the PM asks them, and their answer (from `--human-answers`)
/// is the one used.
#[test]
fn a_person_at_the_table_is_asked_and_their_answer_used() {
    let work = Workdir::new();
    setup(&work);
    work.write("agents/pat.yaml", PAT);
    let answers = work.write(
        "answers.jsonl",
        "{\"response\": \"Pat says the rota hides double answers every Monday.\", \"key_points\": [\"Monday mornings produce most double answers\"], \"citations\": []}\n",
    );
    let out = sample_meeting(
        &work,
        "arch,biz,pat",
        &["--human-answers", answers.to_str().unwrap()],
    )
    .env(
        agent_meeting::stage::agent_turn::human::TTY_ENV,
        "/nonexistent/tty",
    )
    .env("EDITOR", "")
    .env("VISUAL", "")
    .run();
    out.success();
    let log = jsonl(&work.join(RUN).join("llm.jsonl"));
    let pat: Vec<&Value> = log.iter().filter(|l| l["caller"] == "pat").collect();
    assert!(!pat.is_empty(), "pat was never asked");
    assert_eq!(pat[0]["provider"], "human");
    let report = work.read(REPORT);
    assert!(
        report.contains("Monday mornings produce most double answers"),
        "{report}"
    );
    assert!(
        report.contains("Sample run: no model was called"),
        "{report}"
    );
}

/// The demo's cassette on another meeting: the error says what can help (a sample run, a
/// recording), and no resume hint follows, since resuming replays the same cassette.
#[test]
fn a_cassette_of_another_meeting_points_at_what_can_help() {
    let work = Workdir::new();
    setup(&work);
    let demo = crate::fixtures::demo_cassette();
    let out = work
        .cli("meeting")
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--meeting-file", "meeting.yaml", "--agents", "arch,biz"])
        .args(["--agents-dir", "agents", "--provider", "replay", "--quiet"])
        .arg("--cassette")
        .arg(&demo)
        .run();
    out.exit(1);
    out.stderr_has("--provider sample");
    out.stderr_has("--record FILE");
    out.stderr_lacks("meeting resume");
}

/// With `--review-by`, the sample's normal ending is reviewed: the reviewer is asked for its
/// verdict on the draft, as with a model.
#[test]
fn a_sample_draft_is_reviewed_when_reviewers_are_named() {
    let work = Workdir::new();
    setup(&work);
    sample_meeting(&work, "arch,biz", &["--review-by", "devils-advocate"])
        .run()
        .success();
    let log = jsonl(&work.join(RUN).join("llm.jsonl"));
    let callers: Vec<&str> = log.iter().filter_map(|l| l["caller"].as_str()).collect();
    assert!(
        callers.contains(&"devils-advocate"),
        "the reviewer was never asked: {callers:?}"
    );
    let report = work.read(REPORT);
    assert!(report.contains("- Report kind: normal"), "{report}");
    // The reviewer objects (the whiteboard's first risk or open question) and the PM answers
    // the objection in its review round (one review round by default).
    let board = crate::fixtures::final_board(&work.join(RUN));
    let objections = board["objections"]
        .as_array()
        .expect("objections on the board");
    assert_eq!(objections.len(), 1, "{objections:?}");
    assert_eq!(objections[0]["by"], "devils-advocate");
    assert_eq!(objections[0]["status"], "overruled", "{objections:?}");
    assert_eq!(callers.last(), Some(&"pm"), "the PM answered: {callers:?}");
    assert!(
        report.contains("The draft does not say how it deals with"),
        "{report}"
    );
}

/// The sample's good path on meeting files the suite uses nowhere else (a newcomer's first own
/// meeting file is like these): a required question no document answers is asked once, of the
/// participant whose role is closest to it, stays open saying so, and the PM closes the
/// meeting itself once everyone was heard — no loop limit, no question about a question — so
/// the reviewer sees the draft and the report has its Challenges.
#[test]
fn a_required_question_no_document_answers_is_asked_once_and_the_pm_closes() {
    /// A meeting file, its agents, and its documents (path, text).
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
    let cases: [Case; 3] = [
        (
            "topic: Move the nightly reports off the primary database?\ndecision_packet:\n  options: [Keep the primary and tune the jobs, Run the jobs on a read replica, Load the data into a warehouse]\n  required_questions:\n    - What does each option cost a month?\n    - Who operates it at night?\ncontext_sources:\n  - {type: file, path: docs/costs.md, purpose: Costs and timings}\n",
            "arch,biz,sre",
            &[("docs/costs.md", "# Costs\n\nA read replica costs about 900 USD a month in eu-west-1.\nThe warehouse option costs about 1,400 USD a month and needs the SQL rewritten.\n")],
        ),
        (
            "topic: Adopt Kotlin for the Android app?\ndecision_packet:\n  options: [Stay on Java, Move to Kotlin module by module]\n  required_questions:\n    - How long would training the team take?\n    - What does the legal team say about the licence?\n    - Which screens crash most today?\ncontext_sources:\n  - {type: file, path: notes/crashes.md, purpose: Crash reports}\n",
            "product,arch",
            &[("notes/crashes.md", "Crash reports, last 30 days.\nThe checkout screen crashes most: 61% of all crashes.\nThe login screen follows with 12%.\n")],
        ),
        (
            "topic: Should support move to a shared inbox tool?\ndecision_packet:\n  required_questions:\n    - Who pays for the licences?\n",
            "biz,security",
            &[],
        ),
    ];
    for (i, (meeting, agents, docs)) in cases.iter().enumerate() {
        let work = Workdir::new();
        work.write(".git/HEAD", "ref: refs/heads/main\n");
        work.write("meeting.yaml", meeting);
        for (path, text) in docs.iter() {
            work.write(path, text);
        }
        let out = work
            .cli("meeting")
            .env("AGENT_MEETING_NOW", NOW)
            .args(["--meeting-file", "meeting.yaml", "--agents", agents])
            .args(["--provider", "sample", "--trace-id", "t", "--quiet"])
            .args(["--review-by", "devils-advocate"])
            .run();
        out.check(out.code() == Some(0), &format!("case {i}"));
        let result: Value = out.json();
        assert_eq!(
            result["forced"], false,
            "case {i}: closed by the PM: {result}"
        );
        let report = std::fs::read_to_string(result["report_file"].as_str().unwrap()).unwrap();
        assert!(
            report.contains("## Challenges"),
            "case {i}: the reviewer saw the draft:\n{report}"
        );
        let log = jsonl(&work.join("runs/t/llm.jsonl"));
        let questions: Vec<String> = log
            .iter()
            .filter(|l| l["caller"] == "pm")
            .filter_map(|l| serde_json::from_str::<Value>(l["response"].as_str()?).ok())
            .flat_map(|d| {
                let mut q: Vec<String> = d["prompt_for_agent"]
                    .as_str()
                    .map(String::from)
                    .into_iter()
                    .collect();
                for c in d["calls"].as_array().into_iter().flatten() {
                    q.extend(c["prompt_for_agent"].as_str().map(String::from));
                }
                q
            })
            .collect();
        for q in &questions {
            assert!(
                !q.contains("need to measure to settle"),
                "case {i}: nested: {q}"
            );
        }
        // Each required question left open (no document answers it) was asked once at most:
        // not of every participant in turn.
        let open: Vec<&str> = report
            .lines()
            .filter(|l| l.starts_with("- **Q") && l.ends_with("— not answered"))
            .filter_map(|l| l.split_once("** ")?.1.strip_suffix(" — not answered"))
            .collect();
        assert!(
            !open.is_empty(),
            "case {i}: one stays open, saying so:\n{report}"
        );
        for q in open {
            let asked = questions.iter().filter(|o| o.ends_with(q)).count();
            assert!(
                asked <= 1,
                "case {i}: {q} asked {asked} times: {questions:?}"
            );
        }
    }
}
