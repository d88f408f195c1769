#!/usr/bin/env python3
"""Writes the demo cassettes: hand-written, scripted model replies (NOT recorded from a real
model) so the demo meeting runs offline and deterministically. Run: python3 meetings/make_cassettes.py"""
import json

NOTE = "scripted demo reply, hand-written (not recorded from a model)"

def line(seq, caller, reply, p, c):
    text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False, indent=1)
    return {"seq": seq, "caller": caller, "response": text, "usage": {"prompt_tokens": p, "completion_tokens": c}, "note": NOTE}

OV, COSTS, INC, TEAM = "meetings/demo/overview.md", "meetings/demo/docs/costs.md", "meetings/demo/docs/incidents.md", "meetings/demo/docs/team.md"
def cite(doc, quote, supports=None):
    c = {"document_id": doc, "source_path": doc, "quote": quote}
    if supports:
        c["supports"] = supports  # the key point, risk or recommendation the quote backs
    return c

def answered(qid, answer, *by):
    return {"question": qid, "answer": answer, "by": list(by)}

# The meeting file's options and evaluation dimensions, as the PM names them in its table.
KEEP, REPLICA, WAREHOUSE = (
    "Keep the primary and tune the slowest jobs",
    "Run the jobs on a dedicated Postgres read replica",
    "Load data into a managed warehouse (BigQuery or Snowflake, EU region) and run reports there")
RELIABILITY, COST, EFFORT, IMPACT = (
    "Reliability of the 06:00 UTC deadline", "Monthly cost", "Migration effort and risk",
    "Impact on the product database")
def assess(option, dimension, verdict):
    return {"option": option, "dimension": dimension, "assessment": verdict}

pm_call_arch = {
    "analysis": "The deadline is the core problem. Before comparing costs we need to know whether a read replica alone fixes the timing, which is an architecture question.",
    "next_action": "CALL_AGENT", "target_agent": "arch",
    "prompt_for_agent": "Would running the 23 nightly jobs on a dedicated read replica bring the run under the 06:00 UTC deadline with margin on at least 99% of nights? Consider the aged_receivables sort, the staging-table ordering and replica lag during bulk imports.",
    "final_report": None}
arch_1 = {
    "response": "A dedicated replica removes the contention that caused the worst overruns, but on its own it does not guarantee 99% on-time runs. The worst night was driven by autovacuum and the aged_receivables sort competing on the primary; a replica takes that contention away, yet the jobs still run in sequence and replica lag during bulk imports can delay the start.",
    "key_points": [
        "Average run is 3h40m, finishing around 05:10 UTC with 50 minutes of margin.",
        "The worst overrun came from autovacuum running alongside aged_receivables on the same table.",
        "Jobs must keep their order because of shared staging tables.",
        "How long would the run take on a replica with the same instance size? No measurement exists yet."],
    "risks": [
        "Replica lag reached 14 minutes during bulk imports, which would delay or corrupt a run that starts on time.",
        "Reports are still written back to the primary unless the portal read path changes."],
    "recommendations": [
        "Trial the nightly run on a same-size replica for two weeks before committing.",
        "Gate the run start on replica lag below 60 seconds."],
    "citations": [
        cite(OV, "Total: 3h40m on average, so the run normally finishes around 05:10 UTC",
             "Average run is 3h40m, finishing around 05:10 UTC with 50 minutes of margin."),
        cite(INC, "Cause: autovacuum on `invoice_lines` started at 02:10 and ran alongside `aged_receivables`",
             "The worst overrun came from autovacuum running alongside aged_receivables on the same table."),
        cite(COSTS, "during bulk imports it reached 14 minutes twice last quarter",
             "Replica lag reached 14 minutes during bulk imports, which would delay or corrupt a run that starts on time.")]}
pm_call_biz = {
    "analysis": "Architecture says a replica helps but is not sufficient alone. We now need the cost side of both paths against the 1,500 USD budget.",
    "next_action": "CALL_AGENT", "target_agent": "biz",
    "prompt_for_agent": "What is the monthly cost of (a) a dedicated same-size replica and (b) a managed warehouse including loading, today and after 12 months of growth, and which fits the 1,500 USD per month increase?",
    "final_report": None,
    "answered_questions": [answered("Q1", "Not on its own: a replica removes the contention behind the worst overruns, but replica lag during bulk imports can still delay the start, so it needs a trial and a lag gate.", "arch")]}
biz_bad = {
    "response": "The replica costs 2,310 USD per month, which is over budget on its own.",
    "key_points": ["A same-size replica costs 2,310 USD per month."],
    "risks": [], "recommendations": [],
    "citations": [cite("meetings/demo/docs/pricing.md", "2,310 USD")]}
