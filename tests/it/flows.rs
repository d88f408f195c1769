//! The cookbook of flows in `share/flows/` (docs/design/flows.md): each flow script run with
//! `sh` over the built programs, answered from its cassette, its report compared with a golden
//! file; questions a flow puts on the board by hand in the report's diagram and the events;
//! render-report's bare board; the batch recipe under GNU parallel and the summary table.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::fixtures::NOW;
use crate::harness::{cli, golden, programs_path, root, skip_without, Cli, Run, Tool, Workdir};

/// `sh share/flows/<name>.sh ARGS...` with the programs on PATH, the clock and trace id pinned,
/// answered from `tests/flows/<cassette>.cassette.jsonl`.
fn flow(name: &str, cassette: &Path, args: &[&str]) -> Cli {
    let mut cmd = Cli::new(Command::new("sh"));
    cmd.arg(format!("share/flows/{name}.sh"))
        .args(args)
        .env("PATH", programs_path())
        .env("AGENT_MEETING_NOW", NOW)
        .env("AGENT_MEETING_PROVIDER", "replay")
        .env("MEETING_CASSETTE", cassette)
        .env("TRACE_ID", "flow-test");
    cmd
}

fn cassette(name: &str) -> PathBuf {
    root().join(format!("meetings/flows/{name}.cassette.jsonl"))
}

