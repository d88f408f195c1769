//! Asking a waiting person where the user is (docs/design/mcp.md#elicitation): the form an
//! MCP client shows for a meeting that waits for a person — `waiting.json`'s answer template
//! flattened to the primitives form-mode elicitation allows — and the answer made back from
//! what the person filled in. The same form serves both eras: an `elicitation/create` request
//! during the call (handshake era), or an `input_required` result whose retry carries the
//! answer (2026-07-28), with the run and the question it answers in `requestState`.

use serde_json::{json, Map, Value};

use crate::model::Waiting;

/// The key of the one input request an `input_required` result carries.
pub const INPUT_KEY: &str = "answer";

/// The text fields of an answer besides `response`: one item per line in the form.
const LISTS: [(&str, &str); 3] = [
    ("key_points", "Key points"),
    ("risks", "Risks"),
    ("recommendations", "Recommendations"),
];

/// Whether a client's capabilities allow a form-mode elicitation: `elicitation` declared,
/// empty (form only, for compatibility) or naming `form`.
pub fn form_allowed(capabilities: Option<&Value>) -> bool {
    match capabilities.and_then(|c| c.get("elicitation")) {
        Some(Value::Object(modes)) => modes.is_empty() || modes.contains_key("form"),
        _ => false,
    }
}

/// The `elicitation/create` params for a person the meeting waits for: who asks what, the
/// answer's problem after an unusable one (the previous answer filled in as defaults), and a
/// flat schema of strings — the answer, its key points, risks and recommendations one per
/// line, and one optional quote from a document the person may cite.
pub fn form(w: &Waiting) -> Value {
    let mut message = format!(
        "A decision meeting asks {} ({}): {}",
        w.agent, w.role, w.question
    );
    if let Some(problem) = &w.problem {
        message.push_str(&format!(
            "\n\nYour last answer could not be used: {problem}"
        ));
    }
    let previous = |key: &str| -> Option<String> {
        match w.answer_template.get(key)? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Array(items) if !items.is_empty() => Some(
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        }
    };
    let mut props = Map::new();
    let mut field = |key: &str, mut schema: Value| {
        if let Some(d) = previous(key) {
            schema["default"] = json!(d);
        }
        props.insert(key.to_string(), schema);
    };
    field(
        "response",
        json!({"type": "string", "title": "Your answer", "minLength": 1,
               "description": "Your answer to the question, in your own words."}),
    );
    for (key, title) in LISTS {
        field(
            key,
            json!({"type": "string", "title": title,
                   "description": "Optional; one per line."}),
        );
    }
    if !w.documents.is_empty() {
        let ids: Vec<&str> = w.documents.iter().map(|d| d.document_id.as_str()).collect();
        let names: Vec<String> = w
            .documents
            .iter()
            .map(|d| format!("{}: {}", d.document_id, d.source_path))
            .collect();
        props.insert(
            "document".into(),
            json!({"type": "string", "title": "Document you quote", "enum": ids,
                   "description": format!("Optional; the document your quote is from ({}).", names.join("; "))}),
        );
        props.insert(
            "quote".into(),
            json!({"type": "string", "title": "Quote",
                   "description": "Optional; words copied exactly from that document, backing your answer."}),
        );
    }
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": props, "required": ["response"]},
    })
}

/// What an `elicitation/create` came back with.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The person's answer, as the JSON object `meeting --answer` reads.
    Answer(Value),
    /// Declined, cancelled, or nothing usable came back: the meeting stays waiting.
    NoAnswer,
}

