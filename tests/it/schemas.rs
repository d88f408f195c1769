//! share/schemas/ must match the Rust types (docs/design/flow.md#documents): regenerate with `make schemas`.

use std::path::Path;

#[test]
fn schemas_match_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("share/schemas");
    let bless = std::env::var_os("AGENT_MEETING_BLESS").is_some();
    let mut drift = Vec::new();
    for (name, schema) in agent_meeting::model::schemas() {
        let path = dir.join(format!("{name}.schema.json"));
        let want = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &want).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
            drift.push(path.display().to_string());
        }
    }
    assert!(
        drift.is_empty(),
        "schemas drifted from the Rust types (run `make schemas`): {drift:?}"
    );
}

#[test]
fn shipped_agents_validate_against_the_agent_config_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("share/schemas/AgentConfig.schema.json")).unwrap(),
    )
    .unwrap();
    for name in ["arch", "biz", "pm"] {
        let text = std::fs::read_to_string(root.join(format!("agents/{name}.yaml"))).unwrap();
        let value: serde_json::Value = serde_yaml::from_str(&text).unwrap();
        agent_meeting::schema::validate(&value, &schema).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
