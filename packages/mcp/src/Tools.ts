/**
 * The fleet as MCP tools: one prebuilt table (name, schemas, hints, handler). A handler is an Effect on the
 * `Flotta` service; `register` puts the table on a fresh SDK server and runs handlers through a Runtime
 * captured when the server's layer was built. A typed failure becomes an `isError` result that names the
 * error and says what to do; long waits are bounded and report progress.
 */
import { Flotta } from "@flotta/core/Flotta"
import type * as Run from "@flotta/core/Run"
import type {
  CallToolResult,
  McpServer as SdkServer,
  ServerContext,
  StandardSchemaWithJSON,
  ToolAnnotations
} from "@modelcontextprotocol/server"
import { Cause, Clock, Duration, Effect, Exit, Runtime, Schema } from "effect"
import * as Standard from "./internal/standardSchema.js"
import * as Wait from "./internal/wait.js"
import * as S from "./Schemas.js"

/** What a handler can do besides computing its result. */
export interface ToolContext {
  /** A progress notification, when the client asked for them (`_meta.progressToken`); never fails. */
  readonly progress: (message: string, progress: number, total?: number) => Effect.Effect<void>
}

export type Failure = Wait.Failure

export interface Tool {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly annotations: ToolAnnotations
  readonly inputSchema: StandardSchemaWithJSON
  readonly outputSchema: StandardSchemaWithJSON
  /** The handler; `args` were validated by the SDK against `inputSchema`. */
  readonly call: (args: unknown, ctx: ToolContext) => Effect.Effect<unknown, Failure, Flotta>
}

const tool = <I, IE, O, OE>(spec: {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly annotations: Omit<ToolAnnotations, "title">
  readonly input: Schema.Schema<I, IE>
  readonly output: Schema.Schema<O, OE>
  readonly run: (args: I, ctx: ToolContext) => Effect.Effect<O, Failure, Flotta>
}): Tool => ({
  name: spec.name,
  title: spec.title,
  description: spec.description,
  annotations: { title: spec.title, ...spec.annotations },
  inputSchema: Standard.input(spec.input) as StandardSchemaWithJSON,
  outputSchema: Standard.output(spec.output) as StandardSchemaWithJSON,
  call: (args, ctx) => spec.run(args as I, ctx)
})

// Hints: `readOnlyHint` lets hosts auto-approve; `destructiveHint` asks them to confirm; `openWorldHint` marks
// tools that prompt a model (which may reach beyond this machine).
const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const
const PROMPTS = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const
const STOPS = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } as const

const seconds = (n: number) => Duration.millis(Math.round(n * 1000))
const waitBound = (n: number | undefined) =>
  seconds(Math.min(S.MAX_WAIT_SECONDS, Math.max(0, n ?? S.DEFAULT_WAIT_SECONDS)))
/** How often a wait reports progress. */
export const PROGRESS_INTERVAL = Duration.seconds(3)

const secondsText = (ms: number) => `${Math.round(ms / 1000)} s`

const startedView = (name: string, kind: "run" | "verify") => ({
  name,
  kind,
  status: "running" as const,
  next: `call flotta_wait { "name": "${name}", "run": true } to wait for it, or flotta_run_result { "name": "${name}" }`
})

/** The status of an agent in words, for progress and for a wait that ended before the turn did. */
const describeTurn = (fleet: Flotta, name: string, turnId: string, waitedMs: number) =>
  Effect.gen(function*() {
    const status = yield* fleet.status(name)
    if (status.current === turnId) {
      const now = yield* Clock.currentTimeMillis
      const since = status.currentStartedAt === null ? waitedMs : now - Date.parse(status.currentStartedAt)
      const queued = status.queued > 0 ? ` (${status.queued} queued)` : ""
      return { status, message: `agent ${name}: turn ${turnId} running for ${secondsText(since)}${queued}` }
    }
    const ahead = status.current === null ? "" : `, behind ${status.current}`
    return {
      status,
      message: `agent ${name}: turn ${turnId} queued${ahead} (${status.queued} queued), waited ${secondsText(waitedMs)}`
    }
  }).pipe(
    Effect.catchAll(() => Effect.succeed({ status: undefined, message: `agent ${name}: turn ${turnId} pending` }))
  )

