//! The `meeting` driver end to end on the offline demo (docs/design/run-folder.md#run-folder): the report, the
//! run folder, the shell loop giving the same result, kill and resume, stage overrides, and
//! bad input leaving no run folder behind.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixtures::{
    demo_cassette, file_names, final_board, meeting_cmd, resume_cmd, run_events,
};
use crate::fixtures::{shell_loop, slow_demo_cassette, without_timings, Cassette, NOW};
use crate::harness::{bin_dir, cli, every_case, par_map, root, wait_for, Workdir};
use crate::harness::{skip_without, Tool};

#[test]
fn demo_meeting_runs_offline_and_writes_a_complete_report() {
    let work = Workdir::new();
    let out = meeting_cmd(work.path(), &demo_cassette(), &[]).run();
    out.exit(0);
    let result: Value = out.json();
    assert_eq!(result["status"], "finished");
    assert_eq!(result["loops"], 3);
    assert_eq!(result["forced"], false);
    assert_eq!(result["usage"]["calls"], 8);
    let report = work.read("report.md");
    for section in [
        "# Meeting Report",
        "## Topic",
        "## Executive Summary",
        "## Key Findings",
        "## Risks",
        "## Open Questions",
        "## Recommendation",
        "## Evidence Reviewed",
        "## Appendix",
        "sequenceDiagram",
    ] {
        assert!(report.contains(section), "missing {section}");
    }
    for doc in [
        "meetings/demo/overview.md",
        "meetings/demo/docs/costs.md",
        "meetings/demo/docs/incidents.md",
        "meetings/demo/docs/team.md",
    ] {
        assert!(report.contains(&format!("### {doc}")), "evidence for {doc}");
    }
    // biz's first answer cited a document that was not collected: the reader is told, in
    // plain words (docs/design/report.md#report).
    assert!(
        report.contains("cited a document that was not collected, meetings/demo/docs/pricing.md); it was asked again."),
        "{report}"
    );
    // The run folder: the packet, the first board and the last loop's boards, the events,
    // the exchange log (docs/design/run-folder.md#run-folder).
    let run_dir = work.join("runs/demo-test");
    assert_eq!(
        file_names(&run_dir),
        [
            "0001-collect-context.out.json",
            "0002-init-board.out.json",
            "0011-merge-board.out.json",
            "0012-pm-step.out.json",
            "0013-render-report.out.json",
            "events.jsonl",
            "llm.jsonl",
            "meeting.json",
        ]
    );
    let board = final_board(&run_dir);
    assert_eq!(board["status"], "finished");
    let events = std::fs::read_to_string(run_dir.join("events.jsonl")).unwrap();
    assert_eq!(
        run_events(&run_dir).len() as u64,
        board["event_count"].as_u64().unwrap()
    );
    assert!(
        events.contains("\"type\":\"agent_retry\""),
        "the demo has one agent retry"
    );
    let llm = std::fs::read_to_string(run_dir.join("llm.jsonl")).unwrap();
    assert_eq!(llm.lines().count(), 8, "one exchange line per call");
    // Progress on stderr, plain without a terminal.
    let err = out.stderr();
    assert!(err.contains("[loop 1/6] pm → arch: "), "{err}");
    assert!(
        err.contains("[loop 2/6] biz: 4 key points, 2 risks, 6 citations"),
        "{err}"
    );
    assert!(!err.contains('\x1b'), "no colour when not a terminal");
    assert!(
        err.lines()
            .last()
            .unwrap()
            .starts_with("finished: 3 loops, 8 LLM calls"),
        "{err}"
    );
}

