//! The bounded board (docs/design/run-folder.md#events): a board carries only the events of the
//! stage that wrote it (`new_events`) and a bounded `flow`; the whole history is the run
//! folder's `events.jsonl`, appended once per stage by the driver and by `share/meeting.sh`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fixtures::{checkpoint_events, demo_cassette, file_names, meeting_cmd, outputs};
use crate::fixtures::{resume_cmd, run_events, shell_loop};
use crate::harness::{root, Workdir};
use crate::harness::{skip_without, Tool};

/// The demo meeting (`fixtures::meeting_cmd`) keeping every board, for the tests that compare
/// events.jsonl with the checkpoints.
fn demo_keeping_boards(work: &Workdir) -> PathBuf {
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .env(KEEP, "all")
        .run();
    out.exit(0);
    work.join("runs/demo-test")
}

const KEEP: &str = "AGENT_MEETING_KEEP_BOARDS";

/// Timings differ between runs; everything else must not.
fn without_durations(events: Vec<Value>) -> Vec<Value> {
    events
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().unwrap().remove("duration_ms");
            e
        })
        .collect()
}

/// The driver appends each stage's events once, in order: events.jsonl is the concatenation
/// of the checkpoints' `new_events`, and as long as the last board's `event_count`.
#[test]
fn the_driver_records_every_event_exactly_once() {
    let work = Workdir::new();
    let run_dir = demo_keeping_boards(&work);
    let events = run_events(&run_dir);
    assert_eq!(events, checkpoint_events(&run_dir));
    let last: Value =
        serde_json::from_str(&std::fs::read_to_string(outputs(&run_dir).last().unwrap()).unwrap())
            .unwrap();
    assert_eq!(last["board"]["event_count"], events.len());
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[0], "meeting_started");
    assert_eq!(types.iter().filter(|t| **t == "meeting_started").count(), 1);
    // 8 calls in the demo, each one llm_call event.
    assert_eq!(types.iter().filter(|t| **t == "llm_call").count(), 8);
    // Each board carries only its own stage's events: no event is in two checkpoints.
    for out in outputs(&run_dir).iter().skip(2) {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
        let board = if v.get("board").is_some() {
            &v["board"]
        } else {
            &v
        };
        let n = board["new_events"].as_array().unwrap().len();
        assert!(n <= 6, "{}: {n} events", out.display());
    }
}

/// Without the knob the run folder keeps the packet, the first board and the last loop's
/// boards; the history is events.jsonl (same as with every board kept).
#[test]
fn the_run_folder_keeps_the_last_boards_and_the_whole_history() {
    let all = Workdir::new();
    let want = run_events(&demo_keeping_boards(&all));
    let work = Workdir::new();
    meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .run()
        .exit(0);
    let run_dir = work.join("runs/demo-test");
    let boards: Vec<String> = file_names(&run_dir)
        .into_iter()
        .filter(|n| n.ends_with(".json") && n != "meeting.json")
        .collect();
    assert_eq!(
        boards,
        [
            "0001-collect-context.out.json",
            "0002-init-board.out.json",
            "0011-merge-board.out.json",
            "0012-pm-step.out.json",
            "0013-render-report.out.json"
        ]
    );
    assert_eq!(
        without_durations(run_events(&run_dir)),
        without_durations(want)
    );
}

/// `share/meeting.sh` with EVENTS_OUT writes the same events as the driver, once each.
#[test]
fn the_shell_loop_records_the_same_events() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let want = run_events(&demo_keeping_boards(&work));
    let events_out = work.join("sh-events.jsonl");
    // A stale file from an earlier run is replaced, not appended to.
    std::fs::write(&events_out, "{\"stale\": true}\n").unwrap();
    let out = shell_loop(&demo_cassette(), &work.join("sh-report.md"))
        .env("EVENTS_OUT", &events_out)
        .run();
    out.check(out.code() == Some(0), "the shell loop failed (needs jq)");
    let got: Vec<Value> = std::fs::read_to_string(&events_out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(without_durations(got), without_durations(want));
}

