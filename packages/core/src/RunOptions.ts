/**
 * The options of a run: their fields, their check and the CLI flags they become (a `run` template of the
 * declarative fleet becomes them by `Spec.runOptions`).
 */
import { Effect } from "effect"
import type { Duration } from "effect"
import type * as Agent from "./Agent.js"
import type { Labels } from "./AgentOptions.js"
import { InvalidSpec } from "./Errors.js"
import type * as Permission from "./Permission.js"
import type * as Sandbox from "./Sandbox.js"

export interface RunOptions {
  readonly prompt?: string
  readonly cwd?: string
  readonly model?: string
  readonly permission?: Permission.Policy
  readonly systemPrompt?: string
  readonly appendSystemPrompt?: string
  /** `true` isolates the run in `<repo>/.claude/worktrees/<run name>`; a string names the worktree. */
  readonly worktree?: boolean | string
  /** After a successful run, commit what it left and remove its worktree (the branch stays). */
  readonly cleanup?: boolean
  /** Unique among live runs and agents; generated when absent. */
  readonly name?: string
  /** A JSON Schema: the result's `structuredOutput` then conforms to it. */
  readonly jsonSchema?: Record<string, unknown>
  readonly maxTurns?: number
  readonly maxBudgetUsd?: number
  /** The run is interrupted when it expires (TurnTimeout). */
  readonly timeout?: Duration.DurationInput
  readonly env?: Readonly<Record<string, string>>
  /** A `run` entry of the declarative fleet; the call's own options override its fields. */
  readonly template?: string
  /** Told what the run is doing as it streams (for progress displays). */
  readonly onActivity?: Agent.AgentOptions["onActivity"]
  /**
   * Run its Bash tool in the CLI's OS sandbox: `true` writes only in its cwd (its worktree, with `worktree`) and
   * reaches no network; `{ network: { allow: [hosts] }, writable: [paths] }` adds hosts and paths (relative ones
   * from `cwd`). It never starts unsandboxed (`SandboxUnavailable`).
   */
  readonly sandbox?: Sandbox.SandboxData
  /**
   * Best of N: this many attempts at once, each a run of its own (`<name>-a<i>`) in its own worktree, admitted like
   * any start. Each gets `FLOTTA_ATTEMPT=<i>` in its environment and `{{attempt}}` in its prompt, so attempts can
   * differ on purpose. A winner is picked by `pick`; when none passes, the run fails with `NoAttemptPassed`.
   */
  readonly attempts?: number
  /** `first` (default): the first attempt to pass wins and the rest are interrupted; `cheapest`: all finish. */
  readonly pick?: "first" | "cheapest"
  /** Shell checks an attempt must pass, run in its worktree once its turn succeeded (each must exit 0). */
  readonly verify?: { readonly checks: ReadonlyArray<string>; readonly timeout?: Duration.DurationInput }
  /** Keep every attempt's worktree: by default the losers' are removed (what they did committed to their branch). */
  readonly keepAll?: boolean
  /** Its labels (`{ team: "a" }`): kept with it and its turns' cost, for `costs({ by: "label:team" })` and filters. */
  readonly labels?: Labels
}

/** The most attempts one run may make. */
export const MAX_ATTEMPTS = 16

/** The CLI flags for a run's bounds and schema. */
export const boundFlags = (options: RunOptions): ReadonlyArray<string> => [
  ...(options.maxTurns === undefined ? [] : ["--max-turns", String(options.maxTurns)]),
  ...(options.maxBudgetUsd === undefined ? [] : ["--max-budget-usd", String(options.maxBudgetUsd)]),
  ...(options.jsonSchema === undefined ? [] : ["--json-schema", JSON.stringify(options.jsonSchema)])
]

export const invalid = (field: string, reason: string) => new InvalidSpec({ path: field, reason })

/** Refuses options a run cannot take, naming the field. */
export const checkOptions = Effect.fnUntraced(function*(options: RunOptions) {
  if (typeof options.prompt !== "string" || options.prompt.trim().length === 0) {
    return yield* invalid("prompt", "a run needs a non-empty prompt")
  }
  if (options.maxTurns !== undefined && !(Number.isInteger(options.maxTurns) && options.maxTurns > 0)) {
    return yield* invalid("maxTurns", "must be a positive integer")
  }
  if (options.maxBudgetUsd !== undefined && !(options.maxBudgetUsd > 0)) {
    return yield* invalid("maxBudgetUsd", "must be a positive number of dollars")
  }
  if (options.jsonSchema !== undefined && (typeof options.jsonSchema !== "object" || options.jsonSchema === null)) {
    return yield* invalid("jsonSchema", "must be a JSON Schema object")
  }
  const attempts = options.attempts
  const best = attempts !== undefined || options.verify !== undefined
  if (attempts !== undefined && !(Number.isInteger(attempts) && attempts >= 1 && attempts <= MAX_ATTEMPTS)) {
    return yield* invalid("attempts", `must be a whole number from 1 to ${MAX_ATTEMPTS}`)
  }
  if (options.pick !== undefined && options.pick !== "first" && options.pick !== "cheapest") {
    return yield* invalid("pick", "must be \"first\" or \"cheapest\"")
  }
  if (options.pick !== undefined && !best) return yield* invalid("pick", "picks among attempts: set attempts too")
  if (options.keepAll !== undefined && !best) {
    return yield* invalid("keepAll", "keeps attempts' worktrees: set attempts too")
  }
  if (options.verify !== undefined) {
    const checks = options.verify.checks
    if (!Array.isArray(checks) || checks.length === 0) return yield* invalid("verify.checks", "give at least one check")
    if (checks.some((c) => typeof c !== "string" || c.trim().length === 0)) {
      return yield* invalid("verify.checks", "every check must be a non-empty shell command")
    }
  }
  if (best && options.worktree === false) {
    return yield* invalid("worktree", "attempts and their checks run each in a worktree of its own: leave worktree on")
  }
  if (options.cleanup === true && (options.worktree === undefined || options.worktree === false) && !best) {
    return yield* invalid("cleanup", "cleanup removes a run's worktree: set worktree too")
  }
  return yield* Effect.void
})
