//! The token budget (docs/design/pm-round.md#token-budget): a meeting with `--max-total-tokens N` ends with a
//! report and at most N tokens used; the PM is moved to its closing round for the reason
//! "token budget"; a budget too small for anything gives the fallback report without a call;
//! the meeting file's `budget.max_total_tokens` is used unless the flag says otherwise.

use std::path::Path;

use serde_json::Value;

use crate::fixtures::{demo_cassette, final_board, meeting_cmd, run_events, Cassette, NOW};
use crate::harness::{cli, root, Workdir};

/// The demo cassette without its `usage`, so every count is the client's estimate of the
/// actual prompt and reply (the budget's own estimates are above it): the bound is exact.
fn estimated() -> Cassette {
    Cassette::demo().each(|l| {
        l.as_object_mut().unwrap().remove("usage");
    })
}

fn estimated_cassette(work: &Workdir) -> std::path::PathBuf {
    estimated().write(work.join("estimated.jsonl"))
}

fn total(usage: &Value) -> u64 {
    usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
}

/// A meeting's events of `kind`, from its run folder's `events.jsonl`.
fn events_of(run_dir: &std::path::Path, kind: &str) -> Vec<Value> {
    run_events(run_dir)
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

/// The seq of the first closing-round PM request in a run's exchange log (its schema allows
/// only FINISH).
fn closing_seq(run_dir: &Path) -> Option<u64> {
    std::fs::read_to_string(run_dir.join("llm.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| {
            v["caller"] == "pm"
                && v["schema"]["schema"]["properties"]["next_action"]["enum"]
                    == serde_json::json!(["FINISH"])
        })
        .and_then(|v| v["seq"].as_u64())
}

/// A budget below what the demo uses: some agent turns, then the PM's closing round for the
/// token budget, a forced report by the PM, and the total within the budget. Where the budget
/// cuts depends on the prompts' sizes, so the cassette is cut to fit: a first run finds the
/// closing round's call number, a second gives the PM's FINISH there.
#[test]
fn a_small_budget_ends_with_a_report_inside_it() {
    let work = Workdir::new();
    let cassette = estimated_cassette(&work);
    let unlimited = meeting_cmd(work.path(), &cassette, &[]).run();
    unlimited.success();
    let used: u64 = total(&unlimited.json::<Value>()["usage"]);
    let budget = used - 1;
    let n = budget.to_string();

    let probe = work.join("probe");
    meeting_cmd(&probe, &cassette, &["--max-total-tokens", &n, "--quiet"]).run();
    let seq = closing_seq(&probe.join("runs/demo-test")).expect("a closing round");
    assert!(
        seq > 2,
        "the budget allowed no agent turn (closing call {seq})"
    );
    let lines = estimated();
    let finish = lines.lines().iter().rev().find(|v| v["caller"] == "pm");
    let closing = finish.unwrap().clone();
    let cut_cassette = lines
        .take(seq as usize - 1)
        .line(closing)
        .write(work.join("cut.jsonl"));

    let last = work.join("last");
    let run = meeting_cmd(&last, &cut_cassette, &["--max-total-tokens", &n]).run();
    run.success();
    run.stderr_has("pm closing round (token budget): FINISH (");
    let result: Value = run.json();
    assert_eq!(result["status"], "finished");
    assert_eq!(result["forced"], true);
    let spent = total(&result["usage"]);
    assert!(spent <= budget, "{spent} tokens used, budget {budget}");
    assert!(result["loops"].as_u64().unwrap() >= 1);

    let board = final_board(&last.join("runs/demo-test"));
    assert_eq!(board["max_total_tokens"], budget);
    let forced = events_of(&last.join("runs/demo-test"), "forced_finish");
    assert_eq!(forced.len(), 1);
    let message = forced[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("token budget: used ")
            && message.contains(&format!(" of {budget} tokens")),
        "{message}"
    );
    let report = std::fs::read_to_string(last.join("report.md")).unwrap();
    assert!(report.contains("- Report kind: forced"), "{report}");
    assert!(report.contains("### Executive Summary") || report.contains("## Executive Summary"));
    let note = report
        .split("## Process Note")
        .nth(1)
        .expect("a Process Note");
    assert!(
        note.contains("Meeting stopped by its token budget")
            && note.contains(&format!("of {budget} tokens had been used")),
        "{note}"
    );
    assert!(
        report.contains(&format!("- Token budget: {spent} of {budget} tokens used")),
        "{report}"
    );
}

/// A budget that cannot fit even the PM's closing report: no call at all, the fallback report,
/// exit 0 (no call failed), and the Process Note says why.
#[test]
fn a_budget_too_small_for_anything_fails_with_the_fallback_report_and_no_call() {
    let work = Workdir::new();
    let cassette = estimated_cassette(&work);
    let run = meeting_cmd(work.path(), &cassette, &["--max-total-tokens", "1000"]).run();
    // Nothing a model said is in the report: the meeting failed (exit 1), its report is saved.
    run.exit(1);
    run.stderr_has("pm closing round (token budget): no usable report (");
    run.stderr_has("no model call was made");
    let result: Value = run.json();
    assert_eq!(result["status"], "failed");
    assert!(result["report_file"].is_string());
    assert_eq!(result["usage"]["calls"], 0);
    assert_eq!(total(&result["usage"]), 0);
    assert_eq!(result["forced"], true);
    let report = work.read("report.md");
    assert!(report.contains("- Report kind: fallback"), "{report}");
    assert!(
        report.contains("- Token budget: 0 of 1000 tokens used"),
        "{report}"
    );
    let note = report.split("## Process Note").nth(1).unwrap();
    assert!(
        note.contains("Meeting stopped by its token budget")
            && note.contains(
                "The PM was not asked for its closing report (token budget: used 0 of 1000 tokens"
            )
            && note.contains("fallback report generated"),
        "{note}"
    );
    assert!(
        std::fs::read_to_string(work.join("runs/demo-test/llm.jsonl"))
            .unwrap_or_default()
            .is_empty()
    );
}

/// A meeting file's `budget: {max_total_tokens: N}` is the board's budget; `--max-total-tokens`
/// wins over it (init-board decides, for `meeting` and by hand alike). 0 is refused.
#[test]
fn the_meeting_file_sets_the_budget_and_the_flag_wins() {
    let work = Workdir::new();
    let file = work.write(
        "m.yaml",
        "topic: Adopt a warehouse?\n\
         decision_packet: {decision_to_make: Adopt a warehouse?}\n\
         budget: {max_total_tokens: 900}\n",
    );
    let agents = root().join("agents");
    let board_with = |extra: &[&str]| -> Value {
        let packet = cli("collect-context")
            .arg("--meeting-file")
            .arg(&file)
            .run();
        packet.success();
        let run = cli("init-board")
            .args(["--agents", "arch,biz", "--agents-dir"])
            .arg(&agents)
            .args(extra)
            .stdin(packet.stdout())
            .run();
        run.success();
        run.json()
    };
    assert_eq!(board_with(&[])["max_total_tokens"], 900);
    assert_eq!(
        board_with(&["--max-total-tokens", "5000"])["max_total_tokens"],
        5000
    );
    cli("init-board")
        .args(["--agents", "arch", "--max-total-tokens", "0"])
        .run()
        .exit(2);

    // Through `meeting`: the file's budget is too small for any call; the flag's is the one
    // the report names.
    for (extra, limit) in [(vec![], 900), (vec!["--max-total-tokens", "1200"], 1200)] {
        let dir = work.join(format!("run-{limit}"));
        let mut cmd = cli("meeting");
        cmd.env("AGENT_MEETING_NOW", NOW)
            .arg("--meeting-file")
            .arg(&file)
            .args(["--agents", "arch,biz", "--agents-dir"])
            .arg(&agents)
            .args(["--provider", "replay", "--cassette"])
            .arg(demo_cassette())
            .arg("--run-dir")
            .arg(dir.join("runs"))
            .arg("--report-file")
            .arg(dir.join("report.md"))
            .args(["--trace-id", "budget-test", "--quiet"])
            .args(&extra);
        let run = cmd.run();
        // Too small for any call: the fallback report is saved and the meeting failed.
        run.exit(1);
        assert_eq!(run.json::<Value>()["usage"]["calls"], 0);
        let board = final_board(&dir.join("runs/budget-test"));
        assert_eq!(board["max_total_tokens"], limit);
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            report.contains(&format!("- Token budget: 0 of {limit} tokens used")),
            "{report}"
        );
    }
}

