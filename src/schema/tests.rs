use serde_json::{json, Value};

use super::{check, validate};

/// Compiled schemas are kept per schema: each value is still checked against its own.
#[test]
fn each_schema_keeps_its_own_rules() {
    let needs = |field: &str| json!({"type": "object", "required": [field]});
    let value = json!({"a": 1});
    for _ in 0..2 {
        assert!(validate(&value, &needs("a")).is_ok());
        let e = validate(&value, &needs("b")).unwrap_err();
        assert!(e.contains("\"b\" is a required property"), "{e}");
    }
    assert!(validate(&value, &json!({"type": 3})).is_err());
}

/// Every violation is listed with the JSON path of the wrong value, in the wording models
/// have been answering to.
#[test]
fn errors_name_the_path_of_each_wrong_value() {
    let schema = json!({"type": "object", "additionalProperties": false,
        "properties": {"response": {"type": "string"},
            "key_points": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "a/b": {"type": ["string", "null"]}},
        "required": ["response", "risks"]});
    let e = validate(
        &json!({"response": 7, "key_points": ["a", 3, "c"], "extra": 1, "a/b": 2}),
        &schema,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "\"risks\" is a required property; at /response: 7 is not of type \"string\"; \
         at /key_points: [\"a\",3,\"c\"] has more than 2 items; \
         at /key_points/1: 3 is not of type \"string\"; \
         at /a~1b: 2 is not of types \"null\", \"string\"; \
         Additional properties are not allowed ('extra' was unexpected)"
    );
}

/// What the checker refuses, by the path of the keyword in the schema.
#[test]
fn unsupported_or_malformed_keywords_are_refused_by_path() {
    let cases = [
        (json!({"type": "objekt"}), "type: \"objekt\" is not a type"),
        (json!({"type": []}), "type: expected a type name"),
        (
            json!({"type": ["string", "string"]}),
            "type: \"string\" is listed twice",
        ),
        (
            json!({"properties": {"a": {"if": {"type": "string"}}}}),
            "properties.a.if: unsupported JSON Schema keyword (supported: type, enum",
        ),
        (
            json!({"nullable": true}),
            "nullable: unsupported JSON Schema keyword",
        ),
        (
            json!({"items": [{"type": "string"}]}),
            "items: expected one schema for every item",
        ),
        (
            json!({"anyOf": []}),
            "anyOf: expected a non-empty array of schemas",
        ),
        (json!({"anyOf": [{}, 3]}), "anyOf[1]: expected a schema"),
        (
            json!({"required": ["a", 1]}),
            "required[1]: expected a string",
        ),
        (
            json!({"maxItems": -1}),
            "maxItems: expected a non-negative integer",
        ),
        (
            json!({"pattern": "(?<=a)b"}),
            "pattern: \"(?<=a)b\" is not a regular expression",
        ),
        (
            json!({"$ref": "https://example.com/s.json"}),
            "$ref: \"https://example.com/s.json\" does not point inside",
        ),
        (
            json!({"$ref": "#/$defs/missing"}),
            "does not point inside this schema",
        ),
        (
            json!({"$defs": {"a": {"minimum": "1"}}, "$ref": "#/$defs/a"}),
            "$defs.a.minimum: expected a number",
        ),
        (json!("object"), "expected a schema"),
    ];
    let mut failed = Vec::new();
    for (schema, expected) in cases {
        match check(&schema) {
            Err(e) if e.to_string().starts_with(expected) || e.to_string().contains(expected) => {}
            other => failed.push(format!("{schema}: expected {expected:?}, got {other:?}")),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    check(
        &json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "t",
        "description": "d", "format": "date", "examples": [1], "default": 1}),
    )
    .unwrap();
}

