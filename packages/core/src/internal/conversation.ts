/**
 * What happens to a session's conversation over its turns, as the CLI's frames tell it: how full its context is
 * (from each model call's usage: free, where `get_context_usage` would cost the CLI a request), compactions (the
 * CLI's own, or asked for) with their tokens, a clear (a new session under the same name), writes of the session
 * file the CLI lost; and the `autoCompactAt` rule that queues a compaction once a turn leaves the context too full.
 */
import type { ContextUse } from "../AgentView.js"
import type * as Protocol from "../ClaudeProtocol.js"
import type { Active, AgentContext, Turn } from "./agentState.js"
import { contextUse, iso } from "./turnRecord.js"

/** A model call went out: what it was sent with (its input, cached or not) is the context's size at that call. */
export const sent = (active: Active, frame: Protocol.AssistantFrame) => {
  const usage = frame.message.usage
  if (usage?.input_tokens !== undefined) {
    active.lastInput = usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) +
      (usage.cache_read_input_tokens ?? 0)
  }
}

/**
 * How full the context is once a turn ends: what its newest model call was sent with, plus what the turn wrote;
 * after a compaction with no call since, what the compaction left; after a clear, nothing. The window is the
 * model's, as the result frame says it (else the last one said).
 */
export const contextAfter = (ctx: AgentContext, active: Active, frame: Protocol.ResultFrame): ContextUse => {
  const { state } = ctx
  const windows = Object.values(frame.modelUsage ?? {}).flatMap((
    m
  ) => (m.contextWindow === undefined ? [] : [m.contextWindow]))
  if (windows.length > 0) state.contextWindow = Math.max(...windows)
  const output = typeof frame.usage?.["output_tokens"] === "number" ? frame.usage["output_tokens"] : 0
  const tokens = active.turn.kind === "clear"
    ? 0
    : active.lastInput !== null
    ? active.lastInput + output
    : active.compaction !== null
    ? active.compaction.postTokens ?? 0
    : state.context?.tokens ?? 0
  return contextUse(tokens, state.contextWindow)
}

/** A `clear` turn ended: the conversation is a new session's, and the transcript says so. */
export const cleared = (ctx: AgentContext, active: Active, sessionId: string, now: number) => {
  const mark = { _tag: "Cleared", previousSessionId: active.sessionAtStart, sessionId } as const
  active.turn.record.marks = [...(active.turn.record.marks ?? []), mark]
  ctx.reports.unsafePost(
    ctx.name,
    "cleared",
    { previousSessionId: active.sessionAtStart, sessionId },
    active.turn.id,
    now
  )
}

/** The conversation was compacted during the turn in flight: marked on its record, and reported. */
export const compacted = (ctx: AgentContext, frame: Protocol.CompactBoundaryFrame, now: number) => {
  const meta = frame.compact_metadata
  const compaction = { trigger: meta.trigger, preTokens: meta.pre_tokens, postTokens: meta.post_tokens ?? null }
  const active = ctx.active
  if (active !== undefined) {
    active.compaction = compaction
    active.turn.record.marks = [...(active.turn.record.marks ?? []), { _tag: "Compacted", compaction }]
    ctx.saveTurn(active.turn)
  }
  ctx.reports.unsafePost(ctx.name, "compacted", compaction, active?.turn.id, now)
}

/** The CLI could not write its session file: the agent shows it, and the report log says what was lost. */
export const writesLost = (ctx: AgentContext, frame: Protocol.SessionWritesLostFrame, now: number) => {
  const lost = {
    errorCode: frame.error_code,
    lost: frame.lost,
    sessionIds: frame.transcript_session_ids ?? [ctx.state.sessionId],
    at: iso(now)
  }
  ctx.state.writesLost = lost
  ctx.saveAgent()
  ctx.reports.unsafePost(ctx.name, "session_writes_lost", lost, ctx.active?.turn.id, now)
}

/** A prompt's turn left the context fuller than `autoCompactAt` (the agent's, else the fleet's): compact next. */
export const compactIfFull = (ctx: AgentContext, turn: Turn, context: ContextUse, now: number) => {
  const threshold = ctx.options.autoCompactAt ?? ctx.settings.autoCompactAt
  if (turn.kind === "prompt" && threshold !== undefined && context.percent !== null && context.percent > threshold) {
    ctx.compactNext(`its context is ${context.percent}% full (autoCompactAt ${threshold}%)`, now)
  }
}
