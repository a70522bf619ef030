/**
 * One named agent: it owns one `claude` process at a time. Turns wait in a FIFO queue and run
 * one at a time, because the CLI merges messages sent while it is busy (`Turn`). The agent keeps each turn's
 * record, answers the process's permission requests from its policy (`Permission`), and restarts a crashed
 * or stalled process with `--resume`, so the conversation survives (`Supervisor`). Its state is one record,
 * `AgentState`, shared by those three.
 */
import {
  Clock,
  Deferred,
  Duration,
  Effect,
  ExecutionStrategy,
  Exit,
  Fiber,
  FiberId,
  Option,
  Schema,
  Scope
} from "effect"
import type { Tracer } from "effect"
import { randomUUID } from "node:crypto"
import * as path from "node:path"
import * as ClaudeCli from "./ClaudeCli.js"
import type { ClaudeProcess, ExitInfo } from "./ClaudeCli.js"
import * as Protocol from "./ClaudeProtocol.js"
import {
  AgentClosed,
  InvalidSpec,
  NoResult,
  SpawnFailed,
  TurnErrorSchema,
  TurnInterrupted,
  TurnPending,
  TurnTimeout
} from "./Errors.js"
import type { SandboxUnavailable, TurnError } from "./Errors.js"
import type { FleetSettings } from "./FleetConfig.js"
import type { Alarms } from "./internal/alarms.js"
import { startTicks } from "./internal/processes.js"
import * as Parking from "./Parking.js"
import * as Permission from "./Permission.js"
import type { ReportLog } from "./ReportLog.js"
import * as Sandbox from "./Sandbox.js"
import type { AgentRow, StoredOptions, StoreShape, TurnRow } from "./Store.js"
import * as Supervisor from "./Supervisor.js"
import * as Telemetry from "./Telemetry.js"
import * as Turn from "./Turn.js"
import type { TurnResult } from "./TurnOutcome.js"

export type AgentStatus =
  | "starting"
  | "idle"
  | "working"
  | "waiting_approval"
  | "parked"
  | "restarting"
  | "closed"
export type Role = "member" | "manager"

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
}

export type Activity =
  | { readonly _tag: "Text"; readonly turnId: string; readonly text: string }
  | { readonly _tag: "Tool"; readonly turnId: string; readonly tool: string; readonly input: unknown }

export type { TurnResult } from "./TurnOutcome.js"

export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly input: unknown
}

export interface PermissionRecord {
  readonly tool: string
  readonly input: unknown
  readonly decision: "allow" | "deny"
  readonly message?: string
  readonly updatedInput?: unknown
  /** Who decided, when it was not the policy: a human's surface (`api`, `mcp`, `cli`, ...), or `timeout`, ... */
  readonly by?: string
}

export interface TurnRecord {
  readonly turnId: string
  readonly prompt: string
  readonly status: "queued" | "running" | "succeeded" | "failed"
  readonly reply: string | null
  readonly error: { readonly _tag: string; readonly message: string } | null
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly permissions: ReadonlyArray<PermissionRecord>
  readonly costUsd: number
  readonly durationMs: number
  readonly modelCalls: number
  readonly enqueuedAt: string
  readonly startedAt: string | null
  readonly finishedAt: string | null
}

export interface AgentStatusView {
  readonly status: AgentStatus
  /** The turn in flight, if any. */
  readonly current: string | null
  /** When the turn in flight started (ISO), if any. */
  readonly currentStartedAt: string | null
  readonly queued: number
  /** Finished turns. */
  readonly turns: number
  /** While parked at a usage limit (see `Parking`): when it resumes (ISO). */
  readonly parkedUntil: string | null
}

export interface AgentInfo {
  readonly name: string
  readonly lifecycle: "session" | "run"
  readonly status: AgentStatus
  readonly pid: number | null
  readonly sessionId: string
  readonly alive: boolean
  readonly cwd: string
  readonly model: string | null
  readonly permission: Permission.Described
  readonly role: Role
  readonly current: string | null
  readonly queued: number
  readonly totals: { readonly turns: number; readonly failed: number; readonly costUsd: number }
  readonly restarts: number
  readonly startedAt: string
  readonly closedReason: string | null
  /** While parked at a usage limit (see `Parking`): when it resumes (ISO). */
  readonly parkedUntil: string | null
  /** The host that runs it, in a fleet spread over several hosts (`@flotta/cluster`). */
  readonly host?: string
  /** Its sandbox, when it has one (writable paths absolute). */
  readonly sandbox?: Sandbox.SandboxData
}

