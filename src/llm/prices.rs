//! What a meeting cost (docs/design/llm.md#prices): a dated subset of LiteLLM's price table
//! (`share/prices/prices.json`, embedded; `AGENT_MEETING_PRICES` names a fuller or private one
//! of the same shape), and the cost of each caller's tokens at its model's prices — cached
//! tokens at the cached-read price, cache writes at the write price. A model the table does
//! not know is **unpriced**, never $0; a replayed or sample answer, a person's and an Ollama
//! model's are not paid by the token and are not priced.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::ProviderName;
use crate::model::{CallerSource, Cost, Tokens, Usage};

const BUILT_IN: &str = include_str!("../../share/prices/prices.json");

/// The variable naming a price table of the built-in one's shape.
pub const PRICES_ENV: &str = "AGENT_MEETING_PRICES";

/// One model's prices, in US dollars per token.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Price {
    pub provider: String,
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
    pub max_input_tokens: Option<u64>,
    #[serde(default)]
    pub endpoints: Vec<String>,
}

impl Price {
    /// Whether the table lists the Responses API and not Chat Completions among the model's
    /// endpoints (LiteLLM's `supported_endpoints`): it is served only there
    /// (docs/design/llm.md#responses-api).
    pub fn responses_only(&self) -> bool {
        let has = |e: &str| self.endpoints.iter().any(|x| x == e);
        has("/v1/responses") && !has("/v1/chat/completions")
    }

    /// The cost of `t`: uncached input, cached reads, cache writes and output, each at its
    /// price (a missing cache price is the input price).
    pub fn cost(&self, t: &Tokens) -> f64 {
        let special = t.cached_tokens + t.cache_creation_tokens;
        let plain = t.prompt_tokens.saturating_sub(special) as f64;
        plain * self.input
            + t.cached_tokens as f64 * self.cache_read.unwrap_or(self.input)
            + t.cache_creation_tokens as f64 * self.cache_write.unwrap_or(self.input)
            + t.completion_tokens as f64 * self.output
    }
}

/// A price table: where it comes from, its date, its models.
#[derive(Debug, Clone, Deserialize)]
pub struct Prices {
    pub source: String,
    pub date: String,
    pub models: BTreeMap<String, Price>,
}

static CURRENT: OnceLock<Prices> = OnceLock::new();

/// Use the table in `file` for this process (`meeting --prices FILE`); a file that is no
/// price table is bad input (exit 2) naming it. Call it before anything is priced.
pub fn use_table(file: &std::path::Path) -> Result<(), crate::Error> {
    let label = file.display().to_string();
    let text = crate::io::read_text_file(file)?;
    let table: Prices = crate::io::parse_doc(&label, &text, crate::io::Format::Json)?;
    if let Some((path, why)) = table.unusable() {
        return Err(crate::Error::input(&label, &path, why));
    }
    let _ = CURRENT.set(table);
    Ok(())
}