#[test]
fn quiet_is_silent_and_forced_demo_has_a_process_note() {
    let work = Workdir::new();
    let out = meeting_cmd(
        work.path(),
        &root().join("meetings/demo-forced.cassette.jsonl"),
        &["--max-loops", "2", "--quiet"],
    )
    .run();
    out.exit(0);
    assert!(out.output.stderr.is_empty(), "--quiet: {}", out.stderr());
    let result: Value = out.json();
    assert_eq!(
        (result["loops"].as_u64(), result["forced"].as_bool()),
        (Some(2), Some(true))
    );
    let report = work.read("report.md");
    assert!(report.contains("## Process Note\n\nMeeting stopped after reaching max loop limit (2/2) before full convergence."), "{report}");
    // A stage's warning (here a prompt that drifted from the recorded one) is held back by
    // --quiet and shown without it, as a stage program's stderr was.
    let drifted = work.join("drifted.jsonl");
    Cassette::demo()
        .edit(1, |l| l["request_sha256"] = "0".repeat(64).into())
        .write(&drifted);
    for (quiet, shown) in [(true, false), (false, true)] {
        let work = Workdir::new();
        let extra: &[&str] = if quiet { &["--quiet"] } else { &[] };
        let out = meeting_cmd(work.path(), &drifted, extra).run();
        out.exit(0);
        assert_eq!(
            out.stderr()
                .contains("replay: warning: request drift at call 1"),
            shown,
            "--quiet {quiet}: {}",
            out.stderr()
        );
    }
}

#[test]
fn shell_loop_gives_the_same_board_and_report() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"]).run();
    out.exit(0);
    let want_board = without_timings(final_board(&work.join("runs/demo-test")));
    let want_report = work.read("report.md");

    let sh_report = work.join("sh-report.md");
    let sh_board = work.join("sh-board.json");
    let out = shell_loop(&demo_cassette(), &sh_report)
        .env("BOARD_OUT", &sh_board)
        .run();
    out.check(
        out.code() == Some(0),
        "the shell loop failed (jq must be installed: .ci/run installs it)",
    );
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&sh_board).unwrap()).unwrap();
    // The driver's own report path differs; everything else is the same meeting.
    let mut got = without_timings(got);
    let mut want = want_board;
    assert_eq!(got["status"], "finished");
    for b in [&mut got, &mut want] {
        b.as_object_mut().unwrap().remove("report_file");
    }
    assert_eq!(got, want, "shell loop and meeting disagree");
    assert_eq!(std::fs::read_to_string(&sh_report).unwrap(), want_report);
}

/// The repository's own PM config offers a fan-out like the built-in PM: `--max-parallel`
/// reaches the schema sent, bounded by the participants who can answer at once.
#[test]
fn the_shipped_pm_config_offers_call_agents() {
    let work = Workdir::new();
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--max-parallel", "3"],
    )
    .run();
    out.exit(0);
    let log = std::fs::read_to_string(work.join("runs/demo-test/llm.jsonl")).unwrap();
    let first: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(first["caller"], "pm");
    let p = &first["schema"]["schema"]["properties"];
    assert_eq!(
        p["next_action"]["enum"],
        serde_json::json!(["CALL_AGENT", "CALL_AGENTS"]),
        "no FINISH before anyone has been asked"
    );
    assert_eq!(p["calls"]["anyOf"][0]["maxItems"], 2, "arch and biz");
}

/// A failed PM round is not the end of the meeting (docs/design/pm-round.md#failed-rounds):
/// the next round asks the PM again, with the error in its prompt, and the meeting goes on to
/// the PM's decision. The driver and the shell loop agree, since the next stage is a function
/// of the board alone.
#[test]
fn a_failed_pm_round_is_asked_again_in_the_next_round() {
    let work = Workdir::new();
    let cassette = Cassette::new()
        .no_usage()
        .text("pm", "not json")
        .text("pm", "not json")
        .then(Cassette::demo())
        .write(work.join("failed-first.jsonl"));
    let out = meeting_cmd(work.path(), &cassette, &[]).run();
    out.exit(0);
    out.stderr_has("pm: round failed (PM output was not valid JSON")
        .stderr_has("; the PM is asked again")
        .stderr_lacks("closing the meeting");
    let run_dir = work.join("runs/demo-test");
    let board = final_board(&run_dir);
    assert_eq!(board["status"], "finished");
    assert!(board["record"]["decision"].is_object(), "the PM's decision");
    assert_eq!(
        board["record"].get("failed_rounds"),
        None,
        "reset by the next round"
    );
    let events = run_events(&run_dir);
    let count = |ty: &str| events.iter().filter(|e| e["type"] == ty).count();
    assert_eq!((count("pm_round_failed"), count("forced_finish")), (1, 0));
    let report = work.read("report.md");
    assert!(
        report.contains("The PM's round failed: its answer was unusable (it was not valid JSON), also when asked again; it was asked again in the next round."),
        "{report}"
    );
    assert!(!report.contains("closed early"), "{report}");
    if skip_without(Tool::Jq) {
        return;
    }

    let sh_report = work.join("sh-report.md");
    let out = shell_loop(&cassette, &sh_report).run();
    out.exit(0);
    assert_eq!(std::fs::read_to_string(&sh_report).unwrap(), report);
}

