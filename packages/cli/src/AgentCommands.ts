/**
 * Commands that address the agents of a running `flotta serve` over its MCP endpoint (see Connection): spawn, info,
 * interrupt, wait and broadcast. Each prints a compact view for a person, or with `--json` the server's structured
 * answer; a name the fleet does not know ends the command with AgentNotFound (exit code 12), and a turn or run that
 * failed with its own error and exit code.
 *
 * `spawn`'s options are one table (`spawnOptions`) and one mapping onto the tool's arguments (`spawnArgs`): a new
 * agent option is an entry in each.
 */
import { Args, Command, Options } from "@effect/cli"
import type { AgentInfo } from "@flotta/core/AgentView"
import * as Operations from "@flotta/core/Operations"
import type { RunResult, VerifyReport } from "@flotta/core/Run"
import { Clock, Duration, Effect, Option, Schema } from "effect"
import * as path from "node:path"
import * as Answers from "./Answers.js"
import { agentToolCommand, call, callAndPrint, connection, ToolFailed, withClient } from "./Connection.js"
import * as CostsCommand from "./CostsCommand.js"
import * as Flags from "./Flags.js"
import type { McpClient } from "./McpClient.js"
import * as PermissionFlags from "./PermissionFlags.js"
import * as RunViews from "./RunViews.js"
import * as SandboxFlags from "./SandboxFlags.js"
import * as Shared from "./SharedOptions.js"
import * as Views from "./Views.js"

// ------------------------------------------------------------------------------------------------ views

/** A permission as data, in words: `read_only`, `allow Read, Edit; ask Bash`. */
export const describePermission = (permission: AgentInfo["permission"]): string => {
  if (typeof permission === "string") return permission
  const asked = permission.ask ?? []
  return `allow ${permission.allow.join(", ") || "nothing"}` + (asked.length === 0 ? "" : `; ask ${asked.join(", ")}`)
}

/** A freshly spawned agent on one line. */
export const renderSpawned = (info: AgentInfo): string =>
  `${info.name} is up: ${Views.describeStatus(info)}, ${info.pid === null ? "no process" : `pid ${info.pid}`}, ` +
  `model ${info.model ?? "(the CLI's default)"}, ${describePermission(info.permission)}, in ${info.cwd}` +
  (info.host === undefined ? "" : ` on ${info.host}`) + ` (session ${info.sessionId})`

const LABEL = 12
const field = (label: string, text: string) => `  ${`${label}:`.padEnd(LABEL)}${text}`

/** One agent's details: status, process, session, where it works, its model and permission, its turns and cost. */
export const renderInfo = (info: AgentInfo & { readonly lifecycle?: string }): string => {
  const turns = [
    `${info.totals.turns} finished${info.totals.failed === 0 ? "" : ` (${info.totals.failed} failed)`}`,
    `${info.queued} queued`,
    ...(info.current === null ? [] : [`${info.current} in flight`])
  ]
  return [
    `${info.name}: ${Views.describeStatus(info)}${info.lifecycle === "run" ? " (a run)" : ""}`,
    field("process", info.pid === null ? "none" : `pid ${info.pid}${info.alive ? "" : " (not alive)"}`),
    field("session", info.sessionId),
    field("cwd", info.cwd),
    field("model", info.model ?? "the CLI's default"),
    field("permission", describePermission(info.permission)),
    field("role", info.role),
    field("turns", turns.join(", ")),
    field("cost", `$${info.totals.costUsd.toFixed(4)}`),
    ...(info.context === undefined ? [] : [field("context", Views.describeContext(info.context))]),
    ...(info.sessionWritesLost === undefined ? [] : [
      field(
        "lost",
        `the CLI could not write its session file (${info.sessionWritesLost.errorCode}, ` +
          `${info.sessionWritesLost.lost.join(", ")}): part of its memory cannot be resumed`
      )
    ]),
    field("restarts", String(info.restarts)),
    field("started", `${RunViews.describeInstant(info.startedAt)} UTC`),
    ...(info.host === undefined ? [] : [field("host", info.host)]),
    ...(info.forkedFrom === undefined ? [] : [
      field(
        "forked",
        `from ${info.forkedFrom.agent}${info.forkedFrom.turnId === null ? "" : ` at ${info.forkedFrom.turnId}`}`
      )
    ]),
    ...(info.closedReason === null ? [] : [field("closed", Views.describeClosed(info.closedReason, info.closedAt))])
  ].join("\n")
}