/// Run flow `name` on the demo meeting with arch and biz (`extra` after the agents), check it
/// finished, and compare its report with tests/golden/flows/<golden>.md.
fn run_flow(
    name: &str,
    golden_name: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (String, String) {
    let work = Workdir::new();
    let report = work.join("report.md");
    let events = work.join("events.jsonl");
    let mut args = vec!["meetings/demo.yaml", "arch,biz"];
    args.extend(extra);
    let report_arg = report.to_str().unwrap().to_string();
    args.push(&report_arg);
    let c = if name == "human-gate" {
        cassette_demo()
    } else {
        cassette(name)
    };
    let mut cmd = flow(name, &c, &args);
    cmd.env("EVENTS_OUT", &events);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.run();
    out.success();
    let line: Value = out.json();
    assert_eq!(line["status"], "finished", "{}", out.stderr());
    let text = work.read("report.md");
    golden(&format!("flows/{golden_name}.md"), &text);
    (text, work.read("events.jsonl"))
}

fn cassette_demo() -> PathBuf {
    root().join("meetings/demo.cassette.jsonl")
}

fn events_of(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// ask-all: the hand-written fan-out asks both at once; the flow's questions are drawn in the
/// diagram as the PM's are (a `par` block) and logged as `flow_call` events from `flow`.
#[test]
fn ask_all_asks_every_participant_at_once() {
    if skip_without(Tool::Jq) {
        return;
    }
    let q = "What is the main risk of each option?";
    let (report, events) = run_flow("ask-all", "ask-all", &[q], &[]);
    for line in [
        "    par L1-L2 at once",
        "        PM->>arch: L1 What is the main risk of each option?",
        "        PM->>biz: L2 What is the main risk of each option?",
    ] {
        assert!(report.lines().any(|l| l == line), "{line:?} in:\n{report}");
    }
    let asks: Vec<Value> = events_of(&events)
        .into_iter()
        .filter(|e| e["type"] == "flow_call")
        .collect();
    assert_eq!(asks.len(), 2, "{events}");
    for (e, (agent, l)) in asks.iter().zip([("arch", 1), ("biz", 2)]) {
        assert_eq!(
            (&e["from"], &e["to"], &e["kind"], &e["message"], &e["loop"]),
            (
                &"flow".into(),
                &agent.into(),
                &"task".into(),
                &q.into(),
                &l.into()
            )
        );
    }
}

#[test]
fn pipeline_gives_each_agent_the_previous_answer() {
    if skip_without(Tool::Jq) {
        return;
    }
    let (_, events) = run_flow(
        "pipeline",
        "pipeline",
        &["What is the main risk of each option?"],
        &[],
    );
    let asks: Vec<Value> = events_of(&events)
        .into_iter()
        .filter(|e| e["type"] == "flow_call")
        .collect();
    assert_eq!(asks.len(), 2);
    let second = asks[1]["message"].as_str().unwrap();
    assert!(
        second.contains("arch answered before you: A dedicated replica removes the contention"),
        "{second}"
    );
}

#[test]
fn debate_alternates_for_the_rounds_then_the_pm_decides() {
    if skip_without(Tool::Jq) {
        return;
    }
    let (_, events) = run_flow(
        "debate",
        "debate",
        &["Replica or warehouse?"],
        &[("ROUNDS", "2")],
    );
    let evs = events_of(&events);
    let asked: Vec<&str> = evs
        .iter()
        .filter(|e| e["type"] == "flow_call")
        .map(|e| e["to"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["arch", "biz", "arch", "biz"]);
    assert!(evs
        .iter()
        .any(|e| e["type"] == "pm_decision" && e["message"] == "FINISH"));
}

/// human-gate: a person's edit (a non-interactive $EDITOR) changes the decision, and the
/// report's Process Note says what they changed.
#[test]
fn human_gate_lets_a_person_edit_the_decision_and_says_so() {
    if skip_without(Tool::Jq) {
        return;
    }
    let editor = format!(
        "sh {}",
        root().join("tests/flows/lower-confidence.sh").display()
    );
    let (report, _) = run_flow("human-gate", "human-gate", &[], &[("EDITOR", &editor)]);
    assert!(report.contains("(confidence: low)"), "{report}");
    assert!(report.contains(
        "- Loop 3: A person edited the decision before the report: confidence was \"medium\", now \"low\"."
    ));
}

/// GATE_JQ edits without a terminal; an edit that leaves the decision as it was is said too;
/// an edit that breaks the decision stops the flow (exit 2) before the report.
#[test]
fn human_gate_by_jq_and_a_broken_edit() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let report = work.join("r.md");
    let run = |filter: &str| {
        flow(
            "human-gate",
            &cassette_demo(),
            &["meetings/demo.yaml", "arch,biz"],
        )
        .arg(&report)
        .env("GATE_JQ", filter)
        .run()
    };
    run(".").success();
    assert!(work.read("r.md").contains(
        "A person reviewed the decision before the report and left it as the PM made it."
    ));
    let out = run(".confidence = \"sure\"");
    out.exit(2)
        .stderr_has("human-gate.sh: ")
        .stderr_has("expected a decision");
}

/// human-gate with no GATE_JQ, no editor and no terminal waits for its person (exit 4), the
/// board and the decision kept beside the report; run again with them (the decision edited),
/// it goes on from the gate without a call.
#[test]
fn human_gate_waits_for_its_person_and_goes_on_from_the_gate() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let report = work.join("r.md");
    let gate = || {
        let mut cmd = flow(
            "human-gate",
            &cassette_demo(),
            &["meetings/demo.yaml", "arch,biz"],
        );
        cmd.arg(&report).env("EDITOR", "").env("VISUAL", "");
        cmd
    };
    let out = gate().run();
    out.exit(4)
        .stderr_has("human-gate.sh: waiting for a person to review the decision");
    let line: Value = out.json();
    assert_eq!(line["status"], "waiting");
    assert!(!report.exists());
    let decision = work.join("r.gate-decision.json");
    let mut d: Value = serde_json::from_str(&work.read("r.gate-decision.json")).unwrap();
    d["confidence"] = Value::from("low");
    std::fs::write(&decision, d.to_string()).unwrap();
    // No cassette: the meeting's calls are not made again.
    let out = gate()
        .env("MEETING_CASSETTE", "/nonexistent/cassette.jsonl")
        .env("GATE_BOARD", work.join("r.gate-board.json"))
        .env("GATE_DECISION", &decision)
        .run();
    out.success();
    assert!(work.read("r.md").contains(
        "A person edited the decision before the report: confidence was \"medium\", now \"low\"."
    ));
}

/// review: the reviewers (sre, a non-participant, and the built-in devil's advocate) read the
/// PM's draft at once; sre's objection revises the decision (the lag gate, confidence high to
/// medium) and the devil's advocate's is overruled with a reason. The flow shows each step of
/// the review on stderr as it happens, and the report's Challenges section keeps both.
#[test]
fn review_shows_the_objections_as_they_come_and_the_report_keeps_them() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let report = work.join("report.md");
    let out = flow(
        "review",
        &cassette("review"),
        &["meetings/demo.yaml", "arch,biz", "sre,devils-advocate"],
    )
    .arg(&report)
    .run();
    out.success();
    let line: Value = out.json();
    assert_eq!(line["status"], "finished", "{}", out.stderr());
    assert_eq!(line["usage"]["calls"], 8, "{line}");
    let text = work.read("report.md");
    golden("flows/review.md", &text);
    let challenges = text
        .split("## Challenges\n\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no Challenges section in:\n{text}"));
    let lines: Vec<&str> = challenges.lines().collect();
    assert_eq!(lines.len(), 2, "{challenges}");
    assert!(
        lines[0].starts_with("- **O1** raised by sre (review round 1) about the decision's confidence:")
            && lines[0].contains("— decision revised by the PM: The run now starts only when replica lag is below 60 seconds"),
        "{challenges}"
    );
    assert!(
        lines[1].starts_with("- **O2** raised by devils-advocate (review round 1) about the managed warehouse option:")
            && lines[1].contains("— overruled by the PM: The warehouse needs 6 jobs rewritten"),
        "{challenges}"
    );
    assert!(text.contains(
        "**Decision:** Move the nightly run to a dedicated read replica, starting with a two-week trial of the smaller db.r6g.xlarge, its start gated on replica lag below 60 seconds (confidence: medium)."
    ), "{text}");
    // What the flow printed, in the order it happened: the draft, the verdicts, the
    // objections filed, their resolutions, the revised decision.
    let err = out.stderr();
    let review: Vec<&str> = err
        .lines()
        .filter(|l| !l.contains(": loop "))
        .map(|l| l.split_once(": ").map_or(l, |(head, _)| head))
        .collect();
    assert_eq!(
        review,
        [
            "review round 1, the draft",
            "sre",
            "devils-advocate",
            "  O1 by sre, about the decision's confidence",
            "  O2 by devils-advocate, about the managed warehouse option",
            "  O1 revised",
            "  O2 overruled",
            "the decision now",
        ],
        "{err}"
    );
    assert!(err.contains("review round 1, the draft: Move the nightly run to a dedicated read replica, starting with a two-week trial of the smaller db.r6g.xlarge (confidence: high)\n"), "{err}");
    assert!(
        err.contains("\nsre: object\ndevils-advocate: object\n"),
        "{err}"
    );
}