/// A kill between a stage's events and its checkpoint, or in the middle of the append, leaves
/// events.jsonl with events once too many or half a line: `--resume` cuts it back to the
/// checkpoint it goes on from, and the meeting ends with the same history.
#[test]
fn resume_repairs_events_jsonl() {
    let work = Workdir::new();
    let run_dir = demo_keeping_boards(&work);
    let want = without_durations(run_events(&run_dir));
    let events_file = run_dir.join("events.jsonl");
    let full = std::fs::read_to_string(&events_file).unwrap();
    // Back to the checkpoint of step 8, with the events of step 9 (and half of 10's) already
    // appended, as a kill just before step 9's checkpoint landed would leave it.
    let keep_lines = checkpoint_events_until(&run_dir, 9);
    let mut text: String = full
        .split_inclusive('\n')
        .take(keep_lines)
        .collect::<String>();
    text.push_str("{\"ts\":\"2026-");
    for out in outputs(&run_dir) {
        let n: u32 = out.file_name().unwrap().to_string_lossy()[..4]
            .parse()
            .unwrap();
        if n > 8 {
            std::fs::remove_file(out).unwrap();
        }
    }
    std::fs::write(&events_file, text).unwrap();
    resume_cmd(&root(), &run_dir).run().exit(0);
    assert_eq!(without_durations(run_events(&run_dir)), want);
}

/// The number of events the checkpoints up to `step` carry.
fn checkpoint_events_until(run_dir: &Path, step: u32) -> usize {
    let mut n = 0;
    for out in outputs(run_dir) {
        let s: u32 = out.file_name().unwrap().to_string_lossy()[..4]
            .parse()
            .unwrap();
        if s > step {
            break;
        }
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let board = if v.get("board").is_some() {
            &v["board"]
        } else {
            &v
        };
        n += board
            .get("new_events")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
    }
    n
}

