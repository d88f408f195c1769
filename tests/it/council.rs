//! The council round (docs/design/council.md), driven by cassettes: three members vote blind,
//! rank each other's answers anonymized and shuffled, the PM sees the aggregate, asks the
//! dissenter and decides; the report's Council section shows each vote, the ranking and the
//! dissent. The recorded requests prove the blindness and the anonymity; a vote for an option
//! not in the packet gets its one retry; a meeting stopped mid-council resumes to the same
//! report; the budget reserves for the council's calls; the shell loop agrees with the driver;
//! `--provider sample --council` answers every council call validly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::fixtures::pm::{self, With};
use crate::fixtures::{final_board, without_timings, Cassette, NOW};
use crate::harness::{cli, programs_path, root, skip_without, Cli, Tool, Workdir};

const DOC: &str = "docs/timings.md";
const TRACE: &str = "council-test";

const MEETING: &str = "topic: Move nightly reporting off the primary database?
decision_packet:
  decision_to_make: Where should nightly reporting run next quarter?
  options: [Tune the primary, Read replica]
  evaluation_dimensions: [Cost, Risk]
context_sources:
  - {type: file, path: docs/timings.md, purpose: Job timings}
";

/// Each member's reason: words no other member's prompt may hold before the ranking.
const REASONS: [(&str, &str); 3] = [
    (
        "arch",
        "A replica removes the read contention on the primary",
    ),
    (
        "biz",
        "Tuning the slowest jobs costs nothing extra per month",
    ),
    (
        "sre",
        "The replica lag of forty minutes still fits the deadline",
    ),
];

fn work(in_file: bool) -> Workdir {
    let work = Workdir::new();
    let council = if in_file { "council: true\n" } else { "" };
    work.write("meeting.yaml", format!("{MEETING}{council}"));
    work.write(
        DOC,
        "The nightly run takes 3h40m and overran the 06:00 deadline 7 times in 90 days.\n\
         Replica lag reached 40 minutes during the March load test.\n",
    );
    work
}

fn vote(choice: &str, confidence: &str, reason: &str) -> Value {
    json!({"choice": choice, "confidence": confidence, "reasons": [reason], "citations": [
        {"document_id": DOC, "source_path": DOC, "quote": "overran the 06:00 deadline 7 times"}]})
}

/// The three blind votes (a fan-out: calls 1 to 3): arch and sre for the replica, biz against.
fn votes() -> Cassette {
    Cassette::new()
        .agent("arch", vote("Read replica", "high", REASONS[0].1))
        .agent("biz", vote("Tune the primary", "medium", REASONS[1].1))
        .agent("sre", vote("Read replica", "medium", REASONS[2].1))
}

