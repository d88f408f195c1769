//! Bad inputs, in one table: every case must give exit 2, nothing on stdout, one stderr line
//! starting with the program name that names the file (or `<stdin>`, where the case names one)
//! and carries the case's fragments, no panic, and no file written.
//!
//! The cases come from three places:
//! - the corpus (`tests/bad_inputs/`), driven by `MANIFEST.tsv`: every file, fed to the
//!   programs that read it;
//! - generated inputs too big to commit;
//! - `init-board`'s table here ([`init_board_cases`]): agents folders and packets that are
//!   wrong in one field each, where the line names the program, the file and the field.
//!
//! `MANIFEST.tsv` maps each file to its programs and the expected fragments. A file's folder
//! says how it is fed: `meeting/` as `--meeting-file`, `meeting-stdin/` and `packet/` and
//! `board/` on stdin, `agent/` (`pm-agent/`) as the `arch` (`pm`) config of `--agents-dir`,
//! `cassette/` as `--cassette` of a replay on a good board. `*.patch.json` files are edits of a
//! good document made at test time by running the demo meeting; `@@KIND:N@@` in a raw file
//! expands to N levels of nesting, so the repository stays small. Huge inputs are generated
//! here (sparse files), never committed.
//!
//! All cases run in parallel inside one test; a failure lists every failing case by name
//! (`<file> → <program>`, `gen: ...` for the generated ones, `init-board: ...` for its table).
//! `CASE=<part of a name>` runs only the matching cases:
//! `CASE=board/two_boards cargo test --test integration bad_inputs::`,
//! `CASE='malformed yaml' cargo test --test integration bad_inputs::`.

use std::path::{Path, PathBuf};

use agent_meeting::model::BOARD_VERSION;
use serde_json::Value;

use crate::fixtures::NOW;
use crate::harness::{cli, par_map, root, select, Workdir, PROGRAMS};

fn corpus() -> PathBuf {
    root().join("tests/bad_inputs")
}

/// Good documents to corrupt, from one offline run of the demo meeting.
struct Bases {
    packet: String,
    pm: String,
    turn: String,
    merge: String,
    report: String,
}

impl Bases {
    fn make(work: &Path) -> Bases {
        let runs = work.join("runs");
        cli("meeting")
            .env("AGENT_MEETING_NOW", NOW)
            .env("AGENT_MEETING_KEEP_BOARDS", "all")
            .args([
                "--meeting-file",
                "meetings/demo.yaml",
                "--agents",
                "arch,biz",
            ])
            .args([
                "--provider",
                "replay",
                "--cassette",
                "meetings/demo.cassette.jsonl",
            ])
            .arg("--run-dir")
            .arg(&runs)
            .arg("--report-file")
            .arg(work.join("demo.md"))
            .args(["--trace-id", "bad-inputs", "--quiet"])
            .run()
            .success();
        let dir = runs.join("bad-inputs");
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        Bases {
            packet: read("0001-collect-context.out.json"),
            // Each stage's input is the output before it.
            pm: read("0002-init-board.out.json"),
            turn: read("0003-pm-step.out.json"),
            merge: read("0004-agent-turn.out.json"),
            report: read("0012-pm-step.out.json"),
        }
    }

    fn board_for(&self, program: &str) -> &str {
        match program {
            "pm-step" => &self.pm,
            "agent-turn" => &self.turn,
            "merge-board" => &self.merge,
            "render-report" => &self.report,
            _ => unreachable!("{program}"),
        }
    }
}

