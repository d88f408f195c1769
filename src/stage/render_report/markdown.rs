//! The final tidying of the rendered report (docs/design/report.md#report), and the neutralising of
//! the text it shows (docs/design/report.md#sanitising): no HTML and no unbalanced code fence of a
//! model, a document or the board may hide what follows it. The reading of the PM's final
//! report itself is `crate::meeting::final_report`, shared with pm-step.

use crate::text::markdown::{heading_level, is_fence, is_setext_underline, opens_structure, Fence};

/// Collapse runs of blank lines outside code fences, drop trailing spaces, end with one newline;
/// and sanitise the whole report (docs/design/report.md#sanitising): no terminal escape, control or
/// invisible mark reaches the file, whoever wrote it.
pub(crate) fn tidy_markdown(text: &str) -> String {
    let text = &crate::text::sanitise(text);
    let mut out = String::new();
    let mut blank_run = 0;
    let mut in_fence = false;
    for line in text.lines() {
        let line = line.trim_end();
        if is_fence(line) {
            in_fence = !in_fence;
        }
        if line.is_empty() && !in_fence {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    if out.is_empty() {
        out.push('\n');
    }
    out
}

/// The view's fields a template shows inside backticks (a code span keeps `<` as it is) or in
/// the diagram's fence, and the report kind the templates compare: left as they are by
/// [`neutralise_view`].
const CODE_FIELDS: [&str; 6] = [
    "mermaid",
    "trace_id",
    "documents",
    "source_path",
    "path",
    "kind",
];

/// Every string of the report's view, but those of [`CODE_FIELDS`], through [`neutralise`].
pub(crate) fn neutralise_view(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(n) = neutralise(s) {
                *s = n;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(neutralise_view),
        Value::Object(map) => map
            .iter_mut()
            .filter(|(k, _)| !CODE_FIELDS.contains(&k.as_str()))
            .for_each(|(_, v)| neutralise_view(v)),
        _ => {}
    }
}

/// Text shown in the report, made unable to hide what follows it in a CommonMark renderer, or
/// to open a section of its own (docs/design/report.md#sanitising):
/// - every `<` that could open HTML (a tag, a closing tag, a comment `<!--`, a declaration or
///   a processing instruction) is escaped as `\<`, outside code spans and code fences;
///   autolinks (`<https://…>`) stay;
/// - a backtick run that opens no code span on its line is escaped (it shows the same), so
///   code spans never reach across lines or into the next value shown;
/// - code fences stay only when they pair up without doubt; otherwise every fence line is
///   escaped (`\~~~`, `` \`\`\` ``: it shows as written and opens nothing), as the text
///   between them is no longer code;
/// - outside code, a line that would open report structure is escaped as the PM's report is
///   confined ([`opens_structure`]; a setext underline only under a text line);
/// - a backslash ending the text is doubled, so it escapes nothing shown after it.
///
/// Ordinary text comes back unchanged and unallocated.
pub(crate) fn neutralise(text: &str) -> std::borrow::Cow<'_, str> {
    let plain = |l: &str| {
        let t = l.trim_start();
        !is_fence(t) && !opens_structure(&t[container_marks(t)..]) && !is_setext_underline(t.trim())
    };
    if !text.contains(['<', '`', '\\']) && text.lines().all(plain) {
        return std::borrow::Cow::Borrowed(text);
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let code = code_lines(&lines);
    let defenced = code.is_none();
    let mut out = String::with_capacity(text.len() + 16);
    let mut previous_text = false;
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if code.as_ref().is_some_and(|c| c[i]) {
            out.push_str(line);
            previous_text = false;
            continue;
        }
        let t = line.trim_start();
        // A heading inside a list item or a quote (`1. # Risks`) is a heading too.
        let (marks, rest) = t.split_at(container_marks(t));
        let shown = escape_html(rest);
        let tilde_fence = defenced && marks.is_empty() && t.starts_with('~') && is_fence(t);
        let structure = !rest.starts_with('\\')
            && if is_setext_underline(t.trim()) {
                previous_text
            } else {
                opens_structure(rest) && !is_setext_underline(rest.trim())
            };
        out.push_str(&line[..line.len() - t.len()]);
        out.push_str(marks);
        if (tilde_fence || structure) && !shown.starts_with('\\') {
            out.push('\\');
        }
        out.push_str(&shown);
        // An escaped heading is text: an underline below it would make it a heading again.
        previous_text = !t.trim().is_empty() && (structure || heading_level(t).is_none());
    }
    let trailing = out.chars().rev().take_while(|&c| c == '\\').count();
    if trailing % 2 == 1 {
        out.push('\\');
    }
    if out == text {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(out)
}

/// The length of the list item and block quote markers `t` starts with (`- `, `1. `, `2) `,
/// `> `, nested).
fn container_marks(t: &str) -> usize {
    let mut at = 0;
    loop {
        let rest = &t[at..];
        let marker = if rest.starts_with(['>', '-', '*', '+']) {
            1
        } else {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if (1..=9).contains(&digits) && rest[digits..].starts_with(['.', ')']) {
                digits + 1
            } else {
                return at;
            }
        };
        let after = &rest[marker..];
        let space = after.len() - after.trim_start_matches([' ', '\t']).len();
        if space == 0 && !rest.starts_with('>') {
            return at;
        }
        at += marker + space;
    }
}

/// Which lines are code (fence lines included) when the fences pair up without doubt, or
/// `None` when they do not: a fence left open, a fence-like line that opens nothing, or a
/// line that would close the fence in an indenting container but not at the top level.
fn code_lines(lines: &[&str]) -> Option<Vec<bool>> {
    let mut code = vec![false; lines.len()];
    let mut open: Option<Fence> = None;
    for (i, line) in lines.iter().enumerate() {
        match open {
            Some(f) => {
                code[i] = true;
                if f.closed_by(line) {
                    open = None;
                } else if f.closed_by_ignoring_indent(line) {
                    return None;
                }
            }
            None => {
                if let Some(f) = Fence::opened_by(line) {
                    code[i] = true;
                    open = Some(f);
                } else if is_fence(line) {
                    return None;
                }
            }
        }
    }
    open.is_none().then_some(code)
}

/// `line` with every `<` that could open inline or block HTML escaped outside code spans, and
/// every backtick of a run that opens no code span on this line escaped too (it shows the
/// same). Each line then pairs its own backticks, so no code span of a renderer runs from one
/// line, or one shown value, into the next and turns what follows into code or out of it:
/// the code spans seen here are the renderer's. Backslash escapes and autolinks are kept.
fn escape_html(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains(['<', '`']) {
        return std::borrow::Cow::Borrowed(line);
    }
    let b = line.as_bytes();
    let mut out = String::with_capacity(line.len() + 8);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let end = line[i + 1..]
                    .chars()
                    .next()
                    .map_or(i + 1, |c| i + 1 + c.len_utf8());
                out.push_str(&line[i..end]);
                i = end;
            }
            b'`' => {
                let run = b[i..].iter().take_while(|&&c| c == b'`').count();
                match code_span_end(b, i + run, run) {
                    Some(end) => out.push_str(&line[i..end]),
                    None => (0..run).for_each(|_| out.push_str("\\`")),
                }
                i = code_span_end(b, i + run, run).unwrap_or(i + run);
            }
            b'<' => {
                if let Some(end) = autolink_end(&line[i..]) {
                    out.push_str(&line[i..i + end]);
                    i += end;
                    continue;
                }
                let next = b.get(i + 1).copied();
                if next.is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, b'/' | b'!' | b'?'))
                {
                    out.push('\\');
                }
                out.push('<');
                i += 1;
            }
            _ => {
                let end = line[i..].chars().next().map_or(i + 1, |c| i + c.len_utf8());
                out.push_str(&line[i..end]);
                i = end;
            }
        }
    }
    if out == line {
        return std::borrow::Cow::Borrowed(line);
    }
    std::borrow::Cow::Owned(out)
}