biz_good = {
    "response": "Only the managed warehouse with a managed loading tool fits the 1,500 USD budget; a same-size replica at 2,310 USD per month does not. BigQuery at about 500 USD plus 600-900 USD for managed CDC lands at 1,100-1,400 USD today, which leaves little room for 12 months of growth, while a smaller replica at 1,240 USD fits but is untested.",
    "key_points": [
        "Same-size replica: 2,310 USD per month, over the 1,500 USD limit.",
        "Smaller replica: 1,240 USD per month, within budget but its sort performance is untested.",
        "Managed warehouse: about 500 USD (BigQuery) or 280 USD (Snowflake X-Small) plus 600-900 USD loading.",
        "Should the 35% of primary capacity used by reporting be counted as a saving?"],
    "risks": [
        "Warehouse cost after 12 months of growth may exceed the budget once loading is included.",
        "Nobody on the team has run a warehouse in production."],
    "recommendations": [
        "Price the smaller replica with a measured trial run before choosing it.",
        "Ask finance whether the freed primary capacity offsets part of the cost."],
    "citations": [
        cite(COSTS, "One more `db.r6g.2xlarge` replica with the same storage: 2,310 USD.",
             "Same-size replica: 2,310 USD per month, over the 1,500 USD limit."),
        cite(COSTS, "A smaller `db.r6g.xlarge` (4 vCPU, 32 GiB) replica: 1,240 USD, but the `aged_receivables` sort would spill more; untested.",
             "Smaller replica: 1,240 USD per month, within budget but its sort performance is untested."),
        cite(COSTS, "Total about 500 USD plus loading.",
             "Managed warehouse: about 500 USD (BigQuery) or 280 USD (Snowflake X-Small) plus 600-900 USD loading."),
        cite(COSTS, "about 240 USD compute plus 40 USD storage",
             "Managed warehouse: about 500 USD (BigQuery) or 280 USD (Snowflake X-Small) plus 600-900 USD loading."),
        cite(COSTS, "quoted 600-900 USD",
             "Managed warehouse: about 500 USD (BigQuery) or 280 USD (Snowflake X-Small) plus 600-900 USD loading."),
        cite(TEAM, "Nobody on the team has run BigQuery or Snowflake in production.",
             "Nobody on the team has run a warehouse in production.")]}
pm_call_arch2 = {
    "analysis": "Cost favours a smaller replica or a warehouse. The remaining required question is reconciliation risk if the SQL dialect changes.",
    "next_action": "CALL_AGENT", "target_agent": "arch",
    "prompt_for_agent": "Which of the 23 report jobs would be hardest to reconcile to the cent if they moved to a warehouse SQL dialect, and how long would a parallel run take?",
    "final_report": None,
    "answered_questions": [answered("Q2", "About 880-1,400 USD per month today: 280-500 USD for BigQuery or Snowflake plus 600-900 USD for managed loading, leaving little room under the 1,500 USD limit after 12 months of growth.", "biz")]}
arch_2 = {
    "response": "The two legally weighted reports, tax_summary_eu and customer_statements, are the hardest, because they must match to the cent for a full month and depend on Postgres-specific SQL. Six jobs use DISTINCT ON, generate_series or RANGE window frames, which need rewriting in a warehouse dialect, and the month of parallel running alone consumes most of the 8-week window.",
    "key_points": [
        "6 of 23 jobs use Postgres-specific features that need rewriting.",
        "tax_summary_eu and customer_statements must match the old system for one full month before cut-over.",
        "A replica keeps the SQL unchanged, so reconciliation is trivial."],
    "risks": [
        "A warehouse migration cannot finish inside 8 weeks with a one-month parallel run and quarter-end freeze.",
        "The staging-table ordering caused a wrong VAT total before (INC-2330)."],
    "recommendations": [
        "Choose the read replica for next quarter and keep the SQL unchanged.",
        "Revisit the warehouse once the report jobs are dialect-neutral."],
    "citations": [
        cite(TEAM, "6 jobs use Postgres-specific features",
             "6 of 23 jobs use Postgres-specific features that need rewriting."),
        cite(TEAM, "their output must match the old system to the cent for one full month before cut-over.",
             "tax_summary_eu and customer_statements must match the old system for one full month before cut-over."),
        cite(INC, "3 customers received incorrect VAT totals",
             "The staging-table ordering caused a wrong VAT total before (INC-2330).")]}
