//! The one stage rule seen from outside: `next-stage` names the program a board waits for, and
//! every stage program refuses a board that is not its turn with the same wording. A `failed`
//! board (its report could not be saved) goes to render-report everywhere, which retries it.

use serde_json::{json, Value};

use crate::fixtures::{held_demo_cassette, NOW};
use crate::harness::{cli, every_case, root, wait_for, Cli};
use crate::harness::{skip_without, Tool};

fn program(name: &str) -> Cli {
    let mut c = cli(name);
    c.env("AGENT_MEETING_NOW", NOW);
    c
}

/// A fresh running board, made by the real collect-context and init-board.
fn running_board() -> Value {
    let packet = program("collect-context")
        .args(["--topic", "Adopt Rust for the ingest service?"])
        .run()
        .success()
        .stdout();
    program("init-board")
        .args(["--agents", "arch,biz", "--trace-id", "t-next"])
        .stdin(packet)
        .run()
        .success()
        .json()
}

fn next_stage(board: &Value) -> String {
    program("next-stage")
        .stdin(board.to_string())
        .run()
        .success()
        .stdout()
}

/// Offline flags for the LLM stages (the guard refuses before any call).
fn llm_flags(stage: &str) -> &'static [&'static str] {
    match stage {
        "merge-board" => &[],
        _ => &[
            "--provider",
            "replay",
            "--cassette",
            "meetings/demo.cassette.jsonl",
        ],
    }
}

fn with(board: &Value, edit: &[(&str, Value)]) -> Value {
    let mut b = board.clone();
    for (k, v) in edit {
        b[*k] = v.clone();
    }
    b
}

#[test]
fn next_stage_names_the_program_for_every_state() {
    let b = running_board();
    let call = json!({"target_agent": "arch", "prompt": "q"});
    let turn = json!({"agent_name": "arch", "status": "error", "prompt": "q", "error": "x"});
    let cases = [
        (vec![], "pm-step"),
        (vec![("pending_calls", json!([call]))], "agent-turn"),
        (vec![("last_turns", json!([turn]))], "merge-board"),
        (vec![("status", json!("finishing"))], "pm-step"),
        (
            vec![
                ("status", json!("finishing")),
                ("final_report", json!("Go.")),
            ],
            "render-report",
        ),
        (vec![("status", json!("forced_stop"))], "render-report"),
        (vec![("status", json!("failed"))], "render-report"),
        // Reviewer mode (docs/design/review.md#flow): the draft in final_report.
        (
            vec![
                ("status", json!("reviewing")),
                ("final_report", json!("Go.")),
            ],
            "pm-step",
        ),
        (
            vec![
                ("status", json!("reviewing")),
                ("final_report", json!("Go.")),
                (
                    "pending_calls",
                    json!([{"target_agent": "biz", "prompt": "Review."}]),
                ),
            ],
            "agent-turn",
        ),
        (
            vec![
                ("status", json!("reviewing")),
                ("final_report", json!("Go.")),
                (
                    "last_turns",
                    json!([{"agent_name": "biz", "status": "error", "prompt": "q", "error": "x"}]),
                ),
            ],
            "merge-board",
        ),
        (vec![("status", json!("finished"))], "none"),
    ];
    every_case(
        cases,
        |(edit, want)| format!("{edit:?} → {want}"),
        |(edit, want)| {
            assert_eq!(
                next_stage(&with(&b, &edit)),
                format!("{want}\n"),
                "{edit:?}"
            );
        },
    );
}

