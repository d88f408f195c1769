//! How a `meeting` ends when things go wrong around it: a meeting no model ever
//! answered, an unknown host, a report path that would overwrite an input or cannot be
//! written, what `--resume` may change, the exchange log, and how a stopped meeting says how
//! to continue (docs/design/failure-policy.md#failure-policy, #run-folder, #resume).

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::fixtures::{
    demo_cassette, final_board, held_demo_cassette, meeting_cmd, resume_cmd, NOW,
};
use crate::harness::{cli, root, wait_for, Cli, Workdir};
use crate::harness::{skip_without, Tool};

/// A reason longer than any progress-line cut, with its telling part at the end.
const LONG_REASON: &str =
    "the upstream gateway answered with an error page instead of a completion; \
    the resolver said: dns error: failed to lookup address information";

/// A cassette line: `caller` answered with HTTP 500 carrying [`LONG_REASON`].
fn http_500(seq: usize, caller: &str) -> String {
    let line = json!({"seq": seq, "caller": caller,
        "error": {"kind": "http", "status": 500, "message": LONG_REASON}});
    format!("{line}\n")
}

/// Every attempt of every PM round fails: no model call answered, yet a fallback report is
/// written; the meeting is `failed` (exit 1) and the result points at the report.
#[test]
fn a_meeting_no_model_answered_fails_and_keeps_its_fallback_report() {
    let work = Workdir::new();
    // Three PM rounds (a failed round is asked again once, then the closing one), three
    // attempts each.
    let text: String = (1..=9).map(|seq| http_500(seq, "pm")).collect();
    let cassette = work.write("down.jsonl", text);
    let out = meeting_cmd(work.path(), &cassette, &[]).run();
    out.exit(1);
    let result: Value = out.json();
    assert_eq!(result["status"], "failed", "{out}");
    let report_file = work.join("report.md");
    assert_eq!(result["report_file"], report_file.display().to_string());
    let why = result["last_error"].as_str().expect("last_error");
    assert!(
        why.contains("no model call returned a usable answer (0 of 9 LLM calls answered)"),
        "{why}"
    );
    assert_eq!(result["usage"]["calls"], 9);
    assert!(
        why.contains("failed to lookup address information"),
        "{why}"
    );
    // The fallback report is on disk and its Process Note names the last error.
    let report = work.read("report.md");
    let note = report
        .split("## Process Note")
        .nth(1)
        .expect("a Process Note");
    assert!(note.contains("HTTP 500"), "{report}");
    // Progress: one count of LLM calls (retries included); the failure line is not cut.
    out.stderr_has("failed: 0 loops, 9 LLM calls (0 answered)")
        .stderr_has("; the PM is asked again")
        .stderr_has("dns error: failed to lookup address information (gave up after 3 attempts")
        .stderr_lacks("finished");
    // Resuming the finished folder says the same.
    let out = resume_cmd(work.path(), work.join("runs/demo-test")).run();
    out.exit(1);
    assert_eq!(out.json::<Value>()["status"], "failed");
}

/// One usable answer keeps a meeting from failing, but a report without the PM's decision is
/// no decision: the PM asked once, then everything failed; the meeting ends `no_decision`,
/// exit 3 (so `meeting && publish` publishes nothing), and the report says so first, in words
/// from what happened.
#[test]
fn a_meeting_without_a_pm_decision_ends_no_decision() {
    let work = Workdir::new();
    let first = std::fs::read_to_string(demo_cassette()).unwrap();
    let mut text = format!("{}\n", first.lines().next().unwrap());
    // arch fails (3 attempts), then every PM round fails (two normal rounds, the closing one).
    let mut callers = vec!["arch"; 3];
    callers.extend(["pm"; 9]);
    for (i, caller) in callers.iter().enumerate() {
        text.push_str(&http_500(i + 2, caller));
    }
    let cassette = work.write("flaky.jsonl", text);
    let out = meeting_cmd(work.path(), &cassette, &[]).run();
    out.exit(3);
    let result: Value = out.json();
    assert_eq!(result["status"], "no_decision");
    assert_eq!(
        result["report_file"],
        work.join("report.md").display().to_string()
    );
    let why = "the program closed the meeting after 2 failed PM rounds, and the PM's closing round gave no usable report either";
    assert_eq!(result["last_error"], format!("no decision: {why}"));
    out.stderr_has("no decision (fallback report): 1 loop, 13 LLM calls (1 answered)")
        .stderr_has(&format!(
            "meeting: no decision: {why}; the fallback report is "
        ));
    let report = work.read("report.md");
    assert!(
        report.starts_with(&format!(
            "# Meeting Report\n\n**No decision: this is a fallback report**, built by the program \
             from the whiteboard alone, not written by the PM. Why: {why}.\n"
        )),
        "{report}"
    );
    assert!(!report.contains("the PM closed the meeting"), "{report}");
    if skip_without(Tool::Jq) {
        return;
    }
    // The shell loop ends the same way.
    let shell = crate::fixtures::shell_loop(&cassette, &work.join("sh.md"))
        .env("MEETING_RETRY_BASE_MS", "1")
        .run();
    shell.exit(3);
    assert_eq!(shell.json::<Value>()["status"], "no_decision");
}

