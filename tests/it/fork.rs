//! `meeting --fork DIR --at-loop N` (docs/design/run-folder.md#fork): a new run folder whose
//! calls before loop N are answered from the parent's exchange log — the fake server is asked
//! nothing for them — and the rest live; `meeting --compare A B` names what changed.

use serde_json::{json, Value};

use crate::fake_http::{json as reply, openai_ok, FakeServer};
use crate::fixtures::pm::With;
use crate::fixtures::{pm, NOW};
use crate::harness::{Run, Workdir};

fn decided(choice: &str, confidence: &str) -> Value {
    pm::finish(&format!(
        "### Executive Summary\n{choice}.\n\n### Recommendation\nGo with {choice}."
    ))
    .with(
        "decision",
        json!({"choice": choice, "confidence": confidence, "revisit_if": "costs double"}),
    )
}

/// What one call of 1,000 prompt and 100 completion tokens costs on `model` in the built-in
/// table.
fn one_call(model: &str) -> f64 {
    let text =
        std::fs::read_to_string(crate::harness::root().join("share/prices/prices.json")).unwrap();
    let table: Value = serde_json::from_str(&text).unwrap();
    let row = &table["models"][model];
    1000.0 * row["input"].as_f64().unwrap() + 100.0 * row["output"].as_f64().unwrap()
}

/// A server answering `replies` in order, 1,000 prompt and 100 completion tokens each.
fn serve(replies: &[Value]) -> FakeServer {
    FakeServer::start(
        replies
            .iter()
            .map(|r| reply(200, &openai_ok(&r.to_string(), Some((1000, 100)))))
            .collect(),
    )
}

/// `meeting` in `work` against `server`.
fn meeting(work: &Workdir, server: &FakeServer, args: &[&str]) -> Run {
    work.cli("meeting")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "test-key")
        .env("AGENT_MEETING_NOW", NOW)
        .args(args)
        .run()
}

/// The parent meeting of the fork tests (trace id `parent`, run folder `runs/parent`): two
/// loops of arch on gpt-4o-mini, then a decision; its server, asked 5 times.
fn parent(work: &Workdir) -> FakeServer {
    let first = serve(&[
        pm::call("arch", "How long does the nightly run take?"),
        pm::answer("About 3h40m.", &["The run takes 3h40m."]),
        pm::call("arch", "Would a replica lag?"),
        pm::answer("Up to 14 minutes.", &["Replica lag reaches 14 minutes."]),
        decided("the replica", "high"),
    ]);
    let out = meeting(
        work,
        &first,
        &[
            "--topic",
            "Move reporting off the primary?",
            "--agents",
            "arch",
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--trace-id",
            "parent",
            "--report-file",
            "report.md",
        ],
    );
    out.success();
    first
}

