/**
 * What a `result` frame means for its turn, as pure functions: the turn's own `TurnResult` (its share of the
 * process's running cost), and whether the turn failed and as which typed error. The CLI reports an API error
 * as a `success` subtype with `is_error`, an interrupt as `error_during_execution`, and can report success
 * without the structured output a schema asked for: each of these is told apart here.
 */
import type { TurnResult } from "./AgentView.js"
import * as Protocol from "./ClaudeProtocol.js"
import {
  BudgetExceeded,
  MaxTurnsReached,
  StructuredOutputMissing,
  TurnFailed,
  TurnInterrupted,
  TurnTimeout
} from "./Errors.js"
import type { TurnError } from "./Errors.js"

export type { TurnResult } from "./AgentView.js"

/** What the agent knows about the turn besides its result frame. */
export interface TurnFacts {
  readonly name: string
  readonly turnId: string
  /** The session the turn ran in (the frame's own, when it has one). */
  readonly sessionId: string
  /** The process's running cost before this turn. */
  readonly costBefore: number
  /** The process's running cost per model before this turn (its last `modelUsage`). */
  readonly modelCostsBefore?: Readonly<Record<string, number>>
  /** Why the agent interrupted the turn, if it did. */
  readonly interruptReason: "user" | "timeout" | null
  readonly timeoutMs: number
  readonly expectStructuredOutput: boolean
}

/** The turn's result: its own cost is the growth of the process's running total. */
export const resultOf = (frame: Protocol.ResultFrame, facts: TurnFacts): TurnResult => {
  const result: TurnResult = {
    turnId: facts.turnId,
    text: Protocol.resultText(frame),
    costUsd: Math.max(0, frame.total_cost_usd - facts.costBefore),
    durationMs: frame.duration_ms,
    modelCalls: frame.num_turns,
    sessionId: frame.session_id.length > 0 ? frame.session_id : facts.sessionId,
    usage: frame.usage ?? {},
    permissionDenials: frame.permission_denials,
    subtype: frame.is_error && frame.subtype === "success" ? "api_error" : frame.subtype
  }
  const modelCosts = modelCostsOf(frame, facts.modelCostsBefore ?? {})
  const withModels = modelCosts === undefined ? result : { ...result, modelCosts }
  return frame.structured_output === undefined
    ? withModels
    : { ...withModels, structuredOutput: frame.structured_output }
}

/** The process's running cost per model, as a `result` frame's `modelUsage` says (none when it does not). */
export const runningModelCosts = (frame: Protocol.ResultFrame): Record<string, number> | undefined => {
  if (frame.modelUsage === undefined) return undefined
  const costs: Record<string, number> = {}
  for (const [model, use] of Object.entries(frame.modelUsage)) {
    if (use.costUSD !== undefined) costs[model] = use.costUSD
  }
  return costs
}

/**
 * The turn's own cost per model: like `total_cost_usd`, `modelUsage` is a running total over the process's turns,
 * so each model's share is its growth since `before`. Models that spent nothing this turn are left out.
 */
export const modelCostsOf = (
  frame: Protocol.ResultFrame,
  before: Readonly<Record<string, number>>
): Record<string, number> | undefined => {
  const running = runningModelCosts(frame)
  if (running === undefined) return undefined
  const costs: Record<string, number> = {}
  for (const [model, total] of Object.entries(running)) {
    const own = Math.max(0, total - (before[model] ?? 0))
    if (own > 0) costs[model] = own
  }
  return costs
}

/** The typed error a finished turn failed with, or `undefined` when it succeeded. */
export const classify = (frame: Protocol.ResultFrame, facts: TurnFacts, result: TurnResult): TurnError | undefined => {
  const { name, turnId } = facts
  const bound = { name, costUsd: result.costUsd, turns: frame.num_turns, sessionId: result.sessionId }
  if (frame.subtype === "success" && !frame.is_error) {
    return facts.expectStructuredOutput && frame.structured_output === undefined
      ? new StructuredOutputMissing({ name, sessionId: result.sessionId, text: result.text })
      : undefined
  }
  if (frame.subtype === "success") {
    return new TurnFailed({
      name,
      turnId,
      status: frame.api_error_status ?? null,
      subtype: "api_error",
      reason: result.text
    })
  }
  if (frame.subtype === "error_during_execution" && facts.interruptReason === "timeout") {
    return new TurnTimeout({
      name,
      turnId,
      timeoutMs: facts.timeoutMs,
      costUsd: result.costUsd,
      turns: frame.num_turns,
      sessionId: result.sessionId
    })
  }
  if (frame.subtype === "error_during_execution" && facts.interruptReason !== null) {
    return new TurnInterrupted({ name, turnId, costUsd: result.costUsd, sessionId: result.sessionId })
  }
  if (frame.subtype === "error_max_turns") return new MaxTurnsReached(bound)
  if (frame.subtype === "error_max_budget_usd") return new BudgetExceeded(bound)
  if (frame.terminal_reason === "aborted_tools" || frame.terminal_reason === "aborted_streaming") {
    return new TurnInterrupted({ name, turnId, costUsd: result.costUsd, sessionId: result.sessionId })
  }
  return new TurnFailed({ name, turnId, status: null, subtype: frame.subtype, reason: result.text || frame.subtype })
}

/**
 * A turn that ran into a rate limit: the fleet parks it instead of failing it (see `Parking`).
 * - `UsageLimit`: the account's usage limit (`api_error: "usage_limit_reached"`, subscription and gateway logins),
 *   with the reset time the CLI read from the limiter's headers, when it had one.
 * - `RateLimited`: any other 429: an API key's (the CLI reads no limit headers then) or a throttle ("not your
 *   usage limit"). No reset time: the fleet backs off on its own.
 */
export type Limit =
  | {
    readonly _tag: "UsageLimit"
    /** When the limit resets (Clock millis), or null when the CLI did not say. */
    readonly resetsAt: number | null
    readonly rateLimitType: string | null
    readonly message: string
  }
  | { readonly _tag: "RateLimited"; readonly status: number; readonly message: string }

/**
 * Whether a `result` frame is a rate limit, and which; `info` is the limiter's view the turn saw last (its
 * `rate_limit_event`, or the CLI's own error message's `rate_limit_info`).
 */
export const limitOf = (frame: Protocol.ResultFrame, info: Protocol.RateLimitInfo | null): Limit | undefined => {
  if (frame.subtype !== "success" || !frame.is_error) return undefined
  const message = Protocol.resultText(frame)
  if (frame.api_error === "usage_limit_reached") {
    return {
      _tag: "UsageLimit",
      resetsAt: info?.resetsAt === undefined ? null : info.resetsAt * 1000,
      rateLimitType: info?.rateLimitType ?? null,
      message
    }
  }
  return frame.api_error_status === 429 ? { _tag: "RateLimited", status: 429, message } : undefined
}