const describeRun = (fleet: Flotta, name: string, waitedMs: number) =>
  fleet.status(name).pipe(
    Effect.map((s) => `run ${name}: ${s.status}, waited ${secondsText(waitedMs)}`),
    Effect.orElseSucceed(() => `run ${name}: running, waited ${secondsText(waitedMs)}`)
  )

/** The turn to wait for when none is named: the agent's most recent one. */
const latestTurn = (fleet: Flotta, name: string) =>
  Effect.gen(function*() {
    const turns = yield* fleet.transcript(name)
    const last = turns[turns.length - 1]
    if (last === undefined) {
      return yield* Effect.fail<Failure>({ _tag: "NoResult", message: `"${name}" has no turn yet` })
    }
    return last.turnId
  })

/** Waits for one turn within the bound, with progress; a failed turn is a failure of the call. */
const waitTurn = (fleet: Flotta, name: string, turnId: string, boundSeconds: number | undefined, ctx: ToolContext) =>
  Effect.gen(function*() {
    const bound = waitBound(boundSeconds)
    const boundMs = Duration.toMillis(bound)
    const started = yield* Clock.currentTimeMillis
    const outcome = yield* Wait.turn(fleet, name, turnId, {
      bound,
      tick: PROGRESS_INTERVAL,
      onTick: (waitedMs) =>
        describeTurn(fleet, name, turnId, waitedMs).pipe(
          Effect.flatMap(({ message }) => ctx.progress(message, waitedMs / 1000, boundMs / 1000))
        )
    })
    const waitedMs = (yield* Clock.currentTimeMillis) - started
    if (outcome._tag === "Failed") return yield* Effect.fail(outcome.error)
    if (outcome._tag === "Done") {
      return {
        done: true,
        name,
        kind: "turn" as const,
        turnId,
        waitedMs,
        result: outcome.result,
        message: `agent ${name}: turn ${turnId} finished`
      }
    }
    const { message, status } = yield* describeTurn(fleet, name, turnId, waitedMs)
    return {
      done: false,
      name,
      kind: "turn" as const,
      turnId,
      waitedMs,
      ...(status === undefined ? {} : { status }),
      message: `${message}; call flotta_wait again with this turnId`
    }
  })

const waitRun = (fleet: Flotta, name: string, boundSeconds: number | undefined, ctx: ToolContext) =>
  Effect.gen(function*() {
    const bound = waitBound(boundSeconds)
    const boundMs = Duration.toMillis(bound)
    const started = yield* Clock.currentTimeMillis
    const outcome = yield* Wait.run(fleet, name, {
      bound,
      tick: PROGRESS_INTERVAL,
      onTick: (waitedMs) =>
        describeRun(fleet, name, waitedMs).pipe(
          Effect.flatMap((message) => ctx.progress(message, waitedMs / 1000, boundMs / 1000))
        )
    })
    const waitedMs = (yield* Clock.currentTimeMillis) - started
    if (outcome._tag === "Failed") return yield* Effect.fail(outcome.error)
    if (outcome._tag === "Done") {
      return {
        done: true,
        name,
        kind: "run" as const,
        waitedMs,
        result: outcome.result,
        message: `${outcome.result.kind} ${name} finished`
      }
    }
    return {
      done: false,
      name,
      kind: "run" as const,
      waitedMs,
      message: `${yield* describeRun(fleet, name, waitedMs)}; call flotta_wait again`
    }
  })

/** Whether `name` is an async run or verify the fleet knows (running or finished). */
const isRun = (fleet: Flotta, name: string) =>
  fleet.runResult(name).pipe(
    Effect.as(true),
    Effect.catchAll((e) => Effect.succeed(e._tag !== "RunNotFound"))
  )

const runOptions = (args: typeof S.RunArgs.Type): Run.RunOptions => {
  const { timeoutSeconds, ...rest } = args
  return { ...rest, ...(timeoutSeconds === undefined ? {} : { timeout: seconds(timeoutSeconds) }) }
}

// --- the table -----------------------------------------------------------------------------------------------

