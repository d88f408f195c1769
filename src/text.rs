//! Text helpers with one meaning each: cutting to a length, folding whitespace, the first
//! sentence of an answer, a file-name slug. Everything counts characters, never bytes, so no helper here can
//! split a multi-byte character.

/// `s` cut to at most `max` characters; when something was cut, the last kept character is an
/// ellipsis `…` marking the cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// Every run of whitespace (newlines included) folded into one space; trimmed.
pub(crate) fn fold_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` on one line (whitespace folded) and cut to `max` characters: for progress lines and
/// one-line messages.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    cut(&fold_ws(s), max)
}

/// The first sentence of an answer, whitespace folded: up to the first `.`, `!`, `?` followed
/// by whitespace or the end, or the first `。`, `！`, `？` ("Version 2.1 is out." stays whole).
/// Longest headline of an answer ([`headline`]).
pub(crate) const HEADLINE_CHARS: usize = 240;

/// What the whiteboard and the events keep of an answer: its first sentence, cut to
/// `HEADLINE_CHARS` (a first sentence that runs on is not a headline).
pub(crate) fn headline(text: &str) -> String {
    cut(&first_sentence(text), HEADLINE_CHARS)
}

pub(crate) fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let mut end = text.len();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let stop = match c {
            '。' | '！' | '？' => true,
            '.' | '!' | '?' => chars.peek().is_none_or(|(_, n)| n.is_whitespace()),
            _ => false,
        };
        if stop {
            end = i + c.len_utf8();
            break;
        }
    }
    fold_ws(&text[..end])
}

/// Whether `quote` occurs in `excerpt` after whitespace folding (docs/design/agent-turn.md#agent-turn).
/// Quotation marks around the whole quote are ignored; nothing else is forgiven (an ellipsis
/// joining two pieces is not the document's text). An empty quote verifies nothing.
pub(crate) fn verify_quote(excerpt: &str, quote: &str) -> bool {
    let q = fold_ws(quote);
    let q = q.trim_matches(|c: char| matches!(c, '"' | '\'' | '“' | '”' | '‘' | '’' | '「' | '」'));
    !q.trim().is_empty() && fold_ws(excerpt).contains(q.trim())
}

/// Whether `c` is a bidirectional embedding, override or isolate control (U+202A–U+202E,
/// U+2066–U+2069): text carrying one can display differently from what it says.
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `s` without bidirectional controls (docs/design/report.md#report: nothing a model or a user wrote may
/// reorder what the report or the whiteboard summary displays).
pub(crate) fn strip_bidi(s: &str) -> String {
    s.chars().filter(|&c| !is_bidi_control(c)).collect()
}

/// A filename-safe slug: lowercase letters and digits (any script) joined by `-`, at most 60
/// characters, so topics in other languages get reports of their own.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.chars().count() >= 60 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "meeting".to_string()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_controls_are_stripped() {
        let s = "a\u{202E}b\u{202A}c\u{2066}d\u{2069}e\u{200F}";
        assert_eq!(strip_bidi(s), "abcde\u{200F}");
        assert!(!is_bidi_control('\u{2029}') && !is_bidi_control('\u{206A}'));
    }

    #[test]
    fn cut_counts_characters_and_marks_the_cut() {
        assert_eq!(cut("héllo", 5), "héllo");
        assert_eq!(cut("héllo", 4), "hél…");
        assert_eq!(cut("日本語テキスト", 3), "日本…");
        assert_eq!(cut("abc", 0), "");
        assert_eq!(one_line("a\n  b\tc d", 6), "a b c…");
    }

    #[test]
    fn first_sentence_cases() {
        assert_eq!(
            first_sentence("Use 3.5 cores. Then more."),
            "Use 3.5 cores."
        );
        assert_eq!(first_sentence("结论是迁移。然后"), "结论是迁移。");
        assert_eq!(
            first_sentence("a line\n  that goes on. Next."),
            "a line that goes on."
        );
        assert_eq!(
            first_sentence("Version 2.1 is fine! Yes"),
            "Version 2.1 is fine!"
        );
        assert_eq!(first_sentence("no stop at all"), "no stop at all");
        assert_eq!(headline("Go with B. It is cheaper."), "Go with B.");
        let long = headline(&format!("{}. Next.", "x".repeat(400)));
        assert_eq!(long.chars().count(), HEADLINE_CHARS);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn quotes_verify_after_folding() {
        let ex = "Costs:\n  the  cluster costs\t$4,000 per month.\nMore text here.";
        assert!(verify_quote(ex, "the cluster costs $4,000 per month"));
        assert!(verify_quote(ex, "\"the cluster costs $4,000\""));
        assert!(
            !verify_quote(ex, "the cluster ... per month"),
            "no gaps: not the document's text"
        );
        assert!(!verify_quote(ex, "Costs: … More text"));
        assert!(!verify_quote(ex, "the cluster costs $5,000"));
        assert!(!verify_quote(ex, "  "));
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("Should we adopt Rust?"), "should-we-adopt-rust");
        assert_eq!(slug("是否迁移到云端?"), "是否迁移到云端");
        assert_eq!(slug("Нужно ли Rust?"), "нужно-ли-rust");
        assert_eq!(slug("?!"), "meeting");
    }
}
