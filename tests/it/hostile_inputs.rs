//! Inputs made to hurt (docs/design/flow.md#yaml-budget, docs/design/flow.md#board-invariants,
//! docs/design/agents-and-config.md#agent-lookup): a YAML alias bomb in a meeting file, an agent
//! config or the config file is refused before it expands; a hand-edited board that breaks an
//! invariant is refused by every stage that reads it, naming the field; an agent config that
//! links out of its folder to another file is refused without a word of what it links to.

use serde_json::{json, Value};

use crate::fixtures;
use crate::harness::{every_case, Workdir};

/// A YAML alias bomb of about `bytes` bytes: ten levels, each a list of aliases of the level
/// before, so it expands to far more nodes than memory holds. Its anchors sit under keys no
/// document has, so without the budget a parse would stop at the first unknown key.
fn alias_bomb(bytes: usize) -> String {
    let per_level = bytes / (9 * 5) + 2;
    let mut t = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let items = vec![format!("*a{}", i - 1); per_level].join(", ");
        t.push_str(&format!("a{i}: &a{i} [{items}]\n"));
    }
    t
}

/// The one line a refused bomb gives: the program, the file, the budget.
fn refused_bomb(out: &crate::harness::Run, program: &str, file: &str) {
    out.exit(2).one_stderr_line();
    let err = out.stderr();
    assert!(err.starts_with(&format!("{program}: ")), "{err}");
    assert!(err.contains(file), "names the file: {err}");
    assert!(
        err.contains("more than 100000 YAML nodes or 8 MiB of text once its aliases are expanded"),
        "{err}"
    );
}

#[test]
fn a_yaml_alias_bomb_is_refused_in_a_meeting_file_an_agent_config_and_the_config_file() {
    let work = Workdir::new();
    let bomb = alias_bomb(1 << 20);
    assert!(bomb.len() >= 1_000_000, "a 1 MB file");
    work.write("bomb.yaml", &bomb);
    let out = work
        .cli("collect-context")
        .args(["--meeting-file", "bomb.yaml"])
        .run();
    refused_bomb(&out, "collect-context", "bomb.yaml");

    // An agent config: the loader reads it with the same budget.
    let small = alias_bomb(10_000);
    work.write("agents/boom.yaml", &small);
    let packet = work
        .cli("collect-context")
        .args(["--topic", "Adopt a warehouse?"])
        .run();
    packet.success();
    let out = work
        .cli("init-board")
        .args(["--agents", "boom"])
        .stdin(packet.stdout())
        .run();
    refused_bomb(&out, "init-board", "agents/boom.yaml");

    // The user's config file.
    work.write("cfg/agent-meeting/config.yaml", &small);
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .arg("--show-config")
        .run();
    refused_bomb(&out, "meeting", "config.yaml");

    // A file whose aliases stay within the budget is read as before (and refused for what it
    // says, not for its size).
    work.write("plain.yaml", "topic: t\na0: &a0 [x]\na1: [*a0, *a0]\n");
    let out = work
        .cli("collect-context")
        .args(["--meeting-file", "plain.yaml"])
        .run();
    out.exit(2).stderr_has("unknown field `a0`");
}

/// A board waiting for `stage`, made from the common fixture board.
fn board_for(stage: &str) -> Value {
    let mut b = fixtures::board();
    match stage {
        "pm-step" => {}
        "agent-turn" => b = fixtures::board_with_call("arch"),
        "merge-board" => {
            b.last_turns.push(agent_meeting::model::LastTurn {
                agent_name: "arch".into(),
                status: agent_meeting::model::TurnStatus::Error,
                prompt: "What does it cost?".into(),
                result: None,
                error: Some("timeout".into()),
                review: None,
                council: None,
            });
        }
        "render-report" => b.status = agent_meeting::model::Status::ForcedStop,
        other => panic!("{other}"),
    }
    serde_json::to_value(b).unwrap()
}

