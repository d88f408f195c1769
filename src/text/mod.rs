//! Text helpers with one meaning each: cutting to a length, folding whitespace, the first
//! sentence of an answer, a file-name slug, when one question repeats another. Everything
//! counts characters, never bytes, so no helper here can split a multi-byte character.

pub mod markdown;
pub mod repeat;

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

/// Whitespace folded within each line, the lines kept: a line's indentation stays (nested
/// lists, code), other runs of spaces and tabs become one space, trailing ones go, and a run
/// of blank lines becomes one blank line; trimmed of blank lines at both ends. For document
/// excerpts, whose tables and lists read as structure only line by line
/// (docs/design/context.md#context-collection); never longer than `s`.
pub(crate) fn fold_ws_keep_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = false;
    for line in s.lines() {
        let body = line.trim_start();
        if body.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank { "\n\n" } else { "\n" });
        }
        blank = false;
        out.push_str(&line[..line.len() - body.len()]);
        out.push_str(&fold_ws(body));
    }
    out
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

/// Fewest characters a quoted span of a model's free text needs to be read as a quote of a
/// document (shorter quoted words are names or terms).
const QUOTE_MIN_CHARS: usize = 15;

/// `text` with every quoted span (straight or curly double quotes, at least
/// [`QUOTE_MIN_CHARS`] long) that no excerpt holds ([`verify_quote`]) marked
/// "(unverified quote)" after it: where the report shows a model's reason, an invented quote
/// does not pass for the document's (docs/design/council.md#report).
pub(crate) fn mark_unverified_quotes(text: &str, excerpts: &[&str]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find(['"', '“']) {
        let quote = rest[open..].chars().next().expect("a quote mark");
        let close = if quote == '“' { '”' } else { '"' };
        let body_at = open + quote.len_utf8();
        let Some(len) = rest[body_at..].find(close) else {
            break;
        };
        let span = &rest[body_at..body_at + len];
        let end = body_at + len + close.len_utf8();
        out.push_str(&rest[..end]);
        if span.chars().count() >= QUOTE_MIN_CHARS
            && !excerpts.iter().any(|e| verify_quote(e, span))
        {
            out.push_str(" (unverified quote)");
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Whether `answer` says anything `question` does not (docs/design/whiteboard.md#questions):
/// it holds a word the question lacks, case and punctuation aside. An answer that repeats the
/// question, word for word, reordered or in part, answers nothing.
pub(crate) fn adds_to(question: &str, answer: &str) -> bool {
    let words = |s: &str| -> std::collections::HashSet<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let asked = words(question);
    words(answer).iter().any(|w| !asked.contains(w))
}

/// Words that ask rather than name: an answer holding one repeats the question's stem.
const ASKING_WORDS: [&str; 16] = [
    "which", "what", "who", "how", "why", "when", "where", "whether", "should", "is", "are",
    "does", "do", "can", "could", "would",
];

/// Whether `answer` picks one of the alternatives `question` offers
/// (docs/design/whiteboard.md#questions): the question lists two or more (split at `?`, `,`,
/// `;`, `/` and the words `or`, `vs`, `versus`), and every word of the answer, none of them an
/// asking word, is in exactly one of them ("CloudBase Postgres" for "CloudBase Postgres? Orbit
/// Distributed SQL?"). Its words are all in the question, yet it answers it.
pub(crate) fn picks_one(question: &str, answer: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let mut parts: Vec<Vec<String>> = vec![Vec::new()];
    for piece in question.split_inclusive(['?', '？', ',', ';', '/']) {
        for w in words(piece) {
            if matches!(w.as_str(), "or" | "vs" | "versus") {
                parts.push(Vec::new());
            } else {
                parts.last_mut().expect("one part at least").push(w);
            }
        }
        parts.push(Vec::new());
    }
    parts.retain(|p| !p.is_empty());
    let said = words(answer);
    if parts.len() < 2 || said.is_empty() || said.iter().any(|w| ASKING_WORDS.contains(&w.as_str()))
    {
        return false;
    }
    parts
        .iter()
        .filter(|p| said.iter().all(|w| p.contains(w)))
        .count()
        == 1
}

// ---------------------------------------------------------------------------------------------
// Foreign text (docs/design/report.md#sanitising): what a model, a document or a provider wrote is
// shown on a terminal, stored on the board, sent in a prompt and written into the report. None
// of these may carry a control that acts instead of reading: a terminal escape (OSC 52 writes
// the clipboard, OSC 0 the window title, CSI erases lines and moves the cursor), a C0 or C1
// control, a NUL, a bidirectional mark or override (text that displays otherwise than it says)
// or an invisible character (zero-width joiners and spaces, tag characters hiding text).

/// Whether `c` is an invisible formatting character [`sanitise`] removes: bidirectional marks,
/// embeddings, overrides and isolates (LRM, RLM, ALM, U+202A–U+202E, U+2066–U+2069),
/// zero-width characters (U+200B–U+200D, U+2060–U+2064, U+FEFF), the deprecated format
/// characters U+206A–U+206F, interlinear annotation marks and Unicode tag characters.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// Whether `c` needs [`sanitise`]'s attention: a control other than `\n` and `\t`, or an
/// invisible character.
fn needs_cleaning(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_invisible(c)
}

/// Text from a model, a document or a provider, safe to show, store, send and render: every
/// terminal escape sequence removed whole (CSI, OSC, DCS, SOS, PM, APC, in their 7-bit `ESC`
/// and 8-bit C1 forms, and two-character escapes), every other C0 control but `\n` and `\t`
/// removed (`\r\n` becomes `\n`, a lone `\r` a space), every C1 control, DEL and NUL removed, and
/// the invisible characters of [`is_invisible`] removed. Ordinary text comes back unchanged and
/// unallocated. Where a format allows no line break, fold the result ([`fold_ws`]).
pub fn sanitise(s: &str) -> std::borrow::Cow<'_, str> {
    clean(s, false)
}

/// [`sanitise`] for stderr, which also keeps our own styling: SGR sequences (`ESC [ … m`) whose
/// parameters are only reset, bold, dim, normal weight and the red, green, yellow, cyan and
/// default colours that progress lines paint with. Such a sequence can only colour text, never
/// hide, move, erase or write anything.
pub(crate) fn sanitise_for_terminal(s: &str) -> std::borrow::Cow<'_, str> {
    clean(s, true)
}

/// Every string in `value`, object keys included, passed through [`sanitise`]: a model's JSON
/// answer before a stage reads it.
pub(crate) fn sanitise_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(clean) = sanitise(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sanitise_json),
        Value::Object(map) => {
            if map.keys().any(|k| k.chars().any(needs_cleaning)) {
                let old = std::mem::take(map);
                for (k, v) in old {
                    map.insert(sanitise(&k).into_owned(), v);
                }
            }
            map.values_mut().for_each(sanitise_json);
        }
        _ => {}
    }
}

