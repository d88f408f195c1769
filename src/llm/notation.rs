//! The reply format in words, for servers without native structured output
//! (docs/design/prompts.md#prompt-layout): a JSON Schema rendered as a TypeScript-style type, the notation
//! models read best and the shortest that says the same thing (about a third of the schema's
//! characters). Only what the notation can say exactly is rendered that way; a schema that uses
//! any other keyword (a length limit, a pattern, a `$ref` …) is sent as the JSON Schema itself,
//! so nothing the answer is checked against is ever left unsaid.

use serde_json::{Map, Value};

/// The schema as a type (`{"a": string, "b"?: ("x" | "y")[] | null}`), or `None` when it uses
/// a keyword the notation cannot express.
pub(crate) fn type_notation(schema: &Value) -> Option<String> {
    let mut out = String::new();
    write_type(schema, &mut out)?;
    Some(out)
}

/// Keywords that say nothing the answer is checked against (documentation only).
const IGNORED: [&str; 4] = ["description", "title", "$comment", "examples"];

fn write_type(schema: &Value, out: &mut String) -> Option<()> {
    let map = match schema {
        Value::Bool(true) => {
            out.push_str("any");
            return Some(());
        }
        Value::Object(map) => map,
        _ => return None,
    };
    let keys: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !IGNORED.contains(k))
        .collect();
    if let Some(Value::Array(alternatives)) = map.get("enum") {
        // An enum says every allowed value; a `type` beside it adds nothing.
        if keys.iter().any(|k| !matches!(*k, "enum" | "type")) || alternatives.is_empty() {
            return None;
        }
        return union(alternatives.iter().map(|v| Some(v.to_string())), out);
    }
    if let Some(c) = map.get("const") {
        if keys.iter().any(|k| !matches!(*k, "const" | "type")) {
            return None;
        }
        out.push_str(&c.to_string());
        return Some(());
    }
    if let Some(Value::Array(alternatives)) = map.get("anyOf").or_else(|| map.get("oneOf")) {
        if keys.len() != 1 || alternatives.is_empty() {
            return None;
        }
        return union(
            alternatives.iter().map(|a| {
                let mut s = String::new();
                write_type(a, &mut s)?;
                Some(s)
            }),
            out,
        );
    }
    match map.get("type") {
        Some(Value::String(t)) => write_one(t, map, &keys, out),
        Some(Value::Array(types)) => {
            if types.is_empty() {
                return None;
            }
            union(
                types.iter().map(|t| {
                    let mut s = String::new();
                    write_one(t.as_str()?, map, &keys, &mut s)?;
                    Some(s)
                }),
                out,
            )
        }
        None if keys.is_empty() => {
            out.push_str("any");
            Some(())
        }
        _ => None,
    }
}

/// `a | b | c`, each alternative that is itself a union or an array kept readable.
fn union(alternatives: impl Iterator<Item = Option<String>>, out: &mut String) -> Option<()> {
    let parts = alternatives.collect::<Option<Vec<_>>>()?;
    out.push_str(&parts.join(" | "));
    Some(())
}

/// One JSON type, with the keywords that belong to it.
fn write_one(t: &str, map: &Map<String, Value>, keys: &[&str], out: &mut String) -> Option<()> {
    if let (true, Some(n)) = (t == "string", map.get("minLength")) {
        if keys.iter().any(|k| !matches!(*k, "type" | "minLength")) {
            return None;
        }
        out.push_str(&format!("string ({} characters or more)", n.as_u64()?));
        return Some(());
    }
    let allowed: &[&str] = match t {
        "object" => &["type", "properties", "required", "additionalProperties"],
        "array" => &["type", "items", "minItems", "maxItems"],
        "string" | "number" | "integer" | "boolean" | "null" => &["type"],
        _ => return None,
    };
    if keys.iter().any(|k| !allowed.contains(k)) {
        return None;
    }
    match t {
        "object" => write_object(map, out),
        "array" => {
            // An array that must stay empty is the empty tuple; other length limits follow
            // the type in words (`string[] (at most 3)`), which the notation can still say
            // exactly.
            let count = |k: &str| map.get(k).map(|n| n.as_u64().ok_or(()));
            let (least, most) = match (count("minItems"), count("maxItems")) {
                (Some(Err(())), _) | (_, Some(Err(()))) => return None,
                (l, m) => (l.and_then(Result::ok).unwrap_or(0), m.and_then(Result::ok)),
            };
            if most == Some(0) {
                out.push_str("[]");
                return Some(());
            }
            let bound = match (least, most) {
                (0, None) => String::new(),
                (0, Some(m)) => format!(" (at most {m})"),
                (l, None) => format!(" (at least {l})"),
                (l, Some(m)) if l == m => format!(" (exactly {m})"),
                (l, Some(m)) => format!(" ({l} to {m})"),
            };
            let mut item = String::new();
            match map.get("items") {
                Some(items) => write_type(items, &mut item)?,
                None => item.push_str("any"),
            }
            // Only a union needs brackets: `(a | b)[]`.
            if item.contains(" | ") && !item.starts_with('{') {
                out.push_str(&format!("({item})[]"));
            } else {
                out.push_str(&item);
                out.push_str("[]");
            }
            out.push_str(&bound);
            Some(())
        }
        other => {
            out.push_str(other);
            Some(())
        }
    }
}

