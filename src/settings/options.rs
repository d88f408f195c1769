//! [`MeetingOptions`]: the options of one meeting as every surface takes them — who takes part,
//! how long and how much it may run, the council, the reviewers, the decision record — spelled
//! once (docs/design/agents-and-config.md#meeting-options). The MCP tools' input schema is its
//! JSON Schema, the repository file of the forges deserializes into it, and a spawned `meeting`
//! gets it through the one writer of its flags, [`MeetingOptions::to_args`]. The command line's
//! flags map onto it at the edge (`cli::flags`), and a test there parses what `to_args` writes
//! back into the same value, so the writer and the flags cannot drift.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// Every option of a meeting that a surface may set; `None`, an empty list or `false`: not
/// given here (what is given elsewhere, or the default, applies).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct MeetingOptions {
    /// The specialists taking part, in speaking order (see list_agents), e.g. ["arch", "biz"].
    #[serde(
        deserialize_with = "lenient::names",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Vec<String>")]
    pub agents: Vec<String>,
    /// The PM's config name, looked up like the agents (the built-in PM when none is found).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pm: Option<String>,
    /// Most agent turns before the PM must close the meeting (default 6).
    #[serde(
        deserialize_with = "lenient::number",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1))]
    pub max_loops: Option<u32>,
    /// Most participants the PM may ask at once (default 3; 1: one at a time).
    #[serde(
        deserialize_with = "lenient::number",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1, max = crate::model::MAX_PARALLEL))]
    pub max_parallel: Option<u32>,
    /// Token budget of the whole meeting (prompt + completion, every call); the PM closes the
    /// meeting in time to write its report inside it.
    #[serde(
        deserialize_with = "lenient::number",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1))]
    pub max_total_tokens: Option<u64>,
    /// Dollars the whole meeting may spend, at the price table's prices; the PM closes the
    /// meeting in time to write its report inside it.
    #[serde(
        deserialize_with = "lenient::dollars",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub max_cost: Option<f64>,
    /// Dollars the meetings started today (UTC) in the run folder may spend together: a
    /// meeting is refused once they have, and may spend at most what is left.
    #[serde(
        deserialize_with = "lenient::dollars",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub max_cost_per_day: Option<f64>,
    /// Reviewers of the PM's draft before the report is final, e.g. ["devils-advocate"].
    // `review_by`: as a run folder of an earlier build keeps them.
    #[serde(
        alias = "review_by",
        deserialize_with = "lenient::names",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Vec<String>")]
    pub reviewers: Vec<String>,
    /// How many of the PM's drafts are reviewed (1 to 5; turns the review on, by the built-in
    /// devil's advocate when no reviewers are named).
    #[serde(
        deserialize_with = "lenient::number",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 1, max = crate::model::MAX_REVIEW_ROUNDS))]
    pub review_rounds: Option<u32>,
    /// Open with a council round: every agent answers the decision blind (one of the decision
    /// packet's options), then ranks the others' answers anonymized; the PM sees the votes and
    /// the dissent, and the report gains a Council section.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub council: bool,
    /// An adaptive council (implies council): two members of different model families vote
    /// first, the rest only when those two disagree or either is unsure.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub council_adaptive: bool,
    /// The council members' models, one per agent in order (implies council), e.g.
    /// ["openai:gpt-4o-mini", "ollama:llama3.2"].
    #[serde(
        deserialize_with = "lenient::names",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Vec<String>")]
    pub council_models: Vec<String>,
    /// Also write the decision as a MADR 4 record into this folder (e.g. "docs/decisions"),
    /// numbered after the records already there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adr: Option<PathBuf>,
    /// With adr: the number of the record this decision supersedes (such as "0003").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// With adr: who decides, the record's decision-makers (people, never the agents).
    #[serde(
        deserialize_with = "lenient::names",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Vec<String>")]
    pub deciders: Vec<String>,
}

impl MeetingOptions {
    /// These options over `under`: each option given here wins, the others are `under`'s.
    pub fn over(self, under: MeetingOptions) -> MeetingOptions {
        let list = |a: Vec<String>, b: Vec<String>| if a.is_empty() { b } else { a };
        MeetingOptions {
            agents: list(self.agents, under.agents),
            pm: self.pm.or(under.pm),
            max_loops: self.max_loops.or(under.max_loops),
            max_parallel: self.max_parallel.or(under.max_parallel),
            max_total_tokens: self.max_total_tokens.or(under.max_total_tokens),
            max_cost: self.max_cost.or(under.max_cost),
            max_cost_per_day: self.max_cost_per_day.or(under.max_cost_per_day),
            reviewers: list(self.reviewers, under.reviewers),
            review_rounds: self.review_rounds.or(under.review_rounds),
            council: self.council || under.council,
            council_adaptive: self.council_adaptive || under.council_adaptive,
            council_models: list(self.council_models, under.council_models),
            adr: self.adr.or(under.adr),
            supersedes: self.supersedes.or(under.supersedes),
            deciders: list(self.deciders, under.deciders),
        }
    }

