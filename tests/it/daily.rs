//! Daily use (docs/GUIDE.md#daily-use): documents on the command line (`--doc`), the history
//! of the run folder (`meeting list`, `meeting show`), a command run when a meeting waits for
//! a person (`--on-waiting`), and a spending cap across meetings (`--max-cost-per-day`).

use crate::harness::Workdir;

/// `--doc PATH` (a file, a folder, repeatable) reaches the meeting through the collection's
/// rules: redacted, a secret file skipped, listed in the report; with a meeting file, after
/// its own sources.
#[test]
fn a_doc_on_the_command_line_is_read_under_the_meeting_files_rules() {
    let work = Workdir::new();
    work.write(
        "notes.md",
        "# Notes\nThe ingest box has 4 GB of RAM; ZEBRA-42.\nAWS key AKIAIOSFODNN7EXAMPLE\n",
    );
    work.write("more/a.md", "folder doc PENGUIN\n");
    work.write(".env", "TOKEN=hunter2\n");
    let out = work
        .cli("meeting")
        .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .args(["--provider", "sample", "-a", "arch", "--report-file", "-"])
        .args(["--doc", "notes.md", "--doc", "more", "--doc", ".env"])
        .arg("Adopt Rust for ingest?")
        .run();
    out.success()
        .stderr_has("notes.md: 1 secret redacted (aws-access-key-id)")
        .stderr_has("skipped .env: sensitive");
    let md = out.stdout();
    assert!(
        md.contains("- Documents used (2): `notes.md`, `more/a.md`"),
        "{md}"
    );
    assert!(md.contains("ZEBRA-42"), "{md}");
    assert!(
        !md.contains("AKIAIOSFODNN7EXAMPLE") && !md.contains("hunter2"),
        "{md}"
    );

    // The collect-context program takes it too, after a meeting file's own sources.
    work.write(
        "m.yaml",
        "topic: T?\ncontext_sources:\n  - type: file\n    path: more/a.md\n",
    );
    let packet: serde_json::Value = work
        .cli("collect-context")
        .args(["--meeting-file", "m.yaml", "--doc", "notes.md"])
        .run()
        .success()
        .json();
    let ids: Vec<&str> = packet["context_bundle"]["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["source_path"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["more/a.md", "notes.md"]);
}

/// A `--doc` that is not there, or outside the context root, is refused on one line naming
/// the flag and the path (exit 2), before any call.
#[test]
fn a_doc_not_found_or_outside_the_root_is_refused() {
    let work = Workdir::new();
    std::fs::create_dir(work.join("repo")).unwrap();
    std::fs::create_dir(work.join("repo/.git")).unwrap();
    work.write("outside.md", "x\n");
    let repo = work.join("repo");
    work.cli("meeting")
        .current_dir(&repo)
        .args([
            "--provider",
            "sample",
            "-a",
            "arch",
            "--doc",
            "missing.md",
            "T?",
        ])
        .run()
        .exit(2)
        .one_stderr_line()
        .stderr_has("--doc ")
        .stderr_has("missing.md: not found");
    work.cli("meeting")
        .current_dir(&repo)
        .args([
            "--provider",
            "sample",
            "-a",
            "arch",
            "--doc",
            "../outside.md",
            "T?",
        ])
        .run()
        .exit(2)
        .one_stderr_line()
        .stderr_has("outside.md: outside the context root");
}

/// Run a sample meeting on `topic` with run id `id`, started at `now`.
fn sample_meeting(work: &Workdir, id: &str, now: &str, topic: &str) {
    work.cli("meeting")
        .env("AGENT_MEETING_NOW", now)
        .args([
            "--provider",
            "sample",
            "-a",
            "arch",
            "-q",
            "--trace-id",
            id,
            topic,
        ])
        .run()
        .success();
}

/// `meeting list` shows the run folder's meetings newest first, filtered by status and
/// bounded by `--limit`; `meeting show` prints one's report (the one saved), or its
/// MeetingResult with `--json`.
#[test]
fn meeting_list_and_show_read_the_history() {
    let work = Workdir::new();
    sample_meeting(&work, "older", "2026-11-30T09:00:00.000Z", "Go or Rust?");
    sample_meeting(
        &work,
        "newer",
        "2026-11-30T10:00:00.000Z",
        "Adopt Rust for ingest?",
    );
    // A meeting stopped before its report: its last checkpoint removed.
    sample_meeting(&work, "cut", "2026-11-30T08:00:00.000Z", "Cut short?");
    let cut = work.join("runs/cut");
    let last = std::fs::read_dir(&cut)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("render-report.out.json"))
        .max()
        .unwrap();
    std::fs::remove_file(cut.join(last)).unwrap();

    let rows = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = work
            .cli("meeting")
            .args(["list", "--json"])
            .args(args)
            .run();
        out.success();
        out.stdout()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let all = rows(&[]);
    let ids: Vec<&str> = all.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["newer", "older", "cut"]);
    assert_eq!(all[0]["topic"], "Adopt Rust for ingest?");
    assert_eq!(all[0]["status"], "finished");
    assert_eq!(all[0]["started"], "2026-11-30T10:00:00.000Z");
    assert!(all[0]["tokens"].as_u64().unwrap() > 0);
    assert_eq!(all[2]["status"], "stopped");
    let ids = |rows: Vec<serde_json::Value>| -> Vec<String> {
        rows.iter()
            .map(|r| r["run_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(rows(&["--status", "stopped"])), ["cut"]);
    assert_eq!(ids(rows(&["-n", "1"])), ["newer"]);
    let table = work.cli("meeting").arg("list").run();
    table.success().stdout_has("Go or Rust?");
    assert_eq!(table.stdout().lines().count(), 4, "{}", table.stdout());

    let shown = work.cli("meeting").args(["show", "older"]).run();
    shown.success();
    assert_eq!(shown.stdout(), work.read("reports/go-or-rust.md"));
    let result: serde_json::Value = work
        .cli("meeting")
        .args(["show", "runs/older", "--json"])
        .run()
        .success()
        .json();
    assert_eq!(result["status"], "finished");
    assert_eq!(result["trace_id"], "older");
    work.cli("meeting")
        .args(["show", "cut"])
        .run()
        .exit(2)
        .stderr_has("has no report yet");
}

/// The history reads run folders as input: a link is not followed, a folder that is not a
/// readable run folder is left out (said once), terminal escapes in a board do not reach the
/// terminal, and `show` takes a run id, not a path out of the runs folder through it.
#[test]
fn the_history_reads_a_hostile_runs_folder_safely() {
    let work = Workdir::new();
    sample_meeting(&work, "real", crate::fixtures::NOW, "Real?");
    // A board whose topic holds an escape sequence (OSC 52 writes the clipboard).
    let dir = work.join("runs/real");
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.to_string_lossy().ends_with(".out.json") {
            let text = std::fs::read_to_string(&p).unwrap();
            std::fs::write(
                &p,
                text.replace("Real?", "Real?\\u001b]52;c;ZXZpbA==\\u0007"),
            )
            .unwrap();
        }
    }
    std::fs::create_dir_all(work.join("elsewhere")).unwrap();
    sample_meeting(&work, "x", crate::fixtures::NOW, "Elsewhere?");
    std::fs::rename(work.join("runs/x"), work.join("elsewhere/x")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(work.join("elsewhere/x"), work.join("runs/link")).unwrap();
    work.write("runs/junk/meeting.json", "{ not json");

    let out = work.cli("meeting").args(["list", "--json"]).run();
    out.success()
        .stderr_has("1 folder not readable as run folders, left out");
    let rows: Vec<serde_json::Value> = out
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{}", out.stdout());
    assert_eq!(rows[0]["run_id"], "real");
    let table = work.cli("meeting").arg("list").run();
    assert!(!table.stdout().contains('\u{1b}'), "{:?}", table.stdout());
    let shown = work.cli("meeting").args(["show", "real"]).run();
    assert!(!shown.stdout().contains('\u{1b}'), "{:?}", shown.stdout());
    work.cli("meeting")
        .args(["show", "../elsewhere/x"])
        .run()
        .exit(2)
        .stderr_has("no meeting");
}

/// A meeting of one turn (the PM asks arch, arch answers, the PM finishes) against a fake
/// OpenAI server, 1,000 prompt and 100 completion tokens a call, on a model a private table
/// prices at $0.0001 a token: $0.11 a call, $0.33 the meeting. Returns the run and the number
/// of requests the server got.
fn priced_meeting(
    work: &Workdir,
    now: &str,
    id: &str,
    extra: &[&str],
) -> (crate::harness::Run, usize) {
    use crate::fake_http::{json, openai_ok, FakeServer};
    use crate::fixtures::pm;
    let table = work.write(
        "prices.json",
        r#"{"source": "test", "date": "2026-12-01", "models": {"dear": {"provider": "openai", "input": 1e-4, "output": 1e-4}}}"#,
    );
    let replies = [
        pm::call("arch", "What would a rewrite cost?"),
        pm::answer("Two engineers a quarter.", &["Two engineers, one quarter."]),
        pm::finish("### Executive Summary\nRewrite.\n\n### Recommendation\nRewrite it."),
    ];
    let server = FakeServer::start(
        replies
            .iter()
            .map(|r| json(200, &openai_ok(&r.to_string(), Some((1000, 100)))))
            .collect(),
    );
    let out = work
        .cli("meeting")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("OPENAI_API_KEY", "test-key")
        .env("AGENT_MEETING_NOW", now)
        .env("AGENT_MEETING_PRICES", &table)
        .args([
            "--agents",
            "arch",
            "--provider",
            "openai",
            "--model",
            "dear",
        ])
        .args(["--trace-id", id, "--report-file", &format!("{id}.md")])
        .args(extra)
        .arg("Rewrite ingest?")
        .run();
    (out, server.count())
}

/// `--max-cost-per-day`: the meetings started today (UTC) in the run folder are summed; once
/// the cap is spent a new meeting is refused (exit 5, no run folder, no call), else it may
/// spend what is left; a new day starts afresh; an unpriced model is refused under a cap.
#[test]
fn a_spending_cap_per_day_refuses_a_meeting_once_the_day_is_spent() {
    let work = Workdir::new();
    let today = "2026-11-30T09:00:00.000Z";
    let (first, calls) = priced_meeting(&work, today, "first", &[]);
    first.success();
    assert_eq!(calls, 3);
    let cost = first.json::<serde_json::Value>()["cost"]["usd"]
        .as_f64()
        .unwrap();
    assert!((cost - 0.33).abs() < 1e-9, "{cost}");

    let later = "2026-11-30T18:00:00.000Z";
    let (refused, calls) = priced_meeting(&work, later, "second", &["--max-cost-per-day", "0.30"]);
    refused.exit(5).one_stderr_line().stderr_has(
        "the day's spending cap is spent: $0.3300 of $0.3000 by 1 meeting started 2026-11-30 (UTC)",
    );
    assert_eq!(refused.stdout(), "");
    assert_eq!(calls, 0);
    assert!(!work.join("runs/second").exists());

    // What is left is the next meeting's budget: said, and kept in its meeting.json.
    let (dry, _) = priced_meeting(
        &work,
        later,
        "third",
        &["--max-cost-per-day", "1", "--dry-run"],
    );
    dry.success()
        .stderr_has("the day's spending cap leaves $0.6700 of $1.00 for this meeting");

    // The next day (UTC) starts afresh.
    let (next_day, calls) = priced_meeting(
        &work,
        "2026-12-01T00:10:00.000Z",
        "next-day",
        &["--max-cost-per-day", "0.30"],
    );
    assert_ne!(next_day.code(), Some(5), "{}", next_day.stderr());
    assert!(calls > 0, "{}", next_day.stderr());
    let settings: serde_json::Value =
        serde_json::from_str(&work.read("runs/next-day/meeting.json")).unwrap();
    assert_eq!(settings["board"]["day_left_usd"], 0.3);

    // Under a cap an unpriced model is refused before any call, as under --max-cost.
    work.cli("meeting")
        .args([
            "--agents",
            "arch",
            "--provider",
            "openai",
            "--model",
            "no-such-model",
        ])
        .args(["--max-cost-per-day", "5", "--dry-run", "T?"])
        .env("OPENAI_API_KEY", "k")
        .run()
        .exit(2)
        .stderr_has("does not price");
}

/// Meetings started together count each other: one not ended holds what it may still spend
/// (its dollar budget), so a second start sees the day spent even before the first has paid.
#[test]
fn a_meeting_not_ended_holds_its_share_of_the_days_cap() {
    let work = Workdir::new();
    let today = "2026-11-30T09:00:00.000Z";
    let (first, _) = priced_meeting(&work, today, "first", &["--max-cost-per-day", "1"]);
    first.success();
    // As if it had stopped mid-meeting: its report's checkpoint gone, it may still spend.
    let dir = work.join("runs/first");
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.file_name()
            .to_string_lossy()
            .ends_with("render-report.out.json")
        {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    let (refused, calls) = priced_meeting(&work, today, "second", &["--max-cost-per-day", "1"]);
    refused.exit(5).stderr_has("spent: $1.00 of $1.00");
    assert_eq!(calls, 0);
}

/// A meeting with one participant, ana, a person (`kind: human`) no one is there to answer:
/// it stops waiting for her (exit 4). `extra` goes on the command line.
fn waiting_meeting(work: &Workdir, extra: &[&str]) -> crate::harness::Run {
    waiting_cmd(work).args(extra).run()
}

/// [`waiting_meeting`]'s command, to add to before it runs.
fn waiting_cmd(work: &Workdir) -> crate::harness::Cli {
    crate::fixtures::seat_ana(work);
    let mut cmd = work.cli("meeting");
    cmd.env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .args(["--provider", "sample", "-a", "ana", "--trace-id", "w"])
        .arg("Page at night?")
        .stdin("");
    cmd
}

/// `--on-waiting CMD`: run once when the meeting stops for a person, waiting.json on its stdin
/// and the run folder in its environment, its output on stderr (stdout stays the
/// MeetingResult); not again when a resume finds the same question still open.
#[test]
fn on_waiting_runs_a_command_once_per_question() {
    let work = Workdir::new();
    let hook = "cat > ping.json; echo hook-said-this; echo \"$AGENT_MEETING_RUN_DIR\" > dir.txt; echo x >> count.txt";
    let out = waiting_meeting(&work, &["--on-waiting", hook]);
    out.exit(4).stderr_has("hook-said-this\n");
    let result: serde_json::Value = out.json();
    assert_eq!(result["status"], "waiting");
    assert_eq!(work.read("ping.json"), work.read("runs/w/waiting.json"));
    assert_eq!(
        work.read("dir.txt").trim(),
        work.join("runs/w")
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );
    // Resumed with no answer, it waits for the same question: no second ping.
    work.cli("meeting")
        .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .args(["resume", "runs/w", "--on-waiting", hook])
        .stdin("")
        .run()
        .exit(4);
    assert_eq!(work.read("count.txt"), "x\n");
}

/// The command never stops the meeting: one that fails, or runs past its limit, is a warning
/// on stderr and the meeting waits as it would.
#[test]
fn on_waiting_failing_or_hanging_is_only_a_warning() {
    let work = Workdir::new();
    waiting_meeting(&work, &["--on-waiting", "exit 3"])
        .exit(4)
        .stderr_has(
        "meeting: --on-waiting: `exit 3` failed (exit status: 3) (the meeting waits all the same)",
    );
    let work = Workdir::new();
    let out = waiting_cmd(&work)
        .env("AGENT_MEETING_ON_WAITING_TIMEOUT_MS", "300")
        .args(["--on-waiting", "sleep 60; touch late.txt"])
        .run();
    out.exit(4).stderr_has("still ran after 0.3 s: stopped");
    assert!(!work.join("late.txt").exists());
}

/// `on_waiting:` in the user's config file is the default; a run folder's config copy never
/// holds it, and one written there by someone else is not run on resume.
#[test]
fn on_waiting_comes_from_the_users_config_never_the_run_folder() {
    let work = Workdir::new();
    work.write(
        "cfg/agent-meeting/config.yaml",
        "on_waiting: echo x >> count.txt\n",
    );
    waiting_cmd(&work)
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .run()
        .exit(4);
    assert_eq!(work.read("count.txt"), "x\n");
    let copy = work.read("runs/w/config.yaml");
    assert!(!copy.contains("on_waiting"), "{copy}");

    // A folder whose copy was given a command, resumed without the user's config: nothing runs.
    work.write("runs/w/config.yaml", "on_waiting: touch planted.txt\n");
    std::fs::remove_file(work.join("runs/w/on-waiting.done")).unwrap();
    work.cli("meeting")
        .args(["resume", "runs/w", "--trust-run-dir"])
        .stdin("")
        .run()
        .exit(4);
    assert!(!work.join("planted.txt").exists());
}

/// The guide's `on_waiting` webhook (a Slack or Teams incoming webhook's `{"text": ...}`), run
/// as the guide writes it against a local fake: one POST, its text naming the person and the
/// question and how to answer.
#[test]
fn the_guides_webhook_posts_who_is_waiting() {
    use crate::harness::{skip_without, Tool};
    if skip_without(Tool::Jq) || skip_without(Tool::Curl) {
        return;
    }
    let guide = std::fs::read_to_string(crate::harness::root().join("docs/GUIDE.md")).unwrap();
    let block = guide
        .split("```yaml\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .find(|b| b.starts_with("on_waiting:"))
        .expect("the guide's on_waiting example");
    let server = crate::fake_http::FakeServer::start(vec![crate::fake_http::json(200, "ok")]);
    let work = Workdir::new();
    work.write("cfg/agent-meeting/config.yaml", block);
    waiting_cmd(&work)
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .env("WEBHOOK_URL", format!("{}/hook", server.url))
        .run()
        .exit(4)
        .stderr_lacks("--on-waiting");
    assert_eq!(server.count(), 1);
    let posted: serde_json::Value = serde_json::from_str(&server.request(0).body).unwrap();
    let text = posted["text"].as_str().unwrap();
    assert!(text.starts_with("agent-meeting waits for ana: "), "{text}");
    assert!(text.contains("Page at night?"), "{text}");
    assert!(text.contains("meeting resume /"), "{text}");
}

/// `--doc PATH:READERS` (and a source's `readers:`): the document's text reaches only its
/// readers' prompts; the PM and the others see who holds it, its purpose and size, not its
/// text, and only its readers may cite it.
#[test]
fn a_document_with_readers_reaches_only_their_prompts() {
    let work = Workdir::new();
    work.write("shared.md", "Everyone reads this: ZEBRA-42.\n");
    work.write(
        "vendor.md",
        "Only biz knows: the vendor charges 9,000 EUR a month (PENGUIN-7).\n",
    );
    let out = work
        .cli("meeting")
        .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .args([
            "--provider",
            "sample",
            "-a",
            "arch,biz",
            "-q",
            "--trace-id",
            "r",
        ])
        .args([
            "--doc",
            "shared.md",
            "--doc",
            "vendor.md:biz",
            "--report-file",
            "-",
        ])
        .arg("Adopt Rust for ingest?")
        .run();
    out.success()
        .stdout_has("- Documents only some participants read: `vendor.md`: biz\n");
    let log = work.read("runs/r/llm.jsonl");
    let mut seen = std::collections::BTreeMap::new();
    for line in log.lines() {
        let call: serde_json::Value = serde_json::from_str(line).unwrap();
        let caller = call["caller"].as_str().unwrap().to_string();
        let prompt = call["messages"][0]["content"].as_str().unwrap().to_string();
        // The private document's fence: its text, as only a reader's prompt carries it.
        let fenced = prompt.contains("<<<document vendor.md");
        assert!(prompt.contains("ZEBRA-42"), "{caller}: the shared document");
        assert!(
            prompt.contains("- \"vendor.md\" (given with --doc): read by biz; "),
            "{caller}: who holds what"
        );
        seen.entry(caller).or_insert(Vec::new()).push(fenced);
    }
    assert!(seen["biz"].iter().all(|f| *f), "{seen:?}");
    // The holder is told to say what only it knows; the others are not.
    let said = |who: &str| {
        log.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|c| c["caller"] == who)
            .all(|c| {
                c["messages"][0]["content"]
                    .as_str()
                    .unwrap()
                    .contains("First state what your own documents say")
            })
    };
    assert!(said("biz") && !said("arch"), "the holder's rule");
    assert!(seen["arch"].iter().all(|f| !*f), "{seen:?}");
    assert!(seen["pm"].iter().all(|f| !*f), "{seen:?}");
    // A reader who is not at the table would leave the document to no one: refused.
    work.cli("meeting")
        .args([
            "--provider",
            "sample",
            "-a",
            "arch",
            "--doc",
            "vendor.md:bob",
            "T?",
        ])
        .run()
        .exit(2)
        .stderr_has("\"bob\" reads vendor.md but is not a participant (participants: arch)");
    // The packet says who reads it.
    let packet: serde_json::Value =
        serde_json::from_str(&work.read("runs/r/0001-collect-context.out.json")).unwrap();
    let docs = &packet["context_bundle"]["documents"];
    assert_eq!(docs[1]["document_id"], "vendor.md");
    assert_eq!(docs[1]["readers"], serde_json::json!(["biz"]));
}

/// The start's line saying what each call carries (docs/design/context.md#context-budget).
fn carries_line(out: &crate::harness::Run) -> String {
    out.stderr()
        .lines()
        .find(|l| l.starts_with("each call carries the brief and documents: "))
        .expect("the line")
        .to_string()
}

/// How the PM reads the documents everyone reads (docs/design/context.md#what-the-pm-reads),
/// each way the bench measures (`AGENT_MEETING_PM_READS`): every participant's call carries
/// their text whatever the PM's way; `all` every PM round; `index` none, an index and the
/// checked quotes instead; `first` the rounds before anyone has answered it. Another value is
/// refused, naming the variable.
#[test]
fn the_pm_reads_the_documents_each_way_the_bench_measures() {
    let work = Workdir::new();
    work.write(
        "shared.md",
        "# Costs\nThe warehouse costs 9,000 EUR a month (ZEBRA-42).\nIt loads in 3 hours.\n",
    );
    let fence = "<<<document shared.md";
    for reads in ["all", "index", "first"] {
        let id = format!("pm-{reads}");
        work.cli("meeting")
            .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
            .env("AGENT_MEETING_PM_READS", reads)
            .args(["--provider", "sample", "-a", "arch,biz", "-q"])
            .args(["--max-loops", "2", "--trace-id", &id, "--report-file", "-"])
            .args(["--doc", "shared.md"])
            .arg("Adopt the warehouse?")
            .run()
            .success();
        let log = work.read(format!("runs/{id}/llm.jsonl"));
        let (mut pm, mut quotes) = (Vec::new(), Vec::new());
        for line in log.lines() {
            let call: serde_json::Value = serde_json::from_str(line).unwrap();
            let prompt = call["messages"][0]["content"].as_str().unwrap();
            if call["caller"] == "pm" {
                pm.push(prompt.contains(fence));
                quotes.push(prompt.contains("Checked quotes"));
                if !prompt.contains(fence) {
                    assert!(
                        prompt.contains("- \"shared.md\" (given with --doc): 79 characters"),
                        "{reads}: the index\n{prompt}"
                    );
                }
            } else {
                assert!(prompt.contains(fence), "{reads}: {}", call["caller"]);
            }
        }
        let expected: Vec<bool> = (0..pm.len())
            .map(|round| reads == "all" || (reads == "first" && round == 0))
            .collect();
        assert!(pm.len() >= 2, "{reads}: {pm:?}");
        assert_eq!(pm, expected, "{reads}: which PM rounds read the text");
        // The participants' checked quotes stand in for the text once someone has cited it.
        if reads != "all" {
            assert!(quotes.last() == Some(&true), "{reads}: {quotes:?}");
        } else {
            assert!(quotes.iter().all(|q| !q), "{quotes:?}");
        }
    }
    // What each call carries, said before the meeting: the PM's later calls carry less.
    let carries = |reads: &str| {
        let out = work
            .cli("meeting")
            .env("AGENT_MEETING_PM_READS", reads)
            .args(["--provider", "sample", "-a", "arch,biz", "--dry-run"])
            .args(["--doc", "shared.md", "Adopt the warehouse?"])
            .run();
        out.success();
        carries_line(&out)
    };
    assert!(
        carries("all").contains(": pm, arch, biz "),
        "{}",
        carries("all")
    );
    let first = carries("first");
    assert!(
        first.contains(" on its first call, then ") && first.contains("; arch, biz "),
        "{first}"
    );
    work.cli("meeting")
        .env("AGENT_MEETING_PM_READS", "some")
        .args(["--provider", "sample", "-a", "arch", "-q", "T?"])
        .run()
        .exit(2)
        .stderr_has("AGENT_MEETING_PM_READS: \"some\" is not one of all, index, first");
}

/// Before the meeting starts (and in its dry run, not with `-q`), what each call carries — the
/// brief and documents, every call of a caller — in characters, tokens and, on a priced model,
/// dollars a call; a reader of its own documents carries more.
#[test]
fn the_start_says_what_each_call_carries() {
    let work = Workdir::new();
    work.write(
        "shared.md",
        "Shared facts about the ingest service. ".repeat(100),
    );
    work.write("vendor.md", "The vendor's private terms. ".repeat(100));
    let run = |extra: &[&str]| {
        work.cli("meeting")
            .env("OPENAI_API_KEY", "k")
            .args([
                "--provider",
                "openai",
                "-m",
                "gpt-4o-mini",
                "-a",
                "arch,biz",
            ])
            .args(["--doc", "shared.md", "--doc", "vendor.md:biz", "--dry-run"])
            .args(extra)
            .arg("Adopt Rust?")
            .run()
    };
    let out = run(&[]);
    out.success();
    let line = carries_line(&out);
    let chars = |part: &str| -> u64 {
        part.split(' ')
            .find_map(|w| w.replace(',', "").parse().ok())
            .unwrap()
    };
    let parts: Vec<&str> = line
        .trim_start_matches("each call carries the brief and documents: ")
        .split("; ")
        .collect();
    let [pm, others, biz] = parts[..] else {
        panic!("{line}")
    };
    // The PM's later calls carry an index in place of the documents' text.
    let (pm_first, pm_later) = pm.split_once(" on its first call, then ").expect(pm);
    assert!(
        pm_first.starts_with("pm ") && chars(pm_later) < 500,
        "{line}"
    );
    assert_eq!(chars(pm_first), chars(others), "{line}");
    assert!(others.starts_with("arch "), "{line}");
    assert!(biz.starts_with("biz "), "{line}");
    assert!(chars(biz) > chars(others) + 2_000, "{line}");
    assert!(chars(others) > 3_900, "{line}");
    assert!(others.contains(" a call)"), "priced: {line}");
    run(&["-q"]).success().stderr_lacks("each call carries");
}

/// One file larger than what one reader's call can hold is cut into parts at line ends and the
/// parts divided among the participants (issue #56): each reader's prompts carry its part only,
/// the PM's neither, and the report says who read which part.
#[test]
fn one_file_too_large_for_a_call_is_cut_into_parts_among_the_participants() {
    let work = Workdir::new();
    let text: String = (1..=200)
        .map(|i| format!("Line {i:03}: fact {i} of the design.\n"))
        .collect();
    work.write("big.md", &text);
    let out = work
        .cli("meeting")
        .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .args(["--provider", "sample", "-a", "arch,biz", "--trace-id", "r"])
        .args(["--doc", "big.md", "--max-context-chars", "4000"])
        .args(["--report-file", "-"])
        .arg("Adopt Rust for ingest?")
        .run();
    out.success()
        .stderr_has("together: divided among arch, biz (big.md in 2 parts)");
    let md = out.stdout();
    assert!(
        md.contains("- Documents only some participants read: `big.md#1`: arch; `big.md#2`: biz\n")
            || md.contains(
                "- Documents only some participants read: `big.md#1`: biz; `big.md#2`: arch\n"
            ),
        "{md}"
    );
    assert!(
        !md.contains("read only in part"),
        "the whole file is read: {md}"
    );
    let log = work.read("runs/r/llm.jsonl");
    let mut carried = std::collections::BTreeMap::new();
    for line in log.lines() {
        let call: serde_json::Value = serde_json::from_str(line).unwrap();
        let prompt = call["messages"][0]["content"].as_str().unwrap();
        let caller = call["caller"].as_str().unwrap().to_string();
        let lines: (bool, bool) = (prompt.contains("Line 001:"), prompt.contains("Line 200:"));
        carried.entry(caller).or_insert_with(Vec::new).push(lines);
    }
    assert!(
        carried["pm"].iter().all(|&l| l == (false, false)),
        "{carried:?}"
    );
    let (a, b) = (carried["arch"][0], carried["biz"][0]);
    assert!(
        a.0 != b.0 && a.1 != b.1 && a.0 != a.1,
        "one part each: {carried:?}"
    );
}

/// Documents that do not fit the context budget together are divided among the participants
/// (each reads its share whole, the PM sees who holds what) where that reads more of them;
/// `--share-docs` keeps every document for everyone, cut.
#[test]
fn documents_that_do_not_fit_together_are_divided_among_the_participants() {
    let work = Workdir::new();
    work.write("a.md", "Alpha facts. ".repeat(250));
    work.write("b.md", "Beta facts. ".repeat(250));
    let run = |extra: &[&str]| {
        work.cli("meeting")
            .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
            .args([
                "--provider",
                "sample",
                "-a",
                "arch,biz",
                "--report-file",
                "-",
            ])
            .args([
                "--doc",
                "a.md",
                "--doc",
                "b.md",
                "--max-context-chars",
                "4000",
            ])
            .args(extra)
            .arg("Adopt Rust?")
            .run()
    };
    let divided = run(&[]);
    divided
        .success()
        .stderr_has("do not fit the context budget (4,000) together: divided among arch, biz");
    let md = divided.stdout();
    assert!(
        md.contains("- Documents only some participants read: `a.md`: arch; `b.md`: biz\n"),
        "{md}"
    );
    assert!(!md.contains("read only in part"), "{md}");
    let shared = run(&["--share-docs"]);
    shared.success().stderr_lacks("divided among");
    let md = shared.stdout();
    assert!(
        md.contains("- Documents the agents read only in part"),
        "{md}"
    );
    assert!(!md.contains("only some participants read"), "{md}");
}
