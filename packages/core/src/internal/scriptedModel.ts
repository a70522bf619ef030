/**
 * The scripted model of `@flotta/core/Testing`: what it is asked (`ModelInput`) and the replies it can give, a
 * plain string or one of `toolUse`, `delay`, `apiError`, `crash`, `hang`, `structured`, and the rate limits
 * `usageLimit`, `rateLimited` and `usageWarning`. The in-memory CLI (`memoryCli`) acts them out as the real CLI's
 * frames.
 */
import { Duration } from "effect"

/** What the host decided about a tool call, as the model's next step sees it. */
export type ToolDecision =
  | { readonly behavior: "allow"; readonly input: Record<string, unknown> }
  | { readonly behavior: "deny"; readonly message: string }

/** One step of the scripted model. */
export type Reply =
  | string
  | { readonly _tag: "Structured"; readonly output: unknown; readonly text: string }
  | {
    readonly _tag: "ToolUse"
    readonly tool: string
    readonly input: Record<string, unknown>
    readonly then: Reply | ((decision: ToolDecision) => Reply)
    readonly result: ToolScript
  }
  | { readonly _tag: "Delay"; readonly duration: Duration.Duration; readonly reply: Reply }
  | { readonly _tag: "ApiError"; readonly status: number; readonly message: string }
  | { readonly _tag: "Crash"; readonly exitCode: number; readonly stderr: string }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "UsageLimit"; readonly resetIn: Duration.Duration | null; readonly rateLimitType: string }
  | { readonly _tag: "RateLimited"; readonly throttle: boolean }
  | {
    readonly _tag: "UsageWarning"
    readonly utilization: number
    readonly rateLimitType: string
    readonly resetIn: Duration.Duration
    readonly reply: Reply
  }

/**
 * What an allowed tool call gives back: its `output` (default "<tool> ok"), or an `error` (the tool ran and
 * failed: the result says `is_error`), after `takes` (Clock time; default at once); and what the model `say`s
 * before it.
 */
export interface ToolScript {
  /** What the model writes before the call, in the same message ("Let me look."). */
  readonly say?: string
  readonly output?: string
  readonly error?: string
  readonly takes?: Duration.DurationInput
}

/**
 * A tool call. It asks permission through the agent's real path (unless the agent's flags already allow the
 * tool, or do not offer it, as with the CLI), is recorded with its decision and its outcome in the transcript (an
 * allowed call gives `result`; a refused one, the refusal), and the model goes on with `then`: a reply, or a
 * function of the decision.
 */
export const toolUse = (
  tool: string,
  input: Record<string, unknown> = {},
  then: Reply | ((decision: ToolDecision) => Reply) = (decision) =>
    decision.behavior === "allow" ? `${tool} done` : `${tool} refused: ${decision.message}`,
  result: ToolScript = {}
): Reply => ({ _tag: "ToolUse", tool, input, then, result })

/** Silent for `duration` (Clock time), then `reply`: a slow model. The stall watchdog applies to it. */
export const delay = (duration: Duration.DurationInput, reply: Reply): Reply => ({
  _tag: "Delay",
  duration: Duration.decode(duration),
  reply
})

/** The API answers with an HTTP error: the turn fails as `TurnFailed` with that status. */
export const apiError = (status: number, message = `the API answered ${status}`): Reply => ({
  _tag: "ApiError",
  status,
  message
})

/** The process dies mid-turn: `AgentCrashed`, then a restart with `--resume`. */
export const crash = (options: { readonly exitCode?: number; readonly stderr?: string } = {}): Reply => ({
  _tag: "Crash",
  exitCode: options.exitCode ?? 1,
  stderr: options.stderr ?? "in-memory claude: simulated crash"
})

/** No output at all: the stall watchdog and timeouts apply (an interrupt still ends the turn). */
export const hang = (): Reply => ({ _tag: "Hang" })

/**
 * The account's usage limit, as the CLI reports it for a subscription login (CLAUDE-CLI.md, "Usage limits"): a
 * `rate_limit_event` (`rejected`, reset `resetIn` from now; `null`: no reset time), its own message with
 * `api_error: "usage_limit_reached"`, and an API-error result. Like the CLI, the process keeps the prompt and
 * merges it into the next user message: when that is the fleet's continuation, the model is asked the kept
 * prompt again, with `resumed: true`.
 */
export const usageLimit = (
  options: { readonly resetIn?: Duration.DurationInput | null; readonly rateLimitType?: string } = {}
): Reply => ({
  _tag: "UsageLimit",
  resetIn: options.resetIn === null ? null : Duration.decode(options.resetIn ?? "1 hour"),
  rateLimitType: options.rateLimitType ?? "five_hour"
})

/**
 * A 429 with no reset time: an API key's (the CLI reads no limit headers then), or with `throttle` a
 * subscription's "not your usage limit". The fleet backs off on its own; the prompt is kept, as above.
 */
export const rateLimited = (options: { readonly throttle?: boolean } = {}): Reply => ({
  _tag: "RateLimited",
  throttle: options.throttle === true
})

/** `reply`, with the limiter's `allowed_warning` (past a warning threshold of its window) on the way. */
export const usageWarning = (
  reply: Reply,
  options: {
    readonly utilization?: number
    readonly rateLimitType?: string
    readonly resetIn?: Duration.DurationInput
  } = {}
): Reply => ({
  _tag: "UsageWarning",
  utilization: options.utilization ?? 0.92,
  rateLimitType: options.rateLimitType ?? "five_hour",
  resetIn: Duration.decode(options.resetIn ?? "4 hours"),
  reply
})

/** Structured output, as the CLI gives it under `--json-schema` (a run's `jsonSchema`). */
export const structured = (output: unknown, text = "Done."): Reply => ({ _tag: "Structured", output, text })

export interface ModelInput {
  readonly agent: string
  /** This turn's prompt. */
  readonly prompt: string
  /** Every earlier prompt of this conversation, oldest first (it survives crash and resume). */
  readonly history: ReadonlyArray<string>
  /** This turn's number in the conversation, from 1. */
  readonly turn: number
  readonly sessionId: string
  /** The `--model` the agent was started with, if any. */
  readonly model: string | null
  /** The process's working directory (a run's worktree, say). */
  readonly cwd: string
  /**
   * This call continues a prompt the CLI kept at a usage limit (the fleet's continuation came): `prompt` is the
   * kept one.
   */
  readonly resumed: boolean
  /** The process's sandbox, when it runs sandboxed: what its commands could write and reach. */
  readonly sandbox: SandboxView | null
}

/** A sandbox as its process has it (from its `--settings`): where commands may write, which hosts they may reach. */
export interface SandboxView {
  /** Absolute: the working directory first. */
  readonly writable: ReadonlyArray<string>
  readonly hosts: ReadonlyArray<string>
}

export type Model = (input: ModelInput) => Reply

export const echo: Model = ({ prompt }) => `echo: ${prompt}`
