//! `meeting --show-config` and `meeting --dry-run` name the provider and model each caller
//! would use from one resolver: over a table of environments, config files, flags and agent
//! metadata, the two must agree for every caller.

use std::collections::BTreeMap;

use crate::harness::Workdir;

/// One row of the table: the environment, the config file (if any), extra flags.
struct Case {
    name: &'static str,
    env: &'static [(&'static str, &'static str)],
    config: Option<&'static str>,
    flags: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "nothing configured",
        env: &[],
        config: None,
        flags: &[],
    },
    Case {
        name: "a base URL alone chooses openai",
        env: &[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")],
        config: None,
        flags: &[],
    },
    Case {
        name: "OPENAI_MODEL over the config file's models",
        env: &[("OPENAI_API_KEY", "test-key"), ("OPENAI_MODEL", "bar")],
        config: Some("model: cfg-model\nmodels: {pm: cfg-pm}\n"),
        flags: &[],
    },
    Case {
        name: "AGENT_MEETING_MODEL over the config file",
        env: &[
            ("AGENT_MEETING_MODEL", "envm"),
            ("AGENT_MEETING_PROVIDER", "anthropic"),
        ],
        config: Some("models: {pm: cfg-pm, arch: cfg-arch}\n"),
        flags: &[],
    },
    Case {
        name: "the config file's per-caller models",
        env: &[],
        config: Some("provider: anthropic\nmodel: cfg-model\nmodels: {arch: arch-model}\n"),
        flags: &[],
    },
    Case {
        name: "flags over the environment",
        env: &[
            ("AGENT_MEETING_PROVIDER", "anthropic"),
            ("OPENAI_MODEL", "bar"),
        ],
        config: None,
        flags: &["--provider", "openai", "--model", "flag-model"],
    },
    Case {
        name: "an anthropic key alone",
        env: &[
            ("ANTHROPIC_API_KEY", "test-key"),
            ("ANTHROPIC_MODEL", "claude-x"),
        ],
        config: None,
        flags: &[],
    },
    Case {
        name: "replay wins over everything",
        env: &[("OPENAI_API_KEY", "test-key")],
        config: Some("provider: anthropic\n"),
        flags: &["--provider", "replay", "--cassette", "c.jsonl"],
    },
    Case {
        name: "agent metadata wins over the flags",
        env: &[],
        config: None,
        flags: &[
            "--provider",
            "openai",
            "--agents-dir",
            "agents",
            "--agents",
            "arch,meta",
        ],
    },
];

/// What `--dry-run`'s `models:` line says per caller: `provider model`, `replay` or `none`.
fn dry_run_models(stderr: &str) -> BTreeMap<String, String> {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("models: "))
        .unwrap_or_else(|| panic!("no models line in {stderr}"));
    if line.starts_with("none") {
        return [("pm".to_string(), "none".to_string())].into();
    }
    let mut out = BTreeMap::new();
    for group in line.split("; ") {
        let (what, names) = group.rsplit_once(" (").unwrap();
        let what = if what.starts_with("replay of ") {
            "replay"
        } else {
            what
        };
        for name in names.trim_end_matches(')').split(", ") {
            out.insert(name.to_string(), what.to_string());
        }
    }
    out
}

/// What `--show-config` says per caller (`<caller>.provider`, `<caller>.model` rows).
fn show_config_models(stdout: &str) -> BTreeMap<String, String> {
    let rows: BTreeMap<String, String> = stdout
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut parts = l.split("  ").map(str::trim).filter(|p| !p.is_empty());
            Some((parts.next()?.to_string(), parts.next()?.to_string()))
        })
        .collect();
    let mut out = BTreeMap::new();
    for (name, provider) in &rows {
        let Some(caller) = name.strip_suffix(".provider") else {
            continue;
        };
        let what = match provider.as_str() {
            "none" | "replay" => provider.clone(),
            p => format!("{p} {}", rows[&format!("{caller}.model")]),
        };
        out.insert(caller.to_string(), what);
    }
    out
}