export interface Agent {
  readonly name: string
  /** A session converses across turns; a run takes one turn (and `broadcast` never reaches it). */
  readonly lifecycle: "session" | "run"
  readonly prompt: (text: string, options?: { readonly timeout?: Duration.DurationInput }) => Effect.Effect<
    string,
    AgentClosed | InvalidSpec
  >
  /** Waits for a turn; interrupting the wait cancels the turn (dequeued, or interrupted if running). */
  readonly await: (turnId: string) => Effect.Effect<TurnResult, TurnError | NoResult>
  /** Waits for a turn like `await`, but interrupting the wait only stops the waiting: the turn goes on. */
  readonly watch: (turnId: string) => Effect.Effect<TurnResult, TurnError | NoResult>
  readonly result: (turnId: string) => Effect.Effect<TurnResult, TurnError | TurnPending | NoResult>
  readonly status: Effect.Effect<AgentStatusView>
  readonly info: Effect.Effect<AgentInfo>
  readonly transcript: Effect.Effect<ReadonlyArray<TurnRecord>>
  /** Interrupts the turn in flight; queued turns go on. False when nothing was running. */
  readonly interrupt: Effect.Effect<boolean>
  /** Stops the agent: its turns fail with AgentClosed, its child is stopped. */
  readonly shutdown: (reason: string) => Effect.Effect<void>
}

export interface AgentDeps {
  readonly cli: ClaudeCli.ClaudeCli["Type"]
  /** The fleet's one timer. */
  readonly alarms: Alarms
  readonly permission: Permission.Permission
  readonly reports: ReportLog
  readonly settings: FleetSettings
  /** Admission: processes starting at once. */
  readonly startPermit: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly store: StoreShape
  /** The fleet's parking at usage limits. */
  readonly parking: Parking.Parking
  /** Off once the fleet shuts down: what shutting down does to agents is not their state to restore. */
  readonly journal: { on: boolean }
}

/** What an agent brings back from the store when its host restarts. */
export interface Restored {
  readonly row: AgentRow
  /** Its turns, oldest first; queued ones run again in order (the one in flight is settled already). */
  readonly turns: ReadonlyArray<TurnRow>
}

/** A live process, the scope that stops it, and the news that its service ended (it exited, or stalled). */
export interface Running {
  readonly process: ClaudeProcess
  readonly scope: Scope.CloseableScope
  readonly ended: Deferred.Deferred<Turn.ProcessEnd>
}

/** Everything about one agent that changes, in one place. */
export interface AgentState {
  status: AgentStatus
  sessionId: string
  /** Whether the session has a saved conversation to resume (after a first turn, or when given one). */
  resumable: boolean
  process: Running | undefined
  /** The process's running cost (the CLI reports a total per process). */
  processCost: number
  turnCounter: number
  finished: number
  failed: number
  totalCost: number
  closedReason: string | null
  restarts: number
  /** Tool calls waiting for a human's approval. */
  waitingApprovals: number
}

/** What the turn runner and the supervisor share with the agent. */
export interface AgentContext {
  readonly name: string
  readonly options: AgentOptions
  readonly settings: FleetSettings
  readonly reports: ReportLog
  /** The agent's scope: processes and background requests live in it. */
  readonly scope: Scope.Scope
  readonly state: AgentState
  /** Turns waiting to be sent, in order (a turn that fails while it waits leaves the queue). */
  readonly queue: Array<Turn.Turn>
  /** The turn in flight and its process, while there is one. */
  active: Turn.Active | undefined
  readonly tracer: Tracer.Tracer
  readonly metrics: Turn.TurnMetrics
  readonly alarms: Alarms
  readonly stallMs: number
  readonly graceMs: number
  /** Starts a process for the current session (resuming it when it has a conversation). */
  readonly startProcess: Effect.Effect<Running, SpawnFailed | SandboxUnavailable>
  /** Off once the fleet shuts down: what that does to the agent is neither stored nor reported. */
  readonly journal: { readonly on: boolean }
  /** The agent's seat in its credentials' group (see `Parking`). */
  parking: Parking.Membership
  /** Keeps the agent's row in the store (name, options, session, status, process). */
  readonly saveAgent: () => void
  /** Ends the agent's pending approvals without a decision (its turn is over: the process crashed, say). */
  readonly expireApprovals: (reason: string) => Effect.Effect<void>
  /** Keeps a turn's record in the store, with its outcome once it has one. */
  readonly saveTurn: (
    turn: Turn.Turn,
    outcome?: { readonly result: TurnResult } | { readonly error: TurnError }
  ) => void
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
  "sandbox"
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
  stored: { ...plainOptions(options), cwd, permission: typeof policy === "function" ? "function" : policy, timeoutMs },
  notRestorable: typeof policy === "function"
    ? "its permission was given as a function, which cannot be stored: spawn it again"
    : null
})

