//! Tolerant parsing of a model's reply into one JSON object (docs/design/prompts.md#structured-output).
//!
//! Models wrap JSON in code fences, chat before it, or leave trailing commas. We forgive those
//! three things only; everything else is an error worded so it can be sent back to the model.

use serde_json::Value;

/// Parse the model's text into a JSON object: strip code fences, take the outermost `{...}`,
/// drop trailing commas outside strings, then parse strictly.
pub fn parse_json_reply(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("the reply was empty; answer with exactly one JSON object".to_string());
    }
    // A reply that is already one JSON object is taken as it is: its strings may hold code
    // fences of their own (a Markdown report with a SQL block), which must not be "stripped".
    if trimmed.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
            return Ok(v);
        }
    }
    let unfenced = strip_fences(trimmed);
    let Some(object) = outermost_object(unfenced) else {
        return Err(format!(
            "the reply contains no JSON object (it starts with {:?}); answer with exactly one JSON object",
            crate::text::cut(unfenced, 61)
        ));
    };
    let cleaned = drop_trailing_commas(object);
    match serde_json::from_str::<Value>(&cleaned) {
        Ok(v) => Ok(v),
        Err(e) => Err(format!(
            "the reply is not valid JSON: {} at line {} column {}; answer with exactly one valid JSON object",
            describe(&e),
            e.line(),
            e.column()
        )),
    }
}

fn describe(e: &serde_json::Error) -> String {
    // serde_json appends " at line L column C" itself; we report the position once.
    let s = e.to_string();
    match s.find(" at line ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The inside of the first fenced block (```` ```json ... ``` ````) when the text has one
/// before its first `{` (a fence after that is inside the JSON, not around it).
pub(crate) fn strip_fences(text: &str) -> &str {
    let Some(open) = text.find("```") else {
        return text;
    };
    if text.find('{').is_some_and(|brace| brace < open) {
        return text;
    }
    let after = &text[open + 3..];
    // Skip the info string (`json`, `JSON`, ...) up to the end of the fence line.
    let body_start = after.find('\n').map(|i| i + 1).unwrap_or(after.len());
    let body = &after[body_start..];
    // The closing fence is the last one: the JSON inside may hold fences in its strings.
    match body.rfind("```") {
        Some(close) => body[..close].trim(),
        None => body.trim(),
    }
}

/// From the first `{` to its matching `}`, aware of strings and escapes. When the object is
/// never closed (a truncated reply) the rest of the text is returned so the parser can say
/// where it ends.
pub(crate) fn outermost_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(&text[start..=i]);
                }
            }
            _ => {}
        }
    }
    Some(&text[start..])
}

/// Remove commas directly followed (after whitespace) by `}` or `]`, outside strings.
pub(crate) fn drop_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        if c == '"' {
            in_string = true;
        } else if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_object() {
        assert_eq!(parse_json_reply(r#"{"a":1}"#).unwrap(), json!({"a":1}));
    }

    #[test]
    fn fenced_with_prose() {
        let t = "Sure! Here it is:\n```json\n{\"a\": [1, 2]}\n```\nHope that helps {not json}";
        assert_eq!(parse_json_reply(t).unwrap(), json!({"a":[1,2]}));
    }

    #[test]
    fn prose_around_object() {
        let t = "The answer is {\"a\": \"}\"} and that's it.";
        assert_eq!(parse_json_reply(t).unwrap(), json!({"a":"}"}));
    }

    #[test]
    fn trailing_commas_outside_strings_only() {
        let t = r#"{"a": [1, 2,], "b": "x,]", "c": {"d": 1,},}"#;
        assert_eq!(
            parse_json_reply(t).unwrap(),
            json!({"a":[1,2],"b":"x,]","c":{"d":1}})
        );
    }

    #[test]
    fn escaped_quote_in_string() {
        let t = r#"{"a": "say \"hi,}\"",}"#;
        assert_eq!(parse_json_reply(t).unwrap(), json!({"a":"say \"hi,}\""}));
    }

    #[test]
    fn empty_reply() {
        let e = parse_json_reply("  \n ").unwrap_err();
        assert!(e.contains("empty"), "{e}");
    }

    #[test]
    fn no_object() {
        let e = parse_json_reply("I cannot help with that").unwrap_err();
        assert!(e.contains("no JSON object"), "{e}");
    }

    #[test]
    fn truncated_object_names_position() {
        let e = parse_json_reply("{\"a\": \"unterminated").unwrap_err();
        assert!(
            e.starts_with("the reply is not valid JSON: EOF while parsing a string at line 1"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod fence_in_string_tests {
    use super::*;

    #[test]
    fn fences_inside_json_strings_are_kept() {
        let report = "### Executive Summary\nUse the replica.\n```sql\nSELECT 1;\n```\n### Recommendation\nDo it.";
        let reply =
            serde_json::json!({"next_action": "FINISH", "final_report": report}).to_string();
        let v = parse_json_reply(&reply).unwrap();
        assert_eq!(v["final_report"], report);
        // The same object with chat around it and a trailing comma.
        let chatty = format!(
            "Here you go: {},",
            reply.trim_end_matches('}').to_string() + ",}"
        );
        assert_eq!(parse_json_reply(&chatty).unwrap()["final_report"], report);
        // And fenced as a whole.
        let fenced = format!("```json\n{reply}\n```");
        assert_eq!(parse_json_reply(&fenced).unwrap()["final_report"], report);
    }
}