/// The end of the code span whose opening run of `run` backticks ends at `from`: just after a
/// closing run of exactly `run` backticks on the same line.
fn code_span_end(b: &[u8], from: usize, run: usize) -> Option<usize> {
    let mut j = from;
    while j < b.len() {
        if b[j] == b'`' {
            let n = b[j..].iter().take_while(|&&c| c == b'`').count();
            if n == run {
                return Some(j + n);
            }
            j += n;
        } else {
            j += 1;
        }
    }
    None
}

/// The length of the autolink `s` starts with (`<scheme:…>`, `<user@host>`), if it is one.
fn autolink_end(s: &str) -> Option<usize> {
    let close = s.find('>')?;
    let inner = &s[1..close];
    if inner.is_empty() || inner.contains(|c: char| c.is_whitespace() || c == '<') {
        return None;
    }
    let uri = inner.split_once(':').is_some_and(|(scheme, _)| {
        (2..=32).contains(&scheme.len())
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
    });
    // Starting with a letter or digit, neither can be a tag, a comment or a declaration.
    let email = inner.split_once('@').is_some_and(|(user, host)| {
        user.starts_with(|c: char| c.is_ascii_alphanumeric())
            && !host.is_empty()
            && user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".!#$%&'*+/=?^_`{|}~-".contains(c))
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
    });
    (uri || email).then_some(close + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_that_could_hide_the_report_is_escaped() {
        for (text, shown) in [
            ("<!-- hide", "\\<!-- hide"),
            ("a <script>x</script> b", "a \\<script>x\\</script> b"),
            (
                "  <div style=\"display:none\">",
                "  \\<div style=\"display:none\">",
            ),
            ("<?php ?> <!DOCTYPE x>", "\\<?php ?> \\<!DOCTYPE x>"),
            (
                "`<b>` and ``<i>`` and `<u>",
                "`<b>` and ``<i>`` and \\`\\<u>",
            ),
            ("<!--@x> <h1>", "\\<!--@x> \\<h1>"),
            ("ends in \\", "ends in \\\\"),
            (
                "<https://example.com/a> <me@example.com>",
                "<https://example.com/a> <me@example.com>",
            ),
            ("a < b, \\<kept>", "a < b, \\<kept>"),
        ] {
            assert_eq!(neutralise(text), shown, "{text:?}");
        }
    }

    #[test]
    fn fences_stay_only_when_they_pair_up() {
        let paired = "```rust\nlet a = \"<!--\";\n```\n~~~~\n```\n~~~~";
        assert_eq!(neutralise(paired), paired);
        assert_eq!(
            neutralise("a\n```\n# Process Note\n<!--\n<h2>x"),
            "a\n\\`\\`\\`\n\\# Process Note\n\\<!--\n\\<h2>x"
        );
        assert_eq!(
            neutralise("~~~\n  ~~~"),
            "~~~\n  ~~~",
            "closes: indented up to 3"
        );
        assert_eq!(
            neutralise("~~~\n    ~~~"),
            "\\~~~\n    \\~~~",
            "closes only in a list item"
        );
        assert_eq!(neutralise("    ```\ncode"), "    \\`\\`\\`\ncode");
        assert_eq!(neutralise("```a`b\n```"), "\\`\\`\\`a\\`b\n\\`\\`\\`");
    }

    #[test]
    fn tidy_collapses_blank_lines_outside_fences() {
        assert_eq!(
            tidy_markdown("\n# a\n\n\n\nb  \n```\n\n\n```\n\n\n"),
            "# a\n\nb\n```\n\n\n```\n"
        );
    }
}
