//! `agent-builder`'s library side (docs/design/agents-and-config.md#agent-configs): ask the model for an AgentConfig
//! through the ask loop (docs/design/failure-policy.md#ask-loop), checked with the loader's rules.

use minijinja::{context, Environment, UndefinedBehavior};
use serde_json::{json, Value};

use crate::error::Error;
use crate::llm::{default_max_tokens, Client, ExpectedJson, Message, NoJson, Options, Request};
use crate::loader::AgentKind;
use crate::meeting::ask::{ask, Asked, Asker};
use crate::model::AgentConfig;
use crate::schema::validate;

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

/// A shipped agent's config (the architect's), as a valid answer for `--provider sample`.
fn example_config() -> Option<Value> {
    let (_, text) = crate::loader::BUILTIN_AGENTS
        .iter()
        .find(|(n, _)| *n == "arch")?;
    serde_yaml::from_str(text).ok()
}

fn render(template: &str, ctx: minijinja::Value) -> Result<String, Error> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.render_str(template, ctx)
        .map_err(|e| Error::Runtime(format!("builder prompt template: {e}")))
}

/// The system prompt sent to the model (public for golden tests). It describes the fields but
/// not the AgentConfig schema itself: that reaches the model as the native schema, or in words
/// from the provider with `--no-native-schema`, so it is never in the prompt twice.
pub fn system_prompt(spec: &BuildSpec) -> Result<String, Error> {
    render(
        SYSTEM_TEMPLATE,
        context! {
            name => spec.name.clone().unwrap_or_default(),
            role => spec.role.clone().unwrap_or_default(),
            input_schema => default_input_schema().to_string(),
            output_schema => default_output_schema().to_string(),
        },
    )
}

/// The builder's side of the ask loop (docs/design/failure-policy.md#ask-loop): the loader's rules and the
/// builder's own retry template; no board, so no events.
struct BuilderAsk<'a> {
    spec: &'a BuildSpec,
    schema: &'a Value,
}

impl Asker for BuilderAsk<'_> {
    type Answer = AgentConfig;
    type Invalid = String;

    fn check(&mut self, json: Result<&Value, &NoJson>) -> Result<AgentConfig, String> {
        check(
            json.map_err(NoJson::to_string)?.clone(),
            self.spec,
            self.schema,
        )
    }

    fn correction(&self, error: &String) -> Result<String, Error> {
        render(RETRY_TEMPLATE, context! { error => error })
    }
}

/// Ask the model for an AgentConfig through the ask loop: an invalid config is asked again
/// once, told exactly what was wrong. A configuration error of the provider (bad key, unknown
/// model) stops at once, and so does a call that failed after the client's attempts.
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
    let request = Request {
        caller: "builder".into(),
        system: system_prompt(spec)?,
        messages: vec![Message::user(user)],
        expect: Some(ExpectedJson {
            name: "agent_config".into(),
            schema: schema.clone(),
        }),
        facts: crate::llm::Facts {
            example: example_config(),
            ..Default::default()
        },
    };
    let mut builder = BuilderAsk {
        spec,
        schema: &schema,
    };
    let opts = &opts.or_max_tokens(default_max_tokens::BUILDER);
    match ask(client, opts, request, &mut builder)? {
        Asked::Answer(cfg) => Ok(cfg),
        Asked::Invalid(last) => Err(Error::Runtime(format!(
            "the model gave no acceptable agent config after 2 attempts; last problem: {last}"
        ))),
        Asked::Failed(e) => Err(Error::Runtime(format!(
            "the model gave no agent config: the call failed: {e}"
        ))),
        // agent-builder has no board, so no token budget refuses its calls.
        Asked::Refused(why) => Err(Error::Runtime(why)),
    }
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
    // The same rules the loader applies when the file is loaded (docs/design/agents-and-config.md#agent-configs).
    crate::loader::validate_agent(&cfg, AgentKind::Specialist).map_err(|e| e.to_string())?;
    Ok(cfg)
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
        let e = check(v, &spec, &s).unwrap_err();
        assert!(
            e.starts_with("output_schema") && e.contains("response"),
            "{e}"
        );
        let mut v = good();
        v["input_schema"]["required"] = json!(["prompt", "budget"]);
        let e = check(v, &spec, &s).unwrap_err();
        assert!(e.starts_with("input_schema") && e.contains("budget"), "{e}");
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