export const tools: ReadonlyArray<Tool> = [
  tool({
    name: "flotta_spawn",
    title: "Spawn an agent",
    description: "Start a long-lived claude agent under a unique name and return its info once it is ready. " +
      "Send it work with flotta_prompt or flotta_ask; stop it with flotta_close.",
    annotations: { ...PROMPTS },
    input: S.SpawnArgs,
    output: S.AgentInfo,
    run: (args) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const { name, turnTimeoutSeconds, ...options } = args
        return yield* fleet.spawn(name, {
          ...options,
          ...(turnTimeoutSeconds === undefined ? {} : { timeout: seconds(turnTimeoutSeconds) })
        })
      })
  }),
  tool({
    name: "flotta_run",
    title: "Start a run",
    description: "Start a single-shot agent on one bounded task (optionally in its own git worktree) and " +
      "return its name at once. Wait for it with flotta_wait { name, run: true }, or fetch the outcome with " +
      "flotta_run_result.",
    annotations: { ...PROMPTS },
    input: S.RunArgs,
    output: S.Started,
    run: (args) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const name = yield* fleet.runAsync(runOptions(args))
        return startedView(name, "run")
      })
  }),
  tool({
    name: "flotta_list",
    title: "List agents",
    description: "Every live agent (runs in progress included) with its status, current turn and totals.",
    annotations: READ,
    input: S.NoArgs,
    output: Schema.Struct({ agents: Schema.Array(S.AgentInfo) }),
    run: () => Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.list), (agents) => ({ agents }))
  }),
  tool({
    name: "flotta_info",
    title: "Agent info",
    description: "One agent's details: status, pid, session id, cwd, model, permission, totals, restarts.",
    annotations: READ,
    input: S.NameArgs,
    output: S.AgentInfo,
    run: ({ name }) => Effect.flatMap(Flotta, (fleet) => fleet.info(name))
  }),
  tool({
    name: "flotta_close",
    title: "Close an agent",
    description: "Stop an agent: its queued and running turns fail with AgentClosed and its process ends.",
    annotations: STOPS,
    input: S.NameArgs,
    output: Schema.Struct({ name: Schema.String, closed: Schema.Boolean }),
    run: ({ name }) => Effect.flatMap(Flotta, (fleet) => fleet.close(name)).pipe(Effect.as({ name, closed: true }))
  }),
  tool({
    name: "flotta_interrupt",
    title: "Interrupt a turn",
    description: "Interrupt the agent's turn in flight (it fails with TurnInterrupted); queued turns go on. " +
      "interrupted is false when nothing was running.",
    annotations: STOPS,
    input: S.NameArgs,
    output: Schema.Struct({ name: Schema.String, interrupted: Schema.Boolean, turnId: Schema.NullOr(Schema.String) }),
    run: ({ name }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const { current } = yield* fleet.status(name)
        const interrupted = yield* fleet.interrupt(name)
        return { name, interrupted, turnId: interrupted ? current : null }
      })
  }),
  tool({
    name: "flotta_prompt",
    title: "Prompt an agent",
    description: "Queue a prompt for an agent and return its turn id at once. Wait for the reply with " +
      "flotta_wait { name, turnId }, or read it later with flotta_result.",
    annotations: { ...PROMPTS },
    input: S.PromptArgs,
    output: Schema.Struct({ name: Schema.String, turnId: Schema.String, status: S.StatusView }),
    run: ({ name, text, turnTimeoutSeconds }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const turnId = yield* fleet.prompt(
          name,
          text,
          turnTimeoutSeconds === undefined ? {} : { timeout: seconds(turnTimeoutSeconds) }
        )
        return { name, turnId, status: yield* fleet.status(name) }
      })
  }),
  tool({
    name: "flotta_ask",
    title: "Ask an agent",
    description: "Prompt an agent and wait for the reply, at most timeoutSeconds (default 45, at most 50), " +
      "with progress notifications. If the turn is still going, returns done: false with its turn id: call " +
      "flotta_wait again. Giving up on the call never cancels the turn (flotta_interrupt does).",
    annotations: { ...PROMPTS },
    input: S.AskArgs,
    output: S.WaitResult,
    run: ({ name, text, timeoutSeconds, turnTimeoutSeconds }, ctx) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const turnId = yield* fleet.prompt(
          name,
          text,
          turnTimeoutSeconds === undefined ? {} : { timeout: seconds(turnTimeoutSeconds) }
        )
        return yield* waitTurn(fleet, name, turnId, timeoutSeconds, ctx)
      })
  }),
  tool({
    name: "flotta_wait",
    title: "Wait for a turn or a run",
    description: "Wait for an agent's turn (turnId, default its latest) or for a run or verify (run: true), at " +
      "most timeoutSeconds (default 45, at most 50), with progress notifications every few seconds. Returns " +
      "the result when done, else done: false and the status: call again. Cancelling the wait never cancels " +
      "the turn or run.",
    annotations: READ,
    input: S.WaitArgs,
    output: S.WaitResult,
    run: ({ name, run, timeoutSeconds, turnId }, ctx) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        if (run === true) return yield* waitRun(fleet, name, timeoutSeconds, ctx)
        if (turnId !== undefined) return yield* waitTurn(fleet, name, turnId, timeoutSeconds, ctx)
        // No turn named: a run of that name, else the agent's latest turn.
        if (run === undefined && (yield* isRun(fleet, name))) return yield* waitRun(fleet, name, timeoutSeconds, ctx)
        const latest = yield* latestTurn(fleet, name)
        return yield* waitTurn(fleet, name, latest, timeoutSeconds, ctx)
      })
  }),
  tool({
    name: "flotta_status",
    title: "Agent status",
    description: "An agent's status (starting, idle, working, restarting, closed), its turn in flight, how many " +
      "turns are queued and how many finished.",
    annotations: READ,
    input: S.NameArgs,
    output: Schema.Struct({ name: Schema.String, ...S.StatusView.fields }),
    run: ({ name }) =>
      Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.status(name)), (status) => ({ name, ...status }))
  }),
  tool({
    name: "flotta_result",
    title: "Turn result",
    description: "The result of a finished turn (turnId, or \"latest\"): reply text, cost, duration, session. " +
      "A turn still going is a TurnPending error: use flotta_wait.",
    annotations: READ,
    input: S.ResultArgs,
    output: Schema.Struct({ name: Schema.String, result: S.TurnResult }),
    run: ({ name, turnId }) =>
      Effect.map(
        Effect.flatMap(Flotta, (fleet) => fleet.result(name, turnId ?? "latest")),
        (result) => ({ name, result })
      )
  }),
  tool({
    name: "flotta_run_result",
    title: "Run result",
    description: "The outcome of a run (flotta_run) or verify (flotta_verify) by name. One still going is a " +
      "TurnPending error: use flotta_wait { name, run: true }.",
    annotations: READ,
    input: S.NameArgs,
    output: Schema.Struct({
      name: Schema.String,
      kind: Schema.Literal("run", "verify"),
      result: Schema.Union(S.RunResult, S.VerifyReport)
    }),
    run: ({ name }) =>
      Effect.map(
        Effect.flatMap(Flotta, (fleet) => fleet.runResult(name)),
        (result) => ({ name, kind: result.kind, result })
      )
  }),
  tool({
    name: "flotta_transcript",
    title: "Agent transcript",
    description: "An agent's turns, oldest first: prompt, reply or error, tool calls, permission decisions, cost " +
      "and timing. `last` keeps only the most recent ones. Also readable as the resource " +
      "flotta://agents/{name}/transcript.",
    annotations: READ,
    input: S.TranscriptArgs,
    output: Schema.Struct({ name: Schema.String, total: Schema.Number, turns: Schema.Array(S.TurnRecord) }),
    run: ({ last, name }) =>
      Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.transcript(name)), (turns) => ({
        name,
        total: turns.length,
        turns: last === undefined ? turns : turns.slice(-last)
      }))
  }),
  tool({
    name: "flotta_broadcast",
    title: "Broadcast a prompt",
    description: "Send one prompt to every live agent and wait for the replies, at most timeoutSeconds " +
      "(default 45, at most 50). Each agent's entry is its reply, its error, or done: false with the turn id to " +
      "flotta_wait for. One slow or failing agent never holds up the others.",
    annotations: { ...PROMPTS },
    input: S.BroadcastArgs,
    output: S.BroadcastResult,
    run: ({ text, timeoutSeconds, turnTimeoutSeconds }, ctx) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const names = (yield* fleet.list).filter((a) => a.status !== "closed").map((a) => a.name)
        const bound = waitBound(timeoutSeconds)
        const boundMs = Duration.toMillis(bound)
        let answered = 0
        const started = yield* Clock.currentTimeMillis
        const progress = Effect.gen(function*() {
          const waited = (yield* Clock.currentTimeMillis) - started
          yield* ctx.progress(
            `broadcast: ${answered} of ${names.length} agents answered, waited ${secondsText(waited)}`,
            waited / 1000,
            boundMs / 1000
          )
        }).pipe(Effect.delay(PROGRESS_INTERVAL), Effect.forever)
        const one = (name: string) =>
          Effect.gen(function*() {
            const turnId = yield* fleet.prompt(
              name,
              text,
              turnTimeoutSeconds === undefined ? {} : { timeout: seconds(turnTimeoutSeconds) }
            )
            const outcome = yield* Wait.turn(fleet, name, turnId, { bound, tick: bound })
            if (outcome._tag === "Pending") return { name, done: false, ok: true, turnId }
            answered++
            if (outcome._tag === "Failed") return { name, done: true, ok: false, turnId, error: outcome.error }
            return { name, done: true, ok: true, turnId, text: outcome.result.text, costUsd: outcome.result.costUsd }
          }).pipe(
            Effect.catchAll((error: Failure) =>
              Effect.succeed({ name, done: true, ok: false, error: { _tag: error._tag, message: error.message } })
            )
          )
        const agents = yield* Effect.forEach(names, one, { concurrency: "unbounded" }).pipe(
          Effect.raceFirst(progress)
        )
        return { agents }
      })
  }),
  tool({
    name: "flotta_verify",
    title: "Verify a branch",
    description: "Run shell checks against a branch in a throwaway git worktree, in the background; returns " +
      "its name at once. Wait with flotta_wait { name, run: true } or fetch with flotta_run_result.",
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    input: S.VerifyArgs,
    output: S.Started,
    run: ({ branch, checkTimeoutSeconds, checks, cwd, name }) =>
      Effect.gen(function*() {
        const fleet = yield* Flotta
        const started = yield* fleet.verifyAsync(cwd ?? ".", {
          branch,
          checks,
          ...(name === undefined ? {} : { name }),
          ...(checkTimeoutSeconds === undefined ? {} : { timeout: seconds(checkTimeoutSeconds) })
        })
        return startedView(started, "verify")
      })
  }),
  tool({
    name: "flotta_reports",
    title: "Report log",
    description: "The fleet's activity log by cursor: entries after `cursor` (pass the previous call's `next`), " +
      "optionally for one agent and some kinds. Also readable as the resource flotta://reports.",
    annotations: READ,
    input: S.ReportsArgs,
    output: Schema.Struct({ entries: Schema.Array(S.ReportEntry), next: Schema.Number }),
    run: ({ agent, cursor, kinds, limit }) =>
      Effect.flatMap(Flotta, (fleet) =>
        fleet.reports({
          ...(cursor === undefined ? {} : { since: cursor }),
          ...(agent === undefined ? {} : { agent }),
          ...(kinds === undefined ? {} : { kinds }),
          ...(limit === undefined ? {} : { limit })
        }))
  }),
  tool({
    name: "flotta_worktrees",
    title: "List run worktrees",
    description: "The runs' git worktrees in a repository: path, branch, clean or dirty, locked, age.",
    annotations: READ,
    input: S.CwdArgs,
    output: Schema.Struct({ worktrees: Schema.Array(S.WorktreeInfo) }),
    run: ({ cwd }) =>
      Effect.map(Effect.flatMap(Flotta, (fleet) => fleet.worktrees(cwd ?? ".")), (worktrees) => ({ worktrees }))
  }),
  tool({
    name: "flotta_gc_worktrees",
    title: "Remove finished run worktrees",
    description: "Remove the run worktrees whose run has ended: clean ones, and dirty ones too with force. " +
      "Branches stay. Returns what was removed and what was kept, and why.",
    annotations: STOPS,
    input: S.GcArgs,
    output: Schema.Struct({
      removed: Schema.Array(Schema.String),
      kept: Schema.Array(Schema.Struct({ path: Schema.String, reason: Schema.String }))
    }),
    run: ({ cwd, force }) =>
      Effect.flatMap(Flotta, (fleet) => fleet.gcWorktrees(cwd ?? ".", force === undefined ? {} : { force }))
  })
]

