//! `agent-builder`'s library side (SPEC §9): ask the model for an AgentConfig, check it with
//! the loader's rules, retry once with the exact error.

use minijinja::{context, Environment, UndefinedBehavior};
use serde_json::{json, Map, Value};

use super::{validate, Client, ExpectedJson, LlmError, Message, Options, Request};
use crate::error::{Error, Invalid};
use crate::model::{AgentConfig, AGENT_TURN_FIELDS};

const SYSTEM_TEMPLATE: &str = include_str!("../../share/prompts/builder.j2");
const RETRY_TEMPLATE: &str = include_str!("../../share/prompts/builder_retry.j2");

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct BuildSpec {
    pub description: String,
    /// Wins over the model's name.
    pub name: Option<String>,
    /// Wins over the model's role.
    pub role: Option<String>,
}

/// The input schema every agent should use: exactly the runtime input.
pub fn default_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string"},
            "meeting_summary": {"type": "string"},
            "context_summary": {"type": "string"}
        },
        "required": ["prompt", "meeting_summary", "context_summary"]
    })
}

/// The AgentTurnResult-compatible output schema proposed to the model.
pub fn default_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "response": {"type": "string"},
            "key_points": {"type": "array", "items": {"type": "string"}},
            "risks": {"type": "array", "items": {"type": "string"}},
            "recommendations": {"type": "array", "items": {"type": "string"}},
            "citations": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "document_id": {"type": "string"},
                    "source_path": {"type": "string"},
                    "quote": {"type": "string"}
                },
                "required": ["document_id", "source_path", "quote"]
            }}
        },
        "required": ["response", "key_points", "risks", "recommendations", "citations"]
    })
}

fn agent_config_schema() -> Value {
    crate::model::schemas()
        .into_iter()
        .find(|(n, _)| *n == "AgentConfig")
        .map(|(_, s)| s)
        .expect("AgentConfig schema exists")
}

fn render(template: &str, ctx: minijinja::Value) -> Result<String, Error> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.render_str(template, ctx)
        .map_err(|e| Error::Runtime(format!("builder prompt template: {e}")))
}

/// The system prompt sent to the model (public for golden tests).
pub fn system_prompt(spec: &BuildSpec) -> Result<String, Error> {
    render(
        SYSTEM_TEMPLATE,
        context! {
            name => spec.name.clone().unwrap_or_default(),
            role => spec.role.clone().unwrap_or_default(),
            input_schema => default_input_schema().to_string(),
            output_schema => default_output_schema().to_string(),
            schema => serde_json::to_string_pretty(&agent_config_schema()).unwrap_or_default(),
        },
    )
}

/// Ask the model for an AgentConfig; two attempts, the second told exactly what was wrong.
/// A configuration error of the provider (bad key, unknown model) stops at once.
pub fn build_agent(
    client: &mut Client,
    opts: &Options,
    spec: &BuildSpec,
) -> Result<AgentConfig, Error> {
    let schema = agent_config_schema();
    let mut user = format!(
        "Description of the agent to create:\n{}",
        spec.description.trim()
    );
    if let Some(n) = &spec.name {
        user.push_str(&format!("\n\nIts name: {n}"));
    }
    if let Some(r) = &spec.role {
        user.push_str(&format!("\nIts role: {r}"));
    }
    let mut req = Request {
        caller: "builder".into(),
        system: system_prompt(spec)?,
        messages: vec![Message::user(user)],
        expect: Some(ExpectedJson {
            name: "agent_config".into(),
            schema: schema.clone(),
        }),
    };
    let mut last = String::new();
    for attempt in 1..=2 {
        let reply = match client.call(&req, opts) {
            Ok(r) => r,
            Err(LlmError::Fatal(m)) => return Err(Error::Runtime(m)),
            Err(LlmError::Transient { message, .. }) => {
                last = message;
                continue;
            }
        };
        let problem = match reply
            .json
            .clone()
            .unwrap_or_else(|| Err("no JSON expected".into()))
        {
            Err(e) => e,
            Ok(value) => match check(value, spec, &schema) {
                Ok(cfg) => return Ok(cfg),
                Err(e) => e,
            },
        };
        last = problem.clone();
        if attempt == 1 {
            req.messages.push(Message::assistant(reply.text));
            req.messages.push(Message::user(render(
                RETRY_TEMPLATE,
                context! { error => problem },
            )?));
        }
    }
    Err(Error::Runtime(format!(
        "the model gave no acceptable agent config after 2 attempts; last problem: {last}"
    )))
}

