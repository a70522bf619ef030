/**
 * An agent's options: what a caller gives (`AgentOptions`), the part of them the store keeps (`StoredOptions`)
 * and gives back after a restart of the host, and the `claude` flags they make.
 */
import { Duration } from "effect"
import * as path from "node:path"
import type { Activity, AgentRow, ForkOrigin, Role, StoredOptions } from "../AgentView.js"
import * as ClaudeCli from "../ClaudeCli.js"
import * as Permission from "../Permission.js"
import * as Sandbox from "../Sandbox.js"

export interface AgentOptions {
  readonly cwd?: string
  readonly model?: string
  readonly permission?: Permission.Policy
  readonly systemPrompt?: string
  readonly appendSystemPrompt?: string
  /** Per-turn default (180 s unless the fleet says otherwise). */
  readonly timeout?: Duration.DurationInput
  /** Added to the inherited environment. */
  readonly env?: Readonly<Record<string, string>>
  readonly role?: Role
  /** Continue an earlier conversation (a session id from a run or another agent). */
  readonly resume?: string
  /** Further CLI flags, placed after the ones the options produce. */
  readonly extraArgs?: ReadonlyArray<string>
  /** The host to run it on, in a fleet spread over several hosts (`@flotta/cluster`); a single fleet refuses it. */
  readonly host?: string
  /** A run takes one turn and does not report `turn_started` (default: session). */
  readonly lifecycle?: "session" | "run"
  /** A turn that succeeds without `structured_output` fails (the CLI can report success without it). */
  readonly expectStructuredOutput?: boolean
  /** Told what the agent is doing as its turns stream (a tool it calls, text it writes): for progress displays. */
  readonly onActivity?: (activity: Activity) => void
  /**
   * Run its Bash tool in the CLI's OS sandbox: `true` writes only in its cwd (a run's worktree) and reaches no
   * network; `{ network: { allow: [hosts] }, writable: [paths] }` adds hosts and paths (see `Sandbox`). It never
   * starts unsandboxed (`SandboxUnavailable`).
   */
  readonly sandbox?: Sandbox.SandboxData
  /**
   * A percentage of its context window: when a turn ends with its context fuller than that, a compaction is
   * queued before its next prompt (the fleet's `autoCompactAt` otherwise; none when neither says).
   */
  readonly autoCompactAt?: number
  /**
   * Stream its text as the model writes it (`--include-partial-messages`): each piece reaches `onActivity` and
   * the report log's subscribers (`text_delta`, live only) before the message is whole.
   */
  readonly stream?: boolean
  /**
   * A session's budget, in dollars: once its turns have spent this much (`budgetPer` UTC day, or for its `life`,
   * the default), a new turn fails with `BudgetExceeded` before it is sent. A turn in flight when the budget is
   * crossed finishes; the next one is refused. Spend is counted from the store, so it survives a restart.
   */
  readonly maxBudgetUsd?: number
  readonly budgetPer?: "day" | "life"
  /** The routine that started it (set by the scheduler): its turns' cost is booked on the routine too. */
  readonly routine?: string
}

/** The options that are plain data, stored and restored as they are. */
const PLAIN_OPTIONS = [
  "model",
  "systemPrompt",
  "appendSystemPrompt",
  "env",
  "role",
  "extraArgs",
  "expectStructuredOutput",
  "sandbox",
  "autoCompactAt",
  "maxBudgetUsd",
  "budgetPer",
  "routine"
] as const
type PlainOptions = Pick<AgentOptions, typeof PLAIN_OPTIONS[number]>

/** The plain options that are set (an absent one stays absent, as `exactOptionalPropertyTypes` wants). */
const plainOptions = (from: PlainOptions): PlainOptions =>
  Object.fromEntries(PLAIN_OPTIONS.flatMap((key) => (from[key] === undefined ? [] : [[key, from[key]]])))

/** The options an agent can be restarted with, and why it cannot be when it cannot. */
export const storedOptions = (
  options: AgentOptions,
  policy: Permission.Policy,
  cwd: string,
  timeoutMs: number
): { readonly stored: StoredOptions; readonly notRestorable: string | null } => ({
  stored: { ...plainOptions(options), cwd, permission: Permission.describe(policy), timeoutMs },
  notRestorable: typeof policy === "function"
    ? "its permission was given as a function, which cannot be stored: spawn it again"
    : null
})

/** The agent options a stored row describes (a permission stored as "function" is never restored). */
export const optionsOf = (row: AgentRow): AgentOptions => {
  const permission = row.options.permission
  return {
    ...plainOptions(row.options),
    cwd: row.options.cwd,
    ...(permission === "function" ? {} : { permission }),
    timeout: Duration.millis(row.options.timeoutMs),
    lifecycle: row.lifecycle
  }
}

/**
 * The session flags: resume it, fork it from its origin under its own id (cut at the origin's message when it has
 * one), or start it new.
 */
const sessionFlags = (
  session: { readonly id: string; readonly resume: boolean; readonly fork?: ForkOrigin | undefined }
): ReadonlyArray<string> => {
  if (session.resume) return ["--resume", session.id]
  if (session.fork === undefined) return ["--session-id", session.id]
  const at = session.fork.messageId
  return [
    "--resume",
    session.fork.sessionId,
    "--fork-session",
    "--session-id",
    session.id,
    ...(at === undefined ? [] : ["--resume-session-at", at])
  ]
}

/** The CLI flags for one agent's options (a sandboxed one's `--settings` merged with any among `extraArgs`). */
export const buildArgs = (
  options: AgentOptions,
  permission: Permission.Policy,
  session: { readonly id: string; readonly resume: boolean; readonly fork?: ForkOrigin | undefined }
): ReadonlyArray<string> => {
  const sandbox = Sandbox.confinement(options.sandbox, path.resolve(options.cwd ?? "."))
  return [
    ...ClaudeCli.DUPLEX_FLAGS,
    ...sessionFlags(session),
    ...(options.model === undefined ? [] : ["--model", options.model]),
    ...(options.systemPrompt === undefined ? [] : ["--system-prompt", options.systemPrompt]),
    ...(options.appendSystemPrompt === undefined ? [] : ["--append-system-prompt", options.appendSystemPrompt]),
    ...(options.stream === true ? ["--include-partial-messages"] : []),
    ...Permission.flags(permission, sandbox === null ? [] : Sandbox.GUARDED_TOOLS),
    ...(sandbox === null ? options.extraArgs ?? [] : Sandbox.settingsArgs(sandbox, options.extraArgs ?? []))
  ]
}