const STAGES: [&str; 4] = ["pm-step", "agent-turn", "merge-board", "render-report"];

type Edit = fn(&mut Value);

/// Every invariant a hand-edited board can break, through every stage program that reads it:
/// exit 2, one line naming `<stdin>` and the field path.
#[test]
fn a_board_that_breaks_an_invariant_is_refused_by_every_stage_naming_the_field() {
    let cases: Vec<(&str, &[&str], Edit, &str)> = vec![
        (
            "no participants",
            &STAGES,
            |b| b["participants"] = json!([]),
            "participants: empty (expected at least one participant)",
        ),
        (
            "a participant without a config",
            &STAGES,
            |b| b["participants"] = json!(["arch", "biz", "ghost"]),
            "participants[2]: \"ghost\" has no config in agents",
        ),
        (
            "a participant named twice",
            &STAGES,
            |b| b["participants"] = json!(["arch", "biz", "arch"]),
            "participants[2]: \"arch\" is named twice",
        ),
        (
            "a config filed under another name",
            &STAGES,
            |b| b["agents"]["biz"]["name"] = json!("arch"),
            "agents.biz.name: \"arch\" is not the key it is filed under (\"biz\")",
        ),
        (
            "a list kept beside the record (the shape of board version 4)",
            &STAGES,
            |b| b["open_questions"] = json!(["Who pays?"]),
            "open_questions: unknown field `open_questions`, expected one of `board_version`, `trace_id`, `topic`, `participants`, `agents`, `pm`, `llm`, `loop_count`, `max_loops`, `max_parallel`, `max_total_tokens`, `max_cost`, `status`, `summary`, `latest_agent_outputs`, `evidence`, `pending_calls`, `last_turns`, `last_error`, `recent_errors`, `final_report`, `process_note`, `review_round`, `objections`, `council`, `record`, `new_events`, `event_count`, `flow`, `usage`, `meeting_input`, `context_bundle`",
        ),
        (
            "max_parallel 0",
            &STAGES,
            |b| b["max_parallel"] = json!(0),
            "max_parallel: 0 (expected 1 to 8)",
        ),
        (
            "max_parallel 100",
            &STAGES,
            |b| b["max_parallel"] = json!(100),
            "max_parallel: 100 (expected 1 to 8)",
        ),
        (
            "max_loops 0",
            &STAGES,
            |b| b["max_loops"] = json!(0),
            "max_loops: 0 (expected at least 1)",
        ),
        (
            "an empty question",
            &["agent-turn"],
            |b| b["pending_calls"][0]["prompt"] = json!("  \n"),
            "pending_calls[0].prompt: empty (expected the question for the agent)",
        ),
        (
            "a question to someone not in the meeting",
            &["agent-turn"],
            |b| b["pending_calls"][0]["target_agent"] = json!("ghost"),
            "pending_calls[0].target_agent: \"ghost\" is not a participant (arch, biz)",
        ),
        (
            "a fan-out asking one agent twice",
            &["agent-turn"],
            |b| {
                let call = b["pending_calls"][0].take();
                b["max_parallel"] = json!(2);
                b["pending_calls"] = json!([call.clone(), call]);
            },
            "pending_calls[1].target_agent: \"arch\" is asked twice in one fan-out",
        ),
        (
            "a turn from an agent not in the meeting",
            &["merge-board"],
            |b| b["last_turns"][0]["agent_name"] = json!("ghost"),
            "last_turns[0].agent_name: \"ghost\" is not a participant (arch, biz)",
        ),
        (
            "a fan-out answered twice by one agent",
            &["merge-board"],
            |b| {
                let turn = b["last_turns"][0].take();
                b["last_turns"] = json!([turn.clone(), turn]);
            },
            "last_turns[1].agent_name: \"arch\" answers twice in one fan-out",
        ),
    ];
    let runs: Vec<(&str, &str, Edit, &str)> = cases
        .iter()
        .flat_map(|(name, stages, edit, want)| {
            stages.iter().map(move |s| (*name, *s, *edit, *want))
        })
        .collect();
    every_case(
        runs,
        |(name, stage, _, _)| format!("{stage}: {name}"),
        |(_, stage, edit, want)| {
            let mut board = board_for(stage);
            edit(&mut board);
            let out = crate::harness::cli(stage)
                .env("AGENT_MEETING_PROVIDER", "replay")
                .env("MEETING_CASSETTE", crate::fixtures::demo_cassette())
                .stdin(board.to_string())
                .run();
            out.exit(2)
                .one_stderr_line()
                .stderr_is(&format!("{stage}: <stdin>: {want}\n"));
        },
    );
}

