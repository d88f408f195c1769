//! How OpenAI's two APIs ask for a JSON answer (docs/design/prompts.md#structured-output,
//! docs/design/llm.md#responses-api): the mode the flags choose ([`JsonMode`]), the format a
//! request carries ([`JsonFormat`]), OpenAI's strict structured-output subset ([`to_strict`])
//! and undoing what it added in the reply ([`undo_strict`]). One rule for Chat Completions
//! (`super::openai`) and the Responses API (`super::responses`).

use serde_json::{json, Map, Value};

use super::Request;

/// How a JSON answer is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonMode {
    /// A `json_schema` format (Chat's `response_format`, the Responses API's `text.format`),
    /// strict when the schema allows it.
    Schema,
    /// A `json_object` format, the schema described in the system prompt
    /// (`--no-native-schema`).
    Object,
    /// No format at all, for servers that reject one (`--no-response-format`).
    Prompt,
}

/// How a request asks for its JSON answer, whichever API carries it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsonFormat {
    /// A `json_schema` format: the schema (in strict form when it converts), its name.
    Schema {
        name: String,
        schema: Value,
        strict: bool,
    },
    /// A `json_object` format (JSON mode), the schema described in the system message.
    Object,
}

/// The JSON Schema subset a server's structured output takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subset {
    /// OpenAI's: strict mode when the schema converts ([`to_strict`]).
    OpenAi,
    /// Gemini's OpenAPI-style schema, never strict ([`to_gemini`], docs/design/llm.md#gemini).
    Gemini,
}

impl JsonFormat {
    /// The format `req` is sent with in `mode`, its schema in `subset` (`None`: a plain-text
    /// call, or [`JsonMode::Prompt`]).
    pub(crate) fn of(req: &Request, mode: JsonMode, subset: Subset) -> Option<JsonFormat> {
        let expect = req.expect.as_ref()?;
        match mode {
            JsonMode::Schema => {
                let schema = super::without_meta_keys(&expect.schema);
                let (schema, strict) = match (subset, to_strict(&schema)) {
                    (Subset::Gemini, _) => (to_gemini(&schema), false),
                    (Subset::OpenAi, Some(s)) => (s, true),
                    (Subset::OpenAi, None) => (schema, false),
                };
                Some(JsonFormat::Schema {
                    name: super::schema_name(&expect.name),
                    schema,
                    strict,
                })
            }
            JsonMode::Object => Some(JsonFormat::Object),
            JsonMode::Prompt => None,
        }
    }
}

/// The model's text as the caller validates it: strict mode made optional fields nullable,
/// while the caller's own schema allows them absent but maybe not null, so the nulls the
/// conversion caused go (`strict`: the request was sent in strict mode).
pub(crate) fn undo_strict(text: String, req: &Request, strict: bool) -> String {
    match (&req.expect, strict) {
        (Some(expect), true) => drop_added_nulls_in_text(&text, &expect.schema),
        _ => text,
    }
}

fn drop_added_nulls_in_text(text: &str, schema: &Value) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut v) => {
            drop_added_nulls(&mut v, schema);
            v.to_string()
        }
        Err(_) => text.to_string(),
    }
}

/// Remove `null` values of properties that the original schema made optional and that do not
/// allow null themselves (the strict conversion added that null). Local `$ref`s are followed.
pub(crate) fn drop_added_nulls(value: &mut Value, schema: &Value) {
    drop_nulls_at(value, schema, schema, 0);
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) if r.starts_with("#/") => root.pointer(&r[1..]).unwrap_or(schema),
        _ => schema,
    }
}

