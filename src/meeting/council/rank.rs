//! The ranking round: the anonymous labels, shuffled from the trace id, the other voters'
//! answers a member ranks, and the JSON its ranking must be with its check.

use serde_json::{json, Value};

use crate::llm::ExpectedJson;
use crate::model::{Board, CouncilRanking, CouncilVote};

/// The other voters' answers as `name` ranks them: by label (the labels are shuffled, so
/// this order is too), never its own.
pub(super) fn others(board: &Board, name: &str) -> Vec<(String, CouncilVote)> {
    let mut out: Vec<(String, CouncilVote)> = board
        .council
        .iter()
        .flat_map(|c| c.members.iter())
        .filter(|m| m.name != name)
        .filter_map(|m| Some((m.label.clone()?, m.vote.clone()?)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The JSON `name`'s ranking must be: every other voter's label once, best first (an enum
/// of the labels, exactly as many as there are: schema-constrained, never parsed from text;
/// no `uniqueItems`, which strict structured output cannot send: a label given twice is the
/// check's, and the retry's).
pub(crate) fn rank_expected_json(board: &Board, name: &str) -> ExpectedJson {
    let labels: Vec<String> = others(board, name).into_iter().map(|(l, _)| l).collect();
    ExpectedJson {
        name: "council_ranking".into(),
        schema: json!({
            "type": "object", "additionalProperties": false, "required": ["ranking"],
            "properties": {"ranking": {"type": "array", "minItems": labels.len(),
                "maxItems": labels.len(),
                "items": {"type": "string", "enum": labels}}}
        }),
    }
}

/// Check `name`'s ranking: each other voter's label exactly once.
pub(crate) fn check_ranking(
    board: &Board,
    name: &str,
    value: &Value,
) -> std::result::Result<CouncilRanking, String> {
    let r: CouncilRanking = crate::schema::shaped(value.clone())?;
    let labels: Vec<String> = others(board, name).into_iter().map(|(l, _)| l).collect();
    let expected = || format!("expected each of {} once, best first", labels.join(", "));
    let mut seen: Vec<&str> = Vec::new();
    for (i, l) in r.ranking.iter().enumerate() {
        let l = l.trim();
        if !labels.iter().any(|x| x == l) {
            return Err(format!(
                "ranking[{i}]: {l:?} is not one of the answers ({})",
                expected()
            ));
        }
        if seen.contains(&l) {
            return Err(format!(
                "ranking[{i}]: {l:?} is ranked twice ({})",
                expected()
            ));
        }
        seen.push(l);
    }
    if seen.len() != labels.len() {
        return Err(format!(
            "ranking: {} of {} answers ranked ({})",
            seen.len(),
            labels.len(),
            expected()
        ));
    }
    Ok(CouncilRanking {
        ranking: r.ranking.iter().map(|l| l.trim().to_string()).collect(),
    })
}

/// A seed from the trace id (FNV-1a): the same meeting shuffles the same way, so a replay is
/// byte-stable; another meeting, another order.
pub(crate) fn seed_of(trace_id: &str) -> u64 {
    trace_id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A permutation of `0..n` drawn from `seed` (Fisher-Yates on splitmix64): the randomness is
/// the seed's, injected by the caller.
pub(crate) fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// The `k`th anonymous label: `A` … `Z`.
pub(super) fn label(k: usize) -> String {
    char::from(b'A' + (k % 26) as u8).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shuffle is a permutation fixed by its seed; the seed by the trace id.
    #[test]
    fn the_shuffle_is_deterministic_from_the_seed() {
        let a = shuffled(5, seed_of("t1"));
        assert_eq!(a, shuffled(5, seed_of("t1")));
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3, 4]);
        let differs = (0..20).any(|i| shuffled(5, seed_of(&format!("t{i}"))) != a);
        assert!(differs, "other trace ids, other orders");
    }
}