impl Prices {
    /// The table in use: the one [`use_table`] set, else `AGENT_MEETING_PRICES`'s when set and
    /// readable, else the built-in. An unreadable one is said once on stderr and the built-in
    /// is used.
    pub fn current() -> &'static Prices {
        CURRENT.get_or_init(|| match std::env::var_os(PRICES_ENV) {
            None => Prices::built_in(),
            Some(path) => match std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str::<Prices>(&t).map_err(|e| e.to_string()))
                .and_then(|p| match p.unusable() {
                    Some((path, why)) => Err(format!("{path}: {why}")),
                    None => Ok(p),
                }) {
                Ok(p) => p,
                Err(e) => {
                    crate::note!(
                        "warning: {PRICES_ENV}={}: {e}; using the built-in prices",
                        std::path::Path::new(&path).display()
                    );
                    Prices::built_in()
                }
            },
        })
    }

    /// The first price that is no price — below zero or not a number — as its field path and
    /// what was expected: a negative price would make spending look like earning, and a dollar
    /// budget would never close the meeting.
    pub fn unusable(&self) -> Option<(String, String)> {
        for (name, p) in &self.models {
            let fields = [
                ("input", Some(p.input)),
                ("output", Some(p.output)),
                ("cache_read", p.cache_read),
                ("cache_write", p.cache_write),
            ];
            for (field, value) in fields {
                if let Some(v) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                    return Some((
                        format!("models.{name}.{field}"),
                        format!("{v} (expected dollars per token, 0 or more)"),
                    ));
                }
            }
        }
        None
    }

    /// The built-in table.
    pub fn built_in() -> Prices {
        serde_json::from_str(BUILT_IN).expect("the built-in price table parses")
    }

    /// The prices of `model` at `provider` (`azure` is priced as OpenAI's model of the same
    /// name); a dated name falls back to its undated one (`claude-sonnet-4-5-20250929`).
    pub fn of(&self, provider: &str, model: &str) -> Option<&Price> {
        let provider = if provider == "azure" {
            "openai"
        } else {
            provider
        };
        let model = model.trim();
        let found = |name: &str| {
            self.models
                .get(name)
                .or_else(|| self.models.get(&format!("{provider}/{name}")))
                .filter(|p| p.provider == provider)
        };
        found(model).or_else(|| {
            let (stem, date) = model.rsplit_once('-')?;
            (date.len() == 8 && date.chars().all(|c| c.is_ascii_digit()))
                .then(|| found(stem))
                .flatten()
        })
    }

    /// A meeting's cost, from its usage per caller and the provider and model each caller
    /// used. `None` when no caller used a live model (a replay, the sample provider).
    pub fn meeting_cost(
        &self,
        usage: &Usage,
        callers: &BTreeMap<String, CallerSource>,
    ) -> Option<Cost> {
        let mut cost = Cost {
            prices: format!("{} of {}", self.source_name(), self.date),
            ..Cost::default()
        };
        let mut total = 0.0;
        for (name, used) in &usage.by_caller {
            let Some(source) = callers.get(name) else {
                continue;
            };
            // Nothing was paid for by the token: a replayed or sample answer, a person's, an
            // Ollama model's.
            let by_token = ProviderName::parse(&source.provider).is_none_or(|p| p.paid_by_token());
            if source.replayed || !by_token || source.provider == crate::model::HUMAN_PROVIDER {
                continue;
            }
            let model = source.model.as_deref().unwrap_or("");
            // A gateway's own bill wins over the table (it knows its discounts and markups).
            if let Some(usd) = used.billed_usd {
                total += usd;
                cost.by_caller.insert(name.clone(), Some(usd));
                cost.billed.push(name.clone());
                continue;
            }
            match self.of(&source.provider, model) {
                Some(price) => {
                    let usd = price.cost(&used.tokens);
                    total += usd;
                    cost.by_caller.insert(name.clone(), Some(usd));
                }
                None => {
                    cost.by_caller.insert(name.clone(), None);
                    cost.unpriced
                        .push(format!("{name} ({} {model})", source.provider));
                }
            }
        }
        if cost.by_caller.is_empty() {
            return None;
        }
        cost.usd = cost.unpriced.is_empty().then_some(total);
        Some(cost)
    }

    /// The table's name as the report says it: its source up to the first comma.
    pub fn source_name(&self) -> &str {
        self.source.split(',').next().unwrap_or(&self.source)
    }
}