/// The numbered step files of a run folder (`0004-agent-turn.out.json`, ...).
fn steps(run_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.as_bytes()[0].is_ascii_digit())
        .collect();
    names.sort();
    names
}

/// Start the demo with slow replies in `work`, kill it (SIGKILL) once `trigger` appears in
/// the run folder (plus `after`), and return the step files the kill left behind. A kill that
/// lands after the meeting ended would test nothing, so this checks that it landed mid-meeting:
/// the process was still running just before the kill and died of SIGKILL, and no report
/// existed yet. `Err` says how the kill missed.
fn kill_at(work: &Workdir, trigger: &str, after: Duration) -> Result<Vec<String>, String> {
    use std::os::unix::process::ExitStatusExt;

    // The same cassette, with every reply taking 150 ms, so kills land inside LLM calls too.
    let slow = slow_demo_cassette(work.path(), 150);
    let run_dir = work.join("runs/demo-test");
    let mut child = meeting_cmd(work.path(), &slow, &["--quiet"]).spawn();
    let start = Instant::now();
    while !run_dir.join(trigger).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{trigger} never appeared"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the meeting ended ({status}) before {trigger} appeared");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(after);
    if let Some(status) = child.try_wait().unwrap() {
        return Err(format!("the meeting had already ended ({status})"));
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    if status.signal() != Some(libc::SIGKILL) {
        return Err(format!("the meeting ended by itself ({status})"));
    }
    // The folder as the kill left it: the meeting must not be over yet.
    let at_kill = steps(&run_dir);
    if at_kill
        .iter()
        .any(|n| n.ends_with("-render-report.out.json"))
        || work.join("report.md").exists()
    {
        return Err(format!("the report was already there: {at_kill:?}"));
    }
    Ok(at_kill)
}

/// Kill the demo at `trigger` (see `kill_at`), then resume until done; the final board, report
/// and the seq of every LLM call in the exchange log.
fn kill_then_resume(trigger: &str, after: Duration) -> (Value, String, Vec<u64>) {
    // On a loaded machine the poll can wake after the meeting moved past a late trigger (the
    // last steps take milliseconds); such a try proves nothing, so it is made again.
    const TRIES: usize = 3;
    for attempt in 1..=TRIES {
        let work = Workdir::new();
        let at_kill = match kill_at(&work, trigger, after) {
            Ok(at_kill) => at_kill,
            Err(why) if attempt < TRIES => {
                eprintln!("kill at {trigger} missed ({why}); trying again");
                continue;
            }
            Err(why) => panic!("the kill at {trigger} missed {TRIES} times: {why}"),
        };
        let run_dir = work.join("runs/demo-test");
        let out = resume_cmd(&root(), &run_dir).run();
        out.check(out.code() == Some(0), &format!("resume after {trigger}"));
        // The resumed run did the remaining work, the report included.
        let resumed = steps(&run_dir);
        let new: Vec<&String> = resumed.iter().filter(|n| !at_kill.contains(n)).collect();
        assert!(
            new.iter().any(|n| n.ends_with("-render-report.out.json")),
            "resume after {trigger} wrote no report step; new files: {new:?}"
        );
        let board = without_timings(final_board(&run_dir));
        let report = work.read("report.md");
        let seqs: Vec<u64> = std::fs::read_to_string(run_dir.join("llm.jsonl"))
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| v["seq"].as_u64().unwrap())
            .collect();
        return (board, report, seqs);
    }
    unreachable!()
}

