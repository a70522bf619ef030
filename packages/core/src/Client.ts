/**
 * `createFleet(options)`: the fleet for code that does not use Effect. The same operations as the `Flotta`
 * service, as Promises; a failure rejects with the same typed error object (it carries `_tag`).
 */
import { Cause, Effect, Exit, Fiber, Layer, ManagedRuntime, Option, Stream } from "effect"
import type { AgentOptions } from "./Agent.js"
import * as Flotta from "./Flotta.js"
import type { ReportEntry, ReportLog, ReportQuery, SubscribeOptions } from "./ReportLog.js"
import type { RunOptions } from "./Run.js"
import type { FindingsQuery, ScanOptions, SchedulerSlot, WindowInput } from "./Steering.js"
import type { VerifyOptions } from "./Worktrees.js"

export interface SubscribeCallbacks extends SubscribeOptions {
  /** Called when this subscriber fell behind and `count` entries after seq `after` were not delivered. */
  readonly onMissed?: (count: number, after: number) => void
}

export interface CreateFleetOptions extends Flotta.FleetOptions {
  /**
   * Layers built on top of the engine, such as the scheduler (`SchedulerConfig.layerFromJson(config)` from
   * `@flotta/scheduler`). A failure to build one rejects the first call.
   */
  readonly extend?: Layer.Layer<never, unknown, Flotta.Flotta | ReportLog | SchedulerSlot>
}

const toPromise = <A, E>(
  runtime: ManagedRuntime.ManagedRuntime<Flotta.Flotta, unknown>,
  effect: Effect.Effect<A, E, Flotta.Flotta>
) =>
  runtime.runPromiseExit(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    throw Option.isSome(failure) ? failure.value : Cause.squash(exit.cause)
  })

export const createFleet = (options: CreateFleetOptions = {}) => {
  const { extend, ...fleetOptions } = options
  const engine = Flotta.layer(fleetOptions)
  const runtime: ManagedRuntime.ManagedRuntime<Flotta.Flotta, unknown> = ManagedRuntime.make(
    extend === undefined ? engine : Layer.provideMerge(extend, engine)
  )
  const run = <A, E>(f: (fleet: Flotta.Flotta) => Effect.Effect<A, E>) =>
    toPromise(runtime, Effect.flatMap(Flotta.Flotta, f))

  return {
    spawn: (name: string, spawnOptions?: AgentOptions) => run((f) => f.spawn(name, spawnOptions)),
    ask: (name: string, text: string, askOptions?: Flotta.AskOptions) => run((f) => f.ask(name, text, askOptions)),
    askResult: (name: string, text: string, askOptions?: Flotta.AskOptions) =>
      run((f) => f.askResult(name, text, askOptions)),
    prompt: (name: string, text: string, askOptions?: Flotta.AskOptions) =>
      run((f) => f.prompt(name, text, askOptions)),
    wait: (name: string, turnId: string) => run((f) => f.wait(name, turnId)),
    /** Like `wait`; the turn is never cancelled on the waiter's behalf. */
    watch: (name: string, turnId: string) => run((f) => f.watch(name, turnId)),
    status: (name: string) => run((f) => f.status(name)),
    result: (name: string, turnId: string = "latest") => run((f) => f.result(name, turnId)),
    transcript: (name: string) => run((f) => f.transcript(name)),
    info: (name: string) => run((f) => f.info(name)),
    list: () => run((f) => f.list),
    interrupt: (name: string) => run((f) => f.interrupt(name)),
    close: (name: string) => run((f) => f.close(name)),
    broadcast: (text: string, askOptions?: Flotta.AskOptions) => run((f) => f.broadcast(text, askOptions)),
    reports: (query?: ReportQuery) => run((f) => f.reports(query)),
    boot: (config: unknown) => run((f) => f.boot(config)),
    run: (runOptions: RunOptions) => run((f) => f.run(runOptions)),
    runAsync: (runOptions: RunOptions) => run((f) => f.runAsync(runOptions)),
    runResult: (name: string) => run((f) => f.runResult(name)),
    awaitRun: (name: string) => run((f) => f.awaitRun(name)),
    verify: (cwd: string, verifyOptions: VerifyOptions & { readonly name?: string }) =>
      run((f) => f.verify(cwd, verifyOptions)),
    verifyAsync: (cwd: string, verifyOptions: VerifyOptions & { readonly name?: string }) =>
      run((f) => f.verifyAsync(cwd, verifyOptions)),
    worktrees: (cwd: string) => run((f) => f.worktrees(cwd)),
    gcWorktrees: (cwd: string, gcOptions?: { readonly force?: boolean }) => run((f) => f.gcWorktrees(cwd, gcOptions)),
    // Steering: each rejects with SchedulerNotEnabled when no scheduler was added (`extend`).
    schedulerStatus: () => run((f) => f.schedulerStatus()),
    keepGoing: (minutes: number = 60) => run((f) => f.keepGoing(minutes)),
    workToday: (window?: WindowInput) => run((f) => f.workToday(window)),
    workOn: (date: string, window?: WindowInput) => run((f) => f.workOn(date, window)),
    pause: () => run((f) => f.pause()),
    resume: () => run((f) => f.resume()),
    stopForToday: () => run((f) => f.stopForToday()),
    runRoutine: (name: string) => run((f) => f.runRoutine(name)),
    scanNow: (scanOptions?: ScanOptions) => run((f) => f.scanNow(scanOptions)),
    findings: (query?: FindingsQuery) => run((f) => f.findings(query)),
    /** Live report entries; returns the function that unsubscribes. */
    subscribe: (onEntry: (entry: ReportEntry) => void, callbacks: SubscribeCallbacks = {}): () => void => {
      const fiber = runtime.runFork(
        Effect.flatMap(Flotta.Flotta, (f) =>
          f.subscribe(callbacks).pipe(
            Effect.flatMap(Stream.runForEach((notice) =>
              Effect.sync(() => {
                if (notice._tag === "Entry") onEntry(notice.entry)
                else callbacks.onMissed?.(notice.count, notice.after)
              })
            )),
            Effect.scoped
          ))
      )
      return () => {
        runtime.runFork(Fiber.interrupt(fiber))
      }
    },
    /** Closes every agent (their children exit) and releases the fleet. */
    shutdown: () => runtime.dispose(),
    /** The Effect runtime, for mixing both styles. */
    runtime
  }
}

export type Fleet = ReturnType<typeof createFleet>