/// The labels the council gave the members (shuffled from the trace id): init-board, the
/// votes' agent-turn and merge-board run as programs on the meeting file.
fn labels(work: &Workdir) -> BTreeMap<String, String> {
    let c = votes().write(work.join("votes.jsonl"));
    let packet = cli("collect-context")
        .current_dir(work.path())
        .args(["--meeting-file", "meeting.yaml"])
        .run();
    packet.success();
    let board = cli("init-board")
        .current_dir(work.path())
        .args(["--agents", "arch,biz,sre", "--council", "--trace-id", TRACE])
        .args(["--provider", "replay"])
        .stdin(packet.stdout())
        .run();
    board.success();
    let turned = cli("agent-turn")
        .current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--provider", "replay", "--cassette"])
        .arg(&c)
        .stdin(board.stdout())
        .run();
    turned.success();
    let merged = cli("merge-board").stdin(turned.stdout()).run();
    merged.success();
    let b: Value = merged.json();
    b["council"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["label"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn finish(choice: &str) -> Value {
    // The Recommendation names the choice: one naming another option goes back once.
    pm::finish(&format!("### Executive Summary\nBoth options were weighed.\n### Recommendation\n{choice}, for the nightly jobs."))
        .with("decision", json!({"choice": choice, "confidence": "medium", "revisit_if": "the replica lags"}))
}

/// The whole meeting: the votes, the rankings (calls 4 to 6: arch's answer first for biz and
/// sre, sre's first for arch), the PM asks the dissenter biz, biz answers, the PM decides.
fn whole(labels: &BTreeMap<String, String>, choice: &str) -> Cassette {
    let l = |n: &str| labels[n].clone();
    votes()
        .agent("arch", json!({"ranking": [l("sre"), l("biz")]}))
        .agent("biz", json!({"ranking": [l("arch"), l("sre")]}))
        .agent("sre", json!({"ranking": [l("arch"), l("biz")]}))
        .pm(pm::call(
            "biz",
            "What would tuning gain against the deadline, in minutes?",
        ))
        .agent(
            "biz",
            pm::answer(
                "Tuning gains about 10 minutes a night.",
                &["Tuning gains about 10 minutes a night"],
            ),
        )
        .pm(finish(choice))
}

fn meeting(work: &Workdir, cassette: &Path, extra: &[&str]) -> Cli {
    let mut cmd = cli("meeting");
    cmd.current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--meeting-file", "meeting.yaml", "--agents", "arch,biz,sre"])
        .args(["--provider", "replay", "--trace-id", TRACE])
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
    work.join("runs").join(TRACE)
}

/// The exchange log's requests: `(seq, caller, the whole request text)`.
fn requests(work: &Workdir) -> Vec<(u64, String, String)> {
    work.read(format!("runs/{TRACE}/llm.jsonl"))
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let text = format!("{}\n{}\n{}", v["system"], v["messages"], v["schema"]);
            (
                v["seq"].as_u64().unwrap(),
                v["caller"].as_str().unwrap().to_string(),
                text,
            )
        })
        .collect()
}

#[test]
fn a_council_meeting_reports_each_vote_the_ranking_and_the_dissent() {
    let work = work(false);
    let labels = labels(&work);
    let c = whole(&labels, "Read replica").write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet", "--council"]).run().exit(0);
    let report = work.read("report.md");
    assert!(report.contains("## Council"), "{report}");
    for want in [
        "- **arch** (replay): Read replica, confidence high. Reasons: A replica removes the read contention on the primary. Ranked by the others: 2 points: 1st by biz, 1st by sre",
        "- **biz** (replay): Tune the primary, confidence medium. Reasons: Tuning the slowest jobs costs nothing extra per month. Ranked by the others: 0 points: 2nd by arch, 2nd by sre",
        "- **sre** (replay): Read replica, confidence medium.",
        "Ranked by the others: 1 point: 1st by arch, 2nd by biz",
        "**Vote:** Tune the primary 1 (biz); Read replica 2 (arch, sre). Leading: Read replica, 2 of 3 votes (a majority).",
        "- biz chose Tune the primary: Tuning the slowest jobs costs nothing extra per month",
        "The decision follows the council's majority (Read replica, 2 of 3 votes).",
    ] {
        assert!(report.contains(want), "missing {want:?} in\n{report}");
    }
    // A vote and a ranking are short: the council's calls set their own reply limits.
    let limits: Vec<(String, Value)> = work
        .read(format!("runs/{TRACE}/llm.jsonl"))
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            (
                v["caller"].as_str().unwrap().to_string(),
                v["max_tokens"].clone(),
            )
        })
        .collect();
    let of = |who: &str| -> Vec<&Value> {
        limits
            .iter()
            .filter(|(c, _)| c == who)
            .map(|(_, m)| m)
            .collect()
    };
    assert_eq!(of("arch"), [&json!(800), &json!(300)], "{limits:?}");
    let board = final_board(&run_dir(&work));
    assert_eq!(board["council"]["phase"], "done");
    // Council calls are no loops: the loop budget is the PM's questions'.
    assert_eq!(board["loop_count"], 1);
    // The PM saw the aggregate once, compactly, and was told to ask where members disagree.
    let pm: Vec<String> = requests(&work)
        .into_iter()
        .filter(|(_, caller, _)| caller == "pm")
        .map(|(_, _, text)| text)
        .collect();
    assert_eq!(
        pm[0].matches("Votes: Tune the primary 1 (biz)").count(),
        1,
        "{}",
        pm[0]
    );
    assert!(
        pm[0].contains("Dissent: biz chose Tune the primary"),
        "{}",
        pm[0]
    );
    assert!(pm[0].contains("ask them before you decide"), "{}", pm[0]);
}

