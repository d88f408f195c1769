//! The meeting's rules that more than one stage applies (a rule of one stage lives in
//! `stage/<program>/`): the clock and the events, the ask-until-valid loop, the prompts, the
//! whiteboard's bounds and the decision record's rules, the repeated-question measure, the
//! token budget, reviewer mode, the council round, and the PM's final report. Imports the LLM layer, the loader,
//! the documents and the foundations; never a stage, the edge or the driver.

pub(crate) mod ask;
pub mod budget;
pub mod circles;
pub(crate) mod council;
pub mod events;
pub(crate) mod final_report;
pub mod prompts;
pub(crate) mod review;
pub mod whiteboard;