/** What `interrupt` did. */
export const renderInterrupted = (
  v: { readonly name: string; readonly interrupted: boolean; readonly turnId: string | null }
): string =>
  v.interrupted
    ? `interrupted turn ${v.turnId ?? "?"} of ${v.name} (it ends with TurnInterrupted; queued turns go on)`
    : `${v.name} had no turn in flight: nothing was interrupted`

/** One agent's part of a broadcast. */
export type BroadcastEntry = typeof Answers.BroadcastResult.Type["agents"][number]

/** What a wait answers: done or not, and the turn's result or the run's outcome. */
export type WaitAnswer = typeof Answers.WaitResult.Type

/** Each agent's reply (or error), one after another; a reply's further lines indented under its name. */
export const renderBroadcast = (entries: ReadonlyArray<BroadcastEntry>): string => {
  if (entries.length === 0) return "no live agents: nothing was sent"
  return entries.map((e) => {
    const head = e.ok
      ? `${e.name} (${e.turnId ?? "?"}${e.costUsd === undefined ? "" : `, $${e.costUsd.toFixed(4)}`})`
      : e.name
    const body = e.ok ? (e.text ?? "") : `${e.error?._tag ?? "Error"}: ${e.error?.message ?? "failed"}`
    return `${head}: ${body.split("\n").join("\n  ")}`
  }).join("\n")
}

/** A finished wait: a turn's reply, or a run's outcome. */
export const renderWaited = (
  answer: { readonly result?: { readonly text: string } | RunResult | VerifyReport | undefined }
): string => {
  const result = answer.result
  if (result === undefined) return ""
  return "kind" in result ? RunViews.renderOutcome(result) : result.text
}

// ------------------------------------------------------------------------------------------------ spawn

const Env = Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*=/))

/** The agent's options as flags; each bad value names its flag. */
export const spawnOptions = {
  cwd: Flags.directory("cwd").pipe(
    Flags.optional("The agent's working directory on this machine (default: the serve's own).")
  ),
  model: Flags.nonEmpty("model", "model").pipe(
    Flags.optional("The model alias or id, such as sonnet (default: the CLI's).")
  ),
  ...PermissionFlags.options({
    permission: "One of read_only (Read, Glob, Grep), full (every tool) or ask (read-only tools, and every other " +
      "one waits for `flotta approve`); --allow lists tools instead. The default is read_only.",
    allow: "Allow exactly these tools (repeat it, or separate them with commas): --allow Read,Edit.",
    ask: "Make each use of these tools wait for a person's `flotta approve` or `flotta deny` (repeat it, or " +
      "separate them with commas). The other tools are --allow's, else the read-only ones."
  }),
  systemPrompt: Flags.nonEmpty("system-prompt").pipe(
    Flags.optional("Replace the default system prompt with this text.")
  ),
  appendSystemPrompt: Flags.nonEmpty("append-system-prompt").pipe(
    Flags.optional("Add this text to the default system prompt.")
  ),
  timeout: Flags.duration("timeout").pipe(
    Flags.optional(
      "Each turn's own time limit, after which it is interrupted (TurnTimeout): 90, 90s, 500ms, 5m or 1h " +
        "(default: the fleet's, 180s)."
    )
  ),
  env: Flags.repeatedChecked("env", Env, {
    pseudoName: "KEY=VALUE",
    reason: "is not KEY=VALUE (a variable name, then =, then its value)",
    description: "Add this variable to the agent's environment (repeat it for more)."
  }),
  label: Flags.labels(
    "Give it this label (repeat it for more): kept with it and its turns' cost (`flotta costs --by label:KEY`)."
  ),
  role: Flags.choice("role", ["member", "manager"]).pipe(
    Flags.optional("The agent's role in the fleet: member (the default) or manager.")
  ),
  resume: Flags.nonEmpty("resume", "session").pipe(
    Flags.optional(
      "Continue this earlier conversation: a session id from a run's outcome or an agent's info."
    )
  ),
  host: Flags.nonEmpty("host", "host").pipe(
    Flags.optional("In a cluster, the host to run it on (default: the live host with the fewest agents).")
  ),
  autoCompactAt: Flags.checked(
    "auto-compact-at",
    Schema.NumberFromString.pipe(Schema.greaterThan(0), Schema.lessThanOrEqualTo(100)),
    { pseudoName: "percent", reason: "is not a percentage above 0 and at most 100" }
  ).pipe(
    Flags.optional(
      "When a turn leaves its context fuller than this share of the window (a percentage), compact it before the " +
        "next prompt."
    )
  ),
  stream: Options.boolean("stream").pipe(Options.withDescription("Stream its text live, as the model writes it.")),
  ...CostsCommand.budgetOptions,
  ...SandboxFlags.options
}