/// An agent turn keeps the pending call's reserve for the PM's closing round: a call that would
/// touch it is not made, and the turn is an error turn saying why; with room, it is made.
#[test]
fn an_agent_turn_keeps_the_closing_reserve() {
    use crate::fixtures::{board_with_call, client, clock, ok_json, opts};
    use agent_meeting::model::TurnStatus;
    use agent_meeting::stage::agent_turn::agent_turn;
    let answer = serde_json::json!({"response": "It costs $4,000 a month.", "citations": []});
    for (limit, reserve, asked) in [(100_000, 5_000, true), (6_000, 5_000, false)] {
        let mut board = board_with_call("arch");
        board.max_total_tokens = Some(limit);
        board.pending_calls[0].reserve = Some(agent_meeting::model::Charge::new(reserve, 0));
        let (mut c, seen) = client(&board, vec![ok_json(answer.clone())]);
        let b = agent_turn(board, &mut c, &opts(), &clock()).unwrap();
        let turn = &b.last_turns[0];
        assert_eq!(seen.borrow().len(), usize::from(asked), "limit {limit}");
        if asked {
            assert_eq!(turn.status, TurnStatus::Ok);
        } else {
            assert_eq!(turn.status, TurnStatus::Error);
            let error = turn.error.as_deref().unwrap();
            assert!(
                error.starts_with(
                    "not asked: token budget: used 0 of 6000 tokens; this call needs up to "
                ) && error.ends_with("and 5000 must stay for the calls after it"),
                "{error}"
            );
            assert_eq!(b.usage.calls, 0);
        }
    }
}

