/**
 * Starting one agent: its state and context, its journal in the store, what the store gave back after a
 * restart, its first process, its seat at usage limits and its supervisor. Returns the handle once the process
 * has answered `initialize`; closing the agent's scope stops the process.
 */
import { Deferred, Duration, Effect, Exit, Schema } from "effect"
import { randomUUID } from "node:crypto"
import * as path from "node:path"
import type { AgentRow, ForkOrigin } from "../AgentView.js"
import * as ClaudeCli from "../ClaudeCli.js"
import { TurnErrorSchema } from "../Errors.js"
import type { AgentClosed, SandboxUnavailable, SpawnFailed } from "../Errors.js"
import * as Parking from "../Parking.js"
import * as Permission from "../Permission.js"
import * as Sandbox from "../Sandbox.js"
import * as Telemetry from "../Telemetry.js"
import * as Handle from "./agentHandle.js"
import type { AgentOptions } from "./agentOptions.js"
import { storedOptions, withLabels } from "./agentOptions.js"
import type { AgentContext, AgentDeps, AgentState, Restored, Turn } from "./agentState.js"
import * as Budget from "./budget.js"
import { controlHandler } from "./permissionRequests.js"
import { startTicks } from "./processes.js"
import { startProcess } from "./processStart.js"
import { restoreTurns } from "./restoredTurns.js"
import * as Supervisor from "./supervisor.js"
import * as Turns from "./turn.js"
import * as TurnRecords from "./turnRecord.js"

const encodeError = Schema.encodeSync(TurnErrorSchema)

/**
 * Starts an agent in the current scope and returns once its process has answered `initialize`: a new one, one the
 * store gives back after a restart (`restored`), or a fork of another's conversation (`fork`).
 * Closing the scope stops the process; `shutdown` also fails the agent's turns.
 */
