//! Which provider, model and options a caller gets (one test: it changes the environment, so
//! it runs in a process of its own).

use agent_meeting::llm::{client_for, client_for_caller, LlmConfig};
use agent_meeting::model::LlmSettings;
use serde_json::{json, Map, Value};

use crate::harness::in_own_process;

fn meta(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn resolution_order_and_errors() {
    if !in_own_process("llm_resolve::resolution_order_and_errors") {
        return;
    }
    for v in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "OPENAI_MODEL",
        "ANTHROPIC_MODEL",
    ] {
        std::env::remove_var(v);
    }
    let d = tempfile::tempdir().unwrap();
    let cassette = d.path().join("c.jsonl");
    std::fs::write(
        &cassette,
        "{\"seq\": 8, \"caller\": \"arch\", \"response\": \"{}\"}\n",
    )
    .unwrap();
    let board = LlmSettings {
        provider: "anthropic".into(),
        model: Some("board-model".into()),
        temperature: Some(0.5),
        max_tokens: None,
    };
    let empty = LlmSettings {
        provider: String::new(),
        model: None,
        temperature: None,
        max_tokens: None,
    };

    // Nothing configured: the error says what to set and how to run offline.
    let e = client_for(&LlmConfig::default(), &empty, &Map::new(), 0)
        .err()
        .unwrap();
    let m = e.to_string();
    assert!(
        m.contains("OPENAI_API_KEY")
            && m.contains("ANTHROPIC_API_KEY")
            && m.contains("--provider replay --cassette")
            && m.contains("--provider sample"),
        "{m}"
    );
    assert_eq!(e.exit_code(), 1);

    // A provider chosen but its key missing.
    let e = client_for(&LlmConfig::default(), &board, &Map::new(), 0)
        .err()
        .unwrap();
    assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");

    // Chosen by what --provider cannot override: the error names what chose it, and does not
    // suggest the flag (replay, which does override everything, stays the offline way out).
    let flag = LlmConfig {
        provider: Some("openai".into()),
        ..LlmConfig::default()
    };
    let e = client_for_caller(
        &flag,
        &empty,
        "arch",
        &meta(json!({"provider": "anthropic"})),
        0,
    )
    .err()
    .unwrap();
    let m = e.to_string();
    assert!(
        m.contains("agent \"arch\"")
            && m.contains("metadata.provider")
            && m.contains("--provider cannot override")
            && m.contains("ANTHROPIC_API_KEY"),
        "{m}"
    );
    assert!(!m.contains("choose another with --provider"), "{m}");
    assert_eq!(e.exit_code(), 1);
    let e = client_for(&flag, &board, &Map::new(), 0).err().unwrap();
    let m = e.to_string();
    assert!(
        m.contains("llm.provider") && !m.contains("choose another with --provider"),
        "{m}"
    );
    let e = client_for_caller(
        &flag,
        &empty,
        "biz",
        &meta(json!({"provider": "mistral"})),
        0,
    )
    .err()
    .unwrap();
    assert!(
        e.to_string().contains("unknown provider \"mistral\"")
            && e.to_string().contains("agent \"biz\""),
        "{e}"
    );

    // Replay by flag wins over the agent's and the board's provider.
    let args = LlmConfig {
        provider: Some("replay".into()),
        cassette: Some(cassette.clone()),
        ..LlmConfig::default()
    };
    let (mut c, o) = client_for(
        &args,
        &board,
        &meta(json!({"provider": "openai", "model": "m1"})),
        7,
    )
    .unwrap();
    assert_eq!(c.provider_name(), "replay");
    assert_eq!((o.model.as_str(), o.temperature), ("m1", Some(0.5)));
    let req = agent_meeting::llm::Request {
        caller: "arch".into(),
        system: String::new(),
        messages: vec![agent_meeting::llm::Message::user("q")],
        expect: None,
        facts: Default::default(),
    };
    assert_eq!(c.call(&req, &o).unwrap().text, "{}");
    assert_eq!(c.calls(), 8);

    // Replay without a cassette is a usage error.
    let e = client_for(
        &LlmConfig {
            provider: Some("replay".into()),
            ..LlmConfig::default()
        },
        &board,
        &Map::new(),
        0,
    )
    .err()
    .unwrap();
    assert_eq!(e.exit_code(), 2);

    // Metadata > board > flags, per field.
    std::env::set_var("OPENAI_API_KEY", "sk-test-SECRET123456789012345");
    std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-test-SECRET1234567890");
    let args = LlmConfig {
        provider: Some("openai".into()),
        model: Some("flag-model".into()),
        temperature: Some(0.9),
        max_tokens: Some(100),
        ..LlmConfig::default()
    };
    let (c, o) = client_for(&args, &board, &meta(json!({"max_tokens": 300})), 0).unwrap();
    assert_eq!(c.provider_name(), "anthropic");
    assert_eq!(
        (o.model.as_str(), o.temperature, o.max_tokens),
        ("board-model", Some(0.5), Some(300))
    );
    let (c, o) = client_for(&args, &empty, &Map::new(), 0).unwrap();
    assert_eq!(c.provider_name(), "openai");
    assert_eq!(
        (o.model.as_str(), o.temperature, o.max_tokens),
        ("flag-model", Some(0.9), Some(100))
    );
    let (c, _) = client_for(&args, &board, &meta(json!({"provider": "openai"})), 0).unwrap();
    assert_eq!(c.provider_name(), "openai");

    // Only a key in the environment: that provider, its default model.
    std::env::remove_var("OPENAI_API_KEY");
    let (c, o) = client_for(&LlmConfig::default(), &empty, &Map::new(), 0).unwrap();
    assert_eq!(
        (c.provider_name(), o.model.as_str()),
        ("anthropic", "claude-sonnet-4-5")
    );

    // A local OpenAI-compatible server needs no key.
    std::env::remove_var("ANTHROPIC_API_KEY");
    std::env::set_var("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1");
    let args = LlmConfig {
        provider: Some("openai".into()),
        ..LlmConfig::default()
    };
    let (c, _) = client_for(&args, &empty, &Map::new(), 0).unwrap();
    assert_eq!(c.provider_name(), "openai");
    std::env::set_var("OPENAI_BASE_URL", "https://api.example.com/v1");
    let e = client_for(&args, &empty, &Map::new(), 0).err().unwrap();
    assert!(e.to_string().contains("needs OPENAI_API_KEY"), "{e}");

    let e = client_for(
        &LlmConfig {
            provider: Some("mistral".into()),
            ..LlmConfig::default()
        },
        &empty,
        &Map::new(),
        0,
    )
    .err()
    .unwrap();
    assert!(
        e.to_string().contains("unknown provider \"mistral\""),
        "{e}"
    );
    let e = client_for(
        &LlmConfig {
            provider: Some("openai".into()),
            read_timeout: Some(0.0),
            ..LlmConfig::default()
        },
        &empty,
        &Map::new(),
        0,
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("--read-timeout"), "{e}");
}
