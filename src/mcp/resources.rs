//! The runs' reports and results as MCP resources (docs/design/mcp.md#resources): each ended
//! meeting of the server's run folder offers its report (`text/markdown`) and its
//! MeetingResult (`application/json`) at `agent-meeting://runs/<run id>/report` and
//! `…/result`, and its decision record (`…/adr`) when it wrote one; a tool result that ends a meeting links them (`resource_link`). Only the
//! server's own folders are read: a run id names a folder of its run folder, and a report
//! outside its folders is not served.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::runs::{self, Place};
use crate::model::MeetingResult;

/// Where every resource's URI starts.
pub const SCHEME: &str = "agent-meeting://runs/";

/// Most run folders `resources/list` lists, the newest (run ids sort by time).
const LIST_MOST: usize = 50;

/// Resource not found (the MCP specification's code).
pub const NOT_FOUND: i64 = -32002;

/// The parts of a run offered as resources: name, MIME type.
const PARTS: [(&str, &str); 3] = [
    ("report", "text/markdown"),
    ("adr", "text/markdown"),
    ("result", "application/json"),
];

/// The `resource_link` items of an ended meeting, for a tool result.
pub fn links(place: &Place, result: &MeetingResult) -> Vec<Value> {
    PARTS
        .iter()
        .filter(|(part, _)| file_of(place, result, part).is_some() || *part == "result")
        .map(|(part, mime)| {
            json!({"type": "resource_link", "uri": format!("{SCHEME}{}/{part}", result.trace_id),
                   "name": format!("{} {part}", result.trace_id), "mimeType": mime})
        })
        .collect()
}

/// `resources/list`: the parts of the newest ended meetings of the server's run folder.
pub fn list(place: &Place) -> Value {
    let mut ids: Vec<String> = std::fs::read_dir(&place.runs)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("meeting.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|id| safe_id(id))
        .collect();
    ids.sort();
    ids.reverse();
    let mut resources = Vec::new();
    for id in ids.into_iter().take(LIST_MOST) {
        let Ok(Some(result)) = runs::ended_result(&place.runs.join(&id)) else {
            continue;
        };
        for link in links(place, &result) {
            let mut r = link;
            r.as_object_mut().map(|o| o.remove("type"));
            resources.push(r);
        }
    }
    json!({ "resources": resources })
}

/// `resources/read` of `uri`: the part's contents, or why there is none (not found).
pub fn read(place: &Place, uri: &str) -> std::result::Result<Value, (i64, String)> {
    let not_found = |why: &str| (NOT_FOUND, format!("Resource not found: {uri}: {why}"));
    let rest = uri
        .strip_prefix(SCHEME)
        .ok_or_else(|| not_found("not one of this server's"))?;
    let (id, part) = rest
        .split_once('/')
        .ok_or_else(|| not_found("expected <run id>/report, /adr or /result"))?;
    let Some((part, mime)) = PARTS.iter().find(|(p, _)| *p == part) else {
        return Err(not_found("expected report, adr or result"));
    };
    if !safe_id(id) {
        return Err(not_found("no such run"));
    }
    let dir = place.runs.join(id);
    if !dir.join("meeting.json").is_file() {
        return Err(not_found("no such run"));
    }
    let result = match runs::ended_result(&dir) {
        Ok(Some(r)) => r,
        Ok(None) => return Err(not_found("the meeting has not ended")),
        Err(e) => return Err(not_found(&e.to_string())),
    };
    let text = match *part {
        "result" => crate::io::to_json_line(&result, true),
        part => {
            let file = file_of(place, &result, part)
                .ok_or_else(|| not_found(&format!("no {part} of it in this server's folders")))?;
            std::fs::read_to_string(&file).map_err(|e| not_found(&crate::io::os_error(&e)))?
        }
    };
    Ok(json!({"contents": [{"uri": uri, "mimeType": mime, "text": text}]}))
}

/// The file of a run's `part` when it is in the server's folders: the report in its reports
/// or run folder, the decision record below its context root (where a call's `adr` goes).
fn file_of(place: &Place, result: &MeetingResult, part: &str) -> Option<PathBuf> {
    let (file, ours) = match part {
        "report" => {
            let file = PathBuf::from(result.report_file.as_deref()?);
            let ours = crate::driver::is_within(&file, &place.reports)
                || crate::driver::is_within(&file, &place.runs);
            (file, ours)
        }
        "adr" => {
            let file = crate::driver::written_record(&place.runs.join(&result.trace_id))?;
            let ours = crate::driver::is_within(&file, &place.context_root);
            (file, ours)
        }
        _ => return None,
    };
    (ours && file.is_file()).then_some(file)
}

/// A run id that names a folder of the run folder, nothing else.
pub(super) fn safe_id(id: &str) -> bool {
    !id.is_empty() && !id.starts_with('.') && !id.contains(['/', '\\', '\0'])
}
