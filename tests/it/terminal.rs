//! Every program helps at a terminal: run with stdin a terminal (a pseudo-terminal from
//! util-linux `script`), it says what it reads and gives an example, exit 2, instead of waiting
//! for a document nobody types. And a document fed to the wrong program is named, with the
//! program that takes it, instead of "board_version: missing".

use std::process::Command;

use serde_json::{json, Value};

use crate::fixtures;
use crate::harness::{bin, cli, every_case, skip_without, Cli, Tool};

/// Whether util-linux `script` can give a pseudo-terminal here (the library's own test covers
/// the refusal where it cannot).
/// `program args` run by `script`, so its stdin (and stdout, stderr) is a terminal; what it
/// writes arrives on `script`'s stdout, and `-e` passes its exit code on.
fn at_terminal(program: &str, args: &[&str]) -> Cli {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = quote(&bin(program).display().to_string());
    for a in args {
        line.push(' ');
        line.push_str(&quote(a));
    }
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"]);
    Cli::new(cmd)
}

#[test]
fn every_program_reading_stdin_refuses_a_terminal_with_its_hint() {
    if skip_without(Tool::Script) {
        return;
    }
    let cases: [(&str, &[&str], &str); 8] = [
        (
            "collect-context",
            &[],
            "reads a MeetingInput (a meeting file, JSON or YAML) on stdin, or --meeting-file FILE or --topic TOPIC; e.g. collect-context --meeting-file",
        ),
        (
            "init-board",
            &["--agents", "arch"],
            "init-board reads a MeetingPacket (collect-context's output) on stdin; e.g. collect-context --meeting-file m.yaml | init-board --agents arch,biz",
        ),
        ("pm-step", &[], "pm-step reads a Board (init-board's or merge-board's output) on stdin; e.g. "),
        ("agent-turn", &[], "agent-turn reads a Board with pending_calls (pm-step's output) on stdin; e.g. "),
        ("merge-board", &[], "merge-board reads a Board with last_turns (agent-turn's output) on stdin; e.g. "),
        ("render-report", &[], "render-report reads a finishing or forced_stop Board (pm-step's output) on stdin; e.g. "),
        ("next-stage", &[], "next-stage reads a Board on stdin and prints the stage it waits for; e.g. next-stage < "),
        ("agent-builder", &[], "agent-builder reads the agent's description on stdin, or --description TEXT; e.g. "),
    ];
    every_case(
        cases,
        |(program, ..)| program.to_string(),
        |(program, args, hint)| {
            let run = at_terminal(program, args).run();
            run.exit(2)
                .stdout_has(&format!("{program}: stdin is a terminal, and "))
                .stdout_has(hint)
                .stdout_has("(see --help)");
            let lines = run
                .stdout()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count();
            run.check(lines == 1, "one line");
        },
    );
}

/// A terminal is only refused where stdin would be read: flags that name the input still work.
#[test]
fn a_terminal_is_fine_when_stdin_is_not_read() {
    if skip_without(Tool::Script) {
        return;
    }
    at_terminal("collect-context", &["--topic", "Adopt Rust?"])
        .run()
        .success()
        .stdout_has("\"packet_version\":1");
}

fn packet() -> String {
    cli("collect-context")
        .args(["--topic", "Adopt Rust for the ingest service?"])
        .run()
        .success()
        .stdout()
}

fn board() -> Value {
    serde_json::to_value(fixtures::board()).unwrap()
}

const MEETING_YAML: &str =
    "topic: Adopt Rust?\ndecision_packet:\n  decision_to_make: Rewrite or not\n";

const BOARD_STAGES: [&str; 5] = [
    "pm-step",
    "agent-turn",
    "merge-board",
    "render-report",
    "next-stage",
];

#[track_caller]
fn refused(program: &str, args: &[&str], input: impl Into<Vec<u8>>, message: &str) {
    cli(program)
        .args(args)
        .stdin(input)
        .run()
        .exit(2)
        .stderr_is(&format!("{program}: <stdin>: {message}\n"));
}

#[test]
fn a_packet_where_a_board_belongs_names_init_board() {
    let packet = packet();
    every_case(
        BOARD_STAGES,
        |p| p.to_string(),
        |program| {
            refused(
            program,
            &[],
            packet.clone(),
            "this is a MeetingPacket (collect-context's output), not a Board: pipe it into init-board",
        );
        },
    );
}

#[test]
fn a_board_where_a_packet_belongs_names_the_stages() {
    refused(
        "init-board",
        &["--agents", "arch"],
        board().to_string(),
        "this is a Board (init-board's output), not a MeetingPacket: pipe it into the stage it waits for (next-stage prints which)",
    );
}

#[test]
fn a_report_result_where_a_board_belongs_points_at_its_board() {
    let result = json!({
        "report_version": 1,
        "status": "finished",
        "kind": "normal",
        "report_file": null,
        "markdown": "# Report\n",
        "board": board(),
    })
    .to_string();
    every_case(
        BOARD_STAGES,
        |p| p.to_string(),
        |program| {
            refused(
            program,
            &[],
            result.clone(),
            "this is a ReportResult (render-report's output), not a Board; its `board` field is the board: jq .board",
        );
        },
    );
    refused(
        "init-board",
        &["--agents", "arch"],
        result,
        "this is a ReportResult (render-report's output), not a MeetingPacket; its `markdown` field is the report",
    );
}

#[test]
fn a_meeting_file_where_a_packet_or_board_belongs_names_collect_context() {
    let as_json = json!({
        "topic": "Adopt Rust?",
        "decision_packet": {"decision_to_make": "Rewrite or not"},
    })
    .to_string();
    for input in [MEETING_YAML.to_string(), as_json] {
        refused(
            "init-board",
            &["--agents", "arch"],
            input.clone(),
            "this is a MeetingInput (a meeting file), not a MeetingPacket: pipe it into collect-context first (collect-context --meeting-file m.yaml | init-board --agents a,b)",
        );
        every_case(
            BOARD_STAGES,
            |p| p.to_string(),
            |program| {
                refused(
                program,
                &[],
                input.clone(),
                "this is a MeetingInput (a meeting file), not a Board: collect-context --meeting-file m.yaml | init-board --agents a,b makes a board",
            );
            },
        );
    }
}

#[test]
fn a_meeting_result_where_a_board_belongs_points_at_the_run_folder() {
    let result = json!({
        "status": "finished",
        "report_file": "reports/r.md",
        "run_dir": "runs/t",
        "trace_id": "t",
    })
    .to_string();
    refused(
        "merge-board",
        &[],
        result,
        "this is a MeetingResult (meeting's output), not a Board; its run_dir holds the boards (NNNN-<stage>.out.json)",
    );
}

/// Documents that are none of the kinds keep the version message.
#[test]
fn an_unknown_document_still_says_the_version_is_missing() {
    refused(
        "merge-board",
        &[],
        r#"{"topic": "only a topic"}"#,
        &format!(
            "board_version: missing (expected {})",
            agent_meeting::model::BOARD_VERSION
        ),
    );
    refused(
        "init-board",
        &["--agents", "arch"],
        "topic: yaml",
        "not valid JSON: expected ident at line 1 column 2",
    );
}