/// The answer an `ElicitResult` carries: `accept` with its content made into an
/// AgentTurnResult object (the meeting checks it as any answer); anything else, none.
pub fn reply(result: &Value, w: &Waiting) -> Reply {
    if result.get("action").and_then(Value::as_str) != Some("accept") {
        return Reply::NoAnswer;
    }
    let content = result.get("content").cloned().unwrap_or(json!({}));
    let text = |key: &str| -> String {
        content
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let mut answer = Map::new();
    answer.insert("response".into(), json!(text("response")));
    for (key, _) in LISTS {
        let items: Vec<&str> = content
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        answer.insert(key.into(), json!(items));
    }
    let quote = text("quote");
    let mut citations = Vec::new();
    if !quote.is_empty() {
        let named = text("document");
        // One document: a quote is from it, named or not.
        let doc = match (named.as_str(), w.documents.as_slice()) {
            ("", [only]) => Some(only),
            (id, docs) => docs.iter().find(|d| d.document_id == id),
        };
        citations.push(json!({
            "document_id": doc.map_or(named.clone(), |d| d.document_id.clone()),
            "source_path": doc.map(|d| d.source_path.clone()).unwrap_or_default(),
            "quote": quote,
        }));
    }
    answer.insert("citations".into(), json!(citations));
    Reply::Answer(Value::Object(answer))
}

/// The `requestState` of an `input_required` result: the run and the call number the answer
/// takes. It grants nothing a `resume` call could not do: the run folder is checked as any
/// resume's, and a state whose call is no longer the one waiting is refused (an answer given
/// twice).
pub fn state(run_id: &str, w: &Waiting) -> String {
    format!("v1:{run_id}:{}", w.call)
}

/// The run id and call number of a `requestState`, or `None` for one this server did not make.
pub fn parse_state(s: &str) -> Option<(String, u64)> {
    let rest = s.strip_prefix("v1:")?;
    let (run, call) = rest.rsplit_once(':')?;
    let call = call.parse().ok()?;
    (!run.is_empty()).then(|| (run.to_string(), call))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WaitingDocument;

    fn waiting(docs: &[(&str, &str)]) -> Waiting {
        Waiting {
            waiting_version: 1,
            agent: "ana".into(),
            role: "Ops lead".into(),
            question: "Who gets paged?".into(),
            asked_at: "t".into(),
            call: 3,
            why: String::new(),
            documents: docs
                .iter()
                .map(|(id, p)| WaitingDocument {
                    document_id: id.to_string(),
                    source_path: p.to_string(),
                    purpose: String::new(),
                })
                .collect(),
            problem: None,
            answer_template: json!({"response": "", "key_points": [], "risks": [],
                                    "recommendations": [], "citations": []}),
            answer_text: String::new(),
            screen: String::new(),
        }
    }

    /// Form mode allows only a flat object of primitives: every property is a string (an
    /// enum is a string), and nothing nests.
    #[test]
    fn the_form_is_flat_primitives_with_the_answer_required() {
        let f = form(&waiting(&[("D1", "docs/a.md"), ("D2", "docs/b.md")]));
        let schema = &f["requestedSchema"];
        assert_eq!(schema["required"], json!(["response"]));
        for (key, p) in schema["properties"].as_object().unwrap() {
            assert_eq!(p["type"], "string", "{key}: {p}");
            assert!(p.get("properties").is_none() && p.get("items").is_none());
        }
        assert_eq!(
            schema["properties"]["document"]["enum"],
            json!(["D1", "D2"])
        );
        assert!(f["message"].as_str().unwrap().contains("Who gets paged?"));
        let none = form(&waiting(&[]));
        assert!(none["requestedSchema"]["properties"].get("quote").is_none());
    }

    #[test]
    fn an_unusable_answer_is_asked_again_with_its_problem_and_values() {
        let mut w = waiting(&[]);
        w.problem = Some("response: empty".into());
        w.answer_template["response"] = json!("Priya");
        w.answer_template["risks"] = json!(["one", "two"]);
        let f = form(&w);
        assert!(f["message"].as_str().unwrap().contains("response: empty"));
        let props = &f["requestedSchema"]["properties"];
        assert_eq!(props["response"]["default"], "Priya");
        assert_eq!(props["risks"]["default"], "one\ntwo");
    }

    #[test]
    fn an_accepted_form_becomes_an_answer_and_anything_else_none() {
        let w = waiting(&[("D1", "docs/a.md")]);
        let got = reply(
            &json!({"action": "accept", "content": {"response": " Priya ",
                "risks": "nights\n\n weekends ", "quote": "Priya is on call"}}),
            &w,
        );
        let Reply::Answer(a) = got else {
            panic!("{got:?}")
        };
        assert_eq!(a["response"], "Priya");
        assert_eq!(a["risks"], json!(["nights", "weekends"]));
        assert_eq!(a["key_points"], json!([]));
        assert_eq!(
            a["citations"],
            json!([{"document_id": "D1", "source_path": "docs/a.md", "quote": "Priya is on call"}])
        );
        for other in [
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
            json!({"content": {"response": "x"}}),
        ] {
            assert_eq!(reply(&other, &w), Reply::NoAnswer, "{other}");
        }
        // Content of the wrong types is no answer text, not a crash.
        let Reply::Answer(a) = reply(
            &json!({"action": "accept", "content": {"response": 3, "risks": ["x"]}}),
            &w,
        ) else {
            panic!()
        };
        assert_eq!(a["response"], "");
        assert_eq!(a["risks"], json!([]));
    }

    #[test]
    fn form_capability_and_state_round_trip() {
        assert!(form_allowed(Some(&json!({"elicitation": {}}))));
        assert!(form_allowed(Some(
            &json!({"elicitation": {"form": {}, "url": {}}})
        )));
        assert!(!form_allowed(Some(&json!({"elicitation": {"url": {}}}))));
        assert!(!form_allowed(Some(&json!({"sampling": {}}))));
        assert!(!form_allowed(None));
        let w = waiting(&[]);
        let s = state("20261204-abc:def", &w);
        assert_eq!(parse_state(&s), Some(("20261204-abc:def".into(), 3)));
        for bad in ["", "v1:", "v1:x", "v2:x:3", "v1::3", "v1:x:three"] {
            assert_eq!(parse_state(bad), None, "{bad}");
        }
    }
}