/// The issue's commonest ending: the PM never replied usably (refused replies, a transport
/// retry), the program closed the meeting, and the closing round failed too. The report says
/// so and never that the PM closed it; the terminal shows each refused reply and the closing
/// round on lines of their own, with time and tokens, in the report's loop numbers; and one
/// count of LLM calls (failed, retried and the closing round's included) everywhere.
#[test]
fn a_pm_that_never_replied_usably_is_said_so_and_counted_once() {
    let work = Workdir::new();
    let refused = |seq: usize| {
        let line = json!({"seq": seq, "caller": "pm",
            "response": "{\"next_action\": \"CALL_AGENT\", \"target_agent\": \"nobody\"}",
            "usage": {"prompt_tokens": 1000, "completion_tokens": 20}});
        format!("{line}\n")
    };
    // Round 1: a 500 (retried by the client), two refused replies; round 2, asked again, and
    // the closing round: two more each.
    let text = [
        http_500(1, "pm"),
        refused(2),
        refused(3),
        refused(4),
        refused(5),
        refused(6),
        refused(7),
    ]
    .concat();
    let cassette = work.write("never.jsonl", text);
    let out = meeting_cmd(work.path(), &cassette, &[]).run();
    // No usable answer at all: `failed` (exit 1) wins over `no_decision`; the report says why.
    out.exit(1);
    let result: Value = out.json();
    assert_eq!(result["status"], "failed");
    let why = "the PM never replied usably; the program closed the meeting after 2 failed PM rounds, and the PM's closing round gave no usable report either";
    let report = work.read("report.md");
    let head: Vec<&str> = report.lines().take(3).collect();
    assert_eq!(
        head[2],
        format!(
            "**No decision: this is a fallback report**, built by the program from the whiteboard \
             alone, not written by the PM. Why: {why}."
        ),
        "{report}"
    );
    assert!(!report.contains("the PM closed the meeting"), "{report}");
    assert!(
        report.contains("No participant was consulted: the program closed the meeting before the PM had asked anyone"),
        "{report}"
    );
    // Progress: the refused replies and the closing round on lines of their own, each PM line
    // with time and tokens, tagged with the loop the report's Process Note gives.
    assert!(
        report.contains("- Loop 1: The PM's round failed"),
        "{report}"
    );
    let err = out.stderr();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with('[')).collect();
    let want = [
        r"^\[loop 1/6\] pm: request 1 failed after \d+\.\d s: HTTP 500: .*dns error: failed to lookup address information$",
        r"^\[loop 1/6\] pm: reply 1 refused \(does not match the PM output schema: .*\), asked again \(\d+\.\d s, 1020 tokens\)$",
        r"^\[loop 1/6\] pm: round failed \(.*\); the PM is asked again \(\d+\.\d s, 2040 tokens, 3 LLM calls\)$",
        r"^\[loop 1/6\] pm: reply 1 refused \(.*\), asked again \(\d+\.\d s, 1020 tokens\)$",
        r"^\[loop 1/6\] pm: round failed \(.*\); the PM gets a closing round \(\d+\.\d s, 2040 tokens, 2 LLM calls\)$",
        r"^\[loop 1/6\] pm: reply 1 refused \(.*\), asked again \(\d+\.\d s, 1020 tokens\)$",
        r"^\[loop 1/6\] pm closing round \(PM round failed\): no usable report \(.*\); the fallback report is written \(\d+\.\d s, 2040 tokens, 2 LLM calls\)$",
    ];
    assert_eq!(lines.len(), want.len(), "{err}");
    for (line, want) in lines.iter().zip(want) {
        assert!(
            regex::Regex::new(want).unwrap().is_match(line),
            "{want}\n{err}"
        );
    }
    // One count of LLM calls: the final line, the MeetingResult, the report, the callers'
    // charges and the exchange log agree (the 500 and the closing round included).
    let logged = work.read("runs/demo-test/llm.jsonl").lines().count();
    assert_eq!(logged, 7);
    out.stderr_has("failed: 0 loops, 7 LLM calls (6 answered)");
    assert_eq!(result["usage"]["calls"], 7);
    assert_eq!(result["usage"]["by_caller"]["pm"]["calls"], 7);
    assert!(report.contains("- LLM calls: 7\n"), "{report}");
}