/// A decision against the council's majority says so in the Recommendation, with the PM's
/// reason (`decision.against_council`, offered only with a council); without one, the PM
/// gives none and the line says so.
#[test]
fn a_decision_against_the_majority_says_so_and_why() {
    let work = work(false);
    let labels = labels(&work);
    let lines = whole(&labels, "Tune the primary");
    let last = lines.lines().len() as u64;
    let lines = lines.edit(last, |l| {
        let mut d: Value = serde_json::from_str(l["response"].as_str().unwrap()).unwrap();
        d["decision"]["against_council"] =
            json!("Tuning gains 10 minutes a night, enough for the deadline.");
        l["response"] = json!(d.to_string());
    });
    let c = lines.write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet", "--council"]).run().exit(0);
    let report = work.read("report.md");
    assert!(
        report.contains("The decision does not follow the council's majority (Read replica, 2 of 3 votes): the PM's reason: Tuning gains 10 minutes a night, enough for the deadline."),
        "{report}"
    );
    // The PM was offered the field and told when to use it.
    let pm = requests(&work)
        .into_iter()
        .find(|(_, c, _)| c == "pm")
        .unwrap()
        .2;
    assert!(pm.contains("against_council"), "{pm}");

    let bare = self::work(false);
    let c = whole(&labels, "Tune the primary").write(bare.join("c.jsonl"));
    meeting(&bare, &c, &["--quiet", "--council"]).run().exit(0);
    assert!(
        bare.read("report.md").contains(
            "(Read replica, 2 of 3 votes): the PM gave no reason beyond its recommendation"
        ),
        "{}",
        bare.read("report.md")
    );
}

/// A meeting without a council sends nothing of it: not the field, not the rule.
#[test]
fn a_meeting_without_a_council_sees_nothing_of_it() {
    let work = work(false);
    let c = Cassette::new()
        .pm(pm::call("biz", "What would tuning gain?"))
        .agent(
            "biz",
            pm::answer("Ten minutes.", &["Tuning gains ten minutes"]),
        )
        .pm(finish("Read replica"))
        .write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet"]).run().exit(0);
    let log = work.read(format!("runs/{TRACE}/llm.jsonl"));
    assert!(
        !log.contains("against_council") && !log.contains("council"),
        "{log}"
    );
    assert!(!work.read("report.md").contains("## Council"));
}

/// Blind: no member's vote request holds another member's answer; the ranking request holds
/// the others' answers under shuffled labels, never who gave them, and never its own.
#[test]
fn the_votes_are_blind_and_the_ranking_anonymized() {
    let work = work(false);
    let labels = labels(&work);
    let c = whole(&labels, "Read replica").write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet", "--council"]).run().exit(0);
    let reqs = requests(&work);
    for (seq, caller, text) in &reqs[..3] {
        assert!(text.contains("council_vote"), "call {seq}: {text}");
        for (who, reason) in REASONS {
            assert!(
                !text.contains(reason),
                "{caller}'s vote request (call {seq}) holds {who}'s answer"
            );
        }
    }
    for (seq, caller, text) in &reqs[3..6] {
        assert!(text.contains("council_ranking"), "call {seq}");
        let part = text.split("council member, ranking").nth(1).unwrap();
        for (who, reason) in REASONS {
            assert_eq!(
                part.contains(reason),
                who != caller,
                "{caller} ranks {who}'s answer"
            );
            assert!(
                !part.contains(&format!("{who}:")) && !part.contains(&format!("by {who}")),
                "{caller}'s ranking names {who}"
            );
        }
        // The enum of the others' labels, the schema's constraint (never a regex on text).
        let others: Vec<&String> = labels
            .iter()
            .filter(|(n, _)| *n != caller)
            .map(|(_, l)| l)
            .collect();
        for l in &others {
            assert!(part.contains(&format!("Answer {l}:")), "{part}");
        }
    }
    // Labels are shuffled: not simply A, B, C in participant order (pinned for this trace id).
    let in_order: Vec<&str> = ["arch", "biz", "sre"]
        .iter()
        .map(|n| labels[*n].as_str())
        .collect();
    assert_ne!(in_order, ["A", "B", "C"], "labels {labels:?}");
    // And stable: the same trace id gives the same labels.
    assert_eq!(self::labels(&work), labels);
}

