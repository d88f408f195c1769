//! agent-builder end to end: fake OpenAI server and replay cassettes.

use serde_json::{json, Value};

use crate::fake_http::*;
use crate::fixtures::Cassette;
use crate::harness::{cli, every_case, golden, Cli};

const KEY: &str = "sk-test-SECRET123456789012345";

fn good_config(name: &str) -> Value {
    json!({
        "name": name,
        "role": "Cost analyst",
        "description": "Estimates build and run costs of each option.",
        "system_prompt": "You are the cost analyst; in this meeting you estimate costs.\nYou do:\n- estimate\nYou do not:\n- design\nSteps:\n1. Read.\nOutput format: JSON.\nHard rules:\n- cite",
        "input_schema_description": "The PM's question and summaries.",
        "output_schema_description": "An AgentTurnResult.",
        "input_schema": agent_meeting::stage::agent_builder::default_input_schema(),
        "output_schema": agent_meeting::stage::agent_builder::default_output_schema(),
        "metadata": {}
    })
}

fn bad_config() -> Value {
    let mut v = good_config("cost");
    v["output_schema"]["required"] = json!(["response", "agent_name"]);
    v
}

/// agent-builder with fast retries.
fn cmd() -> Cli {
    let mut c = cli("agent-builder");
    c.env("MEETING_RETRY_BASE_MS", "1");
    c
}

/// The builder's replies, one call each.
fn cassette(dir: &std::path::Path, replies: &[Value]) -> std::path::PathBuf {
    replies
        .iter()
        .fold(Cassette::new().no_usage(), |c, r| {
            c.reply("builder", r.clone())
        })
        .write(dir.join("builder.jsonl"))
}

fn loads(
    path: &std::path::Path,
    format: agent_meeting::io::Format,
) -> agent_meeting::model::AgentConfig {
    let text = std::fs::read_to_string(path).unwrap();
    let cfg: agent_meeting::model::AgentConfig =
        agent_meeting::io::parse_doc("x", &text, format).unwrap();
    let spec = agent_meeting::stage::agent_builder::BuildSpec::default();
    let schema = agent_meeting::model::schemas()
        .into_iter()
        .find(|(n, _)| *n == "AgentConfig")
        .unwrap()
        .1;
    agent_meeting::stage::agent_builder::check(serde_json::to_value(&cfg).unwrap(), &spec, &schema)
        .unwrap();
    cfg
}

/// With no key and no server (`--provider sample`) the builder writes a valid config, its
/// prose marked as the sample's, that a meeting can seat.
#[test]
fn the_sample_provider_writes_a_config_a_meeting_can_seat() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("agents/qa.yaml");
    std::fs::create_dir_all(out_file.parent().unwrap()).unwrap();
    cmd()
        .args(["--provider", "sample", "--role", "QA lead", "--output"])
        .arg(&out_file)
        .args(["--description", "Checks the test plan of each option"])
        .run()
        .success();
    let cfg = loads(&out_file, agent_meeting::io::Format::Yaml);
    assert_eq!((cfg.name.as_str(), cfg.role.as_str()), ("qa", "QA lead"));
    assert!(
        cfg.system_prompt.starts_with("[sample]"),
        "{}",
        cfg.system_prompt
    );
    let agents = cli("meeting")
        .current_dir(dir.path())
        .arg("--list-agents")
        .run();
    agents.success();
    assert!(agents.stdout().contains("qa ") && agents.stdout().contains("QA lead"));
}

#[test]
fn fake_openai_server_writes_a_valid_config() {
    let s = FakeServer::start(vec![json(
        200,
        &openai_ok(&good_config("whatever").to_string(), Some((900, 300))),
    )]);
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("cost.json");
    cmd()
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", s.url))
        .args([
            "--description",
            "Estimates costs",
            "--model",
            "gpt-test",
            "--output",
        ])
        .arg(&out)
        .run()
        .success()
        .stdout_has("\"name\":\"cost\"")
        .stdout_has("\"calls\":1")
        .stderr_lacks(KEY);
    let cfg = loads(&out, agent_meeting::io::Format::Json);
    assert_eq!(cfg.name, "cost", "the output file's stem names the agent");
    let body = s.request(0).json();
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(
        body["response_format"]["json_schema"]["name"],
        "agent_config"
    );
    assert!(body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("Hard rules:"));
    assert!(body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .contains("Estimates costs"));
}

#[test]
fn cassette_retry_then_success_yaml_with_user_name() {
    let d = tempfile::tempdir().unwrap();
    let c = cassette(d.path(), &[bad_config(), good_config("modelname")]);
    let out = d.path().join("agents/finance.yaml");
    cmd()
        .args(["--provider", "replay", "--cassette"])
        .arg(&c)
        .args(["--name", "finance", "--role", "CFO", "--output"])
        .arg(&out)
        .stdin("Estimates costs")
        .run()
        .success()
        .stdout_has("\"calls\":2");
    let cfg = loads(&out, agent_meeting::io::Format::Yaml);
    assert_eq!((cfg.name.as_str(), cfg.role.as_str()), ("finance", "CFO"));
}

#[test]
fn refused_twice_writes_nothing_and_exits_1() {
    let d = tempfile::tempdir().unwrap();
    let c = cassette(d.path(), &[bad_config(), bad_config()]);
    let out = d.path().join("cost.yaml");
    cmd()
        .args(["--provider", "replay", "--cassette"])
        .arg(&c)
        .args(["--description", "costs", "--output"])
        .arg(&out)
        .run()
        .exit(1)
        .stdout_is("")
        .stderr_starts_with("agent-builder: ")
        .stderr_has("agent_name");
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        1,
        "no temporary file left behind"
    );
}

