//! The PM's answer, PMDecision (docs/design/pm-round.md#pm-round), and its conditional rules.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use serde_json::Value;

use crate::error::Invalid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum NextAction {
    #[serde(rename = "CALL_AGENT")]
    CallAgent,
    // A fan-out (docs/design/agent-turn.md#fan-out): several participants asked at once, one loop each (a
    // plain comment: a documented variant would make the schema a `oneOf`).
    #[serde(rename = "CALL_AGENTS")]
    CallAgents,
    #[serde(rename = "FINISH")]
    Finish,
}

impl NextAction {
    /// Every action.
    pub const ALL: [NextAction; 3] = [
        NextAction::CallAgent,
        NextAction::CallAgents,
        NextAction::Finish,
    ];

    /// Its name as the PM writes it.
    pub fn as_str(self) -> &'static str {
        super::names::wire_name(&self)
    }

    /// Every action's name as the PM writes it (what a PM config's `next_action` enum may hold).
    pub fn names() -> [&'static str; 3] {
        NextAction::ALL.map(NextAction::as_str)
    }
}

/// One call of a CALL_AGENTS fan-out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentCall {
    pub target_agent: String,
    pub prompt_for_agent: String,
}

/// The PM's only valid output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PmDecision {
    #[serde(default)]
    pub analysis: String,
    pub next_action: NextAction,
    #[serde(default)]
    pub target_agent: Option<String>,
    #[serde(default)]
    pub prompt_for_agent: Option<String>,
    #[serde(default)]
    pub final_report: Option<String>,
    /// With CALL_AGENTS: the calls, in the order they are merged (docs/design/agent-turn.md#fan-out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<AgentCall>,
    /// Questions of the whiteboard this step's PM marks answered (any step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered_questions: Vec<AnsweredQuestion>,
    /// With FINISH: the decision itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// With FINISH: a short verdict per option and evaluation dimension.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub option_assessments: Vec<OptionAssessment>,
    /// While reviewers' objections are open: the PM's answer to each (docs/design/review.md#pm-answer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objection_responses: Vec<super::ObjectionResponse>,
}

/// One question the PM marks answered (docs/design/whiteboard.md#questions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnsweredQuestion {
    /// The question's id (`Q2`) or its exact text.
    pub question: String,
    /// One or two sentences.
    pub answer: String,
    /// The participants whose answers settle it.
    #[serde(default)]
    pub by: Vec<String>,
}

/// How sure the PM is of its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    #[serde(alias = "Low", alias = "LOW")]
    Low,
    #[serde(alias = "Medium", alias = "MEDIUM")]
    Medium,
    #[serde(alias = "High", alias = "HIGH")]
    High,
}

impl Confidence {
    /// Its name as serde writes it (docs/design/flow.md#documents).
    pub fn as_str(self) -> &'static str {
        super::names::wire_name(&self)
    }
}

/// The PM's decision on FINISH (docs/design/report.md#report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub choice: String,
    pub confidence: Confidence,
    /// What would make the meeting reconsider.
    #[serde(default)]
    pub revisit_if: String,
    /// With a council (docs/design/council.md#report): why the decision is not the council's
    /// leading choice, when it is not. Offered only in a meeting with a council.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against_council: Option<String>,
    /// With the choice "none of these": why no option can work, in a sentence
    /// (docs/design/pm-round.md#closing-round). Offered only in a meeting with options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_none: Option<String>,
}

/// One cell of the options × evaluation-dimensions table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptionAssessment {
    pub option: String,
    pub dimension: String,
    /// A short verdict.
    pub assessment: String,
}

/// PMDecision's shape, derived from its one definition (the struct above: serde's names,
/// schemars' schema): the schema the meeting's own PM schema is made from
/// (docs/design/prompts.md#structured-output), and the field lists the loader's PM config rules and the
/// decision checks use (docs/design/pm-round.md#pm-round). Nothing else spells PMDecision's fields.
pub(crate) struct DecisionShape {
    /// The schema in the plain form every model is sent: `$ref`s inlined, every object closed
    /// with every property required, no titles, descriptions or defaults.
    pub schema: Value,
    /// Every field, in the struct's order.
    pub fields: Vec<String>,
    /// The fields that hold a string (or null): the ones a PM config may type and require.
    pub text_fields: Vec<String>,
}