/** The agent options a stored row describes. */
export const optionsOf = (row: AgentRow): AgentOptions => ({
  ...plainOptions(row.options),
  cwd: row.options.cwd,
  permission: row.options.permission as Permission.Policy,
  timeout: Duration.millis(row.options.timeoutMs),
  lifecycle: row.lifecycle
})

const encodeError = Schema.encodeSync(TurnErrorSchema)
const decodeError = Schema.decodeUnknownOption(TurnErrorSchema)

/** A snapshot of a record as it is now: the live one goes on changing. */
const snapshot = (record: Turn.MutableRecord): TurnRecord => ({
  ...record,
  toolCalls: [...record.toolCalls],
  permissions: [...record.permissions]
})

/** The CLI flags for one agent's options (a sandboxed one's `--settings` merged with any among `extraArgs`). */
export const buildArgs = (
  options: AgentOptions,
  permission: Permission.Policy,
  session: { readonly id: string; readonly resume: boolean }
): ReadonlyArray<string> => {
  const sandbox = Sandbox.confinement(options.sandbox, path.resolve(options.cwd ?? "."))
  return [
    ...ClaudeCli.DUPLEX_FLAGS,
    ...(session.resume ? ["--resume", session.id] : ["--session-id", session.id]),
    ...(options.model === undefined ? [] : ["--model", options.model]),
    ...(options.systemPrompt === undefined ? [] : ["--system-prompt", options.systemPrompt]),
    ...(options.appendSystemPrompt === undefined ? [] : ["--append-system-prompt", options.appendSystemPrompt]),
    ...Permission.flags(permission, sandbox === null ? [] : Sandbox.GUARDED_TOOLS),
    ...(sandbox === null ? options.extraArgs ?? [] : Sandbox.settingsArgs(sandbox, options.extraArgs ?? []))
  ]
}

/**
 * Starts an agent in the current scope and returns once its process has answered `initialize`.
 * Closing the scope stops the process; `shutdown` also fails the agent's turns.
 */