// --- results -----------------------------------------------------------------------------------------------

/** What to do about each typed failure, after its message. */
const ADVICE: Record<string, string> = {
  AgentNotFound: "Call flotta_list to see the live agents, or flotta_spawn to start one",
  AgentAlreadyExists: "Pick another name, or flotta_close the existing agent first",
  InvalidName: "Use 1 to 63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit",
  InvalidSpec: "Fix that field and call again",
  SpawnFailed: "Check cwd, model and the claude CLI (its stderr is above), then spawn again",
  TurnTimeout: "Prompt again with a larger turnTimeoutSeconds, or split the task",
  TurnInterrupted: "Prompt the agent again to continue",
  TurnFailed: "The model API failed; try again later with flotta_prompt",
  AgentCrashed: "The agent restarts itself; check flotta_info, then prompt again",
  AgentClosed: "Start a new agent with flotta_spawn (resume its session id to keep the conversation)",
  TurnPending: "Call flotta_wait to wait for it",
  NoResult: "Check the turn ids with flotta_transcript or flotta_status",
  BudgetExceeded: "Raise maxBudgetUsd, or continue with flotta_spawn { resume: sessionId }",
  MaxTurnsReached: "Raise maxTurns, or continue with flotta_spawn { resume: sessionId }",
  NotAGitRepo: "Pass a cwd inside a git repository",
  RunNotFound: "Use the name flotta_run or flotta_verify returned; flotta_list shows runs still going",
  WorktreeFailed: "Check the repository with flotta_worktrees; flotta_gc_worktrees removes stale ones",
  BranchNotFound: "Pass an existing branch or commit",
  StructuredOutputMissing: "Ask for JSON that matches the schema explicitly in the prompt, or drop jsonSchema",
  SchedulerNotEnabled: "Add a `schedule` section to the config"
}

