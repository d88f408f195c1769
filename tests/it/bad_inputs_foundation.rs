//! Bad inputs to the foundation programs: each exits 2 with one line naming the program, the
//! file and the field, prints nothing on stdout and never panics.
//!
//! The table runs in one test; `CASE=<part of a case name>` runs only the matching cases:
//! `CASE='malformed yaml' cargo test --test integration bad_inputs_foundation::`.

use std::path::Path;

use crate::harness::{cli, par_map, select};

const GOOD_AGENT: &str = r#"
name: NAME
role: Architect
description: d
system_prompt: You are an architect.
input_schema:
  type: object
  properties: {prompt: {type: string}, meeting_summary: {type: string}, context_summary: {type: string}}
  required: [prompt]
output_schema:
  type: object
  properties: {response: {type: string}, key_points: {type: array, items: {type: string}}}
  required: [response]
"#;

const PACKET: &str = r#"{"packet_version":1,"meeting_input":{"topic":"t","decision_packet":{"decision_to_make":"d"}},"context_bundle":{"summary":""}}"#;

struct Case {
    name: &'static str,
    /// (file name in the agents folder, contents); `NAME` is replaced by the file stem.
    files: Vec<(&'static str, String)>,
    args: Vec<&'static str>,
    stdin: String,
    /// Every fragment must appear in the one-line message.
    expect: Vec<&'static str>,
}

fn agent_with(replace: &str, with: &str) -> String {
    assert!(GOOD_AGENT.contains(replace), "{replace}");
    GOOD_AGENT.replacen(replace, with, 1)
}

fn cases() -> Vec<Case> {
    let c = |name,
             files: Vec<(&'static str, String)>,
             args: Vec<&'static str>,
             stdin: &str,
             expect: Vec<&'static str>| Case {
        name,
        files,
        args,
        stdin: stdin.to_string(),
        expect,
    };
    let one = |file: &'static str, body: String| vec![(file, body)];
    vec![
        c(
            "malformed yaml agent",
            one("a.yaml", "name: a\nrole: [unclosed\n".into()),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml", "init-board: "],
        ),
        c(
            "malformed json agent",
            one("a.json", "{\"name\": \"a\",".into()),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.json"],
        ),
        c(
            "agent wrong type",
            one("a.yaml", agent_with("role: Architect", "role: [1, 2]")),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml: role: invalid type"],
        ),
        c(
            "agent unknown field",
            one(
                "a.yaml",
                agent_with("role: Architect", "role: A\nrole_typo: x"),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml", "unknown field `role_typo`"],
        ),
        c(
            "agent missing system_prompt",
            one(
                "a.yaml",
                agent_with("system_prompt: You are an architect.", ""),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml", "missing field `system_prompt`"],
        ),
        c(
            "agent empty system_prompt",
            one(
                "a.yaml",
                agent_with(
                    "system_prompt: You are an architect.",
                    "system_prompt: \"  \"",
                ),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml: system_prompt: must not be empty"],
        ),
        c(
            "name/stem mismatch",
            one("a.yaml", GOOD_AGENT.replace("NAME", "b")),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml: name: \"b\" does not match the file name \"a\""],
        ),
        c(
            "unsafe name in file",
            one(
                "a.yaml",
                GOOD_AGENT.replace("name: NAME", "name: \"a/../x\""),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml: name"],
        ),
        c(
            "unsafe name on command line",
            vec![],
            vec!["--agents", "../etc"],
            PACKET,
            vec!["--agents", "not a valid agent name"],
        ),
        c(
            "output required foreign field",
            one(
                "a.yaml",
                agent_with("required: [response]", "required: [response, verdict]"),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml: output_schema.required: \"verdict\" is not an AgentTurnResult field"],
        ),
        c(
            "output requires agent_name",
            one(
                "a.yaml",
                agent_with("required: [response]", "required: [response, agent_name]"),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml: output_schema.required[1]"],
        ),
        c(
            "output response not string",
            one(
                "a.yaml",
                agent_with("response: {type: string}", "response: {type: integer}"),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["output_schema.properties.response.type"],
        ),
        c(
            "output response missing",
            one("a.yaml", agent_with("response: {type: string}, ", "")),
            vec!["--agents", "a"],
            PACKET,
            vec!["output_schema.properties.response"],
        ),
        c(
            "output response not required",
            one("a.yaml", agent_with("required: [response]", "required: []")),
            vec!["--agents", "a"],
            PACKET,
            vec!["output_schema.required: must include \"response\""],
        ),
        c(
            "output not object",
            one(
                "a.yaml",
                agent_with(
                    "output_schema:\n  type: object",
                    "output_schema:\n  type: string",
                ),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["output_schema.type"],
        ),
        c(
            "output key_points not array",
            one(
                "a.yaml",
                agent_with(
                    "key_points: {type: array, items: {type: string}}",
                    "key_points: {type: string}",
                ),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["output_schema.properties.key_points.type"],
        ),
        c(
            "output key_points items not strings",
            one(
                "a.yaml",
                agent_with("items: {type: string}", "items: {type: number}"),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["output_schema.properties.key_points.items.type"],
        ),
        c(
            "input requires foreign field",
            one(
                "a.yaml",
                agent_with("required: [prompt]", "required: [prompt, history]"),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml: input_schema.required[1]: \"history\" is not a runtime input field"],
        ),
        c(
            "input types prompt as number",
            one(
                "a.yaml",
                agent_with(
                    "properties: {prompt: {type: string}",
                    "properties: {prompt: {type: number}",
                ),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["input_schema.properties.prompt.type"],
        ),
        c(
            "schema does not compile",
            one(
                "a.yaml",
                agent_with(
                    "output_schema:\n  type: object",
                    "output_schema:\n  type: objekt",
                ),
            ),
            vec!["--agents", "a"],
            PACKET,
            vec!["a.yaml: output_schema: does not compile"],
        ),
        c(
            "duplicate agent name",
            vec![("a.yaml", String::new()), ("a.json", "{}".into())],
            vec!["--agents", "a"],
            PACKET,
            vec!["duplicate agent name \"a\""],
        ),
        c(
            "unknown agent",
            one("a.yaml", String::new()),
            vec!["--agents", "a,zed"],
            PACKET,
            vec!["unknown agent \"zed\"", "available: a"],
        ),
        c(
            "agent listed twice",
            one("a.yaml", String::new()),
            vec!["--agents", "a,a"],
            PACKET,
            vec!["\"a\" is listed twice"],
        ),
        c(
            "pm as participant",
            vec![("a.yaml", String::new()), ("pm.yaml", String::new())],
            vec!["--agents", "a,pm"],
            PACKET,
            vec!["\"pm\" is the PM"],
        ),
        c(
            "empty agent list",
            vec![],
            vec!["--agents", ""],
            PACKET,
            vec!["at least one agent"],
        ),
        c(
            "max loops zero",
            one("a.yaml", String::new()),
            vec!["--agents", "a", "--max-loops", "0"],
            PACKET,
            vec!["--max-loops: must be at least 1"],
        ),
        c(
            "explicit pm missing",
            one("a.yaml", String::new()),
            vec!["--agents", "a", "--pm", "boss"],
            PACKET,
            vec!["--pm: no boss.yaml"],
        ),
        c(
            "pm config not a PMDecision",
            vec![("a.yaml", String::new()), ("pm.yaml", String::new())],
            vec!["--agents", "a"],
            PACKET,
            vec!["pm.yaml: output_schema.properties.next_action"],
        ),
        c(
            "bad trace id",
            one("a.yaml", String::new()),
            vec!["--agents", "a", "--trace-id", "a/b"],
            PACKET,
            vec!["--trace-id"],
        ),
        c(
            "packet not json",
            one("a.yaml", String::new()),
            vec!["--agents", "a"],
            "topic: yaml",
            vec!["<stdin>: not valid JSON"],
        ),
        c(
            "packet empty",
            one("a.yaml", String::new()),
            vec!["--agents", "a"],
            "",
            vec!["<stdin>: empty input"],
        ),
        c(
            "packet wrong version",
            one("a.yaml", String::new()),
            vec!["--agents", "a"],
            r#"{"packet_version":2}"#,
            vec!["<stdin>: packet_version: version 2 is not supported (expected 1)"],
        ),
        c(
            "packet version missing",
            one("a.yaml", String::new()),
            vec!["--agents", "a"],
            r#"{"meeting_input":{}}"#,
            vec!["<stdin>: packet_version: missing"],
        ),
        c(
            "packet version string",
            one("a.yaml", String::new()),
            vec!["--agents", "a"],
            r#"{"packet_version":"1"}"#,
            vec!["packet_version: expected an integer"],
        ),
        c(
            "packet empty topic",
            one("a.yaml", String::new()),
            vec!["--agents", "a"],
            &PACKET.replace("\"topic\":\"t\"", "\"topic\":\" \""),
            vec!["<stdin>: meeting_input.topic: must not be empty"],
        ),
        c(
            "packet wrong type",
            one("a.yaml", String::new()),
            vec!["--agents", "a"],
            &PACKET.replace("\"summary\":\"\"", "\"summary\":5"),
            vec!["<stdin>: context_bundle.summary: invalid type"],
        ),
        c(
            "packet unknown field",
            one("a.yaml", String::new()),
            vec!["--agents", "a"],
            &PACKET.replace("\"packet_version\":1", "\"packet_version\":1,\"extra\":1"),
            vec!["unknown field `extra`"],
        ),
        c(
            "packet is an array",
            one("a.yaml", String::new()),
            vec!["--agents", "a"],
            "[1]",
            vec!["expected a JSON object"],
        ),
    ]
}

fn run_case(case: &Case, dir: &Path) -> (i32, String, String) {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    for (file, body) in &case.files {
        let stem = Path::new(file).file_stem().unwrap().to_str().unwrap();
        let body = if body.is_empty() {
            if *stem == *"pm"
                && case.name != "pm config not a PMDecision"
                && case.name != "pm as participant"
            {
                unreachable!()
            }
            GOOD_AGENT.replace("NAME", stem)
        } else {
            body.replace("NAME", stem)
        };
        std::fs::write(agents.join(file), body).unwrap();
    }
    let out = cli("init-board")
        .current_dir(dir)
        .args(&case.args)
        .stdin(case.stdin.clone())
        .run();
    (out.code().unwrap_or(-1), out.stdout(), out.stderr())
}

#[test]
fn every_bad_input_exits_2_with_one_clear_line() {
    let cases = cases();
    assert!(cases.len() >= 30, "the table must keep at least 30 cases");
    let cases = select(cases, |c| c.name.to_string());
    let failures: Vec<String> = par_map(&cases, 4, |case| {
        let dir = tempfile::tempdir().unwrap();
        let (code, stdout, stderr) = run_case(case, dir.path());
        let line = stderr.trim_end();
        let ok = code == 2
            && stdout.is_empty()
            && line.lines().count() == 1
            && line.starts_with("init-board: ")
            && !line.contains("panicked")
            && case.expect.iter().all(|f| line.contains(f));
        (!ok).then(|| {
            format!(
                "{}: exit {code}, stdout {} bytes, stderr {line:?}",
                case.name,
                stdout.len()
            )
        })
    })
    .into_iter()
    .flatten()
    .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn good_input_makes_a_board() {
    let dir = tempfile::tempdir().unwrap();
    let case = Case {
        name: "good",
        files: vec![("a.yaml", String::new())],
        args: vec!["--agents", "a", "--trace-id", "t-1"],
        stdin: PACKET.into(),
        expect: vec![],
    };
    let (code, stdout, stderr) = run_case(&case, dir.path());
    assert_eq!(code, 0, "{stderr}");
    let board: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(board["trace_id"], "t-1");
    assert_eq!(board["status"], "running");
    assert!(board["pm"].is_null(), "no pm config: built-in PM");
}

#[test]
fn merge_board_refuses_wrong_stage_and_bad_versions() {
    let dir = tempfile::tempdir().unwrap();
    let case = Case {
        name: "good",
        files: vec![("a.yaml", String::new())],
        args: vec!["--agents", "a"],
        stdin: PACKET.into(),
        expect: vec![],
    };
    let (_, board, _) = run_case(&case, dir.path());
    cli("merge-board")
        .stdin(board.clone())
        .run()
        .exit(2)
        .stdout_is("")
        .stderr_is("merge-board: pm-step should run next, not merge-board\n");
    let bumped = board.replacen("\"board_version\":3", "\"board_version\":9", 1);
    cli("merge-board").stdin(bumped).run().exit(2).stderr_is(
        "merge-board: <stdin>: board_version: version 9 is not supported (expected 3)\n",
    );
    cli("merge-board")
        .stdin(vec![0xffu8, 0xfe, 0x00])
        .run()
        .exit(2)
        .stderr_has("not valid UTF-8");
}