/// A vote for an option not in the packet is refused and asked again once (attempt 2 of
/// arch's call is number 4: attempt k of call i of 3 is 3k + i + 1).
#[test]
fn a_vote_for_an_option_not_in_the_packet_gets_its_one_retry() {
    let work = work(false);
    let labels = labels(&work);
    let mut c = Cassette::new()
        .agent("arch", vote("Kafka", "high", REASONS[0].1))
        .agent("biz", vote("Tune the primary", "medium", REASONS[1].1))
        .agent("sre", vote("Read replica", "medium", REASONS[2].1))
        .agent("arch", vote("read replica", "high", REASONS[0].1));
    for line in &whole(&labels, "Read replica").lines()[3..] {
        c = c.line(line.clone());
    }
    let c = c.write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet", "--council"]).run().exit(0);
    let report = work.read("report.md");
    assert!(
        report.contains("- **arch** (replay): Read replica, confidence high."),
        "{report}"
    );
    let reqs = requests(&work);
    let retry = reqs.iter().find(|(seq, _, _)| *seq == 4).unwrap();
    assert_eq!(retry.1, "arch");
    assert!(
        retry.2.contains("\\\"Kafka\\\" is not one of the options"),
        "{}",
        retry.2
    );
}

/// `--step` shows the council's fan-out; a meeting stopped with the votes not yet merged
/// resumes to the same report as one never stopped, asking no call twice.
#[test]
fn a_meeting_stopped_mid_council_resumes_to_the_same_report() {
    let whole_work = work(false);
    let labels = labels(&whole_work);
    let lines = whole(&labels, "Read replica");
    let c = lines.write(whole_work.join("c.jsonl"));
    meeting(&whole_work, &c, &["--quiet", "--council"])
        .run()
        .exit(0);

    let work = work(false);
    let c = lines.write(work.join("c.jsonl"));
    // agent-turn (the votes), merge-board, agent-turn (the rankings); stop before merging.
    let out = meeting(&work, &c, &["--step", "--council"])
        .stdin("\n\n\nq\n")
        .run();
    out.exit(130);
    let err = out.stderr();
    assert!(
        err.contains("arch: council vote: Read replica (high)"),
        "{err}"
    );
    assert!(err.contains("council ranking"), "{err}");
    assert!(err.contains("stopped before merge-board"), "{err}");
    assert!(
        err.contains("next: agent-turn (loop 1/6, status running, council: the blind votes)")
            && err.contains("next: agent-turn (loop 1/6, status running, council: the rankings)"),
        "{err}"
    );
    let out = cli("meeting")
        .current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .arg("--resume")
        .arg(run_dir(&work))
        .arg("--quiet")
        .run();
    out.exit(0);
    assert_eq!(work.read("report.md"), whole_work.read("report.md"));
    let log = work.read(format!("runs/{TRACE}/llm.jsonl"));
    assert_eq!(
        log.lines().count(),
        lines.lines().len(),
        "no call asked twice"
    );
}

/// The meeting file's `council: true` gives the same meeting as `--council`, and
/// `share/meeting.sh` (`COUNCIL=1`) runs it with the same stages: the same board and report.
#[test]
fn the_meeting_files_council_and_the_shell_loop_agree_with_the_flag() {
    let flag = work(false);
    let labels = labels(&flag);
    let lines = whole(&labels, "Read replica");
    let c = lines.write(flag.join("c.jsonl"));
    meeting(&flag, &c, &["--quiet", "--council"]).run().exit(0);
    let file = work(true);
    let c = lines.write(file.join("c.jsonl"));
    meeting(&file, &c, &["--quiet"]).run().exit(0);
    assert_eq!(file.read("report.md"), flag.read("report.md"));
    if skip_without(Tool::Jq) {
        return;
    }
    let want = without_timings(final_board(&run_dir(&flag)));
    let mut sh = Cli::new(Command::new("sh"));
    sh.current_dir(flag.path())
        .arg(root().join("share/meeting.sh"))
        .args(["meeting.yaml", "arch,biz,sre"])
        .arg(flag.join("sh-report.md"))
        .env("PATH", programs_path())
        .env("AGENT_MEETING_NOW", NOW)
        .env("AGENT_MEETING_PROVIDER", "replay")
        .env("MEETING_CASSETTE", flag.join("c.jsonl"))
        .env("TRACE_ID", TRACE)
        .env("BOARD_OUT", flag.join("sh-board.json"))
        .env("COUNCIL", "1");
    let out = sh.run();
    out.check(out.code() == Some(0), "the shell loop");
    let mut got = without_timings(serde_json::from_str(&flag.read("sh-board.json")).unwrap());
    let mut want = want;
    for b in [&mut got, &mut want] {
        b.as_object_mut().unwrap().remove("report_file");
    }
    assert_eq!(got, want, "shell loop and meeting disagree");
    assert_eq!(flag.read("sh-report.md"), flag.read("report.md"));
}