const sentence = (text: string) => (/[.!?]$/.test(text.trimEnd()) ? text.trimEnd() : `${text.trimEnd()}.`)

/** A typed failure as a tool result the model can act on. */
export const errorResult = (error: Failure): CallToolResult => {
  const advice = ADVICE[error._tag]
  const text = `${error._tag}: ${sentence(error.message)}${advice === undefined ? "" : ` ${sentence(advice)}`}`
  return {
    isError: true,
    content: [{ type: "text", text }],
    structuredContent: { error: { _tag: error._tag, message: error.message } }
  }
}

export const successResult = (value: unknown): CallToolResult => ({
  content: [{ type: "text", text: JSON.stringify(value) }],
  structuredContent: value as Record<string, unknown>
})

const toolContext = (ctx: ServerContext): ToolContext => {
  const token = ctx.mcpReq._meta?.progressToken
  let last = -Infinity
  return {
    progress: (message, progress, total) =>
      token === undefined || progress <= last
        ? Effect.void
        : Effect.suspend(() => {
          last = progress
          return Effect.tryPromise(() =>
            ctx.mcpReq.notify({
              method: "notifications/progress",
              params: { progressToken: token, progress, ...(total === undefined ? {} : { total }), message }
            })
          ).pipe(Effect.ignore)
        })
  }
}

