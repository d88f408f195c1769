//! JSON Schema validation, shared by the loader (agent configs) and the stages (model answers).
//! Below both, so neither reaches into the other.
//!
//! Our own validator of the subset of JSON Schema (2020-12) that agent configs and the schemas
//! we send may use (docs/design/agents-and-config.md#the-json-schema-subset): [`check`] refuses
//! any other keyword by its path in the schema, so a config never loads with a rule that would
//! then go unchecked. A general validator cost a fifth of the release build
//! (BENCHMARKS.md#install-size-and-build-time). Its messages follow the wording of the
//! `jsonschema` crate, which the tests compare it with.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use regex::Regex;
use serde_json::{Map, Number, Value};

use crate::error::join_path;
use crate::text::{plural, plural_of};

/// The type names, in the order a list of them is printed.
const TYPES: [&str; 7] = [
    "null", "boolean", "integer", "number", "string", "array", "object",
];

/// Keywords that only annotate: accepted anywhere, never checked (`format` too, as 2020-12
/// has it by default).
pub const ANNOTATIONS: [&str; 11] = [
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
];

/// Keywords that are checked; any other is refused by [`check`].
pub const SUPPORTED: [&str; 28] = [
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "$ref",
    "$defs",
    "definitions",
];

/// How deep validation may nest (`$ref`s included) before it gives up: a `$ref` cycle that
/// consumes no part of the value would otherwise never end.
const MAX_DEPTH: usize = 128;

/// A schema that is not one this validator can apply: where in the schema
/// (`properties.a.type`, empty for the root) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Check that `schema` is a JSON Schema of the supported subset, with well-formed keywords.
pub fn check(schema: &Value) -> Result<(), SchemaError> {
    compiled(schema).map(|_| ())
}

/// Validate a value against a JSON Schema; the error lists every violation with its JSON path,
/// in words a model can act on.
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    let compiled = compiled(schema).map_err(|e| format!("invalid schema: {e}"))?;
    let mut run = Run {
        compiled: &compiled,
        errors: Vec::new(),
    };
    run.node(value, &compiled.root, &mut String::new(), 0);
    if run.errors.is_empty() {
        return Ok(());
    }
    let errors: Vec<String> = run
        .errors
        .into_iter()
        .map(|(path, e)| {
            if path.is_empty() {
                e
            } else {
                format!("at {path}: {e}")
            }
        })
        .collect();
    Err(errors.join("; "))
}

/// A checked schema and its regular expressions, compiled once.
struct Compiled {
    root: Value,
    regexes: HashMap<String, Regex>,
}

/// The schema checked and compiled, once per process while it is among the last few used: a
/// meeting driven in one process checks every answer of the PM and of each agent against the
/// same few schemas (docs/design/run-folder.md#run-folder).
fn compiled(schema: &Value) -> Result<Arc<Compiled>, SchemaError> {
    /// More distinct schemas than a meeting has callers: the cache starts again.
    const KEEP: usize = 64;
    static COMPILED: Mutex<BTreeMap<String, Arc<Compiled>>> = Mutex::new(BTreeMap::new());
    let key = schema.to_string();
    let cache = || COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = cache().get(&key) {
        return Ok(v.clone());
    }
    let mut checker = Checker {
        root: schema,
        regexes: HashMap::new(),
        refs: HashSet::new(),
    };
    checker.schema(schema, "")?;
    let v = Arc::new(Compiled {
        root: schema.clone(),
        regexes: checker.regexes,
    });
    let mut cache = cache();
    if cache.len() >= KEEP {
        cache.clear();
    }
    cache.insert(key, v.clone());
    Ok(v)
}

fn err<T>(path: &str, message: impl Into<String>) -> Result<T, SchemaError> {
    Err(SchemaError {
        path: path.to_string(),
        message: message.into(),
    })
}

/// Walks a schema once: every keyword supported and well-formed, every pattern compiled, every
/// `$ref` pointing at a schema inside the document.
struct Checker<'a> {
    root: &'a Value,
    regexes: HashMap<String, Regex>,
    /// `$ref`s whose target was checked already (a recursive schema refers to itself).
    refs: HashSet<&'a str>,
}