#[test]
fn a_killed_meeting_resumes_to_the_same_board_and_report() {
    let work = Workdir::new();
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"]).run();
    out.exit(0);
    let want_board = without_timings(final_board(&work.join("runs/demo-test")));
    let want_report = work.read("report.md");
    let points = [
        // During an LLM call: the stage started and its 150 ms reply is pending.
        ("0003-pm-step.out.json", Duration::from_millis(60)),
        ("0008-merge-board.out.json", Duration::from_millis(10)),
        // Between stages / while the next checkpoint is being written.
        ("0005-merge-board.out.json", Duration::ZERO),
        ("0006-pm-step.out.json", Duration::ZERO),
        // Right after the meeting started, and just before the report.
        ("0002-init-board.out.json", Duration::ZERO),
        ("0012-pm-step.out.json", Duration::ZERO),
    ];
    // Each kill point is its own meeting, mostly waiting on slow replies: run them side by side.
    let runs = par_map(&points, 3, |(trigger, after)| {
        kill_then_resume(trigger, *after)
    });
    for ((trigger, _), (board, report, seqs)) in points.iter().zip(runs) {
        assert_eq!(board, want_board, "final board after a kill at {trigger}");
        assert_eq!(report, want_report, "report after a kill at {trigger}");
        let mut sorted = seqs.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            (1..=8).collect::<Vec<u64>>(),
            "every call made exactly once (kill at {trigger}): {seqs:?}"
        );
    }
}

#[test]
fn resume_ignores_a_half_written_checkpoint() {
    let work = Workdir::new();
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"]).run();
    out.exit(0);
    let run_dir = work.join("runs/demo-test");
    let want = without_timings(final_board(&run_dir));
    // Simulate a kill mid-write: drop everything after step 6 and leave a temp file behind.
    for e in std::fs::read_dir(&run_dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.as_bytes()[0].is_ascii_digit() && name[..4].parse::<u32>().unwrap() > 6 {
            std::fs::remove_file(&p).unwrap();
        }
    }
    std::fs::write(
        run_dir.join(".0007-agent-turn.out.json.tmp123"),
        "{\"board_ver",
    )
    .unwrap();
    let out = resume_cmd(&root(), &run_dir).run();
    out.exit(0);
    assert_eq!(without_timings(final_board(&run_dir)), want);
}

#[test]
fn a_stage_can_be_replaced_by_a_users_command() {
    let work = Workdir::new();
    let seen = work.join("seen");
    let user = format!(
        "touch {}; {}",
        seen.display(),
        bin_dir().join("merge-board").display()
    );
    let stage = format!("merge-board={user}");
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", &stage],
    )
    .run();
    out.exit(0);
    assert!(seen.exists(), "the user's command ran");
    // A user stage that fails stops the meeting with its message; the run folder stays.
    let work = Workdir::new();
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &[
            "--quiet",
            "--stage",
            "agent-turn=echo 'my-turn: model offline' >&2; exit 1",
        ],
    )
    .run();
    out.exit(1);
    // The error, then how to go on (docs/design/run-folder.md#resume).
    assert_eq!(
        out.stderr().trim(),
        format!(
            "meeting: stage agent-turn failed (exit 1): my-turn: model offline\n\
             stopped: continue with  meeting resume {}",
            work.join("runs/demo-test").display()
        )
    );
    // Its input, the board to go on from, is the last output.
    assert!(work
        .path()
        .join("runs/demo-test/0003-pm-step.out.json")
        .is_file());
}