    /// What `meeting` refuses, found before a meeting is spawned, naming the option (`label`:
    /// where the options came from, such as `arguments` or the repository file).
    pub fn check(&self, label: &str) -> Result<()> {
        let bad = |field: &str, expected: String| Err(Error::input(label, field, expected));
        for (field, usd) in [
            ("max_cost", self.max_cost),
            ("max_cost_per_day", self.max_cost_per_day),
        ] {
            if let Some(usd) = usd.filter(|u| !(u.is_finite() && *u > 0.0)) {
                return bad(field, format!("expected more than 0 dollars, got {usd}"));
            }
        }
        if self.max_total_tokens == Some(0) {
            return bad("max_total_tokens", "expected at least 1 token".into());
        }
        if self.max_loops == Some(0) {
            return bad("max_loops", "expected at least 1 loop".into());
        }
        let most = crate::model::MAX_PARALLEL;
        if let Some(n) = self.max_parallel.filter(|n| !(1..=most).contains(n)) {
            return bad("max_parallel", format!("expected 1 to {most}, got {n}"));
        }
        let rounds = crate::model::MAX_REVIEW_ROUNDS;
        if let Some(n) = self.review_rounds.filter(|n| !(1..=rounds).contains(n)) {
            return bad("review_rounds", format!("expected 1 to {rounds}, got {n}"));
        }
        if self.adr.is_none() && (self.supersedes.is_some() || !self.deciders.is_empty()) {
            let field = if self.supersedes.is_some() {
                "supersedes"
            } else {
                "deciders"
            };
            return bad(
                field,
                "goes with adr (the folder of the decision records)".into(),
            );
        }
        Ok(())
    }

    /// The one writer of `meeting`'s flags for these options: what a surface that spawns a
    /// meeting (the MCP server, the forges) gives it. Nothing is written for an option not
    /// given.
    pub fn to_args(&self) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        let mut flag = |name: &str, value: Option<String>| {
            if let Some(v) = value {
                args.extend([format!("--{name}"), v]);
            }
        };
        let list = |l: &[String]| (!l.is_empty()).then(|| l.join(","));
        flag("agents", list(&self.agents));
        flag("pm", self.pm.clone());
        flag("max-loops", self.max_loops.map(|n| n.to_string()));
        flag("max-parallel", self.max_parallel.map(|n| n.to_string()));
        flag(
            "max-total-tokens",
            self.max_total_tokens.map(|n| n.to_string()),
        );
        flag("max-cost", self.max_cost.map(|n| n.to_string()));
        flag(
            "max-cost-per-day",
            self.max_cost_per_day.map(|n| n.to_string()),
        );
        flag("review-by", list(&self.reviewers));
        flag("review-rounds", self.review_rounds.map(|n| n.to_string()));
        flag("council-models", list(&self.council_models));
        flag("adr", self.adr.as_ref().map(|d| d.display().to_string()));
        flag("supersedes", self.supersedes.clone());
        flag("decider", list(&self.deciders));
        for (name, on) in [
            ("council", self.council),
            ("council-adaptive", self.council_adaptive),
        ] {
            if on {
                args.push(format!("--{name}"));
            }
        }
        args
    }
}

/// A document of a type holding [`MeetingOptions`] (the options themselves, the repository
/// file), with a key no field has refused as serde refuses one elsewhere, and the options'
/// values checked; errors name `label` and the field.
pub fn parse_strict<T>(label: &str, text: &str, format: crate::io::Format) -> Result<T>
where
    T: serde::de::DeserializeOwned + JsonSchema + AsRef<MeetingOptions>,
{
    let value: Value = crate::io::parse_doc(label, text, format)?;
    refuse_unknown_keys::<T>(label, &value)?;
    let parsed: T = crate::io::parse_doc(label, text, format)?;
    parsed.as_ref().check(label)?;
    Ok(parsed)
}

impl AsRef<MeetingOptions> for MeetingOptions {
    fn as_ref(&self) -> &MeetingOptions {
        self
    }
}