#[test]
fn next_stage_refuses_what_is_not_a_board() {
    program("next-stage")
        .stdin(r#"{"packet_version": 1}"#)
        .run()
        .exit(2)
        .stdout_is("")
        .stderr_is("next-stage: <stdin>: this is a MeetingPacket (collect-context's output), not a Board: pipe it into init-board\n");
    program("next-stage")
        .stdin(r#"{"status": "running"}"#)
        .run()
        .exit(2)
        .stdout_is("")
        .stderr_starts_with("next-stage: <stdin>: board_version: missing");
}

#[test]
fn a_failed_board_goes_to_render_report_everywhere() {
    let failed = with(
        &running_board(),
        &[
            ("status", json!("failed")),
            ("last_error", json!("report not saved: disk full")),
        ],
    );
    every_case(
        ["pm-step", "agent-turn", "merge-board"],
        |s| s.to_string(),
        |stage| {
            program(stage)
                .args(llm_flags(stage))
                .stdin(failed.to_string())
                .run()
                .exit(2)
                .stdout_is("")
                .stderr_is(&format!(
                    "{stage}: render-report should run next, not {stage}\n"
                ));
        },
    );
    // render-report retries the save: this time it lands and the meeting is over.
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.md");
    let result: Value = program("render-report")
        .arg("--report-file")
        .arg(&report)
        .stdin(failed.to_string())
        .run()
        .success()
        .json();
    assert_eq!(result["status"], "finished");
    assert!(report.is_file());
    assert_eq!(next_stage(&result["board"]), "none\n");
}

#[test]
fn a_finished_board_is_over_for_every_stage_but_a_re_render() {
    let finished = with(
        &running_board(),
        &[
            ("status", json!("finished")),
            ("final_report", json!("Go.")),
        ],
    );
    every_case(
        ["pm-step", "merge-board"],
        |s| s.to_string(),
        |stage| {
            program(stage)
                .args(llm_flags(stage))
                .stdin(finished.to_string())
                .run()
                .exit(2)
                .stderr_is(&format!(
                    "{stage}: the meeting is over; {stage} has nothing to do\n"
                ));
        },
    );
    program("render-report")
        .arg("--markdown")
        .stdin(finished.to_string())
        .run()
        .success();
}

/// The shell loop asks `next-stage`; when the report cannot be saved, render-report's exit 1
/// ends the loop (it does not retry forever).
#[test]
fn the_shell_loop_stops_when_the_report_cannot_be_saved() {
    if skip_without(Tool::Jq) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = crate::harness::programs_path();
    let mut sh = std::process::Command::new("sh");
    sh.arg("share/meeting.sh")
        .arg("meetings/demo.yaml")
        .arg("arch,biz")
        .arg(dir.path()); // a folder: the report cannot be written there
    Cli::new(sh)
        .env("PATH", path)
        .env("AGENT_MEETING_NOW", NOW)
        .env("AGENT_MEETING_PROVIDER", "replay")
        .env(
            "MEETING_CASSETTE",
            root().join("meetings/demo.cassette.jsonl"),
        )
        .run()
        .exit(1)
        .stderr_has("render-report: ");
}

/// Ctrl-C (SIGINT to the whole process group, as a terminal sends it) or SIGTERM during the
/// shell loop: it exits 130 / 143 and leaves none of its temporary boards behind (dash runs no
/// EXIT trap for a signal unless the signal is trapped).
#[cfg(unix)]
#[test]
fn the_shell_loop_cleans_up_on_ctrl_c_and_sigterm() {
    if skip_without(Tool::Jq) {
        return;
    }
    use std::os::unix::process::CommandExt;
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let tmp = tempfile::tempdir().unwrap();
        // The PM's first call takes ten minutes: the loop is surely running when signalled.
        let slow = held_demo_cassette(tmp.path(), Some(1));
        let temp = tmp.path().join("t");
        std::fs::create_dir(&temp).unwrap();
        let path = crate::harness::programs_path();
        let mut sh = std::process::Command::new("sh");
        sh.arg("share/meeting.sh")
            .arg("meetings/demo.yaml")
            .arg("arch,biz")
            .arg(tmp.path().join("report.md"))
            .env("TMPDIR", &temp)
            .env("PATH", path)
            .env("AGENT_MEETING_PROVIDER", "replay")
            .env("MEETING_CASSETTE", &slow)
            .process_group(0);
        // As a terminal's foreground job has it: a test run started in the background (`cmd &`
        // in a script) inherits SIGINT ignored, and a shell cannot trap a signal ignored on entry.
        // SAFETY: signal(2) is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            sh.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = Cli::new(sh).spawn();
        // Ready: a temporary board has content. The script makes its temporary files before
        // it traps the signals, and writes the first board only after.
        wait_for("the shell loop's first board", || {
            std::fs::read_dir(&temp)
                .unwrap()
                .any(|e| e.unwrap().metadata().is_ok_and(|m| m.len() > 0))
        });
        assert!(
            child.try_wait().unwrap().is_none(),
            "still running when signalled"
        );
        // SAFETY: kill(2) on the process group we just created.
        unsafe { libc::kill(-(child.id() as i32), signal) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "signal {signal}");
        let left: Vec<_> = std::fs::read_dir(&temp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(left.is_empty(), "temporary boards left behind: {left:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// A loop over next-stage always ends (docs/design/flow.md#state-machine)

/// More iterations than any meeting here takes: a loop still going then never ends.
const LOOP_CAP: usize = 100;

/// How a hand-written loop over next-stage ended: the stage it stopped at (`none` when
/// next-stage said so), that stage's exit code and stderr, and the iterations it took.
struct Ended {
    stage: String,
    code: Option<i32>,
    stderr: String,
    iterations: usize,
}

/// The loop a user writes: `stage=$(next-stage < board)`, then `$stage [render] < board >
/// next`, until `none` or a stage exits non-zero — every stage with no flags but
/// `render` for render-report; the environment gives the provider. Fails past [`LOOP_CAP`].
fn stage_loop(mut board: String, env: &[(&str, &str)], render: &[&str]) -> Ended {
    for iterations in 1..=LOOP_CAP {
        let stage = next_stage(&serde_json::from_str(&board).unwrap())
            .trim()
            .to_string();
        if stage == "none" {
            return Ended {
                stage,
                code: Some(0),
                stderr: String::new(),
                iterations,
            };
        }
        let mut cmd = program(&stage);
        for (k, v) in env {
            cmd.env(k, v);
        }
        if stage == "render-report" {
            cmd.args(render);
        }
        let out = cmd.stdin(board).run();
        if out.code() != Some(0) {
            return Ended {
                stage,
                code: out.code(),
                stderr: out.stderr(),
                iterations,
            };
        }
        board = out.stdout();
    }
    panic!("a loop over next-stage ran {LOOP_CAP} iterations without ending");
}

/// A fresh board of `agents` with the loop limit `max_loops`, from the real programs.
fn fresh_board(agents: &str, max_loops: &str, agents_dir: Option<&std::path::Path>) -> String {
    let packet = program("collect-context")
        .args(["--topic", "Adopt Rust for the ingest service?"])
        .run()
        .success()
        .stdout();
    let mut init = program("init-board");
    init.args(["--agents", agents, "--max-loops", max_loops]);
    if let Some(dir) = agents_dir {
        init.arg("--agents-dir").arg(dir);
    }
    init.stdin(packet).run().success().stdout()
}

/// Every way a meeting ends ends a loop that calls each stage with no flags: a PM's finish and
/// the loop limit reach render-report, which with nowhere to save the report refuses (exit 2,
/// naming --report-file) rather than print the board unchanged — with `--board` too, the flow
/// the guide's stage table offers, which once ran forever; given --report-file, next-stage says
/// none. A person with no one there to answer ends it with agent-turn's exit 4, a model that
/// cannot be reached with pm-step's exit 1, and a report that cannot be saved with
/// render-report's exit 1.
#[test]
fn a_loop_over_next_stage_ends_for_every_way_a_meeting_ends() {
    let work = crate::harness::Workdir::new();
    let sample = [("AGENT_MEETING_PROVIDER", "sample")];
    for (label, max_loops) in [("a PM's finish", "6"), ("the loop limit", "1")] {
        let board = fresh_board("arch,biz", max_loops, None);
        for render in [&[][..], &["--board"][..]] {
            let ended = stage_loop(board.clone(), &sample, render);
            assert_eq!(
                (ended.stage.as_str(), ended.code),
                ("render-report", Some(2)),
                "{label}, render-report {render:?}: {}",
                ended.stderr
            );
            assert!(
                ended.stderr.contains("give --report-file FILE"),
                "{}",
                ended.stderr
            );
        }
        let report = work.join(format!("report-{max_loops}.md"));
        let report_flag = report.display().to_string();
        let ended = stage_loop(board, &sample, &["--board", "--report-file", &report_flag]);
        assert_eq!(ended.stage, "none", "{label}: {}", ended.stderr);
        assert!(report.is_file(), "{label}");
        // The same with the report path a folder: the save fails, exit 1.
        let folder = work.join("a-folder.md");
        std::fs::create_dir_all(&folder).unwrap();
        let folder_flag = folder.display().to_string();
        let board = fresh_board("arch,biz", max_loops, None);
        let ended = stage_loop(board, &sample, &["--board", "--report-file", &folder_flag]);
        assert_eq!(
            (ended.stage.as_str(), ended.code),
            ("render-report", Some(1)),
            "{label}: {}",
            ended.stderr
        );
    }
    // A person with no one there to answer.
    work.write(
        "agents/ana.yaml",
        "name: ana\nkind: human\nrole: Ops lead\ndescription: Knows the nights on call.\n",
    );
    let cassette = crate::fixtures::Cassette::new()
        .pm(crate::fixtures::pm::call("ana", "Who gets paged at night?"))
        .write(work.join("c.jsonl"));
    let cassette = cassette.display().to_string();
    let board = fresh_board("arch,ana", "6", Some(&work.join("agents")));
    let tty = agent_meeting::stage::agent_turn::human::TTY_ENV;
    let ended = stage_loop(
        board,
        &[
            ("AGENT_MEETING_PROVIDER", "replay"),
            ("MEETING_CASSETTE", &cassette),
            (tty, "/nonexistent/tty"),
        ],
        &[],
    );
    assert_eq!(
        (ended.stage.as_str(), ended.code),
        ("agent-turn", Some(4)),
        "{}",
        ended.stderr
    );
    // A model that cannot be reached (a port nothing listens on).
    let board = fresh_board("arch,biz", "6", None);
    let ended = stage_loop(
        board,
        &[
            ("AGENT_MEETING_PROVIDER", "openai"),
            ("OPENAI_API_KEY", "test-key"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
            ("MEETING_RETRY_BASE_MS", "1"),
        ],
        &[],
    );
    assert_eq!(
        (ended.stage.as_str(), ended.code, ended.iterations),
        ("pm-step", Some(1), 1),
        "{}",
        ended.stderr
    );
}

/// `next-stage --run-folder` reads a folder through the one reader every mode uses: a tampered
/// `meeting.json` (another version, an unknown field) is refused naming it, exit 2.
#[test]
fn next_stage_reads_a_run_folder_through_the_one_reader() {
    let work = crate::harness::Workdir::new();
    let run = crate::fixtures::stopped_run(work.path());
    let next = || program("next-stage").arg("--run-folder").arg(&run).run();
    next().success().stdout_is("agent-turn\n");
    let file = run.join("meeting.json");
    let saved = std::fs::read_to_string(&file).unwrap();
    let mut v: Value = serde_json::from_str(&saved).unwrap();
    v["settings_version"] = json!(99);
    std::fs::write(&file, v.to_string()).unwrap();
    next()
        .exit(2)
        .one_stderr_line()
        .stderr_has("meeting.json")
        .stderr_has("settings_version");
    let mut v: Value = serde_json::from_str(&saved).unwrap();
    v["planted"] = json!("x");
    std::fs::write(&file, v.to_string()).unwrap();
    next().exit(2).one_stderr_line().stderr_has("planted");
}