/// An agent config that is a symbolic link out of its folder to a file of another name is
/// refused (exit 2, naming the file) before it is read: the token it points to appears
/// nowhere. A link inside the folder, or to a config of its own name, is read like that file.
#[test]
fn an_agent_config_linking_out_of_its_folder_is_refused_without_echoing_it() {
    let work = Workdir::new();
    let secret = "sk-proj-LINKEDTOKEN0123456789abcdefABCDEF";
    work.write("token.txt", format!("{secret}\n"));
    work.copy_agents("agents");
    std::fs::create_dir_all(work.join("agents")).unwrap();
    std::os::unix::fs::symlink("../token.txt", work.join("agents/x.yaml")).unwrap();
    let packet = work
        .cli("collect-context")
        .args(["--topic", "Adopt a warehouse?"])
        .run();
    packet.success();
    let out = work
        .cli("init-board")
        .args(["--agents", "arch,x"])
        .stdin(packet.stdout())
        .run();
    out.exit(2).one_stderr_line().stderr_lacks(secret);
    let err = out.stderr();
    assert!(err.contains("agents/x.yaml"), "names the file: {err}");
    assert!(
        err.contains("a symbolic link to a file of another name outside"),
        "{err}"
    );
    // --list-agents shows the refusal, not the token.
    let out = work.cli("meeting").arg("--list-agents").run();
    assert!(!out.stdout().contains(secret) && !out.stderr().contains(secret));
    // Without the link, a token file where a config belongs is named by its type only.
    std::fs::remove_file(work.join("agents/x.yaml")).unwrap();
    std::fs::copy(work.join("token.txt"), work.join("agents/x.yaml")).unwrap();
    let out = work
        .cli("init-board")
        .args(["--agents", "arch,x"])
        .stdin(packet.stdout())
        .run();
    out.exit(2).one_stderr_line().stderr_lacks(secret);
    // A link to another file of the folder is that file.
    std::fs::remove_file(work.join("agents/x.yaml")).unwrap();
    let arch = std::fs::read_to_string(work.join("agents/arch.yaml")).unwrap();
    work.write("agents/real/y.yaml", arch.replace("name: arch", "name: y"));
    std::os::unix::fs::symlink("real/y.yaml", work.join("agents/y.yaml")).unwrap();
    work.cli("init-board")
        .args(["--agents", "arch,y"])
        .stdin(packet.stdout())
        .run()
        .success();
    // So is a link to a config of its own name elsewhere (the repository's agents/ does this).
    std::fs::remove_file(work.join("agents/y.yaml")).unwrap();
    work.write("shared/y.yaml", arch.replace("name: arch", "name: y"));
    std::os::unix::fs::symlink("../shared/y.yaml", work.join("agents/y.yaml")).unwrap();
    work.cli("init-board")
        .args(["--agents", "arch,y"])
        .stdin(packet.stdout())
        .run()
        .success();
}

// ---------------------------------------------------------------------------------------------
// A run folder is input (docs/design/run-folder.md#a-run-folder-is-input)

/// A meeting stopped before its first agent turn, run folder in `work`.
fn stopped_run(work: &Workdir) -> std::path::PathBuf {
    crate::fixtures::stopped_run(work.path())
}

