//! The council's aggregate (docs/design/council.md#aggregate): the votes per choice, the Borda
//! points, the leading choice and the dissent. Pure: the board never enters it.

use crate::model::{
    BordaScore, ChoiceTally, CouncilAggregate, CouncilMember, CouncilVote, Dissent, RankPlace,
};
use crate::text::fold_ws;

/// The aggregate of the members' votes and rankings (docs/design/council.md#aggregate): the
/// votes per choice, the Borda points of each answer, the leading choice (most votes; a tie
/// broken by the Borda points of its voters; still tied: none), the agreement and who
/// dissents with their first reason. Pure: the same members give the same aggregate.
pub fn aggregate(options: &[String], members: &[CouncilMember]) -> CouncilAggregate {
    let voters: Vec<(&CouncilMember, &CouncilVote)> = members
        .iter()
        .filter_map(|m| Some((m, m.vote.as_ref()?)))
        .collect();
    let mut tally: Vec<ChoiceTally> = options
        .iter()
        .map(|o| ChoiceTally {
            choice: o.trim().to_string(),
            votes: 0,
            members: Vec::new(),
        })
        .collect();
    for (m, v) in &voters {
        match tally.iter_mut().find(|t| t.choice == v.choice) {
            Some(t) => {
                t.votes += 1;
                t.members.push(m.name.clone());
            }
            None => tally.push(ChoiceTally {
                choice: v.choice.clone(),
                votes: 1,
                members: vec![m.name.clone()],
            }),
        }
    }
    let borda: Vec<BordaScore> = voters
        .iter()
        .map(|(m, _)| {
            let mut points = 0;
            let mut places = Vec::new();
            for r in members {
                let Some(order) = &r.ranking else { continue };
                if let Some(p) = order.iter().position(|l| Some(l) == m.label.as_ref()) {
                    points += (order.len() - 1 - p) as u32;
                    places.push(RankPlace {
                        by: r.name.clone(),
                        place: p as u32 + 1,
                    });
                }
            }
            BordaScore {
                member: m.name.clone(),
                points,
                places,
            }
        })
        .collect();
    let points_of = |t: &ChoiceTally| -> u32 {
        borda
            .iter()
            .filter(|b| t.members.contains(&b.member))
            .map(|b| b.points)
            .sum()
    };
    let most = tally.iter().map(|t| t.votes).max().unwrap_or(0);
    let mut top: Vec<&ChoiceTally> = tally
        .iter()
        .filter(|t| t.votes == most && most > 0)
        .collect();
    if top.len() > 1 {
        let best = top.iter().map(|t| points_of(t)).max().unwrap_or(0);
        top.retain(|t| points_of(t) == best);
    }
    let leading = match top.as_slice() {
        [one] => Some(one.choice.clone()),
        _ => None,
    };
    let dissent = match &leading {
        Some(l) => voters
            .iter()
            .filter(|(_, v)| &v.choice != l)
            .map(|(m, v)| Dissent {
                member: m.name.clone(),
                choice: v.choice.clone(),
                reason: v.reasons.first().map(|r| fold_ws(r)).unwrap_or_default(),
            })
            .collect(),
        None => Vec::new(),
    };
    CouncilAggregate {
        agreeing: if leading.is_some() { most } else { 0 },
        tally,
        borda,
        leading,
        voters: voters.len() as u32,
        dissent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meeting::council::vote;
    use crate::model::Confidence;

    fn m(name: &str, label: &str, v: Option<CouncilVote>, ranking: &[&str]) -> CouncilMember {
        CouncilMember {
            name: name.into(),
            label: Some(label.into()).filter(|l: &String| !l.is_empty()),
            vote: v,
            ranking: (!ranking.is_empty()).then(|| ranking.iter().map(|s| s.to_string()).collect()),
            error: None,
            held: false,
        }
    }

    fn opts() -> Vec<String> {
        vec!["Tune".into(), "Replica".into(), "Warehouse".into()]
    }

    /// Votes per option (zero included, in the packet's order), Borda points, the majority and
    /// the dissent with its first reason.
    #[test]
    fn the_aggregate_counts_votes_and_borda_points() {
        use Confidence::*;
        let members = [
            m(
                "arch",
                "B",
                Some(vote("Replica", High, "Removes contention")),
                &["A", "C"],
            ),
            m(
                "biz",
                "A",
                Some(vote("Tune", Low, "Cheapest option")),
                &["B", "C"],
            ),
            m(
                "sre",
                "C",
                Some(vote("Replica", Medium, "Lag is bounded")),
                &["B", "A"],
            ),
        ];
        let a = aggregate(&opts(), &members);
        let votes: Vec<(&str, u32)> = a
            .tally
            .iter()
            .map(|t| (t.choice.as_str(), t.votes))
            .collect();
        assert_eq!(votes, [("Tune", 1), ("Replica", 2), ("Warehouse", 0)]);
        let points: Vec<(&str, u32)> = a
            .borda
            .iter()
            .map(|b| (b.member.as_str(), b.points))
            .collect();
        // arch: 1st by biz and sre (1 + 1); biz: 1st by arch, 2nd by sre; sre: 2nd twice.
        assert_eq!(points, [("arch", 2), ("biz", 1), ("sre", 0)]);
        assert_eq!(a.leading.as_deref(), Some("Replica"));
        assert_eq!((a.agreeing, a.voters), (2, 3));
        assert!(a.majority());
        assert_eq!(
            a.dissent,
            [Dissent {
                member: "biz".into(),
                choice: "Tune".into(),
                reason: "Cheapest option".into()
            }]
        );
    }

    /// A tie on votes is broken by the Borda points of each choice's voters; a tie on both
    /// leaves no leading choice and no dissent; a member without a vote counts for nothing.
    #[test]
    fn ties_are_broken_by_borda_points_or_left_tied() {
        use Confidence::*;
        let broken = [
            m("arch", "A", Some(vote("Replica", High, "r1")), &["B"]),
            m("biz", "B", Some(vote("Tune", High, "r2")), &["A"]),
            m("pat", "", None, &[]),
        ];
        let a = aggregate(&opts(), &broken);
        assert_eq!(a.leading, None, "1 vote and 1 point each: still tied");
        assert!(a.dissent.is_empty() && !a.majority());
        assert_eq!(a.voters, 2);
        assert_eq!(a.borda.len(), 2, "no score for a member without a vote");

        let four = [
            m(
                "a1",
                "A",
                Some(vote("Replica", High, "r")),
                &["B", "C", "D"],
            ),
            m("a2", "B", Some(vote("Tune", High, "t")), &["A", "C", "D"]),
            m(
                "a3",
                "C",
                Some(vote("Replica", High, "r")),
                &["B", "A", "D"],
            ),
            m("a4", "D", Some(vote("Tune", High, "t")), &["B", "A", "C"]),
        ];
        // Replica's voters: A 2 (a2) + 1 (a3) + 1 (a4) = 4, C 1 + 1 + 0 = 2; Tune's: B
        // 2 + 2 + 2 = 6, D 0. 6 against 6: still tied.
        let a = aggregate(&opts(), &four);
        assert_eq!(a.leading, None);
        let mut tilted = four.clone();
        tilted[3].ranking = Some(vec!["A".into(), "B".into(), "C".into()]);
        // Now A: 2+1+2 = 5, C: 2, B: 2+2+1 = 5, D: 0: 7 against 5 for Replica.
        let a = aggregate(&opts(), &tilted);
        assert_eq!(a.leading.as_deref(), Some("Replica"));
        assert!(!a.majority(), "2 of 4 is no majority");
        assert_eq!(a.dissent.len(), 2);
        let none = aggregate(&opts(), &[m("x", "", None, &[])]);
        assert_eq!((none.leading, none.voters), (None, 0));
    }
}
