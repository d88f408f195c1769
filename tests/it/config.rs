//! The user's config file (docs/design/agents-and-config.md#config): its place
//! (`$XDG_CONFIG_HOME/agent-meeting/config.yaml`, `AGENT_MEETING_CONFIG`), the precedence flag >
//! environment > config file > built-in default shown by `meeting --show-config`, unknown keys
//! refused, and a meeting's stages reading the copy kept in the run folder.

use serde_json::Value;

use crate::harness::Workdir;

const CONFIG: &str = "provider: anthropic\nmodel: cfg-model\nmodels: {pm: cfg-pm-model}\n\
base_urls: {openai: 'http://127.0.0.1:9/v1'}\nmax_loops: 3\nbudget: {max_total_tokens: 50000}\n";

/// A work folder whose config home (`cfg/`) holds `config` as the user's config file.
fn with_config(config: &str) -> Workdir {
    let work = Workdir::new();
    work.write("cfg/agent-meeting/config.yaml", config);
    work
}

fn show(work: &Workdir, env: &[(&str, &str)], flags: &[&str]) -> Vec<(String, String)> {
    let mut cmd = work.cli("meeting");
    cmd.env("XDG_CONFIG_HOME", work.join("cfg"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.arg("--show-config").args(flags).run();
    out.success();
    out.stdout()
        .lines()
        .skip(1)
        .map(|l| {
            let mut parts = l.split("  ").map(str::trim).filter(|p| !p.is_empty());
            let name = parts.next().unwrap().to_string();
            let value = parts.next().unwrap().to_string();
            let source = parts.next().unwrap_or_default().to_string();
            (name, format!("{value} <- {source}"))
        })
        .collect()
}

fn get(rows: &[(String, String)], name: &str) -> String {
    rows.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} in {rows:?}"))
        .1
        .clone()
}

#[test]
fn precedence_is_flag_then_environment_then_config_then_default() {
    // Built-in defaults: no config file, no variable, no flag.
    let bare = Workdir::new();
    let rows = show(&bare, &[], &[]);
    assert_eq!(get(&rows, "provider"), "none <- built-in default");
    assert_eq!(get(&rows, "max_loops"), "6 <- built-in default");
    assert_eq!(get(&rows, "run_dir"), "runs <- built-in default");
    assert_eq!(
        get(&rows, "base_urls.openai"),
        "https://api.openai.com/v1 <- built-in default"
    );
    // Every provider's key and endpoint, Gemini's too.
    assert_eq!(
        get(&rows, "GEMINI_API_KEY"),
        "not set <- environment (GEMINI_API_KEY)"
    );
    assert!(get(&rows, "gemini endpoint").starts_with("https://generativelanguage.googleapis.com/"));
    // The config file over the defaults.
    let work = with_config(CONFIG);
    let rows = show(&work, &[], &[]);
    assert_eq!(get(&rows, "provider"), "anthropic <- config file");
    assert_eq!(get(&rows, "model"), "cfg-model <- config file");
    assert_eq!(get(&rows, "models.pm"), "cfg-pm-model <- config file");
    assert_eq!(get(&rows, "max_loops"), "3 <- config file");
    assert_eq!(
        get(&rows, "budget.max_total_tokens"),
        "50000 <- config file"
    );
    assert_eq!(
        get(&rows, "base_urls.openai"),
        "http://127.0.0.1:9/v1 <- config file"
    );
    // The environment over the config file.
    let env = [
        ("AGENT_MEETING_PROVIDER", "openai"),
        ("AGENT_MEETING_MODEL", "env-model"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:8/v1"),
    ];
    let rows = show(&work, &env, &[]);
    assert_eq!(
        get(&rows, "provider"),
        "openai <- environment (AGENT_MEETING_PROVIDER)"
    );
    assert_eq!(
        get(&rows, "model"),
        "env-model <- environment (AGENT_MEETING_MODEL)"
    );
    assert_eq!(
        get(&rows, "base_urls.openai"),
        "http://127.0.0.1:8/v1 <- environment (OPENAI_BASE_URL)"
    );
    // Flags over everything.
    let flags = [
        "--provider",
        "replay",
        "--model",
        "flag-model",
        "--max-loops",
        "9",
    ];
    let rows = show(&work, &env, &flags);
    assert_eq!(get(&rows, "provider"), "replay <- flag");
    assert_eq!(get(&rows, "model"), "flag-model <- flag");
    assert_eq!(get(&rows, "max_loops"), "9 <- flag");
    let rows = show(&work, &[], &["--run-dir", "elsewhere"]);
    assert_eq!(get(&rows, "run_dir"), "elsewhere <- flag");
    // Every option a meeting resolves is shown as the meeting resolves it.
    let flags = [
        "--review-rounds",
        "2",
        "--council-adaptive",
        "--max-parallel",
        "2",
    ];
    let rows = show(&work, &[], &flags);
    assert_eq!(
        get(&rows, "review"),
        "devils-advocate (built-in), 2 round(s) <- flag"
    );
    assert_eq!(get(&rows, "council"), "adaptive <- flag");
    assert_eq!(get(&rows, "max_parallel"), "2 <- flag");
    let rows = show(&work, &[], &[]);
    assert_eq!(get(&rows, "max_parallel"), "3 <- built-in default");
}

#[test]
fn show_config_never_prints_a_key() {
    let work = with_config(CONFIG);
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .env("OPENAI_API_KEY", "sk-secret-123")
        .arg("--show-config")
        .run();
    out.success().stdout_has("OPENAI_API_KEY");
    assert!(!out.stdout().contains("sk-secret"), "{}", out.stdout());
    assert!(out.stdout().starts_with(&format!(
        "# config file: {}\n",
        work.join("cfg/agent-meeting/config.yaml").display()
    )));
}

#[test]
fn unknown_keys_exit_2_with_the_field_path() {
    let work = Workdir::new();
    let file = work.write("my.yaml", "base_urls: {azure: 'http://x'}\n");
    for program in ["meeting", "init-board"] {
        let mut cmd = work.cli(program);
        cmd.env("AGENT_MEETING_CONFIG", &file);
        if program == "meeting" {
            cmd.arg("--show-config");
        } else {
            let packet = work.cli("collect-context").args(["--topic", "x"]).run();
            cmd.args(["--agents", "arch"])
                .stdin(packet.output.stdout.clone());
        }
        let out = cmd.run();
        out.exit(2)
            .one_stderr_line()
            .stderr_starts_with(&format!("{program}: {}: base_urls.azure: ", file.display()))
            .stderr_has("unknown field `azure`");
    }
    // A file named by AGENT_MEETING_CONFIG must exist.
    let out = work
        .cli("meeting")
        .env("AGENT_MEETING_CONFIG", work.join("nope.yaml"))
        .arg("--show-config")
        .run();
    out.exit(2).stderr_has("nope.yaml");
}

#[test]
fn a_meeting_uses_the_config_and_its_stages_read_the_run_folders_copy() {
    let work = with_config(&format!(
        "provider: openai\nmodels: {{pm: cfg-pm-model}}\nmax_loops: 2\nrun_dir: {}\n",
        "RUNS"
    ));
    let runs = work.join("runs-from-config");
    let cfg = work.join("cfg/agent-meeting/config.yaml");
    std::fs::write(
        &cfg,
        std::fs::read_to_string(&cfg)
            .unwrap()
            .replace("RUNS", runs.to_str().unwrap()),
    )
    .unwrap();
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .env("OPENAI_API_KEY", "sk-test")
        .args([
            "--topic",
            "Adopt Rust?",
            "--agents",
            "arch,biz",
            "--trace-id",
            "t1",
        ])
        .args([
            "--stage",
            "pm-step=echo \"config: $AGENT_MEETING_CONFIG\" >&2; exit 1",
        ])
        .run();
    out.exit(1)
        .stderr_has("models: openai cfg-pm-model (pm); openai gpt-4o-mini (arch, biz)\n");
    let run = runs.join("t1");
    let copy = run.join("config.yaml");
    out.stderr_has(&format!("config: {}", copy.display()));
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meeting.json")).unwrap()).unwrap();
    assert_eq!(settings["config_file"], copy.display().to_string());
    assert_eq!(settings["board"]["max_loops"], 2);
    let board: Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("0002-init-board.out.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(board["max_loops"], 2);
    // The copy holds the settings, not the user's file: editing that changes no resumed run.
    assert!(std::fs::read_to_string(&copy)
        .unwrap()
        .contains("cfg-pm-model"));
}

#[test]
fn init_board_takes_loops_and_budget_from_the_config_below_flags_and_the_meeting_file() {
    let work = with_config("max_loops: 3\nbudget: {max_total_tokens: 50000}\n");
    let board = |flags: &[&str], input: &str| -> Value {
        let out = work
            .cli("init-board")
            .env("XDG_CONFIG_HOME", work.join("cfg"))
            .args(["--agents", "arch"])
            .args(flags)
            .stdin(input.to_string())
            .run();
        out.success();
        out.json()
    };
    let packet = work
        .cli("collect-context")
        .args(["--topic", "x"])
        .run()
        .stdout();
    let b = board(&[], &packet);
    assert_eq!(
        (b["max_loops"].clone(), b["max_total_tokens"].clone()),
        (3.into(), 50000.into())
    );
    let b = board(&["--max-loops", "5", "--max-total-tokens", "9000"], &packet);
    assert_eq!(
        (b["max_loops"].clone(), b["max_total_tokens"].clone()),
        (5.into(), 9000.into())
    );
    // The meeting file's budget wins over the config file's.
    let mut p: Value = serde_json::from_str(&packet).unwrap();
    p["meeting_input"]["budget"] = serde_json::json!({"max_total_tokens": 7000});
    let b = board(&[], &p.to_string());
    assert_eq!(b["max_total_tokens"], 7000);
}

#[test]
fn a_resumed_meeting_reads_its_own_folders_config_not_the_users() {
    let work = with_config("max_loops: 4\n");
    let cassette = crate::fixtures::demo_cassette();
    // Stop before the first pm-step, then change the user's file and move the run folder.
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .arg("--meeting-file")
        .arg(crate::harness::root().join("meetings/demo.yaml"))
        .args([
            "--agents",
            "arch,biz",
            "--provider",
            "replay",
            "--trace-id",
            "t",
        ])
        .arg("--cassette")
        .arg(&cassette)
        .arg("--step")
        .stdin("q\n")
        .run();
    out.exit(130);
    std::fs::write(
        work.join("cfg/agent-meeting/config.yaml"),
        "modle: broken\n",
    )
    .unwrap();
    std::fs::rename(work.join("runs/t"), work.join("moved")).unwrap();
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .args(["--resume", "moved", "--quiet"])
        .args([
            "--stage",
            "pm-step=echo \"config: $AGENT_MEETING_CONFIG\" >&2; exit 1",
        ])
        .run();
    out.exit(1).stderr_has(&format!(
        "config: {}",
        work.join("moved/config.yaml").display()
    ));
}