/// A run folder written before bounded boards (board_version 1) is refused, naming the
/// version, and left as it was.
#[test]
fn resume_refuses_a_board_from_before_the_change() {
    let work = Workdir::new();
    let run_dir = demo_keeping_boards(&work);
    for out in outputs(&run_dir) {
        let n: u32 = out.file_name().unwrap().to_string_lossy()[..4]
            .parse()
            .unwrap();
        if n > 6 {
            std::fs::remove_file(out).unwrap();
        }
    }
    // Step 6 as the old release wrote it: version 1, the whole history in event_log.
    let last = run_dir.join("0006-pm-step.out.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&last).unwrap()).unwrap();
    let history = serde_json::Value::Array(checkpoint_events(&run_dir));
    let board = v.as_object_mut().unwrap();
    board.insert("board_version".into(), 1.into());
    board.remove("new_events");
    board.remove("event_count");
    board.remove("flow");
    board.insert("event_log".into(), history);
    std::fs::write(&last, serde_json::to_string(&v).unwrap()).unwrap();
    let before: Vec<(String, Vec<u8>)> = file_names(&run_dir)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(run_dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect();
    let out = resume_cmd(&root(), &run_dir).run();
    out.exit(2);
    out.stderr_has(&format!("0006-pm-step.out.json: board_version: version 1 is not supported (expected {}): a board from before bounded boards", agent_meeting::model::BOARD_VERSION));
    let after: Vec<(String, Vec<u8>)> = file_names(&run_dir)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(run_dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect();
    assert_eq!(before, after, "the folder is left as it was");
}

/// One loop of the long meeting's script: the PM asks `agent` question `i`, which answers in
/// 400 characters with distinct points (the shape of the AutoGen comparison, BENCHMARKS.md).
fn loop_replies(i: u32, agent: &str) -> (Value, Value) {
    let pm = serde_json::json!({
        "analysis": format!("Loop {i}: the next open point goes to {agent}."),
        "next_action": "CALL_AGENT", "target_agent": agent,
        "prompt_for_agent": format!("Question {i}: what does the evidence say about aspect {i} of moving the nightly reports?"),
        "final_report": null});
    let response: String = format!("Answer {i}: ")
        .chars()
        .chain(
            format!("aspect {i} depends on the replica lag and the job ordering; ")
                .chars()
                .cycle(),
        )
        .take(400)
        .collect();
    let answer = serde_json::json!({
        "response": response,
        "key_points": (1..=3).map(|k| format!("Finding {i}.{k}: aspect {i} has a measurable effect number {k}.")).collect::<Vec<_>>(),
        "risks": (1..=2).map(|k| format!("Risk {i}.{k}: aspect {i} may overrun the deadline in case {k}.")).collect::<Vec<_>>(),
        "recommendations": [format!("Recommendation {i}: trial aspect {i} for two weeks.")],
        "citations": []});
    (pm, answer)
}

/// A 100-loop meeting, the stages run in process on a scripted provider: the board stops
/// growing once its lists and its flow are full (at 100 loops at most 1.2 times its size at
/// 25), each board carries only its stage's events, and the report's diagram shows the last
/// 30 loops and says how many came before.
#[test]
fn a_long_meeting_keeps_a_bounded_board() {
    use crate::fixtures::{agent, board, client, clock, ok_json, opts, NOW};
    use agent_meeting::stage::{agent_turn, merge_board, pm_step};

    let mut b = board();
    b.agents
        .insert("ops".into(), agent("ops", "operations engineer"));
    b.participants.push("ops".into());
    b.max_loops = 101;
    let agents = ["arch", "biz", "ops"];
    let size = |b: &agent_meeting::model::Board| serde_json::to_string(b).unwrap().len();
    let mut sizes = Vec::new();
    let mut events = b.new_events.len() as u64;
    let mut history = b.new_events.clone();
    for i in 1..=100u32 {
        let (pm, answer) = loop_replies(i, agents[(i as usize - 1) % 3]);
        let (mut c, _) = client(&b, vec![ok_json(pm)]);
        b = pm_step::pm_step(b, &mut c, &opts(), &clock()).unwrap();
        events += b.new_events.len() as u64;
        history.extend(b.new_events.iter().cloned());
        assert!(
            b.new_events.iter().all(|e| e.loop_no == i),
            "loop {i}: only pm-step's events"
        );
        let (mut c, _) = client(&b, vec![ok_json(answer)]);
        b = agent_turn::agent_turn(b, &mut c, &opts(), &clock()).unwrap();
        events += b.new_events.len() as u64;
        history.extend(b.new_events.iter().cloned());
        assert_eq!(b.new_events.len(), 2, "loop {i}: llm_call and agent_result");
        b = merge_board::merge(b, NOW).unwrap();
        events += b.new_events.len() as u64;
        history.extend(b.new_events.iter().cloned());
        assert_eq!(b.new_events.len(), 1, "loop {i}: board_merged");
        assert_eq!(b.event_count, events);
        sizes.push(size(&b));
    }
    let (at25, at100) = (sizes[24], sizes[99]);
    assert!(
        at100 as f64 <= 1.2 * at25 as f64,
        "board at 100 loops {at100} bytes, at 25 {at25}"
    );
    // Flat after the lists and the flow are full: the last 50 loops add nothing that stays.
    let tail = &sizes[50..];
    let (min, max) = (tail.iter().min().unwrap(), tail.iter().max().unwrap());
    assert!(
        max - min < 512,
        "board sizes over loops 51-100 range {min}..{max}"
    );

    assert_eq!(b.flow.loops_before, 70);
    assert_eq!(b.flow.steps.first().unwrap().loop_no, 71);
    let diagram = agent_meeting::stage::render_report::mermaid(&b);
    assert!(
        diagram.contains("    Note over PM: 70 earlier loops not shown\n"),
        "{diagram}"
    );
    assert!(
        diagram.contains("    PM->>arch: L100 Question 100"),
        "{diagram}"
    );
    assert!(!diagram.contains(" L70 "), "{diagram}");
    assert_eq!(
        diagram
            .lines()
            .filter(|l| l.starts_with("    PM->>"))
            .count(),
        30,
        "one question per loop shown"
    );

    // The PM finishes; `render-report --events FILE` draws all 100 loops from the history, and
    // prints the board it read.
    let finish = serde_json::json!({"analysis": "Done.", "next_action": "FINISH",
        "final_report": "### Executive Summary\nThe replica.\n\n### Recommendation\nTrial it.",
        "decision": {"choice": "The replica", "confidence": "medium", "revisit_if": ""}});
    let (mut c, _) = client(&b, vec![ok_json(finish)]);
    b = pm_step::pm_step(b, &mut c, &opts(), &clock()).unwrap();
    history.extend(b.new_events.iter().cloned());
    assert_eq!(b.event_count, history.len() as u64);
    let work = Workdir::new();
    let lines: String = history
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    let events_file = work.write("events.jsonl", &lines);
    let board_json = serde_json::to_string(&b).unwrap();
    let out = crate::harness::cli("render-report")
        .arg("--events")
        .arg(&events_file)
        .arg("--report-file")
        .arg(work.join("report.md"))
        .stdin(board_json.clone())
        .run();
    out.success();
    let result: Value = out.json();
    let md = result["markdown"].as_str().unwrap();
    assert_eq!(
        md.lines().filter(|l| l.starts_with("    PM->>")).count(),
        100
    );
    assert!(md.contains("    PM->>arch: L1 Question 1: "), "{md}");
    assert!(!md.contains("earlier loop"), "{md}");
    assert!(md.contains("    Note over PM: L101 FINISH"), "{md}");
    assert_eq!(
        result["board"]["flow"]["loops_before"], 71,
        "the board is not changed"
    );
    // Without it, the board's last 30 loops.
    let out = crate::harness::cli("render-report")
        .arg("--markdown")
        .stdin(board_json.clone())
        .run();
    out.success();
    assert!(out
        .stdout()
        .contains("    Note over PM: 71 earlier loops not shown\n"));
    // A broken events file: exit 2 naming the file, the line and the field.
    let first = lines.lines().next().unwrap();
    let bad = work.write("bad.jsonl", format!("{first}\n{{\"ts\": 1}}\n"));
    let out = crate::harness::cli("render-report")
        .arg("--markdown")
        .arg("--events")
        .arg(&bad)
        .stdin(board_json)
        .run();
    out.exit(2);
    out.stderr_has(&format!(
        "render-report: {}: line 2: ts: invalid type",
        bad.display()
    ));
}

/// A user's stage that hands on the board's events instead of replacing them adds none: the
/// driver records only the events by which `event_count` grew, so none lands twice.
#[test]
fn a_users_stage_that_keeps_the_events_records_none_twice() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    // merge-board replaced by a pass-through: the turn is dropped, agent-turn's events stay.
    let stage = "merge-board=jq -c '.last_turns = [] | .loop_count += 1'";
    meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", stage],
    )
    .run()
    .exit(0);
    let run_dir = work.join("runs/demo-test");
    let events = run_events(&run_dir);
    let last: Value =
        serde_json::from_str(&std::fs::read_to_string(outputs(&run_dir).last().unwrap()).unwrap())
            .unwrap();
    assert_eq!(last["board"]["event_count"], events.len());
    let count = |t: &str| events.iter().filter(|e| e["type"] == t).count();
    assert_eq!(count("board_merged"), 0);
    assert_eq!(
        count("agent_result"),
        count("pm_decision") - 1,
        "one answer per question"
    );
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    let mut unique = lines.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), lines.len(), "an event recorded twice");
}
