//! The council's progress through merge-board: each turn's vote, ranking or error folded in,
//! the next batch of calls queued (a fan-out no wider than `max_parallel`), an adaptive
//! council's escalation, the ranking round opened, and the aggregate once every answer is in.

use super::aggregate::aggregate;
use super::cost::{fits, reserve};
use super::rank::{label, seed_of, shuffled};
use super::view::same_choice;
use super::{active, vote_headline, RANK_QUESTION, VOTE_QUESTION};
use crate::meeting::events;
use crate::model::{
    Board, Council, CouncilAnswer, CouncilPhase, CouncilVote, LastTurn, PendingCall,
};

/// Votes it takes for the ranking round: with two, each would rank the only other answer.
const MIN_RANKERS: usize = 3;

/// The ranking round's calls when `voters` may vote: one each, or none below [`MIN_RANKERS`].
pub(super) fn rankers(voters: usize) -> usize {
    if voters >= MIN_RANKERS {
        voters
    } else {
        0
    }
}

/// Members seated and not failed: who may still vote and rank.
fn seated(council: &Council) -> usize {
    council
        .members
        .iter()
        .filter(|m| m.error.is_none() && !m.held)
        .count()
}

/// One call per member in `names`, with `question`, each keeping `reserve`: at most
/// `max_parallel` at once (`--max-parallel 1`: one by one, for a server that takes one request
/// at a time), the rest queued by merge-board after them, still blind.
pub(super) fn queue(
    board: &mut Board,
    names: &[String],
    question: &str,
    reserve: crate::model::Charge,
    now: &str,
) {
    let names = &names[..names.len().min(board.max_parallel.max(1) as usize)];
    let keep = crate::meeting::budget::Budget::of(board).map(|_| reserve);
    for name in names {
        events::push_at(board, now, events::pm_asks(name, question));
    }
    board.pending_calls = names
        .iter()
        .map(|n| PendingCall {
            target_agent: n.clone(),
            prompt: question.to_string(),
            analysis: String::new(),
            reserve: keep,
        })
        .collect();
}

/// Fold the council's turns in (merge-board): the votes, then (with three voters or more,
/// so each has two answers to order) the ranking calls queued; the rankings, then the
/// aggregate. A council call is no loop: the loop budget is the PM's questions'.
pub(crate) fn merge(board: &mut Board, turns: Vec<LastTurn>, now: &str) {
    let Some(phase) = active(board) else { return };
    for turn in turns {
        let council = board.council.as_mut().expect("an active council");
        if let Some(message) = record(council, phase, turn) {
            events::push_at(board, now, events::board_merged(message));
        }
    }
    // Each step that queues calls ends this merge: the next one takes the round from there.
    if queue_waiting(board, phase, now) || escalate(board, now) || open_ranking(board, phase, now) {
        return;
    }
    let options = board.meeting_input.decision_packet.options.clone();
    let council = board.council.as_mut().expect("an active council");
    council.aggregate = Some(aggregate(&options, &council.members));
    council.phase = CouncilPhase::Done;
}

/// Fold one turn into its member: the vote or the ranking `phase` asked for, else the error.
/// The event's line, or `None` for a turn of no member.
fn record(council: &mut Council, phase: CouncilPhase, turn: LastTurn) -> Option<String> {
    let m = council
        .members
        .iter_mut()
        .find(|m| m.name == turn.agent_name)?;
    Some(match (phase, turn.council) {
        (CouncilPhase::Vote, Some(CouncilAnswer::Vote(v))) => {
            let line = format!("{}: council {}", m.name, vote_headline(&v));
            m.vote = Some(v);
            line
        }
        (CouncilPhase::Rank, Some(CouncilAnswer::Ranking(r))) => {
            let line = format!("{}: council ranking {}", m.name, r.ranking.join(", "));
            m.ranking = Some(r.ranking);
            line
        }
        _ => {
            let error = turn
                .error
                .clone()
                .unwrap_or_else(|| "no usable answer".into());
            m.error = Some(error);
            format!("{}: council error recorded", m.name)
        }
    })
}

/// Queue the members this round has not asked yet (beyond `max_parallel`): the next batch.
/// Whether there were any.
fn queue_waiting(board: &mut Board, phase: CouncilPhase, now: &str) -> bool {
    let council = board.council.as_ref().expect("an active council");
    let waiting: Vec<String> = council
        .members
        .iter()
        .filter(|m| {
            m.error.is_none()
                && !m.held
                && match phase {
                    CouncilPhase::Rank => m.label.is_some() && m.ranking.is_none(),
                    _ => m.vote.is_none(),
                }
        })
        .map(|m| m.name.clone())
        .collect();
    if waiting.is_empty() {
        return false;
    }
    let (question, rankers) = match phase {
        CouncilPhase::Rank => (RANK_QUESTION, 0),
        _ => (VOTE_QUESTION, rankers(seated(council))),
    };
    let reserve = reserve(board, waiting.len(), rankers);
    queue(board, &waiting, question, reserve, now);
    true
}