export const make = (
  name: string,
  options: AgentOptions,
  deps: AgentDeps,
  restored?: Restored
): Effect.Effect<Agent, SpawnFailed | SandboxUnavailable, Scope.Scope> =>
  Effect.gen(function*() {
    const { reports, settings } = deps
    const scope = yield* Effect.scope
    const clock = yield* Effect.clock
    /** The permission in force: an approval given "always" adds its tool for the rest of the agent's life. */
    let policy = options.permission ?? "read_only"
    const cwd = path.resolve(options.cwd ?? ".")
    const sandbox = Sandbox.confinement(options.sandbox, cwd)
    const env = { ...settings.env, ...options.env }
    const defaultTimeoutMs = Duration.toMillis(options.timeout ?? settings.turnTimeout)
    const startedAt = restored?.row.startedAt ?? Turn.iso(clock.unsafeCurrentTimeMillis())
    /** Every turn still in history, oldest first. */
    const history = new Map<string, Turn.Turn>()
    const state: AgentState = {
      status: "starting",
      sessionId: restored?.row.sessionId ?? options.resume ?? randomUUID(),
      resumable: restored?.row.resumable ?? options.resume !== undefined,
      process: undefined,
      processCost: 0,
      turnCounter: 0,
      finished: 0,
      failed: 0,
      totalCost: 0,
      closedReason: null,
      restarts: restored?.row.restarts ?? 0,
      waitingApprovals: 0
    }
    let { notRestorable, stored } = storedOptions(options, policy, cwd, defaultTimeoutMs)
    const saveAgent = () => {
      if (!deps.journal.on) return
      const running = state.process?.process
      deps.store.saveAgent({
        name,
        lifecycle: options.lifecycle ?? "session",
        options: stored,
        sessionId: state.sessionId,
        resumable: state.resumable,
        status: state.status,
        restarts: state.restarts,
        startedAt,
        closedReason: state.closedReason,
        notRestorable,
        process: running?.pid == null ? null : { pid: running.pid, startTicks: startTicks(running.pid) }
      })
    }
    const saveTurn: AgentContext["saveTurn"] = (turn, outcome) => {
      if (!deps.journal.on) return
      deps.store.saveTurn({
        agent: name,
        n: Number(turn.id.slice(1)),
        timeoutMs: turn.timeoutMs,
        record: snapshot(turn.record),
        ...(outcome === undefined ? {} : "result" in outcome ? { result: outcome.result } : {
          error: encodeError(outcome.error)
        })
      })
    }

    // --- permission requests from the process -------------------------------------------------------------
    /** An approval given "always": the tool is in the agent's permission from now on (stored, and reported). */
    const allowAlways = (tool: string, by: string) =>
      Effect.suspend(() => {
        policy = Permission.allowAlso(policy, [tool])
        ;({ notRestorable, stored } = storedOptions(options, policy, cwd, defaultTimeoutMs))
        saveAgent()
        return reports.post(name, "permission_changed", {
          allowAlso: tool,
          by,
          permission: Permission.describe(policy)
        })
      })

    /** While a human decides, the agent waits for approval and its turn's clock stops. */
    const waitingFor = (): Permission.OnWaiting => {
      let release: ((now: number) => void) | undefined
      return (waiting) =>
        Effect.clockWith((clock) =>
          Effect.sync(() => {
            const now = clock.unsafeCurrentTimeMillis()
            if (waiting) {
              state.waitingApprovals++
              release = ctx.active === undefined ? undefined : Turn.hold(ctx, ctx.active, now)
            } else {
              state.waitingApprovals--
              release?.(now)
            }
          })
        )
    }

    const onControlRequest: ClaudeCli.ControlHandler = (request) => {
      const ask = Protocol.decodeCanUseTool(request)
      if (Option.isNone(ask)) {
        return Effect.succeed({ _tag: "Error", error: `flotta does not handle ${request.subtype} requests` })
      }
      const { input: rawInput, tool_name: tool, tool_use_id: toolUseId } = ask.value
      const input = (typeof rawInput === "object" && rawInput !== null ? rawInput : {}) as Record<string, unknown>
      const turnId = ctx.active?.turn.id ?? null
      // The decision (and a human's wait for it) is part of the turn in flight: its span nests under the turn's.
      const turnSpan = ctx.active?.span
      // The sandbox refuses first: what it does not allow never reaches the policy, nor a human.
      const refused = sandbox === null ? undefined : Sandbox.refusal(sandbox, tool, input)
      const decided: Effect.Effect<Permission.PendingAnswer> = refused !== undefined
        ? Effect.succeed({ behavior: "deny", message: refused, by: "sandbox" })
        : deps.permission.decide(policy, {
          agent: name,
          turnId,
          tool,
          input,
          ...(toolUseId === undefined ? {} : { toolUseId })
        }, waitingFor())
      return decided.pipe(
        (decided) => (turnSpan === undefined ? decided : Effect.withParentSpan(decided, turnSpan)),
        Effect.tap((decision) =>
          decision.behavior === "allow" && decision.always === true
            ? allowAlways(tool, decision.by ?? "api")
            : Effect.void
        ),
        Effect.tap((decision) =>
          Turn.recordPermission(ctx, {
            tool,
            input,
            ...(decision.behavior === "allow"
              ? { decision: "allow", ...(decision.updatedInput ? { updatedInput: decision.updatedInput } : {}) }
              : { decision: "deny", message: decision.message }),
            ...(decision.by === undefined ? {} : { by: decision.by })
          })
        ),
        Effect.map((decision) => ({
          _tag: "Success" as const,
          // The CLI takes `updatedInput` as the input to run; echo the original when the policy kept it.
          response: decision.behavior === "allow"
            ? { behavior: "allow", updatedInput: decision.updatedInput ?? input }
            : {
              behavior: "deny",
              message: decision.message,
              ...(decision.interrupt === true ? { interrupt: true } : {})
            }
        }))
      )
    }

    // --- starting a process --------------------------------------------------------------------------------
    /** Ready = `initialize` answered. The readiness deadline starts once the process has its start slot. */
    const ready = (process: ClaudeProcess) =>
      process.request({ subtype: "initialize" }).pipe(
        Effect.timeoutFail({ duration: settings.startTimeout, onTimeout: () => ({ timeout: true }) as const }),
        Effect.catchAll((error) =>
          Effect.gen(function*() {
            // Give the exit code and the last stderr lines a moment to arrive: they say why.
            const exit = yield* Deferred.await(process.exited).pipe(Effect.timeoutOption("1 second"))
            const reason = "timeout" in error
              ? `not ready after ${Duration.format(settings.startTimeout)} (no answer to initialize)`
              : Option.isSome(exit)
              ? "the claude process exited during start"
              : error.reason
            return yield* new SpawnFailed({
              name,
              reason,
              exitCode: Option.isSome(exit) ? exit.value.exitCode : null,
              stderr: Option.isSome(exit) ? exit.value.stderr : process.stderrTail()
            })
          })
        )
      )

    const startProcess: Effect.Effect<Running, SpawnFailed | SandboxUnavailable> = Effect.gen(function*() {
      const processScope = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      const args = buildArgs(options, policy, { id: state.sessionId, resume: state.resumable })
      const ended = yield* Deferred.make<Turn.ProcessEnd>()
      // The process's frames reach the turn in flight on the spot; its exit ends its service.
      const self: { running?: Running } = {}
      const onFrame = (frame: ClaudeCli.TurnFrame, now: number) => {
        if (self.running !== undefined) Turn.onFrame(ctx, self.running, frame, now)
      }
      const onExit = (exit: ExitInfo) => {
        const end = { _tag: "Exited", exit } as const
        if (self.running !== undefined) Turn.crash(ctx, self.running, end, clock.unsafeCurrentTimeMillis())
        else Deferred.unsafeDone(ended, Exit.succeed(end))
      }
      const started = deps.startPermit(
        deps.cli.start({ name, args, cwd, env, onControlRequest, onFrame, onExit, sandboxed: sandbox !== null }).pipe(
          Effect.catchTag(
            "StartError",
            (e) => new SpawnFailed({ name, reason: e.reason, exitCode: null, stderr: "" })
          ),
          Effect.tap(ready),
          Scope.extend(processScope)
        )
      )
      const process = yield* started.pipe(Effect.onError(() => Scope.close(processScope, Exit.void)))
      self.running = { process, scope: processScope, ended }
      return self.running
    })

    const ctx: AgentContext = {
      name,
      options,
      settings,
      reports,
      scope,
      state,
      queue: [],
      active: undefined,
      tracer: yield* Effect.tracer,
      metrics: Turn.metricsFor(name, Telemetry),
      alarms: deps.alarms,
      stallMs: Duration.toMillis(settings.stallTimeout),
      graceMs: Duration.toMillis(settings.interruptGrace),
      startProcess,
      journal: deps.journal,
      parking: Parking.unseated,
      saveAgent,
      expireApprovals: (reason) => deps.permission.expire(name, reason),
      saveTurn
    }

    // --- what the store brings back ------------------------------------------------------------------------
    // A name used before numbers its turns on: the store keeps the earlier agent's turns under the same ids.
    if (restored === undefined) state.turnCounter = yield* deps.store.lastTurn(name)
    for (const row of restored?.turns ?? []) {
      const turn = Turn.make({
        id: row.record.turnId,
        text: row.record.prompt,
        timeoutMs: row.timeoutMs,
        deadlineAt: null,
        deferred: Deferred.unsafeMake(FiberId.none),
        parentSpan: Option.none()
      }, clock.unsafeCurrentTimeMillis())
      Object.assign(turn.record, snapshot(row.record as Turn.MutableRecord))
      state.turnCounter = Math.max(state.turnCounter, row.n)
      history.set(turn.id, turn)
      if (row.record.status === "queued") {
        ctx.queue.push(turn)
      } else if (row.record.status === "succeeded") {
        state.finished++
        state.totalCost += row.record.costUsd
        Deferred.unsafeDone(turn.deferred, Exit.succeed(row.result as TurnResult))
      } else {
        state.failed++
        const error = decodeError(row.error)
        Deferred.unsafeDone(
          turn.deferred,
          Option.isSome(error)
            ? Exit.fail(error.value)
            : Exit.die(new Error(`turn ${turn.id}: ${row.record.error?.message}`))
        )
      }
    }

    // --- start ---------------------------------------------------------------------------------------------
    const first = yield* startProcess
    yield* reports.post(name, "spawned", {
      pid: first.process.pid,
      sessionId: state.sessionId,
      cwd,
      model: options.model ?? null,
      permission: Permission.describe(policy),
      role: options.role ?? "member",
      lifecycle: options.lifecycle ?? "session",
      ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
      ...(restored === undefined ? {} : { restored: true, queued: ctx.queue.length })
    })
    // Its seat at usage limits: an agent whose CLI waits them out itself is never parked (see ClaudeCli.childEnv).
    ctx.parking = deps.parking.join({
      name,
      credentials: Parking.credentialsOf(ClaudeCli.childEnv(env)),
      parks: !ClaudeCli.cliWaitsAtLimits(env),
      hasParkedTurn: () => ctx.active?.parked != null,
      resume: (now) => Turn.resume(ctx, now)
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => ctx.parking.leave()))
    state.process = first
    state.status = "idle"
    saveAgent()
    const supervisor = yield* Supervisor.supervise(ctx, first).pipe(
      Effect.annotateLogs({ agent: name }),
      Effect.forkIn(scope)
    )

    // --- the handle ----------------------------------------------------------------------------------------
    const prune = () => {
      for (const [id, turn] of history) {
        if (history.size <= settings.historyLimit) break
        if (Turn.isDone(turn)) history.delete(id)
      }
    }

    const prompt: Agent["prompt"] = (text, opts) =>
      Effect.clockWith((clock) =>
        Effect.withFiberRuntime((fiber) => {
          if (state.closedReason !== null) return new AgentClosed({ name, reason: state.closedReason })
          if (typeof text !== "string" || text.trim().length === 0) {
            return new InvalidSpec({ path: "text", reason: "a prompt must be a non-empty string" })
          }
          const timeoutMs = opts?.timeout === undefined ? defaultTimeoutMs : Duration.toMillis(opts.timeout)
          if (!(timeoutMs > 0)) {
            return new InvalidSpec({ path: "timeout", reason: "a timeout must be a positive duration" })
          }
          const now = clock.unsafeCurrentTimeMillis()
          const id = `t${++state.turnCounter}`
          const turn = Turn.make({
            id,
            text,
            timeoutMs,
            deadlineAt: opts?.timeout === undefined ? null : now + timeoutMs,
            deferred: Deferred.unsafeMake(fiber.id()),
            parentSpan: Option.fromNullable(fiber.currentSpan)
          }, now)
          history.set(id, turn)
          prune()
          ctx.queue.push(turn)
          saveTurn(turn)
          Turn.pump(ctx, now)
          return Effect.succeed(id)
        })
      )

    const interruptTurn = (turn: Turn.Turn, reason: "user" | "timeout") =>
      Effect.clockWith((clock) => {
        const active = ctx.active
        if (active === undefined || active.turn !== turn || Turn.isDone(turn) || turn.interruptReason !== null) {
          return Effect.succeed(false)
        }
        // A parked turn has nothing running in the CLI to interrupt: it ends here (the CLI still holds its prompt,
        // and merges it into the next one, as after any interrupt).
        if (active.parked !== null) {
          return Effect.as(Turn.fail(ctx, turn, new TurnInterrupted({ name, turnId: turn.id })), true)
        }
        turn.interruptReason = reason
        active.interruptedAt = clock.unsafeCurrentTimeMillis()
        Turn.watch(ctx, active) // the interrupt's grace is timed from now
        return Effect.as(Turn.sendInterrupt(ctx, active.running), true)
      })

    /** Cancels a turn someone stopped waiting for: drop it if queued, interrupt it if running. */
    const cancel = (turnId: string) =>
      Effect.suspend(() => {
        const turn = history.get(turnId)
        if (turn === undefined || Turn.isDone(turn)) return Effect.void
        if (ctx.active?.turn === turn) return Effect.asVoid(interruptTurn(turn, "user"))
        return Turn.fail(ctx, turn, new TurnInterrupted({ name, turnId }))
      })

    /** A turn's outcome. At its deadline a turn still queued expires here; the agent interrupts a running one. */
    const outcomeOf = (turn: Turn.Turn): Effect.Effect<TurnResult, TurnError> => {
      const outcome = Deferred.await(turn.deferred)
      if (turn.deadlineAt === null) return outcome
      return Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) =>
          outcome.pipe(Effect.timeoutOption(Duration.millis(Math.max(0, turn.deadlineAt! - now))))
        ),
        Effect.flatMap(Option.match({
          onSome: Effect.succeed,
          onNone: () =>
            (turn.record.status === "queued"
              ? Turn.fail(ctx, turn, new TurnTimeout({ name, turnId: turn.id, timeoutMs: turn.timeoutMs }))
              : Effect.void).pipe(Effect.zipRight(outcome))
        }))
      )
    }

    const watch: Agent["watch"] = (turnId) =>
      Effect.suspend((): Effect.Effect<TurnResult, TurnError | NoResult> => {
        const turn = history.get(turnId)
        return turn === undefined ? new NoResult({ name, turnId }) : outcomeOf(turn)
      })

    const awaitTurn: Agent["await"] = (turnId) => watch(turnId).pipe(Effect.onInterrupt(() => cancel(turnId)))

    const result: Agent["result"] = (turnId) =>
      Effect.suspend((): Effect.Effect<TurnResult, TurnError | TurnPending | NoResult> => {
        const turn = turnId === "latest" ? [...history.values()].reverse().find(Turn.isDone) : history.get(turnId)
        if (turn === undefined) return new NoResult({ name, turnId })
        const { status } = turn.record
        if (status === "queued" || status === "running") return new TurnPending({ name, turnId: turn.id, status })
        return Deferred.await(turn.deferred)
      })

    const status = Effect.sync((): AgentStatusView => {
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
        parkedUntil: until === null ? null : Turn.iso(until)
      }
    })

    const info = Effect.map(status, (view): AgentInfo => ({
      name,
      lifecycle: options.lifecycle ?? "session",
      status: view.status,
      pid: state.process?.process.pid ?? null,
      sessionId: state.sessionId,
      alive: state.process !== undefined,
      cwd,
      model: options.model ?? null,
      permission: Permission.describe(policy),
      role: options.role ?? "member",
      current: view.current,
      queued: view.queued,
      totals: { turns: state.finished + state.failed, failed: state.failed, costUsd: state.totalCost },
      restarts: state.restarts,
      startedAt,
      closedReason: state.closedReason,
      parkedUntil: view.parkedUntil,
      ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox })
    }))

    const transcript = Effect.sync(() =>
      [...history.values()].map((turn) => structuredClone(turn.record) as TurnRecord)
    )

    const interrupt = Effect.suspend(() =>
      ctx.active === undefined
        ? Effect.succeed(false)
        : Effect.zipRight(deps.permission.expire(name, "interrupted"), interruptTurn(ctx.active.turn, "user"))
    )

    const shutdown = (reason: string) =>
      Effect.gen(function*() {
        if (state.closedReason === null) state.closedReason = reason
        state.status = "closed"
        saveAgent()
        yield* deps.permission.expire(name, "closed")
        yield* Fiber.interrupt(supervisor)
        const closed = new AgentClosed({ name, reason: state.closedReason })
        if (ctx.active !== undefined) yield* Turn.fail(ctx, ctx.active.turn, closed)
        yield* Supervisor.failWaiting(ctx, closed)
      })

    return {
      name,
      lifecycle: options.lifecycle ?? "session",
      prompt,
      await: awaitTurn,
      watch,
      result,
      status,
      info,
      transcript,
      interrupt,
      shutdown
    } satisfies Agent
  })