/// `render-report --board` prints the ReportResult's board, the document the stages and
/// next-stage read; with --markdown it is a usage error.
#[test]
fn render_report_prints_the_bare_board() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let board = work.join("board.json");
    flow(
        "human-gate",
        &cassette_demo(),
        &["meetings/demo.yaml", "arch,biz"],
    )
    .arg(work.join("r.md"))
    .env("GATE_JQ", ".")
    .env("BOARD_OUT", &board)
    .run()
    .success();
    let finished = std::fs::read(&board).unwrap();
    let wrapped: Value = cli("render-report")
        .stdin(finished.clone())
        .run()
        .success()
        .json();
    let bare = cli("render-report")
        .arg("--board")
        .stdin(finished.clone())
        .run();
    bare.success();
    assert_eq!(bare.json::<Value>(), wrapped["board"]);
    cli("next-stage")
        .stdin(bare.stdout())
        .run()
        .success()
        .stdout_is("none\n");
    cli("render-report")
        .args(["--board", "--markdown"])
        .stdin(finished)
        .run()
        .exit(2);
}

/// `share/flows/batch.sh` with `parallel` on PATH (CI installs GNU parallel, .ci/run).
fn batch(work: &Path, input: &Path, flags: &[&str]) -> Run {
    let mut cmd = Cli::new(Command::new("sh"));
    cmd.arg("share/flows/batch.sh")
        .arg(input)
        .arg(work.join("out"))
        .args(flags)
        .env("PATH", programs_path())
        .env("AGENT_MEETING_NOW", NOW)
        .env("MEETING_CASSETTE", cassette("batch"))
        .env("JOBS", "4")
        .run()
}