/// The one [`DecisionShape`], made on first use.
pub(crate) fn decision_shape() -> &'static DecisionShape {
    static SHAPE: std::sync::LazyLock<DecisionShape> = std::sync::LazyLock::new(|| {
        let generated = serde_json::to_value(schemars::schema_for!(PmDecision))
            .expect("the PMDecision schema serialises");
        let defs = generated["$defs"].as_object().cloned().unwrap_or_default();
        let schema = plain(&generated, &defs);
        let props = schema["properties"]
            .as_object()
            .expect("PMDecision has properties");
        let admits_string = |p: &Value| match &p["type"] {
            Value::String(t) => t == "string",
            Value::Array(ts) => ts.iter().any(|t| t == "string"),
            _ => false,
        };
        DecisionShape {
            fields: props.keys().cloned().collect(),
            text_fields: props
                .iter()
                .filter(|(_, p)| admits_string(p))
                .map(|(k, _)| k.clone())
                .collect(),
            schema,
        }
    });
    &SHAPE
}

/// A schemars schema of any document a model answers with, in the plain form models are sent
/// (see [`DecisionShape`]).
pub(crate) fn plain_schema(generated: &Value) -> Value {
    let defs = generated["$defs"].as_object().cloned().unwrap_or_default();
    plain(generated, &defs)
}

/// `schema` (schemars' output) in the plain form models are sent (see [`DecisionShape`]).
fn plain(schema: &Value, defs: &serde_json::Map<String, Value>) -> Value {
    let Some(obj) = schema.as_object() else {
        return schema.clone();
    };
    if let Some(name) = obj.get("$ref").and_then(Value::as_str) {
        let name = name.trim_start_matches("#/$defs/");
        return plain(&defs[name], defs);
    }
    if let Some(Value::Array(alternatives)) = obj.get("anyOf") {
        let alternatives: Vec<Value> = alternatives.iter().map(|a| plain(a, defs)).collect();
        return serde_json::json!({"anyOf": alternatives});
    }
    if let Some(Value::Object(props)) = obj.get("properties") {
        let props: serde_json::Map<String, Value> = props
            .iter()
            .map(|(k, v)| (k.clone(), plain(v, defs)))
            .collect();
        let required: Vec<&String> = props.keys().collect();
        return serde_json::json!({"type": "object", "properties": props, "required": required,
            "additionalProperties": false});
    }
    let mut out = serde_json::Map::new();
    for key in ["type", "enum", "items"] {
        if let Some(v) = obj.get(key) {
            let v = if key == "items" {
                plain(v, defs)
            } else {
                v.clone()
            };
            out.insert(key.to_string(), v);
        }
    }
    Value::Object(out)
}

fn blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.trim().is_empty())
}

/// Fewest letters or digits a required text of the PM needs to be more than a stand-in.
const MIN_REAL_CHARS: usize = 4;

/// Stock stand-ins a model writes where content should be (compared lower-case, letters and
/// digits only), the PM's action names among them (a small model's question "CALL_AGENTS").
const FILLERS: [&str; 15] = [
    "callagent",
    "callagents",
    "call agent",
    "call agents",
    "finish",
    "tbd",
    "todo",
    "none",
    "null",
    "string",
    "text",
    "placeholder",
    "question",
    "report",
    "lorem ipsum",
];