/// Under a token budget every council call keeps a reserve for the rest of the round, the
/// ranking round (three members or more) and the PM's round, at the reply limits the council's
/// calls set; a budget that cannot hold the council is refused at the
/// start, naming it.
#[test]
fn the_budget_reserves_for_the_councils_calls() {
    let work = work(false);
    let packet = cli("collect-context")
        .current_dir(work.path())
        .args(["--meeting-file", "meeting.yaml"])
        .run();
    let init = |agents: &str, budget: &str, extra: &[&str]| {
        cli("init-board")
            .current_dir(work.path())
            .args(["--agents", agents, "--council", "--provider", "replay"])
            .args(["--max-total-tokens", budget])
            .args(extra)
            .stdin(packet.stdout())
            .run()
    };
    let reserve = |out: &crate::harness::Run, n: usize| {
        out.success();
        let b: Value = out.json();
        let calls = b["pending_calls"].as_array().unwrap().clone();
        assert_eq!(calls.len(), n);
        calls[0]["reserve"].clone()
    };
    // The reply limits the council's calls set (a vote's) and an agent turn's (the PM's round).
    const VOTE: u64 = 800;
    const TURN: u64 = 1200;
    let three = reserve(&init("arch,biz,sre", "200000", &[]), 3);
    // The two other votes and the three rankings, two calls each at a vote's limit, and the
    // PM's round as two agent turns.
    assert_eq!(
        three["completion_tokens"],
        5 * 2 * VOTE + 2 * TURN,
        "{three}"
    );
    assert!(three["prompt_tokens"].as_u64().unwrap() > 10_000, "{three}");
    // Two members rank nothing: the other vote and the PM's round only.
    let two = reserve(&init("arch,biz", "200000", &[]), 2);
    assert_eq!(two["completion_tokens"], 2 * VOTE + 2 * TURN, "{two}");
    // A reply limit the user set wins over the council's own.
    let set = reserve(&init("arch,biz", "200000", &["--max-tokens", "400"]), 2);
    assert_eq!(set["completion_tokens"], 2 * 400 + 2 * 400, "{set}");
    let out = init("arch,biz,sre", "3000", &[]);
    out.exit(2).one_stderr_line();
    out.stderr_has("council: the budget cannot hold the council's 6 calls");
    let out = init("arch,biz", "3000", &[]);
    out.exit(2).one_stderr_line();
    out.stderr_has("council: the budget cannot hold the council's 2 calls");
}

/// `--council-models` gives each member its model (one per participant in order), in its
/// metadata; a provider that is none is refused in one line.
#[test]
fn council_models_give_each_member_its_model() {
    let work = work(false);
    let packet = cli("collect-context")
        .current_dir(work.path())
        .args(["--meeting-file", "meeting.yaml"])
        .run();
    let init = |models: &str| {
        cli("init-board")
            .current_dir(work.path())
            .args(["--agents", "arch,biz,sre", "--provider", "replay"])
            .args(["--council-models", models])
            .stdin(packet.stdout())
            .run()
    };
    let out = init("openai:gpt-4o-mini,ollama:llama3.2");
    out.success();
    let b: Value = out.json();
    assert_eq!(b["agents"]["arch"]["metadata"]["provider"], "openai");
    assert_eq!(b["agents"]["arch"]["metadata"]["model"], "gpt-4o-mini");
    assert_eq!(b["agents"]["biz"]["metadata"]["provider"], "ollama");
    assert_eq!(b["agents"]["biz"]["metadata"]["model"], "llama3.2");
    assert!(b["agents"]["sre"]["metadata"].get("provider").is_none());
    assert_eq!(
        b["meeting_input"]["council"]["models"][1],
        "ollama:llama3.2"
    );
    let out = init("openia:gpt-4o");
    out.exit(2).one_stderr_line();
    out.stderr_has("council.models[0]");
}