#[test]
fn bad_input_exits_2_with_one_line_and_no_run_folder() {
    let cases: [(&[&str], &str); 5] = [
        (&["--pm", "nobody"], "--pm: no nobody.yaml"),
        (&["--agents", "nosuch"], "unknown agent \"nosuch\""),
        (&["--topic", "x"], "cannot be used with"),
        (&["--stage", "nope=cat"], "unknown stage \"nope\""),
        (&["--trace-id", "../x"], "--trace-id"),
    ];
    every_case(
        cases,
        |(extra, _)| format!("{extra:?}"),
        |(extra, want)| {
            let work = Workdir::new();
            let mut cmd = meeting_cmd(work.path(), &demo_cassette(), &[]);
            cmd.args(extra);
            let out = cmd.run();
            let err = out.stderr();
            out.check(
                out.code() == Some(2),
                &format!("{extra:?}: expected exit 2"),
            );
            assert_eq!(err.trim().lines().count(), 1, "{extra:?}: {err}");
            assert!(
                err.starts_with("meeting: ") && err.contains(want),
                "{extra:?}: {err}"
            );
            assert!(out.output.stdout.is_empty());
            assert!(!work.join("runs").exists(), "{extra:?} left a run folder");
        },
    );
    // A provider that cannot work (no key) is found before any run folder exists.
    let work = Workdir::new();
    let out = cli("meeting")
        .args([
            "--topic",
            "Adopt Rust?",
            "--agents",
            "arch,biz",
            "--run-dir",
        ])
        .arg(work.join("runs"))
        .run();
    let err = out.stderr();
    out.exit(1);
    assert!(
        err.starts_with("meeting: no LLM provider configured: set OPENAI_API_KEY"),
        "{err}"
    );
    assert!(!work.join("runs").exists());
    // A bad meeting file.
    let work = Workdir::new();
    let bad = work.join("bad.yaml");
    std::fs::write(&bad, "topic: x\ndecision_packet: {decision_to_make: d}\ncontext_sources: [{type: folder, path: a}]\n").unwrap();
    let out = cli("meeting")
        .arg("--meeting-file")
        .arg(&bad)
        .args(["--agents", "arch", "--provider", "replay", "--run-dir"])
        .arg(work.join("runs"))
        .run();
    let err = out.stderr();
    out.exit(2);
    assert!(err.contains("bad.yaml: context_sources[0].type"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!work.join("runs").exists());
}

#[test]
fn dry_run_prints_the_first_pm_input_and_calls_no_model() {
    let work = Workdir::new();
    // An empty cassette: any LLM call would fail ("no entry for call 1").
    let empty = work.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = meeting_cmd(work.path(), &empty, &["--dry-run", "--json"]).run();
    out.exit(0);
    let input: Value = out.json();
    assert_eq!(input["mode"], "normal");
    assert_eq!(input["remaining_loops"], 6);
    assert_eq!(input["participants"][0]["name"], "arch");
    assert!(input.get("new_events").is_none());
    assert!(!work.join("runs").exists(), "dry run leaves no run folder");
    assert!(!work.join("report.md").exists());
}

#[test]
fn prompt_templates_can_be_overridden_from_a_folder() {
    let work = Workdir::new();
    let prompts = work.join("prompts");
    std::fs::create_dir(&prompts).unwrap();
    std::fs::write(
        prompts.join("pm_user.j2"),
        "MY OWN PM PROMPT: decide {{ 40 + 2 }}\n",
    )
    .unwrap();
    let mut cmd = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"]);
    cmd.env("AGENT_MEETING_PROMPTS", &prompts);
    let out = cmd.run();
    out.exit(0);
    let llm = work.read("runs/demo-test/llm.jsonl");
    assert!(llm.contains("MY OWN PM PROMPT: decide 42"));
    // A broken override is the user's input: exit 2, naming the file.
    std::fs::write(prompts.join("pm_user.j2"), "{% if %}\n").unwrap();
    let work2 = Workdir::new();
    let mut cmd = meeting_cmd(work2.path(), &demo_cassette(), &["--quiet"]);
    cmd.env("AGENT_MEETING_PROMPTS", &prompts);
    let out = cmd.run();
    out.exit(2);
    out.stderr_has("pm_user.j2: template does not compile");
}

#[test]
fn step_mode_waits_for_enter_and_q_leaves_a_resumable_run() {
    let work = Workdir::new();
    // Run pm-step and agent-turn, then stop before merge-board.
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--step"])
        .stdin("\n\nq\n")
        .run();
    out.exit(130);
    let err = out.stderr();
    assert!(
        err.contains("next: pm-step (loop 1/6, status running)"),
        "{err}"
    );
    assert!(
        err.contains("stopped before merge-board")
            && err.contains("it resumes with: meeting resume "),
        "{err}"
    );
    let result: Value = out.json();
    assert_eq!(result["status"], "running");
    assert!(result["report_file"].is_null(), "no report yet");
    let run_dir = work.join("runs/demo-test");
    assert!(run_dir.join("0004-agent-turn.out.json").is_file());
    assert!(
        !run_dir.join("0005-merge-board.out.json").exists(),
        "nothing ran after q"
    );
    // Not quiet: the resumed meeting's progress.
    let out = cli("meeting")
        .env("AGENT_MEETING_NOW", NOW)
        .arg("--resume")
        .arg(&run_dir)
        .run();
    out.exit(0);
    assert_eq!(final_board(&run_dir)["status"], "finished");
    // The resumed meeting says where it goes on, before the ticker or any stage line.
    let first = out.stderr().lines().next().unwrap_or_default().to_string();
    assert_eq!(
        first, "resuming demo-test: loop 1/6, 2 LLM calls done, next: merge-board",
        "{out}"
    );
}

#[test]
fn a_run_folder_resumes_from_anywhere_even_moved() {
    let work = Workdir::new();
    // Relative cassette path, as a user would type it from the repository root.
    let mut cmd = meeting_cmd(
        work.path(),
        Path::new("meetings/demo.cassette.jsonl"),
        &["--quiet"],
    );
    cmd.current_dir(root());
    let out = cmd.run();
    out.exit(0);
    let run_dir = work.join("runs/demo-test");
    let want = without_timings(final_board(&run_dir));
    // Keep steps 1-6 only, in a copy somewhere else.
    let moved = work.join("elsewhere/demo-test");
    std::fs::create_dir_all(&moved).unwrap();
    for e in std::fs::read_dir(&run_dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let keep = !name.as_bytes()[0].is_ascii_digit() || name[..4].parse::<u32>().unwrap() <= 6;
        if keep && name != "llm.jsonl" {
            std::fs::copy(&p, moved.join(&name)).unwrap();
        }
    }
    let before = std::fs::read_to_string(run_dir.join("llm.jsonl")).unwrap();
    let out = resume_cmd(work.path(), "elsewhere/demo-test").run();
    out.exit(0);
    assert_eq!(without_timings(final_board(&moved)), want);
    assert_eq!(
        std::fs::read_to_string(run_dir.join("llm.jsonl")).unwrap(),
        before,
        "the original run folder is untouched"
    );
    assert!(
        moved.join("llm.jsonl").is_file(),
        "the moved folder keeps its own exchange log"
    );
}

#[test]
fn a_report_that_cannot_be_saved_fails_the_meeting_and_resume_retries_it() {
    let work = Workdir::new();
    // The report path is checked before the first call; here it turns into a folder during the
    // meeting (a user's merge-board makes it), so only the save at the end fails.
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
    let err = out.stderr();
    out.exit(1);
    assert!(
        err.starts_with("meeting: the meeting failed: report not saved: "),
        "{err}"
    );
    assert!(err.contains("meeting resume "), "{err}");
    let result: Value = out.json();
    assert_eq!(result["status"], "failed");
    assert!(result["report_file"].is_null());
    assert!(result["last_error"]
        .as_str()
        .unwrap()
        .starts_with("report not saved"));
    let run_dir = work.join("runs/demo-test");
    let board = final_board(&run_dir);
    assert_eq!(board["status"], "failed");
    // Fix the cause and resume: the report is saved, no LLM call is made again.
    std::fs::remove_dir(&report).unwrap();
    let out = resume_cmd(work.path(), &run_dir).run();
    out.exit(0);
    assert!(report.is_file());
    assert_eq!(final_board(&run_dir)["status"], "finished");
    assert_eq!(
        std::fs::read_to_string(run_dir.join("llm.jsonl"))
            .unwrap()
            .lines()
            .count(),
        8
    );
}

#[test]
fn misuse_is_refused_before_any_model_call() {
    // The report path is a folder.
    let work = Workdir::new();
    std::fs::create_dir(work.join("report.md")).unwrap();
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"]).run();
    out.exit(2);
    assert!(out.stderr().contains("is a folder"));
    assert!(!work.join("runs/demo-test/llm.jsonl").exists());
    // A pipe (or a device) at the report path stays what it is.
    let work = Workdir::new();
    let made = std::process::Command::new("mkfifo")
        .arg(work.join("report.md"))
        .status()
        .unwrap();
    assert!(made.success());
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"]).run();
    out.exit(2).stderr_has("is not a regular file");
    assert!(!work.join("runs/demo-test/llm.jsonl").exists());
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::symlink_metadata(work.join("report.md"))
        .unwrap()
        .file_type();
    assert!(kind.is_fifo(), "the pipe was replaced");
    // --resume takes the meeting from the run folder: flags that shape it are refused.
    let out = cli("meeting")
        .args(["--resume", "runs/x", "--model", "foo"])
        .run();
    out.exit(2);
    out.stderr_has("--model cannot be used with meeting resume");
    // A stage that hands the board back unchanged cannot loop forever.
    let work = Workdir::new();
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", "merge-board=cat"],
    )
    .run();
    out.exit(1);
    assert_eq!(
        out.stderr().lines().next(),
        Some("meeting: stage merge-board made no progress: its output board is its input")
    );
    // Only render-report may end the meeting.
    if !skip_without(Tool::Jq) {
        let work = Workdir::new();
        let out = meeting_cmd(
            work.path(),
            &demo_cassette(),
            &["--quiet", "--stage", "pm-step=jq -c '.status=\"finished\"'"],
        )
        .run();
        out.exit(1);
        out.stderr_has("stage pm-step set status finished but only render-report may");
    }
    // Output that is not a board is the stage's failure (exit 1), not the user's input.
    let work = Workdir::new();
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", "agent-turn=echo garbage"],
    )
    .run();
    out.exit(1);
    out.stderr_has("stage agent-turn wrote an unusable board");
}

