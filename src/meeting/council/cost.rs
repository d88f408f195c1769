//! What the council's calls cost (docs/design/council.md#budget): the reply limit a vote or a
//! ranking sets, the dearest member's call as it will be sent, and what each call keeps aside
//! for the calls still to come and the PM's round after them.

use super::active;
use super::message::member_message;
use super::rank::rank_expected_json;
use super::vote::vote_expected_json;
use crate::error::Result;
use crate::model::{Board, CouncilPhase};

/// The reply limit a council call sets when nothing set one: a vote or a ranking is short.
pub(crate) fn max_tokens(phase: CouncilPhase) -> u32 {
    match phase {
        CouncilPhase::Rank => crate::llm::default_max_tokens::COUNCIL_RANK,
        _ => crate::llm::default_max_tokens::COUNCIL_VOTE,
    }
}

/// The members' reply limits in `phase`: the flags', the board's or their config's, else the
/// council's own ([`max_tokens`]).
fn member_limits(board: &Board, phase: CouncilPhase) -> crate::meeting::budget::AgentLimits {
    crate::meeting::budget::AgentLimits::resolve_or(board, &Default::default(), max_tokens(phase))
}

/// The dearest member's council call as it will be sent in the current phase (the shared
/// system text, the member's message, the vote's or the ranking's schema) at the reply limit
/// the council sets: what the ask loop will charge for it (`budget::call_cost_at`).
pub(super) fn member_cost(board: &Board) -> Result<crate::model::Charge> {
    let phase = active(board).unwrap_or(CouncilPhase::Vote);
    let limits = member_limits(board, phase);
    let mut dearest = crate::model::Charge::default();
    let names: Vec<String> = board
        .council
        .as_ref()
        .map(|c| c.members.iter().map(|m| m.name.clone()).collect())
        .unwrap_or_default();
    for name in &names {
        let expect = match phase {
            CouncilPhase::Rank => rank_expected_json(board, name),
            _ => vote_expected_json(board, name),
        };
        let request = crate::llm::Request {
            caller: name.clone(),
            system: crate::meeting::prompts::meeting_system()?,
            messages: vec![member_message(board, name, false)?],
            expect: Some(expect),
            facts: Default::default(),
        };
        let cost = crate::meeting::budget::call_cost_at(&request, limits.of(name));
        dearest = dearest.at_least(cost);
    }
    Ok(dearest)
}

/// What each of `n` council calls keeps aside, `rankers` ranking calls still to come
/// (docs/design/council.md#budget): the calls as they will be sent ([`member_cost`]), the PM's
/// round after it at an agent turn's.
pub(super) fn reserve(board: &Board, n: usize, rankers: usize) -> crate::model::Charge {
    use crate::meeting::budget::{agent_turn_estimate, council_reserve, AgentLimits};
    let agents = AgentLimits::resolve(board, &Default::default());
    let members = member_limits(board, CouncilPhase::Vote);
    // A call that cannot be rendered (an embedded template's error) is charged as an agent
    // turn at the council's limits rather than as nothing.
    let member = member_cost(board).unwrap_or_else(|_| agent_turn_estimate(board, &members));
    council_reserve(board, &agents, member, &members, n, rankers)
}

/// Whether the budget (if any) holds a round of `n` more council calls and `rankers` ranking
/// calls after them, with the PM's round: the first call as it will be sent and the others'
/// reserve ([`reserve`]). The error of a call that cannot be rendered is the caller's to show.
pub(super) fn fits(board: &Board, n: usize, rankers: usize) -> Result<bool> {
    let Some(budget) = crate::meeting::budget::Budget::of(board) else {
        return Ok(true);
    };
    Ok(budget.fits(member_cost(board)?, reserve(board, n, rankers)))
}