/// A recursive schema validates nested values, and a `$ref` cycle that never reaches the
/// value ends with an error instead of running forever.
#[test]
fn references_recurse_and_cycles_end() {
    let tree = json!({"$defs": {"node": {"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "children": {"type": "array",
            "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"});
    validate(
        &json!({"name": "a", "children": [{"name": "b", "children": []}]}),
        &tree,
    )
    .unwrap();
    let e = validate(
        &json!({"name": "a", "children": [{"children": [{"name": 1}]}]}),
        &tree,
    )
    .unwrap_err();
    assert!(
        e.contains("at /children/0: \"name\" is a required property"),
        "{e}"
    );
    assert!(
        e.contains("at /children/0/children/0/name: 1 is not of type"),
        "{e}"
    );
    let e = validate(&json!(1), &json!({"$ref": "#"})).unwrap_err();
    assert!(e.contains("nests too deep"), "{e}");
}

/// Schemas and values on which the validator and the `jsonschema` crate (draft 2020-12) must
/// agree: valid or not, and the same messages at the same paths.
fn table() -> Vec<(Value, Vec<Value>)> {
    let pm = json!({"type": "object", "additionalProperties": false,
        "properties": {
            "analysis": {"type": "string", "minLength": 1},
            "next_action": {"type": "string", "enum": ["CALL_AGENT", "CALL_AGENTS", "FINISH", "ASK"]},
            "target_agents": {"type": ["array", "null"], "items": {"type": "string", "enum": ["arch", "biz"]},
                "minItems": 1, "maxItems": 2, "uniqueItems": true},
            "prompt_for_agent": {"type": ["string", "null"], "maxLength": 10}},
        "required": ["analysis", "next_action"],
        "anyOf": [
            {"properties": {"next_action": {"const": "FINISH"}}},
            {"properties": {"next_action": {"enum": ["CALL_AGENT", "CALL_AGENTS"]},
                "target_agents": {"type": "array"}}, "required": ["target_agents"]}]});
    vec![
        (
            pm,
            vec![
                json!({"analysis": "a", "next_action": "FINISH"}),
                json!({"analysis": "a", "next_action": "CALL_AGENTS", "target_agents": ["arch", "biz"]}),
                json!({"analysis": "", "next_action": "STOP", "target_agents": ["arch", "arch", "x"]}),
                json!({"analysis": "a", "next_action": "CALL_AGENT", "target_agents": null}),
                json!({"analysis": "a", "next_action": "CALL_AGENT", "target_agents": [],
                    "prompt_for_agent": "a prompt longer than ten", "x": 1, "y": 2}),
                json!([]),
            ],
        ),
        (
            json!({"type": "object", "properties": {"response": {"type": "string"},
                "citations": {"type": "array", "items": {"type": "object",
                    "properties": {"document_id": {"type": "string", "pattern": "^docs/"},
                        "quote": {"type": "string", "maxLength": 5}},
                    "required": ["document_id", "quote"], "additionalProperties": false}}},
                "required": ["response"]}),
            vec![
                json!({"response": "r", "citations": [{"document_id": "docs/a.md", "quote": "q"}]}),
                json!({"response": "r", "citations": [{"document_id": "src/a", "quote": "é€😀ab"},
                    {"quote": "toolong", "page": 1}, 3]}),
                json!({"citations": "none"}),
            ],
        ),
        (
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1,
                "maximum": 10, "multipleOf": 2}, "x": {"type": "number", "exclusiveMinimum": 0,
                "exclusiveMaximum": 1.5}, "c": {"const": 1}, "e": {"enum": [1, "a", {"k": [1]}, null]}}}),
            vec![
                json!({"n": 2, "x": 1, "c": 1.0, "e": {"k": [1.0]}}),
                json!({"n": 4.0, "x": 0.5, "c": 1, "e": null}),
                json!({"n": 3, "x": 0, "c": 2, "e": "b"}),
                json!({"n": 12, "x": 1.5, "c": "1", "e": [1]}),
                json!({"n": 0.5, "x": "1"}),
            ],
        ),
        (
            json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}},
                "additionalProperties": {"type": "integer"}, "minProperties": 1, "maxProperties": 2}),
            vec![
                json!({"x-a": "s", "b": 1}),
                json!({"x-a": 1, "b": "s", "c": 2}),
                json!({}),
            ],
        ),
        (
            json!({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 2}, {"type": "integer"}],
                "not": {"const": 7}, "allOf": [{"not": {"type": "boolean"}}, {"minLength": 1}]}),
            vec![
                json!("abc"),
                json!("ab"),
                json!(7),
                json!(true),
                json!(""),
                json!(1),
            ],
        ),
        (
            json!({"properties": {"no": false, "yes": true}, "items": false}),
            vec![
                json!({"no": 1, "yes": 2}),
                json!({"yes": 1}),
                json!([1]),
                json!([]),
            ],
        ),
        (
            json!({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "string"},
                "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}}},
                "$ref": "#/$defs/node", "required": ["v"]}),
            vec![
                json!({"v": "a", "next": {"v": "b", "next": null}}),
                json!({"next": {"v": 1, "next": {"v": "c"}}}),
            ],
        ),
        (
            json!({"type": "string", "enum": ["a", "b", "c", "d", "e"]}),
            vec![json!("a"), json!("z"), json!(1)],
        ),
        (
            json!({"type": "string", "enum": ["a", "b"], "pattern": "^[a-z]+\\d*$"}),
            vec![json!("z9"), json!("Z")],
        ),
    ]
}

fn messages_of_jsonschema(schema: &Value, value: &Value) -> Vec<String> {
    let v = jsonschema::validator_for(schema).unwrap();
    v.iter_errors(value)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("at {path}: {e}")
            }
        })
        .collect()
}

/// The differential test: our validator agrees with the `jsonschema` crate on every pair of
/// the table (the messages compared as sets: the order of keywords may differ).
#[test]
fn agrees_with_the_jsonschema_crate() {
    let mut failed = Vec::new();
    let mut invalid = 0;
    for (schema, values) in table() {
        check(&schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
        for value in values {
            let mut theirs = messages_of_jsonschema(&schema, &value);
            let mut ours: Vec<String> = match validate(&value, &schema) {
                Ok(()) => Vec::new(),
                Err(e) => e.split("; ").map(str::to_string).collect(),
            };
            invalid += usize::from(!ours.is_empty());
            theirs.sort();
            ours.sort();
            if ours != theirs {
                failed.push(format!(
                    "schema {schema}\nvalue  {value}\nours   {ours:#?}\ntheirs {theirs:#?}"
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    assert!(
        invalid >= 15,
        "the table must mostly fail: {invalid} invalid values"
    );
}
