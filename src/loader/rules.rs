//! Checking one agent config (docs/design/agents-and-config.md#agent-configs): file formats, name/stem agreement,
//! schema compilation, and the input/output schema contracts for specialists
//! (AgentTurnResult) and the PM (PMDecision).

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::error::{Error, Invalid, Result};
use crate::io::{parse_doc, read_text_file, Format};
use crate::model::{decision_shape, AgentConfig, ParticipantKind, AGENT_TURN_FIELDS};

/// Which contract an agent's output schema must meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AgentKind {
    /// A specialist: its answer must be compatible with AgentTurnResult.
    Specialist,
    /// The PM: its answer must be compatible with PMDecision.
    Pm,
}

/// The three string fields the runtime sends to every agent.
pub(crate) const RUNTIME_INPUT_FIELDS: [&str; 3] = ["prompt", "meeting_summary", "context_summary"];

/// Every rule that can be checked on one config alone.
pub(crate) fn validate_agent(cfg: &AgentConfig, kind: AgentKind) -> Result<(), Invalid> {
    cfg.validate()?;
    if cfg.kind == ParticipantKind::Human {
        if kind == AgentKind::Pm {
            return Err(Invalid::at(
                "kind",
                "the PM cannot be human (expected llm): it runs the meeting between turns",
            ));
        }
        // A person needs no prompt or schemas; schemas given are held to the same rules.
        if cfg.input_schema.is_empty() && cfg.output_schema.is_empty() {
            return Ok(());
        }
    }
    let input = Value::Object(cfg.input_schema.clone());
    let output = Value::Object(cfg.output_schema.clone());
    compile(&input).map_err(|e| e.under("input_schema"))?;
    compile(&output).map_err(|e| e.under("output_schema"))?;
    check_input_schema(&cfg.input_schema).map_err(|e| e.under("input_schema"))?;
    match kind {
        AgentKind::Specialist => check_specialist_output(&cfg.output_schema),
        AgentKind::Pm => check_pm_output(&cfg.output_schema),
    }
    .map_err(|e| e.under("output_schema"))
}

/// The schema within the subset our validator applies (src/schema.rs), refused by the path of
/// the keyword that is not (docs/design/agents-and-config.md#the-json-schema-subset).
fn compile(schema: &Value) -> Result<(), Invalid> {
    crate::schema::check(schema).map_err(|e| {
        Invalid::at(
            e.path,
            format!("does not compile as JSON Schema: {}", e.message),
        )
    })
}

/// The `type` keyword as a list of type names (absent → empty: any type).
fn types_of(schema: &Map<String, Value>) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Whether a sub-schema admits `ty` (no `type` keyword admits everything).
fn admits(schema: &Value, ty: &str) -> bool {
    match schema.as_object() {
        Some(o) => {
            let ts = types_of(o);
            ts.is_empty() || ts.contains(&ty)
        }
        None => schema.as_bool() != Some(false),
    }
}

fn required_of(schema: &Map<String, Value>) -> std::result::Result<Vec<&str>, Invalid> {
    match schema.get("required") {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str()
                    .ok_or_else(|| Invalid::at(format!("required[{i}]"), "expected a string"))
            })
            .collect(),
        Some(_) => Err(Invalid::at(
            "required",
            "expected an array of property names",
        )),
    }
}

fn property<'a>(schema: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    schema.get("properties").and_then(|p| p.get(name))
}

fn require_object_type(schema: &Map<String, Value>) -> Result<(), Invalid> {
    let ts = types_of(schema);
    if ts.is_empty() || ts.contains(&"object") {
        Ok(())
    } else {
        Err(Invalid::at(
            "type",
            format!("expected \"object\", got {}", quoted(&ts)),
        ))
    }
}