fn clean(s: &str, keep_styles: bool) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(needs_cleaning) {
        return std::borrow::Cow::Borrowed(s);
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            // A line ending `\r\n` is `\n`; a lone `\r` (which returns a terminal to the start
            // of the line, to write over it) is a space, so it adds no line either.
            '\r' => {
                if chars.get(i) != Some(&'\n') {
                    out.push(' ');
                }
            }
            '\u{1B}' => i = escape(&chars, i, keep_styles, &mut out),
            // The 8-bit forms of CSI and of the string controls (DCS, SOS, OSC, PM, APC).
            '\u{9B}' => i = csi(&chars, i, false, &mut out),
            '\u{90}' | '\u{98}' | '\u{9D}' | '\u{9E}' | '\u{9F}' => i = string_end(&chars, i),
            c if needs_cleaning(c) => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// After an `ESC` at `chars[i - 1]`: the index after the whole sequence. Only a style sequence
/// (with `keep_styles`) is copied to `out`.
fn escape(chars: &[char], i: usize, keep_styles: bool, out: &mut String) -> usize {
    match chars.get(i) {
        Some('[') => csi(chars, i + 1, keep_styles, out),
        Some(']' | 'P' | 'X' | '^' | '_') => string_end(chars, i + 1),
        // Intermediate bytes, then one final byte (`ESC ( B`, `ESC # 8`).
        Some(' '..='/') => {
            let mut j = i;
            while matches!(chars.get(j), Some(' '..='/')) {
                j += 1;
            }
            if matches!(chars.get(j), Some('0'..='~')) {
                j += 1;
            }
            j
        }
        // A two-character escape (`ESC c` resets the terminal, `ESC M` moves up a line).
        Some('0'..='~') => i + 1,
        // A lone ESC: only the ESC goes.
        _ => i,
    }
}

/// A control sequence from its first parameter at `chars[i]`: parameter bytes, intermediate
/// bytes, one final byte; the index after it. A malformed sequence ends where it breaks.
fn csi(chars: &[char], i: usize, keep_styles: bool, out: &mut String) -> usize {
    let mut j = i;
    while matches!(chars.get(j), Some('0'..='?')) {
        j += 1;
    }
    let params_end = j;
    while matches!(chars.get(j), Some(' '..='/')) {
        j += 1;
    }
    let intermediates = j > params_end;
    match chars.get(j) {
        Some(&final_byte @ '@'..='~') => {
            if keep_styles && final_byte == 'm' && !intermediates {
                let params: String = chars[i..params_end].iter().collect();
                if is_our_style(&params) {
                    out.push_str("\u{1B}[");
                    out.push_str(&params);
                    out.push('m');
                }
            }
            j + 1
        }
        _ => j,
    }
}

/// Whether SGR parameters only reset, set the weight, or pick one of the colours progress lines
/// use (docs/design/report.md#sanitising).
fn is_our_style(params: &str) -> bool {
    params.split(';').all(|p| {
        matches!(
            p,
            "" | "0" | "1" | "2" | "22" | "31" | "32" | "33" | "36" | "39"
        )
    })
}

/// A string control (OSC, DCS, SOS, PM, APC) from its payload at `chars[i]`: the index after
/// its terminator (BEL, `ESC \\` or the 8-bit ST). An unterminated one ends before the next
/// line break or escape, so the text after it is kept.
fn string_end(chars: &[char], i: usize) -> usize {
    let mut j = i;
    while let Some(&c) = chars.get(j) {
        match c {
            '\u{07}' | '\u{9C}' => return j + 1,
            '\u{1B}' if chars.get(j + 1) == Some(&'\\') => return j + 2,
            '\u{1B}' | '\n' => return j,
            _ => j += 1,
        }
    }
    j
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

/// The candidate closest to `given` for a "did you mean" hint: the fewest single-character
/// edits (Levenshtein, any case), and at most a third of `given`'s length (at least 1), so a
/// name that is nothing like any candidate gets no hint; ties go to the first candidate.
pub fn closest<'a>(given: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let given = given.to_lowercase();
    let most = (given.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edits(&given, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= most)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance in characters (two rows).
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// `n` with a comma between each group of three digits (`40,960`), as a person reads it.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n thing` or `n things`: the one plural rule of what the programs print.
pub fn plural(n: impl Into<u64>, thing: &str) -> String {
    match n.into() {
        1 => format!("1 {thing}"),
        n => format!("{n} {thing}s"),
    }
}

/// [`plural`] for a word whose plural is not `thing + s` (`property`, `properties`).
pub fn plural_of(n: impl Into<u64>, one: &str, many: &str) -> String {
    match n.into() {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A quoted span no excerpt holds is marked; one an excerpt holds, a short quoted name
    /// and an unclosed quote are left as they are.
    #[test]
    fn quotes_no_document_holds_are_marked() {
        let docs = ["The nightly run overran the 06:00 deadline 7 times."];
        assert_eq!(
            mark_unverified_quotes(
                "It \"overran the 06:00 deadline 7 times\", not “the deadline was always met”; \"Tune\" it; \"open",
                &docs
            ),
            "It \"overran the 06:00 deadline 7 times\", not “the deadline was always met” (unverified quote); \"Tune\" it; \"open"
        );
    }

    /// An either/or question is answered by naming one of its alternatives, not by its stem,
    /// by words of two alternatives, nor by a question that offers none.
    #[test]
    fn an_answer_may_pick_one_alternative() {
        let q = "CloudBase Postgres? Orbit Distributed SQL?";
        assert!(picks_one(q, "CloudBase Postgres"));
        assert!(picks_one(q, "orbit distributed sql."));
        assert!(!picks_one(q, "CloudBase Postgres or Orbit Distributed SQL"));
        let q = "Which is cheaper, CloudBase Postgres or Orbit Distributed SQL?";
        assert!(picks_one(q, "Orbit Distributed SQL"));
        assert!(!picks_one(q, "Which is cheaper"));
        assert!(!picks_one(
            "Should we move to Postgres?",
            "Move to Postgres."
        ));
        assert!(!picks_one("Keep Postgres or move to Postgres?", "Postgres"));
    }

    #[test]
    fn an_answer_adds_a_word_the_question_lacks() {
        let q = "Should we move to Postgres?";
        assert!(!adds_to(q, "Should we move to Postgres?"));
        assert!(!adds_to(q, "should we MOVE to postgres"));
        assert!(!adds_to(q, "Move to Postgres."));
        assert!(!adds_to(q, ""));
        assert!(adds_to(q, "Yes."));
        assert!(adds_to(q, "Move to Postgres by March."));
        assert!(adds_to("是否迁移？", "是的"));
        assert!(!adds_to("是否迁移？", "是否迁移"));
    }

    #[test]
    fn fold_ws_keep_lines_keeps_tables_lists_and_indentation() {
        let doc = "\n\n# Costs  \n\n\n| option |   cost |\n|---|---|\n| a\t| 1 |\n\n- one\n  - nested   item\n\n\n";
        assert_eq!(
            fold_ws_keep_lines(doc),
            "# Costs\n\n| option | cost |\n|---|---|\n| a | 1 |\n\n- one\n  - nested item"
        );
        assert_eq!(fold_ws_keep_lines("  \n \t\n"), "");
        for s in [doc, "a  b", "\t x\r\ny"] {
            assert!(fold_ws_keep_lines(s).chars().count() <= s.chars().count());
            assert_eq!(fold_ws(&fold_ws_keep_lines(s)), fold_ws(s));
        }
    }

    #[test]
    fn closest_suggests_a_near_name_and_nothing_for_a_stranger() {
        let names = ["arch", "biz", "finance", "security"];
        assert_eq!(closest("fiannce", names), Some("finance"));
        assert_eq!(closest("Secuirty", names), Some("security"));
        assert_eq!(closest("bix", names), Some("biz"));
        assert_eq!(
            closest("openia", ["openai", "anthropic", "replay"]),
            Some("openai")
        );
        assert_eq!(closest("legal", names), None);
        assert_eq!(closest("", names), None);
        assert_eq!(edits("kitten", "sitting"), 3);
    }

    #[test]
    fn sanitise_removes_every_control_and_invisible_mark() {
        for (hostile, clean) in [
            // OSC 52 (clipboard), OSC 0 (window title): BEL- and ST-terminated, 7- and 8-bit.
            ("a\x1b]52;c;ZWNobyBoaQ==\x07b", "ab"),
            ("a\x1b]0;owned\x1b\\b", "ab"),
            ("a\u{9D}0;owned\u{9C}b", "ab"),
            ("a\x1b]52;c;unterminated\nnext", "a\nnext"),
            // CSI: erase line, cursor moves, colours, 8-bit CSI; DCS; two-character escapes.
            ("\x1b[2K\x1b[1Aforged\x1b[31mred\x1b[0m", "forgedred"),
            ("a\u{9B}2Kb", "ab"),
            ("a\x1bP1$r\x1b\\b\x1bcc\x1b(Bd", "abcd"),
            ("lone\x1b", "lone"),
            // C0 (NUL, BEL, BS), DEL, C1; \r\n becomes \n, a lone \r a space; \n and \t stay.
            ("a\0b\x07c\x08d\x7fe\u{85}f\u{8D}g", "abcdefg"),
            ("a\r\nb\rc\td\n", "a\nb c\td\n"),
            // Bidi marks, overrides, isolates; zero-width characters; tag characters.
            (
                "a\u{200E}b\u{200F}c\u{061C}d\u{202E}e\u{202A}f\u{2066}g\u{2069}h",
                "abcdefgh",
            ),
            (
                "s\u{200B}k\u{200C}-\u{200D}x\u{2060}y\u{FEFF}z\u{E0041}",
                "sk-xyz",
            ),
        ] {
            assert_eq!(sanitise(hostile), clean, "{hostile:?}");
        }
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        for s in [
            "",
            "plain",
            "é 中文 😀 \u{2029} \u{AD}",
            "tab\there\nline",
            "a < b > c",
        ] {
            assert!(
                matches!(sanitise(s), std::borrow::Cow::Borrowed(t) if t == s),
                "{s:?}"
            );
        }
    }

    #[test]
    fn the_terminal_keeps_only_our_styles() {
        assert_eq!(
            sanitise_for_terminal("\x1b[1;33march\x1b[0m \x1b[2mtag\x1b[m"),
            "\x1b[1;33march\x1b[0m \x1b[2mtag\x1b[m"
        );
        assert_eq!(
            sanitise_for_terminal("\x1b[8mhidden\x1b[2K\x1b[30;40mx\x1b[1 m\x1b]0;t\x07"),
            "hiddenx"
        );
    }

    #[test]
    fn json_strings_and_keys_are_sanitised() {
        let mut v = serde_json::json!({"a\u{200B}": ["x\x1b[2Ky", {"k": "\u{202E}z"}], "n": 1});
        sanitise_json(&mut v);
        assert_eq!(v, serde_json::json!({"a": ["xy", {"k": "z"}], "n": 1}));
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