/// Adaptive, the first two in: the rest are seated when they disagree or one is unsure, and
/// their votes queued. Whether they were (never again once decided).
fn escalate(board: &mut Board, now: &str) -> bool {
    let council = board.council.as_mut().expect("an active council");
    let Some(round) = council.adaptive.as_mut().filter(|r| r.escalated.is_none()) else {
        return false;
    };
    let votes: Vec<&CouncilVote> = council
        .members
        .iter()
        .filter_map(|m| m.vote.as_ref())
        .collect();
    let agreed = votes.len() == 2
        && same_choice(&votes[0].choice, &votes[1].choice)
        && votes
            .iter()
            .all(|v| v.confidence != crate::model::Confidence::Low);
    if agreed {
        round.escalated = Some(false);
        return false;
    }
    let held: Vec<String> = council
        .members
        .iter()
        .filter(|m| m.held)
        .map(|m| m.name.clone())
        .collect();
    let seated = seated(council) + held.len();
    // Admitted only when the rest fits: the held votes, the ranking round and the PM's round
    // (docs/design/council.md#adaptive). A call that cannot be rendered is not admitted.
    if !fits(board, held.len(), rankers(seated)).unwrap_or(false) {
        let round = board.council.as_mut().and_then(|c| c.adaptive.as_mut());
        let round = round.expect("an adaptive round");
        round.escalated = Some(false);
        round.short_of_budget = true;
        events::push_at(
            board,
            now,
            events::board_merged(format!(
                "council: the first two did not agree; the budget cannot hold seating {}",
                held.join(", ")
            )),
        );
        return false;
    }
    let council = board.council.as_mut().expect("an active council");
    for m in council.members.iter_mut() {
        m.held = false;
    }
    if let Some(round) = council.adaptive.as_mut() {
        round.escalated = Some(true);
    }
    let reserve = reserve(board, held.len(), rankers(seated));
    events::push_at(
        board,
        now,
        events::board_merged(format!(
            "council: the first two did not agree; seating {}",
            held.join(", ")
        )),
    );
    queue(board, &held, VOTE_QUESTION, reserve, now);
    true
}