/// Whether `text` only stands in for content: punctuation or an ellipsis, fewer than
/// `MIN_REAL_CHARS` letters or digits, a template slot (`<question>`), or a stock filler
/// ("TBD", "N/A", "string").
pub(crate) fn is_placeholder(text: &str) -> bool {
    let t = text.trim();
    let real: String = t
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ')
        .flat_map(char::to_lowercase)
        .collect();
    let real = real.split_whitespace().collect::<Vec<_>>().join(" ");
    // A CJK character is a word of its own: "选哪个？" is a real question.
    let count: usize = real
        .chars()
        .filter(|c| c.is_alphanumeric())
        .map(|c| if c.is_ascii() { 1 } else { 2 })
        .sum();
    count < MIN_REAL_CHARS
        || (t.starts_with('<') && t.ends_with('>') && !t[1..].contains('<'))
        || FILLERS.contains(&real.as_str())
}

/// Words that answer a yes/no question but say nothing on their own (compared lower-case,
/// letters only).
const BARE_REPLIES: [&str; 12] = [
    "yes", "no", "yes no", "true", "false", "maybe", "ok", "okay", "agreed", "correct", "unknown",
    "none",
];

/// Why `text` is not content where a finding, a risk or a question is expected, or `None`
/// when it is (docs/design/pm-round.md#content): a placeholder ([`is_placeholder`]), a bare id
/// (`Q1`, `E3`), a bare yes or no, only the name of one of `names` (the participants), or no
/// word at all (`123456`).
/// The one rule for the PM's questions and the agents' findings, risks and questions; the
/// reason is what the ask loop's retry tells the model.
pub(crate) fn not_content(text: &str, names: &[String]) -> Option<String> {
    let t = text.trim();
    let words: String = t
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .flat_map(char::to_lowercase)
        .collect();
    let words = words.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = crate::text::cut(t, 60);
    let is_id = |w: &str| {
        let mut cs = w.chars();
        matches!(cs.next(), Some('q' | 'e')) && w.len() > 1 && cs.all(|c| c.is_ascii_digit())
    };
    if !words.is_empty() && words.split(' ').all(is_id) {
        return Some(format!(
            "{shown:?} is only an id, not content: write the finding, risk or question itself in words"
        ));
    }
    if BARE_REPLIES.contains(&words.as_str()) {
        return Some(format!(
            "{shown:?} is a bare yes/no, not content: write what is true and why, in a sentence"
        ));
    }
    let name_words = |n: &str| {
        let w: String = n
            .chars()
            .map(|c| if c.is_alphanumeric() { c } else { ' ' })
            .flat_map(char::to_lowercase)
            .collect();
        w.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    if !words.is_empty() && names.iter().any(|n| name_words(n) == words) {
        return Some(format!(
            "{shown:?} is only a participant's name, not content: write the finding, risk or question itself"
        ));
    }
    if is_placeholder(t) {
        return Some(format!(
            "{shown:?} is a placeholder, not content: write the specific text (at least {MIN_REAL_CHARS} letters)"
        ));
    }
    if !t.chars().any(char::is_alphabetic) {
        return Some(format!(
            "{shown:?} has no words, not content: write the finding, risk or question itself in words"
        ));
    }
    None
}

impl PmDecision {
    /// The conditional rules (docs/design/pm-round.md#pm-round): CALL_AGENT needs a target and a real
    /// question; FINISH needs a report with both its parts (Executive Summary and
    /// Recommendation, read as the report reads them); a target or question beside it is
    /// ignored. A placeholder (`"..."`, `"TBD"`) is not content.
    pub fn validate(&self) -> Result<(), Invalid> {
        match self.next_action {
            NextAction::CallAgent => {
                if blank(&self.target_agent) {
                    return Err(Invalid::at(
                        "target_agent",
                        "is required (a participant name) when next_action is CALL_AGENT",
                    ));
                }
                if blank(&self.prompt_for_agent) {
                    return Err(Invalid::at(
                        "prompt_for_agent",
                        "is required (a specific question) when next_action is CALL_AGENT",
                    ));
                }
                let prompt = self.prompt_for_agent.as_deref().unwrap_or_default();
                if let Some(why) = not_content(prompt, &[]) {
                    return Err(Invalid::at("prompt_for_agent", why));
                }
            }
            NextAction::CallAgents => {
                if self.calls.is_empty() {
                    return Err(Invalid::at(
                        "calls",
                        "is required (2 or more {target_agent, prompt_for_agent}) when next_action is CALL_AGENTS",
                    ));
                }
                for (i, call) in self.calls.iter().enumerate() {
                    if call.target_agent.trim().is_empty() {
                        return Err(Invalid::at(
                            format!("calls[{i}].target_agent"),
                            "is required (a participant name)",
                        ));
                    }
                    if let Some(why) = not_content(&call.prompt_for_agent, &[]) {
                        return Err(Invalid::at(format!("calls[{i}].prompt_for_agent"), why));
                    }
                }
            }
            NextAction::Finish => {
                // A target or question beside a FINISH is ignored, not refused: small models
                // fill every field, and the report says what was meant (a retry would only
                // cost a call).
                if blank(&self.final_report) {
                    return Err(Invalid::at(
                        "final_report",
                        "is required (Markdown with an executive summary and a recommendation) when next_action is FINISH",
                    ));
                }
                let report = self.final_report.as_deref().unwrap_or_default();
                let (summary, recommendation) = crate::text::markdown::labelled_parts(report);
                let missing: Vec<&str> = [
                    ("### Executive Summary", summary),
                    ("### Recommendation", recommendation),
                ]
                .into_iter()
                .filter(|(_, text)| is_placeholder(text))
                .map(|(label, _)| label)
                .collect();
                if !missing.is_empty() {
                    return Err(Invalid::at(
                        "final_report",
                        format!(
                            "lacks {}: write Markdown with two parts, \"### Executive Summary\" and \"### Recommendation\", each with its real content",
                            missing
                                .iter()
                                .map(|m| format!("its {m:?} part"))
                                .collect::<Vec<_>>()
                                .join(" and ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    #[test]
    fn pm_decision_conditional_rules() {
        let call = |t: Option<&str>, p: Option<&str>| PmDecision {
            analysis: String::new(),
            next_action: NextAction::CallAgent,
            target_agent: t.map(str::to_string),
            prompt_for_agent: p.map(str::to_string),
            final_report: None,
            calls: vec![],
            answered_questions: vec![],
            decision: None,
            option_assessments: vec![],
            objection_responses: vec![],
        };
        assert!(call(Some("arch"), Some("How long?")).validate().is_ok());
        assert_eq!(
            call(None, Some("q")).validate().unwrap_err().path,
            "target_agent"
        );
        assert_eq!(
            call(Some("arch"), Some("  ")).validate().unwrap_err().path,
            "prompt_for_agent"
        );
        let fin = |r: Option<&str>| PmDecision {
            analysis: String::new(),
            next_action: NextAction::Finish,
            target_agent: None,
            prompt_for_agent: None,
            final_report: r.map(str::to_string),
            calls: vec![],
            answered_questions: vec![],
            decision: None,
            option_assessments: vec![],
            objection_responses: vec![],
        };
        let report =
            "### Executive Summary\nKeep Python.\n\n### Recommendation\nRevisit in 6 months.";
        assert!(fin(Some(report)).validate().is_ok());
        assert!(
            fin(Some("**摘要：** 保留 Python 方案\n**建议：** 半年后复查"))
                .validate()
                .is_ok()
        );
        assert_eq!(fin(None).validate().unwrap_err().path, "final_report");
    }

    /// A placeholder answer is not an answer (docs/design/pm-round.md#pm-round: a placeholder is no content).
    #[test]
    fn pm_decision_placeholders_are_invalid() {
        for text in [
            "...",
            "…",
            " - ",
            "?",
            "TBD",
            "N/A",
            "<question>",
            "string",
            "Ok.",
        ] {
            assert!(is_placeholder(text), "{text:?}");
        }
        for text in [
            "Cost?",
            "What does the cluster cost?",
            "成本是多少？",
            "选哪个？",
            "Keep Python.",
        ] {
            assert!(!is_placeholder(text), "{text:?}");
        }
        let decision = |v: serde_json::Value| -> PmDecision { serde_json::from_value(v).unwrap() };
        let e = decision(json!({"next_action": "CALL_AGENT", "target_agent": "arch",
            "prompt_for_agent": "..."}))
        .validate()
        .unwrap_err();
        assert_eq!(e.path, "prompt_for_agent");
        assert!(e.message.contains("placeholder"), "{}", e.message);
        let e = decision(json!({"next_action": "FINISH", "target_agent": "...",
            "prompt_for_agent": "...", "final_report": "..."}))
        .validate()
        .unwrap_err();
        assert_eq!(e.path, "final_report");
        // A stray target or question beside a FINISH with its report is ignored.
        decision(json!({"next_action": "FINISH", "target_agent": "arch",
            "prompt_for_agent": "Why?",
            "final_report": "### Executive Summary\nKeep it.\n### Recommendation\nTune it."}))
        .validate()
        .unwrap();
        for (report, lacks) in [
            ("...", "### Recommendation"),
            ("We should keep Python for now.", "### Recommendation"),
            (
                "### Executive Summary\n...\n### Recommendation\nKeep Python.",
                "### Executive Summary",
            ),
            (
                "### Executive Summary\nKeep Python.\n### Recommendation\n…",
                "### Recommendation",
            ),
        ] {
            let e = decision(json!({"next_action": "FINISH", "target_agent": null,
                "final_report": report}))
            .validate()
            .unwrap_err();
            assert_eq!(e.path, "final_report");
            assert!(
                e.message.contains(&format!("its {lacks:?} part")),
                "{report:?}: {}",
                e.message
            );
        }
    }

    /// A decision's confidence is one of three words; a model's capitalised spelling is read,
    /// anything else is an invalid answer.
    #[test]
    fn confidence_is_a_closed_set() {
        for (word, c) in [
            ("low", Confidence::Low),
            ("Medium", Confidence::Medium),
            ("HIGH", Confidence::High),
        ] {
            let d: Decision =
                serde_json::from_value(json!({"choice": "B", "confidence": word})).unwrap();
            assert_eq!(d.confidence, c);
            assert_eq!(d.revisit_if, "");
        }
        assert!(serde_json::from_value::<Decision>(
            json!({"choice": "B", "confidence": "certain"})
        )
        .is_err());
        let d: PmDecision = serde_json::from_value(json!({"next_action": "FINISH",
            "final_report": "r", "answered_questions": [{"question": "Q1", "answer": "Yes."}]}))
        .unwrap();
        assert_eq!(d.answered_questions[0].by, Vec::<String>::new());
    }

    /// One rule for what is not content: a bare id, a bare yes or no, a participant's name,
    /// a placeholder; each with its reason. Short real text passes.
    #[test]
    fn what_is_not_content() {
        let names = vec!["arch".to_string(), "business-analyst".to_string()];
        for (text, why) in [
            ("Q1", "only an id"),
            ("Q3.", "only an id"),
            ("q12", "only an id"),
            ("E4", "only an id"),
            ("No", "bare yes/no"),
            ("Yes.", "bare yes/no"),
            ("yes/no", "bare yes/no"),
            ("Correct", "bare yes/no"),
            ("arch", "participant's name"),
            ("Business-Analyst", "participant's name"),
            ("business analyst", "participant's name"),
            ("...", "placeholder"),
            ("TBD", "placeholder"),
            ("CALL_AGENTS", "placeholder"),
            ("Call agent.", "placeholder"),
            ("123456", "no words"),
            ("12.50 %", "no words"),
        ] {
            let got = not_content(text, &names).unwrap_or_default();
            assert!(got.contains(why), "{text:?}: {got}");
        }
        for text in [
            "Q1 is answered by the cost table.",
            "No budget for a migration this year.",
            "arch prefers option B",
            "Cost?",
            "选哪个？",
            "Quorum",
            "Is 12 ms fast enough?",
        ] {
            assert_eq!(not_content(text, &names), None, "{text:?}");
        }
    }
}
