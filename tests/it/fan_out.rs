//! Parallel fan-out (docs/design/agent-turn.md#fan-out), driven by cassettes (and, where the order or
//! overlap of the calls matters, the fake HTTP server) on the demo meeting with three
//! participants: a CALL_AGENTS runs its calls concurrently and merges them
//! in call order whatever order the answers arrive in; `--max-parallel 1` never offers it;
//! routing errors inside a fan-out are refused like a single call's; a retry keeps its fixed
//! call number; a killed fan-out resumes without asking twice; a recorded one replays the same;
//! `share/meeting.sh` equals the driver; progress and the report's `par` block; the budget.

use std::path::Path;

use serde_json::{json, Value};

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::fake_http::{json as http, openai_ok, Action, FakeServer};
use crate::fixtures::pm::{self, With};
use crate::fixtures::{resume_cmd, without_timings, Cassette, NOW};
use crate::harness::{cli, every_case, wait_for, Cli, Workdir};
use crate::harness::{skip_without, Tool};

const AGENTS: &str = "arch,biz,sre";

/// `agent`'s answer making one point.
fn says(agent: &str, point: &str) -> Value {
    pm::answer(&format!("{agent} says: {point}."), &[point])
}

/// `meeting` on the demo with arch, biz and sre (the built-in agents, and the built-in PM: the
/// run outside the repository's `agents/`), offline, clock and trace id pinned, run in
/// `work`.
fn fan_meeting(work: &Path, cassette: &Path, extra: &[&str]) -> Cli {
    let mut cmd = fan_base(work);
    cmd.args(["--agents", AGENTS, "--provider", "replay", "--quiet"])
        .arg("--cassette")
        .arg(cassette)
        .arg("--report-file")
        .arg(work.join("report.md"))
        .args(extra);
    cmd
}

/// [`fan_meeting`] without the agents, a provider or a report file.
fn fan_base(work: &Path) -> Cli {
    let mut cmd = cli("meeting");
    cmd.current_dir(work)
        .env("AGENT_MEETING_NOW", NOW)
        .arg("--meeting-file")
        .arg(crate::harness::root().join("meetings/demo.yaml"))
        .arg("--run-dir")
        .arg(work.join("runs"))
        .args(["--trace-id", "fan-test"]);
    cmd
}

/// A fake OpenAI server for a fan-out meeting: the PM's first request gets a fan-out to arch,
/// biz and sre, its later ones FINISH; each agent's reply goes through `hold(agent, reply)`,
/// which may hold it (see `fake_http::Action`).
fn fan_server(hold: impl Fn(&str, Action) -> Action + Send + 'static) -> FakeServer {
    let pm_rounds = AtomicUsize::new(0);
    FakeServer::answering(move |req| {
        let body = req.body.as_str();
        let reply = |v: Value| http(200, &openai_ok(&v.to_string(), Some((100, 10))));
        if body.contains("pm_decision") {
            return match pm_rounds.fetch_add(1, Ordering::SeqCst) {
                0 => reply(pm::fan_out(&[("arch", QA), ("biz", QB), ("sre", QC)])),
                _ => reply(pm::done()),
            };
        }
        let [a, b, _] = [QA, QB, QC].map(|q| body.contains(q));
        match (a, b) {
            (true, _) => hold(
                "arch",
                reply(says("arch", "Forty engineering hours a month")),
            ),
            (_, true) => hold(
                "biz",
                reply(says("biz", "A replica costs 1,240 USD a month")),
            ),
            _ => hold(
                "sre",
                reply(says("sre", "The run missed its deadline 9 times")),
            ),
        }
    })
}

/// [`fan_meeting`] against `server` as its OpenAI provider.
fn live_fan_meeting(work: &Path, server: &FakeServer, extra: &[&str]) -> Cli {
    let mut cmd = fan_base(work);
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args(["--agents", AGENTS, "--provider", "openai", "--quiet"])
        .arg("--report-file")
        .arg(work.join("report.md"))
        .args(extra);
    cmd
}

/// Which agent's question a request of the fan-out server asked.
fn asked(req: &crate::fake_http::Recorded) -> &'static str {
    [(QA, "arch"), (QB, "biz"), (QC, "sre")]
        .into_iter()
        .find(|(q, _)| req.body.contains(q))
        .map_or("pm", |(_, who)| who)
}