/// The first key of `value` (an object) that `T`'s JSON Schema does not list, as `label`'s
/// error naming it and the keys it takes. serde cannot refuse unknown keys of a type that
/// flattens [`MeetingOptions`] into its own (`#[serde(flatten)]`), so the types that do are
/// checked against their schema, which lists both.
pub fn refuse_unknown_keys<T: JsonSchema>(label: &str, value: &Value) -> Result<()> {
    let Some(object) = value.as_object() else {
        return Ok(());
    };
    let schema = schemars::schema_for!(T).to_value();
    let known = schema["properties"].as_object();
    let takes = |k: &str| known.is_some_and(|p| p.contains_key(k));
    match object.keys().find(|k| !takes(k)) {
        None => Ok(()),
        Some(key) => {
            let names: Vec<String> = known
                .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
                .unwrap_or_default();
            Err(Error::input(
                label,
                key,
                format!(
                    "unknown field `{key}`, expected one of {}",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// What callers send that the schema did not quite ask for, taken as meant: a number as a
/// string (`"3"`, `"$0.50"`), a list as one comma-separated string (`"arch,biz"`) — forms a
/// model, a generic client (the MCP Inspector's CLI) or a hand-written YAML file sends.
pub mod lenient {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOr<N> {
        Number(N),
        Text(String),
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOr {
        List(Vec<String>),
        One(String),
    }

    fn parsed<'de, D, N>(d: D, what: &str) -> Result<Option<N>, D::Error>
    where
        D: Deserializer<'de>,
        N: Deserialize<'de> + std::str::FromStr,
    {
        match Option::<NumberOr<N>>::deserialize(d)? {
            None => Ok(None),
            Some(NumberOr::Number(n)) => Ok(Some(n)),
            Some(NumberOr::Text(t)) => t
                .trim()
                .trim_start_matches('$')
                .parse()
                .map(Some)
                .map_err(|_| serde::de::Error::custom(format!("expected {what}, got {t:?}"))),
        }
    }

    /// A whole number, or one as text.
    pub fn number<'de, D, N>(d: D) -> Result<Option<N>, D::Error>
    where
        D: Deserializer<'de>,
        N: Deserialize<'de> + std::str::FromStr,
    {
        parsed(d, "a whole number")
    }

    /// Dollars: a number, or one as text (`"0.50"`, `"$2"`).
    pub fn dollars<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        parsed(d, "a number of dollars (e.g. 0.50)")
    }

    fn list<'de, D: Deserializer<'de>>(d: D, split: bool) -> Result<Vec<String>, D::Error> {
        Ok(match Option::<ListOr>::deserialize(d)? {
            None => Vec::new(),
            Some(ListOr::List(l)) => l,
            Some(ListOr::One(s)) if split => s
                .split(',')
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect(),
            Some(ListOr::One(s)) => vec![s],
        })
    }

    /// Names: a list, or one comma-separated string.
    pub fn names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        list(d, true)
    }

    /// Paths: a list, or one path.
    pub fn paths<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        list(d, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Lenient forms are taken as meant; the schema lists every option once.
    #[test]
    fn lenient_forms_and_the_schema() {
        let o: MeetingOptions = serde_json::from_value(json!({
            "agents": "arch, biz", "max_loops": "4", "max_cost": "$0.25",
            "max_total_tokens": 9000, "council_models": ["openai:gpt-4o-mini"]
        }))
        .unwrap();
        assert_eq!(o.agents, ["arch", "biz"]);
        assert_eq!(o.max_loops, Some(4));
        assert_eq!(o.max_cost, Some(0.25));
        assert_eq!(o.max_total_tokens, Some(9000));
        let schema = schemars::schema_for!(MeetingOptions).to_value();
        let props = schema["properties"].as_object().unwrap();
        for key in [
            "agents",
            "max_cost",
            "max_total_tokens",
            "council_adaptive",
            "deciders",
        ] {
            assert!(props.contains_key(key), "{key}: {schema}");
        }
        assert_eq!(props["agents"]["type"], "array", "{schema}");
    }

    /// A given option wins over the one under it; what is not given is the one under it.
    #[test]
    fn given_options_win() {
        let flags = MeetingOptions {
            max_cost: Some(1.0),
            ..Default::default()
        };
        let file = MeetingOptions {
            agents: vec!["arch".into()],
            max_cost: Some(0.5),
            council: true,
            ..Default::default()
        };
        let o = flags.over(file);
        assert_eq!(o.max_cost, Some(1.0));
        assert_eq!(o.agents, ["arch"]);
        assert!(o.council);
    }

    /// A bad value is refused naming its field, before any meeting is spawned.
    #[test]
    fn bad_values_name_their_field() {
        for (o, field) in [
            (json!({"max_cost": 0}), "max_cost"),
            (json!({"max_parallel": 99}), "max_parallel"),
            (json!({"deciders": ["Ana"]}), "deciders"),
        ] {
            let o: MeetingOptions = serde_json::from_value(o).unwrap();
            let e = o.check("arguments").unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        }
    }

    /// A key no option has is refused with the keys there are.
    #[test]
    fn unknown_keys_are_named() {
        let e = refuse_unknown_keys::<MeetingOptions>("f.yaml", &json!({"max_cots": 1}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_cots") && e.contains("`max_cost`"), "{e}");
        refuse_unknown_keys::<MeetingOptions>("f.yaml", &json!({"max_cost": 1})).unwrap();
    }
}