/// Apply the user's name/role, then every rule a loaded agent must pass.
pub fn check(mut value: Value, spec: &BuildSpec, schema: &Value) -> Result<AgentConfig, String> {
    let Some(obj) = value.as_object_mut() else {
        return Err("expected a JSON object".into());
    };
    if let Some(n) = &spec.name {
        obj.insert("name".into(), json!(n));
    }
    if let Some(r) = &spec.role {
        obj.insert("role".into(), json!(r));
    }
    obj.entry("metadata").or_insert_with(|| json!({}));
    validate(&value, schema)?;
    let cfg: AgentConfig = serde_path_to_error::deserialize(value)
        .map_err(|e| format!("at {}: {}", e.path(), e.inner()))?;
    cfg.validate().map_err(|e| e.to_string())?;
    check_specialist(&cfg).map_err(|e| e.to_string())?;
    Ok(cfg)
}

// LOCAL CHECK, to be replaced at merge by
// `crate::loader::validate_agent(&cfg, AgentKind::Specialist)` (SPEC §3 loader rules), which
// was not on main when this was written.
fn check_specialist(cfg: &AgentConfig) -> Result<(), Invalid> {
    let input = Value::Object(cfg.input_schema.clone());
    let output = Value::Object(cfg.output_schema.clone());
    for (field, s) in [("input_schema", &input), ("output_schema", &output)] {
        jsonschema::validator_for(s)
            .map_err(|e| Invalid::at(field, format!("does not compile as JSON Schema: {e}")))?;
    }
    let sample = json!({"prompt": "p", "meeting_summary": "m", "context_summary": "c"});
    validate(&sample, &input).map_err(|e| {
        Invalid::at(
            "input_schema",
            format!("must accept the runtime input {{prompt, meeting_summary, context_summary}} (all strings, nothing else required): {e}"),
        )
    })?;
    if output.get("type").and_then(Value::as_str) != Some("object") {
        return Err(Invalid::at("output_schema.type", "expected \"object\""));
    }
    let empty = Map::new();
    let props = output
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let type_of = |k: &str| {
        props
            .get(k)
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
    };
    if type_of("response") != Some("string") {
        return Err(Invalid::at(
            "output_schema.properties.response",
            "must be present with type \"string\"",
        ));
    }
    let required: Vec<&str> = output
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !required.contains(&"response") {
        return Err(Invalid::at(
            "output_schema.required",
            "must include \"response\"",
        ));
    }
    for k in ["key_points", "risks", "recommendations", "citations"] {
        if props.contains_key(k) && type_of(k) != Some("array") {
            return Err(Invalid::at(
                format!("output_schema.properties.{k}"),
                "must have type \"array\"",
            ));
        }
    }
    for k in ["key_points", "risks", "recommendations"] {
        let item_type = props
            .get(k)
            .and_then(|p| p.get("items"))
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str);
        if item_type.is_some_and(|t| t != "string") {
            return Err(Invalid::at(
                format!("output_schema.properties.{k}.items.type"),
                "must be \"string\"",
            ));
        }
    }
    for r in &required {
        if *r == "agent_name" || !AGENT_TURN_FIELDS.contains(r) {
            return Err(Invalid::at(
                "output_schema.required",
                format!("{r:?} is not allowed (only response, key_points, risks, recommendations, citations; the runtime fills agent_name)"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Value {
        json!({
            "name": "cost", "role": "Cost analyst", "description": "Estimates costs.",
            "system_prompt": "You are the cost analyst.",
            "input_schema": default_input_schema(), "output_schema": default_output_schema(),
        })
    }

    #[test]
    fn defaults_pass_and_overrides_win() {
        let spec = BuildSpec {
            name: Some("money".into()),
            role: Some("CFO".into()),
            ..Default::default()
        };
        let cfg = check(good(), &spec, &agent_config_schema()).unwrap();
        assert_eq!((cfg.name.as_str(), cfg.role.as_str()), ("money", "CFO"));
    }

    #[test]
    fn compatibility_rules() {
        let s = agent_config_schema();
        let spec = BuildSpec::default();
        let mut v = good();
        v["output_schema"]["required"] = json!(["response", "agent_name"]);
        assert!(check(v, &spec, &s).unwrap_err().contains("agent_name"));
        let mut v = good();
        v["output_schema"]["properties"]["response"] = json!({"type": "object"});
        assert!(check(v, &spec, &s)
            .unwrap_err()
            .starts_with("output_schema.properties.response"));
        let mut v = good();
        v["input_schema"]["required"] = json!(["prompt", "budget"]);
        assert!(check(v, &spec, &s)
            .unwrap_err()
            .starts_with("input_schema: must accept"));
        let mut v = good();
        v["risks"] = json!([]);
        assert!(check(v, &spec, &s).unwrap_err().contains("risks"));
        let mut v = good();
        v["name"] = json!("../x");
        assert!(check(v, &spec, &s).unwrap_err().contains("safe agent name"));
    }

    #[test]
    fn prompt_renders_with_guidance() {
        let p = system_prompt(&BuildSpec {
            name: Some("cost".into()),
            ..Default::default()
        })
        .unwrap();
        assert!(
            p.contains("Use exactly \"cost\"")
                && p.contains("You do not:")
                && p.contains("Hard rules:")
        );
        assert!(p.contains("\"system_prompt\""));
    }
}