export const startAgent = Effect.fnUntraced(
  function*(name: string, options: AgentOptions, deps: AgentDeps, restored?: Restored, fork?: ForkOrigin) {
    const { reports, settings } = deps
    const scope = yield* Effect.scope
    const clock = yield* Effect.clock
    const cwd = path.resolve(options.cwd ?? ".")
    const env = { ...settings.env, ...options.env }
    const defaultTimeoutMs = Duration.toMillis(options.timeout ?? settings.turnTimeout)
    const startedAt = restored?.row.startedAt ?? TurnRecords.iso(clock.unsafeCurrentTimeMillis())
    /** Every turn still in history, oldest first. */
    const history = new Map<string, Turn>()
    const forkedFrom = restored === undefined ? fork : restored.row.forkedFrom
    const resumable = restored?.row.resumable ?? options.resume !== undefined
    const state: AgentState = {
      status: "starting",
      sessionId: restored?.row.sessionId ?? options.resume ?? randomUUID(),
      resumable,
      forkedFrom,
      // A fork's first turn opens with where it came from.
      marks: forkedFrom !== undefined && !resumable ? [{ _tag: "Forked", from: forkedFrom }] : [],
      policy: options.permission ?? "read_only",
      process: undefined,
      processCost: 0,
      processModelCosts: {},
      spend: Budget.empty(),
      turnCounter: 0,
      finished: 0,
      failed: 0,
      totalCost: 0,
      closedReason: null,
      closedAt: null,
      restarts: restored?.row.restarts ?? 0,
      waitingApprovals: 0,
      lastActiveAt: clock.unsafeCurrentTimeMillis(),
      dormant: false,
      context: undefined,
      contextWindow: null,
      writesLost: restored?.row.sessionWritesLost,
      labels: options.labels ?? {}
    }

    // --- the journal: the agent's row and its turns' rows in the store ------------------------------------------
    /** The turn numbers earlier agents of this name used (its own number on from there): set below for a new one. */
    let turnsBefore = restored?.row.turnsBefore
    /** The agent's row, as the store keeps it now. */
    const rowOf = (): AgentRow => {
      const running = state.process?.process
      const { notRestorable, stored } = storedOptions(
        withLabels(options, state.labels),
        state.policy,
        cwd,
        defaultTimeoutMs
      )
      return {
        name,
        lifecycle: options.lifecycle ?? "session",
        options: stored,
        sessionId: state.sessionId,
        resumable: state.resumable,
        status: state.status,
        restarts: state.restarts,
        startedAt,
        closedReason: state.closedReason,
        ...(state.closedAt === null ? {} : { closedAt: state.closedAt }),
        ...(turnsBefore === undefined ? {} : { turnsBefore }),
        notRestorable,
        process: running?.pid == null ? null : { pid: running.pid, startTicks: startTicks(running.pid) },
        ...(forkedFrom === undefined ? {} : { forkedFrom }),
        ...(state.writesLost === undefined ? {} : { sessionWritesLost: state.writesLost })
      }
    }
    const saveAgent = () => {
      if (deps.journal.on) deps.store.saveAgent(rowOf())
    }
    // What its turns' cost is booked on besides the agent (see `Costs`): the run it is, its labels at the time.
    const attribution = () => ({
      ...(options.lifecycle === "run" ? { run: name } : {}),
      ...(Object.keys(state.labels).length === 0 ? {} : { labels: state.labels })
    })
    const saveTurn: AgentContext["saveTurn"] = (turn, outcome) => {
      if (!deps.journal.on) return
      deps.store.saveTurn({
        agent: name,
        n: Number(turn.id.slice(1)),
        timeoutMs: turn.timeoutMs,
        record: TurnRecords.snapshot(turn.record),
        ...attribution(),
        ...(outcome === undefined ? {} : "result" in outcome ? { result: outcome.result } : {
          error: encodeError(outcome.error)
        })
      })
    }

    const ctx: AgentContext = {
      name,
      options,
      cwd,
      env,
      sandbox: Sandbox.confinement(options.sandbox, cwd),
      settings,
      reports,
      scope,
      state,
      queue: [],
      active: undefined,
      tracer: yield* Effect.tracer,
      metrics: TurnRecords.metricsFor(name, Telemetry),
      alarms: deps.alarms,
      stallMs: Duration.toMillis(settings.stallTimeout),
      graceMs: Duration.toMillis(settings.interruptGrace),
      startProcess: Effect.suspend(() => startProcess(ctx, deps, onControlRequest)),
      journal: deps.journal,
      parking: Parking.unseated,
      saveAgent,
      expireApprovals: (reason) => deps.permission.expire(name, reason),
      saveTurn,
      sleep: null,
      onIdle: () => undefined,
      compactNext: () => undefined
    }
    const onControlRequest = controlHandler(ctx, deps)

    // --- what the store brings back ---------------------------------------------------------------------------
    // A name used before numbers its turns on: the store keeps the earlier agent's turns under the same ids.
    if (restored === undefined) state.turnCounter = turnsBefore = yield* deps.store.lastTurn(name)
    else restoreTurns(ctx, history, restored.turns, clock.unsafeCurrentTimeMillis())

    // --- start ------------------------------------------------------------------------------------------------
    // One that hibernated before a restart of the host comes back asleep, with no process, until it is woken.
    const asleep = restored?.row.status === "hibernated"
    if (asleep) {
      // Its process is long gone: `down` has happened already.
      ctx.sleep = {
        woken: false,
        down: yield* Deferred.make<void>(),
        wake: yield* Deferred.make<string>(),
        up: yield* Deferred.make<void, SpawnFailed | SandboxUnavailable | AgentClosed>()
      }
      Deferred.unsafeDone(ctx.sleep.down, Exit.void)
      state.status = "hibernated"
    }
    const first = asleep ? undefined : yield* ctx.startProcess
    if (first !== undefined) {
      yield* reports.post(name, "spawned", {
        pid: first.process.pid,
        sessionId: state.sessionId,
        cwd,
        model: options.model ?? null,
        permission: Permission.describe(state.policy),
        role: options.role ?? "member",
        lifecycle: options.lifecycle ?? "session",
        ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }),
        ...(restored === undefined ? {} : { restored: true, queued: ctx.queue.length })
      })
    }
    if (fork !== undefined && restored === undefined) {
      yield* reports.post(name, "forked", { from: fork.agent, at: fork.turnId, sessionId: fork.sessionId })
    }
    // Its seat at usage limits: an agent whose CLI waits them out itself is never parked (see ClaudeCli.childEnv).
    ctx.parking = deps.parking.join({
      name,
      credentials: Parking.credentialsOf(ClaudeCli.childEnv(env)),
      parks: !ClaudeCli.cliWaitsAtLimits(env),
      hasParkedTurn: () => ctx.active?.parked != null,
      resume: (now) => Turns.resume(ctx, now)
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => ctx.parking.leave()))
    if (first !== undefined) {
      state.process = first
      state.status = "idle"
    }
    saveAgent()
    const supervisor = yield* Supervisor.supervise(ctx, first).pipe(
      Effect.annotateLogs({ agent: name }),
      Effect.forkIn(scope)
    )
    const made = Handle.make(ctx, deps, { history, supervisor, defaultTimeoutMs, startedAt, rowOf })
    const agent = made.agent

    // --- hibernation ------------------------------------------------------------------------------------------
    // A candidate for `maxLive` whenever it is idle; with `hibernateAfter`, it sleeps once idle that long.
    // Through the registry, which keeps a sleeper as nothing but its record.
    const sleepy = (reason: string) => deps.sleep(name, reason).pipe(Effect.orElseSucceed(() => false))
    const leave = deps.liveSlots.join(name, { idleSince: agent.idleSince, hibernate: sleepy })
    yield* Effect.addFinalizer(() => Effect.sync(leave))
    const after = settings.hibernateAfter === undefined ? undefined : Duration.toMillis(settings.hibernateAfter)
    let cancelIdleAlarm = () => {}
    ctx.onIdle = (now) => {
      deps.liveSlots.kick()
      if (after === undefined) return
      cancelIdleAlarm()
      cancelIdleAlarm = deps.alarms.set(
        now + after,
        // Still idle since then: nothing happened meanwhile.
        // On its own fiber: the fleet's alarms wait for nobody's process to end.
        Effect.suspend(() =>
          agent.idleSince() === now
            ? Effect.asVoid(
              Effect.forkIn(sleepy(`idle for ${Duration.format(settings.hibernateAfter!)} (hibernateAfter)`), scope)
            )
            : Effect.void
        )
      )
    }
    yield* Effect.addFinalizer(() => Effect.sync(() => cancelIdleAlarm()))
    // The supervisor may have found it idle before it could be told.
    if (agent.idleSince() !== null) ctx.onIdle(state.lastActiveAt)
    // Asleep with turns that waited through the restart: it wakes for them.
    if (asleep && ctx.queue.length > 0) Supervisor.wakeUp(ctx.sleep!, "queued turns")
    return made
  }
)