type SpawnFlags = {
  readonly [K in keyof typeof spawnOptions]: (typeof spawnOptions)[K] extends Options.Options<infer A> ? A : never
}

/** The flags as the spawn tool's arguments. */
export const spawnArgs = Effect.fn("AgentCommands.spawnArgs")(function*(name: string, flags: SpawnFlags) {
  const permission = yield* PermissionFlags.permissionOf(flags.permission, flags.allow, flags.ask)
  return {
    name,
    permission,
    ...Shared.ifSome("cwd", Option.map(flags.cwd, (dir) => path.resolve(dir))),
    ...Shared.ifSome("model", flags.model),
    ...Shared.ifSome("systemPrompt", flags.systemPrompt),
    ...Shared.ifSome("appendSystemPrompt", flags.appendSystemPrompt),
    ...Shared.ifSome("turnTimeoutSeconds", Option.map(flags.timeout, (d) => Duration.toMillis(d) / 1000)),
    ...(flags.env.length === 0 ? {} : { env: Flags.pairs(flags.env) }),
    ...Flags.labelsOf(flags.label),
    ...Shared.ifSome("role", flags.role),
    ...Shared.ifSome("resume", flags.resume),
    ...Shared.ifSome("host", flags.host),
    ...Shared.ifSome("autoCompactAt", flags.autoCompactAt),
    ...(flags.stream ? { stream: true } : {}),
    ...CostsCommand.budgetOf(flags),
    ...SandboxFlags.sandboxOf(flags)
  }
})

const name = Flags.nameArgument("name", `The agent's name: ${Flags.NAME_RULE}.`)

const spawn = Command.make(
  "spawn",
  { ...connection, ...spawnOptions, name },
  (flags) =>
    Effect.flatMap(
      spawnArgs(flags.name, flags),
      (args) => callAndPrint(flags, Operations.toolName("spawn"), args, Answers.AgentInfo, renderSpawned)
    )
).pipe(
  Command.withDescription(
    "Start a long-lived agent under a unique name in a running `flotta serve`, and print it once it is ready. " +
      "Prompt it with `flotta ask` or `flotta prompt`; stop it with `flotta close`."
  )
)

const info = agentToolCommand({
  command: "info",
  name,
  tool: Operations.toolName("info"),
  answer: Answers.AgentInfo,
  render: renderInfo,
  description: "Print one agent's details: status, process, session, working directory, model, permission, turns, " +
    "cost and restarts."
})

const interrupt = agentToolCommand({
  command: "interrupt",
  name,
  tool: Operations.toolName("interrupt"),
  answer: Answers.Interrupted,
  render: renderInterrupted,
  description: "Interrupt the agent's turn in flight (it ends with TurnInterrupted); its queued turns go on."
})

// ------------------------------------------------------------------------------------------------ waiting

/** Each server-side wait is at most 45 s (MCP clients give up on a call after about a minute). */
const STEP_SECONDS = 45

/**
 * Waits for a turn (`turnId`), or without one for a run of that name, else the agent's latest turn, in bounded
 * steps until it is done or `within` has passed (then TurnPending: it goes on). A failed turn or run fails with
 * its own error.
 */
export const waitFor = Effect.fn("AgentCommands.waitFor")(function*(
  client: McpClient,
  target: { readonly name: string; readonly turnId?: string },
  within: Option.Option<Duration.Duration> = Option.none()
) {
  const start = yield* Clock.currentTimeMillis
  const end = Option.map(within, (d) => start + Duration.toMillis(d))
  let args: Record<string, unknown> = { ...target }
  while (true) {
    const now = yield* Clock.currentTimeMillis
    const left = Option.match(end, { onNone: () => STEP_SECONDS, onSome: (e) => Math.max(0, (e - now) / 1000) })
    const answer = yield* call(
      client,
      Operations.toolName("wait"),
      { ...args, timeoutSeconds: Math.min(STEP_SECONDS, left) },
      Answers.WaitResult
    )
    if (answer.done) return answer
    // The same thing again: a turn by its id (not a newer latest one), a run by its name.
    args = answer.kind === "run"
      ? { name: target.name, run: true }
      : { name: target.name, turnId: answer.turnId }
    if (Option.isSome(end) && (yield* Clock.currentTimeMillis) >= end.value) {
      const what = answer.kind === "run" ? `run ${target.name}` : `turn ${answer.turnId} of ${target.name}`
      const again = answer.kind === "run" ? target.name : `${target.name} ${answer.turnId}`
      const message =
        `${what} is still going after ${
          RunViews.describeDuration(Duration.toMillis(within.pipe(Option.getOrThrow)))
        }; ` +
        `it goes on (\`flotta wait ${again}\` waits again)`
      return yield* new ToolFailed({
        tool: Operations.toolName("wait"),
        error: { _tag: "TurnPending", message },
        text: `TurnPending: ${message}.`
      })
    }
  }
})