/// What a case puts on disk before the program runs.
enum Setup {
    None,
    /// A file at this name in the case folder (contents, or a sparse file of this length).
    File(String, Contents),
    /// A copy of the shipped agents with `name` replaced by this file.
    Agent(String, Contents),
    /// An `agents` folder of these files (name, contents); an empty content is a good agent,
    /// and `NAME` in a content is replaced by the file's stem.
    Agents(Vec<(&'static str, String)>),
}

enum Contents {
    Bytes(Vec<u8>),
    Sparse(u64),
}

struct Case {
    id: String,
    program: &'static str,
    setup: Setup,
    /// Arguments; `{dir}` is replaced by the case folder.
    args: Vec<String>,
    stdin: Vec<u8>,
    /// The file label the message must name (`init-board`'s table names it in `expect`).
    label: Option<String>,
    /// Every fragment must appear in the one-line message.
    expect: Vec<String>,
}

struct Outcome {
    id: String,
    problems: Vec<String>,
    line: String,
}

fn program_name(p: &str) -> &'static str {
    PROGRAMS
        .into_iter()
        .find(|name| *name == p)
        .unwrap_or_else(|| panic!("unknown program {p:?} in MANIFEST.tsv"))
}

/// Expand `@@ARRAYS:N@@` and friends into N levels of nesting.
fn expand(bytes: Vec<u8>) -> Vec<u8> {
    let text = match String::from_utf8(bytes) {
        Ok(t) if t.contains("@@") => t,
        Ok(t) => return t.into_bytes(),
        Err(e) => return e.into_bytes(),
    };
    let mut out = text;
    for (kind, open, mid, close) in [
        ("ARRAYS", "[", "", "]"),
        ("JSONOBJ", "{\"a\":", "1", "}"),
        ("YAMLMAP", "{a: ", "1", "}"),
        ("JSONNOT", "{\"not\":", "{}", "}"),
    ] {
        while let Some(start) = out.find(&format!("@@{kind}:")) {
            let rest = &out[start + kind.len() + 3..];
            let end = rest.find("@@").expect("closed placeholder");
            let n: usize = rest[..end].parse().expect("placeholder depth");
            let nested = format!("{}{mid}{}", open.repeat(n), close.repeat(n));
            out.replace_range(start..start + kind.len() + 3 + end + 2, &nested);
        }
    }
    out.into_bytes()
}

/// Apply a `*.patch.json` edit to a good document.
fn apply_patch(base: &str, spec: &Value, file: &str) -> Vec<u8> {
    let mut doc: Value = serde_json::from_str(base).unwrap();
    if let Some(sets) = spec.get("set").and_then(Value::as_object) {
        for (pointer, v) in sets {
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            let target = doc
                .pointer_mut(parent)
                .unwrap_or_else(|| panic!("{file}: no {parent} in the base document"));
            match target {
                Value::Object(m) => {
                    m.insert(key.to_string(), v.clone());
                }
                Value::Array(a) => a[key.parse::<usize>().unwrap()] = v.clone(),
                _ => panic!("{file}: {parent} is not a container"),
            }
        }
    }
    for pointer in spec
        .get("remove")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (parent, key) = pointer.as_str().unwrap().rsplit_once('/').unwrap();
        let removed = doc
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .and_then(|m| m.shift_remove(key));
        assert!(removed.is_some(), "{file}: nothing to remove at {pointer}");
    }
    let mut text = serde_json::to_string(&doc).unwrap();
    for pair in spec
        .get("replace")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (from, to) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
        assert!(
            text.contains(from),
            "{file}: {from:?} not in the base document"
        );
        text = text.replacen(from, to, 1);
    }
    if let Some(p) = spec.get("prefix").and_then(Value::as_str) {
        text.insert_str(0, p);
    }
    if let Some(s) = spec.get("suffix").and_then(Value::as_str) {
        text.push_str(s);
    }
    if spec.get("double").is_some() {
        text = format!("{text}\n{text}");
    }
    let mut cut = spec
        .get("truncate")
        .and_then(Value::as_u64)
        .map(|n| n as usize)
        .or_else(|| spec.get("truncate_half").map(|_| text.len() / 2));
    if let Some(n) = cut.as_mut() {
        while !text.is_char_boundary(*n) {
            *n -= 1;
        }
        text.truncate(*n);
    }
    text.into_bytes()
}

