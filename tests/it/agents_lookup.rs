//! Where agent configs come from (docs/design/agents-and-config.md#agent-lookup): `--agents-dir` → `./agents` → the
//! user's agents folder → built-in, first wins; `meeting --list-agents` shows it; an unknown
//! agent's message lists what exists and points at agent-builder. Every test runs in an empty
//! temporary folder with a temporary config folder, so neither the repository's `agents/` nor
//! the developer's own config is seen.

use serde_json::Value;

use crate::harness::{root, Workdir};

/// An agent config named `name` whose role tells which place it was read from.
fn agent_with_role(name: &str, role: &str) -> String {
    std::fs::read_to_string(root().join("share/agents/arch.yaml"))
        .unwrap()
        .replace("name: arch", &format!("name: {name}"))
        .replace("role: Software Architect", &format!("role: {role}"))
}

/// A work folder (the cwd) and, inside it, a config home (`cfg/`).
fn setup() -> Workdir {
    let work = Workdir::new();
    std::fs::create_dir_all(work.join("cfg")).unwrap();
    work
}

/// init-board in `work` with `extra` flags: the roles of the loaded participants.
fn roles(work: &Workdir, extra: &[&str]) -> Vec<String> {
    let packet = work
        .cli("collect-context")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .args(["--topic", "x"])
        .run();
    packet.success();
    let out = work
        .cli("init-board")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .args(extra)
        .stdin(packet.output.stdout.clone())
        .run();
    out.success();
    let board: Value = out.json();
    board["participants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            board["agents"][n.as_str().unwrap()]["role"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn first_place_of_the_lookup_order_wins() {
    let work = setup();
    let args = ["--agents", "arch,sre"];
    // Nothing on disk: the built-in agents.
    assert_eq!(
        roles(&work, &args),
        ["Software Architect", "Site Reliability Engineer"]
    );
    // The user's agents folder wins over built-in ...
    work.write(
        "cfg/agent-meeting/agents/arch.yaml",
        agent_with_role("arch", "User arch"),
    );
    assert_eq!(roles(&work, &args)[0], "User arch");
    // ... ./agents over the user's folder ...
    work.write("agents/arch.yaml", agent_with_role("arch", "Local arch"));
    assert_eq!(roles(&work, &args)[0], "Local arch");
    // ... --agents-dir over ./agents; names it lacks are still found further down.
    work.write("mine/arch.yaml", agent_with_role("arch", "Flag arch"));
    assert_eq!(
        roles(&work, &["--agents", "arch,sre", "--agents-dir", "mine"]),
        ["Flag arch", "Site Reliability Engineer"]
    );
}

#[test]
fn list_agents_shows_name_role_and_place() {
    let work = setup();
    work.write(
        "cfg/agent-meeting/agents/cost.yaml",
        agent_with_role("cost", "Cost Owl"),
    );
    work.write("agents/arch.yaml", agent_with_role("arch", "Local arch"));
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .arg("--list-agents")
        .run();
    out.success();
    let text = out.stdout();
    let line = |name: &str| -> Vec<String> {
        let l = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no line for {name}: {text}"));
        vec![l.to_string()]
    };
    let local = work.join("agents");
    let user = work.join("cfg/agent-meeting/agents");
    assert!(line("arch")[0].contains("Local arch"), "{text}");
    assert!(line("arch")[0].contains(&format!("{} (./agents) (hides 1 more)", local.display())));
    assert!(line("cost")[0].contains(&format!("{} (user agents folder)", user.display())));
    for (name, role) in [
        ("biz", "Business Analyst"),
        ("security", "Security Engineer"),
        ("sre", "Site Reliability Engineer"),
        ("product", "Product Manager"),
        ("finance", "Finance Analyst"),
        ("data", "Data Engineer"),
    ] {
        let l = &line(name)[0];
        assert!(l.contains(role) && l.ends_with("built-in"), "{l}");
    }
    assert!(line("pm")[0].contains("built-in (PM prompt)"), "{text}");
    let order = text.lines().next().unwrap();
    assert!(
        order.find("(./agents)") < order.find("(user agents folder)")
            && order.find("(user agents folder)") < order.find("built-in"),
        "{order}"
    );
}

#[test]
fn unknown_agent_lists_what_exists_and_points_at_agent_builder() {
    let work = setup();
    work.write("agents/cost.yaml", agent_with_role("cost", "Cost"));
    let packet = work.cli("collect-context").args(["--topic", "x"]).run();
    let out = work
        .cli("init-board")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .args(["--agents", "arch,lawyer"])
        .stdin(packet.output.stdout.clone())
        .run();
    out.exit(2).one_stderr_line();
    let err = out.stderr();
    assert!(
        err.starts_with("init-board: --agents: unknown agent \"lawyer\""),
        "{err}"
    );
    assert!(
        err.contains(
            "(available: arch, biz, cost, data, devils-advocate, finance, product, security, sre)"
        ),
        "{err}"
    );
    assert!(err.contains("agent-builder --name lawyer"), "{err}");
    assert!(err.contains("built-in"), "{err}");
}

#[test]
fn a_misspelled_agent_gets_the_closest_name_not_agent_builder() {
    let work = setup();
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .args(["--topic", "x", "--agents", "arch,fiannce", "--dry-run"])
        .run();
    out.exit(2).one_stderr_line();
    let err = out.stderr();
    assert!(err.contains("unknown agent \"fiannce\""), "{err}");
    assert!(err.contains("did you mean --agents finance?"), "{err}");
    assert!(!err.contains("agent-builder"), "{err}");
}

#[test]
fn meeting_runs_with_built_in_agents_from_an_empty_folder() {
    let work = setup();
    let out = work
        .cli("meeting")
        .env("XDG_CONFIG_HOME", work.join("cfg"))
        .args(["--meeting-file"])
        .arg(root().join("meetings/demo.yaml"))
        .args(["--agents", "arch,biz", "--provider", "replay", "--quiet"])
        .arg("--cassette")
        .arg(root().join("meetings/demo.cassette.jsonl"))
        .run();
    out.success();
    let result: Value = out.json();
    assert_eq!(result["status"], "finished");
    let report = std::path::PathBuf::from(result["report_file"].as_str().unwrap());
    assert!(
        report.starts_with(work.path().canonicalize().unwrap()) || report.starts_with(work.path())
    );
    assert!(std::fs::read_to_string(report)
        .unwrap()
        .contains("Software Architect"));
}
