//! A member's blind vote: the JSON it must be, its check (the choice one of the options, the
//! reasons content, the citations the collected documents'), and its one-line headline.

use serde_json::{json, Value};

use crate::llm::ExpectedJson;
use crate::model::{Board, CouncilVote, NONE_OF_THESE};
use crate::text::{fold_ws, verify_quote};

/// Most reasons one vote may give.
pub(super) const MAX_REASONS: usize = 5;
/// Most citations one vote may give.
const MAX_CITATIONS: usize = 8;

/// The JSON a vote must be: the choice an enum of the packet's options and "none of these"
/// (any text without options), confidence, reasons, citations kept to the collected
/// documents (none when there are none).
/// `reader`: the member voting, whose documents its citations may name
/// (docs/design/context.md#documents-only-some-participants-read).
pub(crate) fn vote_expected_json(board: &Board, reader: &str) -> ExpectedJson {
    let options = &board.meeting_input.decision_packet.options;
    let choice = if options.is_empty() {
        json!({"type": "string"})
    } else {
        let mut all: Vec<&str> = options.iter().map(String::as_str).collect();
        all.push(NONE_OF_THESE);
        json!({"type": "string", "enum": all})
    };
    // Every object closed and every property listed, so the strict form of structured output
    // (`llm::json_format::to_strict`) can send it; without documents no citation fits.
    let docs: Vec<crate::model::ContextDocument> =
        board.context_bundle.readable_by(reader).cloned().collect();
    let docs = &docs;
    let mut item = json!({
        "type": "object", "additionalProperties": false,
        "required": ["document_id", "source_path", "quote"],
        "properties": {
            "document_id": {"type": "string"},
            "source_path": {"type": "string"},
            "quote": {"type": "string"}}});
    let citation = if docs.is_empty() {
        Value::Object(crate::meeting::prompts::no_citations())
    } else {
        item["properties"]["document_id"]["enum"] =
            json!(docs.iter().map(|d| &d.document_id).collect::<Vec<_>>());
        item["properties"]["source_path"]["enum"] = json!(crate::model::source_paths(docs.iter()));
        json!({"type": "array", "maxItems": MAX_CITATIONS, "items": item})
    };
    ExpectedJson {
        name: "council_vote".into(),
        schema: json!({
            "type": "object", "additionalProperties": false,
            "required": ["choice", "confidence", "reasons", "citations"],
            "properties": {
                "choice": choice,
                "confidence": {"type": "string", "enum": ["low", "medium", "high"]},
                "reasons": {"type": "array", "minItems": 1, "maxItems": MAX_REASONS, "items": {"type": "string"}},
                "citations": citation,
            }
        }),
    }
}

/// Check a vote: its structure, the choice one of the options (or "none of these"; any
/// non-blank text without options), every reason content, every citation naming a collected
/// document under its own path (its quote marked verified or not). The error is what the
/// model is told, for its one retry.
pub(crate) fn check_vote(
    board: &Board,
    reader: &str,
    value: &Value,
) -> std::result::Result<CouncilVote, String> {
    let mut value = value.clone();
    if let Value::Object(obj) = &mut value {
        obj.retain(|_, v| !v.is_null());
    }
    let mut v: CouncilVote = crate::schema::shaped(value)?;
    let options = &board.meeting_input.decision_packet.options;
    let key = |s: &str| fold_ws(s).to_lowercase();
    let wanted = key(&v.choice);
    if wanted.is_empty() {
        return Err("choice: must not be empty".into());
    }
    if !options.is_empty() {
        let known = options
            .iter()
            .map(String::as_str)
            .chain([NONE_OF_THESE])
            .find(|o| key(o) == wanted);
        match known {
            Some(o) => v.choice = o.trim().to_string(),
            None => {
                return Err(format!(
                    "choice: {:?} is not one of the options (expected one of: {}; or, only when none of them can work, {NONE_OF_THESE:?} with the reason why)",
                    crate::text::cut(&v.choice, 80),
                    options.iter().map(|o| format!("{:?}", o.trim())).collect::<Vec<_>>().join(", ")
                ))
            }
        }
    } else {
        v.choice = fold_ws(&v.choice);
    }
    if v.reasons.is_empty() || v.reasons.len() > MAX_REASONS {
        return Err(format!(
            "reasons: {} reasons (expected 1 to {MAX_REASONS}, the strongest first)",
            v.reasons.len()
        ));
    }
    for (i, r) in v.reasons.iter().enumerate() {
        if let Some(why) = crate::model::not_content(r, &board.participants) {
            return Err(format!("reasons[{i}]: {why}"));
        }
    }
    let docs: Vec<crate::model::ContextDocument> =
        board.context_bundle.readable_by(reader).cloned().collect();
    let docs = &docs;
    for (i, c) in v.citations.iter_mut().enumerate() {
        let Some(doc) = docs.iter().find(|d| d.document_id == c.document_id) else {
            let allowed: Vec<&str> = docs.iter().map(|d| d.document_id.as_str()).collect();
            return Err(format!(
                "citations[{i}].document_id: {:?} is not one of the collected documents (allowed: {})",
                c.document_id,
                if allowed.is_empty() { "none: leave citations empty".into() } else { allowed.join(", ") }
            ));
        };
        if c.source_path != doc.source_path {
            return Err(format!(
                "citations[{i}].source_path: {:?} does not match document {:?} (expected {:?})",
                c.source_path, doc.document_id, doc.source_path
            ));
        }
        c.verified = Some(verify_quote(&doc.excerpt, &c.quote));
    }
    Ok(v)
}