/// An unknown host is unreachable, like a refused connection: fatal after the retries, exit 1.
#[test]
fn an_unknown_host_is_unreachable() {
    let work = Workdir::new();
    let out = cli("meeting")
        .env("OPENAI_API_KEY", "sk-test-unknown-host")
        .env("OPENAI_BASE_URL", "http://no-such-host.invalid/v1")
        // Bound the lookup where a resolver is slow to say no (glibc reads this).
        .env("RES_OPTIONS", "timeout:1 attempts:1")
        .env("MEETING_RETRY_BASE_MS", "1")
        .args(["--topic", "Adopt Rust?", "--agents", "arch,biz", "--quiet"])
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("r.md"))
        .run();
    out.exit(1).stderr_has("provider unreachable");
    assert!(!work.join("r.md").exists());
}

/// The report never overwrites an input of the meeting, nor lands in the run folder; refused
/// before any model call (the empty cassette would fail the first one).
#[test]
fn a_report_path_on_an_input_is_refused() {
    let work = Workdir::new();
    let agents = work.copy_agents("agents");
    let meeting = work.write(
        "m/demo.yaml",
        std::fs::read_to_string(root().join("meetings/demo.yaml")).unwrap(),
    );
    // The demo's documents, so the copy collects the same ones.
    copy_dir(&root().join("meetings/demo"), &work.join("m/demo"));
    let cassette = work.write("c.jsonl", "");
    let inputs = [
        ("meeting file", meeting.clone()),
        ("agent config", agents.join("biz.yaml")),
        ("PM config", agents.join("pm.yaml")),
        ("collected document", work.join("m/demo/overview.md")),
        ("cassette", cassette.clone()),
        ("run folder", work.join("runs/t1/notes.md")),
    ];
    for (what, path) in inputs {
        let before = std::fs::read(&path).ok();
        let out = cli("meeting")
            .current_dir(work.path())
            .arg("--meeting-file")
            .arg(&meeting)
            .args(["--agents", "arch,biz", "--pm", "pm", "--provider", "replay"])
            .arg("--cassette")
            .arg(&cassette)
            .args(["--trace-id", "t1", "--report-file"])
            .arg(&path)
            .run();
        out.exit(2).one_stderr_line().stderr_has(what);
        assert_eq!(std::fs::read(&path).ok(), before, "{what} unchanged");
        assert!(!work.join("runs/t1/llm.jsonl").exists(), "{what}");
    }
    // The same file reached through another spelling is still the meeting file.
    let out = cli("meeting")
        .current_dir(work.path())
        .arg("--meeting-file")
        .arg(&meeting)
        .args(["--agents", "arch", "--provider", "replay"])
        .arg("--cassette")
        .arg(&cassette)
        .args(["--report-file", "m/../m/./demo.yaml"])
        .run();
    out.exit(2).stderr_has("meeting file");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// `meeting` run in `work` with its default report path (reports/demo.md there).
fn default_report_meeting(work: &Workdir, trace: &str, extra: &[&str]) -> Cli {
    let mut cmd = cli("meeting");
    cmd.current_dir(work.path())
        .env("AGENT_MEETING_NOW", NOW)
        .arg("--meeting-file")
        .arg(root().join("meetings/demo.yaml"))
        .args(["--agents", "arch,biz", "--provider", "replay", "--cassette"])
        .arg(demo_cassette())
        .arg("--agents-dir")
        .arg(root().join("agents"))
        .args(["--trace-id", trace])
        .args(extra);
    cmd
}

/// An existing report at the default path is kept: the new one gets a numbered name. Named
/// explicitly with --report-file, the file is replaced.
#[test]
fn an_existing_default_report_is_kept() {
    let work = Workdir::new();
    work.write("reports/demo.md", "my edited report\n");
    let out = default_report_meeting(&work, "t1", &["--quiet"]).run();
    out.exit(0);
    let result: Value = out.json();
    let numbered = work.join("reports/demo-2.md");
    assert_eq!(result["report_file"], numbered.display().to_string());
    assert_eq!(work.read("reports/demo.md"), "my edited report\n");
    assert!(work
        .read("reports/demo-2.md")
        .starts_with("# Meeting Report"));
    // Not quiet, stderr says so.
    let out = default_report_meeting(&work, "t2", &[]).run();
    out.exit(0)
        .stderr_has("reports/demo.md exists and is kept; this meeting's report goes to");
    let result: Value = out.json();
    assert!(result["report_file"]
        .as_str()
        .unwrap()
        .ends_with("demo-3.md"));
    let out = default_report_meeting(
        &work,
        "t3",
        &["--quiet", "--report-file", "reports/demo.md"],
    )
    .run();
    out.exit(0);
    assert!(work.read("reports/demo.md").starts_with("# Meeting Report"));
}

/// The report's folder is created and proven writable before the first model call.
#[test]
fn an_unwritable_report_folder_is_refused_before_any_call() {
    let work = Workdir::new();
    work.write("blocker", "x");
    let empty = work.write("empty.jsonl", "");
    let out = cli("meeting")
        .arg("--meeting-file")
        .arg(root().join("meetings/demo.yaml"))
        .args(["--agents", "arch,biz", "--provider", "replay", "--cassette"])
        .arg(&empty)
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("blocker/sub/report.md"))
        .args(["--trace-id", "t1"])
        .run();
    out.exit(2).one_stderr_line().stderr_has("--report-file");
    assert!(!work.join("runs/t1/llm.jsonl").exists());
    // A folder that does not exist yet is created.
    let out = cli("meeting")
        .arg("--meeting-file")
        .arg(root().join("meetings/demo.yaml"))
        .args(["--agents", "arch,biz", "--provider", "replay", "--cassette"])
        .arg(demo_cassette())
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("new/folder/r.md"))
        .arg("--quiet")
        .run();
    out.exit(0);
    assert!(work.join("new/folder/r.md").is_file());
}