/** Runs one tool call to a result: its value, its typed failure, or (for a bug) an internal error. */
export const execute = (runtime: Runtime.Runtime<Flotta>) => {
  const runExit = Runtime.runPromiseExit(runtime)
  return (spec: Tool, args: unknown, ctx: ServerContext): Promise<CallToolResult> =>
    runExit(
      spec.call(args, toolContext(ctx)).pipe(
        Effect.withSpan(`mcp.${spec.name}`, { attributes: { "mcp.tool": spec.name }, captureStackTrace: false })
      ),
      { signal: ctx.mcpReq.signal }
    ).then((exit) => {
      if (Exit.isSuccess(exit)) return successResult(exit.value)
      const failure = Cause.failureOption(exit.cause)
      if (failure._tag === "Some") return errorResult(failure.value)
      if (Cause.isInterruptedOnly(exit.cause)) {
        return errorResult({ _tag: "Cancelled", message: `${spec.name} was cancelled by the client` })
      }
      Runtime.runFork(runtime)(Effect.logError(`MCP tool ${spec.name} failed unexpectedly`, exit.cause))
      return errorResult({
        _tag: "InternalError",
        message: `${spec.name} failed unexpectedly: ${Cause.pretty(exit.cause).split("\n")[0]}. ` +
          "This is a bug in flotta; the fleet itself is unaffected"
      })
    })
}

export const byName: ReadonlyMap<string, Tool> = new Map(tools.map((spec) => [spec.name, spec]))

/** Registers tools of the table (by default all of them) on a fresh SDK server. */
export const register = (server: SdkServer, run: ReturnType<typeof execute>, only: ReadonlyArray<Tool> = tools) => {
  for (const spec of only) {
    server.registerTool(spec.name, {
      title: spec.title,
      description: spec.description,
      inputSchema: spec.inputSchema,
      outputSchema: spec.outputSchema,
      annotations: spec.annotations
    }, (args: unknown, ctx: ServerContext) => run(spec, args, ctx))
  }
}
