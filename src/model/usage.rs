//! Token and call counts (docs/design/llm.md#llm-layer, docs/design/pm-round.md#token-budget).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::is_zero_u64;

/// The four token counts of a call, a caller or a meeting. `prompt_tokens` counts every input
/// token, cached ones included, for every provider (docs/design/llm.md#llm-layer); the cache counts are
/// parts of it, written when not 0. Flattened into every document that carries them (usage,
/// events, cassettes), so their names and rules are written here once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Tokens {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cached_tokens: u64,
    /// Of `prompt_tokens`, written to the provider's prompt cache (Anthropic).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub cache_creation_tokens: u64,
}

impl Tokens {
    /// Prompt and completion tokens: what the token budget counts (docs/design/pm-round.md#token-budget).
    pub fn total(self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// What `self` holds beyond `earlier` (a fan-out call's own counts, docs/design/agent-turn.md#fan-out).
    pub fn since(self, earlier: Tokens) -> Tokens {
        Tokens {
            prompt_tokens: self.prompt_tokens.saturating_sub(earlier.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_sub(earlier.completion_tokens),
            cached_tokens: self.cached_tokens.saturating_sub(earlier.cached_tokens),
            cache_creation_tokens: self
                .cache_creation_tokens
                .saturating_sub(earlier.cache_creation_tokens),
        }
    }

    /// Every count with its name, 0 included (the report's templates read all four).
    pub fn counts(self) -> [(&'static str, u64); 4] {
        [
            ("prompt_tokens", self.prompt_tokens),
            ("completion_tokens", self.completion_tokens),
            ("cached_tokens", self.cached_tokens),
            ("cache_creation_tokens", self.cache_creation_tokens),
        ]
    }
}

impl std::ops::Add for Tokens {
    type Output = Tokens;
    fn add(self, other: Tokens) -> Tokens {
        Tokens {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
            cached_tokens: self.cached_tokens.saturating_add(other.cached_tokens),
            cache_creation_tokens: self
                .cache_creation_tokens
                .saturating_add(other.cache_creation_tokens),
        }
    }
}

impl std::ops::AddAssign for Tokens {
    fn add_assign(&mut self, other: Tokens) {
        *self = *self + other;
    }
}

/// What a call, or what must stay for the calls after it, may cost at most in tokens
/// (docs/design/pm-round.md#token-budget): its prompt and its reply apart, because a cost budget prices
/// them apart; a token budget counts them together ([`Charge::total`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Charge {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Charge {
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Charge {
        Charge {
            prompt_tokens,
            completion_tokens,
        }
    }

    /// Prompt and reply together: what a token budget counts.
    pub fn total(self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    pub fn plus(self, other: Charge) -> Charge {
        Charge::new(
            self.prompt_tokens.saturating_add(other.prompt_tokens),
            self.completion_tokens
                .saturating_add(other.completion_tokens),
        )
    }

    pub fn times(self, n: u64) -> Charge {
        Charge::new(
            self.prompt_tokens.saturating_mul(n),
            self.completion_tokens.saturating_mul(n),
        )
    }

    /// The larger of each part: at least either charge, in tokens and at any prices.
    pub fn at_least(self, other: Charge) -> Charge {
        Charge::new(
            self.prompt_tokens.max(other.prompt_tokens),
            self.completion_tokens.max(other.completion_tokens),
        )
    }
}

/// A pending call's `reserve` as boards before the cost budget wrote it too: one number of
/// tokens (`reserve_tokens`), read as prompt tokens.
pub(super) fn charge_or_tokens<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Charge>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Wire {
        Tokens(u64),
        Charge(Charge),
    }
    Ok(Option::<Wire>::deserialize(d)?.map(|w| match w {
        Wire::Tokens(n) => Charge::new(n, 0),
        Wire::Charge(c) => c,
    }))
}

/// [`Tokens`] serialised with every count, 0 included: the report's template variables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllTokens(pub Tokens);

impl Serialize for AllTokens {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(4))?;
        for (name, n) in self.0.counts() {
            map.serialize_entry(name, &n)?;
        }
        map.end()
    }
}

/// Token and call counts of one caller.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallerUsage {
    pub calls: u64,
    #[serde(flatten)]
    pub tokens: Tokens,
    pub duration_ms: u64,
    /// True when some counts were estimated from characters (the server returned none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// The largest `prompt_tokens` of one call the provider reported: a floor under the token
    /// budget's estimates (docs/design/pm-round.md#token-budget).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub max_prompt_tokens: u64,
    /// What a gateway said it billed for this caller's calls (US dollars,
    /// `x-litellm-response-cost`), when it said: it wins over the price table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billed_usd: Option<f64>,
}

/// What a meeting cost in US dollars at a price table's prices (docs/design/llm.md#prices).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    /// The whole meeting; absent when a caller's model is not in the table (an unknown price
    /// is never $0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    /// Each live caller's cost; null for one whose model is not in the table.
    pub by_caller: BTreeMap<String, Option<f64>>,
    /// The callers whose model the table does not know: `arch (openai qwen3:8b)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
    /// The callers whose cost is what a gateway billed (`x-litellm-response-cost`), not the
    /// table's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub billed: Vec<String>,
    /// The price table and its date.
    pub prices: String,
}

/// Usage totals; `calls` is also the global call number that keys replay cassettes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub calls: u64,
    #[serde(flatten)]
    pub tokens: Tokens,
    pub by_caller: BTreeMap<String, CallerUsage>,
}

impl Usage {
    /// The model requests made, retries included: what the callers were charged. `calls`, the
    /// call counter, can be higher: a fan-out fixes its calls' numbers before sending and
    /// leaves the numbers a retry did not need unused (docs/design/agent-turn.md#fan-out). A board whose
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

    /// `counts` names the fields as serde does, and the sum adds every count.
    #[test]
    fn tokens_are_named_once_and_add_up() {
        let t = Tokens {
            prompt_tokens: 1,
            completion_tokens: 2,
            cached_tokens: 3,
            cache_creation_tokens: 4,
        };
        let written = serde_json::to_value(t).unwrap();
        let named: serde_json::Map<String, serde_json::Value> = t
            .counts()
            .into_iter()
            .map(|(k, n)| (k.to_string(), n.into()))
            .collect();
        assert_eq!(written, serde_json::Value::Object(named.clone()));
        assert_eq!(
            serde_json::to_value(AllTokens(t)).unwrap(),
            serde_json::Value::Object(named)
        );
        let mut sum = t;
        sum += t;
        assert_eq!(sum.since(t), t);
        assert_eq!((sum.total(), sum.cache_creation_tokens), (6, 8));
        let zero = serde_json::to_value(Tokens::default()).unwrap();
        assert_eq!(
            zero,
            serde_json::json!({"prompt_tokens": 0, "completion_tokens": 0})
        );
    }
}