fn quoted(ts: &[&str]) -> String {
    ts.iter()
        .map(|t| format!("{t:?}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// The runtime input `{prompt, meeting_summary, context_summary}` must be able to satisfy it.
fn check_input_schema(schema: &Map<String, Value>) -> Result<(), Invalid> {
    require_object_type(schema)?;
    for (i, name) in required_of(schema)?.into_iter().enumerate() {
        if !RUNTIME_INPUT_FIELDS.contains(&name) {
            return Err(Invalid::at(
                format!("required[{i}]"),
                format!("{name:?} is not a runtime input field (the runtime sends only prompt, meeting_summary, context_summary)"),
            ));
        }
    }
    for name in RUNTIME_INPUT_FIELDS {
        if let Some(p) = property(schema, name) {
            if !admits(p, "string") {
                return Err(Invalid::at(
                    format!("properties.{name}.type"),
                    "must admit \"string\" (the runtime sends a string)",
                ));
            }
        }
    }
    // The structural rules above catch the usual mistakes; a sample input catches the rest
    // (additionalProperties: false without our fields, enums, patterns...).
    let sample =
        json!({"prompt": "question", "meeting_summary": "summary", "context_summary": "context"});
    crate::schema::validate(&sample, &Value::Object(schema.clone())).map_err(|e| {
        Invalid::at(
            "",
            format!("the runtime input {{prompt, meeting_summary, context_summary}} cannot satisfy it: {e}"),
        )
    })
}

fn check_specialist_output(schema: &Map<String, Value>) -> Result<(), Invalid> {
    if !types_of(schema).contains(&"object") {
        return Err(Invalid::at(
            "type",
            "must be \"object\" (answers are AgentTurnResult objects)",
        ));
    }
    match property(schema, "response") {
        None => {
            return Err(Invalid::at(
                "properties.response",
                "is missing (AgentTurnResult needs a string response)",
            ))
        }
        Some(p) if !types_of(p.as_object().unwrap_or(&Map::new())).contains(&"string") => {
            return Err(Invalid::at(
                "properties.response.type",
                "must be \"string\"",
            ))
        }
        _ => {}
    }
    let required = required_of(schema)?;
    if !required.contains(&"response") {
        return Err(Invalid::at("required", "must include \"response\""));
    }
    for (i, name) in required.iter().enumerate() {
        if *name == "agent_name" {
            return Err(Invalid::at(
                format!("required[{i}]"),
                "\"agent_name\" may not be required (the runtime fills it)",
            ));
        }
        if !AGENT_TURN_FIELDS.contains(name) {
            return Err(Invalid::at(
                "required",
                format!("{name:?} is not an AgentTurnResult field (allowed: response, key_points, risks, recommendations, citations)"),
            ));
        }
    }
    for name in ["key_points", "risks", "recommendations"] {
        if let Some(p) = property(schema, name) {
            let o = p.as_object().cloned().unwrap_or_default();
            if !types_of(&o).contains(&"array") {
                return Err(Invalid::at(
                    format!("properties.{name}.type"),
                    "must be \"array\" (of strings)",
                ));
            }
            if let Some(items) = o.get("items") {
                if !admits(items, "string") {
                    return Err(Invalid::at(
                        format!("properties.{name}.items.type"),
                        "must be \"string\"",
                    ));
                }
            }
        }
    }
    if let Some(p) = property(schema, "citations") {
        let o = p.as_object().cloned().unwrap_or_default();
        if !types_of(&o).contains(&"array") {
            return Err(Invalid::at(
                "properties.citations.type",
                "must be \"array\" (of citations)",
            ));
        }
        if let Some(items) = o.get("items") {
            if !admits(items, "object") {
                return Err(Invalid::at(
                    "properties.citations.items.type",
                    "must be \"object\" ({document_id, source_path, quote})",
                ));
            }
        }
    }
    Ok(())
}

fn check_pm_output(schema: &Map<String, Value>) -> Result<(), Invalid> {
    if !types_of(schema).contains(&"object") {
        return Err(Invalid::at(
            "type",
            "must be \"object\" (answers are PMDecision objects)",
        ));
    }
    match property(schema, "next_action") {
        None => {
            return Err(Invalid::at(
                "properties.next_action",
                "is missing (PMDecision needs next_action)",
            ))
        }
        Some(p) => {
            if !admits(p, "string") {
                return Err(Invalid::at(
                    "properties.next_action.type",
                    "must be \"string\"",
                ));
            }
            if let Some(Value::Array(allowed)) = p.get("enum") {
                let names = crate::model::NextAction::names();
                for v in allowed {
                    if !v.as_str().is_some_and(|v| names.contains(&v)) {
                        return Err(Invalid::at(
                            "properties.next_action.enum",
                            format!("{v} is not a PMDecision action ({})", names.join(", ")),
                        ));
                    }
                }
            }
        }
    }
    let required = required_of(schema)?;
    if !required.contains(&"next_action") {
        return Err(Invalid::at("required", "must include \"next_action\""));
    }
    let text_fields = &decision_shape().text_fields;
    for name in &required {
        if !text_fields.iter().any(|f| f == name) {
            return Err(Invalid::at(
                "required",
                format!(
                    "{name:?} is not a PMDecision field (allowed: {})",
                    text_fields.join(", ")
                ),
            ));
        }
    }
    for name in text_fields {
        if let Some(p) = property(schema, name) {
            if !admits(p, "string") {
                return Err(Invalid::at(
                    format!("properties.{name}.type"),
                    "must admit \"string\"",
                ));
            }
        }
    }
    Ok(())
}

/// Parse one agent config file and check every loader rule; errors name the file and field.
pub(crate) fn load_agent_file(path: &Path, kind: AgentKind) -> Result<AgentConfig> {
    let label = path.display().to_string();
    let format = Format::from_path(path).ok_or_else(|| {
        Error::input(&label, "", "agent configs must end in .json, .yaml or .yml")
    })?;
    let text = read_text_file(path)?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    load_agent_text(&label, stem, &text, format, kind)
}

/// One agent config's text, named `stem` (the file stem, or a built-in's name).
pub(super) fn load_agent_text(
    label: &str,
    stem: &str,
    text: &str,
    format: Format,
    kind: AgentKind,
) -> Result<AgentConfig> {
    let cfg: AgentConfig = parse_doc(label, text, format)?;
    if cfg.name != stem {
        return Err(Error::input(
            label,
            "name",
            // The value is not repeated: a file read by mistake may hold a secret there
            // (docs/design/agents-and-config.md#agent-lookup).
            format!("does not match the file name {stem:?} (the file stem must equal name)"),
        ));
    }
    validate_agent(&cfg, kind).map_err(|e| e.in_file(label))?;
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specialist() -> AgentConfig {
        serde_json::from_value(json!({
            "name": "arch", "role": "Architect", "description": "d", "system_prompt": "You are...",
            "input_schema": {"type": "object", "properties": {"prompt": {"type": "string"},
                "meeting_summary": {"type": "string"}, "context_summary": {"type": "string"}},
                "required": ["prompt", "meeting_summary", "context_summary"]},
            "output_schema": {"type": "object", "properties": {"response": {"type": "string"},
                "key_points": {"type": "array", "items": {"type": "string"}}, "risks": {"type": "array"},
                "recommendations": {"type": "array"}, "citations": {"type": "array"}},
                "required": ["response"]}
        }))
        .unwrap()
    }

    fn with(mut cfg: AgentConfig, pointer: &str, v: Value) -> AgentConfig {
        let mut whole = serde_json::to_value(&cfg).unwrap();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        whole.pointer_mut(parent).unwrap()[key] = v;
        cfg = serde_json::from_value(whole).unwrap();
        cfg
    }

    fn err(cfg: &AgentConfig, kind: AgentKind) -> String {
        validate_agent(cfg, kind).unwrap_err().to_string()
    }
    /// A human needs only name, role and description; an llm agent still needs its prompt and
    /// schemas; the PM cannot be human; schemas a human config gives are checked.
    #[test]
    fn a_human_needs_no_prompt_or_schemas() {
        let text =
            "name: ana\nkind: human\nrole: Ops lead\ndescription: Knows the on-call reality.\n";
        let human =
            load_agent_text("ana", "ana", text, Format::Yaml, AgentKind::Specialist).unwrap();
        assert_eq!(human.kind, ParticipantKind::Human);
        let e = load_agent_text("ana", "ana", text, Format::Yaml, AgentKind::Pm).unwrap_err();
        assert!(
            e.to_string().contains("kind: the PM cannot be human"),
            "{e}"
        );
        let llm = text.replace("kind: human\n", "");
        let e =
            load_agent_text("ana", "ana", &llm, Format::Yaml, AgentKind::Specialist).unwrap_err();
        assert!(
            e.to_string().contains("missing field `system_prompt`"),
            "{e}"
        );
        let mut bad = human.clone();
        bad.input_schema = json!({"type": "string"}).as_object().unwrap().clone();
        bad.output_schema = specialist().output_schema;
        assert!(err(&bad, AgentKind::Specialist).contains("input_schema"));
        let typo = format!("{text}kind_: x\n");
        assert!(load_agent_text("ana", "ana", &typo, Format::Yaml, AgentKind::Specialist).is_err());
        let e = load_agent_text(
            "ana",
            "ana",
            &text.replace("human", "robot"),
            Format::Yaml,
            AgentKind::Specialist,
        )
        .unwrap_err();
        assert!(e.to_string().contains("kind"), "{e}");
    }

    #[test]
    fn design_example_is_accepted() {
        validate_agent(&specialist(), AgentKind::Specialist).unwrap();
    }

    #[test]
    fn output_required_must_be_agent_turn_fields() {
        let c = with(
            specialist(),
            "/output_schema/required",
            json!(["response", "verdict"]),
        );
        assert_eq!(
            err(&c, AgentKind::Specialist),
            "output_schema.required: \"verdict\" is not an AgentTurnResult field (allowed: response, key_points, risks, recommendations, citations)"
        );
        let c = with(
            specialist(),
            "/output_schema/required",
            json!(["response", "agent_name"]),
        );
        assert!(
            err(&c, AgentKind::Specialist).starts_with("output_schema.required[1]: \"agent_name\"")
        );
    }

    #[test]
    fn output_response_rules() {
        let c = with(
            specialist(),
            "/output_schema/properties/response",
            json!({"type": "integer"}),
        );
        assert!(
            err(&c, AgentKind::Specialist).starts_with("output_schema.properties.response.type")
        );
        let c = with(specialist(), "/output_schema/required", json!([]));
        assert_eq!(
            err(&c, AgentKind::Specialist),
            "output_schema.required: must include \"response\""
        );
        let c = with(specialist(), "/output_schema/type", json!("array"));
        assert!(err(&c, AgentKind::Specialist).starts_with("output_schema.type"));
    }

    #[test]
    fn output_lists_must_be_arrays_of_strings() {
        let c = with(
            specialist(),
            "/output_schema/properties/risks",
            json!({"type": "string"}),
        );
        assert!(err(&c, AgentKind::Specialist).starts_with("output_schema.properties.risks.type"));
        let c = with(
            specialist(),
            "/output_schema/properties/key_points/items",
            json!({"type": "integer"}),
        );
        assert!(err(&c, AgentKind::Specialist)
            .starts_with("output_schema.properties.key_points.items.type"));
        let c = with(
            specialist(),
            "/output_schema/properties/citations",
            json!({"type": "object"}),
        );
        assert!(
            err(&c, AgentKind::Specialist).starts_with("output_schema.properties.citations.type")
        );
    }

    #[test]
    fn input_schema_must_accept_runtime_input() {
        let c = with(
            specialist(),
            "/input_schema/required",
            json!(["prompt", "history"]),
        );
        assert!(err(&c, AgentKind::Specialist)
            .starts_with("input_schema.required[1]: \"history\" is not a runtime input field"));
        let c = with(
            specialist(),
            "/input_schema/properties/prompt",
            json!({"type": "object"}),
        );
        assert!(err(&c, AgentKind::Specialist).starts_with("input_schema.properties.prompt.type"));
        let c = with(
            specialist(),
            "/input_schema/additionalProperties",
            json!(false),
        );
        validate_agent(&c, AgentKind::Specialist).unwrap();
        let c = with(
            specialist(),
            "/input_schema/properties",
            json!({"prompt": {"type": "string"}}),
        );
        let c = with(c, "/input_schema/required", json!(["prompt"]));
        let c = with(c, "/input_schema/additionalProperties", json!(false));
        assert!(err(&c, AgentKind::Specialist).contains("cannot satisfy it"));
    }

    #[test]
    fn schemas_must_compile() {
        let c = with(specialist(), "/input_schema/type", json!("no-such-type"));
        assert!(err(&c, AgentKind::Specialist).starts_with("input_schema.type: does not compile"));
        // A keyword outside the validator's subset is refused by its path, never ignored.
        let c = with(
            specialist(),
            "/output_schema/properties/risks/if",
            json!({"maxItems": 1}),
        );
        assert!(err(&c, AgentKind::Specialist).starts_with(
            "output_schema.properties.risks.if: does not compile as JSON Schema: unsupported JSON Schema keyword"
        ));
    }

    #[test]
    fn pm_must_match_pm_decision() {
        let pm = with(
            specialist(),
            "/output_schema",
            json!({"type": "object", "properties": {"analysis": {"type": "string"},
                "next_action": {"type": "string", "enum": ["CALL_AGENT", "FINISH"]},
                "target_agent": {"type": ["string", "null"]}, "prompt_for_agent": {"type": ["string", "null"]},
                "final_report": {"type": ["string", "null"]}}, "required": ["analysis", "next_action"]}),
        );
        validate_agent(&pm, AgentKind::Pm).unwrap();
        // A specialist schema is not a PM schema, and the other way round.
        assert!(
            err(&specialist(), AgentKind::Pm).starts_with("output_schema.properties.next_action")
        );
        assert!(err(&pm, AgentKind::Specialist).starts_with("output_schema.properties.response"));
        let bad = with(
            pm.clone(),
            "/output_schema/properties/next_action/enum",
            json!(["CALL_AGENT", "STOP"]),
        );
        assert!(err(&bad, AgentKind::Pm).contains("\"STOP\" is not a PMDecision action"));
        // A PM config may allow a fan-out (docs/design/agent-turn.md#fan-out).
        let fan = with(
            pm.clone(),
            "/output_schema/properties/next_action/enum",
            json!(["CALL_AGENT", "CALL_AGENTS", "FINISH"]),
        );
        validate_agent(&fan, AgentKind::Pm).unwrap();
        let bad = with(
            pm,
            "/output_schema/required",
            json!(["next_action", "confidence"]),
        );
        assert!(err(&bad, AgentKind::Pm).contains("\"confidence\" is not a PMDecision field"));
    }

    #[test]
    fn unsafe_name_and_empty_prompt() {
        let mut c = specialist();
        c.name = "../x".into();
        assert!(
            err(&c, AgentKind::Specialist).starts_with("name: \"../x\" is not a safe agent name")
        );
        let mut c = specialist();
        c.system_prompt = "  \n".into();
        assert_eq!(
            err(&c, AgentKind::Specialist),
            "system_prompt: must not be empty"
        );
    }
}
