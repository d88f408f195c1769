//! JSON Schema validation, shared by the loader (agent configs) and the stages (model answers).
//! Below both, so neither reaches into the other.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// Validate a value against a JSON Schema; the error lists every violation with its JSON path,
/// in words a model can act on.
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    let validator = compiled(schema)?;
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                format!("{e}")
            } else {
                format!("at {path}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// The schema compiled, once per process while it is among the last few used: compiling costs
/// about a millisecond, and a meeting driven in one process checks every answer of the PM and
/// of each agent against the same few schemas (docs/design/run-folder.md#run-folder).
fn compiled(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
    /// More distinct schemas than a meeting has callers: the cache starts again.
    const KEEP: usize = 64;
    static COMPILED: Mutex<BTreeMap<String, Arc<jsonschema::Validator>>> =
        Mutex::new(BTreeMap::new());
    let key = schema.to_string();
    let cache = || COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(v) = cache().get(&key) {
        return Ok(v.clone());
    }
    let v =
        Arc::new(jsonschema::validator_for(schema).map_err(|e| format!("invalid schema: {e}"))?);
    let mut cache = cache();
    if cache.len() >= KEEP {
        cache.clear();
    }
    cache.insert(key, v.clone());
    Ok(v)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Compiled schemas are kept per schema: each value is still checked against its own.
    #[test]
    fn each_schema_keeps_its_own_rules() {
        let needs = |field: &str| json!({"type": "object", "required": [field]});
        let value = json!({"a": 1});
        for _ in 0..2 {
            assert!(super::validate(&value, &needs("a")).is_ok());
            let e = super::validate(&value, &needs("b")).unwrap_err();
            assert!(e.contains("\"b\" is a required property"), "{e}");
        }
        assert!(super::validate(&value, &json!({"type": 3})).is_err());
    }
}