/// 20 replayed meetings, 4 at a time: each its own run folder, report and result; a meeting
/// that failed (its cassette missing) is run again by the second call (--resume-failed) and
/// the others are not; the summary lists all 20.
#[test]
fn batch_runs_twenty_meetings_under_gnu_parallel_and_resumes_the_failed() {
    if skip_without(Tool::GnuParallel) || skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let late = work.join("late.jsonl");
    let lines: String = (1..=20)
        .map(|i| {
            let mut v = serde_json::json!({"topic": format!("Adopt change number {i}?"), "name": format!("m{i:02}")});
            if i == 7 {
                v["cassette"] = late.to_str().unwrap().into();
            }
            format!("{v}\n")
        })
        .collect();
    let input = work.write("topics.jsonl", lines);
    let flags = ["--agents", "arch", "--provider", "replay"];
    batch(work.path(), &input, &flags)
        .exit(1)
        .stderr_has("batch.sh: 1 of 20 meetings did not end well");
    let out = work.join("out");
    let results = |dir: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(out.join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(results("results").len(), 19);
    assert!(!results("results").contains(&"m07.json".to_string()));
    std::fs::copy(cassette("batch"), &late).unwrap();
    // Success says so too, and where everything went.
    batch(work.path(), &input, &flags)
        .success()
        .stderr_has("batch.sh: 20 meetings ended well; reports in ");
    let names: Vec<String> = (1..=20).map(|i| format!("m{i:02}")).collect();
    assert_eq!(
        results("results"),
        names
            .iter()
            .map(|n| format!("{n}.json"))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        results("reports"),
        names.iter().map(|n| format!("{n}.md")).collect::<Vec<_>>()
    );
    assert_eq!(results("runs"), names);
    for n in &names {
        let r: Value = serde_json::from_str(&work.read(format!("out/results/{n}.json"))).unwrap();
        assert_eq!(
            (r["status"].as_str(), r["trace_id"].as_str()),
            (Some("finished"), Some(n.as_str()))
        );
    }
    // The joblog: 20 first runs, and the failed one's second run only.
    let log = work.read("out/joblog");
    assert_eq!(log.lines().count(), 1 + 20 + 1, "{log}");
    // The summary table of all run folders.
    let mut cmd = Cli::new(Command::new("sh"));
    cmd.arg("share/flows/summary.sh")
        .env("PATH", programs_path());
    for n in &names {
        cmd.arg(out.join("runs").join(n));
    }
    let table = cmd.run();
    table.success();
    assert_eq!(table.stdout().lines().count(), 2 + 20, "{}", table.stdout());
    for n in &names {
        table.stdout_has(&format!(
            "| {n} | finished | normal | Go ahead with a two-week trial on one service | medium | 1 | 3 | 10670 | - |"
        ));
    }
}

/// A work folder with `meetings/alpha.yaml`, `beta.yaml` and `gamma.yaml`.
fn three_meeting_files() -> Workdir {
    let work = Workdir::new();
    for n in ["alpha", "beta", "gamma"] {
        work.write(
            format!("meetings/{n}.yaml"),
            format!("topic: Adopt {n}?\ndecision_packet:\n  decision_to_make: Adopt {n}?\n"),
        );
    }
    work
}

/// A folder of meeting files: each meeting named after its file.
#[test]
fn batch_runs_a_folder_of_meeting_files() {
    if skip_without(Tool::GnuParallel) || skip_without(Tool::Jq) {
        return;
    }
    let work = three_meeting_files();
    batch(
        work.path(),
        &work.join("meetings"),
        &["--agents", "arch", "--provider", "replay"],
    )
    .success();
    for n in ["alpha", "beta", "gamma"] {
        let r: Value = serde_json::from_str(&work.read(format!("out/results/{n}.json"))).unwrap();
        assert_eq!(r["status"], "finished");
        assert!(work.join(format!("out/reports/{n}.md")).is_file());
    }
}

/// The scheduler's side of a batch (docs/design/scale.md): `BATCH_PREPARE=1` writes the job
/// list, prints how many meetings it holds and runs none; the Slurm array script runs its
/// task's meeting only, and run again (a requeue) resumes it without asking anything twice.
#[test]
fn a_prepared_batch_runs_one_meeting_per_slurm_task_and_a_requeue_resumes_it() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = three_meeting_files();
    let out = Cli::new(Command::new("sh"))
        .arg("share/flows/batch.sh")
        .arg(work.join("meetings"))
        .arg(work.join("out"))
        .env("BATCH_PREPARE", "1")
        .env("PATH", programs_path())
        .run();
    out.success();
    assert_eq!(out.stdout().trim(), "3");
    assert_eq!(work.read("out/jobs.jsonl").lines().count(), 3);
    assert!(
        !work.join("out/runs/alpha").exists(),
        "prepare runs nothing"
    );
    let task = || {
        Cli::new(Command::new("sh"))
            .arg("share/flows/slurm-array.sbatch")
            .arg(work.join("out"))
            .args(["--agents", "arch", "--provider", "replay"])
            .env("SLURM_ARRAY_TASK_ID", "2")
            .env("AGENT_MEETING_FLOWS", root().join("share/flows"))
            .env("PATH", programs_path())
            .env("AGENT_MEETING_NOW", NOW)
            .env("MEETING_CASSETTE", cassette("batch"))
            .run()
    };
    task().success();
    let r: Value = serde_json::from_str(&work.read("out/results/beta.json")).unwrap();
    assert_eq!(r["status"], "finished");
    assert!(!work.join("out/runs/alpha").exists() && !work.join("out/runs/gamma").exists());
    let calls = work.read("out/runs/beta/llm.jsonl").lines().count();
    task().success();
    assert_eq!(
        work.read("out/runs/beta/llm.jsonl").lines().count(),
        calls,
        "the requeued task asked nothing again"
    );
    let again: Value = serde_json::from_str(&work.read("out/results/beta.json")).unwrap();
    assert_eq!(again["status"], "finished");
}