fn write_object(map: &Map<String, Value>, out: &mut String) -> Option<()> {
    // Extra fields are refused by our checks unless the schema allows them; either way the
    // notation lists what is expected, and a schema that types the extra fields is not
    // expressible here.
    if map
        .get("additionalProperties")
        .is_some_and(|a| !a.is_boolean())
    {
        return None;
    }
    let required: Vec<&str> = match map.get("required") {
        Some(Value::Array(r)) => r.iter().map(Value::as_str).collect::<Option<_>>()?,
        None => Vec::new(),
        Some(_) => return None,
    };
    let props = match map.get("properties") {
        Some(Value::Object(p)) => p,
        None => {
            out.push_str("object");
            return Some(());
        }
        Some(_) => return None,
    };
    // A required field the schema does not describe would go unsaid.
    if required.iter().any(|r| !props.contains_key(*r)) {
        return None;
    }
    out.push('{');
    for (i, (name, sub)) in props.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&Value::String(name.clone()).to_string());
        if !required.contains(&name.as_str()) {
            out.push('?');
        }
        out.push_str(": ");
        write_type(sub, out)?;
    }
    out.push('}');
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_meeting_schemas_read_as_types() {
        let pm = json!({"type": "object", "properties": {
            "analysis": {"type": "string"},
            "next_action": {"type": "string", "enum": ["CALL_AGENT", "FINISH"]},
            "target_agent": {"anyOf": [{"type": "string", "enum": ["arch", "biz"]}, {"type": "null"}]},
            "prompt_for_agent": {"type": ["string", "null"]}},
            "required": ["analysis", "next_action", "target_agent"], "additionalProperties": false});
        assert_eq!(
            type_notation(&pm).unwrap(),
            r#"{"analysis": string, "next_action": "CALL_AGENT" | "FINISH", "target_agent": "arch" | "biz" | null, "prompt_for_agent"?: string | null}"#
        );
        let agent = json!({"type": "object", "properties": {
            "key_points": {"type": "array", "items": {"type": "string"}},
            "citations": {"type": "array", "items": {"type": "object", "properties": {
                "quote": {"type": "string", "description": "verbatim"}}, "required": ["quote"]}},
            "mixed": {"type": "array", "items": {"type": ["string", "integer"]}},
            "none": {"type": "array", "items": {"type": "string"}, "maxItems": 0}},
            "required": ["key_points", "citations", "mixed", "none"]});
        assert_eq!(
            type_notation(&agent).unwrap(),
            r#"{"key_points": string[], "citations": {"quote": string}[], "mixed": (string | integer)[], "none": []}"#
        );
        let bounded = |min: Option<u64>, max: u64| {
            let mut s = json!({"type": "array", "items": {"type": "string"}, "maxItems": max});
            if let Some(min) = min {
                s["minItems"] = json!(min);
            }
            type_notation(&json!({"anyOf": [s, {"type": "null"}]})).unwrap()
        };
        assert_eq!(bounded(None, 3), "string[] (at most 3) | null");
        assert_eq!(bounded(Some(2), 3), "string[] (2 to 3) | null");
        assert_eq!(bounded(Some(2), 2), "string[] (exactly 2) | null");
    }

    #[test]
    fn a_least_length_is_said_in_words() {
        let s = json!({"type": "object", "properties": {"r": {"type": "string", "minLength": 41}},
            "required": ["r"]});
        assert_eq!(
            type_notation(&s).unwrap(),
            r#"{"r": string (41 characters or more)}"#
        );
    }

    #[test]
    fn what_the_notation_cannot_say_keeps_the_schema() {
        for schema in [
            json!({"type": "string", "maxLength": 20}),
            json!({"type": "array", "items": {"type": "string"}, "maxItems": -3}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/x"}}}),
            json!({"type": "object", "properties": {}, "required": ["ghost"]}),
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            json!({"enum": []}),
            json!({"type": "string", "pattern": "^a"}),
            json!({"allOf": [{"type": "string"}]}),
            json!("string"),
        ] {
            assert_eq!(type_notation(&schema), None, "{schema}");
        }
    }

    #[test]
    fn names_and_values_are_json_quoted() {
        let s = json!({"type": "object", "properties": {"a \"b\"": {"const": "x\ny"}},
            "required": ["a \"b\""]});
        assert_eq!(type_notation(&s).unwrap(), r#"{"a \"b\"": "x\ny"}"#);
    }
}