/// A vote's line for the events and the diagram.
pub(crate) fn vote_headline(v: &CouncilVote) -> String {
    format!("vote: {} ({})", fold_ws(&v.choice), v.confidence.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vote for an option not in the packet is refused with the options named; one in
    /// other case or spacing is taken in the packet's spelling.
    #[test]
    fn a_vote_must_name_an_option() {
        let mut b = crate::stage::fixtures::board(&[]);
        b.meeting_input.decision_packet.options = vec!["Read replica".into(), "Tune".into()];
        let v = |c: &str| json!({"choice": c, "confidence": "high", "reasons": ["Lag is bounded by the load test"], "citations": []});
        let e = check_vote(&b, "arch", &v("Kafka")).unwrap_err();
        assert!(
            e.contains("\"Kafka\" is not one of the options") && e.contains("\"Read replica\""),
            "{e}"
        );
        assert_eq!(
            check_vote(&b, "arch", &v("read  REPLICA")).unwrap().choice,
            "Read replica"
        );
        assert_eq!(
            check_vote(&b, "arch", &v("None of these")).unwrap().choice,
            NONE_OF_THESE
        );
        let mut empty = v("Tune");
        empty["reasons"] = json!([]);
        assert!(check_vote(&b, "arch", &empty)
            .unwrap_err()
            .starts_with("reasons:"));
    }

    /// A member cites only what it reads: a document only another reads is refused in its
    /// vote (and its schema offers it none of them); its reader's vote takes it.
    #[test]
    fn a_vote_cites_only_documents_its_member_reads() {
        let mut b = crate::stage::fixtures::board(&[]);
        b.meeting_input.decision_packet.options = vec!["Read replica".into(), "Tune".into()];
        b.context_bundle.documents = vec![crate::model::ContextDocument {
            document_id: "vendor.md".into(),
            source_path: "vendor.md".into(),
            source_type: crate::model::DocumentSource::File,
            purpose: String::new(),
            excerpt: "Replicas cost 900 EUR a month.".into(),
            char_count: 30,
            shown_chars: None,
            redactions: 0,
            readers: vec!["biz".into()],
        }];
        let v = json!({"choice": "Tune", "confidence": "high", "reasons": ["Replicas cost too much"],
            "citations": [{"document_id": "vendor.md", "source_path": "vendor.md", "quote": "900 EUR a month"}]});
        let e = check_vote(&b, "arch", &v).unwrap_err();
        assert!(
            e.starts_with("citations[0].document_id: \"vendor.md\""),
            "{e}"
        );
        assert!(check_vote(&b, "biz", &v).is_ok());
        let arch = vote_expected_json(&b, "arch").schema;
        assert!(!arch.to_string().contains("vendor.md"), "{arch}");
        let biz = vote_expected_json(&b, "biz").schema;
        assert!(biz.to_string().contains("vendor.md"), "{biz}");
    }
}