#[test]
fn a_fork_asks_nothing_before_its_loop_and_its_diff_names_what_changed() {
    let work = Workdir::new();
    let first = parent(&work);
    assert_eq!(first.count(), 5);

    // The fork at loop 2, on another model: the server is asked only loop 2's PM round.
    let second = serve(&[decided("a managed warehouse", "low")]);
    let out = meeting(
        &work,
        &second,
        &[
            "--fork",
            "runs/parent",
            "--at-loop",
            "2",
            "--model",
            "gpt-4o",
            "--trace-id",
            "child",
        ],
    );
    out.success();
    assert_eq!(second.count(), 1, "one live call: {}", out.stderr());
    assert_eq!(first.count(), 5, "the parent's server is not asked again");
    let live = second.request(0).json();
    assert_eq!(live["model"], "gpt-4o");
    // The live PM round saw loop 1 as the parent's: arch's first answer, from the log.
    assert!(live.to_string().contains("The run takes 3h40m."), "{live}");
    let result: Value = out.json();
    assert_eq!(result["trace_id"], "child");
    let from = &result["forked_from"];
    assert_eq!(
        (&from["run_dir"], &from["trace_id"], &from["at_loop"]),
        (
            &json!(work.join("runs/parent")),
            &json!("parent"),
            &json!(2)
        )
    );
    // What the parent's log answered (loop 1's two calls) is the parent's cost, not the
    // fork's: the fork paid for its one live call, at gpt-4o's price.
    assert_eq!(from["from_parent"]["calls"], 2);
    let usd = result["cost"]["usd"].as_f64().unwrap();
    assert!((usd - one_call("gpt-4o")).abs() < 1e-9, "{result}");
    assert_eq!(result["loops"], 1);
    let settings: Value = serde_json::from_str(&work.read("runs/child/meeting.json")).unwrap();
    assert_eq!(settings["fork"]["at_loop"], 2);
    let report = work.read("reports/report-fork.md");
    assert!(report.contains("a managed warehouse"), "{report}");
    // The report's cost is the MeetingResult's: the live call only, the answers from the
    // parent's log named as the parent's.
    assert!(
        report.contains(&format!("- Cost: ${usd:.4} (at the prices of LiteLLM")),
        "{report}"
    );
    assert!(
        report.contains(
            "; the first 2 calls answered from the log of the meeting this one was forked from, \
             whose cost they are"
        ),
        "{report}"
    );
    // The fork's own board says it, for a re-render (`render-report` reads only the board).
    let board: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::fs::read_dir(work.join("runs/child"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.to_string_lossy().ends_with("render-report.out.json"))
                .max()
                .expect("the report's board"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        board["board"]["record"]["from_parent"]["calls"], 2,
        "{board}"
    );
    // The fork's log: the parent's calls 1 and 2 (loop 1), then its own live call 3.
    let log: Vec<Value> = work
        .read("runs/child/llm.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seqs: Vec<u64> = log.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(log[2]["model"], "gpt-4o");

    let diff = work
        .cli("meeting")
        .args(["--compare", "runs/parent", "runs/child"])
        .run();
    diff.success();
    let text = diff.stdout();
    for part in [
        "- Decision: the replica → a managed warehouse",
        "- Confidence: high → low",
        "- Loops: 2 → 1",
        "- LLM calls: 5 → 3",
        "- Cost: $0.0010 → $0.0035",
        "Only in runs/parent: Replica lag reaches 14 minutes.",
        "- Forked from parent at loop 2",
    ] {
        assert!(text.contains(part), "{part:?} in:\n{text}");
    }
    // A board edited by hand to hold terminal escapes (OSC 52 writes the clipboard, CSI
    // colours): printed clean, as the report would print it.
    let newest = std::fs::read_dir(work.join("runs/child"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("render-report.out.json"))
        .max()
        .unwrap();
    let edited = std::fs::read_to_string(&newest).unwrap().replace(
        "a managed warehouse",
        "a managed\\u001b]52;c;cHduZWQ=\\u0007 \\u001b[31mwarehouse",
    );
    std::fs::write(&newest, edited).unwrap();
    let diff = work
        .cli("meeting")
        .args(["compare", "runs/parent", "runs/child"])
        .run();
    diff.success();
    assert!(!diff.stdout().contains('\u{1b}'), "{:?}", diff.stdout());
    assert!(!diff.stdout().contains('\u{7}'), "{:?}", diff.stdout());
    assert!(
        diff.stdout()
            .contains("- Decision: the replica → a managed"),
        "{}",
        diff.stdout()
    );
}

/// A fork made by a build that kept its parent's share in `meeting.json` (not on the board)
/// still leaves it out of its cost, compared and resumed.
#[test]
fn a_fork_of_an_earlier_build_still_leaves_its_parents_share_out() {
    let work = Workdir::new();
    parent(&work);
    let second = serve(&[decided("a managed warehouse", "low")]);
    meeting(
        &work,
        &second,
        &[
            "--fork",
            "runs/parent",
            "--at-loop",
            "2",
            "--model",
            "gpt-4o",
            "--trace-id",
            "child",
        ],
    )
    .success();
    // The earlier form: the share in meeting.json's fork record, none on the boards.
    let run = work.join("runs/child");
    let mut share = Value::Null;
    for entry in std::fs::read_dir(&run).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".out.json") {
            continue;
        }
        let mut doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for pointer in ["/record", "/board/record"] {
            let removed = doc
                .pointer_mut(pointer)
                .and_then(Value::as_object_mut)
                .and_then(|r| r.remove("from_parent"));
            if let Some(u) = removed {
                share = u;
            }
        }
        std::fs::write(&path, doc.to_string()).unwrap();
    }
    assert_eq!(share["calls"], 2, "the fork's boards had the share");
    let mut settings: Value = serde_json::from_str(&work.read("runs/child/meeting.json")).unwrap();
    settings["fork"]["from_parent"] = share;
    std::fs::write(run.join("meeting.json"), settings.to_string()).unwrap();
    let diff = work
        .cli("meeting")
        .args(["--compare", "runs/parent", "runs/child"])
        .run();
    diff.success().stdout_has("- Cost: $0.0010 → $0.0035");
    let done = meeting(&work, &second, &["--resume", "runs/child"]);
    let result: Value = done.success().json();
    let usd = result["cost"]["usd"].as_f64().unwrap();
    assert!((usd - one_call("gpt-4o")).abs() < 1e-9, "{result}");
    assert_eq!(second.count(), 1, "an ended fork resumed asks nothing");
}

/// A fork stopped before its loop (`--step`, `q`) and resumed still answers the calls before
/// the loop from the parent's log: the server is asked only the loop's own call.
#[test]
fn a_resumed_fork_still_asks_nothing_before_its_loop() {
    let work = Workdir::new();
    parent(&work);
    let second = serve(&[decided("a managed warehouse", "low")]);
    // Enter runs loop 1's PM round, q stops before arch's turn.
    let stopped = work
        .cli("meeting")
        .env("OPENAI_BASE_URL", format!("{}/v1", second.url))
        .env("OPENAI_API_KEY", "test-key")
        .env("AGENT_MEETING_NOW", NOW)
        .args([
            "--fork",
            "runs/parent",
            "--at-loop",
            "2",
            "--trace-id",
            "child",
            "--step",
        ])
        .stdin("\nq\n")
        .run();
    stopped.exit(130).stderr_has("stopped before agent-turn");
    assert_eq!(second.count(), 0, "{}", stopped.stderr());
    let done = meeting(&work, &second, &["--resume", "runs/child"]);
    done.success();
    assert_eq!(second.count(), 1, "only loop 2's call: {}", done.stderr());
    let result: Value = done.json();
    assert_eq!(result["forked_from"]["at_loop"], 2);
    // The resumed fork cut at its loop and paid for that one call only.
    assert_eq!(result["forked_from"]["from_parent"]["calls"], 2, "{result}");
    let usd = result["cost"]["usd"].as_f64().unwrap();
    assert!((usd - one_call("gpt-4o-mini")).abs() < 1e-9, "{result}");
    assert!(work
        .read("reports/report-fork.md")
        .contains("a managed warehouse"));
}

/// `--at-loop` past the parent's last loop, or a folder that is no run folder, is bad usage —
/// for --fork, --compare and next-stage --run-folder alike, each naming its flag.
#[test]
fn a_fork_needs_a_run_folder_and_one_of_its_loops() {
    let work = Workdir::new();
    let server = serve(&[
        pm::call("arch", "How long?"),
        pm::answer("3h40m.", &["The run takes 3h40m."]),
        pm::done(),
    ]);
    meeting(
        &work,
        &server,
        &[
            "--topic",
            "Move?",
            "--agents",
            "arch",
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--trace-id",
            "p",
            "--report-file",
            "r.md",
        ],
    )
    .success();
    let none = serve(&[]);
    meeting(&work, &none, &["--fork", "runs/p", "--at-loop", "3"])
        .exit(2)
        .stderr_has("--at-loop: 3 is not a loop of the meeting in runs/p (1 to 2");
    meeting(&work, &none, &["--fork", "nowhere", "--at-loop", "1"])
        .exit(2)
        .stderr_has("--fork: nowhere does not exist");
    meeting(&work, &none, &["--fork", ".", "--at-loop", "1"])
        .exit(2)
        .stderr_has("--fork: . is not a run folder (it holds no meeting.json)");
    // The one check of a run folder a user names, each naming its own flag.
    work.cli("next-stage")
        .args(["--run-folder", "nowhere"])
        .run()
        .exit(2)
        .one_stderr_line()
        .stderr_has("next-stage: --run-folder: nowhere does not exist");
    work.cli("meeting")
        .args(["--compare", "runs/p", "."])
        .run()
        .exit(2)
        .stderr_has("--compare: . is not a run folder");
    meeting(
        &work,
        &none,
        &["--fork", "runs/p", "--at-loop", "1", "--provider", "sample"],
    )
    .exit(2)
    .stderr_has("--provider cannot be used with meeting fork");
    assert_eq!(none.count(), 0);
}

/// A fork is a resume of its parent's folder for what that folder may ask: a base URL planted
/// in its `config.yaml` copy, which would send the user's key and prompts elsewhere, is refused
/// (exit 2, named, before any request); with --trust-run-dir it is used, and said.
#[test]
fn a_fork_sends_nothing_to_a_base_url_the_parents_folder_names() {
    let work = Workdir::new();
    parent(&work);
    let planted = serve(&[decided("anything", "high")]);
    let run = work.join("runs/parent");
    std::fs::write(
        run.join("config.yaml"),
        format!("base_urls: {{openai: '{}/v1'}}\n", planted.url),
    )
    .unwrap();
    let file = run.join("meeting.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["config_file"] = json!(run.join("config.yaml"));
    std::fs::write(&file, v.to_string()).unwrap();
    let fork = |extra: &[&str]| {
        work.cli("meeting")
            .env("OPENAI_API_KEY", "sk-the-users-own")
            .env("AGENT_MEETING_NOW", NOW)
            .args([
                "--fork",
                "runs/parent",
                "--at-loop",
                "3",
                "--trace-id",
                "child",
            ])
            .args(extra)
            .run()
    };
    fork(&[])
        .exit(2)
        .one_stderr_line()
        .stderr_has("--fork: runs/parent asks for what you did not give: base_urls.openai http://127.0.0.1:")
        .stderr_has("--trust-run-dir");
    assert_eq!(planted.count(), 0, "the key went to the folder's base URL");
    assert!(
        !work.join("runs/child").exists(),
        "a refused fork leaves nothing"
    );
    fork(&["--trust-run-dir"])
        .success()
        .stderr_has("--trust-run-dir: using the run folder's base_urls.openai");
    assert_eq!(planted.count(), 1);
    assert_eq!(
        planted.request(0).header("authorization"),
        Some("Bearer sk-the-users-own")
    );
}

/// A fork is a resume of its parent's folder for what it may ask: a command or an output path
/// the folder names (its `--stage`, `--llm-log`) is refused, named, before anything runs or is
/// written; with --trust-run-dir the fork takes them as the parent had them, and says so.
#[test]
fn a_fork_refuses_a_command_of_its_parents_folder_unless_trusted() {
    let work = Workdir::new();
    parent(&work);
    let pwned = work.join("PWNED");
    let file = work.join("runs/parent/meeting.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["stage_overrides"] = json!({"pm-step": format!("touch {}", pwned.display())});
    v["user_llm_log"] = json!(work.join("copy.jsonl"));
    std::fs::write(&file, v.to_string()).unwrap();
    let server = serve(&[decided("the replica", "high")]);
    let fork = |extra: &[&str]| {
        let mut args = vec![
            "--fork",
            "runs/parent",
            "--at-loop",
            "3",
            "--trace-id",
            "child",
        ];
        args.extend(extra);
        meeting(&work, &server, &args)
    };
    fork(&[])
        .exit(2)
        .one_stderr_line()
        .stderr_has("--fork: runs/parent asks for what you did not give: --stage pm-step=touch ")
        .stderr_has(", --llm-log ");
    assert!(!pwned.exists(), "a command of the parent's folder ran");
    assert!(
        !work.join("runs/child").exists(),
        "a refused fork leaves nothing"
    );
    // Trusted, the fork takes them: the parent's pm-step command runs.
    fork(&["--trust-run-dir"])
        .stderr_has("--trust-run-dir: using the run folder's --stage pm-step=touch ");
    assert!(pwned.exists(), "the trusted folder's command did not run");
}

/// A fork's report goes where the fork's own options say: by default `reports/<name>-fork.md`
/// under the current folder, a Markdown file whatever the parent's folder names — a tampered
/// `report_file` (another folder, a `.sh`) decides neither its place nor its kind; and a
/// template the folder names is not read without being given again.
#[test]
fn a_forks_report_goes_where_its_own_options_say() {
    let work = Workdir::new();
    parent(&work);
    let elsewhere = work.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let file = work.join("runs/parent/meeting.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v["report_file"] = json!(elsewhere.join("notes.sh"));
    std::fs::write(&file, v.to_string()).unwrap();
    let server = serve(&[decided("the replica", "high")]);
    let args = ["--fork", "runs/parent", "--at-loop", "3"];
    meeting(&work, &server, &args).success();
    assert!(work.join("reports/notes-fork.md").is_file());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // A template the folder names (a secret file, say) is refused, named.
    v["template"] = json!(work.write("secret.txt", "AWS_SECRET=abc\n"));
    std::fs::write(&file, v.to_string()).unwrap();
    let out = meeting(&work, &server, &args);
    out.exit(2).stderr_has("--template ");
    assert!(!out.stdout().contains("AWS_SECRET"));
}