fn file_name(rel: &str) -> String {
    Path::new(rel)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn replay_args(cassette: &str) -> Vec<String> {
    vec![
        "--provider".into(),
        "replay".into(),
        "--cassette".into(),
        cassette.into(),
    ]
}

fn manifest_cases(bases: &Bases) -> (Vec<Case>, usize) {
    let manifest = std::fs::read_to_string(corpus().join("MANIFEST.tsv")).unwrap();
    let demo_cassette = root()
        .join("meetings/demo.cassette.jsonl")
        .display()
        .to_string();
    let agents_args = |dir: &str| {
        vec![
            "--agents".to_string(),
            "arch,biz".into(),
            "--agents-dir".into(),
            dir.into(),
        ]
    };
    let shipped_agents = root().join("agents").display().to_string();
    let mut cases = Vec::new();
    let mut files = 0;
    for row in manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = row.split('\t').collect();
        assert!(
            cols.len() >= 3,
            "MANIFEST row needs file, programs, fragments: {row}"
        );
        let rel = cols[0];
        let expect: Vec<String> = cols[2..].iter().map(|s| s.to_string()).collect();
        let raw = std::fs::read(corpus().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        files += 1;
        let patch: Option<Value> = rel
            .ends_with(".patch.json")
            .then(|| serde_json::from_slice(&raw).unwrap());
        let contents = |base: &str| match &patch {
            Some(spec) => apply_patch(base, spec, rel),
            None => expand(raw.clone()),
        };
        let folder = rel.split('/').next().unwrap();
        let name = file_name(rel);
        for p in cols[1].split(',') {
            let program = program_name(p.trim());
            let id = format!("{rel} → {program}");
            let case = match folder {
                "meeting" => Case {
                    id,
                    program,
                    setup: Setup::File(name.clone(), Contents::Bytes(contents(""))),
                    args: vec!["--meeting-file".into(), format!("{{dir}}/{name}")],
                    stdin: Vec::new(),
                    label: Some(name.clone()),
                    expect: expect.clone(),
                },
                "meeting-stdin" => Case {
                    id,
                    program,
                    setup: Setup::None,
                    args: vec!["--base-dir".into(), "{dir}".into()],
                    stdin: contents(""),
                    label: Some("<stdin>".into()),
                    expect: expect.clone(),
                },
                "packet" => Case {
                    id,
                    program,
                    setup: Setup::None,
                    args: agents_args(&shipped_agents),
                    stdin: contents(&bases.packet),
                    label: Some("<stdin>".into()),
                    expect: expect.clone(),
                },
                "agent" | "pm-agent" => {
                    let stem = if folder == "agent" { "arch" } else { "pm" };
                    let ext = name.rsplit('.').next().unwrap();
                    let placed = format!("{stem}.{ext}");
                    Case {
                        id,
                        program,
                        setup: Setup::Agent(placed.clone(), Contents::Bytes(contents(""))),
                        args: agents_args("{dir}/agents"),
                        stdin: bases.packet.clone().into_bytes(),
                        label: Some(placed),
                        expect: expect.clone(),
                    }
                }
                "board" => {
                    let mut args = Vec::new();
                    if matches!(program, "pm-step" | "agent-turn") {
                        args = replay_args(&demo_cassette);
                    }
                    if program == "render-report" {
                        args = vec!["--report-file".into(), "{dir}/out/report.md".into()];
                    }
                    Case {
                        id,
                        program,
                        setup: Setup::None,
                        args,
                        stdin: contents(bases.board_for(program)),
                        label: Some("<stdin>".into()),
                        expect: expect.clone(),
                    }
                }
                "cassette" => Case {
                    id,
                    program,
                    setup: Setup::File(name.clone(), Contents::Bytes(contents(""))),
                    args: replay_args(&format!("{{dir}}/{name}")),
                    stdin: bases.board_for(program).as_bytes().to_vec(),
                    label: Some(name.clone()),
                    expect: expect.clone(),
                },
                other => panic!("unknown corpus folder {other:?} ({rel})"),
            };
            cases.push(case);
        }
    }
    (cases, files)
}

/// Inputs too big to commit: sparse files past the 256 MiB input limit, a 20 MB board, and
/// nesting far deeper than the committed files.
fn generated_cases(bases: &Bases) -> Vec<Case> {
    let huge = 300 * 1024 * 1024;
    let expect = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut big_board = bases.merge.replacen(
        "\"topic\":\"",
        &format!("\"topic\":\"{}", "x".repeat(20 << 20)),
        1,
    );
    big_board.truncate(big_board.len() - 10);
    let demo_cassette = root()
        .join("meetings/demo.cassette.jsonl")
        .display()
        .to_string();
    vec![
        Case {
            id: "gen: 300 MiB meeting file → collect-context".into(),
            program: "collect-context",
            setup: Setup::File("huge.yaml".into(), Contents::Sparse(huge)),
            args: vec!["--meeting-file".into(), "{dir}/huge.yaml".into()],
            stdin: Vec::new(),
            label: Some("huge.yaml".into()),
            expect: expect(&["larger than 256 MiB"]),
        },
        Case {
            id: "gen: 300 MiB agent file → init-board".into(),
            program: "init-board",
            setup: Setup::Agent("arch.yaml".into(), Contents::Sparse(huge)),
            args: expect(&["--agents", "arch,biz", "--agents-dir", "{dir}/agents"]),
            stdin: bases.packet.clone().into_bytes(),
            label: Some("arch.yaml".into()),
            expect: expect(&["larger than 256 MiB"]),
        },
        Case {
            id: "gen: 300 MiB cassette → pm-step".into(),
            program: "pm-step",
            setup: Setup::File("huge.jsonl".into(), Contents::Sparse(huge)),
            args: replay_args("{dir}/huge.jsonl"),
            stdin: bases.pm.clone().into_bytes(),
            label: Some("huge.jsonl".into()),
            expect: expect(&["larger than 256 MiB"]),
        },
        Case {
            id: "gen: 20 MB truncated board → merge-board".into(),
            program: "merge-board",
            setup: Setup::None,
            args: Vec::new(),
            stdin: big_board.into_bytes(),
            label: Some("<stdin>".into()),
            expect: expect(&["EOF while parsing"]),
        },
        Case {
            id: "gen: 1,000,000 nested arrays → agent-turn".into(),
            program: "agent-turn",
            setup: Setup::None,
            args: replay_args(&demo_cassette),
            stdin: format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000)).into_bytes(),
            label: Some("<stdin>".into()),
            expect: expect(&["recursion limit"]),
        },
        Case {
            id: "gen: 100,000 nested YAML maps → collect-context".into(),
            program: "collect-context",
            setup: Setup::File(
                "deep.yaml".into(),
                Contents::Bytes(
                    format!(
                        "topic: t\ndecision_packet: {{decision_to_make: d}}\nbrief: {}1{}\n",
                        "{a: ".repeat(100_000),
                        "}".repeat(100_000)
                    )
                    .into_bytes(),
                ),
            ),
            args: vec!["--meeting-file".into(), "{dir}/deep.yaml".into()],
            stdin: Vec::new(),
            label: Some("deep.yaml".into()),
            expect: expect(&["nested deeper than 1000 levels"]),
        },
    ]
}

