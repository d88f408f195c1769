//! The report's Council section (docs/design/council.md#report): each member's model, vote,
//! reasons and places, the votes and the leading choice, the dissent, and whether the
//! decision follows the council.

use crate::model::{Board, BordaScore, Council, CouncilAggregate, CouncilMember};
use crate::text::fold_ws;

/// One member as the report's Council section shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct MemberRow {
    pub name: String,
    /// `provider:model` as its calls were made (the record's callers).
    pub model: String,
    pub choice: String,
    pub confidence: String,
    pub reasons: String,
    /// Borda points and each ranker's place (`1st by biz`), or empty.
    pub ranked: String,
    pub error: String,
}

/// The report's Council section (docs/design/council.md#report).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct CouncilView {
    pub members: Vec<MemberRow>,
    pub votes: String,
    pub leading: String,
    pub dissent: Vec<String>,
    /// Whether the decision follows the leading choice, in words (empty without a decision).
    pub follows: String,
    /// An adaptive council's seating, in words (empty for a whole council).
    pub adaptive: String,
}

/// The council for the report (`None` without a council or before its aggregate).
pub(crate) fn view(board: &Board, decision: Option<&str>) -> Option<CouncilView> {
    let c = board.council.as_ref()?;
    let a = c.aggregate.as_ref()?;
    Some(CouncilView {
        members: c.members.iter().map(|m| member_row(board, a, m)).collect(),
        votes: a.votes_line(),
        leading: a.leading_line(),
        dissent: a
            .dissent
            .iter()
            .map(|d| {
                let reason = quotes_checked(board, &d.reason);
                format!("{} chose {}: {reason}", d.member, d.choice)
            })
            .collect(),
        follows: follows(board, a, decision),
        adaptive: adaptive(c),
    })
}

/// One member's row: its model as its calls were made, its vote, its places, its error (or
/// why it was not seated).
fn member_row(board: &Board, a: &CouncilAggregate, m: &CouncilMember) -> MemberRow {
    let model = board
        .record
        .callers
        .get(&m.name)
        .map_or_else(String::new, |s| match &s.model {
            Some(model) if *model != s.provider => format!("{}:{model}", s.provider),
            _ => s.provider.clone(),
        });
    MemberRow {
        name: m.name.clone(),
        model,
        choice: m
            .vote
            .as_ref()
            .map(|v| fold_ws(&v.choice))
            .unwrap_or_default(),
        confidence: m
            .vote
            .as_ref()
            .map(|v| v.confidence.as_str().to_string())
            .unwrap_or_default(),
        reasons: m
            .vote
            .as_ref()
            .map(|v| {
                v.reasons
                    .iter()
                    .map(|r| quotes_checked(board, &fold_ws(r)))
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .unwrap_or_default(),
        ranked: ranked(a.borda.iter().find(|b| b.member == m.name)),
        error: if m.held {
            let budget = board
                .council
                .as_ref()
                .and_then(|c| c.adaptive.as_ref())
                .is_some_and(|r| r.short_of_budget);
            if budget {
                "not seated: the budget had no room for it".to_string()
            } else {
                "not seated: the first two agreed".to_string()
            }
        } else {
            m.error
                .as_deref()
                .map(|e| crate::text::cut(&fold_ws(e), 160))
                .unwrap_or_default()
        },
    }
}

/// A vote's reason as the report shows it: a quote in it that no collected document holds is
/// marked unverified (members have voted "none of these" on figures and a quote found in no
/// document).
fn quotes_checked(board: &Board, reason: &str) -> String {
    let excerpts: Vec<&str> = board
        .context_bundle
        .documents
        .iter()
        .map(|d| d.excerpt.as_str())
        .collect();
    crate::text::mark_unverified_quotes(reason, &excerpts)
}

/// A member's Borda points and each ranker's place (`2 points: 1st by biz, 1st by sre`), or
/// empty when nobody ranked it.
fn ranked(score: Option<&BordaScore>) -> String {
    let ordinal = |n: u32| match n {
        1 => "1st".to_string(),
        2 => "2nd".to_string(),
        3 => "3rd".to_string(),
        n => format!("{n}th"),
    };
    score
        .filter(|b| !b.places.is_empty())
        .map(|b| {
            let places: Vec<String> = b
                .places
                .iter()
                .map(|p| format!("{} by {}", ordinal(p.place), p.by))
                .collect();
            format!(
                "{}: {}",
                crate::text::plural(u64::from(b.points), "point"),
                places.join(", ")
            )
        })
        .unwrap_or_default()
}

/// An adaptive council's seating, in words (empty for a whole council).
fn adaptive(c: &Council) -> String {
    c.adaptive.as_ref().map_or_else(String::new, |r| {
        let first = r.first.join(" and ");
        let n = c.members.len();
        match r.escalated {
            Some(false) if r.short_of_budget => format!(
                "Adaptive council: {first} were seated first and did not agree (or one was unsure), but the budget could not hold the other {} members' votes and the ranking round, so the vote is theirs alone.",
                n - 2
            ),
            Some(false) => format!(
                "Adaptive council: {first} were seated first and agreed with confidence, so {} of the {n} members were not asked ({} calls saved, and the ranking round).",
                n - 2,
                n - 2
            ),
            _ => format!(
                "Adaptive council: {first} were seated first and did not agree (or one was unsure), so all {n} members voted."
            ),
        }
    })
}

/// Whether the decision follows the council's leading choice, in words, with the PM's reason
/// when it does not (empty without a decision).
fn follows(board: &Board, a: &CouncilAggregate, decision: Option<&str>) -> String {
    match (decision, &a.leading) {
        (Some(d), Some(l)) if same_choice(d, l) => format!(
            "The decision follows the council's {} ({l}, {}).",
            if a.majority() {
                "majority"
            } else {
                "leading choice"
            },
            a.agreement()
        ),
        (Some(_), Some(l)) => {
            let why = board
                .record
                .decision
                .as_ref()
                .and_then(|d| d.against_council.as_deref())
                .map(fold_ws)
                .filter(|w| !w.is_empty())
                .map_or_else(
                    || "the PM gave no reason beyond its recommendation.".to_string(),
                    |w| format!("the PM's reason: {w}"),
                );
            format!(
                "The decision does not follow the council's {} ({l}, {}): {why}",
                if a.majority() {
                    "majority"
                } else {
                    "leading choice"
                },
                a.agreement()
            )
        }
        (Some(_), None) => format!(
            "The council had no leading choice ({}); the PM decided.",
            a.leading_line()
        ),
        (None, _) => String::new(),
    }
}

/// Whether the PM's choice is the council's (the same words, or the option named at the start
/// of a longer choice: "Read replica, with lag monitoring").
pub(super) fn same_choice(decision: &str, leading: &str) -> bool {
    let d = fold_ws(decision).to_lowercase();
    let l = fold_ws(leading).to_lowercase();
    d == l || d.starts_with(&l)
}
