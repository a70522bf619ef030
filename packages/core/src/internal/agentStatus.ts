/**
 * What a live agent shows, derived from its state on each read: its status view (parked at a usage limit, waiting
 * on a human's approval, a queued turn on an idle agent counted as work) and its info.
 */
import type { AgentInfo, AgentStatusView } from "../AgentView.js"
import * as Permission from "../Permission.js"
import type { AgentContext } from "./agentState.js"
import * as Budget from "./budget.js"
import { iso } from "./turnRecord.js"

export const statusOf = (ctx: AgentContext): AgentStatusView => {
  const { state } = ctx
  const queued = ctx.queue.length
  const current = state.status
  const turn = ctx.active?.turn
  const until = ctx.parking.parkedUntil()
  // Parked: its turn waits out a usage limit, or it has none and sends nothing until the limit resets.
  const parked = until !== null && (current === "idle" || current === "working") &&
    (ctx.active === undefined || ctx.active.parked !== null)
  return {
    // A queued turn on an idle agent is about to start: report the work, not the gap between turns.
    status: parked
      ? "parked"
      : current === "working" && state.waitingApprovals > 0
      ? "waiting_approval"
      : current === "idle" && queued > 0
      ? "working"
      : current,
    current: turn?.id ?? null,
    currentStartedAt: turn?.record.startedAt ?? null,
    queued,
    turns: state.finished + state.failed,
    parkedUntil: until === null ? null : iso(until),
    ...(state.context === undefined ? {} : { context: state.context })
  }
}

/** Its info, around a status view of it; `startedAt` is when it first started (a restored agent keeps its own). */
export const infoOf = (ctx: AgentContext, startedAt: string, view: AgentStatusView, now?: number): AgentInfo => {
  const { options, state } = ctx
  const budget = Budget.view(ctx, now ?? state.lastActiveAt)
  return {
    name: ctx.name,
    lifecycle: options.lifecycle ?? "session",
    status: view.status,
    pid: state.process?.process.pid ?? null,
    sessionId: state.sessionId,
    alive: state.process !== undefined,
    cwd: ctx.cwd,
    model: options.model ?? null,
    permission: Permission.describe(state.policy),
    role: options.role ?? "member",
    current: view.current,
    queued: view.queued,
    totals: { turns: state.finished + state.failed, failed: state.failed, costUsd: state.totalCost },
    restarts: state.restarts,
    startedAt,
    closedReason: state.closedReason,
    ...(state.closedAt === null ? {} : { closedAt: state.closedAt }),
    parkedUntil: view.parkedUntil,
    ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
    ...(state.forkedFrom === undefined ? {} : { forkedFrom: state.forkedFrom }),
    ...(view.context === undefined ? {} : { context: view.context }),
    ...(state.writesLost === undefined ? {} : { sessionWritesLost: state.writesLost }),
    ...(budget === undefined ? {} : { budget }),
    ...(Object.keys(state.labels).length === 0 ? {} : { labels: state.labels })
  }
}
