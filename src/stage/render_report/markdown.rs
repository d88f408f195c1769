//! The final tidying of the rendered report (docs/design/report.md#report), and the neutralising of
//! the text it shows (docs/design/report.md#sanitising): no HTML and no unbalanced code fence of a
//! model, a document or the board may hide what follows it. The reading of the PM's final
//! report itself is `crate::final_report`, shared with pm-step.

use crate::final_report::{is_fence, opens_structure, Fence};

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

/// Text shown in the report, made unable to hide what follows it in a CommonMark renderer
/// (docs/design/report.md#sanitising):
/// - every `<` that could open HTML (a tag, a closing tag, a comment `<!--`, a declaration or
///   a processing instruction) is escaped as `\<`, outside code spans and code fences;
///   autolinks (`<https://…>`) stay;
/// - code fences stay only when they pair up without doubt; otherwise every fence line is
///   escaped (`\```` shows three backticks and opens nothing) and so is every line that would
///   open report structure ([`opens_structure`]), as that text is no longer code.
///
/// Text without `<` or a fence comes back unchanged and unallocated.
pub(crate) fn neutralise(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('<') && !text.lines().any(is_fence) {
        return std::borrow::Cow::Borrowed(text);
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let code = code_lines(&lines);
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match &code {
            Some(code) if code[i] => out.push_str(line),
            Some(_) => out.push_str(&escape_html(line)),
            None => {
                let t = line.trim_start();
                let indent = &line[..line.len() - t.len()];
                if is_fence(line) || (!t.starts_with('\\') && opens_structure(line)) {
                    out.push_str(indent);
                    out.push('\\');
                    out.push_str(&escape_html(t));
                } else {
                    out.push_str(&escape_html(line));
                }
            }
        }
    }
    std::borrow::Cow::Owned(out)
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

/// `line` with every `<` that could open inline or block HTML escaped, outside code spans;
/// backslash escapes and autolinks are kept as they are.
fn escape_html(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('<') {
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
                let end = code_span_end(b, i + run, run).unwrap_or(i + run);
                out.push_str(&line[i..end]);
                i = end;
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
    let email = inner.split_once('@').is_some_and(|(user, host)| {
        !user.is_empty()
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
            ("`<b>` and ``<i>`` and `<u>", "`<b>` and ``<i>`` and `\\<u>"),
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
            neutralise("a\n```\n# Process Note\n<!--"),
            "a\n\\```\n\\# Process Note\n\\<!--"
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
        assert_eq!(neutralise("    ```\ncode"), "    \\```\ncode");
        assert_eq!(neutralise("```a`b\n```"), "\\```a`b\n\\```");
    }

    #[test]
    fn tidy_collapses_blank_lines_outside_fences() {
        assert_eq!(
            tidy_markdown("\n# a\n\n\n\nb  \n```\n\n\n```\n\n\n"),
            "# a\n\nb\n```\n\n\n```\n"
        );
    }
}