/// `--resume` takes the settings that do not change what the meeting is, saves them in
/// meeting.json, and refuses any other flag given on the command line by name. Values from
/// the environment do not count as given.
#[test]
fn resume_accepts_only_settings_that_keep_the_meeting() {
    let work = Workdir::new();
    // Stop after the first stage (q), so there is something to resume.
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--step"])
        .stdin("\nq\n")
        .run();
    out.exit(130);
    let run_dir = work.join("runs/demo-test");
    for (flag, value) in [
        ("--provider", Some("anthropic")),
        ("--cassette", Some("/nonexistent")),
        ("--model", Some("foo")),
        ("--agents", Some("arch")),
        ("--max-loops", Some("2")),
        ("--dry-run", None),
        ("--llm-log", Some("x.jsonl")),
        ("--allow-sensitive", None),
    ] {
        let mut cmd = resume_cmd(work.path(), &run_dir);
        cmd.arg(flag);
        if let Some(v) = value {
            cmd.arg(v);
        }
        let out = cmd.run();
        out.exit(2).one_stderr_line().stderr_has(flag);
    }
    // Environment values are not flags given with --resume.
    let out = resume_cmd(work.path(), &run_dir)
        .env("AGENT_MEETING_PROVIDER", "anthropic")
        .env("MEETING_CASSETTE", "/nonexistent")
        .env("AGENT_MEETING_MODEL", "foo")
        .env("MEETING_LLM_LOG", work.join("env-log.jsonl"))
        .args(["--max-attempts", "5", "--read-timeout", "7", "--pretty"])
        .args(["--connect-timeout", "3", "--stage", "merge-board="])
        .arg("--report-file")
        .arg(work.join("elsewhere/fixed.md"))
        .run();
    out.exit(0);
    assert!(work.join("elsewhere/fixed.md").is_file());
    assert!(!work.join("report.md").exists());
    assert!(!work.join("env-log.jsonl").exists());
    assert!(out.stdout().contains("\n  \"status\""), "--pretty");
    let settings: Value = serde_json::from_str(&work.read("runs/demo-test/meeting.json")).unwrap();
    assert_eq!(settings["llm"]["max_attempts"], 5);
    assert_eq!(settings["llm"]["read_timeout"], 7.0);
    assert_eq!(settings["llm"]["connect_timeout"], 3.0);
    assert_eq!(settings["llm"]["provider"], "replay");
    assert_eq!(
        settings["report_file"],
        work.join("elsewhere/fixed.md").display().to_string()
    );
}

