//! Habits users bring from simonw/llm and aichat (docs/habits.md): "did you mean" for a
//! misspelled flag, provider or agent; the `-m`, `-a`, `-f` short flags; the topic as an
//! argument or on stdin; the environment table of the README.

use crate::harness::{root, Workdir};

/// `meeting --dry-run` in an empty folder (no config file, no agents folder).
fn dry(work: &Workdir, args: &[&str], stdin: Option<&str>) -> crate::harness::Run {
    let mut cli = work.cli("meeting");
    cli.env("XDG_CONFIG_HOME", work.join("cfg"))
        .env("AGENT_MEETING_PROVIDER", "openai")
        .arg("--dry-run")
        .args(args);
    if let Some(text) = stdin {
        cli.stdin(text);
    }
    cli.run()
}

#[test]
fn a_misspelled_flag_gets_clap_s_suggestion_on_the_one_line() {
    let work = Workdir::new();
    let out = dry(&work, &["--agents", "arch", "--modle", "x", "T"], None);
    out.exit(2).one_stderr_line();
    let err = out.stderr();
    assert!(
        err.starts_with("meeting: unexpected argument '--modle' found"),
        "{err}"
    );
    assert!(
        err.contains("tip: a similar argument exists: '--model'"),
        "{err}"
    );
}

#[test]
fn a_misspelled_provider_gets_the_closest_one() {
    let work = Workdir::new();
    let out = dry(
        &work,
        &["--agents", "arch", "--provider", "antropic", "T"],
        None,
    );
    out.exit(2).one_stderr_line();
    assert!(
        out.stderr().contains("unknown provider \"antropic\""),
        "{}",
        out.stderr()
    );
    assert!(
        out.stderr().contains("did you mean anthropic?"),
        "{}",
        out.stderr()
    );
}

#[test]
fn short_flags_for_model_agents_and_meeting_file() {
    let work = Workdir::new();
    let out = dry(&work, &["-a", "arch,biz", "-m", "gpt-4.1-mini", "-f"], None);
    // -f takes the meeting file.
    out.exit(2);
    let demo = root().join("meetings/demo.yaml");
    let out = dry(
        &work,
        &[
            "-a",
            "arch,biz",
            "-m",
            "gpt-4.1-mini",
            "-f",
            demo.to_str().unwrap(),
        ],
        None,
    );
    out.success()
        .stderr_has("models: openai gpt-4.1-mini (pm, arch, biz)\n");
    assert!(out.stdout().contains("# Meeting: "), "{}", out.stdout());
}

#[test]
fn the_topic_as_an_argument_or_on_stdin() {
    let work = Workdir::new();
    let prompt = |out: &crate::harness::Run| {
        out.success();
        out.stdout()
    };
    let by_flag = prompt(&dry(
        &work,
        &["-a", "arch,biz", "--topic", "Adopt Rust?"],
        None,
    ));
    assert!(by_flag.contains("# Meeting: Adopt Rust?\n"), "{by_flag}");
    let by_arg = prompt(&dry(&work, &["-a", "arch,biz", "Adopt Rust?"], None));
    assert_eq!(by_arg, by_flag);
    let by_stdin = prompt(&dry(&work, &["-a", "arch,biz"], Some("  Adopt Rust?\n")));
    assert_eq!(by_stdin, by_flag);
    // Given on the command line, stdin is not read for it.
    let both = prompt(&dry(
        &work,
        &["-a", "arch,biz", "Adopt Rust?"],
        Some("Other\n"),
    ));
    assert_eq!(both, by_flag);
    // An empty stdin is no topic.
    dry(&work, &["-a", "arch,biz"], Some(" \n"))
        .exit(2)
        .stderr_has(
            "one of --meeting-file F or a topic (TOPIC, --topic T or on stdin) is required",
        );
}

#[test]
fn two_topics_or_a_topic_and_a_meeting_file_are_refused() {
    let work = Workdir::new();
    let demo = root().join("meetings/demo.yaml");
    for args in [
        vec!["-a", "arch", "--topic", "A", "B"],
        vec!["-a", "arch", "-f", demo.to_str().unwrap(), "B"],
    ] {
        dry(&work, &args, None).exit(2).one_stderr_line();
    }
}

#[test]
fn resume_refuses_a_topic_argument_by_its_name() {
    let work = Workdir::new();
    let out = work
        .cli("meeting")
        .args(["--resume", "runs/x", "Adopt?"])
        .run();
    out.exit(2).one_stderr_line();
    assert!(
        out.stderr()
            .contains("\"Adopt?\" cannot be used with meeting resume"),
        "{}",
        out.stderr()
    );
}

/// Every variable `--help` lists is in the guide's environment table.
#[test]
fn the_readme_names_every_variable_help_lists() {
    let help = crate::harness::cli("meeting").arg("--help").run().stdout();
    let env = help.split("Environment:\n").nth(1).unwrap();
    let env = env.split("\n\n").next().unwrap();
    let readme = std::fs::read_to_string(root().join("docs/GUIDE.md")).unwrap();
    let table: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `")).collect();
    let vars = regex::Regex::new(r"\b[A-Z][A-Z_]{3,}\b").unwrap();
    for line in env.lines() {
        let names = line
            .split_whitespace()
            .take_while(|w| vars.is_match(w.trim_end_matches(',')));
        for name in names {
            let name = name.trim_end_matches(',');
            assert!(
                table.iter().any(|row| row.contains(&format!("`{name}`"))),
                "docs/GUIDE.md's environment table lacks {name}"
            );
        }
    }
}

/// The README's trace ids look like the ones `meeting` makes (`init-board`'s `new_trace_id`).
#[test]
fn the_readme_s_trace_ids_have_the_real_format() {
    let real = agent_meeting::stage::init_board::new_trace_id("2026-11-30T10:15:00Z");
    let shape = regex::Regex::new(r"^\d{14}-[0-9a-f]{8}$").unwrap();
    assert!(shape.is_match(&real), "{real}");
    let readme: String = crate::fixtures::user_docs()
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let candidates = regex::Regex::new(r"\b\d{8}T?\d{6}Z?-[0-9a-f]{8}\b").unwrap();
    let found: Vec<&str> = candidates.find_iter(&readme).map(|m| m.as_str()).collect();
    assert!(!found.is_empty());
    for id in found {
        assert!(
            shape.is_match(id),
            "README trace id {id} is not like {real}"
        );
    }
}