impl<'a> Checker<'a> {
    fn schema(&mut self, node: &'a Value, path: &str) -> Result<(), SchemaError> {
        let map = match node {
            Value::Bool(_) => return Ok(()),
            Value::Object(map) => map,
            _ => return err(path, "expected a schema (an object or true/false)"),
        };
        for (key, value) in map {
            self.keyword(key, value, &join_path(path, key))?;
        }
        Ok(())
    }

    fn keyword(&mut self, key: &str, value: &'a Value, path: &str) -> Result<(), SchemaError> {
        match key {
            "type" => check_type(value, path),
            "enum" => match value {
                Value::Array(_) => Ok(()),
                _ => err(path, "expected an array of the allowed values"),
            },
            "required" => check_names(value, path),
            "properties" | "$defs" | "definitions" => {
                for (name, sub) in object(value, path)? {
                    self.schema(sub, &join_path(path, name))?;
                }
                Ok(())
            }
            "patternProperties" => {
                for (pattern, sub) in object(value, path)? {
                    self.regex(pattern, &join_path(path, pattern))?;
                    self.schema(sub, &join_path(path, pattern))?;
                }
                Ok(())
            }
            "items" if value.is_array() => err(
                path,
                "expected one schema for every item (a list of item schemas is not supported)",
            ),
            "additionalProperties" | "items" | "not" => self.schema(value, path),
            "anyOf" | "oneOf" | "allOf" => match value {
                Value::Array(subs) if !subs.is_empty() => {
                    for (i, sub) in subs.iter().enumerate() {
                        self.schema(sub, &format!("{path}[{i}]"))?;
                    }
                    Ok(())
                }
                _ => err(path, "expected a non-empty array of schemas"),
            },
            "minItems" | "maxItems" | "minLength" | "maxLength" | "minProperties"
            | "maxProperties" => match count(value) {
                Some(_) => Ok(()),
                None => err(path, "expected a non-negative integer"),
            },
            "uniqueItems" => match value {
                Value::Bool(_) => Ok(()),
                _ => err(path, "expected true or false"),
            },
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => match value {
                Value::Number(_) => Ok(()),
                _ => err(path, "expected a number"),
            },
            "multipleOf" => match value.as_f64() {
                Some(m) if m > 0.0 => Ok(()),
                _ => err(path, "expected a number greater than 0"),
            },
            "pattern" => match value {
                Value::String(pattern) => self.regex(pattern, path),
                _ => err(path, "expected a string (a regular expression)"),
            },
            "$ref" => self.reference(value, path),
            _ if ANNOTATIONS.contains(&key) || key == "const" => Ok(()),
            _ => err(
                path,
                format!(
                    "unsupported JSON Schema keyword (supported: {}; annotations: {})",
                    SUPPORTED.join(", "),
                    ANNOTATIONS.join(", ")
                ),
            ),
        }
    }

    fn regex(&mut self, pattern: &str, path: &str) -> Result<(), SchemaError> {
        if !self.regexes.contains_key(pattern) {
            match Regex::new(pattern) {
                Ok(re) => {
                    self.regexes.insert(pattern.to_string(), re);
                }
                Err(e) => {
                    let why = e.to_string();
                    let why = why.lines().last().unwrap_or_default().trim();
                    return err(
                        path,
                        format!("{pattern:?} is not a regular expression: {why}"),
                    );
                }
            }
        }
        Ok(())
    }

    /// Only references inside the document (`#` or `#/$defs/name`): nothing is fetched.
    fn reference(&mut self, value: &'a Value, path: &str) -> Result<(), SchemaError> {
        let Value::String(r) = value else {
            return err(path, "expected a string");
        };
        let Some(target) = resolve(self.root, r) else {
            return err(
                path,
                format!(
                    "{r:?} does not point inside this schema (expected \"#\" or \"#/$defs/NAME\")"
                ),
            );
        };
        if self.refs.insert(r) {
            let at = r[1..].trim_start_matches('/').replace('/', ".");
            self.schema(target, &at)?;
        }
        Ok(())
    }
}