const wait = Command.make(
  "wait",
  {
    ...connection,
    name: Flags.nameArgument("name", "The agent's name, or a run's (or verify's)."),
    turn: Flags.argument(
      "turn",
      "The turn id `flotta prompt` printed (t1, t2, ...); without it, the run of that name, else the agent's " +
        "latest turn.",
      Schema.String.pipe(Schema.pattern(/^t[1-9][0-9]*$/)),
      "is not a turn id (t1, t2, ...)"
    ).pipe(Args.optional),
    timeout: Flags.duration("timeout").pipe(
      Flags.optional(
        "Stop waiting after this long (the turn or run goes on; exit code 12): 90, 90s, 500ms, 5m or 1h. " +
          "The default is to wait until it ends."
      )
    )
  },
  (flags) =>
    withClient(
      flags,
      (client) => waitFor(client, { name: flags.name, ...Shared.ifSome("turnId", flags.turn) }, flags.timeout),
      renderWaited
    )
).pipe(
  Command.withDescription(
    "Wait for an agent's turn, or for an async run or verify, to end, and print its reply or outcome. A turn or " +
      "run that failed ends the command with its own error and exit code."
  )
)

/** Every agent's outcome, the ones still going after the broadcast's own wait waited for to the end. */
const broadcastAll = (client: McpClient, args: Record<string, unknown>) =>
  Effect.gen(function*() {
    const first = yield* call(
      client,
      Operations.toolName("broadcast"),
      { ...args, timeoutSeconds: STEP_SECONDS },
      Answers.BroadcastResult
    )
    const agents = yield* Effect.forEach(first.agents, (entry) =>
      entry.done || entry.turnId === undefined
        ? Effect.succeed(entry)
        : waitFor(client, { name: entry.name, turnId: entry.turnId }).pipe(
          Effect.map((answer): BroadcastEntry => {
            const result = answer.result
            const turn = result !== undefined && !("kind" in result) ? result : undefined
            return { ...entry, done: true, ok: true, text: turn?.text ?? "", costUsd: turn?.costUsd ?? 0 }
          }),
          Effect.catchTag(
            "ToolFailed",
            (e) => Effect.succeed<BroadcastEntry>({ ...entry, done: true, ok: false, error: e.error })
          )
        ), { concurrency: 4 })
    return { agents }
  })

const broadcast = Command.make(
  "broadcast",
  {
    ...connection,
    timeout: Flags.duration("timeout").pipe(
      Flags.optional(
        "Each agent's turn's own time limit, after which it is interrupted (TurnTimeout): 90, 90s, 500ms, 5m or 1h."
      )
    ),
    text: Flags.textArgument("text", "The prompt every live agent gets.")
  },
  (flags) =>
    Effect.gen(function*() {
      let failed: ReadonlyArray<BroadcastEntry> = []
      let total = 0
      yield* withClient(
        flags,
        (client) =>
          broadcastAll(client, {
            text: flags.text,
            ...Shared.ifSome("turnTimeoutSeconds", Option.map(flags.timeout, (d) => Duration.toMillis(d) / 1000))
          }).pipe(Effect.tap(({ agents }) =>
            Effect.sync(() => {
              failed = agents.filter((a) => !a.ok)
              total = agents.length
            })
          )),
        (v) => renderBroadcast(v.agents)
      )
      const first = failed[0]
      if (first?.error !== undefined) {
        return yield* new ToolFailed({
          tool: Operations.toolName("broadcast"),
          error: first.error,
          text: `broadcast: ${failed.length} of ${total} agents failed (${
            failed.map((f) => `${f.name}: ${f.error?._tag ?? "Error"}`).join(", ")
          })`
        })
      }
    })
).pipe(
  Command.withDescription(
    "Send one prompt to every live agent (runs excepted), wait for them all and print every reply. One slow or " +
      "failing agent never holds up the others; when any failed, the command ends with the first failure's exit code."
  )
)

export const commands = [spawn, info, interrupt, wait, broadcast] as const