#[test]
fn one_process_at_a_time_writes_a_run_folder() {
    let work = Workdir::new();
    // The first meeting holds its folder inside its first merge-board, a gate that opens only
    // when the test says so: the resume surely meets the lock, however long the resume's own
    // wait for it (two seconds) and however slow the machine.
    let (ready, go) = (work.join("gate.ready"), work.join("gate.go"));
    let gate = format!(
        "merge-board=touch '{ready}'; i=0; while [ ! -e '{go}' ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done; exec '{bin}'",
        ready = ready.display(),
        go = go.display(),
        bin = bin_dir().join("merge-board").display()
    );
    let run_dir = work.join("runs/demo-test");
    let mut first = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", &gate],
    )
    .spawn();
    wait_for("the first meeting inside its gate", || {
        assert!(first.try_wait().unwrap().is_none(), "the meeting ended");
        ready.exists()
    });
    let out = resume_cmd(&root(), &run_dir).run();
    std::fs::write(&go, "").unwrap();
    out.exit(2);
    out.stderr_has("is in use by another meeting process");
    assert!(first.wait().unwrap().success());
    assert_eq!(
        std::fs::read_to_string(run_dir.join("llm.jsonl"))
            .unwrap()
            .lines()
            .count(),
        8,
        "no call made twice"
    );
}