fn check_type(value: &Value, path: &str) -> Result<(), SchemaError> {
    let names: Vec<&Value> = match value {
        Value::Array(names) if !names.is_empty() => names.iter().collect(),
        Value::Array(_) => return err(path, "expected a type name or a non-empty list of them"),
        one => vec![one],
    };
    for (i, name) in names.iter().enumerate() {
        if !name.as_str().is_some_and(|n| TYPES.contains(&n)) {
            return err(
                path,
                format!(
                    "{name} is not a type (expected one of {})",
                    TYPES.join(", ")
                ),
            );
        }
        if names[..i].contains(name) {
            return err(path, format!("{name} is listed twice"));
        }
    }
    Ok(())
}

fn check_names(value: &Value, path: &str) -> Result<(), SchemaError> {
    let Value::Array(names) = value else {
        return err(path, "expected an array of property names");
    };
    for (i, name) in names.iter().enumerate() {
        if !name.is_string() {
            return err(&format!("{path}[{i}]"), "expected a string");
        }
        if names[..i].contains(name) {
            return err(&format!("{path}[{i}]"), format!("{name} is listed twice"));
        }
    }
    Ok(())
}

fn object<'v>(value: &'v Value, path: &str) -> Result<&'v Map<String, Value>, SchemaError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => err(path, "expected an object of schemas"),
    }
}

/// A count keyword's value (`2` or `2.0`).
fn count(value: &Value) -> Option<u64> {
    match value.as_u64() {
        Some(n) => Some(n),
        None => value
            .as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 2f64.powi(63))
            .map(|f| f as u64),
    }
}

/// A reference inside the document: `#` is the root, `#/a/b` a JSON pointer into it.
fn resolve<'v>(root: &'v Value, reference: &str) -> Option<&'v Value> {
    let pointer = reference.strip_prefix('#')?;
    let target = root.pointer(pointer)?;
    (target.is_object() || target.is_boolean()).then_some(target)
}

/// One validation: the violations found so far, each with its JSON pointer into the value.
struct Run<'c> {
    compiled: &'c Compiled,
    errors: Vec<(String, String)>,
}