/// `--provider sample --council`: every council call is answered validly from the schema,
/// and the report has its Council section.
#[test]
fn the_sample_provider_answers_the_council() {
    let work = work(false);
    let out = cli("meeting")
        .current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--meeting-file", "meeting.yaml", "--agents", "arch,biz,sre"])
        .args([
            "--provider",
            "sample",
            "--council",
            "--quiet",
            "--trace-id",
            TRACE,
        ])
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"))
        .run();
    out.success();
    let report = work.read("report.md");
    assert!(report.contains("## Council"), "{report}");
    assert!(
        report.contains("**Vote:** Tune the primary 3 (arch, biz, sre)"),
        "{report}"
    );
    assert_eq!(
        report.matches("Ranked by the others:").count(),
        3,
        "{report}"
    );
    let board = final_board(&run_dir(&work));
    for m in board["council"]["members"].as_array().unwrap() {
        assert!(m.get("error").is_none(), "{m}");
    }
}

/// The labels a ranking request's schema allows (`ranking.items.enum`), wherever the
/// provider puts the schema in its body.
fn ranking_labels(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::Object(m) => {
            if let Some(labels) = m.get("ranking").and_then(|r| r["items"]["enum"].as_array()) {
                return Some(labels.clone());
            }
            m.values().find_map(ranking_labels)
        }
        Value::Array(a) => a.iter().find_map(ranking_labels),
        _ => None,
    }
}

/// `--council-models` against a live server: each member's requests carry its own model (the
/// third keeps the meeting's), the members' votes are asked at once, and the report names
/// each member's `provider:model`.
#[test]
fn council_models_reach_the_server_and_the_report() {
    use crate::fake_http::{json as http, openai_ok, FakeServer};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let pm_rounds = AtomicUsize::new(0);
    let server = FakeServer::answering(move |req| {
        let body = req.json();
        let reply = |v: Value| http(200, &openai_ok(&v.to_string(), Some((100, 10))));
        let text = req.body.as_str();
        if text.contains("council_vote") {
            let (choice, reason) = match body["model"].as_str() {
                Some("model-a") => ("Read replica", REASONS[0].1),
                Some("model-b") => ("Tune the primary", REASONS[1].1),
                _ => ("Read replica", REASONS[2].1),
            };
            return reply(vote(choice, "medium", reason)).together(3);
        }
        if let Some(labels) = ranking_labels(&body) {
            return reply(json!({ "ranking": labels }));
        }
        if text.contains("pm_decision") {
            return match pm_rounds.fetch_add(1, Ordering::SeqCst) {
                0 => reply(pm::call("biz", "What would tuning gain, in minutes?")),
                _ => reply(finish("Read replica")),
            };
        }
        reply(pm::answer(
            "Tuning gains about 10 minutes a night.",
            &["Tuning gains about 10 minutes a night"],
        ))
    });
    let work = work(false);
    let out = cli("meeting")
        .current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .args(["--meeting-file", "meeting.yaml", "--agents", "arch,biz,sre"])
        .args(["--provider", "openai", "--model", "model-pm", "--quiet"])
        .args(["--council-models", "openai:model-a,openai:model-b"])
        .args(["--trace-id", TRACE])
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"))
        .run();
    out.check(out.code() == Some(0), "the meeting");
    assert!(server.missed().is_empty(), "{:?}", server.missed());
    assert_eq!(server.max_in_flight(), 3, "the votes are asked at once");
    // The exchange log keeps each call's model as sent; the server saw the same.
    let models: Vec<(String, String)> = work
        .read(format!("runs/{TRACE}/llm.jsonl"))
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["caller"].as_str().unwrap().into(),
                v["model"].as_str().unwrap().into(),
            )
        })
        .collect();
    let mut sent: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap().to_string())
        .collect();
    let mut logged: Vec<String> = models.iter().map(|(_, m)| m.clone()).collect();
    sent.sort();
    logged.sort();
    assert_eq!(sent, logged);
    for (caller, model) in &models {
        let want = match caller.as_str() {
            "arch" => "model-a",
            "biz" => "model-b",
            _ => "model-pm",
        };
        assert_eq!(model, want, "{caller}'s request");
    }
    let report = work.read("report.md");
    for want in [
        "- **arch** (openai:model-a): Read replica",
        "- **biz** (openai:model-b): Tune the primary",
        "- **sre** (openai:model-pm): Read replica",
    ] {
        assert!(report.contains(want), "missing {want:?} in\n{report}");
    }
}

