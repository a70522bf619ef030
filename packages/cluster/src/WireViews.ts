/**
 * Schemas for the engine's answers that cross between hosts and that core keeps as types only (a broadcast's
 * outcomes, the async runs, the query of approvals and of runs, what unpark gives). Each is declared as a Schema
 * of core's own type, so the compiler holds the two together; the rest of the protocol uses core's AgentView, and
 * the agent options (what a placement keeps and a spawn sends) are core's one Schema of them, `AgentOptions`.
 */
import { Outcome } from "@flotta/core/RunOutcome"

/** The views core declares with the operations, kept here under their old names. */
export { ApprovalQuery, BroadcastOutcome, RunQuery, RunView, Unparked } from "@flotta/core/Operations"

/** An async run's outcome: a run's result, or a verify's report (core's Schemas). */
export const RunOutcome = Outcome