fn put(path: &Path, contents: &Contents) {
    match contents {
        Contents::Bytes(b) => std::fs::write(path, b).unwrap(),
        Contents::Sparse(len) => std::fs::File::create(path).unwrap().set_len(*len).unwrap(),
    }
}

fn run_case(case: &Case) -> Outcome {
    let work = Workdir::new();
    let dir = work.path();
    match &case.setup {
        Setup::None => {}
        Setup::File(name, c) => put(&dir.join(name), c),
        Setup::Agent(name, c) => {
            let agents = work.copy_agents("agents");
            let stem = name.split('.').next().unwrap();
            std::fs::remove_file(agents.join(format!("{stem}.yaml"))).unwrap();
            put(&agents.join(name), c);
        }
        Setup::Agents(files) => write_agents(&dir.join("agents"), files),
    }
    let dir_s = dir.display().to_string();
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| a.replace("{dir}", &dir_s))
        .collect();
    // The program may stop reading early; the harness ignores the broken pipe.
    let run = work
        .cli(case.program)
        .env("AGENT_MEETING_NOW", NOW)
        .args(&args)
        .stdin(case.stdin.clone())
        .run();
    let (out, hung) = (run.output, run.hung);

    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let line = stderr.trim_end().to_string();
    let mut problems = Vec::new();
    match out.status.code() {
        Some(2) => {}
        Some(c) => problems.push(format!("exit {c}")),
        None if hung => problems.push("hung (killed by the harness's hang guard)".into()),
        None => problems.push("killed by a signal".into()),
    }
    if !out.stdout.is_empty() {
        problems.push(format!("{} bytes on stdout", out.stdout.len()));
    }
    if line.lines().count() != 1 {
        problems.push(format!("{} stderr lines", line.lines().count()));
    }
    if !line.starts_with(&format!("{}: ", case.program)) {
        problems.push("no program prefix".into());
    }
    if line.contains("panicked") {
        problems.push("panicked".into());
    }
    if let Some(label) = case.label.as_ref().filter(|l| !line.contains(l.as_str())) {
        problems.push(format!("does not name {label}"));
    }
    for f in &case.expect {
        if !line.contains(f.as_str()) {
            problems.push(format!("lacks {f:?}"));
        }
    }
    let out_dir = dir.join("out");
    if out_dir.exists() && std::fs::read_dir(&out_dir).unwrap().next().is_some() {
        problems.push("wrote a file".into());
    }
    let mut line = line;
    if line.len() > 300 {
        let mut cut = 300;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    Outcome {
        id: case.id.clone(),
        problems,
        line,
    }
}