/// Who the fan-out server answered, in the order it sent the answers.
fn answered_in_order(server: &FakeServer) -> Vec<&'static str> {
    server
        .answer_order()
        .into_iter()
        .map(|i| asked(&server.request(i)))
        .collect()
}

/// The JSON lines of a file of the run folder.
fn lines(work: &Workdir, name: &str) -> Vec<Value> {
    work.read(format!("runs/fan-test/{name}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

/// The meeting refused one PM answer, for `why`.
fn refused_once(work: &Workdir, why: &str) {
    let events = lines(work, "events.jsonl");
    let invalid = of_type(&events, "pm_invalid_output");
    assert_eq!(invalid.len(), 1, "{events:?}");
    let error = invalid[0]["error"].as_str().unwrap();
    assert!(error.contains(why), "{error}");
}

/// The last board the run kept.
fn final_board(work: &Workdir) -> Value {
    crate::fixtures::final_board(&work.join("runs/fan-test"))
}

const QA: &str = "What does the nightly run cost us in engineering hours per month?";
const QB: &str = "What would a read replica cost per month at list price?";
const QC: &str = "How often did the nightly run miss its deadline last quarter?";

/// A fan-out to arch, biz and sre, then FINISH.
fn three_way() -> Cassette {
    Cassette::new()
        .pm(pm::fan_out(&[("arch", QA), ("biz", QB), ("sre", QC)]))
        .agent("arch", says("arch", "Forty engineering hours a month"))
        .agent("biz", says("biz", "A replica costs 1,240 USD a month"))
        .agent("sre", says("sre", "The run missed its deadline 9 times"))
        .pm(pm::done())
}

#[test]
fn a_fan_out_merges_in_call_order_whatever_order_the_answers_arrive_in() {
    // arch, the first call, is answered last: after the PM's request, biz's and sre's.
    let server = fan_server(|who, reply| match who {
        "arch" => reply.after_responses(3),
        _ => reply,
    });
    let work = Workdir::new();
    let out = live_fan_meeting(work.path(), &server, &[]).run();
    out.check(out.code() == Some(0), "the meeting");
    assert!(server.missed().is_empty(), "{:?}", server.missed());
    let order = answered_in_order(&server);
    assert_eq!(order[0], "pm");
    assert_eq!(order[3], "arch", "arch's answer was sent last: {order:?}");

    // The exchange log is in call order, though arch's answer arrived last.
    let log = lines(&work, "llm.jsonl");
    let seqs: Vec<(u64, &str)> = log
        .iter()
        .map(|l| (l["seq"].as_u64().unwrap(), l["caller"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seqs,
        [(1, "pm"), (2, "arch"), (3, "biz"), (4, "sre"), (5, "pm")]
    );
    let dir = work.join("runs/fan-test");
    let parts: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".part"))
        .collect();
    assert!(parts.is_empty(), "side files left: {parts:?}");

    // Events in call order, each call in its own loop, as if one by one.
    let events = lines(&work, "events.jsonl");
    let loops_of = |t: &str| -> Vec<(String, u64)> {
        of_type(&events, t)
            .iter()
            .filter(|e| e["kind"] == "task" || t != "pm_decision")
            .map(|e| {
                let who = if t == "pm_decision" {
                    &e["to"]
                } else {
                    &e["caller"]
                };
                (
                    who.as_str().unwrap().to_string(),
                    e["loop"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let want = vec![
        ("arch".to_string(), 1),
        ("biz".to_string(), 2),
        ("sre".to_string(), 3),
    ];
    assert_eq!(loops_of("pm_decision"), want);
    assert_eq!(loops_of("agent_result"), want);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let first_result = types.iter().position(|t| *t == "agent_result").unwrap();
    assert_eq!(
        &types[first_result - 1..first_result + 5],
        [
            "llm_call",
            "agent_result",
            "llm_call",
            "agent_result",
            "llm_call",
            "agent_result"
        ]
    );
    assert_eq!(of_type(&events, "board_merged").len(), 3);

    // The whiteboard in call order; three loops used; every call counted once.
    let board = final_board(&work);
    assert_eq!(
        key_points(&board),
        json!([
            "Forty engineering hours a month",
            "A replica costs 1,240 USD a month",
            "The run missed its deadline 9 times"
        ])
    );
    assert_eq!(board["loop_count"], 3);
    assert_eq!(board["usage"]["calls"], 5);
    for (caller, n) in [("pm", 2), ("arch", 1), ("biz", 1), ("sre", 1)] {
        assert_eq!(board["usage"]["by_caller"][caller]["calls"], n, "{caller}");
    }
    assert_eq!(board["usage"]["prompt_tokens"], 500);
    let md = work.read("report.md");
    assert!(md.contains("- Loops used: 3 / 6\n"), "{md}");
}

/// The first PM request of a meeting: its schema and its user message.
fn first_pm_request(work: &Workdir) -> (Value, String) {
    let log = lines(work, "llm.jsonl");
    let pm = &log[0];
    assert_eq!(pm["caller"], "pm");
    let text = pm["messages"][0]["content"].as_str().unwrap().to_string();
    (pm["schema"]["schema"].clone(), text)
}

#[test]
fn max_parallel_1_never_offers_call_agents() {
    let offered = |extra: &[&str]| {
        let work = Workdir::new();
        let c = Cassette::new()
            .pm(pm::call("arch", QA))
            .agent("arch", says("arch", "a replica halves it"))
            .pm(pm::done_from_documents())
            .write(work.join("c.jsonl"));
        fan_meeting(work.path(), &c, extra).run().success();
        first_pm_request(&work)
    };
    let (schema, text) = offered(&[]);
    assert_eq!(
        schema["properties"]["next_action"]["enum"],
        json!(["CALL_AGENT", "CALL_AGENTS"])
    );
    assert!(schema["properties"]["calls"].is_object(), "{schema}");
    assert!(
        text.contains("CALL_AGENTS asks 2-3 different participants at once"),
        "{text}"
    );
    let (schema, text) = offered(&["--max-parallel", "1"]);
    assert_eq!(
        schema["properties"]["next_action"]["enum"],
        json!(["CALL_AGENT"])
    );
    assert!(schema["properties"].get("calls").is_none(), "{schema}");
    assert!(!text.contains("CALL_AGENTS"), "{text}");
    // Two loops left offer at most two calls.
    let (_, text) = offered(&["--max-loops", "2"]);
    assert!(
        text.contains("CALL_AGENTS asks 2 different participants"),
        "{text}"
    );
    assert!(!text.contains("2-2"), "{text}");
}

#[test]
fn a_call_agents_where_it_is_not_offered_is_refused_and_asked_again() {
    let work = Workdir::new();
    let c = Cassette::new()
        .pm(pm::fan_out(&[("arch", QA), ("biz", QB)]))
        .pm(pm::call("arch", QA))
        .agent("arch", says("arch", "Forty engineering hours a month"))
        .pm(pm::done_from_documents())
        .write(work.join("c.jsonl"));
    let out = fan_meeting(work.path(), &c, &["--max-parallel", "1"]).run();
    out.check(out.code() == Some(0), "the meeting");
    refused_once(&work, "CALL_AGENTS is not available in this meeting");
    assert_eq!(final_board(&work)["loop_count"], 1);
}

#[test]
fn routing_errors_in_a_fan_out_are_refused_like_a_single_calls() {
    // (the PM's bad fan-out, the event it leaves, a part of the error the PM is shown)
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            pm::fan_out(&[("arch", QA), ("ops", QB)]),
            "pm_routing_error",
            "calls[1].target_agent \"ops\" is not a participant (allowed: arch, biz, sre)",
        ),
        (
            pm::fan_out(&[("arch", QA), ("arch", QB)]),
            "pm_routing_error",
            "calls[1].target_agent \"arch\" is asked twice",
        ),
        (
            pm::fan_out(&[("arch", QA), ("biz", QB), ("sre", QC), ("arch", QB)]),
            "pm_invalid_output",
            "calls: 4 calls, but at most 3 are allowed now",
        ),
        (
            pm::fan_out(&[("arch", "..."), ("biz", QB)]),
            "pm_invalid_output",
            "calls[0].prompt_for_agent",
        ),
    ];
    every_case(
        cases,
        |(_, _, error)| error.to_string(),
        |(bad, event, error)| {
            let work = Workdir::new();
            let c = Cassette::new()
                .pm(bad)
                .pm(pm::call("arch", QA))
                .agent("arch", says("arch", "Forty engineering hours a month"))
                .pm(pm::done_from_documents())
                .write(work.join("c.jsonl"));
            let out = fan_meeting(work.path(), &c, &[]).run();
            out.check(out.code() == Some(0), error);
            let events = lines(&work, "events.jsonl");
            let refused = of_type(&events, event);
            assert_eq!(refused.len(), 1, "{error}: {events:?}");
            assert!(
                refused[0]["error"].as_str().unwrap().contains(error),
                "{error}: {}",
                refused[0]
            );
            let log = lines(&work, "llm.jsonl");
            let retry = log[1]["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(retry.contains(error), "the PM is told: {retry}");
            assert_eq!(final_board(&work)["loop_count"], 1, "{error}");
            let md = work.read("report.md");
            assert!(md.contains("it was asked again"), "{md}");
        },
    );
}

#[test]
fn a_repeated_question_inside_a_fan_out_is_refused() {
    let work = Workdir::new();
    let c = Cassette::new()
        .pm(pm::call("arch", QA))
        .agent("arch", says("arch", "Forty engineering hours a month"))
        .pm(pm::fan_out(&[("biz", QB), ("arch", QA)]))
        .pm(pm::fan_out(&[("biz", QB), ("sre", QC)]))
        .agent("biz", says("biz", "A replica costs 1,240 USD a month"))
        .agent("sre", says("sre", "The run missed its deadline 9 times"))
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let out = fan_meeting(work.path(), &c, &[]).run();
    out.check(out.code() == Some(0), "the meeting");
    let events = lines(&work, "events.jsonl");
    assert_eq!(of_type(&events, "pm_repeated_question").len(), 1);
    assert_eq!(final_board(&work)["loop_count"], 3);
}

/// A meeting killed (SIGKILL) while a fan-out waits for its slowest call resumes to the same
/// report as the uninterrupted run, and no call is asked twice: the calls that had answered
/// are taken from their side files.
#[test]
fn a_fan_out_killed_half_way_resumes_without_asking_twice() {
    use std::os::unix::process::ExitStatusExt;

    let plain = Workdir::new();
    let c = three_way().write(plain.join("c.jsonl"));
    fan_meeting(plain.path(), &c, &[]).run().success();
    let want = plain.read("report.md");

    let work = Workdir::new();
    // sre, the last call, is still thinking at the kill: its reply takes ten minutes, so the
    // kill lands while it is pending however slow the machine. The resumed meeting asks it
    // again, from the same cassette without the delay.
    let c = three_way().delay(4, 600_000).write(work.join("c.jsonl"));
    let run = work.join("runs/fan-test");
    let mut child = fan_meeting(work.path(), &c, &[]).spawn();
    let answered = |seq: u64| {
        std::fs::read_to_string(run.join(format!("llm.jsonl.{seq}.part")))
            .is_ok_and(|t| t.ends_with('\n'))
    };
    wait_for("the side files of the two answered calls", || {
        assert!(child.try_wait().unwrap().is_none(), "the meeting ended");
        answered(2) && answered(3)
    });
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "killed mid-fan-out");
    assert!(!work.join("report.md").exists());
    assert!(!answered(4), "sre had not answered");
    assert_eq!(three_way().write(work.join("c.jsonl")), c);

    let out = resume_cmd(work.path(), &run).run();
    out.check(out.code() == Some(0), "the resumed meeting");
    assert_eq!(work.read("report.md"), want);
    let seqs: Vec<u64> = lines(&work, "llm.jsonl")
        .iter()
        .map(|l| l["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5], "each call asked once, in call order");
    assert!(!run.join("llm.jsonl.2.part").exists());
}

/// The report's flow diagram draws a fan-out as one `par` block, a branch per call with its
/// answer, and so does `render-report --events` from the whole events file.
#[test]
fn the_flow_diagram_draws_a_fan_out_as_par() {
    let work = Workdir::new();
    let c = three_way().write(work.join("c.jsonl"));
    fan_meeting(work.path(), &c, &[]).run().success();
    let want = "    par L1-L3 at once
        PM->>arch: L1 What does the nightly run cost us in engineering hours pe...
        arch-->>PM: L1 arch says: Forty engineering hours a month.
    and
        PM->>biz: L2 What would a read replica cost per month at list price?
        biz-->>PM: L2 biz says: A replica costs 1,240 USD a month.
    and
        PM->>sre: L3 How often did the nightly run miss its deadline last quar...
        sre-->>PM: L3 sre says: The run missed its deadline 9 times.
    end
    Note over PM: L4 FINISH";
    let md = work.read("report.md");
    assert!(md.contains(want), "{md}");
    let board = final_board(&work);
    let out = cli("render-report")
        .arg("--events")
        .arg(work.join("runs/fan-test/events.jsonl"))
        .args(["--markdown"])
        .stdin(board.to_string())
        .run();
    out.success().stdout_has(want);
}

/// Progress shows a fan-out's calls together: the PM's calls under one header, the answers
/// under another, each loop counted.
#[test]
fn progress_shows_a_fan_outs_calls_together() {
    let work = Workdir::new();
    let c = three_way().write(work.join("c.jsonl"));
    let mut cmd = cli("meeting");
    cmd.current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .arg("--meeting-file")
        .arg(crate::harness::root().join("meetings/demo.yaml"))
        .args([
            "--agents",
            AGENTS,
            "--provider",
            "replay",
            "--trace-id",
            "fan-test",
        ])
        .arg("--cassette")
        .arg(&c)
        .arg("--report-file")
        .arg(work.join("report.md"));
    let out = cmd.run();
    out.success();
    let err = out.stderr();
    eprintln!("{err}");
    for part in [
        "[loops 1-3/6] pm → arch, biz, sre at once (",
        " tokens)\n    → arch: What does the nightly run cost",
        "\n    → sre: How often did the nightly run miss",
        "[loop 4/6] pm: FINISH (",
    ] {
        assert!(err.contains(part), "{part}\n{err}");
    }
    // Each answer with its time taken (whatever the machine's speed) and its tokens.
    let answers = regex::Regex::new(
        r"\[loops 1-3/6\] answers\n    arch: 1 key point, 0 risks, 0 citations \(\d+\.\d s, 110 tokens\)\n    biz: 1 key point,",
    )
    .unwrap();
    assert!(answers.is_match(&err), "{err}");
}

/// `share/meeting.sh` gives the same board and report as the driver on a fan-out meeting.
#[test]
fn the_shell_loop_equals_the_driver_on_a_fan_out_meeting() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    // arch's answer most likely comes last
    let c = three_way().delay(2, 300).write(work.join("c.jsonl"));
    fan_meeting(work.path(), &c, &[]).run().success();
    let mut want = without_timings(final_board(&work));
    let want_report = work.read("report.md");

    let root = crate::harness::root();
    let (sh_report, sh_board) = (work.join("sh-report.md"), work.join("sh-board.json"));
    let mut sh = Cli::new(std::process::Command::new("sh"));
    sh.current_dir(work.path())
        .arg(root.join("share/meeting.sh"))
        .arg(root.join("meetings/demo.yaml"))
        .arg(AGENTS)
        .arg(&sh_report)
        .env("PATH", crate::harness::programs_path())
        .env("AGENT_MEETING_NOW", NOW)
        .env("AGENT_MEETING_PROVIDER", "replay")
        .env("MEETING_CASSETTE", &c)
        .env("TRACE_ID", "fan-test")
        .env("BOARD_OUT", &sh_board);
    let out = sh.run();
    out.check(out.code() == Some(0), "the shell loop (needs jq)");
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&sh_board).unwrap()).unwrap();
    let mut got = without_timings(got);
    for b in [&mut got, &mut want] {
        b.as_object_mut().unwrap().remove("report_file");
    }
    assert_eq!(got, want, "shell loop and meeting disagree");
    assert_eq!(std::fs::read_to_string(&sh_report).unwrap(), want_report);
}

/// A fan-out recorded from a live (fake) server, its answers arriving out of order, replays
/// from the recording to the same meeting, with `--strict-replay`: the recording's lines are in
/// call order, and every call's number is the one the replay gives it.
#[test]
fn a_recorded_fan_out_meeting_replays_identically() {
    // arch, the first call, is answered last.
    let server = fan_server(|who, reply| match who {
        "arch" => reply.after_responses(3),
        _ => reply,
    });
    let work = Workdir::new();
    let rec = work.join("rec.jsonl");
    let mut live = live_fan_meeting(work.path(), &server, &["--record"]);
    live.arg(&rec);
    let out = live.run();
    out.check(out.code() == Some(0), "the live meeting");
    assert_eq!(answered_in_order(&server)[3], "arch");
    let recorded: Vec<(u64, String)> = std::fs::read_to_string(&rec)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            (
                v["seq"].as_u64().unwrap(),
                v["caller"].as_str().unwrap().into(),
            )
        })
        .collect();
    let callers = ["pm", "arch", "biz", "sre", "pm"];
    let want: Vec<(u64, String)> = (1..=5).zip(callers.map(String::from)).collect();
    assert_eq!(recorded, want, "the recording is in call order");
    let live_board = without_timings(final_board(&work));
    let live_md = work.read("report.md");
    std::fs::remove_dir_all(work.join("runs")).unwrap();

    let out = fan_meeting(work.path(), &rec, &["--strict-replay"]).run();
    out.check(out.code() == Some(0), "the replay");
    let replay_board = without_timings(final_board(&work));
    for key in [
        "key_points",
        "flow",
        "loop_count",
        "latest_agent_outputs",
        "evidence",
    ] {
        assert_eq!(replay_board[key], live_board[key], "{key}");
    }
    assert_eq!(replay_board["usage"]["calls"], live_board["usage"]["calls"]);
    let body =
        |md: &str| md[md.find("## Topic").unwrap()..md.find("## Appendix").unwrap()].to_string();
    assert_eq!(body(&work.read("report.md")), body(&live_md));
}

/// An unusable answer of one call is asked again without holding back the others, at the call
/// number fixed for it before the fan-out started (attempt 2 of call 2 of 3 after call 1:
/// 1 + 3 + 1 + 1 = 6); number 5, fixed for call 1's retry, stays unused, and the PM goes on
/// from the highest number used.
#[test]
fn a_retry_inside_a_fan_out_takes_its_fixed_call_number() {
    let work = Workdir::new();
    let empty = says("biz", "x").with("response", "");
    let c = Cassette::new()
        .pm(pm::fan_out(&[("arch", QA), ("biz", QB), ("sre", QC)]))
        .agent("arch", says("arch", "Forty engineering hours a month"))
        .agent("biz", empty)
        .agent("sre", says("sre", "The run missed its deadline 9 times"))
        .at(6)
        .agent("biz", says("biz", "A replica costs 1,240 USD a month"))
        .pm(pm::done())
        .write(work.join("c.jsonl"));
    let mut cmd = fan_base(work.path());
    cmd.args(["--agents", AGENTS, "--provider", "replay"])
        .arg("--cassette")
        .arg(&c)
        .arg("--report-file")
        .arg(work.join("report.md"));
    let out = cmd.run();
    out.check(out.code() == Some(0), "the meeting");
    // The number left unused is no call: one count of LLM calls in the terminal, the
    // MeetingResult and the report (the board's counter stands at 7).
    out.stderr_has("6 LLM calls (6 answered)");
    assert_eq!(out.json::<Value>()["usage"]["calls"], 6, "{out}");
    let seqs: Vec<(u64, String)> = lines(&work, "llm.jsonl")
        .iter()
        .map(|l| {
            (
                l["seq"].as_u64().unwrap(),
                l["caller"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want: Vec<(u64, String)> = [
        (1, "pm"),
        (2, "arch"),
        (3, "biz"),
        (6, "biz"),
        (4, "sre"),
        (7, "pm"),
    ]
    .map(|(s, c)| (s, c.to_string()))
    .to_vec();
    assert_eq!(seqs, want, "in call order, each call's attempts together");
    let board = final_board(&work);
    assert_eq!(board["usage"]["calls"], 7);
    assert_eq!(board["usage"]["by_caller"]["biz"]["calls"], 2);
    assert_eq!(key_points(&board)[1], "A replica costs 1,240 USD a month");
    let report = std::fs::read_to_string(work.join("report.md")).unwrap();
    assert!(
        report.contains("- LLM calls: 6\n"),
        "the report counts requests made"
    );
    let events = lines(&work, "events.jsonl");
    let retry = of_type(&events, "agent_retry");
    assert_eq!((retry.len(), &retry[0]["loop"]), (1, &json!(2)));
}

/// A person cannot be one of a fan-out's calls: the PM is not offered them there, and a
/// CALL_AGENTS naming one is refused like a routing error.
#[test]
fn a_person_in_a_fan_out_is_a_routing_error() {
    let work = Workdir::new();
    work.write(
        "agents/ana.yaml",
        "name: ana\nkind: human\nrole: Ops lead\ndescription: Knows the nights on call.\n",
    );
    let c = Cassette::new()
        .pm(pm::fan_out(&[("arch", QA), ("ana", QB)]))
        .pm(pm::call("arch", QA))
        .agent("arch", says("arch", "Forty engineering hours a month"))
        .pm(pm::done_from_documents())
        .write(work.join("c.jsonl"));
    let mut cmd = fan_base(work.path());
    cmd.args([
        "--agents",
        "arch,biz,ana",
        "--provider",
        "replay",
        "--quiet",
    ])
    .arg("--cassette")
    .arg(&c)
    .arg("--report-file")
    .arg(work.join("report.md"));
    let out = cmd.run();
    out.check(out.code() == Some(0), "the meeting");
    let (schema, _) = first_pm_request(&work);
    assert_eq!(
        schema["properties"]["calls"]["anyOf"][0]["items"]["properties"]["target_agent"]["enum"],
        json!(["arch", "biz"])
    );
    let events = lines(&work, "events.jsonl");
    let refused = of_type(&events, "pm_routing_error");
    assert_eq!(refused.len(), 1, "{events:?}");
    assert!(
        refused[0]["error"]
            .as_str()
            .unwrap()
            .contains("\"ana\" is a person"),
        "{}",
        refused[0]
    );
}

/// Under a token budget a fan-out must leave room for all its calls and the closing report: one
/// that does not fit is refused before any call (the PM asks fewer), and the meeting still ends
/// with its report inside the budget.
#[test]
fn a_fan_out_the_token_budget_cannot_hold_is_refused() {
    let work = Workdir::new();
    let c = Cassette::new()
        .pm(pm::fan_out(&[("arch", QA), ("biz", QB), ("sre", QC)]))
        .pm(pm::call("arch", QA))
        .agent("arch", says("arch", "Forty engineering hours a month"))
        .pm(pm::done_from_documents())
        .write(work.join("c.jsonl"));
    // Room for a loop of one call and the closing round, not for three calls at once.
    let out = fan_meeting(work.path(), &c, &["--max-total-tokens", "28000"]).run();
    out.check(out.code() == Some(0), "the meeting");
    refused_once(&work, "the token budget has no room for 3 calls at once");
    let board = final_board(&work);
    assert_eq!(board["loop_count"], 1);
    assert_eq!(
        (&board["pending_calls"], &board["last_turns"]),
        (&serde_json::json!([]), &serde_json::json!([]))
    );
    let md = work.read("report.md");
    assert!(md.contains("Token budget: "), "{md}");
}

/// The calls of a fan-out run at once: the fake server holds each of the three requests until
/// all three are in flight together, and saw them overlap. (Calls made one after another would
/// leave the first held until the server's guard gave up on the others, and the server would
/// record the miss.)
#[test]
fn a_fan_outs_calls_run_concurrently() {
    let server = fan_server(|_, reply| reply.together(3));
    let work = Workdir::new();
    live_fan_meeting(work.path(), &server, &[]).run().success();
    assert_eq!(server.missed(), Vec::<String>::new());
    assert_eq!(server.max_in_flight(), 3, "the three calls overlapped");
    assert_eq!(answered_in_order(&server).len(), 5);
}

/// The whiteboard's key points: the record's findings of that kind, in order.
fn key_points(board: &Value) -> Value {
    board["record"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "key_point")
        .map(|f| f["text"].clone())
        .collect()
}
