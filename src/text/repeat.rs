//! When one question nearly repeats another (docs/design/pm-round.md#circles): the one measure,
//! used by the circles check on the PM's questions and by the sample PM choosing a question
//! it has not asked.
//!
//! The measure is the Jaccard similarity of the two questions' word bigrams after
//! normalisation (lower case, words are runs of letters and digits, everything else a
//! separator). Bigrams keep word order, so "cost of A over B" and "cost of B over A" differ,
//! while a reworded filler ("Please, …", "again") changes few of them. A question of one word
//! is compared by its word. Two questions are a repeat at `REPEAT_SIMILARITY` or above.

use std::collections::HashSet;

/// The similarity at and above which a question repeats an earlier one.
pub const REPEAT_SIMILARITY: f64 = 0.8;

/// The normalised words of a text.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The word bigrams of a text (its one word, when it has only one).
fn bigrams(text: &str) -> HashSet<String> {
    let w = words(text);
    if w.len() == 1 {
        return w.into_iter().collect();
    }
    w.windows(2).map(|p| format!("{} {}", p[0], p[1])).collect()
}

/// Jaccard similarity of the two texts' word bigrams, in 0..=1; 0 when either has no words.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (bigrams(a), bigrams(b));
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let common = a.intersection(&b).count();
    common as f64 / (a.len() + b.len() - common) as f64
}

/// Whether `question` nearly repeats `earlier` (see the module comment).
pub fn repeats(question: &str, earlier: &str) -> bool {
    similarity(question, earlier) >= REPEAT_SIMILARITY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_question_in_other_case_and_punctuation_repeats() {
        let q = "What does the managed warehouse cost per month?";
        assert_eq!(similarity(q, q), 1.0);
        assert!(repeats(
            "what does the managed warehouse cost, per month",
            q
        ));
    }

    #[test]
    fn a_small_rewording_repeats_a_new_subject_does_not() {
        let q = "What does the managed warehouse cost per month for the nightly reports?";
        assert!(repeats(
            "What does the managed warehouse cost per month for the nightly reports, roughly?",
            q
        ));
        assert!(!repeats(
            "What does the read replica cost per month for the nightly reports?",
            q
        ));
        // Numbered look-alikes are different questions.
        assert!(!repeats(
            "Question 2: what is the main consideration number 2 for this decision?",
            "Question 1: what is the main consideration number 1 for this decision?"
        ));
    }

    #[test]
    fn word_order_counts() {
        assert!(!repeats(
            "Is the cost of A higher than B?",
            "Is the cost of B higher than A?"
        ));
    }

    #[test]
    fn edge_cases() {
        assert_eq!(similarity("", ""), 0.0, "nothing repeats nothing");
        assert_eq!(similarity("?!", "?"), 0.0);
        assert!(
            repeats("Budget?", "budget"),
            "one word: compared by its word"
        );
        assert!(!repeats("Budget?", "Timeline?"));
        assert!(!repeats("Budget?", "What is the budget?"));
        assert!(repeats(
            "Wie hoch sind die Kosten?",
            "wie hoch sind die kosten"
        ));
        assert!(
            repeats("成本是多少", "成本是多少？"),
            "unicode letters are words"
        );
    }

    #[test]
    fn the_threshold_is_inclusive() {
        // 4 of 5 bigrams shared, union 5: exactly 0.8.
        let a = "a b c d e f";
        let b = "a b c d e";
        assert_eq!(similarity(a, b), 0.8);
        assert!(repeats(a, b));
    }
}