#[test]
fn every_bad_input_exits_2_with_one_clear_line() {
    let work = tempfile::tempdir().unwrap();
    let bases = Bases::make(work.path());
    let (mut cases, files) = manifest_cases(&bases);
    assert!(
        files >= 100,
        "the corpus must keep at least 100 files, has {files}"
    );
    cases.extend(generated_cases(&bases));
    let init_board = init_board_cases();
    assert!(
        init_board.len() >= 30,
        "init-board's table must keep at least 30 cases, has {}",
        init_board.len()
    );
    cases.extend(init_board);
    let listed: std::collections::BTreeSet<String> =
        std::fs::read_to_string(corpus().join("MANIFEST.tsv"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect();
    let on_disk: Vec<String> = walkdir::WalkDir::new(corpus())
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file() && e.file_name() != "MANIFEST.tsv")
        .map(|e| {
            e.path()
                .strip_prefix(corpus())
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|p| !listed.contains(p))
        .collect();
    assert!(
        on_disk.is_empty(),
        "files missing from MANIFEST.tsv: {on_disk:?}"
    );

    let cases = select(cases, |c| c.id.clone());
    // Each case mostly waits on its program: more threads than cores keep the cores busy.
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .clamp(4, 8);
    let outcomes = par_map(&cases, threads, run_case);
    eprintln!("bad inputs: {files} corpus files, {} cases", outcomes.len());
    let mut failures: Vec<&Outcome> = outcomes.iter().filter(|o| !o.problems.is_empty()).collect();
    failures.sort_by(|a, b| a.id.cmp(&b.id));
    let table: Vec<String> = failures
        .iter()
        .map(|o| format!("{:<60} | {:<40} | {}", o.id, o.problems.join("; "), o.line))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{:<60} | {:<40} | stderr\n{}",
        failures.len(),
        outcomes.len(),
        "case",
        "problem",
        table.join("\n")
    );
}

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

/// A good packet for init-board.
const PACKET: &str = r#"{"packet_version":1,"meeting_input":{"topic":"t","decision_packet":{"decision_to_make":"d"}},"context_bundle":{"summary":""}}"#;

fn agent_with(replace: &str, with: &str) -> String {
    assert!(GOOD_AGENT.contains(replace), "{replace}");
    GOOD_AGENT.replacen(replace, with, 1)
}

/// `init-board`'s table: (name, the agents folder, arguments, stdin, fragments). The line
/// names the program, the file and the field.
fn init_board_cases() -> Vec<Case> {
    let c = |name: &str,
             files: Vec<(&'static str, String)>,
             args: Vec<&'static str>,
             stdin: &str,
             expect: Vec<&'static str>| Case {
        id: format!("init-board: {name}"),
        program: "init-board",
        setup: Setup::Agents(files),
        args: args.into_iter().map(String::from).collect(),
        stdin: stdin.as_bytes().to_vec(),
        label: None,
        expect: expect.into_iter().map(String::from).collect(),
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
            vec!["a.yaml: name: does not match the file name \"a\""],
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
            vec!["a.yaml: output_schema.type: does not compile"],
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

/// Write an agents folder: an empty content is [`GOOD_AGENT`]; `NAME` becomes the file stem.
fn write_agents(agents: &Path, files: &[(&'static str, String)]) {
    std::fs::create_dir_all(agents).unwrap();
    for (file, body) in files {
        let stem = Path::new(file).file_stem().unwrap().to_str().unwrap();
        let body = match body.is_empty() {
            true => GOOD_AGENT,
            false => body,
        };
        std::fs::write(agents.join(file), body.replace("NAME", stem)).unwrap();
    }
}

/// `init-board` run in `dir` on [`PACKET`] with one good agent `a` and `args`: its board.
fn good_board(dir: &Path, args: &[&str]) -> String {
    write_agents(&dir.join("agents"), &[("a.yaml", String::new())]);
    cli("init-board")
        .current_dir(dir)
        .args(args)
        .stdin(PACKET)
        .run()
        .success()
        .stdout()
}

#[test]
fn good_input_makes_a_board() {
    let dir = tempfile::tempdir().unwrap();
    let board = good_board(dir.path(), &["--agents", "a", "--trace-id", "t-1"]);
    let board: serde_json::Value = serde_json::from_str(&board).unwrap();
    assert_eq!(board["trace_id"], "t-1");
    assert_eq!(board["status"], "running");
    assert!(board["pm"].is_null(), "no pm config: built-in PM");
}

#[test]
fn merge_board_refuses_wrong_stage_and_bad_versions() {
    let dir = tempfile::tempdir().unwrap();
    let board = good_board(dir.path(), &["--agents", "a"]);
    cli("merge-board")
        .stdin(board.clone())
        .run()
        .exit(2)
        .stdout_is("")
        .stderr_is("merge-board: pm-step should run next, not merge-board\n");
    let now = format!("\"board_version\":{BOARD_VERSION}");
    let bumped = board.replacen(&now, "\"board_version\":9", 1);
    cli("merge-board").stdin(bumped).run().exit(2).stderr_is(&format!(
        "merge-board: <stdin>: board_version: version 9 is not supported (expected {BOARD_VERSION})\n",
    ));
    cli("merge-board")
        .stdin(vec![0xffu8, 0xfe, 0x00])
        .run()
        .exit(2)
        .stderr_has("not valid UTF-8");
}