/// Two members rank nothing (each would order one answer): the council is done after the
/// votes. A member whose vote is unusable twice is an error the council goes on without,
/// shown in the report and the Process Note.
#[test]
fn a_council_of_two_skips_the_ranking_and_goes_on_without_a_failed_vote() {
    let work = work(false);
    let c = Cassette::new()
        .agent("arch", vote("Read replica", "high", REASONS[0].1))
        .text("biz", "I think tuning is best.")
        .at(4)
        .text("biz", "Still prose.")
        .pm(pm::call("biz", "What would tuning gain, in minutes?"))
        .agent(
            "biz",
            pm::answer("About 10 minutes.", &["Tuning gains about 10 minutes"]),
        )
        .pm(finish("Read replica"))
        .write(work.join("c.jsonl"));
    let mut cmd = cli("meeting");
    cmd.current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .args(["--meeting-file", "meeting.yaml", "--agents", "arch,biz"])
        .args([
            "--provider",
            "replay",
            "--trace-id",
            TRACE,
            "--council",
            "--quiet",
        ])
        .arg("--cassette")
        .arg(&c)
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"));
    cmd.run().exit(0);
    let report = work.read("report.md");
    assert!(
        report.contains("- **arch** (replay): Read replica, confidence high."),
        "{report}"
    );
    assert!(
        report.contains("- **biz** (replay): no usable vote ("),
        "{report}"
    );
    assert!(report.contains("**Vote:** Tune the primary 0; Read replica 1 (arch). Leading: Read replica, 1 of 1 vote (a majority)."), "{report}");
    assert!(!report.contains("Ranked by the others"), "{report}");
    assert!(report.contains("biz's council vote failed"), "{report}");
    let log = work.read(format!("runs/{TRACE}/llm.jsonl"));
    assert!(!log.contains("council_ranking"), "no ranking round");
}

/// `--max-parallel 1` asks the members one by one (a server that takes one request at a time),
/// still blind: the same calls, the same Council section.
#[test]
fn one_at_a_time_the_council_is_the_same_and_still_blind() {
    let all = work(false);
    let labels = labels(&all);
    let lines = whole(&labels, "Read replica");
    let c = lines.write(all.join("c.jsonl"));
    meeting(&all, &c, &["--quiet", "--council"]).run().exit(0);
    let one = work(false);
    let c = lines.write(one.join("c.jsonl"));
    meeting(&one, &c, &["--quiet", "--council", "--max-parallel", "1"])
        .run()
        .exit(0);
    let section = |w: &Workdir| {
        let r = w.read("report.md");
        let start = r.find("## Council").unwrap();
        r[start..start + r[start..].find("\n## ").unwrap()].to_string()
    };
    assert_eq!(section(&one), section(&all));
    // One call per agent-turn: no round drawn as calls at once.
    assert!(all.read("report.md").contains("par L1 at once"));
    assert!(
        !one.read("report.md").contains("par L1 at once"),
        "{}",
        one.read("report.md")
    );
    let reqs = requests(&one);
    for (seq, caller, text) in &reqs[..3] {
        for (who, reason) in REASONS {
            assert!(
                !text.contains(reason),
                "{caller}'s vote (call {seq}) holds {who}'s answer"
            );
        }
    }
    assert_eq!(reqs.len(), lines.lines().len());
    let board = final_board(&run_dir(&one));
    assert_eq!(board["loop_count"], 1);
}

/// `--dry-run` says the council's calls come before the PM's first prompt it shows.
#[test]
fn a_dry_run_says_the_council_comes_first() {
    let work = work(false);
    let out = cli("meeting")
        .current_dir(work.path())
        .args(["--meeting-file", "meeting.yaml", "--agents", "arch,biz,sre"])
        .args(["--provider", "sample", "--council", "--dry-run"])
        .run();
    out.success();
    out.stderr_has("council: the meeting opens with the members' blind votes and rankings (first: arch, biz, sre)");
}