/// An invalid answer gets its retry only when the retry fits too: else the ask ends there, with
/// no `agent_retry` event and no second call.
#[test]
fn a_retry_that_would_break_the_budget_is_not_sent() {
    use crate::fixtures::{board_with_call, client, clock, events_of, ok, opts};
    use agent_meeting::stage::agent_turn::agent_turn;
    let mut board = board_with_call("arch");
    board.max_total_tokens = Some(1);
    let (mut c, seen) = client(&board, vec![ok("not json"), ok("not json")]);
    let b = agent_turn(board.clone(), &mut c, &opts(), &clock()).unwrap();
    assert_eq!(
        seen.borrow().len(),
        0,
        "not even the first call fits in 1 token"
    );
    assert!(events_of(&b, "agent_retry").is_empty());

    // Find the limit where the first call fits but its retry (with the reply echoed) does not.
    // About 1000 tokens, within the turn's max_tokens (1200): the retry echoes it.
    let long_reply = "x".repeat(4_000);
    let mut found = false;
    for limit in (1_000..20_000).step_by(100) {
        let mut board = board.clone();
        board.max_total_tokens = Some(limit);
        let (mut c, seen) = client(&board, vec![ok(&long_reply), ok("not json")]);
        let b = agent_turn(board, &mut c, &opts(), &clock()).unwrap();
        if seen.borrow().len() == 1 {
            assert!(events_of(&b, "agent_retry").is_empty(), "limit {limit}");
            let error = &b.last_turns[0].error.as_deref().unwrap();
            assert!(error.contains("token budget"), "{error}");
            assert!(agent_meeting::meeting::budget::used(&b) <= limit);
            found = true;
            break;
        }
    }
    assert!(
        found,
        "no limit admitted the first call and refused the retry"
    );
}