fn drop_nulls_at(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    // Recursive `$ref`s cannot loop forever on finite JSON, but keep a bound anyway.
    if depth > 64 {
        return;
    }
    let schema = resolve(schema, root);
    match value {
        Value::Object(obj) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            obj.retain(|k, v| {
                !(v.is_null()
                    && !required.contains(&k.as_str())
                    && props.get(k).is_some_and(|p| !allows_null(resolve(p, root))))
            });
            for (k, v) in obj.iter_mut() {
                if let Some(p) = props.get(k) {
                    drop_nulls_at(v, p, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for v in items {
                    drop_nulls_at(v, item_schema, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn allows_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => true,
    }
}

/// Convert a JSON Schema to OpenAI's strict structured-output form: every object lists all its
/// properties in `required` (the optional ones made nullable) and has
/// `additionalProperties: false`. `None` when the schema uses what strict mode cannot express
/// (free-form objects, arrays without `items`, `oneOf`, `allOf`, `not`, `patternProperties`, a
/// non-object root); the caller then sends it non-strict.
pub(crate) fn to_strict(schema: &Value) -> Option<Value> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    strict_node(schema)
}

/// Keywords strict mode accepts (besides the structural ones handled explicitly).
const STRICT_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "enum",
    "const",
    "$ref",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];
const STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

fn strict_node(schema: &Value) -> Option<Value> {
    let Value::Object(map) = schema else {
        // `true`/`false` schemas accept anything or nothing: not expressible.
        return None;
    };
    for unsupported in [
        "oneOf",
        "allOf",
        "not",
        "patternProperties",
        "if",
        "then",
        "else",
        "dependentSchemas",
    ] {
        if map.contains_key(unsupported) {
            return None;
        }
    }
    let mut out = strict_keywords(map)?;
    let is_object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => map.contains_key("properties"),
    };
    let is_array = match map.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
        _ => false,
    };
    // Strict mode wants every array's item schema; an array of anything is not expressible.
    if is_array && !map.contains_key("items") {
        return None;
    }
    if is_object {
        strict_properties(map, &mut out)?;
    }
    Some(Value::Object(out))
}

/// A schema node's keywords in strict form, its properties aside: sub-schemas converted,
/// keywords outside strict mode's subset dropped; `None` when a sub-schema is not expressible.
fn strict_keywords(map: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for (k, v) in map {
        match k.as_str() {
            "properties" | "required" | "additionalProperties" => {}
            "items" => {
                out.insert(k.clone(), strict_node(v)?);
            }
            "anyOf" => {
                let alts = v
                    .as_array()?
                    .iter()
                    .map(strict_node)
                    .collect::<Option<Vec<_>>>()?;
                out.insert(k.clone(), Value::Array(alts));
            }
            "$defs" | "definitions" => {
                let mut defs = Map::new();
                for (name, d) in v.as_object()? {
                    defs.insert(name.clone(), strict_node(d)?);
                }
                out.insert(k.clone(), Value::Object(defs));
            }
            "format" if v.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) => {
                out.insert(k.clone(), v.clone());
            }
            // Keywords outside strict mode's subset (`default`, `minLength`, `$schema`, ...) are
            // dropped: they only loosen decoding, the caller still validates against the
            // original schema.
            _ if STRICT_KEYWORDS.contains(&k.as_str()) => {
                out.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    Some(out)
}

/// An object node's properties in strict form, into `out`: every property required, the
/// optional ones made nullable, no additional properties; `None` when not expressible.
fn strict_properties(map: &Map<String, Value>, out: &mut Map<String, Value>) -> Option<()> {
    if map
        .get("additionalProperties")
        .is_some_and(|a| a != &Value::Bool(false))
    {
        return None;
    }
    let props = match map.get("properties") {
        Some(Value::Object(p)) if !p.is_empty() => p,
        // An object with no declared properties is a free-form map in practice.
        _ => return None,
    };
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut new_props = Map::new();
    for (name, p) in props {
        let converted = strict_node(p)?;
        let converted = if required.contains(&name.as_str()) {
            converted
        } else {
            nullable(converted)
        };
        new_props.insert(name.clone(), converted);
    }
    out.insert("properties".into(), Value::Object(new_props));
    out.insert(
        "required".into(),
        Value::Array(props.keys().map(|k| json!(k)).collect()),
    );
    out.insert("additionalProperties".into(), Value::Bool(false));
    Some(())
}

fn nullable(mut schema: Value) -> Value {
    let Some(map) = schema.as_object_mut() else {
        return schema;
    };
    // An enum stays a branch of its own: grammar-constrained local servers (llama.cpp's
    // schema-to-grammar) read a type list before an enum and would drop the enum.
    if map.contains_key("enum") {
        return json!({"anyOf": [schema, {"type": "null"}]});
    }
    match map.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = t.clone();
            map.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(ts)) => {
            if !ts.iter().any(|t| t == "null") {
                ts.push(json!("null"));
            }
        }
        Some(_) => {}
        None => return json!({"anyOf": [schema, {"type": "null"}]}),
    }
    schema
}

/// `node` with every local `$ref` (`#/$defs/Name`, `#/definitions/Name`) of `root` replaced
/// by its definition, to a depth of 8 (a recursive type stays a reference below that).
pub(crate) fn inline_refs(node: &Value, root: &Value, depth: usize) -> Value {
    match node {
        Value::Object(o) => {
            if let Some(target) = o.get("$ref").and_then(Value::as_str) {
                let found = target
                    .strip_prefix("#/")
                    .and_then(|path| root.pointer(&format!("/{path}")));
                if let (Some(def), true) = (found, depth < 8) {
                    return inline_refs(def, root, depth + 1);
                }
            }
            Value::Object(
                o.iter()
                    .filter(|(k, _)| k.as_str() != "$defs" && k.as_str() != "definitions")
                    .map(|(k, v)| (k.clone(), inline_refs(v, root, depth)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| inline_refs(v, root, depth)).collect()),
        other => other.clone(),
    }
}

/// A JSON Schema in the subset Gemini's structured output takes (its OpenAPI-style schema,
/// docs/design/llm.md#gemini): local `$ref`s inlined; a nullable type (`[T, "null"]`, `anyOf`
/// with `{"type": "null"}`) as `T` with `nullable: true`; a field that may only be null as a
/// nullable string (the caller's own schema still refuses anything else); `const` as a
/// one-value `enum`; and only the keywords Gemini documents kept (`additionalProperties`,
/// `pattern`, lengths, `title`, `default` dropped: they only loosen decoding, the caller
/// validates against the original). Optional fields stay optional, not made nullable.
pub(crate) fn to_gemini(schema: &Value) -> Value {
    gemini_node(&inline_refs(schema, schema, 0))
}

const GEMINI_KEYWORDS: &[&str] = &[
    "description",
    "enum",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "required",
    "propertyOrdering",
];

fn gemini_node(node: &Value) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    let mut out = Map::new();
    let mut nullable = false;
    for (k, v) in map {
        match k.as_str() {
            "type" => match v {
                Value::Array(ts) => {
                    let kinds: Vec<&Value> = ts.iter().filter(|t| *t != "null").collect();
                    nullable |= kinds.len() < ts.len();
                    match kinds.as_slice() {
                        [] => {
                            out.insert("type".into(), json!("string"));
                        }
                        [one] => {
                            out.insert("type".into(), (*one).clone());
                        }
                        many => {
                            let alts = many.iter().map(|t| json!({"type": t})).collect();
                            out.insert("anyOf".into(), Value::Array(alts));
                        }
                    }
                }
                Value::String(t) if t == "null" => {
                    nullable = true;
                    out.insert("type".into(), json!("string"));
                }
                other => {
                    out.insert("type".into(), other.clone());
                }
            },
            "anyOf" | "oneOf" => {
                let alts: Vec<&Value> =
                    v.as_array().map(|a| a.iter().collect()).unwrap_or_default();
                let kept: Vec<Value> = alts
                    .iter()
                    .filter(|a| a.get("type") != Some(&json!("null")))
                    .map(|a| gemini_node(a))
                    .collect();
                nullable |= kept.len() < alts.len();
                match kept.as_slice() {
                    [one] => {
                        if let Value::Object(m) = one {
                            for (k, v) in m {
                                out.entry(k.clone()).or_insert_with(|| v.clone());
                            }
                        }
                    }
                    [] => {
                        out.insert("type".into(), json!("string"));
                    }
                    _ => {
                        out.insert("anyOf".into(), Value::Array(kept));
                    }
                }
            }
            "properties" => {
                let props = v
                    .as_object()
                    .map(|p| p.iter().map(|(k, s)| (k.clone(), gemini_node(s))).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" => {
                out.insert(k.clone(), gemini_node(v));
            }
            "const" => {
                out.insert("enum".into(), json!([v]));
            }
            "format" if v.as_str() == Some("date-time") => {
                out.insert(k.clone(), v.clone());
            }
            _ if GEMINI_KEYWORDS.contains(&k.as_str()) => {
                out.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    if nullable {
        out.insert("nullable".into(), json!(true));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every node of `v`, depth first.
    fn nodes(v: &Value) -> Vec<&Value> {
        let mut out = vec![v];
        match v {
            Value::Object(m) => m.values().for_each(|c| out.extend(nodes(c))),
            Value::Array(a) => a.iter().for_each(|c| out.extend(nodes(c))),
            _ => {}
        }
        out
    }

    /// Gemini's subset: no null type, no type list, no `$ref`, no `const`, no
    /// `additionalProperties`; what was nullable says so; optional stays optional.
    #[test]
    fn a_schema_for_gemini_is_in_its_subset() {
        let s = json!({"type": "object", "additionalProperties": false,
        "$defs": {"K": {"type": "string", "enum": ["llm", "human"]}},
        "required": ["a", "kind"],
        "properties": {
            "a": {"type": ["string", "null"], "minLength": 1},
            "b": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
            "c": {"type": "null"},
            "d": {"const": "FINISH"},
            "kind": {"$ref": "#/$defs/K"},
            "list": {"type": "array", "items": {"type": "string", "pattern": "^x"}, "maxItems": 3}
        }});
        let g = to_gemini(&s);
        for n in nodes(&g) {
            if let Value::Object(m) = n {
                for bad in [
                    "$ref",
                    "$defs",
                    "const",
                    "additionalProperties",
                    "pattern",
                    "minLength",
                ] {
                    assert!(!m.contains_key(bad), "{bad} left in {g}");
                }
                if let Some(t) = m.get("type") {
                    assert!(t.is_string() && t != "null", "type {t} in {g}");
                }
            }
        }
        let p = &g["properties"];
        assert_eq!(p["a"], json!({"type": "string", "nullable": true}));
        assert_eq!(
            p["b"],
            json!({"type": "integer", "minimum": 0, "nullable": true})
        );
        assert_eq!(p["c"], json!({"type": "string", "nullable": true}));
        assert_eq!(p["d"], json!({"enum": ["FINISH"]}));
        assert_eq!(
            p["kind"],
            json!({"type": "string", "enum": ["llm", "human"]})
        );
        assert_eq!(p["list"]["maxItems"], 3);
        assert_eq!(
            g["required"],
            json!(["a", "kind"]),
            "optional stays optional"
        );
    }

    #[test]
    fn strict_makes_optional_nullable() {
        let s = json!({
            "type": "object",
            "properties": {
                "response": {"type": "string"},
                "key_points": {"type": "array", "items": {"type": "string"}},
                "kind": {"type": "string", "enum": ["a", "b"]},
                "cite": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}}
            },
            "required": ["response"]
        });
        let strict = to_strict(&s).unwrap();
        assert_eq!(
            strict,
            json!({
                "type": "object",
                "properties": {
                    "response": {"type": "string"},
                    "key_points": {"type": ["array", "null"], "items": {"type": "string"}},
                    "kind": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]},
                    "cite": {"type": ["array", "null"], "items": {"type": "object",
                        "properties": {"id": {"type": ["string", "null"]}},
                        "required": ["id"], "additionalProperties": false}}
                },
                "required": ["response", "key_points", "kind", "cite"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn strict_drops_unsupported_keywords() {
        let s = json!({"$schema": "x", "title": "T", "type": "object", "properties": {
            "n": {"type": "integer", "format": "uint32", "minimum": 0, "default": 1},
            "s": {"type": "string", "minLength": 1, "format": "date"}
        }, "required": ["n", "s"]});
        assert_eq!(
            to_strict(&s).unwrap(),
            json!({"type": "object", "properties": {
                "n": {"type": "integer", "minimum": 0},
                "s": {"type": "string", "format": "date"}
            }, "required": ["n", "s"], "additionalProperties": false})
        );
    }

    #[test]
    fn stage_schemas_convert_to_strict() {
        for (name, schema) in crate::model::schemas() {
            if name == "PMDecision" || name == "AgentTurnResult" {
                let strict = to_strict(&schema).unwrap_or_else(|| panic!("{name} not strict-able"));
                jsonschema::validator_for(&strict).unwrap();
            }
        }
    }

    #[test]
    fn added_nulls_dropped_through_refs() {
        let s = json!({"type": "object", "$defs": {"C": {"type": "object",
            "properties": {"id": {"type": "string"}, "quote": {"type": "string"}}, "required": ["id"]}},
            "properties": {"citations": {"type": "array", "items": {"$ref": "#/$defs/C"}}}});
        let mut v = json!({"citations": [{"id": "a", "quote": null}]});
        drop_added_nulls(&mut v, &s);
        assert_eq!(v, json!({"citations": [{"id": "a"}]}));
    }

    #[test]
    fn strict_refuses_free_form() {
        let s =
            json!({"type": "object", "properties": {"m": {"type": "object"}}, "required": ["m"]});
        assert_eq!(to_strict(&s), None);
        let s = json!({"type": "object", "properties": {"m": {"type": "string"}}, "additionalProperties": true});
        assert_eq!(to_strict(&s), None);
        assert_eq!(to_strict(&json!({"type": "array"})), None);
        let s = json!({"type": "object", "properties": {"tags": {"type": "array"}}});
        assert_eq!(to_strict(&s), None, "an array without items");
        let s = json!({"type": "object", "properties": {"m": {"oneOf": [{"type": "string"}]}}});
        assert_eq!(to_strict(&s), None);
    }

    #[test]
    fn added_nulls_dropped_real_nulls_kept() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "array"}, "c": {"type": ["string", "null"]}
        }, "required": ["a"]});
        let mut v = json!({"a": "x", "b": null, "c": null});
        drop_added_nulls(&mut v, &s);
        assert_eq!(v, json!({"a": "x", "c": null}));
    }
}