/// A broken stage override is repaired with --resume --stage; a run whose report could not
/// be saved is resumed with another --report-file.
#[test]
fn resume_repairs_a_broken_override_and_a_bad_report_path() {
    let work = Workdir::new();
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", "merge-board=exit 1"],
    )
    .run();
    out.exit(1);
    let run_dir = work.join("runs/demo-test");
    let bin = crate::harness::bin_dir().join("merge-board");
    let out = resume_cmd(work.path(), &run_dir)
        .arg("--stage")
        .arg(format!("merge-board={}", bin.display()))
        .run();
    out.exit(0);
    assert_eq!(final_board(&run_dir)["status"], "finished");
}

/// `--llm-log F` (or MEETING_LLM_LOG) gets every exchange line too, besides the run folder's
/// own llm.jsonl.
#[test]
fn meeting_llm_log_is_honoured() {
    let work = Workdir::new();
    let log = work.join("logs/mine.jsonl");
    let out = meeting_cmd(work.path(), &demo_cassette(), &["--quiet"])
        .arg("--llm-log")
        .arg(&log)
        .run();
    out.exit(0);
    let run_log = work.read("runs/demo-test/llm.jsonl");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), run_log);
    assert_eq!(run_log.lines().count(), 8);
    // From the environment, appended.
    let work2 = Workdir::new();
    let mut cmd = meeting_cmd(work2.path(), &demo_cassette(), &["--quiet"]);
    cmd.env("MEETING_LLM_LOG", &log);
    cmd.run().exit(0);
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 16);
}

/// After a stage failed, stderr says how to continue.
#[test]
fn a_failed_stage_says_how_to_resume() {
    let work = Workdir::new();
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", "agent-turn=exit 1"],
    )
    .run();
    out.exit(1);
    let run_dir = work.join("runs/demo-test");
    out.stderr_has(&format!(
        "stopped: continue with  meeting resume {}",
        run_dir.display()
    ));
}