fn edit_settings(run: &std::path::Path, edit: impl FnOnce(&mut Value)) {
    let file = run.join("meeting.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&file, v.to_string()).unwrap();
}

/// `--resume` runs no command the run folder names unless it is given again or the folder is
/// trusted: a saved `--stage` (the user's own, or one edited into meeting.json) is refused,
/// naming it; given again (here: restored to the built-in), or with --trust-run-dir (said on
/// stderr), the meeting goes on.
#[test]
fn a_resume_runs_no_command_it_was_not_given() {
    let work = Workdir::new();
    let run = stopped_run(&work);
    crate::fixtures::resume_cmd(work.path(), &run)
        .run()
        .exit(2)
        .one_stderr_line()
        .stderr_has("asks for what you did not give: --stage agent-turn=exit 1")
        .stderr_has("--trust-run-dir");
    // Edited in by whoever could write the folder: never run without --trust-run-dir.
    let pwned = work.join("PWNED");
    edit_settings(&run, |v| {
        v["stage_overrides"]["pm-step"] = format!("touch {}", pwned.display()).into();
    });
    crate::fixtures::resume_cmd(work.path(), &run)
        .args(["--stage", "agent-turn="])
        .run()
        .exit(2)
        .stderr_has("--stage pm-step=touch");
    assert!(!pwned.exists(), "a command from the run folder ran");
    // Given again (both restored to the built-in programs): the meeting finishes.
    crate::fixtures::resume_cmd(work.path(), &run)
        .args(["--stage", "agent-turn=", "--stage", "pm-step="])
        .run()
        .exit(0);
    assert!(!pwned.exists());
}

/// A run folder names no file to read: a saved report template (a secret file would be
/// rendered as the report) and a saved answers file (read as a person's answer) are refused,
/// named, unless given again in this invocation — then what was given now is used.
#[test]
fn a_resume_reads_no_file_the_folder_names() {
    let work = Workdir::new();
    let run = stopped_run(&work);
    let secret = work.write("credentials", "[default]\naws_secret_access_key = abc123\n");
    edit_settings(&run, |v| {
        v["stage_overrides"] = json!({});
        v["template"] = secret.display().to_string().into();
        v["human_answers"] = secret.display().to_string().into();
    });
    let out = crate::fixtures::resume_cmd(work.path(), &run).run();
    out.exit(2)
        .one_stderr_line()
        .stderr_has(&format!("--template {}", secret.display()))
        .stderr_has(&format!("--human-answers {}", secret.display()));
    assert!(!out.stderr().contains("abc123"));
    // The modes that only read a folder use none of its paths.
    let compared = crate::harness::cli("meeting")
        .arg("compare")
        .args([&run, &run])
        .run();
    compared.success();
    assert!(!compared.stdout().contains("abc123"));
    let next = crate::harness::cli("next-stage")
        .arg("--run-folder")
        .arg(&run)
        .run();
    next.success();
    assert!(!next.stdout().contains("abc123"));
    // Given now: the meeting goes on with what was given, and never reads the saved file.
    let template = work.write("t.md.j2", "# {{ topic }} (own template)\n");
    let answers = work.write("answers.jsonl", "");
    crate::fixtures::resume_cmd(work.path(), &run)
        .arg("--template")
        .arg(&template)
        .arg("--human-answers")
        .arg(&answers)
        .run()
        .exit(0);
    let report = std::fs::read_to_string(work.join("report.md")).unwrap();
    assert!(report.contains("(own template)"), "{report}");
    assert!(!report.contains("abc123"));
}

/// A path that is no run folder is said to be one, not a file that cannot be opened.
#[test]
fn a_resume_of_no_run_folder_says_so() {
    let work = Workdir::new();
    for (dir, says) in [
        (work.join("runs/missing"), "does not exist"),
        (
            work.path().to_path_buf(),
            "is not a run folder (it holds no meeting.json)",
        ),
    ] {
        crate::harness::cli("meeting")
            .arg("--resume")
            .arg(&dir)
            .run()
            .exit(2)
            .one_stderr_line()
            .stderr_has(says)
            .stderr_has("runs/<trace id>");
    }
}

/// Before its first call a resume says what it will write to and run: the report path and
/// the stage commands in effect.
#[test]
fn a_resume_says_what_it_will_use_before_its_first_call() {
    let work = Workdir::new();
    let run = stopped_run(&work);
    let out = crate::harness::cli("meeting")
        .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
        .arg("--resume")
        .arg(&run)
        .args(["--stage", "agent-turn=exit 1"])
        .run();
    out.exit(1).stderr_has(&format!(
        "resume uses: report {}, --stage agent-turn=exit 1",
        work.join("report.md").display()
    ));
    let said = out.stderr();
    let uses = said.find("resume uses:").unwrap();
    let failed = said.find("stage agent-turn failed").unwrap();
    assert!(uses < failed, "said before the stage ran: {said}");
}

/// With --trust-run-dir the folder's own settings are used, and stderr says which.
#[test]
fn trust_run_dir_uses_the_folders_settings_and_says_so() {
    let work = Workdir::new();
    let run = stopped_run(&work);
    // A copy of the exchanges written elsewhere (`--llm-log`; a replay has nothing to
    // `--record`, which it refuses).
    edit_settings(&run, |v| {
        v["stage_overrides"] = json!({});
        v["user_llm_log"] = work.join("copy.jsonl").display().to_string().into();
    });
    crate::fixtures::resume_cmd(work.path(), &run)
        .run()
        .exit(2)
        .stderr_has("--llm-log ");
    crate::fixtures::resume_cmd(work.path(), &run)
        .arg("--trust-run-dir")
        .run()
        .exit(0)
        .stderr_has("meeting: --trust-run-dir: using the run folder's --llm-log ");
    assert!(
        work.join("copy.jsonl").is_file(),
        "the folder's --llm-log was used"
    );
}

/// A base URL in the run folder's config copy that is not the resumer's own would send their
/// key and prompts elsewhere: refused, the URL named (its password masked).
#[test]
fn a_base_url_from_the_run_folders_config_copy_is_refused() {
    let work = Workdir::new();
    let run = stopped_run(&work);
    std::fs::write(
        run.join("config.yaml"),
        "base_urls: {openai: 'https://u:secret-pw@collector.example/v1', ollama: 'http://collector.example:11434'}\n",
    )
    .unwrap();
    edit_settings(&run, |v| {
        v["stage_overrides"] = json!({});
        v["config_file"] = run.join("config.yaml").display().to_string().into();
    });
    let out = crate::fixtures::resume_cmd(work.path(), &run).run();
    out.exit(2)
        .stderr_has(
            "base_urls.openai https://u:***@collector.example/v1 (the run folder's config.yaml)",
        )
        .stderr_has(
            "base_urls.ollama http://collector.example:11434 (the run folder's config.yaml)",
        );
    assert!(!out.stderr().contains("secret-pw"));
}

/// A run folder others may write, or another user owns, is refused with the reason; trusted,
/// it is resumed.
#[cfg(unix)]
#[test]
fn a_run_folder_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let work = Workdir::new();
    let run = stopped_run(&work);
    edit_settings(&run, |v| v["stage_overrides"] = json!({}));
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o777)).unwrap();
    crate::fixtures::resume_cmd(work.path(), &run)
        .run()
        .exit(2)
        .stderr_has("may be written by its group or anyone (mode 777)");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Another user's meeting.json (only root can hand a file to another user).
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(run.join("meeting.json"), Some(65534), None).unwrap();
        crate::fixtures::resume_cmd(work.path(), &run)
            .run()
            .exit(2)
            .stderr_has("is owned by another user (uid 65534)");
        crate::fixtures::resume_cmd(work.path(), &run)
            .arg("--trust-run-dir")
            .run()
            .exit(0);
    }
}