#[test]
fn a_resume_waits_a_moment_for_a_process_letting_go_of_the_folder() {
    // A killed meeting's stage can hold the folder's lock for a few milliseconds more.
    let work = Workdir::new();
    meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .run()
        .exit(0);
    let run_dir = work.join("runs/demo-test");
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(run_dir.join(".lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let holder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        drop(lock);
    });
    let out = resume_cmd(&root(), &run_dir).run();
    holder.join().unwrap();
    out.exit(0);
}

/// A meeting no model contributed to fails in the shell loop as in the driver: the fallback
/// report is saved, the status is `failed`, the exit code 1.
#[test]
fn shell_loop_fails_like_the_driver_when_no_model_answered() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    // Three PM rounds of two logical calls each: a failed round is asked again once.
    let junk = (1..=6).fold(Cassette::new().no_usage(), |c, _| c.text("pm", "not json"));
    let cassette = junk.write(work.join("junk.jsonl"));
    let out = meeting_cmd(work.path(), &cassette, &["--quiet"]).run();
    out.exit(1);
    let driver: Value = serde_json::from_slice(&out.output.stdout).unwrap();
    assert_eq!(driver["status"], "failed");

    let sh_report = work.join("sh-report.md");
    let out = shell_loop(&cassette, &sh_report).run();
    out.exit(1);
    out.stderr_has("no model call returned a usable answer");
    let sh: Value = serde_json::from_slice(&out.output.stdout).unwrap();
    assert_eq!(sh["status"], "failed");
    assert_eq!(
        std::fs::read_to_string(&sh_report).unwrap(),
        work.read("report.md"),
        "the same fallback report"
    );
}

