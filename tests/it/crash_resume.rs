//! A crash of the machine (docs/design/run-folder.md#resume): the run folder's boards and `events.jsonl` are
//! written atomically but not synced, so a crash may lose the newest of them or leave them
//! empty; the model's answers in `llm.jsonl` are synced as they come. `--resume` goes on from
//! the last whole checkpoint whose events are all there and derives the rest from the log.

use serde_json::Value;

use crate::fake_http::{json as http, openai_ok, FakeServer};
use crate::fixtures::{demo_cassette, final_board, resume_cmd, without_timings, Cassette, NOW};
use crate::harness::{cli, root, Workdir};

/// The demo meeting against a live (fake) OpenAI server that gives the demo cassette's
/// answers in order.
fn live_demo(work: &Workdir) -> FakeServer {
    let answers = Cassette::demo()
        .responses()
        .iter()
        .map(|r| http(200, &openai_ok(r, Some((4000, 10)))))
        .collect();
    let server = FakeServer::start(answers);
    let out = cli("meeting")
        .env("AGENT_MEETING_NOW", NOW)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args([
            "--meeting-file",
            "meetings/demo.yaml",
            "--agents",
            "arch,biz",
        ])
        .args(["--provider", "openai", "--trace-id", "demo-test", "--quiet"])
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"))
        .run();
    out.exit(0);
    server
}

/// Lost: every checkpoint after init-board's, the newest left empty, and the tail of
/// `events.jsonl`. The resumed meeting asks the server nothing and ends with the same board,
/// report and history.
#[test]
fn a_resume_after_losing_the_last_checkpoints_derives_them_from_the_log() {
    let work = Workdir::new();
    let server = live_demo(&work);
    let asked = server.count();
    assert_eq!(asked, 8, "the demo's calls");
    let run_dir = work.join("runs/demo-test");
    let want_board = without_timings(final_board(&run_dir));
    let want_report = work.read("report.md");
    let events = run_dir.join("events.jsonl");
    let want_events = std::fs::read_to_string(&events).unwrap();

    let mut outputs: Vec<_> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".out.json"))
        .collect();
    outputs.sort();
    let newest = outputs.pop().unwrap();
    for lost in outputs
        .iter()
        .filter(|p| !p.ends_with("0001-collect-context.out.json"))
    {
        if !lost.ends_with("0002-init-board.out.json") {
            std::fs::remove_file(lost).unwrap();
        }
    }
    std::fs::write(&newest, "").unwrap();
    let kept: String = want_events.split_inclusive('\n').take(3).collect();
    std::fs::write(&events, kept).unwrap();
    std::fs::remove_file(work.join("report.md")).unwrap();

    let out = resume_cmd(&root(), &run_dir)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .run();
    out.exit(0);
    out.stderr_has("not a whole checkpoint (lost in a crash)");
    assert_eq!(server.count(), asked, "no model call was asked again");
    assert_eq!(without_timings(final_board(&run_dir)), want_board);
    assert_eq!(work.read("report.md"), want_report);
    let got_events = std::fs::read_to_string(&events).unwrap();
    let history = |text: &str| -> Vec<Value> {
        text.lines()
            .map(|l| without_timings(serde_json::from_str(l).unwrap()))
            .collect()
    };
    assert_eq!(history(&got_events), history(&want_events));
}

/// Torn: the exchange log's last answer was half written when the machine stopped. The resume
/// cuts the torn line before it appends, asks that one call again, and every line of the log
/// is one whole document.
#[test]
fn a_torn_last_line_of_the_exchange_log_is_cut_before_the_resume_appends() {
    let work = Workdir::new();
    let _first = live_demo(&work);
    let run_dir = work.join("runs/demo-test");
    let log = run_dir.join("llm.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.last().unwrap();
    let torn = format!(
        "{}\n{}",
        lines[..lines.len() - 1].join("\n"),
        &last[..last.len() / 2]
    );
    std::fs::write(&log, torn).unwrap();
    for p in std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
    {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".out.json") && !name.starts_with("0001") && !name.starts_with("0002") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let events = run_dir.join("events.jsonl");
    let kept: String = std::fs::read_to_string(&events)
        .unwrap()
        .split_inclusive('\n')
        .take(3)
        .collect();
    std::fs::write(&events, kept).unwrap();
    // The last answer of the demo, once more, for the call the torn line lost.
    let v: Value = serde_json::from_str(demo_answers().last().unwrap()).unwrap();
    let again = FakeServer::start(vec![http(
        200,
        &openai_ok(v["response"].as_str().unwrap(), Some((4000, 10))),
    )]);
    let out = resume_cmd(&root(), &run_dir)
        .env("OPENAI_BASE_URL", format!("{}/v1", again.url))
        .run();
    out.exit(0).stderr_has("cut a torn last line");
    assert_eq!(again.count(), 1, "the lost call, asked once more");
    let text = std::fs::read_to_string(&log).unwrap();
    for (i, line) in text.lines().enumerate() {
        assert!(
            serde_json::from_str::<Value>(line).is_ok(),
            "llm.jsonl line {} is not one document: {line}",
            i + 1
        );
    }
    assert_eq!(text.lines().count(), lines.len(), "{text}");
}

/// The demo cassette's lines.
fn demo_answers() -> Vec<String> {
    std::fs::read_to_string(demo_cassette())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}
