//! Token and call counts (DESIGN.md#llm-layer, DESIGN.md#token-budget).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::is_zero_u64;

/// Token and call counts. `prompt_tokens` counts every input token, cached ones included, for
/// every provider (DESIGN.md#llm-layer); the cache counts are parts of it, written when not 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallerUsage {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cached_tokens: u64,
    /// Of `prompt_tokens`, written to the provider's prompt cache (Anthropic).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cache_creation_tokens: u64,
    #[serde(default)]
    pub duration_ms: u64,
    /// True when some counts were estimated from characters (the server returned none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// The largest `prompt_tokens` of one call the provider reported: a floor under the token
    /// budget's estimates (DESIGN.md#token-budget).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub max_prompt_tokens: u64,
}

/// Usage totals; `calls` is also the global call number that keys replay cassettes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cached_tokens: u64,
    /// Of `prompt_tokens`, written to the provider's prompt cache (Anthropic).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cache_creation_tokens: u64,
    #[serde(default)]
    pub by_caller: BTreeMap<String, CallerUsage>,
}

impl Usage {
    /// The model requests made, retries included: what the callers were charged. `calls`, the
    /// call counter, can be higher: a fan-out fixes its calls' numbers before sending and
    /// leaves the numbers a retry did not need unused (DESIGN.md#fan-out). A board whose
    /// callers were not counted (a user's stage): the counter.
    pub fn attempts(&self) -> u64 {
        match self.by_caller.values().map(|u| u.calls).sum() {
            0 => self.calls,
            charged => charged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// The requests made are what the callers were charged, not the call counter.
    #[test]
    fn attempts_are_the_callers_charges() {
        let mut usage = Usage {
            calls: 7,
            ..Usage::default()
        };
        assert_eq!(usage.attempts(), 7, "no caller counted: the counter");
        for (caller, calls) in [("pm", 2), ("biz", 4)] {
            let u = CallerUsage {
                calls,
                ..CallerUsage::default()
            };
            usage.by_caller.insert(caller.into(), u);
        }
        assert_eq!(usage.attempts(), 6);
    }
}