final_report = """### Executive Summary
Nightly reporting misses its 06:00 UTC deadline on 7 of 90 nights because it competes with product traffic and autovacuum on the primary. A dedicated read replica removes that contention and keeps every report's SQL unchanged, so the two legally weighted reports need no re-reconciliation. A managed warehouse is cheaper to run but needs 6 jobs rewritten and a one-month parallel run, which does not fit 2 engineers in 8 weeks.

### Recommendation
Move the nightly run to a dedicated read replica next quarter: start with a two-week trial of the smaller db.r6g.xlarge (1,240 USD per month, within budget) and fall back to a same-size replica only with a budget exception. Gate the run start on replica lag below 60 seconds. Still uncertain: the run time on the smaller replica (no measurement yet) and whether the portal should read reports from the replica; revisit the warehouse once the SQL is dialect-neutral."""
pm_finish = {
    "analysis": "All three required questions are answered: timing (replica helps, needs a trial), cost (smaller replica or warehouse fit the budget), reconciliation (warehouse too risky this quarter).",
    "next_action": "FINISH", "target_agent": None, "prompt_for_agent": None,
    "final_report": final_report,
    "answered_questions": [answered("Q3", "tax_summary_eu and customer_statements: they must match the old system to the cent for a full month and rely on Postgres-specific SQL, like 6 of the 23 jobs.", "arch")],
    "decision": {"choice": "Move the nightly run to a dedicated read replica, starting with a two-week trial of the smaller db.r6g.xlarge",
                 "confidence": "medium",
                 "revisit_if": "the trial run on the smaller replica misses 06:00 UTC, or the report SQL becomes dialect-neutral"},
    "option_assessments": [
        assess(KEEP, RELIABILITY, "Overran 7 of 90 nights; tuning does not remove the contention"),
        assess(KEEP, COST, "No increase"),
        assess(KEEP, EFFORT, "Low"),
        assess(KEEP, IMPACT, "Reporting keeps loading the primary"),
        assess(REPLICA, RELIABILITY, "Removes the contention; needs a trial and a lag gate"),
        assess(REPLICA, COST, "1,240 USD (smaller) or 2,310 USD (same size, over budget)"),
        assess(REPLICA, EFFORT, "Low: SQL unchanged, nothing to reconcile"),
        assess(REPLICA, IMPACT, "None at night; write-back to the primary remains"),
        assess(WAREHOUSE, RELIABILITY, "Likely, once migrated"),
        assess(WAREHOUSE, COST, "About 880-1,400 USD with loading; tight after growth"),
        assess(WAREHOUSE, EFFORT, "High: 6 jobs rewritten, one-month parallel run"),
        assess(WAREHOUSE, IMPACT, "None")]}

demo = [
    line(1, "pm", pm_call_arch, 2450, 180),
    line(2, "arch", arch_1, 3900, 420),
    line(3, "pm", pm_call_biz, 2700, 160),
    line(4, "biz", biz_bad, 3950, 120),
    line(5, "biz", biz_good, 4300, 430),
    line(6, "pm", pm_call_arch2, 2950, 150),
    line(7, "arch", arch_2, 4050, 390),
    line(8, "pm", pm_finish, 3200, 520),
]
# The forced demo's PM report speaks only of what its two loops discussed (timing, cost).
forced_report = """### Executive Summary
Nightly reporting misses its 06:00 UTC deadline on 7 of 90 nights; the worst overruns came from autovacuum and the aged_receivables sort competing on the primary. A dedicated read replica removes that contention but does not guarantee on-time runs on its own, since replica lag reached 14 minutes during bulk imports. On cost, a same-size replica (2,310 USD per month) is over the 1,500 USD limit; a smaller replica (1,240 USD) fits but its run time is untested; a managed warehouse comes to about 880-1,400 USD per month with loading, and nobody on the team has run one in production.

### Recommendation
Closed at the loop limit after two loops: migration effort and reconciliation risk were not discussed, so do not commit yet. Run the nightly jobs for two weeks on the smaller db.r6g.xlarge replica, with the run start gated on replica lag below 60 seconds, and settle which reports would be hardest to reconcile before choosing between the replica and a warehouse."""
forced_finish = {
    "analysis": "Loop limit reached; closing with what the whiteboard supports.",
    "next_action": "FINISH", "target_agent": None, "prompt_for_agent": None,
    "final_report": forced_report,
    "answered_questions": [answered("Q2", "About 880-1,400 USD per month today: 280-500 USD for BigQuery or Snowflake plus 600-900 USD for managed loading.", "biz")],
    "decision": {"choice": "Trial the smaller db.r6g.xlarge read replica for two weeks before choosing",
                 "confidence": "low",
                 "revisit_if": "reconciliation risk is assessed, or the trial misses 06:00 UTC"},
    "option_assessments": [
        assess(KEEP, RELIABILITY, "Overran 7 of 90 nights"),
        assess(REPLICA, RELIABILITY, "Removes the contention; needs a trial and a lag gate"),
        assess(REPLICA, COST, "1,240 USD (smaller) or 2,310 USD (same size, over budget)"),
        assess(WAREHOUSE, COST, "About 880-1,400 USD with loading")]}
forced = [
    line(1, "pm", pm_call_arch, 2450, 180),
    line(2, "arch", arch_1, 3900, 420),
    line(3, "pm", pm_call_biz, 2700, 160),
    line(4, "biz", biz_good, 4300, 430),
    line(5, "pm", forced_finish, 3100, 480),
]
for name, rows in [("meetings/demo.cassette.jsonl", demo), ("meetings/demo-forced.cassette.jsonl", forced)]:
    with open(name, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
