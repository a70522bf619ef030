/**
 * The engine's report kinds about the fleet around its agents: permission decisions and approvals, parking at usage
 * limits, runs, the store's health and a lost host. `EngineEvents` re-exports them among the engine's kinds.
 */
import { Schema } from "effect"
import { ErrorView, PermissionRecord } from "./AgentView.js"
import { exact } from "./Decode.js"
import { Described } from "./Permission.js"
import { costOf, described, kind } from "./ReportEvent.js"

const Reason = described(Schema.String, "why, in words")

export const permission = kind(
  "permission",
  PermissionRecord,
  "a tool call's permission was decided",
  { summary: (d) => `${d.tool}: ${d.decision}` }
)

export const permissionChanged = kind(
  "permission_changed",
  Schema.Struct({ allowAlso: Schema.String, by: Schema.String, permission: Described }),
  "an approval given \"always\" widened the agent's permission",
  { summary: (d) => `${d.allowAlso} allowed by ${d.by}` }
)

export const approvalRequested = kind(
  "approval_requested",
  Schema.Struct({ id: Schema.String, tool: Schema.String, input: Schema.Unknown, expiresAt: Schema.String }),
  "a tool call waits for a human's approval",
  { summary: (d) => d.tool }
)

export const approvalDecided = kind(
  "approval_decided",
  Schema.Struct({
    id: Schema.String,
    tool: Schema.String,
    behavior: Schema.Literal("allow", "deny"),
    status: Schema.String,
    by: described(Schema.String, "who decided: a surface, `timeout` or `host_restart`"),
    message: exact(Schema.String),
    always: exact(Schema.Boolean)
  }),
  "an approval was decided, timed out or expired",
  { summary: (d) => `${d.tool}: ${d.status}` }
)

export const parked = kind(
  "parked",
  Schema.Struct({
    until: Schema.String,
    reason: Reason,
    rateLimitType: exact(Schema.String),
    credentials: described(Schema.String, "the account's label"),
    message: Schema.String
  }),
  "the agent's account hit a usage limit: it waits until `until`",
  { summary: (d) => `until ${d.until}: ${d.reason}` }
)

export const unparked = kind(
  "unparked",
  Schema.Struct({ by: Schema.String, credentials: Schema.String }),
  "a parked agent resumed",
  { summary: (d) => `by ${d.by}` }
)

export const usageWarning = kind(
  "usage_warning",
  Schema.Struct({
    credentials: Schema.String,
    rateLimitType: Schema.NullOr(Schema.String),
    resetsAt: Schema.NullOr(Schema.String),
    utilization: exact(Schema.Number),
    surpassedThreshold: exact(Schema.Number)
  }),
  "the account is close to a usage limit"
)

export const runFinished = kind(
  "run_finished",
  Schema.Struct({
    ok: Schema.Boolean,
    costUsd: described(Schema.Number, "what the run spent (a best-of-N run: every attempt together)"),
    durationMs: exact(Schema.Number),
    branch: exact(Schema.String),
    worktree: exact(described(Schema.String, "its worktree, while it exists")),
    attempt: exact(described(Schema.Number, "a best-of-N run: the winning attempt")),
    error: exact(ErrorView)
  }),
  "a run ended: how, what it spent, where its work is",
  { summary: (d) => (d.ok ? "finished" : `failed: ${d.error?.message ?? "see its record"}`) + costOf(d.costUsd) }
)

export const verifyFailed = kind(
  "verify_failed",
  Schema.Struct({
    attempt: Schema.Number,
    command: Schema.String,
    exitCode: Schema.NullOr(Schema.Number),
    timedOut: Schema.Boolean
  }),
  "an attempt's checks failed",
  { summary: (d) => `attempt ${d.attempt}: ${d.command}` }
)

const StoreHealth = Schema.Struct({
  state: Schema.Literal("ok", "degraded"),
  reason: Schema.NullOr(Schema.String),
  since: Schema.NullOr(Schema.String),
  pending: described(Schema.Number, "writes waiting to be committed"),
  lost: described(Schema.Number, "entries dropped while the store refused writes")
})
export type StoreHealthData = typeof StoreHealth.Type

export const storeDegraded = kind("store_degraded", StoreHealth, "the store refuses writes (posted as `store`)", {
  summary: (d) => d.reason ?? "degraded"
})

export const storeRecovered = kind("store_recovered", StoreHealth, "the store takes writes again (posted as `store`)")

/**
 * A host of a fleet spread over several hosts stopped renewing its lease; its agents moved (posted as `cluster`).
 * The engine's entries already name their host; the notifications tell this one.
 */
export const hostLost = kind(
  "host_lost",
  Schema.Struct({
    host: described(Schema.String, "the host lost"),
    agents: described(Schema.Array(Schema.String), "the agents moved off it"),
    by: described(Schema.String, "the host that moved them")
  }),
  "a host of the fleet was lost and its agents moved (posted as `cluster`)",
  { summary: (d) => `${d.host}: ${d.agents.length} moved by ${d.by}` }
)