#[test]
fn stdout_when_no_output_file() {
    let d = tempfile::tempdir().unwrap();
    let c = cassette(d.path(), &[good_config("cost")]);
    let out = cmd()
        .args(["--provider", "replay", "--cassette"])
        .arg(&c)
        .args(["--description", "costs"])
        .run();
    let v: Value = out.success().json();
    assert_eq!(v["name"], "cost");
}

/// The description as the one argument, as `meeting` takes its topic; not both.
#[test]
fn the_description_may_be_the_argument() {
    let d = tempfile::tempdir().unwrap();
    let c = cassette(d.path(), &[good_config("cost")]);
    let out = cmd()
        .args(["--provider", "replay", "--cassette"])
        .arg(&c)
        .arg("Estimates build and run costs of each option")
        .run();
    let v: Value = out.success().json();
    assert_eq!(v["name"], "cost");
    cmd()
        .args(["--provider", "sample", "costs", "--description", "costs"])
        .run()
        .exit(2)
        .stderr_has("cannot be used with");
}

#[test]
fn existing_output_needs_force() {
    let s = FakeServer::start(vec![json(
        200,
        &openai_ok(&good_config("cost").to_string(), None),
    )]);
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("cost.json");
    std::fs::write(&out, "keep me").unwrap();
    let run = |force: bool| {
        let mut c = cmd();
        c.env("OPENAI_API_KEY", KEY)
            .env("OPENAI_BASE_URL", format!("{}/v1", s.url));
        c.args(["--provider", "openai", "--description", "costs", "--output"])
            .arg(&out);
        if force {
            c.arg("--force");
        }
        c.run()
    };
    run(false).exit(2).stderr_has("--force");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me");
    assert_eq!(s.count(), 0, "no model call before refusing");
    run(true).success();
    loads(&out, agent_meeting::io::Format::Json);
}

#[test]
fn provider_401_fails_fast_without_leaking_the_key() {
    let s = FakeServer::start(vec![json(
        401,
        &openai_error(
            &format!("Incorrect API key provided: {KEY}"),
            "invalid_api_key",
        ),
    )]);
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("cost.json");
    cmd()
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", s.url))
        .args(["--description", "costs", "--output"])
        .arg(&out)
        .run()
        .exit(1)
        .stderr_has("openai: HTTP 401: Incorrect API key provided")
        .stderr_lacks("SECRET123");
    assert_eq!(s.count(), 1);
    assert!(!out.exists());
}

#[test]
fn no_provider_configured_explains_what_to_set() {
    cmd()
        .args(["--description", "costs"])
        .run()
        .exit(1)
        .stderr_has("OPENAI_API_KEY")
        .stderr_has("--provider replay --cassette");
}

#[test]
fn fake_anthropic_server_writes_a_valid_config() {
    let s = FakeServer::start(vec![json(
        200,
        &anthropic_tool("agent_config", good_config("critic"), Some((800, 200))),
    )]);
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("critic.yml");
    cmd()
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", format!("{}/prefix", s.url))
        .args([
            "--provider",
            "anthropic",
            "--description",
            "Finds weaknesses; never rewrites",
            "--output",
        ])
        .arg(&out)
        .run()
        .success();
    assert_eq!(loads(&out, agent_meeting::io::Format::Yaml).name, "critic");
    let r = s.request(0);
    assert_eq!(r.path, "/prefix/v1/messages");
    assert_eq!(
        r.json()["tool_choice"],
        json!({"type": "tool", "name": "agent_config"})
    );
}

/// The rendered builder prompt is part of the product: changes must be deliberate.
/// Regenerate with `AGENT_MEETING_BLESS=1 cargo test --test integration agent_builder::`.
#[test]
fn builder_prompt_golden() {
    let spec = agent_meeting::stage::agent_builder::BuildSpec {
        description: "Estimates costs".into(),
        name: Some("cost".into()),
        role: None,
    };
    let text = agent_meeting::stage::agent_builder::system_prompt(&spec).unwrap();
    golden("builder_system.txt", &text);
}

/// Files the loader would not read as this agent are refused before any model call.
#[test]
fn output_paths_the_loader_would_refuse_exit_2_before_any_call() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("cost.json"), "{}").unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["--output", "cost.txt"], "end in .json, .yaml or .yml"),
        (
            &["--output", "a b.yaml"],
            "the file name is the agent's name",
        ),
        (
            &["--name", "other", "--output", "cost2.yaml"],
            "must equal --name \"other\"",
        ),
        (
            &["--output", "cost.yaml"],
            "cost.json already defines agent \"cost\"",
        ),
    ];
    every_case(
        cases,
        |(args, _)| format!("{args:?}"),
        |(args, want)| {
            let out = cli("agent-builder")
                .current_dir(d.path())
                .args(["--description", "estimates costs"])
                .args(args)
                .run();
            let err = out.stderr();
            out.check(out.code() == Some(2), &format!("{args:?}: expected exit 2"));
            assert!(
                err.starts_with("agent-builder: ") && err.contains(want),
                "{args:?}: {err}"
            );
            assert_eq!(err.trim().lines().count(), 1);
        },
    );
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        1,
        "nothing written"
    );
}