/// Every output the meeting will write is checked before the first model call (exit 2, the
/// flag and the path named, no run folder): a report path that names a folder, a report folder
/// under a file, an `--adr` that is a file or lies under one. The cassette is empty: a call
/// would fail with exit 1 instead.
#[test]
fn unwritable_outputs_are_refused_before_any_call() {
    let work = Workdir::new();
    let empty = work.write("empty.jsonl", "");
    let file = work.write("afile", "kept");
    let at = |p: &str| work.join(p).display().to_string();
    let cases = [
        (
            "--report-file",
            at("newdir") + "/",
            "names a folder (expected a Markdown file path",
        ),
        (
            "--report-file",
            at("afile/r.md"),
            "cannot create the folder",
        ),
        ("--adr", at("afile"), "is a file, not a folder"),
        ("--adr", at("afile/records"), "is not a folder"),
    ];
    for (flag, path, what) in cases {
        let mut cmd = cli("meeting");
        cmd.env("AGENT_MEETING_NOW", NOW)
            .args([
                "--meeting-file",
                "meetings/demo.yaml",
                "--agents",
                "arch,biz",
            ])
            .args(["--provider", "replay", "--trace-id", "t"])
            .arg("--cassette")
            .arg(&empty)
            .arg("--run-dir")
            .arg(work.join("runs"));
        if flag == "--adr" {
            cmd.arg("--report-file").arg(work.join("report.md"));
        }
        let out = cmd.args([flag, &path]).run();
        out.exit(2)
            .one_stderr_line()
            .stderr_has(&format!("meeting: {flag}: "))
            .stderr_has(what);
        assert!(!work.join("runs").exists(), "{flag} {path}: no run folder");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
}

/// A cassette that does not answer this meeting stops it (exit 1) without the resume line:
/// resuming would meet the same cassette; the error says what helps instead. Told by the
/// error's kind, not its words.
#[test]
fn a_cassette_of_another_meeting_offers_no_resume() {
    let work = Workdir::new();
    let first = std::fs::read_to_string(demo_cassette()).unwrap();
    let short = work.write(
        "short.jsonl",
        format!("{}\n", first.lines().next().unwrap()),
    );
    let out = meeting_cmd(work.path(), &short, &["--quiet"]).run();
    out.exit(1)
        .stderr_has("no entry for call 2")
        .stderr_lacks("continue with  meeting resume");
}

/// SIGTERM mid-meeting: the meeting dies of the signal (exit 143 in a shell) after saying how
/// to continue, and the resumed meeting finishes.
#[test]
fn sigterm_says_how_to_resume() {
    use std::os::unix::process::ExitStatusExt;
    let work = Workdir::new();
    // arch's first answer (call 2) takes ten minutes: the signal lands inside that call.
    let slow = held_demo_cassette(work.path(), Some(2));
    let err_file = work.join("stderr.txt");
    let run_dir = work.join("runs/demo-test");
    // `exec` keeps the pid, so the signal reaches `meeting` itself; stderr goes to a file.
    let mut child = Cli::new(Command::new("sh"))
        .arg("-c")
        .arg("exec \"$@\" 2>\"$0\"")
        .arg(&err_file)
        .arg(crate::harness::bin("meeting"))
        .args([
            "--meeting-file",
            "meetings/demo.yaml",
            "--agents",
            "arch,biz",
        ])
        .args([
            "--provider",
            "replay",
            "--trace-id",
            "demo-test",
            "--cassette",
        ])
        .arg(&slow)
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"))
        .env("AGENT_MEETING_NOW", NOW)
        .spawn();
    // Ready: the PM's first decision is saved, so the meeting is driving its run folder (its
    // signal handling is on) and is inside the held call.
    wait_for("the PM's first decision", || {
        assert!(child.try_wait().unwrap().is_none(), "the meeting ended");
        run_dir.join("0003-pm-step.out.json").exists()
    });
    // SAFETY: kill(2) on our own child, still running.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}");
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert!(
        err.contains(&format!(
            "stopped: continue with  meeting resume {}",
            run_dir.display()
        )),
        "{err}"
    );
    assert!(!work.join("report.md").exists());
    held_demo_cassette(work.path(), None);
    let out = resume_cmd(work.path(), &run_dir).run();
    out.exit(0);
    assert!(work.join("report.md").is_file());
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
#[cfg(target_os = "linux")]
fn ended(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// A `--stage` command runs in its own process group, stopped with the meeting: after a
/// SIGTERM (the command's background child) and a SIGKILL (our own program under the
/// command's shell) nothing of the stage is left to make a paid call the resume makes again.
#[cfg(target_os = "linux")]
#[test]
fn nothing_a_stage_command_started_outlives_the_meeting() {
    let work = Workdir::new();
    let held = held_demo_cassette(work.path(), Some(2));
    let pid_file = work.join("stage.pid");
    let stages = [
        // SIGTERM: a child the command put in the background.
        (
            libc::SIGTERM,
            format!("agent-turn=sleep 300 & echo $! > '{}'; wait", pid_file.display()),
        ),
        // SIGKILL: our agent-turn, in the middle of its held call, under a second shell.
        (
            libc::SIGKILL,
            format!(
                "agent-turn=sh -c 'echo $$ > \"{}\"; exec \"{}\" --provider replay --cassette \"{}\"'",
                pid_file.display(),
                crate::harness::bin("agent-turn").display(),
                held.display()
            ),
        ),
    ];
    for (signal, stage) in stages {
        let _ = std::fs::remove_file(&pid_file);
        let _ = std::fs::remove_dir_all(work.join("runs"));
        let mut child = Cli::new(Command::new(crate::harness::bin("meeting")))
            .args([
                "--meeting-file",
                "meetings/demo.yaml",
                "--agents",
                "arch,biz",
            ])
            .args(["--provider", "replay", "--trace-id", "demo-test", "--quiet"])
            .arg("--cassette")
            .arg(&held)
            .arg("--run-dir")
            .arg(work.join("runs"))
            .arg("--report-file")
            .arg(work.join("report.md"))
            .args(["--stage", &stage])
            .env("AGENT_MEETING_NOW", NOW)
            .spawn();
        wait_for("the stage's process", || {
            std::fs::read_to_string(&pid_file).is_ok_and(|p| p.trim().parse::<u32>().is_ok())
        });
        let pid = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .to_string();
        assert!(!ended(&pid), "the stage is running");
        // SAFETY: kill(2) on our own child, still running.
        unsafe { libc::kill(child.id() as i32, signal) };
        child.wait().unwrap();
        wait_for("the stage's process to end with the meeting", || {
            ended(&pid)
        });
    }
}

/// A provider chosen by an agent's `metadata.provider` cannot be overridden by `--provider`:
/// the missing-key error names that agent and does not suggest the flag (checked by `meeting`
/// before any run folder exists, and by the stage itself).
#[test]
fn a_key_missing_for_an_agents_own_provider_names_the_agent() {
    let work = Workdir::new();
    let agents = work.copy_agents("agents");
    let biz = std::fs::read_to_string(agents.join("biz.yaml")).unwrap();
    let biz: String = biz
        .lines()
        .take_while(|l| !l.starts_with("metadata:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        agents.join("biz.yaml"),
        format!("{biz}metadata:\n  provider: anthropic\n"),
    )
    .unwrap();
    let run = work
        .cli("meeting")
        .env("OPENAI_API_KEY", "sk-test-metadata-provider")
        .args(["--topic", "Adopt Rust?", "--agents", "arch,biz", "--quiet"])
        .run();
    run.exit(1)
        .stderr_has("set by agent \"biz\" in its config's metadata.provider")
        .stderr_lacks("choose another with --provider");
    assert!(!work.join("runs").exists());
}

/// A resumed meeting is the meeting that was started: a variable behind an LLM flag set only
/// for the resume (`AGENT_MEETING_MODEL`) does not reach the stages; the saved settings do.
#[test]
fn a_variable_set_for_the_resume_does_not_change_the_meeting() {
    let work = Workdir::new();
    meeting_cmd(work.path(), &demo_cassette(), &["--step"])
        .stdin("\n\nq\n")
        .run()
        .exit(130);
    let run_dir = work.join("runs/demo-test");
    resume_cmd(&root(), &run_dir)
        .env("AGENT_MEETING_MODEL", "some-other-model")
        .run()
        .exit(0);
    let models: Vec<String> = std::fs::read_to_string(run_dir.join("llm.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["model"].to_string())
        .collect();
    assert!(models.len() >= 8, "{models:?}");
    assert!(models.iter().all(|m| m == "\"replay\""), "{models:?}");
}

/// A stage that panics (exit 101) is reported with its panic message, not the backtrace hint
/// that ends its stderr.
#[test]
fn a_panicking_stage_is_reported_with_its_panic_message() {
    let work = Workdir::new();
    let panic = "merge-board=printf 'thread main panicked at src/x.rs:1:1:\\nboom\\nnote: run with `RUST_BACKTRACE=1` to display a backtrace\\n' >&2; exit 101";
    meeting_cmd(
        work.path(),
        &demo_cassette(),
        &["--quiet", "--stage", panic],
    )
    .run()
    .exit(1)
    .stderr_has("stage merge-board failed (exit 101): thread main panicked at src/x.rs:1:1: boom");
}

/// A failed request gets its line while the stage still runs: the PM's first request fails,
/// the retry is held (a slow model); the line is on stderr before the stage ends.
#[test]
fn a_failed_request_is_shown_while_the_stage_runs() {
    use std::os::unix::process::ExitStatusExt;
    let work = Workdir::new();
    let first = std::fs::read_to_string(demo_cassette()).unwrap();
    let mut held: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    held["seq"] = 2.into();
    held["delay_ms"] = 600_000.into();
    let cassette = work.write("held.jsonl", format!("{}{held}\n", http_500(1, "pm")));
    let err_file = work.join("stderr.txt");
    let mut child = Cli::new(Command::new("sh"))
        .arg("-c")
        .arg("exec \"$@\" 2>\"$0\"")
        .arg(&err_file)
        .arg(crate::harness::bin("meeting"))
        .args([
            "--meeting-file",
            "meetings/demo.yaml",
            "--agents",
            "arch,biz",
        ])
        .args([
            "--provider",
            "replay",
            "--trace-id",
            "demo-test",
            "--cassette",
        ])
        .arg(&cassette)
        .arg("--run-dir")
        .arg(work.join("runs"))
        .arg("--report-file")
        .arg(work.join("report.md"))
        .env("AGENT_MEETING_NOW", NOW)
        .spawn();
    wait_for("the failed request's line", || {
        assert!(child.try_wait().unwrap().is_none(), "the meeting ended");
        std::fs::read_to_string(&err_file)
            .unwrap_or_default()
            .contains("[loop 1/6] pm: request 1 failed after ")
    });
    // Still inside the PM's round: no stage has finished.
    assert!(!work.join("runs/demo-test/0003-pm-step.out.json").exists());
    // SAFETY: kill(2) on our own child, still running.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}");
}

/// A FINISH without a decision in a meeting with options is sent back once, saying what it
/// needs (docs/design/pm-round.md#closing-round); the retry's decision finishes the meeting.
#[test]
fn a_finish_without_a_decision_is_asked_for_it() {
    let work = Workdir::new();
    let text = std::fs::read_to_string(demo_cassette()).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    let mut finish: Value = serde_json::from_str(last["response"].as_str().unwrap()).unwrap();
    let decided = finish.clone();
    finish["decision"] = Value::Null;
    let mut out = lines[..lines.len() - 1].join("\n") + "\n";
    let mut null_line = last.clone();
    null_line["response"] = json!(finish.to_string());
    out.push_str(&format!("{null_line}\n"));
    let mut retry = last.clone();
    retry["seq"] = json!(last["seq"].as_u64().unwrap() + 1);
    retry["response"] = json!(decided.to_string());
    out.push_str(&format!("{retry}\n"));
    let cassette = work.write("c.jsonl", out);
    let run = meeting_cmd(work.path(), &cassette, &[]).run();
    run.check(run.code() == Some(0), "the retry's decision");
    let log = work.read("runs/demo-test/llm.jsonl");
    let asked: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let retry_prompt = asked.last().unwrap()["messages"].to_string();
    assert!(
        retry_prompt.contains("a FINISH in a meeting with options needs a decision"),
        "{retry_prompt}"
    );
}

/// A FINISH that leaves the decision out, in a meeting with options, is no decision end to
/// end through `meeting`: the report the PM wrote is saved, the meeting ends `no_decision`,
/// exit 3, so `meeting && publish` publishes nothing. (pm-step refuses such a FINISH from a
/// model; a user's own pm-step stage — here the built-in one with the decision taken out of
/// its board — can still make one.)
#[test]
fn a_finish_without_a_decision_exits_3() {
    if skip_without(Tool::Jq) {
        return;
    }
    let work = Workdir::new();
    let out = meeting_cmd(
        work.path(),
        &demo_cassette(),
        &[
            "--stage",
            "pm-step=pm-step | jq -c '.record.decision = null'",
        ],
    )
    .env("PATH", crate::harness::programs_path())
    .env("MEETING_CASSETTE", demo_cassette())
    .run();
    out.exit(3);
    let result: Value = out.json();
    assert_eq!(result["status"], "no_decision", "{result}");
    assert!(
        result["last_error"]
            .as_str()
            .unwrap()
            .contains("the PM's report chose none of the options"),
        "{result}"
    );
    assert!(work.join("report.md").is_file());
}
