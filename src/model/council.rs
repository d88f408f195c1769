//! The council round's documents (docs/design/council.md): the meeting file's `council:`, a
//! member's blind vote and its ranking of the others' answers, and what the board keeps of
//! the round (the members, their anonymous labels, the rankings and the aggregate).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Confidence, DocumentCitation};

/// The choice of a member who finds none of the packet's options right (its reasons say why),
/// and the PM's (its decision's `why_none` says why).
pub const NONE_OF_THESE: &str = "none of these";

/// Whether `choice` is [`NONE_OF_THESE`] (case, spacing and a final full stop aside).
pub fn is_none_of_these(choice: &str) -> bool {
    crate::text::fold_ws(choice)
        .trim_end_matches('.')
        .eq_ignore_ascii_case(NONE_OF_THESE)
}

/// A meeting file's `council:`: `true` (or `false`), or the settings
/// (docs/design/council.md#settings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CouncilSetting {
    On(bool),
    With(CouncilSettings),
}

/// `council: {models: [...]}` (and `--council-models`): the members' models, one per
/// participant in order (`provider:model`, or `provider`); a participant without one keeps its
/// own provider and model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CouncilSettings {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// Seat two members first (of different model families where the council has them), and
    /// the rest only when those two disagree or either is unsure (docs/design/council.md#adaptive).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adaptive: bool,
}

impl CouncilSetting {
    /// The settings when the council is on.
    pub fn settings(&self) -> Option<CouncilSettings> {
        match self {
            CouncilSetting::On(true) => Some(CouncilSettings::default()),
            CouncilSetting::On(false) => None,
            CouncilSetting::With(s) => Some(s.clone()),
        }
    }
}

/// A member's blind answer to the decision (checked: the choice is one of the packet's
/// options or [`NONE_OF_THESE`], reasons are content, citations name collected documents).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CouncilVote {
    pub choice: String,
    pub confidence: Confidence,
    pub reasons: Vec<String>,
    #[serde(default)]
    pub citations: Vec<DocumentCitation>,
}

/// A member's ranking of the others' answers, by their anonymous labels, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CouncilRanking {
    pub ranking: Vec<String>,
}

/// Where the council round is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CouncilPhase {
    /// The members answer blind (the calls are in `pending_calls`).
    Vote,
    /// Each member ranks the others' answers, anonymized.
    Rank,
    /// The aggregate is on the whiteboard; the PM works as usual.
    Done,
}

/// One member of the council and what it said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CouncilMember {
    pub name: String,
    /// Its anonymous label in the ranking round (`A`, `B`, …; shuffled from the trace id);
    /// absent when it gave no usable vote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vote: Option<CouncilVote>,
    /// Its ranking of the others' labels, best first (absent: none given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranking: Option<Vec<String>>,
    /// Why its vote or ranking failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// An adaptive council's member not seated (yet): asked only if the first two disagree.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

/// The council round on the board (absent: no council).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Council {
    pub phase: CouncilPhase,
    pub members: Vec<CouncilMember>,
    /// The deterministic aggregate, once the votes (and rankings) are in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<CouncilAggregate>,
    /// An adaptive council (docs/design/council.md#adaptive): who was seated first, and
    /// whether the rest were seated after them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveRound>,
}

/// How an adaptive council went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveRound {
    /// The two members seated first.
    pub first: Vec<String>,
    /// Whether the others were seated (the first two disagreed, or one was unsure); absent
    /// until the first two have voted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalated: Option<bool>,
    /// The first two did not agree, but the budget could not hold the others' votes (and the
    /// ranking round): they stayed unseated (docs/design/council.md#adaptive).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub short_of_budget: bool,
}

/// The votes one choice got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChoiceTally {
    pub choice: String,
    pub votes: u32,
    pub members: Vec<String>,
}

/// A member's answer as the others ranked it: Borda points (a first place among k answers is
/// k-1 points, the last 0) and each ranker's place (1-based).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BordaScore {
    pub member: String,
    pub points: u32,
    pub places: Vec<RankPlace>,
}

/// The place one ranker gave an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankPlace {
    pub by: String,
    pub place: u32,
}

/// A member who chose otherwise than the leading choice, and its first reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dissent {
    pub member: String,
    pub choice: String,
    pub reason: String,
}

/// The council's aggregate (docs/design/council.md#aggregate), a pure function of the votes
/// and rankings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CouncilAggregate {
    /// Every option of the packet (0 votes included), then any other choice, in order of
    /// first vote.
    pub tally: Vec<ChoiceTally>,
    /// The voters' answers, in member order.
    pub borda: Vec<BordaScore>,
    /// The choice with the most votes, a tie broken by its voters' Borda points; absent when
    /// still tied or nobody voted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leading: Option<String>,
    /// Usable votes.
    pub voters: u32,
    /// Votes for the leading choice.
    pub agreeing: u32,
    pub dissent: Vec<Dissent>,
}

impl CouncilAggregate {
    /// Whether the leading choice has more than half the votes.
    pub fn majority(&self) -> bool {
        self.leading.is_some() && self.agreeing * 2 > self.voters
    }

    /// The votes in words: `Read replica 2 (arch, sre); Tune the primary 1 (biz)`.
    pub fn votes_line(&self) -> String {
        self.tally
            .iter()
            .map(|t| {
                if t.members.is_empty() {
                    format!("{} 0", t.choice)
                } else {
                    format!("{} {} ({})", t.choice, t.votes, t.members.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The agreement in words: `2 of 3 votes`, `1 of 1 vote`.
    pub fn agreement(&self) -> String {
        format!(
            "{} of {}",
            self.agreeing,
            crate::text::plural(self.voters, "vote")
        )
    }

    /// The leading choice in words.
    pub fn leading_line(&self) -> String {
        match &self.leading {
            Some(l) if self.majority() => format!("{l}, {} (a majority)", self.agreement()),
            Some(l) => format!("{l}, {} (no majority)", self.agreement()),
            None if self.voters == 0 => "none: no member gave a usable vote".into(),
            None => "none: the votes are tied".into(),
        }
    }
}

/// A council member's answer in `last_turns[i].council`: its vote, or its ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum CouncilAnswer {
    Vote(CouncilVote),
    Ranking(CouncilRanking),
}
