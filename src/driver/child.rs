//! A `meeting` run as a child process of another program (the MCP server, the forge
//! integrations): its stderr passed on to ours, its progress lines to the caller, its last other
//! lines kept for the error it ends with, and the MeetingResult it prints on stdout.

use std::io::{BufRead, BufReader, Read};
use std::process::Child;

use crate::error::{Error, Result};
use crate::model::MeetingResult;

/// How a child meeting ended.
pub struct Ended {
    /// The MeetingResult the program printed, when it printed one.
    pub result: Option<MeetingResult>,
    /// Its exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Its last lines on stderr that are no progress lines (the error, the resume hint).
    pub said: Vec<String>,
}

/// Wait for `child` (spawned with stdout and stderr piped) to end: every stderr line goes on to
/// ours, a progress line (`[loop 2/6] …`) also to `progress`, and the last `keep` others are
/// kept; the result is the last stdout line that is a MeetingResult.
pub fn wait(mut child: Child, keep: usize, mut progress: impl FnMut(&str)) -> Result<Ended> {
    let mut stdout = child.stdout.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let mut said = Vec::new();
    let err = child.stderr.take().expect("piped");
    for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
        crate::note!("{line}");
        if super::loop_of_line(&line).is_some() {
            progress(&line);
        } else {
            said.push(line);
        }
    }
    let status = child
        .wait()
        .map_err(|e| Error::Runtime(format!("meeting: {}", crate::io::os_error(&e))))?;
    let text = out.join().unwrap_or_default();
    let result = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<MeetingResult>(l).ok());
    let from = said.len().saturating_sub(keep);
    Ok(Ended {
        result,
        code: status.code(),
        said: said.split_off(from),
    })
}