/// Once the votes are in, with [`MIN_RANKERS`] voters or more: label their answers (shuffled
/// from the trace id) and queue the ranking calls. Whether it did.
fn open_ranking(board: &mut Board, phase: CouncilPhase, now: &str) -> bool {
    let council = board.council.as_mut().expect("an active council");
    let voters: Vec<usize> = (0..council.members.len())
        .filter(|i| council.members[*i].vote.is_some())
        .collect();
    if phase != CouncilPhase::Vote || voters.len() < MIN_RANKERS {
        return false;
    }
    for (k, i) in shuffled(voters.len(), seed_of(&board.trace_id))
        .into_iter()
        .enumerate()
    {
        council.members[voters[i]].label = Some(label(k));
    }
    council.phase = CouncilPhase::Rank;
    let names: Vec<String> = voters
        .iter()
        .map(|i| council.members[*i].name.clone())
        .collect();
    let reserve = reserve(board, names.len(), 0);
    queue(board, &names, RANK_QUESTION, reserve, now);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meeting::council::rank::others;
    use crate::meeting::council::{start, vote};
    use crate::model::{Confidence, CouncilRanking, CouncilSettings};

    /// An adaptive council reserves for its first two votes and the PM's round, not the
    /// whole council's, so a budget that holds those seats it where a whole council is
    /// refused; when the two disagree, the others are seated only if their votes, the ranking
    /// round and the PM's round fit, else the vote is the two's and the report says why
    /// (docs/design/council.md#adaptive; a three-member council could not run at the bench's
    /// own budget, issue #58).
    #[test]
    fn an_adaptive_council_reserves_for_two_and_escalates_only_within_the_budget() {
        use super::super::cost::member_cost;
        use crate::model::{CouncilAnswer, LastTurn, TurnStatus};
        let mut b = crate::stage::fixtures::board(&[]);
        b.max_parallel = 3;
        b.meeting_input.decision_packet.options = vec!["Tune".into(), "Replica".into()];
        b.participants.push("sre".into());
        b.agents
            .insert("sre".into(), crate::stage::fixtures::agent("sre"));
        let adaptive = CouncilSettings {
            adaptive: true,
            ..Default::default()
        };
        let need = |settings: &CouncilSettings| {
            let mut probe = b.clone();
            probe.max_total_tokens = Some(100_000_000);
            start(&mut probe, settings, crate::stage::fixtures::NOW).unwrap();
            let reserve = probe.pending_calls[0].reserve.unwrap();
            member_cost(&probe).unwrap().plus(reserve).total()
        };
        let (two, whole) = (need(&adaptive), need(&CouncilSettings::default()));
        assert!(two < whole, "{two} < {whole}");
        b.max_total_tokens = Some(two);
        let mut refused = b.clone();
        let e = start(&mut refused, &CouncilSettings::default(), "t").unwrap_err();
        assert!(
            e.to_string().contains("cannot hold the council's 6 calls"),
            "{e}"
        );
        start(&mut b, &adaptive, crate::stage::fixtures::NOW).expect("two seats fit");
        assert_eq!(b.pending_calls.len(), 2);
        // The two disagree; seating sre and the ranking round do not fit.
        let turn = |name: &str, choice: &str| LastTurn {
            agent_name: name.into(),
            status: TurnStatus::Ok,
            prompt: "q".into(),
            result: None,
            error: None,
            review: None,
            council: Some(CouncilAnswer::Vote(vote(choice, Confidence::High, "r"))),
        };
        let mut roomy = b.clone();
        b.last_turns = vec![turn("arch", "Tune"), turn("biz", "Replica")];
        b.pending_calls.clear();
        let b = crate::stage::merge_board::merge(b, crate::stage::fixtures::NOW).unwrap();
        let c = b.council.as_ref().unwrap();
        assert!(b.pending_calls.is_empty(), "{:?}", b.pending_calls);
        assert_eq!(c.phase, CouncilPhase::Done);
        let round = c.adaptive.as_ref().unwrap();
        assert_eq!(
            (round.escalated, round.short_of_budget),
            (Some(false), true)
        );
        let view = crate::meeting::council::view(&b, None).unwrap();
        assert!(
            view.adaptive
                .contains("but the budget could not hold the other 1 members' votes"),
            "{}",
            view.adaptive
        );
        assert_eq!(
            view.members[2].error,
            "not seated: the budget had no room for it"
        );
        // With room for the rest, sre is seated.
        roomy.max_total_tokens = Some(whole * 2);
        roomy.last_turns = vec![turn("arch", "Tune"), turn("biz", "Replica")];
        roomy.pending_calls.clear();
        let roomy = crate::stage::merge_board::merge(roomy, crate::stage::fixtures::NOW).unwrap();
        assert_eq!(roomy.pending_calls.len(), 1);
        assert_eq!(roomy.pending_calls[0].target_agent, "sre");
    }

    /// The council walks the state table's existing rows (docs/design/council.md#flow):
    /// init-board leaves the votes for agent-turn, merge-board the rankings for agent-turn
    /// again, then the aggregate for the PM; no loop is spent.
    #[test]
    fn the_council_walks_the_state_table() {
        use crate::model::{CouncilAnswer, LastTurn, TurnStatus};
        use crate::stage::Stage;
        let mut b = crate::stage::fixtures::board(&[]);
        b.max_parallel = 3;
        b.meeting_input.decision_packet.options = vec!["Tune".into(), "Replica".into()];
        b.participants.push("sre".into());
        b.agents
            .insert("sre".into(), crate::stage::fixtures::agent("sre"));
        start(
            &mut b,
            &CouncilSettings::default(),
            crate::stage::fixtures::NOW,
        )
        .unwrap();
        assert_eq!(b.next_stage(), Some(Stage::AgentTurn));
        assert_eq!(b.pending_calls.len(), 3);
        let turn = |name: &str, answer: CouncilAnswer| LastTurn {
            agent_name: name.into(),
            status: TurnStatus::Ok,
            prompt: "q".into(),
            result: None,
            error: None,
            review: None,
            council: Some(answer),
        };
        let voted: Vec<LastTurn> = ["arch", "biz", "sre"]
            .iter()
            .map(|n| {
                turn(
                    n,
                    CouncilAnswer::Vote(vote("Replica", Confidence::High, "r")),
                )
            })
            .collect();
        b.pending_calls.clear();
        b.last_turns = voted.clone();
        assert_eq!(b.next_stage(), Some(Stage::MergeBoard));
        let mut b = crate::stage::merge_board::merge(b, crate::stage::fixtures::NOW).unwrap();
        assert_eq!(active(&b), Some(CouncilPhase::Rank));
        assert_eq!(b.next_stage(), Some(Stage::AgentTurn));
        let ranked: Vec<LastTurn> = b
            .pending_calls
            .iter()
            .map(|c| {
                let order = others(&b, &c.target_agent)
                    .into_iter()
                    .map(|(l, _)| l)
                    .collect();
                turn(
                    &c.target_agent,
                    CouncilAnswer::Ranking(CouncilRanking { ranking: order }),
                )
            })
            .collect();
        b.pending_calls.clear();
        b.last_turns = ranked;
        let b = crate::stage::merge_board::merge(b, crate::stage::fixtures::NOW).unwrap();
        assert_eq!(b.next_stage(), Some(Stage::PmStep));
        assert_eq!(b.loop_count, 0, "council calls are no loops");
        let a = b.council.as_ref().unwrap().aggregate.as_ref().unwrap();
        assert_eq!(
            (a.leading.as_deref(), a.agreeing, a.voters),
            (Some("Replica"), 3, 3)
        );
        assert!(
            crate::meeting::prompts::whiteboard(&b, crate::meeting::prompts::Reader::Pm)
                .unwrap()
                .contains("- Votes: Tune 0; Replica 3 (arch, biz, sre).")
        );
    }
}