/// The processes under `pid` right now: every thread's children (Linux `/proc`).
#[cfg(target_os = "linux")]
fn children_of(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new(); // the process is gone
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|c| c.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// The built-in stages run inside `meeting` (docs/design/run-folder.md#run-folder): while its model calls are
/// under way no stage process exists; a `--stage` override still runs as one.
#[cfg(target_os = "linux")]
#[test]
fn the_loop_runs_in_the_meeting_process_and_an_override_as_a_process() {
    let watch = |overriden: bool| -> (usize, usize) {
        let work = Workdir::new();
        let slow = slow_demo_cassette(work.path(), 300);
        let run_dir = work.join("runs/demo-test");
        // agent-turn replaced by the program itself, run by `sh -c`.
        let agent_turn = format!(
            "agent-turn=exec '{}' --provider replay --cassette '{}'",
            bin_dir().join("agent-turn").display(),
            slow.display()
        );
        let extra: &[&str] = if overriden {
            &["--quiet", "--stage", &agent_turn]
        } else {
            &["--quiet"]
        };
        let mut child = meeting_cmd(work.path(), &slow, extra).spawn();
        let (mut samples, mut with_children) = (0, 0);
        while child.try_wait().unwrap().is_none() {
            if run_dir.exists() {
                samples += 1;
                if !children_of(child.id()).is_empty() {
                    with_children += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(child.wait().unwrap().success());
        (samples, with_children)
    };
    let (samples, with_children) = watch(false);
    assert!(
        samples > 20,
        "the slow meeting was watched ({samples} samples)"
    );
    assert_eq!(with_children, 0, "a stage process ran during the loop");
    // 3 of the meeting's 8 calls are agent turns.
    let (samples, with_children) = watch(true);
    assert!(
        with_children * 5 > samples,
        "the override ran as a process ({with_children} of {samples} samples)"
    );
}

/// An ended meeting resumed with a new --report-file saves its report there too, byte for
/// byte, through the checks of a start: the MeetingResult never names a report that is not on
/// disk, and a pipe there is refused (exit 2) and left a pipe.
#[test]
fn a_new_report_file_on_an_ended_meeting_saves_the_report_there() {
    let work = Workdir::new();
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"]).run();
    out.check(out.code() == Some(0), "the meeting");
    let first = work.read("report.md");
    let new = work.join("later/new.md");
    let out = resume_cmd(work.path(), work.join("runs/demo-test"))
        .arg("--report-file")
        .arg(&new)
        .run();
    out.check(out.code() == Some(0), "the resume");
    let result: Value = serde_json::from_str(&out.stdout()).unwrap();
    assert_eq!(result["report_file"], new.display().to_string());
    assert_eq!(std::fs::read_to_string(&new).unwrap(), first);
    let pipe = work.join("p.md");
    let made = Command::new("mkfifo").arg(&pipe).status().unwrap();
    assert!(made.success());
    let out = resume_cmd(work.path(), work.join("runs/demo-test"))
        .arg("--report-file")
        .arg(&pipe)
        .run();
    out.exit(2).stderr_has("is not a regular file");
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::symlink_metadata(&pipe).unwrap().file_type();
    assert!(kind.is_fifo(), "the pipe was replaced");
}