impl Run<'_> {
    fn fail(&mut self, at: &str, message: String) {
        self.errors.push((at.to_string(), message));
    }

    /// Whether `text` matches a pattern [`check`] compiled (every pattern of the schema).
    fn matches(&self, pattern: &str, text: &str) -> bool {
        self.compiled
            .regexes
            .get(pattern)
            .is_some_and(|re| re.is_match(text))
    }

    /// Whether `value` is valid under `schema`, without recording why not.
    fn valid(&self, value: &Value, schema: &Value, at: &mut String, depth: usize) -> bool {
        let mut sub = Run {
            compiled: self.compiled,
            errors: Vec::new(),
        };
        sub.node(value, schema, at, depth);
        sub.errors.is_empty()
    }

    fn node(&mut self, value: &Value, schema: &Value, at: &mut String, depth: usize) {
        let map = match schema {
            Value::Object(map) => map,
            Value::Bool(true) => return,
            _ => return self.fail(at, format!("False schema does not allow {value}")),
        };
        if depth > MAX_DEPTH {
            return self.fail(at, "the schema nests too deep (a $ref cycle?)".into());
        }
        if let Some(r) = map.get("$ref").and_then(Value::as_str) {
            if let Some(target) = resolve(&self.compiled.root, r) {
                self.node(value, target, at, depth + 1);
            }
        }
        self.any_type(value, map, at);
        match value {
            Value::Object(obj) => self.object(obj, value, map, at, depth),
            Value::Array(items) => self.array(items, value, map, at, depth),
            Value::String(s) => self.string(s, value, map, at),
            Value::Number(n) => self.number(n, value, map, at),
            _ => {}
        }
        self.combined(value, map, at, depth);
    }

    /// The keywords that apply to every type: `type`, `enum`, `const`.
    fn any_type(&mut self, value: &Value, map: &Map<String, Value>, at: &str) {
        match map.get("type") {
            Some(Value::String(t)) if !is_type(value, t) => {
                self.fail(at, format!("{value} is not of type \"{t}\""));
            }
            Some(Value::Array(ts))
                if !ts.iter().any(|t| is_type(value, t.as_str().unwrap_or(""))) =>
            {
                let listed: Vec<String> = TYPES
                    .iter()
                    .filter(|t| ts.iter().any(|x| x == *t))
                    .map(|t| format!("\"{t}\""))
                    .collect();
                self.fail(at, format!("{value} is not of types {}", listed.join(", ")));
            }
            _ => {}
        }
        if let Some(Value::Array(options)) = map.get("enum") {
            if !options.iter().any(|o| equal(o, value)) {
                self.fail(at, enum_message(value, options));
            }
        }
        if let Some(expected) = map.get("const") {
            if !equal(expected, value) {
                self.fail(at, format!("{expected} was expected"));
            }
        }
    }

    fn object(
        &mut self,
        obj: &Map<String, Value>,
        value: &Value,
        map: &Map<String, Value>,
        at: &mut String,
        depth: usize,
    ) {
        if let Some(Value::Array(names)) = map.get("required") {
            for name in names {
                if !name.as_str().is_some_and(|n| obj.contains_key(n)) {
                    self.fail(at, format!("{name} is a required property"));
                }
            }
        }
        if let Some(n) = map.get("minProperties").and_then(count) {
            if (obj.len() as u64) < n {
                self.fail(
                    at,
                    format!(
                        "{value} has less than {}",
                        plural_of(n, "property", "properties")
                    ),
                );
            }
        }
        if let Some(n) = map.get("maxProperties").and_then(count) {
            if obj.len() as u64 > n {
                self.fail(
                    at,
                    format!(
                        "{value} has more than {}",
                        plural_of(n, "property", "properties")
                    ),
                );
            }
        }
        let properties = map.get("properties").and_then(Value::as_object);
        let patterns = map.get("patternProperties").and_then(Value::as_object);
        let mut unexpected = Vec::new();
        for (name, v) in obj {
            let mut known = false;
            if let Some(sub) = properties.and_then(|p| p.get(name)) {
                known = true;
                self.child(v, sub, at, name, depth);
            }
            for (pattern, sub) in patterns.into_iter().flatten() {
                if self.matches(pattern, name) {
                    known = true;
                    self.child(v, sub, at, name, depth);
                }
            }
            match map.get("additionalProperties") {
                Some(Value::Bool(false)) if !known => unexpected.push(format!("'{name}'")),
                Some(sub) if !known => self.child(v, sub, at, name, depth),
                _ => {}
            }
        }
        if !unexpected.is_empty() {
            let were = if unexpected.len() == 1 { "was" } else { "were" };
            self.fail(
                at,
                format!(
                    "Additional properties are not allowed ({} {were} unexpected)",
                    unexpected.join(", ")
                ),
            );
        }
    }

    fn array(
        &mut self,
        items: &[Value],
        value: &Value,
        map: &Map<String, Value>,
        at: &mut String,
        depth: usize,
    ) {
        let len = items.len() as u64;
        if let Some(n) = map.get("minItems").and_then(count) {
            if len < n {
                self.fail(at, format!("{value} has less than {}", plural(n, "item")));
            }
        }
        if let Some(n) = map.get("maxItems").and_then(count) {
            if len > n {
                self.fail(at, format!("{value} has more than {}", plural(n, "item")));
            }
        }
        if map.get("uniqueItems") == Some(&Value::Bool(true)) {
            let repeated = (1..items.len()).any(|i| items[..i].iter().any(|x| equal(x, &items[i])));
            if repeated {
                self.fail(at, format!("{value} has non-unique elements"));
            }
        }
        if let Some(sub) = map.get("items") {
            for (i, item) in items.iter().enumerate() {
                self.child(item, sub, at, &i.to_string(), depth);
            }
        }
    }

    fn string(&mut self, s: &str, value: &Value, map: &Map<String, Value>, at: &str) {
        let chars = s.chars().count() as u64;
        if let Some(n) = map.get("minLength").and_then(count) {
            if chars < n {
                self.fail(
                    at,
                    format!("{value} is shorter than {}", plural(n, "character")),
                );
            }
        }
        if let Some(n) = map.get("maxLength").and_then(count) {
            if chars > n {
                self.fail(
                    at,
                    format!("{value} is longer than {}", plural(n, "character")),
                );
            }
        }
        if let Some(Value::String(pattern)) = map.get("pattern") {
            if !self.matches(pattern, s) {
                self.fail(at, format!("{value} does not match \"{pattern}\""));
            }
        }
    }

    fn number(&mut self, n: &Number, value: &Value, map: &Map<String, Value>, at: &str) {
        let x = n.as_f64().unwrap_or(f64::NAN);
        let limit = |k: &str| map.get(k).and_then(|l| Some((l, l.as_f64()?)));
        if let Some((l, _)) = limit("minimum").filter(|(_, m)| x < *m) {
            self.fail(at, format!("{value} is less than the minimum of {l}"));
        }
        if let Some((l, _)) = limit("maximum").filter(|(_, m)| x > *m) {
            self.fail(at, format!("{value} is greater than the maximum of {l}"));
        }
        if let Some((l, _)) = limit("exclusiveMinimum").filter(|(_, m)| x <= *m) {
            self.fail(
                at,
                format!("{value} is less than or equal to the minimum of {l}"),
            );
        }
        if let Some((l, _)) = limit("exclusiveMaximum").filter(|(_, m)| x >= *m) {
            self.fail(
                at,
                format!("{value} is greater than or equal to the maximum of {l}"),
            );
        }
        if let Some((l, m)) = limit("multipleOf") {
            let whole = match (n.as_i64(), l.as_i64()) {
                (Some(a), Some(b)) => a % b == 0,
                _ => {
                    let q = x / m;
                    q.is_finite() && (q - q.round()).abs() < 1e-9
                }
            };
            if !whole {
                self.fail(at, format!("{value} is not a multiple of {l}"));
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf`, `not`.
    fn combined(&mut self, value: &Value, map: &Map<String, Value>, at: &mut String, depth: usize) {
        if let Some(Value::Array(subs)) = map.get("allOf") {
            for sub in subs {
                self.node(value, sub, at, depth + 1);
            }
        }
        if let Some(Value::Array(subs)) = map.get("anyOf") {
            if !subs.iter().any(|s| self.valid(value, s, at, depth + 1)) {
                self.fail(
                    at,
                    format!("{value} is not valid under any of the schemas listed in the 'anyOf' keyword"),
                );
            }
        }
        if let Some(Value::Array(subs)) = map.get("oneOf") {
            match subs.iter().filter(|s| self.valid(value, s, at, depth + 1)).count() {
                1 => {}
                0 => self.fail(
                    at,
                    format!("{value} is not valid under any of the schemas listed in the 'oneOf' keyword"),
                ),
                _ => self.fail(
                    at,
                    format!("{value} is valid under more than one of the schemas listed in the 'oneOf' keyword"),
                ),
            }
        }
        if let Some(sub) = map.get("not") {
            if self.valid(value, sub, at, depth + 1) {
                self.fail(at, format!("{sub} is not allowed for {value}"));
            }
        }
    }

    /// Validate a member or an item, its JSON pointer segment appended to `at` meanwhile.
    fn child(&mut self, value: &Value, schema: &Value, at: &mut String, key: &str, depth: usize) {
        let len = at.len();
        at.push('/');
        at.push_str(&key.replace('~', "~0").replace('/', "~1"));
        self.node(value, schema, at, depth + 1);
        at.truncate(len);
    }
}

fn is_type(value: &Value, t: &str) -> bool {
    match (t, value) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// JSON equality: numbers by value (`1` equals `1.0`), objects regardless of key order.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// `"x" is not one of "a", "b" or "c"`; beyond three options, the first two and a count.
fn enum_message(value: &Value, options: &[Value]) -> String {
    let shown: Vec<String> = options.iter().map(Value::to_string).collect();
    let listed = match shown.len() {
        0 => String::new(),
        n if n <= 3 => match shown.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        },
        n => format!("{} or {} other candidates", shown[..2].join(", "), n - 2),
    };
    format!("{value} is not one of {listed}")
}

/// `value` as a `T`, or what is wrong with it at its field path (`objections[0].why: …`): the
/// error a model is told when its answer has the wrong shape.
pub fn shaped<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("{path}: {}", e.inner())
        }
    })
}

#[cfg(test)]
mod tests;