/// A cost as people read it: `$0.0123`, `$1.24`.
pub fn dollars(usd: f64) -> String {
    // An empty sum of f64 is -0.0: nothing spent reads $0.0000, not $-0.0000.
    let usd = usd + 0.0;
    if usd >= 1.0 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

/// A meeting's cost in one phrase: `$0.0123`, or `unpriced (arch (openai qwen3:8b))`.
pub fn cost_phrase(cost: &Cost) -> String {
    match cost.usd {
        Some(usd) => dollars(usd),
        None => format!("unpriced ({})", cost.unpriced.join(", ")),
    }
}

/// Where a cost came from, for the report's cost line: the price table, a gateway's bill
/// (`x-litellm-response-cost`), or both — a bill is never credited to the table.
pub fn cost_source(cost: &Cost) -> String {
    let table = format!("at the prices of {}", cost.prices);
    let billed = &cost.billed;
    if billed.is_empty() {
        return table;
    }
    if cost.by_caller.keys().all(|c| billed.contains(c)) {
        return "as the gateway billed it".to_string();
    }
    format!(
        "as the gateway billed {}; the rest {table}",
        billed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gateway's bill is named as the bill, never as the table's prices.
    #[test]
    fn a_bill_is_not_credited_to_the_table() {
        let mut cost = Cost {
            usd: Some(0.5),
            by_caller: [
                ("pm".to_string(), Some(0.25)),
                ("arch".to_string(), Some(0.25)),
            ]
            .into(),
            unpriced: vec![],
            billed: vec![],
            prices: "LiteLLM of 2026-11-01".into(),
        };
        assert_eq!(cost_source(&cost), "at the prices of LiteLLM of 2026-11-01");
        cost.billed = vec!["arch".into(), "pm".into()];
        assert_eq!(cost_source(&cost), "as the gateway billed it");
        cost.billed = vec!["pm".into()];
        assert_eq!(
            cost_source(&cost),
            "as the gateway billed pm; the rest at the prices of LiteLLM of 2026-11-01"
        );
    }

    /// Nothing spent is $0.0000 — the sum of no caller's cost is -0.0 — and dollars from one
    /// up keep two decimals.
    #[test]
    fn dollars_never_show_a_negative_zero() {
        let nothing: f64 = std::iter::empty::<f64>().sum();
        assert_eq!(dollars(nothing), "$0.0000");
        assert_eq!(dollars(0.01234), "$0.0123");
        assert_eq!(dollars(2.5), "$2.50");
    }

    fn source(provider: &str, model: &str, replayed: bool) -> CallerSource {
        CallerSource {
            provider: provider.into(),
            replayed,
            model: Some(model.into()),
            note: None,
        }
    }

    fn usage(rows: &[(&str, Tokens)]) -> Usage {
        let mut u = Usage::default();
        for (name, t) in rows {
            let row = u.by_caller.entry(name.to_string()).or_default();
            row.tokens = *t;
        }
        u
    }

    fn tokens(prompt: u64, completion: u64, cached: u64, written: u64) -> Tokens {
        Tokens {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: cached,
            cache_creation_tokens: written,
        }
    }

    /// The built-in table knows the default models; cached and written tokens are priced as
    /// such; a dated Anthropic name finds its undated row.
    #[test]
    fn tokens_are_priced_as_the_table_says() {
        let p = Prices::built_in();
        assert!(p.date.len() == 10 && p.source.contains("LiteLLM"));
        let mini = p
            .of("openai", "gpt-4o-mini")
            .expect("gpt-4o-mini is priced");
        let plain = mini.cost(&tokens(1_000_000, 0, 0, 0));
        let cached = mini.cost(&tokens(1_000_000, 0, 1_000_000, 0));
        assert!(plain > 0.0 && cached < plain, "{plain} {cached}");
        let out = mini.cost(&tokens(0, 1_000_000, 0, 0));
        assert!((out - 1_000_000.0 * mini.output).abs() < 1e-9);
        let sonnet = p
            .of("anthropic", "claude-sonnet-4-5-20250929")
            .expect("dated name");
        let written = sonnet.cost(&tokens(1_000_000, 0, 0, 1_000_000));
        assert!(written > sonnet.cost(&tokens(1_000_000, 0, 0, 0)));
        assert_eq!(
            p.of("anthropic", "gpt-4o-mini"),
            None,
            "another provider's model"
        );
        assert_eq!(p.of("openai", "qwen3:8b"), None);
    }

    /// The models served only by the Responses API are told by their endpoints: a `-pro` and
    /// a `-codex` one (a dated name too), not a model on both APIs nor one with none listed.
    #[test]
    fn responses_only_models_are_known_by_their_endpoints() {
        let p = Prices::built_in();
        let only = |m: &str| p.of("openai", m).is_some_and(Price::responses_only);
        assert!(only("gpt-5-pro") && only("gpt-5.1-codex") && only("gpt-5-pro-2025-10-06"));
        assert!(
            !only("gpt-5") && !only("gpt-4o-mini"),
            "both APIs, or none listed"
        );
    }

    /// A model the table does not know makes the meeting unpriced — never $0 — and says
    /// which caller; replayed answers are not priced at all.
    #[test]
    fn an_unknown_model_is_unpriced_never_free() {
        let p = Prices::built_in();
        let t = tokens(10_000, 1_000, 0, 0);
        let u = usage(&[("pm", t), ("arch", t)]);
        let mut callers = BTreeMap::new();
        callers.insert("pm".to_string(), source("openai", "gpt-4o-mini", false));
        callers.insert("arch".to_string(), source("openai", "qwen3:8b", false));
        let cost = p.meeting_cost(&u, &callers).unwrap();
        assert_eq!(cost.usd, None);
        assert_eq!(cost.by_caller["arch"], None);
        assert!(cost.by_caller["pm"].unwrap() > 0.0);
        assert_eq!(cost.unpriced, ["arch (openai qwen3:8b)"]);
        assert!(cost_phrase(&cost).starts_with("unpriced (arch"));
        callers.insert(
            "arch".to_string(),
            source("anthropic", "claude-haiku-4-5", false),
        );
        let cost = p.meeting_cost(&u, &callers).unwrap();
        let sum = cost.by_caller.values().map(|v| v.unwrap()).sum::<f64>();
        assert_eq!(cost.usd, Some(sum));
        callers.insert("pat".to_string(), source("human", "human", false));
        let with_person = p
            .meeting_cost(&usage(&[("pm", t), ("arch", t), ("pat", t)]), &callers)
            .unwrap();
        assert!(!with_person.by_caller.contains_key("pat") && with_person.usd.is_some());
        // An Ollama model is not paid by the token: not priced, and no reason to be unpriced.
        callers.insert("ops".to_string(), source("ollama", "qwen3:8b", false));
        let with_ollama = p
            .meeting_cost(&usage(&[("pm", t), ("arch", t), ("ops", t)]), &callers)
            .unwrap();
        assert!(
            !with_ollama.by_caller.contains_key("ops"),
            "{with_ollama:?}"
        );
        assert!(with_ollama.usd.is_some() && with_ollama.unpriced.is_empty());
        let only = BTreeMap::from([("ops".to_string(), source("ollama", "qwen3:8b", false))]);
        assert_eq!(p.meeting_cost(&usage(&[("ops", t)]), &only), None);
        for c in callers.values_mut() {
            c.replayed = true;
        }
        assert_eq!(p.meeting_cost(&u, &callers), None, "a replay paid nothing");
    }
}