#[test]
fn show_config_and_dry_run_agree_for_every_caller() {
    let mut failures = Vec::new();
    for case in CASES {
        let work = Workdir::new();
        work.copy_agents("agents");
        work.write(
            "agents/meta.yaml",
            crate::harness::root()
                .join("agents/biz.yaml")
                .to_str()
                .map(|p| std::fs::read_to_string(p).unwrap())
                .unwrap()
                .replace("name: biz", "name: meta")
                .replace(
                    "metadata:\n",
                    "metadata:\n  provider: anthropic\n  model: meta-model\n",
                ),
        );
        work.write("c.jsonl", "");
        if let Some(config) = case.config {
            work.write("cfg/agent-meeting/config.yaml", config);
        }
        let run = |mode: &str| {
            let mut cmd = work.cli("meeting");
            cmd.env("XDG_CONFIG_HOME", work.join("cfg"));
            for (k, v) in case.env {
                cmd.env(k, v);
            }
            cmd.args(["--topic", "Adopt Rust?"]);
            if !case.flags.contains(&"--agents") {
                cmd.args(["--agents", "arch,biz"]);
            }
            cmd.args(case.flags).arg(mode).run()
        };
        let show = run("--show-config");
        let dry = run("--dry-run");
        if show.code() != Some(0) || dry.code() != Some(0) {
            failures.push(format!(
                "{}: exit {:?} / {:?}: {}{}",
                case.name,
                show.code(),
                dry.code(),
                show.stderr(),
                dry.stderr()
            ));
            continue;
        }
        let (shown, dried) = (
            show_config_models(&show.stdout()),
            dry_run_models(&dry.stderr()),
        );
        // Without a provider, the dry run names none and show-config says so per caller.
        let agree = if dried.get("pm").map(String::as_str) == Some("none") {
            !shown.is_empty() && shown.values().all(|v| v == "none")
        } else {
            shown.iter().filter(|(c, _)| !c.is_empty()).count() == dried.len()
                && dried.iter().all(|(c, v)| shown.get(c) == Some(v))
        };
        if !agree {
            failures.push(format!(
                "{}: --show-config says {shown:?}, --dry-run says {dried:?}",
                case.name
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A run keeps every setting as it resolved it, with its source, in its meeting.json:
/// `meeting show-config --run-folder DIR` prints what `show-config` printed for the same
/// flags, the meeting file's budget resolved too (`meeting file`); a config file edited
/// afterwards does not change it.
#[test]
fn a_run_folder_keeps_the_settings_it_resolved() {
    let work = Workdir::new();
    work.write(
        "cfg/agent-meeting/config.yaml",
        "max_loops: 3\nmodels: {pm: cfg-pm}\n",
    );
    work.write(
        "m.yaml",
        "topic: Adopt Rust for ingest?\nbudget:\n  max_total_tokens: 90000\n",
    );
    let flags = [
        "--agents",
        "arch,biz",
        "--provider",
        "sample",
        "--trace-id",
        "kept",
    ];
    let cmd = |args: &[&str]| {
        let mut c = work.cli("meeting");
        c.env("XDG_CONFIG_HOME", work.join("cfg"))
            .env("AGENT_MEETING_NOW", crate::fixtures::NOW)
            .args(args);
        c.run()
    };
    let now = cmd(&[&["show-config"][..], &flags].concat());
    now.success();
    cmd(&[&flags[..], &["--meeting-file", "m.yaml", "--quiet"]].concat()).success();
    work.write("cfg/agent-meeting/config.yaml", "max_loops: 9\n");
    let kept = cmd(&["show-config", "--run-folder", "runs/kept"]);
    kept.success();
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("budget."))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    assert_eq!(rows(&kept.stdout()), rows(&now.stdout()));
    let text = kept.stdout();
    assert!(text.starts_with("# run folder: runs/kept"), "{text}");
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    assert_eq!(line("max_loops"), "max_loops 3 config file");
    assert_eq!(line("pm.model"), "pm.model cfg-pm config file (models.pm)");
    assert_eq!(
        line("budget.max_total_tokens"),
        "budget.max_total_tokens 90000 meeting file"
    );
    // A folder of an earlier build (or a fork) keeps none: said, exit 2.
    let file = work.join("runs/kept/meeting.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("resolved");
    std::fs::write(&file, v.to_string()).unwrap();
    cmd(&["show-config", "--run-folder", "runs/kept"])
        .exit(2)
        .one_stderr_line()
        .stderr_has("keeps no resolved settings");
}
