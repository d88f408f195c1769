//! JSON Schema validation, shared by the loader (agent configs) and the stages (model answers).
//! Below both, so neither reaches into the other.

use serde_json::Value;

/// Validate a value against a JSON Schema; the error lists every violation with its JSON path,
/// in words a model can act on.
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    let validator =
        jsonschema::validator_for(schema).map_err(|e| format!("invalid schema: {e}"))?;
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