/// An adaptive council (docs/design/council.md#adaptive) seats two members first: when they
/// agree with confidence the third is never asked and there is no ranking round (the report
/// says what was saved); when they disagree the third votes and the round goes on as a whole
/// council's.
#[test]
fn an_adaptive_council_asks_the_rest_only_when_the_first_two_disagree() {
    let adaptive = "council: {adaptive: true}\n";
    // Agreed: arch and biz both for the replica.
    let work = work(false);
    work.write("meeting.yaml", format!("{MEETING}{adaptive}"));
    let c = Cassette::new()
        .agent("arch", vote("Read replica", "high", REASONS[0].1))
        .agent("biz", vote("Read replica", "medium", REASONS[1].1))
        .pm(pm::call(
            "sre",
            "How long does the replica lag at 02:00, in minutes?",
        ))
        .agent(
            "sre",
            pm::answer("About forty minutes.", &["Replica lag reaches 40 minutes"]),
        )
        .pm(finish("Read replica"))
        .write(work.join("agreed.jsonl"));
    let out = meeting(&work, &c, &["--quiet"]).run();
    out.check(out.code() == Some(0), "the agreed meeting");
    let calls: Vec<(u64, String)> = requests(&work)
        .into_iter()
        .map(|(seq, caller, _)| (seq, caller))
        .collect();
    assert_eq!(
        calls.iter().filter(|(_, c)| c == "sre").count(),
        1,
        "sre only answers the PM, never votes: {calls:?}"
    );
    assert_eq!(calls.len(), 5, "{calls:?}");
    let report = work.read("report.md");
    assert!(
        report.contains("Adaptive council: arch and biz were seated first and agreed with confidence, so 1 of the 3 members were not asked"),
        "{report}"
    );
    assert!(
        report.contains("not seated: the first two agreed"),
        "{report}"
    );
    // Disagreed (the flag this time): the whole council's meeting, call for call.
    let work2 = self::work(false);
    let labels = labels(&work2);
    let c = whole(&labels, "Read replica").write(work2.join("whole.jsonl"));
    let out = meeting(&work2, &c, &["--quiet", "--council-adaptive"]).run();
    out.check(out.code() == Some(0), "the escalated meeting");
    let report = work2.read("report.md");
    assert!(
        report.contains("did not agree (or one was unsure), so all 3 members voted"),
        "{report}"
    );
    assert!(report.contains("Ranked by the others"), "{report}");
}

/// A vote's "none of these" is offered last and only with a reason, as the PM's is; and a
/// quote in a vote's reason that no collected document holds is shown as unverified where the
/// report quotes it, in the member's line and the dissent, while a quote the document holds is
/// not (all three members of a live council voted "none of these", one on false figures and a
/// quote found in no document; issue #58).
#[test]
fn a_votes_invented_quote_is_shown_unverified() {
    let work = work(false);
    let labels = labels(&work);
    let invented =
        "The budget note says \"tuning the primary costs nothing and always meets the deadline\"";
    let real = "The timings say \"overran the 06:00 deadline 7 times in 90 days\"";
    let c = whole(&labels, "Read replica")
        .edit(2, |l| {
            let mut v = vote("Tune the primary", "medium", invented);
            v["reasons"] = json!([invented, real]);
            l["response"] = json!(v.to_string());
        })
        .write(work.join("c.jsonl"));
    meeting(&work, &c, &["--quiet", "--council"]).run().exit(0);
    let report = work.read("report.md");
    let marked =
        "\"tuning the primary costs nothing and always meets the deadline\" (unverified quote)";
    assert!(
        report.contains(&format!("Reasons: The budget note says {marked}; {real}.")),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "- biz chose Tune the primary: The budget note says {marked}"
        )),
        "{report}"
    );
    assert!(!report.contains("90 days\" (unverified"), "{report}");
    let vote_request = &requests(&work)[0].2;
    assert!(
        vote_request.contains(
            "or, only when none of them can work, \\\"none of these\\\", your first reason saying why."
        ),
        "{vote_request}"
    );
}