/// Rate limits across concurrent meetings: 20 meetings, 4 at a time, against one fake OpenAI
/// server that refuses the first attempt of every other call with a 429 (`Retry-After: 0`).
/// No meeting fails for a 429 its retry passed, the server never had more than 4 meetings'
/// calls in flight, and it saw each call once plus once per 429: within meetings × calls ×
/// attempts.
#[test]
fn batch_meetings_ride_out_rate_limits() {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use crate::fake_http::{json as http, openai_ok, with_header, FakeServer};
    if skip_without(Tool::GnuParallel) || skip_without(Tool::Jq) {
        return;
    }
    let replies: Vec<String> = std::fs::read_to_string(cassette("batch"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["response"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let (ask, answer, finish) = (replies[0].clone(), replies[1].clone(), replies[2].clone());
    let refused: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    let seen = AtomicUsize::new(0);
    let refusals = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = refusals.clone();
    let server = FakeServer::answering(move |req| {
        let body = req.body.as_str();
        let mut refused = refused.lock().unwrap();
        // Each call refused at most once: its retry (the same request) passes.
        if !refused.contains(body) && seen.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
            refused.insert(body.to_string());
            counted.fetch_add(1, Ordering::SeqCst);
            return with_header(
                429,
                "retry-after",
                "0",
                r#"{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}"#,
            );
        }
        let content = if !body.contains("pm_decision") {
            &answer
        } else if body.contains("two-week trial on one service") {
            &finish
        } else {
            &ask
        };
        http(200, &openai_ok(content, Some((100, 10))))
    });
    let work = Workdir::new();
    let lines: String = (1..=20)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({"topic": format!("Adopt change number {i}?")})
            )
        })
        .collect();
    let input = work.write("topics.jsonl", lines);
    let mut cmd = Cli::new(Command::new("sh"));
    cmd.arg("share/flows/batch.sh")
        .arg(&input)
        .arg(work.join("out"))
        .args([
            "--agents",
            "arch",
            "--provider",
            "openai",
            "--max-attempts",
            "3",
        ])
        .env("PATH", programs_path())
        .env("AGENT_MEETING_NOW", NOW)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "test-key")
        .env("JOBS", "4");
    let out = cmd.run();
    out.success();
    for i in 1..=20 {
        let r: Value = serde_json::from_str(&work.read(format!("out/results/{i}.json"))).unwrap();
        assert_eq!(r["status"], "finished", "meeting {i}: {r}");
        assert!(
            r["usage"]["calls"].as_u64().unwrap() >= 3,
            "meeting {i}: {r}"
        );
    }
    let (meetings, calls, attempts) = (20, 3, 3);
    let count = server.count();
    let refusals = refusals.load(Ordering::SeqCst);
    assert_eq!(
        count,
        meetings * calls + refusals,
        "each call answered once"
    );
    assert!(refusals >= 20, "every other call refused once: {refusals}");
    assert!(count <= meetings * calls * attempts, "{count} requests");
    assert!(
        server.max_in_flight() <= 4,
        "{} in flight",
        server.max_in_flight()
    );
}

/// A batch line carries the meeting's options beside its topic (`meeting --options`, the one
/// type every surface takes): the panel, the loop limit, a budget reach its meeting, under the
/// flags given to every meeting.
#[test]
fn a_batch_lines_options_reach_its_meeting() {
    if skip_without(Tool::GnuParallel) || skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let line = serde_json::json!({"topic": "Adopt change number 1?", "name": "m1",
        "agents": ["arch"], "max_loops": 3, "max_total_tokens": 300000});
    let input = work.write("topics.jsonl", format!("{line}\n"));
    batch(
        work.path(),
        &input,
        &["--provider", "replay", "--max-loops", "4"],
    )
    .success();
    let saved: Value = serde_json::from_str(&work.read("out/runs/m1/meeting.json")).unwrap();
    let board = &saved["board"];
    assert_eq!(board["agents"], serde_json::json!(["arch"]), "{saved}");
    assert_eq!(board["max_total_tokens"], 300000, "{saved}");
    assert_eq!(board["max_loops"], 4, "the flag wins: {saved}");
}
