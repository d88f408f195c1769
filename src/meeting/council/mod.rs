//! The council round (docs/design/council.md): before the PM routes anyone, every member
//! answers the decision blind (a fan-out on the same board), then ranks the others' answers,
//! anonymized and shuffled; a deterministic aggregate goes on the whiteboard for the PM. The
//! rules init-board, agent-turn, merge-board, pm-step (its whiteboard) and render-report share
//! live here, so no stage imports another.
//!
//! This module owns the council's settings, its phase and the questions its calls carry; the
//! parts live in its submodules: opening the council ([`seat`]), folding its turns in
//! ([`round`]), a member's message ([`message`]), the vote ([`vote`]) and the ranking
//! ([`rank`]) with their schemas and checks, what its calls cost ([`cost`]), the aggregate
//! ([`aggregate`]) and the report's Council section ([`view`](mod@view)).

mod aggregate;
mod cost;
mod message;
mod rank;
mod round;
mod seat;
mod view;
mod vote;

pub(crate) use cost::max_tokens;
pub(crate) use message::member_message;
pub(crate) use rank::{check_ranking, rank_expected_json};
pub(crate) use round::merge;
pub(crate) use seat::start;
pub(crate) use view::{view, CouncilView};
pub(crate) use vote::{check_vote, vote_expected_json, vote_headline};

use crate::model::{Board, CouncilPhase, CouncilSettings};

/// The question each member is sent for its blind vote (the decision is in its prompt).
pub(crate) const VOTE_QUESTION: &str = "Council: answer the decision on your own, with your vote.";
/// The question each member is sent to rank the others' answers.
pub(crate) const RANK_QUESTION: &str = "Council: rank the other members' answers, anonymized.";

/// The meeting's council settings, when it has a council.
pub(crate) fn settings(board: &Board) -> Option<CouncilSettings> {
    board
        .meeting_input
        .council
        .as_ref()
        .and_then(|c| c.settings())
}

/// The phase the council is in while its calls run (vote or rank); `None` without a council
/// or once it is done.
pub(crate) fn active(board: &Board) -> Option<CouncilPhase> {
    board
        .council
        .as_ref()
        .map(|c| c.phase)
        .filter(|p| *p != CouncilPhase::Done)
}

/// One `--council-models` entry as agent metadata: `provider:model`, or `provider`.
pub(crate) fn model_metadata(spec: &str) -> std::result::Result<(String, Option<String>), String> {
    let spec = spec.trim();
    let (provider, model) = match spec.split_once(':') {
        Some((p, m)) => (p.trim(), Some(m.trim()).filter(|m| !m.is_empty())),
        None => (spec, None),
    };
    if crate::llm::ProviderName::parse(provider).is_none() {
        return Err(format!(
            "{spec:?}: {provider:?} is not a provider (expected provider:model, e.g. openai:gpt-4o-mini)"
        ));
    }
    Ok((provider.to_string(), model.map(str::to_string)))
}

/// A vote of one reason, for the unit tests.
#[cfg(test)]
fn vote(
    choice: &str,
    confidence: crate::model::Confidence,
    reason: &str,
) -> crate::model::CouncilVote {
    crate::model::CouncilVote {
        choice: choice.into(),
        confidence,
        reasons: vec![reason.into()],
        citations: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The council's schemas are ones strict structured output can send as they are.
    #[test]
    fn the_council_schemas_have_a_strict_form() {
        let mut b = crate::stage::fixtures::board(&[]);
        b.meeting_input.decision_packet.options = vec!["Tune".into(), "Replica".into()];
        start(
            &mut b,
            &CouncilSettings::default(),
            crate::stage::fixtures::NOW,
        )
        .unwrap();
        let vote = vote_expected_json(&b, "arch").schema;
        assert!(
            crate::llm::json_format::to_strict(&vote).is_some(),
            "{vote}"
        );
        // Without documents the schema alone says there is nothing to cite, in few characters.
        assert!(b.context_bundle.documents.is_empty());
        assert_eq!(
            vote["properties"]["citations"],
            json!({"type": "array", "items": {"type": "string"}, "maxItems": 0})
        );
        let said = member_message(&b, "arch", false)
            .unwrap()
            .to_json()
            .to_string();
        assert!(!said.contains("no documents"), "{said}");
        b.council.as_mut().unwrap().phase = CouncilPhase::Rank;
        let rank = rank_expected_json(&b, "arch").schema;
        assert!(
            crate::llm::json_format::to_strict(&rank).is_some(),
            "{rank}"
        );
    }
}
